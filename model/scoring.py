"""Scoring: replay one trace under schedulers and worker counts, against serial and the bound."""
from __future__ import annotations

import contextlib
import math
import multiprocessing as mp

import numpy as np
import os
import signal
from typing import Callable, Iterator, Sequence

from .metrics import PER_SECOND, RunMetrics, bound_for, heuristic_bounds, heuristic_bounds_for
from .profiles import Profile
from .progress import TICK_SECONDS, note_of, tick_of
from .schedulers import DEFAULT_SCHEDULERS, SchedulerError, parse_scheduler, run_scheduler
from .simcore import Deadlock, SimulationError


def _commits_in_order(sched, applier_options: dict) -> bool:
    from .trackers import TRACKERS
    if sched.is_serial or sched.applier != "mysql":
        return True
    if TRACKERS[sched.tracker].kind == "database":
        return False
    return applier_options.get("preserve_commit_order", True)


# `z3_bound` "auto": the exact optimum (checks/z3_bound.py) replaces the heuristic bound for
# traces up to these sizes, where z3 usually finishes within the time cap (measured: in_order
# 200 transactions at W=8 in ~4-7 s; free 10 in ~0.1-17 s); "on": any size, "off": never.
Z3_AUTO_LIMIT = {"in_order": 100, "free": 10}
def _z3_bound(trace, profile: Profile, workers: int, in_order: bool, heuristic: dict,
              mode: str, timeout: float) -> dict | None:
    """The z3 figure for one (workers, regime), labelled: the exact optimum, or a lower bound
    better than the heuristic one when z3 ran out of time part-way; None when z3 is not used
    (off, too large for auto, not installed under auto) or proved nothing beyond the heuristic."""
    regime = "in_order" if in_order else "free"
    if mode == "off" or (mode == "auto" and trace.count > Z3_AUTO_LIMIT[regime]):
        return None
    try:
        from .checks import z3_bound
    except ImportError:
        if mode == "on":
            raise
        return None
    rb = z3_bound.regime_bound(list(trace.txns()), profile, workers, regime, timeout=timeout,
                               heuristic=heuristic)
    if not rb.exact and rb.lower_bound <= heuristic["bound_" + regime]:
        return None
    return {"regime": regime, "work_bound": rb.work_bound, "span_bound": rb.span_bound,
            "bound": round(rb.lower_bound, 6), "exact": rb.exact, "kind": rb.kind,
            "solver_seconds": rb.solver_seconds}


