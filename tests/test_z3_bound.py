"""The z3 optimum (checks/z3_bound.py): agrees with a brute-force search on tiny traces, its
schedules are feasible, it never exceeds a correct scheduler's makespan in its regime and never
falls below the heuristic work/span bound; the windowed figure stays a lower bound; the CLI."""
import json
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched.checks import z3_bound as zb
from commitsched.cli import main
from commitsched.metrics import heuristic_bounds
from commitsched.profiles import Profile, get_profile
from commitsched.properties import conflicts
from commitsched.schedulers import DEFAULT_SCHEDULERS, SchedulerError, collect, parse_scheduler
from commitsched.scoring import _commits_in_order
from commitsched.trace import trace_from_dicts

from strategies import traces


def _profile(sync: int) -> Profile:
    return Profile("t", exec_default=1.0, commit_default=0.0, sync=float(sync), dispatch=0.0,
                   retry=0.0, provenance="test")


@st.composite
def tiny(draw, max_size=4):
    """Integer costs, few keys, sometimes a DDL: every optimum is an integer (the model is
    difference constraints with integer constants), so a search over integer times is exact."""
    n = draw(st.integers(1, max_size))
    rows = []
    for seq in range(1, n + 1):
        row = {"seq": seq, "exec": float(draw(st.integers(1, 4))),
               "commit": float(draw(st.integers(0, 1)))}
        if draw(st.integers(0, 7)) == 0:
            row["ddl"], row["writes"] = True, []
        else:
            row["writes"] = [f"d.t/PRIMARY={k}" for k in
                             sorted(set(draw(st.lists(st.integers(0, 2), max_size=2))))]
        rows.append(row)
    return trace_from_dicts(rows).txns


def brute_force(txns, profile, workers: int, regime: str) -> int:
    """The minimum makespan by exhaustive search over integer instants: at each instant commit
    any set of ready transactions (one sync instant, spaced `sync` from the previous one; in
    order: only the next ones in source order), then start any set of transactions whose
    conflicting predecessors committed, within W workers (in order: j only once j - W
    committed). Independent of the z3 encoding."""
    n = len(txns)
    length = [int(profile.exec_cost(t) + profile.commit_cost(t) + profile.sync) for t in txns]
    s = int(profile.sync)
    preds = [[i for i in range(j) if conflicts(txns[i], txns[j])] for j in range(n)]
    horizon = sum(length)
    best = [horizon]

    def subsets(items):
        for mask in range(1 << len(items)):
            yield [x for b, x in enumerate(items) if mask >> b & 1]

    @lru_cache(maxsize=None)
    def search(t, state, last_commit):
        # state: per transaction -1 unstarted, -2 committed, else its start instant
        if all(x == -2 for x in state):
            return last_commit
        if t > best[0]:
            return None
        result = None
        ready = [i for i in range(n) if state[i] >= 0 and state[i] + length[i] <= t]
        can_commit = last_commit is None or t >= last_commit + s
        for group in (subsets(ready) if can_commit else [[]]):
            st1 = list(state)
            for i in group:
                st1[i] = -2
            if regime == "in_order":
                done = [x == -2 for x in st1]
                if any(done[k] and not all(done[:k]) for k in range(n)):
                    continue
            running = sum(1 for x in st1 if x >= 0)
            startable = [j for j in range(n) if st1[j] == -1
                         and all(st1[i] == -2 for i in preds[j])
                         and (regime != "in_order" or j < workers or st1[j - workers] == -2)]
            for start in subsets(startable):
                if running + len(start) > workers:
                    continue
                st2 = list(st1)
                for j in start:
                    st2[j] = t
                r = search(t + 1, tuple(st2), t if group else last_commit)
                if r is not None and (result is None or r < result):
                    result = r
                    best[0] = min(best[0], r)
        return result

    return search(0, tuple([-1] * n), None)


