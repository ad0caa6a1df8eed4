"""Synthetic traces from a simulated source server (design §3; semantics.md §1.1–§1.3, §3.1).

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

import argparse
import heapq
import json
import math
import os
import random
import sys
import uuid
from collections import deque
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

from .trace import Txn, iter_trace, write_trace

GENERATOR_VERSION = 1
WORKLOADS = ("oltp_read_write", "oltp_update_index", "oltp_insert", "mixed")
SOURCES = ("mysql", "mariadb")
SCHEMA = "sbtest"

# Median execution cost per workload, µs (an 18-statement sysbench transaction vs. one statement).
DEFAULT_EXEC_US = {"oltp_read_write": 1500.0, "oltp_update_index": 150.0,
                   "oltp_insert": 150.0, "mixed": 1500.0}


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


# ------------------------------------------------------------------ keys

def _pk(table: str, row: int) -> str:
    return f"{SCHEMA}.{table}/PRIMARY={row}"


def _uk(table: str, value: int) -> str:
    return f"{SCHEMA}.{table}/uk={value}"


UNIQUE_TABLE = "usbtest1"      # PRIMARY KEY (id), UNIQUE KEY uk (u); u starts equal to id
NOPK_TABLE = "nopk1"           # no primary key, no unique key
PARENT_TABLE = "parent"        # referenced by child.parent_id
CHILD_TABLE = "child"          # PRIMARY KEY (id) AUTO_INCREMENT, FOREIGN KEY (parent_id)
_NOPK_LOCK = f"~table-scan:{SCHEMA}.{NOPK_TABLE}"   # internal lock, never written to a trace

# Body steps: ("run", µs) | ("lock", key, role). Roles: a written key, a key only an UPDATE's
# before image contributes, an internal lock (not a row key).
_RUN, _LOCK = 0, 1
_W, _B, _I = 0, 1, 2


def _row_chooser(rng: random.Random, size: int, skew: float) -> Callable[[], int]:
    rand = rng.random
    if skew == 0.0:
        return lambda: int(rand() * size) + 1
    a = 1.0 - skew
    top = (size + 1) ** a - 1.0
    inv = 1.0 / a

    def pick() -> int:  # inverse CDF of density ∝ x^-skew on [1, size+1)
        r = int((1.0 + rand() * top) ** inv)
        return r if r <= size else size
    return pick


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


class _Source:
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

    def _draw_exec(self, median_log: float) -> float:
        return max(1.0, round(self.rng.lognormvariate(median_log, self.p.exec_sigma), 1))

    def _next_kind(self) -> str:
        p, rand = self.p, self.rng.random
        self.logical += 1
        if p.ddl_every and self.logical % p.ddl_every == 0:
            return "ddl"
        if p.bulk_every and self.logical % p.bulk_every == 0:
            return "bulk"
        if p.fk and rand() < 0.10:
            return "fk_child" if rand() < 0.7 else "fk_parent"
        if p.workload == "mixed":
            r = rand()
            if r < 0.60:
                return "oltp_read_write"
            if r < 0.75:
                return "unique_update"
            if r < 0.85:
                return "unique_delete_insert"
            return "nopk_update"
        return p.workload

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
            writes = list(m.writes)
            self.out.append(Txn(
                s, writes,
                before_images=[k for k, only_before in m.writes.items() if only_before],
                gtid=f"0-1-{s}" if mariadb else f"{self.server_uuid}:{s}",
                file=self.file,
                last_committed=m.lc_abs - self.offset if m.lc_abs > self.offset else 0,
                sequence_number=s - self.offset,
                commit_id=commit_id, flags=flags, session=m.client,
                db=(SCHEMA,) if not writes else None,
                ddl=m.ddl, no_pk=m.no_pk, fk_parent=m.fk_parent,
                exec=m.exec, commit=p.commit_us, timestamp=round(t, 1)))
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

    # -------------------------------------------------------------- workload bodies
    # Generators: they draw rows when the statement runs (as sysbench does) and read the
    # server's state only under the row lock that makes it stable.

    def _table(self) -> str:
        return f"sbtest{int(self.rng.random() * self.p.tables) + 1}"

    def _body_oltp_read_write(self, att: _Attempt):
        # sysbench oltp_read_write: 10 point selects + 4 range selects (consistent reads, no
        # locks), then index update (k is not unique: only PRIMARY counts), non-index update,
        # DELETE then INSERT of the same id; each statement picks its own table.
        att.exec = e = self._draw_exec(self.mu)
        s = e / 18
        rand, tables, pick = self.rng.random, self.p.tables, self.pick_row
        yield _RUN, 14 * s
        yield _LOCK, f"{SCHEMA}.sbtest{int(rand() * tables) + 1}/PRIMARY={pick()}", _W
        yield _RUN, s
        yield _LOCK, f"{SCHEMA}.sbtest{int(rand() * tables) + 1}/PRIMARY={pick()}", _W
        yield _RUN, s
        yield _LOCK, f"{SCHEMA}.sbtest{int(rand() * tables) + 1}/PRIMARY={pick()}", _W
        yield _RUN, 2 * s

    def _body_oltp_update_index(self, att: _Attempt):
        att.explicit = False            # autocommit: one UPDATE ... SET k=k+1 WHERE id=?
        att.exec = e = self._draw_exec(self.mu)
        yield _LOCK, _pk(self._table(), self.pick_row()), _W
        yield _RUN, e

    def _body_oltp_insert(self, att: _Attempt):
        att.explicit = False            # autocommit INSERT, AUTO_INCREMENT id: a fresh row
        att.exec = e = self._draw_exec(self.mu)
        t = int(self.rng.random() * self.p.tables) + 1
        row = self.auto_inc[t]
        self.auto_inc[t] += 1
        yield _LOCK, _pk(f"sbtest{t}", row), _W
        yield _RUN, e

    def _unique_value(self, att: _Attempt, row: int) -> int:
        for r, v in reversed(att.pending_u):
            if r == row:
                return v
        return self.u_of.get(row, row)

    def _new_unique_value(self, att: _Attempt) -> int:
        # Reuse a value a committed transaction freed (half the time), else a fresh one: reuse
        # is what makes the freeing transaction's before image matter.
        if self.u_pool and self.rng.random() < 0.5:
            v = self.u_pool.popleft()
            att.taken.append(v)
            return v
        v = self.u_next
        self.u_next += 1
        return v

    def _body_unique_update(self, att: _Attempt):
        # SELECT; UPDATE usbtest1 SET u=? WHERE id=?  (the UNIQUE value changes)
        att.exec = e = self._draw_exec(self.mu - math.log(4))
        s = e / 2
        yield _RUN, s
        row = self.pick_row()
        yield _LOCK, _pk(UNIQUE_TABLE, row), _W
        old = self._unique_value(att, row)
        new = self._new_unique_value(att)
        yield _LOCK, _uk(UNIQUE_TABLE, old), _B
        yield _LOCK, _uk(UNIQUE_TABLE, new), _W
        att.pending_u.append((row, new))
        att.freed.append(old)
        yield _RUN, s

    def _body_unique_delete_insert(self, att: _Attempt):
        # DELETE FROM usbtest1 WHERE id=?; INSERT the same id with another unique value.
        att.exec = e = self._draw_exec(self.mu - math.log(4))
        s = e / 2
        row = self.pick_row()
        yield _LOCK, _pk(UNIQUE_TABLE, row), _W
        old = self._unique_value(att, row)
        yield _LOCK, _uk(UNIQUE_TABLE, old), _W
        yield _RUN, s
        new = self._new_unique_value(att)
        yield _LOCK, _uk(UNIQUE_TABLE, new), _W
        att.pending_u.append((row, new))
        att.freed.append(old)
        yield _RUN, s

    def _body_nopk_update(self, att: _Attempt):
        # UPDATE nopk1 ... (a full scan locks every row), then an ordinary sbtest row update.
        att.exec = e = self._draw_exec(self.mu - math.log(3))
        att.no_pk = True
        s = e / 2
        yield _LOCK, _NOPK_LOCK, _I
        yield _RUN, s
        yield _LOCK, _pk(self._table(), self.pick_row()), _W
        yield _RUN, s

    def _body_fk_child(self, att: _Attempt):
        # INSERT INTO child (parent_id, ...): the FK adds the referenced parent key.
        att.exec = e = self._draw_exec(self.mu - math.log(4))
        row = self.child_next
        self.child_next += 1
        yield _LOCK, _pk(CHILD_TABLE, row), _W
        yield _LOCK, _pk(PARENT_TABLE, self.pick_parent()), _W
        yield _RUN, e

    def _body_fk_parent(self, att: _Attempt):
        # UPDATE parent SET c=? WHERE id=?: a write to a table other tables reference.
        att.exec = e = self._draw_exec(self.mu - math.log(4))
        att.fk_parent = True
        yield _LOCK, _pk(PARENT_TABLE, self.pick_parent()), _W
        yield _RUN, e

    def _body_bulk(self, att: _Attempt):
        # UPDATE sbtest.sbtestN SET c=? WHERE id BETWEEN a AND a+rows-1: rows locked in id order
        # as the range scan reaches them, the cost spread evenly over the rows.
        att.explicit = False            # autocommit: one range UPDATE
        rows = min(self.p.bulk_rows, self.p.table_size)
        att.exec = e = self._draw_exec(self.mu + math.log(rows / 10))
        table = self._table()
        first = int(self.rng.random() * (self.p.table_size - rows + 1)) + 1
        for row in range(first, first + rows):
            yield _LOCK, _pk(table, row), _W
            yield _RUN, e / rows

    def _body_ddl(self, att: _Attempt):
        # ALTER TABLE sbtest.sbtestN ...: no row events; runs alone.
        att.exec = self._draw_exec(math.log(self.p.ddl_exec_us))
        yield _RUN, att.exec


# ------------------------------------------------------------------ public API

def generate(n: int, *, workload: str = "oltp_read_write", clients: int = 8, tables: int = 1,
             table_size: int = 10000, skew: float = 0.0, seed: int = 1,
             rotate_every: int | None = None, ddl_every: int | None = None, fk: bool = False,
             source: str = "mysql", exec_us: float | None = None, exec_sigma: float = 0.5,
             commit_us: float = 20.0, sync_us: float = 500.0, rtt_us: float = 50.0,
             ddl_exec_us: float = 20000.0, parent_rows: int = 100,
             commit_wait_count: int = 0, commit_wait_usec: float = 100000.0,
             bulk_every: int | None = None, bulk_rows: int = 100,
             observer: Observer | None = None) -> Iterator[Txn]:
    """Stream `n` transactions of a simulated source, in binlog order, deterministic for `seed`.

    `observer(event, time, attempt_id, *args)`, if given, sees the simulation's lock and commit
    events ("start", "lock", "wait", "grant", "release", "rollback", "flush", "commit"): tests
    use it to check the flags against what happened.
    """
    if n < 0:
        raise ValueError("n must not be negative")
    p = GenParams(workload, clients, tables, table_size, skew, seed, rotate_every, ddl_every, fk,
                  source, exec_us, exec_sigma, commit_us, sync_us, rtt_us, ddl_exec_us,
                  parent_rows, commit_wait_count, commit_wait_usec, bulk_every, bulk_rows)
    return _Source(p, n, observer).run()


def generate_source_header(n: int | None = None, **params) -> dict:
    """The trace header's `source` object for `generate(n, **params)`: provenance."""
    params.pop("observer", None)
    p = GenParams(**params)
    skew = ("uniform" if p.skew == 0 else
            f"Zipf-like: continuous power law, density ∝ rank^-{p.skew}, rank 1 hottest, id = rank")
    head = {
        "server": f"simulated {p.source} source (commitsched.generate)",
        "synthetic": True,
        "generator": "commitsched.generate",
        "generator_version": GENERATOR_VERSION,
        "workload": p.workload,
        "seed": p.seed,
        "parameters": {k: v for k, v in asdict(p).items()
                       if v is not None and not (k == "bulk_rows" and p.bulk_every is None)},
        "time_unit": "us",
        "gtid_style": "mariadb domain-server-seq" if p.source == "mariadb" else "mysql uuid:N",
        "key_choice": skew,
        "exec_distribution": f"lognormal, median {p.exec_median} us, sigma {p.exec_sigma}",
        "model": ("2PL exclusive row locks held to engine commit; deadlock victim = requester, "
                  "retried; DDL runs alone; binlog group commit with one sync per group"),
    }
    if n is not None:
        head["transactions"] = n
    return head