def score_trace(trace, schedulers: Sequence[str] | None, workers: Sequence[int],
                profile: Profile, *, bugs: frozenset[str] = frozenset(),
                tracker_options: Callable[[str | None], dict] = lambda t: {},
                applier_options: dict | None = None,
                progress: Callable[[str], None] = lambda s: None,
                skip_unfit: bool = True, z3_bound: str = "auto",
                z3_timeout: float = 10.0, jobs: int = 1,
                bounds: dict[int, dict] | None = None,
                keep: dict | None = None, cluster: str | None = None) -> list[dict]:
    """One result per (scheduler, workers); `serial` once, with one worker. `trace` has
    `.txns()` (a fresh iterator per call) and `.count`. A scheduler the trace cannot feed (e.g.
    commit_id without commit ids) is skipped with a note on stderr when `skip_unfit`.
    `z3_bound` ("auto" | "on" | "off"): score against z3's optimum
    of the scheduler's regime instead of the heuristic bound (`bound.exact` says which), each
    solve capped at `z3_timeout` seconds. `jobs` > 1: the (scheduler, W) runs, independent
    of each other, run in that many processes; the results are the same, in the same order.
    `bounds`: the heuristic bounds by W (`heuristic_bounds`) when the caller has them already;
    computed here otherwise (`heuristic_bounds_by_w`). `keep`: a dict to fill with (scheduler,
    W) -> (RunMetrics, blocked) of every run that finished, for a caller that needs a run's
    figures again under other terms (the report's what-ifs), instead of running it again.
    `cluster`: run the sweep's runs on a Dask cluster instead of the local process pool (its
    scheduler's address, or "local:N" for a cluster of N worker processes on this machine;
    model/distributed.py); the results are the same."""
    z3_mode, z3_cap = z3_bound, z3_timeout
    z3_cache: dict = {}
    names = list(schedulers or DEFAULT_SCHEDULERS)
    parsed = [parse_scheduler(n) for n in names]
    applier_options = dict(applier_options or {})
    progress("serial baseline")
    serial_metrics = RunMetrics(1)
    serial_blocked = run_scheduler("serial", trace.txns(), 1, profile, serial_metrics)
    serial_makespan = serial_metrics.makespan
    if not math.isfinite(serial_makespan):
        raise SimulationError(f"the trace's costs add up to {serial_makespan} µs under profile "
                              f"{profile.name}, beyond what a float holds: nothing to score")
    if bounds is None:
        progress("bounds")
        bounds = heuristic_bounds_by_w(trace, profile, workers, jobs)
    # The runs, in table order; their bounds first (z3 is solved once per (W, regime)).
    runs = []
    for sched in parsed:
        in_order = _commits_in_order(sched, applier_options)
        for w in ([1] if sched.is_serial else workers):
            heur = bounds.get(w) or heuristic_bounds(trace.txns(), profile, w)
            if (w, in_order) not in z3_cache:
                progress(f"z3 bound W={w} {'in_order' if in_order else 'free'}")
                z3_cache[w, in_order] = _z3_bound(trace, profile, w, in_order, heur, z3_mode,
                                                  z3_cap)
            runs.append((sched, w, z3_cache[w, in_order] or bound_for(heur, in_order),
                         tracker_options(sched.tracker)))
    common = (profile, bugs, applier_options, serial_makespan)
    # `serial` in the list is the baseline run above (it takes no bugs or options): not again
    known = {i: ("ok", (serial_metrics.result(scheduler=sched.name, profile=profile.name,
                                              blocked=serial_blocked,
                                              serial_makespan=serial_makespan, bound=bound),
                        serial_metrics, serial_blocked))
             for i, (sched, _, bound, _) in enumerate(runs) if sched.is_serial}
    _keys_unfit(trace, runs, known, progress)
    shares = _one_thread_shares(trace, runs, bugs, known)
    alike = _same_stream_shares(trace, runs, bugs, known, shares)
    results = []
    unfit: set[str] = set()
    for i, (sched, w, outcome) in enumerate(_sweep(trace, runs, common, jobs, known, shares,
                                                   tick_of(progress), alike, cluster)):
        progress(f"{i + 1}/{len(runs)} runs done ({sched.name} W={w})")
        if sched.name in unfit:
            continue
        kind, value = outcome
        if kind == "ok":
            value, metrics, blocked = value
            if keep is not None:
                keep[sched.name, w] = (metrics, blocked)
        if kind == "unfit":
            if not skip_unfit:
                raise SchedulerError(value)
            note_of(progress)(f"commitsched: skipped {sched.name}: {value}")
            unfit.add(sched.name)       # and its other W: the trace cannot feed it
        elif kind == "deadlock":
            results.append({"scheduler": sched.name, "workers": w, "profile": profile.name,
                            "transactions": trace.count, "error": f"deadlock: {value}"})
        else:
            results.append(value)
    for r in results:
        r.update(describe_prediction(profile, r.get("speedup") if r["scheduler"] != "serial"
                                     else None))
    return results


def _run_one(trace, sched, w: int, bound: dict, tracker_opts: dict, common: tuple) -> tuple:
    """One (scheduler, W) run: ("ok", (result, RunMetrics, blocked)) or ("unfit" | "deadlock",
    what went wrong)."""
    profile, bugs, applier_options, serial_makespan = common
    metrics = RunMetrics(w)
    try:
        blocked = run_scheduler(sched, trace.txns(), w, profile, metrics, bugs=bugs,
                                tracker_options=tracker_opts, applier_options=applier_options)
    except SchedulerError as e:         # as text: it may come back from a worker process
        return "unfit", str(e)
    except Deadlock as e:
        return "deadlock", str(e)
    return "ok", (metrics.result(scheduler=sched.name, profile=profile.name, blocked=blocked,
                                 serial_makespan=serial_makespan, bound=bound), metrics, blocked)


