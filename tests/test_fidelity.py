"""The fidelity pipeline (traces/record/fidelity.py, fit_machine.py, replica16.py): the
measured speedups of the 16-core replica, the execution cost solved from the serial applies, the
CPU growth from the counters only, the summary and best-thread-count checks, and the stored
fitted profiles."""
from __future__ import annotations

import csv
import os

import pytest

from record_scripts import import_record_scripts

fidelity, fm, r16 = import_record_scripts("fidelity", "fit_machine", "replica16")

from dataclasses import replace  # noqa: E402

from commitsched.profiles import Profile, get_profile  # noqa: E402
from commitsched.trace import Txn, write_trace  # noqa: E402


def _timings(tmp_path, rows):
    with open(tmp_path / "timings.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "mode", "threads", "round", "seconds", "tps", "retried_txns",
                    "fsync_ms", "cpu_busy_cores", "cpu_iowait_pct", "cpu_steal_pct"])
        for r in rows:
            w.writerow(r)
    return str(tmp_path)


def test_measured_pairs_each_run_with_its_rounds_serial(tmp_path):
    folder = _timings(tmp_path, [
        ("a", "serial", 0, 1, 2.0, 0, 0, 0.1, 0.9, 0, 0),
        ("a", "serial", 0, 2, 4.0, 0, 0, 0.1, 0.9, 0, 0),
        ("a", "optimistic", 4, 1, 1.0, 0, 0, 0.1, 2.0, 0, 0),
        ("a", "optimistic", 4, 2, 1.0, 0, 0, 0.1, 2.0, 0, 0),
    ])
    m = r16.measured(folder)[("a", "optimistic", 4)]
    assert sorted(m["speedups"]) == [2.0, 4.0]
    assert (m["min"], m["max"]) == (2.0, 4.0)


def test_cpu_growth_comes_from_the_counters_not_the_timings(tmp_path):
    """Per run: busy cores x seconds / N - the serial CPU per transaction, per event, against
    W - 1. Built so that the parallel CPU per event is 2 + 0.5 (W - 1) exactly; then the
    timings change and the fit does not."""
    def rows(scale):
        out = [("a", "serial", 0, 1, 1.0, 0, 0, 0, 1.0, 0, 0)]     # 1 s x 1 core / 10 = 0.1 s
        for w in (2, 4, 8):
            per_txn_us = 0.1e6 + 5 * (2 + 0.5 * (w - 1))             # 5 events a transaction
            seconds = scale * w
            cores = per_txn_us * 10 / 1e6 / seconds
            out.append(("a", "conservative", w, 1, seconds, 0, 0, 0, cores, 0, 0))
        return out
    for scale in (0.1, 0.3):
        folder = _timings(tmp_path, rows(scale))
        os.makedirs(tmp_path / "a", exist_ok=True)
        write_trace(str(tmp_path / "a" / "trace.jsonl.gz"),
                    [Txn(i, [f"d.t/PRIMARY={i}"], events=5) for i in range(1, 11)])
        old = r16.WORKLOADS
        r16.WORKLOADS = ("a",)
        try:
            g = r16.cpu_growth({"a": 5.0}, folder)
        finally:
            r16.WORKLOADS = old
        assert g["coordination_event"] == pytest.approx(2.0)
        assert g["coordination_thread"] == pytest.approx(0.5)


def test_exec_is_solved_from_the_serial_applies(tmp_path):
    """Two workloads of 2 and 10 rows measured at 30 and 70 us a transaction serially: with a
    per-transaction overhead of 10 (dispatch 4 + sync 6), execution is 10 + 5 per row, and
    the serial replay then takes exactly the measured time."""
    paths = {}
    for name, rows in (("small", 2), ("big", 10)):
        p = str(tmp_path / f"{name}.jsonl.gz")
        write_trace(p, [Txn(i, [f"d.t/PRIMARY={i}"], rows=rows, events=3)
                        for i in range(1, 101)])
        paths[name] = p
    wls = [fm.Workload("small", paths["small"], 30e-6 * 100),
           fm.Workload("big", paths["big"], 70e-6 * 100)]
    base = Profile("t", 0.0, 0.0, 6.0, 4.0, 0.0, "test")
    prof = fm.with_exec(base, wls)
    assert prof.exec_row == pytest.approx(5.0) and prof.exec_default == pytest.approx(10.0)
    assert prof.exec_event == 0.0
    for w in wls:
        assert fm.makespan(w.txns, "serial", 1, prof) == pytest.approx(w.serial_us * 100)
    # an overhead above the serial time cannot be: no profile
    assert fm.with_exec(Profile("t", 0.0, 0.0, 60.0, 4.0, 0.0, "test"), wls) is None


