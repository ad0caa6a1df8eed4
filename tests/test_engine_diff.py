"""The two engines, run by run (issue 29): every bundled trace and recording, and
hypothesis-generated traces (conflicts, DDL, admin statements, sessions, big transactions,
missing commit ids and clocks, rotations, sizes absent or given), under every scheduler the
compiled core has, W in {1, 2, 3, 4, 8, 16} and every profile (tests/engine_diff.py): the same
per-transaction dispatch, start, exec_end, commit, worker and retries, the same metrics and the
same blocked time, bit for bit (engine_diff says why no tolerance).

Short in `make test` (the bundled traces' first 300 transactions, three profiles; generated
traces under every profile); long in the slow suite (`-m slow`: their first 800 under every
profile, a quarter of them whole).
"""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched import engine
from commitsched.profiles import get_profile
from commitsched.trace import load_trace, trace_from_dicts

from engine_diff import (SCHEDULERS, WORKERS, columns_of, compare, compiled_run, difference,
                         profiles, reference_run)

ROOT = os.path.join(os.path.dirname(__file__), "..")
BUNDLED = sorted(glob.glob(os.path.join(ROOT, "traces", "examples", "*.jsonl*"))
                 + glob.glob(os.path.join(ROOT, "traces", "recorded", "*.jsonl.gz")))
SHORT_PROFILES = ("ideal", "durable", "replica16")
SHORT_PREFIX = 300


def test_the_compiled_core_is_built():
    """`make setup` builds it (model/simcore_rs); without it every default run would quietly be
    the reference's, and this suite would compare nothing."""
    assert engine.available()


def _load(path: str, limit: int | None = None) -> list:
    txns = load_trace(path).txns
    return txns if limit is None else txns[:limit]


def _sweep(txns: list, profile_list, workers=WORKERS, schedulers=SCHEDULERS, **kw) -> list[str]:
    columns = columns_of(txns)
    bad = []
    for profile in profile_list:
        for sched in schedulers:
            for w in ([1] if sched == "serial" else workers):
                d = compare(sched, txns, columns, w, profile, **kw)
                if d is not None:
                    bad.append(d)
    return bad


@pytest.mark.parametrize("path", BUNDLED, ids=os.path.basename)
def test_bundled_traces_short(path):
    """The first transactions of each bundled trace, every scheduler and W, three profiles."""
    bad = _sweep(_load(path, SHORT_PREFIX), [get_profile(p) for p in SHORT_PROFILES])
    assert not bad, "\n".join(bad[:10])


LONG_PREFIX = 800


@pytest.mark.slow
@pytest.mark.parametrize("path", BUNDLED, ids=os.path.basename)
def test_bundled_traces_long(path):
    """Each bundled trace's first LONG_PREFIX transactions (the whole of the small ones), every
    scheduler, every W and every profile, named and variants: 67 runs x 11 profiles a trace.
    The whole traces under the whole matrix would take the reference about 7 minutes on the
    2-core VM, past the slow suite's budget; their first 800 transactions cover every file
    rotation, DDL and group shape the short suite's first 300 do not."""
    bad = _sweep(_load(path, LONG_PREFIX), profiles())
    assert not bad, "\n".join(bad[:10])


@pytest.mark.slow
@pytest.mark.parametrize("path", BUNDLED[1::4], ids=os.path.basename)
def test_bundled_traces_whole(path):
    """A quarter of the bundled traces whole, every scheduler and W, three profiles."""
    bad = _sweep(_load(path), [get_profile(p) for p in SHORT_PROFILES])
    assert not bad, "\n".join(bad[:10])


# ------------------------------------------------------------------ generated traces