# ------------------------------------------------------------------ bundled examples

EXAMPLES: list[tuple[str, int, dict]] = [
    ("oltp_rw_1client", 500, dict(workload="oltp_read_write", clients=1)),
    ("oltp_rw_8clients", 2000, dict(workload="oltp_read_write", clients=8)),
    ("oltp_rw_64clients", 3000, dict(workload="oltp_read_write", clients=64)),
    ("update_index_48clients", 3000, dict(workload="oltp_update_index", clients=48, skew=0.9)),
    ("insert_25tables_100clients", 3000, dict(workload="oltp_insert", clients=100, tables=25)),
    ("mixed_ddl_fk", 2000, dict(workload="mixed", clients=16, table_size=1000, skew=0.5,
                                rotate_every=600, ddl_every=250, fk=True, source="mariadb")),
    ("bulk_updates_16clients", 2000, dict(workload="oltp_update_index", clients=16,
                                          bulk_every=50, bulk_rows=100, source="mariadb")),
]

HAND_MADE = [
    ("semantics_1_4_logical_clock.jsonl",
     "semantics.md §1.4 worked example: T1(L0,s1) T2(L1,s2) T3(L1,s3) T4(L1,s4) T5(L3,s5) "
     "right after a rotation, with `exec` costs. With 4 workers: T1 is a barrier; T2 waits for "
     "T1; T3, T4 dispatch right after T2; T5 waits until T1..T3 are done (lwm >= 3) while the "
     "long T4 still runs."),
    ("semantics_2_2_writeset.jsonl",
     "semantics.md §2.2 worked example: T1..T6 written by one session (commit-order parents "
     "0,1,2,3,4,5; A, B, C are rows 1, 2, 3 of sbtest1; T5 is DDL). WRITESET must recompute "
     "last_committed 0,1,1,3,4,5."),
    ("semantics_3_5_commit_id.jsonl",
     "semantics.md §3.5 example: MariaDB groups {T1,T2,T3} commit_id 100, {T4,T5} commit_id "
     "200, T6 a singleton (no commit_id). Conservative: T1..T3 start at once, T4,T5 when T1..T3 "
     "reached commit, T6 when T1..T5 did. T4 rewrites T1's row and T6 T5's."),
]


