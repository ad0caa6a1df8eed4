"""What every applier simulation shares: the per-transaction run record, the group-commit stage,
the causes of waiting, and the errors a simulation can end with.

Times are in the profile's unit (microseconds). Each applier is a discrete-event simulation with
one heap of events; a transaction's record is handed to a sink as soon as it commits, so memory
is bounded by what is in flight, not by the trace.
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Callable

# Why something waited (design §5). The coordinator/driver causes are time the one dispatching
# thread spent blocked; the per-transaction causes are summed over transactions.
COORDINATOR_CAUSES = ("dependency", "barrier", "window_full", "no_free_worker")
TXN_CAUSES = ("gco_wait", "prior_commit_wait", "lock_wait", "commit_order", "sync_wait", "retry")
CAUSES = COORDINATOR_CAUSES + TXN_CAUSES


# An optional observer of a simulation's schedule (the appliers' `log=`): called as
# log(event, seq, time, arg) for the events of docs/names.md: "dispatch" (arg: the worker,
# numbered from 1), "start", "exec_end", "commit", "kill" (arg: the seq whose lock request
# killed it; logged before that transaction's own "start"/"retry"), "retry" (a killed
# transaction executes again). Calls come in processing order, but `time` may lie ahead of
# the simulator's clock (MySQL start) or behind it (exec_end): order by (time, call order).
EventLog = Callable[[str, int, float, "int | None"], None]


class SimulationError(Exception):
    pass


class Deadlock(SimulationError):
    """`NoDeadlock` violated: work remains and no event can ever fire again."""


class TxnRun:
    """One transaction's life on the replica (the schedule row of docs/names.md)."""

    __slots__ = ("seq", "txn", "dep", "worker", "dispatch", "start", "exec_end", "ready",
                 "commit", "retries", "wasted", "exec", "commit_cost", "attempt", "phase",
                 "gco_wait", "spec_wait", "marked", "wait_since", "wait_cause", "done",
                 "sync_cost", "arrival")

    def __init__(self, txn, dep, exec_cost: float, commit_cost: float, arrival: float = 0.0):
        self.seq = txn.seq
        # when it reaches the replica's relay log (an open replay, model/replay.py); the
        # coordinator / driver cannot read it before. 0: a closed backlog, all there at once.
        self.arrival = arrival
        self.txn = txn
        self.dep = dep
        self.exec = exec_cost
        self.commit_cost = commit_cost
        self.worker = -1
        self.dispatch = self.start = self.exec_end = self.ready = self.commit = None
        self.retries = 0
        self.wasted = 0.0
        self.attempt = 0
        self.phase = 0
        self.gco_wait = 0
        self.spec_wait = False
        self.marked = False
        self.wait_since = 0.0
        self.wait_cause = None
        self.done = False
        self.sync_cost = 0.0

    def to_json(self) -> dict:
        """The schedule row: worker numbered from 1 as performance_schema shows it."""
        out = {"seq": self.seq, "worker": self.worker + 1, "dispatch": self.dispatch,
               "start": self.start, "exec_end": self.exec_end, "commit": self.commit,
               "retries": self.retries}
        if self.txn.gtid is not None:
            out["gtid"] = self.txn.gtid
        return out


# How many writes the device's rate limit lets through at once (`WriteBucket`'s size) is what it
# allows in this long: cgroup v1's blkio throttle deals a group its allowance in 100 ms slices
# (block/blk-throttle.c, `throtl_slice`), and a host's limiter likewise lets such bursts through.
THROTTLE_SLICE_S = 0.1


