"""Measured lag from sampled GTID positions (the real check of `commitsched lag`,
docs/lag-check.md).

Both servers' positions are sampled at fixed intervals: the primary's last written transaction
and the replica's last applied one. A transaction's commit time on either side is taken as the
moment its number was first seen, interpolated between the two samples around it (the
transactions between two samples spread evenly over the interval); its lag is the replica's
time minus the primary's. The resolution is the sampling interval.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def first_seen(t: np.ndarray, pos: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """When each of `numbers` was first covered by the sampled, non-decreasing `pos`."""
    pos = np.maximum.accumulate(pos)
    # the position rose from pos[k-1] to pos[k] over (t[k-1], t[k]]: spread the numbers in it
    k = np.searchsorted(pos, numbers, side="left")
    k = np.clip(k, 1, len(pos) - 1)
    lo, hi = pos[k - 1], pos[k]
    span = np.maximum(hi - lo, 1)
    frac = np.clip((numbers - lo) / span, 0.0, 1.0)
    out = t[k - 1] + frac * (t[k] - t[k - 1])
    out[numbers > pos[-1]] = np.nan          # never reached while sampled
    return out


@dataclass
class MeasuredLag:
    numbers: np.ndarray          # GTID numbers of the run's transactions
    source: np.ndarray           # their commit time on the primary (s)
    replica: np.ndarray          # on the replica (s)

    @property
    def lag(self) -> np.ndarray:
        return self.replica - self.source


def measured_lag(t, primary, replica, numbers) -> MeasuredLag:
    t = np.asarray(t, dtype=float)
    numbers = np.asarray(numbers, dtype=np.int64)
    return MeasuredLag(numbers, first_seen(t, np.asarray(primary), numbers),
                       first_seen(t, np.asarray(replica), numbers))


def caught_up_at(t, primary, replica, after: float) -> float | None:
    """The first sample time after `after` at which the replica had applied all that the
    primary had written one sample earlier (the caught-up test of a sampled pair)."""
    t, primary, replica = (np.asarray(x) for x in (t, primary, replica))
    for i in np.flatnonzero(t > after):
        if i > 0 and replica[i] >= primary[i - 1]:
            return float(t[i])
    return None


def max_lag_outside(m: MeasuredLag, windows: list[tuple[float, float]]) -> float:
    """The largest lag of the transactions neither committed on the primary nor applied on
    the replica inside the given (start, end) windows of wall time (a probe and its drain)."""
    keep = np.isfinite(m.lag)
    for a, b in windows:
        keep &= ~((m.source >= a) & (m.source <= b))
        keep &= ~((m.replica >= a) & (m.replica <= b))
    return float(np.nanmax(m.lag[keep])) if keep.any() else float("nan")


def write_rate(t, primary, start: float, end: float) -> float:
    """Transactions per second the primary wrote between `start` and `end`."""
    t, primary = np.asarray(t), np.asarray(primary)
    a, b = np.searchsorted(t, start), np.searchsorted(t, end) - 1
    if b <= a:
        return float("nan")
    return float((primary[b] - primary[a]) / (t[b] - t[a]))


def apply_rate(t, replica, start: float, end: float) -> float:
    """Transactions per second the replica applied between `start` and `end` (during a drain:
    its capacity)."""
    return write_rate(t, replica, start, end)
