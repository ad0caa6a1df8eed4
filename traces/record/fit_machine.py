"""Fit a machine profile's apply-pipeline terms from a machine's measured replica runs.

The simulator's stages (docs/model.md, "The apply pipeline") have a few costs that no serial run
shows: the driver's time per binlog event and per event per extra thread, the in-order commit's
serial work per member, the wake-up latency of a waiting thread, and the worker's coordination
work per transaction on its path. (The redo flush, grouped in parallel mode, comes from the
counters of the serial runs: the caller puts it in the base profile. The binlog's group sync
and the leader's work per byte are not fitted: the replica16 replica wrote no binlog of its own,
`log_replica_updates` off.) They are fitted here by minimising the mean |log(predicted /
measured)| speedup over the given configurations (scipy's Nelder-Mead on log-parameters). The
execution cost is never free: it is solved from the serial applies (per transaction and per
event when two workloads of different sizes are given, per transaction otherwise), so the model's
serial replay equals the measured serial apply.
"""
from __future__ import annotations

import math
import os
import statistics
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from record import _import_importers  # noqa: E402

_import_importers()
from commitsched.profiles import Profile, txn_events, txn_rows  # noqa: E402
from commitsched import columnar, engine  # noqa: E402
from commitsched.schedulers import parse_scheduler, run_scheduler  # noqa: E402
from commitsched.trace import load_trace  # noqa: E402

# The fitted terms, in the order of the parameter vector. Not searched: the redo flush
# (`commit_default`), which the serial applies' iowait counters measure (replica16.py
# `serial_flush_wait`), and the driver's time per transaction (`dispatch`, 0): the driver reads,
# parses and queues one event at a time, and a fit on one workload, whose transactions are all
# of one size, cannot split its time between per transaction and per event; the split is what
# carries it to a workload of another size, so the mechanism decides it, not the search. Nor
# the worker's wait per event hand-off (`handoff_event`): `fit(handoff_ratio=...)` ties it to
# `dispatch_event`. Cross-validation error with all seven searched: 18%; with these five: 16%;
# with the hand-off tied too: 11% (2026-11-24, docs/calibration.md). `shared_lock_thread`, the
# worker's wait per transaction per other running worker, is searched too: each workload alone
# identifies it (the two folds put it at 6.0 and 7.2 us), which the worker-time growth of
# both workloads, 1.6x serial at 2 threads to 4.3x at 16 on update_index_48, asked for.
TERMS = ("dispatch_event", "dispatch_thread", "commit_serial", "wakeup", "coordination",
         "shared_lock_thread")
# Where every search starts (µs): generic values, the same for the full fit and the
# cross-validation folds, so that nothing fitted on a held-out workload reaches its fold.
# Nelder-Mead over the simulator ends in local optima. Without `shared_lock_thread` the full
# fit ended at a mean |log error| of 0.097 on its 2,000-transaction subsets, and with `wakeup`
# fixed, or from four starts, lower (0.072-0.076), while the folds then set the term their one
# workload cannot identify wherever their searches stopped (held out 10-22%,
# docs/calibration.md). With it, from here: 0.071.
COLD = (2.0, 0.1, 5.0, 5.0, 10.0, 5.0)
START = COLD


class Workload:
    """A trace (optionally its first `limit` transactions) with its measured serial time: one
    figure (seconds; a durable replica's) or one per durability setting the replica was
    measured at ({"durable": s, "relaxed": s})."""

    def __init__(self, name: str, path: str, serial_s, limit: int | None = None):
        self.name = name
        txns = load_trace(path).txns
        self.full_count = len(txns)
        self.txns = txns[:limit] if limit else txns
        self.columns = columnar.from_txns(self.txns) if engine.available() else None
        serials = serial_s if isinstance(serial_s, dict) else {"durable": serial_s}
        # per transaction, per durability
        self.serial_us_by = {d: s * 1e6 / self.full_count for d, s in serials.items()}
        self.serial_us = next(iter(self.serial_us_by.values()))
        self.mean_events = statistics.fmean(txn_events(t) for t in self.txns)
        self.mean_rows = statistics.fmean(txn_rows(t) for t in self.txns)

    def only(self, durability: str) -> "Workload":
        """The same workload with only the serial apply of one durability setting: what a
        prediction at that setting is given (cross-validation: the predicted workload's serial
        rate)."""
        out = object.__new__(Workload)
        out.__dict__.update(self.__dict__)
        out.serial_us_by = {durability: self.serial_us_by[durability]}
        out.serial_us = out.serial_us_by[durability]
        return out


def makespan(txns, scheduler: str, workers: int, profile: Profile, columns=None) -> float:
    """The replay's makespan (µs): in the compiled core when `columns` (the transactions'
    `columnar.Columns`) are given and the core has the run (the same schedule as the reference
    model, tests/test_engine_*; a fit simulates thousands of replays), else in the reference."""
    if columns is not None and engine.available() and engine.default() == "compiled":
        sched = parse_scheduler(scheduler)
        if engine.unsupported(sched, columns) is None:
            return float(engine.simulate(sched, columns, workers, profile,
                                         schedule=True)["commit"].max())
    end = 0.0

    def sink(run):
        nonlocal end
        end = max(end, run.commit)
    run_scheduler(scheduler, iter(txns), workers, profile, sink)
    return end


