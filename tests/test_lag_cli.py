"""`commitsched lag`, `calibrate` and the report's "Keeping up" answer as a DBA uses them: the
mistakes people make answered in one line before any work, JSON that strict parsers read,
words that do not call a growing lag bounded, and the same bytes for the same input. Small
traces only (each test well under a second or two)."""
import json
import os

import pytest

from commitsched import lag as lag_module
from commitsched.cli import _emit, main
from commitsched.profiles import ProfileError, get_profile
from commitsched.replay import ReplayError, source_times
from commitsched.report import keeping_up
from commitsched.trace import trace_from_dicts, write_trace

EPOCH = 1_790_000_000


def _write(tmp_path, rows, name="t.jsonl"):
    path = str(tmp_path / name)
    write_trace(path, trace_from_dicts(rows).txns)
    return path


def _independent(n, gap, exec_us=100.0, start=EPOCH + 0.5):
    """n transactions on distinct rows, `gap` seconds apart (µs stamps), `exec_us` each."""
    return [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "commit_id": 1,
             "last_committed": min(i - 1, 1), "sequence_number": i, "exec": exec_us,
             "timestamp": round(start + (i - 1) * gap, 6)} for i in range(1, n + 1)]


def _lag(args, capsys):
    rc = main(["lag", *args, "--quiet", "--jobs", "1"])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_is_strict_when_the_backlog_takes_no_time(tmp_path, capsys):
    """Costless transactions under the `ideal` profile apply in no time: the apply rate has no
    finite value, and `Infinity` is not JSON (jq reads it as 1.8e308, JSON.parse refuses it)."""
    path = _write(tmp_path, _independent(5, 0.001, exec_us=0.0))
    rc, out, _ = _lag([path, "--profile", "ideal", "--scheduler", "serial", "--json",
                       "--backlog", "1s"], capsys)
    assert rc == 0

    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")
    (row,) = json.loads(out, parse_constant=refuse)
    assert row["apply_rate"] is None and row["straight_line_headroom"] is None
    assert row["straight_line_drain_s"] == 0.0


def test_costs_past_what_a_float_sums_are_refused_in_one_line(tmp_path, capsys):
    """Transactions of 1e307 µs each (fuzz trace:report): their lags' mean overflowed, and `lag`
    said the replica keeps up with headroom 1000 and a mean lag of Infinity (not JSON)."""
    path = _write(tmp_path, _independent(30, 0.001, exec_us=1e307))
    rc, out, err = _lag([path, "--profile", "ideal", "--scheduler", "serial", "--json"], capsys)
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("commitsched: error: ")
    assert "beyond what a float holds" in lines[0]


@pytest.mark.parametrize("rows,said", [
    ([{"seq": 1, "writes": [], "timestamp": EPOCH + 0.5}], "one transaction"),
    ([{"seq": i, "writes": [], "timestamp": EPOCH + 0.5} for i in (1, 2, 3)],
     "all 3 transactions have the same source commit time"),
    ([{"seq": i, "writes": [], "timestamp": t}
      for i, t in enumerate([EPOCH + 9.5, EPOCH + 4.25, EPOCH + 1.0], 1)],
     "no source commit time is later than the first"),
])
def test_a_trace_without_a_pace_is_refused_in_one_line(tmp_path, capsys, rows, said):
    """Before: one transaction was given a one-second pace it never had; equal µs stamps a
    lap of 1 µs (millions of transactions a second, 'does not keep up')."""
    rc, out, err = _lag([_write(tmp_path, rows), "--profile", "ideal"], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and said in err


def test_one_second_stamps_all_in_one_second_are_a_pace():
    """MariaDB's whole seconds: three transactions in one second are spread over it."""
    times = source_times(trace_from_dicts(
        [{"seq": i, "writes": [], "timestamp": EPOCH} for i in (1, 2, 3)]).txns)
    times.check_pace()
    assert times.write_rate() == pytest.approx(3.0)


def test_stamps_that_go_back_are_said(tmp_path, capsys):
    path = _write(tmp_path, [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": 100.0,
                              "timestamp": t}
                             for i, t in enumerate([EPOCH + 0.5, EPOCH + 2.0, EPOCH + 1.0,
                                                    EPOCH + 3.0], 1)])
    rc, out, _ = _lag([path, "--profile", "ideal", "--scheduler", "serial"], capsys)
    assert rc == 0
    assert "note: 1 transaction carries a source time earlier than the one before (by up to " \
           "1 s; the source's clock set back?), taken as arriving with the one before" \
           in " ".join(out.split())
    rc, out, _ = _lag([path, "--profile", "ideal", "--scheduler", "serial", "--json"], capsys)
    assert any("earlier than the one before" in n for n in json.loads(out)[0]["notes"])