def test_one_execution_for_both_durabilities_and_the_flushs_cpu(tmp_path):
    """Two workloads (1 and 4 rows) measured serially at both settings. The relaxed apply is
    the driver (2 us an event, 5 and 14 events) and the execution, 20 + 3 us a row; the durable
    one adds the redo flush: its device wait 40 (the counters) and its CPU, 15 and 25 us on the
    two workloads. The flush's CPU is the mean of what the durable applies take beyond the
    relaxed ones and the wait (20); the execution is the mean of what each workload's two
    applies leave (20.5 and 34.5 us where the relaxed applies say 23 and 32), so each setting's
    serial replay is off by half of each workload's distance from that mean (2.5 us), in
    opposite directions, and a relaxed replica pays no flush at all."""
    paths = {}
    for name, rows, events in (("small", 1, 5), ("big", 4, 14)):
        p = str(tmp_path / f"{name}.jsonl.gz")
        write_trace(p, [Txn(i, [f"d.t/PRIMARY={i}"], rows=rows, events=events)
                        for i in range(1, 101)])
        paths[name] = p
    relaxed = {"small": 2 * 5 + 20 + 3, "big": 2 * 14 + 20 + 12}           # 33, 60 us
    durable = {"small": relaxed["small"] + 40 + 15, "big": relaxed["big"] + 40 + 25}
    wls = [fm.Workload(n, paths[n], {"durable": durable[n] * 1e-4, "relaxed": relaxed[n] * 1e-4})
           for n in ("small", "big")]
    cpu = fm.flush_cpu(40.0, wls)
    assert cpu == pytest.approx(20.0)
    base = Profile("t", 0.0, 40.0 + cpu, 0.0, 0.0, 0.0, "test", dispatch_event=2.0,
                   commit_cpu=cpu, log_replica_updates=False)
    prof = fm.with_exec(base, wls)
    assert prof.exec_row == pytest.approx((34.5 - 20.5) / 3)
    assert prof.exec_default == pytest.approx(20.5 - (34.5 - 20.5) / 3)
    for w, sign in zip(wls, (1, -1)):
        n = len(w.txns)
        assert fm.makespan(w.txns, "serial", 1, prof) / n == pytest.approx(
            durable[w.name] + sign * 2.5)
        assert fm.makespan(w.txns, "serial", 1, prof.with_durability("relaxed")) / n == (
            pytest.approx(relaxed[w.name] - sign * 2.5))
    # one workload (a cross-validation fold): exact at both settings
    (small,) = wls[:1]
    assert fm.flush_cpu(40.0, [small]) == pytest.approx(15.0)
    one = fm.with_exec(replace(base, commit_default=55.0, commit_cpu=15.0), [small])
    assert fm.makespan(small.txns, "serial", 1, one) / 100 == pytest.approx(durable["small"])
    # a prediction given the predicted workload's serial apply at one setting only
    rel = fm.with_exec(base.with_durability("relaxed"), [wls[1].only("relaxed")])
    assert fm.makespan(wls[1].txns, "serial", 1, rel) / 100 == pytest.approx(relaxed["big"])
    # measured at one setting only: no flush CPU can be told
    assert fm.flush_cpu(40.0, [w.only("durable") for w in wls]) == 0.0


