"""The open replay (model/replay.py, `commitsched lag`): the issue's worked example, checked by
hand. Independent transactions of 100 µs each (the `ideal` profile: no commit, sync or dispatch
cost) arrive every 50 µs, twice as fast as one worker applies them."""
import json

import numpy as np
import pytest

from commitsched.cli import main
from commitsched.lag import lag_one, parse_duration, straight_line_drain
from commitsched.profiles import get_profile
from commitsched.replay import Replayer, ReplayError, source_times
from commitsched.trace import trace_from_dicts, write_trace

IDEAL = get_profile("ideal")
N, EXEC, GAP = 2000, 100.0, 50e-6        # transactions, µs each, seconds between commits


def worked_trace(n=N):
    """One source commit group (MariaDB cid 1; MySQL: each after the first, which is a
    barrier, has last_committed 1): nothing orders them."""
    return trace_from_dicts([
        {"seq": i, "writes": [f"d.t/PRIMARY={i}"], "commit_id": 1, "last_committed": min(i - 1, 1),
         "sequence_number": i, "exec": EXEC, "timestamp": round((i - 1) * GAP, 9)}
        for i in range(1, n + 1)])


def replayer(workers, scheduler="commit_id+mariadb_conservative", trace=None):
    trace = trace or worked_trace()
    return Replayer(lambda: iter(trace.txns), source_times(trace.txns), scheduler, workers, IDEAL)


def test_one_worker_falls_behind_linearly():
    """Transaction i (from 0) commits at (i + 1) x 100 µs and arrived at i x 50 µs: its lag
    is 50 i + 100 µs, growing without bound."""
    rep = replayer(1)
    lag = rep.replay().lag
    assert lag == pytest.approx(50.0 * np.arange(N) + 100.0)
    assert not rep.keeps_up(1.0)
    headroom, bound = rep.headroom()
    assert not bound and headroom == pytest.approx(0.5, rel=0.011)


@pytest.mark.parametrize("scheduler", ["commit_id+mariadb_conservative", "commit_order+mysql"])
def test_four_workers_keep_up_with_headroom_two(scheduler):
    """Four workers apply 40 transactions a ms, the source writes 20: the lag stays one
    transaction's time, and the pace may double (to 1% by the bisection), not more."""
    rep = replayer(4, scheduler)
    lag = rep.replay().lag
    assert lag.max() <= 2 * EXEC
    assert rep.keeps_up(1.0) and rep.keeps_up(1.9)
    assert not rep.keeps_up(2.1)
    headroom, bound = rep.headroom()
    assert not bound and headroom == pytest.approx(2.0, rel=0.011)


def test_a_backlog_drains_at_the_net_rate():
    """Stopped for 10 ms of source time (200 transactions), four workers catch up at 40 - 20
    = 20 transactions a ms: 10 ms after the restart, as the straight line says here."""
    rep = replayer(4)
    drain, why = rep.drain(10_000.0)
    assert why is None
    assert drain == pytest.approx(10_000.0, rel=0.03)
    assert straight_line_drain(0.010, 40_000, 20_000) == pytest.approx(0.010)


def test_a_replica_that_does_not_keep_up_never_drains():
    drain, why = replayer(1).drain(10_000.0)
    assert drain is None and "never" in why


def test_the_stop_holds_what_was_still_queued():
    """One worker, stopped 20 ms into the trace for 5 ms: everything not yet dispatched at
    20 ms waits for the restart at 25 ms, even what arrived long before (the replica lags)."""
    rep = replayer(1, trace=worked_trace(400))
    base = rep.replay(laps=1)
    at = int(np.searchsorted(base.dispatch, 20_000.0))
    held = rep.replay(laps=1, hold=(at, 25_000.0))
    assert base.source[at] < 20_000.0           # it arrived before the stop, queued
    assert held.dispatch[at] == 25_000.0
    assert (held.commit[:at] == base.commit[:at]).all()


