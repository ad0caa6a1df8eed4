"""The synthetic source (model/generate.py, gen_source.py, gen_workloads.py): its traces load,
are deterministic, and their annotations are what the lock rules imply (semantics.md §1.1–§1.3, §3.1)."""
from __future__ import annotations

import gc
import os
import shutil
import tracemalloc
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched.gen_examples import EXAMPLES, HAND_MADE, regenerate
from commitsched.generate import generate, generate_source_header
from commitsched.trace import iter_trace, load_trace, write_trace

EXAMPLES_DIR = os.path.join(os.path.dirname(__file__), "..", "traces", "examples")

# Configurations with real contention: hot rows, many clients, DDL, FK parents, rotation.
CONTENDED = [
    dict(workload="oltp_read_write", clients=8, table_size=200),
    dict(workload="oltp_read_write", clients=64, skew=0.8),
    dict(workload="oltp_update_index", clients=48, skew=0.9),
    dict(workload="oltp_insert", clients=32, tables=4),
    dict(workload="mixed", clients=16, table_size=300, skew=0.5, fk=True, ddl_every=97,
         rotate_every=250, source="mariadb"),
]


def _gen(n, **kw):
    return list(generate(n, **kw))


def _groups(txns):
    """Source binlog groups: maximal runs of equal commit_id; no commit_id = its own group."""
    groups = []
    for t in txns:
        if groups and t.commit_id is not None and groups[-1][-1].commit_id == t.commit_id:
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups


def _window(txns):
    """Mean number of earlier transactions the source marks as able to overlap (sn - lc - 1)."""
    return sum(t.sequence_number - t.last_committed - 1 for t in txns) / len(txns)


# ------------------------------------------------------------------ format, determinism

@pytest.mark.parametrize("ext", [".jsonl", ".jsonl.gz"])
def test_written_trace_loads_through_the_validating_loader(tmp_path, ext):
    kw = CONTENDED[-1]
    txns = _gen(1500, **kw)
    path = str(tmp_path / ("t" + ext))
    write_trace(path, txns, generate_source_header(1500, **kw))
    loaded = load_trace(path)
    assert loaded.txns == txns
    assert [t.seq for t in loaded] == list(range(1, 1501))
    src = loaded.source
    assert src["synthetic"] is True and src["time_unit"] == "us" and src["seed"] == 1
    assert src["workload"] == "mixed" and src["parameters"]["ddl_every"] == 97


def test_header_records_every_parameter():
    head = generate_source_header(10, workload="oltp_insert", clients=3, skew=0.25, seed=9)
    assert head["parameters"]["clients"] == 3 and head["parameters"]["skew"] == 0.25
    assert head["seed"] == 9 and head["transactions"] == 10
    assert "Zipf" in head["key_choice"]
    assert "uniform" in generate_source_header(workload="oltp_insert")["key_choice"]


def test_deterministic_for_a_seed():
    for kw in CONTENDED:
        a = [t.to_json() for t in generate(800, **kw)]
        b = [t.to_json() for t in generate(800, **kw)]
        assert a == b
        c = [t.to_json() for t in generate(800, **dict(kw, seed=2))]
        assert a != c


def test_exactly_n_and_a_prefix_for_a_longer_run():
    assert _gen(0) == []
    short = _gen(300, clients=8)
    assert len(short) == 300
    # The last group may be cut to reach n; everything before it is the longer run's prefix.
    long = _gen(600, clients=8)
    cut = len(short) - len(_groups(short)[-1])
    assert [t.to_json() for t in short[:cut]] == [t.to_json() for t in long[:cut]]


@pytest.mark.parametrize("bad", [dict(workload="tpcc"), dict(source="pg"), dict(skew=1.0),
                                 dict(skew=-0.1), dict(clients=0), dict(rotate_every=0),
                                 dict(exec_us=0), dict(bulk_every=0),
                                 dict(bulk_every=5, bulk_rows=0)])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError):
        generate(10, **bad)