_FORK: tuple = ()      # (fn, items) of the fork_map in progress, for its forked workers


def _fork_call(i: int) -> tuple[bool, object]:
    fn, items = _FORK
    try:
        return True, fn(items[i])
    except Exception:       # not sent back: an exception need not pickle (TraceError does not)
        return False, None


_WORKER_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _quiet_worker_signals() -> None:
    """A pool worker dies quietly when the pool ends it (SIGTERM) or the user interrupts the
    sweep (SIGINT): the parent reports, not each worker with a traceback of its own. The worker
    was forked with both signals blocked (`_signals_held`), so one sent before now waits until
    these handlers are in place."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_SIGNALS)


@contextlib.contextmanager
def _signals_held():
    """SIGTERM and SIGINT blocked in this thread while the pool forks its workers (and in the
    pool's threads, which inherit the mask: they fork any replacement worker). A forked child
    starts with its parent's handlers, and `cli.main`'s SIGTERM handler raises: a worker the
    pool ends before its initializer ran (the sweep was done first, on a loaded machine) would
    raise in the child, printing a traceback, or, if it came before multiprocessing's own
    try/finally around the child, escape `os._exit` and run on as a copy of the parent, which
    the parent then waits for forever. Blocked, the signal waits in the child for
    `_quiet_worker_signals`; a signal sent to the parent meanwhile is delivered on leaving."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def fork_map(fn: Callable, items: Sequence, jobs: int,
             tick: Callable[[], None] | None = None) -> Iterator:
    """fn(item) for each item, in order, computed `jobs` at a time in forked processes (lazily:
    each result as soon as it and those before it are done); `tick()` is called about once a
    second while the workers are busy (a progress line's clock). The workers are forked, so `fn`
    and the items (closures, a loaded trace) are inherited, never pickled: only each item's
    index goes to a worker and only fn's result (which must pickle) comes back. An item whose
    fn raised in a worker is run again here, to raise the same exception as one job would.
    With one job, one item, or no fork on this platform, it runs here. Forking copies no other
    thread, so the caller must not hold a lock that a thread of its own may hold (the trace
    loader reads gzip in this thread for that reason: model/trace.py); and fn must not fork
    again (a pool's workers may not have children)."""
    items = list(items)
    if jobs <= 1 or len(items) <= 1 or "fork" not in mp.get_all_start_methods():
        for item in items:
            yield fn(item)
        return
    global _FORK
    outer, _FORK = _FORK, (fn, items)
    try:
        with _signals_held():
            pool = mp.get_context("fork").Pool(min(jobs, len(items)),
                                               initializer=_quiet_worker_signals)
        with pool:
            results = pool.imap(_fork_call, range(len(items)))
            for i in range(len(items)):
                ok, value = _next(results, tick)
                yield value if ok else fn(items[i])
    finally:
        _FORK = outer


def _next(results, tick: Callable[[], None] | None):
    """The next result of a pool's imap, ticking while it is not ready."""
    if tick is None:
        return results.next()
    while True:
        try:
            return results.next(timeout=TICK_SECONDS)
        except mp.TimeoutError:
            tick()


def same_one_thread_run(sched, workers: int, bugs) -> bool:
    """Whether this run is the one-thread MariaDB run, the same for every mode and tracker.
    With one thread a MariaDB applier applies the transactions one after the other, each once
    its predecessor committed: no GCO, speculation, lock or kill decision is left to change the
    schedule, and the costs depend on the transaction alone, so every mode and every group
    tracker gives the same run (tests/test_one_thread_runs.py checks it, run by run, on every
    bundled trace and on generated ones). Not with injected bugs: they exist to break rules."""
    return (workers == 1 and not bugs and sched.applier is not None
            and sched.applier.startswith("mariadb_"))


