"""The MySQL replica applier (design §5 `mysql`; semantics.md §1.4–§1.7): LOGICAL_CLOCK, and the
5.6 DATABASE submode.

LOGICAL_CLOCK, as `Mts_submode_logical_clock::schedule_next_event` does it:
- one coordinator dispatches in relay-log order; while it waits nothing behind is dispatched;
- it waits while the GAQ holds `checkpoint_group` outstanding transactions (`window_full`);
- a barrier (first transaction, new binlog file, `last_committed = 0`, a sequence gap,
  inconsistent timestamps) waits until every dispatched transaction committed (`barrier`);
- otherwise it waits while `lwm < last_committed` (`dependency`), lwm being the
  sequence_number at the end of the longest committed prefix of the GAQ;
- then it takes the lowest-index idle worker (`no_free_worker`); a worker is busy until its
  transaction commits;
- with `preserve_commit_order` commits happen in source order, in groups sharing one sync.
Row locks on `writes` are not modelled: the scheduler promises that what overlaps does not
conflict, and the property checks (`NoConflictingOverlap`, `SerialEquivalence`) say whether it
kept its promise. Locks the source never took (a transaction's `replica_locks`, §1.8: gap locks,
another plan) are: a transaction takes them at its last statement (when it becomes ready) and
holds them, with its `writes`, to its commit. Waiting for an earlier holder is a lock wait; with
preserve-commit-order a later holder would wait for us to commit, so it is the victim
(`rules.replica_lock_conflict`): it rolls back, keeps its worker and its place in the commit
order, and re-executes after `profile.retry` (`Slave_worker::retry_transaction`).
`replica_transaction_retries` is not modelled: a victim retries as often as it is chosen.
"""
from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Callable, Iterable

from .profiles import Profile
from .simcore import (CAUSES, Arrival, CommitStage, CpuPool, Deadlock, EventLog,
                      SimulationError, TxnRun, account_commit_wait, new_runs, start_work, work_done)
from .rules import LowWaterMark, coordinator_wait, lowest_idle_worker, replica_lock_conflict
from .trackers import ClockOrder

READY, RESUME = 1, 10              # distinct from CommitStage's event kinds
NOT_STARTED, EXECUTING, HOLDS_ALL = 0, 1, 2    # TxnRun.phase in this applier
SYNC_END, GROUP_START, SYNC_CPU = (CommitStage.SYNC_END, CommitStage.GROUP_START,
                                   CommitStage.SYNC_CPU)

def _member_cost(profile: Profile):
    """The flush-stage leader's serial work per member (by analogy with MariaDB's measured one:
    no MySQL replica has been measured), or None when the profile has none."""
    return profile.member_cost if profile.commit_serial or profile.commit_byte else None


MYSQL_BUGS = frozenset({"lwm_off_by_one", "lwm_not_prefix", "rotation_ignored",
                        "commit_order_unenforced", "victim_wakeup_lost", "ticket_overflow"})
TICKET_WRAP = 1 << 31          # the commit-order sequence number is 32 bits (Bug #103636)


