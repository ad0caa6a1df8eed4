"""The MariaDB parallel replica (design §5 `mariadb_*`; semantics.md §3.3–§3.6, §3.8).

- The SQL driver thread reads the relay log in order and queues each transaction to the next
  thread slot round-robin (`choose_thread`); it blocks when that thread already holds
  `max_queued` transactions (the byte limit `slave_parallel_max_queued`, counted here in
  transactions). A thread runs its queue in order, one transaction at a time, and is held until
  that transaction commits.
- Group commit orderers (`rpl_parallel::do_event`): the driver decides per transaction whether it
  joins the current GCO or opens a new one whose `wait_count` is the number of transactions
  queued before it. A transaction may start once `count_committing >= wait_count`, i.e. every
  earlier transaction has started its commit (`mark_start_commit` at its XID; for a standalone
  DDL after its commit). Speculation WAIT (non-transactional, or under optimistic a transaction
  that waited on the source or may not run in parallel) also waits for its predecessor's commit.
- Commits are in relay-log order. With the replica's own binlog (`log_replica_updates`, MariaDB
  `log_slave_updates=ON`) they go in groups sharing one binlog sync (`queue_for_group_commit`, a
  leader commits every member); without it, one at a time, each woken by its predecessor's
  in-order commit (`wait_for_prior_commit`, simcore.CommitChain), the redo flush after it.
- Row locks: a transaction takes its keys when it starts and holds them to its commit. Waiting
  for an earlier holder is a lock wait. Finding a later holder (it would wait for us to commit:
  a deadlock InnoDB cannot see) kills the holder (`thd_rpl_deadlock_check`): it rolls back,
  un-marks its commit start, waits for its predecessor to commit and retries. A DDL waits (its
  MDL) until every earlier transaction committed.
Simplifications: one replication domain; the thread pool's LIFO free list is not modelled (with
one domain, slot i is served by one thread); a lock is taken for the whole transaction at start.
"""
from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Callable, Iterable

from .profiles import Profile
from .rules import (MARIADB_LEVELS, gco_decision, gco_released, lock_conflict, marks_at_exec_end,
                    next_thread, waits_for_mdl, waits_for_prior_commit)
from .simcore import (CAUSES, Arrival, CommitChain, CommitStage, CpuPool, CpuTask, Deadlock, device,
                      EventLog, LogFlush, SimulationError, TxnRun, account_commit_wait, new_runs)

MODES = MARIADB_LEVELS
MARIADB_BUGS = frozenset({"gco_start_on_exec", "optimistic_no_kill"})

EXEC_END, READY, RESUME, DISPATCHED, BACKGROUND_DONE, EXEC_START, FINISHED = 0, 1, 3, 8, 9, 10, 13
SYNC_END, GROUP_START, SYNC_CPU = (CommitStage.SYNC_END, CommitStage.GROUP_START,
                                   CommitStage.SYNC_CPU)
FLUSH_CPU, FLUSH_END = LogFlush.FLUSH_CPU, LogFlush.FLUSH_END
CHAIN_START, CHAIN_DONE = CommitChain.START, CommitChain.DONE
PHASE_GCO, PHASE_PRIOR, PHASE_LOCKS = 0, 1, 2


