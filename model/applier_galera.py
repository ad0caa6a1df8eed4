"""A Galera member applying the other members' write-sets (docs/certification.md; the applier
`galera`, scheduler `certification+galera`).

As `galera/src/replicator_smm.cpp` (Galera 4) and MariaDB's wsrep appliers do it:
- `wsrep_slave_threads` = `workers` slave threads take write-sets from the receive queue in the
  total order (`gcs_recv`) and keep one until it has committed (`apply_trx`);
- the slave thread certifies it first, under the local monitor, so certifications are one at a
  time in the total order (`ReplicatorSMM::cert`, `LocalOrder`): `profile.dispatch_cost` is
  that stage (receiving and certifying a write-set), the analogue of an async replica's driver;
- it enters the apply monitor once everything up to its depends_seqno has left it
  (`ApplyOrder::condition`: last_left >= depends_seqno; last_left is the end of the longest
  finished prefix, `Monitor::post_leave`), applies its rows (`exec`, on a core when cores are
  modelled), and enters the commit monitor, which lets it commit only after its predecessor
  (`CommitOrder`, repl.commit_order = 3 NO_OOOC): with the member's binlog (log_slave_updates)
  the commits go through MariaDB's binlog group commit (`simcore.CommitStage`), without it one
  at a time, each woken by its predecessor (`simcore.CommitChain`);
- it leaves the apply monitor after its commit (`apply_monitor_.leave` follows the commit in
  `apply_trx`): the waiters whose depends_seqno it reaches go on, `wakeup` later;
- a write-set that failed certification keeps its place: it is cancelled in order, with no
  apply and no commit of its own (`cancel_seqno`).
Closed system: every write-set is in the receive queue at time 0 (a member catching up); the
cluster's open system, with writers, flow control and several members, is
`certification_throughput.py`.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable, Iterable

from .profiles import Profile
from .simcore import (CAUSES, Arrival, CommitChain, CommitStage, CpuPool, Deadlock, EventLog,
                      SimulationError, TxnRun, account_commit_wait, new_runs, start_work,
                      work_done)

GALERA_BUGS: frozenset[str] = frozenset()

CERT_END, READY, RESUME, ARRIVED = 20, 21, 22, 23
SYNC_END, GROUP_START, SYNC_CPU = (CommitStage.SYNC_END, CommitStage.GROUP_START,
                                   CommitStage.SYNC_CPU)
CHAIN_START, CHAIN_DONE = CommitChain.START, CommitChain.DONE


def simulate_galera(stream: Iterable[tuple], workers: int, profile: Profile,
                    sink: Callable[[TxnRun], None], *, bugs: frozenset[str] = frozenset(),
                    log: EventLog | None = None,
                    arrival: Arrival | None = None) -> dict[str, float]:
    """Simulate `stream` of `(txn, certification.CertDep)` in total order on one member with
    `workers` slave threads; `sink` gets each committed run; returns blocked time by cause.
    `log` hears "dispatch" (a slave thread took it, arg: the thread from 1), "start",
    "exec_end", "commit" (a cancelled write-set's only event is "commit"). `arrival`: when each
    write-set reaches the member's receive queue (an open replay, model/replay.py); none: all
    at 0."""
    if workers < 1:
        raise SimulationError("workers must be at least 1")
    heap: list = []
    counter = itertools.count()
    push, pop = heapq.heappush, heapq.heappop
    blocked = dict.fromkeys(CAUSES, 0.0)
    cpus = CpuPool(profile.cores, heap, counter, profile.per_core_queues) if profile.cores else None
    member_cost = profile.member_cost if (profile.commit_serial or profile.commit_byte) else None
    chain = (None if profile.log_replica_updates
             else CommitChain(profile.member_cost, profile.wakeup, heap, counter, cpus, blocked))
    stage = CommitStage(profile.group_sync, True, heap, counter, sync_cpu=profile.sync_cpu,
                        cpus=cpus, member_cost=member_cost, wakeup=profile.wakeup)
    cert_cost = profile.dispatch_cost
    wakeup = profile.wakeup

    runs = iter(new_runs(stream, profile, workers, arrival))
    ahead: list = []                     # the next run, read but not arrived yet
    pos_of: dict[int, int] = {}          # seq -> position in the total order (1..)
    by_pos: dict[int, TxnRun] = {}
    free = list(range(workers))          # idle slave threads (lowest first)
    next_pos = 1                         # the next write-set a thread takes
    cert_free = 0.0                      # the local monitor: certifications one at a time
    last_left = 0                        # the apply monitor's last_left
    finished: set[int] = set()           # positions done beyond last_left (cancelled early)
    waiting: list = []                   # heap of (depends_seqno, pos, run): apply monitor
    taken = done = 0
    exhausted = False

    def take(now: float) -> None:
        """Idle threads take the next write-sets and certify them in order."""
        nonlocal next_pos, cert_free, taken, exhausted
        while free and not exhausted:
            run = ahead.pop() if ahead else next(runs, None)
            if run is None:
                exhausted = True
                return
            if run.arrival > now:                # not in the receive queue yet
                ahead.append(run)
                push(heap, (run.arrival, next(counter), ARRIVED, None))
                return
            pos = next_pos
            next_pos += 1
            taken += 1
            pos_of[run.seq], by_pos[pos] = pos, run
            run.worker = heapq.heappop(free)
            run.dispatch = now
            if log is not None:
                log("dispatch", run.seq, now, run.worker + 1)
            begin = max(now, cert_free)
            cert_free = begin + cert_cost(run.txn, workers)
            push(heap, (cert_free, next(counter), CERT_END, run))
            if chain is not None and chain.next_seq is None:
                chain.next_seq = run.seq
            if stage.next_seq is None:
                stage.next_seq = run.seq

    def enter_apply(run: TxnRun, now: float) -> None:
        pos = pos_of[run.seq]
        if not run.dep.ok:                       # cancelled in order: its commit-monitor turn
            run.wait_since = now
            heapq.heappush(waiting, (pos - 1, pos, run))
            release(now)
            return
        if run.dep.depends_seqno <= last_left:
            start(run, now)
        else:
            run.wait_since = now
            heapq.heappush(waiting, (run.dep.depends_seqno, pos, run))

    def start(run: TxnRun, now: float) -> None:
        if log is not None:
            log("start", run.seq, now, None)
        start_work(run, now, cpus, heap, counter, READY)

    def release(now: float) -> None:
        """Apply-monitor waiters whose depends_seqno last_left reached go on."""
        while waiting and waiting[0][0] <= last_left:
            _, pos, run = heapq.heappop(waiting)
            if not run.dep.ok:
                if pos == last_left + 1:
                    finish(run, now)
                else:                           # not its turn yet: back, keyed on its turn
                    heapq.heappush(waiting, (pos - 1, pos, run))
                    break
                continue
            blocked["dependency"] += now - run.wait_since
            if wakeup > 0:
                push(heap, (now + wakeup, next(counter), RESUME, run))
            else:
                start(run, now)

    def finish(run: TxnRun, now: float) -> None:
        """`run` committed (or was cancelled): it leaves the monitors, its thread is free."""
        nonlocal last_left, done
        pos = pos_of.pop(run.seq)
        del by_pos[pos]
        if run.commit is None:                   # a cancelled write-set
            run.start = run.exec_end = run.ready = run.commit = now
            if log is not None:
                log("commit", run.seq, now, None)
            if chain is not None and chain.next_seq == run.seq:
                chain.next_seq = run.seq + 1
            if stage.next_seq == run.seq:
                stage.next_seq = run.seq + 1
        finished.add(pos)
        while last_left + 1 in finished:
            last_left += 1
            finished.discard(last_left)
        done += 1
        heapq.heappush(free, run.worker)
        sink(run)
        release(now)
        take(now)

    take(0.0)
    while heap:
        t, _, kind, payload = pop(heap)
        if kind == CERT_END:
            enter_apply(payload, t)
        elif kind == RESUME:
            start(payload, t)
        elif kind == ARRIVED:
            take(t)
        elif kind == READY:
            run = payload
            work_done(run, t, cpus)
            if log is not None:
                log("exec_end", run.seq, run.exec_end, None)
            if chain is not None:
                chain.add(run, t)
            else:
                stage.add(run, t)
        elif kind == SYNC_CPU:
            stage.sync_cpu_done(payload, t)
        elif kind == GROUP_START:
            stage.group_start(t)
        elif kind == SYNC_END:
            for run in payload:
                run.commit = t
                account_commit_wait(run, stage.sync, True, blocked)
                if log is not None:
                    log("commit", run.seq, t, None)
            stage.group_done(payload, t)
            for run in payload:
                finish(run, t)
        elif kind == CHAIN_START:
            chain.start(payload, t)
        elif kind == CHAIN_DONE:
            run = chain.done(payload, t)
            run.commit = t
            if log is not None:
                log("commit", run.seq, t, None)
            finish(run, t)
        else:                                    # a core freed for queued work
            raise SimulationError(f"unexpected event kind {kind}")
    if not exhausted or done != taken:
        stuck = sorted(by_pos)[:8]
        raise Deadlock(f"no event can fire while {taken - done} write-sets taken by slave "
                       f"threads have not committed (positions {stuck}); "
                       f"`NoDeadlock` violated")
    return blocked
