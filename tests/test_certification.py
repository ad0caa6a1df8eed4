"""Certification-based replication (docs/certification.md): the certifiers, the Galera and GR
appliers, flow control, the cluster simulator and its conformance with the specs' step
functions (the Python side; TLC's side is in tests/test_certification_tlc.py)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commitsched import flow_control as fc
from commitsched import steps_certification as sc
from commitsched.certification import (CertDep, GaleraCertifier, GRCertifier, Snapshot,
                                       certification_deps)
from commitsched.certification_throughput import (Cluster, ClusterConfig, ClusterError,
                                                  ClusterProfile, kept_up, sustained)
from commitsched.checks.trace_validation_cert import draw_runs, record_run
from commitsched.cli import main
from commitsched.profiles import get_profile
from commitsched.schedulers import collect
from commitsched.trace import Txn, load_trace

EXAMPLE = "traces/examples/semantics_1_4_logical_clock.jsonl"


# ---------------------------------------------------------------- Galera's certifier

def test_galera_conflict_needs_a_newer_writer_from_another_node():
    c = GaleraCertifier()
    assert c.certify(1, ["k"], 0, origin="A") == (True, 0)
    # saw nothing (last_seen 0), from another node: write-set 1 is newer -> conflict
    assert not c.certify(2, ["k"], 0, origin="B").ok
    # same source: a dependency, not a conflict (its own locks ordered them)
    assert c.certify(3, ["k"], 0, origin="A") == (True, 1)
    # saw write-set 3 (last_seen 3): a dependency
    assert c.certify(4, ["k"], 3, origin="B") == (True, 3)


def test_galera_depends_floor_toi_and_purge():
    c = GaleraCertifier()
    assert c.certify(1, ["a"], 0).depends_seqno == 0         # empty trx_map: seqno - 1
    assert c.certify(2, ["b"], 1).depends_seqno == 0         # lowest in trx_map (1) - 1
    assert c.certify(3, [], 2, toi=True).depends_seqno == 2   # TOI: its predecessor
    assert c.certify(4, ["c"], 3).depends_seqno == 3          # last_pa_unsafe
    c.purge(2)                                                # write-sets 1, 2 go
    assert "a" not in c.index and "b" not in c.index
    assert c.certify(5, ["a"], 4).depends_seqno == 3          # floor: lowest left (3) - 1


# ---------------------------------------------------------------- GR's certifier

def test_gr_snapshot_subset_rule_and_indexes():
    c = GRCertifier()
    r1 = c.certify(1, ["k"], Snapshot(0))
    assert r1 == (True, 1, 2)                        # first: last_committed_global 1, sn 2
    # its snapshot misses write-set 1, which wrote k: conflict
    assert not c.certify(2, ["k"], Snapshot(0)).ok
    # saw it: passes, depends on its sequence number
    assert c.certify(3, ["k", "j"], Snapshot(1)) == (True, 2, 3)
    assert c.certify(4, [], Snapshot(3)) == (True, 3, 4)      # no write set: alone
    assert c.certify(5, ["x"], Snapshot(4)) == (True, 4, 5)   # after it, everything after it
    assert c.certify(6, ["x"], Snapshot(5), local=True) == (True, None, None)
    assert c.certify(7, ["x", "y"], Snapshot(6)) == (True, 4, 6)   # local writers count -1


def test_gr_garbage_collection_raises_the_floor():
    c = GRCertifier()
    c.certify(1, ["a"], Snapshot(0))
    c.certify(2, ["b"], Snapshot(1))
    c.garbage_collect(Snapshot(2))
    assert "a" not in c.info and "b" in c.info      # b's version equals the stable set: kept
    assert c.certify(3, ["c"], Snapshot(2)) == (True, 4, 5)


def test_snapshot_sets():
    s = Snapshot.normal(0, {1, 2, 4})
    assert s == Snapshot(2, frozenset({4})) and 4 in s and 3 not in s
    assert Snapshot(2).issubset(s) and not Snapshot(3).issubset(s)
    assert s.with_id(3) == Snapshot(4)


def test_certification_tracker_on_the_worked_example():
    deps = [d for _, d in certification_deps(load_trace(EXAMPLE).txns)]
    assert [d.depends_seqno for d in deps] == [0, 1, 0, 0, 3]
    assert [(d.last_committed, d.sequence_number) for d in deps] == [
        (1, 2), (2, 3), (1, 4), (1, 5), (4, 6)]


# ---------------------------------------------------------------- the appliers

def test_galera_applier_threads_wait_in_the_apply_monitor():
    """§1.4's example, exec 100 / commit 10 (write-set 4: 400): with two slave threads the
    second takes write-set 2, which waits for 1 in the apply monitor while 3 cannot be taken;
    with four, 3 and 4 run beside 1 (no in-order dispatch stops them, unlike MySQL's)."""
    txns = load_trace(EXAMPLE).txns
    runs, _ = collect("certification+galera", txns, 2, get_profile("ideal"))
    assert [(r.start, r.commit) for r in runs] == [
        (0, 110), (110, 220), (110, 220), (220, 630), (220, 630)]
    runs, _ = collect("certification+galera", txns, 4, get_profile("ideal"))
    assert [(r.start, r.commit) for r in runs] == [
        (0, 110), (110, 220), (0, 220), (0, 410), (220, 410)]
    runs, _ = collect("certification+group_replication", txns, 4, get_profile("ideal"))
    assert runs[3].start == 110          # the coordinator dispatches in relay-log order


# ---------------------------------------------------------------- flow control

def test_galera_flow_control_rules():
    assert fc.galera_limits(16, 1.0, 3) == (28, 28)
    assert fc.galera_limits(16, 0.5, 3) == (14, 28)
    assert fc.galera_limits(100, 1.0, 9) == (300, 300)
    assert fc.galera_stop(0, False, 29, 28) and not fc.galera_stop(1, False, 29, 28)
    assert not fc.galera_stop(0, True, 29, 28) and not fc.galera_stop(0, False, 28, 28)
    assert fc.galera_cont(True, 28, 28) and not fc.galera_cont(True, 29, 28)


def test_gr_quota():
    assert fc.gr_quota(0, [], 1) == 0                         # nobody lags: unlimited
    assert fc.gr_quota(0, [2000, 5000], 1) == 1800            # 90% of the slowest
    assert fc.gr_quota(0, [2000], 2) == 900                   # split among the writers
    assert fc.gr_quota(0, [100], 1) == 1125                   # at least 5% of 25000, x 0.9
    assert fc.gr_quota(0, [0], 1) == 0                        # a stalled member is not counted
    assert fc.gr_quota(1000, [], 1) == 1500                   # release: +50%


def test_flow_control_step_function_small_models():
    """The Python twin of FlowControl.tla (N = 4 here; the spec's own N = 6 model is compared
    with TLC in the slow suite): the correct model holds its properties, the bug stops the
    group with nothing left to dequeue."""
    m = fc.SPEC_MODEL._replace(n=4)
    assert fc.explore(m)[1] is None
    bad = fc.explore(m._replace(bugs=frozenset({"fc_stop_mark_late"})))[1]
    assert bad is not None and bad[0] == "NoDeadlock"
    gr = m._replace(flavor="gr")
    assert fc.explore(gr, ("NoDeadlock",))[1] is None


def test_certification_step_function_catalogue():
    """The Python twin of Certification.tla, every shape of two write-sets: the correct rules
    keep every property, each catalogue bug breaks its own."""
    for flavor in ("galera", "gr"):
        assert sc.explore(sc.Model(2, 2, 2, 2, flavor))[1] is None
    assert sc.find_violation("cert_purge_past_safe", ("NoLostUpdate",))[:2] == (2, "NoLostUpdate")
    assert sc.find_violation("failed_ws_commits_early",
                             ("CommitOrderPreserved",))[:2] == (2, "CommitOrderPreserved")


# ---------------------------------------------------------------- the cluster simulator

def _replay(schedule):
    r = schedule.record
    m = sc.Model(r["members"], r["n"], r["keys"], r["workers"], r["flavor"])
    ws = tuple(frozenset(x["$set"]) for x in r["ws"])
    events = [(e.action, e.m, e.w) for e in schedule.events]
    return sc.replay(m, tuple(r["origin"]), ws, events)


@pytest.mark.parametrize("flavor", ["galera", "group_replication"])
def test_cluster_runs_are_behaviours_of_the_step_function(flavor):
    """Trace validation on the Python side: 40 drawn multi-writer runs, each a behaviour of
    Certification.tla's step function, every property holding in every state; and they do
    exercise the interesting paths (failed certifications, purges, parallel applies)."""
    failures = purges = 0
    for txns, origins, gap in draw_runs(40):
        sch = record_run(txns, origins, flavor=flavor, gap_us=gap)
        assert sch.events[-1].action == "end"
        rejected, bad = _replay(sch)
        assert rejected == [] and bad == [], (txns, origins, gap, rejected, bad)
        failures += sch.failures > 0
        purges += any(e.action == "purge" for e in sch.events)
    assert failures > 5
    if flavor == "galera":
        assert purges > 10


@pytest.mark.parametrize("bug", ["failed_ws_commits_early", "cert_purge_past_safe"])
def test_cluster_bugs_are_caught_by_the_step_function(bug):
    caught = 0
    for txns, origins, gap in draw_runs(40):
        rejected, bad = _replay(record_run(txns, origins, bugs=frozenset({bug}), gap_us=gap))
        caught += bool(rejected or bad)
    assert caught >= 5


def _profile(**kw):
    base = dict(client_cpu=100, origin_cpu=400, apply_cpu=250, rtt=150, fsync=150,
                fsync_cpu=30)
    return ClusterProfile("test", 2, **{**base, **kw})


def _workload(n=400):
    return [Txn(seq=i + 1, writes=(f"t.k/PRIMARY={i % 97}", f"t.k/PRIMARY={(i * 7) % 89}"))
            for i in range(n)]


def test_cluster_keeps_up_below_capacity_and_not_above():
    c = Cluster(_workload(), ClusterConfig(workers=2), _profile())
    low = c.run(300, 2.0, 0.5)
    assert kept_up(low, 2.0) and abs(low["tps"] - 300) < 30
    high = c.run(20000, 2.0, 0.5)
    assert not kept_up(high, 2.0)
    assert high["fc_paused"] > 0.1           # flow control held the writer


def test_flow_control_messages_take_their_trip():
    """A STOP travels `fc_rtt` before the writers stop (they go on sending meanwhile, so the
    queue passes the upper limit by more) and a CONT as long before they resume (with a lower
    limit of 3 write-sets the appliers run dry meanwhile: throughput is lost); the default is
    the channel's round."""
    cfg = ClusterConfig(workers=1, fc_limit=2)
    quick = Cluster(_workload(), cfg, _profile()).run(None, 1.0, 0.2)
    slow = Cluster(_workload(), cfg, _profile(fc_rtt=10_000)).run(None, 1.0, 0.2)
    upper = fc.galera_limits(2, 1.0, 3)[1]
    assert quick["fc_stops"] > 0 and slow["fc_stops"] > 0
    assert quick["queue_max"] > upper and slow["queue_max"] > quick["queue_max"]
    assert slow["tps"] < 0.95 * quick["tps"]


def test_sustained_follows_the_cpu_or_the_disk():
    """A relaxed cluster on 2 shared cores is CPU-bound: halving every CPU term nearly doubles
    its sustained rate. A durable one also waits for its flushes (one disk, one flush at a
    time): the same halving buys far less."""
    def rate(durable, k):
        prof = _profile(client_cpu=100 * k, origin_cpu=400 * k, apply_cpu=250 * k)
        return sustained(_workload(), ClusterConfig(workers=2, durable=durable), prof,
                         seconds=2, warmup=0.5, steps=6).sustained
    relaxed = rate(False, 1.0), rate(False, 0.5)
    durable = rate(True, 1.0), rate(True, 0.5)
    assert 1.6 < relaxed[1] / relaxed[0] < 2.1
    assert durable[1] / durable[0] < 1.4 and durable[0] < relaxed[0]


def test_cluster_config_and_cli_errors(capsys):
    with pytest.raises(ClusterError, match="flavor"):
        ClusterConfig(flavor="ndb").check()
    with pytest.raises(ClusterError, match="writers"):
        ClusterConfig(members=3, writers=(3,)).check()
    assert main(["cluster", EXAMPLE, "--profile", "nope", "--quiet"]) == 2
    assert "unknown cluster profile 'nope'" in capsys.readouterr().err
    assert main(["cluster", "/nonexistent.jsonl", "--quiet"]) == 2
    assert main(["score", EXAMPLE, "--scheduler", "certification+galera",
                 "--inject-bug", "fc_stop_mark_late", "--quiet"]) == 2
    assert "commitsched cluster TRACE --inject-bug fc_stop_mark_late" in capsys.readouterr().err


def test_report_cluster_section_scores_both_schedulers_and_searches_every_cell(monkeypatch):
    """The report's cluster section: both cluster schedulers' speedups as `score` gives them,
    and one sustained-throughput cell per flavour, durability and member count, rendered."""
    from commitsched.report import cluster_section as cs
    from commitsched.report.render import markdown_page
    from commitsched.scoring import score_trace
    monkeypatch.setattr(cs, "SECONDS", 0.3)
    monkeypatch.setattr(cs, "WARMUP", 0.1)
    monkeypatch.setattr(cs, "STEPS", 2)
    from commitsched.cli import TraceSource
    trace = TraceSource(EXAMPLE)
    prof = get_profile("ideal")
    got = cs.cluster_section(trace, prof, [2, 4])
    want = {(r["scheduler"], r["workers"]): r["speedup"]
            for r in score_trace(trace, ["certification+galera", "certification+group_replication"],
                                 [2, 4], prof, z3_bound="off") if r["scheduler"] != "serial"}
    assert {(r["scheduler"], r["workers"]): r["speedup"] for r in got["member_scores"]} == want
    assert len(want) == 4
    assert {(r["flavor"], r["durability"], r["members"]) for r in got["rows"]} == {
        (f, d, m) for f in cs.FLAVORS for d in cs.DURABILITIES for m in cs.MEMBERS}
    assert all(0 < r["sustained"] <= r["next_rate"] for r in got["rows"])
    head, body = cs.member_table(got)
    assert head == ["scheduler", "W=2", "W=4"] and len(body) == 2
    assert body[0][1] == f"{want[('certification+galera', 2)]:.2f}"


def test_report_has_the_cluster_section_only_when_asked(capsys):
    """`report --certification` adds it (a few seconds on any trace, and whole-trace scoring
    with two reference-only schedulers): without the flag there is none."""
    import json
    assert main(["report", EXAMPLE, "--json", "--workers", "1,2", "--no-whatif"]) == 0
    assert "cluster" not in json.loads(capsys.readouterr().out)



@pytest.mark.parametrize("path", sorted(str(p) for p in
                                        __import__("pathlib").Path("traces/examples").glob(
                                            "*.jsonl*")))
def test_both_cluster_schedulers_score_every_bundled_trace(path):
    from commitsched.schedulers import CLUSTER_SCHEDULERS
    from commitsched.scoring import score_trace
    from commitsched.cli import TraceSource
    rows = score_trace(TraceSource(path), list(CLUSTER_SCHEDULERS), [4], get_profile("ideal"),
                       z3_bound="off")
    got = {r["scheduler"]: r for r in rows}
    for name in CLUSTER_SCHEDULERS:
        assert "error" not in got[name], got[name]
        assert got[name]["speedup"] >= 1.0 - 1e-9


def test_the_compiled_engine_leaves_the_cluster_schedulers_to_the_reference():
    """model/engine.py: the core has no certifier nor Galera/GR applier; `score` with the
    compiled engine (the default) runs them in the reference model, with the same figures."""
    from commitsched import engine
    from commitsched.cli import TraceSource
    from commitsched.metrics import RunMetrics
    from commitsched.schedulers import CLUSTER_SCHEDULERS, parse_scheduler, run_scheduler
    trace = TraceSource("traces/examples/oltp_rw_8clients.jsonl.gz")
    assert engine.available()                       # `make setup` builds the core
    columns = trace.txns().get_columns()
    for name in CLUSTER_SCHEDULERS:
        assert "certification-based schedulers" in engine.unsupported(parse_scheduler(name),
                                                                      columns)
        got = {}
        for eng in engine.ENGINES:
            m = RunMetrics(4)
            run_scheduler(name, trace.txns(), 4, get_profile("durable"), m, engine=eng)
            got[eng] = (m.makespan, m.count, m.transactions)
        assert got["compiled"] == got["reference"]


def test_a_trace_without_keys_is_refused_in_one_line(tmp_path, capsys):
    """Certification is made from the row keys: a binlog imported with no schema (trace format
    version 2's keys_unknown) cannot feed it, and every way in says so in one line."""
    import os

    from commitsched.importers import import_binlog
    from commitsched.keys import needs_keys
    from commitsched.report.cluster_section import cluster_section
    fix = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
    bare = str(tmp_path / "bare.jsonl")
    import_binlog([os.path.join(fix, "mariadb_no_metadata.txt")], bare)
    assert needs_keys("certification+galera") and needs_keys("certification+group_replication")
    for argv in (["score", bare, "--scheduler", "certification+galera", "--workers", "2"],
                 ["cluster", bare, "--rate", "100", "--seconds", "0.2"],
                 ["lag", bare, "--system", "galera"]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1, (argv, err)
        assert "keys unknown for tables sbtest.sbtest1, sbtest.sbtest2" in err, (argv, err)
    section = cluster_section(load_trace(bare))
    assert section["skipped"].startswith("certification clusters: keys unknown for tables")