class WriteBucket:
    """The device's write rate limit (the profile's `disk_write_iops`): a token bucket refilled at
    `iops` writes a second, holding at most what one throttle slice allows (at least one
    write), full at the start. A write takes a token when it is issued; with none left it
    waits for the next, and the writes issued after it wait behind it (first come, first
    served). A rate limit binds only where the demand exceeds it: below the rate no write waits.

    Times in µs; the same arithmetic in the same order as the Rust core's (simcore_rs core.rs)."""

    __slots__ = ("interval", "capacity", "tokens", "at")

    def __init__(self, iops: float):
        self.interval = 1e6 / iops                       # µs per token
        self.capacity = max(1.0, iops * THROTTLE_SLICE_S)
        self.tokens = self.capacity
        self.at = 0.0                                    # when `tokens` was counted

    def take(self, now: float) -> float:
        """A write issued at `now`: when it gets its token and goes to the device."""
        t = now if now >= self.at else self.at
        tokens = self.tokens + (t - self.at) / self.interval
        if tokens > self.capacity:
            tokens = self.capacity
        if tokens < 1.0:
            t += (1.0 - tokens) * self.interval
            tokens = 1.0
        self.tokens = tokens - 1.0
        self.at = t
        return t


class Disk:
    """The device the binlog and the redo log flush to, when they share one (`shared_disk`): one
    flush at a time. On ext4 every fsync commits the filesystem's journal, and jbd2 commits one
    transaction at a time, so the binlog's group sync and InnoDB's redo flush queue behind each
    other once a parallel replica issues them concurrently (the serial replay never overlaps
    them, so its fit is unchanged).

    `hold` (the profile's `disk_hold`, µs): how much of each flush, from its start, keeps the
    next one waiting; the rest of it (the device writing while another request is queued)
    overlaps the next flush. None: the whole flush, one after the other.

    `share` (the profile's `disk_hold_share`, 0-1): the hold as that share of each flush
    instead; it takes the place of `hold` when given.

    `shared=False`: the flushes do not queue behind each other (no `shared_disk`), only behind
    the `bucket` (the profile's `disk_write_iops`), which every flush passes first."""

    __slots__ = ("free_at", "hold", "share", "shared", "bucket")

    def __init__(self, hold: "float | None" = None, *, share: "float | None" = None,
                 shared: bool = True, bucket: "WriteBucket | None" = None):
        self.free_at = 0.0
        self.hold = hold
        self.share = share
        self.shared = shared
        self.bucket = bucket

    def flush(self, now: float, duration: float) -> float:
        """Reserve the device from `now` (or its token) or when it frees, for `hold` of the
        flush (all of it when None or longer); the flush's end."""
        if self.bucket is not None:
            now = self.bucket.take(now)
        if not self.shared:
            return now + duration
        start = now if now >= self.free_at else self.free_at
        hold = self.hold if self.share is None else self.share * duration
        if hold is None or hold >= duration:
            self.free_at = start + duration
            return self.free_at
        self.free_at = start + hold
        return start + duration


def device(profile) -> "Disk | None":
    """The device a MariaDB replica's flushes go to: shared (`shared_disk`), rate-limited
    (`disk_write_iops`), both, or None (each flush a plain delay)."""
    iops = profile.disk_write_iops
    if not profile.shared_disk and iops is None:
        return None
    return Disk(profile.disk_hold, share=profile.disk_hold_share, shared=profile.shared_disk,
                bucket=WriteBucket(iops) if iops is not None else None)


def _flush_end(disk: "Disk | None", now: float, duration: float) -> float:
    return now + duration if disk is None or duration <= 0 else disk.flush(now, duration)