@st.composite
def wild_traces(draw, max_size: int = 30):
    """Valid traces with nothing promised about their annotations: conflicts inside commit
    groups (kills, retries), DDL and admin statements, sessions, big transactions, commit ids
    or clocks missing for some or all transactions, rotations, costs and binlog sizes present
    or absent (the profile's defaults)."""
    n = draw(st.integers(1, max_size))
    keys = draw(st.integers(1, 6))
    has_clock = draw(st.sampled_from(["all", "none"]))
    cid_mode = draw(st.sampled_from(["all", "some", "none"]))
    costs = draw(st.booleans())
    sizes = draw(st.booleans())
    rows, file_no, sn, lc_floor, group, group_left = [], 1, 0, 0, 0, 0
    for seq in range(1, n + 1):
        if seq > 1 and draw(st.integers(0, 15)) == 0:
            file_no, sn = file_no + 1, 0
        kind = draw(st.integers(0, 19))
        row: dict = {"seq": seq, "file": file_no}
        if kind == 0:
            row["ddl"] = True
            row["writes"] = []
        elif kind == 1:
            row["admin"] = True
            row["writes"] = []
        else:
            big = draw(st.integers(0, 9)) == 0
            count = draw(st.integers(10, 40)) if big else draw(st.integers(0, 3))
            ids = draw(st.lists(st.integers(0, keys + (40 if big else 0)), min_size=count,
                                max_size=count))
            row["writes"] = sorted({f"db{k % 2}.t{k % 3}/PRIMARY={k}" for k in ids})
            if draw(st.integers(0, 9)) == 0:
                row["no_pk"] = True
            if draw(st.integers(0, 14)) == 0:
                row["fk_parent"] = True
            if row["writes"] and draw(st.integers(0, 7)) == 0:
                row["write_set_size"] = len(row["writes"]) + draw(st.integers(0, 3))
        flags = draw(st.sampled_from([None, ["transactional", "allow_parallel"],
                                      ["transactional"], ["allow_parallel"], [],
                                      ["transactional", "allow_parallel", "waited"], ["ddl"]]))
        if flags is not None:
            row["flags"] = flags
        if draw(st.integers(0, 3)):
            row["session"] = draw(st.integers(1, 4))
        if costs:
            row["exec"] = float(draw(st.integers(0, 30)))
            if draw(st.booleans()):
                row["commit"] = float(draw(st.integers(0, 5)))
        if sizes:
            row["events"] = draw(st.integers(2, 40))
            row["bytes"] = draw(st.integers(100, 5000))
            row["rows"] = draw(st.integers(0, 30))
        if has_clock == "all":
            sn += 1
            lc = 0 if sn == 1 else draw(st.integers(max(0, min(lc_floor, sn - 1)), sn - 1))
            row["last_committed"], row["sequence_number"] = lc, sn
            lc_floor = lc
        if cid_mode != "none" and (cid_mode == "all" or draw(st.booleans())):
            if group_left <= 0:
                group, group_left = group + 1, draw(st.integers(1, 5))
            row["commit_id"] = group
            group_left -= 1
        rows.append(row)
    return trace_from_dicts(rows, {"generator": "hypothesis (engine diff)"})


@settings(max_examples=40)
@given(wild_traces(), st.sampled_from(WORKERS))
def test_generated_traces_every_profile(trace, workers):
    bad = _sweep(trace.txns, profiles(), workers=(workers,))
    assert not bad, "\n".join(bad[:10])


@settings(max_examples=25)
@given(wild_traces(), st.sampled_from(WORKERS), st.sampled_from(SHORT_PROFILES + ("durable-mariadb",)),
       st.lists(st.floats(0, 50, allow_nan=False), min_size=30, max_size=30))
def test_generated_traces_with_arrivals(trace, workers, profile, gaps):
    """An open replay (model/replay.py): a transaction is dispatched no earlier than its
    arrival, by seq (the reference's callable) and by position (the core's array)."""
    arrivals = np.cumsum(np.array(gaps[:len(trace.txns)]) * 7.0)
    by_seq = {t.seq: float(a) for t, a in zip(trace.txns, arrivals)}
    txns = trace.txns
    columns = columns_of(txns)
    p = get_profile(profile)
    for sched in SCHEDULERS:
        for w in ([1] if sched == "serial" else (workers,)):
            ref = reference_run(sched, txns, w, p, arrival=by_seq.__getitem__)
            got = compiled_run(sched, columns, w, p, arrival=arrivals)
            d = difference(ref, got)
            assert d is None, f"{sched} W={w} {profile}: {d}"


@settings(max_examples=30)
@given(wild_traces(), st.sampled_from((1, 2, 3, 4)),
       st.sampled_from([
           ("writeset+mysql", {"history_size": 3}, {}),
           ("writeset_session+mysql", {"history_size": 2, "write_set": "set"}, {}),
           ("writeset+mysql", {"ceiling": "error"}, {}),
           ("commit_order+mysql", {}, {"preserve_commit_order": False}),
           ("writeset+mysql", {}, {"checkpoint_group": 2}),
           ("commit_id+mariadb_optimistic", {"lookahead": 2}, {"max_queued": 1}),
           ("commit_id+mariadb_conservative", {}, {"max_queued": 2}),
           ("slave_group_commit+mariadb_conservative",
            {"commit_wait_count": 3, "commit_wait_usec": 20.0, "exec_default": 5.0}, {}),
       ]))