def simulate_logical_clock(stream: Iterable[tuple], workers: int, profile: Profile,
                           sink: Callable[[TxnRun], None], *, preserve_commit_order: bool = True,
                           checkpoint_group: int = 512,
                           bugs: frozenset[str] = frozenset(),
                           ticket_wrap: int = TICKET_WRAP,
                           log: EventLog | None = None,
                           arrival: Arrival | None = None) -> dict[str, float]:
    """Simulate `stream` of `(txn, (last_committed, sequence_number, file))`; call `sink` with
    each committed run; return the time blocked by cause. `log` (optional) hears every
    schedule event (simcore.EventLog); `arrival` (optional) when each transaction reaches the
    relay log (the coordinator waits for it). `ticket_wrap`: where the commit-order ticket wraps,
    which matters only with bug ticket_overflow (the transaction whose seq is a multiple of
    it, if it waits for its turn, is never granted it)."""
    if ticket_wrap < 1:
        raise SimulationError("ticket_wrap must be at least 1")
    if workers < 1:
        raise SimulationError("workers must be at least 1")
    off_by_one = "lwm_off_by_one" in bugs
    not_prefix = "lwm_not_prefix" in bugs
    rotation_ignored = "rotation_ignored" in bugs
    ordered = preserve_commit_order and "commit_order_unenforced" not in bugs
    wakeup_lost = "victim_wakeup_lost" in bugs
    ticket_overflow = ordered and "ticket_overflow" in bugs
    asleep: set[int] = set()             # ticket_overflow: seqs whose turn is never granted

    heap: list = []
    counter = itertools.count()
    pop = heapq.heappop
    sync = profile.group_sync
    dispatch_cost = profile.dispatch_cost
    free = list(range(workers))          # a heap: the lowest index idle worker first
    gaq: deque[TxnRun] = deque()         # dispatched, not yet released from the head
    cpus = CpuPool(profile.cores, heap, counter, profile.per_core_queues) if profile.cores else None
    stage = CommitStage(profile.group_sync, ordered, heap, counter, sync_cpu=profile.sync_cpu,
                        cpus=cpus, member_cost=_member_cost(profile), wakeup=profile.wakeup)
    blocked = dict.fromkeys(CAUSES, 0.0)

    lwm = LowWaterMark(not_prefix=not_prefix, rotation_ignored=rotation_ignored)
    coord_t = 0.0
    cause = None                          # why the coordinator is blocked, or None
    since = 0.0
    runs = new_runs(stream, profile, workers, arrival)
    clock = ClockOrder(rotation_ignored=rotation_ignored)
    nxt = None                            # the next run to dispatch, with its barrier decision
    nxt_barrier = False
    committed = dispatched = 0
    push = heapq.heappush
    retry_cost = profile.retry
    xlocks: dict[str, TxnRun] = {}       # replica_locks key -> the ready transaction holding it
    lock_waiters: dict[int, list] = {}   # holder seq -> [(run, attempt)] waiting for its commit
    waiting_for: dict[int, list] = {}    # seq -> the holders its parked lock request waits for

    def launch(run: TxnRun, now: float) -> None:
        """`simcore.start_work`, its event tagged with the attempt (a victim's is stale)."""
        run.start = now
        if cpus is None:
            run.exec_end = now + run.exec
            run.ready = run.exec_end + run.commit_cost
            push(heap, (run.ready, next(counter), READY, (run, run.attempt)))
        else:
            cpus.execute(run, now, run.exec + run.commit_cost, READY, (run, run.attempt))

    def holders(run: TxnRun, keys, with_writes: bool) -> list[TxnRun]:
        """The other transactions holding a lock on `keys` (replica_locks; and writes when
        `with_writes`: a replica lock against a row another transaction wrote)."""
        found = {xlocks[k] for k in keys if k in xlocks}
        if with_writes:          # the started, uncommitted ones hold their writes' locks
            keys = set(keys)
            found.update(r for r in gaq if r.phase != NOT_STARTED and not r.done
                         and not keys.isdisjoint(r.txn.writes))
        found.discard(run)
        return sorted(found, key=lambda r: r.seq)

    def acquire(run: TxnRun, found: list[TxnRun], now: float) -> bool:
        """Kill the later holders and go on, or park until the holders to wait for commit.
        A wait that closes a cycle of lock waits is a deadlock InnoDB sees (only possible
        without commit order: with it every lock wait is for an earlier transaction): the
        latest transaction of the cycle is rolled back and retries (a temporary error)."""
        waits = [h for h in found
                 if replica_lock_conflict(h.seq, run.seq, ordered, h.phase == HOLDS_ALL,
                                          wakeup_lost=wakeup_lost) == "wait"]
        if waits:
            for h in waits:
                lock_waiters.setdefault(h.seq, []).append((run, run.attempt))
            waiting_for[run.seq] = waits
            run.wait_cause, run.wait_since = "lock_wait", now
            cycle = _cycle(run, waiting_for)
            if cycle:
                victim = max(cycle, key=lambda r: r.seq)
                kill(victim, now, run)
                if log is not None:
                    for k in pending_kills:
                        log("kill", *k)
                    pending_kills.clear()
            return False
        waiting_for.pop(run.seq, None)
        if run.wait_cause is not None:
            blocked[run.wait_cause] += now - run.wait_since
            run.wait_cause = None
        for h in found:
            kill(h, now, run)
        return True

    def start(run: TxnRun, now: float) -> None:
        """Start(t), again for a victim's retry: the rows it writes must not be replica-locked by another."""
        if xlocks and not acquire(run, holders(run, run.txn.writes, False), now):
            return
        run.phase = EXECUTING
        launch(run, now)
        if log is not None:
            log("start", run.seq, now, None)
        for h in pending_kills:
            log("kill", *h)
        pending_kills.clear()

    def ready(run: TxnRun, now: float) -> None:
        """ExecEnd(t): its last statement takes its replica_locks; then it waits for its commit turn."""
        xl = run.txn.replica_locks
        if xl:
            if not acquire(run, holders(run, xl, True), now):
                return
            for k in xl:
                xlocks[k] = run
        run.phase = HOLDS_ALL
        if log is not None:
            log("exec_end", run.seq, now, None)
            for h in pending_kills:
                log("kill", *h)
            pending_kills.clear()
        if ticket_overflow and run.seq % ticket_wrap == 0 and stage.next_seq != run.seq:
            # Bug #103636: it waits for its turn, and the grant (finish_one) is lost
            asleep.add(run.seq)
            return
        stage.add(run, now)

    pending_kills: list = []             # logged after the killer's own event (one spec step)

    def release(run: TxnRun, now: float) -> None:
        for k in run.txn.replica_locks:
            if xlocks.get(k) is run:
                del xlocks[k]
        if lock_waiters:
            for waiter in lock_waiters.pop(run.seq, ()):
                push(heap, (now, next(counter), RESUME, waiter))

    def kill(victim: TxnRun, now: float, by: TxnRun) -> None:
        """The later holder rolls back; it keeps its worker and its place in the commit
        order and retries (MY80 `Slave_worker::retry_transaction`)."""
        if log is not None:
            pending_kills.append((victim.seq, now, by.seq))
        victim.retries += 1
        victim.wasted += now - victim.start
        blocked["retry"] += now - victim.start + retry_cost
        victim.attempt += 1                      # its pending events become stale
        if cpus is not None and victim.phase == EXECUTING:
            cpus.release(victim, now)
        stage.withdraw(victim)
        asleep.discard(victim.seq)               # a victim's wait is ended (VICTIM status)
        victim.phase = NOT_STARTED
        victim.start = victim.exec_end = victim.ready = None
        if victim.wait_cause is not None:        # rolled back while parked on a lock
            blocked[victim.wait_cause] += now - victim.wait_since
            victim.wait_cause = None
        waiting_for.pop(victim.seq, None)
        release(victim, now)
        push(heap, (now + retry_cost, next(counter), RESUME, (victim, victim.attempt)))

    def advance():
        """The next run, and whether it is a barrier (first event, rotation: start_new_group(),
        lc = 0, a gap, inconsistent timestamps: `trackers.ClockOrder`)."""
        nonlocal nxt, nxt_barrier
        nxt = next(runs, None)
        if nxt is not None:
            point = clock.push(nxt.dep)
            nxt_barrier = point.barrier_from == point.index
            if stage.next_seq is None:
                stage.next_seq = nxt.seq

    def why_blocked():
        return coordinator_wait(len(gaq), checkpoint_group, nxt_barrier, nxt.dep[0], lwm.value,
                                bool(free), off_by_one=off_by_one)

    # The handlers of the event kinds, named as the specs' actions (docs/names.md) and as the
    # compiled core's (model/simcore_rs/src/mysql.rs): dispatch, start, exec_end (`ready`: its
    # last statement's locks, then the commit queue), commit; kill and a victim's retry above.
    def dispatch(run: TxnRun) -> None:
        """Dispatch(t, w): the coordinator hands `run` to the lowest idle worker."""
        nonlocal coord_t, dispatched
        if nxt_barrier:
            lwm.barrier_dispatched()
        run.worker = lowest_idle_worker(free)
        run.dispatch = coord_t
        coord_t += dispatch_cost(run.txn, workers)
        if log is not None:
            log("dispatch", run.seq, run.dispatch, run.worker + 1)
        start(run, coord_t)
        gaq.append(run)
        dispatched += 1
        advance()

    def exec_end(run: TxnRun, attempt: int, t: float) -> None:
        """The work `start` launched ended (a victim's stale end is ignored)."""
        if attempt == run.attempt:
            work_done(run, t, cpus)
            ready(run, t)

    def commit(batch: list[TxnRun], t: float) -> None:
        """Commit(t): a group's sync ended; the GAQ's committed head is released."""
        nonlocal committed
        for run in batch:
            run.commit = t
            run.done = True
            account_commit_wait(run, sync, ordered, blocked)
            heapq.heappush(free, run.worker)
            release(run, t)
            committed += 1
            lwm.committed(run.dep[1])
            if log is not None:
                log("commit", run.seq, t, None)
            sink(run)
        while gaq and gaq[0].done:
            lwm.released(gaq.popleft().dep[1])
        stage.group_done(batch, t)

    advance()
    while True:
        # the next transaction can be read once it is in the relay log (arrival) and nothing
        # earlier is left to happen
        if nxt is not None and cause is None and (
                not heap or heap[0][0] > (coord_t if coord_t >= nxt.arrival else nxt.arrival)):
            if nxt.arrival > coord_t:
                coord_t = nxt.arrival
            cause = why_blocked()
            if cause is not None:
                since = coord_t
                continue
            dispatch(nxt)
            continue
        if not heap:
            if asleep:
                raise Deadlock(f"seq {', '.join(map(str, sorted(asleep)))} waits for its commit "
                               f"turn, never granted (its commit-order ticket wrapped)")
            if waiting_for:
                raise Deadlock("lock waits never granted: " + "; ".join(
                    f"seq {w} waits for a row lock held by seq "
                    f"{', '.join(str(h.seq) for h in hs)}" for w, hs in sorted(waiting_for.items()))
                    + " (a later holder waiting for its commit turn was not woken)"
                    * wakeup_lost)
            if nxt is not None:
                raise Deadlock(f"coordinator blocked ({cause}) before seq {nxt.seq} with nothing "
                               f"in flight")
            break
        t, _, kind, payload = pop(heap)
        if kind == READY:
            exec_end(*payload, t)
        elif kind == RESUME:
            run, attempt = payload
            # a lock wake-up for a request still parked, or a victim's retry
            if attempt == run.attempt and (waiting_for.pop(run.seq, None) is not None
                                           or run.start is None and run.wait_cause is None):
                if run.phase == NOT_STARTED:
                    start(run, t)
                else:
                    ready(run, t)
        elif kind == GROUP_START:
            stage.group_start(t)
        elif kind == SYNC_CPU:
            stage.sync_cpu_done(payload, t)
        else:  # SYNC_END: the group is durable
            commit(payload, t)
        if cause is not None:
            now_cause = why_blocked()
            if now_cause != cause:
                blocked[cause] += t - since
                since = t
                cause = now_cause
                if cause is None:
                    coord_t = max(coord_t, t)
    if committed != dispatched:
        raise Deadlock(f"{dispatched - committed} dispatched transactions never committed")
    return blocked


