"""`commitsched lag`: will the replica keep up, and when will it catch up (docs/lag.md).

One result per (scheduler, W) from the open replay (model/replay.py): whether it keeps up, the
headroom, lag percentiles and the maximum with when it happens, lag over time, and with a
backlog the drain time, each beside the straight-line extrapolation DBAs use today
(backlog / (apply rate - write rate), the apply rate being the closed backlog's).
"""
from __future__ import annotations

import itertools
import math
import re
import textwrap
from typing import Callable, Sequence

import numpy as np

from .metrics import PER_SECOND
from .replay import Replayer, SourceTimes, lag_over_time, shown_clock
from .schedulers import SchedulerError, parse_scheduler
from .simcore import Deadlock, SimulationError
# the calibration spread's ends and each answer's range: model/spread.py's, shared with
# `report` and `score` (spread_ends re-exported: lag_check and the tests import it from here)
from .spread import SPREAD_ENDS, add_ranges, spread_ends  # noqa: F401

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
            closed_drain: bool = False,
            bugs=frozenset(), tracker_options: dict | None = None,
            applier_options: dict | None = None, on_run: Callable | None = None) -> dict:
    """The replay's answers for one (scheduler, W); times in seconds. Raises SchedulerError
    (the trace cannot feed the scheduler) or Deadlock. `on_run`: told of each replay.
    `closed_drain`: the source writes nothing after the trace (a load that ended when the
    replica restarted): the backlog drains with nothing more arriving, the straight line's
    too; otherwise the source writes on at the trace's pace (`lag --backlog`)."""
    rep = Replayer(txns, times, scheduler, workers, profile, delay=delay * PER_SECOND, bugs=bugs,
                   tracker_options=dict(tracker_options or {}),
                   applier_options=dict(applier_options or {}), on_run=on_run)
    n = times.count
    closed = rep.closed_makespan()
    if not math.isfinite(2 * n * closed):
        # the lags' sums (each lag below about two closed backlogs) past what a float holds:
        # no verdict, mean or headroom would mean anything
        raise SimulationError(f"the trace's costs add up to {closed:.3g} µs under profile "
                              f"{profile.name}, beyond what a float holds summed over its "
                              f"{n:,} transactions: nothing to replay")
    # the first lap's times, and the second's last lag (what keeps_up and the growth read)
    two = rep.replay(1.0, laps=2, detail=True, keep=n)
    keeps_up = rep.keeps_up(1.0, two)
    first = two.lag_of(0, n)
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
        "headroom": None,
        "headroom_is_bound": None,
        "max_lag_s": round(float(first[worst]) / PER_SECOND, 6),
        "max_lag_at": times.iso(float(two.source[worst])),
        "p50_lag_s": round(float(np.percentile(first, 50)) / PER_SECOND, 6),
        "p99_lag_s": round(float(np.percentile(first, 99)) / PER_SECOND, 6),
        "mean_lag_s": round(float(first.mean()) / PER_SECOND, 6),
        "lag_growth_per_lap_s": round((two.lag_at(2 * n - 1) - two.lag_at(n - 1)) / PER_SECOND,
                                      6),
        "lap_s": round(times.period / PER_SECOND, 6),
        "apply_rate": None if apply_rate is None else round(apply_rate, 3),
        "write_rate": round(write_rate, 3),
        "straight_line_headroom": (None if apply_rate is None
                                   else round(apply_rate / write_rate, 3)),
        "lag_over_time": [[round(t / PER_SECOND, 6), round(v / PER_SECOND, 6)]
                          for t, v in lag_over_time(two, n)],
        "max_lag_cause": worst_lag_cause(two, n, times, txns, closed, delay * PER_SECOND,
                                         first),
    }
    # all that is read of the two laps: let them go before the headroom search and the drain
    # replay more (on a day of binlog they are hundreds of MB)
    del two, first
    headroom, bound = rep.headroom(keeps_up)
    out["headroom"], out["headroom_is_bound"] = round(headroom, 3), bound
    if backlog is not None:
        drain, why = rep.drain(backlog * PER_SECOND, backlog_at * PER_SECOND, headroom,
                               closed=closed_drain)
        out["backlog_s"] = backlog
        out["drain_s"] = None if drain is None else round(drain / PER_SECOND, 6)
        if why:
            out["drain_note"] = why
        out["straight_line_drain_s"] = straight_line_drain(backlog, apply_rate, write_rate,
                                                           closed=closed_drain)
    out["simulations"] = rep.runs
    return out