def tracker_unfit(trace, tracker: str, tracker_options: dict) -> str | None:
    """Why `tracker` cannot annotate the trace (what a run of it would fail with), or None."""
    from . import engine
    from .trackers import TrackerError, get_tracker
    columns = engine.columns_of(trace.txns())
    if columns is not None and tracker in engine.COMPILED_TRACKERS:
        try:                        # the core's tracker: the same verdict, the same message
            engine.annotation(columns, tracker, tracker_options)
        except SchedulerError as e:
            return str(e)
        return None
    try:
        for _ in get_tracker(tracker, **tracker_options).annotate(trace.txns()):
            pass
    except TrackerError as e:
        return str(e)
    return None


def _keys_unfit(trace, runs: list, known: dict, progress) -> None:
    """The runs made from row keys (model/keys.py) on a trace whose keys are unknown for some
    tables are unfit, in one line naming them all, before any is made; with partial keys
    (MINIMAL row images) they run, and a note says what they cannot see."""
    from . import keys
    wanting = [i for i, (sched, _, _, _) in enumerate(runs)
               if i not in known and keys.needs_keys(sched)]
    parallel = any(i not in known and not keys.needs_keys(sched) and w > 1
                   for i, (sched, w, _, _) in enumerate(runs))
    if not wanting and not parallel:
        return
    missing = keys.missing_keys(trace)
    if missing.unknown and parallel:
        note_of(progress)("commitsched: note: " + keys.unknown_locks_note(missing.unknown))
    if not wanting:
        return
    if missing.unknown:
        why = keys.unknown_message(missing.unknown)
        for i in wanting:
            known[i] = ("unfit", why)
    elif missing.partial:
        note_of(progress)("commitsched: note: " + keys.partial_message(missing.partial))


def _one_thread_shares(trace, runs: list, bugs, known: dict) -> dict[int, int]:
    """Of the runs that are the same one-thread run (`same_one_thread_run`), only the first
    whose tracker can annotate the trace is made; the ones before it are unfit (added to
    `known`), and each one after it is {index: that run's index}: its tracker is only checked."""
    same = [i for i, (sched, w, _, _) in enumerate(runs)
            if i not in known and same_one_thread_run(sched, w, bugs)]
    for n, i in enumerate(same):
        sched, _, _, topts = runs[i]
        why = tracker_unfit(trace, sched.tracker, topts)
        if why is None:
            return {j: i for j in same[n + 1:]}
        known[i] = ("unfit", why)
    return {}


def same_stream(trace, a: tuple[str, dict], b: tuple[str, dict]) -> bool:
    """Whether trackers `a` and `b` ((name, options)) annotate the trace alike: both feed it
    whole, of the same kind, with equal dependencies for every transaction. An applier sees
    nothing of its tracker but this stream (`run_scheduler` hands it `tracker.annotate(txns)`,
    and picks the simulation by applier and tracker kind), and a simulation is a deterministic
    function of its stream, workers, profile and options: so two schedulers with the same
    applier whose trackers annotate alike make the same run at every W (WRITESET_SESSION is
    WRITESET on a trace without sessions, e.g. a MariaDB binlog, whose DML carries no thread
    id). One pass over both, stopped at the first difference; an unfit tracker is never alike.
    tests/test_same_stream_runs.py checks the shared rows against runs made for them."""
    from itertools import tee, zip_longest
    from . import engine
    from .trackers import TrackerError, get_tracker
    try:
        ta, tb = get_tracker(a[0], **a[1]), get_tracker(b[0], **b[1])
        if ta.kind != tb.kind:
            return False
        columns = engine.columns_of(trace.txns())
        if (columns is not None and a[0] in engine.COMPILED_TRACKERS
                and b[0] in engine.COMPILED_TRACKERS):     # the core's annotations, compared
            try:
                da, db = (engine.annotation(columns, *a), engine.annotation(columns, *b))
            except SchedulerError:
                return False
            if da is not None and db is not None:   # else (no seq0: empty) as the reference
                return all(np.array_equal(da[k], db[k]) for k in da)
        xs, ys = tee(trace.txns())          # the same Txn objects, read once
        end = (None, object())
        for (x, dx), (y, dy) in zip_longest(ta.annotate(xs), tb.annotate(ys), fillvalue=end):
            if x is not y or dx != dy:
                return False
    except TrackerError:
        return False
    return True


