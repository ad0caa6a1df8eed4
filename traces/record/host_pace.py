#!/usr/bin/env python3
"""Does a fixed loop inside the replica server read the host's drift that the replica's own work
sees? The stored development runs (traces/calibration/host_pace_dev: the lag-check rig on this
project's 2-core VM, 2026-11-27 21:41-21:50 UTC, 12 serial runs at the source's top speed for
30 s, durable and relaxed in turn, nothing changed between them) each with the host loops
(model/host_speed.py) read just before the run, the replica idle, and again after it caught up.

    python traces/record/host_pace.py [DIR]        # `make host-pace`

For each run: its apply rate and the applier threads' CPU per transaction, from the sysbench
start until caught up, beside the loops' readings. Then how far the CPU per transaction follows
each loop: the least-squares slope of log(CPU per transaction) on log(reading), each durability
about its own mean (`PACE_ELASTICITY` is the `rows` loop's, read before the run), and the
pairwise check: each run's CPU per transaction predicted from another run's of the same
durability, as it is, and scaled by the ratio of their readings ** the slope (in-sample: the
slope is fitted on these runs; campaign P tests it on runs it was not fitted on). Markdown on
stdout.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import statistics
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEV = os.path.join(REPO, "traces", "calibration", "host_pace_dev")


def run_rows(folder: str) -> list[dict]:
    """Each run's pace and readings, in the order they ran."""
    out = []
    runs = os.path.join(folder, "runs")
    for name in os.listdir(runs):
        d = os.path.join(runs, name)
        meta = json.load(open(os.path.join(d, "meta.json")))
        with gzip.open(os.path.join(d, "samples.csv.gz"), "rt") as f:
            s = np.asarray([[float(x) for x in r[:8]] for r in list(csv.reader(f))[1:]])
        t, applied, applier_cpu = s[:, 0], s[:, 2], s[:, 4]
        ev = meta["events"]
        # from 2 s into the load (the replica behind from then on) to the last sample before
        # it caught up: every sample in it has a backlog, so the pace is the replica's own
        i = int(np.searchsorted(t, ev["sysbench_start"] + 2))
        j = int(np.searchsorted(t, ev["caught_up"])) - 2
        n = applied[j] - applied[i]
        h = meta["host_loop"]
        out.append({"run": name, "durability": meta["run"]["durability"],
                    "started": ev["sysbench_start"],
                    "rate": n / (t[j] - t[i]), "cpu_us": 1e6 * (applier_cpu[j] - applier_cpu[i]) / n,
                    **{f"{loop}_{when}": h[when][loop]["us"]
                       for when in h for loop in ("compute", "rows")},
                    # a spread reading's mean over its rounds: the share of time at each level
                    **{f"{loop}_{when}_mean": statistics.fmean(h[when][loop]["rounds_us"])
                       for when in h if when.endswith("spread")
                       for loop in ("compute", "rows")}})
    return sorted(out, key=lambda r: r["started"])


def slope(rows: list[dict], key: str) -> float:
    """log(CPU per txn) on log(reading), each durability about its own mean."""
    x, y = [], []
    for dur in sorted({r["durability"] for r in rows}):
        sel = [r for r in rows if r["durability"] == dur]
        lx = np.log([r[key] for r in sel])
        ly = np.log([r["cpu_us"] for r in sel])
        x += list(lx - lx.mean())
        y += list(ly - ly.mean())
    x, y = np.asarray(x), np.asarray(y)
    return float((x * y).sum() / (x * x).sum())


def pairwise(rows: list[dict], key: str, power: float) -> float:
    """Median |error| of each run's CPU per txn from another run's of its durability, scaled by
    (its reading / the other's) ** power."""
    errs = [abs(a["cpu_us"] * (b[key] / a[key]) ** power / b["cpu_us"] - 1)
            for a in rows for b in rows if a is not b and a["durability"] == b["durability"]]
    return float(statistics.median(errs))


def elasticity(folder: str = DEV) -> float:
    """PACE_ELASTICITY as fitted from the stored runs (rounded as model/host_speed.py keeps it)."""
    return round(slope(run_rows(folder), "rows_before"), 2)


def markdown(folder: str) -> str:
    rows = run_rows(folder)
    lines = ["| run | apply rate (txn/s) | applier CPU (µs/txn) | compute loop before / after "
             "(µs) | rows loop before / after (µs) |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['rate']:.0f} | {r['cpu_us']:.1f} | "
                     f"{r['compute_before']:.3f} / {r.get('compute_after', float('nan')):.3f} | "
                     f"{r['rows_before']:.0f} / {r.get('rows_after', float('nan')):.0f} |")
    for dur in ("durable", "relaxed"):
        sel = [r for r in rows if r["durability"] == dur]
        if sel:
            cpu = [r["cpu_us"] for r in sel]
            rb = [r["rows_before"] for r in sel]
            lines.append(f"\n{dur}: applier CPU {min(cpu):.0f}-{max(cpu):.0f} µs/txn "
                         f"({100 * (max(cpu) / min(cpu) - 1):.0f}% apart), rows loop before "
                         f"{min(rb):.0f}-{max(rb):.0f} µs ({100 * (max(rb) / min(rb) - 1):.0f}% "
                         f"apart)")
    lines += ["", "| reading | slope (elasticity) | pairwise error, as it is | scaled ** slope | "
              "scaled ** 1 |", "|---|---|---|---|---|"]
    keys = ["rows_before", "compute_before"] + [
        k for k in ("rows_before_spread", "rows_before_spread_mean") if k in rows[0]]
    for key in keys:
        e = slope(rows, key)
        lines.append(f"| {key.replace('_', ' loop, ', 1).replace('_', ' ')} | {e:.2f} | "
                     f"{100 * pairwise(rows, key, 0.0):.1f}% | {100 * pairwise(rows, key, e):.1f}% | "
                     f"{100 * pairwise(rows, key, 1.0):.1f}% |")
    lines.append(f"\nPACE_ELASTICITY (the rows loop, read before the run): {elasticity(folder)}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", nargs="?", default=DEV,
                   help="a lag_check.py measure folder whose runs read the host loops "
                        "(default: the stored development runs)")
    a = p.parse_args(argv)
    try:
        sys.stdout.write(markdown(a.dir))
    except (OSError, KeyError, ValueError) as e:
        raise SystemExit(f"host_pace: {a.dir}: {e}") from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
