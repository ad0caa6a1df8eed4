#!/usr/bin/env python3
"""The cluster profile of this machine from the Galera measurements, and the predictions for
every measured configuration against what was measured (docs/certification.md).

    python traces/record/galera_fit.py [--dir traces/calibration/galera] [--calibrate t2-fc16-durable]

1. The profile is read off ONE configuration (`--calibrate`), at the highest rate it kept up:
   - `client_cpu`, `origin_cpu` (node 0, the writer), `apply_cpu` (nodes 1 and 2): each
     process's CPU seconds (/proc) over the step's transactions, less the CPU of its flushes
     (2 per binlog group commit, from the binlog_commits / binlog_group_commits counters,
     times the probe's `fsync_cpu`), which the simulation puts on the flushes itself;
   - `fsync`, `fsync_cpu`: the disk probe (galera_measure.py fsync);
   - `rtt`: the smallest `wsrep_evs_repl_latency` the calibration configuration saw (the
     group channel's round trip without queueing);
   - `fc_rtt`: a flow-control message's trip through the group, the mean
     `wsrep_evs_repl_latency` of the members that do not write (what they send is their flow
     control and their own reports) at that step;
   - `cpu_scale`, the one term fitted: the factor on every CPU term for which the simulation
     reproduces that configuration's sustained throughput (the measured CPU per transaction
     misses what the machine loses to contention: cache misses, the kernel's scheduling).
   `cert_share` and `commit_share` (the serial parts of a member's CPU per write-set) are not
   measured (MariaDB shows no split): they keep their documented defaults.
2. Every measured configuration is predicted with that profile (`sustained`, the same
   bisection as the measurement) and compared with the measured sustained throughput, beside
   the trivial baseline: the calibration configuration's measured throughput for every one.
Writes model/cluster_profiles.json and <dir>/fidelity.md (and fidelity.json).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from commitsched.certification_throughput import (PROFILES_PATH, Cluster,  # noqa: E402
                                                  ClusterConfig, ClusterProfile, sustained)
from commitsched.trace import load_trace  # noqa: E402

SECONDS, WARMUP = 10.0, 2.0


def load(d: str):
    steps = [json.loads(x) for x in open(os.path.join(d, "steps.jsonl"))]
    configs = [json.loads(x) for x in open(os.path.join(d, "configs.jsonl"))]
    fsync = json.load(open(os.path.join(d, "fsync.json")))
    return steps, configs, fsync


def counter_deltas(steps: list[dict]) -> None:
    """binlog_commits / binlog_group_commits are not reset by FLUSH LOCAL STATUS: per step,
    the difference with the configuration's previous step (None for its first)."""
    prev = {}
    for s in steps:
        c = s["config"]
        now = [(int(n["binlog_commits"]), int(n["binlog_group_commits"])) for n in s["nodes"]]
        p = prev.get(c)
        s["group_commits"] = ([(a[0] - b[0], a[1] - b[1]) for a, b in zip(now, p)]
                              if p else None)
        prev[c] = now


def config_of(name: str) -> ClusterConfig:
    t, fc, dur = name.split("-")
    return ClusterConfig(flavor="galera", members=3, writers=(0,), clients=32,
                         workers=int(t[1:]), durable=dur == "durable", fc_limit=int(fc[2:]),
                         fc_factor=1.0)


def rounds(configs: list[dict]) -> dict[str, list[dict]]:
    """Each configuration's measured rows (one per round of the campaign), in order."""
    out: dict[str, list[dict]] = {}
    for c in configs:
        out.setdefault(c["name"], []).append(c)
    return out


def read_profile(steps: list[dict], configs: list[dict], fsync: dict, name: str) -> tuple:
    row = next(c for c in configs if c["name"] == name)     # the first round's
    first_steps = []
    for s in steps:                     # that round's steps: the first run of the configuration
        if s["config"] == name:
            if s.get("kind") == "probe" and first_steps:
                break
            first_steps.append(s)
    mine = first_steps
    kept = [s for s in mine if s.get("kept_up")]
    if not kept:
        raise SystemExit(f"galera_fit: {name} kept up no rate")
    best = max(kept, key=lambda s: s["rate"])
    tx = best["transactions"]
    fsync_cpu = fsync.get("cpu_us", 0.0)
    durable = row["durability"] == "durable"

    def flushes_per_txn(node: int) -> float:
        gc = best.get("group_commits")
        if not durable or not gc or gc[node][0] == 0:
            return 0.0
        return 2.0 * gc[node][1] / gc[node][0]

    cpu = [c / tx * 1e6 for c in best["node_cpu"]]
    origin = cpu[0] - flushes_per_txn(0) * fsync_cpu
    apply = statistics.mean(cpu[i] - flushes_per_txn(i) * fsync_cpu for i in (1, 2))
    rtt = min(float(n["wsrep_evs_repl_latency"].split("/")[0]) for s in mine
              for n in s["nodes"] if n.get("wsrep_evs_repl_latency")) * 1e6
    fc_rtt = statistics.mean(float(n["wsrep_evs_repl_latency"].split("/")[1])
                             for n in best["nodes"][1:]) * 1e6
    prof = ClusterProfile(
        name="galera-2core", cores=2, client_cpu=round(best["client_cpu"] / tx * 1e6, 1),
        origin_cpu=round(origin, 1), apply_cpu=round(apply, 1), rtt=round(rtt, 1),
        fc_rtt=round(fc_rtt, 1),
        fsync=fsync["median_us"], fsync_cpu=fsync_cpu,
        machine="this project's shared 2-core VM (AMD EPYC, ext4 on a virtual disk), "
                "3 MariaDB 10.11 Galera 4 nodes and sysbench on the same 2 cores",
        provenance=f"measured on {name} at {best['rate']:.0f} tps offered "
                   f"(traces/calibration/galera, galera_fit.py); cpu_scale fitted on it alone",
        fitted_from={"calibration_config": name, "step_rate": round(best["rate"], 1),
                     "flushes_per_txn": [round(flushes_per_txn(i), 3) for i in range(3)],
                     "measured_cpu_per_txn_us": [round(c, 1) for c in cpu]})
    return prof, row


