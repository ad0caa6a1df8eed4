"""Issue 27's DBA gaps in `lag`/`report`/`score` (the calibration spread's ranges, binlog file
gaps, --tz) and a Dask sweep whose scattered input died with every worker holding it."""
from __future__ import annotations

import datetime
import json
import os

import pytest

from commitsched.cli import main
from commitsched.distributed import ClusterError, cluster_map
from commitsched.trace import trace_from_dicts, write_trace

UTC = datetime.timezone.utc


# ------------------------------------------------------------------ distributed: lost input



def _always_dies(item, marker_dir):
    if item == 1:
        os._exit(1)
    return item


def test_an_input_lost_again_and_again_is_one_line(tmp_path, monkeypatch):
    import commitsched.distributed as d
    monkeypatch.setattr(d, "RESCATTERS", 1)
    with pytest.raises(ClusterError) as e:
        list(cluster_map(_always_dies, range(3), "local:1", shared=(str(tmp_path),)))
    assert "\n" not in str(e.value) and "--cluster local:1" in str(e.value)


# ------------------------------------------------------------------ shared: small traces

ROOT = os.path.join(os.path.dirname(__file__), "..")
# F's profile re-fitted on its three serial repeats: a calibration spread of 3 windows
SPREAD = os.path.join(ROOT, "traces", "calibration", "lag_check_f", "median3", "profile.json")
EPOCH = 1_790_000_000            # 2026-09-21 14:13:20 UTC (CEST, UTC+2, in Europe/Paris)


def _trace(tmp_path, count=120, gap=0.01, exec_us=2000.0, start=EPOCH + 0.5, source=None,
           name="t.jsonl"):
    """`count` transactions `gap` s apart, each on its own row, two to a group commit."""
    rows = [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "commit_id": (i + 1) // 2,
             "exec": exec_us, "timestamp": round(start + (i - 1) * gap, 6)}
            for i in range(1, count + 1)]
    path = str(tmp_path / name)
    write_trace(path, trace_from_dicts(rows).txns, source)
    return path


def _run(capsys, *args):
    rc = main([*args, "--quiet"])
    out, err = capsys.readouterr()
    return rc, out, err


# ------------------------------------------------------------------ 1. the spread's ranges

def test_the_report_gives_the_keeping_up_answers_and_headroom_with_their_range(tmp_path,
                                                                               capsys):
    rc, out, _ = _run(capsys, "report", _trace(tmp_path), "--profile", SPREAD, "--json",
                      "--scheduler", "commit_id+mariadb_conservative", "--workers", "1,2",
                      "--no-whatif", "--jobs", "1")
    assert rc == 0
    ku = json.loads(out)["keeping_up"]
    assert ku["calibration_windows"] == 3
    (c,) = ku["configs"]
    lo, hi = c["headroom_range"]
    assert lo <= c["headroom"] <= hi and lo < hi         # the ends' replays differ
    assert c["keeps_up_words"].startswith("keeps up")
    for row in ku["headroom"]["commit_id+mariadb_conservative"]:
        assert row["range"] == [min(row["headroom"], row["headroom_slowest"],
                                    row["headroom_fastest"]),
                                max(row["headroom"], row["headroom_slowest"],
                                    row["headroom_fastest"])]
        assert row["headroom_slowest"] < row["headroom_fastest"]
    first = ku["answer"][0]
    assert "at every calibrated pace" in first and "over the calibrated paces" in first
    assert any("calibrated from 3 windows" in line for line in ku["answer"])


def test_the_reports_words_say_first_when_the_verdict_flips_in_the_range():
    from commitsched.report.keeping_up import answer
    config = {"scheduler": "commit_id+mariadb_optimistic", "workers": 4, "keeps_up": True,
              "keeps_up_slowest": False, "keeps_up_fastest": True,
              "keeps_up_words": "keeps up (but not at the slowest calibrated pace)",
              "headroom": 1.05, "headroom_is_bound": False, "headroom_range": [0.9, 1.3],
              "max_lag_s": 2.0, "max_lag_s_range": [1.0, 40.0],
              "max_lag_at": "2026-09-21T14:40:00+00:00", "straight_line_headroom": 1.2}
    d = {"configs": [config], "write_rate": 10.0, "timestamps": "µs",
         "longer_than_a_minute": False, "calibration_windows": 3, "zone": "Europe/Paris"}
    first = answer(d)[0]
    assert first.startswith("With 4 workers, `commit_id+mariadb_optimistic` keeps up, but not "
                            "at the slowest calibrated pace, with 1.05x today's pace (0.90x to "
                            "1.30x over the calibrated paces)")
    assert "at 2026-09-21 16:40:00 CEST" in first                       # --tz, shown
    config.update(keeps_up=False, keeps_up_fastest=True, keeps_up_slowest=False,
                  keeps_up_words="does not keep up (but would at the fastest calibrated pace)",
                  lag_growth_per_lap_s=1.0, lap_s=10.0)
    assert "does not keep up, but would at the fastest calibrated pace: it applies" in \
        answer(d)[0]


def test_the_headroom_figure_draws_the_range_as_a_band_with_bars():
    from commitsched.report.render import headroom_series
    from commitsched.report.figures import line_chart
    rows = {"s": [{"workers": w, "headroom": h, "is_bound": False, "range": [h - 1, h + 5],
                   "range_is_bound": False} for w, h in ((1, 2.0), (2, 3.0))]}
    svg = line_chart(headroom_series(rows), title="h", xlabel="workers", ylabel="x", unit="x")
    assert svg.count("slowest to fastest calibrated pace") >= 3     # band, 2 bars, legend
    assert ">8.00<" in svg or ">8<" in svg             # the y axis reaches the band's top (8)


