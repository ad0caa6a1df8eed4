"""`commitsched lag`: will the replica keep up, and when will it catch up (docs/lag.md).

One result per (scheduler, W) from the open replay (model/replay.py): whether it keeps up, the
headroom, lag percentiles and the maximum with when it happens, lag over time, and with a
backlog the drain time, each beside the straight-line extrapolation DBAs use today
(backlog / (apply rate - write rate), the apply rate being the closed backlog's).
"""
from __future__ import annotations

import re
import textwrap
from typing import Callable, Sequence

import numpy as np

from .metrics import PER_SECOND
from .replay import Replayer, SourceTimes, lag_over_time
from .schedulers import SchedulerError, parse_scheduler
from .simcore import Deadlock

_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(us|ms|min|s|m|h|d)")


def parse_duration(text: str) -> float:
    """Seconds from '90', '90s', '1.5h', '2h30m', '500ms' (ValueError if not one)."""
    t = text.strip().lower()
    try:
        value = float(t)
    except ValueError:
        pos, value = 0, 0.0
        for m in _PART.finditer(t):
            if m.start() != pos and t[pos:m.start()].strip():
                break
            value += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if pos == 0 or t[pos:].strip():
            raise ValueError(f"expected a duration like 90s, 3h, 2h30m or 500ms, got {text!r}")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"a duration must be finite and not negative, got {text!r}")
    return value


def lag_one(txns: Callable, times: SourceTimes, scheduler: str, workers: int, profile, *,
            backlog: float | None = None, backlog_at: float = 0.0, delay: float = 0.0,
            bugs=frozenset(), tracker_options: dict | None = None,
            applier_options: dict | None = None) -> dict:
    """The replay's answers for one (scheduler, W); times in seconds. Raises SchedulerError
    (the trace cannot feed the scheduler) or Deadlock."""
    rep = Replayer(txns, times, scheduler, workers, profile, delay=delay * PER_SECOND, bugs=bugs,
                   tracker_options=dict(tracker_options or {}),
                   applier_options=dict(applier_options or {}))
    n = times.count
    closed = rep.closed_makespan()
    two = rep.replay(1.0, laps=2)
    keeps_up = rep.keeps_up(1.0, two)
    headroom, bound = rep.headroom(keeps_up)
    first = two.lag[:n]
    worst = int(np.argmax(first))
    # the replay's backlog when the source's last transaction arrives: the first lap's
    # transactions not yet committed then (the replay is causal: the second lap, arriving later,
    # cannot move a commit across that instant)
    end_backlog = int(np.count_nonzero(two.commit[:n] > two.source[n - 1]))
    # a closed backlog applied in no time (every cost zero): no finite rate, null in JSON
    apply_rate = n / closed * PER_SECOND if closed > 0 else None
    write_rate = times.write_rate()
    out = {
        "scheduler": scheduler, "workers": workers, "profile": profile.name,
        "transactions": n,
        "keeps_up": keeps_up,
        "end_backlog": end_backlog,
        "headroom": round(headroom, 3),
        "headroom_is_bound": bound,
        "max_lag_s": round(float(first[worst]) / PER_SECOND, 6),
        "max_lag_at": times.clock(float(two.source[worst])),
        "p50_lag_s": round(float(np.percentile(first, 50)) / PER_SECOND, 6),
        "p99_lag_s": round(float(np.percentile(first, 99)) / PER_SECOND, 6),
        "mean_lag_s": round(float(first.mean()) / PER_SECOND, 6),
        "lag_growth_per_lap_s": round(float(two.lag[2 * n - 1] - two.lag[n - 1]) / PER_SECOND,
                                      6),
        "lap_s": round(times.period / PER_SECOND, 6),
        "apply_rate": None if apply_rate is None else round(apply_rate, 3),
        "write_rate": round(write_rate, 3),
        "straight_line_headroom": (None if apply_rate is None
                                   else round(apply_rate / write_rate, 3)),
        "lag_over_time": [[round(t / PER_SECOND, 6), round(v / PER_SECOND, 6)]
                          for t, v in lag_over_time(two, n)],
    }
    if backlog is not None:
        drain, why = rep.drain(backlog * PER_SECOND, backlog_at * PER_SECOND, headroom)
        out["backlog_s"] = backlog
        out["drain_s"] = None if drain is None else round(drain / PER_SECOND, 6)
        if why:
            out["drain_note"] = why
        out["straight_line_drain_s"] = straight_line_drain(backlog, apply_rate, write_rate)
    out["simulations"] = rep.runs
    return out