def scaled(prof: ClusterProfile, k: float) -> ClusterProfile:
    return replace(prof, client_cpu=prof.client_cpu * k, origin_cpu=prof.origin_cpu * k,
                   apply_cpu=prof.apply_cpu * k, fsync_cpu=prof.fsync_cpu * k)


def fit_scale(txns, prof: ClusterProfile, cfg: ClusterConfig, target: float, log,
              on: str = "unthrottled") -> float:
    """The CPU scale for which the simulation meets `target` (bisection on log k; the
    throughput falls as k grows): the writers' unthrottled throughput (`on="unthrottled"`, the
    probe's), or the sustained rate (`on="sustained"`)."""
    lo, hi = 0.5, 2.0
    for _ in range(9):
        k = (lo * hi) ** 0.5
        if on == "unthrottled":
            got = Cluster(txns, cfg, scaled(prof, k)).run(None, SECONDS, WARMUP)["tps"]
        else:
            got = sustained(txns, cfg, scaled(prof, k), seconds=SECONDS, warmup=WARMUP).sustained
        log(f"cpu_scale {k:.3f}: {got:.0f} tps (measured {target:.0f})")
        if got > target:
            lo = k
        else:
            hi = k
    return round((lo * hi) ** 0.5, 4)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", default="traces/calibration/galera")
    p.add_argument("--calibrate", default="t2-fc16-durable")
    p.add_argument("--trace", default=None,
                   help="the workload (default: <dir>/probe_<calibrate>.jsonl.gz)")
    p.add_argument("--profiles", default=PROFILES_PATH)
    p.add_argument("--calibrate-on", choices=("sustained", "unthrottled"), default="sustained",
                   help="what cpu_scale is fitted to on the calibration configuration: its "
                        "sustained rate (default: the method the fidelity table in docs/"
                        "certification.md was made with) or the writers' unthrottled "
                        "throughput (the probes'; a variant added after the held-out errors of "
                        "the default were known, so its held-out figures are no test of it)")
    a = p.parse_args(argv)
    log = lambda msg: print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
    steps, configs, fsync = load(a.dir)
    counter_deltas(steps)
    trace = a.trace or os.path.join(a.dir, f"probe_{a.calibrate}.jsonl.gz")
    txns = load_trace(trace).txns
    prof, row = read_profile(steps, configs, fsync, a.calibrate)
    measured = {n: statistics.mean(r["sustained"] for r in rs) for n, rs in rounds(configs).items()}
    probes = statistics.mean(r["tps_unthrottled"] for r in rounds(configs)[a.calibrate])
    target = probes if a.calibrate_on == "unthrottled" else measured[a.calibrate]
    # The model, and its ablation: the same fit with flow control's messages as fast as the
    # channel's quickest round (fc_rtt = rtt, the model before the flow-control trip).
    variants = [("model", prof), ("ablation", replace(prof, fc_rtt=None))]
    fits, rows = {}, {}
    for tag, base_prof in variants:
        log(f"{tag}: fitting cpu_scale")
        k = fit_scale(txns, base_prof, config_of(a.calibrate), target, log, a.calibrate_on)
        fitted = replace(scaled(base_prof, k), fitted_from={
            **base_prof.fitted_from, "cpu_scale": k,
            "cpu_scale_fitted_to": f"{a.calibrate_on} {target:.1f} tps (mean of rounds)"})
        fits[tag] = fitted
        rows[tag] = predict(txns, configs, fitted, measured, a.calibrate, log)
    with open(a.profiles, "w") as f:
        json.dump({"profiles": [fits["model"].to_json()]}, f, indent=1)
        f.write("\n")
    with open(os.path.join(a.dir, "fidelity.json"), "w") as f:
        json.dump({"profile": fits["model"].to_json(), "rows": rows["model"],
                   "ablation": {"what": "fc_rtt = rtt (flow control's trip as the channel's "
                                        "quickest round)",
                                "profile": fits["ablation"].to_json(),
                                "rows": rows["ablation"]}}, f, indent=1)
    text = fidelity_md(fits["model"], rows["model"], a.calibrate, a.calibrate_on,
                       ablation=(fits["ablation"], rows["ablation"]))
    with open(os.path.join(a.dir, "fidelity.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def predict(txns, configs, fitted: ClusterProfile, measured: dict, calib: str, log) -> list:
    """Every measured configuration predicted with `fitted`, beside the constant guess."""
    base = measured[calib]
    out = []
    for name, rs in rounds(configs).items():
        pred = sustained(txns, config_of(name), fitted, seconds=SECONDS, warmup=WARMUP)
        m = measured[name]
        err = (pred.sustained - m) / m
        berr = (base - m) / m
        out.append({"config": name, "measured": round(m, 1),
                    "rounds": [round(r["sustained"], 1) for r in rs],
                    "predicted": round(pred.sustained, 1), "predicted_next_rate":
                    round(pred.next_rate, 1), "error": round(err, 4),
                    "baseline": round(base, 1), "baseline_error": round(berr, 4),
                    "calibration": name == calib,
                    "unthrottled_measured": round(statistics.mean(r["tps_unthrottled"]
                                                                  for r in rs), 1),
                    "unthrottled_predicted": round(pred.unthrottled, 1)})
        log(f"{name}: measured {m:.0f} {out[-1]['rounds']}, predicted {pred.sustained:.0f} "
            f"({err:+.1%}; constant {berr:+.1%})")
    return out


def fidelity_md(prof: ClusterProfile, rows: list[dict], calib: str, on: str,
                ablation: tuple | None = None) -> str:
    held = [r for r in rows if not r["calibration"]]
    med = lambda xs: statistics.median(xs) if xs else float("nan")

    def ok(rs):
        model = med([abs(r["error"]) for r in rs])
        return model <= 0.25 and model <= 0.5 * med([abs(r["baseline_error"]) for r in rs])
    spread = [abs(r["rounds"][0] - r["rounds"][1]) / r["measured"] for r in rows
              if len(r["rounds"]) > 1]
    lines = [f"<!-- generated by traces/record/galera_fit.py --calibrate-on {on} -->",
             f"Calibrated on `{calib}` only (cpu_scale fitted to its {on} throughput); every "
             f"other row is held out. Measured: the mean of the rounds (each in brackets); the "
             f"rounds of one configuration differ by {med(spread):.0%} of their mean (median; "
             f"up to {max(spread) if spread else float('nan'):.0%}).", "",
             "| configuration | measured sustained (each round) | predicted | error | "
             "constant guess | its error | unthrottled measured / predicted |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        tag = " (calibration)" if r["calibration"] else ""
        each = ", ".join(f"{x:.0f}" for x in r["rounds"])
        lines.append(f"| `{r['config']}`{tag} | {r['measured']:.0f} ({each})"
                     f" | {r['predicted']:.0f} | {r['error']:+.1%} | {r['baseline']:.0f} | "
                     f"{r['baseline_error']:+.1%} | {r['unthrottled_measured']:.0f} / "
                     f"{r['unthrottled_predicted']:.0f} |")
    lines += ["", f"Held out ({len(held)} configurations): model median |error| "
              f"{med([abs(r['error']) for r in held]):.1%}, constant guess "
              f"{med([abs(r['baseline_error']) for r in held]):.1%} (issue 28's target: at "
              f"most 25% and at most half the constant guess's: "
              f"{'met' if ok(held) else 'not met'}).", "",
              f"Profile `{prof.name}`: client {prof.client_cpu:.0f} µs, origin "
              f"{prof.origin_cpu:.0f} µs, apply {prof.apply_cpu:.0f} µs of CPU per transaction "
              f"(cpu_scale {prof.fitted_from.get('cpu_scale')} included), rtt {prof.rtt:.0f} µs, "
              f"fsync {prof.fsync:.0f} µs ({prof.fsync_cpu:.0f} µs CPU), {prof.cores} cores, "
              f"flow-control trip {prof.fc_rtt if prof.fc_rtt is not None else prof.rtt:.0f} µs."]
    if ablation:
        aprof, arows = ablation
        aheld = [r for r in arows if not r["calibration"]]
        lines += ["", "| held out: median of \\|error\\| | model | ablation: flow control's "
                  "trip = rtt | constant guess |", "|---|---|---|---|",
                  f"| {len(held)} configurations | "
                  f"{med([abs(r['error']) for r in held]):.1%} (cpu_scale "
                  f"{prof.fitted_from.get('cpu_scale')}) | "
                  f"{med([abs(r['error']) for r in aheld]):.1%} (cpu_scale "
                  f"{aprof.fitted_from.get('cpu_scale')}) | "
                  f"{med([abs(r['baseline_error']) for r in held]):.1%} |",
                  "", "The ablation, configuration by configuration (predicted, error): "
                  + "; ".join(f"`{r['config']}` {r['predicted']:.0f} ({r['error']:+.1%})"
                              for r in arows) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