def test_score_gives_the_apply_times_range(tmp_path, capsys):
    args = ["score", _trace(tmp_path), "--profile", SPREAD, "--scheduler",
            "commit_id+mariadb_conservative", "--workers", "1,2", "--jobs", "1"]
    rc, out, _ = _run(capsys, *args, "--json")
    assert rc == 0
    for r in json.loads(out):
        lo, hi = r["makespan_range"]
        assert lo <= r["makespan"] <= hi and lo < hi
        tlo, thi = r["throughput_range"]
        assert tlo <= r["throughput"] <= thi
    rc, text, _ = _run(capsys, *args)
    assert rc == 0 and "ranges: the profile was calibrated from 3 windows" in text
    rc, plain, _ = _run(capsys, "score", _trace(tmp_path), "--profile", "durable-mariadb",
                        "--scheduler", "serial", "--json")
    assert "makespan_range" not in json.loads(plain)[0]       # one window: no range


# ------------------------------------------------------------------ 2. binlog file gaps

GAP = ("binlog.000043: starts at GTID 0-1-2001, but binlog.000041 ended at 0-1-1000: 1,000 "
       "transactions of stream 0 between them are not in the files given (a binlog file left "
       "out, or purged?); the replay reads the hole as a quiet spell")


def test_lag_and_report_say_the_binlog_is_not_whole(tmp_path, capsys):
    path = _trace(tmp_path, source={"import": {"file_gaps": [GAP]}})
    rc, out, _ = _run(capsys, "lag", path, "--profile", "ideal", "--scheduler", "serial",
                      "--backlog", "0.2s", "--json", "--jobs", "1")
    assert rc == 0
    notes = json.loads(out)[0]["notes"]
    said = [n for n in notes if n.startswith("the binlog is not whole")]
    assert said and "drain time" in said[0] and GAP in notes
    rc, out, _ = _run(capsys, "report", path, "--profile", "ideal", "--scheduler",
                      "commit_id+mariadb_conservative", "--workers", "1,2", "--json",
                      "--no-whatif", "--jobs", "1")
    assert rc == 0
    answer = json.loads(out)["keeping_up"]["answer"]
    assert any(a.startswith("The binlog is not whole") for a in answer)
    assert f"Gap: {GAP}." in answer


# ------------------------------------------------------------------ 3. --tz

def test_lag_shows_clock_times_in_tz_and_reads_backlog_at_in_it(tmp_path, capsys):
    hour = _trace(tmp_path, count=61, gap=60.0, exec_us=100.0)     # 14:13:20.5 to 15:13:20.5
    args = ["lag", hour, "--profile", "ideal", "--scheduler", "serial", "--backlog", "10s",
            "--jobs", "1", "--tz", "Europe/Paris", "--backlog-at", "16:40"]
    rc, out, _ = _run(capsys, *args, "--json")
    assert rc == 0
    (row,) = json.loads(out)
    assert row["backlog_at"] == "2026-09-21T14:40:00+00:00"           # JSON: UTC, ISO 8601
    assert row["max_lag_at"].endswith("+00:00")
    assert any(n.startswith("the SQL thread stops at 2026-09-21 16:40:00 CEST")
               for n in row["notes"])
    rc, text, _ = _run(capsys, *args)
    assert rc == 0 and "CEST" in text and " UTC" not in text.split("\n\n")[-2]
    assert _run(capsys, *args)[1] == text                            # deterministic


@pytest.mark.parametrize("command", ["lag", "report"])
def test_a_zone_nobody_knows_is_refused_in_one_line(tmp_path, capsys, command):
    extra = ["--json"] if command == "report" else []
    rc, out, err = _run(capsys, command, _trace(tmp_path), "--tz", "Mars/Olympus", *extra)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "--tz 'Mars/Olympus' is not a time zone" in err


def test_a_wall_time_the_clocks_pass_twice_is_refused_with_both_offsets(tmp_path, capsys):
    # 2026-10-25: Paris goes back from 03:00 CEST to 02:00 CET at 01:00 UTC
    night = _trace(tmp_path, count=121, gap=60.0, exec_us=100.0,
                   start=datetime.datetime(2026, 10, 24, 23, 30, tzinfo=UTC).timestamp())
    base = ["lag", night, "--profile", "ideal", "--scheduler", "serial", "--backlog", "10s",
            "--jobs", "1", "--tz", "Europe/Paris", "--json"]
    rc, _, err = _run(capsys, *base, "--backlog-at", "02:30")
    assert rc == 2 and err.count("\n") == 1
    assert "happens twice in Europe/Paris" in err and "+02:00" in err and "+01:00" in err
    rc, out, _ = _run(capsys, *base, "--backlog-at", "2026-10-25T02:30+01:00")
    assert rc == 0 and json.loads(out)[0]["backlog_at"] == "2026-10-25T01:30:00+00:00"


def test_help_says_what_was_added(capsys):
    for command, said in (("lag", ["--tz", "ISO 8601"]),
                          ("report", ["--tz", "slowest and the fastest calibrated pace",
                                      "gaps"]),
                          ("score", ["makespan_range", "throughput_range"])):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for s in said:
            assert s in text, (command, s)