def worst_lag_cause(lap, n: int, times: SourceTimes, txns: Callable, closed: float,
                    delay: float = 0.0, lags: np.ndarray | None = None) -> dict:
    """Why the first lap's worst lag is what it is, read from the replay itself (docs/lag.md,
    "Why the worst lag"): what it waited for between its arrival and its commit, and what had
    arrived before it. Times in µs inside, seconds out.

    The lag L of the worst transaction k is its delivery delay plus its wait D (arrival to
    commit). D is cut at every commit in it: each stretch between one commit and the next is
    credited to the transaction whose commit ends it, so the stretches sum to D.
    - `delivery_delay`: the delay is most of L.
    - `big_transaction`: one stretch is most of D and is mostly that transaction's own
      execution, at least twice the median transaction's: the replica committed nothing else
      while it ran (k itself, or one ahead).
    - `own_apply`: nothing had arrived ahead of k and was not yet applied: its lag is its own
      execution, commit and flushes.
    - otherwise k queued behind Q transactions that had arrived and were not yet applied. At
      the replica's usual rate (the closed backlog's, n / its makespan) they take Q / rate:
      that much of D is the queue (`burst`: more arrived than the replica clears, from the
      start of the excess, the running minimum of j - rate * arrival_j); the rest is the
      queue applied slower than usual: `low_parallelism` when their mean execution time
      explains less of the slowdown than the fall in how many ran at once, else
      `heavy_stretch`. `lags`: the first lap's, where the caller has them."""
    # on a day of binlog each of these arrays is tens of MB: made once, let go when read
    source = lap.source[:n]
    commit = lap.commit[:n]
    execs = lap.exec[:n]
    k = int(np.argmax(lap.lag_of(0, n) if lags is None else lags))
    arrive_k = source[k] + delay
    total, wait = float(commit[k] - source[k]), float(commit[k] - arrive_k)
    ahead = np.flatnonzero(commit[:k] > arrive_k)
    queued = int(ahead.size)
    rate = n / closed if closed > 0 else None                # transactions per µs
    s = 1 / PER_SECOND
    out = {"seq": times.first_seq + k, "lag_s": round(total * s, 6),
           "delivery_delay_s": round((total - wait) * s, 6), "wait_s": round(wait * s, 6),
           "queued_behind": queued}
    if total <= 0:
        out.update(kind="none", text="no transaction lags")
        return out
    if total - wait >= total / 2:
        out.update(kind="delivery_delay",
                   text=f"the delivery delay: {human_seconds((total - wait) * s)} of "
                        f"{human_seconds(total * s)} pass before it reaches the relay log "
                        f"(--delay)")
        return out
    # the commits within its wait, in time order, each ending a stretch
    members = np.append(ahead, k)
    del ahead
    ends = commit[members]
    keep = ends <= commit[k]
    members, ends = members[keep], ends[keep]
    del keep
    order = np.argsort(ends, kind="stable")
    members, ends = members[order], ends[order]
    del order
    stretches = np.diff(np.concatenate(([arrive_k], ends)))
    del ends
    worst = int(np.argmax(stretches)) if stretches.size else 0
    stall, m = (float(stretches[worst]), int(members[worst])) if stretches.size else (0.0, k)
    median = float(np.median(execs))
    if wait > 0 and stall >= wait / 2 and float(execs[m]) >= stall / 2 \
            and float(execs[m]) >= 2 * median:
        txn = next(itertools.islice(txns(), m, None))
        size = ", ".join(x for x in (
            f"GTID {txn.gtid}" if txn.gtid else "",
            f"{txn.rows:,} rows" if getattr(txn, "rows", None) is not None else "",
            f"{txn.bytes / 1e6:.1f} MB" if getattr(txn, "bytes", None) else "") if x)
        times_median = (f", {execs[m] / median:,.0f}x the median transaction's"
                        if median > 0 else "")
        who = (f"seq {times.first_seq + m}" + (f" ({size})" if size else ""))
        text = (f"one big transaction: {who} executes for "
                f"{human_seconds(float(execs[m]) * s)}{times_median}")
        text += (", its own apply" if m == k else
                 f"; it waited behind it: the replica committed nothing for "
                 f"{human_seconds(stall * s)} of its {human_seconds(wait * s)} wait")
        out.update(kind="big_transaction", text=text, big_seq=times.first_seq + m,
                   big_gtid=txn.gtid, big_rows=getattr(txn, "rows", None),
                   big_bytes=getattr(txn, "bytes", None),
                   big_exec_s=round(float(execs[m]) * s, 6),
                   median_exec_s=round(median * s, 6), stall_s=round(stall * s, 6))
        return out
    if queued == 0:
        # nothing was queued ahead: the lag is its own execution, commit and flushes
        out.update(kind="own_apply",
                   text="its own apply (execution, commit and flushes): nothing was queued "
                        "ahead of it")
        return out
    queue = min(wait, queued / rate) if rate else 0.0
    slow = wait - queue
    out.update(queue_s=round(queue * s, 6), slower_than_usual_s=round(slow * s, 6),
               apply_rate=None if rate is None else round(rate * PER_SECOND, 3))
    if queue >= slow:
        # the excess began where j - rate * arrival_j was lowest before k
        excess = source[:k + 1] + delay
        excess *= rate
        np.subtract(np.arange(k + 1), excess, out=excess)
        j0 = int(np.argmin(excess))
        del excess
        count, span = k - j0 + 1, float(arrive_k - (source[j0] + delay))
        at = times.clock(float(source[j0]))
        since = f"the trace's start at {at}" if j0 == 0 else at
        wrote = (f"{count:,} transactions in {human_seconds(span * s)} from {since} "
                 f"({_rate(count / (span * s))} txn/s)" if span > 0 else
                 f"{count:,} transactions at once at {at}")
        out.update(kind="burst", burst_from=times.iso(float(source[j0])),
                   burst_transactions=count,
                   burst_s=round(span * s, 6),
                   burst_rate=None if span <= 0 else round(count / (span * s), 3),
                   text=f"a burst: the source wrote {wrote}, faster than the "
                        f"{_rate(rate * PER_SECOND)} txn/s this replica applies; "
                        f"{queued:,} were still queued ahead of it when it arrived")
        return out
    count = members.size
    applied = count / wait                                     # per µs
    mean_exec, usual_exec = float(execs[members].mean()), float(execs.mean())
    weight = mean_exec / usual_exec if usual_exec > 0 else 1.0
    shortfall = rate / applied
    at = times.clock(float(source[members[0]]))
    par, usual_par = float(execs[members].sum()) / wait, float(execs.sum()) / closed
    out.update(stretch_from=times.iso(float(source[members[0]])),
               stretch_transactions=int(count),
               stretch_rate=round(applied * PER_SECOND, 3),
               stretch_parallelism=round(par, 3), usual_parallelism=round(usual_par, 3),
               stretch_mean_exec_s=round(mean_exec * s, 6),
               usual_mean_exec_s=round(usual_exec * s, 6))
    said = (f"the {count:,} transactions it queued behind (from {at}) committed at "
            f"{_rate(applied * PER_SECOND)} txn/s, against the {_rate(rate * PER_SECOND)} "
            f"txn/s this replica applies the whole trace")
    if weight * weight >= shortfall:
        out.update(kind="heavy_stretch",
                   text=f"a stretch of heavy transactions: {said}; they execute for "
                        f"{human_seconds(mean_exec * s)} on average, against "
                        f"{human_seconds(usual_exec * s)} over the trace")
    else:
        out.update(kind="low_parallelism",
                   text=f"a low-parallelism stretch: {said}; {par:.1f} of them ran at once "
                        f"on average, against {usual_par:.1f} over the trace (they depend on "
                        f"each other)")
    return out