def simulate_mariadb(stream: Iterable[tuple], workers: int, profile: Profile,
                     sink: Callable[[TxnRun], None], *, mode: str = "conservative",
                     max_queued: int = 64,
                     bugs: frozenset[str] = frozenset(),
                     log: EventLog | None = None,
                     arrival: Arrival | None = None) -> dict[str, float]:
    """Simulate `stream` of `(txn, (group_id, flags))`; call `sink` with each committed run;
    return the time blocked by cause. `log` (optional) hears every schedule event
    (simcore.EventLog); `arrival` (optional) when each transaction reaches the relay log (the
    driver waits for it)."""
    if workers < 1:
        raise SimulationError("workers must be at least 1")
    if mode not in MODES:
        raise SimulationError(f"unknown MariaDB mode {mode!r}; known: {', '.join(MODES)}")
    level = MODES[mode]
    start_on_exec = "gco_start_on_exec" in bugs
    no_kill = "optimistic_no_kill" in bugs

    heap: list = []
    counter = itertools.count()
    push, pop = heapq.heappush, heapq.heappop
    sync, retry_cost = profile.group_sync, profile.retry
    blocked = dict.fromkeys(CAUSES, 0.0)

    queues: list[deque[TxnRun]] = [deque() for _ in range(workers)]
    current: list[TxnRun | None] = [None] * workers
    cpus = CpuPool(profile.cores, heap, counter, profile.per_core_queues) if profile.cores else None
    disk = device(profile)   # shared, rate-limited, or None
    # a relaxed replica's commit records, written after the binlog's group commit, ride on the
    # next prepare's redo write when another worker has a transaction in flight (InnoDB writes
    # all it has logged; the members find their records written or wait for that write): the
    # group waits for a write, but issues none, on no core and not on the disk
    # (Profile.redo_write_shared; serial and W=1 write them themselves)
    rides = profile.redo_write_shared and workers > 1
    stage = CommitStage(sync, True, heap, counter,
                        sync_cpu=0.0 if rides else profile.sync_cpu, cpus=cpus,
                        member_cpu=profile.commit_serial,
                        member_cost=profile.member_cost if profile.commit_byte else None,
                        wakeup=profile.wakeup, disk=None if rides else disk)
    wakeup = profile.wakeup             # a waiting thread runs this long after it is signalled
    dispatch_cost = profile.dispatch_cost
    # without the replica's binlog: one-phase commits handed on in order, then the redo flush
    chain = (None if profile.log_replica_updates
             else CommitChain(profile.member_cost, wakeup, heap, counter, cpus, blocked))
    # the redo flush as a resource, when the profile says how: with the binlog, prepare's sync
    # before the group commit (then READY); without, the commit's own flush after the in-order
    # commit (then FINISHED)
    flush = (LogFlush(profile.commit_grouped, profile.commit_cpu, cpus, heap, counter,
                      READY if chain is None else FINISHED, disk)
             if profile.commit_grouped or disk is not None
             or (cpus is not None and profile.commit_cpu > 0)
             else None)
    driver = (CpuTask() if cpus is not None and (profile.dispatch > 0 or profile.dispatch_event > 0)
              else None)
    driver_busy = False                           # the driver's dispatch is on a core
    background = profile.background_cpu if cpus is not None else 0.0
    contention_cpu = profile.contention_cpu
    event_handoff = profile.event_handoff
    locks: dict[str, TxnRun] = {}
    lock_waiters: dict[int, list[TxnRun]] = {}    # holder seq -> runs waiting for its commit
    prior_waiters: dict[int, TxnRun] = {}         # seq that must commit first -> waiting run
    gco_waiters: list = []                        # heap of (wait_count, seq, run)
    count_committing = 0                          # transactions that did mark_start_commit
    count_started = 0                             # (bug gco_start_on_exec) that started
    committed_upto = 0                            # in-order commits: last committed seq

    # driver state
    driver_t = 0.0
    cause = None
    since = 0.0
    slot = 0
    queued = 0
    gco_wait_count = 0
    gco_flags = 0
    last_commit_id = None
    runs = new_runs(stream, profile, workers, arrival)
    nxt: TxnRun | None = None
    committed = 0

    def advance():
        nonlocal nxt, committed_upto
        nxt = next(runs, None)
        if nxt is not None and stage.next_seq is None:
            stage.next_seq = nxt.seq
            if chain is not None:
                chain.next_seq = nxt.seq
            committed_upto = nxt.seq - 1

    def classify(run: TxnRun) -> None:
        """`rpl_parallel::do_event`: the GCO this transaction joins and its speculation."""
        nonlocal gco_wait_count, gco_flags, last_commit_id
        group_id, flags = run.dep
        new_gco, gco_flags, run.spec_wait = gco_decision(gco_flags, last_commit_id, group_id,
                                                         flags, level)
        last_commit_id = group_id
        if new_gco:
            gco_wait_count = queued
        run.gco_wait = gco_wait_count

    def wait(run: TxnRun, why: str, now: float) -> None:
        run.wait_cause, run.wait_since = why, now

    def resume(run: TxnRun, now: float) -> None:
        if run.wait_cause is not None:
            blocked[run.wait_cause] += now - run.wait_since
            run.wait_cause = None

    def start(run: TxnRun, now: float) -> None:
        """Start(t), and a killed transaction's Retry(t): past its GCO, its prior commit when it
        must wait for it, a DDL's metadata lock and its row locks, it executes."""
        nonlocal count_started
        resume(run, now)
        if run.phase == PHASE_GCO:
            if not gco_released(run.gco_wait, count_committing, count_started, start_on_exec):
                heapq.heappush(gco_waiters, (run.gco_wait, run.seq, run))
                wait(run, "gco_wait", now)
                return
            run.phase = PHASE_PRIOR
        if run.phase == PHASE_PRIOR:
            if waits_for_prior_commit(run.spec_wait, run.retries > 0, committed_upto, run.seq):
                prior_waiters[run.seq - 1] = run
                wait(run, "prior_commit_wait", now)
                return
            run.phase = PHASE_LOCKS
        if waits_for_mdl("ddl" in run.dep[1], committed_upto, run.seq):
            prior_waiters[run.seq - 1] = run         # MDL: every earlier one must commit
            wait(run, "lock_wait", now)
            return
        for key in run.txn.writes:
            holder = locks.get(key)
            if holder is None or holder is run:
                continue
            if lock_conflict(holder.seq, run.seq, no_kill) == "wait":
                lock_waiters.setdefault(holder.seq, []).append(run)
                wait(run, "lock_wait", now)
                return
            kill(holder, now, run)
        for key in run.txn.writes:
            locks[key] = run
        if run.attempt == 0:
            count_started += 1
        run.start = now
        if log is not None:
            log("retry" if run.attempt else "start", run.seq, now, None)
        handoff = event_handoff(run.txn)
        if handoff > 0:                 # its events reach the worker one hand-off at a time
            push(heap, (now + handoff, next(counter), EXEC_START, (run, run.attempt)))
        else:
            begin_exec(run, now)

    def begin_exec(run: TxnRun, now: float) -> None:
        if cpus is None:
            push(heap, (now + run.exec, next(counter), EXEC_END, (run, run.attempt)))
        else:
            cpus.execute(run, now, run.exec, EXEC_END, (run, run.attempt))

    def release_locks(run: TxnRun, now: float) -> None:
        """Waiters retry through the event heap, never inside another run's lock loop."""
        for key in run.txn.writes:
            if locks.get(key) is run:
                del locks[key]
        for waiter in lock_waiters.pop(run.seq, ()):
            push(heap, (now, next(counter), RESUME, waiter))

    def kill(victim: TxnRun, now: float, by: TxnRun) -> None:
        """The later lock holder rolls back and will retry after its predecessor commits."""
        nonlocal count_committing
        if log is not None:
            log("kill", victim.seq, now, by.seq)
        victim.retries += 1
        victim.wasted += now - victim.start
        blocked["retry"] += now - victim.start
        victim.attempt += 1                      # its pending events become stale
        if cpus is not None and victim.exec_end is None:
            cpus.release(victim, now)            # killed while executing or queued for a core
        stage.withdraw(victim)
        if chain is not None:
            chain.withdraw(victim)
        if victim.marked:                        # unmark_start_commit
            victim.marked = False
            count_committing -= 1
        victim.start = victim.exec_end = victim.ready = None
        victim.phase = PHASE_PRIOR
        victim.wait_cause = None
        release_locks(victim, now)
        start(victim, now)                   # parks it until its predecessor commits

    def mark_start_commit(run: TxnRun, now: float) -> None:
        nonlocal count_committing
        run.marked = True
        count_committing += 1
        while gco_waiters and gco_waiters[0][0] <= count_committing:
            _, _, waiter = heapq.heappop(gco_waiters)
            wake(waiter, now)

    def wake(run: TxnRun, now: float) -> None:
        """A waiting thread is signalled: it tries again once it runs (`wakeup` later)."""
        if wakeup > 0:
            push(heap, (now + wakeup, next(counter), RESUME, run))
        else:
            start(run, now)

    def take_next(w: int, now: float) -> None:
        nonlocal cause, driver_t
        if current[w] is None and queues[w]:
            run = queues[w].popleft()
            current[w] = run
            start(run, now)
            if cause is not None and w == slot:      # the thread the driver waits for
                blocked[cause] += now - since
                cause = None
                driver_t = max(driver_t, now)

    def hand_off(run: TxnRun) -> None:
        """The driver queues `run` to its thread and moves to the next slot."""
        nonlocal queued, slot
        queues[slot].append(run)
        queued += 1
        take_next(slot, driver_t)
        slot = next_thread(slot, workers)
        advance()

    def wake_prior_waiter(run: TxnRun, now: float) -> None:
        """`run` committed: the transaction waiting for its commit goes on (a retry after its
        rollback and re-read)."""
        waiter = prior_waiters.pop(run.seq, None)
        if waiter is None:
            return
        if waiter.retries and waiter.wait_cause == "prior_commit_wait":
            resume(waiter, now)
            blocked["retry"] += retry_cost
            push(heap, (now + retry_cost + wakeup, next(counter), RESUME, waiter))
        else:
            wake(waiter, now)

    def free_thread(run: TxnRun, now: float) -> None:
        """`run` is done: its thread is free; the server's own threads work after a commit, and
        the threads' spinning while they wait for each other (off the transactions' path)."""
        current[run.worker] = None
        if cpus is not None:
            off_path = background + contention_cpu(run.txn, workers)
            if off_path > 0:
                task = CpuTask()
                cpus.execute(task, now, off_path, BACKGROUND_DONE, task)
        sink(run)

    def visible(run: TxnRun, now: float) -> None:
        """Without the replica's binlog: `run`'s in-order commit ended (its successor's turn):
        its changes are visible and its locks go; its redo flush is still to come."""
        nonlocal committed_upto
        committed_upto = run.seq
        if "ddl" in run.dep[1]:
            mark_start_commit(run, now)
        release_locks(run, now)
        wake_prior_waiter(run, now)

    def finish(run: TxnRun, now: float) -> None:
        """Without the replica's binlog: `run`'s redo flush ended; its thread goes on."""
        nonlocal committed
        run.commit = now
        if log is not None:
            log("commit", run.seq, now, None)
        committed += 1
        free_thread(run, now)
        take_next(run.worker, now)

    # The handlers of the event kinds, named as the specs' actions (docs/names.md) and as the
    # compiled core's (model/simcore_rs/src/mariadb.rs): dispatch, start (a retry's too),
    # exec_end, commit (with the replica's binlog; `finish` without), kill above.
    def dispatch(run: TxnRun) -> None:
        """Dispatch(t, w): the driver queues `run` to the next thread slot, round-robin."""
        nonlocal driver_busy, driver_t
        classify(run)
        run.worker = slot
        run.dispatch = driver_t
        if log is not None:
            log("dispatch", run.seq, driver_t, slot + 1)
        cost = dispatch_cost(run.txn, workers)
        if driver is not None:                   # dispatch needs a core
            driver_busy = True
            cpus.execute(driver, driver_t, cost, DISPATCHED, run)
            return
        driver_t += cost
        hand_off(run)

    def exec_end(run: TxnRun, attempt: int, t: float) -> None:
        """ExecEnd(t): it reached its XID: mark_start_commit, then its commit turn (without the
        replica's binlog), its own commit step, or the redo flush."""
        if attempt != run.attempt:
            return
        run.exec_end = t
        if log is not None:
            log("exec_end", run.seq, t, None)
        if cpus is not None:
            cpus.release(run, t)
        if marks_at_exec_end("ddl" in run.dep[1]):
            mark_start_commit(run, t)
        if chain is not None:            # its commit turn; the redo flush after it
            run.ready = t
            chain.add(run, t)
        elif flush is None:
            run.ready = t + run.commit_cost
            push(heap, (run.ready, next(counter), READY, (run, attempt)))
        else:
            flush.request(run, t)

    def commit(batch: list[TxnRun], t: float) -> None:
        """Commit(t) with the replica's binlog: the group's sync ended; its members commit."""
        nonlocal committed_upto, committed
        for run in batch:
            run.commit = t
            if log is not None:
                log("commit", run.seq, t, None)
            committed_upto = run.seq
            committed += 1
            account_commit_wait(run, sync, True, blocked)
            if "ddl" in run.dep[1]:
                mark_start_commit(run, t)
            release_locks(run, t)
            free_thread(run, t)
        stage.group_done(batch, t)
        for run in batch:
            wake_prior_waiter(run, t)
            take_next(run.worker, t)

    advance()
    while True:
        if (nxt is not None and cause is None and not driver_busy and (
                not heap or heap[0][0] > (driver_t if driver_t >= nxt.arrival else nxt.arrival))):
            if nxt.arrival > driver_t:                # it reaches the relay log only now
                driver_t = nxt.arrival
            if len(queues[slot]) + (current[slot] is not None) > max_queued:
                cause, since = "no_free_worker", driver_t    # back-pressure on that thread
                continue
            dispatch(nxt)
            continue
        if not heap:
            break
        t, _, kind, payload = pop(heap)
        if kind == DISPATCHED:
            cpus.release(driver, t)
            driver_busy = False
            driver_t = t
            hand_off(payload)
            continue
        if kind == EXEC_END:
            exec_end(*payload, t)
        elif kind == READY:
            run, attempt = payload
            if attempt == run.attempt:
                run.ready = t
                stage.add(run, t)
        elif kind == FLUSH_CPU:
            flush.cpu_done(payload, t)
        elif kind == FLUSH_END:
            flush.flush_end(payload, t)
        elif kind == SYNC_CPU:
            stage.sync_cpu_done(payload, t)
        elif kind == BACKGROUND_DONE:
            cpus.release(payload, t)
        elif kind == RESUME:
            start(payload, t)
        elif kind == EXEC_START:
            run, attempt = payload
            if attempt == run.attempt:
                begin_exec(run, t)
        elif kind == CHAIN_DONE:
            run = chain.done(payload, t)
            if run is not None:
                visible(run, t)
                if flush is not None:
                    flush.request(run, t)
                elif run.commit_cost > 0:
                    push(heap, (t + run.commit_cost, next(counter), FINISHED, (run, run.attempt)))
                else:
                    finish(run, t)
        elif kind == CHAIN_START:
            chain.start(payload, t)
        elif kind == FINISHED:
            run, attempt = payload
            if attempt == run.attempt:
                finish(run, t)
        elif kind == GROUP_START:
            stage.group_start(t)
        else:  # SYNC_END
            commit(payload, t)
    if nxt is not None or committed != queued:
        stuck = sorted(r.seq for r in current if r is not None)
        raise Deadlock(f"no event can fire while {queued - committed} queued transactions have "
                       f"not committed (running on threads: seq {stuck[:8]}); "
                       f"`NoDeadlock` violated")
    return blocked
