"""What a DBA's-eye review of `lag`, `import` and `calibrate` found missing (issue 27's follow-up,
docs/lag.md): clock times for --backlog-at, the worst lag's cause, binlog files out of order or
with a hole, the probe's privilege checked first, a port out of range said as such, progress
within a configuration, headroom bounds drawn as bounds. Small traces, each test in seconds."""
import datetime
import json
import os
import re

import pytest

from commitsched.cli import main
from commitsched.importers import import_binlog
from commitsched.lag import lag_sweep
from commitsched.profiles import get_profile
from commitsched.replay import source_times
from commitsched.replica_live import LiveError, parse_url, probe_privilege_missing
from commitsched.trace import TraceError, load_trace, trace_from_dicts, write_trace

EPOCH = 1_790_000_000            # 2026-09-21 14:13:20 UTC
FIX = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
MYSQL1 = os.path.join(FIX, "mysql80_binlog.000001.txt")
MYSQL2 = os.path.join(FIX, "mysql80_binlog.000002.txt")


def _trace(tmp_path, spec, name="t.jsonl"):
    """`spec`: (count, gap s, exec µs, commit id of a seq or None: its own) runs, one after
    another, from EPOCH + 0.5 s; each transaction on its own row."""
    rows, t, seq = [], EPOCH + 0.5, 0
    for count, gap, exec_us, cid in spec:
        for _ in range(count):
            seq += 1
            rows.append({"seq": seq, "writes": [f"d.t/PRIMARY={seq}"],
                         "commit_id": cid(seq) if cid else seq, "exec": exec_us,
                         "timestamp": round(t, 6)})
            t += gap
    path = str(tmp_path / name)
    write_trace(path, trace_from_dicts(rows).txns)
    return path


def _lag(capsys, *args):
    rc = main(["lag", *args, "--profile", "ideal", "--quiet", "--jobs", "1"])
    out, err = capsys.readouterr()
    return rc, out, err


# 1. --backlog-at as a clock time ---------------------------------------------------------

def _hour(tmp_path):
    """61 transactions a minute apart: 14:13:20.5 to 15:13:20.5 UTC on 2026-09-21."""
    return _trace(tmp_path, [(61, 60.0, 100.0, None)])


@pytest.mark.parametrize("at", ["14:40", "14:40:00", "2026-09-21T14:40", "2026-09-21 14:40:00",
                                "2026-09-21T16:40+02:00"])
def test_backlog_at_takes_a_clock_time_in_utc(tmp_path, capsys, at):
    rc, out, _ = _lag(capsys, _hour(tmp_path), "--scheduler", "serial", "--backlog", "10s",
                      "--backlog-at", at, "--json")
    assert rc == 0
    (row,) = json.loads(out)
    assert row["backlog_at"] == "2026-09-21T14:40:00+00:00"          # UTC, ISO 8601
    assert row["backlog_at_s"] == pytest.approx(26 * 60 + 39.5)
    assert any(n.startswith("the SQL thread stops at 2026-09-21 14:40:00 UTC") and "UTC" in n
               for n in row["notes"])


def test_the_text_says_which_zone_a_clock_time_was_read_in(tmp_path, capsys):
    rc, out, _ = _lag(capsys, _hour(tmp_path), "--scheduler", "serial", "--backlog", "10s",
                      "--backlog-at", "14:40")
    assert rc == 0
    assert "read as UTC, the zone of the binlog's timestamps" in " ".join(out.split())


@pytest.mark.parametrize("at,said", [
    ("14:00", "is not in the binlog: its commits run from 2026-09-21 14:13:20 to "
              "2026-09-21 15:14:20 UTC"),
    ("2026-09-22T14:40", "is not in the binlog"),
    ("2026-09-21T14:40+05:00", "is not in the binlog"),
])
def test_a_clock_time_outside_the_binlog_is_refused_in_one_line(tmp_path, capsys, at, said):
    rc, out, err = _lag(capsys, _hour(tmp_path), "--backlog", "10s", "--backlog-at", at)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and said in err and "read as UTC" in err


def test_a_time_of_day_on_two_days_asks_for_the_date(tmp_path, capsys):
    path = _trace(tmp_path, [(40, 3600.0, 100.0, None)])    # 14:13 UTC to 05:13 two days on
    rc, _, err = _lag(capsys, path, "--backlog", "10s", "--backlog-at", "15:00")
    assert rc == 2 and err.count("\n") == 1
    assert "falls on 2 days of the binlog (2026-09-21, 2026-09-22): give the date too" in err


