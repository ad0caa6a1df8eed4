"""Worked examples asserted exactly: semantics.md §1.4 (MySQL coordinator), §3.5 (MariaDB GCO
modes), the group sync, and each applier bug on a hand-made trace that shows it."""
from dataclasses import replace

import pytest

from commitsched import properties
from commitsched.profiles import Profile, get_profile
from commitsched.schedulers import collect
from commitsched.simcore import Deadlock
from commitsched.trace import trace_from_dicts

IDEAL = get_profile("ideal")


def clock_trace(rows):
    """rows: (last_committed, sequence_number, exec, keys[, file])"""
    return trace_from_dicts([
        {"seq": i, "writes": [f"d.t/PRIMARY={k}" for k in row[3]], "last_committed": row[0],
         "sequence_number": row[1], "exec": float(row[2]),
         **({"file": row[4]} if len(row) > 4 else {})}
        for i, row in enumerate(rows, 1)])


def times(runs, field):
    return [getattr(r, field) for r in runs]


# semantics.md §1.4: T1(L0,s1) T2(L1,s2) T3(L1,s3) T4(L1,s4) T5(L3,s5), 4 workers.
S14 = clock_trace([(0, 1, 2, "a"), (1, 2, 5, "b"), (1, 3, 1, "c"), (1, 4, 10, "d"), (3, 5, 1, "e")])


def test_semantics_1_4_coordinator():
    runs, blocked = collect("commit_order+mysql", S14.txns, 4, IDEAL,
                            applier_options={"preserve_commit_order": False})
    # T1 is a barrier; T2, T3, T4 start when T1 is done; T5 waits for T1..T3 (lwm >= 3) even
    # though T4 still runs.
    assert times(runs, "start") == [0, 2, 2, 2, 7]
    assert times(runs, "commit") == [2, 7, 3, 12, 8]
    # lowest-index idle worker: T5 reuses worker 0 (freed by T2 at 7)
    assert times(runs, "worker") == [0, 0, 1, 2, 0]
    assert blocked["dependency"] == 2 + 5   # T2 waits 0..2, T5 waits 2..7


def test_semantics_1_4_lwm_does_not_cross_a_hole():
    """If T3 finishes before T2, lwm stays 1 until T2 finishes."""
    runs, _ = collect("commit_order+mysql", S14.txns, 4, IDEAL,
                      applier_options={"preserve_commit_order": False})
    assert runs[2].commit < runs[1].commit and runs[4].start == runs[1].commit


def test_preserve_commit_order_commits_in_groups():
    runs, blocked = collect("commit_order+mysql", S14.txns, 4, IDEAL)
    assert times(runs, "commit") == [2, 7, 7, 12, 12]
    assert blocked["commit_order"] == (7 - 3) + (12 - 8)


def test_group_sync_is_shared():
    """Durable: in-order ready commits share one sync."""
    prof = Profile("t", exec_default=1, commit_default=0, sync=10, dispatch=0, retry=0,
                   provenance="test")
    trace = clock_trace([(0, 1, 1, "a"), (1, 2, 1, "b"), (1, 3, 1, "c")])
    runs, _ = collect("commit_order+mysql", trace.txns, 4, prof)
    # T1 syncs alone (1..11); T2 and T3 ready at 12 share the next sync.
    assert times(runs, "commit") == [11, 22, 22]


def test_checkpoint_window_stalls_dispatch():
    trace = clock_trace([(0, 1, 1, "a")] + [(1, s, 1 if s > 2 else 50, [f"k{s}"]) for s in range(2, 8)])
    runs, blocked = collect("commit_order+mysql", trace.txns, 8, IDEAL,
                            applier_options={"checkpoint_group": 3,
                                             "preserve_commit_order": False})
    assert blocked["window_full"] > 0
    assert max(r.start for r in runs) >= runs[1].commit   # the long head held the window


def test_rotation_is_a_barrier():
    trace = clock_trace([(0, 1, 5, "a"), (1, 2, 5, "b"), (0, 1, 1, "c", 2), (1, 2, 1, "d", 2)])
    runs, blocked = collect("commit_order+mysql", trace.txns, 4, IDEAL)
    assert runs[2].start == max(runs[0].commit, runs[1].commit)
    assert blocked["barrier"] > 0