# The keeps-up test forgives the appliers' jitter, two transactions' time on each worker
# (`Replayer.jitter`): 2 W / N of a lap. Past this share of a lap, a lag that grows by less
# than the jitter each lap passes as bounded, and the trace is too short to say.
SHORT_TRACE_JITTER = 0.05


def short_trace_note(count: int, workers: Sequence[int]) -> str | None:
    """What to say when the trace is too short for the keeps-up test (and so the headroom) at
    the largest worker count asked for; None when it is long enough."""
    w = max(workers, default=1)
    share = 2.0 * w / max(count, 1)
    if share <= SHORT_TRACE_JITTER:
        return None
    need = math.ceil(2.0 * w / SHORT_TRACE_JITTER)
    return (f"only {count:,} transaction{'s' if count != 1 else ''}: the keeps-up test forgives "
            f"two transactions' apply on each worker (the appliers' jitter): at W={w} that is "
            f"{share:.0%} of the whole trace's apply, so a lag growing by less than that "
            f"each pass counts as bounded; 'keeps up' and the headroom need at least {need:,} "
            f"transactions at this W (a longer stretch of binlog)")


def straight_line_drain(backlog: float, apply_rate: float | None,
                        write_rate: float, closed: bool = False) -> float | None:
    """The extrapolation DBAs use: the backlog's transactions over the net apply rate (None:
    the replica applies no faster than the source writes; 0: an apply rate without bound);
    `closed`: nothing more arrives, over the apply rate itself."""
    if apply_rate is None:
        return 0.0
    if closed:
        return round(backlog * write_rate / apply_rate, 6) if apply_rate > 0 else None
    if apply_rate <= write_rate:
        return None
    return round(backlog * write_rate / (apply_rate - write_rate), 6)