# ------------------------------------------------------------------ the lock-interval theory

def _check_intervals(txns):
    """i < j in one file with sn_i > lc_j (may overlap) never write a common key. Returns how
    many conflicting same-file pairs within 64 positions the source correctly ordered, so a
    test can insist the check was not vacuous."""
    ordered = 0
    for j, tj in enumerate(txns):
        wj = set(tj.writes)
        for i in range(j - 1, max(0, j - 64) - 1, -1):
            ti = txns[i]
            if ti.file != tj.file:
                break
            common = wj.intersection(ti.writes)
            if ti.sequence_number > tj.last_committed:
                assert not common, (f"seq {ti.seq} and {tj.seq} may overlap "
                                    f"(sn {ti.sequence_number} > lc {tj.last_committed}) "
                                    f"but both write {sorted(common)}")
            elif common:
                ordered += 1
        # Overlap candidates are never farther back than 64 here; check the rest anyway.
        for i in range(max(0, j - 64) - 1, -1, -1):
            ti = txns[i]
            if ti.file != tj.file or ti.sequence_number <= tj.last_committed:
                break
            assert not wj.intersection(ti.writes)
    return ordered


@pytest.mark.parametrize("kw", CONTENDED, ids=lambda kw: f"{kw['workload']}-{kw['clients']}")
def test_overlapping_transactions_never_conflict(kw):
    txns = _gen(3000, **kw)
    ordered = _check_intervals(txns)
    if kw["workload"] != "oltp_insert":   # auto-increment inserts never conflict
        assert ordered > 0


def test_ddl_runs_alone():
    # A DDL waits for every running transaction and blocks new ones: everything before it in
    # its file has committed when it ends (lc = sn - 1, or 0 for the first of a file), and
    # everything after it depends on it. MySQL gives DDL no special timestamps: this
    # isolation comes from its metadata locks, which the simulation models as a global lock.
    txns = _gen(3000, **CONTENDED[-1])
    ddls = [t for t in txns if t.ddl]
    assert len(ddls) >= 20
    for d in ddls:
        assert d.writes == () and d.db == ("sbtest",)
        assert d.last_committed == (d.sequence_number - 1 if d.sequence_number > 1 else 0)
        assert d.commit_id is None
        assert d.flags == {"ddl", "allow_parallel"}
        for t in txns[d.seq:]:
            if t.file != d.file:
                break
            assert t.last_committed >= d.sequence_number


@settings(max_examples=40)
@given(workload=st.sampled_from(["oltp_read_write", "oltp_update_index", "oltp_insert", "mixed"]),
       clients=st.integers(1, 24), tables=st.integers(1, 3), table_size=st.integers(5, 400),
       skew=st.sampled_from([0.0, 0.5, 0.95]), seed=st.integers(1, 10_000),
       rotate_every=st.sampled_from([None, 7, 60]), ddl_every=st.sampled_from([None, 5, 40]),
       fk=st.booleans(), sync_us=st.sampled_from([0.0, 500.0]),
       commit_wait_count=st.sampled_from([0, 3, 50]))
def test_lock_rules_hold_for_any_parameters(workload, clients, tables, table_size, skew, seed,
                                            rotate_every, ddl_every, fk, sync_us,
                                            commit_wait_count):
    kw = dict(workload=workload, clients=clients, tables=tables, table_size=table_size,
              skew=skew, seed=seed, rotate_every=rotate_every, ddl_every=ddl_every, fk=fk,
              sync_us=sync_us, commit_wait_count=commit_wait_count, commit_wait_usec=3000.0)
    txns = _gen(250, **kw)
    assert [t.seq for t in txns] == list(range(1, 251))
    _check_intervals(txns)
    for g in _groups(txns):
        keys = [k for t in g for k in t.writes]
        assert len(keys) == len(set(keys))
        assert all(t.last_committed < g[0].sequence_number for t in g)
        assert len(g) == 1 or not any(t.ddl for t in g)
    for t in txns:
        if t.ddl:
            assert t.last_committed == (t.sequence_number - 1 if t.sequence_number > 1 else 0)
    if clients == 1:
        assert all(t.last_committed == max(0, t.sequence_number - 1) for t in txns)


