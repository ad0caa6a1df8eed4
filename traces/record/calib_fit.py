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
- cores: the replica host's CPU count.
Medians over rounds. Times in microseconds.
"""
from __future__ import annotations

import csv
import json
import os
import statistics


def load_runs(folder: str) -> list[dict]:
    with open(os.path.join(folder, "runs.csv")) as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        if r["repeated"] == "True":
            continue                      # heavy steal: its repetition counts instead
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


def fit(folder: str) -> dict:
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
    drivers, one_thread_cpu = [], []
    for r in runs:
        if r["threads"] == 1:
            one_thread_cpu.append(float(r["replica_cpu_s"]))
            cpu = [float(x) for x in r["new_thread_cpu_s"].split()]
            if len(cpu) >= 2:
                drivers.append(cpu[1])
    us = 1e6
    s_rel = med_t["relaxed"] / n * us
    dispatch = (_med(drivers) / n * us) if drivers else 0.0
    sync_bin = (med_t["binlog_sync"] - med_t["relaxed"]) / groups["binlog_sync"] * us
    commit_dur = (med_t["durable"] - med_t["binlog_sync"]) / n * us
    redo_alone = (med_t["redo_sync"] - med_t["relaxed"]) / n * us
    exec_cost = s_rel - dispatch
    serial_cpu = _med([float(r["replica_cpu_s"]) for r in _serial(runs, "relaxed")])
    # what parallel mode costs in CPU beyond the serial apply, per transaction, at one worker
    # (not part of the profiles: the model has no such cost; used by the report's what-if)
    coordination = ((_med(one_thread_cpu) - serial_cpu) / n * us) if one_thread_cpu else None
    cores = meta["host"]["cpus"]
    rounds = sorted({r["round"] for r in runs})
    loads = [float(r["load_before"]) for r in runs]
    w = meta["workload"]
    src = (f"{os.path.basename(os.path.normpath(folder))}: MariaDB {w['version']}, "
           f"{meta['trace']['transactions']} transactions of `{w['sysbench_command']}`, "
           f"{len(rounds)} rounds measured {meta['started_utc']} on {cores} shared cores "
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
                       "parallel_coordination_cpu_1thread": coordination},
        "non_additivity_us": commit_dur - redo_alone,
    }
    common = dict(exec_default=round(exec_cost, 3), dispatch=round(dispatch, 3), retry=0.0,
                  cores=cores)
    how = ("fitted by traces/record/calibrate.py fit from the serial applies and server "
           "counters only (docs/calibration.md); " + src)
    profiles = [
        dict(name="durable-mariadb", commit_default=round(commit_dur, 3),
             sync=round(sync_bin, 3), **common,
             provenance=how + f"; sync_binlog=1, innodb_flush_log_at_trx_commit=1: sync = binlog "
                              f"fsync per group, commit = InnoDB prepare sync per transaction; "
                              f"retry cost not fitted (0: the re-execution is charged)"),
        dict(name="relaxed-mariadb", commit_default=0.0, sync=0.0, **common,
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
    result = fit(a.out)
    with open(os.path.join(a.out, "fit.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    if a.profiles:
        merge_profiles(a.profiles, result["profiles"])
    for p in result["profiles"]:
        print(f"{p['name']}: exec {p['exec_default']} us, commit {p['commit_default']} us, "
              f"sync {p['sync']} us, dispatch {p['dispatch']} us, cores {p['cores']}")
    print(f"non-additivity of the durable cost: {result['fit']['non_additivity_us']:.1f} us "
          f"per transaction")
    return 0