def test_whole_second_stamps_are_spread_over_their_second():
    trace = trace_from_dicts([{"seq": i, "writes": [], "timestamp": t}
                              for i, t in enumerate([100, 100, 100, 100, 101, 103], 1)])
    times = source_times(trace.txns)
    assert times.whole_seconds
    assert times.times.tolist() == [0, 250_000, 500_000, 750_000, 1_000_000, 3_000_000]


def test_stamps_that_go_back_are_held_at_the_previous_one():
    trace = trace_from_dicts([{"seq": i, "writes": [], "timestamp": t}
                              for i, t in enumerate([1.5, 1.25, 1.75], 1)])
    assert source_times(trace.txns).times.tolist() == [0, 0, 250_000]


def test_no_timestamps_is_an_error():
    trace = trace_from_dicts([{"seq": 1, "writes": []}])
    with pytest.raises(ReplayError, match="seq 1 has no timestamp"):
        source_times(trace.txns)


def test_a_timestamp_that_is_not_a_time_is_an_error():
    for bad in (1e300, 2e12):
        trace = trace_from_dicts([{"seq": 1, "writes": [], "timestamp": 1.0},
                                  {"seq": 2, "writes": [], "timestamp": bad}])
        with pytest.raises(ReplayError, match="seq 2 has timestamp"):
            source_times(trace.txns)


def test_a_replica_far_too_slow_has_the_lowest_headroom_not_a_crash():
    """A closed backlog so long that the pace it could keep is below any bracket (fuzzing
    found the search dividing by a pace of 0)."""
    trace = trace_from_dicts([
        {"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": 1e300, "timestamp": i * 1e-3}
        for i in range(1, 4)])
    assert replayer(1, "serial", trace).headroom() == (pytest.approx(1e-3), True)


def test_durations():
    assert parse_duration("90") == 90 and parse_duration("90s") == 90
    assert parse_duration("2h30m") == 9000 and parse_duration("500ms") == 0.5
    for bad in ("", "3x", "-1", "h", "1h x"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_lag_command_json(tmp_path, capsys):
    path = str(tmp_path / "t.jsonl")
    write_trace(path, worked_trace(400).txns)
    assert main(["lag", path, "--profile", "ideal", "--scheduler", "commit_id+mariadb_conservative",
                 "--workers", "1,4", "--backlog", "10ms", "--json", "--quiet", "--jobs", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["scheduler"], r["workers"]) for r in rows] == [
        ("commit_id+mariadb_conservative", 1), ("commit_id+mariadb_conservative", 4)]
    for r in rows:
        assert {"scheduler", "workers", "keeps_up", "headroom", "max_lag_s", "p99_lag_s",
                "drain_s"} <= set(r)
    one, four = rows
    assert not one["keeps_up"] and one["drain_s"] is None
    # 400 transactions: the appliers' jitter allowed (two transactions a worker) is 1% of a lap
    assert four["keeps_up"] and four["headroom"] == pytest.approx(2.0, rel=0.03)
    assert four["drain_s"] == pytest.approx(0.010, rel=0.05)


def test_lag_command_without_timestamps_says_so(tmp_path, capsys):
    path = str(tmp_path / "t.jsonl")
    write_trace(path, trace_from_dicts([{"seq": 1, "writes": []}]).txns)
    assert main(["lag", path, "--profile", "ideal", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no timestamp" in err


def test_the_backlog_when_the_last_transaction_arrives():
    """`end_backlog`: one worker commits transaction i (from 0) at (i + 1) x 100 µs, the last
    arrives at 1999 x 50 µs: 1001 are not committed then; four workers are a transaction's
    time behind (the last one, and at most a worker's batch beside it)."""
    trace = worked_trace()
    times = source_times(trace.txns)
    one = lag_one(lambda: iter(trace.txns), times, "commit_id+mariadb_conservative", 1, IDEAL)
    assert one["end_backlog"] == 1001
    four = lag_one(lambda: iter(trace.txns), times, "commit_id+mariadb_conservative", 4, IDEAL)
    assert 1 <= four["end_backlog"] <= 4