def test_no_free_worker():
    trace = clock_trace([(0, 1, 1, "a")] + [(1, s, 4, [f"k{s}"]) for s in range(2, 6)])
    runs, blocked = collect("commit_order+mysql", trace.txns, 2, IDEAL)
    assert blocked["no_free_worker"] > 0
    assert sorted(r.worker for r in runs) == [0, 0, 0, 1, 1]


# ---- MariaDB, semantics.md §3.5: groups {T1,T2,T3} (100), {T4,T5} (200), T6 singleton.
def group_trace(execs, ids, keys=None, flags=None):
    rows = []
    for i, (e, g) in enumerate(zip(execs, ids), 1):
        row = {"seq": i, "writes": [f"d.t/PRIMARY={(keys or {}).get(i, i)}"], "exec": float(e),
               "flags": (flags or {}).get(i, ["transactional", "allow_parallel"])}
        if g:
            row["commit_id"] = g
        rows.append(row)
    return trace_from_dicts(rows)


S35 = group_trace([3, 1, 2, 4, 1, 1], [100, 100, 100, 200, 200, 0])


def test_semantics_3_5_conservative():
    runs, _ = collect("commit_id+mariadb_conservative", S35.txns, 8, IDEAL)
    starts = times(runs, "start")
    # T1..T3 at once; T4, T5 when T1..T3 reached their XID (exec end: 3); T6 when T1..T5 did.
    assert starts[:3] == [0, 0, 0]
    assert starts[3:5] == [3, 3]
    assert starts[5] == max(r.exec_end for r in runs[:5]) == 7
    assert times(runs, "commit") == sorted(times(runs, "commit"))


def test_semantics_3_5_optimistic_all_start_at_once():
    runs, _ = collect("commit_id+mariadb_optimistic", S35.txns, 8, IDEAL)
    assert times(runs, "start") == [0] * 6


def test_optimistic_waited_flag_waits_for_prior_commit_but_not_aggressive():
    trace = group_trace([3, 1], [1, 2], flags={2: ["transactional", "allow_parallel", "waited"]})
    opt, _ = collect("commit_id+mariadb_optimistic", trace.txns, 2, IDEAL)
    agg, _ = collect("commit_id+mariadb_aggressive", trace.txns, 2, IDEAL)
    assert opt[1].start == opt[0].commit == 3
    assert agg[1].start == 0


def test_a_later_transaction_waits_for_an_earlier_lock_holder():
    """T1 and T3 write the same key and start together: T1 (dispatched first) takes the lock,
    T3 waits for T1's commit. No kill: the earlier transaction got there first."""
    trace = group_trace([2, 5, 1], [1, 2, 3], keys={1: 9, 2: 7, 3: 9})
    runs, blocked = collect("commit_id+mariadb_optimistic", trace.txns, 3, IDEAL)
    assert runs[2].retries == 0 and runs[2].start == runs[0].commit == 2
    assert blocked["lock_wait"] == 2


# T1 long; T2 carries `waited` (optimistic: it starts only after T1 committed) and writes key
# 5; T3 writes key 5 too and starts at once. When T2 starts, the later T3 holds its lock: T3 is
# killed and retries after T2 commits.
KILL = group_trace([10, 1, 3], [1, 2, 3], keys={2: 5, 3: 5},
                   flags={2: ["transactional", "allow_parallel", "waited"]})


def test_kill_when_the_later_holds_the_lock():
    runs, blocked = collect("commit_id+mariadb_optimistic", KILL.txns, 4, IDEAL)
    t2, t3 = runs[1], runs[2]
    assert t2.start == 10 and t3.retries == 1
    assert t3.start == t2.commit == 11
    assert blocked["retry"] == 10          # T3's first attempt ran 0..10 in vain
    for name in ("NoConflictingOverlap", "SerialEquivalence", "CommitOrderPreserved"):
        assert properties.check(name, runs, 3) == []


def test_optimistic_no_kill_deadlocks_on_that_trace():
    with pytest.raises(Deadlock):
        collect("commit_id+mariadb_optimistic", KILL.txns, 4, IDEAL,
                bugs=frozenset({"optimistic_no_kill"}))


