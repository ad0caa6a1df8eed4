#!/usr/bin/env python3
"""What-if predictions for a calibration folder: the fitted profiles with the model changes the
calibration proposes (docs/calibration.md), against the same measured speedups. Diagnostic only:
nothing here is fitted on the parallel timings, and nothing is written into the profiles.

    python traces/record/calib_whatif.py traces/calibration/NAME               # the model as is
    python traces/record/calib_whatif.py traces/calibration/NAME --cores 1 --coordination
    # the shared-device-flush proposal, on a scratch copy of the model:
    mkdir -p /tmp/x && cp -r model /tmp/x/ \
        && patch -d /tmp/x -p1 < traces/calibration/proposed_device_flush.patch
    python traces/record/calib_whatif.py traces/calibration/NAME --model /tmp/x/model --device-flush

--cores N: the replica's effective cores; --coordination: the 1-thread fit run's extra CPU per
transaction (fit.json) added to every parallel transaction's execution; --device-flush: the
durable cost split evenly into the prepare sync and the group sync (two flushes of one device).
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import statistics
import sys
from dataclasses import replace


def load_model(model_dir: str):
    spec = importlib.util.spec_from_file_location(
        "commitsched", os.path.join(model_dir, "__init__.py"),
        submodule_search_locations=[model_dir])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["commitsched"] = mod
    spec.loader.exec_module(mod)
    from commitsched.profiles import Profile
    from commitsched.schedulers import collect, run_scheduler
    from commitsched.trace import load_trace
    return Profile, collect, run_scheduler, load_trace


def main(argv=None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--model", default=os.path.join(os.path.dirname(os.path.dirname(here)),
                                                   "model"))
    p.add_argument("--cores", type=int)
    p.add_argument("--coordination", action="store_true")
    p.add_argument("--device-flush", action="store_true")
    a = p.parse_args(argv)
    Profile, collect, run_scheduler, load_trace = load_model(os.path.abspath(a.model))
    trace = load_trace(os.path.join(a.folder, "trace.jsonl.gz"))
    fit = json.load(open(os.path.join(a.folder, "fit.json")))
    fields = set(Profile.__dataclass_fields__)
    prof = {q["name"].split("-")[0]: Profile(**{k: v for k, v in q.items() if k in fields})
            for q in fit["profiles"]}
    if a.device_flush:
        d = prof["durable"]
        f = (d.commit_default + d.sync) / 2
        prof["durable"] = replace(d, commit_default=f, sync=f)
    coord = fit["fit"]["per_txn_us"].get("parallel_coordination_cpu_1thread") or 0.0
    runs = [r for r in csv.DictReader(open(os.path.join(a.folder, "runs.csv")))
            if r["repeated"] == "False"]
    serial = {(r["sync"], r["round"]): float(r["apply_s"]) for r in runs if r["threads"] == "0"}
    n = len(trace.txns)
    errs, by_sync = [], {}
    print("sync     mode          W  predicted  measured median [min, max]  error  inside")
    for sync, base in (("durable", prof["durable"]), ("relaxed", prof["relaxed"])):
        ser = []
        run_scheduler("serial", trace.txns, 1, base, ser.append)
        serial_ms = max(r.commit for r in ser)     # serial replay charges dispatch itself
        par = base
        if a.cores:
            par = replace(par, cores=a.cores)
        if a.coordination:
            par = replace(par, exec_default=par.exec_default + max(0.0, coord))
        for mode in ("conservative", "optimistic"):
            for w in (2, 4, 8, 16):
                meas = [serial[(sync, r["round"])] / float(r["apply_s"]) for r in runs
                        if (r["sync"], r["mode"], r["threads"]) == (sync, mode, str(w))
                        and (sync, r["round"]) in serial]
                if not meas:
                    continue
                out, _ = collect(f"commit_id+mariadb_{mode}", trace.txns, w, par)
                pred = serial_ms / max(r.commit for r in out)
                med = statistics.median(meas)
                errs.append(abs(pred - med) / med)
                by_sync.setdefault(sync, []).append(abs(pred - med) / med)
                inside = min(meas) <= pred <= max(meas)
                print(f"{sync:8} {mode:12} {w:2}  {pred:9.2f}  {med:6.2f} [{min(meas):5.2f}, "
                      f"{max(meas):5.2f}]          {100 * (pred - med) / med:+5.0f}%  "
                      f"{'yes' if inside else 'NO'}")
    mid = lambda xs: 100 * statistics.median(xs)
    print(f"median |error| {mid(errs):.0f}% (durable {mid(by_sync['durable']):.0f}%, relaxed "
          f"{mid(by_sync['relaxed']):.0f}%), largest {100 * max(errs):.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