def trace_stats(path: str) -> dict:
    """Counts a person can check: transactions, source groups, waits, DDL, binlog files."""
    _, txns = iter_trace(path)
    n = groups = waited = ddl = 0
    window = 0
    files = set()
    prev_cid = None
    has_cid = False
    for t in txns:
        n += 1
        files.add(t.file)
        if t.commit_id is None or t.commit_id != prev_cid:
            groups += 1
        has_cid = has_cid or t.commit_id is not None
        prev_cid = t.commit_id
        waited += "waited" in t.flags
        ddl += t.ddl
        if t.sequence_number is not None:
            window += t.sequence_number - t.last_committed - 1
    return {"transactions": n, "groups": groups, "mean_group": n / groups if groups else 0.0,
            "has_commit_id": has_cid, "waited": waited, "ddl": ddl, "files": len(files),
            "mean_window": window / n if n else 0.0}


def _call_text(n: int, kw: dict) -> str:
    return "generate(" + ", ".join([str(n)] + [f"{k}={v!r}" for k, v in kw.items()]) + ")"


def regenerate(directory: str, gzip_over: int = 200_000) -> list[str]:
    """Rewrite the generated examples and the README in `directory`, deterministically."""
    written = []
    rows = []
    for name, n, kw in EXAMPLES:
        txns = list(generate(n, **kw))
        size = sum(len(json.dumps(t.to_json(), separators=(",", ":"))) + 1 for t in txns)
        ext = ".jsonl.gz" if size > gzip_over else ".jsonl"
        path = os.path.join(directory, name + ext)
        stale = os.path.join(directory, name + (".jsonl" if ext.endswith(".gz") else ".jsonl.gz"))
        if os.path.exists(stale):
            os.unlink(stale)
        write_trace(path, txns, generate_source_header(n, **kw))
        written.append(path)
        rows.append((name + ext, _call_text(n, kw), trace_stats(path)))
    hand = []
    for fname, what in HAND_MADE:
        path = os.path.join(directory, fname)
        if os.path.exists(path):
            hand.append((fname, what, trace_stats(path)))
    readme = os.path.join(directory, "README.md")
    with open(readme, "w", encoding="utf-8") as fh:
        fh.write(_readme(rows, hand))
    written.append(readme)
    return written


