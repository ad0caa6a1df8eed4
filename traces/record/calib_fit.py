"""Fit the cost profiles `durable-mariadb` and `relaxed-mariadb` from a calibration folder.

Only the serial applies (slave_parallel_threads=0) and the server's counters are used, never a
parallel timing the profiles then predict:

- relaxed serial (sync_binlog=0, flush_log_at_trx_commit=2): time per transaction `s_rel` =
  dispatch + execution (its binlog write without fsync is folded into the execution);
- binlog_sync serial (1/2): `(T_bin - T_rel) / binlog_group_commits` = the binlog's sync per
  group commit (serially every commit is its own group: the counter says so);
- durable serial (1/1): `(T_dur - T_bin) / N` = the rest of the durable cost, paid per transaction
  before it joins the group commit (InnoDB's prepare-time redo sync): the profile's commit cost.
  The redo_sync serial run (0/1) measures that cost alone; the difference is the non-additivity
  reported in fit.json;
- dispatch: CPU seconds of the SQL driver thread in the 1-thread run (it has two new threads,
  the worker and the driver, the worker the busier) per transaction; its time is not used;
- coordination: the 1-thread run's worker CPU per transaction minus `exec`: what a worker
  spends beyond the serial execution (queueing, GCO, wait_for_prior_commit hand-offs); its time
  is not used;
- sync_cpu / commit_cpu: the CPU part of each sync, from the serial SQL thread's CPU seconds
  (binlog_sync − relaxed per group; durable − binlog_sync per transaction), at most the sync's
  own time; commit_grouped: the redo sync is InnoDB's log group flush (structure, not a fit);
- commit_serial: (relaxed serial − no_binlog serial) / N, the replica's own binlog write per
  transaction, which a parallel replica's group-commit leader does for each member in turn
  (0 for folders measured without the no_binlog run);
- background_cpu: the serial apply's process CPU minus its SQL thread's, per transaction: the
  server's other threads (purge, page cleaner, binlog background), which compete for the cores
  once the apply is parallel;
- cores: the median of the cores the host gave a busy process per CPU just before each run
  (`cpu_avail`, measured before every apply), rounded; the host's CPU count for folders
  measured before that probe existed.
Medians over rounds. Times in microseconds.
"""
from __future__ import annotations

import csv
import json
import os
import statistics
import sys


CPU_MIN = 0.75   # a run is disturbed when the host gave less than this share of its CPUs


def disturbed(r: dict, cpus: int, cpu_min: float = CPU_MIN) -> bool:
    """Another tenant held more than `1 - cpu_min` of the host's CPU right before the apply
    (the `cpu_avail` probe; rows measured before the probe existed have none)."""
    return bool(r.get("cpu_avail")) and float(r["cpu_avail"]) < cpu_min * cpus


def load_runs(folder: str) -> list[dict]:
    """The runs that count: not repeated (heavy steal), not disturbed."""
    meta = load_meta(folder)
    cpus, cpu_min = meta["host"]["cpus"], meta.get("cpu_min", CPU_MIN)
    with open(os.path.join(folder, "runs.csv")) as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        if r["repeated"] == "True" or disturbed(r, cpus, cpu_min):
            continue                      # its repetition (or the other rounds) counts
        r["threads"] = int(r["threads"])
        r["apply_s"] = float(r["apply_s"])
        r["round"] = int(r["round"])
        out.append(r)
    return out


def load_meta(folder: str) -> dict:
    with open(os.path.join(folder, "meta.json")) as f:
        return json.load(f)


def _serial(runs, sync):
    return [r for r in runs if r["sync"] == sync and r["threads"] == 0]


def _med(xs):
    return statistics.median(xs) if xs else None


