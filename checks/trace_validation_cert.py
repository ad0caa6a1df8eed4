"""Trace validation of the cluster simulator (model/certification_throughput.py) against
specs/Certification.tla, through specs/TraceCertification.tla (docs/certification.md).

A small run (a few transactions from chosen origins, `Cluster.run_batch`) is recorded with the
simulator's `log=` observer: every member's certifications, applies, commits and index purges,
and every write-set's send (where its snapshot is taken). The events, in time order (ties in
call order), become a TLA+ record of literals, and TLC checks that it is a behaviour of the
spec (checks/trace_validation.validate: one TLC run for many). What it checks: the
simulator's certifier decisions, its apply and commit order on every member, its purges: the
timing abstracted away.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .trace_validation import Schedule, TraceValidationError, validate

SPEC = "Certification"
FLAVOR_TLA = {"galera": "galera", "group_replication": "gr"}


@dataclass
class CertEvent:
    action: str                 # send | certify | start | commit | purge | end
    m: int                      # member (from 1); 0 for end
    w: int                      # write-set position (purge: the bound)
    time: float | None = None

    def describe(self) -> str:
        if self.action == "end":
            return "end (every write-set finished on every member)"
        what = "bound" if self.action == "purge" else "write-set"
        return f"{self.action} member {self.m} {what} {self.w} (time {self.time:g})"

    def to_tla(self) -> dict:
        return {"a": self.action, "m": self.m, "w": self.w}


def record_run(txns: Sequence, origins: Sequence[int], *, flavor: str = "galera",
               members: int = 2, workers: int = 2, bugs: frozenset = frozenset(),
               gap_us: float = 30.0, profile=None, purge_every: int = 1) -> Schedule:
    """Simulate `txns` (transaction i from member origins[i], 0-based), record its events."""
    from commitsched.certification_throughput import Cluster, ClusterConfig, ClusterProfile
    if len(origins) != len(txns):
        raise TraceValidationError("one origin per transaction")
    prof = profile or ClusterProfile("tv", None, client_cpu=10, origin_cpu=100, apply_cpu=60,
                                     rtt=20, fsync=10, fsync_cpu=0)
    cfg = ClusterConfig(flavor=flavor, members=members, writers=tuple(sorted(set(origins))),
                        clients=len(set(origins)) * len(txns), workers=workers,
                        bugs=frozenset(bugs))
    raw: list = []
    cluster = Cluster(txns, cfg, prof, log=lambda ev, m, w, t: raw.append((t, ev, m, w)),
                      purge_every=purge_every)
    res = cluster.run_batch(list(origins), gap_us=gap_us)
    ordered = [e for _, e in sorted(enumerate(raw), key=lambda p: (p[1][0], p[0]))]
    events = [CertEvent(ev, m + 1, w, t) for t, ev, m, w in ordered]
    if res["done"]:
        events.append(CertEvent("end", 0, 0))
    keys = sorted({k for t in txns for k in t.writes})
    key_id = {k: i + 1 for i, k in enumerate(keys)}
    pos_origin = {}
    for t, ev, m, w in raw:
        if ev == "send":
            pos_origin[w] = m + 1
    n = len(pos_origin)
    # write-sets in send order: the run's total order (the i-th sent may not be txns[i])
    order = _sent_order(cluster)
    record = {"members": members, "n": n, "keys": len(keys), "workers": workers,
              "flavor": FLAVOR_TLA[flavor],
              "origin": [pos_origin[p] for p in range(1, n + 1)],
              "ws": [{"$set": sorted(key_id[k] for k in set(order[p].writes))}
                     for p in range(1, n + 1)]}
    if any(not order[p].writes for p in range(1, n + 1)):
        raise TraceValidationError("Certification.tla models write-sets with keys only")
    schedule = Schedule(f"certification+{flavor}", workers, SPEC, record, events,
                        list(range(1, n + 1)))
    schedule.failures = res["errors"]        # write-sets that failed certification
    return schedule


def _sent_order(cluster) -> dict:
    return cluster.sent_txns


def draw_runs(count: int, *, flavor: str = "galera", seed: int = 7, keys: str = "ab",
              members: int = 2) -> list[tuple]:
    """`count` small workloads, reproducibly: 3 to 6 transactions on one or two of the keys,
    each from a random member, arriving a random 0-80 µs apart (short gaps make concurrent,
    conflicting write-sets, hence certification failures and purges while some are in
    flight). Each is (txns, origins, gap_us)."""
    import random
    from commitsched.trace import Txn
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(3, 6)
        txns = [Txn(seq=i + 1, writes=tuple(sorted(rng.sample(keys, rng.randint(1, 2)))))
                for i in range(n)]
        out.append((txns, [rng.randrange(members) for _ in range(n)], rng.choice((0, 10, 40, 80))))
    return out


def catches(bug: str, count: int = 30, timeout: float = 170.0) -> tuple[bool, str]:
    """The mutants' trace-validation column for a cluster bug: the simulator with `bug`, on
    `count` drawn workloads, against the correct spec; caught when some run is rejected."""
    schedules = []
    for txns, origins, gap in draw_runs(count):
        schedules.append(record_run(txns, origins, bugs=frozenset({bug}), gap_us=gap))
    verdicts = validate(schedules, timeout=timeout)
    rejected = [v for v in verdicts if not v.accepted]
    if not rejected:
        return False, f"all {len(verdicts)} runs accepted by the correct spec"
    first = rejected[0]
    return True, (f"{len(rejected)}/{len(verdicts)} rejected; first at event "
                  f"#{first.matched + 1} {first.event.describe() if first.event else '?'}")


__all__ = ["CertEvent", "record_run", "validate", "draw_runs", "catches", "SPEC",
           "TraceValidationError"]
