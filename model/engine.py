"""Engine selection (issue 29): the compiled simulation core (model/simcore_rs, Rust through
PyO3) or the Python reference model (model/applier_*.py, model/trackers.py).

The reference is the twin of the TLA+ specs (its step functions are checked against TLC state
by state, its schedules validated as TLA+ behaviours); the compiled core computes the same
schedules, faster, over the columnar trace (model/columnar.py). tests/test_engine_*.py hold the
two run by run: the same per-transaction dispatch, start, exec_end, commit, worker and retries,
and the same metrics.

`run_scheduler` (model/schedulers.py) hands a run to the core when the engine is "compiled"
(the default of `score`, `report`, `blame`, `lag`; `--engine reference` for the Python model),
the transactions come with their columns (`columnar.ColumnarTxns`), the sink is a plain
`RunMetrics`, and the run is one the core has (`unsupported` says why not otherwise). Runs the
core does not have go to the reference, whatever the engine: the tracker bugs, `victim_wakeup_lost` and `ticket_overflow`, a MySQL trace with
`replica_locks`, a schedule observer (`log=`), a run that needs row keys on a trace that names
tables whose keys are unknown (the reference's guard stops it with the tables' names,
model/keys.py), and any scheduler the core does not know (the certification-based schedulers,
reference-only).
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from .keys import KEY_APPLIERS, KEY_TRACKERS

ENGINES = ("compiled", "reference")
# What a run uses when nobody says: the compiled core where it exists. COMMITSCHED_ENGINE
# overrides it (a process and its children), `--engine` on the command line.
_default = os.environ.get("COMMITSCHED_ENGINE", "compiled")

COMPILED_TRACKERS = frozenset({"serial", "commit_order", "commit_id", "writeset",
                               "writeset_session", "slave_group_commit", "database"})
COMPILED_APPLIERS = frozenset({"mysql", "mariadb_conservative", "mariadb_optimistic",
                               "mariadb_aggressive"})
# A member of a certification-based cluster: the reference model only (model/applier_galera.py,
# applier_gr.py, the `certification` tracker); the core has none of them.
CERTIFICATION_APPLIERS = frozenset({"galera", "group_replication"})
COMPILED_BUGS = frozenset({"lwm_off_by_one", "lwm_not_prefix", "rotation_ignored",
                           "commit_order_unenforced", "gco_start_on_exec", "optimistic_no_kill"})
# The applier options each applier takes (the others the reference refuses, so the core leaves
# them to it); the MariaDB applier is given the MySQL ones and drops them, as run_scheduler does.
COMPILED_APPLIER_OPTIONS = {"mysql": frozenset({"preserve_commit_order", "checkpoint_group",
                                                "ticket_wrap"}),
                            "mariadb": frozenset({"preserve_commit_order", "checkpoint_group",
                                                  "ticket_wrap", "max_queued"})}
# Profile fields that describe a prediction and change no simulation: the core need not read
# them. Every other field must be in the core's PROFILE_READS (tests/test_engine_profile.py).
DESCRIPTIVE_PROFILE_FIELDS = frozenset({"name", "provenance", "durability", "machine", "band",
                                        "fitted_from", "calibrated", "bands"})
# Terms that Profile.with_durability turns into other terms before either engine runs (a
# relaxed replica's `commit_cpu` is `log_write_cpu`): neither engine reads them.
SETTING_PROFILE_TERMS = frozenset({"log_write_cpu"})

try:
    import commitsched_simcore as _core
except ImportError:                     # not built: `make setup` builds it (cargo + maturin)
    _core = None


class EngineError(RuntimeError):
    pass


def available() -> bool:
    return _core is not None


def set_default(engine: str) -> None:
    """The engine runs use from now on in this process (and in processes it forks)."""
    global _default
    if engine not in ENGINES:
        raise EngineError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    _default = engine


def default() -> str:
    return _default


def profile_terms(profile) -> dict:
    """The profile's fields as the core reads them."""
    return {f.name: getattr(profile, f.name) for f in dataclasses.fields(profile)
            if f.name not in DESCRIPTIVE_PROFILE_FIELDS}


def unsupported(sched, columns, bugs=frozenset(), tracker_options=None,
                applier_options=None) -> str | None:
    """Why the compiled core cannot make this run (it goes to the reference), or None."""
    if _core is None:
        return "the compiled core is not built"
    if columns is None or columns.seq0 is None:
        return ("the trace's seqs are not consecutive, or it holds an integer beyond 64 bits "
                "or more than 2^32 keys")
    if not sched.is_serial:
        if sched.tracker == "certification" or sched.applier in CERTIFICATION_APPLIERS:
            return ("the certification-based schedulers (Galera, Group Replication: "
                    "docs/certification.md) are reference-only")
        if sched.tracker not in COMPILED_TRACKERS:
            return f"tracker {sched.tracker} is reference-only"
        if sched.applier not in COMPILED_APPLIERS:
            return f"applier {sched.applier} is reference-only"
        if sched.applier == "mysql" and columns.replica_locks:
            return "replica_locks (commit-order deadlocks) are reference-only"
        if columns.keys_unknown and (sched.tracker in KEY_TRACKERS
                                     or sched.applier in KEY_APPLIERS):
            return "keys unknown: the reference's guard names the tables (model/keys.py)"
    extra = frozenset(bugs) - COMPILED_BUGS
    if extra:
        return f"bug(s) {', '.join(sorted(extra))} are reference-only"
    family = "mysql" if sched.applier == "mysql" else "mariadb"
    if not sched.is_serial and set(applier_options or {}) - COMPILED_APPLIER_OPTIONS[family]:
        return "applier options the core does not know"
    return None