class CommitStage:
    """Binlog group commit: transactions ready to commit are made durable together, one sync
    per group (MySQL `ordered_commit`, MariaDB `queue_for_group_commit`, semantics §1.7, §3.8).

    Ordered: a transaction joins a group only when every earlier one is committed or in the same
    group. Whoever becomes ready while a sync runs waits for the next group (leader/follower).
    """

    __slots__ = ("sync", "ordered", "busy", "waiting", "next_seq", "heap", "counter", "pending",
                 "sync_cpu", "cpus", "member_cpu", "member_cost", "wakeup", "disk")

    # Event kinds, shared with the appliers' event loops.
    SYNC_END = 2
    GROUP_START = 4
    SYNC_CPU = 5

    def __init__(self, sync: float, ordered: bool, heap: list, counter, *,
                 sync_cpu: float = 0.0, cpus: "CpuPool | None" = None, member_cpu: float = 0.0,
                 member_cost: "Callable | None" = None, wakeup: float = 0.0,
                 disk: "Disk | None" = None):
        self.sync = sync
        self.ordered = ordered
        self.busy = False
        self.waiting: dict[int, TxnRun] = {}
        self.next_seq = None  # ordered: the lowest seq not yet committed
        self.heap = heap
        self.counter = counter
        self.pending = False
        # The part of a sync the leader's thread spends on a CPU core (the fsync path of a VM
        # costs CPU, docs/calibration.md); only with cores modelled.
        self.sync_cpu = min(sync_cpu, sync) if cpus is not None else 0.0
        self.cpus = cpus
        # CPU the leader spends on each member, one after the other, before the sync (MariaDB's
        # trx_group_commit_leader writes every member's binlog events and commits it in order);
        # a plain delay without cores
        self.member_cpu = member_cpu
        # per member when it depends on the transaction (profile.member_cost: bytes written)
        self.member_cost = member_cost
        # the next group's leader is a waiting thread that must be woken when this group ends
        # (MariaDB wakes it after the sync; MySQL's commit-order queue signals the next worker)
        self.wakeup = wakeup
        self.disk = disk

    def add(self, run: TxnRun, now: float) -> None:
        """`run` is ready to commit. The group forms after every event of this instant, so
        transactions ready at the same moment share one sync."""
        self.waiting[run.seq] = run
        if not self.busy and not self.pending:
            heap = self.heap
            if heap and heap[0][0] <= now:
                # More events at this instant: form the group after them.
                self.pending = True
                heapq.heappush(heap, (now, next(self.counter), self.GROUP_START, None))
            else:
                self._start_group(now)

    def group_start(self, now: float) -> None:
        self.pending = False
        if not self.busy:
            self._start_group(now)

    def withdraw(self, run: TxnRun) -> None:
        """A killed transaction leaves the queue before its group formed."""
        self.waiting.pop(run.seq, None)

    def group_done(self, batch: list[TxnRun], now: float) -> None:
        """Called at the end of a group's sync, after its members are marked committed."""
        self.busy = False
        if self.ordered:
            self.next_seq = batch[-1].seq + 1
        if self.wakeup > 0 and self.waiting:
            # whoever queued meanwhile leads the next group once woken; later arrivals join it
            self.pending = True
            heapq.heappush(self.heap, (now + self.wakeup, next(self.counter), self.GROUP_START, None))
            return
        self._start_group(now)

    def _start_group(self, now: float) -> None:
        waiting = self.waiting
        if not waiting:
            return
        if self.ordered:
            seq = self.next_seq
            batch = []
            while seq in waiting:
                batch.append(waiting.pop(seq))
                seq += 1
            if not batch:
                return
        else:
            batch = [waiting[s] for s in sorted(waiting)]
            waiting.clear()
        self.busy = True
        member_cost = self.member_cost
        members = (self.member_cpu * len(batch) if member_cost is None
                   else sum(member_cost(r.txn) for r in batch))
        if self.cpus is not None and self.sync_cpu + members > 0:
            task = CpuTask()
            self.cpus.execute(task, now, self.sync_cpu + members, self.SYNC_CPU, (task, batch))
        else:
            heapq.heappush(self.heap, (_flush_end(self.disk, now + members, self.sync),
                                       next(self.counter), self.SYNC_END, batch))

    def sync_cpu_done(self, payload, now: float) -> None:
        """The leader's CPU part ended: it leaves its core and waits for the disk."""
        task, batch = payload
        self.cpus.release(task, now)
        heapq.heappush(self.heap, (_flush_end(self.disk, now, self.sync - self.sync_cpu),
                                   next(self.counter), self.SYNC_END, batch))


