#!/usr/bin/env python3
"""What a relaxed commit's redo writes cost the replica's appliers (traces/calibration/
redo_write_cpu; docs/lag-check/one-core-cpu.md, "What is left"): the same closed drains with
`innodb_flush_log_at_trx_commit` 2 (relaxed: the log written at every commit, O_DIRECT) and 0
("lazy": written about once a second), side by side in each round.

    python traces/record/redo_write_cpu.py CAMPAIGN_DIR

For each configuration and round: the drain's log writes a transaction (`innodb_log_writes` over
`binlog_commits`), the applier threads' CPU, the server's other threads' CPU (the process less
the appliers and the IO thread) and the wall time, µs a transaction (`lag_check.measured`); then
what one write costs, (relaxed - lazy) / (its writes - lazy's), CPU and wall, median over the
rounds, beside calibrate's probe of one O_DIRECT write (`io_cpu_us`'s `direct_write`) on an
idle and a busy core, where the folder has `probes.json` (traces/record/io_cpu_busy.py). A
measurement, no model. Markdown on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from lag_check import measured  # noqa: E402


def drains(campaign: str) -> dict:
    """(durability, mode, threads, round) -> the drain's figures."""
    out = {}
    runs = os.path.join(campaign, "runs")
    for name in sorted(os.listdir(runs)):
        m = measured(os.path.join(runs, name))
        run, th = m["meta"]["run"], m.get("threads_in_drain")
        counters = m["meta"].get("counters_in_drain") or {}
        if not th or not counters.get("binlog_commits"):
            continue
        n = counters["binlog_commits"]
        last = name.rsplit("_", 1)[-1]
        rnd = int(last[1:]) if last[:1] == "r" and last[1:].isdigit() else 1
        out[(run["durability"], run["mode"], run["threads"], rnd)] = {
            "writes": counters["innodb_log_writes"] / n,
            "appliers": th["applier_cpu_us_per_txn"],
            "others": m["cpu_us_per_txn_in_drain"] - th["applier_cpu_us_per_txn"]
            - th["io_cpu_us_per_txn"],
            "wall": th["wall_us_per_txn"], "switches": th["applier_switches_per_txn"]}
    return out


def table(found: dict, probes: dict | None) -> str:
    lines = ["| configuration | round | log writes/txn: relaxed / lazy | appliers' CPU µs/txn: "
             "relaxed / lazy | other threads' CPU | wall µs/txn | voluntary switches/txn | "
             "one write: CPU µs / wall µs |", "|---|---|---|---|---|---|---|---|"]
    per_write: dict = {}
    for (dur, mode, threads, rnd), rel in sorted(found.items()):
        lazy = found.get(("lazy", mode, threads, rnd))
        if dur != "relaxed" or lazy is None:
            continue
        extra = rel["writes"] - lazy["writes"]
        cpu = (rel["appliers"] - lazy["appliers"]) / extra if extra > 0.1 else None
        wall = (rel["wall"] - lazy["wall"]) / extra if extra > 0.1 else None
        per_write.setdefault((mode, threads), []).append((cpu, wall))
        lines.append(
            f"| {mode} W={threads} | {rnd} | {rel['writes']:.2f} / {lazy['writes']:.2f} | "
            f"{rel['appliers']:.0f} / {lazy['appliers']:.0f} | {rel['others']:.0f} / "
            f"{lazy['others']:.0f} | {rel['wall']:.0f} / {lazy['wall']:.0f} | "
            f"{rel['switches']:.1f} / {lazy['switches']:.1f} | "
            + ("-" if cpu is None else f"{cpu:.1f} / {wall:.1f}") + " |")
    if not per_write:
        return "no round with both a relaxed and a lazy drain of one configuration\n"
    lines += ["", "| configuration | one relaxed redo write, median over the rounds: applier "
                  "CPU µs | wall µs | rounds |", "|---|---|---|---|"]
    for (mode, threads), vals in sorted(per_write.items()):
        ok = [v for v in vals if v[0] is not None]
        lines.append(f"| {mode} W={threads} | {statistics.median(v[0] for v in ok):.1f} | "
                     f"{statistics.median(v[1] for v in ok):.1f} | {len(ok)} |")
    if probes:
        med = probes["medians"]
        lines += ["", f"calibrate's probe of one O_DIRECT write (`io_cpu_us`, `probes.json`, "
                      f"{probes['started_utc']}): the writing thread's CPU "
                      f"{med['idle']['direct_write']['cpu_us']:.1f} µs on an idle core, "
                      f"{med['busy']['direct_write']['cpu_us']:.1f} µs on a busy one "
                      f"(traces/record/io_cpu_busy.py)."]
    return "\n".join(lines) + "\n"


# What the probe (calibrate's `io_cpu_us`, idle core) says a transaction's IO costs its thread,
# by durability: relaxed two O_DIRECT writes (serial); durable the redo write with its sync and
# the binlog's append with its sync
PROBED_IO = {"relaxed": lambda m: 2 * m["direct_write"]["cpu_us"],
             "durable": lambda m: m["direct_write_sync"]["cpu_us"] + m["append_sync"]["cpu_us"]}


def by_durability(found: dict, probes: dict | None) -> str:
    """Serial drains by durability, medians over their rounds: the IO's CPU as the appliers'
    CPU above the lazy drains', beside the probe's, and per voluntary switch."""
    serial = {}
    for (dur, mode, threads, _), v in found.items():
        if mode == "serial":
            serial.setdefault(dur, []).append(v)
    if "lazy" not in serial:
        return ""
    med = {d: {k: statistics.median(v[k] for v in vs) for k in vs[0]} for d, vs in serial.items()}
    lazy = med["lazy"]
    lines = ["| serial drains | runs | appliers' CPU µs/txn | above lazy | the probe's IO (idle core) "
             "| above lazy / probe | voluntary switches/txn | above lazy per switch | wall µs/txn |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dur in ("lazy", "relaxed", "durable"):
        if dur not in med:
            continue
        m, above = med[dur], med[dur]["appliers"] - lazy["appliers"]
        probe = (PROBED_IO[dur](probes["medians"]["idle"]) if probes and dur in PROBED_IO
                 else None)
        switches = m["switches"] - lazy["switches"]
        lines.append(
            f"| {dur} | {len(serial[dur])} | {m['appliers']:.0f} | "
            + ("-" if dur == "lazy" else f"{above:.0f}") + " | "
            + ("-" if probe is None else f"{probe:.0f}") + " | "
            + ("-" if probe is None else f"{above / probe:.2f}") + f" | {m['switches']:.1f} | "
            + (f"{above / switches:.0f}" if switches > 0.1 else "-") + f" | {m['wall']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign", metavar="CAMPAIGN_DIR")
    a = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(a.campaign, "runs")):
        print(f"redo_write_cpu: {a.campaign}: no runs/ (not measured yet?)", file=sys.stderr)
        return 2
    probes = None
    path = os.path.join(a.campaign, "probes.json")
    if os.path.exists(path):
        with open(path) as f:
            probes = json.load(f)
    found = drains(a.campaign)
    sys.stdout.write(table(found, probes))
    extra = by_durability(found, probes)
    if extra:
        sys.stdout.write("\n" + extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
