"""Two schedulers with the same applier whose trackers annotate a trace alike make the same run
(scoring.same_stream: the applier sees nothing of its tracker but the stream), so `score` and
`report` make it once and give each scheduler its own row from it. Checked here run by run
against a run made for each scheduler: on every bundled trace under every profile, on generated
traces, and through `score` itself."""
from __future__ import annotations

import glob
import os

import pytest
from hypothesis import HealthCheck, given, settings

from strategies import traces
from commitsched.metrics import RunMetrics
from commitsched.profiles import PROFILES, get_profile
from commitsched.schedulers import SchedulerError, run_scheduler
from commitsched.scoring import same_stream, score_trace
from commitsched.trace import load_trace, trace_from_dicts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLED = sorted(glob.glob(os.path.join(ROOT, "traces", "recorded", "*.jsonl*"))
                 + glob.glob(os.path.join(ROOT, "traces", "examples", "*.jsonl*")))
# (applier, trackers that may feed it: each pair found alike must make the same run)
FAMILIES = [("mysql", [("commit_order", {}), ("writeset", {}), ("writeset_session", {}),
                       ("writeset", {"history_size": 4}), ("writeset_session",
                                                            {"history_size": 4})]),
            ("mariadb_conservative", [("commit_id", {}), ("slave_group_commit", {}),
                                      ("slave_group_commit", {"commit_wait_count": 4})]),
            ("mariadb_optimistic", [("commit_id", {}), ("slave_group_commit", {})])]


class _Trace:
    def __init__(self, txns):
        self._txns, self.count = txns, len(txns)

    def txns(self):
        return iter(self._txns)


def _run(txns, name: str, w: int, profile, opts: dict):
    m = RunMetrics(w)
    try:
        blocked = run_scheduler(name, iter(txns), w, profile, m, tracker_options=opts)
    except SchedulerError as e:
        return "unfit", str(e)
    return vars(m), blocked


def _check(txns, profiles, workers) -> int:
    """Every alike pair's runs are equal; returns how many alike pairs there were."""
    trace, found = _Trace(txns), 0
    for applier, trackers in FAMILIES:
        for i, a in enumerate(trackers):
            for b in trackers[i + 1:]:
                if not same_stream(trace, a, b):
                    continue
                found += 1
                for profile in profiles:
                    for w in workers:
                        ra = _run(txns, f"{a[0]}+{applier}", w, profile, a[1])
                        rb = _run(txns, f"{b[0]}+{applier}", w, profile, b[1])
                        assert ra == rb, (a, b, applier, w, profile.name)
                        assert ra[0] != "unfit"
    return found


@pytest.mark.parametrize("path", BUNDLED, ids=os.path.basename)
def test_bundled_traces_alike_trackers_make_the_same_run(path):
    _check(load_trace(path).txns, PROFILES.values(), (1, 2, 8))


def test_the_recorded_mariadb_traces_have_alike_trackers():
    """The case that pays: a MariaDB binlog's DML has no session, so WRITESET_SESSION is
    WRITESET there; and the check is not vacuous."""
    path = os.path.join(ROOT, "traces", "recorded", "oltp_read_write_t8.jsonl.gz")
    trace = _Trace(load_trace(path).txns)
    assert same_stream(trace, ("writeset", {}), ("writeset_session", {}))
    assert not same_stream(trace, ("writeset", {}), ("commit_order", {}))      # unfit: no clock
    assert not same_stream(trace, ("commit_id", {}), ("slave_group_commit", {}))


def test_sessions_make_writeset_session_differ():
    rows = [{"seq": 1, "writes": ["d.t/PRIMARY=1"], "session": 1, "last_committed": 0,
             "sequence_number": 1},
            {"seq": 2, "writes": ["d.t/PRIMARY=2"], "session": 1, "last_committed": 0,
             "sequence_number": 2}]
    trace = _Trace(trace_from_dicts(rows).txns)
    assert not same_stream(trace, ("writeset", {}), ("writeset_session", {}))
    for r in rows:
        del r["session"]
    assert same_stream(_Trace(trace_from_dicts(rows).txns), ("writeset", {}),
                       ("writeset_session", {}))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(max_size=14))
def test_generated_traces_alike_trackers_make_the_same_run(trace):
    _check(trace.txns, [get_profile("durable"), get_profile("replica16")], (1, 2, 3))


@pytest.mark.parametrize("name", ["recorded/oltp_read_write_t64.jsonl.gz",
                                  "examples/oltp_rw_8clients.jsonl.gz"])
def test_score_shares_the_run_and_reports_each_scheduler_as_its_own(name, monkeypatch,
                                                                   runs_made):
    """`score`'s rows for alike trackers equal rows of runs made for each, and the simulation
    runs once per W for both."""
    import commitsched.scoring as scoring
    trace = _Trace(load_trace(os.path.join(ROOT, "traces", name)).txns)
    profile = get_profile("replica16")
    names = ["writeset+mysql", "writeset_session+mysql", "commit_order+mysql"]
    alike = same_stream(trace, ("writeset", {}), ("writeset_session", {}))
    shared = score_trace(trace, names, [1, 2], profile, z3_bound="off")
    assert (("writeset_session+mysql", 2) in runs_made) is not alike
    monkeypatch.setattr(scoring, "same_stream", lambda *a: False)
    each = score_trace(trace, names, [1, 2], profile, z3_bound="off")
    assert shared == each
    assert {r["scheduler"] for r in shared} >= set(names[:2])
    assert alike is name.startswith("recorded/")     # sessions in the generated one


def test_an_empty_trace_scores_without_the_core_annotating_it(tmp_path, capsys):
    """A header and no transaction: the compiled core has no columns to annotate (no first
    seq), and the comparison falls back to the reference's (fuzzing found a crash there)."""
    from commitsched.cli import main
    with open(os.path.join(ROOT, "traces", "examples", "oltp_rw_1client.jsonl")) as f:
        header = f.readline()
    path = tmp_path / "empty.jsonl"
    path.write_text(header)
    assert main(["score", str(path), "--workers", "2", "--quiet"]) == 0