def test_ddl_runs_alone_in_every_mariadb_mode():
    rows = [{"seq": 1, "writes": ["d.t/PRIMARY=1"], "exec": 5.0, "commit_id": 7,
             "flags": ["transactional", "allow_parallel"]},
            {"seq": 2, "writes": [], "ddl": True, "flags": ["ddl"], "exec": 1.0, "commit_id": 7},
            {"seq": 3, "writes": ["d.t/PRIMARY=3"], "exec": 1.0,
             "flags": ["transactional", "allow_parallel"]}]
    trace = trace_from_dicts(rows)
    for mode in ("conservative", "optimistic", "aggressive"):
        runs, _ = collect(f"commit_id+mariadb_{mode}", trace.txns, 4, IDEAL)
        assert runs[1].start >= runs[0].commit, mode
        assert runs[2].start >= runs[1].commit, mode


# ---- applier bugs on hand-made traces
def test_lwm_not_prefix_runs_a_conflicting_transaction_early():
    trace = clock_trace([(0, 1, 1, "x"), (1, 2, 10, "A"), (1, 3, 1, "B"), (3, 4, 1, "A")])
    # With commit order preserved the prefix and the highest committed agree: turn it off.
    off = {"preserve_commit_order": False}
    good, _ = collect("commit_order+mysql", trace.txns, 4, IDEAL, applier_options=off)
    bad, _ = collect("commit_order+mysql", trace.txns, 4, IDEAL, applier_options=off,
                     bugs=frozenset({"lwm_not_prefix"}))
    assert properties.no_conflicting_overlap(good) == []
    assert properties.no_conflicting_overlap(bad)


def test_lwm_off_by_one_breaks_dependencies():
    trace = clock_trace([(0, 1, 1, "x"), (1, 2, 10, "A"), (2, 3, 1, "A")])
    bad, _ = collect("commit_order+mysql", trace.txns, 4, IDEAL,
                     bugs=frozenset({"lwm_off_by_one"}))
    assert properties.dependencies_respected(bad)
    assert properties.no_conflicting_overlap(bad)


def test_rotation_ignored_compares_across_files():
    trace = clock_trace([(0, 1, 1, "a"), (1, 2, 1, "b"), (1, 3, 1, "c"),
                         (0, 1, 10, "A", 2), (1, 2, 1, "A", 2)])
    good, _ = collect("commit_order+mysql", trace.txns, 4, IDEAL)
    bad, _ = collect("commit_order+mysql", trace.txns, 4, IDEAL,
                     bugs=frozenset({"rotation_ignored"}))
    assert properties.no_conflicting_overlap(good) == []
    assert properties.no_conflicting_overlap(bad)


def test_commit_order_unenforced():
    bad, _ = collect("commit_order+mysql", S14.txns, 4, IDEAL,
                     bugs=frozenset({"commit_order_unenforced"}))
    assert properties.commit_order_preserved(bad)


def test_gco_start_on_exec_lets_dml_run_beside_a_ddl():
    """A DDL's GCO releases its successors only after the DDL committed (standalone DDL marks
    its commit start after committing). The bug releases them when the DDL starts executing:
    the next transaction runs beside the DDL. (Row conflicts between DML are still caught by
    the row locks and the deadlock kill, so the bug shows on DDL, which takes no row lock.)"""
    rows = [{"seq": 1, "writes": [], "ddl": True, "flags": ["ddl"], "exec": 5.0},
            {"seq": 2, "writes": ["d.t/PRIMARY=2"], "exec": 1.0, "commit_id": 9,
             "flags": ["transactional", "allow_parallel"]}]
    trace = trace_from_dicts(rows)
    good, _ = collect("commit_id+mariadb_conservative", trace.txns, 4, IDEAL)
    bad, _ = collect("commit_id+mariadb_conservative", trace.txns, 4, IDEAL,
                     bugs=frozenset({"gco_start_on_exec"}))
    assert properties.no_conflicting_overlap(good) == []
    assert properties.no_conflicting_overlap(bad)


