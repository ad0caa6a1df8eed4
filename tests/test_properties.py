"""Every property of design §6 that a scheduler promises, checked on every scheduler for W in
1..8 over hypothesis-generated traces with sound annotations; and the applier bugs of the
catalogue, each caught by the property it must violate."""
import pytest
from hypothesis import assume, find, given, settings, strategies as st

from commitsched import properties
from commitsched.profiles import get_profile
from commitsched.schedulers import DEFAULT_SCHEDULERS, SchedulerError, collect, parse_scheduler
from commitsched.simcore import Deadlock

from strategies import traces

PROFILES = [get_profile("ideal"), get_profile("durable"), get_profile("durable", cores=2)]


def violations(scheduler, trace, workers, profile, **kw):
    runs, _ = collect(scheduler, trace.txns, workers, profile, **kw)
    sched = parse_scheduler(scheduler)
    out = {}
    for name in properties.applicable(sched):
        bad = properties.check(name, runs, len(trace))
        if bad:
            out[name] = bad[0]
    return out


@pytest.mark.parametrize("scheduler", DEFAULT_SCHEDULERS)
@given(trace=traces(), workers=st.integers(1, 8), profile=st.sampled_from(PROFILES))
@settings(max_examples=60)
def test_every_property_holds(scheduler, trace, workers, profile):
    if scheduler.startswith("commit_id+"):
        # A trace of singletons carries no commit id at all: commit_id refuses it (tested there).
        assume(any(t.commit_id for t in trace))
    assert violations(scheduler, trace, workers, profile) == {}


@given(trace=traces(), workers=st.integers(1, 8))
@settings(max_examples=40)
def test_mysql_without_commit_order_keeps_the_other_properties(trace, workers):
    opts = {"preserve_commit_order": False}
    runs, _ = collect("commit_order+mysql", trace.txns, workers, get_profile("ideal"),
                      applier_options=opts)
    for name in ("NoConflictingOverlap", "DependenciesRespected", "SerialEquivalence"):
        assert properties.check(name, runs, len(trace)) == [], name


@given(trace=traces(annotate=True), workers=st.integers(1, 8))
@settings(max_examples=40)
def test_one_worker_equals_serial_order(trace, workers):
    """With one worker every scheduler runs the source order, one at a time."""
    for s in ("commit_order+mysql", "slave_group_commit+mariadb_optimistic"):
        runs, _ = collect(s, trace.txns, 1, get_profile("ideal"))
        starts = [r.start for r in runs]
        assert starts == sorted(starts)
        for a, b in zip(runs, runs[1:]):
            assert b.start >= a.commit


def _caught(scheduler, bug, prop, workers_range=(2, 4), shape=None):
    """Hypothesis finds a trace on which the bug violates `prop` (or deadlocks, for NoDeadlock)."""
    shape = shape or {}
    def violated(args):
        trace, workers = args
        try:
            runs, _ = collect(scheduler, trace.txns, workers, get_profile("ideal"),
                              bugs=frozenset({bug}))
        except Deadlock:
            return prop == "NoDeadlock"
        except SchedulerError:      # e.g. commit_id on a trace without commit ids
            return False
        if prop == "NoDeadlock":
            return False
        return bool(properties.check(prop, runs, len(trace)))
    shape = {"min_size": 2, **shape}
    return find(st.tuples(traces(max_size=10, **shape), st.integers(*workers_range)),
                violated, settings=settings(max_examples=3000, database=None, derandomize=True))


@pytest.mark.slow
@pytest.mark.parametrize("bug,prop", [
    ("lwm_off_by_one", "DependenciesRespected"),
    ("lwm_off_by_one", "NoConflictingOverlap"),
    ("lwm_not_prefix", "NoConflictingOverlap"),
    ("rotation_ignored", "NoConflictingOverlap"),
    ("commit_order_unenforced", "CommitOrderPreserved"),
])
def test_mysql_applier_bugs_are_caught(bug, prop):
    # Plain DML in one file shows the lwm bugs; rotation needs files.
    shape = dict(ddl=False, fk=False, sessions=0, rotations=(bug == "rotation_ignored"), keys=2,
                 min_size=4)
    trace, workers = _caught("commit_order+mysql", bug, prop, shape=shape)
    assert len(trace) >= 2


@pytest.mark.slow
def test_gco_start_on_exec_is_caught():
    _caught("commit_id+mariadb_conservative", "gco_start_on_exec", "NoConflictingOverlap")


@pytest.mark.slow
def test_optimistic_no_kill_deadlocks():
    _caught("commit_id+mariadb_optimistic", "optimistic_no_kill", "NoDeadlock")