def _same_stream_shares(trace, runs: list, bugs, known: dict, shares: dict) -> dict[int, int]:
    """{index: index of the earlier run it is the same run as} for runs (not `known`, not
    sharing the one-thread run already) with the same applier and W whose trackers annotate the
    trace alike (`same_stream`); each pair of trackers is compared once. Not with injected bugs
    (as `same_one_thread_run`)."""
    if bugs:
        return {}
    verdict: dict = {}

    def alike(a: tuple, b: tuple) -> bool:
        key = (a[0], repr(sorted(a[1].items())), b[0], repr(sorted(b[1].items())))
        if key not in verdict:
            verdict[key] = same_stream(trace, a, b)
        return verdict[key]

    firsts: dict[tuple, list[int]] = {}        # (applier, W) -> runs made, one per stream
    out: dict[int, int] = {}
    for i, (sched, w, _, topts) in enumerate(runs):
        if sched.is_serial or i in known or i in shares:
            continue
        made = firsts.setdefault((sched.applier, w), [])
        me = (sched.tracker, topts)
        same = next((j for j in made
                     if alike((runs[j][0].tracker, runs[j][3]), me)), None)
        if same is None:
            made.append(i)
        else:
            out[i] = same
    return out


def _work(i: int, trace, runs: list, common: tuple, shares: dict, engine_name: str):
    """Run i of a sweep (in this process, a forked one or a cluster's worker)."""
    from . import engine
    if engine.default() != engine_name:         # a cluster's worker did not inherit it
        engine.set_default(engine_name)
    sched, w, bound, topts = runs[i]
    if i in shares:
        return tracker_unfit(trace, sched.tracker, topts)
    return _run_one(trace, sched, w, bound, topts, common)


def _sweep(trace, runs: list, common: tuple, jobs: int, known: dict, shares: dict, tick=None,
           alike: dict | None = None, cluster: str | None = None):
    """Yield (scheduler, W, outcome) in the order of `runs`, computed `jobs` at a time, but for
    the outcomes `known` already (by index); a run in `shares` takes the outcome of the run it
    names once its own tracker is found to fit the trace; a run in `alike` takes the outcome of
    the run it names (`same_stream`: nothing to check)."""
    alike = alike or {}

    from . import engine
    todo = [i for i in range(len(runs)) if i not in known and i not in alike]
    if cluster is not None:
        from .distributed import cluster_map
        get_columns = getattr(trace, "columns", None)
        if callable(get_columns) and engine.default() == "compiled":
            get_columns()               # built once here, not on every worker
        outcomes = cluster_map(_work, todo, cluster, shared=(trace, runs, common, shares,
                                                             engine.default()), tick=tick)
    else:
        outcomes = fork_map(lambda i: _work(i, trace, runs, common, shares, engine.default()),
                            todo, jobs, tick)
    done: dict[int, tuple] = {}
    for i, (sched, w, bound, _) in enumerate(runs):
        if i in alike:
            outcome = done[alike[i]]
            # unfit after its tracker fed the whole trace: an applier option, whose message
            # names the scheduler: its own run says it under its own name
            outcome = (_run_one(trace, sched, w, bound, runs[i][3], common)
                       if outcome[0] == "unfit" else _shared_outcome(outcome, sched, bound, common))
        else:
            outcome = known[i] if i in known else next(outcomes)
        if i in shares:
            if outcome is not None:                 # its own tracker cannot feed it
                outcome = ("unfit", outcome)
            elif done[shares[i]][0] == "unfit":     # (an applier option: its message names it)
                outcome = _run_one(trace, sched, w, bound, runs[i][3], common)
            else:
                outcome = _shared_outcome(done[shares[i]], sched, bound, common)
        done[i] = outcome
        yield sched, w, outcome
    for _ in outcomes:      # none left: this ends the pool now rather than when collected
        pass