class CommitChain:
    """One-phase commit in order, without the replica's own binlog (MariaDB with
    `log_slave_updates=OFF`, `log_replica_updates` in docs/names.md): a transaction waits for its
    predecessor's commit (`ha_commit_one_phase` -> `wait_for_prior_commit`), runs InnoDB's
    in-order commit (`member_cost`, on a core when cores are modelled), then wakes its successor
    (`innobase_commit` calls `thd_wakeup_subsequent_commits` before its redo-log flush). No group
    and no leader: a successor already waiting runs `wakeup` later, one that becomes ready after
    its turn came goes on at once. Time spent waiting for the turn counts as `commit_order`.
    Fires DONE with `(task, run, attempt)` when a member's in-order commit ends."""

    __slots__ = ("member_cost", "wakeup", "heap", "counter", "cpus", "blocked", "next_seq",
                 "busy", "waiting")

    START = 11
    DONE = 12

    def __init__(self, member_cost: "Callable", wakeup: float, heap: list, counter,
                 cpus: "CpuPool | None", blocked: dict):
        self.member_cost, self.wakeup, self.heap, self.counter = member_cost, wakeup, heap, counter
        self.cpus, self.blocked = cpus, blocked
        self.next_seq = None
        self.busy = False                    # a member's in-order commit runs, or it is woken
        self.waiting: dict[int, TxnRun] = {}

    def add(self, run: TxnRun, now: float) -> None:
        """`run` finished executing and asks for its commit turn."""
        self.waiting[run.seq] = run
        if not self.busy and run.seq == self.next_seq:
            self._begin(run, now)

    def withdraw(self, run: TxnRun) -> None:
        """A killed transaction leaves the queue (it is never the one whose turn it is: only an
        earlier transaction kills, and every earlier one has committed by then)."""
        self.waiting.pop(run.seq, None)

    def start(self, payload, now: float) -> None:
        """The woken successor runs its in-order commit."""
        run, attempt = payload
        if attempt == run.attempt and self.waiting.get(run.seq) is run:
            self._begin(run, now)
        else:                                # killed meanwhile: whoever comes next goes on
            self.busy = False

    def done(self, payload, now: float) -> TxnRun | None:
        """A member's in-order commit ended: its successor's turn. Returns the member (None if
        it was killed meanwhile: cannot happen, see `withdraw`)."""
        task, run, attempt = payload
        if task is not None:
            self.cpus.release(task, now)
        self.busy = False
        self.next_seq = run.seq + 1
        successor = self.waiting.get(self.next_seq)
        if successor is not None:
            self.busy = True
            if self.wakeup > 0:
                heapq.heappush(self.heap, (now + self.wakeup, next(self.counter), self.START,
                                           (successor, successor.attempt)))
            else:
                self._begin(successor, now)
        return run if attempt == run.attempt else None

    def _begin(self, run: TxnRun, now: float) -> None:
        del self.waiting[run.seq]
        self.busy = True
        if now - run.ready > 1e-9:
            self.blocked["commit_order"] += now - run.ready
        cost = self.member_cost(run.txn)
        if self.cpus is not None and cost > 0:
            task = CpuTask()
            self.cpus.execute(task, now, cost, self.DONE, (task, run, run.attempt))
        else:
            heapq.heappush(self.heap, (now + cost, next(self.counter), self.DONE,
                                       (None, run, run.attempt)))