def feasible(p: zb.Problem, workers: int, regime: str, sol: zb.Solution) -> list[str]:
    """Every constraint of the regime's model, checked on a returned schedule."""
    S, C, s, n = sol.start, sol.commit, p.sync, p.n
    bad = []
    for i in range(n):
        if S[i] < 0 or C[i] < S[i] + p.cost[i] + s:
            bad.append(f"{i}: too short")
        for j in range(i + 1, n):
            if p.conflict[i][j] and S[j] < C[i]:
                bad.append(f"{i},{j}: conflict overlap/order")
            if C[i] != C[j] and abs(C[i] - C[j]) < s:
                bad.append(f"{i},{j}: two syncs closer than {s}")
    if regime == "in_order":
        bad += [f"{i}: commit order" for i in range(1, n) if C[i] < C[i - 1]]
        bad += [f"{j}: worker ring" for j in range(workers, n) if S[j] < C[j - workers]]
    for j in range(n):
        active = sum(1 for i in range(n) if S[i] <= S[j] < C[i])
        if active > workers:
            bad.append(f"{active} active at {S[j]}")
    if max(C, default=0) != sol.makespan:
        bad.append("makespan")
    return bad


@settings(max_examples=100)
@given(tiny(), st.integers(1, 3), st.integers(0, 2), st.sampled_from(zb.REGIMES),
       st.sampled_from(["cliques", "cumulative"]))
def test_z3_agrees_with_brute_force(txns, workers, sync, regime, capacity):
    profile = _profile(sync)
    p = zb.make_problem(txns, profile)
    sol = zb.solve(p, workers, regime, timeout=60, capacity=capacity)
    assert sol.status == "optimal"
    assert not feasible(p, workers, regime, sol)
    assert sol.makespan == brute_force(txns, profile, workers, regime)


def _scheduler_case():
    return st.tuples(traces(max_size=7), st.integers(1, 3),
                     st.sampled_from(["ideal", "durable", "relaxed"]))


@settings(max_examples=40)
@given(_scheduler_case())
def test_optimum_bounds_every_scheduler_and_is_above_the_heuristic(case):
    trace, workers, profile_name = case
    profile = get_profile(profile_name)
    txns = trace.txns
    p = zb.make_problem(txns, profile)
    optimum = {}
    for w in sorted({1, workers}):
        heur = heuristic_bounds(txns, profile, w)
        for regime in zb.REGIMES:
            sol = zb.solve(p, w, regime, timeout=60)
            assert sol.status == "optimal"
            assert not feasible(p, w, regime, sol)
            value = float(sol.makespan)
            assert value >= heur["bound_" + regime] - 1e-6
            optimum[w, regime] = value
        # Committing in order is a restriction of committing freely.
        assert optimum[w, "free"] <= optimum[w, "in_order"]
    for name in DEFAULT_SCHEDULERS:
        sched = parse_scheduler(name)
        w = 1 if sched.is_serial else workers
        try:
            runs, _ = collect(sched, txns, w, profile)
        except SchedulerError:          # commit_id on a trace without any commit id
            continue
        makespan = max(r.commit for r in runs)
        regime = "in_order" if _commits_in_order(sched, {}) else "free"
        assert optimum[w, regime] <= makespan + 1e-6, (name, w, regime)


@settings(max_examples=15)
@given(traces(min_size=6, max_size=12, rotations=False), st.integers(1, 3),
       st.sampled_from(zb.REGIMES))
