"""The appliers' scheduling rules as small pure functions, one rule each (in the style of gh-ost's
`mts_schedule.go`). The discrete-event simulators (applier_mysql.py, applier_mariadb.py) call
them from their event loops, and the untimed step functions (steps_mysql.py, steps_mariadb.py)
call the same ones to enumerate what may happen in a state, so that the state-graph comparison
with the specs (checks/state_graph.py) tests the simulators' own rules.

What stays in the event loops is time: when a transaction's work ends, how ready commits form a
group (simcore.CommitStage, which the step functions reuse as is), costs.
"""
from __future__ import annotations

import heapq

# --------------------------------------------------------------------------- MySQL (§1.4-§1.7)


def dependency_met(last_committed: int, lwm: int, off_by_one: bool = False) -> bool:
    """§1.4: a non-barrier transaction may start once `last_committed <= lwm` (bug
    lwm_off_by_one: `<= lwm + 1`)."""
    return last_committed <= (lwm + 1 if off_by_one else lwm)


def coordinator_wait(outstanding: int, checkpoint_group: int, barrier: bool,
                     last_committed: int, lwm: int, any_idle: bool, *,
                     off_by_one: bool = False) -> str | None:
    """`schedule_next_event` + worker choice (§1.4-§1.6): why the coordinator cannot dispatch
    the next transaction now (a cause of COORDINATOR_CAUSES), or None when it may.
    `outstanding`: transactions dispatched and not yet released from the GAQ head (the
    committed prefix is released); `barrier`: the next one is a barrier (trackers.ClockOrder);
    `any_idle`: some worker is idle (a worker is busy until its transaction commits)."""
    if outstanding >= checkpoint_group:
        return "window_full"
    if outstanding:                      # an empty GAQ: the head may always go
        if barrier:
            return "barrier"
        if not dependency_met(last_committed, lwm, off_by_one):
            return "dependency"
    if not any_idle:
        return "no_free_worker"
    return None


def lowest_idle_worker(idle: list[int]) -> int:
    """§1.6: the lowest-index idle worker, taken from the heap of idle workers (0-based)."""
    return heapq.heappop(idle)


def replica_lock_conflict(holder_seq: int, seq: int, ordered: bool, holder_ready: bool, *,
                          wakeup_lost: bool = False) -> str:
    """§1.8: `seq` needs a row lock that `holder_seq` holds, one of the two being a lock the
    source never took (`replica_locks`). An earlier holder is waited for. A later one, with
    commit order preserved, waits for `seq` to commit: a deadlock InnoDB cannot see, so
    `Commit_order_manager::check_and_report_deadlock` makes the holder the victim ("kill": it
    rolls back and retries). Without preserved commit order the holder commits on its own:
    wait. Bug victim_wakeup_lost: a victim already waiting for its turn to commit is not woken
    (its wait status is not set), so it is waited for, forever."""
    if holder_seq < seq or not ordered or (holder_ready and wakeup_lost):
        return "wait"
    return "kill"


class LowWaterMark:
    """The coordinator's lwm (§1.4): the sequence_number at the end of the longest committed
    prefix of the GAQ, reset to 0 when a barrier is dispatched (a new file or a drain).
    Bugs: lwm_not_prefix raises it at every commit (the highest committed sequence_number);
    rotation_ignored never resets it: it is the sequence_number of the last released GAQ head,
    whichever file that was (MySQL's get_lwm_timestamp assigns it; MySQLApplier.tla's Lwm)."""

    __slots__ = ("value", "not_prefix", "rotation_ignored")

    def __init__(self, *, not_prefix: bool = False, rotation_ignored: bool = False):
        self.value = 0
        self.not_prefix = not_prefix
        self.rotation_ignored = rotation_ignored

    def barrier_dispatched(self) -> None:
        if not self.rotation_ignored:
            self.value = 0

    def committed(self, sequence_number: int) -> None:
        if self.not_prefix:
            self.value = max(self.value, sequence_number)

    def released(self, sequence_number: int) -> None:
        """The GAQ head (committed) leaves the queue."""
        if not self.not_prefix:
            self.value = sequence_number


# ------------------------------------------------------------------------ MariaDB (§3.3-§3.6)

MARIADB_LEVELS = {"conservative": 1, "optimistic": 2, "aggressive": 3}
MULTI_BATCH, FORCE_SWITCH = 1, 2


def next_thread(slot: int, workers: int) -> int:
    """`choose_thread` (§3.3): the thread slot after `slot`, round robin (0-based)."""
    return (slot + 1) % workers


def gco_decision(gco_flags: int, last_commit_id, group_id, flags, level: int
                 ) -> tuple[bool, int, bool]:
    """`rpl_parallel::do_event` (§3.5): does this transaction open a new group commit orderer?
    Returns (new_gco, the current GCO's flags after it, speculation WAIT). MULTI_BATCH when it
    has no commit id or another one than its predecessor, FORCE_SWITCH for a DDL; the same
    batch joins the current GCO; optimistic (and aggressive) joins speculatively unless
    FORCE_SWITCH, waiting for its predecessor's commit when non-transactional or (below
    aggressive) not allowed to run in parallel or FL_WAITED."""
    ddl = "ddl" in flags
    f = gco_flags
    if not group_id or group_id != last_commit_id:
        f |= MULTI_BATCH
    if ddl:
        f |= FORCE_SWITCH
    wait = False
    if not f & MULTI_BATCH:
        new_gco = False
    elif level >= MARIADB_LEVELS["optimistic"] and not f & FORCE_SWITCH:
        new_gco = False
        wait = ("transactional" not in flags or (
            level < MARIADB_LEVELS["aggressive"]
            and ("allow_parallel" not in flags or "waited" in flags)))
    else:
        new_gco = True
    if new_gco:
        f = FORCE_SWITCH if ddl else 0
    return new_gco, f, wait


def gco_released(gco_wait: int, count_committing: int, count_started: int,
                 start_on_exec: bool = False) -> bool:
    """`do_gco_wait` (§3.4): a GCO whose `wait_count` is the number of transactions queued
    before it is released once that many did `mark_start_commit` (bug gco_start_on_exec: once
    that many started)."""
    return (count_started if start_on_exec else count_committing) >= gco_wait


def waits_for_prior_commit(spec_wait: bool, retried: bool, committed_upto: int, seq: int) -> bool:
    """Speculation WAIT, and a retry after a kill (MDEV-7882): the transaction may execute only
    once its predecessor committed (commits are in order, so: everything before it)."""
    return (spec_wait or retried) and committed_upto < seq - 1


def waits_for_mdl(ddl: bool, committed_upto: int, seq: int) -> bool:
    """A DDL's metadata lock: it waits until every earlier transaction committed; it takes no
    row locks."""
    return ddl and committed_upto < seq - 1


def lock_conflict(holder_seq: int, seq: int, no_kill: bool = False) -> str:
    """A row lock `seq` needs is held by `holder_seq`: an earlier holder is waited for; a later
    one would wait for `seq` to commit first, a deadlock InnoDB cannot see, so
    `thd_rpl_deadlock_check` kills it (§3.6; bug optimistic_no_kill: wait anyway)."""
    return "wait" if holder_seq < seq or no_kill else "kill"


def marks_at_exec_end(ddl: bool) -> bool:
    """`mark_start_commit` at the XID for DML; a standalone DDL marks only after its commit."""
    return not ddl
