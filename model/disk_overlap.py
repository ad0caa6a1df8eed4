"""How much of a sync holds the disk (the profile's `disk_hold`): probed, then read through the
model's own device (simcore.Disk).

A durable replica's two logs sync to one disk: InnoDB's redo log is overwritten in place with
O_DIRECT and fdatasync'ed (its prepare), the binlog is appended and fdatasync'ed (its group
commit), and on a parallel replica the two meet. `probe` times each kind's write + fdatasync
from its own thread, alone and then both at once, back to back (the densest overlap). If a
sync held the disk for its whole duration, as `shared_disk` alone assumes, the two would take
turns and each would wait for all of the other; if nothing were serial they would not slow
each other. `hold_from` finds the `disk_hold` (µs held from each sync's start) with which
simcore.Disk, fed the same two loops at their alone durations, slows them as much as
measured: the probe read through the arithmetic the engines use, so the profile's term means
what the probe saw. `share_from` finds the same as a share of each sync (`disk_hold_share`),
the figure `calibrate` fits: the probe's syncs are longer than the replica's own, and the
share carries from one to the other where the µs do not (docs/lag-check/hold-as-share.md, "The hold
as a share").

Measured on the 2-core VM (docs/calibration.md, "The disk's serial part"). ktrace.py's
`overlap-probe` and `commitsched calibrate` both call `probe`.
"""
from __future__ import annotations

import os
import threading
import time

from .simcore import Disk

KINDS = ("in place", "append")
SETTINGS = ("alone", "at once")
# the simulated loops run this many syncs each: long enough that the start's phase is forgotten
_SIM_SYNCS = 2000


class ProbeError(OSError):
    pass