def test_a_clock_time_on_a_trace_without_clock_times_is_refused(tmp_path, capsys):
    path = str(tmp_path / "g.jsonl")
    write_trace(path, trace_from_dicts([{"seq": i, "writes": [], "timestamp": 0.5 * i}
                                        for i in range(1, 5)]).txns)
    rc, _, err = _lag(capsys, path, "--backlog", "1s", "--backlog-at", "02:10")
    assert rc == 2 and "count from its start, not clock times" in err


@pytest.mark.parametrize("at", ["25:00", "2026-13-01T02:00", "soon"])
def test_what_is_no_time_is_said(capsys, at):
    with pytest.raises(SystemExit):
        main(["lag", "t.jsonl", "--backlog", "1s", "--backlog-at", at])
    err = capsys.readouterr().err
    assert "--backlog-at" in err and "Traceback" not in err


# 2. the worst lag's cause ------------------------------------------------------------------

def _cause(tmp_path, capsys, spec, *args):
    rc, out, _ = _lag(capsys, _trace(tmp_path, spec), "--json", *args)
    assert rc == 0
    (row,) = json.loads(out)
    return row, row["max_lag_cause"]


def test_a_burst_is_named_with_when_and_how_fast(tmp_path, capsys):
    """1 ms transactions on one thread (1,000/s), written 500/s, then 300 at 4,000/s from
    0.4 s in: the queue the burst leaves is the worst lag."""
    row, cause = _cause(tmp_path, capsys,
                        [(200, 2e-3, 1000.0, None), (300, 0.25e-3, 1000.0, None),
                         (500, 2e-3, 1000.0, None)], "--scheduler", "serial")
    assert cause["kind"] == "burst"
    assert cause["burst_rate"] == pytest.approx(4000, rel=0.05)
    assert cause["burst_transactions"] == pytest.approx(300, abs=2)
    assert cause["queued_behind"] > 200 and cause["apply_rate"] == pytest.approx(1000.0)
    assert cause["text"].startswith("a burst: the source wrote 301 transactions in 75.0 ms")
    for key in ("max_lag_s", "max_lag_at", "p99_lag_s"):          # the keys stay
        assert key in row


def test_one_big_transaction_is_named_with_its_size(tmp_path, capsys):
    """Half a second of work among 1 ms ones, four workers: nothing else commits meanwhile."""
    _, cause = _cause(tmp_path, capsys,
                      [(100, 2e-3, 1000.0, None), (1, 2e-3, 500_000.0, None),
                       (300, 2e-3, 1000.0, None)],
                      "--scheduler", "commit_id+mariadb_conservative", "--workers", "4")
    assert cause["kind"] == "big_transaction" and cause["big_seq"] == 101
    assert cause["big_exec_s"] == pytest.approx(0.5)
    assert "one big transaction: seq 101 executes for 500.0 ms, 500x the median" in cause["text"]


def test_a_big_transaction_read_from_a_binlog_names_its_gtid(tmp_path):
    from commitsched.lag import worst_lag_cause
    from commitsched.replay import Lap
    import numpy as np
    out = str(tmp_path / "m.jsonl")
    import_binlog([MYSQL1], out)
    trace = load_trace(out)
    times = source_times(trace.txns)
    n = times.count
    source = np.asarray(times.times)
    execs = np.full(n, 100.0)
    execs[2] = 4e6                                   # the third: 4 s
    commit = source + execs
    commit[3:] = np.maximum(commit[3:], commit[2] + 100.0)
    cause = worst_lag_cause(Lap(source, source, commit, execs), n, times,
                            lambda: iter(trace.txns), closed=float(execs.sum()))
    assert cause["kind"] == "big_transaction" and cause["big_seq"] == 3
    assert cause["big_gtid"] == "88ebc247-06ef-11ef-97ee-0242ac130004:3"
    assert "GTID 88ebc247-06ef-11ef-97ee-0242ac130004:3, 2 rows" in cause["text"]


def test_a_low_parallelism_stretch_is_named(tmp_path, capsys):
    """Groups of 8 apply 8 at a time; a stretch of 400 that each commit alone arrives at
    2,000/s, twice what one thread applies: they queue, the rest does not."""
    groups = lambda seq: (seq - 1) // 8 + 1              # noqa: E731
    _, cause = _cause(tmp_path, capsys,
                      [(1600, 0.5e-3, 1000.0, groups), (400, 0.5e-3, 1000.0, None),
                       (800, 0.5e-3, 1000.0, groups)],
                      "--scheduler", "commit_id+mariadb_conservative", "--workers", "8")
    assert cause["kind"] == "low_parallelism"
    assert cause["stretch_parallelism"] == pytest.approx(1.0, abs=0.1)
    assert cause["usual_parallelism"] > 3
    assert "a low-parallelism stretch" in cause["text"]


