"""Blame and the split what-if (docs/blame.md): the worked examples, by hand, and the blame's
waits held against the simulators' own accounting of them."""
import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from commitsched.blame import blame_runs, blame_trace, commits_in_order, summary
from commitsched.cli import main
from commitsched.profiles import get_profile
from commitsched.schedulers import DEFAULT_SCHEDULERS, collect, parse_scheduler
from commitsched.split import split_txns, split_whatif
from commitsched.trace import load_trace, write_trace

FIX = "tests/fixtures/blame"
HEAD_MYSQL = f"{FIX}/head_of_group_mysql.jsonl"
HEAD_MARIADB = f"{FIX}/head_of_group_mariadb.jsonl"
SYNC = f"{FIX}/sync_in_progress.jsonl"
IDEAL = get_profile("ideal")


def blame(path, scheduler, workers, profile=IDEAL):
    return blame_trace(load_trace(path).txns, scheduler, workers, profile)


# ---------------------------------------------------------------- worked examples (docs/blame.md)

def test_long_head_of_a_commit_group_takes_every_commit_order_wait():
    # W=5: seq 1 runs [0,1) while workers 2-5 idle (the coordinator waits for lwm >= 1): 4 on
    # seq 1. Then seq 2 (10 us) runs [1,11) beside seqs 3-6 (1 us each), which are ready at 2 and
    # wait for their commit turn until 11: 4 x 9 = 36 on seq 2. Seqs 7-10 run [11,12).
    r = blame(HEAD_MYSQL, "commit_order+mysql", 5)
    assert r.makespan == 12 and r.worker_time == 60
    assert r.by_culprit == {2: 36.0, 1: 4.0}
    assert r.waiting == 40
    assert {c: v for c, v in r.by_cause.items() if v} == {"commit_order": 36.0, "dependency": 4.0}
    assert r.victims[2] == {3: 9.0, 4: 9.0, 5: 9.0, 6: 9.0}
    # critical path: seq 1's exec, seq 2's exec, one of seqs 7-10
    assert r.critical == {1: 1.0, 2: 10.0, 10: 1.0}
    s = summary(r, top=1)
    assert s["headline"] == {"transactions": 1, "blame": 36.0, "share": 0.6,
                             "critical_path": 10.0, "critical_share": pytest.approx(10 / 12)}
    assert s["tables"][0] == {"table": "d.big", "blame": 36.0, "share": 0.6}


def test_idle_workers_behind_a_dependency_are_blamed_too():
    # W=8: as above, plus 7 idle workers during [0,1) (on seq 1) and 3 idle workers during
    # [1,11) while the coordinator waits for lwm >= 6 (on seq 2: 30).
    r = blame(HEAD_MYSQL, "commit_order+mysql", 8)
    assert r.by_culprit == {2: 66.0, 1: 7.0}
    assert r.by_cause["commit_order"] == 36 and r.by_cause["dependency"] == 37


def test_mariadb_head_of_group_conservative():
    # W=5: group 100 (seq 1: 10 us, seqs 2-5: 1 us) starts at 0; seqs 2-5 wait for seq 1 to
    # commit at 10: 36 on seq 1. Group 200 is queued behind on the same threads and runs [10,11).
    r = blame(HEAD_MARIADB, "commit_id+mariadb_conservative", 5)
    assert (r.makespan, r.by_culprit) == (11, {1: 36.0})
    assert r.critical == {1: 10.0, 9: 1.0}
    # W=8: seqs 6-8 have threads of their own but wait for group 100 to reach its commit (GCO)
    # until seq 1 ends at 10: 3 x 10 more, also on seq 1.
    r = blame(HEAD_MARIADB, "commit_id+mariadb_conservative", 8)
    assert r.by_culprit == {1: 66.0}
    assert {c: v for c, v in r.by_cause.items() if v} == {"commit_order": 36.0, "gco_wait": 30.0}