class LogFlush:
    """The commit step's own sync (InnoDB's redo-log flush at prepare, semantics §3.8) as a
    resource rather than a private delay: a flush takes `run.commit_cost` (the longest in the
    batch), `cpu` of it on the requesting thread's core (with cores modelled); with `grouped`,
    one flush runs at a time and covers every request queued when it starts (InnoDB's log group
    commit: `log_write_up_to` waiters share one fsync); without, every request flushes alone
    and at once, which is the plain per-transaction delay.
    Fires `kind` with `(run, attempt)` for each covered request when its flush ends."""

    __slots__ = ("grouped", "cpu", "cpus", "heap", "counter", "kind", "busy", "waiting", "disk")

    FLUSH_CPU = 6
    FLUSH_END = 7

    def __init__(self, grouped: bool, cpu: float, cpus: "CpuPool | None", heap: list, counter,
                 kind: int, disk: "Disk | None" = None):
        self.grouped, self.cpus, self.heap, self.counter, self.kind = (
            grouped, cpus, heap, counter, kind)
        self.disk = disk
        self.cpu = cpu if cpus is not None else 0.0
        self.busy = False
        self.waiting: list[tuple[TxnRun, int]] = []

    def request(self, run: TxnRun, now: float) -> None:
        if not self.grouped:
            self._flush([(run, run.attempt)], now)
        else:
            self.waiting.append((run, run.attempt))
            if not self.busy:
                self._next(now)

    def _next(self, now: float) -> None:
        if self.waiting:
            batch, self.waiting = self.waiting, []
            self.busy = True
            self._flush(batch, now)

    def _flush(self, batch: list, now: float) -> None:
        cost = max(r.commit_cost for r, _ in batch)
        cpu = min(self.cpu, cost)
        if cpu > 0:
            task = CpuTask()
            self.cpus.execute(task, now, cpu, self.FLUSH_CPU, (task, batch, cost - cpu))
        else:
            heapq.heappush(self.heap, (_flush_end(self.disk, now, cost), next(self.counter),
                                       self.FLUSH_END, batch))

    def cpu_done(self, payload, now: float) -> None:
        task, batch, rest = payload
        self.cpus.release(task, now)
        heapq.heappush(self.heap, (_flush_end(self.disk, now, rest), next(self.counter),
                                   self.FLUSH_END, batch))

    def flush_end(self, batch: list, now: float) -> None:
        for entry in batch:
            heapq.heappush(self.heap, (now, next(self.counter), self.kind, entry))
        if self.grouped:
            self.busy = False
            self._next(now)


def account_commit_wait(run: TxnRun, sync: float, ordered: bool, blocked: dict) -> None:
    """Time between ready and commit beyond the group's own sync: waiting for the commit turn
    (ordered) or for the sync in progress to finish (unordered)."""
    wait = run.commit - run.ready - sync
    if wait > 1e-9:
        blocked["commit_order" if ordered else "sync_wait"] += wait


class CpuTask:
    """CPU work that is not a transaction's execution (a sync's CPU part, the driver's
    dispatch): it holds a core under its own identity, so a transaction killed meanwhile
    cannot release it by mistake."""
    __slots__ = ()