# ------------------------------------------------------------------ groups and flags

@pytest.mark.parametrize("kw", CONTENDED, ids=lambda kw: f"{kw['workload']}-{kw['clients']}")
def test_groups_are_consecutive_and_conflict_free(kw):
    txns = _gen(3000, **kw)
    groups = _groups(txns)
    seen = set()
    multi = 0
    for g in groups:
        cid = g[0].commit_id
        if cid is None:
            continue
        assert cid not in seen, f"commit_id {cid} appears in two runs"
        seen.add(cid)
        multi += 1
        # A commit_id is only written for a group of more than one (the final group may be
        # cut by n, so it is exempt).
        assert len(g) > 1 or g is groups[-1]
        assert len({t.file for t in g}) == 1
        keys = Counter(k for t in g for k in t.writes)
        # Stronger than "when no member waited": a waiter resumes only after its holder's
        # engine commit, so it can never share its holder's group.
        assert max(keys.values()) == 1, f"group {cid} members conflict"
        # No member had committed when any member ended: all may overlap the first.
        assert all(t.last_committed < g[0].sequence_number for t in g)
        assert not any(t.ddl for t in g)
    assert multi > 0
    assert all(t.commit_id is not None for g in groups if len(g) > 1 for t in g)


@pytest.mark.parametrize("kw", [CONTENDED[0], CONTENDED[2], CONTENDED[4]],
                         ids=["rw", "update_index", "mixed"])
def test_waited_exactly_on_transactions_that_waited(kw):
    """Replays the simulation's lock events with a separate lock table: every grant is of a
    free key, every wait is on a key another live attempt holds, and the trace's `waited`
    flag is set exactly on the transactions whose committed attempt waited."""
    holder: dict[str, int] = {}
    held: dict[int, set] = {}
    waits: dict[int, set] = {}
    waited_on: dict[int, list] = {}
    flushed: dict[int, int] = {}
    rolled = set()
    events = Counter()

    def obs(ev, time, aid, *args):
        events[ev] += 1
        if ev in ("lock", "grant"):
            key = args[0]
            assert key not in holder, f"{key} granted to {aid} while held by {holder.get(key)}"
            if ev == "grant":
                assert key in waits.get(aid, ()), "granted a key it was not waiting for"
            holder[key] = aid
            held.setdefault(aid, set()).add(key)
        elif ev == "wait":
            key, by = args
            assert holder.get(key) == by and by != aid
            waits.setdefault(aid, set()).add(key)
            waited_on.setdefault(aid, []).append(by)
        elif ev == "release":
            key = args[0]
            assert holder.pop(key) == aid
            held[aid].discard(key)
        elif ev == "rollback":
            rolled.add(aid)
        elif ev == "flush":
            flushed[aid] = args[0]
        elif ev == "commit":
            assert aid not in rolled

    txns = list(generate(3000, observer=obs, **kw))
    waited_seqs = {flushed[a] for a in waits if a in flushed}
    assert waited_seqs, "no transaction waited: the check would be vacuous"
    assert {t.seq for t in txns if "waited" in t.flags} == waited_seqs
    assert not rolled & set(flushed), "a rolled-back attempt reached the binlog"
    # A waiter resumes after its holder's engine commit, so the holder (unless it was rolled
    # back) precedes it in the binlog and, in the same file, is below its last_committed.
    checked = 0
    for waiter, holders in waited_on.items():
        for h in holders:
            if h in flushed and waiter in flushed:
                th, tw = txns[flushed[h] - 1], txns[flushed[waiter] - 1]
                assert th.seq < tw.seq
                if th.file == tw.file:
                    assert th.sequence_number <= tw.last_committed
                checked += 1
    assert checked > 0


