"""Dependency trackers (design §4): what the source writes, or what a scorer recomputes, about
which transactions may run together on the replica.

Every tracker streams: `annotate(txns)` yields one `(txn, dep)` per input transaction, in order,
keeping only bounded state (the write-set history, one entry per session, one commit group).

Three kinds of `dep`:
  "clock"    (serial, commit_order, writeset, writeset_session): `(last_committed,
             sequence_number, file)`, file-relative as MySQL writes them (§1.1, §1.3);
  "groups"   (commit_id, slave_group_commit): `(group_id, flags)`; consecutive transactions with
             the same non-zero `group_id` are one commit group, 0 is a group of one; `flags` a
             frozenset of MariaDB GTID flags (§3.1);
  "database" (database): the tuple of schemas touched, or None for "run isolated" (§4).

Sequence numbers: a clock tracker keeps the trace's `sequence_number` when it has one (the
commit-order parent the trace carries refers to those numbers, gaps included); otherwise it counts
1, 2, ... restarting in every binlog file `txn.file`.

The property helpers at the end (`ClockOrder`, `soundness_violations`, `group_conflicts`,
`conflicts`) read annotations the way the appliers do; the property checks use them.
"""
from __future__ import annotations

from itertools import islice
from typing import Iterable, Iterator, NamedTuple

from .trace import Txn

__all__ = [
    "TRACKERS", "TRACKER_BUGS", "KNOWN_BUGS", "TrackerError", "Tracker", "get_tracker",
    "conflicts", "ClockPoint", "ClockOrder", "clock_depends_on", "soundness_violations",
    "group_conflicts", "session_order_violations", "OVER_MAX_DBS_IN_EVENT_MTS",
]

# The whole bug catalogue (design §7, docs/names.md); a tracker honours the ones in TRACKER_BUGS
# and ignores the applier ones, so one `--inject-bug` set can be handed to both halves.
KNOWN_BUGS = frozenset({
    "lwm_off_by_one", "lwm_not_prefix", "rotation_ignored", "commit_order_unenforced",
    "history_evict_no_floor", "ddl_not_isolated", "unique_keys_ignored", "before_image_ignored",
    "session_order_dropped", "group_not_split_on_wait", "gco_start_on_exec",
    "optimistic_no_kill", "admin_barrier_missing",
})
TRACKER_BUGS = frozenset({
    "history_evict_no_floor", "ddl_not_isolated", "unique_keys_ignored", "before_image_ignored",
    "session_order_dropped", "group_not_split_on_wait", "admin_barrier_missing",
})

MAX_DBS_IN_EVENT_MTS = 16           # libbinlogevents binlog_event.h
OVER_MAX_DBS_IN_EVENT_MTS = 254     # what the source writes instead of the list


class TrackerError(Exception):
    """A tracker cannot annotate this trace (missing fields) or was set up wrongly."""


class Tracker:
    """Base class. Subclasses set `name`, `kind`, `options` (name -> default) and `uses_bugs`."""

    name: str = ""
    kind: str = ""
    options: dict = {}
    uses_bugs: frozenset = frozenset()

    def __init__(self, *, bugs: Iterable[str] = frozenset(), **options):
        bugs = frozenset(bugs)
        unknown = bugs - KNOWN_BUGS
        if unknown:
            raise TrackerError(f"unknown bug id(s) {', '.join(sorted(unknown))}; "
                               f"known: {', '.join(sorted(KNOWN_BUGS))}")
        self.bugs = bugs
        bad = options.keys() - self.options.keys()
        if bad:
            have = ", ".join(sorted(self.options)) or "none"
            raise TrackerError(f"tracker {self.name} has no option(s) {', '.join(sorted(bad))} "
                               f"(options: {have})")
        self.opts = {**self.options, **options}

    def annotate(self, txns: Iterable[Txn]) -> Iterator[tuple[Txn, tuple]]:
        raise NotImplementedError

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.opts.items())
        bugs = f", bugs={sorted(self.bugs)!r}" if self.bugs else ""
        return f"get_tracker({self.name!r}{extra}{bugs})"


