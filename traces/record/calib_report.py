"""Predicted against measured speedup for every measured configuration: a CSV, a Markdown table
and an SVG figure, written into the calibration folder.

Measured speedup of a run = the same round's serial apply time (same sync setting) / its apply
time; per configuration the median over rounds and the spread [min, max]. Predicted speedup =
the model's serial makespan / its makespan for `commit_id+mariadb_<mode>` with W =
slave_parallel_threads, under the fitted profile of that sync setting. The replica's commit
groups (binlog_group_commits with log_slave_updates) and retries are set against the model's.
"""
from __future__ import annotations

import csv
import json
import os
import statistics
import sys

from calib_fit import load_meta, load_runs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _model():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from record import _import_importers
    _import_importers()            # makes `commitsched` importable from a plain checkout
    from commitsched.profiles import Profile
    from commitsched.schedulers import collect, run_scheduler
    from commitsched.trace import load_trace
    return Profile, collect, run_scheduler, load_trace


def predict(trace, profile, mode: str, workers: int, parallel_profile=None) -> dict:
    """`parallel_profile`: a what-if profile for the parallel run only (the serial baseline
    keeps `profile`)."""
    Profile, collect, run_scheduler, _ = _model()
    serial = []
    run_scheduler("serial", trace.txns, 1, profile, serial.append)
    # the model's serial replay charges the SQL thread's read (dispatch) cost itself
    serial_ms = max(r.commit for r in serial)
    if workers == 0:
        return {"makespan_s": serial_ms / 1e6, "speedup": 1.0, "groups": len(serial),
                "retries": 0, "cpu_s": None}
    runs, _ = collect(f"commit_id+mariadb_{mode}", trace.txns, workers,
                      parallel_profile or profile)
    ms = max(r.commit for r in runs)
    prof = parallel_profile or profile
    groups = len({r.commit for r in runs})      # one sync ends each commit group
    flushes = len({r.ready for r in runs}) if prof.commit_grouped else len(runs)
    cpu = (sum(r.exec + prof.dispatch_cost(r.txn, workers) + prof.member_cost(r.txn)
               + prof.contention_cpu(r.txn, workers) for r in runs)
           + len(runs) * prof.background_cpu
           + groups * prof.sync_cpu + flushes * prof.commit_cpu)
    return {"makespan_s": ms / 1e6, "speedup": serial_ms / ms, "groups": groups,
            "retries": sum(r.retries for r in runs), "cpu_s": cpu / 1e6}


def measured(runs: list[dict]) -> dict:
    """Per (sync, mode, threads): speedups against the same round's serial apply."""
    serial = {(r["sync"], r["round"]): r["apply_s"] for r in runs
              if r["threads"] == 0 and r["purpose"] == "predict"}
    out: dict[tuple, dict] = {}
    for r in runs:
        if r["purpose"] != "predict":
            continue
        key = (r["sync"], r["mode"], r["threads"])
        base = serial.get((r["sync"], r["round"]))
        e = out.setdefault(key, {"apply": [], "speedup": [], "groups": [], "retries": [],
                                 "load": [], "steal": [], "iowait": []})
        e["apply"].append(r["apply_s"])
        if base:
            e["speedup"].append(base / r["apply_s"])
        e["groups"].append(int(r["d_binlog_group_commits"]))
        e["retries"].append(int(r["d_slave_retried_transactions"]))
        e["load"].append(float(r["load_before"]))
        e.setdefault("cpu", []).append(float(r["replica_cpu_s"]))
        e["steal"].append(float(r["steal"]))
        e["iowait"].append(float(r["iowait"]))
    return out