def test_a_lag_with_nothing_queued_ahead_is_its_own_apply(tmp_path, capsys):
    """1 ms transactions written 100 a second on one thread: none waits for another, so the
    worst lag is a transaction's own apply, not a stretch of one."""
    _, cause = _cause(tmp_path, capsys, [(300, 10e-3, 1000.0, None)], "--scheduler", "serial")
    assert cause["kind"] == "own_apply" and cause["queued_behind"] == 0
    assert cause["text"].startswith("its own apply")


def test_a_delivery_delay_is_named(tmp_path, capsys):
    _, cause = _cause(tmp_path, capsys, [(100, 0.1, 1000.0, None)], "--scheduler", "serial",
                      "--delay", "2s")
    assert cause["kind"] == "delivery_delay" and cause["delivery_delay_s"] == pytest.approx(2.0)


def test_the_cause_is_in_the_words(tmp_path, capsys):
    rc, out, _ = _lag(capsys, _trace(tmp_path, [(200, 2e-3, 1000.0, None),
                                                (300, 0.25e-3, 1000.0, None),
                                                (500, 2e-3, 1000.0, None)]),
                      "--scheduler", "serial")
    assert rc == 0
    assert re.search(r"it lags at most 226\.0 ms \([^)]*\), from a burst: the source wrote",
                     " ".join(out.split()))


def test_the_report_answer_names_the_cause():
    from commitsched.report import keeping_up
    lines = keeping_up.answer({
        "timestamps": "µs", "write_rate": 100.0, "busiest_minute_rate": 250.0,
        "busiest_minute_at": "x", "longer_than_a_minute": True, "held_back": None,
        "configs": [{"scheduler": "serial", "workers": 1, "keeps_up": True, "headroom": 1.9,
                     "headroom_is_bound": False, "max_lag_s": 40.0, "max_lag_at": "02:10",
                     "straight_line_headroom": 2.4, "lag_growth_per_lap_s": 0.0,
                     "lap_s": 60.0, "max_lag_cause": {"kind": "burst", "text": "a burst: X"}}]})
    assert "its worst lag is 40.0 s, at 02:10, from a burst: X" in lines[0]


# 3. binlog files out of order, or with a hole ---------------------------------------------

