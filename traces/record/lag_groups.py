"""Group commit on the live check's replica, measured against the model
(docs/lag-check/campaign-f.md, "What F's counters say").

A parallel replica commits in groups: one binlog write and sync per group
(`MYSQL_BIN_LOG::trx_group_commit_leader`) and one redo-log write and sync for every prepare
waiting (InnoDB's `log_write_up_to`). How big those groups are decides how much of the commit's
CPU and device time a transaction pays. Each run of a lag-check campaign stored the replica's
status counters at its end (meta.json `counters.replica`): `Binlog_commits` over
`Binlog_group_commits` is the mean binlog group, `Innodb_data_fsyncs` per commit the redo
log's syncs (with the data files' few). The model's groups are read from its schedule: the
members of one binlog group commit at the same instant, those of one redo flush become ready
to commit at the same instant.

    python traces/record/lag_groups.py traces/calibration/lag_check_f [--limit 12000]

Counters at the run's end cover the whole run (at 800/s the replica keeps up outside the drain,
in groups of about one), so a stop-and-drain run's mean understates the drain's groups; from
campaign H on, a run also reads them when the SQL thread restarts and when the load ends
(`counters_in_drain`), and the drain's own groups are estimated from that window (see
`measured_groups`); a run at the source's top speed (`_0x30`) is the whole run at its pace.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

CONFIGS = (("conservative", 1), ("conservative", 2), ("conservative", 4), ("optimistic", 2), ("optimistic", 4))
SCHEDULERS = {"conservative": "commit_id+mariadb_conservative",
              "optimistic": "commit_id+mariadb_optimistic"}


def group_sizes(instants) -> float:
    """Mean size of the groups of equal instants (members of one group share the instant)."""
    values = sorted(instants)
    if not values:
        return 0.0
    groups = 1 + sum(1 for a, b in zip(values, values[1:]) if b - a > 1e-9)
    return len(values) / groups


def model_groups(profile, txns, mode: str, workers: int) -> dict:
    """The model's closed-backlog binlog and redo-flush group sizes (reference engine)."""
    from commitsched.schedulers import run_scheduler
    commits, ready = [], []

    def sink(run):
        commits.append(run.commit)
        ready.append(run.ready)
    run_scheduler(SCHEDULERS[mode], txns, workers, profile, sink, engine="reference")
    return {"binlog": group_sizes(commits), "redo": group_sizes(ready)}


def _groups(c: dict | None) -> dict | None:
    if not c or not c.get("binlog_group_commits"):
        return None
    n = c["binlog_commits"]
    return {"binlog": n / c["binlog_group_commits"],
            "fsyncs_per_txn": c.get("innodb_data_fsyncs", 0) / n if n else None}


def measured_groups(meta: dict, drained: int | None = None) -> dict | None:
    """The replica's groups over the whole run and, where the run read its counters at the SQL
    thread's restart and at the load's end (`counters_in_drain`, campaign H on), over the drain.
    That window holds the drain (`drained` transactions, from the samples) and the load's
    remaining steady seconds; those are taken to commit in groups of the size the rest of the
    run had (the counters outside the window: the seconds before the stop and after the load),
    and the drain's groups are what is left."""
    c = meta.get("counters", {}).get("replica")
    whole = _groups(c)
    if whole is None:
        return None
    w = meta.get("counters_in_drain")
    drain = None
    if w and drained and w.get("binlog_group_commits"):
        outside_n = c["binlog_commits"] - w["binlog_commits"]
        outside_g = c["binlog_group_commits"] - w["binlog_group_commits"]
        steady = w["binlog_commits"] - drained
        if outside_n > 0 and outside_g > 0 and 0 <= steady < w["binlog_commits"]:
            groups = w["binlog_group_commits"] - steady * outside_g / outside_n
            fs_out = (c.get("innodb_data_fsyncs", 0) - w.get("innodb_data_fsyncs", 0)) / outside_n
            fsyncs = w.get("innodb_data_fsyncs", 0) - steady * fs_out
            if groups > 0:
                drain = {"binlog": drained / groups, "fsyncs_per_txn": fsyncs / drained}
    return {**whole, "drain": drain}


