"""The replica's cores (simcore.CpuPool): one shared queue against Linux's per-core run queues
(`Profile.per_core_queues`, docs/model.md "Per-core run queues"), by hand, and the commit-chain
probe's simulation of them (traces/record/chain_probe.py)."""
from __future__ import annotations

import heapq
import itertools

import pytest

from record_scripts import import_record_scripts

from commitsched.simcore import CpuPool

(chain_probe,) = import_record_scripts("chain_probe")


def _drain(pool: CpuPool, heap: list, on_event=None) -> dict:
    """Fire every event in time order, releasing its core; the end time of each job."""
    ends = {}
    while heap:
        t, _, _, job = heapq.heappop(heap)
        ends[job] = t
        pool.release(job, t)
        if on_event:
            on_event(job, t)
    return ends


def _pool(per_core: bool) -> tuple[CpuPool, list]:
    heap: list = []
    return CpuPool(2, heap, itertools.count(), per_core), heap


@pytest.mark.parametrize("per_core, c_ends", [(False, 15.0), (True, 105.0)])
def test_a_waiter_takes_the_next_free_core_or_waits_on_its_own(per_core, c_ends):
    """A (10 µs) and B (100 µs) take both cores; C (5 µs) must wait. One shared queue: C runs
    when A's core frees (10-15). Per-core queues: C waits on the core that acted last (B's) and
    runs after B (100-105), while A's core idles from 10."""
    pool, heap = _pool(per_core)
    for job, duration in (("A", 10.0), ("B", 100.0), ("C", 5.0)):
        pool.execute(job, 0.0, duration, 0, job)
    ends = _drain(pool, heap)
    assert ends == {"A": 10.0, "B": 100.0, "C": c_ends}


def test_new_work_takes_an_idle_core_before_a_waiter_on_another_core():
    """Per-core: at 10 A's core is idle while C waits on B's; D, asked for at 10, gets the idle
    core at once (10-11); C still waits for B."""
    pool, heap = _pool(True)
    for job, duration in (("A", 10.0), ("B", 100.0), ("C", 5.0)):
        pool.execute(job, 0.0, duration, 0, job)

    def after(job, t):
        if job == "A":
            pool.execute("D", t, 1.0, 0, "D")
    ends = _drain(pool, heap, after)
    assert ends == {"A": 10.0, "D": 11.0, "B": 100.0, "C": 105.0}


@pytest.mark.parametrize("per_core", [False, True])
def test_a_job_killed_while_queued_leaves_its_queue(per_core):
    pool, heap = _pool(per_core)
    for job, duration in (("A", 10.0), ("B", 100.0), ("C", 5.0)):
        pool.execute(job, 0.0, duration, 0, job)
    pool.release("C", 1.0)                      # killed before it got a core
    ends = _drain(pool, heap)
    assert ends == {"A": 10.0, "B": 100.0}


def test_the_chain_probe_simulation_by_hand():
    # one thread: every transaction is exec then commit, one after the other
    assert chain_probe.simulate(100, 1, 40, 5, 2, 22.0, True) == pytest.approx(45.0)
    # two threads on two cores, commit steps short: both cores busy, (40 + 5) / 2 a transaction
    assert chain_probe.simulate(1000, 2, 40, 5, 2, 22.0, True) == pytest.approx(22.5, rel=0.01)
    # commit-bound: each turn is handed on through a wake-up, commit + wake-up a transaction
    assert chain_probe.simulate(1000, 8, 20, 20, 2, 22.0, False) == pytest.approx(42.0, rel=0.01)


def test_per_core_queues_slow_a_chain_with_more_threads_than_cores():
    """Three threads on two cores, long execution: with one shared queue the cores stay busy
    ((80 + 20) / 2 = 50 µs a transaction); with per-core queues a woken committer waits behind
    its waker's next execution while the other core may idle (the probe measured 64-72 µs)."""
    shared = chain_probe.simulate(2000, 3, 80, 20, 2, 22.0, False)
    per_core = chain_probe.simulate(2000, 3, 80, 20, 2, 22.0, True)
    assert shared == pytest.approx(50.0, rel=0.01)
    assert per_core > 1.3 * shared


def test_chain_probe_report_compares_with_the_simulator(tmp_path):
    import csv
    import json
    (tmp_path / "meta.json").write_text(json.dumps(
        {"cores": 2, "kernel": "test", "transactions": 100, "rounds": 1,
         "wakeup_probe": {"median_us": 22.0, "rounds": 1}}))
    with open(tmp_path / "runs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=chain_probe.FIELDS)
        w.writeheader()
        w.writerow({"round": 1, "threads": 1, "exec_us": 40, "commit_us": 5,
                    "transactions": 100, "wall_s": 0.0045, "cpu_s": 0.0045, "blocking_waits": 0,
                    "us_per_txn": 45.0, "busy_cores": 1.0, "cpu_avail": 2.0,
                    "started_utc": "2026-11-24T10:00:00Z"})
    text = chain_probe.report(str(tmp_path), markdown=True)
    assert ("| 1 | 40 | 5 | 45.0 [45.0, 45.0] | 45.0 (+0%) | 45.0 (+0%) | 45.0 (+0%) | 0.00 | - |"
            in text)


def test_chain_probe_report_on_a_folder_without_measurements(tmp_path, capsys):
    assert chain_probe.main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not a measured probe folder" in err and "Traceback" not in err