# ---------------------------------------------------------------- clock trackers (MySQL)

class SerialTracker(Tracker):
    """Every transaction depends on its predecessor: `last_committed` is the previous
    transaction's sequence number in the same file (`sequence_number - 1` without gaps), 0 for
    the first of a file. The one-thread baseline."""

    name, kind = "serial", "clock"

    def annotate(self, txns):
        cur_file = None
        prev_sn = 0
        for txn in txns:
            f = txn.file
            if f != cur_file:
                cur_file, prev_sn = f, 0
            sn = txn.sequence_number
            if sn is None:
                sn = prev_sn + 1
            yield txn, (prev_sn, sn, f)
            prev_sn = sn


class CommitOrderTracker(Tracker):
    """The trace's own `last_committed` / `sequence_number`, as the source wrote them
    (LOGICAL_CLOCK, semantics §1.1, §1.2 already applied by the source when it had it)."""

    name, kind = "commit_order", "clock"

    def annotate(self, txns):
        for txn in txns:
            lc = txn.last_committed
            if lc is None:
                raise TrackerError(f"commit_order needs last_committed/sequence_number in the "
                                   f"trace (seq {txn.seq} has none)")
            yield txn, (lc, txn.sequence_number, txn.file)


def _key_filter(bugs: frozenset):
    """The hashing mutations (§2.1 done wrong): which of a transaction's keys get hashed."""
    primary_only = "unique_keys_ignored" in bugs
    no_before = "before_image_ignored" in bugs
    if not (primary_only or no_before):
        return None

    def keys(txn: Txn) -> tuple:
        ks = txn.writes
        if no_before and txn.before_images:
            drop = set(txn.before_images)
            ks = tuple(k for k in ks if k not in drop)
        if primary_only:
            # db.table/INDEX=v1,v2: keep the PRIMARY entries only (MySQL Bug #86078 family).
            ks = tuple(k for k in ks if k[k.index("/") + 1:].startswith("PRIMARY="))
        return ks
    return keys


