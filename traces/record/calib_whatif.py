#!/usr/bin/env python3
"""Which of the fitted profile's terms matter: the predictions of a calibration folder with
each term the calibration added switched off in turn (an ablation), against the same measured
speedups. Diagnostic only: nothing is fitted here and nothing is written.

    python traces/record/calib_whatif.py traces/calibration/NAME

Variants: the fitted model; without worker coordination CPU; without the CPU parts of the
syncs (sync_cpu, commit_cpu); without the redo log's group flush (commit_grouped); without the
server's background CPU; without the group-commit leader's serial per-member
work (commit_serial); all of them off (the model before the second calibration); and with
each configuration's measured CPU (the worker CPU per transaction set from that
configuration's own counters: not a prediction, it shows what is left once CPU is known).
Per variant: median |error| over the parallel configurations, durable and relaxed, and how many
predictions fall inside the measured [min, max].
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from calib_fit import load_runs  # noqa: E402
from calib_report import _model, measured, predict  # noqa: E402

OFF = {
    "fitted model": {},
    "without coordination": {"coordination": 0.0},
    "without sync/commit CPU": {"sync_cpu": 0.0, "commit_cpu": 0.0},
    "without grouped redo flush": {"commit_grouped": False},
    "without background CPU": {"background_cpu": 0.0},
    "without the leader's serial commit": {"commit_serial": 0.0},
    "all of them off": {"coordination": 0.0, "sync_cpu": 0.0, "commit_cpu": 0.0,
                        "commit_grouped": False, "background_cpu": 0.0, "commit_serial": 0.0},
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="a calibration folder with runs.csv, fit.json, trace")
    a = p.parse_args(argv)
    Profile, _, _, load_trace = _model()
    try:
        with open(os.path.join(a.folder, "fit.json")) as f:
            fit = json.load(f)
        trace = load_trace(os.path.join(a.folder, "trace.jsonl.gz"))
        meas = measured(load_runs(a.folder))
    except (OSError, ValueError) as e:
        print(f"calib_whatif: {a.folder}: {e}", file=sys.stderr)
        return 2
    fields = set(Profile.__dataclass_fields__)
    prof = {q["name"].split("-")[0]: Profile(**{k: v for k, v in q.items() if k in fields})
            for q in fit["profiles"]}
    n = len(trace.txns)
    cases = [(key, m) for key, m in sorted(meas.items()) if key[2] > 0 and m["speedup"]]
    variants = list(OFF) + ["with the measured CPU"]
    print(f"{'variant':36} {'median |error|':>15} {'durable':>8} {'relaxed':>8} {'inside':>7}")
    for name in variants:
        errs = {"durable": [], "relaxed": []}
        inside = 0
        for (sync, mode, w), m in cases:
            base = prof[sync]
            par = replace(base, **OFF.get(name, {}))
            if name == "with the measured CPU":
                first = predict(trace, base, mode, w)
                extra = (statistics.median(m["cpu"]) - first["cpu_s"]) * 1e6 / n
                par = replace(base, coordination=max(0.0, base.coordination + extra))
            pred = predict(trace, base, mode, w, par)["speedup"]
            med = statistics.median(m["speedup"])
            errs[sync].append(abs(pred - med) / med)
            inside += min(m["speedup"]) - 1e-9 <= pred <= max(m["speedup"]) + 1e-9
        every = errs["durable"] + errs["relaxed"]
        pct = lambda xs: f"{100 * statistics.median(xs):.0f}%" if xs else "-"
        print(f"{name:36} {pct(every):>15} {pct(errs['durable']):>8} "
              f"{pct(errs['relaxed']):>8} {inside:>3}/{len(cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
