#!/usr/bin/env python3
"""Every stored overlap probe read two ways: the µs a sync holds the disk (`disk_hold`,
disk_overlap.hold_of) and the share of a sync it holds (`disk_hold_share`, share_of), beside
the probe's own sync lengths (docs/lag-check/hold-as-share.md).

    python traces/record/hold_share.py [ROOT]

The probes: `make disk-hold-probe` (traces/calibration/ktrace/disk-hold-probe: quiet, free
and on one core), `make disk-hold-drains` (before and after its drains), and the overlap
rounds of every calibrating window of the lag-check campaigns that kept them (J onwards:
taken in the SQL thread's stop from K on). Markdown on stdout; nothing is fitted here.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def probes(root: str) -> list[tuple[str, list]]:
    """(label, rounds) of every stored probe, in a fixed order."""
    out = []
    ktrace = os.path.join(root, "traces/calibration/ktrace")
    for path in sorted(glob.glob(os.path.join(ktrace, "disk-hold-probe", "calibrate-*.json"))):
        name = os.path.basename(path)[len("calibrate-"):-len(".json")]
        where = "one core" if name.endswith("-cpu1") else "free"
        out.append((f"disk-hold-probe {name.split('-')[0]} ({where})",
                    json.load(open(path))["rounds"]))
    for when in ("before", "after"):
        path = os.path.join(ktrace, "disk-hold-drains", f"probe-{when}.json")
        if os.path.exists(path):
            out.append((f"disk-hold-drains, {when}", json.load(open(path))["rounds"]))
    for campaign in sorted(glob.glob(os.path.join(root, "traces/calibration/lag_check_*"))):
        runs = os.path.join(campaign, "runs")
        if not os.path.isdir(runs):
            continue
        for run in sorted(os.listdir(runs)):
            path = os.path.join(runs, run, "window.json.gz")
            if not os.path.exists(path):
                continue
            rounds = json.load(gzip.open(path)).get("overlap_rounds")
            if rounds:
                out.append((f"{os.path.basename(campaign)} {run}", rounds))
    return out


def row(label: str, rounds: list) -> str:
    from commitsched import disk_overlap
    hold, slowed, whole = disk_overlap.hold_of(rounds)
    share = disk_overlap.share_of(rounds)[0]
    each = [disk_overlap.share_from(r)[0] for r in rounds]
    alone = [statistics.median(r["alone"][k]["mean_us"] for r in rounds)
             for k in disk_overlap.KINDS]
    mean_sync = sum(alone) / len(alone)
    return (f"| {label} | {len(rounds)} | {alone[0]:.0f} / {alone[1]:.0f} | {slowed:.0f} | "
            f"{'whole' if hold is None else f'{hold:.0f}'} | "
            f"{'-' if hold is None else f'{hold / mean_sync:.2f}'} | {share:.2f} | "
            f"{min(each):.2f}-{max(each):.2f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="hold_share.py", description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog=" ".join(__doc__.split("\n\n")[2].split()))
    ap.add_argument("root", nargs="?", default=ROOT, help="the repository (default: this one)")
    a = ap.parse_args(argv)
    found = probes(a.root)
    if not found:
        raise SystemExit(f"hold_share.py: no stored overlap probe under {a.root}")
    print("| probe | rounds | alone, mean µs: in place / append (median of rounds) | slowed at "
          "once, µs (median) | disk_hold µs | its share of the mean sync | disk_hold_share "
          "(median of rounds) | rounds' shares |")
    print("|---|---|---|---|---|---|---|---|")
    for label, rounds in found:
        print(row(label, rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