def test_generated_traces_with_options(trace, workers, case):
    """Tracker and applier options: a small write-set history (overflow), the 5.7 set, the
    ceiling, commit order off, a small GAQ, a small MariaDB queue, the slave group commit's
    triggers."""
    sched, topts, aopts = case
    columns = columns_of(trace.txns)
    for name in ("ideal", "durable", "replica16"):
        d = compare(sched, trace.txns, columns, workers, get_profile(name),
                    tracker_options=topts, applier_options=aopts)
        assert d is None, d


def test_applier_bugs_the_core_has_agree():
    """The catalogue bugs the core has (engine.COMPILED_BUGS) change both engines alike."""
    txns = _load(os.path.join(ROOT, "traces", "examples", "oltp_rw_8clients.jsonl.gz"), 400)
    columns = columns_of(txns)
    p = get_profile("durable")
    cases = [("commit_order+mysql", b) for b in ("lwm_off_by_one", "lwm_not_prefix",
                                                 "rotation_ignored", "commit_order_unenforced")]
    cases += [("commit_id+mariadb_optimistic", b) for b in ("gco_start_on_exec",
                                                             "optimistic_no_kill")]
    for sched, bug in cases:
        for w in (2, 8):
            d = compare(sched, txns, columns, w, p, bugs=frozenset({bug}))
            assert d is None, f"{bug}: {d}"


# ------------------------------------------------------------------ the open replay (lag)

def _replayer(path: str, scheduler: str, workers: int, profile: str):
    from commitsched.columnar import ColumnarTxns
    from commitsched.replay import Replayer, source_times
    txns = _load(os.path.join(ROOT, "traces", *path.split("/")), 400)
    columns = columns_of(txns)
    return Replayer(lambda: ColumnarTxns(columns, lambda: iter(txns)), source_times(txns),
                    scheduler, workers, get_profile(profile))


@pytest.mark.parametrize("scheduler,workers,profile", [
    ("commit_id+mariadb_conservative", 4, "replica16"),
    ("commit_id+mariadb_optimistic", 8, "durable"),
    ("writeset+mysql", 4, "replica16"),
    ("serial", 1, "durable"),
])
def test_lag_replays_agree(scheduler, workers, profile, monkeypatch):
    """`commitsched lag`'s replays (two laps at a pace, a stopped SQL thread held, the closed
    backlog) give the same dispatch and commit arrays in both engines."""
    from commitsched import engine as engine_mod
    path = "recorded/oltp_read_write_t8.jsonl.gz"
    laps = {}
    for name in ("reference", "compiled"):
        monkeypatch.setattr(engine_mod, "_default", name)
        rep = _replayer(path, scheduler, workers, profile)
        assert (rep._compiled(1, None) is not None) == (name == "compiled")
        laps[name] = (rep.closed_makespan(), rep.replay(1.0, laps=2), rep.replay(3.0, laps=3),
                      rep.replay(1.0, laps=2, hold=(100, 2e5)))
    ref, got = laps["reference"], laps["compiled"]
    assert ref[0] == got[0]
    for a, b in zip(ref[1:], got[1:]):
        assert np.array_equal(a.dispatch, b.dispatch) and np.array_equal(a.commit, b.commit)
        assert np.array_equal(a.source, b.source)


# ------------------------------------------------------------------ the report's window sinks

@pytest.mark.parametrize("scheduler,workers", [("commit_id+mariadb_optimistic", 8),
                                               ("writeset+mysql", 4)])
def test_window_sinks_get_the_same_records(scheduler, workers, monkeypatch):
    """The report's schedule windows (a sink that takes its runs in seq order) get the same
    run records from the core's schedule as from the reference's runs."""
    from commitsched import engine as engine_mod
    from commitsched.columnar import ColumnarTxns
    from commitsched.report.gantt import WindowSink
    from commitsched.schedulers import run_scheduler
    txns = _load(os.path.join(ROOT, "traces", "recorded", "oltp_read_write_t8.jsonl.gz"))
    columns = columns_of(txns)
    got = {}
    for name in ("reference", "compiled"):
        monkeypatch.setattr(engine_mod, "_default", name)
        sink = WindowSink(40)
        run_scheduler(scheduler, ColumnarTxns(columns, lambda: iter(txns)), workers,
                      get_profile("replica16"), sink)
        got[name] = [(r.seq, r.worker, r.dispatch, r.start, r.exec_end, r.ready, r.commit,
                      r.exec, r.retries, r.wasted, r.dep, r.spec_wait) for r in sink.window()]
    assert got["reference"] == got["compiled"] and len(got["compiled"]) == 40


