"""Issue 14: bad input ends in one line `commitsched: error: ...` and exit 2, never a traceback,
never a hang, nothing half-written. One regression test per failure the fuzzing campaign found
(docs/robustness.md), and the fuzz harness's own checks."""
from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from commitsched import cli
from commitsched.checks import fuzz
from commitsched.trace import load_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "binlog")
MDB = os.path.join(FIX, "mariadb_rw_t64_wait12.txt")
SCHEMA = os.path.join(FIX, "mariadb_tiny.schema.sql")
HEADER = {"format": "commitsched-trace", "version": 1, "source": {}}


def run(argv, capsys=None):
    """`commitsched ARGV` in-process: (exit status, stdout, stderr); any exception escaping
    main fails the test (that is a traceback)."""
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr() if capsys else ("", "")
    return rc, out, err


def one_error_line(err: str, *, where: str | None = None) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("commitsched: error: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    if where:
        assert re.search(where, lines[0]), lines[0]
    return lines[0]


def write_trace(path, txns, header=HEADER):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
        for t in txns:
            f.write(json.dumps(t) + "\n")
    return str(path)


def mutate(src: str, dst, pattern: str, repl: str, count: int = 1) -> str:
    with open(src, encoding="utf-8") as f:
        text = f.read()
    new = re.sub(pattern, repl, text, count=count, flags=re.M)
    assert new != text, pattern
    dst.write_text(new, encoding="utf-8")
    return str(dst)


# ---------------------------------------------------------------- text importer

@pytest.mark.parametrize("skip_bad", [False, True])
@pytest.mark.parametrize("pattern,repl,why", [
    (r"^#261122(  3:43:30 server id 1  end_log_pos 423)", r"#000000\1", "malformed event date"),
    (r"skip_parallel_replication=0\*/", "skip_parallel_replication=x*/",
     "malformed skip_parallel_replication"),
    (r"cid=2602 trans", "cid=" + "9" * 5000 + " trans", "malformed commit id"),
    (r"mapped to number 28", "mapped to number " + "9" * 5000, "malformed Table_map"),
    (r"^###   @1=4997", "###   @" + "1" * 5000 + "=4997", "malformed decoded row line"),
])
def test_import_malformed_text_is_one_line(tmp_path, capsys, pattern, repl, why, skip_bad):
    bad = mutate(MDB, tmp_path / "b.txt", pattern, repl)
    out = tmp_path / "t.jsonl"
    rc, _, err = run(["import", bad, "-o", out, "--quiet"] + (["--skip-bad"] if skip_bad else []),
                     capsys)
    if skip_bad:
        assert rc == 0 and "Traceback" not in err
        load_trace(str(out))                  # what was kept is a whole, valid trace
    else:
        assert rc == 2 and not out.exists()
        one_error_line(err, where=rf"b\.txt:\d+: .*{why}")


def test_import_unforeseen_failure_names_its_line(tmp_path, capsys, monkeypatch):
    """The one net in read_binlog: a failure no pattern foresaw still gives FILE:LINE."""
    from commitsched.importers import binlog_text

    def broken(body):
        raise IndexError("something the reader did not foresee")
    monkeypatch.setattr(binlog_text.mysql, "parse_gtid", broken)
    rc, _, err = run(["import", MDB, "-o", tmp_path / "t.jsonl"], capsys)
    assert rc == 2
    one_error_line(err, where=r"mariadb_rw_t64_wait12\.txt:\d+: cannot read this line "
                              r"\(IndexError")


def test_import_line_length_is_bounded(tmp_path, capsys, monkeypatch):
    from commitsched import importers
    monkeypatch.setattr(importers, "MAX_LINE_CHARS", 1000)
    long = tmp_path / "long.txt"
    long.write_text("# at 4\n" + "x" * 5000 + "\n")
    rc, _, err = run(["import", long, "-o", tmp_path / "t.jsonl"], capsys)
    assert rc == 2
    one_error_line(err, where=r"long\.txt:2: line longer than 1000 characters")


def test_import_dev_zero_ends(tmp_path):
    r = subprocess.run([sys.executable, "-m", "commitsched", "import", "/dev/zero", "-o",
                        str(tmp_path / "t.jsonl")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    one_error_line(r.stderr, where=r"/dev/zero:1: line longer than")


@pytest.mark.parametrize("create,why", [
    ("CREATE TABLE x.y (a INT, UNIQUE KEY ());", "cannot read"),          # IndexError
    ("CREATE TABLE x.y (a INT, FOREIGN KEY);", "cannot read"),             # AttributeError
    ("CREATE TABLE x.y (a INT, PRIMARY KEY);", "cannot read"),             # substring not found
    ("CREATE TABLE x.y (a INT, PRIMARY KEY (a);", "unbalanced parentheses"),
])
@pytest.mark.parametrize("skip_bad", [False, True])
def test_import_malformed_schema_is_one_line(tmp_path, capsys, create, why, skip_bad):
    schema = tmp_path / "s.sql"
    schema.write_text("USE x;\n\n" + create + "\n")
    rc, _, err = run(["import", MDB, "--schema", schema, "-o", tmp_path / "t.jsonl"] +
                     (["--skip-bad"] if skip_bad else []), capsys)
    assert rc == 2 and not (tmp_path / "t.jsonl").exists()
    one_error_line(err, where=rf"s\.sql:3: cannot read schema: .*{why}")


def test_malformed_create_table_in_the_log_makes_the_table_unknown():
    from commitsched.importers.schema import Catalog
    c = Catalog()
    c.apply_ddl("CREATE TABLE d.t (a INT, UNIQUE KEY ())", None)
    assert c.get("d", "t") is None and "unreadable CREATE TABLE" in c.unknown[("d", "t")]


# ---------------------------------------------------------------- downstream

def test_check_one_transaction_zero_cost(tmp_path, capsys):
    t = write_trace(tmp_path / "z.jsonl", [{"seq": 1, "writes": ["d.t/PRIMARY=1"], "exec": 0,
                                            "commit": 0}])
    rc, out, err = run(["check", t, "--scheduler", "serial", "--workers", "1,2"], capsys)
    assert rc == 0, err
    assert "SerialEquivalence: ok" in out


def test_serial_equivalence_zero_length_transactions_still_checked():
    """A zero-length transaction reads before its own commit: the check still catches a lost
    update between two zero-length transactions that overlap another writer."""
    from types import SimpleNamespace as NS
    from commitsched.properties import serial_equivalence
    txn = lambda s: NS(seq=s, writes=("k",))
    ok = [NS(seq=1, txn=txn(1), start=0.0, commit=0.0), NS(seq=2, txn=txn(2), start=0.0,
                                                            commit=0.0)]
    assert serial_equivalence(ok) == []
    # seq 2 starts (reads) before seq 1 commits: it read a stale value
    bad = [NS(seq=1, txn=txn(1), start=0.0, commit=5.0), NS(seq=2, txn=txn(2), start=1.0,
                                                             commit=6.0)]
    assert serial_equivalence(bad)


@pytest.mark.parametrize("argv", [["score", "--quiet"], ["bound", "--workers", "2"],
                                  ["report", "--quiet", "-o", "REP"]])
def test_costs_beyond_a_float(tmp_path, capsys, argv):
    t = write_trace(tmp_path / "h.jsonl", [
        {"seq": 1, "writes": ["d.t/PRIMARY=1"], "exec": 1e308, "commit": 1e308,
         "last_committed": 0, "sequence_number": 1},
        {"seq": 2, "writes": ["d.t/PRIMARY=2"], "exec": 1e308, "commit": 1,
         "last_committed": 0, "sequence_number": 2}])
    argv = [a.replace("REP", str(tmp_path / "rep")).replace("OUT", str(tmp_path / "out.txt"))
            for a in argv]
    rc, _, err = run([argv[0], t, *argv[1:]], capsys)
    assert rc == 2
    one_error_line(err, where="beyond what a float holds")


def test_report_all_zero_costs(tmp_path, capsys):
    t = write_trace(tmp_path / "z.jsonl", [
        {"seq": i, "writes": ["d.t/PRIMARY=1"], "exec": 0, "commit": 0,
         "last_committed": i - 1, "sequence_number": i} for i in range(1, 4)])
    for profile in ("ideal", "durable"):
        rc, _, err = run(["report", t, "-o", tmp_path / profile, "--quiet", "--profile",
                          profile], capsys)
        assert rc == 0, err
        assert (tmp_path / profile / "index.html").read_text().rstrip().endswith("</html>")


def test_nice_ticks_never_zero_width():
    from commitsched.report.figures import nice_ticks
    for lo, hi in [(0, 0), (0, 1e-12), (0, 1e-320), (1e20, 1e20), (0, float("inf")), (5, 2)]:
        t = nice_ticks(lo, hi)
        assert t[-1] >= t[0] and len(t) <= 40, (lo, hi, t)
        assert len(set(t)) > 1 or t[0] == 1e20, (lo, hi, t)   # 1e20 + 1 is 1e20 in a float


SURROGATE_TRACE = ('{"format":"commitsched-trace","version":1,"source":{}}\n'
                   '{"seq":1,"writes":["d.t/PRIMARY=1"],"gtid":"\\ud800x","exec":1,'
                   '"last_committed":0,"sequence_number":1}\n')


@pytest.mark.parametrize("argv", [["schedule", "--scheduler", "commit_order+mysql", "--workers",
                                   "2"], ["report", "--quiet", "-o", "REP"],
                                  ["score", "--quiet", "--json"],
                                  ["blame", "--scheduler", "commit_order+mysql", "--workers", "2",
                                   "-o", "OUT"]])
def test_lone_surrogate_in_a_gtid(tmp_path, argv):
    """Printed escaped (a real process: stdout is strict UTF-8), pages and files written (a
    file given with -o was a traceback: fuzz trace:blame, 2026-11-28)."""
    t = tmp_path / "s.jsonl"
    # a second transaction waits on the first, so that blame lists the first (and its gtid)
    t.write_text(SURROGATE_TRACE + '{"seq":2,"writes":["d.t/PRIMARY=1"],"exec":1,'
                                   '"last_committed":1,"sequence_number":2}\n')
    argv = [a.replace("REP", str(tmp_path / "rep")).replace("OUT", str(tmp_path / "out.txt"))
            for a in argv]
    r = subprocess.run([sys.executable, "-m", "commitsched", argv[0], str(t), *argv[1:]],
                       capture_output=True, text=True, errors="replace", timeout=300,
                       env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    if argv[0] == "schedule":
        assert "\\ud800x" in r.stdout
    if argv[0] == "report":
        assert "\\ud800x" in (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    if argv[0] == "blame":
        assert "\\ud800x" in (tmp_path / "out.txt").read_text(encoding="utf-8")


def test_no_command_is_one_error_line(capsys):
    rc, out, err = run([], capsys)
    assert rc == 2 and out == ""
    assert err.splitlines()[-1].startswith("commitsched: error: give a COMMAND")


# ---------------------------------------------------------------- bound's time limit

def _tiny_cost_recording(tmp_path) -> str:
    """80 transactions of a recording with sub-microsecond costs: z3 made `bound` run for
    minutes with no output before the time limit."""
    with gzip.open(os.path.join(ROOT, "traces", "recorded", "oltp_read_write_t8.jsonl.gz"),
                   "rt") as f:
        lines = [next(f) for _ in range(81)]
    txns = [json.loads(line) for line in lines[1:]]
    for i, t in enumerate(txns):
        t["exec"] = [1e-9, 3e-7, 1e-3, 1.7e-5][i % 4]
        t["commit"] = (i % 7) * 1e-7
    return write_trace(tmp_path / "tiny.jsonl", txns, json.loads(lines[0]))


def test_bound_time_limit_reports_the_best_bound_so_far(tmp_path, capsys):
    t = _tiny_cost_recording(tmp_path)
    rc, out, err = run(["bound", t, "--workers", "2", "--time-limit", "1", "--json"], capsys)
    assert rc == 0, err
    rows = {r["regime"]: r for r in json.loads(out)}
    assert set(rows) == {"in_order", "free"}
    for r in rows.values():
        assert r["time_limit"] == 1.0
        assert r["lower_bound"] >= max(r["work_bound"], r["span_bound"])
        if not r["exact"]:
            assert r["optimal"] is None and "lower bound" in r["kind"]
        # Reached exactly when some window was left unsolved: the clock alone says nothing
        # (all of free's windows solve in about 0.9 s on a quiet machine, not on a busy one).
        if not r["exact"]:
            assert r["time_limit_reached"] == (r["windows_solved"] < r["windows"]
                                               or "not tried" in r["kind"])
        else:
            assert not r["time_limit_reached"]


def test_bound_cut_short_by_the_solver_is_labelled(tmp_path, capsys, monkeypatch):
    """Every solve times out (z3 replaced): the best bound so far, labelled as cut short."""
    from commitsched.checks import z3_bound
    monkeypatch.setattr(z3_bound, "solve",
                        lambda *a, **k: z3_bound.Solution("timeout", lower=z3_bound.Fraction(0)))
    t = _tiny_cost_recording(tmp_path)
    rc, out, err = run(["bound", t, "--workers", "2", "--time-limit", "1", "--json"], capsys)
    assert rc == 0, err
    rows = json.loads(out)
    assert rows and all(r["time_limit_reached"] and not r["exact"] for r in rows)
    assert all(r["lower_bound"] >= max(r["work_bound"], r["span_bound"]) for r in rows)
    rc, out, err = run(["bound", t, "--workers", "2", "--time-limit", "1"], capsys)
    assert rc == 0 and "time ran out" in out


def test_bound_default_time_limit_is_documented():
    from commitsched.checks import bound_cli
    p = cli.build_parser()
    help_text = p._subparsers._group_actions[0].choices["bound"].format_help()
    assert f"default {bound_cli.DEFAULT_TIME_LIMIT:g}" in re.sub(r"\s+", " ", help_text)


# ---------------------------------------------------------------- commit_id without cid

def test_mariadb_trace_without_any_cid_each_its_own_group(tmp_path, capsys):
    """The worked example of docs/schedulers.md: three transactions with no cid (a primary
    with one client). Conservative: each is its own GCO, so T2 starts when T1 reaches its
    commit (exec end 100) and T3 when T2 does; optimistic runs them speculatively at once."""
    t = write_trace(tmp_path / "n.jsonl", [
        {"seq": i, "writes": [f"d.t/PRIMARY={i}"], "gtid": f"0-1-{i}",
         "flags": ["allow_parallel", "transactional"], "exec": 100, "commit": 10}
        for i in (1, 2, 3)])
    rc, out, err = run(["schedule", t, "--scheduler", "commit_id+mariadb_conservative",
                        "--workers", "3", "--json"], capsys)
    assert rc == 0, err
    runs = json.loads(out)
    assert [r["start"] for r in runs] == [0, 100, 200]
    assert [r["commit"] for r in runs] == [110, 210, 310]
    rc, out, _ = run(["schedule", t, "--scheduler", "commit_id+mariadb_optimistic",
                      "--workers", "3", "--json"], capsys)
    assert [r["start"] for r in json.loads(out)] == [0, 0, 0]


@pytest.mark.parametrize("name", ["oltp_read_write_t1", "oltp_update_index_t1"])
def test_single_client_recordings_score_under_every_mariadb_scheduler(tmp_path, capsys, name):
    path = os.path.join(ROOT, "traces", "recorded", f"{name}.jsonl.gz")
    assert all(t.commit_id is None for t in load_trace(path))      # no cid at all
    scheds = [f"commit_id+mariadb_{m}" for m in ("conservative", "optimistic", "aggressive")]
    argv = ["score", path, "--workers", "1,4", "--json", "--quiet", "--z3-bound", "off"]
    for s in scheds:
        argv += ["--scheduler", s]
    rc, out, err = run(argv, capsys)
    assert rc == 0, err
    got = {(r["scheduler"], r["workers"]) for r in json.loads(out) if "error" not in r}
    assert got == {(s, w) for s in scheds for w in (1, 4)}


def test_mysql_trace_still_refused_by_commit_id(capsys):
    path = os.path.join(ROOT, "traces", "examples", "oltp_rw_1client.jsonl")
    rc, _, err = run(["schedule", path, "--scheduler", "commit_id+mariadb_conservative",
                      "--workers", "2"], capsys)
    assert rc == 2
    one_error_line(err, where="MySQL last_committed/sequence_number .* use commit_order")


# ---------------------------------------------------------------- interrupted mid-write

def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_generate_leaves_nothing_half_written(tmp_path, sig):
    out = tmp_path / "g.jsonl.gz"
    # SIGINT back to its default in the child: a shell without job control starts background
    # jobs with SIGINT ignored, and a child that inherits that runs to its end (2M
    # transactions: past the timeout on a loaded machine), testing nothing
    p = subprocess.Popen([sys.executable, "-m", "commitsched", "generate", "--transactions",
                          "2000000", "-o", str(out), "--quiet"], stderr=subprocess.PIPE,
                         text=True, preexec_fn=_sigint_default)
    # wait until it is writing: its temporary file exists
    for _ in range(600):
        if any(n.startswith(".tmp-") for n in os.listdir(tmp_path)) or p.poll() is not None:
            break
        time.sleep(0.1)
    p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    assert p.returncode in (0, 130, 143), err
    assert "Traceback" not in err
    assert [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")] == []
    if out.exists():                       # it finished first: then it is whole
        load_trace(str(out))
    else:
        assert p.returncode == 130 + 13 * (sig == signal.SIGTERM)


# ---------------------------------------------------------------- the harness's own checks

def test_fuzz_run_cli_sees_a_traceback(monkeypatch):
    def boom(argv):
        raise KeyError("planted")
    monkeypatch.setattr(cli, "main", boom)
    o = fuzz.run_cli(["validate", "x"], per_run=10)
    assert o.problem and o.problem.startswith("traceback at") and "KeyError" in o.problem


def test_fuzz_run_cli_sees_a_hang(monkeypatch):
    def slow(argv):
        time.sleep(30)
    monkeypatch.setattr(cli, "main", slow)
    o = fuzz.run_cli(["validate", "x"], per_run=0.5)
    assert o.problem and o.problem.startswith("hang")


def test_fuzz_run_cli_sees_an_unexplained_exit(monkeypatch):
    monkeypatch.setattr(cli, "main", lambda argv: 2)
    assert "without a 'commitsched: error:' line" in fuzz.run_cli(["x"], per_run=5).problem
    monkeypatch.setattr(cli, "main", lambda argv: 3)
    assert "exit status 3" in fuzz.run_cli(["x"], per_run=5).problem


def test_fuzz_runner_sees_an_abort_and_keeps_going(monkeypatch):
    """A native extension that aborts the process (the binary reader's failed allocation,
    2026-11-28, ended a whole campaign without a finding): in the forked worker it is a finding
    with what the worker wrote to its stderr, and the next run gets a fresh worker; runs that
    report come back as `run_cli` gives them, one worker for many."""
    import os

    def main(argv):
        if argv[0] == "abort":
            os.write(2, b"memory allocation of 8198552921648689613 bytes failed\n")
            os.abort()
        return int(argv[0])
    monkeypatch.setattr(cli, "main", main)
    runner = fuzz.Runner()
    try:
        assert runner(["0"], per_run=5).problem is None
        first = runner.pid
        assert "exit status 3" in runner(["3"], per_run=5).problem
        assert runner.pid == first                      # the same worker
        o = runner(["abort"], per_run=10)
        assert o.problem.startswith("process died (killed by signal 6)")
        assert "memory allocation of 8198552921648689613 bytes failed" in o.problem
        o = runner(["0"], per_run=5)
        assert o.problem is None and o.rc == 0 and runner.pid not in (None, first)
    finally:
        runner.close()


def test_fuzz_runner_kills_a_worker_deaf_to_its_alarm(monkeypatch):
    """A run stuck where the alarm cannot reach it (native code; here the signal blocked) gets
    no answer past twice its limit and a grace: the worker is killed, a hang is reported."""
    import signal as sig

    def deaf(argv):
        sig.pthread_sigmask(sig.SIG_BLOCK, {sig.SIGALRM})
        time.sleep(60)
    monkeypatch.setattr(cli, "main", deaf)
    runner = fuzz.Runner(grace=0.5)
    try:
        o = runner(["x"], per_run=0.2)
        assert o.problem.startswith("hang: no answer after 0.9 s") and runner.pid is None
    finally:
        runner.close()


def test_fuzz_check_outputs_sees_half_written_files(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(HEADER) + '\n{"seq":1,"writes":[]}\n')
    assert fuzz.check_outputs(str(tmp_path), [str(good)], 0) is None
    cut = tmp_path / "cut.jsonl"
    cut.write_text(json.dumps(HEADER) + '\n{"seq":1,"wri')
    assert "half-written" in fuzz.check_outputs(str(tmp_path), [str(cut)], 0)
    cut.unlink()
    page = tmp_path / "rep"
    page.mkdir()
    (page / "index.html").write_text("<html><body>" + fuzz.MARKER + "</body></html>")
    assert "unescaped" in fuzz.check_outputs(str(tmp_path), [str(page)], 0)
    (page / "index.html").unlink()
    (tmp_path / ".tmp-xyz").write_text("")
    assert "temporary file" in fuzz.check_outputs(str(tmp_path), [], 0)


def test_fuzz_campaign_smoke(tmp_path):
    """A few seconds of the campaign in-process: a batch of the importer and command-line
    targets, no finding (the whole campaign is `make fuzz`)."""
    c = fuzz.Campaign(str(tmp_path), per_run=20, seed=3)
    for fn in (c.target_import, c.target_args):
        c._batch(fn, 3)
    c.runner.close()
    s = c.summary(1.0)
    assert s["targets"]["import:text"]["inputs"] == 8
    assert s["targets"]["args"]["inputs"] == 8
    assert s["findings"] == {"traceback": 0, "hang": 0, "half-written": 0, "other": 0}, s


# ---------------------------------------------------------------- the trace loader

def _gz_corrupt(tmp_path) -> str:
    data = bytearray(gzip.compress((json.dumps(HEADER) + "\n" +
                                    '{"seq":1,"writes":[]}\n' * 2000).encode(), mtime=0))
    data[10] ^= 0xFF          # the first deflate byte: zlib.error "invalid distance too far back"
    p = tmp_path / "c.jsonl.gz"
    p.write_bytes(bytes(data))
    return str(p)


LOADER_CASES = {
    "corrupt_gzip": _gz_corrupt,
    "deep_nesting": lambda tmp: write_trace(tmp / "d.jsonl", [{"seq": 1, "writes": []}])
    and _append(tmp / "d.jsonl", "[" * 100000 + "]" * 100000),
    "huge_int": lambda tmp: _raw(tmp, '{"seq":1,"writes":[],"commit_id":' + "9" * 5000 + "}"),
    "dict_in_before_images": lambda tmp: _raw(tmp, '{"seq":1,"writes":["d.t/P=1"],'
                                                   '"before_images":[{}]}'),
    "list_in_flags": lambda tmp: _raw(tmp, '{"seq":1,"writes":[],"flags":[["waited"]]}'),
}


def _append(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")
    return str(path)


def _raw(tmp, line):
    p = tmp / "r.jsonl"
    p.write_text(json.dumps(HEADER) + "\n" + line + "\n")
    return str(p)


@pytest.mark.parametrize("case", sorted(LOADER_CASES))
def test_trace_loader_bad_input_is_one_line(tmp_path, capsys, case):
    path = LOADER_CASES[case](tmp_path)
    # lag streams every trace into columns (the core's loader first): a damaged gzip stream was
    # a traceback there (fuzz trace:lag, isal's error is not an OSError)
    for command in (["validate"], ["score", "--quiet"],
                    ["lag", "--quiet", "--scheduler", "serial", "--jobs", "1"]):
        rc, _, err = run([command[0], path, *command[1:]], capsys)
        assert rc == 2
        one_error_line(err, where=r":\d+: ")


def test_trace_loader_dev_zero_ends():
    r = subprocess.run([sys.executable, "-m", "commitsched", "validate", "/dev/zero"],
                       capture_output=True, text=True, errors="replace", timeout=20)
    assert r.returncode == 2
    one_error_line(r.stderr, where=r"/dev/zero:1: ")


@pytest.mark.parametrize("raised, code, said", [("KeyboardInterrupt", 130, "interrupted"),
                                                ("Terminated", 143, "terminated")])
def test_a_signal_while_the_parser_starts_is_one_line(monkeypatch, capsys, raised, code, said):
    """Ctrl-C (or SIGTERM) that lands while the parser is built (its plugins import) ends in one
    line like one that lands mid-command; it was a traceback (fuzz signal:annotate, under load)."""
    from commitsched import cli
    exc = KeyboardInterrupt if raised == "KeyboardInterrupt" else cli.Terminated

    def interrupted():
        raise exc()
    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["score", "x"]) == code
    err = capsys.readouterr().err
    assert err.strip() == f"commitsched: {said}"
