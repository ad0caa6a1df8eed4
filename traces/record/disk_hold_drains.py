#!/usr/bin/env python3
"""ktrace drains through the model with and without the probed `disk_hold`
(docs/lag-check/drain-timeline-perf.md, the what-if after the timeline).

    python traces/record/disk_hold_drains.py DIR PROFILE.json

DIR: a `ktrace.py measure` folder whose `probe-before.json` / `probe-after.json` are
`ktrace.py overlap-probe --rounds N` taken just before and after its drains. Each drain's
backlog goes through the model (reference engine, closed backlog, `ktrace.model_timeline`)
with PROFILE as it is (the whole flush held), at the probe-before's figure and at the
probe-after's; the serial drain's measured rate beside (the constant baseline). Markdown on
stdout.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(argv=None) -> int:
    from ktrace import binlog_groups, group_sizes, model_timeline, parse_name
    from commitsched.profiles import ProfileError, load_profile_file
    import argparse
    ap = argparse.ArgumentParser(
        prog="disk_hold_drains.py", description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog=" ".join(__doc__.split("\n\n")[2].split()))
    ap.add_argument("out", metavar="DIR", help="a `ktrace.py measure` folder with "
                    "probe-before.json and probe-after.json")
    ap.add_argument("profile", metavar="PROFILE.json", help="the profile the drains replay with")
    a = ap.parse_args(argv)
    out, path = a.out, a.profile
    try:
        prof = load_profile_file(path)
        holds = [json.load(open(os.path.join(out, f"probe-{w}.json")))["median"]["disk_hold_us"]
                 for w in ("before", "after")]
        runs = sorted(os.listdir(os.path.join(out, "runs")))
        metas = {r: json.load(open(os.path.join(out, "runs", r, "meta.json"))) for r in runs}
    except (OSError, ValueError, KeyError, ProfileError) as e:
        raise SystemExit(f"disk_hold_drains: {e}") from None
    serial = [m["apply_rate"] for r, m in metas.items() if "serial" in r]
    print(f"| drain | measured /s (binlog group) | model, whole flush | disk_hold {holds[0]} "
          f"(probe before) | disk_hold {holds[1]} (probe after) | constant: the serial "
          f"drain's rate |")
    print("|---|---|---|---|---|---|")
    for r in runs:
        spec, m = parse_name(r.split("_")[0]), metas[r]
        g = binlog_groups(os.path.join(out, "runs", r, "groups.tsv"))
        cells = []
        for h in [None] + holds:
            t = model_timeline(os.path.join(out, "runs", r, "trace.jsonl.gz"),
                               replace(prof, disk_hold=h), spec["mode"], spec["threads"])
            cells.append(f"{t['apply_rate']:.0f} ({t['binlog_group']:.2f}; "
                         f"{t['apply_rate'] / m['apply_rate'] - 1:+.0%})")
        const = (f"{serial[0]:.0f} ({serial[0] / m['apply_rate'] - 1:+.0%})" if serial else "-")
        print(f"| {r} | {m['apply_rate']:.0f} ({len(g) / len(group_sizes(g)):.2f}) | "
              + " | ".join(cells) + f" | {const} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