def _group_text(st: dict, generated: bool = False) -> str:
    # A generated trace writes a commit_id for every multi-member group, so none means all
    # singletons; a hand-made MySQL-style trace simply does not record groups.
    if st["has_commit_id"] or generated:
        return f"{st['mean_group']:.2f}"
    return "n/a (no commit_id)"


def _readme(rows: list, hand: list) -> str:
    out = [
        "# Example traces",
        "",
        "Trace format v1 (design §3). Generated files come from `commitsched.generate`, a",
        "simulated source server (2PL row locks, binlog group commit; see the module docstring),",
        "so their `last_committed`/`sequence_number`, `commit_id` and `waited` flags are",
        "consequences of the simulated run. Times are in µs. Rewrite them (deterministically) with",
        "",
        "    python -m commitsched.generate --examples traces/examples",
        "",
        "Defaults of the simulated source (all recorded in each trace's header): execution cost",
        "log-normal with median 1500 µs (oltp_read_write, mixed) or 150 µs (single-statement",
        "workloads), sigma 0.5; one binlog sync per group commit 500 µs; engine commit 20 µs per",
        "transaction; COMMIT sent 50 µs after the last statement of an explicit transaction;",
        "10000 rows per table, keys uniform unless `skew` (Zipf-like) is given; GTIDs MySQL style",
        "(`uuid:N`) unless `source='mariadb'` (`0-1-N`). Every trace carries both the MySQL",
        "(`last_committed`, `sequence_number`) and the MariaDB (`commit_id`, `flags`) annotations.",
        "`mixed` adds a table with a UNIQUE key whose value UPDATEs change (`before_images`), a",
        "table without primary key (`no_pk`), and with `fk=True` a parent table (`fk_parent`",
        "writes) and child inserts that carry the referenced parent key.",
        "",
        "This README is rewritten by the same command: the counts below are measured from the files.",
        "Mean group size = transactions / source binlog group commits (consecutive equal `commit_id`;",
        "a transaction without one is its own group). Mean window = mean of `sequence_number -",
        "last_committed - 1`: how many earlier transactions the source marks as able to overlap.",
        "`waited`, `DDL`: how many transactions carry that flag.",
        "",
        "## Generated",
        "",
        "| file | generator call | transactions | mean group size | mean window | waited | DDL "
        "| binlog files |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fname, call, st in rows:
        out.append(f"| `{fname}` | `{call}` | {st['transactions']} | {_group_text(st, True)} | "
                   f"{st['mean_window']:.2f} | {st['waited']} | {st['ddl']} | {st['files']} |")
    out += ["", "## Hand-made (checkable by hand)", "",
            "| file | what | transactions | mean group size |", "|---|---|---|---|"]
    for fname, what, st in hand:
        out.append(f"| `{fname}` | {what} | {st['transactions']} | {_group_text(st)} |")
    out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m commitsched.generate",
                                 description="Synthetic traces from a simulated source server.")
    ap.add_argument("--examples", metavar="DIR", help="rewrite the bundled examples in DIR")
    ap.add_argument("-n", type=int, default=1000, help="transactions (default 1000)")
    ap.add_argument("-o", "--output", help="trace file to write (.jsonl or .jsonl.gz)")
    ap.add_argument("--workload", default="oltp_read_write", choices=WORKLOADS)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--tables", type=int, default=1)
    ap.add_argument("--table-size", type=int, default=10000)
    ap.add_argument("--skew", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rotate-every", type=int)
    ap.add_argument("--ddl-every", type=int)
    ap.add_argument("--fk", action="store_true")
    ap.add_argument("--source", default="mysql", choices=SOURCES)
    ap.add_argument("--sync-us", type=float, default=500.0)
    ap.add_argument("--commit-wait-count", type=int, default=0)
    ap.add_argument("--commit-wait-usec", type=float, default=100000.0)
    ap.add_argument("--bulk-every", type=int)
    ap.add_argument("--bulk-rows", type=int, default=100)
    args = ap.parse_args(argv)
    if args.examples:
        for path in regenerate(args.examples):
            print(path)
        return 0
    if not args.output:
        ap.error("give -o FILE (or --examples DIR)")
    kw = dict(workload=args.workload, clients=args.clients, tables=args.tables,
              table_size=args.table_size, skew=args.skew, seed=args.seed,
              rotate_every=args.rotate_every, ddl_every=args.ddl_every, fk=args.fk,
              source=args.source, sync_us=args.sync_us,
              commit_wait_count=args.commit_wait_count, commit_wait_usec=args.commit_wait_usec,
              bulk_every=args.bulk_every, bulk_rows=args.bulk_rows)
    try:
        write_trace(args.output, generate(args.n, **kw), generate_source_header(args.n, **kw))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
