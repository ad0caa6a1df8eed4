"""A drain with nothing more arriving (the load ended when the SQL thread restarted: the
lag-check rig's `800x20+stop5:15` runs) against `lag --backlog`'s, where the source writes on at
its pace: hand-checkable on independent transactions at half the replica's speed."""
import os
import sys

import pytest

from commitsched.lag import lag_one, straight_line_drain
from commitsched.profiles import get_profile
from commitsched.replay import source_times
from commitsched.trace import trace_from_dicts

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "traces", "record"))
import lag_check  # noqa: E402

EPOCH = 1_790_000_000


def _trace(n=400, gap=100e-6, exec_us=50.0):
    """n independent transactions `gap` s apart (10,000/s), `exec_us` each (20,000/s applied)."""
    return trace_from_dicts([{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": exec_us,
                              "timestamp": round(EPOCH + 0.5 + (i - 1) * gap, 6)}
                             for i in range(1, n + 1)]).txns


def test_a_closed_drain_applies_the_backlog_at_the_apply_rate():
    """The SQL thread stopped over the whole 40 ms trace: 400 transactions held. Closed, they
    apply in 400 x 50 µs = 20 ms; open (10,000/s arriving on), at the net 10,000/s: 40 ms."""
    txns = _trace()
    times = source_times(txns)
    span = 400 * 100e-6
    closed = lag_one(lambda: iter(txns), times, "serial", 1, get_profile("ideal"),
                     backlog=span, backlog_at=0.0, closed_drain=True)
    opened = lag_one(lambda: iter(txns), times, "serial", 1, get_profile("ideal"),
                     backlog=span, backlog_at=0.0)
    assert closed["drain_s"] == pytest.approx(0.020, rel=0.01)
    assert opened["drain_s"] == pytest.approx(0.040, rel=0.03)
    assert closed["straight_line_drain_s"] == pytest.approx(0.020, rel=0.01)
    assert opened["straight_line_drain_s"] == pytest.approx(0.040, rel=0.01)


def test_a_closed_drain_ends_even_where_the_replica_cannot_keep_up():
    """Applied at 5,000/s against 10,000/s written: never drained open; closed, 80 ms."""
    txns = _trace(exec_us=200.0)
    times = source_times(txns)
    r = lag_one(lambda: iter(txns), times, "serial", 1, get_profile("ideal"),
                backlog=0.04, closed_drain=True)
    assert r["drain_s"] == pytest.approx(0.080, rel=0.01)
    assert straight_line_drain(0.04, 5000.0, 10000.0) is None
    assert straight_line_drain(0.04, 5000.0, 10000.0, closed=True) == pytest.approx(0.08)


@pytest.mark.parametrize("events,closed", [
    ({"start": 20.0, "sysbench_end": 20.1}, True),       # the load ended at the restart
    ({"start": 20.0, "sysbench_end": 40.0}, False),      # it went on 20 s more
    ({"start": None, "sysbench_end": 20.0}, False),      # no stop
    ({}, False),
])
def test_the_rig_knows_a_closed_drain_from_its_events(events, closed):
    assert lag_check.closed_drain({"events": events}) is closed


def test_a_closed_drain_scores_its_drain_and_no_verdict():
    """Its stop held the load's end, so the backlog then is the stop's whatever the pace: the
    keeps-up verdict is not scored (nor shown), the drain is; a campaign of closed drains only
    still gets its per-durability drain rows."""
    def row(name, closed, keeps):
        return {"run": name, "calibrating": False, "config": "relaxed serial W=1",
                "stop_s": 5.0, "closed_drain": closed, "write_rate": 800.0,
                "measured": {"keeps_up": keeps, "max_lag_s": 0.0, "drain_s": 10.0,
                             "apply_rate_in_drain": None},
                "model": {"keeps_up": True, "max_lag_s": 0.0, "drain_s": 11.0},
                "line": {"keeps_up": True, "max_lag_s": 0.0, "drain_s": 12.0}}
    s = lag_check.summarize([row("a", True, False), row("b", False, True)], 0.5)
    assert (s["model"]["keeps_up_right"], s["model"]["keeps_up_runs"]) == (1, 1)
    assert s["model"]["drain_runs"] == 2
    closed_only = [row("a", True, False)]
    text = lag_check.markdown({"rows": closed_only, "summary": lag_check.summarize(
        closed_only, 0.5)}, 0.5)
    assert "| a (closed drain: the load ended at the restart) | relaxed serial W=1 | 800/s | " \
           "- (the stop held the load's end) |" in text
    assert "| keeps-up verdict right | - | - |" in text
    assert "| relaxed runs only: drain | 10% (1 runs) | 20% (1 runs) |" in text