def _one_thread_runs(runs: list[dict]) -> dict:
    """Seconds per one-thread run: the replica process's CPU, and (where the run recorded its
    threads) the one worker's CPU, the driver thread's CPU and the worker's time off its core,
    waiting for its events to be handed over (apply time - its CPU)."""
    out = {"process_cpu": [], "worker_cpu": [], "driver_cpu": [], "worker_idle": []}
    for r in runs:
        if r["threads"] != 1:
            continue
        out["process_cpu"].append(float(r["replica_cpu_s"]))
        cpu = [float(x) for x in r["new_thread_cpu_s"].split()]
        if len(cpu) >= 2:
            out["worker_cpu"].append(cpu[0])
            out["driver_cpu"].append(cpu[1])
            out["worker_idle"].append(max(0.0, r["apply_s"] - cpu[0]))
    return out


def handoff_ratio(folders: list[str]) -> dict:
    """How long a MariaDB worker waits, off its core, for each event of its transaction to be
    handed over, relative to the driver's CPU per event: per folder, from its one-thread runs
    (the one worker's apply time minus its CPU, over the driver thread's CPU), and their
    median. On the 2-core VM the two are about equal: the worker gets its events at the
    driver's pace."""
    per_folder = {}
    for folder in folders:
        one = _one_thread_runs(load_runs(folder))
        if one["driver_cpu"] and _med(one["driver_cpu"]) > 0:
            per_folder[os.path.basename(os.path.normpath(folder))] = (
                _med(one["worker_idle"]) / _med(one["driver_cpu"]))
    return {"per_folder": per_folder,
            "ratio": statistics.median(per_folder.values()) if per_folder else None}


def mean_events(folder: str) -> float:
    """Mean binlog events per transaction of the folder's trace (`profiles.txn_events`: the
    traces measured before the importer counted events get its estimate, which cancels out:
    the per-event terms below are the measured per-transaction ones divided by it)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from record import _import_importers
    _import_importers()
    from commitsched.profiles import txn_events
    from commitsched.trace import iter_trace
    _, txns = iter_trace(os.path.join(folder, "trace.jsonl.gz"))
    counts = [txn_events(t) for t in txns]
    return sum(counts) / len(counts)


def mean_rows(folder: str) -> float:
    """Mean rows changed per transaction of the folder's trace (`profiles.txn_rows`)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from record import _import_importers
    _import_importers()
    from commitsched.profiles import txn_rows
    from commitsched.trace import iter_trace
    _, txns = iter_trace(os.path.join(folder, "trace.jsonl.gz"))
    counts = [txn_rows(t) for t in txns]
    return sum(counts) / len(counts)


def exec_per_row(folders: list[str], fits: list[dict]) -> tuple[float, float] | None:
    """Execution per transaction and per row changed, solved from two folders' serial execution
    (`fit()`'s per-transaction `exec`, relaxed serial minus the driver) and their mean rows: two
    workloads, two unknowns. None when they change about as many rows, or the line would need a
    negative cost."""
    if len(folders) < 2:
        return None
    pts = sorted((mean_rows(f), fit["fit"]["per_txn_us"]["exec"]) for f, fit in zip(folders, fits))
    (r0, e0), (r1, e1) = pts[0], pts[-1]
    if r1 - r0 < 0.5:
        return None
    slope = (e1 - e0) / (r1 - r0)
    base = e0 - slope * r0
    return (base, slope) if slope >= 0 and base >= 0 else None


REPLICA16_FIT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "calibration", "replica16", "fit.json")


def replica16_transfer(path: str = REPLICA16_FIT) -> dict | None:
    """What a 2-core fit takes from the 16-core one (`traces/record/fidelity.py fit`): how the
    driver's per-event time and the parallel-mode CPU per event grow per extra thread, as ratios
    to their one-thread values, and the wake-up latency. None before replica16 is fitted."""
    try:
        with open(path) as f:
            r16 = json.load(f)
    except FileNotFoundError:
        return None
    p, growth = r16["profile"], r16["cpu_growth"]
    return {"source": "replica16",
            "dispatch_thread_ratio": (p["dispatch_thread"] / p["dispatch_event"]
                                      if p["dispatch_event"] else 0.0),
            # the counters' slope per extra thread relative to their intercept, the parallel-mode
            # CPU per event at one thread (what a 2-core 1-thread run measures)
            "coordination_thread_ratio": (growth["coordination_thread"]
                                          / growth["coordination_event"]),
            # the worker's wait per transaction per other running worker, relative to the
            # worker's parallel-mode CPU per transaction at one thread (what a 2-core 1-thread
            # run measures: worker CPU - exec)
            "shared_lock_thread_ratio": (p.get("shared_lock_thread", 0.0) / p["coordination"]
                                         if p.get("coordination") else 0.0),
            "wakeup": p["wakeup"]}