def _shared_outcome(outcome: tuple, sched, bound: dict, common: tuple) -> tuple:
    """Another run's outcome as this scheduler's (its result row under its own name; a
    deadlock's message names no scheduler)."""
    kind, value = outcome
    if kind != "ok":
        return outcome
    profile, _, _, serial_makespan = common
    _, metrics, blocked = value
    return "ok", (metrics.result(scheduler=sched.name, profile=profile.name, blocked=blocked,
                                 serial_makespan=serial_makespan, bound=bound), metrics, blocked)


def heuristic_bounds_by_w(trace, profile: Profile, workers: Sequence[int],
                          jobs: int = 1) -> dict[int, dict]:
    """`heuristic_bounds` for each worker count, keyed by W in increasing order: one pass over
    the trace for all of them (`metrics.heuristic_bounds_for`, or the compiled core's same pass
    over the columns), so `jobs` does not matter."""
    from . import engine
    txns = trace.txns()
    columns = engine.columns_of(txns)
    if columns is not None and columns.seq0 is not None:
        return engine.heuristic_bounds(columns, profile, workers)
    return heuristic_bounds_for(txns, profile, workers)


def default_jobs(requested: int | None = None) -> int:
    """Processes for a sweep: `requested` when given (--jobs), else the cores this process may
    use."""
    if requested is not None:
        return requested
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def describe_prediction(profile: Profile, speedup: float | None) -> dict:
    """What every prediction names: the machine profile, its cores, the replica's durability,
    and the speedup's band from the profile's calibration residuals (when it has one)."""
    out = {"machine": profile.machine or None, "cores": profile.cores,
           "durability": profile.durability,
           "log_replica_updates": profile.log_replica_updates}
    if speedup is not None and profile.band:
        lo, hi = profile.band
        out["speedup_band"] = [round(speedup * lo, 4), round(speedup * hi, 4)]
    unmeasured = profile.unmeasured()
    if unmeasured:
        out["unmeasured"] = unmeasured
    return out


def unmeasured_text(unmeasured: list[str]) -> str:
    """What a prediction for settings its machine's calibration never measured says of itself."""
    return ("settings its calibration never ran: " + "; ".join(unmeasured) + ". These "
            "predictions are the model's alone, and the band is its calibration's, not one "
            "measured with these settings")


def profile_line(profile: Profile) -> str:
    cores = f"{profile.cores} cores" if profile.cores else "a core per worker (no CPU limit)"
    band = (f"; band: measured/predicted {profile.band[0]:.2f}-{profile.band[1]:.2f} on its "
            f"calibration" if profile.band else "; no calibration band")
    unmeasured = profile.unmeasured()
    return (f"profile {profile.name}: {profile.machine or 'no measured machine'}, {cores}, "
            f"{profile.durability} replica, log_replica_updates "
            f"{'on' if profile.log_replica_updates else 'off'}{band}"
            + (f"; {unmeasured_text(unmeasured)}" if unmeasured else "")
            + (f"; at the host's pace now: {profile.fitted_from['host_pace_now']}"
               if (profile.fitted_from or {}).get("host_pace_now") else ""))


