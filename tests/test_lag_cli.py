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