def fit(folder: str, transfer: dict | None = None) -> dict:
    """The folder's machine profile (durable, and the same machine relaxed). `transfer`: the
    apply-pipeline terms no run of this machine measures, taken from another machine's fit
    (`replica16`): how the driver's and the workers' per-event costs grow per extra thread,
    as ratios to their one-thread values, and the wake-up latency."""
    runs, meta = load_runs(folder), load_meta(folder)
    n = meta["trace"]["transactions"]
    med_t = {s: _med([r["apply_s"] for r in _serial(runs, s)])
             for s in ("durable", "relaxed", "binlog_sync", "redo_sync")}
    groups = {s: _med([int(r["d_binlog_group_commits"]) for r in _serial(runs, s)])
              for s in ("durable", "binlog_sync")}
    commits = _med([int(r["d_binlog_commits"]) for r in _serial(runs, "durable")])
    missing = [s for s, v in med_t.items() if v is None]
    if missing:
        raise SystemExit(f"calibrate fit: no serial runs for {', '.join(missing)} in {folder}")
    one = _one_thread_runs(runs)
    drivers, workers_1 = one["driver_cpu"], one["worker_cpu"]
    one_thread_cpu, one_thread_idle = one["process_cpu"], one["worker_idle"]

    def sql_thread_cpu(sync):
        """CPU seconds of the serial SQL thread (the one thread START SLAVE SQL_THREAD makes)."""
        return _med([float(r["new_thread_cpu_s"].split()[0]) for r in _serial(runs, sync)
                     if r["new_thread_cpu_s"].strip()])
    us = 1e6
    s_rel = med_t["relaxed"] / n * us
    dispatch = (_med(drivers) / n * us) if drivers else 0.0
    sync_bin = (med_t["binlog_sync"] - med_t["relaxed"]) / groups["binlog_sync"] * us
    commit_dur = (med_t["durable"] - med_t["binlog_sync"]) / n * us
    redo_alone = (med_t["redo_sync"] - med_t["relaxed"]) / n * us
    exec_cost = s_rel - dispatch
    serial_cpu = _med([float(r["replica_cpu_s"]) for r in _serial(runs, "relaxed")])
    # what parallel mode costs a worker in CPU beyond the serial execution, per transaction
    coordination = max(0.0, _med(workers_1) / n * us - exec_cost) if workers_1 else 0.0
    sql_cpu = {s: sql_thread_cpu(s) for s in ("relaxed", "binlog_sync", "durable")}
    # the rest of the server's CPU in the serial apply: its other threads, per transaction
    background = {s: max(0.0, (_med([float(r["replica_cpu_s"]) for r in _serial(runs, s)])
                               - sql_cpu[s]) / n * us) if sql_cpu[s] is not None else 0.0
                  for s in ("relaxed", "durable")}
    sync_cpu = commit_cpu = 0.0
    if None not in sql_cpu.values():
        sync_cpu = min(sync_bin, max(0.0, (sql_cpu["binlog_sync"] - sql_cpu["relaxed"])
                                     / groups["binlog_sync"] * us))
        commit_cpu = min(commit_dur, max(0.0, (sql_cpu["durable"] - sql_cpu["binlog_sync"])
                                         / n * us))
    no_binlog = _med([r["apply_s"] for r in _serial(runs, "no_binlog")])
    commit_serial = (min(exec_cost, max(0.0, (med_t["relaxed"] - no_binlog) / n * us))
                     if no_binlog is not None else 0.0)
    avail = [float(r["cpu_avail"]) for r in runs if r.get("cpu_avail")]
    cores = max(1, round(_med(avail))) if avail else meta["host"]["cpus"]
    rounds = sorted({r["round"] for r in runs})
    loads = [float(r["load_before"]) for r in runs]
    w = meta["workload"]
    src = (f"{os.path.basename(os.path.normpath(folder))}: MariaDB {w['version']}, "
           f"{meta['trace']['transactions']} transactions of `{w['sysbench_command']}`, "
           f"{len(rounds)} rounds measured {meta['started_utc']} on {meta['host']['cpus']} "
           f"shared cores "
           f"(load average {min(loads):.1f}-{max(loads):.1f})")
    fit_info = {
        "folder": folder, "transactions": n, "rounds": len(rounds),
        "median_serial_apply_s": med_t,
        "serial_binlog_group_commits": groups, "serial_binlog_commits": commits,
        "driver_cpu_s_per_run": drivers,
        "per_txn_us": {"relaxed_serial": s_rel, "dispatch": dispatch, "exec": exec_cost,
                       "binlog_sync_per_group": sync_bin, "durable_commit": commit_dur,
                       "redo_sync_alone": redo_alone,
                       "relaxed_serial_cpu": serial_cpu / n * us,
                       "coordination": coordination, "sync_cpu": sync_cpu,
                       "commit_cpu": commit_cpu, "background_cpu": background,
                       "commit_serial": commit_serial,
                       "one_thread_process_cpu": (_med(one_thread_cpu) / n * us
                                                  if one_thread_cpu else None)},
        "serial_sql_thread_cpu_s": sql_cpu,
        "cpu_avail_median": _med(avail) if avail else None,
        "non_additivity_us": commit_dur - redo_alone,
    }
    # The driver's and the worker's per-transaction costs, per binlog event, so that the
    # transferred thread growth applies per event as on the machine it was fitted on.
    events = mean_events(folder)
    transfer = transfer or {}
    # the machine's own wake-up latency when its probe ran (calib_server.wakeup_probe, at the
    # start and the end of the measurement); else the other machine's fitted one
    probes = [v["median_us"] for v in (meta.get("wakeup_probe") or {}).values() if v]
    wakeup = _med(probes) if probes else transfer.get("wakeup", 0.0)
    d_event = dispatch / events
    c_event = coordination / events
    handoff = (_med(one_thread_idle) / n * us / events) if one_thread_idle else 0.0
    common = dict(exec_default=round(exec_cost, 3), dispatch=0.0, retry=0.0,
                  cores=cores, per_core_queues=True, coordination=0.0,
                  commit_serial=round(commit_serial, 3),
                  dispatch_event=round(d_event, 4), coordination_event=round(c_event, 4),
                  dispatch_thread=round(d_event * transfer.get("dispatch_thread_ratio", 0.0), 4),
                  coordination_thread=round(c_event * transfer.get("coordination_thread_ratio", 0.0), 4),
                  shared_lock_thread=round(
                      coordination * transfer.get("shared_lock_thread_ratio", 0.0), 4),
                  wakeup=round(wakeup, 3),
                  handoff_event=round(handoff, 4),
                  machine=f"{meta['host']['cpus']}-core shared VM of this project "
                          f"({os.path.basename(os.path.normpath(folder))})")
    fitted_from = {
        "exec_default": "relaxed serial apply / N - dispatch",
        "dispatch_event": f"1-thread run: driver thread CPU / N / {events:.2f} events",
        "coordination_event": f"1-thread run: worker CPU / N - exec, / {events:.2f} events",
        "commit_serial": "(relaxed serial - no_binlog serial) / N",
        "handoff_event": f"1-thread run: (apply time - worker CPU) / N / {events:.2f} events",
        "sync": "(binlog_sync serial - relaxed serial) / binlog group commits",
        "commit_default": "(durable serial - binlog_sync serial) / N",
        "sync_cpu": "serial SQL thread CPU, binlog_sync - relaxed, per group",
        "commit_cpu": "serial SQL thread CPU, durable - binlog_sync, per N",
        "background_cpu": "serial process CPU - SQL thread CPU, per N",
        "cores": "median free cores before each apply (cpu_avail)",
        "per_core_queues": "Linux's per-core run queues (not fitted; checked against "
                           "traces/calibration/chain_probe)",
    }
    if transfer:
        src_t = transfer.get("source", "another machine")
        fitted_from.update(
            dispatch_thread=f"dispatch_event x {transfer.get('dispatch_thread_ratio', 0):.4f}, "
                            f"the ratio fitted on {src_t}",
            coordination_thread=f"coordination_event x "
                                f"{transfer.get('coordination_thread_ratio', 0):.4f}, the ratio "
                                f"of {src_t}'s CPU counters",
            shared_lock_thread=f"worker CPU per transaction at one thread (coordination) x "
                               f"{transfer.get('shared_lock_thread_ratio', 0):.4f}, the ratio "
                               f"fitted on {src_t}",
            wakeup=f"fitted on {src_t}")
    if probes:
        fitted_from["wakeup"] = ("this machine's wake-up probe (a pthread condition hand-off, "
                                 f"median of {len(probes)} probes)")
    fitted_from["log_replica_updates"] = "the replica's setting (log_slave_updates=ON)"
    common["fitted_from"] = fitted_from
    common["log_replica_updates"] = True
    how = ("fitted by traces/record/calibrate.py fit from the serial applies, the fit-only "
           "runs and server counters only (docs/calibration.md)"
           + ("; thread growth" + ("" if probes else " and wake-up latency")
              + " transferred from "
              + transfer.get("source", "another machine") if transfer else "") + "; " + src)
    profiles = [
        dict(name="durable-mariadb", commit_default=round(commit_dur, 3),
             sync=round(sync_bin, 3), sync_cpu=round(sync_cpu, 3),
             commit_cpu=round(commit_cpu, 3), commit_grouped=True, shared_disk=True,
             background_cpu=round(background["durable"], 3), **common,
             provenance=how + f"; sync_binlog=1, innodb_flush_log_at_trx_commit=1: sync = binlog "
                              f"fsync per group, commit = InnoDB prepare sync per transaction; "
                              f"retry cost not fitted (0: the re-execution is charged)"),
        dict(name="relaxed-mariadb", commit_default=0.0, sync=0.0, durability="relaxed",
             background_cpu=round(background["relaxed"], 3), **common,
             provenance=how + "; sync_binlog=0, innodb_flush_log_at_trx_commit=2: no sync; the "
                              "binlog write is part of exec; retry cost not fitted"),
    ]
    return {"profiles": profiles, "fit": fit_info}


def merge_profiles(path: str, profiles: list[dict]) -> None:
    """Write `profiles` into the fitted-profiles file, replacing those of the same name."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        data = {"profiles": []}
    names = {p["name"] for p in profiles}
    data["profiles"] = [p for p in data["profiles"] if p["name"] not in names] + profiles
    data["written_by"] = "traces/record/calibrate.py fit"
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


def cmd_fit(a) -> int:
    result = fit(a.out, replica16_transfer())
    with open(os.path.join(a.out, "fit.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    if a.profiles:
        merge_profiles(a.profiles, result["profiles"])
    for p in result["profiles"]:
        print(f"{p['name']}: exec {p['exec_default']} us, commit {p['commit_default']} us "
              f"(cpu {p.get('commit_cpu', 0)}), sync {p['sync']} us (cpu "
              f"{p.get('sync_cpu', 0)}), dispatch {p['dispatch']} us, coordination "
              f"{p['coordination']} us, cores {p['cores']}")
    print(f"non-additivity of the durable cost: {result['fit']['non_additivity_us']:.1f} us "
          f"per transaction")
    return 0