def straight_line_drain(backlog: float, apply_rate: float | None,
                        write_rate: float) -> float | None:
    """The extrapolation DBAs use: the backlog's transactions over the net apply rate (None:
    the replica applies no faster than the source writes; 0: an apply rate without bound)."""
    if apply_rate is None:
        return 0.0
    if apply_rate <= write_rate:
        return None
    return round(backlog * write_rate / (apply_rate - write_rate), 6)


def lag_sweep(trace, times: SourceTimes, schedulers: Sequence[str], workers: Sequence[int],
              profile, *, jobs: int = 1, progress=lambda s: None, skip_unfit: bool = True,
              **kwargs) -> list[dict]:
    """`lag_one` for every (scheduler, W) (`serial` once), `jobs` at a time; a scheduler the
    trace cannot feed is skipped with a note when `skip_unfit`, else SchedulerError."""
    from .progress import note_of, tick_of
    from .scoring import fork_map
    tracker_options = kwargs.pop("tracker_options", lambda t: {})
    runs = [(name, w) for name in schedulers
            for w in ([1] if parse_scheduler(name).is_serial else workers)]

    def work(item):
        name, w = item
        try:
            return "ok", lag_one(trace.txns, times, name, w, profile,
                                 tracker_options=tracker_options(parse_scheduler(name).tracker),
                                 **kwargs)
        except SchedulerError as e:
            return "unfit", str(e)
        except Deadlock as e:
            return "deadlock", str(e)

    results, unfit = [], set()
    # said before the first replay ends: on a large trace that is minutes
    if runs:
        progress(f"0/{len(runs)} replays done ({runs[0][0]} W={runs[0][1]} first)")
    for i, ((name, w), (kind, value)) in enumerate(zip(runs, fork_map(work, runs, jobs,
                                                                      tick_of(progress)))):
        progress(f"{i + 1}/{len(runs)} replays done ({name} W={w})")
        if name in unfit:
            continue
        if kind == "unfit":
            if not skip_unfit:
                raise SchedulerError(value)
            note_of(progress)(f"commitsched: skipped {name}: {value}")
            unfit.add(name)
        elif kind == "deadlock":
            results.append({"scheduler": name, "workers": w, "profile": profile.name,
                            "error": f"deadlock: {value}"})
        else:
            results.append(value)
    return results


def human_seconds(v: float | None) -> str:
    if v is None:
        return "never"
    if v >= 3600:
        return f"{v / 3600:.1f} h"
    if v >= 60:
        return f"{v / 60:.1f} min"
    if v >= 1:
        return f"{v:.1f} s"
    return f"{v * 1000:.1f} ms"


def _rate(v: float) -> str:
    """Transactions a second, with three figures where one decimal would read 0.0."""
    return f"{v:.1f}" if v >= 10 else f"{v:.3g}"


def factor_text(v: float | None) -> str:
    """A pace factor for a table column: two decimals, or three figures when large."""
    if v is None:
        return "-"
    return f"{v:.2f}" if v < 1000 else f"{v:,.0f}" if v < 1e6 else f"{v:.2g}"


def headroom_words(r: dict) -> str:
    """The headroom as a sentence says it: a bound said as one."""
    if r["headroom_is_bound"]:
        return (f"more than {r['headroom']:g}x" if r["headroom"] > 1
                else f"less than {r['headroom']:g}x")
    return f"{r['headroom']:.2f}x"


def behind_words(r: dict) -> str:
    """How the lag goes, in words: its maximum when it stays bounded; when it grows, how much
    further behind each pass of the trace leaves the replica."""
    if r["keeps_up"]:
        return f"it lags at most {human_seconds(r['max_lag_s'])} ({r['max_lag_at']})"
    text = (f"its lag grows without bound: {human_seconds(r['max_lag_s'])} behind at worst "
            f"over the trace ({r['max_lag_at']})")
    growth = r.get("lag_growth_per_lap_s")
    if growth is not None and growth > 0:
        text += (f", then {human_seconds(growth)} more every {human_seconds(r['lap_s'])} of "
                 f"this pace")
    return text


