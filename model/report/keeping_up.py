"""The report's "Keeping up" section: the trace replayed as it arrived (model/replay.py) for the
recommended configuration and the server default: does the replica keep up, with what
headroom, how far behind at worst and when; lag over time for both; headroom by worker count.
Answered in words first.

Lag over time and the verdict come from the whole trace. The headroom bisection replays the
trace some fifteen times per worker count; above `sample` transactions it runs on the middle
`sample` (as the what-ifs do), and the section says so.

With a profile calibrated from several windows (`calibrate --repeat N`), every answer is made
again at the slowest and the fastest calibrated pace (model/spread.py, as `lag` does) and said
with its range; binlog file gaps that import recorded are said where the answer reads the
binlog as whole; clock times are shown in `zone` (--tz), the JSON keeps them in UTC."""
from __future__ import annotations

from dataclasses import replace

from ..lag import (behind_words, cause_words, factor_text, file_gaps, gaps_words,
                   headroom_words, human_seconds, lag_one, with_ranges)
from ..replay import Replayer, ReplayError, shown_clock, source_times
from ..spread import calibrated_windows, spread_ends, value_range
from ..schedulers import SchedulerError, parse_scheduler
from ..simcore import SimulationError
from .tasks import Tasks
from .whatif import sample_window


def plan(tasks: Tasks, trace, profile, picks: list[tuple[str, int]], workers, *,
         tracker_options, applier_options, bugs, sample: int | None,
         closed: dict | None = None, zone: str | None = None) -> dict | None:
    """Add the section's runs to `tasks`; None (and nothing planned) with the reason when the
    trace has no source commit times. `closed`: the makespan of the sweep's run of (scheduler,
    W) over the whole trace with the same options, which is the closed backlog a headroom
    search starts from (`Replayer.closed_makespan`): taken, not run again."""
    try:
        stamps = getattr(trace, "stamps", trace.txns)        # a TraceSource's: no Txn objects
        times = replace(source_times(stamps()), zone=zone)
        times.check_pace()
    except ReplayError as e:
        return {"skipped": str(e)}
    window = sample_window(trace, sample)
    head_trace = window or trace
    head_times = source_times(head_trace.txns()) if window else times
    # the calibration spread's ends (None: one window): each answer made again at both
    ends = spread_ends(profile) or {}
    paces = [(None, profile)] + list(ends.items())

    def opts(name):
        return dict(bugs=bugs, tracker_options=tracker_options(parse_scheduler(name).tracker),
                    applier_options=applier_options, on_run=tasks.bump)

    for name, w in picks:
        for end, p in paces:
            tasks.add(_key("lag", name, w, end), f"lag {name} W={w}" + _at(end),
                      lambda name=name, w=w, p=p: _guard(lambda: lag_one(
                          trace.txns, times, name, w, p, **opts(name))))
    rows = []
    for name in dict.fromkeys(n for n, _ in picks):
        for w in ([1] if parse_scheduler(name).is_serial else workers):
            rows.append((name, w))
            if window is None and (name, w) in picks:
                continue        # the same search as the lag task's (`lag_one`): taken from it
            for end, p in paces:
                # the sweep's closed run is the median profile's only
                known = ((closed or {}).get((name, w)) if window is None and end is None
                         else None)
                tasks.add(_key("headroom", name, w, end), f"headroom {name} W={w}" + _at(end),
                          lambda name=name, w=w, known=known, p=p: _guard(lambda: Replayer(
                              head_trace.txns, head_times, name, w, p, _closed=known,
                              **opts(name)).headroom()))
    return {"times": times, "picks": picks, "sample": window, "headroom_rows": rows,
            "ends": [end for end, _ in paces if end], "windows": calibrated_windows(profile),
            "gaps": file_gaps(getattr(trace, "source", None))}


def _key(kind: str, name: str, w: int, end: str | None) -> tuple:
    """A task's key: (kind, scheduler, W), with the spread's end when made at one."""
    return (kind, name, w) if end is None else (kind, name, w, end)


def _at(end: str | None) -> str:
    return "" if end is None else f" ({end} calibrated pace)"


def _headroom_outcome(done: dict, name: str, w: int, end: str | None = None):
    """The headroom search of (name, w) (at the spread's `end`): its own task's, or on the
    whole trace the pick's lag task's, which made the very same replays (the closed run, two
    laps at today's pace, the same bisection) and so the same figure."""
    if _key("headroom", name, w, end) in done:
        return done[_key("headroom", name, w, end)]
    kind, value = done[_key("lag", name, w, end)]
    return (kind, (value["headroom"], value["headroom_is_bound"])) if kind == "ok" else (kind, value)


def _guard(fn):
    try:
        return "ok", fn()
    except (SchedulerError, SimulationError) as e:
        return "error", str(e)