def test_waiting_for_the_sync_in_progress_is_blamed_on_the_group_commit():
    # sync 5 us, W=2: seq 1 [0,1) + sync to 6 (worker 2 idle: 1 on seq 1, 5 on the sync);
    # seqs 2, 3 start at 6; seq 2 commits at 12; seq 3, ready at 9, waits for that sync [9,12);
    # seq 4 takes worker 1 at 12, is ready at 16 and waits for seq 3's sync [16,17).
    r = blame(SYNC, "commit_order+mysql", 2, replace(IDEAL, sync=5.0))
    assert r.makespan == 22 and r.waiting == 10
    assert r.by_culprit == {"(group commit)": 9.0, 1: 1.0}
    # four syncs back to back, plus the work that led to the first two groups
    assert r.critical == {"(group commit)": 20.0, 1: 1.0, 2: 1.0}


def test_serial_replay_has_nothing_to_blame():
    r = blame(HEAD_MYSQL, "serial", 8)
    assert r.workers == 1 and r.waiting == 0 and r.by_culprit == {}
    assert sum(r.critical.values()) == r.makespan == 19


# ---------------------------------------------------------------- against the simulators

CROSS_TRACES = ("traces/examples/semantics_1_4_logical_clock.jsonl",
                "traces/examples/semantics_3_5_commit_id.jsonl",
                "traces/examples/mixed_ddl_fk.jsonl.gz",
                "traces/recorded/fk_parent_t8.jsonl.gz")


@pytest.mark.parametrize("path", CROSS_TRACES)
@pytest.mark.parametrize("profile", ["ideal", "durable"])
def test_blamed_waits_are_the_simulators_waits(path, profile):
    """The waits blame reads back from the schedule are the ones the simulator accounted while
    it ran (commit order / sync, and MariaDB's GCO, prior-commit and lock waits); every instant
    is blamed on a transaction or a named stage, none left unexplained; the critical path
    adds up to the makespan."""
    txns = load_trace(path).txns
    p = get_profile(profile)
    for name in DEFAULT_SCHEDULERS[1:]:
        sched = parse_scheduler(name)
        try:
            runs, blocked = collect(sched, txns, 4, p)
        except Exception:        # a tracker the trace cannot feed (e.g. commit_order on MariaDB)
            continue
        r = blame_runs(runs, scheduler=name, workers=4, dispatch_cost=p.dispatch,
                       ordered=commits_in_order(sched, {}),
                       mariadb=sched.applier.startswith("mariadb"), retry_cost=p.retry)
        c = r.by_cause
        assert c["commit_order"] + c["sync_wait"] == pytest.approx(
            blocked["commit_order"] + blocked["sync_wait"], abs=1e-6), name
        if not c["retry"]:
            assert c["gco_wait"] + c["prior_commit_wait"] + c["lock_wait"] == pytest.approx(
                blocked["gco_wait"] + blocked["prior_commit_wait"] + blocked["lock_wait"],
                abs=1e-6), name
        assert sum(r.by_culprit.values()) == pytest.approx(r.waiting, abs=1e-6)
        assert r.by_culprit.get("(other)", 0) == 0 and r.by_culprit.get("(coordinator)", 0) == 0
        assert sum(r.critical.values()) == pytest.approx(r.makespan, abs=1e-6)


# ---------------------------------------------------------------- split

