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
               gap_us: float = 30.0, profile=None) -> Schedule:
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
    cluster = Cluster(txns, cfg, prof, log=lambda ev, m, w, t: raw.append((t, ev, m, w)))
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
    return Schedule(f"certification+{flavor}", workers, SPEC, record, events,
                    list(range(1, n + 1)))


def _sent_order(cluster) -> dict:
    return cluster.sent_txns


__all__ = ["CertEvent", "record_run", "validate", "SPEC"]
