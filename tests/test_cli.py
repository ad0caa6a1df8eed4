"""The command line: outputs as documented, and every user error one line with exit 2."""
import json
import subprocess
import sys

import pytest

from commitsched.cli import main

EX = "traces/examples"
S14 = f"{EX}/semantics_1_4_logical_clock.jsonl"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate(capsys):
    code, out, _ = run(capsys, "validate", S14)
    assert code == 0 and "valid commitsched trace v1, 5 transactions" in out


def test_score_json_fields(capsys):
    code, out, _ = run(capsys, "score", S14, "--scheduler", "commit_order+mysql",
                       "--scheduler", "serial", "--workers", "1,4", "--json")
    assert code == 0
    results = json.loads(out)
    assert [(r["scheduler"], r["workers"]) for r in results] == [
        ("commit_order+mysql", 1), ("commit_order+mysql", 4), ("serial", 1)]
    for r in results:
        for key in ("scheduler", "workers", "profile", "makespan", "throughput", "speedup",
                    "efficiency", "per_worker", "blocked", "bound"):
            assert key in r
        assert sum(r["per_worker"]) == 5 and len(r["per_worker"]) == r["workers"]
        assert r["bound"]["bound"] <= r["makespan"] + 1e-9
    serial = results[2]["makespan"]
    assert results[0]["speedup"] == pytest.approx(serial / results[0]["makespan"])


def test_score_table_every_scheduler(capsys):
    code, out, err = run(capsys, "score", f"{EX}/oltp_rw_8clients.jsonl.gz", "--workers", "2,4")
    assert code == 0
    for name in ("serial", "commit_order+mysql", "writeset_session+mysql", "database+mysql",
                 "commit_id+mariadb_optimistic", "slave_group_commit+mariadb_conservative"):
        assert name in out


def test_score_skips_what_the_trace_cannot_feed(capsys, tmp_path):
    p = tmp_path / "plain.jsonl"
    p.write_text('{"format":"commitsched-trace","version":1,"source":{}}\n'
                 '{"seq":1,"writes":["d.t/PRIMARY=1"]}\n{"seq":2,"writes":["d.t/PRIMARY=2"]}\n')
    code, out, err = run(capsys, "score", str(p), "--workers", "2")
    assert code == 0 and "skipped commit_order+mysql" in err and "writeset+mysql" in out


def test_schedule_json(capsys):
    code, out, _ = run(capsys, "schedule", S14, "--scheduler", "commit_order+mysql",
                       "--workers", "4", "--json")
    rows = json.loads(out)
    assert [r["seq"] for r in rows] == [1, 2, 3, 4, 5]
    for r in rows:
        assert {"seq", "worker", "dispatch", "start", "exec_end", "commit"} <= r.keys()
        assert r["dispatch"] <= r["start"] <= r["exec_end"] <= r["commit"]


def test_check_reports_an_injected_bug(capsys):
    code, out, _ = run(capsys, "check", S14, "--scheduler", "commit_order+mysql",
                       "--workers", "4", "--inject-bug", "commit_order_unenforced")
    assert code == 1 and "CommitOrderPreserved: VIOLATED" in out
    code, out, _ = run(capsys, "check", S14, "--scheduler", "commit_order+mysql", "--workers", "4")
    assert code == 0 and "VIOLATED" not in out


def test_annotate_writes_the_tracker_result(capsys, tmp_path):
    out_path = str(tmp_path / "a.jsonl")
    code, _, _ = run(capsys, "annotate", f"{EX}/semantics_2_2_writeset.jsonl",
                     "--tracker", "writeset", "-o", out_path)
    assert code == 0
    lines = [json.loads(l) for l in open(out_path)]
    assert lines[0]["source"]["annotated_by"]["tracker"] == "writeset"
    # semantics.md §2.2: last_committed 0, 1, 1, 3, 4, 5
    assert [l["last_committed"] for l in lines[1:]] == [0, 1, 1, 3, 4, 5]


def test_generate_then_score(capsys, tmp_path):
    out_path = str(tmp_path / "g.jsonl.gz")
    code, _, _ = run(capsys, "generate", "--transactions", "300", "--clients", "4", "-o", out_path)
    assert code == 0
    code, out, _ = run(capsys, "validate", out_path)
    assert "300 transactions" in out


@pytest.mark.parametrize("argv,needle", [
    (["score", "nope.jsonl"], "nope.jsonl: no such file"),
    (["score", S14, "--scheduler", "writeset+nothing"], "unknown applier"),
    (["score", S14, "--scheduler", "commit_id+mysql"], "cannot use commit_id"),
    (["score", S14, "--scheduler", "fast"], "TRACKER+APPLIER"),
    (["check", S14, "--scheduler", "serial", "--inject-bug", "no_such_bug"], "unknown bug"),
    (["schedule", S14, "--scheduler", "commit_id+mariadb_conservative", "--workers", "2"],
     "commit_id needs MariaDB commit ids"),
])
def test_user_errors_are_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err and "Traceback" not in err and err.count("\n") == 1


def test_bad_option_values_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as e:
        main(["score", S14, "--workers", "0,2"])
    assert e.value.code == 2
    assert "worker counts must be positive" in capsys.readouterr().err


def test_failed_command_writes_nothing(capsys, tmp_path):
    out_path = tmp_path / "never.jsonl"
    code, _, _ = run(capsys, "annotate", S14, "--tracker", "commit_id", "-o", str(out_path))
    assert code == 2 and not out_path.exists() and list(tmp_path.iterdir()) == []


def test_module_entry_point_and_help():
    r = subprocess.run([sys.executable, "-m", "commitsched", "score", "--help"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "--scheduler" in r.stdout and "TRACKER+APPLIER" in r.stdout