def build(folder: str, profiles_path: str | None = None) -> list[dict]:
    Profile, _, _, load_trace = _model()
    with open(os.path.join(folder, "fit.json")) as f:
        fit_json = json.load(f)
    fitted = {p["name"]: p for p in fit_json["profiles"]}
    if profiles_path:
        with open(profiles_path) as f:
            fitted.update((p["name"], p) for p in json.load(f)["profiles"])
    fields = set(Profile.__dataclass_fields__)
    trace = load_trace(os.path.join(folder, "trace.jsonl.gz"))
    rows = []
    meas = measured(load_runs(folder))
    for (sync, mode, threads), m in sorted(meas.items(), key=lambda kv: (
            kv[0][0], kv[0][2], kv[0][1])):
        prof = Profile(**{k: v for k, v in fitted[f"{sync}-mariadb"].items() if k in fields})
        p = predict(trace, prof, mode, threads)
        # ablation: the same fit without the terms the first calibration added (worker
        # coordination CPU, the CPU part of syncs, the redo log's group flush)
        from dataclasses import replace
        base = predict(trace, prof, mode, threads, replace(
            prof, coordination=0.0, sync_cpu=0.0, commit_cpu=0.0, commit_grouped=False,
            background_cpu=0.0, commit_serial=0.0))
        # diagnostic, not a prediction: the worker CPU per transaction set so that the model
        # spends the CPU the replica measurably spent in this configuration (its counters)
        matched = None
        if threads > 0 and prof.cores:
            extra = (statistics.median(m["cpu"]) - p["cpu_s"]) * 1e6 / len(trace.txns)
            matched = predict(trace, prof, mode, threads, replace(
                prof, coordination=max(0.0, prof.coordination + extra)))
        sp = m["speedup"]
        med = statistics.median(sp) if sp else None
        lo, hi = (min(sp), max(sp)) if sp else (None, None)
        row = {"sync": sync, "mode": mode, "threads": threads, "rounds": len(m["apply"]),
               "apply_median_s": statistics.median(m["apply"]),
               "apply_min_s": min(m["apply"]), "apply_max_s": max(m["apply"]),
               "predicted_makespan_s": p["makespan_s"],
               "predicted_speedup": p["speedup"], "measured_speedup_median": med,
               "measured_speedup_min": lo, "measured_speedup_max": hi,
               "spread_rel": (hi - lo) / med if med else None,
               "error_rel": (p["speedup"] - med) / med if med else None,
               "inside_spread": (lo - 1e-9 <= p["speedup"] <= hi + 1e-9) if sp else None,
               "without_cpu_terms_speedup": base["speedup"],
               "predicted_cpu_s": p["cpu_s"],
               "measured_cpu_s_median": statistics.median(m["cpu"]),
               "cpu_matched_speedup": matched["speedup"] if matched else None,
               # without a sync the model's commit "groups" are only equal commit instants
               "predicted_groups": p["groups"] if prof.sync > 0 else None,
               "measured_groups_median": statistics.median(m["groups"]),
               "predicted_retries": p["retries"],
               "measured_retries_median": statistics.median(m["retries"]),
               "load_median": statistics.median(m["load"]),
               "steal_max": max(m["steal"]), "iowait_max": max(m["iowait"])}
        row["within_10pct"] = (abs(row["error_rel"]) <= 0.10) if med else None
        rows.append(row)
    return rows