def test_binlog_files_out_of_order_are_said():
    """The second file given ends an hour before the first does: given out of order. Within a
    file, MariaDB's whole-second stamps may go back (when a statement began): said as such."""
    rows = ([{"seq": i, "writes": [], "file": 1, "timestamp": EPOCH + 3600 + i}
             for i in range(1, 4)]
            + [{"seq": i, "writes": [], "file": 2, "timestamp": EPOCH + i - 3}
               for i in range(4, 7)]
            + [{"seq": 7, "writes": [], "file": 2, "timestamp": EPOCH + 2}])
    note = source_times(trace_from_dicts(rows).txns).held_back_note()
    assert note.startswith("the binlog files look out of order: 1 ends up to 3600 s before "
                           "the file given before it ends (give them in order); 4 transactions "
                           "carry a source time earlier than the one before (by up to 3602 s; "
                           "MariaDB, and MySQL before 8.0, stamp a transaction when its "
                           "statement began")


def test_a_replica_that_falls_behind_is_not_said_to_lag_at_most(tmp_path, capsys):
    """Transactions of 100 µs arriving every 50 µs: one worker falls 50 µs further behind with
    each, so each lap of 400 (20 ms) adds 20 ms of lag. 'It lags at most 20 ms' read as a
    bound; the lag has none."""
    path = _write(tmp_path, _independent(400, 50e-6))
    rc, out, _ = _lag([path, "--profile", "ideal", "--scheduler",
                       "commit_id+mariadb_conservative", "--workers", "1"], capsys)
    assert rc == 0
    said = out.split("\n\n")[2]
    assert "does not keep up" in said and "at most" not in said
    assert "its lag grows without bound: 20.0 ms behind at worst over the trace" in said
    assert "then 20.0 ms more every 20.0 ms of this pace" in said
    rc, out, _ = _lag([path, "--profile", "ideal", "--scheduler",
                       "commit_id+mariadb_conservative", "--workers", "1", "--json"], capsys)
    (row,) = json.loads(out)
    assert row["lag_growth_per_lap_s"] == pytest.approx(0.020, rel=1e-3)
    assert row["lap_s"] == pytest.approx(0.020)


def test_output_is_checked_before_the_replays(tmp_path, capsys, monkeypatch):
    """A folder, or a path under a file, given to -o: said at once, not after the replays
    (minutes on a day of binlog), and the message names the user's path, not a temporary
    file's."""
    path = _write(tmp_path, _independent(50, 0.001))

    def no_replays(*a, **k):
        raise AssertionError("replayed before the output was checked")
    monkeypatch.setattr(lag_module, "lag_sweep", no_replays)
    (tmp_path / "afile").write_text("x")
    for out_path, said in ((str(tmp_path), "is a folder"),
                           (str(tmp_path / "afile" / "x.txt"), "cannot write there")):
        rc, out, err = _lag([path, "--profile", "ideal", "-o", out_path], capsys)
        assert rc == 2 and err.count("\n") == 1 and said in err and out_path in err
    assert sorted(os.listdir(tmp_path)) == ["afile", "t.jsonl"]


def test_a_failed_write_names_the_users_path(tmp_path):
    (tmp_path / "afile").write_text("x")
    target = str(tmp_path / "afile" / "out.txt")
    with pytest.raises(OSError) as e:
        _emit("text", target)
    assert e.value.filename == target


