"""`score` and `report` of binlogs directly (model/inputs.py): the same outputs as `import`
then score/report of the trace, the same header, one-line errors, no temporary file left."""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

from commitsched import cli, inputs
from commitsched import progress as progress_mod
from commitsched.importers import binlog_binary
from commitsched.trace import iter_trace

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
MDB_BIN = os.path.join(FIX, "mariadb_tiny.binlog.000002")
MDB_SCHEMA = os.path.join(FIX, "mariadb_tiny.schema.sql")
MY1 = os.path.join(FIX, "mysql80_binlog.000001.txt")
MY2 = os.path.join(FIX, "mysql80_binlog.000002.txt")
MDB_TEXT = os.path.join(FIX, "mariadb_rw_t64_wait12.txt")
TRACE = "traces/examples/semantics_3_5_commit_id.jsonl"
GZ_TRACE = "traces/examples/oltp_rw_8clients.jsonl.gz"
CLEAR = "\r\033[K"

needs_binary = pytest.mark.skipif(not binlog_binary.available(),
                                  reason="commitsched_binlog not built (make setup builds it)")


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    """The temporary traces go under the test's own folder, to see that none is left."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    yield d
    assert os.listdir(d) == []


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err):
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("commitsched: error: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


# ---------------------------------------------------------------- telling inputs apart

def test_kind_by_content(tmp_path):
    assert inputs.kind_of(MDB_BIN) == "binlog"
    assert inputs.kind_of(MY1) == "binlog"
    assert inputs.kind_of(TRACE) == "trace" and inputs.kind_of(GZ_TRACE) == "trace"
    # content, not name: a trace named like a binlog, a text binlog named like a trace
    odd = tmp_path / "binlog.000001"
    odd.write_bytes(open(TRACE, "rb").read())
    assert inputs.kind_of(str(odd)) == "trace"
    gz = tmp_path / "b.txt.gz"
    gz.write_bytes(gzip.compress(open(MY1, "rb").read()))
    assert inputs.kind_of(str(gz)) == "binlog"
    # nothing to tell by (missing, empty, a folder): the trace loader's errors, as before
    assert inputs.kind_of(str(tmp_path / "none.txt")) == "trace"
    assert inputs.kind_of(str(tmp_path)) == "trace"
    (tmp_path / "e.jsonl").write_text("")
    (tmp_path / "e.txt").write_text("")
    assert inputs.kind_of(str(tmp_path / "e.jsonl")) == "trace"
    assert inputs.kind_of(str(tmp_path / "e.txt")) == "binlog"


# ---------------------------------------------------------------- same outputs as import first

def _import(capsys, tmp_path, *argv):
    out = tmp_path / "imported.jsonl.gz"
    rc, _, err = run(capsys, "import", *argv, "-o", out, "--quiet")
    assert rc == 0, err
    return str(out)


def _score(capsys, *argv):
    rc, out, err = run(capsys, "score", *argv, "--workers", "1,2,4", "--json", "--quiet",
                       "--z3-bound", "off", "--jobs", "1")
    assert rc == 0, err
    return json.loads(out)


def _report(capsys, *argv):
    rc, out, err = run(capsys, "report", *argv, "--workers", "1,2", "--json", "--quiet",
                       "--jobs", "1")
    assert rc == 0, err
    # z3's own time (a tiny trace's bound is z3's) differs from run to run
    data = json.loads(re.sub(r'"solver_seconds": [0-9.e+-]+', '"solver_seconds": 0', out))
    return data, data["trace"].pop("path")


CASES = [pytest.param([MDB_BIN, "--schema", MDB_SCHEMA], marks=needs_binary, id="mariadb-binary"),
         pytest.param([MY1, MY2], id="mysql80-text-two-files")]


@pytest.mark.parametrize("argv", CASES)
def test_score_of_binlogs_is_score_of_their_import(capsys, tmp_path, argv):
    trace = _import(capsys, tmp_path, *argv)
    direct = _score(capsys, *argv)
    assert direct == _score(capsys, trace)
    assert len(direct) > 3
    if argv[0] == MY1:                         # the header's server gave the --mysql defaults
        assert {r["mysql"] for r in direct} == {"8.0"}


@pytest.mark.parametrize("argv", CASES)
def test_report_of_binlogs_is_report_of_their_import(capsys, tmp_path, argv):
    trace = _import(capsys, tmp_path, *argv)
    direct, label = _report(capsys, *argv)
    imported, path = _report(capsys, trace)
    assert direct == imported                  # the header's `source` (provenance) included
    assert path == trace
    assert label == (MDB_BIN if argv[0] == MDB_BIN else f"{MY1} .. {MY2} (2 binlog files)")


def test_table_names_the_binlogs(capsys):
    rc, out, _ = run(capsys, "score", MY1, MY2, "--workers", "2", "--quiet", "--jobs", "1")
    assert rc == 0
    assert out.startswith(f"trace {MY1} .. {MY2} (2 binlog files): ")


def test_the_temporary_trace_is_what_import_writes(capsys, tmp_path, monkeypatch):
    """Header and lines byte for byte, seen from inside the command."""
    trace = _import(capsys, tmp_path, MY1, MY2)
    seen = []
    real = cli.TraceSource

    def spy(path):
        with gzip.open(path, "rb") as f:
            seen.append(f.read())
        return real(path)
    monkeypatch.setattr(cli, "TraceSource", spy)
    _score(capsys, MY1, MY2)
    with gzip.open(trace, "rb") as f:
        assert seen == [f.read()]
    assert iter_trace(trace)[0]["inputs"] == [os.path.basename(MY1), os.path.basename(MY2)]


# ---------------------------------------------------------------- usage errors

@pytest.mark.parametrize("argv,needle", [
    (["score", TRACE, MY1], f"{TRACE} is a trace: give one trace file, or binlog files"),
    (["score", MY1, TRACE], f"{TRACE} is a trace: give one trace file, or binlog files"),
    (["report", TRACE, GZ_TRACE, "--json"], f"{TRACE} is a trace"),
    (["score", TRACE, "--schema", MDB_SCHEMA], "--schema is for binlog inputs"),
    (["report", TRACE, "--json", "--skip-bad"], "--skip-bad is for binlog inputs"),
])
def test_mixed_inputs_are_usage_errors(capsys, argv, needle):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    assert needle in one_error_line(err)


@pytest.mark.parametrize("second,needle", [("nope.txt", "nope.txt: no such file"),
                                            ("tests", "tests: is a directory, not a binlog")])
def test_a_missing_second_binlog_is_named(capsys, second, needle):
    rc, out, err = run(capsys, "score", MY1, second, "--json")
    assert rc == 2 and out == ""
    assert one_error_line(err) == f"commitsched: error: {needle}"


def test_options_are_checked_before_importing(capsys, monkeypatch):
    def no_import(*a, **k):
        raise AssertionError("imported")
    monkeypatch.setattr("commitsched.importers.import_binlog", no_import)
    for argv in (["score", MY1, "--inject-bug", "nope"], ["report", MY1],
                 ["report", MY1, "--json", "--window", "0"]):
        rc, _, err = run(capsys, *argv)
        assert rc == 2
        one_error_line(err)


# ---------------------------------------------------------------- bad binlogs, interruptions

def _mutated(tmp_path, pattern, repl):
    text = open(MDB_TEXT, encoding="utf-8").read()
    new = re.sub(pattern, repl, text, count=1, flags=re.M)
    assert new != text
    p = tmp_path / "bad.txt"
    p.write_text(new, encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("command", [["score", "--json"], ["report", "--json"]])
def test_a_bad_binlog_is_one_line_with_file_and_line(capsys, tmp_path, command):
    bad = _mutated(tmp_path, r"cid=2602 trans", "cid=" + "9" * 50 + "x trans")
    out = tmp_path / "out"
    rc, stdout, err = run(capsys, command[0], bad, *command[1:], "-o", out, "--quiet")
    assert rc == 2 and stdout == ""
    assert re.match(rf"commitsched: error: {re.escape(bad)}:\d+: ", one_error_line(err))
    assert not out.exists()


def test_skip_bad_says_what_it_skipped_on_stderr(capsys, tmp_path):
    bad = _mutated(tmp_path, r"^###   @2=", "###   @99=")
    rc, _, err = run(capsys, "score", bad, "--json", "--quiet", "--workers", "2")
    assert rc == 2 and "has column @99" in one_error_line(err)
    rc, out, err = run(capsys, "score", bad, "--skip-bad", "--json", "--workers", "2",
                       "--z3-bound", "off", "--jobs", "1")
    assert rc == 0
    assert json.loads(out)                                  # stdout: the results only
    assert "skipped 1 transaction(s): 1 malformed input" in err


def test_interrupted_while_scoring_leaves_nothing(capsys, monkeypatch, private_tmp):
    def interrupt(path):
        assert os.path.exists(path) and str(private_tmp) in path
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "TraceSource", interrupt)
    rc, out, err = run(capsys, "score", MY1, MY2, "--quiet")
    assert rc == 130 and out == "" and "interrupted" in err
    # the autouse fixture checks that the temporary folder is gone


@needs_binary
def test_sigterm_while_importing_leaves_nothing(tmp_path):
    """A real process, terminated mid-import: exit 143, no temporary folder left."""
    big = tmp_path / "big.txt"
    with open(big, "w", encoding="utf-8") as f:    # a text binlog long enough to be stopped
        text = open(MDB_TEXT, encoding="utf-8").read()
        for copy in range(200):         # each copy the next file: its GTIDs move on
            f.write(re.sub(r"(GTID \d+-\d+-|gtid_seq_no=)(\d+)",
                           lambda m: m.group(1) + str(int(m.group(2)) + 1000 * copy), text))
    tmp = tmp_path / "t"
    tmp.mkdir()
    p = subprocess.Popen([sys.executable, "-m", "commitsched", "score", str(big), "--quiet",
                          "--skip-bad"], env={**os.environ, "TMPDIR": str(tmp)},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait for the import to have begun (its folder exists), then stop it
    for _ in range(600):
        if os.listdir(tmp) or p.poll() is not None:
            break
        subprocess.run(["sleep", "0.05"])
    p.terminate()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert "Traceback" not in err
    assert os.listdir(tmp) == []


# ---------------------------------------------------------------- progress, help

def test_progress_on_a_terminal_says_importing_then_scoring(capsys, monkeypatch):
    argv = ["score", MY1, MY2, "--workers", "2", "--json", "--jobs", "1", "--z3-bound", "off"]
    rc, plain, err = run(capsys, *argv)
    assert rc == 0 and "\r" not in err
    monkeypatch.setattr(progress_mod, "is_terminal", lambda stream: True)
    rc, shown, err = run(capsys, *argv)
    assert rc == 0
    assert f"{CLEAR}importing {os.path.basename(MY1)} (file 1/2): " in err
    assert f"{CLEAR}reading {MY1}" in err          # (cut to the terminal's width)
    assert err.endswith(CLEAR)
    assert json.loads(shown) == json.loads(plain)
    rc, _, err = run(capsys, *argv, "--quiet")
    assert err == ""


@pytest.mark.parametrize("command", ["score", "report"])
def test_help_explains_binlog_inputs(command):
    r = subprocess.run([sys.executable, "-m", "commitsched", command, "--help"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "INPUT [INPUT ...]" in text and "binlog files in order" in text
    assert "--schema SQL" in text and "--skip-bad" in text
