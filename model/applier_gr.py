"""A Group Replication secondary applying the group's write-sets (docs/certification.md; the
applier `group_replication`, scheduler `certification+group_replication`).

The `group_replication_applier` channel is MySQL's multi-threaded replica applier with
`replica_parallel_type=LOGICAL_CLOCK` and `replica_preserve_commit_order=ON` (Group
Replication requires both in multi-primary mode): the certifier writes each remote write-set's
`last_committed` / `sequence_number` into its GTID event (`Certifier::certify`,
model/certification.py) and the coordinator schedules them exactly as it does an async
replica's relay log. So this applier is `applier_mysql.simulate_logical_clock` fed with the
certifier's indexes, one relay-log file, commit order preserved. The certifier's sequence
numbers have gaps where a garbage collection or a write-set without items raised the global
last_committed; the coordinator treats a gap as a barrier (semantics.md §1.4), as it does in
any relay log.
"""
from __future__ import annotations

from typing import Callable, Iterable

from .applier_mysql import simulate_logical_clock
from .profiles import Profile
from .simcore import Arrival, EventLog, TxnRun

GR_BUGS: frozenset[str] = frozenset()


def gr_clock(stream: Iterable[tuple]) -> Iterable[tuple]:
    """`(txn, CertDep)` as the relay log's `(last_committed, sequence_number, file)`; failed
    write-sets are not in the relay log (the certifier discards them)."""
    for txn, dep in stream:
        if dep.ok:
            yield txn, (dep.last_committed, dep.sequence_number, 1)


def simulate_group_replication(stream: Iterable[tuple], workers: int, profile: Profile,
                               sink: Callable[[TxnRun], None], *,
                               checkpoint_group: int = 512,
                               bugs: frozenset[str] = frozenset(),
                               log: EventLog | None = None,
                               arrival: Arrival | None = None) -> dict[str, float]:
    """Simulate `stream` of `(txn, certification.CertDep)` on a secondary with `workers`
    (replica_parallel_workers); see simulate_logical_clock (`arrival`: an open replay)."""
    return simulate_logical_clock(gr_clock(stream), workers, profile, sink,
                                  preserve_commit_order=True, checkpoint_group=checkpoint_group,
                                  bugs=frozenset(bugs), log=log, arrival=arrival)