# ---- CPU cores as a resource
def test_workers_beyond_the_cores_queue_for_a_core():
    trace = clock_trace([(0, 1, 1, "x")] + [(1, s, 10, [f"k{s}"]) for s in range(2, 6)])
    unlimited, _ = collect("commit_order+mysql", trace.txns, 4, IDEAL)
    two = Profile("t", 1, 0, 0, 0, 0, "test", cores=2)
    limited, _ = collect("commit_order+mysql", trace.txns, 4, two)
    assert max(r.commit for r in unlimited) == 11          # 4 at once after T1
    assert max(r.commit for r in limited) == 21            # 2 cores: two rounds of 10
    for name in ("NoConflictingOverlap", "SerialEquivalence", "DependenciesRespected"):
        assert properties.check(name, limited, 5) == []


def test_cores_with_kills_release_the_core():
    two = Profile("t", 1, 0, 0, 0, 0, "test", cores=1)
    runs, _ = collect("commit_id+mariadb_optimistic", KILL.txns, 4, two)
    assert [r.seq for r in runs] == [1, 2, 3]
    for name in ("NoConflictingOverlap", "SerialEquivalence", "CommitOrderPreserved"):
        assert properties.check(name, runs, 3) == []


# ---- what the calibration added (docs/calibration.md): CPU parts of syncs, the redo log's
# group flush, the driver on a core, coordination and background CPU (MariaDB)
def same_group(execs):
    return group_trace(execs, [7] * len(execs))


def test_log_flush_grouped_covers_every_waiting_request():
    trace = same_group([10, 12, 30])
    alone = Profile("t", 1, 5, 0, 0, 0, "test")
    grouped = replace(alone, commit_grouped=True)
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 3, alone)
    assert times(runs, "ready") == [15, 17, 35]            # three private flushes
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 3, grouped)
    # T2 asks at 12 while T1's flush (10-15) runs: it gets the next one, 15-20
    assert times(runs, "ready") == [15, 20, 35]


def test_the_cpu_part_of_a_sync_waits_for_a_core():
    trace = same_group([10, 10])
    base = Profile("t", 1, 0, 8, 0, 0, "test", cores=1)
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 2, base)
    assert times(runs, "commit") == [18, 28]
    # the sync is all CPU: T1's must wait for the core T2 executes on (10-20)
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 2,
                      replace(base, sync_cpu=8))
    assert times(runs, "commit") == [28, 36]


def test_the_drivers_dispatch_needs_a_core():
    trace = same_group([10, 10])
    free = Profile("t", 1, 0, 0, 5, 0, "test")
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 2, free)
    assert times(runs, "start") == [5, 10]
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 2, replace(free, cores=1))
    # T2's dispatch queues behind T1's execution (5-15) for the only core
    assert times(runs, "start") == [5, 20]
    assert times(runs, "commit") == [15, 30]


def test_coordination_is_paid_in_parallel_mode_only():
    trace = same_group([10, 10])
    prof = Profile("t", 1, 0, 0, 0, 0, "test", coordination=3)
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 2, prof)
    assert times(runs, "exec_end") == [13, 13]
    serial, _ = collect("serial", trace.txns, 1, prof)
    assert max(times(serial, "commit")) == 20


def test_shared_lock_wait_grows_with_the_workers_that_can_run():
    """shared_lock_thread x (running workers - 1) on each transaction's path in parallel mode:
    with 4 workers and no core limit 3 x 2 on top of exec 10; with 2 cores, at most 2 workers
    run at once, so 1 x 2; one worker, and the serial replay, none."""
    trace = same_group([10, 10, 10, 10])
    prof = Profile("t", 1, 0, 0, 0, 0, "test", shared_lock_thread=2)
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 4, prof)
    assert times(runs, "exec_end") == [16, 16, 16, 16]
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 4, replace(prof, cores=2))
    assert times(runs, "exec_end") == [12, 12, 24, 24]
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 1, prof)
    assert times(runs, "exec_end") == [10, 20, 30, 40]
    serial, _ = collect("serial", trace.txns, 1, prof)
    assert max(times(serial, "commit")) == 40