def test_same_input_same_bytes(tmp_path, capsys):
    """Twice, and with the replays spread over two processes: identical output."""
    path = _write(tmp_path, _independent(300, 80e-6))
    args = [path, "--profile", "ideal", "--scheduler", "commit_id+mariadb_conservative",
            "--workers", "1,2,4", "--backlog", "5ms", "--json", "--quiet"]
    outs = []
    for jobs in ("1", "1", "2"):
        assert main(["lag", *args, "--jobs", jobs]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] == outs[2]


def test_a_trace_too_short_for_the_keeps_up_test_is_said(tmp_path, capsys):
    """The keeps-up test forgives two transactions' apply on each worker: 4 transactions at
    W=2 are 100% of a pass (said, in the text and in each JSON row); 400 transactions at W=4
    are 2% (not said)."""
    short = _write(tmp_path, _independent(4, 0.001), "short.jsonl")
    rc, out, _ = _lag([short, "--scheduler", "serial", "--workers", "1,2"], capsys)
    assert rc == 0
    said = " ".join(out.split())            # the note is wrapped at 100 columns
    assert "only 4 transactions" in said and "at W=2 that is 100% of the whole" in said
    assert "at least 80 transactions" in said
    rc, out, _ = _lag([short, "--scheduler", "serial", "--workers", "1,2", "--json"], capsys)
    assert all(any("only 4 transactions" in n for n in r["notes"]) for r in json.loads(out))
    long = _write(tmp_path, _independent(400, 0.001), "long.jsonl")
    rc, out, _ = _lag([long, "--scheduler", "serial", "--workers", "4"], capsys)
    assert rc == 0 and "keeps-up test forgives" not in out
    assert lag_module.short_trace_note(160, [4]) is None
    assert lag_module.short_trace_note(159, [4]) is not None