def drained_txns(run_dir: str, meta: dict) -> int | None:
    """Transactions the replica applied from its restart to catching up (the samples)."""
    import csv

    import numpy as np
    from commitsched.lag_measure import caught_up_at
    start = meta.get("events", {}).get("start")
    import gzip
    path = os.path.join(run_dir, "samples.csv")
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"                        # campaign I on: compressed after measuring
    if start is None or not os.path.exists(path):
        return None
    with (gzip.open(path, "rt", newline="") if path.endswith(".gz")
          else open(path, newline="")) as f:
        rows = list(csv.reader(f))[1:]
    t = np.asarray([float(r[0]) for r in rows])
    p = np.asarray([int(r[1]) for r in rows])
    r = np.asarray([int(r[2]) for r in rows])
    caught = caught_up_at(t, p, r, start)
    if caught is None:
        return None
    i, j = int(np.searchsorted(t, start)), int(np.searchsorted(t, caught))
    return int(r[min(j, len(r) - 1)] - r[min(i, len(r) - 1)])


def report(out: str, limit: int) -> str:
    from commitsched.profiles import load_profile_file
    from commitsched.trace import load_trace
    runs_dir = os.path.join(out, "runs")
    if not os.path.isdir(runs_dir):
        raise SystemExit(f"lag_groups: {runs_dir}: no runs (a lag-check campaign folder?)")
    profile_path = os.path.join(out, "profile.json")
    if not os.path.exists(profile_path):
        raise SystemExit(f"lag_groups: {profile_path}: missing (run the campaign's report first)")
    profile = load_profile_file(profile_path)
    results = {}
    if os.path.exists(os.path.join(out, "results.json")):
        with open(os.path.join(out, "results.json")) as f:
            results = {r["run"]: r for r in json.load(f)["rows"]}
    metas = {}
    for d in sorted(os.listdir(runs_dir)):
        with open(os.path.join(runs_dir, d, "meta.json")) as f:
            metas[d] = json.load(f)
    cal = [d for d, m in metas.items() if m["run"].get("calibrate")]
    txns = load_trace(os.path.join(runs_dir, (cal or sorted(metas))[0],
                                   "trace.jsonl.gz")).txns[:limit]
    model = {(dur, mode, w): model_groups(profile.with_durability(dur), txns, mode, w)
             for dur in ("durable", "relaxed") for mode, w in CONFIGS}
    lines = ["| run | binlog group, measured: whole run / drain (est.) | redo + data fsyncs per "
             "txn, measured: whole run / drain (est.) | switches/txn in the drain | model's binlog group "
             "(closed backlog) | model's redo flush group |", "|---|---|---|---|---|---|"]
    for d, meta in metas.items():
        run = meta["run"]
        g = measured_groups(meta, drained_txns(os.path.join(runs_dir, d), meta)
                            if meta.get("counters_in_drain") else None)
        if g is None:
            continue
        key = (run["durability"], run["mode"], run["threads"])
        mg = model.get(key)
        sw = (results.get(d, {}).get("measured", {}).get("threads_in_drain") or {}).get(
            "applier_switches_per_txn")
        dr = g["drain"] or {}
        durable = run["durability"] == "durable"

        def pair(whole, drain, show=True):
            if not show or whole is None:
                return "-"
            return f"{whole:.2f} / " + ("-" if drain is None else f"{drain:.2f}")
        lines.append(f"| {d} | {pair(g['binlog'], dr.get('binlog'))} | "
                     + pair(g["fsyncs_per_txn"], dr.get("fsyncs_per_txn"), durable)
                     + f" | {'-' if sw is None else f'{sw:.1f}'} | "
                     + ("1 (serial)" if mg is None else f"{mg['binlog']:.2f} | {mg['redo']:.2f}")
                     + (" | 1 (serial) |" if mg is None else " |"))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="a lag-check campaign folder (traces/calibration/lag_check_*)")
    ap.add_argument("--limit", type=int, default=12000,
                    help="transactions of the calibrating run's trace the model replays as a "
                         "closed backlog (default 12000)")
    a = ap.parse_args(argv)
    if a.limit < 100:
        ap.error("--limit must be at least 100")
    sys.stdout.write(report(a.out, a.limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