class WritesetTracker(Tracker):
    """MySQL 8.0 WRITESET (semantics §2.1-§2.2, `Writeset_trx_dependency_tracker::get_dependency`,
    MySQL 8.0.39 `sql/rpl_trx_tracking.cc`), line by line:

        can_use  := (hashes or no_pk) and not ddl/admin and not fk_parent
                    and not (more than history_size hashes)          # per-transaction limit
        overflow := |history| + |hashes| > history_size    # |hashes|: see HOW MANY HASHES
        p := history_start; for h in hashes: if h in history: p := max(p, history[h]) when
             history[h] < seq; history[h] := seq; elif not overflow: history[h] := seq
        if can_use and not no_pk: parent := min(p, parent)           # never above the ceiling
        if overflow or not can_use: history_start := seq; clear history
    Rotation (a new `txn.file`): history cleared, history_start := 1 (§1.3).
    The hashes are the row keys `txn.writes` (PRIMARY and UNIQUE entries, FK parent keys, both
    images of an UPDATE: design §3); lookups use each key once. Admin statements
    (`txn.admin`) log no row events, so they take the empty-write-set path even if the trace
    lists keys for them.

    THE COMMIT-ORDER PARENT (the ceiling `parent` above), per transaction:
      1. the trace's `last_committed` when present (a MySQL source);
      2. else derived from MariaDB `commit_id` groups (commit-parent scheme, §1.1 history):
         the sequence number of the transaction just before the group, 0 when that lies in an
         earlier file. Members of one binlog group commit held their locks together, so this is
         sound; it is a lower bound of the lock-based value a MySQL source would have written.
         A transaction without a commit id is a group of one;
      3. else option `ceiling`: "none" (default) - no ceiling: the parent is the previous
         transaction (MySQL's own fallback when no parent was recorded, `binlog_cache_data::
         flush`), so a transaction that can use the history is bounded by the history floor
         alone, and the fallbacks (DDL, FK parent, no PK, overflow) are serial; "error" - raise
         TrackerError for a transaction with neither field.
    Then the §1.2 admin floor as 8.0.38+ applies it: parent := max(parent, last admin statement's
    sequence number in this file) unless the parent is 0 (previous file); an admin statement
    raises the floor for the transactions after it (bug `admin_barrier_missing`: no floor).

    WRITESET_SESSION (§2.3) then: with ps the session's previous sequence number, if
    0 < ps < seq: parent := max(parent, ps); the session's last := seq. As in the server ps is
    file-relative and not reset at rotation (a stale smaller ps adds a harmless dependency).

    HOW MANY HASHES (`write_set`): MySQL 8.0/8.4 keep the write set as a `std::vector`: an
    UPDATE pushes the hash of each key of both images, so a key it keeps is counted twice by
    the capacity check `|history| + |hashes| > history_size` and by the per-transaction limit
    (the trace's `write_set_size`; without it, one per key). MySQL 5.7 (5.7.22+) hands the
    tracker a `std::set`: one per distinct key. The option chooses: "vector" (default) or
    "set". Only when the history fills up does it matter, never for soundness. MySQL's own test
    rpl_binlog_transaction_dependency_tracking (step 1.4, history size 5) tells them apart
    (docs/mysql-tests.md).

    Options: `history_size` (binlog_transaction_dependency_history_size, default 25000),
    `ceiling` ("none" | "error"), `write_set` ("vector" | "set"). Bugs: history_evict_no_floor, ddl_not_isolated,
    unique_keys_ignored, before_image_ignored, admin_barrier_missing, and for the session
    variant session_order_dropped.
    """

    name, kind = "writeset", "clock"
    options = {"history_size": 25000, "ceiling": "none", "write_set": "vector"}
    uses_bugs = frozenset({"history_evict_no_floor", "ddl_not_isolated", "unique_keys_ignored",
                           "before_image_ignored", "admin_barrier_missing"})
    session_rule = False

    def __init__(self, **kw):
        super().__init__(**kw)
        hs = self.opts["history_size"]
        if type(hs) is not int or hs < 1:
            raise TrackerError(f"history_size must be a positive integer, got {hs!r}")
        if self.opts["ceiling"] not in ("none", "error"):
            raise TrackerError(f"ceiling must be 'none' or 'error', got {self.opts['ceiling']!r}")
        if self.opts["write_set"] not in ("vector", "set"):
            raise TrackerError(f"write_set must be 'vector' or 'set', got {self.opts['write_set']!r}")

    def annotate(self, txns):
        bugs = self.bugs
        history_size = self.opts["history_size"]
        strict = self.opts["ceiling"] == "error"
        keys_of = _key_filter(bugs)
        evict = "history_evict_no_floor" in bugs
        ddl_free = "ddl_not_isolated" in bugs
        admin_floor = "admin_barrier_missing" not in bugs
        session_rule = self.session_rule and "session_order_dropped" not in bugs
        count_duplicates = self.opts["write_set"] == "vector"

        history: dict = {}
        get = history.get
        start = 1                  # m_writeset_history_start
        cur_file = None
        prev_sn = 0                # previous transaction's sequence number in this file
        blocking = 0               # m_last_blocking_transaction (file-relative)
        group_cid = 0              # commit id of the current MariaDB group (ceiling rule 2)
        group_parent = 0
        seen_commit_id = False
        sessions: dict = {}

        for txn in txns:
            f = txn.file
            if f != cur_file:                       # rotate(): §1.3
                cur_file = f
                history.clear()
                start, prev_sn, blocking, group_cid = 1, 0, 0, 0
            sn = txn.sequence_number
            if sn is None:
                sn = prev_sn + 1
            # --- the commit-order parent (ceiling)
            co = txn.last_committed
            if co is None:
                cid = txn.commit_id
                if cid:
                    seen_commit_id = True
                    if cid != group_cid:
                        group_cid, group_parent = cid, prev_sn
                    co = group_parent
                else:
                    if cid is None and strict and not seen_commit_id:
                        raise TrackerError(
                            f"{self.name} with ceiling='error' needs last_committed or commit_id "
                            f"in the trace (seq {txn.seq} has neither)")
                    group_cid = 0
                    co = prev_sn
            else:
                group_cid = 0
            if admin_floor and co and blocking > co:
                co = blocking
            if txn.admin:
                blocking = sn
            # --- WRITESET
            keys = txn.writes if keys_of is None else keys_of(txn)
            nk = len(keys)
            if count_duplicates and txn.write_set_size is not None:
                nk += txn.write_set_size - len(txn.writes)    # the vector's repeated hashes
            no_pk = txn.no_pk
            if ddl_free:    # bug: DDL / empty write set used like any write set
                can_use = not txn.fk_parent and nk <= history_size
            else:
                can_use = ((nk or no_pk) and not (txn.ddl or txn.admin) and not txn.fk_parent
                           and nk <= history_size)
            overflow = False
            if can_use:
                overflow = len(history) + nk > history_size
                p = start
                if overflow and evict:
                    # bug: make room by evicting the oldest entries, floor unchanged
                    for h in keys:
                        v = history.pop(h, None)
                        if v is not None and p < v < sn:
                            p = v
                        history[h] = sn
                    excess = len(history) - history_size
                    if excess > 0:
                        for h in list(islice(history, excess)):
                            del history[h]
                    overflow = False
                elif overflow:
                    for h in keys:
                        v = get(h)
                        if v is not None:
                            if p < v < sn:
                                p = v
                            history[h] = sn
                else:
                    for h in keys:
                        v = get(h)
                        if v is not None and p < v < sn:
                            p = v
                        history[h] = sn
                if not no_pk and p < co:
                    co = p
            if overflow or not can_use:
                start = sn
                history.clear()
            # --- WRITESET_SESSION
            if session_rule:
                s = txn.session
                if s is not None:
                    ps = sessions.get(s)
                    if ps and ps < sn and ps > co:
                        co = ps
                    sessions[s] = sn
            yield txn, (co, sn, f)
            prev_sn = sn