def test_windowed_figure_is_a_lower_bound(trace, workers, regime):
    profile = get_profile("durable")
    whole = zb.regime_bound(trace.txns, profile, workers, regime, window=len(trace.txns))
    windowed = zb.regime_bound(trace.txns, profile, workers, regime, window=3)
    assert whole.exact and not windowed.exact and windowed.optimal is None
    assert windowed.windows == -(-len(trace.txns) // 3) == windowed.windows_solved
    assert max(whole.work_bound, whole.span_bound) - 1e-6 <= windowed.lower_bound
    assert windowed.lower_bound <= whole.optimal + 1e-6


def test_group_sync_shared_and_spaced():
    """Two independent transactions share one sync; a dependent one needs its own."""
    rows = [{"seq": 1, "writes": ["d.t/PRIMARY=1"], "exec": 2.0},
            {"seq": 2, "writes": ["d.t/PRIMARY=2"], "exec": 2.0},
            {"seq": 3, "writes": ["d.t/PRIMARY=1"], "exec": 2.0}]
    txns = trace_from_dicts(rows).txns
    p = zb.make_problem(txns, _profile(5))
    # 1 and 2 run together and commit at 7 with one sync; 3 starts at 7, commits at 14.
    assert zb.solve(p, 2, "in_order").makespan == 14
    assert zb.solve(p, 2, "free").makespan == 14
    # One worker: 1 (0-7), 2 (7-14), 3 (14-21).
    assert zb.solve(p, 1, "in_order").makespan == 21


def test_in_order_worker_ring_binds():
    """With W=1 nothing overlaps; W=2 in order: the long first transaction holds back the third
    (its worker ring slot) though they do not conflict, which free commit avoids."""
    rows = [{"seq": 1, "writes": ["d.t/PRIMARY=1"], "exec": 10.0},
            {"seq": 2, "writes": ["d.t/PRIMARY=2"], "exec": 1.0},
            {"seq": 3, "writes": ["d.t/PRIMARY=3"], "exec": 1.0}]
    txns = trace_from_dicts(rows).txns
    p = zb.make_problem(txns, _profile(0))
    assert zb.solve(p, 2, "in_order").makespan == 11
    assert zb.solve(p, 2, "free").makespan == 10


def test_timeout_keeps_a_proved_lower_bound():
    trace = trace_from_dicts([{"seq": i, "writes": [f"d.t/PRIMARY={i % 5}"],
                               "exec": float(1 + i * 7 % 13)} for i in range(1, 31)])
    profile = get_profile("durable")
    rb = zb.regime_bound(trace.txns, profile, 3, "free", window=30, timeout=0.5)
    assert not rb.exact and rb.optimal is None
    assert rb.lower_bound >= max(rb.work_bound, rb.span_bound)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


S14 = "traces/examples/semantics_1_4_logical_clock.jsonl"


def test_cli_bound_json(capsys):
    code, out, _ = run(capsys, "bound", S14, "--workers", "2", "--profile", "durable", "--json")
    assert code == 0
    results = json.loads(out)
    assert [r["regime"] for r in results] == ["in_order", "free"]
    for r in results:
        for key in ("regime", "optimal", "lower_bound", "work_bound", "span_bound", "exact",
                    "solver_seconds"):
            assert key in r
        assert r["exact"] and r["optimal"] == r["lower_bound"]
        assert r["lower_bound"] >= max(r["work_bound"], r["span_bound"])


def test_cli_bound_windowed_text(capsys):
    code, out, _ = run(capsys, "bound", S14, "--workers", "2", "--window", "2")
    assert code == 0 and "each window of 2 consecutive" in out and "optimal" in out


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--workers", "2", "--window", "0"],
                                  ["--workers", "2", "--timeout", "-1"]])
def test_cli_bound_bad_options(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(["bound", S14, *argv])
    assert e.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_bound_missing_trace(capsys):
    code, _, err = run(capsys, "bound", "no/such/trace.jsonl", "--workers", "2")
    assert code == 2 and err.startswith("commitsched: error:") and len(err.splitlines()) == 1


def test_score_uses_the_exact_bound_when_small(capsys):
    code, out, _ = run(capsys, "score", S14, "--scheduler", "commit_order+mysql",
                       "--workers", "1,4", "--json", "--profile", "durable")
    results = json.loads(out)
    assert code == 0 and all(r["bound"]["exact"] for r in results)
    assert all(r["bound"]["bound"] <= r["makespan"] + 1e-6 for r in results)
    assert all(r["efficiency_vs_bound"] == pytest.approx(r["bound"]["bound"] / r["makespan"],
                                                         abs=1e-6) for r in results)
    code, out, _ = run(capsys, "score", S14, "--scheduler", "commit_order+mysql",
                       "--workers", "4", "--json", "--z3-bound", "off")
    r = json.loads(out)[0]
    assert not r["bound"]["exact"] and r["bound"]["kind"].startswith("heuristic")
    code, out, _ = run(capsys, "score", S14, "--workers", "4", "--profile", "durable")
    assert "bound*: the exact optimum from z3" in out


@settings(max_examples=60)
@given(traces(max_size=10), st.integers(1, 4), st.sampled_from(zb.REGIMES),
       st.sampled_from(["ideal", "durable"]))
def test_streamed_relaxed_bound_matches_the_matrix_one(trace, workers, regime, profile_name):
    """The long-trace bound (one pass, keys' last writers) equals the one computed from the
    conflict matrix, and stays below the optimum."""
    profile = get_profile(profile_name)
    p = zb.make_problem(trace.txns, profile)
    streamed = zb.relaxed_bound_stream(trace.txns, profile, workers, regime)
    assert streamed == zb.relaxed_bound(p, workers, regime)
    assert streamed <= zb.solve(p, workers, regime).makespan