def test_help_says_what_the_figures_mean(capsys):
    with pytest.raises(SystemExit):
        main(["lag", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for term in ("keeps up: the lag stays bounded", "headroom: the largest factor",
                 "line: the straight-line extrapolation", "drain: from the restart",
                 "lag_growth_per_lap_s", "Durations: 90, 90s, 500ms"):
        assert term in text, term


@pytest.mark.parametrize("content,said", [
    ({"profiles": [{"name": "g", "cores": 2, "apply_cpu": 1.0, "cert_share": 0.1,
                    "fc_rtt": 1.0, "origin_cpu": 1.0}]}, "a cluster profile"),
    ({"format": "commitsched-replica-window", "version": 1, "samples": []},
     "a window recorded by `commitsched calibrate --record`, not a profile"),
    ({"profiles": [{"name": "a"}, {"name": "b"}]}, "found 2"),
])
def test_a_file_of_another_kind_is_named_for_what_it_is(tmp_path, content, said):
    """Before: 'unknown profile term(s) ... (written by a newer commitsched?)'."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ProfileError, match="^" + str(path)) as e:
        get_profile(str(path))
    assert said in str(e.value)


def test_a_trace_given_as_profile_is_named(tmp_path):
    path = _write(tmp_path, _independent(3, 0.001))
    with pytest.raises(ProfileError, match="a trace, not a profile"):
        get_profile(path)


def test_calibrate_checks_its_outputs_and_binlogs_before_the_replica(tmp_path, capsys):
    """An unreachable replica would say 'cannot connect'; what is wrong on this side is said
    first, before a live replica is sampled for a minute (its SQL thread perhaps stopped)."""
    (tmp_path / "afile").write_text("x")
    bad = str(tmp_path / "afile" / "p.json")
    unreachable = "mysql://root@127.0.0.1:1"
    for args, said in (
            (["-o", bad, "--binlog", str(tmp_path / "afile")], f"-o {bad}: cannot write"),
            (["--record", str(tmp_path)], "--record"),
            (["-o", str(tmp_path / "p.json"), "--binlog", str(tmp_path / "nope.000001")],
             "--binlog")):
        assert main(["calibrate", "--replica", unreachable, *args, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "cannot connect" not in err
    assert sorted(os.listdir(tmp_path)) == ["afile"]


def _section(configs, **over):
    d = {"timestamps": "µs", "write_rate": 100.0, "busiest_minute_rate": 250.0,
         "busiest_minute_at": "2026-11-27 02:10:00 UTC", "longer_than_a_minute": True,
         "held_back": None, "configs": configs}
    d.update(over)
    return keeping_up.answer(d)


def _config(**over):
    c = {"scheduler": "commit_id+mariadb_optimistic", "workers": 8, "keeps_up": True,
         "headroom": 1.9, "headroom_is_bound": False, "max_lag_s": 40.0,
         "max_lag_at": "2026-11-27 02:10:00 UTC", "straight_line_headroom": 2.4,
         "lag_growth_per_lap_s": 0.0, "lap_s": 86400.0}
    c.update(over)
    return c


def test_the_keeping_up_answer_reads_like_the_issues_example():
    """'With 8 optimistic workers this replica keeps up with 1.9x today's busiest minute; the
    batch at 02:10 makes it lag 40 s.'"""
    first = _section([_config()])[0]
    assert first.startswith("With 8 workers, `commit_id+mariadb_optimistic` keeps up with "
                            "1.90x today's pace, busiest minute included; its worst lag is "
                            "40.0 s, at 2026-11-27 02:10:00 UTC")
    assert "gives 2.40x" in first


def test_the_keeping_up_answer_never_bounds_a_growing_lag():
    first = _section([_config(keeps_up=False, headroom=0.6, max_lag_s=600.0,
                              lag_growth_per_lap_s=3600.0)])[0]
    assert "does not keep up: it applies 0.60x of today's pace" in first
    assert "at most" not in first and "grows without bound" in first
    assert "then 1.0 h more every 24.0 h of this pace" in first
    # at the search's floor: a bound, not '0.00x'
    first = _section([_config(keeps_up=False, headroom=0.001, headroom_is_bound=True)])[0]
    assert "applies less than 0.001x of today's pace" in first


def test_the_keeping_up_answer_says_what_it_cannot_see():
    lines = _section([_config()], longer_than_a_minute=False,
                     held_back="2 transactions carry a source commit time earlier than ...")
    assert "busiest minute" not in " ".join(lines)
    assert "2 Transactions" not in lines[-1] and lines[-1].startswith("2 transactions carry")


def test_the_report_section_says_why_a_trace_without_a_pace_is_not_answered():
    trace = trace_from_dicts([{"seq": 1, "writes": [], "timestamp": EPOCH + 0.5}])

    class One:
        txns = staticmethod(lambda: iter(trace.txns))
    assert "one transaction" in keeping_up.plan(
        None, One, None, [("serial", 1)], [1], tracker_options=None, applier_options=None,
        bugs=frozenset(), sample=None)["skipped"]


def test_replay_error_is_a_value_error_said_in_one_line():
    """The refusal is the replay's own error: `lag` and the report turn it into one line."""
    times = source_times(trace_from_dicts([{"seq": 1, "writes": [], "timestamp": 1.0}]).txns)
    with pytest.raises(ReplayError):
        times.check_pace()


def test_report_checks_its_folder_before_the_runs(tmp_path, capsys, monkeypatch):
    from commitsched.report import analysis

    def no_runs(*a, **k):
        raise AssertionError("ran before the output was checked")
    monkeypatch.setattr(analysis, "build_report", no_runs)
    path = _write(tmp_path, _independent(20, 0.001))
    (tmp_path / "afile").write_text("x")
    for out_path, said in ((str(tmp_path / "afile"), "is a file"),
                           (str(tmp_path / "afile" / "r"), "cannot write there")):
        assert main(["report", path, "-o", out_path, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and out_path in err


def test_a_replica_slower_than_the_source_is_said_never_to_drain_at_once(monkeypatch):
    """30 transactions applied 2% slower than they arrive: the keeps-up test forgives the
    appliers' jitter on a trace this short, so the headroom comes out above 1, but the backlog
    of a stop never shrinks. The drain used to double its laps to the most it replays (20 M
    transactions, twice: a minute; fuzz, 2026-11-28); it now says so after its first attempt."""
    from commitsched import replay
    monkeypatch.setattr(replay, "DRAIN_MAX_TRANSACTIONS", 30 * 200_000)
    trace = trace_from_dicts(_independent(30, 100e-6, exec_us=102.0))
    rep = replay.Replayer(lambda: iter(trace.txns), source_times(trace.txns),
                          "commit_order+mysql", 1, get_profile("ideal"))
    assert rep.closed_makespan() > rep.times.period and rep.keeps_up(1.0)
    headroom, _ = rep.headroom()
    assert headroom > 1.0
    before = rep.runs
    drain, why = rep.drain(2e5, headroom=headroom)
    assert drain is None and "did not shrink" in why and "never drains" in why
    assert rep.runs - before == 2
    # a replica that does apply faster than the source still drains
    fast = trace_from_dicts(_independent(30, 100e-6, exec_us=50.0))
    rep = replay.Replayer(lambda: iter(fast.txns), source_times(fast.txns),
                          "commit_order+mysql", 1, get_profile("ideal"))
    drain, why = rep.drain(10_000.0, headroom=rep.headroom()[0])
    assert why is None and drain == pytest.approx(10_000.0, rel=0.05)


@pytest.mark.parametrize("args,said", [
    (["--window", "0"], "--window must be longer than 0"),
    (["--window", "10s", "--probe", "5s", "--probe-at", "20s"], "after the window ends"),
])
def test_calibrate_refuses_a_window_that_cannot_be_what_was_asked(tmp_path, capsys, args,
                                                                   said):
    """Before: --window 0 sampled once; a probe set after the window's end never ran, silently."""
    assert main(["calibrate", "--replica", "mysql://root@127.0.0.1:1", "--record",
                 str(tmp_path / "w.json"), *args, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err


def test_worker_counts_no_server_takes_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["lag", "t.jsonl", "--workers", "4,100000"])
    assert "at most 16383 workers" in capsys.readouterr().err


def test_a_long_stop_on_a_short_trace_stays_within_the_horizon(monkeypatch):
    """--backlog 1000 s on a 20 ms trace with headroom 2: the straight line's estimate asked
    for 150,000 laps (60 M transactions), replayed whole before the horizon was looked at."""
    from commitsched import replay
    monkeypatch.setattr(replay, "DRAIN_MAX_TRANSACTIONS", 8000)
    trace = trace_from_dicts(_independent(400, 50e-6))
    rep = replay.Replayer(lambda: iter(trace.txns), source_times(trace.txns),
                          "commit_id+mariadb_conservative", 4, get_profile("ideal"))
    plain = replay.Replayer.replay

    def bounded(self, pace=1.0, laps=1, hold=None):
        assert laps * 400 <= 8000, f"{laps} laps replayed"
        return plain(self, pace, laps, hold)
    monkeypatch.setattr(replay.Replayer, "replay", bounded)
    drain, why = rep.drain(1000e6, headroom=2.0)
    assert drain is None and "not drained within 20 laps" in why
    # a stop the horizon holds still drains
    drain, why = rep.drain(10_000.0, headroom=2.0)
    assert why is None and drain == pytest.approx(10_000.0, rel=0.03)


@pytest.mark.parametrize("args,said", [
    (["--base", "replica61", "-o", "p.json", "--binlog", "b.000001"], "unknown profile"),
    (["-o", "p.json", "--binlog", "b.000001", "--source", "mysql://root@h"], "not both"),
])
def test_calibrate_says_a_wrong_option_before_sampling(tmp_path, capsys, monkeypatch, args,
                                                      said):
    (tmp_path / "b.000001").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--replica", "mysql://root@127.0.0.1:1", *args, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "cannot connect" not in err


class _FakeServer:
    """A connection whose SHOW SLAVE STATUS returns `status` (one row, or none)."""

    def __init__(self, status):
        self.status = status

    def cursor(self):
        server = self

        class Cursor:
            description = None

            def __enter__(self):
                return self

            def __exit__(self, *a):
                return False

            def execute(self, sql):
                assert sql in ("SHOW SLAVE STATUS", "SHOW REPLICA STATUS")
                self.description = [(k,) for k in server.status or {"x": 1}]

            def fetchall(self):
                return [tuple(server.status.values())] if server.status else []
        return Cursor()


def test_calibrate_refuses_a_replica_whose_sql_thread_is_stopped():
    """Before: the window sampled nothing applied, and --probe started again the SQL thread
    its DBA had stopped."""
    from commitsched.calibrate_replica import check_applying
    from commitsched.replica_live import LiveError
    check_applying(_FakeServer({"Slave_SQL_Running": "Yes"}), "mariadb")
    check_applying(_FakeServer({"Replica_SQL_Running": "Yes"}), "mysql")
    with pytest.raises(LiveError, match=r"SQL thread is not running \(SQL_Running: No; last "
                                        r"error: Duplicate entry.*START SLAVE SQL_THREAD"):
        check_applying(_FakeServer({"Slave_SQL_Running": "No",
                                    "Last_SQL_Error": "Duplicate entry '1'"}), "mariadb")
    with pytest.raises(LiveError, match="not a replica"):
        check_applying(_FakeServer(None), "mariadb")


def test_lag_on_a_cluster_takes_binlogs_as_lag_does(capsys):
    """`lag BINLOG --system galera`: the binlog imported as for a replica (before: 'cannot
    read: utf-8 codec can't decode' on a binary binlog, the trace loader reading it)."""
    binlog = os.path.join(os.path.dirname(__file__), "fixtures", "binlog",
                          "mysql80_binlog.000001.txt")
    rc, out, err = _lag([binlog, "--system", "galera", "--workers", "1", "--json"], capsys)
    assert rc == 0, err
    (row,) = json.loads(out)
    assert row["system"] == "galera" and row["keeps_up"] in (True, False)


@pytest.mark.parametrize("extra, named", [(["--tz", "Europe/Paris"], "--tz"),
                                           (["--backlog", "1h"], "--backlog"),
                                           (["--delay", "2s", "--scheduler", "serial"],
                                            "--scheduler, --delay")])
def test_lag_on_a_cluster_refuses_what_only_a_replica_answers(capsys, extra, named):
    """A cluster's replay has no stop, no delivery delay, no scheduler and prints no clock
    time: those options are refused in one line, not silently ignored."""
    binlog = os.path.join(os.path.dirname(__file__), "fixtures", "binlog",
                          "mysql80_binlog.000001.txt")
    rc, out, err = _lag([binlog, "--system", "galera", "--workers", "1"] + extra, capsys)
    assert rc == 2 and out == ""
    assert f"lag --system galera: {named} appl" in err and "Traceback" not in err
    assert err.strip().count("\n") == 0


def test_a_drain_ends_when_the_last_held_transaction_commits(tmp_path, capsys):
    """A transaction a minute, 100 µs each: a 10 s stop at the start holds the first one back;
    it commits 100 µs after the restart, and nothing else waited. Before: 'drains in 50 s'
    (the next transaction's commit, a minute after the first's), and a stop in which nothing
    arrived (30 s to 40 s) 'drained in 20 s'."""
    path = _write(tmp_path, [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": 100.0,
                              "timestamp": EPOCH + 0.5 + 60 * (i - 1)} for i in range(1, 11)])
    for at, drain in (("0s", 100e-6), ("30s", 0.0)):
        rc, out, _ = _lag([path, "--profile", "ideal", "--scheduler", "serial", "--backlog",
                           "10s", "--backlog-at", at, "--json"], capsys)
        assert rc == 0
        assert json.loads(out)[0]["drain_s"] == pytest.approx(drain, abs=1e-9)