class WritesetSessionTracker(WritesetTracker):
    __doc__ = WritesetTracker.__doc__
    name = "writeset_session"
    uses_bugs = WritesetTracker.uses_bugs | {"session_order_dropped"}
    session_rule = True


# ---------------------------------------------------------------- group trackers (MariaDB)

_DEFAULT_FLAGS = frozenset({"transactional", "allow_parallel"})
_DDL_FLAGS = frozenset({"ddl", "allow_parallel"})


def _flags(txn: Txn) -> frozenset:
    """The trace's GTID flags; without any: transactional unless DDL/admin, allow_parallel, and
    ddl for DDL and for admin statements (they release locks early, like DDL they must not
    overlap anything)."""
    if txn.flags:
        return txn.flags
    return _DDL_FLAGS if (txn.ddl or txn.admin) else _DEFAULT_FLAGS


class CommitIdTracker(Tracker):
    """The trace's MariaDB `commit_id` as is (§3.1): consecutive transactions with the same
    non-zero commit id were one binlog group commit on the source. A transaction without a commit
    id is a group of one, as a MariaDB replica applies it: the server writes `cid` only for a
    transaction that group-committed with others, so a binlog from a low-concurrency primary may
    have none at all (semantics §3.1). Refused: a MySQL trace (logical clocks, no commit id at
    all), whose groups are in last_committed (use commit_order). To refuse it without
    materialising the trace, up to `lookahead` (option, default 10000) leading transactions with
    a clock and no commit id are held back until a commit id shows up."""

    name, kind = "commit_id", "groups"
    options = {"lookahead": 10000}

    def annotate(self, txns):
        it = iter(txns)
        held = []
        limit = self.opts["lookahead"]
        for txn in it:
            if txn.commit_id is None and (txn.last_committed is not None or held):
                held.append(txn)
                if len(held) >= limit and any(h.last_committed is not None for h in held):
                    raise TrackerError(self._mysql_trace(f"the first {len(held)} transactions"))
                continue
            for h in held:
                yield h, (0, _flags(h))
            held = None
            yield txn, (txn.commit_id or 0, _flags(txn))
            break
        if held:
            raise TrackerError(self._mysql_trace(f"all {len(held)} transactions"))
        for txn in it:
            yield txn, (txn.commit_id or 0, _flags(txn))

    @staticmethod
    def _mysql_trace(which: str) -> str:
        return (f"commit_id needs MariaDB commit ids, but {which} carry MySQL "
                f"last_committed/sequence_number and none has a commit_id (a MySQL binlog: "
                f"use commit_order)")