def _fmt(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def with_apply_ranges(results: list[dict], at_ends: dict) -> None:
    """Each result's apply time range from the same sweep at the ends of the profile's
    calibration spread (`at_ends`: end -> results; model/spread.py): `makespan_range` (µs) and
    `throughput_range` (txn/s), [low, high]."""
    from .spread import add_ranges
    add_ranges(results, at_ends, ("makespan", "throughput"))


def apply_ranges_text(results: list[dict], windows: int) -> list[str]:
    """The text output's block of apply time ranges (`with_apply_ranges`), or nothing."""
    import textwrap
    rows = [r for r in results if "makespan_range" in r]
    if not rows:
        return []
    lines = textwrap.wrap(f"ranges: the profile was calibrated from {windows} windows; each run "
                          f"made again at the slowest and the fastest calibrated pace (each "
                          f"term at its slowest / fastest window's fit): the apply time of the "
                          f"whole trace, closed backlog", 100)
    prev = None
    for r in rows:
        lo, hi = r["makespan_range"]
        tlo, thi = r.get("throughput_range") or (None, None)
        name = r["scheduler"] if r["scheduler"] != prev else ""
        prev = r["scheduler"]
        rate = (f" ({_fmt(tlo, '.1f')} to {_fmt(thi, '.1f')} txn/s)" if tlo is not None else "")
        lines.append(f"  {name:<40} {r['workers']:>3} {_seconds(lo)} to {_seconds(hi)}{rate}")
    return lines


def _seconds(us: float) -> str:
    """An apply time, three figures: '1.26 s', '840 ms', '2.5 min'."""
    from .lag import human_seconds
    if us >= 60 * PER_SECOND:
        return human_seconds(us / PER_SECOND)
    return f"{us / PER_SECOND:.3g} s" if us >= PER_SECOND else f"{us / 1e3:.3g} ms"


def format_table(results: list[dict], *, trace_path: str, profile: Profile,
                 transactions: int, windows: int = 0) -> str:
    lines = [f"trace {trace_path}: {transactions} transactions; {profile_line(profile)}",
             f"  ({profile.provenance})", ""]
    header = (f"{'scheduler':<40} {'W':>3} {'makespan':>12} {'txn/s':>11} {'speedup':>8} "
              f"{'band':>11} {'eff':>6} {'bound':>12} {'vs bnd':>6} {'retry':>5}  "
              f"{'top wait':<24} per worker")
    lines.append(header)
    lines.append("-" * len(header))
    prev = None
    for r in results:
        name = r["scheduler"] if r["scheduler"] != prev else ""
        prev = r["scheduler"]
        if "error" in r:
            lines.append(f"{name:<40} {r['workers']:>3}  {r['error']}")
            continue
        waits = {k: v for k, v in r["blocked"].items() if v > 0}
        top = max(waits, key=waits.get) if waits else "-"
        top_text = f"{top} {waits[top] / r['makespan']:.0%}" if waits and r["makespan"] else top
        per_worker = r["per_worker"]
        pw = " ".join(map(str, per_worker)) if len(per_worker) <= 8 else (
            " ".join(map(str, per_worker[:6])) + f" ... ({len(per_worker)})")
        bound = r.get("bound", {}).get("bound")
        mark = "*" if r.get("bound", {}).get("exact") else (
            "~" if "z3" in r.get("bound", {}).get("kind", "") else " ")
        band = r.get("speedup_band")
        band_text = f"{band[0]:.2f}-{band[1]:.2f}" if band else "-"
        lines.append(f"{name:<40} {r['workers']:>3} {r['makespan']:>12.1f} "
                     f"{_fmt(r['throughput'], '>11.1f')} {_fmt(r['speedup'], '>8.2f')} "
                     f"{band_text:>11} "
                     f"{_fmt(r['efficiency'], '>6.2f')} {_fmt(bound, '>11.1f')}{mark} "
                     f"{_fmt(r.get('efficiency_vs_bound'), '>6.2f')} {r['retries']:>5}  "
                     f"{top_text:<24} {pw}")
    lines.append("")
    spans = apply_ranges_text(results, windows)
    if spans:
        lines += spans + [""]
    lines.append("speedup: serial makespan / makespan; band: where the measured speedup fell "
                 "around the profile's predictions on its calibration (10th-90th percentile); "
                 "eff: speedup / W; bound: max(work/W, "
                 "conflict span), a lower bound on any schedule's makespan; vs bnd: bound / "
                 "makespan (1.00 = optimal); top wait: largest blocked time / makespan "
                 "(coordinator causes are its own time, transaction causes are summed).")
    if any(r.get("bound", {}).get("exact") for r in results):
        lines.append("bound*: the exact optimum from z3 for the scheduler's commit regime "
                     "(in order or free), not the heuristic.")
    if any("z3" in r.get("bound", {}).get("kind", "") and not r["bound"].get("exact")
           for r in results if "bound" in r):
        lines.append("bound~: a lower bound z3 proved before its time cap, above the heuristic "
                     "one; not the optimum.")
    return "\n".join(lines) + "\n"
