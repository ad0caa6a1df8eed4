"""The simulated source server behind `commitsched generate` (design §3; semantics.md §1.1–§1.3,
§3.1); the workload shapes it runs are in `gen_workloads`.

Nothing in a generated trace's annotations is drawn at random: a small discrete-event simulation
of a source server runs the workload, and `last_committed`, `sequence_number`, `commit_id`, the
`waited` flag and the timestamps are what the server's rules make of that run.

The simulated server
--------------------
* `clients` sessions run transactions back to back; a client starts its next transaction when
  its COMMIT returns (the end of its binlog group commit).
* Execution cost of a transaction: log-normal, median `exec_us` (per-workload default), shape
  `exec_sigma`, in µs, split evenly over its statements. A multi-statement transaction sends its
  COMMIT `rtt_us` after its last statement ends (autocommit statements commit at once).
* Row locks, strict 2PL: each statement X-locks the keys it writes, in statement order, and holds
  them until its engine commit. A transaction that needs a held lock waits (FIFO per key) for the
  holder's engine commit and then carries MariaDB's `waited` flag (row-lock waits only: a wait
  behind a DDL's metadata lock does not set it). A wait that would close a cycle is a deadlock:
  the requesting transaction is rolled back (it never reaches the binlog) and its client restarts
  the same kind of transaction with fresh random rows, as sysbench does on error 1213.
* Keys are locked exclusively, including the parent key a foreign-key child row references
  (InnoDB takes a shared lock there; modelling it exclusive keeps "write sets intersect" and
  "locks conflict" the same relation, which is what the lock-interval theory is stated on).
  A table without a primary key is updated by a full scan that locks every row: one internal
  table-wide lock, not a row key in `writes`.
* DDL runs alone: it waits until every running transaction has committed, and no transaction
  starts while it is pending or running.
* Binlog group commit, one group in flight at a time: the first transaction to queue while no
  group is in flight becomes the leader and flushes everything queued (binlog order = flush
  order), then one sync (`sync_us`), then engine commits in order, `commit_us` each. Just before
  each engine commit the committed clock is raised to that transaction's sequence number
  (set-if-greater); locks are released at the engine commit.
* `last_committed` = the committed clock when the transaction's last statement ended (MySQL
  snapshots it at every statement-level prepare), made file-relative at flush: 0 when it lies in
  the previous binlog file. Rotation happens after the group during which the file reached
  `rotate_every` transactions (a group never spans two files), so a file holds at least
  `rotate_every` transactions, rarely a few more.
* Optionally (`bulk_every` = N) every N-th transaction is a bulk update (the large multi-row
  transaction of docs/blame.md): `UPDATE ... WHERE id BETWEEN a AND a + bulk_rows - 1` on one
  table, locking `bulk_rows` consecutive rows in id order; its execution cost is log-normal with
  median `bulk_rows` x a tenth of the workload's median (a row's share of a small transaction).
* Optionally (`commit_wait_count` > 0, MariaDB's binlog_commit_wait_count/_usec) the leader
  waits before flushing until that many transactions are queued, one of them has a lock
  waiter (MDEV-7249), or `commit_wait_usec` passes.
* MariaDB `commit_id`: the group's id (the absolute binlog number of its leader) when the group
  has more than one member; absent for singletons.

Key choice (`skew`): uniform when 0, else Zipf-like: a continuous power law, density
proportional to rank^-skew over the rows of a table, rank 1 hottest; the row id is the rank.

`generate` streams: it holds only the in-flight transactions (at most `clients`), their locks,
and per-table state of the `mixed` workload (unique values, bounded by `table_size`).
"""
from __future__ import annotations

import heapq
import math
import random
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator

from .gen_workloads import (_B, _I, _RUN, DEFAULT_EXEC_US, SCHEMA, WORKLOADS, WorkloadShapes,
                            _row_chooser)
from .trace import Txn

SOURCES = ("mysql", "mariadb")


