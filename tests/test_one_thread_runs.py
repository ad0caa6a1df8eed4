"""The one-thread MariaDB run is the same for every mode and every group tracker
(scoring.same_one_thread_run), so `score` and `report` make it once and share it. Checked here
run by run against a run made for each scheduler: on every bundled trace under every profile, on
generated traces, and through `score` and `report` themselves."""
from __future__ import annotations

import glob
import os

import pytest
from hypothesis import HealthCheck, given, settings

from strategies import traces
from commitsched.metrics import RunMetrics
from commitsched.profiles import PROFILES, get_profile
from commitsched.schedulers import SchedulerError, parse_scheduler, run_scheduler
from commitsched.scoring import same_one_thread_run, score_trace
from commitsched.trace import load_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLED = sorted(glob.glob(os.path.join(ROOT, "traces", "recorded", "*.jsonl*"))
                 + glob.glob(os.path.join(ROOT, "traces", "examples", "*.jsonl*")))
MARIADB = [(f"{t}+mariadb_{m}", opts)
           for t in ("commit_id", "slave_group_commit")
           for m in ("conservative", "optimistic", "aggressive")
           for opts in ({}, {"commit_wait_count": 4})
           if not (opts and t == "commit_id")]


def _one_thread_runs(txns, profile) -> dict[str, object]:
    """Each MariaDB scheduler's one-thread run (its figures and blocked time), or 'unfit'."""
    out = {}
    for name, opts in MARIADB:
        m = RunMetrics(1)
        try:
            blocked = run_scheduler(name, iter(txns), 1, profile, m, tracker_options=opts)
        except SchedulerError:
            out[f"{name} {opts}"] = "unfit"
            continue
        out[f"{name} {opts}"] = (vars(m), blocked)
    return out


@pytest.mark.parametrize("path", BUNDLED, ids=os.path.basename)
def test_bundled_traces_give_one_run_for_every_mariadb_scheduler(path):
    txns = load_trace(path).txns
    for profile in PROFILES.values():
        runs = [r for r in _one_thread_runs(txns, profile).values() if r != "unfit"]
        assert runs, path
        assert all(r == runs[0] for r in runs[1:]), (path, profile.name)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(max_size=14))
def test_generated_traces_give_one_run_for_every_mariadb_scheduler(trace):
    for name in ("durable", "replica16"):
        runs = [r for r in _one_thread_runs(trace.txns, get_profile(name)).values()
                if r != "unfit"]
        assert all(r == runs[0] for r in runs[1:])


def test_the_lemma_holds_only_where_it_is_used():
    """Two threads, MySQL, serial, or injected bugs: every run is made."""
    assert same_one_thread_run(parse_scheduler("commit_id+mariadb_optimistic"), 1, frozenset())
    assert not same_one_thread_run(parse_scheduler("commit_id+mariadb_optimistic"), 2,
                                   frozenset())
    assert not same_one_thread_run(parse_scheduler("writeset+mysql"), 1, frozenset())
    assert not same_one_thread_run(parse_scheduler("serial"), 1, frozenset())
    assert not same_one_thread_run(parse_scheduler("commit_id+mariadb_conservative"), 1,
                                   frozenset({"gco_start_on_exec"}))


class _Trace:
    def __init__(self, txns):
        self._txns, self.count = txns, len(txns)

    def txns(self):
        return iter(self._txns)


@pytest.mark.parametrize("name", ["oltp_read_write_t64_wait12.jsonl.gz",
                                  "oltp_read_write_t8.jsonl.gz"])
def test_score_shares_the_run_and_reports_each_scheduler_as_its_own(name, monkeypatch,
                                                                   runs_made):
    """`score`'s rows for the shared one-thread runs equal rows of runs made for each, and
    the simulation runs once at W=1 for all of them."""
    import commitsched.scoring as scoring
    trace = _Trace(load_trace(os.path.join(ROOT, "traces", "recorded", name)).txns)
    profile = get_profile("replica16")
    names = [n for n, opts in MARIADB if not opts] + ["slave_group_commit+mariadb_conservative"]
    names = list(dict.fromkeys(names))
    shared = score_trace(trace, names, [1, 2], profile, z3_bound="off")
    fit = {r["scheduler"] for r in shared if r["workers"] == 1}
    assert len([m for m in runs_made if m[1] == 1]) == 1          # one W=1 run for all of them
    assert len([m for m in runs_made if m[1] == 2]) == len(fit)   # W=2 as before
    monkeypatch.setattr(scoring, "same_one_thread_run", lambda *a: False)
    each = score_trace(trace, names, [1, 2], profile, z3_bound="off")
    assert shared == each
    assert fit == set(names)