# ------------------------------------------------------------------ the sweep's other passes

@pytest.mark.parametrize("path", BUNDLED[::3], ids=os.path.basename)
def test_bounds_and_annotations_agree(path):
    """The heuristic bounds and the trackers' annotations (the sweep's same_stream and
    tracker_unfit checks) from the core equal the reference's."""
    from commitsched.metrics import heuristic_bounds_for
    from commitsched.schedulers import SchedulerError
    from commitsched.trackers import TrackerError, get_tracker
    txns = _load(path)
    columns = columns_of(txns)
    for p in profiles():
        assert (engine.heuristic_bounds(columns, p, [1, 3, 16])
                == heuristic_bounds_for(txns, p, [1, 3, 16])), p.name
    for name in sorted(engine.COMPILED_TRACKERS):
        try:
            ref = [dep for _, dep in get_tracker(name).annotate(txns)]
        except TrackerError as e:
            with pytest.raises(SchedulerError) as got:
                engine.annotation(columns, name)
            assert str(got.value) == str(e)
            continue
        got = engine.annotation(columns, name)
        kind = get_tracker(name).kind
        for i, dep in enumerate(ref):
            if kind == "clock":
                assert dep == (got["a"][i], got["b"][i], got["file"][i]), (name, i)
            elif kind == "groups":
                mask = sum(columnar_flag(f) for f in dep[1])
                assert (dep[0], mask) == (got["a"][i], got["flags"][i]), (name, i)
            else:
                assert (dep is None) == bool(got["a"][i]), (name, i)


def columnar_flag(name: str) -> int:
    from commitsched.columnar import FLAG_BITS
    return FLAG_BITS[name]


@pytest.mark.parametrize("path", BUNDLED[::2], ids=os.path.basename)
def test_report_tracker_passes_agree(path, monkeypatch):
    """The report's tracker passes (what each tracker declares: its mean window or group
    size, or why it cannot feed the trace) from the core equal the reference's."""
    from commitsched import engine as engine_mod
    from commitsched.columnar import ColumnarTxns
    from commitsched.report.analysis import tracker_pass

    class Source:
        def __init__(self, txns):
            self._txns, self._cols = txns, columns_of(txns)

        def txns(self):
            return ColumnarTxns(self._cols, lambda: iter(self._txns))

    trace = Source(_load(path))
    for name, opts in [(t, {}) for t in sorted(engine.COMPILED_TRACKERS)] + [
            ("slave_group_commit", {"commit_wait_count": 3}), ("writeset", {"history_size": 5})]:
        got = {}
        for eng in ("reference", "compiled"):
            monkeypatch.setattr(engine_mod, "_default", eng)
            got[eng] = tracker_pass(trace, name, opts)
        assert got["reference"] == got["compiled"], name


@pytest.mark.parametrize("scheduler,workers,profile", [
    ("commit_id+mariadb_optimistic", 8, "replica16"), ("commit_id+mariadb_conservative", 4, "durable"),
    ("writeset+mysql", 8, "replica16"), ("database+mysql", 4, "durable")])
def test_blame_agrees(scheduler, workers, profile, monkeypatch):
    """`blame` (its runs' records through `collect`) says the same with either engine."""
    from commitsched import engine as engine_mod
    from commitsched.blame import blame_trace, summary
    from commitsched.columnar import ColumnarTxns
    txns = _load(os.path.join(ROOT, "traces", "recorded", "oltp_read_write_t8.jsonl.gz"), 1500)
    columns = columns_of(txns)
    got = {}
    for name in ("reference", "compiled"):
        monkeypatch.setattr(engine_mod, "_default", name)
        res = blame_trace(ColumnarTxns(columns, lambda: iter(txns)), scheduler, workers,
                          get_profile(profile))
        got[name] = summary(res, top=20)
    assert got["reference"] == got["compiled"]