def test_background_cpu_competes_for_the_cores():
    trace = group_trace([10, 10], [1, 2])
    prof = Profile("t", 1, 0, 0, 0, 0, "test", cores=1)
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 1, prof)
    assert times(runs, "commit") == [10, 20]
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 1,
                      replace(prof, background_cpu=4))
    assert times(runs, "commit") == [10, 24]


def test_the_group_leader_commits_each_member_serially():
    """commit_serial moves that part of exec to the leader: 3 members cost it 3 x 2."""
    trace = same_group([10, 10, 10])
    prof = Profile("t", 1, 0, 0, 0, 0, "test")
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 3, prof)
    assert times(runs, "commit") == [10, 10, 10]
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 3,
                      replace(prof, commit_serial=2))
    assert times(runs, "exec_end") == [8, 8, 8]
    assert times(runs, "commit") == [14, 14, 14]          # one group: 8 + 3 x 2
    serial, _ = collect("serial", trace.txns, 1, replace(prof, commit_serial=2))
    assert max(times(serial, "commit")) == 30              # the serial replay is unchanged


# ---- the apply pipeline's serial stages (docs/model.md "The apply pipeline")
def sized_clock_trace(n, exec_cost, events):
    """T1 (L0, s1) then n-1 transactions all depending only on T1 (L1, s_i): independent of
    each other once T1 committed; each `events` binlog events long."""
    return trace_from_dicts([{"seq": i, "writes": [f"d.t/PRIMARY={i}"],
                              "last_committed": 0 if i == 1 else 1, "sequence_number": i,
                              "exec": float(exec_cost), "events": events}
                             for i in range(1, n + 1)])


def test_dispatch_bound_coordinator_uses_only_the_first_workers():
    """Per-worker use when the MySQL coordinator is the bottleneck. The coordinator spends
    dispatch_event x events = 1 x 4 = 4 per transaction; a worker is busy from its transaction's
    dispatch to its commit, 4 + 6 = 10. At each dispatch after T1 the transactions dispatched 4
    and 8 earlier still hold their workers and the one 12 earlier has freed its own, so the
    lowest idle worker cycles over workers 1, 2, 3: T1 and T2 on worker 1 (T1 commits at 10,
    when T2 is dispatched), then 3, 4, 5 on workers 2, 3, 1, ... Worker 4 never runs anything."""
    prof = replace(IDEAL, dispatch_event=1.0)
    trace = sized_clock_trace(31, 6, events=4)
    runs, _ = collect("commit_order+mysql", trace.txns, 4, prof)
    shares = [sum(1 for r in runs if r.worker == w) for w in range(4)]
    assert shares == [11, 10, 10, 0]
    assert [r.worker for r in runs[:7]] == [0, 0, 1, 2, 0, 1, 2]
    assert [r.dispatch for r in runs[:4]] == [0.0, 10.0, 14.0, 18.0]
    # the makespan is the coordinator's: T1 (4 + 6), then 30 dispatches of 4, the last one's 6
    assert max(r.commit for r in runs) == 10 + 30 * 4 + 6
    # with a coordinator 4x faster every worker is used
    fast = replace(IDEAL, dispatch_event=0.25)
    runs, _ = collect("commit_order+mysql", trace.txns, 4, fast)
    assert all(sum(1 for r in runs if r.worker == w) > 0 for w in range(4))


def test_dispatch_cost_grows_with_events_and_threads():
    prof = replace(IDEAL, dispatch=2.0, dispatch_event=0.5, dispatch_thread=0.25)
    t = trace_from_dicts([{"seq": 1, "writes": [], "events": 10}]).txns[0]
    assert prof.dispatch_cost(t, 1) == 2.0 + 10 * 0.5
    assert prof.dispatch_cost(t, 5) == 2.0 + 10 * (0.5 + 4 * 0.25)
    # a transaction without `events`: GTID + commit + 3 per written key (profiles.txn_events)
    u = trace_from_dicts([{"seq": 1, "writes": ["d.t/PRIMARY=1", "d.t/PRIMARY=2"]}]).txns[0]
    assert prof.dispatch_cost(u, 1) == 2.0 + 8 * 0.5


