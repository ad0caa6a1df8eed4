"""`--mysql 5.7|8.0|8.4`: each version's defaults applied by score, report and annotate, and
said (model/mysql_versions.py)."""
from __future__ import annotations

import json
import os

import pytest

from commitsched.cli import main
from commitsched.mysql_versions import MYSQL_VERSIONS, version_of_server

HERE = os.path.dirname(__file__)
STEP4 = os.path.join(HERE, "fixtures", "mysql_tests", "step4_history.jsonl")


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("mysql") / "g.jsonl")
    assert main(["generate", "--transactions", "300", "--clients", "8", "--seed", "3",
                 "-o", path, "--quiet"]) == 0
    return path


def score_json(capsys, *argv) -> list[dict]:
    assert main(["score", *argv, "--json", "--quiet", "--z3-bound", "off"]) == 0
    return json.loads(capsys.readouterr().out)


def makespans(results) -> dict:
    return {(r["scheduler"], r["workers"]): r["makespan"] for r in results}


def test_default_schedulers_are_the_versions(capsys, synth):
    got = {v: sorted({r["scheduler"] for r in score_json(capsys, synth, "--mysql", v,
                                                          "--workers", "2")})
           for v in MYSQL_VERSIONS}
    assert got["8.4"] == ["commit_order+mysql", "serial", "writeset+mysql"]
    assert got["8.0"] == got["5.7"] == ["commit_order+mysql", "database+mysql", "serial",
                                        "writeset+mysql", "writeset_session+mysql"]
    results = score_json(capsys, synth, "--mysql", "8.4", "--workers", "2")
    assert {r["mysql"] for r in results} == {"8.4"}


def test_preserve_commit_order_follows_the_version(capsys, synth):
    common = [synth, "--scheduler", "writeset+mysql", "--workers", "4", "--profile", "durable"]
    on = makespans(score_json(capsys, *common, "--preserve-commit-order", "on"))
    off = makespans(score_json(capsys, *common, "--preserve-commit-order", "off"))
    assert on != off                      # the trace is one where it matters
    assert makespans(score_json(capsys, *common, "--mysql", "5.7")) == off
    assert makespans(score_json(capsys, *common, "--mysql", "8.0")) == on
    # an explicit option wins over the version's default
    assert makespans(score_json(capsys, *common, "--mysql", "5.7",
                                "--preserve-commit-order", "on")) == on


def test_a_tracking_the_version_lacks_is_refused(capsys):
    assert main(["score", STEP4, "--mysql", "8.4", "--scheduler", "writeset_session+mysql",
                 "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["commitsched: error: scheduler writeset_session+mysql: MySQL 8.4 has no "
                   "writeset_session dependency tracking (it offers commit_order, writeset)"]


def test_the_table_says_which_defaults(capsys):
    assert main(["score", STEP4, "--mysql", "5.7", "--workers", "2", "--quiet",
                 "--z3-bound", "off"]) == 0
    out = capsys.readouterr().out
    assert ("MySQL 5.7 defaults: source dependency tracking COMMIT_ORDER; "
            "replica_parallel_workers=0") in out
    assert "(version from --mysql)" in out


def test_annotate_counts_write_sets_as_the_version_does(tmp_path):
    def lcs(version):
        out = tmp_path / f"{version}.jsonl"
        assert main(["annotate", STEP4, "--tracker", "writeset", "--history-size", "5",
                     "--mysql", version, "-o", str(out)]) == 0
        return [json.loads(x)["last_committed"] for x in out.read_text().splitlines()[1:]]
    # TRX6 (seq 7): 6 when TRX5's 5 hashes overflow the history (8.x), 4 with a set (5.7)
    assert lcs("8.0")[6] == 6 and lcs("5.7")[6] == 4


def test_version_from_the_trace_header(tmp_path, capsys):
    assert [version_of_server(s) for s in ("MySQL 5.7.44", "MySQL 8.0.36", "MySQL 8.4.3",
                                           "MySQL 9.1.0", "MariaDB 10.11.6",
                                           "simulated mysql source", None)] == \
        ["5.7", "8.0", "8.4", "8.4", None, None, None]
    lines = open(STEP4, encoding="utf-8").read().splitlines()
    head = json.loads(lines[0])
    head["source"]["server"] = "MySQL 8.4.3"
    t = tmp_path / "t.jsonl"
    t.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    assert main(["score", str(t), "--workers", "2", "--quiet", "--z3-bound", "off"]) == 0
    out = capsys.readouterr().out
    assert "MySQL 8.4 defaults" in out and "(version from the trace's server)" in out


def test_report_says_which_defaults(tmp_path):
    out = tmp_path / "r"
    assert main(["report", STEP4, "--mysql", "8.4", "--workers", "1,2", "--no-whatif",
                 "--format", "md", "-o", str(out), "--quiet"]) == 0
    md = (out / "report.md").read_text() if (out / "report.md").exists() else "".join(
        p.read_text() for p in out.glob("*.md"))
    assert "MySQL 8.4 defaults: source dependency tracking WRITESET" in md
    data = json.loads((out / "report.json").read_text())
    assert data["mysql"]["version"] == "8.4"
    assert "writeset_session+mysql" not in {r["scheduler"] for r in data["results"]}


def test_annotate_refuses_a_tracking_the_version_lacks(tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    assert main(["annotate", STEP4, "--tracker", "writeset_session", "--mysql", "8.4",
                 "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        "commitsched: error: tracker writeset_session: MySQL 8.4 has no such dependency "
        "tracking (it offers commit_order, writeset)\n")
    assert not out.exists()
