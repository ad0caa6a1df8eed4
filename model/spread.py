"""A profile calibrated from several windows (`calibrate --repeat N` / `--samples`): the
profile at each end of its calibration's spread, and each answer's range from the same
answers replayed at both ends. One copy for `lag`, `report` and `score` (docs/lag.md,
"Several windows, and the answer's range")."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

# The ends of a calibration's spread (model/calibrate_replica.py ManyFit): the profile's terms
# each at its slowest and its fastest calibrated window's
SPREAD_ENDS = ("slowest", "fastest")


def spread_ends(profile) -> dict | None:
    """The profile at each end of its calibration's spread ({"slowest": Profile, "fastest":
    Profile}), at the profile's own durability, binlog setting and cores; None when it was
    calibrated from one window (no spread). ValueError (one line) if the spread is malformed."""
    from dataclasses import replace
    from .calibrate_replica import machine_terms
    spread = (profile.fitted_from or {}).get("spread")
    if not spread:
        return None
    known = machine_terms(profile)
    out = {}
    for end in SPREAD_ENDS:
        terms = spread.get(end) if isinstance(spread, dict) else None
        bad = not isinstance(terms, dict) or any(not _term_ok(known, k, v)
                                                  for k, v in terms.items())
        if bad:
            raise ValueError(f"profile {profile.name}: its calibration spread's {end!r} end is "
                             f"malformed (fitted_from.spread.{end} must give the profile's "
                             f"terms)")
        rest = {k: v for k, v in profile.fitted_from.items() if k != "spread"}
        machine = replace(profile, **terms, durability=spread.get("durability", "durable"),
                          fitted_from=rest, name=f"{profile.name} ({end} calibrated pace)")
        out[end] = replace(machine.with_durability(profile.durability), cores=profile.cores,
                           log_replica_updates=profile.log_replica_updates)
    return out


def calibrated_windows(profile) -> int:
    """How many windows `calibrate` fitted the profile from (0: not fitted by it)."""
    windows = (profile.fitted_from or {}).get("windows")
    return len(windows) if isinstance(windows, list) else 0


def _term_ok(known: dict, key: str, value) -> bool:
    """A spread end's term: one of the profile's, a switch as a switch, a cost as a finite
    number not below 0."""
    if key not in known:
        return False
    if key in ("disk_hold", "disk_hold_share", "disk_write_iops") and value is None:
        return True                     # the whole sync held; no rate limit (Profile)
    if key == "disk_hold_share" and isinstance(value, (int, float)) and value > 1:
        return False                    # more than the whole flush
    if key == "disk_write_iops" and value == 0:    # a rate of 0 lets no write through
        return False
    if isinstance(known[key], bool):
        return isinstance(value, bool)
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and bool(np.isfinite(value)) and value >= 0)


def value_range(values: Iterable, *, none_is_unbounded: bool = False) -> list:
    """[low, high] of one answer at the median calibration and at both ends. With
    `none_is_unbounded`, None is an answer without bound (never drains): the high is None when
    any value is, the low the least finite value (None when none is)."""
    values = list(values)
    finite = [v for v in values if v is not None]
    if not none_is_unbounded:
        return [min(finite), max(finite)]
    return [min(finite) if finite else None,
            None if len(finite) < len(values) else max(finite)]


def ends_of(results: Sequence[dict], at_ends: dict) -> dict:
    """(scheduler, workers) -> [the result at each end, in SPREAD_ENDS order], for each result
    (not an error) replayed at every end without an error; at_ends: end -> results of the same
    sweep at that end."""
    by = {end: {(r["scheduler"], r["workers"]): r for r in rs} for end, rs in at_ends.items()}
    out = {}
    for r in results:
        if "error" in r:
            continue
        key = (r["scheduler"], r["workers"])
        ends = [by.get(end, {}).get(key) for end in SPREAD_ENDS]
        if all(e is not None and "error" not in e for e in ends):
            out[key] = ends
    return out


def add_ranges(results: Sequence[dict], at_ends: dict, keys: Sequence[str],
               unbounded: Sequence[str] = ()) -> dict:
    """Give each result `KEY_range` ([low, high]) for each of `keys` present in it, from its
    value and the same answer at both ends; `unbounded`: keys whose None means without bound
    (`value_range`). A result not replayed at every end gets `range_note` instead. Returns
    `ends_of`'s mapping for the caller's own ranges."""
    ends = ends_of(results, at_ends)
    for r in results:
        if "error" in r:
            continue
        trio = ends.get((r["scheduler"], r["workers"]))
        if trio is None:
            r["range_note"] = "not replayed at every end of the calibration's spread"
            continue
        for key in keys:
            if key in r:
                r[key + "_range"] = value_range([x[key] for x in [r] + trio],
                                                none_is_unbounded=key in unbounded)
    return ends