def test_deadlocks_are_rolled_back_and_retried():
    rolled = []
    txns = _gen(3000, workload="oltp_read_write", clients=32, table_size=50,
                observer=lambda ev, t, aid, *a: rolled.append(aid) if ev == "rollback" else None)
    assert rolled, "50 hot rows and 32 clients should deadlock sometimes"
    assert len(txns) == 3000
    _check_intervals(txns)


def test_flags_sessions_and_times():
    for kw in CONTENDED:
        txns = _gen(1500, **kw)
        clients = kw["clients"]
        prev = 0.0
        for t in txns:
            assert "allow_parallel" in t.flags
            assert ("transactional" in t.flags) == (not t.ddl) == ("ddl" not in t.flags)
            assert 1 <= t.session <= clients
            assert t.exec > 0 and t.commit == 20.0
            assert t.timestamp >= prev
            prev = t.timestamp
        gtid = txns[9].gtid
        if kw.get("source") == "mariadb":
            assert gtid == "0-1-10"
        else:
            assert gtid.endswith(":10") and len(gtid.split(":")[0]) == 36


# ------------------------------------------------------------------ shapes

def test_one_client_is_fully_serial():
    txns = _gen(1000, workload="oltp_read_write", clients=1, rotate_every=300)
    assert {t.file for t in txns} == {1, 2, 3, 4}
    for t in txns:
        expected = 0 if t.sequence_number == 1 else t.sequence_number - 1
        assert t.last_committed == expected
        assert t.commit_id is None and "waited" not in t.flags and t.session == 1


def test_rotation_restarts_numbering():
    txns = _gen(2000, workload="oltp_read_write", clients=16, rotate_every=400)
    files = Counter(t.file for t in txns)
    assert sorted(files) == list(range(1, len(files) + 1)) and len(files) >= 4
    for f, count in files.items():
        if f != max(files):
            # Rotation waits for the end of the group that reached 400 (a group never spans
            # two files), so a file may hold a few more.
            assert 400 <= count < 400 + 16
    for a, b in zip(txns, txns[1:]):
        if b.file != a.file:
            assert b.sequence_number == 1 and b.last_committed == 0
        else:
            assert b.sequence_number == a.sequence_number + 1
    # A transaction whose parent lies in the previous file gets 0, not a negative number.
    assert sum(t.last_committed == 0 for t in txns) > len(files)


def test_more_clients_more_parallelism():
    windows, sizes = [], []
    for clients in (1, 4, 16, 64):
        txns = _gen(3000, workload="oltp_read_write", clients=clients)
        windows.append(_window(txns))
        sizes.append(len(txns) / len(_groups(txns)))
    assert windows[0] == 0 and sizes[0] == 1
    assert windows == sorted(windows) and len(set(windows)) == 4, windows
    assert sizes == sorted(sizes) and len(set(sizes)) == 4, sizes


def test_commit_wait_count_makes_larger_groups():
    # MariaDB binlog_commit_wait_count/_usec on the source (semantics.md §3.2).
    plain = _gen(3000, workload="oltp_read_write", clients=32)
    waiting = _gen(3000, workload="oltp_read_write", clients=32, commit_wait_count=16,
                   commit_wait_usec=2000.0)
    assert len(_groups(waiting)) < 0.75 * len(_groups(plain))
    _check_intervals(waiting)


def test_commit_wait_stops_when_a_queued_transaction_has_a_lock_waiter():
    # Five hot rows: the count (100) is never reached; without the MDEV-7249 trigger every
    # group would wait the full second before its flush.
    txns = _gen(1000, workload="oltp_read_write", clients=8, table_size=5,
                commit_wait_count=100, commit_wait_usec=1e6)
    groups = _groups(txns)
    assert txns[-1].timestamp < 0.1 * len(groups)       # seconds


