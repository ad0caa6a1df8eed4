"""How well the machine profiles predict real replicas: predicted against measured speedups, with
the trivial baselines and one ablation row per apply-pipeline mechanism beside the model.

    python traces/record/fidelity.py report            # the tables (make fidelity, ~2 min)
    python traces/record/fidelity.py fit [--quick]     # refit replica16 (+ its cross-validation
                                                       # folds) and the 2-core profiles, then report

Two machines:
- `replica16` (traces/calibration/replica16/, from shared/replica16): a training set: the profile's
  pipeline terms are fitted on its durable runs (its relaxed parallel runs are held out by
  durability). Its honest check is the cross-validation column: the pipeline terms fitted on one
  workload predict the other (whose serial apply rate is given, since one workload cannot
  separate the per-transaction and per-event execution costs).
- the project's 2-core VM (traces/calibration/oltp_*): the profile is fitted from the serial and
  fit-only runs of each folder, the thread growth and wake-up latency transferred from
  replica16; none of the predicted configurations is used. And the same VM on workloads no fit
  has seen (traces/calibration/bulk_split_quiet, the split check's runs), predicted by the
  stored profile, as a user gets it.

Error of a prediction = predicted / measured median speedup - 1. Baselines: `constant`, the
median measured speedup of the machine's parallel configurations (per durability on the 2-core
VM; a guess that needs the answers); `previous`, the profiles this project shipped before this model (durable-mariadb, with
the machine's cores).
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import sys
from dataclasses import fields, replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import calib_fit  # noqa: E402
import calib_report  # noqa: E402
import fit_machine as fm  # noqa: E402
import replica16 as r16  # noqa: E402
from commitsched.profiles import FITTED_PATH, Profile, load_fitted  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
CAL = os.path.join(REPO, "traces", "calibration")
TWO_CORE = ("oltp_read_write_t64", "oltp_update_index_t48")
R16_FIT = os.path.join(r16.FOLDER, "fit.json")
PREVIOUS = os.path.join(CAL, "previous_profiles.json")
OUT_MD = os.path.join(CAL, "fidelity.md")
DOC = os.path.join(REPO, "docs", "calibration.md")
BEGIN, END = "<!-- fidelity tables: begin (make fidelity) -->", "<!-- fidelity tables: end -->"

# One row per mechanism: the model with that mechanism's terms at zero (the execution cost
# solved again so the serial replay still matches), nothing refitted.
ABLATIONS = {
    "driver per event": dict(dispatch_event=0.0, dispatch_thread=0.0),
    "driver contention per thread": dict(dispatch_thread=0.0),
    "wake-up latency": dict(wakeup=0.0),
    "leader's work per byte": dict(commit_byte=0.0),
    # (for a profile measured without the replica's binlog only: the binlog's group commit and
    # its leader instead of the chain of one-phase commits, with no binlog sync added)
    "commits handed on one at a time (binlog group commit instead)":
        dict(log_replica_updates=True, sync=0.0),
    "CPU growth with threads": dict(coordination_thread=0.0),
    "shared-lock wait per running worker": dict(shared_lock_thread=0.0),
    "parallel-mode CPU (all)": dict(coordination=0.0, coordination_event=0.0,
                                    coordination_thread=0.0),
    "one disk for both logs": dict(shared_disk=False),
    # the redo flush's CPU (the O_DIRECT log write and fdatasync on the committing thread) counted
    # as execution instead, as the profile before the relaxed runs did: a relaxed replica then
    # keeps paying it
    "the flush's CPU leaves with the flush (counted as execution instead)":
        lambda p: dict(commit_default=p.commit_default - p.commit_cpu, commit_cpu=0.0),
    "worker hand-off wait per event": dict(handoff_event=0.0),
    "cores as a limit": dict(cores=None),
    "per-core run queues (one shared queue instead)": dict(per_core_queues=False),
}


def ablation_applies(model: Profile, off, resolved: bool = True) -> bool:
    """An ablation of the binlog-less commit chain means nothing for a replica with its binlog;
    moving the flush's CPU into the execution means something only where the execution is solved
    again from the serial applies (`resolved`: replica16's rows; the 2-core rows refit nothing)."""
    if callable(off):
        return resolved
    return not (off.get("log_replica_updates") and model.log_replica_updates)


def profile_from_dict(d: dict) -> Profile:
    names = {f.name for f in fields(Profile)}
    kw = {k: v for k, v in d.items() if k in names}
    if "band" in kw:
        kw["band"] = tuple(kw["band"])
    return Profile(**kw)


def _err(pred: float, meas: float) -> float:
    return pred / meas - 1.0


def summary(rows: list[dict], key: str) -> dict:
    """Median |error| and the share inside the measured [min, max] of the predictions `key`."""
    errs = [abs(_err(r[key], r["median"])) for r in rows if r.get(key) is not None]
    inside = [r["min"] - 1e-9 <= r[key] <= r["max"] + 1e-9 for r in rows if r.get(key) is not None]
    if not errs:
        return {"median_abs_error": None, "inside": None, "n": 0}
    return {"median_abs_error": statistics.median(errs), "inside": sum(inside) / len(inside),
            "n": len(errs)}


def best_w_check(rows: list[dict], key: str, group=("workload", "mode")) -> list[dict]:
    """Per workload x mode: the thread count the model would pick (its best predicted speedup)
    and whether its measured speedup is within 10% of the measured best."""
    out = []
    for g in sorted({tuple(r[k] for k in group) for r in rows}):
        sub = [r for r in rows if tuple(r[k] for k in group) == g]
        pick = max(sub, key=lambda r: (round(r[key], 6), -r["threads"]))
        best = max(r["median"] for r in sub)
        out.append({"group": g, "picked": pick["threads"], "measured_at_pick": pick["median"],
                    "measured_best": best, "ok": pick["median"] >= 0.9 * best})
    return out


# ---------------------------------------------------------------- replica16

R16_SETTINGS = ("durable", "relaxed")
R16_SETTING_TEXT = {"durable": "sync_binlog=1, innodb_flush_log_at_trx_commit=1, 6 rounds",
                    "relaxed": "sync_binlog=0, innodb_flush_log_at_trx_commit=2, 3 rounds"}
# The settings whose parallel runs the searches fit (the full profile and every fold). Durable
# only: a relaxed prediction is then the durable fit with the flush gone (its wait and its CPU,
# `commit_cpu`, which the serial applies of both settings measure) and the relaxed serial rate
# given, nothing searched on a relaxed parallel run. Searched on both settings as well, the
# folds held out worse at both (2026-11-27, docs/calibration.md: the relaxed runs' 3 rounds).
R16_SEARCHED = ("durable",)
R16_TABLE_ROLE = {"durable": "training set",
                  "relaxed": "its parallel runs fitted on by nothing: held out by durability"}
# The replica's serial stages, the hypothesis for where each workload stops scaling: the driver
# (reads, parses and queues every event alone: `dispatch_cost`) and the in-order commit's
# hand-off (`member_cost` + `wakeup`, one transaction after another). Their terms, taken out of
# the folds' search for the held-out ablation (the worker's hand-off wait, tied to the driver's
# pace, goes with them).
DRIVER_TERMS = ("dispatch_event", "dispatch_thread")
# The worker's parallel-mode CPU on its path is CPU, so the counters measure it: per binlog event
# (`coordination_event`, the intercept at one thread of `r16.cpu_growth`, the training runs'
# counters), not searched per transaction (`coordination`, 0). Searched, it came out at 53 µs a
# transaction for both workloads, where the counters allow about 19 for update_index_48
# (docs/calibration.md, "The CPU parallel mode adds").
R16_COUNTED = ("coordination",)
R16_TERMS = tuple(t for t in fm.TERMS if t not in R16_COUNTED)
# The replica16 profile as shipped before the relaxed runs were measured (fitted on the durable
# runs alone; a relaxed prediction dropped its redo flush): the relaxed table's "before" column
R16_BEFORE = os.path.join(r16.FOLDER, "before_relaxed_runs.json")
# The fit before the worker's parallel-mode CPU was counted (searched per transaction as
# `coordination`, the same searches otherwise; 2026-11-27): the counted CPU's ablation, which a
# refit needs (its full profile and its folds)
R16_CPU_SEARCHED = os.path.join(r16.FOLDER, "fit_cpu_searched.json")


def r16_measured() -> dict[tuple, dict]:
    """(durability, workload, mode, threads) -> the measured speedups, both settings."""
    return {(d,) + k: v for d in R16_SETTINGS for k, v in r16.measured(durability=d).items()}


def r16_workloads(limit: int | None) -> dict[str, "fm.Workload"]:
    """Each replica16 workload with its serial apply at both durabilities."""
    serial = {d: r16.serial_seconds(durability=d) for d in R16_SETTINGS}
    return {w: fm.Workload(w, r16.trace_path(w), {d: serial[d][w] for d in R16_SETTINGS},
                           limit=limit) for w in r16.WORKLOADS}


def _ablated(model: Profile, off) -> Profile:
    """The model with one mechanism off (`off`: the fields to set, or a function of the model
    giving them)."""
    return replace(model, **(off(model) if callable(off) else off))


def replica16_rows(fit_json: dict, full: bool = True, ablations: bool = True,
                   progress=print, durability: str = "durable") -> list[dict]:
    """Predicted against measured for the replica at one durability setting: the fitted profile
    (one for both settings, `Profile.with_durability`), the cross-validation folds (each fitted
    on the other workload's runs (`R16_SEARCHED`); the predicted workload's serial apply at this
    setting given), the same folds refitted without the driver's terms (`cv_without_driver`, when
    the fit stored them), the baselines and one ablation row per mechanism."""
    meas = r16.measured(durability=durability)
    limit = None if full else 2000
    workloads = r16_workloads(limit)
    model = profile_from_dict(fit_json["profile"])
    folds = {w: profile_from_dict(p) for w, p in fit_json.get("cv", {}).items()}
    no_driver = {w: profile_from_dict(p)
                 for w, p in fit_json.get("cv_without_driver", {}).items()}
    previous = _previous_profile(cores=16, durability=durability)
    before = _before_profile() if durability == "relaxed" else None
    searched = _stored_fit(R16_CPU_SEARCHED)
    constant = statistics.median(m["median"] for m in meas.values())
    # the constant a user could know without this workload's answers: the other workload's
    other_constant = {w: statistics.median(m["median"] for (o, _, _), m in meas.items() if o != w)
                      for w in workloads}
    rows = []
    for (w, mode, n), m in sorted(meas.items()):
        progress(f"  replica16 {durability} {w} {mode} W={n}")
        wl = workloads[w]
        given = wl.only(durability)
        row = {"machine": "replica16", "durability": durability, "workload": w, "mode": mode,
               "threads": n, "median": m["median"], "min": m["min"], "max": m["max"],
               "rounds": len(m["speedups"]),
               "model": fm.predict(wl, model.with_durability(durability), mode, n),
               "constant": constant, "constant_other": other_constant[w],
               "previous": fm.predict(wl, previous, mode, n)}
        if before is not None:
            row["before"] = fm.predict(wl, before.with_durability(durability), mode, n)
        if w in folds:
            # the fold fitted on the other workload, its execution cost from this one's serial
            # rate at this setting (clamped at no execution when the fold's other terms alone
            # exceed it: the held-out prediction is then what the fold says)
            fold = folds[w].with_durability(durability)
            row["cv"] = fm.predict(given, fm.with_exec(fold, [given], clamp=True), mode, n)
        if searched:
            row["cpu_searched"] = fm.predict(wl, profile_from_dict(
                searched["profile"]).with_durability(durability), mode, n)
            fold = profile_from_dict(searched["cv"][w]).with_durability(durability)
            row["cv_cpu_searched"] = fm.predict(given, fm.with_exec(fold, [given], clamp=True),
                                                mode, n)
        if w in no_driver:
            fold = no_driver[w].with_durability(durability)
            row["cv_without_driver"] = fm.predict(given, fm.with_exec(fold, [given], clamp=True),
                                                  mode, n)
        if ablations:
            for name, off in ABLATIONS.items():
                if not ablation_applies(model, off):
                    continue
                prof = fm.with_exec(_ablated(model, off), list(workloads.values()))
                row["without " + name] = (fm.predict(wl, prof.with_durability(durability), mode, n)
                                          if prof else None)
        rows.append(row)
    return rows


def noise_floor(durability: str, draws: int = 4000, seed: int = 27) -> dict:
    """How closely these measurements can be predicted at all, from their round-to-round spread
    (each run's speedup over the same round's serial apply, as `r16.measured`):
    - `loro`: leave one round out: the median |error| of the other rounds' median speedup as a
      prediction of one round's, over every run of every configuration;
    - `sigma`: the run-to-run spread of the log speedup, robustly: the median |difference| of two
      runs of one configuration / (sqrt 2 x 0.6745), the standard deviation a normal spread
      with that median would have (not pulled up by the one-in-ten stalls, as the plain standard
      deviation is);
    - `floor`: the median |error| a perfect-in-expectation model (one that predicts every
      configuration's true speedup) scores against medians of as many rounds as were measured:
      each run's log error drawn from the pooled pairwise differences / sqrt 2 (nonparametric,
      the same spread), `draws` times over the 16 configurations (seeded: deterministic), with
      its 10th and 90th percentile;
    - `single_run`: the median of single runs' |deviation| from their configuration's median
      (shared/replica16's README figure; with 3 rounds a third of the runs are that median and
      count 0, so it understates the spread)."""
    import itertools
    import random
    speedups = [m["speedups"] for m in r16.measured(durability=durability).values()]
    logs = {i: [math.log(s) for s in v] for i, v in enumerate(speedups)}
    rounds = min(len(v) for v in speedups)
    loro = [abs(statistics.median(v[:i] + v[i + 1:]) / s - 1)
            for v in speedups for i, s in enumerate(v)]
    diffs = [(a - b) / math.sqrt(2) for v in logs.values()
             for a, b in itertools.permutations(v, 2)]
    rng = random.Random(seed)
    medians = sorted(statistics.median(
        abs(math.exp(-statistics.median(rng.choice(diffs) for _ in range(rounds))) - 1)
        for _ in logs) for _ in range(draws))
    q = statistics.quantiles(medians, n=10, method="inclusive")
    single = [abs(math.exp(x - statistics.median(v)) - 1) for v in logs.values() for x in v]
    return {"durability": durability, "rounds": rounds, "configurations": len(logs),
            "loro": statistics.median(loro),
            "sigma": statistics.median(abs(d) for d in diffs) / 0.6745,
            "floor": statistics.median(medians), "floor_band": (q[0], q[-1]),
            "single_run": statistics.median(single)}


def noise_floor_table(settings=R16_SETTINGS) -> list[str]:
    out = ["| durability | rounds | leave one round out: median error | run-to-run spread of "
           "the log speedup (robust sd) | a perfect model against medians of the rounds: median "
           "error [10th, 90th pct] | single runs against their configuration's median |",
           "|---|---|---|---|---|---|"]
    for d in settings:
        f = noise_floor(d)
        lo, hi = f["floor_band"]
        out.append(f"| {d} | {f['rounds']} | {100 * f['loro']:.0f}% | {f['sigma']:.2f} | "
                   f"{100 * f['floor']:.0f}% [{100 * lo:.0f}%, {100 * hi:.0f}%] | "
                   f"{100 * f['single_run']:.0f}% |")
    return out


# CPU steal (% of the machine's CPU time) at and above which a replica16 run is taken as one the
# hypervisor took cores from: the durable rounds (the training set) put every such run +32%
# (median) off its configuration's median apply time and the others -1% (`r16.steal_effect`).
STEAL_CUT = 0.5
STEAL_CUTS = (2.0, 1.0, STEAL_CUT)


def on_steal_free_rounds(rows: list[dict], durability: str, cut: float) -> list[dict]:
    """The same predictions against the medians of the runs with steal below `cut`
    (`r16.measured(steal_below=)`), the constant guesses taken again from those medians."""
    meas = r16.measured(durability=durability, steal_below=cut)
    kept = [dict(r, median=m["median"], min=m["min"], max=m["max"], rounds=len(m["speedups"]))
            for r in rows if (m := meas.get((r["workload"], r["mode"], r["threads"])))]
    constant = statistics.median(r["median"] for r in kept)
    for r in kept:
        r["constant"] = constant
        r["constant_other"] = statistics.median(o["median"] for o in kept
                                                if o["workload"] != r["workload"])
    return kept


STEAL_KEYS = (("model", "model"), ("cv", "model, other workload's fit (CV)"),
              ("constant", "baseline: constant"),
              ("constant_other", "baseline: constant of the other workload"))


def steal_table(r16_rows: dict[str, list[dict]]) -> list[str]:
    """Per durability: the runs at and above each steal cut, how far off they lie, and the
    summary (median |error|) on every round against the rounds below the cut."""
    out = ["| durability | runs kept: steal below | runs left out | off their configuration's "
           "median apply time: left out (kept) | configurations | "
           + " | ".join(t for _, t in STEAL_KEYS) + " |",
           "|---|---|---|---|---|" + "---|" * len(STEAL_KEYS)]
    for durability, rows in r16_rows.items():
        all_runs = len(r16.load_rows(durability=durability))
        for cut in (None, *STEAL_CUTS):
            if cut is None:
                kept, label, left, dev = rows, "every run", "0", "-"
            else:
                kept = on_steal_free_rounds(rows, durability, cut)
                e = r16.steal_effect(durability, cut)
                label = f"{cut:g}%" + (" (the cut)" if cut == STEAL_CUT else "")
                left = f"{e['runs_at_or_above']} of {all_runs}"
                dev = (f"{100 * e['deviation_at_or_above']:+.0f}% "
                       f"({100 * e['deviation_below']:+.0f}%)"
                       if e["runs_at_or_above"] else "-")
            cells = []
            for key, _ in STEAL_KEYS:
                m = summary(kept, key)["median_abs_error"]
                cells.append("-" if m is None else f"{100 * m:.0f}%")
            out.append(f"| {durability} | {label} | {left} | {dev} | {len(kept)} | "
                       + " | ".join(cells) + " |")
    return out


def model_cpu_us(workload: "fm.Workload", profile: Profile, mode: str, workers: int) -> float:
    """The CPU (µs per transaction) the model's parallel apply spends beyond its serial replay:
    what the replica's CPU counters measure as busy cores x apply time, less the serial apply's
    (the same terms as calib_report.predict's CPU: execution with the parallel-mode CPU, the
    driver, the leader's work, the contention CPU, the flushes' CPU)."""
    _, collect, _, _ = calib_report._model()
    p = profile
    txns = workload.txns
    runs, _ = collect(f"commit_id+mariadb_{mode}", txns, workers, p)
    flushes = len({r.ready for r in runs}) if p.commit_grouped else len(runs)
    groups = len({r.commit for r in runs}) if p.log_replica_updates else 0
    parallel = (sum(r.exec + p.dispatch_cost(r.txn, workers) + p.member_cost(r.txn)
                    + p.contention_cpu(r.txn, workers) for r in runs)
                + flushes * p.commit_cpu + groups * p.sync_cpu)
    serial = (sum(p.exec_cost(t) + p.dispatch_cost(t, 1) for t in txns)
              + len(txns) * (p.commit_cpu + (p.sync_cpu if p.log_replica_updates else 0.0)))
    return (parallel - serial) / len(txns)


def cpu_rows(fit_json: dict, full: bool = True, progress=print) -> list[dict]:
    """Per replica16 configuration and durability: the CPU parallel mode adds per transaction,
    measured (each run's busy cores x apply time / N less the same round's serial apply's:
    whole-machine counters, so the server's background threads cancel only on average) and the
    model's (`model_cpu_us`), the stored profile and the held-out fold. Fitted on these
    counters, durable runs only: the parallel-mode CPU per event at one thread and its growth
    with the thread count (`coordination_event`, `coordination_thread`)."""
    model = profile_from_dict(fit_json["profile"])
    folds = {w: profile_from_dict(p) for w, p in fit_json.get("cv", {}).items()}
    workloads = r16_workloads(None if full else 2000)
    rows = []
    for d in R16_SETTINGS:
        runs = r16.load_rows(durability=d)
        n = {w: wl.full_count for w, wl in workloads.items()}
        serial = {(r["workload"], r["round"]): r["cpu_busy_cores"] * r["seconds"]
                  for r in runs if r["mode"] == "serial"}
        extra: dict[tuple, list] = {}
        for r in runs:
            if r["mode"] != "serial" and (r["workload"], r["round"]) in serial:
                extra.setdefault((r["workload"], r["mode"], r["threads"]), []).append(
                    (r["cpu_busy_cores"] * r["seconds"] - serial[(r["workload"], r["round"])])
                    / n[r["workload"]] * 1e6)
        for (w, mode, threads), v in sorted(extra.items()):
            progress(f"  replica16 CPU {d} {w} {mode} W={threads}")
            given = workloads[w].only(d)
            fold = (fm.with_exec(folds[w].with_durability(d), [given], clamp=True)
                    if w in folds else None)
            rows.append({"durability": d, "workload": w, "mode": mode, "threads": threads,
                         "median": statistics.median(v), "min": min(v), "max": max(v),
                         "model": model_cpu_us(workloads[w], model.with_durability(d), mode,
                                               threads),
                         "cv": model_cpu_us(given, fold, mode, threads) if fold else None})
    return rows


def cpu_table(rows: list[dict]) -> list[str]:
    out = ["| durability | workload | mode | W | measured µs/txn median [min, max] | model | "
           "held-out fold |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cv = "-" if r["cv"] is None else f"{r['cv']:.0f}"
        out.append(f"| {r['durability']} | {r['workload']} | {r['mode']} | {r['threads']} | "
                   f"{r['median']:.0f} [{r['min']:.0f}, {r['max']:.0f}] | {r['model']:.0f} | "
                   f"{cv} |")
    out += ["", "| durability | workload | measured median over configurations | model | "
            "held-out fold |", "|---|---|---|---|---|"]
    for d in R16_SETTINGS:
        for w in r16.WORKLOADS:
            mine = [r for r in rows if (r["durability"], r["workload"]) == (d, w)]
            if mine:
                cv = [r["cv"] for r in mine if r["cv"] is not None]
                out.append(f"| {d} | {w} | {statistics.median(r['median'] for r in mine):.0f} | "
                           f"{statistics.median(r['model'] for r in mine):.0f} | "
                           + (f"{statistics.median(cv):.0f} |" if cv else "- |"))
    return out


def _previous_profile(cores: int | None, durability: str = "durable") -> Profile:
    with open(PREVIOUS) as f:
        p = {d["name"]: d for d in json.load(f)["profiles"]}[f"{durability}-mariadb"]
    p = profile_from_dict(p)
    return replace(p, cores=cores) if cores else p


def _stored_fit(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def _before_profile() -> Profile | None:
    """The replica16 profile fitted on the durable runs alone (the durable setting)."""
    try:
        with open(R16_BEFORE) as f:
            return profile_from_dict(json.load(f)["profile"])
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------- the 2-core VM

def _previous_two_core() -> dict[str, Profile]:
    with open(PREVIOUS) as f:
        return {p["name"]: profile_from_dict(p) for p in json.load(f)["profiles"]}


def _two_core_measured() -> dict[str, dict]:
    return {name: calib_report.measured(calib_fit.load_runs(os.path.join(CAL, name)))
            for name in TWO_CORE}


def two_core_constant(per_folder: dict[str, dict]) -> dict[str, float]:
    """One constant per durability (the stronger baseline: durable and relaxed differ by 2x):
    the median measured speedup of the calibration workloads' parallel configurations."""
    all_meas: dict[str, list] = {}
    for meas in per_folder.values():
        for (sync, mode, n), m in meas.items():
            if n > 0 and m["speedup"]:
                all_meas.setdefault(sync, []).append(statistics.median(m["speedup"]))
    return {sync: statistics.median(v) for sync, v in all_meas.items()}


def two_core_rows(progress=print, ablations: bool = True) -> list[dict]:
    rows = []
    prev = _previous_two_core()
    per_folder = _two_core_measured()
    constant = two_core_constant(per_folder)
    for name in TWO_CORE:
        folder = os.path.join(CAL, name)
        with open(os.path.join(folder, "fit.json")) as f:
            fitted = {p["name"]: profile_from_dict(p) for p in json.load(f)["profiles"]}
        _, _, _, load_trace = calib_report._model()
        trace = load_trace(os.path.join(folder, "trace.jsonl.gz"))
        for (sync, mode, n), m in sorted(per_folder[name].items()):
            if n == 0 or not m["speedup"]:
                continue
            progress(f"  2-core {name} {sync} {mode} W={n}")
            sp = m["speedup"]
            model = fitted["durable-mariadb"].with_durability(sync)
            row = {"machine": "2-core", "workload": name, "sync": sync, "mode": mode,
                   "threads": n, "median": statistics.median(sp), "min": min(sp),
                   "max": max(sp), "rounds": len(sp),
                   "model": calib_report.predict(trace, model, mode, n)["speedup"],
                   "constant": constant[sync],
                   "previous": calib_report.predict(trace, prev[f"{sync}-mariadb"], mode,
                                                    n)["speedup"]}
            if ablations:       # nothing refitted: the same profile with the terms at zero
                for what, off in ABLATIONS.items():
                    if not ablation_applies(model, off, resolved=False):
                        continue
                    row["without " + what] = calib_report.predict(
                        trace, _ablated(model, off), mode, n)["speedup"]
            rows.append(row)
    return rows


def transfer_rows(progress=print) -> list[dict]:
    """A check of transfer: the stored replica16 profile, relaxed (its fit used the relaxed
    runs of the 16-core machine), put on the 2-core VM's relaxed calibration runs as the
    replica there ran (2 cores, its own binlog on), against the 2-core profile fitted on that
    machine (`durable-mariadb --durability relaxed`) and the calibration's constant."""
    stored = {p.name: p for p in load_fitted()}
    if "replica16" not in stored:
        return []
    r16_relaxed = replace(stored["replica16"].with_durability("relaxed"), cores=2,
                          log_replica_updates=True)
    per_folder = _two_core_measured()
    constant = two_core_constant(per_folder)
    _, _, _, load_trace = calib_report._model()
    rows = []
    for name in TWO_CORE:
        folder = os.path.join(CAL, name)
        with open(os.path.join(folder, "fit.json")) as f:
            fitted = {p["name"]: profile_from_dict(p) for p in json.load(f)["profiles"]}
        trace = load_trace(os.path.join(folder, "trace.jsonl.gz"))
        for (sync, mode, n), m in sorted(per_folder[name].items()):
            if sync != "relaxed" or n == 0 or not m["speedup"]:
                continue
            progress(f"  transfer {name} {mode} W={n}")
            sp = m["speedup"]
            rows.append({"machine": "2-core", "workload": name, "sync": sync, "mode": mode,
                         "threads": n, "median": statistics.median(sp), "min": min(sp),
                         "max": max(sp), "rounds": len(sp),
                         "replica16": calib_report.predict(trace, r16_relaxed, mode, n)["speedup"],
                         "model": calib_report.predict(
                             trace, fitted["durable-mariadb"].with_durability("relaxed"), mode,
                             n)["speedup"],
                         "constant": constant[sync]})
    return rows


# Workloads measured on the 2-core VM that no fit has seen: the split check's relaxed replica
# (docs/blame.md), one transaction in 50 a 200-row UPDATE among single-row ones, as recorded
# (`whole`) and with the bulk ones cut in four (`split`); and a calibration of 10-row UPDATEs
# (`calibrate.py measure --workload bulk_updates`, every transaction one 10-row UPDATE)
OTHER = os.path.join(CAL, "bulk_split_quiet")
OTHERS = (OTHER, os.path.join(CAL, "other_bulk10_t32"))


def _other_workloads(folder: str) -> list[tuple[str, str, list]]:
    """(workload, trace path, its runs) of a folder: the split check's hold two workloads (a
    `workload` column), a calibration folder one (its trace.jsonl.gz)."""
    runs = calib_fit.load_runs(folder)
    if runs and "workload" in runs[0]:
        return [(w, os.path.join(folder, f"{w}.jsonl.gz"), [r for r in runs if r["workload"] == w])
                for w in sorted({r["workload"] for r in runs}, reverse=True)]   # whole, split
    return [(os.path.basename(folder), os.path.join(folder, "trace.jsonl.gz"), runs)]


def other_workload_rows(progress=print, folders=OTHERS) -> list[dict]:
    """The stored 2-core profile (what `--profile durable-mariadb` gives) on workloads no fit
    has seen, against the constant of the calibration workloads (which has not seen them
    either) and the previous model."""
    prev = _previous_two_core()
    constant = two_core_constant(_two_core_measured())
    stored = {p.name: p for p in load_fitted()}["durable-mariadb"]
    _, _, _, load_trace = calib_report._model()
    found = [(w, path, runs) for folder in folders if os.path.exists(folder)
             for w, path, runs in _other_workloads(folder)]
    rows = []
    for workload, path, mine in found:
        trace = load_trace(path)
        for (sync, mode, n), m in sorted(calib_report.measured(mine).items()):
            if n == 0 or not m["speedup"]:
                continue
            progress(f"  2-core {workload} {sync} {mode} W={n}")
            sp = m["speedup"]
            rows.append({"machine": "2-core", "workload": workload, "sync": sync, "mode": mode,
                         "threads": n, "median": statistics.median(sp), "min": min(sp),
                         "max": max(sp), "rounds": len(sp),
                         "model": calib_report.predict(trace, stored.with_durability(sync),
                                                       mode, n)["speedup"],
                         "constant": constant[sync],
                         "previous": calib_report.predict(trace, prev[f"{sync}-mariadb"], mode,
                                                          n)["speedup"]})
    return rows


# ---------------------------------------------------------------- tables

def _cell(r: dict, key: str) -> str:
    v = r.get(key)
    if v is None:
        return "-"
    inside = r["min"] - 1e-9 <= v <= r["max"] + 1e-9
    return f"{v:.2f} ({100 * _err(v, r['median']):+.0f}%{'' if inside else ' out'})"


TERM_ROWS = ("exec_default", "exec_event", "exec_row", "dispatch", "dispatch_event", "dispatch_thread",
             "commit_serial", "commit_byte", "wakeup", "coordination", "coordination_event",
             "coordination_thread", "shared_lock_thread", "sync", "sync_cpu", "commit_default", "commit_cpu",
             "background_cpu", "handoff_event", "shared_disk", "commit_grouped",
             "log_replica_updates", "cores", "per_core_queues")


def terms_table(profiles: list[Profile]) -> str:
    """Each machine profile's terms (µs) and what each was fitted from."""
    out = ["| term | " + " | ".join(f"`{p.name}`" for p in profiles) + " |",
           "|---|" + "---|" * len(profiles)]
    for t in TERM_ROWS:
        cells = []
        for p in profiles:
            v = getattr(p, t)
            how = p.fitted_from.get(t)
            if isinstance(v, bool):
                text = "on" if v else "off"
            else:
                text = "-" if v in (None, 0, 0.0) else (f"{v:.4g}" if isinstance(v, float)
                                                        else str(v))
            cells.append(text + (f" ({how})" if how and text != "-" else ""))
        out.append(f"| `{t}` | " + " | ".join(cells) + " |")
    return "\n".join(out)


def markdown(r16_rows: dict[str, list[dict]], two_rows: list[dict],
             other_rows: list[dict] = (), transfer: list[dict] = ()) -> str:
    out = ["# Fidelity: predicted against measured speedups", "",
           "Generated by `make fidelity` (traces/record/fidelity.py); every figure below is "
           "computed from the stored measurements, none typed. Cell: predicted speedup "
           "(error against the measured median; `out`: outside the measured min-max).", ""]
    stored = {p.name: p for p in load_fitted()}
    shown = [stored[n] for n in ("replica16", "durable-mariadb") if n in stored]
    if shown:
        out += ["## The machine profiles", "", terms_table(shown), ""]
    cols = [("model", "model"), ("cv", "model, other workload's fit (CV)"),
            ("constant", "baseline: constant"),
            ("constant_other", "baseline: constant of the other workload (held out)"),
            ("previous", "baseline: previous model")]
    for durability, rows in r16_rows.items():
        mine = cols + ([("before", "before: the durable-only fit, flush dropped")]
                       if any("before" in r for r in rows) else [])
        out += ([] if out[-1] == "" else [""]) + [
            f"## replica16: a real MariaDB 10.11 replica on 16 cores, {durability} "
            f"({R16_SETTING_TEXT[durability]}; {R16_TABLE_ROLE[durability]})", ""]
        out += _config_table(rows, ("workload", "mode"), mine)
        out += ["", _summary_table(rows, [(k, t) for k, t in mine]
                                   + [("cv_without_driver", "model, other workload's fit "
                                       "refitted without the driver's terms (CV)"),
                                      ("cpu_searched", "model with its parallel-mode CPU "
                                       "searched per transaction, not counted (refitted)"),
                                      ("cv_cpu_searched", "the same, other workload's fit "
                                       "(CV)")]
                                   + [("without " + a, "model without " + a) for a in ABLATIONS]),
                "", _best_w_lines(rows, ("workload", "mode"))]
    if r16_rows and os.path.exists(R16_FIT):
        with open(R16_FIT) as f:
            ceiling = ceiling_table(r16_rows, json.load(f))
        out += ["", "### replica16: where each workload stops scaling", "",
                "Per durability, the fastest configuration's time per transaction (serial apply "
                "/ speedup), measured and predicted, beside the replica's two serial stages at "
                "that thread count as the profile and the held-out fold (fitted on the other "
                "workload) have them: the driver (every event read, parsed and queued by one "
                "thread) and the in-order commit's hand-off (its CPU and the successor's "
                "wake-up). µs per transaction.", "", *ceiling]
        with open(R16_FIT) as f:
            cpu = cpu_table(cpu_rows(json.load(f), progress=lambda s: None))
        out += ["", "### replica16: the CPU parallel mode adds, measured against the model", "",
                "Per transaction, µs: each parallel run's CPU (the machine's busy cores x apply "
                "time / N, whole-machine counters) less the same round's serial apply's, "
                "median [min, max] over the rounds; the model's (its parallel apply's CPU less "
                "its serial replay's: the worker's parallel-mode CPU, the driver's growth with "
                "threads, the contention CPU off the path, the grouped flushes' CPU). The "
                "profile takes from these counters, durable runs only, the parallel-mode CPU "
                "per event at one thread and its growth per extra thread; the relaxed rows "
                "are fitted on by nothing.", "", *cpu]
        out += ["", "### replica16: the noise floor", "",
                "How closely these measurements can be predicted at all "
                "(`fidelity.noise_floor`): each round predicted by the other rounds' median "
                "speedup; the run-to-run spread of the log speedup; and the median error that "
                "a model predicting every configuration's true speedup would score against the "
                "medians of as many rounds (each run's error drawn from the measured pairwise "
                "differences, 4,000 draws of the 16 configurations, seeded).", "",
                *noise_floor_table()]
        e = r16.steal_effect("durable", STEAL_CUT)
        out += ["", "### replica16: the runs the hypervisor took cores from", "",
                "replica16 is a KVM guest: `cpu_steal_pct` is the share of its CPU time the "
                "host gave to someone else during the apply. In the durable rounds (the "
                f"training set) the {e['runs_at_or_above']} runs at or above {STEAL_CUT:g}% "
                f"steal lie {100 * e['deviation_at_or_above']:+.0f}% (median) off their "
                "configuration's median apply time and the other "
                f"{e['runs_below']} {100 * e['deviation_below']:+.0f}%: a stolen "
                "core holds up every worker waiting on the thread it ran (the in-order commit), "
                "more so the more threads wait. Below, each summary again on the runs below "
                "a cut (a parallel run whose round's serial apply is left out taken over the "
                "median of the serial applies kept; the constants taken again from the kept "
                "medians). The tables above, and the issue's bar, use every run; this says how "
                "much of the held-out error is the host's.", "", *steal_table(r16_rows)]
    cols2 = [("model", "model"), ("constant", "baseline: constant"),
             ("previous", "baseline: previous model")]
    out += ["", "## The project's 2-core VM (predicted configurations never used in the fit)", ""]
    out += _config_table(two_rows, ("workload", "sync", "mode"), cols2)
    out += ["", _summary_table(two_rows, cols2 + [("without " + a, "model without " + a)
                                                  for a in ABLATIONS]),
            "", _summary_table([r for r in two_rows if r["sync"] == "durable"], cols2,
                               title="durable only"),
            "", _summary_table([r for r in two_rows if r["sync"] == "relaxed"], cols2,
                               title="relaxed only"),
            "", _best_w_lines(two_rows, ("workload", "sync", "mode"))]
    if transfer:
        cols3 = [("replica16", "replica16's relaxed profile (2 cores, binlog on)"),
                 ("model", "the 2-core profile (relaxed)"), ("constant", "baseline: constant")]
        out += ["", "### Transfer: replica16's relaxed profile on the 2-core VM's relaxed runs", "",
                "The profile fitted on the 16-core machine (both settings), relaxed, with the "
                "2-core replica's settings (2 cores, its own binlog on) and nothing else changed, "
                "against the profile fitted on this machine and the calibration's constant (in "
                "sample):", ""]
        out += _config_table(transfer, ("workload", "mode"), cols3)
        out += ["", _summary_table(transfer, cols3),
                "", _best_w_lines_for(transfer, ("workload", "mode"), "replica16")]
    relaxed = relaxed_threads_table()
    if relaxed:
        out += ["", "### The relaxed 2-core apply by thread count (measured, conservative)", "",
                "Medians per transaction over the rounds: apply time, the replica process's CPU, "
                "the cores it kept busy (CPU / time), the times the driver and its workers blocked "
                "(voluntary context switches) and their time runnable without a core (run-queue "
                "delay, `/proc/PID/task/*/schedstat`). `fit-only`: the calibration's fit runs and "
                "`traces/calibration/relaxed_growth/` (the same workloads recorded again, W = 1, "
                "3, 6); `predicted`: the configurations above. `model`: the shipped profile's "
                "relaxed conservative apply of the calibration's recording at that W, and the "
                "cores its simulated CPU keeps busy (its CPU / its apply time; none of these "
                "counters is fitted).", "", *relaxed]
    if other_rows:
        out += ["", "## The 2-core VM on workloads no fit has seen", "",
                "Measurements no fit has used, predicted by the stored `durable-mariadb` profile "
                "as a user gets it (its execution per row changed fitted on the two calibration "
                "workloads; `--durability` per row), beside the calibration workloads' constant "
                "(which has not seen them either) and the previous model:", "",
                "- `other_bulk10_t32` (`traces/calibration/other_bulk10_t32/`, recorded for "
                "this check): every transaction one 10-row UPDATE, 32 clients, 10,000 "
                "transactions; durable and relaxed, 2-16 threads, 5 rounds, quiet host.",
                "- `whole` and `split` (`traces/calibration/bulk_split_quiet/`, the split "
                "check's measurements, docs/blame.md): 20,000 transactions, one in 50 a 200-row "
                "UPDATE among single-row ones, as recorded and with the bulk UPDATEs cut into "
                "four statements; a relaxed replica (its servers in /dev/shm, which a relaxed "
                "replica's commits never wait on), 30 rounds, quiet host.", ""]
        out += _config_table(other_rows, ("workload", "sync", "mode"), cols2)
        out += ["", _summary_table(other_rows, cols2)]
        for sync in ("durable", "relaxed"):
            mine = [r for r in other_rows if r["sync"] == sync]
            if mine:
                out += ["", _summary_table(mine, cols2, title=f"{sync} only")]
        out += ["", _best_w_lines(other_rows, ("workload", "sync", "mode"))]
    return "\n".join(out) + "\n"


GROWTH = os.path.join(CAL, "relaxed_growth")


def relaxed_threads_table() -> list[str]:
    """The relaxed conservative applies of the 2-core folders, per thread count (with the
    run-queue columns only where the runs recorded them)."""
    lines = ["| workload | W | runs | µs per transaction | CPU µs per transaction | busy cores "
             "| blocking waits per transaction | run-queue delay µs per transaction "
             "| model: µs per transaction | model: busy cores |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    found = False
    for name in TWO_CORE:
        model_at = _relaxed_model(name)
        per_w: dict[int, list] = {}
        for folder, kind in ((os.path.join(CAL, name), None), (os.path.join(GROWTH, name),
                                                               "fit-only")):
            if not os.path.exists(os.path.join(folder, "runs.csv")):
                continue
            n = calib_fit.load_meta(folder)["trace"]["transactions"]
            for r in calib_fit.load_runs(folder):
                if r["sync"] != "relaxed" or r["mode"] not in ("-", "conservative"):
                    continue
                if str(r.get("repeated")) == "True" or not r.get("new_thread_waits"):
                    continue
                w = int(r["threads"])
                label = kind or ("fit-only" if r.get("purpose") == "fit"
                                 else "baseline" if w == 0 else "predicted")
                per_w.setdefault(w, []).append((label, n, r))
        for w in sorted(per_w):
            found = True
            runs = per_w[w]
            med = lambda f: statistics.median(float(r[f]) * 1e6 / n for _, n, r in runs)
            busy = statistics.median(float(r["replica_cpu_s"]) / float(r["apply_s"])
                                     for _, _, r in runs)
            waits = statistics.median(float(r["new_thread_waits"]) / n for _, n, r in runs)
            kinds = sorted({k for k, _, _ in runs})
            m_us, m_busy = model_at(w)
            lines.append(f"| {name} | {w or 'serial'} | {len(runs)} ({', '.join(kinds)}) | "
                         f"{med('apply_s'):.1f} | {med('replica_cpu_s'):.1f} | {busy:.2f} | "
                         f"{waits:.2f} | {med('new_thread_run_delay_s'):.1f} | {m_us:.1f} | "
                         f"{'-' if m_busy is None else f'{m_busy:.2f}'} |")
    return lines if found else []


def _relaxed_model(name: str):
    """The shipped 2-core model's relaxed conservative apply of the folder's recording at W
    threads: µs per transaction and the cores its CPU keeps busy (None for the serial replay,
    whose CPU the model does not add up)."""
    folder = os.path.join(CAL, name)
    with open(os.path.join(folder, "fit.json")) as f:
        fitted = {p["name"]: profile_from_dict(p) for p in json.load(f)["profiles"]}
    model = fitted["durable-mariadb"].with_durability("relaxed")
    _, _, _, load_trace = calib_report._model()
    trace = load_trace(os.path.join(folder, "trace.jsonl.gz"))
    n = len(trace.txns)

    def at(w: int) -> tuple[float, float | None]:
        p = calib_report.predict(trace, model, "conservative", w)
        busy = p["cpu_s"] / p["makespan_s"] if p.get("cpu_s") else None
        return p["makespan_s"] * 1e6 / n, busy
    return at


def ceiling_table(r16_rows: dict[str, list[dict]], fit_json: dict) -> list[str]:
    """Where each replica16 workload stops scaling: per durability, its fastest configuration's
    time per transaction (measured; the model's and the held-out fold's there), beside the
    replica's two serial stages as the full profile and the fold (fitted on the other workload)
    have them at that thread count: the driver (`dispatch_cost`, every event read, parsed and
    queued by one thread) and the in-order commit's hand-off (`member_cost` + `wakeup`). µs."""
    serial = {d: r16.serial_seconds(durability=d) for d in r16_rows}
    model = profile_from_dict(fit_json["profile"])
    folds = {w: profile_from_dict(p) for w, p in fit_json.get("cv", {}).items()}
    events = {w.name: w.mean_events for w in r16_workloads(2000).values()}
    n = {w: sum(1 for _ in r16.open_trace_lines(w)) for w in r16.WORKLOADS}
    out = ["| workload | durability | fastest (measured) | measured µs/txn | model µs/txn | "
           "held-out fold µs/txn | driver: model / fold | commit hand-off: model / fold |",
           "|---|---|---|---|---|---|---|---|"]

    def stages(p: Profile, w: str, threads: int) -> tuple[float, float]:
        driver = p.dispatch + (p.dispatch_event + p.dispatch_thread * (threads - 1)) * events[w]
        return driver, p.commit_serial + p.wakeup
    for w in r16.WORKLOADS:
        for d, rows in r16_rows.items():
            best = max((r for r in rows if r["workload"] == w), key=lambda r: r["median"])
            us = serial[d][w] * 1e6 / n[w]
            m_driver, m_chain = stages(model, w, best["threads"])
            f_driver, f_chain = (stages(folds[w], w, best["threads"]) if w in folds
                                 else (math.nan, math.nan))
            out.append(f"| {w} | {d} | {best['mode']} {best['threads']} | "
                       f"{us / best['median']:.0f} | {us / best['model']:.0f} | "
                       f"{us / best['cv']:.0f} | {m_driver:.0f} / {f_driver:.0f} | "
                       f"{m_chain:.0f} / {f_chain:.0f} |" if best.get("cv") else
                       f"| {w} | {d} | {best['mode']} {best['threads']} | "
                       f"{us / best['median']:.0f} | {us / best['model']:.0f} | - | "
                       f"{m_driver:.0f} / - | {m_chain:.0f} / - |")
    return out


def _config_table(rows, keys, cols) -> list[str]:
    """One line per configuration: its `keys`, W, the measured speedup, then each of `cols`."""
    head = " | ".join(keys) + " | W | measured median [min, max] | "
    out = ["| " + head + " | ".join(c[1] for c in cols) + " |",
           "|" + "---|" * (len(keys) + 2 + len(cols))]
    for r in rows:
        out.append("| " + " | ".join(str(r[k]) for k in keys) + f" | {r['threads']} | "
                   f"{r['median']:.2f} [{r['min']:.2f}, {r['max']:.2f}] | "
                   + " | ".join(_cell(r, k) for k, _ in cols) + " |")
    return out


def _summary_table(rows, cols, title="all configurations") -> str:
    lines = [f"| {title} | median abs error | inside measured min-max | n |", "|---|---|---|---|"]
    for key, label in cols:
        s = summary(rows, key)
        if s["n"]:
            lines.append(f"| {label} | {100 * s['median_abs_error']:.0f}% | "
                         f"{100 * s['inside']:.0f}% | {s['n']} |")
    return "\n".join(lines)


def _best_w_lines(rows, group) -> str:
    return _best_w_lines_for(rows, group, "model")


def _best_w_lines_for(rows, group, key) -> str:
    checks = best_w_check(rows, key, group)
    ok = sum(c["ok"] for c in checks)
    lines = [f"Best thread count (the model's pick has a measured speedup within 10% of the "
             f"measured best): {ok} of {len(checks)}", ""]
    for c in checks:
        lines.append(f"- {' / '.join(str(x) for x in c['group'])}: picks W={c['picked']}, "
                     f"measured {c['measured_at_pick']:.2f} there, best measured "
                     f"{c['measured_best']:.2f} ({'ok' if c['ok'] else 'NOT within 10%'})")
    return "\n".join(lines)


# ---------------------------------------------------------------- fitting

def fit_replica16(maxiter: int, limit: int | None, progress=print) -> dict:
    """The replica16 profile, one for both durability settings of the replica: the redo flush's
    wait and the CPU growth from the counters, the flush's CPU from the serial applies of both
    settings, the pipeline terms from the timings of both workloads at the `R16_SEARCHED`
    settings, and one fold per workload for the cross-validation (each from its training
    workload's counters, serial applies and timings only), and each fold again without the
    driver's terms (the held-out ablation of the driver's ceiling)."""
    meas = r16_measured()
    wls = list(r16_workloads(limit).values())
    events = {w.name: w.mean_events for w in wls}

    def base_from_counters(train: list) -> Profile:
        names = tuple(w.name for w in train)
        growth = r16.cpu_growth(events, workloads=names)
        wait = r16.serial_flush_wait(workloads=names)["commit_default"]
        cpu = fm.flush_cpu(wait, train)
        # the durable redo flush: its device wait (the counters) and its CPU on the flushing
        # thread (durable serial - relaxed serial - the wait); a relaxed replica has neither
        return Profile("replica16", exec_default=0.0, commit_default=round(wait + cpu, 4),
                       commit_cpu=round(cpu, 4), sync=0.0,
                       dispatch=0.0, retry=0.0, provenance="", cores=16, per_core_queues=True,
                       commit_grouped=True, shared_disk=True, log_replica_updates=False,
                       coordination_thread=round(growth["coordination_thread"], 4),
                       coordination_event=round(growth["coordination_event"], 4),
                       coordination=0.0, machine=r16.MACHINE)
    configs = [c for c in sorted(meas) if c[0] in R16_SEARCHED]
    # The worker's wait per event hand-off, tied to the driver's time per event by the ratio the
    # 2-core VM's one-thread runs measure (the only runs that show both; replica16 has none)
    handoff = calib_fit.handoff_ratio([os.path.join(CAL, name) for name in TWO_CORE])
    # three independent searches, one process each, all from the generic start: both workloads,
    # and one fold per held-out workload
    cold = dict(zip(fm.TERMS, fm.COLD))
    _SEARCHES[:] = [(base_from_counters(wls), wls, meas, configs, maxiter,
                     tuple(cold[t] for t in R16_TERMS), handoff["ratio"], R16_TERMS)]
    no_driver = tuple(t for t in R16_TERMS if t not in DRIVER_TERMS)
    for terms in (R16_TERMS, no_driver):
        for held in wls:
            train = [w for w in wls if w is not held]
            _SEARCHES.append((base_from_counters(train), train, meas,
                              [c for c in configs if c[1] == train[0].name], maxiter,
                              tuple(cold[t] for t in terms), handoff["ratio"], terms))
    progress(f"replica16: {len(_SEARCHES)} searches (both workloads; one fold per workload, "
             f"with and without the driver's terms), {len(configs)} configurations "
             f"({', '.join(R16_SEARCHED)})")
    with multiprocessing.get_context("fork").Pool(min(len(_SEARCHES), os.cpu_count() or 1)) as pool:
        results = pool.map(_search, range(len(_SEARCHES)))
    (prof, loss), folds = results[0], results[1:]
    cv = {held.name: fold for held, (fold, _) in zip(wls, folds[:len(wls)])}
    cv_no_driver = {held.name: fold for held, (fold, _) in zip(wls, folds[len(wls):])}
    wait = r16.serial_flush_wait()
    return {"profile": prof, "loss": loss, "cv": cv, "cv_without_driver": cv_no_driver,
            "cpu_growth": r16.cpu_growth(events),
            "flush": wait, "flush_cpu": fm.flush_cpu(wait["commit_default"], wls),
            "serial_us": {w.name: w.serial_us_by for w in wls},
            "handoff": handoff, "configs": len(configs), "fit_transactions": limit or "all"}


_SEARCHES: list = []          # filled before the fork; a worker runs one by index


def _search(i: int):
    base, train, meas, configs, maxiter, start, handoff_ratio, terms = _SEARCHES[i]
    return fm.fit(base, train, meas, configs, maxiter=maxiter, start=start, terms=terms,
                  handoff_ratio=handoff_ratio)


def _band(rows: list[dict], key: str) -> tuple:
    """The 10th and 90th percentile of measured / predicted over `rows`."""
    ratios = sorted(r["median"] / r[key] for r in rows if r.get(key))
    if not ratios:
        return ()
    q = statistics.quantiles(ratios, n=10, method="inclusive")
    return (round(q[0], 3), round(q[-1], 3))


def _profile_json(p: Profile, **extra) -> dict:
    d = {f.name: getattr(p, f.name) for f in fields(Profile)}
    for k, v in list(d.items()):
        if isinstance(v, float):
            d[k] = round(v, 4)
    d["band"] = list(p.band)
    d.update(extra)
    return d


def cmd_fit(a) -> int:
    limit = 2000 if a.quick else None
    res = fit_replica16(a.maxiter, 2000 if a.fit_subset else limit)
    prof = res["profile"]
    fitted_from = {t: "replica16 timings, both workloads, every durable configuration "
                      "(training set; the relaxed parallel runs are not fitted)"
                   for t in R16_TERMS}
    wait = res["flush"]
    fitted_from.update(
        exec_default="the serial applies of both workloads at both durabilities (per "
                     "transaction; each workload's mean of what its durable apply less the "
                     "flush and its relaxed apply leave)",
        exec_row="the same, per row changed (the mechanism, since these workloads' rows and "
                 "events scale alike)",
        coordination_event="replica16 CPU counters (cpu_busy_cores x seconds), durable runs: "
                           "intercept at one thread of the parallel-mode CPU per event (the "
                           "worker's parallel-mode CPU is CPU: counted, not searched)",
        coordination_thread="replica16 CPU counters (cpu_busy_cores x seconds), durable runs: "
                            "slope of the parallel-mode CPU per event against the thread count",
        cores="the machine's CPU count",
        commit_default=(f"the durable redo flush: its device wait {wait['commit_default']:.1f} "
                        f"(replica16 CPU counters: the durable serial applies' iowait x 16 cores "
                        f"x apply time / N, median of the {wait['runs']} runs) and its CPU "
                        f"(commit_cpu); a relaxed replica has neither"),
        commit_cpu=("the durable redo flush's CPU on the flushing thread (the O_DIRECT log write "
                    "and fdatasync): durable serial - relaxed serial - the flush's device wait, "
                    "per transaction, mean of both workloads ({})").format(", ".join(
                        f"{w} {v['durable'] - v['relaxed'] - wait['commit_default']:.1f}"
                        for w, v in res["serial_us"].items())),
        dispatch="0 by mechanism: the driver's work is per event (dispatch_event); one "
                 "workload cannot split it between per transaction and per event",
        handoff_event=("dispatch_event x {:.3f}: the worker gets its events at the driver's "
                       "pace; the ratio of the 2-core VM's one-thread runs (worker's time off "
                       "its core / driver CPU: {})").format(
                           res["handoff"]["ratio"], ", ".join(
                               f"{v:.3f}" for v in res["handoff"]["per_folder"].values())),
        per_core_queues="Linux's per-core run queues (not fitted; checked against "
                        "traces/calibration/chain_probe on the 2-core VM)",
        band="cross-validation residuals (10th-90th pct), per durability (bands)",
        sync="not measured (the replica wrote no binlog of its own, log_replica_updates off): "
             "taken as one redo flush on the same disk, its CPU part too, for "
             "--log-replica-updates on",
        log_replica_updates="the replica's setting (log_slave_updates=OFF)")
    # what the replica's settings were in its runs (shared/replica16/README.md): predictions for
    # others (`--log-replica-updates on`, other core counts) say they were not measured
    calibrated = {"durability": list(R16_SETTINGS), "cores": [prof.cores],
                  "log_replica_updates": [False]}
    prof = replace(prof, fitted_from=fitted_from, machine=r16.MACHINE, sync=prof.commit_default,
                   sync_cpu=prof.commit_cpu, calibrated=calibrated,
                   provenance=("fitted by traces/record/fidelity.py fit on every run of "
                               "shared/replica16 (MariaDB 10.11.19, 16 cores, 2 sysbench "
                               "workloads; the pipeline terms on the durable runs, 6 rounds x 9 "
                               "configurations; the execution and the flush's CPU from the "
                               "serial applies of both settings; one profile for both "
                               "settings); CPU growth from its CPU counters; "
                               "docs/calibration.md"))
    fit_json = {"profile": _profile_json(prof), "cv": {w: _profile_json(p)
                                                        for w, p in res["cv"].items()},
                "cv_without_driver": {w: _profile_json(p)
                                      for w, p in res["cv_without_driver"].items()},
                "loss_mean_abs_log_error": res["loss"], "cpu_growth": res["cpu_growth"],
                "serial_flush_wait": res["flush"], "flush_cpu": res["flush_cpu"],
                "serial_us_per_txn": res["serial_us"], "handoff_ratio": res["handoff"],
                "fit_transactions": res["fit_transactions"]}
    _write_json(R16_FIT, fit_json)          # the searches' result first; the bands after
    bands = {d: list(_band(replica16_rows(fit_json, full=not a.quick, ablations=False,
                                          durability=d), "cv")) for d in R16_SETTINGS}
    prof = replace(prof, band=tuple(bands["durable"]), bands=bands)
    fit_json["profile"] = _profile_json(prof)
    _write_json(R16_FIT, fit_json)
    calib_fit.merge_profiles(FITTED_PATH, [_profile_json(prof)])
    refit_two_core()
    return cmd_report(a)


def refit_two_core() -> None:
    """The 2-core profiles from their folders' serial and fit-only runs (with what they take from
    the stored replica16 fit), their band from the residuals of the 2-core predictions (which
    no fit uses), stored in the fitted-profiles file (durable-mariadb from the first folder)."""
    transfer = calib_fit.replica16_transfer(R16_FIT)
    folders = [os.path.join(CAL, name) for name in TWO_CORE]
    fits = []
    for folder in folders:
        result = calib_fit.fit(folder, transfer)
        _write_json(os.path.join(folder, "fit.json"), result)
        fits.append(result)
    stored = fits[0]["profiles"]
    # The stored profile predicts other workloads: its execution grows per row changed, solved
    # from both folders' serial execution (each folder's own fit.json keeps its exact serial
    # time per transaction for its own predictions)
    per_row = calib_fit.exec_per_row(folders, fits)
    if per_row is not None:
        for p in stored:
            p["exec_default"], p["exec_row"] = round(per_row[0], 3), round(per_row[1], 3)
            p["fitted_from"] = dict(p.get("fitted_from", {}), exec_default=(
                "relaxed serial apply / N - dispatch of both 2-core workloads, per transaction"),
                exec_row="the same, per row changed (two workloads: per transaction and per "
                         "row)")
    rows = two_core_rows(progress=lambda s: None, ablations=False)
    band2 = _band(rows, "model")
    for p in stored:
        p["band"] = list(band2)
        # the settings its predicted runs had: both durabilities, the replica's own binlog on
        p["calibrated"] = {"durability": sorted({r["sync"] for r in rows}),
                           "cores": [p["cores"]],
                           "log_replica_updates": [p.get("log_replica_updates", True)]}
        p["fitted_from"] = dict(p.get("fitted_from", {}), band="residuals of the 2-core "
                                "predictions (10th-90th pct; fitted without them)")
    calib_fit.merge_profiles(FITTED_PATH, stored)


def cmd_fit_two_core(a) -> int:
    refit_two_core()
    return cmd_report(a)


def _write_json(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def cmd_report(a) -> int:
    with open(R16_FIT) as f:
        fit_json = json.load(f)
    quiet = (lambda s: None) if not sys.stderr.isatty() else (lambda s: print(s, file=sys.stderr))
    r16_rows = {d: replica16_rows(fit_json, full=not a.quick, progress=quiet, durability=d)
                for d in R16_SETTINGS}
    two_rows = two_core_rows(progress=quiet)
    md = markdown(r16_rows, two_rows, other_workload_rows(progress=quiet),
                  transfer_rows(progress=quiet))
    with open(OUT_MD + ".tmp", "w") as f:
        f.write(md)
    os.replace(OUT_MD + ".tmp", OUT_MD)
    if not a.quick:
        update_doc(DOC, md)
    sys.stdout.write(md)
    return 0


def update_doc(path: str, md: str) -> None:
    """Put the tables into the doc between its fidelity markers (the doc's prose stays)."""
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        return
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = md.split("\n", 2)[2]          # without the page title
    body = body.replace("\n## ", "\n### ")
    with open(path + ".tmp", "w") as f:
        f.write(head + BEGIN + "\n" + body + END + tail)
    os.replace(path + ".tmp", path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("report", "fit", "fit-2core"):
        p = sub.add_parser(name, help={
            "report": "the tables from the stored fits",
            "fit": "refit replica16 (+ its cross-validation folds), then the 2-core profiles",
            "fit-2core": "refit the 2-core profiles only (after new 2-core measurements)"}[name])
        p.add_argument("--quick", action="store_true",
                       help="the first 2,000 transactions of each replica16 trace only")
        if name == "fit":
            p.add_argument("--maxiter", type=int, default=250)
            p.add_argument("--fit-subset", action="store_true", default=True,
                           help="search on 2,000 transactions per workload, report on all")
    a = ap.parse_args(argv)
    return {"fit": cmd_fit, "fit-2core": cmd_fit_two_core, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