def _loop(kind: str, directory: str, ready: threading.Barrier, stop: threading.Event,
          out: list) -> None:
    """One thread's syncs of `kind` back to back until `stop`, once every thread's file is
    ready: appends (start, end) of each write + fdatasync (perf_counter seconds)."""
    from .calibrate_replica import _direct_file, in_place_offset
    if kind == "in place":
        with _direct_file(directory, "overlap") as opened:
            if opened is None:
                raise ProbeError(f"{directory}: the file system refuses O_DIRECT writes (the "
                                 f"redo log's in-place write cannot be probed here)")
            fd, buf = opened
            ready.wait()
            i = 0
            while not stop.is_set():
                t0 = time.perf_counter()
                os.pwrite(fd, buf, in_place_offset(i))
                os.fdatasync(fd)
                out.append((t0, time.perf_counter()))
                i += 1
        return
    path = os.path.join(directory, f".commitsched-overlap-append-{os.getpid()}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    try:
        ready.wait()
        while not stop.is_set():
            t0 = time.perf_counter()
            os.write(fd, b"x" * 512)
            os.fdatasync(fd)
            out.append((t0, time.perf_counter()))
    finally:
        os.close(fd)
        os.unlink(path)


def _run(directory: str, kinds: tuple, seconds: float) -> dict:
    stop = threading.Event()
    ready = threading.Barrier(len(kinds) + 1)
    lats = {k: [] for k in kinds}
    errors: list = []

    def body(kind):
        try:
            _loop(kind, directory, ready, stop, lats[kind])
        except OSError as e:
            errors.append(e)
            stop.set()
            ready.abort()                   # the others (and the timer) go on without it
        except threading.BrokenBarrierError:
            pass                            # another thread failed: its error is reported
    threads = [threading.Thread(target=body, args=(k,)) for k in kinds]
    for t in threads:
        t.start()
    try:
        ready.wait()                        # every file ready: the seconds start now
    except threading.BrokenBarrierError:
        pass
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        e = errors[0]
        raise ProbeError(str(e) if isinstance(e, ProbeError) else
                         f"{directory}: {e.strerror or e}")
    out = {}
    for k, spans in lats.items():
        if len(spans) < 2:
            raise ProbeError(f"{directory}: fewer than two {k} syncs completed in {seconds:g} s")
        xs = sorted(t1 - t0 for t0, t1 in spans)
        mean = sum(xs) / len(xs)
        # the iteration's time beyond its write + sync (the loop's own, and waits for a core)
        gap = (spans[-1][0] - spans[0][0]) / (len(spans) - 1) - mean
        out[k] = {"n": len(xs), "median_us": round(1e6 * xs[len(xs) // 2], 1),
                  "mean_us": round(1e6 * mean, 1), "gap_us": round(max(0.0, 1e6 * gap), 1)}
    return out


def probe(directory: str, seconds: float = 1.0) -> dict:
    """One round: each kind alone for `seconds`, then both at once (two threads) for
    `seconds`. {"alone": {kind: stats}, "at once": {kind: stats}}, stats in µs: n, median,
    mean, gap (an iteration's time outside its write + sync). ProbeError (one line) where the
    directory refuses O_DIRECT or the files."""
    return {"alone": {k: _run(directory, (k,), seconds)[k] for k in KINDS},
            "at once": _run(directory, KINDS, seconds)}


def simulated_waits(durations: tuple, gaps: tuple, hold: float | None,
                    share: float | None = None) -> tuple:
    """Mean wait (µs) of each of two threads that issue syncs of `durations` back to back
    (`gaps` apart) to one simcore.Disk holding `hold` of each (or `share` of each, when given):
    the probe's "at once", modelled. Deterministic: the threads start together, thread 0
    first."""
    disk = Disk(hold, share=share)
    issue = [0.0, 0.0]
    waits = [0.0, 0.0]
    done = [0, 0]
    spread = 0.0
    while min(done) < _SIM_SYNCS:
        k = 0 if issue[0] <= issue[1] else 1
        # each sync's duration spread evenly over 0.5-1.5 x its mean (a golden-ratio sequence:
        # deterministic), as a real disk's vary: fixed durations would lock the two loops
        # into one phase, whose waits jump with the hold
        spread = (spread + 0.6180339887498949) % 1.0
        duration = durations[k] * (0.5 + spread)
        end = disk.flush(issue[k], duration)
        waits[k] += end - issue[k] - duration
        done[k] += 1
        issue[k] = end + gaps[k]
    return waits[0] / done[0], waits[1] / done[1]


def _read_round(round_: dict, stat: str, top, share: bool, steps: int) -> tuple:
    """The hold (µs, or a share of each sync with `share`) that makes simcore.Disk slow the two
    loops of one probe round as much as measured, by bisection over [0, top]: the modelled
    slowdown grows with it, from none at 0 to taking turns. (value, measured inflation µs,
    the whole hold's modelled inflation µs); value None where the round slowed as much as
    whole syncs taking turns, 0.0 where it did not slow at all."""
    durations = tuple(round_["alone"][k][stat] for k in KINDS)
    gaps = tuple(round_["at once"][k]["gap_us"] for k in KINDS)
    measured = sum(round_["at once"][k][stat] - round_["alone"][k][stat] for k in KINDS)
    whole = sum(simulated_waits(durations, gaps, None))
    if measured >= whole:
        return None, measured, whole
    if measured <= 0:
        return 0.0, measured, whole
    lo, hi = 0.0, top(durations)
    for _ in range(steps):
        mid = (lo + hi) / 2
        waits = (simulated_waits(durations, gaps, None, share=mid) if share
                 else simulated_waits(durations, gaps, mid))
        if sum(waits) < measured:
            lo = mid
        else:
            hi = mid
    return hi, measured, whole


def hold_from(round_: dict, stat: str = "mean_us") -> tuple:
    """The `disk_hold` (µs; None: the whole sync) that makes simcore.Disk slow the two loops of
    one probe round as much as measured: (hold, measured inflation µs, the whole hold's
    modelled inflation µs). The inflation is the two kinds' summed slowdown at once over alone;
    the bisection's top is the longest sync simulated_waits issues."""
    hold, measured, whole = _read_round(round_, stat, lambda d: 1.5 * max(d), False, 40)
    return (None if hold is None else round(hold, 1)), measured, whole


def share_from(round_: dict, stat: str = "mean_us") -> tuple:
    """The `disk_hold_share` (0-1; 1: the whole sync) that makes simcore.Disk slow the two
    loops of one probe round as much as measured: (share, measured inflation µs, the whole
    hold's modelled inflation µs), as `hold_from` but the hold a share of each sync. The share
    is what carries to the replica's own syncs, which are not the probe's: a 512-byte append
    and a 4 KiB in-place write, each with its own fdatasync, timed by Python."""
    share, measured, whole = _read_round(round_, stat, lambda d: 1.0, True, 30)
    return (1.0 if share is None else round(share, 4)), measured, whole


def share_of(rounds: list) -> tuple:
    """The rounds' figure as a share: (the median of each round's share, the median slowdown
    µs, the median whole syncs' slowdown µs)."""
    import numpy as np
    read = [share_from(r) for r in rounds]
    return (round(float(np.median([s for s, _, _ in read])), 4),
            float(np.median([m for _, m, _ in read])), float(np.median([w for _, _, w in read])))


def hold_of(rounds: list) -> tuple:
    """The rounds' figure: (the median of each round's hold, None when that is the whole sync;
    the median slowdown µs; the median whole syncs' slowdown µs). Each round's alone and at
    once are read together, minutes apart from the next round's on a host that drifts."""
    import numpy as np
    read = [hold_from(r) for r in rounds]
    hold = float(np.median([float("inf") if h is None else h for h, _, _ in read]))
    return (None if hold == float("inf") else round(hold, 1),
            float(np.median([s for _, s, _ in read])), float(np.median([w for _, _, w in read])))


def median_round(rounds: list) -> dict:
    """One round of each statistic's median over `rounds` (the figure a calibration takes)."""
    import numpy as np
    return {s: {k: {stat: float(np.median([r[s][k][stat] for r in rounds]))
                    for stat in ("n", "median_us", "mean_us", "gap_us")} for k in KINDS}
            for s in SETTINGS}
