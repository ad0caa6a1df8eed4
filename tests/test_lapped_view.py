"""The lapped trace as a view (model/columnar.py `Columns.lapped`, the core's `Cols` reading
row i % base): the core's runs over it are the runs over the arrays tiled lap after lap (the
copy `lapped` made before, kept here as the oracle), bit for bit, on generated traces with
rotations, clocks and commit ids missing for some transactions; and a replay's times-only
schedule is the full schedule's times."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched import columnar, engine
from commitsched.profiles import get_profile
from commitsched.schedulers import SchedulerError, parse_scheduler
from commitsched.simcore import Deadlock
from engine_diff import SCHEDULERS, columns_of, compiled_run, difference
from test_engine_diff import wild_traces


def tiled(c: columnar.Columns, laps: int) -> columnar.Columns:
    """The trace's arrays copied `laps` times: lap k continues the seqs, moves its binlog files
    past the last lap's and its commit ids past the last lap's largest (the oracle)."""
    a, out = c.arrays, {}
    max_file = int(a["file"].max()) if c.n else 0
    for name, col in a.items():
        if col is None or name in ("w_off", "w_keys", "s_off", "s_ids"):
            continue
        if name == "file":
            out[name] = np.concatenate([col + k * max_file for k in range(laps)])
        elif name == "commit_id":
            shift = int(col.max()) + 1 if c.n else 1
            out[name] = np.concatenate([np.where(col < 0, col, col + k * shift)
                                        for k in range(laps)])
        else:
            out[name] = np.tile(col, laps)
    for name, col in a.items():
        out.setdefault(name, col)
    for off, ids in (("w_off", "w_keys"), ("s_off", "s_ids")):
        if a.get(off) is None:
            continue
        base = int(a[off][0])
        used = a[ids][base:int(a[off][-1])]
        out[ids] = np.tile(used, laps)
        out[off] = np.concatenate([(a[off] - base)[:-1] + k * len(used) for k in range(laps)]
                                  + [np.array([laps * len(used)], np.int64)])
    return columnar.Columns(c.n * laps, c.seq0, out, c.keys, c.replica_locks, c.schemas,
                            c.keys_unknown)


@settings(max_examples=30, deadline=None)
@given(wild_traces(max_size=20), st.sampled_from((2, 3)), st.sampled_from((1, 2, 4)),
       st.sampled_from(("ideal", "durable", "durable-mariadb")))
def test_the_view_runs_as_the_tiled_arrays(trace, laps, workers, profile):
    columns = columns_of(trace.txns)
    view, copy = columns.lapped(laps), tiled(columns, laps)
    assert view.n == copy.n and view.arrays is columns.arrays      # a view: nothing copied
    p = get_profile(profile)
    for sched in SCHEDULERS:
        for w in ([1] if sched.startswith("serial") else (workers,)):
            d = difference(compiled_run(sched, copy, w, p), compiled_run(sched, view, w, p))
            assert d is None, f"{sched} W={w} {profile} laps={laps}: {d}"


@settings(max_examples=15, deadline=None)
@given(wild_traces(max_size=20), st.lists(st.floats(0, 50, allow_nan=False), min_size=40,
                                          max_size=40))
def test_times_only_is_the_full_schedules_times(trace, gaps):
    columns = columns_of(trace.txns).lapped(2)
    arrival = np.cumsum(np.array(gaps[:columns.n]) * 7.0)
    p = get_profile("durable-mariadb")
    for sched in ("serial", "commit_id+mariadb_optimistic", "writeset+mysql"):
        s = parse_scheduler(sched)
        try:
            full = engine.simulate(s, columns, 4, p, arrival=arrival, schedule=True)
        except (SchedulerError, Deadlock) as e:       # a trace this tracker cannot feed
            with pytest.raises(type(e)):
                engine.simulate(s, columns, 4, p, arrival=arrival, schedule=True,
                                times_only=True)
            continue
        short = engine.simulate(s, columns, 4, p, arrival=arrival, schedule=True,
                                times_only=True)
        for name in ("dispatch", "exec", "commit"):
            assert np.array_equal(full[name], short[name], equal_nan=True), (sched, name)
        assert "start" not in short and "worker" not in short
        assert short["makespan"] == full["makespan"]


def test_a_view_is_neither_sliced_nor_lapped_again():
    one = columnar.Columns(2, 1, {"file": np.array([1, 2], np.int64)}, [], False)
    view = one.lapped(3)
    assert (view.n, view.laps, view.file_step, view.cid_step) == (6, 3, 2, 0)
    assert one.lapped(1) is one
    with pytest.raises(ValueError, match="sliced"):
        view.slice(0, 1)
    with pytest.raises(ValueError, match="lapped again"):
        view.lapped(2)


@pytest.mark.parametrize("sched", ["commit_id+mariadb_conservative", "writeset+mysql"])
def test_laps_do_not_merge_across_the_lap_boundary(sched):
    """One commit group (MariaDB) or one binlog file's clock (MySQL) over the whole trace: lap k
    is its own group, its own file, in the view as in the copy (a view that reused the ids
    would let lap 1 join lap 0's group, or read its clock in lap 0's file)."""
    from commitsched.trace import trace_from_dicts
    rows = [{"seq": s, "file": 1, "commit_id": 7, "last_committed": 0, "sequence_number": s,
             "writes": [f"db.t/PRIMARY={s}"], "exec": 10.0} for s in (1, 2, 3)]
    columns = columns_of(trace_from_dicts(rows, {"generator": "test"}).txns)
    view, copy = columns.lapped(3), tiled(columns, 3)
    p = get_profile("durable-mariadb")
    ran = compiled_run(sched, view, 8, p)
    assert ran[0] == "ok"
    assert difference(compiled_run(sched, copy, 8, p), ran) is None