class SlaveGroupCommitTracker(Tracker):
    """The commit groups an intermediate MariaDB replica writes to its own binlog when it runs
    the trace serially with `binlog_commit_wait_count` / `binlog_commit_wait_usec`
    (Booking.com "slave group commit", semantics §3.2, §3.8; MDEV-7249).

    The replica has parallel threads but no commit ids to use, so every transaction is its own
    GCO: T(i+1) starts executing when T(i) reaches its commit (execution is serial, commits wait
    in the binlog group-commit delay). The first transaction to reach commit leads a group and
    waits; the group closes
      - when it holds `commit_wait_count` transactions (trigger_count), at the last one's exec end;
      - when `commit_wait_usec` have passed since the leader started waiting and the transaction
        executing has not finished (trigger_timeout): it then leads the next group;
      - when the transaction executing would wait for a row lock held by a member (its write set
        intersects a member's, or either is DDL/admin): the has_waiter trigger (MDEV-7249) commits
        the group at once and the waiter, which carries the `waited` flag, leads the next group
        (bug `group_not_split_on_wait`: the waiter joins the group instead).
    Exec costs are `txn.exec` in µs, else option `exec_default`. Output: (group_id, flags), the
    group id the first member's seq (a leader's query id stand-in), 0 for a group of one; flags
    the trace's (or the defaults of `commit_id`) plus `waited` when the replica made it wait.

    Not modelled: the commit step's own duration (fsync) during which the next transactions
    queue behind the committing group; a lock wait that starts part-way through execution (the
    waiter is taken to block at once); locks the row keys do not show (gap/next-key locks,
    secondary indexes, MDL waits other than DDL), which on a real replica also trigger
    has_waiter; SQL-thread queueing/dispatch overheads; GTID domains; relay-log rotation.
    """

    name, kind = "slave_group_commit", "groups"
    options = {"commit_wait_count": 8, "commit_wait_usec": 100000.0, "exec_default": 100.0}
    uses_bugs = frozenset({"group_not_split_on_wait"})

    def __init__(self, **kw):
        super().__init__(**kw)
        for name in self.options:
            v = self.opts[name]
            if type(v) not in (int, float) or v < 0:
                raise TrackerError(f"{name} must be a non-negative number, got {v!r}")

    def annotate(self, txns):
        count = max(1, int(self.opts["commit_wait_count"]))
        usec = float(self.opts["commit_wait_usec"])
        exec_default = float(self.opts["exec_default"])
        split_on_wait = "group_not_split_on_wait" not in self.bugs

        group: list = []            # [(txn, waited)]
        held: set = set()           # row keys locked by the members
        held_special = False        # a member is DDL/admin
        deadline = 0.0
        now = 0.0                   # when the next transaction starts executing

        def emit():
            gid = group[0][0].seq if len(group) > 1 else 0
            for t, waited in group:
                fl = _flags(t)
                yield t, (gid, fl | {"waited"} if waited else fl)

        for txn in txns:
            cost = txn.exec if txn.exec is not None else exec_default
            special = txn.ddl or txn.admin
            waited = False
            if group:
                if split_on_wait and (held_special or special or not held.isdisjoint(txn.writes)):
                    waited = True               # has_waiter: the group commits now
                    yield from emit()
                    group.clear()
                elif now + cost > deadline:    # trigger_timeout before it reaches commit
                    yield from emit()
                    group.clear()
            end = now + cost
            if not group:
                held = set(txn.writes)
                held_special = special
                deadline = end + usec
            else:
                held.update(txn.writes)
                held_special = held_special or special
            group.append((txn, waited))
            now = end
            if len(group) >= count:            # trigger_count
                yield from emit()
                group.clear()
        if group:
            yield from emit()


