"""The report's "Keeping up" section: the trace replayed as it arrived (model/replay.py) for the
recommended configuration and the server default: does the replica keep up, with what
headroom, how far behind at worst and when; lag over time for both; headroom by worker count.
Answered in words first.

Lag over time and the verdict come from the whole trace. The headroom bisection replays the
trace some fifteen times per worker count; above `sample` transactions it runs on the middle
`sample` (as the what-ifs do), and the section says so."""
from __future__ import annotations

from ..lag import (behind_words, cause_words, factor_text, headroom_words, human_seconds,
                   lag_one)
from ..replay import Replayer, ReplayError, source_times
from ..schedulers import SchedulerError, parse_scheduler
from ..simcore import SimulationError
from .tasks import Tasks
from .whatif import sample_window


def plan(tasks: Tasks, trace, profile, picks: list[tuple[str, int]], workers, *,
         tracker_options, applier_options, bugs, sample: int | None,
         closed: dict | None = None) -> dict | None:
    """Add the section's runs to `tasks`; None (and nothing planned) with the reason when the
    trace has no source commit times. `closed`: the makespan of the sweep's run of (scheduler,
    W) over the whole trace with the same options, which is the closed backlog a headroom
    search starts from (`Replayer.closed_makespan`): taken, not run again."""
    try:
        times = source_times(trace.txns())
        times.check_pace()
    except ReplayError as e:
        return {"skipped": str(e)}
    window = sample_window(trace, sample)
    head_trace = window or trace
    head_times = source_times(head_trace.txns()) if window else times

    def opts(name):
        return dict(bugs=bugs, tracker_options=tracker_options(parse_scheduler(name).tracker),
                    applier_options=applier_options, on_run=tasks.bump)

    for name, w in picks:
        tasks.add(("lag", name, w), f"lag {name} W={w}",
                  lambda name=name, w=w: _guard(lambda: lag_one(
                      trace.txns, times, name, w, profile, **opts(name))))
    rows = []
    for name in dict.fromkeys(n for n, _ in picks):
        for w in ([1] if parse_scheduler(name).is_serial else workers):
            rows.append((name, w))
            if window is None and (name, w) in picks:
                continue        # the same search as the lag task's (`lag_one`): taken from it
            known = (closed or {}).get((name, w)) if window is None else None
            tasks.add(("headroom", name, w), f"headroom {name} W={w}",
                      lambda name=name, w=w, known=known: _guard(lambda: Replayer(
                          head_trace.txns, head_times, name, w, profile, _closed=known,
                          **opts(name)).headroom()))
    return {"times": times, "picks": picks, "sample": window, "headroom_rows": rows}


def _headroom_outcome(done: dict, name: str, w: int):
    """The headroom search of (name, w): its own task's, or on the whole trace the pick's lag
    task's, which made the very same replays (the closed run, two laps at today's pace, the
    same bisection) and so the same figure."""
    if ("headroom", name, w) in done:
        return done[("headroom", name, w)]
    kind, value = done[("lag", name, w)]
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
    busiest, busiest_at = times.busiest()
    out = {"timestamps": "spread over each second" if times.whole_seconds else "µs",
           "held_back": times.held_back_note(), "longer_than_a_minute": times.period > 60e6,
           "write_rate": round(times.write_rate(), 3), "busiest_minute_rate": round(busiest, 3),
           "busiest_minute_at": times.clock(busiest_at), "configs": [], "headroom": {}}
    for name, w in picks:
        kind, value = done[("lag", name, w)]
        out["configs"].append(value if kind == "ok" else
                              {"scheduler": name, "workers": w, "error": value})
    for name, w in planned["headroom_rows"]:
        kind, value = _headroom_outcome(done, name, w)
        row = out["headroom"].setdefault(name, [])
        row.append({"workers": w, "headroom": round(value[0], 3), "is_bound": value[1]}
                   if kind == "ok" else {"workers": w, "error": value})
    if planned["sample"] is not None:
        s = planned["sample"]
        out["headroom_sample"] = {"transactions": s.count, "of": s.trace.count,
                                  "first_seq": s.first_seq, "last_seq": s.last_seq}
    out["answer"] = answer(out)
    return out


def answer(d: dict) -> list[str]:
    """The section's answer in words, one sentence per configuration, then the caveats."""
    lines = []
    long = d.get("longer_than_a_minute", True)     # else its busiest minute is all of it
    for c in d["configs"]:
        who = f"With {c['workers']} worker{'s' if c['workers'] > 1 else ''}, `{c['scheduler']}`"
        if "error" in c:
            lines.append(f"{who}: {c['error']}.")
            continue
        head = headroom_words(c)
        if c["keeps_up"]:
            text = (f"{who} keeps up with {head} today's pace"
                    + (", busiest minute included" if long else "")
                    + f"; its worst lag is {human_seconds(c['max_lag_s'])}, at {c['max_lag_at']}"
                    + cause_words(c))
        else:
            text = (f"{who} does not keep up: it applies {head} of today's pace; "
                    + behind_words(c))
        line = ("none, the closed backlog taking no time" if c["straight_line_headroom"] is None
                else factor_text(c["straight_line_headroom"]) + "x")
        text += f" (the straight line, closed-backlog apply rate over write rate, gives {line})"
        lines.append(text + ".")
    busiest = (f", {d['busiest_minute_rate']:.1f} in the busiest minute (from "
               f"{d['busiest_minute_at']})" if long else "")
    lines.append(f"Today's pace: {d['write_rate']:.1f} transactions per second on average"
                 f"{busiest}.")
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
    return lines
