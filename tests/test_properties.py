"""Every property of design §6 that a scheduler promises, checked on every scheduler for W in
1..8 over hypothesis-generated traces with sound annotations. That every bug of the catalogue is
caught by the property it must violate is `make mutants`' properties column (CI runs it)."""
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings, strategies as st

from commitsched import properties
from commitsched.profiles import get_profile
from commitsched.schedulers import DEFAULT_SCHEDULERS, collect, parse_scheduler

from strategies import traces

# the last one switches on every term the calibration added (CPU parts of syncs, grouped
# redo flush, driver on a core, coordination and background CPU)
PROFILES = [get_profile("ideal"), get_profile("durable"), get_profile("durable", cores=2),
            replace(get_profile("durable", cores=2), sync_cpu=300.0, commit_cpu=10.0,
                    commit_grouped=True, coordination=40.0, background_cpu=30.0,
                    commit_serial=20.0)]


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


@pytest.mark.parametrize("scheduler", DEFAULT_SCHEDULERS)
@given(trace=traces(), workers=st.integers(1, 8), profile=st.sampled_from(PROFILES))
@settings(max_examples=30)
def test_heuristic_bound_is_below_every_makespan(scheduler, trace, workers, profile):
    """The bound each score is held against is a lower bound of the scheduler's makespan."""
    from commitsched.metrics import bound_for, heuristic_bounds
    from commitsched.scoring import _commits_in_order
    if scheduler.startswith("commit_id+"):
        assume(any(t.commit_id for t in trace))
    runs, _ = collect(scheduler, trace.txns, workers, profile)
    bound = bound_for(heuristic_bounds(trace.txns, profile, workers),
                      _commits_in_order(parse_scheduler(scheduler), {}))
    assert bound["bound"] <= max(r.commit for r in runs) + 1e-6