# ---------------------------------------------------------------- database (MySQL 5.6)

class DatabaseTracker(Tracker):
    """MySQL 5.6 DATABASE mode (§4): the schemas a transaction touches (`txn.schemas`), or None
    ("run isolated": wait for every worker) for more than 16 schemas (OVER_MAX_DBS_IN_EVENT_MTS),
    DDL and admin statements. A transaction touching no schema gets ()."""

    name, kind = "database", "database"

    def annotate(self, txns):
        for txn in txns:
            if txn.ddl or txn.admin:
                yield txn, None
                continue
            dbs = txn.schemas
            yield txn, (None if len(dbs) > MAX_DBS_IN_EVENT_MTS else dbs)


# ---------------------------------------------------------------- certification (clusters)

class CertificationTracker(Tracker):
    """What certification gives each write-set on a member of a certification-based cluster
    that applies them all (model/certification.py, docs/certification.md): Galera's
    depends_seqno and Group Replication's last_committed / sequence_number, as a
    `certification.CertDep`. Option `gc_period_s`: Group Replication's garbage-collection
    period on the transactions' timestamps (None: never)."""

    name, kind = "certification", "certification"
    options = {"gc_period_s": 60.0}

    def annotate(self, txns):
        from .certification import certification_deps
        return certification_deps(txns, gc_period_s=self.opts["gc_period_s"])


TRACKERS: dict[str, type] = {cls.name: cls for cls in (
    SerialTracker, DatabaseTracker, CommitOrderTracker, CommitIdTracker, WritesetTracker,
    WritesetSessionTracker, SlaveGroupCommitTracker, CertificationTracker)}


def get_tracker(name: str, *, bugs: frozenset[str] = frozenset(), **options) -> Tracker:
    """A tracker by name (`TRACKERS`), with bug flags and options (see each class)."""
    cls = TRACKERS.get(name)
    if cls is None:
        raise TrackerError(f"unknown tracker {name!r}; trackers: {', '.join(TRACKERS)}")
    return cls(bugs=bugs, **options)


# ---------------------------------------------------------------- property helpers

def conflicts(a: Txn, b: Txn) -> bool:
    """Ground truth of a conflict: the write sets intersect, or either is DDL or admin."""
    if a.ddl or a.admin or b.ddl or b.admin:
        return True
    return not set(a.writes).isdisjoint(b.writes)


class ClockPoint(NamedTuple):
    """One clock annotation as the MySQL applier reads it: its position in the stream
    (`index`, 0-based), its values, and `barrier_from`: the index of the latest barrier at or
    before it (everything before that index committed before this transaction could start)."""
    index: int
    lc: int
    sn: int
    file: int
    barrier_from: int


class ClockOrder:
    """Streaming reader of clock annotations (semantics §1.4). `push(dep)` in stream order
    returns its ClockPoint. A transaction is a barrier when it is the first one, the first of a
    binlog file, has `last_committed` 0, or a sequence number that is inconsistent (<= its
    last_committed or <= the previous one) or leaves a gap: the coordinator then drains every
    worker, and since it dispatches in order nothing after the barrier starts earlier either."""

    def __init__(self, *, rotation_ignored: bool = False):
        self.index = -1
        self.prev_sn = 0
        self.prev_file = None
        self.barrier = 0
        self.rotation_ignored = rotation_ignored   # the catalogue bug: files not told apart

    def push(self, dep) -> ClockPoint:
        lc, sn, f = dep
        self.index += 1
        i = self.index
        new_file = self.prev_file is None or (f != self.prev_file and not self.rotation_ignored)
        if (new_file or lc == 0 or sn == 0 or sn <= lc or sn <= self.prev_sn
                or sn > self.prev_sn + 1):
            self.barrier = i
        self.prev_sn, self.prev_file = sn, f
        return ClockPoint(i, lc, sn, f, self.barrier)


