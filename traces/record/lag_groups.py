"""Group commit on the live check's replica, measured against the model (docs/lag.md, "What F's
counters say").

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
campaign H on, a run also reads them at its drain's start and end (`counters_in_drain`); a run
at the source's top speed (`_0x30`) is the whole run at its pace.
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


def measured_groups(meta: dict) -> dict | None:
    """The replica's groups over the whole run, and over the drain alone where the run read its
    counters at the drain's start and end (`counters_in_drain`, campaign H on)."""
    whole = _groups(meta.get("counters", {}).get("replica"))
    if whole is None:
        return None
    return {**whole, "drain": _groups(meta.get("counters_in_drain"))}


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
    lines = ["| run | binlog group, measured: whole run / drain | redo + data fsyncs per txn, "
             "measured: whole run / drain | switches/txn in the drain | model's binlog group "
             "(closed backlog) | model's redo flush group |", "|---|---|---|---|---|---|"]
    for d, meta in metas.items():
        run = meta["run"]
        g = measured_groups(meta)
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
