#!/usr/bin/env python3
"""Issue 28's held-out test of the Galera cluster model, pre-registered (docs/certification.md,
"A pre-registered held-out campaign").

    python traces/record/galera_heldout.py preregister   # the profiles, BEFORE any new measurement
    /work/bin/measure python traces/record/galera_measure.py run --base-port 4600 \
        --out traces/calibration/galera/heldout --configs ...               # the new campaign
    python traces/record/galera_heldout.py predict       # the table: measured against predicted

`preregister` reads the profile off the FIRST campaign's calibration configuration
(traces/calibration/galera, `t2-fc16-durable`) exactly as galera_fit.py does, and fits its one
term, `cpu_scale`, to that configuration's UNTHROTTLED throughput (the mean of its probes), not
to its sustained rate: the simulation's CPU per transaction is then the machine's CPU per
transaction at saturation, where the closed-loop probe measures it, instead of a figure stretched
until the simulation's capacity meets the open-loop search's sustained rate (which charged every
loss of the search to the CPU: the first campaign's held-out predictions were all low). It
writes <heldout>/preregistered.json: that profile (the model under test), the profile the first
table was made with (model/cluster_profiles.json, `cpu_scale` fitted to the sustained rate: the
old model, shown as an ablation), the constant guess (the first campaign's measured sustained
throughput of the calibration configuration) and the rule the test is judged by. The file is
committed before the campaign is measured; `predict` refuses to refit anything.

`predict` predicts every configuration of <heldout>/configs.jsonl with both frozen profiles
(the same bisection as the measurement; a `-tab<N>` configuration's trace is the calibration
probe's write-sets with their tables folded onto sbtest1..N, as sysbench spreads its statements
over N tables) and writes <heldout>/fidelity.md and fidelity.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace

import msgspec

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from commitsched.certification_throughput import (PROFILES_PATH, ClusterConfig,  # noqa: E402
                                                  ClusterProfile, sustained)
from commitsched.trace import load_trace  # noqa: E402
from galera_fit import (SECONDS, WARMUP, counter_deltas, fit_scale, load,  # noqa: E402
                        read_profile, rounds, scaled)
from galera_measure import parse_config  # noqa: E402

CALIB_DIR = "traces/calibration/galera"
HELDOUT_DIR = "traces/calibration/galera/heldout"
CALIBRATE = "t2-fc16-durable"
RULE = ("over the new configurations (the calibration configuration's re-measurement excluded), "
        "the model's median |error| on the sustained throughput is at most 25% and at most half "
        "the constant guess's (the first campaign's measured sustained throughput of the "
        "calibration configuration for every configuration)")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def config_of(name: str) -> ClusterConfig:
    c = parse_config(name)
    return ClusterConfig(flavor="galera", members=3, writers=(0,), clients=32,
                         workers=c["slave_threads"], durable=c["durability"] == "durable",
                         fc_limit=c["fc_limit"], fc_factor=c["fc_factor"])


def fold_tables(txns, tables: int):
    """The write-sets of a run on 4 sysbench tables as they would be on `tables`: table k goes
    to sbtest((k - 1) % tables + 1), row ids unchanged (sysbench draws them the same way)."""
    if tables == 4:
        return txns
    out = []
    for t in txns:
        keys = []
        for k in t.writes:
            head, rest = k.split("/", 1)
            db, table = head.split(".", 1)
            if table.startswith("sbtest") and table[6:].isdigit():
                table = f"sbtest{(int(table[6:]) - 1) % tables + 1}"
            keys.append(f"{db}.{table}/{rest}")
        out.append(msgspec.structs.replace(t, writes=tuple(dict.fromkeys(keys))))
    return out


def cmd_preregister(a) -> int:
    out = os.path.join(a.heldout, "preregistered.json")
    if os.path.exists(out) and not a.force:
        raise SystemExit(f"galera_heldout: {out} exists: the pre-registration is not redone "
                         f"(--force to overwrite it before any held-out measurement)")
    steps, configs, fsync = load(a.calib)
    counter_deltas(steps)
    txns = load_trace(os.path.join(a.calib, f"probe_{CALIBRATE}.jsonl.gz")).txns
    prof, _ = read_profile(steps, configs, fsync, CALIBRATE)
    cal = rounds(configs)[CALIBRATE]
    unthrottled = statistics.mean(r["tps_unthrottled"] for r in cal)
    constant = statistics.mean(r["sustained"] for r in cal)
    log(f"fitting cpu_scale to {CALIBRATE}'s unthrottled throughput {unthrottled:.1f} tps")
    k = fit_scale(txns, prof, config_of(CALIBRATE), unthrottled, log, "unthrottled")
    model = replace(scaled(prof, k), name="galera-2core-unthrottled",
                    provenance=prof.provenance.replace("cpu_scale fitted on it alone",
                                                       "cpu_scale fitted to its unthrottled "
                                                       "probes alone"),
                    fitted_from={**prof.fitted_from, "cpu_scale": k,
                                 "cpu_scale_fitted_to": f"unthrottled {unthrottled:.1f} tps "
                                                        f"(mean of probes)"})
    old = ClusterProfile(**json.load(open(a.profiles))["profiles"][0])
    os.makedirs(a.heldout, exist_ok=True)
    doc = {"preregistered_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
           "calibration": {"dir": a.calib, "config": CALIBRATE,
                           "unthrottled_mean": round(unthrottled, 1),
                           "sustained_mean": round(constant, 1)},
           "model": model.to_json(),
           "old_model": old.to_json(),
           "constant_guess": round(constant, 1),
           "simulation": {"seconds": SECONDS, "warmup": WARMUP},
           "planned_configs": a.planned.split(","),
           "rule": RULE}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    log(f"wrote {out}: cpu_scale {k} (old model {old.fitted_from.get('cpu_scale')})")
    return 0


def cmd_predict(a) -> int:
    pre = json.load(open(os.path.join(a.heldout, "preregistered.json")))
    model, old = ClusterProfile(**pre["model"]), ClusterProfile(**pre["old_model"])
    constant = pre["constant_guess"]
    txns = load_trace(os.path.join(a.calib, f"probe_{CALIBRATE}.jsonl.gz")).txns
    configs = [json.loads(x) for x in open(os.path.join(a.heldout, "configs.jsonl"))]
    today = [r["sustained"] for r in configs if r["name"] == CALIBRATE]
    rows = []
    for name, rs in rounds(configs).items():
        cfg = parse_config(name)
        tx = fold_tables(txns, cfg["tables"])
        m = statistics.mean(r["sustained"] for r in rs)
        row = {"config": name, "measured": round(m, 1),
               "rounds": [round(r["sustained"], 1) for r in rs],
               "unthrottled_measured": round(statistics.mean(r["tps_unthrottled"] for r in rs), 1),
               "calibration": name == CALIBRATE, "constant": constant,
               "constant_error": round((constant - m) / m, 4)}
        for tag, prof in (("model", model), ("old_model", old)):
            p = sustained(tx, config_of(name), prof, seconds=pre["simulation"]["seconds"],
                          warmup=pre["simulation"]["warmup"])
            row[tag] = round(p.sustained, 1)
            row[f"{tag}_error"] = round((p.sustained - m) / m, 4)
            row[f"{tag}_unthrottled"] = round(p.unthrottled, 1)
        if today:
            row["constant_today"] = round(statistics.mean(today), 1)
            row["constant_today_error"] = round((row["constant_today"] - m) / m, 4)
        rows.append(row)
        log(f"{name}: measured {m:.0f}, model {row['model']:.0f} ({row['model_error']:+.1%}), "
            f"old {row['old_model']:.0f} ({row['old_model_error']:+.1%}), constant "
            f"{row['constant_error']:+.1%}")
    with open(os.path.join(a.heldout, "fidelity.json"), "w") as f:
        json.dump({"preregistered": pre["preregistered_utc"], "rule": pre["rule"],
                   "rows": rows}, f, indent=1)
        f.write("\n")
    text = fidelity_md(pre, rows)
    with open(os.path.join(a.heldout, "fidelity.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def fidelity_md(pre: dict, rows: list[dict]) -> str:
    held = [r for r in rows if not r["calibration"]]
    med = lambda key, rs: statistics.median(abs(r[key]) for r in rs) if rs else float("nan")
    m, c, o = med("model_error", held), med("constant_error", held), med("old_model_error", held)
    met = m <= 0.25 and m <= 0.5 * c
    has_today = any("constant_today" in r for r in rows)
    lines = [f"<!-- generated by traces/record/galera_heldout.py predict -->",
             f"Pre-registered {pre['preregistered_utc']} UTC (preregistered.json): the model "
             f"`{pre['model']['name']}` (cpu_scale {pre['model']['fitted_from']['cpu_scale']}, "
             f"fitted to `{pre['calibration']['config']}`'s unthrottled probes of the first "
             f"campaign); the old model `{pre['old_model']['name']}` (cpu_scale "
             f"{pre['old_model']['fitted_from']['cpu_scale']}, fitted to its sustained rate) "
             f"as the ablation; the constant guess {pre['constant_guess']:.0f} tps (the first "
             f"campaign's sustained throughput of the calibration configuration).", "",
             "| configuration | measured sustained (each round) | model | error | constant "
             "guess | its error | old model | its error |"
             + (" today's calibration as the constant: error |" if has_today else "")
             + " unthrottled measured / model |",
             "|---|---|---|---|---|---|---|---|" + ("---|" if has_today else "") + "---|"]
    for r in rows:
        tag = " (calibration, re-measured)" if r["calibration"] else ""
        each = ", ".join(f"{x:.0f}" for x in r["rounds"])
        today = (f" {r['constant_today_error']:+.1%} |" if "constant_today" in r else
                 (" |" if has_today else ""))
        lines.append(f"| `{r['config']}`{tag} | {r['measured']:.0f} ({each}) | "
                     f"{r['model']:.0f} | {r['model_error']:+.1%} | {r['constant']:.0f} | "
                     f"{r['constant_error']:+.1%} | {r['old_model']:.0f} | "
                     f"{r['old_model_error']:+.1%} |{today} {r['unthrottled_measured']:.0f} / "
                     f"{r['model_unthrottled']:.0f} |")
    lines += ["", f"Held out ({len(held)} new configurations): model median |error| {m:.1%}, "
              f"constant guess {c:.1%}, old model {o:.1%}"
              + (f", today's calibration as the constant {med('constant_today_error', held):.1%}"
                 if has_today else "")
              + f". Issue 28's target (pre-registered rule: {pre['rule']}): "
              f"{'met' if met else 'not met'}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("preregister", help="fit and freeze the profiles before measuring")
    r.add_argument("--planned", required=True, help="the configurations to be measured")
    r.add_argument("--force", action="store_true")
    q = sub.add_parser("predict", help="predict the held-out campaign with the frozen profiles")
    for s in (r, q):
        s.add_argument("--calib", default=CALIB_DIR)
        s.add_argument("--heldout", default=HELDOUT_DIR)
    r.add_argument("--profiles", default=PROFILES_PATH)
    a = p.parse_args(argv)
    return {"preregister": cmd_preregister, "predict": cmd_predict}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