def test_binlog_files_out_of_order_are_refused_naming_file_and_gtid(tmp_path, capsys):
    out = str(tmp_path / "o.jsonl")
    assert main(["import", MYSQL2, MYSQL1, "-o", out, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and MYSQL1 in err
    assert ("binlog files out of order: this file's GTID 88ebc247-06ef-11ef-97ee-0242ac130004:1"
            " is not after 88ebc247-06ef-11ef-97ee-0242ac130004:7, where "
            "mysql80_binlog.000002.txt ended") in err
    assert not os.path.exists(out)


def test_one_file_given_twice_is_refused(tmp_path):
    with pytest.raises(TraceError, match="given twice"):
        import_binlog([MYSQL1, MYSQL1], str(tmp_path / "o.jsonl"))


def _with_gap(tmp_path, by):
    """mysql80_binlog.000002.txt with its GTIDs moved on by `by` (a file left out between)."""
    text = re.sub(r"(0242ac130004:)(\d+)'", lambda m: f"{m.group(1)}{int(m.group(2)) + by}'",
                  open(MYSQL2, encoding="utf-8").read())
    path = tmp_path / "binlog.000003.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_gtid_gap_between_files_is_a_warning_kept_in_the_header(tmp_path, capsys):
    out = str(tmp_path / "o.jsonl")
    later = _with_gap(tmp_path, 10)
    assert main(["import", MYSQL1, later, "-o", out]) == 0
    err = capsys.readouterr().err
    said = (f"{later}: starts at GTID 88ebc247-06ef-11ef-97ee-0242ac130004:16, but "
            f"mysql80_binlog.000001.txt ended at 88ebc247-06ef-11ef-97ee-0242ac130004:5: 10 "
            f"transactions")
    assert f"warning: {said}" in err and len([x for x in err.splitlines() if said in x]) == 1
    assert load_trace(out).source["import"]["file_gaps"][0].startswith(said)


def test_lag_notes_a_gap_between_its_binlogs(tmp_path, capsys):
    rc, out, _ = _lag(capsys, MYSQL1, _with_gap(tmp_path, 10), "--scheduler", "serial",
                      "--json")
    assert rc == 0
    assert any("10 transactions of stream" in n for n in json.loads(out)[0]["notes"])


def test_consecutive_files_say_nothing(tmp_path, capsys):
    assert main(["import", MYSQL1, MYSQL2, "-o", str(tmp_path / "o.jsonl")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_without_gtids_the_file_names_are_read():
    from commitsched.importers.continuity import name_warnings
    assert name_warnings(["d/binlog.000042", "d/binlog.000043"]) == []
    (back,) = name_warnings(["d/binlog.000043", "d/binlog.000042"])
    assert back.startswith("d/binlog.000042: given after binlog.000043, which its name says")
    (hole,) = name_warnings(["binlog.000042", "binlog.000045"])
    assert "2 binlog files between them by name not given" in hole


def test_help_says_which_is_refused_and_which_warned(capsys):
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "files whose GTIDs go back (out of order, or one given twice) are refused" in text
    assert "a GTID gap) are a warning" in text


# 4. the probe's privilege, checked before the window -----------------------------------------

@pytest.mark.parametrize("version,grants,missing", [
    ("10.11.6-MariaDB-log", ["GRANT REPLICA MONITOR ON *.* TO `m`@`%`"],
     "needs REPLICATION SLAVE ADMIN or SUPER on MariaDB 10.11.6; this user has REPLICA MONITOR"),
    ("10.11.6-MariaDB", ["GRANT SUPER ON *.* TO `m`@`%`"], None),
    ("10.11.6-MariaDB", ["GRANT REPLICATION SLAVE ADMIN, REPLICA MONITOR ON *.* TO `m`@`%`"],
     None),
    ("11.4.2-MariaDB", ["GRANT SUPER ON *.* TO `m`@`%`"],
     "needs REPLICATION SLAVE ADMIN on MariaDB 11.4.2; this user has SUPER"),
    ("10.4.30-MariaDB", ["GRANT REPLICATION CLIENT ON *.* TO `m`@`%`"], "needs SUPER on"),
    ("8.0.36", ["GRANT REPLICATION CLIENT ON *.* TO `m`@`%`",
                "GRANT REPLICATION_SLAVE_ADMIN ON *.* TO `m`@`%`"], None),
    ("8.0.36", ["GRANT USAGE ON *.* TO `m`@`%`"],
     "needs REPLICATION_SLAVE_ADMIN or SUPER on MySQL 8.0.36; this user has no global privilege"),
    ("5.7.44-log", ["GRANT REPLICATION CLIENT ON *.* TO 'm'@'%'"], "needs SUPER on MySQL"),
    ("10.11.6-MariaDB", ["GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"],
     None),
    # a role may hold it: these lines cannot tell, the server decides at STOP
    ("10.11.6-MariaDB", ["GRANT USAGE ON *.* TO `m`@`%`", "GRANT `dba` TO `m`@`%`"], None),
    # a grant on one database is no global privilege
    ("10.11.6-MariaDB", ["GRANT ALL PRIVILEGES ON `app`.* TO `m`@`%`"], "needs"),
])
def test_the_probe_privilege_check(version, grants, missing):
    """The check's logic on SHOW GRANTS lines (the slow suite runs it against a real server:
    tests/test_calibrate_live.py)."""
    said = probe_privilege_missing(version, grants)
    if missing is None:
        assert said is None
    else:
        assert said is not None and missing in said and "\n" not in said


def test_calibrate_checks_the_probe_privilege_before_sampling(tmp_path, capsys, monkeypatch):
    """Before: the window was sampled until --probe-at, then STOP SLAVE was refused."""
    from commitsched import calibrate_replica, replica_live

    class Conn:
        def close(self):
            pass
    monkeypatch.setattr(replica_live, "connect", lambda address, timeout=10.0: Conn())
    answers = {"SELECT VERSION()": [("10.11.6-MariaDB",)],
               "SHOW GRANTS": [("GRANT REPLICA MONITOR ON *.* TO `m`@`%`",)]}
    monkeypatch.setattr(replica_live, "query", lambda conn, sql: answers[sql])

    def no_window(*a, **k):
        raise AssertionError("sampled before the privilege was checked")
    monkeypatch.setattr(calibrate_replica, "record", no_window)
    assert main(["calibrate", "--replica", "mysql://m@db:3306", "--probe", "30s", "--record",
                 str(tmp_path / "w.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs REPLICATION SLAVE ADMIN or SUPER" in err
    assert not (tmp_path / "w.json").exists()


# 5. a port out of range ------------------------------------------------------------------------

@pytest.mark.parametrize("url,said", [("mysql://root@h:99999", "port must be 1-65535, got '99999'"),
                                      ("mysql://root@h:0", "port must be 1-65535, got '0'"),
                                      ("mysql://root@h:x1", "port must be a number, 1-65535")])
def test_a_port_out_of_range_is_said_as_such(url, said):
    with pytest.raises(LiveError, match=re.escape(said)):
        parse_url(url)
    assert parse_url("mysql://root@h:65535").port == 65535


# 6. progress within a configuration --------------------------------------------------------------

def test_progress_moves_within_a_configuration(tmp_path):
    """One configuration is a dozen replays and more (two laps, the headroom bisection, a
    drain): the line counts them as they end. Before: '0/1 replays done' until it was over."""
    trace = trace_from_dicts([{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": 100.0,
                               "timestamp": EPOCH + 0.5 + i * 2e-4} for i in range(1, 200)])

    class Source:
        txns = staticmethod(lambda: iter(trace.txns))
    said = []
    lag_sweep(Source, source_times(trace.txns), ["serial"], [1], get_profile("ideal"),
              progress=said.append, backlog=0.01)
    before_end = said[:said.index(next(s for s in said if s.startswith("1/1 configurations")))]
    counts = [int(m.group(1)) for s in before_end
              for m in [re.search(r"0/1 configurations done, (\d+) replays so far", s)] if m]
    assert counts[0] == 0 and max(counts) >= 10 and counts == sorted(counts)


def test_progress_update_draws_at_the_ticks_pace():
    import io
    from commitsched import progress as progress_module
    clock = [0.0]
    stream = io.StringIO()
    p = progress_module.Progress(stream=stream, clock=lambda: clock[0])
    p.enabled = True
    p("start")
    for i in range(100):
        p.update(f"{i} replays")
    assert stream.getvalue().count("replays") == 0       # within the second: not redrawn
    clock[0] = 1.5
    p.update("100 replays")
    assert "100 replays" in stream.getvalue()


# 7. headroom bounds drawn as bounds -------------------------------------------------------------

def test_headroom_bounds_are_drawn_as_bounds_not_values():
    """A search that stopped at 1000x is '≥ 1000x': before, it was a point at 1000 on the line,
    its axis squashing the real headrooms (1.2x, 2.3x) to the floor."""
    from xml.dom import minidom
    from commitsched.report.figures import line_chart
    svg = line_chart([{"name": "s", "points": [(1, 1.2), (2, 2.3)],
                       "bounds": [(4, 1000.0, "≥")]},
                      {"name": "t", "points": [], "bounds": [(1, 0.001, "<")]}],
                     title="H", xlabel="workers", ylabel="pace factor", unit="x")
    minidom.parseString(svg)                                   # well-formed with '<' in it
    ticks = [float(t) for t in re.findall(r'text-anchor="end">([\d.]+)<', svg)]
    assert max(ticks) < 10                                     # the axis is the real values'
    assert "workers 4 -&gt; ≥ 1000x (the search stopped at its limit: a bound" in svg
    assert "workers 1 -&gt; &lt; 0.001x (the search stopped" in svg
    polyline = re.search(r'<polyline points="([^"]*)"[^>]*><title>s</title>', svg).group(1)
    assert len(polyline.split()) == 2                         # the bound is off the line


def test_the_report_figure_separates_bounds():
    from commitsched.report.render import headroom_series
    rows = [{"workers": 1, "headroom": 1.5, "is_bound": False},
            {"workers": 16, "headroom": 1000.0, "is_bound": True},
            {"workers": 32, "error": "deadlock"}]
    s, today = headroom_series({"serial": rows, "slow": [
        {"workers": 1, "headroom": 0.001, "is_bound": True}]})[::2]
    assert s["points"] == [(1, 1.5)] and s["bounds"] == [(16, 1000.0, "≥")]
    assert today["points"] == [(1, 1.0), (16, 1.0)]
    assert headroom_series({"slow": [{"workers": 1, "headroom": 0.001, "is_bound": True}]}
                           )[0]["bounds"] == [(1, 0.001, "<")]