def verdict(r: dict) -> str:
    """One result in words: does it keep up, with what headroom, and its worst lag."""
    name = f"{r['scheduler']} with {r['workers']} worker{'s' if r['workers'] > 1 else ''}"
    if "error" in r:
        return f"{name}: {r['error']}"
    head = headroom_words(r)
    flips = "keeps_up_words" in r and "(but" in r["keeps_up_words"]
    if r["keeps_up"]:
        text = f"{name} keeps up, with {head} today's pace"
    else:
        text = f"{name} does not keep up: it applies {head} of today's pace"
    if flips:
        text += " " + r["keeps_up_words"][r["keeps_up_words"].index("(but"):]
    text += "; " + behind_words(r)
    if "drain_s" in r:
        text += (f"; after {human_seconds(r['backlog_s'])} stopped it catches up in "
                 f"{human_seconds(r['drain_s'])}" if r["drain_s"] is not None
                 else f"; after {human_seconds(r['backlog_s'])} stopped it never catches up")
    return text + "."


LEGEND = ("keeps up: the lag stays bounded at the source's pace (the trace replayed twice in a "
          "row ends no more behind the second time). headroom: the largest factor the source's "
          "pace can be multiplied by and still keep up (≥ or <: the search's limit, 1000x or "
          "1/1000). line: the "
          "straight-line extrapolation DBAs use, from the closed backlog's apply rate (the whole "
          "trace applied at once): apply rate / write rate for the headroom, backlog / (apply "
          "rate - write rate) for the drain. lag: replica commit minus source commit, the trace "
          "replayed as it arrived.")
DRAIN_LEGEND = (" drain: from the restart until the lag is back to what it would have been "
                "without the stop.")


def format_table(results: list[dict], *, label: str, times: SourceTimes, profile_text: str,
                 notes: list[str], windows: int = 0) -> str:
    busiest, at = times.busiest()
    n = times.count
    busy = (f"busiest minute {_rate(busiest)} txn/s (from {times.clock(at)})"
            if times.period > 60 * PER_SECOND else "shorter than a minute")
    lines = textwrap.wrap(f"trace {label}: {n:,} transaction{'s' if n != 1 else ''} over "
                          f"{human_seconds(times.period / PER_SECOND)}, "
                          f"{_rate(times.write_rate())} txn/s on average, {busy}; "
                          f"{profile_text}", 100, subsequent_indent="  ",
                          break_on_hyphens=False)
    for note in notes:
        lines += textwrap.wrap(note, 100, initial_indent="  note: ", subsequent_indent="        ",
                               break_on_hyphens=False)
    lines.append("")
    drain = any("drain_s" in r for r in results)
    header = (f"{'scheduler':<40} {'W':>3} {'keeps up':>8} {'headroom':>9} {'line':>7} "
              f"{'p50 lag':>9} {'p99 lag':>9} {'max lag':>9}"
              + (f" {'drain':>9} {'line':>9}" if drain else ""))
    lines += [header, "-" * len(header)]
    prev = None
    for r in results:
        name = r["scheduler"] if r["scheduler"] != prev else ""
        prev = r["scheduler"]
        if "error" in r:
            lines.append(f"{name:<40} {r['workers']:>3}  {r['error']}")
            continue
        head = (f"<{r['headroom']:g}" if r["headroom_is_bound"] and r["headroom"] < 1
                else ("≥" if r["headroom_is_bound"] else "") + factor_text(r["headroom"]))
        row = (f"{name:<40} {r['workers']:>3} {'yes' if r['keeps_up'] else 'no':>8} {head:>9} "
               f"{factor_text(r['straight_line_headroom']):>7} {human_seconds(r['p50_lag_s']):>9} "
               f"{human_seconds(r['p99_lag_s']):>9} {human_seconds(r['max_lag_s']):>9}")
        if drain:
            row += (f" {human_seconds(r.get('drain_s')):>9} "
                    f"{human_seconds(r.get('straight_line_drain_s')):>9}")
        lines.append(row)
    lines.append("")
    spans = ranges_text(results, windows)
    if spans:
        lines += spans + [""]
    best = best_result(results)
    if best is not None:
        lines.append(verdict(best))
        lines.append("")
    lines += textwrap.wrap(LEGEND + (DRAIN_LEGEND if drain else ""), 100)
    return "\n".join(lines) + "\n"


