#!/usr/bin/env python3
"""What durability changes in a one-core replica's CPU a transaction, measured against the
model's durable -> relaxed rule (docs/lag-check/one-core-cpu.md, "What is left").

    python traces/record/cpu_by_durability.py [CAMPAIGN_DIR ...]

CAMPAIGN_DIR: a `lag_check.py` campaign folder with `results.json` (its report) and
`profile.json` (default: every such folder under traces/calibration whose drains carry the
rig's thread counters and whose profile has a core count of 1). For each: the applier threads'
CPU a transaction in the serial drains (the rig's `threads_in_drain`, median over the runs),
durable and relaxed, and what the model takes away from a serial transaction going from durable
to relaxed (`Profile.with_durability`: the redo write + sync and the binlog sync, `commit_cpu` +
`sync_cpu`, replaced by two redo writes, 2 x `log_write_cpu`), at the profile's own pace (the
runs are replayed at the pace read before each, within about 15% of it); the server's other
threads (process less appliers less IO thread); and the relaxed parallel drains' appliers.
Then, per campaign, every drain's applier CPU a transaction against its voluntary switches a
transaction (each time an applier thread went to sleep), a least-squares line: what a sleep
costs the thread that wakes (traces/calibration/redo_write_cpu, whose `lazy` drains never
sleep on a commit, is among them). No model: stored counters and stored profiles. Markdown on
stdout.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "traces", "record"))
from redo_write_cpu import drains  # noqa: E402


def _median(xs):
    return statistics.median(xs) if xs else None


def campaign_cpu(folder: str) -> dict | None:
    """The campaign's counters by (durability, serial or parallel), and its profile's terms;
    None when it has no thread counters or no one-core profile."""
    try:
        with open(os.path.join(folder, "results.json")) as f:
            report = json.load(f)
        with open(os.path.join(folder, "profile.json")) as f:
            profile = json.load(f)["profiles"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    if (not isinstance(report, dict) or profile.get("cores") != 1
            or any(k not in profile for k in ("commit_cpu", "sync_cpu", "log_write_cpu"))):
        return None      # not a one-core profile, or one from before calibrate probed the IO CPU
    groups: dict = {}
    for row in report.get("rows", []):
        measured = row.get("measured") or {}
        threads = measured.get("threads_in_drain")
        process = measured.get("cpu_us_per_txn_in_drain")
        if not threads or process is None:
            continue
        durability, mode = row["run"].split("-")[:2]
        key = (durability, "serial" if mode == "serial" else "parallel")
        appliers = threads["applier_cpu_us_per_txn"]
        groups.setdefault(key, []).append(
            (appliers, process - appliers - threads["io_cpu_us_per_txn"]))
    if ("durable", "serial") not in groups or ("relaxed", "serial") not in groups:
        return None
    return {"groups": groups, "profile": profile}


def model_drop(profile: dict) -> float:
    """The applier CPU a serial transaction sheds going from durable to relaxed in the model."""
    return profile["commit_cpu"] + profile["sync_cpu"] - 2 * profile["log_write_cpu"]


def table(folders: list[str]) -> str:
    lines = ["| campaign | appliers' CPU µs/txn, serial: durable / relaxed (runs) | measured drop | "
             "model's drop (commit_cpu + sync_cpu - 2 x log_write_cpu) | measured - model | "
             "other threads' CPU µs/txn, serial: durable / relaxed | appliers, relaxed "
             "parallel (runs) |",
             "|---|---|---|---|---|---|---|"]
    gaps = []
    for folder in folders:
        c = campaign_cpu(folder)
        if c is None:
            continue
        g, p = c["groups"], c["profile"]
        dur, rel = g[("durable", "serial")], g[("relaxed", "serial")]
        d_app, r_app = _median([a for a, _ in dur]), _median([a for a, _ in rel])
        drop, model = d_app - r_app, model_drop(p)
        gaps.append(drop - model)
        par = g.get(("relaxed", "parallel"), [])
        par_text = f"{_median([a for a, _ in par]):.0f} ({len(par)})" if par else "-"
        lines.append(
            f"| {os.path.basename(folder)} | {d_app:.0f} / {r_app:.0f} ({len(dur)} / {len(rel)}) "
            f"| {drop:.0f} | {model:.0f} ({p['commit_cpu']:.0f} + {p['sync_cpu']:.0f} - 2 x "
            f"{p['log_write_cpu']:.0f}) | {drop - model:+.0f} | "
            f"{_median([o for _, o in dur]):.0f} / {_median([o for _, o in rel]):.0f} | "
            f"{par_text} |")
    if not gaps:
        return "no campaign with serial durable and relaxed drains and the rig's thread counters\n"
    above = sum(1 for x in gaps if x > 0)
    lines += ["", f"Measured drop less the model's over {len(gaps)} campaigns: median "
                  f"{_median(gaps):+.0f} µs a transaction, above 0 in {above} of {len(gaps)}."]
    return "\n".join(lines) + "\n"


def drain_counters(folder: str) -> list[tuple[float, float]]:
    """(voluntary switches, applier CPU µs) a transaction of each drain with the rig's thread
    counters: from the campaign's report, or read from its runs when it has none."""
    path = os.path.join(folder, "results.json")
    if os.path.exists(path):
        with open(path) as f:
            report = json.load(f)
        rows = report.get("rows", []) if isinstance(report, dict) else []
        found = [(r.get("measured") or {}).get("threads_in_drain") for r in rows]
        return [(t["applier_switches_per_txn"], t["applier_cpu_us_per_txn"]) for t in found if t]
    return [(v["switches"], v["appliers"]) for v in drains(folder).values()]


def switch_table(folders: list[str]) -> str:
    import numpy as np
    lines = ["| campaign | drains | applier CPU µs/txn at no sleep (intercept) | µs a sleep (slope) "
             "| R² | voluntary switches/txn |", "|---|---|---|---|---|---|"]
    for folder in folders:
        pts = drain_counters(folder)
        if len(pts) < 6:
            continue
        x, y = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
        if x.max() - x.min() < 1.0:
            continue
        design = np.vstack([np.ones_like(x), x]).T
        (a, b), *_ = np.linalg.lstsq(design, y, rcond=None)
        fit = design @ np.array([a, b])
        r2 = 1 - ((y - fit) ** 2).sum() / ((y - y.mean()) ** 2).sum()
        lines.append(f"| {os.path.basename(folder)} | {len(pts)} | {a:.0f} | {b:.1f} | {r2:.2f} | "
                     f"{x.min():.1f}-{x.max():.1f} |")
    return "\n".join(lines) + "\n"


def default_folders() -> list[str]:
    return sorted(os.path.dirname(p) for p in
                  glob.glob(os.path.join(ROOT, "traces", "calibration", "*", "results.json")))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaigns", nargs="*", metavar="CAMPAIGN_DIR")
    a = ap.parse_args(argv)
    for folder in a.campaigns:
        if not (os.path.isfile(os.path.join(folder, "results.json"))
                or os.path.isdir(os.path.join(folder, "runs"))):
            print(f"cpu_by_durability: {folder}: neither results.json nor runs/ (not a "
                  f"lag_check campaign folder)", file=sys.stderr)
            return 2
    folders = a.campaigns or default_folders()
    sys.stdout.write(table(folders))
    extra = os.path.join(ROOT, "traces", "calibration", "redo_write_cpu")
    if not a.campaigns and os.path.isdir(os.path.join(extra, "runs")):
        folders = folders + [extra]
    sys.stdout.write("\n" + switch_table(folders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
