"""Certification (docs/certification.md): how a Galera or Group Replication member decides
whether a write-set commits, and what the parallel applier may run it beside.

Every member certifies the same write-sets in the same total order against its own
certification index; both certifiers here are per member and deterministic. The same rule
functions serve the timed cluster simulator (`certification_throughput`), the scoring tracker
(`CertificationTracker`) and the untimed step function checked against specs/Certification.tla
(`steps_certification`).

Galera (galera/src/certification.cpp, Galera 4 26.4.18):
- `do_test`: depends_seqno starts at the lowest write-set still in `trx_map_` minus 1 (the
  write-set's own seqno minus 1 when the map is empty); `optimistic_pa` (default on) adds no
  last_seen_seqno floor.
- `certify_v3to6` / `check_against`: for each key, the write-set that referenced it last
  (`ref_trx`) is a CONFLICT if its seqno > last_seen_seqno and it came from another node or was
  a TOI (`trx->source_id() != ref_trx->source_id()`), and a DEPENDENCY otherwise: depends_seqno
  is raised to it either way. Row keys are exclusive-update keys here (the check table's UP/UP
  cell: conflict); shared keys (FK parents) are not told apart in a trace.
- `do_test_v3to6`: depends_seqno is at least `last_pa_unsafe_`; a PA-unsafe write-set (TOI, a
  table without a primary key: MariaDB marks those since MDEV-25551) sets it and itself depends
  on its predecessor (`TrxHandleSlave::unserialize`: F_ISOLATION or F_PA_UNSAFE -> seqno - 1); a
  TOI write-set skips certification (`certify_v3to6`).
- `append_trx`: every write-set, passed or failed, enters `trx_map_`; `purge_trxs_upto_` drops
  it with its key references (`purge_for_trx`) once the commit cut passes it.

Group Replication (plugin/group_replication/src/certifier.cc, `Certifier::certify`, MySQL 8.0):
- a write-set fails when some item's certified snapshot version (the snapshot of the write-set
  that wrote it last, plus that write-set's own GTID) is not a subset of its snapshot;
- a remote write-set that passes gets `last_committed` = the largest sequence number of the
  previous writers of its items, at least `parallel_applier_last_committed_global`, never its
  own; `sequence_number` = `parallel_applier_sequence_number`, then incremented; a write-set
  without items (DDL, an empty transaction) gets `sequence_number - 1` and raises the global
  last_committed to itself (`increment_parallel_applier_sequence_number(!has_write_set)`);
- a local write-set stores sequence number -1 in the certification info (its writes are not
  waited for by the applier: the member committed it itself) and gets no indexes;
- `garbage_collect` drops the items whose snapshot is a strict subset of the stable set and
  raises the global last_committed to the current sequence number, which it then increments.
"""
from __future__ import annotations

from collections import deque
from typing import Iterable, Iterator, NamedTuple

# Galera cert.max_length: a write-set whose certification interval is longer fails
# (do_test), and append_trx trims the index to the last max_length write-sets.
MAX_LENGTH = 16384
# Group Replication: parallel_applier_last_committed_global / _sequence_number start here
# (the Certifier constructor), and a GC runs every broadcast period.
GR_FIRST_LAST_COMMITTED, GR_FIRST_SEQUENCE_NUMBER = 1, 2
GR_GC_PERIOD_S = 60.0          # Certifier_broadcast_thread::BROADCAST_GTID_EXECUTED_PERIOD

CERT_BUGS = frozenset({"cert_purge_past_safe"})


class Snapshot(NamedTuple):
    """A set of write-set ids (positions in the total order) as a committed prefix 1..prefix
    plus the ids committed beyond it: a member's gtid_executed, a GR snapshot version. Galera's
    last_seen_seqno is the prefix alone (its members commit in order)."""
    prefix: int
    extra: frozenset = frozenset()

    def __contains__(self, i: int) -> bool:
        return i <= self.prefix or i in self.extra

    def with_id(self, i: int) -> "Snapshot":
        return self.normal(self.prefix, self.extra | {i})

    def issubset(self, other: "Snapshot") -> bool:
        if self.prefix > other.prefix and not all(
                i in other.extra for i in range(other.prefix + 1, self.prefix + 1)):
            return False
        return all(i in other for i in self.extra)

    @staticmethod
    def normal(prefix: int, extra) -> "Snapshot":
        extra = set(extra)
        while prefix + 1 in extra:
            prefix += 1
            extra.discard(prefix)
        return Snapshot(prefix, frozenset(i for i in extra if i > prefix))


# ---------------------------------------------------------------- the rules

def galera_conflicts(ref_seqno: int, ref_origin, ref_toi: bool, last_seen: int, origin) -> bool:
    """`check_against`'s CONFLICT test: the last write-set to reference the key came after the
    certified one's snapshot, from another node or in isolation (TOI)."""
    return ref_seqno > last_seen and (ref_toi or ref_origin != origin)


def gr_conflicts(ref_version: Snapshot, snapshot: Snapshot) -> bool:
    """`Certifier::certify`: the item's certified snapshot version is not a subset of the
    write-set's snapshot."""
    return not ref_version.issubset(snapshot)


class GaleraResult(NamedTuple):
    ok: bool
    depends_seqno: int