def test_mariadb_driver_is_a_serial_stage_per_event():
    """Four independent one-group transactions of 3 events each, exec 1, 4 threads: the driver
    hands one out every 3 x 1 = 3, so they start at 3, 6, 9, 12 and the last commits at 13,
    however many threads there are."""
    rows = [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": 1.0, "commit_id": 7, "events": 3,
             "flags": ["transactional", "allow_parallel"]} for i in range(1, 5)]
    trace = trace_from_dicts(rows)
    prof = replace(IDEAL, dispatch_event=1.0)
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 4, prof)
    assert times(runs, "start") == [3.0, 6.0, 9.0, 12.0]
    assert max(r.commit for r in runs) == 13.0


def test_wakeup_latency_delays_the_next_group_and_a_released_gco():
    """§3.5's trace, conservative, 4 threads, with every wake-up of a waiting thread taking 0.5.
    Without it T4 (its own thread, waiting in its GCO) starts when T1-T3 have all started their
    commit, at 3; with it the signalled T4 runs at 3.5. T1-T3 (ready at 3, 1, 2) commit in one
    group at 3."""
    prof = replace(IDEAL, wakeup=0.5)
    runs, _ = collect("commit_id+mariadb_conservative", S35.txns, 4, prof)
    plain, _ = collect("commit_id+mariadb_conservative", S35.txns, 4, IDEAL)
    assert plain[3].start == 3.0 and runs[3].start == 3.5
    assert times(runs, "commit")[:3] == [3.0, 3.0, 3.0]


def test_group_commit_leader_work_per_byte_is_serial():
    """Two independent transactions ready at once commit in one group; the leader writes both
    members' bytes one after the other (commit_byte x bytes), then syncs."""
    rows = [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": 5.0, "commit_id": 3,
             "bytes": 100 * i, "flags": ["transactional", "allow_parallel"]} for i in (1, 2)]
    prof = replace(IDEAL, commit_byte=0.01, sync=1.0)
    runs, _ = collect("commit_id+mariadb_optimistic", trace_from_dicts(rows).txns, 2, prof)
    # a worker's exec loses the member's own part, which the leader does: 5 - 1 and 5 - 2
    assert times(runs, "exec_end") == [4.0, 3.0]
    # T2 (ready at 3) waits for T1 (ready at 4); the leader writes 1 + 2, then syncs 1
    assert times(runs, "commit") == [4.0 + (1.0 + 2.0) + 1.0] * 2


def test_durability_is_a_run_setting_of_one_machine_profile():
    from commitsched.profiles import ProfileError
    prof = replace(IDEAL, name="m", sync=100.0, sync_cpu=30.0, commit_default=50.0, commit_cpu=5.0,
                   commit_grouped=True)
    relaxed = prof.with_durability("relaxed")
    assert (relaxed.sync, relaxed.sync_cpu, relaxed.commit_default, relaxed.commit_cpu,
            relaxed.durability) == (0.0, 0.0, 0.0, 0.0, "relaxed")
    assert prof.with_durability("durable") is prof
    with pytest.raises(ProfileError):
        relaxed.with_durability("durable")
    with pytest.raises(ProfileError):
        prof.with_durability("fast")


def test_shared_disk_flushes_one_at_a_time():
    """T1 and T2 (exec 1, one source group, 2 threads, optimistic): each flushes its redo (2)
    at 1, then the binlog group sync (3). Without a shared disk both redo flushes run at once,
    both are ready at 3 and commit together at 6. With one disk T2's flush waits for T1's (1-3,
    then 3-5); T1's sync waits for T2's flush (5-8); T2, ready at 5 while that sync runs, is the
    next group (8-11)."""
    rows = [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": 1.0, "commit": 2.0,
             "commit_id": 9, "flags": ["transactional", "allow_parallel"]} for i in (1, 2)]
    trace = trace_from_dicts(rows)
    prof = replace(IDEAL, sync=3.0, commit_grouped=False)
    runs, _ = collect("commit_id+mariadb_optimistic", trace.txns, 2, prof)
    assert times(runs, "commit") == [6.0, 6.0]
    runs, _ = collect("commit_id+mariadb_optimistic", trace.txns, 2, replace(prof, shared_disk=True))
    assert times(runs, "commit") == [8.0, 11.0]


