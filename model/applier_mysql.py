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
No row locks are modelled: the scheduler promises that what overlaps does not conflict, and the
property checks (`NoConflictingOverlap`, `SerialEquivalence`) say whether it kept its promise.
"""
from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Callable, Iterable

from .profiles import Profile
from .simcore import (CAUSES, CommitStage, CpuPool, Deadlock, EventLog, SimulationError,
                      TxnRun, account_commit_wait, new_runs, start_work, work_done)
from .rules import LowWaterMark, coordinator_wait, lowest_idle_worker
from .trackers import ClockOrder

READY = 1
SYNC_END, GROUP_START, SYNC_CPU = (CommitStage.SYNC_END, CommitStage.GROUP_START,
                                   CommitStage.SYNC_CPU)

def _member_cost(profile: Profile):
    """The flush-stage leader's serial work per member (by analogy with MariaDB's measured one:
    no MySQL replica has been measured), or None when the profile has none."""
    return profile.member_cost if profile.commit_serial or profile.commit_byte else None


MYSQL_BUGS = frozenset({"lwm_off_by_one", "lwm_not_prefix", "rotation_ignored",
                        "commit_order_unenforced"})


def simulate_logical_clock(stream: Iterable[tuple], workers: int, profile: Profile,
                           sink: Callable[[TxnRun], None], *, preserve_commit_order: bool = True,
                           checkpoint_group: int = 512,
                           bugs: frozenset[str] = frozenset(),
                           log: EventLog | None = None) -> dict[str, float]:
    """Simulate `stream` of `(txn, (last_committed, sequence_number, file))`; call `sink` with
    each committed run; return the time blocked by cause. `log` (optional) hears every
    schedule event (simcore.EventLog)."""
    if workers < 1:
        raise SimulationError("workers must be at least 1")
    off_by_one = "lwm_off_by_one" in bugs
    not_prefix = "lwm_not_prefix" in bugs
    rotation_ignored = "rotation_ignored" in bugs
    ordered = preserve_commit_order and "commit_order_unenforced" not in bugs

    heap: list = []
    counter = itertools.count()
    pop = heapq.heappop
    sync = profile.group_sync
    dispatch_cost = profile.dispatch_cost
    free = list(range(workers))          # a heap: the lowest index idle worker first
    gaq: deque[TxnRun] = deque()         # dispatched, not yet released from the head
    cpus = CpuPool(profile.cores, heap, counter) if profile.cores else None
    stage = CommitStage(profile.group_sync, ordered, heap, counter, sync_cpu=profile.sync_cpu,
                        cpus=cpus, member_cost=_member_cost(profile), wakeup=profile.wakeup)
    blocked = dict.fromkeys(CAUSES, 0.0)

    lwm = LowWaterMark(not_prefix=not_prefix, rotation_ignored=rotation_ignored)
    coord_t = 0.0
    cause = None                          # why the coordinator is blocked, or None
    since = 0.0
    runs = new_runs(stream, profile, workers)
    clock = ClockOrder(rotation_ignored=rotation_ignored)
    nxt = None                            # the next run to dispatch, with its barrier decision
    nxt_barrier = False
    committed = dispatched = 0

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

    advance()
    while True:
        if nxt is not None and cause is None and (not heap or heap[0][0] > coord_t):
            cause = why_blocked()
            if cause is not None:
                since = coord_t
                continue
            run = nxt
            if nxt_barrier:
                lwm.barrier_dispatched()
            run.worker = lowest_idle_worker(free)
            run.dispatch = coord_t
            coord_t += dispatch_cost(run.txn, workers)
            start_work(run, coord_t, cpus, heap, counter, READY)
            if log is not None:
                log("dispatch", run.seq, run.dispatch, run.worker + 1)
                log("start", run.seq, run.start, None)
            gaq.append(run)
            dispatched += 1
            advance()
            continue
        if not heap:
            if nxt is not None:
                raise Deadlock(f"coordinator blocked ({cause}) before seq {nxt.seq} with nothing "
                               f"in flight")
            break
        t, _, kind, payload = pop(heap)
        if kind == READY:
            work_done(payload, t, cpus)
            if log is not None:
                log("exec_end", payload.seq, payload.exec_end, None)
            stage.add(payload, t)
        elif kind == GROUP_START:
            stage.group_start(t)
        elif kind == SYNC_CPU:
            stage.sync_cpu_done(payload, t)
        else:  # SYNC_END: the group is durable
            for run in payload:
                run.commit = t
                run.done = True
                account_commit_wait(run, sync, ordered, blocked)
                heapq.heappush(free, run.worker)
                committed += 1
                lwm.committed(run.dep[1])
                if log is not None:
                    log("commit", run.seq, t, None)
                sink(run)
            while gaq and gaq[0].done:
                lwm.released(gaq.popleft().dep[1])
            stage.group_done(payload, t)
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


def simulate_database(stream: Iterable[tuple], workers: int, profile: Profile,
                      sink: Callable[[TxnRun], None], *, checkpoint_group: int = 512,
                      bugs: frozenset[str] = frozenset()) -> dict[str, float]:
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
    cpus = CpuPool(profile.cores, heap, counter) if profile.cores else None
    stage = CommitStage(profile.group_sync, False, heap, counter, sync_cpu=profile.sync_cpu,
                        cpus=cpus, member_cost=_member_cost(profile), wakeup=profile.wakeup)
    outstanding = 0
    isolated = False                          # an isolated transaction is outstanding
    coord_t = 0.0
    cause = None
    since = 0.0
    runs = new_runs(stream, profile, workers)
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
        if nxt is not None and cause is None and (not heap or heap[0][0] > coord_t):
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
