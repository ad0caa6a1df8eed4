"""The parallel CPU a replica pays on fewer cores than workers (traces/calibration/one_core_cpu,
one_core_contention): the contention CPU counts every configured thread on two cores and more
(the change to count only those with a core was taken back) and none on one, and `calibrate`
reads the server's other threads' CPU (`background_cpu`) from the replica's own counters where
it can."""
import csv
import json
import os
import threading
from dataclasses import replace

import pytest

from commitsched import applier_cpu
from commitsched.calibrate_replica import (CalibrateError, Window, described_many, fit, fit_many,
                                           measured_background_per_txn, window_trace,
                                           backlog_samples)
from commitsched.profiles import get_profile
from test_calibrate_replica import BASE, recorded_window, with_cpu, workload

import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "traces", "record"))
import lag_check  # noqa: E402


def test_contention_needs_a_second_core():
    """coordination_thread per event per worker beyond the first on two cores and more, every
    configured thread, with a core or not (counting only those with a core, one_core_cpu's
    change A, took the 2-core VM's held-out speedups from 8% to 27% median error, and was taken
    back); none on one core, where no thread waits while the one it waits for runs elsewhere
    (registered in traces/calibration/one_core_contention)."""
    txn = workload(n=1)[0]                      # 5 events
    p = replace(get_profile("durable-mariadb"), coordination_thread=2.0)
    for cores in (2, 16, None):
        assert replace(p, cores=cores).contention_cpu(txn, 4) == pytest.approx(2.0 * 3 * 5)
        assert replace(p, cores=cores).contention_cpu(txn, 16) == pytest.approx(2.0 * 15 * 5)
    assert replace(p, cores=1).contention_cpu(txn, 4) == 0.0
    assert replace(p, cores=1).contention_cpu(txn, 1) == 0.0


def test_the_worker_cpu_per_event_needs_a_second_core():
    """coordination_event per binlog event on every parallel transaction on two cores and
    more; none on one core (registered in traces/calibration/one_core_worker_cpu)."""
    txn = workload(n=1)[0]                      # 5 events
    p = replace(get_profile("durable-mariadb"), coordination_event=2.0, coordination=0.0,
                commit_serial=0.0, commit_byte=0.0, shared_lock_thread=0.0)
    for cores in (2, 16, None):
        assert replace(p, cores=cores).parallel_exec(txn, 100.0, 4) == pytest.approx(110.0)
    assert replace(p, cores=1).parallel_exec(txn, 100.0, 4) == pytest.approx(100.0)


def _with_others(window, txns, profile, background_us, io_us=3.0):
    """`window` with the process's and IO thread's CPU a replica gives whose other threads
    spend `background_us` a transaction applied (and its IO thread `io_us`)."""
    window = with_cpu(window, txns, profile)
    wt = window_trace(window, txns)
    window.cpu_others = [(c[0] + float(a) * (background_us + io_us) / 1e6,
                          float(a) * io_us / 1e6) for c, a in zip(window.cpu, wt.applied)]
    return window


def test_the_fit_takes_the_replicas_own_background_cpu():
    txns = workload()
    machine = replace(BASE, cores=1, log_replica_updates=False)
    window = _with_others(recorded_window(txns, machine), txns, machine, background_us=11.0)
    wt = window_trace(window, txns)
    assert measured_background_per_txn(window, wt, backlog_samples(wt, window)) == \
        pytest.approx(11.0, rel=1e-6)
    result = fit(window, txns, BASE, cores=1)
    assert result.profile.background_cpu == pytest.approx(11.0, rel=1e-6)
    assert result.background_measured == pytest.approx(11.0, rel=1e-6)
    assert any("other threads' CPU from the replica's own counters" in n for n in result.notes)
    many = fit_many([window], [txns], BASE, labels=["w"])
    p = described_many(many, BASE, "mine")
    assert p.fitted_from["background_cpu"].startswith("11.00: ")
    assert p.fitted_from["windows"][0]["background_cpu_us"] == 11.0


def test_without_the_process_readings_the_base_background_holds():
    txns = workload()
    machine = replace(BASE, cores=1, log_replica_updates=False)
    window = with_cpu(recorded_window(txns, machine), txns, machine)
    result = fit(window, txns, BASE, cores=1)
    assert result.background_measured is None
    assert result.profile.background_cpu == pytest.approx(BASE.background_cpu
                                                          * result.cpu_scale)
    assert "background_cpu" not in described_many(
        fit_many([window], [txns], BASE, labels=["w"]), BASE, "mine").fitted_from


def test_a_window_keeps_its_process_readings_and_refuses_malformed_ones(tmp_path):
    txns = workload()
    machine = replace(BASE, cores=1, log_replica_updates=False)
    window = _with_others(recorded_window(txns, machine), txns, machine, background_us=7.0)
    back = Window.from_json(json.loads(json.dumps(window.to_json())), "w.json")
    assert back.cpu_others == window.cpu_others
    bad = window.to_json()
    bad["cpu_others"] = bad["cpu_others"][:-1]
    with pytest.raises(CalibrateError, match="process CPU readings for"):
        Window.from_json(bad, "w.json")
    bad["cpu_others"] = [["x", 1]] * len(window.samples)
    with pytest.raises(CalibrateError, match=r"w.json: a malformed window \(cpu_others"):
        Window.from_json(bad, "w.json")


def test_the_rigs_samples_stand_in_for_an_older_window(tmp_path):
    """A window calibrate recorded before it read the process: the rig's samples.csv columns
    (the process's CPU, the IO thread's) at the window's sample times."""
    txns = workload()
    machine = replace(BASE, cores=1, log_replica_updates=False)
    window = with_cpu(recorded_window(txns, machine), txns, machine)
    with open(tmp_path / "samples.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t", "primary_seq", "replica_seq", "replica_cpu_s", "applier_cpu_s",
                    "applier_runq_s", "applier_vcsw", "io_cpu_s"])
        for i, s in enumerate(window.samples):
            w.writerow([s[0], 0, 0, 2.0 * i, i, 0, 0, 0.5 * i])
    assert lag_check.rig_others(window, str(tmp_path))
    assert window.cpu_others[3] == pytest.approx((6.0, 1.5))
    assert not lag_check.rig_others(window, str(tmp_path))      # filled already


def test_the_appliers_reading_adds_the_process_and_io_threads(monkeypatch):
    """AppliersCpu.others: this process's CPU and the 'IO thread's' (here a thread of ours)."""
    stop = threading.Event()
    tids = {}

    def spin(name):
        tids[name] = threading.get_native_id()
        while not stop.is_set():
            sum(range(1000))
    threads = [threading.Thread(target=spin, args=(n,)) for n in ("applier", "io")]
    for t in threads:
        t.start()
    try:
        while len(tids) < 2:
            pass
        monkeypatch.setattr(applier_cpu, "thread_ids",
                            lambda conn, names=applier_cpu.APPLIER_THREADS:
                            [tids["io"]] if names == applier_cpu.IO_THREADS
                            else [tids["applier"]])
        reader = applier_cpu.AppliersCpu(None, os.getpid())
        assert reader.source == "threads"
        appliers = reader.read()
        while appliers[0] < 0.1:                # the process's CPU is read in 10 ms ticks
            appliers = reader.read()
        process, io = reader.others()
        assert 0.0 < io < process and 0.0 < appliers[0] < process
    finally:
        stop.set()
        for t in threads:
            t.join()