def _cycle(run: TxnRun, waiting_for: dict[int, list]) -> list[TxnRun] | None:
    """A cycle of lock waits through `run` (depth-first over the parked requests), or None."""
    path, seen = [run], {run.seq}
    stack = [iter(waiting_for.get(run.seq, ()))]
    while stack:
        u = next(stack[-1], None)
        if u is None:
            stack.pop()
            path.pop()
            continue
        if u is run:
            return list(path)
        if u.seq in seen or u.seq not in waiting_for:
            continue
        seen.add(u.seq)
        path.append(u)
        stack.append(iter(waiting_for[u.seq]))
    return None


def simulate_database(stream: Iterable[tuple], workers: int, profile: Profile,
                      sink: Callable[[TxnRun], None], *, checkpoint_group: int = 512,
                      bugs: frozenset[str] = frozenset(),
                      arrival: Arrival | None = None) -> dict[str, float]:
    """MySQL 5.6 DATABASE submode (semantics.md §4): a schema in use is pinned to its worker;
    a new schema goes to the worker holding the fewest (ties: the later index); a transaction
    whose schemas are pinned to different workers waits until they are released; `None`
    schemas (over 16, DDL) wait for every worker and run alone. Workers queue several
    transactions; commit order is not preserved."""
    if workers < 1:
        raise SimulationError("workers must be at least 1")
    heap: list = []
    counter = itertools.count()
    pop = heapq.heappop
    sync = profile.group_sync
    blocked = dict.fromkeys(CAUSES, 0.0)
    pinned: dict[str, list] = {}              # schema -> [worker, outstanding count]
    partitions = [0] * workers                # schemas pinned per worker (usage_partition)
    queues: list[deque[TxnRun]] = [deque() for _ in range(workers)]
    busy = [False] * workers
    cpus = CpuPool(profile.cores, heap, counter, profile.per_core_queues) if profile.cores else None
    stage = CommitStage(profile.group_sync, False, heap, counter, sync_cpu=profile.sync_cpu,
                        cpus=cpus, member_cost=_member_cost(profile), wakeup=profile.wakeup)
    outstanding = 0
    isolated = False                          # an isolated transaction is outstanding
    coord_t = 0.0
    cause = None
    since = 0.0
    runs = new_runs(stream, profile, workers, arrival)
    nxt = None
    committed = dispatched = 0

    def advance():
        nonlocal nxt
        nxt = next(runs, None)

    def choose_worker():
        dbs = nxt.dep
        if dbs is None or isolated:
            # An isolated transaction waits for every worker, and nothing runs beside it.
            return "barrier" if outstanding else 0
        owners = {pinned[d][0] for d in dbs if d in pinned}
        if len(owners) > 1:
            return "dependency"
        if outstanding >= checkpoint_group:
            return "window_full"
        if owners:
            return owners.pop()
        best = 0
        for w in range(workers):                     # `<=`: ties go to the later index
            if partitions[w] <= partitions[best]:
                best = w
        return best

    def start_next(w: int, now: float) -> None:
        if busy[w] or not queues[w]:
            return
        run = queues[w][0]
        busy[w] = True
        start_work(run, now, cpus, heap, counter, READY)

    advance()
    while True:
        if nxt is not None and cause is None and (
                not heap or heap[0][0] > (coord_t if coord_t >= nxt.arrival else nxt.arrival)):
            if nxt.arrival > coord_t:
                coord_t = nxt.arrival
            w = choose_worker()
            if isinstance(w, str):
                cause, since = w, coord_t
                continue
            run = nxt
            run.worker = w
            run.dispatch = coord_t
            coord_t += profile.dispatch_cost(run.txn, workers)
            for d in run.dep or ():
                entry = pinned.get(d)
                if entry is None:
                    pinned[d] = [w, 1]
                    partitions[w] += 1
                else:
                    entry[1] += 1
            queues[w].append(run)
            outstanding += 1
            isolated = run.dep is None
            dispatched += 1
            start_next(w, coord_t)
            advance()
            continue
        if not heap:
            if nxt is not None:
                raise Deadlock(f"coordinator blocked ({cause}) before seq {nxt.seq}")
            break
        t, _, kind, payload = pop(heap)
        if kind == READY:
            work_done(payload, t, cpus)
            stage.add(payload, t)
        elif kind == GROUP_START:
            stage.group_start(t)
        elif kind == SYNC_CPU:
            stage.sync_cpu_done(payload, t)
        else:
            for run in payload:
                run.commit = t
                account_commit_wait(run, sync, False, blocked)
                w = run.worker
                queues[w].popleft()
                busy[w] = False
                outstanding -= 1
                if run.dep is None:
                    isolated = False
                committed += 1
                for d in run.dep or ():
                    entry = pinned[d]
                    entry[1] -= 1
                    if entry[1] == 0:
                        del pinned[d]
                        partitions[w] -= 1
                sink(run)
                start_next(w, t)
            stage.group_done(payload, t)
        if cause is not None:
            w = choose_worker()
            now_cause = w if isinstance(w, str) else None
            if now_cause != cause:
                blocked[cause] += t - since
                since, cause = t, now_cause
                if cause is None:
                    coord_t = max(coord_t, t)
    if committed != dispatched:
        raise Deadlock(f"{dispatched - committed} dispatched transactions never committed")
    return blocked