def assemble(planned: dict | None, done: dict) -> dict | None:
    """The section's data (JSON) from the finished tasks."""
    if planned is None or "skipped" in planned:
        return planned
    times, picks = planned["times"], planned["picks"]
    ends = planned.get("ends") or []
    busiest, busiest_at = times.busiest()
    out = {"timestamps": "spread over each second" if times.whole_seconds else "µs",
           "held_back": times.held_back_note(), "longer_than_a_minute": times.period > 60e6,
           "write_rate": round(times.write_rate(), 3), "busiest_minute_rate": round(busiest, 3),
           "busiest_minute_at": times.iso(busiest_at), "configs": [], "headroom": {}}
    if times.zone:
        out["zone"] = times.zone
    if planned.get("gaps"):
        out["file_gaps"] = planned["gaps"]

    def config(name, w, end=None):
        kind, value = done[_key("lag", name, w, end)]
        return value if kind == "ok" else {"scheduler": name, "workers": w, "error": value}

    out["configs"] = [config(name, w) for name, w in picks]
    if ends:
        out["calibration_windows"] = planned["windows"]
        with_ranges(out["configs"], {end: [config(name, w, end) for name, w in picks]
                                     for end in ends})
    for name, w in planned["headroom_rows"]:
        kind, value = _headroom_outcome(done, name, w)
        row = out["headroom"].setdefault(name, [])
        if kind != "ok":
            row.append({"workers": w, "error": value})
            continue
        entry = {"workers": w, "headroom": round(value[0], 3), "is_bound": value[1]}
        at = [_headroom_outcome(done, name, w, end) for end in ends]
        if ends and all(k == "ok" for k, _ in at):
            # the headroom at each end of the calibration's spread: the figure's band
            for end, (_, v) in zip(ends, at):
                entry[f"headroom_{end}"] = round(v[0], 3)
            entry["range"] = value_range([entry["headroom"]]
                                         + [entry[f"headroom_{end}"] for end in ends])
            entry["range_is_bound"] = value[1] or any(v[1] for _, v in at)
        row.append(entry)
    if planned["sample"] is not None:
        s = planned["sample"]
        out["headroom_sample"] = {"transactions": s.count, "of": s.trace.count,
                                  "first_seq": s.first_seq, "last_seq": s.last_seq}
    out["answer"] = answer(out)
    return out


def answer(d: dict) -> list[str]:
    """The section's answer in words, one sentence per configuration, then the caveats. Clock
    times in `d["zone"]` (UTC by default); with the calibration spread's ranges, the verdict
    says first whether it holds at every calibrated pace."""
    lines = []
    long = d.get("longer_than_a_minute", True)     # else its busiest minute is all of it
    zone = d.get("zone")
    for c in d["configs"]:
        who = f"With {c['workers']} worker{'s' if c['workers'] > 1 else ''}, `{c['scheduler']}`"
        if "error" in c:
            lines.append(f"{who}: {c['error']}.")
            continue
        head = headroom_words(c)
        ranged = "keeps_up_words" in c
        over = " over the calibrated paces"
        head_range = (f" ({_span(c['headroom_range'], _factor)}{over})" if ranged else "")
        lag_range = (f" ({_span(c['max_lag_s_range'], human_seconds)}{over})" if ranged else "")
        if c["keeps_up"]:
            verdict = _ranged_verdict(c, "keeps up")
            text = (f"{who} {verdict}{',' if verdict != 'keeps up' else ''} with {head} "
                    f"today's pace{head_range}"
                    + (", busiest minute included" if long else "")
                    + f"; its worst lag is {human_seconds(c['max_lag_s'])}{lag_range}, at "
                      f"{shown_clock(c['max_lag_at'], zone)}" + cause_words(c))
        else:
            verdict = _ranged_verdict(c, "does not keep up")
            text = (f"{who} {verdict}: it applies {head} of today's pace{head_range}; "
                    + behind_words(c, zone))
        line = ("none, the closed backlog taking no time" if c["straight_line_headroom"] is None
                else factor_text(c["straight_line_headroom"]) + "x")
        text += f" (the straight line, closed-backlog apply rate over write rate, gives {line})"
        lines.append(text + ".")
    busiest = (f", {d['busiest_minute_rate']:.1f} in the busiest minute (from "
               f"{shown_clock(d['busiest_minute_at'], zone)})" if long else "")
    lines.append(f"Today's pace: {d['write_rate']:.1f} transactions per second on average"
                 f"{busiest}.")
    if d.get("calibration_windows") and any("keeps_up_words" in c for c in d["configs"]):
        lines.append(f"The machine profile was calibrated from {d['calibration_windows']} "
                     f"windows of the replica: each answer was made again at the slowest and "
                     f"the fastest calibrated pace (each term at its slowest / fastest "
                     f"window's fit). The ranges are the host's drift as those windows saw it, "
                     f"not the model's own error, which they do not include.")
    gaps = gaps_words(d.get("file_gaps") or ())
    if gaps:
        lines.append(gaps[0].upper() + gaps[1:] + ".")
        lines += [f"Gap: {g}." for g in d["file_gaps"]]
    if d["timestamps"] != "µs":
        lines.append("The source's commit times are whole seconds (MariaDB, or MySQL before "
                     "8.0): each second's transactions are spread evenly over it, so bursts "
                     "inside a second are not seen and lags under a second are approximate.")
    if d.get("held_back"):
        lines.append(d["held_back"][0].upper() + d["held_back"][1:] + ".")
    if d.get("headroom_sample"):
        s = d["headroom_sample"]
        lines.append(f"Headroom by worker count was bisected on the middle {s['transactions']:,} "
                     f"of the trace's {s['of']:,} transactions; the verdicts and lags above "
                     f"replay the whole trace.")
    if zone:
        lines.append(f"Clock times are in {zone} (--tz); report.json keeps them in UTC.")
    return lines


def _ranged_verdict(c: dict, word: str) -> str:
    """'keeps up' as the words say it with the calibration's range: 'keeps up at every
    calibrated pace', 'keeps up, but not at the slowest calibrated pace', ..."""
    said = c.get("keeps_up_words")
    if not said:
        return word
    rest = said[len(word):].strip()
    if rest.startswith("(but"):
        return f"{word}, {rest[1:-1]}"
    if rest.startswith("("):
        return f"{word} {rest[1:-1]}"
    return word


def _factor(v: float) -> str:
    return factor_text(v) + "x"


def _span(pair, fmt) -> str:
    lo, hi = pair
    if lo is None or hi is None:
        return f"{fmt(lo) if lo is not None else 'never'} to never"
    return fmt(lo) if lo == hi else f"{fmt(lo)} to {fmt(hi)}"