def test_the_fit_simulates_in_the_compiled_core_as_in_the_reference(tmp_path):
    """A fit simulates thousands of replays: `fit_machine.predict` runs them in the compiled core
    when it is built, with the reference model's schedule (the same speedups, to the bit)."""
    from commitsched import engine
    if not engine.available():
        pytest.skip("the compiled core is not built (make setup)")
    p = str(tmp_path / "t.jsonl.gz")
    write_trace(p, [Txn(i, [f"d.t/PRIMARY={i % 7}"], rows=1 + i % 3, events=3 + i % 4,
                        commit_id=i // 4) for i in range(1, 301)])
    w = fm.Workload("t", p, {"durable": 0.03, "relaxed": 0.02})
    prof = Profile("t", 0.0, 55.0, 0.0, 0.0, 0.0, "test", dispatch_event=2.0, commit_cpu=15.0,
                   commit_grouped=True, shared_disk=True, cores=2, per_core_queues=True,
                   wakeup=3.0, coordination=5.0, log_replica_updates=False)
    prof = fm.with_exec(prof, [w])
    for sched in ("serial", "commit_id+mariadb_conservative", "commit_id+mariadb_optimistic"):
        assert engine.unsupported(fm.parse_scheduler(sched), w.columns) is None
    for p_ in (prof, prof.with_durability("relaxed")):
        for mode in ("conservative", "optimistic"):
            for n in (2, 4):
                compiled = fm.predict(w, p_, mode, n)
                ref = fm.predict(_without_columns(w), p_, mode, n)
                assert compiled == ref


def _without_columns(w):
    out = object.__new__(type(w))
    out.__dict__.update(w.__dict__, columns=None)
    return out


def test_the_relaxed_runs_pair_each_run_with_its_rounds_serial(tmp_path):
    """replica16's relaxed timings are a file of their own, read by the same pairing."""
    with open(tmp_path / "timings_relaxed.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "mode", "threads", "round", "seconds", "tps", "retried_txns",
                    "replica_binlog_commits", "replica_group_commits", "fsync_ms",
                    "cpu_busy_cores", "cpu_iowait_pct", "cpu_steal_pct"])
        w.writerow(("a", "serial", 0, 1, 1.0, 0, 0, 0, 0, 0.1, 1.1, 0.3, 0))
        w.writerow(("a", "serial", 0, 2, 1.5, 0, 0, 0, 0, 0.1, 1.1, 0.3, 0))
        w.writerow(("a", "conservative", 4, 1, 0.8, 0, 0, 0, 0, 0.1, 3.0, 0.3, 0))
        w.writerow(("a", "conservative", 4, 2, 1.0, 0, 0, 0, 0, 0.1, 3.0, 0.3, 0))
    m = r16.measured(str(tmp_path), durability="relaxed")[("a", "conservative", 4)]
    assert sorted(m["speedups"]) == [1.25, 1.5]
    # the repository's copy of shared/replica16's relaxed runs: both workloads, 3 rounds each
    rel = r16.measured(durability="relaxed")
    assert {k[0] for k in rel} == set(r16.WORKLOADS) and len(rel) == 16
    assert all(len(m["speedups"]) == 3 for m in rel.values())


def test_runs_with_steal_are_left_out_and_their_offset_measured(tmp_path):
    """`steal_below` keeps the runs the hypervisor left alone; a run whose round's serial apply
    is left out is taken over the median of the kept serial applies. `steal_effect` says how
    far the left-out runs lie from their configuration's median."""
    folder = _timings(tmp_path, [
        ("a", "serial", 0, 1, 2.0, 0, 0, 0.1, 0.9, 0, 0.0),
        ("a", "serial", 0, 2, 4.0, 0, 0, 0.1, 0.9, 0, 3.0),
        ("a", "serial", 0, 3, 3.0, 0, 0, 0.1, 0.9, 0, 0.1),
        ("a", "optimistic", 4, 1, 1.0, 0, 0, 0.1, 2.0, 0, 0.0),
        ("a", "optimistic", 4, 2, 1.0, 0, 0, 0.1, 2.0, 0, 0.2),
        ("a", "optimistic", 4, 3, 3.0, 0, 0, 0.1, 2.0, 0, 0.5),
    ])
    every = r16.measured(folder)[("a", "optimistic", 4)]
    assert sorted(every["speedups"]) == [1.0, 2.0, 4.0]
    kept = r16.measured(folder, steal_below=0.5)[("a", "optimistic", 4)]
    # round 1 over its own serial (2.0), round 2 over the kept serials' median (2.5)
    assert sorted(kept["speedups"]) == [2.0, 2.5]
    e = r16.steal_effect("durable", 0.5, folder=folder)
    assert (e["runs_below"], e["runs_at_or_above"]) == (4, 2)
    # left out: serial round 2 (4.0 against 3.0: +1/3) and optimistic round 3 (3.0 against 1.0)
    assert e["deviation_at_or_above"] == pytest.approx((1 / 3 + 2.0) / 2)
    # kept: serial rounds 1 and 3 (-1/3, 0), optimistic rounds 1 and 2 (0, 0)
    assert e["deviation_below"] == pytest.approx(0.0)


def test_summary_and_best_thread_count():
    rows = [{"workload": "w", "mode": "m", "threads": n, "median": med, "min": lo, "max": hi,
             "model": pred}
            for n, med, lo, hi, pred in ((2, 1.5, 1.4, 1.6, 1.5), (4, 2.0, 1.8, 2.2, 2.4),
                                         (8, 2.1, 1.9, 2.3, 2.2))]
    s = fidelity.summary(rows, "model")
    assert s["median_abs_error"] == pytest.approx(2.2 / 2.1 - 1)
    assert s["inside"] == pytest.approx(2 / 3)
    (check,) = fidelity.best_w_check(rows, "model")
    # the model's best is W=4 (2.4); measured there 2.0, within 10% of the best 2.1
    assert (check["picked"], check["ok"]) == (4, True)


def test_stored_machine_profiles_name_their_machine_and_fits():
    for name in ("replica16", "durable-mariadb"):
        p = get_profile(name)
        assert p.machine and p.cores and p.fitted_from
        # measured / predicted quantiles of its calibration: ordered, positive (they need not
        # straddle 1: a model that over-predicts its held-out runs has a band below 1)
        assert len(p.band) == 2 and 0 < p.band[0] <= p.band[1]
        assert p.durability == "durable"
    relaxed = get_profile("replica16", durability="relaxed")
    assert relaxed.sync == relaxed.commit_default == 0.0 and relaxed.durability == "relaxed"
    # replica16 was measured at both settings: each has its own band, the relaxed prediction
    # carries the relaxed one, and a relaxed prediction is not "unmeasured"
    durable = get_profile("replica16")
    assert set(durable.bands) == {"durable", "relaxed"}
    assert relaxed.band == tuple(durable.bands["relaxed"]) and not relaxed.unmeasured()


def test_the_replicas_binlog_setting_is_recorded_and_a_run_option():
    """replica16's replica wrote no binlog of its own (log_slave_updates=OFF), the 2-core one did;
    either machine predicts the other setting on request, and score names the setting."""
    assert get_profile("replica16").log_replica_updates is False
    assert get_profile("durable-mariadb").log_replica_updates is True
    on = get_profile("replica16", log_replica_updates=True)
    assert on.log_replica_updates is True and on.group_sync == on.sync > 0
    assert get_profile("replica16").group_sync == 0.0


def test_score_takes_and_names_log_replica_updates(tmp_path):
    import json
    import subprocess
    import sys
    trace = "traces/examples/semantics_3_5_commit_id.jsonl"
    outs = {}
    for setting in ("on", "off"):
        p = subprocess.run([sys.executable, "-m", "commitsched", "score", trace, "--profile",
                            "replica16", "--workers", "4", "--scheduler",
                            "commit_id+mariadb_conservative", "--log-replica-updates", setting,
                            "--json"], capture_output=True, text=True, check=True)
        outs[setting] = json.loads(p.stdout)
    text = json.dumps(outs["on"])
    assert '"log_replica_updates": true' in text
    assert '"log_replica_updates": false' in json.dumps(outs["off"])



def test_a_prediction_for_settings_never_measured_says_so(capsys, tmp_path):
    """replica16 measured a replica without its own binlog, durable and relaxed; a prediction for
    one with log_replica_updates on, or another core count, is the model's alone: the profile,
    score's JSON and table, and the report's page say so. The 2-core machine measured both
    durabilities."""
    from commitsched.cli import main
    assert get_profile("replica16").unmeasured() == []
    assert get_profile("replica16", durability="relaxed").unmeasured() == []
    assert get_profile("replica16", log_replica_updates=True).unmeasured() == [
        "log_replica_updates on (measured: off)"]
    assert get_profile("replica16", cores=8).unmeasured() == ["8 cores (measured: 16)"]
    assert get_profile("durable-mariadb", durability="relaxed").unmeasured() == []
    assert get_profile("durable").unmeasured() == []        # assumed: claims no measurement
    trace = "traces/examples/semantics_3_5_commit_id.jsonl"
    argv = ["score", trace, "--profile", "replica16", "--workers", "2", "--scheduler",
            "commit_id+mariadb_conservative", "--quiet"]
    binlog = ["--log-replica-updates", "on"]
    assert main(argv + binlog + ["--json"]) == 0
    import json
    (row,) = json.loads(capsys.readouterr().out)
    assert row["unmeasured"] == ["log_replica_updates on (measured: off)"]
    assert main(argv + ["--durability", "relaxed", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert "unmeasured" not in row
    assert main(argv + binlog) == 0
    assert ("settings its calibration never ran: log_replica_updates on (measured: off). These "
            "predictions are the model's alone") in capsys.readouterr().out
    assert main(["report", trace, "-o", str(tmp_path), "--profile", "replica16", *binlog,
                 "--workers", "1,2", "--no-whatif", "--quiet", "--jobs", "1"]) == 0
    page = (tmp_path / "index.html").read_text()
    assert "Settings its calibration never ran: log_replica_updates on (measured: off)." in page
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["profile"]["unmeasured"] == ["log_replica_updates on (measured: off)"]


def test_a_fold_takes_only_its_training_workloads_counters(tmp_path):
    """The cross-validation fold fitted on workload `a` must not see `b`'s counters: its redo
    flush (serial iowait) and CPU growth come from `a`'s runs alone."""
    rows = [("a", "serial", 0, 1, 1.0, 0, 0, 0, 1.0, 5.0, 0),     # 5% x 16 x 1 s / 10 = 80 ms
            ("b", "serial", 0, 1, 1.0, 0, 0, 0, 1.0, 50.0, 0),    # ten times that
            ("a", "conservative", 2, 1, 0.6, 0, 0, 0, 2.0, 0, 0),
            ("b", "conservative", 2, 1, 0.6, 0, 0, 0, 9.0, 0, 0),
            ("a", "conservative", 4, 1, 0.5, 0, 0, 0, 3.0, 0, 0),
            ("b", "conservative", 4, 1, 0.5, 0, 0, 0, 15.0, 0, 0)]
    folder = _timings(tmp_path, rows)
    for name in ("a", "b"):
        os.makedirs(tmp_path / name, exist_ok=True)
        write_trace(str(tmp_path / name / "trace.jsonl.gz"),
                    [Txn(i, [f"d.t/PRIMARY={i}"], events=5) for i in range(1, 11)])
    old = r16.WORKLOADS
    r16.WORKLOADS = ("a", "b")
    try:
        only_a = r16.serial_flush_wait(folder, workloads=("a",))
        both = r16.serial_flush_wait(folder)
        growth_a = r16.cpu_growth({"a": 5.0, "b": 5.0}, folder, workloads=("a",))
        growth_both = r16.cpu_growth({"a": 5.0, "b": 5.0}, folder)
    finally:
        r16.WORKLOADS = old
    assert only_a["commit_default"] == pytest.approx(0.05 * 16 * 1.0 / 10 * 1e6)
    assert only_a["runs"] == 1 and both["runs"] == 2
    # a's parallel CPU per event: (2 x 0.6 / 10 - 0.1) s = 20 ms, (3 x 0.5 / 10 - 0.1) = 50 ms
    assert growth_a["runs"] == 2 and growth_both["runs"] == 4
    assert growth_a["coordination_thread"] == pytest.approx((50e3 - 20e3) / 5 / 2)
    assert growth_both["coordination_thread"] != pytest.approx(growth_a["coordination_thread"])


def test_the_workers_hand_off_is_tied_to_the_drivers_pace():
    """replica16 has no one-thread run to measure the worker's wait per event hand-off: the fit
    ties it to its searched driver time per event by the 2-core VM's measured ratio."""
    base = Profile("t", 0.0, 0.0, 0.0, 0.0, 0.0, "test")
    p = fm.profile_from([4.0, 0.05, 3.0, 2.0, 60.0], base, handoff_ratio=1.25)
    assert p.dispatch_event == 4.0 and p.handoff_event == pytest.approx(5.0)
    assert fm.profile_from([4.0, 0.05, 3.0, 2.0, 60.0], base).handoff_event == 0.0
    # the ratio the 2-core calibration measures: present, and near 1 (the worker waits about
    # as long as the driver spends on each event)
    calib_fit, = import_record_scripts("calib_fit")
    r = calib_fit.handoff_ratio([os.path.join(fidelity.CAL, n) for n in fidelity.TWO_CORE])
    assert set(r["per_folder"]) == set(fidelity.TWO_CORE)
    assert 0.5 < r["ratio"] < 2.0
    assert get_profile("replica16").handoff_event == pytest.approx(
        1.118 * get_profile("replica16").dispatch_event, rel=0.01)


def test_the_searches_fit_no_relaxed_parallel_run(monkeypatch):
    """A relaxed prediction of replica16 comes from the mechanism: every search (the full
    profile, each fold, each fold without the driver's terms) fits durable configurations only,
    and the driver-less folds search no driver term."""
    seen = []

    def fake_fit(base, train, meas, configs, maxiter, start, terms, handoff_ratio):
        seen.append((tuple(w.name for w in train), tuple(configs), tuple(terms), len(start)))
        return base, 0.0

    class InlinePool:
        def __init__(self, *_):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

        def map(self, f, xs):
            return [f(x) for x in xs]

    class Ctx:
        Pool = InlinePool
    monkeypatch.setattr(fm, "fit", fake_fit)
    monkeypatch.setattr(fidelity.multiprocessing, "get_context", lambda _: Ctx)
    res = fidelity.fit_replica16(maxiter=1, limit=50, progress=lambda s: None)
    assert len(seen) == 5 and set(res["cv"]) == set(res["cv_without_driver"]) == set(r16.WORKLOADS)
    assert all(c[0] == "durable" for _, configs, _, _ in seen for c in configs)
    assert all(len(terms) == n for _, _, terms, n in seen)
    full, *folds = seen
    assert len(full[1]) == 16 and set(full[0]) == set(r16.WORKLOADS)
    for train, configs, terms, _ in folds:
        assert len(train) == 1 and {c[1] for c in configs} == set(train)
    assert [set(fidelity.DRIVER_TERMS) <= set(t) for _, _, t, _ in folds] == [True, True,
                                                                               False, False]
    # the worker's parallel-mode CPU is counted (the counters' CPU per event), never searched
    assert not any(set(fidelity.R16_COUNTED) & set(terms) for _, _, terms, _ in seen)


def test_the_parallel_mode_cpu_comes_from_the_training_counters():
    """The profile's and each fold's parallel-mode CPU per event is the intercept of the CPU
    growth of its training workloads' durable counters (a fold's from its one workload), and no
    per-transaction parallel-mode CPU is left."""
    import json
    with open(fidelity.R16_FIT) as f:
        fit = json.load(f)
    events = {w: fm.Workload(w, r16.trace_path(w), 1.0, limit=2000).mean_events
              for w in r16.WORKLOADS}
    assert fit["profile"]["coordination"] == 0.0
    assert fit["profile"]["coordination_event"] == pytest.approx(
        r16.cpu_growth(events)["coordination_event"], abs=1e-4)
    for held, fold in fit["cv"].items():
        (train,) = [w for w in r16.WORKLOADS if w != held]
        assert fold["coordination"] == 0.0
        assert fold["coordination_event"] == pytest.approx(
            r16.cpu_growth(events, workloads=(train,))["coordination_event"], abs=1e-4)


def test_where_each_workload_stops_is_measured_and_predicted_per_transaction():
    """The ceiling table: each workload's fastest configuration per durability, its time per
    transaction (the median serial apply / N / the measured speedup), and the driver's time per
    transaction as the profile has it at that thread count."""
    import json
    import statistics
    with open(fidelity.R16_FIT) as f:
        fit_json = json.load(f)
    rows = {d: fidelity.replica16_rows(fit_json, full=False, ablations=False,
                                       progress=lambda s: None, durability=d)
            for d in fidelity.R16_SETTINGS}
    lines = fidelity.ceiling_table(rows, fit_json)
    assert len(lines) == 2 + 2 * len(fidelity.R16_SETTINGS)
    cells = {tuple(c.strip() for c in line.split("|")[1:3]): [c.strip() for c in line.split("|")]
             for line in lines[2:]}
    meas = r16.measured(durability="relaxed")
    (mode, n), best = max((((k[1], k[2]), v["median"]) for k, v in meas.items()
                           if k[0] == "update_index_48"), key=lambda kv: kv[1])
    serial = statistics.median(r["seconds"] for r in r16.load_rows(durability="relaxed")
                               if r["workload"] == "update_index_48" and r["mode"] == "serial")
    row = cells[("update_index_48", "relaxed")]
    assert row[3] == f"{mode} {n}"
    assert row[4] == f"{serial * 1e6 / 15000 / best:.0f}"
    p = get_profile("replica16")
    assert row[7].split(" / ")[0] == f"{(p.dispatch_event + p.dispatch_thread * (n - 1)) * 5:.0f}"


@pytest.mark.slow
def test_workloads_no_fit_has_seen_pair_each_run_with_its_own_serial():
    """The 2-core check on the split check's workloads: each parallel apply against the serial
    apply of the same workload and round, the stored profile's prediction, and the calibration
    workloads' constant (which has not seen them)."""
    import statistics
    rows = fidelity.other_workload_rows(progress=lambda s: None, folders=(fidelity.OTHER,))
    assert {(r["workload"], r["mode"], r["threads"]) for r in rows} == {
        (w, m, n) for w in ("whole", "split") for m in ("conservative", "optimistic")
        for n in (2, 4)}
    runs = [r for r in csv.DictReader(open(os.path.join(fidelity.OTHER, "runs.csv")))
            if r["workload"] == "split" and r["repeated"] != "True"]
    serial = {r["round"]: float(r["apply_s"]) for r in runs if r["threads"] == "0"}
    by_hand = statistics.median(serial[r["round"]] / float(r["apply_s"]) for r in runs
                                if (r["mode"], r["threads"]) == ("optimistic", "4"))
    (row,) = [r for r in rows if (r["workload"], r["mode"], r["threads"]) ==
              ("split", "optimistic", 4)]
    assert row["median"] == pytest.approx(by_hand, rel=1e-12)
    constant = fidelity.two_core_constant(fidelity._two_core_measured())["relaxed"]
    assert all(r["constant"] == constant and r["model"] > 0 for r in rows)


def _relaxed_rows():
    import json
    with open(fidelity.R16_FIT) as f:
        fit_json = json.load(f)
    rows = fidelity.replica16_rows(fit_json, ablations=False, progress=lambda s: None,
                                   durability="relaxed")
    assert len(rows) == 16 and all(r["durability"] == "relaxed" for r in rows)
    return rows


@pytest.mark.slow
def test_the_relaxed_held_out_fold_beats_the_durable_only_fit():
    """replica16 relaxed: each workload predicted by the fold fitted on the other one (the stored
    fit.json, both settings) misses by less (median |error|) than the profile fitted on the
    durable runs alone with its flush dropped, the relaxed prediction before the relaxed runs."""
    rows = _relaxed_rows()
    assert (fidelity.summary(rows, "cv")["median_abs_error"]
            < fidelity.summary(rows, "before")["median_abs_error"])


@pytest.mark.slow
def test_on_the_runs_without_steal_the_relaxed_held_out_fold_beats_the_constant_guesses():
    """replica16 relaxed on the runs with CPU steal below the cut the durable rounds give
    (`fidelity.STEAL_CUT`): the held-out fold's median |error| below both constant guesses',
    each taken again from the kept medians."""
    rows = fidelity.on_steal_free_rounds(_relaxed_rows(), "relaxed", fidelity.STEAL_CUT)
    assert len(rows) == 16
    cv = fidelity.summary(rows, "cv")["median_abs_error"]
    assert cv < fidelity.summary(rows, "constant")["median_abs_error"]
    assert cv < fidelity.summary(rows, "constant_other")["median_abs_error"]


def test_the_steal_cut_comes_from_the_durable_rounds():
    """The cut at which a run counts as one the hypervisor took cores from is the training
    set's: in the durable rounds the runs at or above it lie well off their configuration's
    median apply time (over 15%), the others within 2%."""
    e = r16.steal_effect("durable", fidelity.STEAL_CUT)
    assert e["runs_at_or_above"] > 0
    assert e["deviation_at_or_above"] > 0.15 and abs(e["deviation_below"]) < 0.02


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="issue 27's bar is not met yet: the held-out relaxed "
                   "median error (9.6%; 7.7-14.8% over five search starts) is above the "
                   "constant guess's (8.1%), below the other workload's constant (17.4%); a "
                   "perfect model would score about 13% against these 3-round medians (the "
                   "noise floor); on the runs without CPU steal it is below both (the test "
                   "above), docs/calibration.md")
def test_the_relaxed_held_out_fold_beats_the_constant_guess():
    """The issue's bar on replica16 relaxed: the held-out fold's median |error| below the
    constant guess's, both the median of every relaxed configuration and the other workload's
    (which a user could know)."""
    rows = _relaxed_rows()
    cv = fidelity.summary(rows, "cv")["median_abs_error"]
    assert cv < fidelity.summary(rows, "constant")["median_abs_error"]
    assert cv < fidelity.summary(rows, "constant_other")["median_abs_error"]


def test_the_noise_floor_of_a_known_spread(monkeypatch):
    """Leave one round out on speedups 1, 1, 2: each round predicted by the other two's median
    misses by 50%; configurations without spread have no floor at all."""
    spread = {("a", "conservative", 2): {"speedups": [1.0, 1.0, 2.0]}}
    monkeypatch.setattr(r16, "measured", lambda durability="durable": spread)
    f = fidelity.noise_floor("relaxed", draws=200)
    assert f["rounds"] == 3 and f["configurations"] == 1
    assert f["loro"] == pytest.approx(0.5)
    assert f == fidelity.noise_floor("relaxed", draws=200)          # seeded: deterministic
    assert f["floor"] <= f["loro"] and f["floor_band"][0] <= f["floor"] <= f["floor_band"][1]
    flat = {("a", "conservative", 2): {"speedups": [1.3, 1.3, 1.3]}}
    monkeypatch.setattr(r16, "measured", lambda durability="durable": flat)
    f = fidelity.noise_floor("relaxed", draws=50)
    assert f["loro"] == f["sigma"] == f["floor"] == f["single_run"] == 0.0


def test_the_models_parallel_mode_cpu_is_what_its_terms_add():
    """The CPU check against the counters: with no parallel-mode term the model's parallel apply
    spends the serial replay's CPU; the worker's parallel-mode CPU per event adds exactly that
    per event, whatever the thread count or mode."""
    wl = fm.Workload("oltp_rw_64", r16.trace_path("oltp_rw_64"), 1.0, limit=300)
    quiet = replace(get_profile("replica16"), coordination=0.0, coordination_event=0.0,
                    coordination_thread=0.0, shared_lock_thread=0.0, dispatch_thread=0.0,
                    commit_serial=0.0, commit_byte=0.0).with_durability("relaxed")
    assert fidelity.model_cpu_us(wl, quiet, "conservative", 4) == pytest.approx(0.0, abs=1e-6)
    busy = replace(quiet, coordination_event=2.0)
    for mode, n in (("conservative", 2), ("optimistic", 8)):
        assert fidelity.model_cpu_us(wl, busy, mode, n) == pytest.approx(2.0 * wl.mean_events)