@dataclass(frozen=True)
class GenParams:
    """Every knob of the simulated source; recorded in the trace header."""

    workload: str = "oltp_read_write"
    clients: int = 8
    tables: int = 1
    table_size: int = 10000
    skew: float = 0.0
    seed: int = 1
    rotate_every: int | None = None
    ddl_every: int | None = None
    fk: bool = False
    source: str = "mysql"
    exec_us: float | None = None
    exec_sigma: float = 0.5
    commit_us: float = 20.0
    sync_us: float = 500.0
    rtt_us: float = 50.0
    ddl_exec_us: float = 20000.0
    parent_rows: int = 100
    commit_wait_count: int = 0
    commit_wait_usec: float = 100000.0
    bulk_every: int | None = None
    bulk_rows: int = 100

    def __post_init__(self):
        if self.workload not in WORKLOADS:
            raise ValueError(f"unknown workload {self.workload!r}; one of {', '.join(WORKLOADS)}")
        if self.source not in SOURCES:
            raise ValueError(f"unknown source {self.source!r}; one of {', '.join(SOURCES)}")
        for name in ("clients", "tables", "table_size", "parent_rows", "bulk_rows"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("rotate_every", "ddl_every", "bulk_every"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name} must be at least 1 (or None)")
        if not 0.0 <= self.skew < 1.0:
            raise ValueError("skew must be in [0, 1)")
        for name in ("exec_sigma", "commit_us", "sync_us", "rtt_us", "ddl_exec_us",
                     "commit_wait_count", "commit_wait_usec"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.exec_us is not None and self.exec_us <= 0:
            raise ValueError("exec_us must be positive")

    @property
    def exec_median(self) -> float:
        return self.exec_us if self.exec_us is not None else DEFAULT_EXEC_US[self.workload]


class _Attempt:
    """One execution attempt of a transaction (a deadlock victim's retry is a new attempt)."""

    __slots__ = ("id", "client", "kind", "body", "exec", "held", "writes", "waiting", "waited",
                 "lc_abs", "abs_seq", "ddl", "no_pk", "fk_parent", "explicit", "pending_u",
                 "freed", "taken", "group", "queued")

    def __init__(self, aid: int, client: int, kind: str):
        self.id, self.client, self.kind = aid, client, kind
        self.body: Iterator | None = None
        self.exec = 0.0
        self.held: list[str] = []
        self.writes: dict[str, bool] = {}   # key -> contributed only by an UPDATE's before image
        self.waiting: tuple[str, int] | None = None
        self.waited = False
        self.lc_abs = 0
        self.abs_seq = 0
        self.ddl = self.no_pk = self.fk_parent = False
        self.explicit = True
        self.pending_u: list[tuple[int, int]] = []   # (row, new unique value), applied at commit
        self.freed: list[int] = []                   # unique values free once committed
        self.taken: list[int] = []                   # values taken from the free pool
        self.group: list[_Attempt] | None = None
        self.queued = False

    def record(self, key: str, role: int) -> None:
        if role == _I:
            return
        if role == _B:
            self.writes.setdefault(key, True)
        else:
            self.writes[key] = False


# MariaDB GTID flags by (ddl, waited): FL_TRANSACTIONAL unless DDL; skip_parallel_replication
# is never set, so FL_ALLOW_PARALLEL always.
_FLAGS = {(d, w): frozenset({"allow_parallel", "ddl" if d else "transactional"}
                            | ({"waited"} if w else set()))
          for d in (False, True) for w in (False, True)}

# Event kinds, in the heap as (time, tie, kind, payload).
_START, _RESUME, _ENQUEUE, _ENGINE_COMMIT, _WAIT_TIMEOUT = 0, 1, 2, 3, 4

Observer = Callable[..., None]


class _Source(WorkloadShapes):
    """The simulated source server. `run()` yields transactions in binlog order."""

    def __init__(self, p: GenParams, n: int, observer: Observer | None = None):
        self.p, self.n, self.obs = p, n, observer
        self.rng = rng = random.Random(p.seed)
        self.pick_row = _row_chooser(rng, p.table_size, p.skew)
        self.pick_parent = _row_chooser(rng, p.parent_rows, 0.0)
        self.mu = math.log(p.exec_median)
        self.heap: list = []
        self.tie = 0
        self.now = 0.0
        self.locks: dict[str, _Attempt] = {}
        self.waiters: dict[str, deque] = {}
        self.next_attempt = 0
        self.logical = 0            # transactions begun (not attempts), for ddl_every
        # DDL gate: a pending/running DDL blocks new starts until it commits.
        self.active = 0
        self.ddl_gate: _Attempt | None = None
        self.ddl_ready = False
        self.parked: list[tuple[int, str]] = []
        # Binlog and group commit.
        self.queue: list[_Attempt] = []
        self.busy = False
        self.leader_waiting = False     # binlog_commit_wait_count: the leader waits for more
        self.wait_token = 0
        self.flushed = 0
        self.abs_seq = 0
        self.clock = 0              # absolute max committed sequence number
        self.offset = 0             # absolute counter value at the last rotation
        self.file = 1
        self.in_file = 0
        self.out: deque[Txn] = deque()
        # Per-table state of the mixed workload.
        self.u_of: dict[int, int] = {}
        self.u_pool: deque[int] = deque()
        self.u_next = p.table_size + 1
        self.child_next = 1
        self.auto_inc = [p.table_size + 1] * (p.tables + 1)
        if p.source == "mysql":
            self.server_uuid = str(uuid.UUID(int=random.Random(f"server-uuid-{p.seed}").getrandbits(128),
                                             version=4))
        for c in range(1, p.clients + 1):
            self._push(0.0, _START, (c, None))

    # -------------------------------------------------------------- driver

    def _push(self, t: float, kind: int, payload) -> None:
        self.tie += 1
        heapq.heappush(self.heap, (t, self.tie, kind, payload))

    def run(self) -> Iterator[Txn]:
        emitted = 0
        heap, out = self.heap, self.out
        pop = heapq.heappop
        while emitted < self.n:
            while not out:
                if not heap:
                    raise RuntimeError("simulation stalled (no event left): a generator bug")
                t, _, kind, payload = pop(heap)
                self.now = t
                if kind == _RESUME:
                    self._advance(payload)
                elif kind == _ENGINE_COMMIT:
                    self._engine_commit(payload)
                elif kind == _ENQUEUE:
                    self._enqueue(payload)
                elif kind == _WAIT_TIMEOUT:
                    if self.leader_waiting and payload == self.wait_token:
                        self.leader_waiting = False
                        self._flush()
                else:
                    self._start(*payload)
            emitted += 1
            yield out.popleft()

    # -------------------------------------------------------------- transactions

    def _start(self, client: int, kind: str | None) -> None:
        if kind is None:
            kind = self._next_kind()
        if self.ddl_gate is not None:
            self.parked.append((client, kind))   # metadata-lock wait behind a DDL
            return
        self.next_attempt += 1
        att = _Attempt(self.next_attempt, client, kind)
        if self.obs:
            self.obs("start", self.now, att.id, client)
        att.body = getattr(self, "_body_" + kind)(att)
        if kind == "ddl":
            att.ddl = True
            att.explicit = False
            self.ddl_gate = att
            if self.active == 0:
                self._advance(att)
            else:
                self.ddl_ready = True   # resumes when the last running transaction commits
            return
        self.active += 1
        self._advance(att)

    def _advance(self, att: _Attempt) -> None:
        body = att.body
        for step in body:
            if step[0] == _RUN:
                self.tie += 1
                heapq.heappush(self.heap, (self.now + step[1], self.tie, _RESUME, att))
                return
            if not self._acquire(att, step[1], step[2]):
                return
        # The last statement ended: MySQL's statement-level prepare snapshots the clock.
        att.lc_abs = self.clock
        if att.explicit and self.p.rtt_us > 0:
            self._push(self.now + self.p.rtt_us, _ENQUEUE, att)
        else:
            self._enqueue(att)

    def _acquire(self, att: _Attempt, key: str, role: int) -> bool:
        locks = self.locks
        holder = locks.get(key)
        if holder is None:
            locks[key] = att
            att.held.append(key)
            att.record(key, role)
            if self.obs:
                self.obs("lock", self.now, att.id, key)
            return True
        if holder is att:
            att.record(key, role)
            return True
        h = holder
        while h.waiting is not None:
            h = locks[h.waiting[0]]
            if h is att:
                self._rollback(att)
                return False
        att.waiting = (key, role)
        att.waited = True
        self.waiters.setdefault(key, deque()).append(att)
        if self.obs:
            self.obs("wait", self.now, att.id, key, holder.id)
        if self.leader_waiting and holder.queued:
            # MDEV-7249: a queued transaction has a lock waiter: the leader stops waiting.
            self.leader_waiting = False
            self._flush()
        return False

    def _release(self, att: _Attempt) -> None:
        locks, waiters, obs = self.locks, self.waiters, self.obs
        for key in att.held:
            if obs:
                obs("release", self.now, att.id, key)
            q = waiters.get(key)
            if q:
                w = q.popleft()
                if not q:
                    del waiters[key]
                locks[key] = w
                w.held.append(key)
                w.record(key, w.waiting[1])
                w.waiting = None
                if obs:
                    obs("grant", self.now, w.id, key)
                self._push(self.now, _RESUME, w)
            else:
                del locks[key]
        att.held = []

    def _rollback(self, att: _Attempt) -> None:
        """Deadlock victim: roll back, release, and let its client run the same kind again."""
        if self.obs:
            self.obs("rollback", self.now, att.id)
        att.body.close()
        self._release(att)
        for v in reversed(att.taken):
            self.u_pool.appendleft(v)
        self.active -= 1
        self._maybe_run_ddl()
        self._push(self.now, _START, (att.client, att.kind))

    def _maybe_run_ddl(self) -> None:
        if self.ddl_ready and self.active == 0:
            self.ddl_ready = False
            self._advance(self.ddl_gate)

    # -------------------------------------------------------------- group commit

    def _enqueue(self, att: _Attempt) -> None:
        self.queue.append(att)
        att.queued = True
        if not self.busy:
            self._lead()

    def _lead(self) -> None:
        """The leader flushes at once, or with MariaDB's binlog_commit_wait_count > 0 waits
        until that many are queued, a queued transaction has a lock waiter, or
        binlog_commit_wait_usec passes (semantics.md §3.2)."""
        p = self.p
        if (p.commit_wait_count <= 0 or len(self.queue) >= p.commit_wait_count
                or any(k in self.waiters for m in self.queue for k in m.held)):
            self.leader_waiting = False
            self._flush()
        elif not self.leader_waiting:
            self.leader_waiting = True
            self.wait_token += 1
            self._push(self.now + p.commit_wait_usec, _WAIT_TIMEOUT, self.wait_token)

    def _flush(self) -> None:
        """The leader flushes the queue (binlog order), syncs once, then commits in order."""
        p = self.p
        room = self.n - self.flushed
        members = self.queue[:room]
        del self.queue[:room]
        if not members:
            return
        self.busy = True
        self.flushed += len(members)
        commit_id = self.abs_seq + 1 if len(members) > 1 else None
        t = self.now + p.sync_us
        mariadb = p.source == "mariadb"
        for m in members:
            m.queued = False
            self.abs_seq += 1
            self.in_file += 1
            m.abs_seq = s = self.abs_seq
            t += p.commit_us
            m.group = members
            if self.obs:
                self.obs("flush", self.now, m.id, s)
            self._push(t, _ENGINE_COMMIT, m)
            flags = _FLAGS[m.ddl, m.waited]
            writes = tuple(m.writes)
            self.out.append(Txn(
                s, writes,
                before_images=tuple(k for k, only_before in m.writes.items() if only_before),
                gtid=f"0-1-{s}" if mariadb else f"{self.server_uuid}:{s}",
                file=self.file,
                last_committed=m.lc_abs - self.offset if m.lc_abs > self.offset else 0,
                sequence_number=s - self.offset,
                commit_id=commit_id, flags=flags, session=m.client,
                db=(SCHEMA,) if not writes else None,
                ddl=m.ddl, no_pk=m.no_pk, fk_parent=m.fk_parent,
                exec=m.exec, commit=p.commit_us, timestamp=round(t / 1e6, 7)))
        if p.rotate_every and self.in_file >= p.rotate_every:
            self.file += 1
            self.offset = self.abs_seq
            self.in_file = 0

    def _engine_commit(self, att: _Attempt) -> None:
        if att.abs_seq > self.clock:      # set-if-greater, just before the engine commit
            self.clock = att.abs_seq
        if self.obs:
            self.obs("commit", self.now, att.id, att.abs_seq)
        for row, value in att.pending_u:
            self.u_of[row] = value
        if len(self.u_pool) < 10000:
            self.u_pool.extend(att.freed)
        self._release(att)
        if att.ddl:
            self.ddl_gate = None
            parked, self.parked = self.parked, []
            for client, kind in parked:
                self._push(self.now, _START, (client, kind))
        else:
            self.active -= 1
            self._maybe_run_ddl()
        group = att.group
        if group[-1] is att:             # the group is done: COMMIT returns to every member
            for m in group:
                m.group = None
                self._push(self.now, _START, (m.client, None))
            self.busy = False
            if self.queue:
                self._lead()