def best_result(results: list[dict]) -> dict | None:
    """The configuration to recommend: the fewest workers whose headroom is within 5% of the
    best one's (more threads than that buy nothing), the lower max lag among equals."""
    ok = [r for r in results if "error" not in r]
    if not ok:
        return None
    top = max(r["headroom"] for r in ok)
    near = [r for r in ok if r["headroom"] >= 0.95 * top]
    return min(near, key=lambda r: (r["workers"], r["max_lag_s"]))


# ---------------------------------------------------------------------------- ranges

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


def _term_ok(known: dict, key: str, value) -> bool:
    """A spread end's term: one of the profile's, a switch as a switch, a cost as a finite
    number not below 0."""
    if key not in known:
        return False
    if isinstance(known[key], bool):
        return isinstance(value, bool)
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and bool(np.isfinite(value)) and value >= 0)


def keeps_up_words(r: dict) -> str:
    """The keeps-up verdict with its range: whether it flips between the calibrated paces."""
    at = {"median": r["keeps_up"], "slowest": r.get("keeps_up_slowest", r["keeps_up"]),
          "fastest": r.get("keeps_up_fastest", r["keeps_up"])}
    word = "keeps up" if at["median"] else "does not keep up"
    if "keeps_up_slowest" not in r:
        return word
    other = [end for end in SPREAD_ENDS if at[end] != at["median"]]
    if not other:
        return word + (" (at every calibrated pace)" if at["median"]
                       else " (at any calibrated pace)")
    if at["median"]:
        return word + f" (but not at the {' or the '.join(other)} calibrated pace)"
    return word + f" (but would at the {' and the '.join(other)} calibrated pace)"


def with_ranges(results: list[dict], at_ends: dict) -> None:
    """Each result's range from the replays at the spread's ends (`at_ends`: end -> results of
    the same sweep): `keeps_up_slowest`, `keeps_up_fastest`, `keeps_up_words`,
    `headroom_range`, `max_lag_s_range`, and with a backlog `drain_s_range` ([low, high]; a
    high of None: at some calibrated pace it never drains)."""
    by = {end: {(r["scheduler"], r["workers"]): r for r in rs} for end, rs in at_ends.items()}
    for r in results:
        if "error" in r:
            continue
        ends = [by[end].get((r["scheduler"], r["workers"])) for end in SPREAD_ENDS]
        if any(e is None or "error" in e for e in ends):
            r["range_note"] = "not replayed at every end of the calibration's spread"
            continue
        trio = [r] + ends
        r["keeps_up_slowest"], r["keeps_up_fastest"] = ends[0]["keeps_up"], ends[1]["keeps_up"]
        r["keeps_up_words"] = keeps_up_words(r)
        for key in ("headroom", "max_lag_s"):
            values = [x[key] for x in trio]
            r[key + "_range"] = [min(values), max(values)]
        if "drain_s" in r:
            values = [x["drain_s"] for x in trio]
            finite = [v for v in values if v is not None]
            r["drain_s_range"] = [min(finite) if finite else None,
                                  None if len(finite) < len(values) else max(finite)]


def _span(pair, fmt) -> str:
    lo, hi = pair
    return fmt(lo) if lo == hi else f"{fmt(lo)} to {fmt(hi)}"


def ranges_text(results: list[dict], windows: int) -> list[str]:
    """The ranges block of the text output (results with_ranges gave ranges)."""
    rows = [r for r in results if "keeps_up_words" in r]
    if not rows:
        return []
    lines = textwrap.wrap(f"ranges: the profile was calibrated from {windows} windows; each "
                          f"answer replayed again at the slowest and the fastest calibrated pace "
                          f"(each term at its slowest / fastest window's fit):", 100)
    for r in rows:
        text = (f"{r['scheduler']} W={r['workers']}: {r['keeps_up_words']}; headroom "
                f"{_span(r['headroom_range'], factor_text)}; max lag "
                f"{_span(r['max_lag_s_range'], human_seconds)}")
        if "drain_s_range" in r:
            lo, hi = r["drain_s_range"]
            text += (f"; drain {human_seconds(lo)} to never" if hi is None and lo is not None
                     else f"; drain {_span((lo, hi), human_seconds)}")
        lines += textwrap.wrap(text, 100, initial_indent="  ", subsequent_indent="    ",
                               break_on_hyphens=False)
    return lines