def test_event_handoff_is_a_wait_off_the_core():
    """A worker waits handoff_event x events = 0.5 x 4 before it executes; it holds no core
    meanwhile: with one core, T2 (its own thread) executes while T1 still waits, and vice
    versa."""
    rows = [{"seq": 1, "writes": ["d.t/PRIMARY=1"], "exec": 1.0, "commit_id": 5, "events": 4,
             "flags": ["transactional", "allow_parallel"]},
            {"seq": 2, "writes": ["d.t/PRIMARY=2"], "exec": 1.0, "commit_id": 5, "events": 2,
             "flags": ["transactional", "allow_parallel"]}]
    prof = replace(IDEAL, handoff_event=0.5, cores=1)
    runs, _ = collect("commit_id+mariadb_conservative", trace_from_dicts(rows).txns, 2, prof)
    assert times(runs, "start") == [0.0, 0.0]
    # T2 waits 1 and executes 1-2 on the core; T1 waits 2 and executes 2-3
    assert times(runs, "exec_end") == [3.0, 2.0]


def test_without_the_replicas_binlog_commits_are_handed_on_one_at_a_time():
    """log_replica_updates off (MariaDB's log_slave_updates=OFF): no group, no leader, no binlog
    sync. Three independent transactions (exec 10, one source group, 3 threads, conservative),
    commit_serial 2 (InnoDB's in-order commit), wake-up 1, a private redo flush of 5 after the
    in-order commit. All end executing at 10 - 2 = 8. T1's turn: 8-10, flush to 15. T2 waited
    since 8, is woken at 10 + 1 and commits 11-13, flush to 18; T3 14-16, flush to 21. The
    turn waits are commit_order: 3 + 6. The serial replay: 3 x (10 + 5), the sync never paid.
    With the binlog, the same profile commits the three in one group: redo flushes 8-13, the
    leader's 3 x 2, the sync 7: 26."""
    trace = same_group([10, 10, 10])
    prof = Profile("t", 1, 5, 7, 0, 0, "test", commit_serial=2, wakeup=1,
                   log_replica_updates=False)
    runs, blocked = collect("commit_id+mariadb_conservative", trace.txns, 3, prof)
    assert times(runs, "exec_end") == [8, 8, 8]
    assert times(runs, "commit") == [15, 18, 21]
    assert blocked["commit_order"] == 3 + 6
    serial, _ = collect("serial", trace.txns, 1, prof)
    assert max(times(serial, "commit")) == 45
    with_binlog, _ = collect("commit_id+mariadb_conservative", trace.txns, 3,
                             prof.with_log_replica_updates(True))
    assert times(with_binlog, "commit") == [26, 26, 26]


def test_without_the_replicas_binlog_the_redo_flush_groups_after_the_turns():
    """The same three with a grouped redo flush (InnoDB's log group commit: one flush at a time
    covering every waiting request) of 5 and no wake-up latency: T1 commits in order 8-10 and
    flushes alone 10-15; T2 (10-12) and T3 (12-14) queue meanwhile and share the next flush,
    15-20. A later transaction's turn never waits for an earlier one's flush."""
    trace = same_group([10, 10, 10])
    prof = Profile("t", 1, 5, 0, 0, 0, "test", commit_serial=2, commit_grouped=True,
                   log_replica_updates=False)
    runs, _ = collect("commit_id+mariadb_conservative", trace.txns, 3, prof)
    assert times(runs, "commit") == [15, 20, 20]


def test_execution_grows_per_row_changed():
    """exec_row: a 200-row UPDATE (few binlog events) costs its rows; a transaction without
    `rows` (a synthetic one) counts a row per written key."""
    rows = [{"seq": 1, "writes": ["d.t/PRIMARY=1"], "rows": 200, "events": 14},
            {"seq": 2, "writes": ["d.t/PRIMARY=2", "d.t/PRIMARY=3"]}]
    t1, t2 = trace_from_dicts(rows).txns
    prof = replace(IDEAL, exec_default=10.0, exec_row=2.0)
    assert prof.exec_cost(t1) == 10.0 + 2.0 * 200
    assert prof.exec_cost(t2) == 10.0 + 2.0 * 2
    assert replace(IDEAL, exec_default=10.0).exec_cost(t1) == 10.0