def arrival_array(columns, arrival) -> np.ndarray | None:
    """An arrival callable (seq -> µs) or array (by position) as the core's float64 array."""
    if arrival is None:
        return None
    if callable(arrival):
        seq0 = columns.seq0
        return np.fromiter((arrival(seq0 + i) for i in range(columns.n)), np.float64, columns.n)
    a = np.ascontiguousarray(arrival, dtype=np.float64)
    if a.shape != (columns.n,):
        raise EngineError(f"arrivals: {a.shape[0] if a.ndim == 1 else a.shape} values for "
                          f"{columns.n} transactions")
    return a


def simulate(sched, columns, workers: int, profile, *, bugs=frozenset(), tracker_options=None,
             applier_options=None, arrival=None, schedule: bool = False, watch=(),
             times_only: bool = False, keep: int | None = None) -> dict:
    """One run in the core: a dict of RunMetrics' sums (count, busy, held, transactions,
    makespan, retries, wasted), `blocked` by cause, `watched`: the commit times of the
    positions in `watch` (NaN: never committed) and, with `schedule`, the per-transaction
    arrays (dispatch, start, exec_end, commit: float64; worker: int32 from 1; retries_each);
    with `times_only` too, only dispatch, exec and commit (what a replay reads: 24 of the
    schedule's 89 bytes a transaction), and with `keep` those of the positions below it only
    (an open replay's first lap). `columns` may be a lapped view (`Columns.lapped`): the core reads its laps from
    the one lap's arrays. Raises SchedulerError (a tracker that cannot feed the trace) or
    simcore.Deadlock."""
    from .schedulers import SchedulerError
    from .simcore import Deadlock
    from .trackers import TRACKER_BUGS
    opts = dict(applier_options or {})
    opts.pop("ticket_wrap", None)
    try:
        out = _core.simulate(columns.arrays, columns.n, columns.seq0,
                             None if sched.is_serial else sched.tracker,
                             dict(tracker_options or {}), sched.applier or "serial", workers,
                             profile_terms(profile), opts,
                             sorted(frozenset(bugs) - TRACKER_BUGS),
                             arrival_array(columns, arrival), schedule, list(watch),
                             lap_base=columns.n // columns.laps, file_step=columns.file_step,
                             cid_step=columns.cid_step, times_only=times_only, keep=keep)
    except _core.TrackerUnfit as e:
        raise SchedulerError(str(e)) from None
    except _core.Deadlock as e:
        raise Deadlock(str(e)) from None
    except _core.EngineError as e:
        raise EngineError(str(e)) from None
    if schedule and times_only:
        for name in ("dispatch", "commit", "exec"):
            out[name] = np.frombuffer(out[name], np.float64)
    elif schedule:
        for name in ("dispatch", "start", "exec_end", "commit", "exec", "ready", "wasted_each"):
            out[name] = np.frombuffer(out[name], np.float64)
        out["worker"] = np.frombuffer(out["worker"], np.int32)
        for name, dtype in (("dep_a", np.int64), ("dep_b", np.int64), ("dep_flags", np.uint8),
                            ("spec_wait", np.uint8)):
            out[name] = np.frombuffer(out[name], dtype)
        out["retries_each"] = np.frombuffer(out["retries_each"], np.uint32)
    return out


def _dep_of(sched, out: dict, columns):
    """A function (position, txn) -> that run's `dep` as the reference's tracker gives it:
    (last_committed, sequence_number, file) of a clock tracker, (group id, GTID flags) of a
    group tracker, a database tracker's schemas or None (run isolated)."""
    from .columnar import FLAG_BITS
    from .trackers import TRACKERS
    if sched.is_serial:
        return lambda i, txn: None
    kind = TRACKERS[sched.tracker].kind
    a, b = out["dep_a"].tolist(), out["dep_b"].tolist()
    if kind == "clock":
        files = columns.arrays["file"].tolist()
        return lambda i, txn: (a[i], b[i], files[i])
    if kind == "groups":
        sets = {m: frozenset(f for f, bit in FLAG_BITS.items() if m & bit) for m in range(16)}
        masks = out["dep_flags"].tolist()
        return lambda i, txn: (a[i], sets[masks[i]])
    return lambda i, txn: None if a[i] else txn.schemas


