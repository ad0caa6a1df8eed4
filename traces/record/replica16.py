"""The 16-core measurements (`traces/calibration/replica16/`, copied from shared/replica16): a real
MariaDB 10.11 replica applying two recorded sysbench workloads, serial and conservative /
optimistic at 2-16 threads: durable (sync_binlog=1, innodb_flush_log_at_trx_commit=1, 6 rounds,
`timings.csv`) and relaxed (0 / 2, 3 rounds, `timings_relaxed.csv`), the same machine, recordings
and procedure. Every function takes the replica's `durability` (default durable).

`measured()` gives per configuration the speedups against the same round's serial apply;
`trace_path()` the imported binlogs (imported with `commitsched import primary-bin.NNNNNN
--schema sbtest_schema.sql`, which fills each transaction's events, bytes and rows).
"""
from __future__ import annotations

import csv
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = os.path.join(os.path.dirname(HERE), "calibration", "replica16")
WORKLOADS = ("oltp_rw_64", "update_index_48")
# the timings file of each durability setting of the replica
TIMINGS = {"durable": "timings.csv", "relaxed": "timings_relaxed.csv"}
MACHINE = ("a 16-core Intel Xeon KVM guest (125 GiB, local virtio disk, fdatasync "
           "probe 0.08-0.09 ms), MariaDB 10.11.19, measured by shared/replica16")


def load_rows(folder: str = FOLDER, durability: str = "durable") -> list[dict]:
    with open(os.path.join(folder, TIMINGS[durability]), newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["threads"] = int(r["threads"])
        r["round"] = int(r["round"])
        r["seconds"] = float(r["seconds"])
        r["cpu_busy_cores"] = float(r["cpu_busy_cores"])
        r["cpu_steal_pct"] = float(r["cpu_steal_pct"])
    return rows


def measured(folder: str = FOLDER, durability: str = "durable",
             steal_below: float | None = None) -> dict[tuple, dict]:
    """(workload, mode, threads) -> {"speedups": [...], "median", "min", "max", "serial_s"}:
    each parallel run's speedup over the serial run of the same workload and round.

    `steal_below` (% of the machine's CPU time): only the runs whose CPU steal was below it (the
    hypervisor left the guest's cores alone); a parallel run whose round's serial apply is left
    out is taken over the median of the workload's serial applies that are kept."""
    rows = load_rows(folder, durability)
    if steal_below is not None:
        rows = [r for r in rows if r["cpu_steal_pct"] < steal_below]
    serial = {(r["workload"], r["round"]): r["seconds"] for r in rows if r["mode"] == "serial"}
    serial_median = {w: statistics.median(s for (o, _), s in serial.items() if o == w)
                     for w in {o for o, _ in serial}}
    out: dict[tuple, dict] = {}
    for r in rows:
        if r["mode"] == "serial":
            continue
        base = serial.get((r["workload"], r["round"]))
        if base is None and steal_below is not None:
            base = serial_median.get(r["workload"])
        if base is None:
            continue
        e = out.setdefault((r["workload"], r["mode"], r["threads"]), {"speedups": []})
        e["speedups"].append(base / r["seconds"])
    for (w, _, _), e in out.items():
        sp = e["speedups"]
        e.update(median=statistics.median(sp), min=min(sp), max=max(sp))
    return out


def steal_effect(durability: str, cut: float, folder: str = FOLDER) -> dict:
    """How far the runs with CPU steal at or above `cut` (%) lie from their configuration's median
    apply time, against the runs below it: counts and the median signed deviation of each."""
    rows = load_rows(folder, durability)
    times: dict[tuple, list] = {}
    for r in rows:
        times.setdefault((r["workload"], r["mode"], r["threads"]), []).append(r["seconds"])
    median = {k: statistics.median(v) for k, v in times.items()}
    dev = {"below": [], "at_or_above": []}
    for r in rows:
        side = "below" if r["cpu_steal_pct"] < cut else "at_or_above"
        dev[side].append(r["seconds"] / median[(r["workload"], r["mode"], r["threads"])] - 1)
    return {"durability": durability, "cut": cut,
            **{f"runs_{k}": len(v) for k, v in dev.items()},
            **{f"deviation_{k}": statistics.median(v) if v else None for k, v in dev.items()}}


def serial_seconds(folder: str = FOLDER, durability: str = "durable") -> dict[str, float]:
    """The median serial apply time of each workload."""
    rows = load_rows(folder, durability)
    return {w: statistics.median(r["seconds"] for r in rows
                                 if r["workload"] == w and r["mode"] == "serial")
            for w in WORKLOADS}


def trace_path(workload: str, folder: str = FOLDER) -> str:
    return os.path.join(folder, workload, "trace.jsonl.gz")


def cpu_growth(events: dict[str, float], folder: str = FOLDER,
               workloads: tuple | None = None, durability: str = "durable") -> dict:
    """The worker CPU that parallel mode adds per binlog event, and how it grows with the thread
    count, from the replica's CPU counters (never from its timings): for every parallel run,
    (busy cores x apply time / N - the same workload's median serial CPU per transaction) /
    events per transaction = a + b (W - 1), least squares over every run of both modes.
    `events`: mean binlog events per transaction of each workload; `workloads`: whose runs
    (all by default; a cross-validation fold uses its training workload's only)."""
    import numpy as np
    workloads = workloads or WORKLOADS
    rows = load_rows(folder, durability)
    n = {w: sum(1 for _ in open_trace_lines(w, folder)) for w in workloads}
    serial_cpu = {w: statistics.median(r["cpu_busy_cores"] * r["seconds"] / n[w] * 1e6
                                       for r in rows if r["workload"] == w and r["mode"] == "serial")
                  for w in workloads}
    xs, ys = [], []
    for r in rows:
        if r["mode"] == "serial" or r["workload"] not in workloads:
            continue
        w = r["workload"]
        extra = r["cpu_busy_cores"] * r["seconds"] / n[w] * 1e6 - serial_cpu[w]
        xs.append([1.0, r["threads"] - 1])
        ys.append(extra / events[w])
    (a, b), *_ = np.linalg.lstsq(np.array(xs), np.array(ys), rcond=None)
    resid = np.array(ys) - np.array(xs) @ np.array([a, b])
    return {"coordination_event": float(a), "coordination_thread": float(b),
            "serial_cpu_us_per_txn": serial_cpu, "runs": len(ys),
            "residual_sd_us_per_event": float(resid.std())}


def serial_flush_wait(folder: str = FOLDER, workloads: tuple | None = None,
                      durability: str = "durable") -> dict:
    """The redo-log flush a serial apply waits for per transaction, from the counters (never the
    timings): the SQL thread is the only one waiting for the disk, and a CPU is idle in iowait
    while it does, so iowait share x cores x apply time / N. The median over every serial run
    of the given workloads (all by default; a cross-validation fold its training workload's)."""
    workloads = workloads or WORKLOADS
    rows = load_rows(folder, durability)
    n = {w: sum(1 for _ in open_trace_lines(w, folder)) for w in workloads}
    cores = 16
    waits = [float(r["cpu_iowait_pct"]) / 100 * cores * r["seconds"] / n[r["workload"]] * 1e6
             for r in rows if r["mode"] == "serial" and r["workload"] in workloads]
    return {"commit_default": statistics.median(waits), "runs": len(waits),
            "min": min(waits), "max": max(waits)}


def open_trace_lines(workload: str, folder: str = FOLDER):
    """The transaction lines of a workload's trace (the header skipped)."""
    import gzip
    with gzip.open(trace_path(workload, folder), "rt", encoding="utf-8") as f:
        next(f)
        yield from f