def markdown(rows: list[dict]) -> str:
    out = ["| sync | mode | W | apply median (min-max) s | measured speedup median [min, max] | "
           "spread | predicted | error | inside spread | within 10% | replica groups meas / pred "
           "| retries meas / pred | CPU s meas / pred | without the CPU and flush terms "
           "| with the measured CPU (diagnostic) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["threads"] == 0:
            continue
        out.append(
            f"| {r['sync']} | {r['mode']} | {r['threads']} | {r['apply_median_s']:.2f} "
            f"({r['apply_min_s']:.2f}-{r['apply_max_s']:.2f}) | {r['measured_speedup_median']:.2f} "
            f"[{r['measured_speedup_min']:.2f}, {r['measured_speedup_max']:.2f}] | "
            f"{100 * r['spread_rel']:.0f}% | {r['predicted_speedup']:.2f} | "
            f"{100 * r['error_rel']:+.0f}% | {'yes' if r['inside_spread'] else 'NO'} | "
            f"{'yes' if r['within_10pct'] else 'no'} | {r['measured_groups_median']:.0f} / "
            f"{'-' if r['predicted_groups'] is None else r['predicted_groups']} | "
            f"{r['measured_retries_median']:.0f} / "
            f"{r['predicted_retries']} | {r['measured_cpu_s_median']:.2f} / "
            f"{r['predicted_cpu_s']:.2f} | {r['without_cpu_terms_speedup']:.2f} | "
            f"{'-' if r['cpu_matched_speedup'] is None else format(r['cpu_matched_speedup'], '.2f')} |")
    par = [r for r in rows if r["threads"] > 0 and r["measured_speedup_median"]]
    if par:
        inside = sum(1 for r in par if r["inside_spread"])
        tight = [r for r in par if r["spread_rel"] < 0.10]
        errs = [abs(r["error_rel"]) for r in par]
        out += ["", f"- {inside} of {len(par)} predictions inside the measured spread; "
                    f"{sum(1 for r in tight if r['within_10pct'])} of the {len(tight)} "
                    f"configurations with a spread under 10% predicted within 10% of the median; "
                    f"median |error| {100 * statistics.median(errs):.0f}%, largest "
                    f"{100 * max(errs):.0f}%"]
    serial = [r for r in rows if r["threads"] == 0]
    out.append("")
    for r in serial:
        out.append(f"- serial apply, {r['sync']}: median {r['apply_median_s']:.2f} s "
                   f"(min {r['apply_min_s']:.2f}, max {r['apply_max_s']:.2f}, "
                   f"{r['rounds']} rounds); the fitted profile's serial makespan "
                   f"{r['predicted_makespan_s']:.2f} s")
    return "\n".join(out) + "\n"


def svg(rows: list[dict], title: str) -> str:
    """Two panels (durable, relaxed): speedup against W; measured median with [min, max]
    bars, predicted as open markers joined by dashed lines; one colour per mode."""
    syncs = [s for s in ("durable", "relaxed") if any(r["sync"] == s for r in rows)]
    ws = sorted({r["threads"] for r in rows if r["threads"] > 0})
    if not syncs or not ws:
        return "<svg xmlns='http://www.w3.org/2000/svg'/>\n"
    colors = {"conservative": "#1f77b4", "optimistic": "#d62728"}
    pw, ph, ml, mt, mb = 340, 260, 50, 40, 40
    width, height = ml + len(syncs) * (pw + 30), mt + ph + mb + 30
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
             f"font-family='sans-serif' font-size='11'>",
             f"<text x='{ml}' y='16' font-size='13'>{title}</text>"]
    for i, s in enumerate(syncs):
        x0 = ml + i * (pw + 30)
        ymax = max(max(r["measured_speedup_max"] or 0, r["predicted_speedup"])
                   for r in rows if r["sync"] == s) * 1.1     # each panel its own scale
        X = lambda w: x0 + 20 + (pw - 40) * ws.index(w) / max(1, len(ws) - 1)
        Y = lambda v: mt + ph - ph * v / ymax
        parts.append(f"<rect x='{x0}' y='{mt}' width='{pw}' height='{ph}' fill='none' "
                     f"stroke='#888'/><text x='{x0 + 5}' y='{mt + 14}'>{s}</text>")
        step = next(x for x in (0.25, 0.5, 1, 2, 5, 10, 20) if ymax / x <= 8)
        for k in range(0, int(ymax / step) + 1):
            v = k * step
            parts.append(f"<line x1='{x0}' x2='{x0 + pw}' y1='{Y(v):.1f}' y2='{Y(v):.1f}' "
                         f"stroke='#eee'/><text x='{x0 - 4}' y='{Y(v) + 4:.1f}' "
                         f"text-anchor='end'>{v:g}</text>")
        parts.append(f"<line x1='{x0}' x2='{x0 + pw}' y1='{Y(1):.1f}' y2='{Y(1):.1f}' "
                     f"stroke='#999' stroke-dasharray='2,2'/>")
        for w in ws:
            parts.append(f"<text x='{X(w):.1f}' y='{mt + ph + 14}' text-anchor='middle'>{w}</text>")
        parts.append(f"<text x='{x0 + pw / 2}' y='{mt + ph + 30}' text-anchor='middle'>"
                     f"slave_parallel_threads</text>")
        for j, (mode, col) in enumerate(colors.items()):
            pts = sorted((r for r in rows if r["sync"] == s and r["mode"] == mode),
                         key=lambda r: r["threads"])
            dx = -5 if j == 0 else 5
            path = " ".join(f"{X(r['threads']) + dx:.1f},{Y(r['predicted_speedup']):.1f}"
                            for r in pts)
            if pts:
                parts.append(f"<polyline points='{path}' fill='none' stroke='{col}' "
                             f"stroke-dasharray='4,3'/>")
            for r in pts:
                x = X(r["threads"]) + dx
                parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' "
                             f"y1='{Y(r['measured_speedup_min']):.1f}'"
                             f" y2='{Y(r['measured_speedup_max']):.1f}' stroke='{col}' "
                             f"stroke-width='2'/><circle cx='{x:.1f}' "
                             f"cy='{Y(r['measured_speedup_median']):.1f}' r='3.5' fill='{col}'/>"
                             f"<circle cx='{x:.1f}' cy='{Y(r['predicted_speedup']):.1f}' r='4' "
                             f"fill='white' stroke='{col}' stroke-width='1.5'/>")
            parts.append(f"<text x='{x0 + pw - 8}' y='{mt + 16 + 14 * j}' text-anchor='end' "
                         f"fill='{col}'>{mode}</text>")
    parts.append(f"<text x='{ml}' y='{height - 6}'>filled: measured median, bar: min-max over "
                 f"rounds; open + dashed: predicted (fitted profile)</text></svg>")
    return "\n".join(parts) + "\n"


def cmd_report(a) -> int:
    rows = build(a.out, a.profiles)
    with open(os.path.join(a.out, "predictions.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    md = markdown(rows)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(md)
    meta = load_meta(a.out)
    name = os.path.basename(os.path.normpath(a.out))
    with open(os.path.join(a.out, "speedup.svg"), "w") as f:
        f.write(svg(rows, f"{name}: MariaDB {meta['workload']['version'].split('-')[0]}, "
                          f"{meta['trace']['transactions']} transactions"))
    if a.doc:
        with open(a.doc, "w") as f:
            f.write(md)
    sys.stdout.write(md)
    return 0