class CpuPool:
    """The replica's CPU cores (a profile's `cores`): executing a transaction needs a core;
    waiting for a dependency, a lock, a commit turn or a sync does not. `cores=None`: a core
    per worker (no contention).

    Work that finds every core busy waits for one. With one shared queue (`per_core=False`) the
    next core to free takes the oldest waiter. With `per_core=True` (a profile's
    `per_core_queues`: Linux) each core has its own run queue: a waiter joins the queue of the
    core that acted last (the thread that woke it runs there), and a core that frees takes only
    from its own queue and otherwise idles, even while another core's queue holds threads. Linux
    does that for threads that ran within the last half millisecond: its idle balancing leaves
    such "cache-hot" threads where they are (kernel/sched/fair.c, `task_hot`,
    `sysctl_sched_migration_cost`), and a replica's threads run every few microseconds. Idle
    cores are taken only by new work, never by a waiter (docs/model.md, "Per-core run queues";
    checked against a synthetic commit chain on the 2-core VM: docs/calibration.md)."""

    __slots__ = ("free", "queue", "heap", "counter", "holders", "per_core", "idle", "queues",
                 "last")

    def __init__(self, cores: int, heap: list, counter, per_core: bool = False):
        self.free = cores
        self.queue: deque = deque()
        self.heap = heap
        self.counter = counter
        self.holders: dict = {}       # who holds a core (runs, or a CpuTask) -> which (per_core)
        self.per_core = per_core
        self.idle = list(range(cores)) if per_core else []    # per_core: the idle cores
        self.queues = [deque() for _ in range(cores)] if per_core else []
        self.last = 0                            # per_core: the core that acted last

    def execute(self, run, now: float, duration: float, kind: int, payload) -> None:
        """Run `duration` of CPU work for `run`, then fire event `kind` with `payload`."""
        if self.per_core:
            idle = self.idle
            if idle:
                core = self.last if self.last in idle else idle[0]
                idle.remove(core)
                self._start(core, run, now, duration, kind, payload)
            else:
                self.queues[self.last].append((run, duration, kind, payload))
            return
        if self.free > 0:
            self.free -= 1
            self.holders[run] = 0
            heapq.heappush(self.heap, (now + duration, next(self.counter), kind, payload))
        else:
            self.queue.append((run, duration, kind, payload))

    def _start(self, core: int, run, now: float, duration: float, kind: int, payload) -> None:
        self.holders[run] = core
        self.last = core
        heapq.heappush(self.heap, (now + duration, next(self.counter), kind, payload))

    def release(self, run, now: float) -> None:
        """`run` leaves its core (its CPU work ended, or it was killed)."""
        core = self.holders.pop(run, None)
        if core is None:
            for queue in (self.queues if self.per_core else (self.queue,)):
                for i, entry in enumerate(queue):   # killed while queued for a core
                    if entry[0] is run:
                        del queue[i]
                        return
            return
        if self.per_core:
            self.last = core
            queue = self.queues[core]
            if queue:
                nxt, duration, kind, payload = queue.popleft()
                self._start(core, nxt, now, duration, kind, payload)
            else:
                self.idle.append(core)
            return
        if self.queue:
            nxt, duration, kind, payload = self.queue.popleft()
            self.holders[nxt] = 0
            heapq.heappush(self.heap, (now + duration, next(self.counter), kind, payload))
        else:
            self.free += 1


# When a transaction reaches the replica (its relay log), by seq, in the profile's unit: an open
# replay's arrivals (model/replay.py). None: a closed backlog, every transaction there at 0.
Arrival = Callable[[int], float]


def new_runs(stream, profile, workers: int | None = None, arrival: Arrival | None = None):
    """The tracker's `(txn, dep)` stream as run records carrying the profile's costs; with
    `workers`, a parallel applier's (`Profile.parallel_exec`: coordination on top, the
    group-commit leader's part moved out); with `arrival`, each run's arrival time."""
    exec_cost, commit_cost = profile.exec_cost, profile.commit_cost
    if workers is None:
        for txn, dep in stream:
            yield TxnRun(txn, dep, exec_cost(txn), commit_cost(txn),
                         arrival(txn.seq) if arrival is not None else 0.0)
        return
    parallel_exec = profile.parallel_exec
    if arrival is None:
        for txn, dep in stream:
            yield TxnRun(txn, dep, parallel_exec(txn, exec_cost(txn), workers), commit_cost(txn))
        return
    for txn, dep in stream:
        yield TxnRun(txn, dep, parallel_exec(txn, exec_cost(txn), workers), commit_cost(txn),
                     arrival(txn.seq))


def start_work(run: TxnRun, now: float, cpus: CpuPool | None, heap: list, counter,
               kind: int) -> None:
    """`run` starts: its execution and its own commit step run on its worker (on a core when
    cores are modelled); event `kind` fires when it is ready to commit (then `work_done`)."""
    run.start = now
    if cpus is None:
        run.exec_end = now + run.exec
        run.ready = run.exec_end + run.commit_cost
        heapq.heappush(heap, (run.ready, next(counter), kind, run))
    else:
        cpus.execute(run, now, run.exec + run.commit_cost, kind, run)


def work_done(run: TxnRun, now: float, cpus: CpuPool | None) -> None:
    """The event of `start_work` fired: with cores modelled, the times are known only now."""
    if cpus is not None:
        cpus.release(run, now)
        run.ready = now
        run.exec_end = now - run.commit_cost