def feed(sched, out: dict, txns, columns, profile, sink, arrival=None) -> None:
    """Hand a sink that takes its runs in seq order (`seq_order = True`: the report's window
    sinks, `collect`) the run records of a core run made with `schedule`, rebuilt from its
    arrays (one at a time: the transactions are read as they are handed over). A sink that
    keeps only seqs lo..hi (`seq_range = (lo, hi)`) is handed only those."""
    import itertools

    from .simcore import TxnRun
    dep_of = _dep_of(sched, out, columns)
    start = 0
    span = getattr(sink, "seq_range", None)
    if span is not None:
        start = max(0, span[0] - columns.seq0)
        txns = itertools.islice(txns, start, max(start, span[1] - columns.seq0 + 1))
    names = ("dispatch", "start", "exec_end", "ready", "commit", "exec", "wasted_each", "worker",
             "retries_each", "spec_wait")
    arrivals = None if arrival is None else arrival_array(columns, arrival)
    commit_cost = profile.commit_cost
    block = 1 << 16            # floats made a block at a time, not all at once
    cols: dict = {}
    for k, txn in enumerate(txns):
        i, j = start + k, k % block
        if j == 0:
            cols = {k: out[k][i:i + block].tolist() for k in names}
            cols["arrival"] = (None if arrivals is None else arrivals[i:i + block].tolist())
        run = TxnRun(txn, dep_of(i, txn), cols["exec"][j], commit_cost(txn),
                     0.0 if arrivals is None else cols["arrival"][j])
        run.worker = cols["worker"][j] - 1
        run.dispatch, run.start = cols["dispatch"][j], cols["start"][j]
        run.exec_end, run.ready, run.commit = (cols["exec_end"][j], cols["ready"][j],
                                               cols["commit"][j])
        run.retries, run.wasted = cols["retries_each"][j], cols["wasted_each"][j]
        run.spec_wait = bool(cols["spec_wait"][j])
        run.done = True
        sink(run)


def columns_of(txns):
    """The columns `txns` carries (`columnar.ColumnarTxns`), when the engine is "compiled" and
    the core is built; else None."""
    if _default != "compiled" or _core is None:
        return None
    get_columns = getattr(txns, "get_columns", None)
    return get_columns() if get_columns is not None else None


def annotation(columns, tracker: str, tracker_options: dict | None = None) -> dict | None:
    """A tracker's dependencies for every transaction (arrays a, b, file, flags by position),
    from the core; None when the core does not have the tracker. Raises SchedulerError when
    the tracker cannot feed the trace (or its options are wrong)."""
    from .schedulers import SchedulerError
    from .trackers import TrackerError, get_tracker
    if tracker not in COMPILED_TRACKERS or columns is None or columns.seq0 is None:
        return None
    try:
        get_tracker(tracker, **(tracker_options or {}))     # its options, checked as before
    except TrackerError as e:
        raise SchedulerError(str(e)) from None
    try:
        out = _core.annotate(columns.arrays, columns.n, columns.seq0, tracker,
                             dict(tracker_options or {}), [])
    except _core.TrackerUnfit as e:
        raise SchedulerError(str(e)) from None
    return {"a": np.frombuffer(out["a"], np.int64), "b": np.frombuffer(out["b"], np.int64),
            "file": np.frombuffer(out["file"], np.int64),
            "flags": np.frombuffer(out["flags"], np.uint8)}


def heuristic_bounds(columns, profile, workers) -> dict[int, dict]:
    """metrics.heuristic_bounds_for from the core's pass over the columns."""
    from .metrics import bounds_by_w
    work, span_in_order, span_free = _core.bounds(columns.arrays, columns.n, columns.seq0,
                                                  profile_terms(profile))
    return bounds_by_w(work, span_in_order, span_free, workers)


def fill_metrics(metrics, out: dict) -> None:
    """A RunMetrics as if it had seen every committed run of `out`."""
    metrics.count = list(out["count"])
    metrics.busy = list(out["busy"])
    metrics.held = list(out["held"])
    metrics.transactions = out["transactions"]
    metrics.makespan = out["makespan"]
    metrics.retries = out["retries"]
    metrics.wasted = out["wasted"]


def commit_times(scheduler, columns, workers: int, profile, arrival=None, *,
                 tracker_options=None, applier_options=None) -> np.ndarray:
    """The fast path of an open replay (model/replay.py, `commitsched lag`): each
    transaction's commit time on the replica, by position, for the given arrivals (µs, by
    position, or a callable by seq)."""
    from .schedulers import parse_scheduler
    sched = parse_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    why = unsupported(sched, columns, (), tracker_options, applier_options)
    if why is not None:
        raise EngineError(f"{sched.name}: {why}")
    return simulate(sched, columns, workers, profile, tracker_options=tracker_options,
                    applier_options=applier_options, arrival=arrival, schedule=True)["commit"]