def test_split_keeps_rows_and_work_and_chains_the_chunks(tmp_path):
    txns = load_trace(HEAD_MYSQL).txns
    new, chunks = split_txns(txns, {2: 2}, IDEAL)
    assert chunks == {2: [2, 7]}          # chunk 2 follows the end of seq 2's commit group
    assert [t.seq for t in new] == list(range(1, 12))
    a, b = new[1], new[6]
    assert (a.writes, b.writes) == (("d.big/PRIMARY=1",), ("d.big/PRIMARY=2",))
    assert a.exec + b.exec == 10
    assert [(t.last_committed, t.sequence_number) for t in new] == [
        (0, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (2, 7), (6, 8), (6, 9), (6, 10), (6, 11)]
    out = tmp_path / "split.jsonl"
    write_trace(str(out), new, {"from": "test"})
    assert len(load_trace(str(out)).txns) == 11       # a valid trace


def test_split_what_if_worked_examples():
    # MySQL: chunk 1 [1,6) with seqs 3-6; chunk 2 and seqs 7-10 start at 6, commit at 11.
    rows = split_whatif(load_trace(HEAD_MYSQL).txns, "commit_order+mysql", 5, IDEAL, [2, 1],
                        [1], 2)
    assert [(r["k"], r["makespan"], r["serial_makespan"]) for r in rows] == [
        (0, 12, 19), (1, 11, 19)]
    assert rows[1]["makespan_change"] == pytest.approx(-1 / 12, abs=1e-6)
    # MariaDB conservative: chunk 2 opens a group of its own, and group 200 must wait for it
    # to reach its commit (GCO): 11 either way, splitting buys nothing.
    rows = split_whatif(load_trace(HEAD_MARIADB).txns, "commit_id+mariadb_conservative", 5,
                        IDEAL, [1], [1], 2)
    assert [(r["k"], r["makespan"]) for r in rows] == [(0, 11), (1, 11)]



def test_split_shares_out_the_size_fields(tmp_path):
    """`rows`, `events`, `bytes` and the write set's repeated hashes go with the chunks' rows,
    so the cost model's per-event and per-byte terms see each chunk's share."""
    txns = load_trace(HEAD_MYSQL).txns
    big = txns[1]
    big.events, big.bytes, big.rows = 7, 1001, 2
    big.write_set_size = len(big.writes) + 3           # three hashes beyond one per key
    new, chunks = split_txns(txns, {2: 2}, IDEAL)
    parts = [new[s - 1] for s in chunks[2]]
    assert [t.events for t in parts] == [4, 3] and [t.bytes for t in parts] == [501, 500]
    assert [t.rows for t in parts] == [1, 1]
    assert [t.write_set_size for t in parts] == [1 + 2, 1 + 1]
    out = tmp_path / "split.jsonl"
    write_trace(str(out), new, {"from": "test"})
    assert [load_trace(str(out)).txns[s - 1].write_set_size for s in chunks[2]] == [3, 2]

def test_split_uses_profile_cost_when_the_trace_has_none():
    txns = load_trace("traces/recorded/oltp_read_write_t8.jsonl.gz").txns[:5]
    p = get_profile("durable")
    new, chunks = split_txns(txns, {1: 3}, p)
    parts = [new[s - 1] for s in chunks[1]]
    assert sum(t.exec for t in parts) == pytest.approx(p.exec_default)
    assert all(t.commit == p.commit_default for t in parts)     # each chunk commits
    assert sorted(k for t in parts for k in t.writes) == sorted(txns[0].writes)


# ---------------------------------------------------------------- command line

def test_blame_cli_json_and_svg(capsys, tmp_path):
    svg = tmp_path / "stall.svg"
    code = main(["blame", HEAD_MYSQL, "--scheduler", "commit_order+mysql", "--workers", "5",
                 "--json", "--split-top", "1", "--chunks", "2", "--svg", str(svg)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [(t["seq"], t["blame"]) for t in out["transactions"]] == [(2, 36.0), (1, 4.0)]
    assert [r["makespan"] for r in out["split"]] == [12, 11]
    assert out["stall"]["culprit"] == 2 and [x["seq"] for x in out["stall"]["rows"]] == [2, 3, 4, 5, 6]
    root = ET.fromstring(svg.read_text())
    assert root.tag.endswith("svg") and len(root.findall(".//{*}g")) == 5


def test_blame_cli_table(capsys):
    code = main(["blame", HEAD_MARIADB, "--scheduler", "commit_id+mariadb_conservative",
                 "--workers", "5"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("This transaction costs your replica 65.5%")


@pytest.mark.parametrize("argv, needle", [
    (["blame", "no/such/file.jsonl", "--scheduler", "serial", "--workers", "2"], "no such file"),
    (["blame", HEAD_MYSQL, "--scheduler", "commit_id+mariadb_conservative", "--workers", "2"],
     "commit_id needs MariaDB commit ids"),
    (["blame", HEAD_MYSQL, "--scheduler", "nope", "--workers", "2"], "TRACKER+APPLIER"),
])
def test_blame_cli_errors_are_one_line(capsys, tmp_path, argv, needle):
    out_path = tmp_path / "never.txt"
    code = main(argv + ["-o", str(out_path)])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out_path.exists()


def test_blame_cli_bad_split_list(capsys):
    with pytest.raises(SystemExit) as e:
        main(["blame", HEAD_MYSQL, "--scheduler", "serial", "--workers", "1",
              "--split-top", "0,2"])
    assert e.value.code == 2 and "positive integers" in capsys.readouterr().err


# ---------------------------------------------------------------- large transactions

BULK = "traces/examples/bulk_updates_16clients.jsonl.gz"


def test_generated_bulk_updates_lock_a_range_of_rows():
    from commitsched.generate import generate
    txns = list(generate(200, workload="oltp_update_index", clients=4, bulk_every=20,
                         bulk_rows=30))
    bulk = [t for t in txns if len(t.writes) > 1]
    assert bulk and all(len(t.writes) == 30 for t in bulk)
    for t in bulk:
        table = {k.partition("/")[0] for k in t.writes}
        ids = [int(k.rpartition("=")[2]) for k in t.writes]
        assert len(table) == 1 and ids == list(range(ids[0], ids[0] + 30))
    median_small = sorted(t.exec for t in txns if len(t.writes) == 1)[len(txns) // 2 - 10]
    assert min(t.exec for t in bulk) > median_small


@pytest.mark.parametrize("scheduler", ["writeset+mysql", "commit_order+mysql",
                                       "commit_id+mariadb_conservative"])
def test_blame_finds_the_bulk_transactions(scheduler):
    """39 of the 2000 transactions of the bulk example write 100 rows, the others one: the ten
    most blamed are bulk ones, under every tracker and applier family."""
    txns = load_trace(BULK).txns
    r = blame_trace(txns, scheduler, 8, IDEAL)
    assert [len(txns[s - 1].writes) for s, _ in r.top(10)] == [100] * 10


def test_report_has_the_blame_section(capsys, tmp_path):
    code = main(["report", HEAD_MYSQL, "-o", str(tmp_path), "--format", "md", "--profile",
                 "ideal", "--workers", "1,2,4,5", "--scheduler", "commit_order+mysql",
                 "--quiet"])
    assert code == 0
    data = json.loads((tmp_path / "report.json").read_text())
    b = data["blame"]
    assert (b["scheduler"], b["workers"]) == ("commit_order+mysql", 4)
    assert b["transactions"][0]["seq"] == 2 and b["stall"]["culprit"] == 2
    assert [r["k"] for r in b["split"]] == [0, 1, 5, 10, 20]
    page = (tmp_path / "report.md").read_text()
    assert "### Which transactions hold the replica back?" in page
    assert b["headline_text"] in page and "![blame_stall](blame_stall.svg)" in page
    ET.fromstring((tmp_path / "blame_stall.svg").read_text())


# ---------------------------------------------------------------- the real-replica check's arithmetic

def _split_check():
    import importlib.util
    spec = importlib.util.spec_from_file_location("split_check", "traces/record/split_check.py")
    sc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sc)
    return sc


def _runs_csv(path, rows, fields=("workload", "round", "sync", "mode", "threads", "apply_s",
                                  "fsync_ms", "load_before")):
    import csv
    with open(path / "runs.csv", "w", newline="") as f:
        csv.writer(f).writerows([fields, *rows])


def test_split_check_report_arithmetic(tmp_path):
    sc = _split_check()
    txns = load_trace(HEAD_MARIADB).txns
    write_trace(str(tmp_path / "whole.jsonl.gz"), txns, {})
    write_trace(str(tmp_path / "split.jsonl.gz"), split_txns(txns, {1: 2}, IDEAL)[0], {})
    rows = []
    # round 1: serial 10 / 11, optimistic 4 threads 5 / 4; round 2: serial 20 / 22, 8 / 8
    for rnd, (sw, ss, pw, ps) in ((1, (10, 11, 5, 4)), (2, (20, 22, 8, 8))):
        for w, serial, par in (("whole", sw, pw), ("split", ss, ps)):
            rows.append((w, rnd, "durable", "-", 0, serial, 0.2, 1.0))
            rows.append((w, rnd, "durable", "optimistic", 4, par, 4.0 if rnd == 2 else 0.2, 2.0))
    _runs_csv(tmp_path, rows)
    out = sc.compare(str(tmp_path), "ideal", 2)
    # paired: serial ratios 1.1, 1.1; optimistic 0.8, 1.0 -> median 0.9; speedup change of
    # each round 1.1 / 0.8 - 1 = 0.375 and 1.1 / 1.0 - 1 = 0.1 -> median 0.2375
    assert out["paired_serial_ratio"] == 1.1
    [p] = out["paired"]
    assert (p["mode"], p["threads"], p["rounds"]) == ("optimistic", 4, 2)
    assert p["apply_ratio"] == 0.9 and p["ratio_range"] == [0.8, 1.0]
    assert p["speedup_change"] == pytest.approx(0.2375, abs=1e-4)
    assert p["sign_test"] == {"above": 2, "below": 0, "p": 0.5}   # 2 of 2: p = 2 / 4
    assert p["change_ci95"] == [None, None]   # two rounds cannot bound a median at 95%
    assert p["ratio_ci95"] == [None, None] and out["paired_serial_ci95"] == [None, None]
    # seq 1 is the only multi-row transaction: the what-if is the split recording, and the
    # serial apply keeps its length (the two chunks cost 5 + 5 of seq 1's 10, no commit cost)
    assert p["predicted_apply_ratio"]["whatif"] == p["predicted_apply_ratio"]["scored"]
    assert out["predicted_serial_ratio"] == {"whatif": 1.0, "scored": 1.0}
    allruns = out["states"]["all"]["rows"][0]
    # medians: serial 15 / 16.5, optimistic 6.5 / 6 -> speedups 2.308 / 2.75
    assert allruns["measured"]["whole"] == pytest.approx(15 / 6.5, abs=1e-3)
    assert allruns["measured"]["split"] == pytest.approx(16.5 / 6, abs=1e-3)
    assert "slow" not in out["states"]        # no serial run had a slow fsync probe
    # example 2 on 4 threads: seq 5 queues behind seq 1 (commit 10), seq 9 behind seq 5: 12
    assert allruns["scored"]["whole"] == pytest.approx(18 / 12, abs=1e-3)
    # the docs' table: the serial row, then one per configuration, printed from these figures
    md = sc.markdown_table(out).splitlines()
    assert len(md) == 4
    assert md[2].startswith("| serial | 1 | 1.100 (-, -) [1.10, 1.10] | 1.000 / 1.000")
    assert md[3].startswith("| optimistic | 4 | 0.900 (-, -) [0.80, 1.00] |")
    assert "| +23.8% (-, -) | 2 / 0 (p 0.5) |" in md[3]


def test_split_check_paired_interval_and_sign_test():
    sc = _split_check()
    # 10 rounds, speedup changes -0.05, 0.05, 0.15, ..., 0.85: the median's 95% interval is
    # the 2nd and 9th order statistics (binomial(10, 1/2): P(X <= 1) = 11/1024 <= 0.025)
    serial = {str(r): 1.0 for r in range(1, 11)}
    par = {str(r): 1 / (1 + (r - 1.5) / 10) for r in range(1, 11)}
    [p] = sc.paired_changes({("-", 0): serial, ("conservative", 4): par})
    assert p["rounds"] == 10
    assert p["speedup_change"] == pytest.approx(0.4, abs=1e-4)
    assert p["change_ci95"] == pytest.approx([0.05, 0.75], abs=1e-4)
    # the apply ratios 1 / (1 + change) are in the reverse order: the same order statistics
    assert p["ratio_ci95"] == pytest.approx([1 / 1.75, 1 / 1.05], abs=1e-4)
    assert p["sign_test"]["above"] == 9 and p["sign_test"]["below"] == 1
    assert p["sign_test"]["p"] == pytest.approx(22 / 1024, abs=1e-6)


def test_split_check_reads_the_replicas_durability_and_disk_probe(tmp_path):
    sc = _split_check()
    fields = ("workload", "round", "sync", "mode", "threads", "apply_s", "fsync_ms",
              "load_before", "disk_fsync_ms")
    # servers on tmpfs: the datadir probe says 0.01 ms; the disk probe decides fast / slow
    rows = [(w, 1, "relaxed", "-", 0, 1.0, 0.01, 1.0, 3.0) for w in ("whole", "split")]
    _runs_csv(tmp_path, rows, fields)
    runs = sc.read_runs(str(tmp_path))
    assert [r["disk_ms"] for r in runs] == [3.0, 3.0]
    med, _ = sc.measured(runs, "slow")
    assert med["whole"][("-", 0)] == 1.0 and sc.measured(runs, "fast")[0] == {}
    assert sc.PROFILE_FOR_SYNC[runs[0]["sync"]] == "relaxed-mariadb"


@pytest.mark.parametrize("rows, message", [
    ([("whole", 1, "durable", "-", 0, 1.0, 0.2, 1.0), ("split", 1, "relaxed", "-", 0, 1.0, 0.2, 1.0)],
     "several durabilities"),
    ([("whole", 1, "durable", "-", 0, "fast", 0.2, 1.0)], "line 2: a number expected"),
    ([("halves", 1, "durable", "-", 0, 1.0, 0.2, 1.0)], "line 2: workload 'halves'"),
    ([], "no runs"),
])
def test_split_check_report_refuses_bad_runs_in_one_line(tmp_path, capsys, rows, message):
    sc = _split_check()
    _runs_csv(tmp_path, rows)
    assert sc.main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_split_check_report_without_runs_says_which_file(tmp_path, capsys):
    assert _split_check().main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/runs.csv" in err and err.count("\n") == 1


def test_split_check_lists_the_profile_size_terms():
    sc = _split_check()
    prof = replace(IDEAL, exec_event=3.0, commit_byte=0.5, dispatch_event=0.0)
    terms = sc.size_terms(prof)
    assert terms["events"] == {"exec_event": 3.0} and terms["bytes"] == {"commit_byte": 0.5}
    assert terms["rows"] == {}


@pytest.mark.parametrize("profile", ["durable-mariadb", "relaxed-mariadb"])
def test_blame_with_cores_modelled_leaves_nothing_unexplained(profile):
    """With the fitted 2-core profiles some waits are waits for a core, `(cores)`; still no
    wait is left unexplained and the blame and the critical path add up."""
    txns = load_trace("traces/recorded/oltp_read_write_t8.jsonl.gz").txns
    for name in ("commit_id+mariadb_conservative", "commit_id+mariadb_optimistic",
                 "writeset+mysql"):
        r = blame_trace(txns, name, 8, get_profile(profile))
        assert r.by_culprit.get("(other)", 0) == 0 and r.by_culprit.get("(coordinator)", 0) == 0
        assert sum(r.by_culprit.values()) == pytest.approx(r.waiting, abs=1e-6)
        assert sum(r.critical.values()) == pytest.approx(r.makespan, abs=1e-6)


def test_blame_with_the_cost_model_terms_leaves_nothing_unexplained():
    """`replica16` charges the driver per event and wakes a released MariaDB worker `wakeup`
    later: blame reads both back (per-run dispatch, `(wakeup)`), so no wait is left to
    `(other)`/`(coordinator)` and next to none to `(cores)` (16 cores, 8 workers)."""
    txns = load_trace("traces/examples/bulk_updates_16clients.jsonl.gz").txns
    profile = get_profile("replica16")
    assert profile.wakeup > 0 and profile.dispatch_event > 0
    for name in ("commit_id+mariadb_conservative", "commit_id+mariadb_optimistic",
                 "writeset+mysql"):
        r = blame_trace(txns, name, 8, profile)
        assert r.by_culprit.get("(other)", 0) == 0 and r.by_culprit.get("(coordinator)", 0) == 0
        assert r.by_culprit.get("(cores)", 0) <= 0.01 * r.waiting
        assert sum(r.by_culprit.values()) == pytest.approx(r.waiting, abs=1e-6)
        assert sum(r.critical.values()) == pytest.approx(r.makespan, abs=1e-6)
    r = blame_trace(txns, "commit_id+mariadb_conservative", 8, profile)
    assert r.by_culprit.get("(wakeup)", 0) > 0


def test_blame_cli_zero_and_overflowing_costs(capsys, tmp_path):
    """Found by the fuzzing campaign: a trace whose costs are all 0 has no speedup to print
    (`-`), one whose costs overflow a float ends in one line, as `score` does."""
    txns = load_trace(HEAD_MYSQL).txns
    for t in txns:
        t.exec, t.commit = 0.0, 0.0
    zero = tmp_path / "zero.jsonl"
    write_trace(str(zero), txns, {"from": "test"})
    assert main(["blame", str(zero), "--scheduler", "serial", "--workers", "2",
                 "--split-top", "1"]) == 0
    assert "what if" in capsys.readouterr().out
    for t in txns:
        t.exec = 1.7e308
    huge = tmp_path / "huge.jsonl"
    write_trace(str(huge), txns, {"from": "test"})
    code = main(["blame", str(huge), "--scheduler", "serial", "--workers", "2",
                 "-o", str(tmp_path / "never.txt")])
    err = capsys.readouterr().err
    assert code == 2 and "beyond what a float holds" in err and err.count("\n") == 1
    assert not (tmp_path / "never.txt").exists()


def test_blame_refuses_a_finite_makespan_beyond_its_time_resolution(capsys, tmp_path):
    """Found by CI's fuzzing campaign: one transaction of exec 1e308 gives a finite makespan
    that blame's time keys (EPS = 1e-6) cannot hold; one line, exit 2, nothing written."""
    txns = load_trace(HEAD_MYSQL).txns
    for t in txns:
        t.exec, t.commit = 0.0, 0.0
    txns[2].exec = 1e308
    big = tmp_path / "big.jsonl"
    write_trace(str(big), txns, {"from": "test"})
    code = main(["blame", str(big), "--scheduler", "serial", "--workers", "2",
                 "--split-top", "1,2", "-o", str(tmp_path / "never.txt")])
    err = capsys.readouterr().err
    assert code == 2 and "beyond what a float holds" in err and err.count("\n") == 1
    assert not (tmp_path / "never.txt").exists()


@pytest.mark.parametrize("opt", ["--primary-setting", "--replica-setting"])
def test_split_check_measure_refuses_a_setting_without_a_value(tmp_path, capsys, opt):
    with pytest.raises(SystemExit) as e:
        _split_check().main(["measure", "--out", str(tmp_path), opt, "binlog_cache_size"])
    assert e.value.code == 2
    assert "expected NAME=VALUE" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())       # refused before anything was started or written