def test_oltp_read_write_shape():
    txns = _gen(500, workload="oltp_read_write", clients=4, tables=3)
    for t in txns:
        # index update, non-index update, DELETE+INSERT of one id: up to 3 PRIMARY keys.
        assert 1 <= len(t.writes) <= 3
        assert all(k.startswith("sbtest.sbtest") and "/PRIMARY=" in k for k in t.writes)
        assert t.before_images == ()
    assert {k.split("/")[0] for t in txns for k in t.writes} == {
        "sbtest.sbtest1", "sbtest.sbtest2", "sbtest.sbtest3"}


def test_bulk_updates_lock_consecutive_rows_and_respect_the_lock_rules():
    """Every `bulk_every`-th transaction begun is a range UPDATE of `bulk_rows` consecutive
    rows of one table (deadlock retries keep its kind), the rest single-row updates; the bulk
    knobs are in the header only when bulk updates are on."""
    kw = dict(workload="oltp_update_index", clients=16, tables=2, bulk_every=25, bulk_rows=40,
              source="mariadb")
    txns = _gen(1000, **kw)
    bulk = [t for t in txns if len(t.writes) > 1]
    assert 35 <= len(bulk) <= 40 and all(len(t.writes) == 40 for t in bulk)
    for t in bulk:
        tables = {k.split("/")[0] for k in t.writes}
        rows = [int(k.rpartition("=")[2]) for k in t.writes]
        assert len(tables) == 1 and rows == list(range(rows[0], rows[0] + 40))
    assert all(len(t.writes) == 1 for t in txns if t not in bulk)
    assert _check_intervals(txns) > 0
    assert generate_source_header(1000, **kw)["parameters"]["bulk_rows"] == 40
    assert "bulk_rows" not in generate_source_header(10)["parameters"]
    # a row share of a small transaction each: median cost about 40 x 150 / 10 µs
    costs = sorted(t.exec for t in bulk)
    assert 300 < costs[len(costs) // 2] < 1200

def test_insert_over_tables_never_conflicts():
    txns = _gen(2000, workload="oltp_insert", clients=100, tables=25)
    keys = [k for t in txns for k in t.writes]
    assert len(keys) == len(set(keys)) == 2000
    assert len({k.split("/")[0] for k in keys}) == 25
    assert not any("waited" in t.flags for t in txns)


def test_mixed_has_unique_before_images_no_pk_and_fk_parents():
    txns = _gen(3000, **CONTENDED[-1])
    with_before = [t for t in txns if t.before_images]
    assert with_before
    for t in with_before:
        assert set(t.before_images) <= set(t.writes)
        assert all("/uk=" in k for k in t.before_images)
    # A value an UPDATE freed is reused later: the later writer meets the earlier one only
    # through the before image (what `before_image_ignored` would miss).
    freed_by = {}
    reused = 0
    for t in txns:
        for k in t.writes:
            if k in freed_by and k not in t.before_images:
                reused += 1
        for k in t.before_images:
            freed_by[k] = t.seq
    assert reused > 0
    assert any(t.no_pk for t in txns) and any(t.fk_parent for t in txns)
    assert any("sbtest.parent/PRIMARY=" in k for t in txns if not t.fk_parent for k in t.writes)


def test_skew_concentrates_on_hot_rows():
    def hot_share(skew):
        txns = _gen(3000, workload="oltp_update_index", clients=4, skew=skew)
        ids = [int(t.writes[0].rsplit("=", 1)[1]) for t in txns]
        return sum(i <= 100 for i in ids) / len(ids)   # the hottest 1% of 10000 rows
    uniform, skewed = hot_share(0.0), hot_share(0.9)
    assert uniform < 0.03 and skewed > 0.3


# ------------------------------------------------------------------ memory

def _streaming_peak(n, **kw):
    """tracemalloc's peak while streaming n transactions and dropping each."""
    gc.collect()
    tracemalloc.start()
    try:
        count = sum(1 for _ in generate(n, **kw))
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _materialised_peak(n, **kw):
    gc.collect()
    tracemalloc.start()
    try:
        held = list(generate(n, **kw))
        assert len(held) == n
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_stays_bounded_while_streaming():
    kw = dict(workload="mixed", clients=16, fk=True, ddl_every=500)
    count, stream = _streaming_peak(20_000, **kw)
    held = _materialised_peak(2_000, **kw)
    assert count == 20_000
    # Ten times the transactions streamed in less than holding a tenth of them takes.
    assert stream < held / 2, (stream, held)


@pytest.mark.slow
def test_memory_stays_bounded_for_200k():
    kw = dict(workload="oltp_read_write", clients=64)
    count, big = _streaming_peak(200_000, **kw)
    _, small = _streaming_peak(20_000, **kw)
    held = _materialised_peak(20_000, **kw)
    assert count == 200_000
    # Memory does not grow with n (bounded by clients and tables) ...
    assert big < 2 * small + 100_000, (big, small)
    # ... and is small next to a materialised list of a tenth of the transactions.
    assert big < held / 10, (big, held)


# ------------------------------------------------------------------ bundled examples

def test_bundled_examples_regenerate_identically(tmp_path):
    for fname, _ in HAND_MADE:      # the README lists the hand-made ones too
        shutil.copy(os.path.join(EXAMPLES_DIR, fname), tmp_path / fname)
    regenerate(str(tmp_path))
    for name, n, kw in EXAMPLES:
        found = [f for f in os.listdir(EXAMPLES_DIR) if f.split(".")[0] == name]
        assert len(found) == 1, f"{name}: {found}"
        bundled = load_trace(os.path.join(EXAMPLES_DIR, found[0]))
        fresh = load_trace(str(tmp_path / found[0]))
        assert len(bundled) == n
        assert bundled.txns == fresh.txns and bundled.source == fresh.source
        if found[0].endswith(".jsonl"):
            assert os.path.getsize(os.path.join(EXAMPLES_DIR, found[0])) <= 200_000
    with open(os.path.join(EXAMPLES_DIR, "README.md"), encoding="utf-8") as fh:
        # The README's counts are measured from the traces, so it regenerates identically too.
        assert fh.read() == (tmp_path / "README.md").read_text(encoding="utf-8")


def test_hand_made_examples_say_what_semantics_md_says():
    t14 = load_trace(os.path.join(EXAMPLES_DIR, HAND_MADE[0][0]))
    assert [(t.last_committed, t.sequence_number) for t in t14] == [
        (0, 1), (1, 2), (1, 3), (1, 4), (3, 5)]
    assert all(t.exec for t in t14)
    _check_intervals(t14.txns)
    t22 = load_trace(os.path.join(EXAMPLES_DIR, HAND_MADE[1][0]))
    assert [t.last_committed for t in t22] == [0, 1, 2, 3, 4, 5]
    assert [t.ddl for t in t22] == [False] * 4 + [True, False]
    t35 = load_trace(os.path.join(EXAMPLES_DIR, HAND_MADE[2][0]))
    assert [t.commit_id for t in t35] == [100, 100, 100, 200, 200, None]
    for g in _groups(t35.txns):
        keys = [k for t in g for k in t.writes]
        assert len(keys) == len(set(keys))


def test_examples_readme_lists_every_file():
    with open(os.path.join(EXAMPLES_DIR, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    traces = [f for f in os.listdir(EXAMPLES_DIR) if ".jsonl" in f]
    assert len(traces) == len(EXAMPLES) + len(HAND_MADE)
    for f in traces:
        assert f"`{f}`" in text
        _, it = iter_trace(os.path.join(EXAMPLES_DIR, f))
        assert f"| {sum(1 for _ in it)} |" in text