def lag_sweep(trace, times: SourceTimes, schedulers: Sequence[str], workers: Sequence[int],
              profile, *, jobs: int = 1, progress=lambda s: None, skip_unfit: bool = True,
              **kwargs) -> list[dict]:
    """`lag_one` for every (scheduler, W) (`serial` once), `jobs` at a time; a scheduler the
    trace cannot feed is skipped with a note when `skip_unfit`, else SchedulerError."""
    from .progress import SharedCount, note_of
    from .scoring import fork_map
    tracker_options = kwargs.pop("tracker_options", lambda t: {})
    runs = [(name, w) for name in schedulers
            for w in ([1] if parse_scheduler(name).is_serial else workers)]
    finished = [0, runs[0] if runs else None]      # configurations done, the next one
    # each configuration is a dozen replays or more (two laps, the headroom bisection, a
    # drain): counted as they end, so that the line moves within a long configuration
    replays = SharedCount(progress, lambda count: (
        f"{finished[0]}/{len(runs)} configurations done, {count:,} replays so far"
        + (f" ({finished[1][0]} W={finished[1][1]} next)" if finished[0] == 0 and finished[1]
           else "")))

    def work(item):
        name, w = item
        try:
            return "ok", lag_one(trace.txns, times, name, w, profile,
                                 tracker_options=tracker_options(parse_scheduler(name).tracker),
                                 on_run=replays.bump, **kwargs)
        except SchedulerError as e:
            return "unfit", str(e)
        except Deadlock as e:
            return "deadlock", str(e)

    results, unfit = [], set()
    # said before the first replay ends: on a large trace that is minutes
    if runs:
        progress(replays.text_of(0))
    for i, ((name, w), (kind, value)) in enumerate(zip(runs, fork_map(work, runs, jobs,
                                                                      replays.show))):
        finished[0] = i + 1
        progress(f"{i + 1}/{len(runs)} configurations done ({name} W={w}), "
                 f"{replays.count:,} replays so far")
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


def file_gaps(source: dict | None) -> list[str]:
    """The gaps between binlog files that import recorded in the trace's header
    (`import.file_gaps`, model/importers/continuity.py), one line each."""
    imp = (source or {}).get("import")
    gaps = imp.get("file_gaps") if isinstance(imp, dict) else None
    return [str(g) for g in gaps] if isinstance(gaps, list) else []


def gaps_words(gaps: Sequence[str], *, drain: bool = False) -> str | None:
    """What binlog file gaps do to the answers, in words (None: no gap)."""
    if not gaps:
        return None
    k = len(gaps)
    return (f"the binlog is not whole: import found {k} gap{'s' if k > 1 else ''} between "
            f"its files ({'each' if k > 1 else 'it'} said below): the replay reads "
            f"{'each hole' if k > 1 else 'the hole'} as a quiet spell, so the lags, the "
            f"keeps-up verdict and the headroom" + (" and the drain time" if drain else "")
            + " are for the binlog as given, not for the source's pace over the transactions "
              "missing there")


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


def cause_words(r: dict) -> str:
    """The worst lag's cause as a clause (`worst_lag_cause`), or nothing."""
    cause = r.get("max_lag_cause")
    return f", from {cause['text']}" if cause and cause.get("kind") != "none" else ""


def behind_words(r: dict, zone: str | None = None) -> str:
    """How the lag goes, in words: its maximum when it stays bounded; when it grows, how much
    further behind each pass of the trace leaves the replica. Clock times in `zone` (UTC)."""
    why = cause_words(r)
    at = shown_clock(r["max_lag_at"], zone)
    if r["keeps_up"]:
        return f"it lags at most {human_seconds(r['max_lag_s'])} ({at}){why}"
    text = (f"its lag grows without bound: {human_seconds(r['max_lag_s'])} behind at worst "
            f"over the trace ({at})")
    growth = r.get("lag_growth_per_lap_s")
    if growth is not None and growth > 0:
        text += (f", then {human_seconds(growth)} more every {human_seconds(r['lap_s'])} of "
                 f"this pace")
    return text + (f"; the worst lag over the trace is{why.removeprefix(',')}" if why else "")


def verdict(r: dict, zone: str | None = None) -> str:
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
    text += "; " + behind_words(r, zone)
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
    """The text output (clock times in `times.zone`, UTC by default)."""
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
        lines.append(verdict(best, times.zone))
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
    ends = add_ranges(results, at_ends, ("headroom", "max_lag_s", "drain_s"),
                      unbounded=("drain_s",))
    for r in results:
        pair = ends.get((r["scheduler"], r["workers"])) if "error" not in r else None
        if pair is not None:
            r["keeps_up_slowest"], r["keeps_up_fastest"] = (pair[0]["keeps_up"],
                                                            pair[1]["keeps_up"])
            r["keeps_up_words"] = keeps_up_words(r)


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
