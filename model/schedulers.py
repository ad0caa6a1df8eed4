"""Schedulers: a tracker plus an applier (design §1), named `TRACKER+APPLIER`, or `serial`.

`run_scheduler` streams a trace through the tracker into the applier and hands every committed
transaction to a sink; it is the one entry point the CLI, the metrics, the tests and the
benchmark use.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from . import engine as engine_mod
from . import trackers as trackers_mod
from .keys import guard as keys_guard, needs_keys
from .applier_mariadb import MARIADB_BUGS, MODES, simulate_mariadb
from .applier_galera import GALERA_BUGS, simulate_galera
from .applier_gr import GR_BUGS, simulate_group_replication
from .applier_mysql import MYSQL_BUGS, simulate_database, simulate_logical_clock
from .profiles import Profile
from .metrics import RunMetrics
from .simcore import CAUSES, Arrival, SimulationError, TxnRun, WriteBucket

# Certification-based clusters (docs/certification.md): a member applying the others' write-sets.
CLUSTER_APPLIERS = ("galera", "group_replication")
APPLIERS = ("mysql",) + tuple(f"mariadb_{m}" for m in MODES) + CLUSTER_APPLIERS
# Which tracker output each applier reads.
APPLIER_KINDS = {"mysql": ("clock", "database"), **{f"mariadb_{m}": ("groups",) for m in MODES},
                 **{a: ("certification",) for a in CLUSTER_APPLIERS}}
APPLIER_BUGS = MYSQL_BUGS | MARIADB_BUGS | GALERA_BUGS | GR_BUGS

# The schedulers `score` runs when none is named: every meaningful pairing.
DEFAULT_SCHEDULERS = (
    "serial",
    "commit_order+mysql", "writeset+mysql", "writeset_session+mysql", "database+mysql",
    "commit_id+mariadb_conservative", "commit_id+mariadb_optimistic",
    "commit_id+mariadb_aggressive", "slave_group_commit+mariadb_conservative",
)
# A member of a certification-based cluster applying the others' write-sets (docs/
# certification.md): not a way to run a replica, so not among the replica's choices above
# (a report's recommendation); `score --scheduler` and the report's cluster section run them.
CLUSTER_SCHEDULERS = ("certification+galera", "certification+group_replication")


class SchedulerError(ValueError):
    """A scheduler name, option or trace that cannot be run; the message says why."""


@dataclass(frozen=True)
class Scheduler:
    name: str
    tracker: str | None        # None for `serial`
    applier: str | None
    options: dict = field(default_factory=dict, hash=False)

    @property
    def is_serial(self) -> bool:
        return self.tracker is None


def parse_scheduler(name: str) -> Scheduler:
    if name == "serial":
        return Scheduler("serial", None, None)
    tracker, plus, applier = name.partition("+")
    if not plus:
        raise SchedulerError(f"scheduler {name!r}: name it TRACKER+APPLIER (e.g. writeset+mysql) "
                             f"or `serial`")
    if tracker not in trackers_mod.TRACKERS:
        raise SchedulerError(f"scheduler {name!r}: unknown tracker {tracker!r}; known: "
                             f"{', '.join(trackers_mod.TRACKERS)}")
    if applier not in APPLIERS:
        raise SchedulerError(f"scheduler {name!r}: unknown applier {applier!r}; known: "
                             f"{', '.join(APPLIERS)}")
    kind = trackers_mod.TRACKERS[tracker].kind
    if kind not in APPLIER_KINDS[applier]:
        fits = [t for t, cls in trackers_mod.TRACKERS.items() if cls.kind in APPLIER_KINDS[applier]]
        raise SchedulerError(f"scheduler {name!r}: the {applier} applier cannot use {tracker} "
                             f"(it gives {kind} dependencies); trackers that fit: {', '.join(fits)}")
    return Scheduler(name, tracker, applier)


def simulate_serial(txns: Iterable, profile: Profile, sink: Callable[[TxnRun], None],
                    arrival: Arrival | None = None) -> dict:
    """One SQL thread: it reads each transaction from the relay log once it is there
    (`arrival`; the profile's `dispatch` cost, as a parallel replica's coordinator pays it),
    executes it, then commits it with its own sync."""
    t = 0.0
    exec_cost, commit_cost, sync = profile.exec_cost, profile.commit_cost, profile.group_sync
    dispatch = profile.dispatch_cost
    # the device's write rate limit (disk_write_iops): the commit step's write and the sync
    # each wait for a token, as the appliers' flushes do (simcore.Disk)
    bucket = WriteBucket(profile.disk_write_iops) if profile.disk_write_iops is not None else None
    for txn in txns:
        run = TxnRun(txn, None, exec_cost(txn), commit_cost(txn))
        run.worker = 0
        if arrival is not None:
            run.arrival = arrival(txn.seq)
            if run.arrival > t:
                t = run.arrival
        run.dispatch = t
        run.start = t = t + dispatch(txn, 1)
        run.exec_end = t + run.exec
        if bucket is None:
            run.ready = run.exec_end + run.commit_cost
            run.commit = t = run.ready + sync
        else:
            run.ready = (bucket.take(run.exec_end) if run.commit_cost > 0
                         else run.exec_end) + run.commit_cost
            run.commit = t = (bucket.take(run.ready) if sync > 0 else run.ready) + sync
        sink(run)
    return dict.fromkeys(CAUSES, 0.0)


def run_scheduler(scheduler: Scheduler | str, txns: Iterable, workers: int, profile: Profile,
                  sink: Callable[[TxnRun], None], *, bugs: frozenset[str] = frozenset(),
                  tracker_options: dict | None = None, applier_options: dict | None = None,
                  arrival: Arrival | None = None, engine: str | None = None) -> dict[str, float]:
    """Run one scheduler over `txns`; `sink` gets each committed run; returns blocked time by
    cause. `arrival`: when each transaction reaches the relay log (an open replay,
    model/replay.py); none: a closed backlog. Raises SchedulerError (bad name/options/trace)
    or SimulationError (e.g. Deadlock).

    `engine` ("compiled" | "reference"; None: `engine.default()`): with "compiled", a run whose
    transactions carry their columns (`columnar.ColumnarTxns`, what `TraceSource.txns()`
    gives) and whose sink is a plain `RunMetrics`, or takes its runs in seq order (a sink with
    `seq_order = True`, fed the records rebuilt from the core's schedule), goes to the compiled
    core when it has that run (`engine.unsupported`); anything else runs in the reference
    model."""
    if isinstance(scheduler, str):
        scheduler = parse_scheduler(scheduler)
    seq_order = getattr(sink, "seq_order", False)
    if (type(sink) is RunMetrics or seq_order) and (engine or engine_mod.default()) == "compiled":
        get_columns = getattr(txns, "get_columns", None)
        columns = get_columns() if get_columns is not None else None
        if columns is not None and engine_mod.unsupported(
                scheduler, columns, bugs, tracker_options, applier_options) is None:
            if not scheduler.is_serial:      # its options checked as the reference checks them
                try:
                    trackers_mod.get_tracker(scheduler.tracker, bugs=frozenset(bugs) - APPLIER_BUGS,
                                             **(tracker_options or {}))
                except trackers_mod.TrackerError as e:
                    raise SchedulerError(str(e)) from None
                if workers < 1:
                    raise SimulationError("workers must be at least 1")
                mode = scheduler.applier.removeprefix("mariadb_")
                if scheduler.applier != "mysql" and mode not in MODES:
                    raise SimulationError(f"unknown MariaDB mode {mode!r}")
            out = engine_mod.simulate(scheduler, columns, workers, profile, bugs=bugs,
                                      tracker_options=tracker_options,
                                      applier_options=applier_options, arrival=arrival,
                                      schedule=seq_order)
            if seq_order:
                engine_mod.feed(scheduler, out, txns, columns, profile, sink, arrival)
            else:
                engine_mod.fill_metrics(sink, out)
            return out["blocked"]
    if scheduler.is_serial:
        return simulate_serial(txns, profile, sink, arrival)
    if needs_keys(scheduler):             # a trace imported without keys cannot feed it
        txns = keys_guard(txns, scheduler.name)
    applier_bugs = frozenset(bugs) & APPLIER_BUGS
    tracker_bugs = frozenset(bugs) - APPLIER_BUGS
    try:
        tracker = trackers_mod.get_tracker(scheduler.tracker, bugs=tracker_bugs,
                                           **(tracker_options or {}))
    except trackers_mod.TrackerError as e:
        raise SchedulerError(str(e)) from None
    stream = tracker.annotate(txns)
    opts = dict(applier_options or {})
    if arrival is not None:
        opts["arrival"] = arrival
    try:
        if scheduler.applier in CLUSTER_APPLIERS:
            for opt in ("preserve_commit_order", "ticket_wrap", "max_queued"):
                opts.pop(opt, None)     # GR always preserves commit order; Galera has neither
            if scheduler.applier == "galera":
                opts.pop("checkpoint_group", None)
                return simulate_galera(stream, workers, profile, sink, bugs=applier_bugs, **opts)
            return simulate_group_replication(stream, workers, profile, sink, bugs=applier_bugs,
                                              **opts)
        if scheduler.applier == "mysql":
            if tracker.kind == "database":
                opts.pop("preserve_commit_order", None)
                opts.pop("ticket_wrap", None)
                return simulate_database(stream, workers, profile, sink, bugs=applier_bugs, **opts)
            return simulate_logical_clock(stream, workers, profile, sink, bugs=applier_bugs, **opts)
        mode = scheduler.applier.removeprefix("mariadb_")
        opts.pop("preserve_commit_order", None)
        opts.pop("checkpoint_group", None)
        opts.pop("ticket_wrap", None)
        return simulate_mariadb(stream, workers, profile, sink, mode=mode, bugs=applier_bugs,
                                **opts)
    except trackers_mod.TrackerError as e:
        raise SchedulerError(str(e)) from None
    except TypeError as e:  # an option this applier does not take
        raise SchedulerError(f"{scheduler.name}: {e}") from None


def collect(scheduler: Scheduler | str, txns: Iterable, workers: int, profile: Profile,
            **kwargs) -> tuple[list[TxnRun], dict[str, float]]:
    """Run and keep every run record, in seq order (tests, `schedule`, `blame`). Transactions
    that carry their columns (`columnar.ColumnarTxns`) may run in the compiled core, whose
    schedule comes back as the same records."""
    runs = _Records()
    blocked = run_scheduler(scheduler, txns, workers, profile, runs, **kwargs)
    runs.sort(key=lambda r: r.seq)
    return list(runs), blocked


class _Records(list):
    """A sink keeping every record; their order does not matter (sorted after)."""
    seq_order = True

    def __call__(self, run: TxnRun) -> None:
        self.append(run)


__all__ = ["Scheduler", "SchedulerError", "SimulationError", "parse_scheduler", "run_scheduler",
           "collect", "DEFAULT_SCHEDULERS", "CLUSTER_SCHEDULERS", "APPLIERS"]