def clock_depends_on(i: ClockPoint, j: ClockPoint) -> bool:
    """Whether transaction j may start only after i committed, as the MySQL applier reads the
    clock: i < j and (a barrier lies in (i, j], or i is in j's file with sn_i <= lc_j). The
    relation is transitively closed and downward closed (if j depends on k it depends on every
    i before k), so this is also "directly or transitively". The coordinator's in-order
    dispatch behind an unsatisfied (non-barrier) transaction is not counted: that is head-of-line
    blocking, not a dependency."""
    if i.index >= j.index:
        return False
    return i.index < j.barrier_from or (i.file == j.file and i.sn <= j.lc)


def soundness_violations(pairs: Iterable[tuple[Txn, tuple]], *, sessions: bool = False
                         ) -> Iterator[tuple[int, int, str]]:
    """TrackerSoundness on a clock annotation (streamed `(txn, dep)` pairs): yields
    `(seq_i, seq_j, reason)` for each j that does not depend on the latest earlier i that
    conflicts with it (reason "key <k>", "ddl/admin", or with `sessions` "session <s>", which
    is SessionOrder). Checking the latest such i suffices because the dependency relation is
    downward closed. Memory: one entry per distinct key and session."""
    order = ClockOrder()
    last_writer: dict = {}
    last_session: dict = {}
    last_special = None          # latest DDL/admin point
    prev = None
    for txn, dep in pairs:
        j = order.push(dep)
        worst = None             # (point, seq, reason)
        special = txn.ddl or txn.admin
        if special and prev is not None:
            worst = (prev[0], prev[1], "ddl/admin")
        elif last_special is not None:
            worst = (last_special[0], last_special[1], "ddl/admin")
        for k in txn.writes:
            w = last_writer.get(k)
            if w is not None and (worst is None or w[0].index > worst[0].index):
                worst = (w[0], w[1], f"key {k}")
            last_writer[k] = (j, txn.seq)
        if sessions and txn.session is not None:
            w = last_session.get(txn.session)
            if w is not None and (worst is None or w[0].index > worst[0].index):
                worst = (w[0], w[1], f"session {txn.session}")
            last_session[txn.session] = (j, txn.seq)
        if worst is not None and not clock_depends_on(worst[0], j):
            yield worst[1], txn.seq, worst[2]
        if special:
            last_special = (j, txn.seq)
        prev = (j, txn.seq)


def group_conflicts(pairs: Iterable[tuple[Txn, tuple]]) -> Iterator[tuple[int, int]]:
    """GroupConflictFree on a groups annotation: yields `(seq_i, seq_j)` for two members of one
    commit group (consecutive, same non-zero group id) that conflict. Memory: one group."""
    members: list = []
    gid = 0
    for txn, (g, _flags) in pairs:
        if not g or g != gid:
            members = []
        gid = g
        for m in members:
            if conflicts(m, txn):
                yield m.seq, txn.seq
        if g:
            members.append(txn)


def session_order_violations(pairs: Iterable[tuple[Txn, tuple]]) -> Iterator[tuple[int, int]]:
    """SessionOrder on a clock annotation: yields `(seq_i, seq_j)` for consecutive transactions
    i < j of one session where j does not depend on i (which, by downward closure, covers every
    earlier transaction of the session). Memory: one entry per session."""
    order = ClockOrder()
    last: dict = {}
    for txn, dep in pairs:
        j = order.push(dep)
        s = txn.session
        if s is None:
            continue
        w = last.get(s)
        if w is not None and not clock_depends_on(w[0], j):
            yield w[1], txn.seq
        last[s] = (j, txn.seq)