def with_exec(profile: Profile, workloads: list[Workload], clamp: bool = False) -> Profile | None:
    """`profile` with `exec_default` (and `exec_row` when two workloads differ in rows) solved
    so that the serial replay takes each workload's measured serial time. Per row, not per
    event: InnoDB's work is per row changed, and these workloads (one row per rows event) cannot
    tell the two apart, so the mechanism decides, not the fit. A workload measured at both
    durabilities gives two serial applies of one execution: the durable one also pays the redo
    flush (`commit_default`), the relaxed one does not; its execution is the mean of what the
    two leave, so that neither setting's serial replay is preferred (their difference beyond
    the flush is `flush_cpu`'s). None when that needs a negative execution cost (the other
    terms already exceed the serial time), or with `clamp` an execution cost of 0 (the serial
    replay then takes longer than measured)."""
    def left(w):        # what the serial applies leave for execution, per transaction
        out = []
        for durability, serial_us in w.serial_us_by.items():
            p = profile.with_durability(durability)
            out.append(serial_us - (p.dispatch + p.dispatch_event * w.mean_events
                                    + p.commit_default + p.group_sync))
        return statistics.fmean(out)
    if len(workloads) >= 2:
        a, b = sorted(workloads[:2], key=lambda w: w.mean_rows)
        if b.mean_rows - a.mean_rows > 0.5:
            slope = (left(b) - left(a)) / (b.mean_rows - a.mean_rows)
            base = left(a) - slope * a.mean_rows
            if slope < 0 or base < 0:
                return None
            return replace(profile, exec_default=base, exec_event=0.0, exec_row=slope)
    base = left(workloads[0])
    if base < 0 and clamp:
        base = 0.0
    return (replace(profile, exec_default=base, exec_event=0.0, exec_row=0.0) if base >= 0
            else None)


def flush_cpu(flush_wait: float, workloads: list[Workload]) -> float:
    """The durable redo flush's cost beyond its device wait, per transaction (µs): what a
    durable serial apply takes longer than a relaxed one of the same workload, less the wait
    the counters measure (`flush_wait`, the serial applies' iowait): the O_DIRECT log write
    and `fdatasync` on the committing thread (system calls, the virtio kick, the completion
    interrupt, waking from the sleep). The mean over the workloads measured at both settings;
    0 when none was, or when the difference is within the wait."""
    both = [w for w in workloads if {"durable", "relaxed"} <= set(w.serial_us_by)]
    if not both:
        return 0.0
    extra = statistics.fmean(w.serial_us_by["durable"] - w.serial_us_by["relaxed"] for w in both)
    return max(0.0, extra - flush_wait)


def predict(workload: Workload, profile: Profile, mode: str, workers: int) -> float:
    """The model's speedup of `commit_id+mariadb_<mode>` at W = workers over its serial replay."""
    serial = makespan(workload.txns, "serial", 1, profile, workload.columns)
    return serial / makespan(workload.txns, f"commit_id+mariadb_{mode}", workers, profile,
                             workload.columns)


def profile_from(theta, base: Profile, terms=None, handoff_ratio: float | None = None) -> Profile:
    """`base` with the searched terms set; with `handoff_ratio`, the worker's wait per event
    hand-off tied to the driver's time per event (`handoff_event = ratio x dispatch_event`)."""
    prof = replace(base, **{name: float(v) for name, v in zip(terms or TERMS, theta)})
    if handoff_ratio is not None:
        prof = replace(prof, handoff_event=handoff_ratio * prof.dispatch_event)
    return prof


def fit(base: Profile, workloads: list[Workload], measured: dict, configs: list[tuple],
        maxiter: int = 200, progress=lambda s: None, start=START,
        terms=TERMS, restarts: int = 2,
        handoff_ratio: float | None = None) -> tuple[Profile, float]:
    """The fitted profile (exec solved per `with_exec`) and its mean |log error| on `configs`
    ((durability, workload name, mode, threads), measured[...]["median"] the target speedup):
    one profile for every durability, each configuration predicted with the profile at its
    setting (`Profile.with_durability`)."""
    from scipy.optimize import minimize
    by_name = {w.name: w for w in workloads}
    evals = 0

    def loss(x):
        nonlocal evals
        evals += 1
        prof = with_exec(profile_from([math.exp(v) for v in x], base, terms, handoff_ratio),
                         workloads)
        if prof is None:
            return 10.0
        errs = [abs(math.log(predict(by_name[w], prof.with_durability(d), mode, n)
                             / measured[(d, w, mode, n)]["median"]))
                for d, w, mode, n in configs]
        value = statistics.fmean(errs)
        if evals % 20 == 0:
            progress(f"  fit: {evals} evaluations, mean |log error| {value:.3f}")
        return value

    best = None
    x = [math.log(v) for v in start]
    for _ in range(1 + restarts):
        # Each search's first simplex steps every term by a factor e^0.5 (scipy's default steps
        # 5% of each coordinate, and only 0.00025 of one at zero: a term starting at 1 us would
        # never move). Nelder-Mead stalls on this simulator's rough surface: a fresh simplex
        # around the best point (a restart) often goes on; stop when one gains nothing.
        simplex = [x] + [[v + (0.5 if i == j else 0.0) for j, v in enumerate(x)]
                         for i in range(len(x))]
        res = minimize(loss, x, method="Nelder-Mead",
                       options={"maxiter": maxiter, "xatol": 0.05, "fatol": 1e-3,
                                "initial_simplex": simplex})
        gained = best is None or best.fun - res.fun > 1e-3
        if best is None or res.fun < best.fun:
            best = res
        if not gained:
            break
        x = list(best.x)
    prof = with_exec(profile_from([math.exp(v) for v in best.x], base, terms, handoff_ratio),
                     workloads)
    return prof, float(best.fun)