class GaleraCertifier:
    """One Galera member's certification index (`Certification`): key -> the last write-set
    certified OK that referenced it, as (seqno, origin, toi); `trx_map` the seqnos still held.
    `purge(upto)` drops everything up to a seqno (`purge_trxs_upto_`)."""

    __slots__ = ("index", "trx_map", "last_pa_unsafe", "position")

    def __init__(self):
        self.index: dict = {}
        self.trx_map: deque[int] = deque()
        self.last_pa_unsafe = 0
        self.position = 0

    def certify(self, seqno: int, keys: Iterable, last_seen: int, origin=None, *,
                toi: bool = False, pa_unsafe: bool = False) -> GaleraResult:
        """Certify write-set `seqno` (the next one in the total order)."""
        self.position = seqno
        depends = self.trx_map[0] - 1 if self.trx_map else seqno - 1
        ok = seqno - last_seen <= MAX_LENGTH
        if toi or pa_unsafe:                        # TrxHandleSlave::unserialize: F_ISOLATION
            depends = seqno - 1                     # and F_PA_UNSAFE depend on the previous
        if ok and not toi:                          # certify_v3to6: a TOI is not certified
            index = self.index
            for k in keys:
                ref = index.get(k)
                if ref is None:
                    continue
                if galera_conflicts(ref[0], ref[1], ref[2], last_seen, origin):
                    ok = False
                if ref[0] > depends:
                    depends = ref[0]
                if not ok:
                    break
        if self.last_pa_unsafe > depends:
            depends = self.last_pa_unsafe
        self.trx_map.append(seqno)
        if ok:
            entry = (seqno, origin, toi)
            for k in keys:
                self.index[k] = entry
            if toi or pa_unsafe:
                self.last_pa_unsafe = seqno
        return GaleraResult(ok, depends)

    def purge(self, upto: int) -> None:
        trx_map = self.trx_map
        while trx_map and trx_map[0] <= upto:
            trx_map.popleft()
        dead = [k for k, ref in self.index.items() if ref[0] <= upto]
        for k in dead:
            del self.index[k]


class GRResult(NamedTuple):
    ok: bool
    last_committed: int | None          # None for a local write-set (no applier indexes)
    sequence_number: int | None


class GRCertifier:
    """One Group Replication member's certifier (`Certifier`): certification info item ->
    (certified snapshot version, parallel-applier sequence number or -1 for a local one)."""

    __slots__ = ("info", "last_committed_global", "sequence_number")

    def __init__(self):
        self.info: dict = {}
        self.last_committed_global = GR_FIRST_LAST_COMMITTED
        self.sequence_number = GR_FIRST_SEQUENCE_NUMBER

    def certify(self, gid: int, keys: Iterable, snapshot: Snapshot, *, local: bool = False,
                conflict_detection: bool = True) -> GRResult:
        keys = tuple(keys)
        info = self.info
        if conflict_detection:
            for k in keys:
                ref = info.get(k)
                if ref is not None and gr_conflicts(ref[0], snapshot):
                    return GRResult(False, None, None)
        sn = self.sequence_number
        last_committed = self.last_committed_global
        if keys:
            version = (snapshot.with_id(gid), -1 if local else sn)
            for k in keys:
                prev = info.get(k)
                info[k] = version
                if prev is not None and prev[1] > last_committed and prev[1] != sn:
                    last_committed = prev[1]
        if local:
            return GRResult(True, None, None)
        if not keys:                             # DDL / empty: applied alone
            last_committed = sn - 1
        self._increment(not keys)
        return GRResult(True, last_committed, sn)

    def _increment(self, update_global: bool) -> None:
        if update_global:
            self.last_committed_global = self.sequence_number
        self.sequence_number += 1

    def garbage_collect(self, stable: Snapshot) -> None:
        """Drop the items whose version is a strict subset of the stable set, then raise the
        global last_committed (the certifier cannot tell which items went)."""
        dead = [k for k, (v, _) in self.info.items() if v.issubset(stable) and v != stable]
        for k in dead:
            del self.info[k]
        self._increment(True)


# ---------------------------------------------------------------- the scoring tracker

class CertDep(NamedTuple):
    """What certification gives a write-set, as both flavours' appliers read it: Galera's
    depends_seqno (positions 1..N in the total order) and Group Replication's
    last_committed / sequence_number on a member that applies it (a secondary)."""
    ok: bool
    depends_seqno: int
    last_committed: int
    sequence_number: int


def certification_deps(txns: Iterable, *, gc_period_s: float | None = GR_GC_PERIOD_S
                       ) -> Iterator[tuple]:
    """`(txn, CertDep)` for a trace as a member that applies every transaction sees it: each
    was certified against a snapshot holding everything before it (a recorded binlog holds
    only committed transactions, in their total order), so none fails. Group Replication's
    garbage collection runs every `gc_period_s` of the transactions' timestamps (none without
    timestamps, or with None)."""
    galera, gr = GaleraCertifier(), GRCertifier()
    next_gc = None
    for pos, txn in enumerate(txns, 1):
        keys = txn.writes
        toi = txn.ddl or txn.admin
        g = galera.certify(pos, keys, pos - 1, origin=None, toi=toi, pa_unsafe=txn.no_pk)
        ts = txn.timestamp
        if gc_period_s and ts is not None:
            if next_gc is None:
                next_gc = ts + gc_period_s
            elif ts >= next_gc:
                gr.garbage_collect(Snapshot(pos - 1))
                next_gc = ts + gc_period_s
        r = gr.certify(pos, () if toi else keys, Snapshot(pos - 1))
        yield txn, CertDep(True, g.depends_seqno, r.last_committed, r.sequence_number)


__all__ = ["Snapshot", "GaleraCertifier", "GRCertifier", "GaleraResult", "GRResult",
           "CertDep", "certification_deps", "galera_conflicts", "gr_conflicts", "MAX_LENGTH",
           "CERT_BUGS"]
