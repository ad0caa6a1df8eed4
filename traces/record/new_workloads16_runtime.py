"""device16_w3's second registration (traces/calibration/device16_w3/preregistered_runtime.json):
the two new workloads recorded again on a second lent machine and applied there relaxed at run
time (started durable, SET GLOBAL 0/2: O_DIRECT redo writes kept) and relaxed from start-up;
predicted by replica16's profile, relaxed, with `log_write` from that run's own O_DIRECT probe,
as device16's second registration did (device16.py).

    python traces/record/new_workloads16_runtime.py unpack DIR  # the run's files into runtime/
    python traces/record/new_workloads16_runtime.py report      # simulate; runtime/report.md/.json
    python traces/record/new_workloads16_runtime.py tables      # runtime/report.md from report.json

Everything of the second run lives in runtime/ (its timings, machine.txt, log.txt and its own
recordings NAME/{meta.json, sysbench_output.txt, trace.jsonl.gz}); the durable baseline is the
first run's (device16_w3's timings.csv).
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import new_workloads16 as w3  # noqa: E402

d16, fm, fidelity, r16 = w3.d16, w3.fm, w3.fidelity, w3.r16
FIRST = w3.FOLDER
FOLDER = os.path.join(FIRST, "runtime")
BINLOGS = os.path.join(w3.BINLOGS, "runtime")
SETTINGS = ("relaxed_runtime", "relaxed")
BEGIN = "<!-- device16_w3 relaxed at run time: begin (make device16-w3-runtime-report) -->"
END = "<!-- device16_w3 relaxed at run time: end -->"
HEADING = "### Second registration: relaxed at run time\n\n"
DataError = w3.DataError


def unpack(src: str, folder: str = FOLDER, binlogs: str = BINLOGS, progress=print) -> list[str]:
    os.makedirs(folder, exist_ok=True)
    return w3.unpack(src, folder, binlogs, progress,
                     timings=tuple(d16.FILES[s] for s in SETTINGS),
                     schema=os.path.join(FIRST, "sbtest_schema.sql"))


def log_write_us(folder: str = FOLDER) -> float:
    """The run's O_DIRECT 4 KiB write latency, as probed (machine.txt)."""
    path = os.path.join(folder, "machine.txt")
    with open(path) as f:
        m = re.search(r"^direct wall us/op ([0-9.]+)", f.read(), re.M)
    if not m:
        raise DataError(f"{path}: no 'direct wall us/op' line")
    return float(m.group(1))


def load(folder: str = FOLDER) -> dict[str, list[dict]]:
    return {s: d16.load_rows(s, folder) for s in SETTINGS}


def serials(data: dict[str, list[dict]], names: list[str]) -> dict[str, dict[str, float]]:
    """Per setting, each workload's median serial apply (s), where the run has one (a budget
    may end the run before a workload's serial apply in one setting)."""
    out = {}
    for s in SETTINGS:
        have = [w for w in names if any(r["workload"] == w and r["mode"] == "serial"
                                        for r in data[s])]
        out[s] = w3.serial_seconds(data[s], have)
    return out


# ---------------------------------------------------------------- predictions (simulated)

def predictions(folder: str = FOLDER, first: str = FIRST, progress=print) -> dict:
    data = load(folder)
    names = w3.workload_names(data)
    model = w3.registered_profile(first)
    lw = log_write_us(folder)
    runtime = replace(model, log_write=lw).with_durability("relaxed")
    relaxed = model.with_durability("relaxed")
    serial = serials(data, names)
    # the serial times ride along (predict simulates its own serial replay)
    wls = {w: fm.Workload(w, os.path.join(folder, w, "trace.jsonl.gz"),
                          {s: serial[s][w] for s in SETTINGS if w in serial[s]}) for w in names}
    out = {"log_write_us": lw, "configs": {}, "serial_ratio": {},
           "trace": {w: {"transactions": wl.full_count, "mean_events": wl.mean_events,
                         "mean_rows": wl.mean_rows} for w, wl in wls.items()}}
    out["configs"], out["serial_ratio"] = d16.runtime_predictions(
        wls, data["relaxed_runtime"], runtime, relaxed, "device16_w3", progress)
    return out


# ---------------------------------------------------------------- tables (fast)

KEYS = ("model", "constant", "relaxed_from_startup", "durable", "model_without_log_write")
NAMES = {"model": "model under test",
         "constant": "baseline: constant (relaxed)",
         "relaxed_from_startup": "baseline: relaxed from start-up, same run",
         "durable": "baseline: durable, first run",
         "model_without_log_write": "not registered: model without log_write"}


def tables(pred: dict, folder: str = FOLDER, first: str = FIRST) -> dict:
    data = load(folder)
    meas = {s: d16.measured(rows) for s, rows in data.items()}
    durable = d16.measured(d16.load_rows("durable", first))
    constant = w3.statistics.median(m["median"] for m in r16.measured(
        durability="relaxed").values())
    rows = []
    for (w, mode, n), m in sorted(meas["relaxed_runtime"].items()):
        key = d16._key("relaxed_runtime", w, mode, n)
        if key not in pred["configs"]:
            raise DataError(f"no stored prediction for {key} (run report)")
        p = pred["configs"][key]
        startup, dur = meas["relaxed"].get((w, mode, n)), durable.get((w, mode, n))
        rows.append({"workload": w, "mode": mode, "threads": n, "median": m["median"],
                     "min": m["min"], "max": m["max"], "rounds": len(m["speedups"]),
                     "model": p["model"], "model_without_log_write": p["model_without_log_write"],
                     "constant": constant,
                     "relaxed_from_startup": startup and startup["median"],
                     "durable": dur and dur["median"]})
    if not rows:
        raise DataError("no relaxed-at-run-time run with its round's serial apply")
    summary = {k: fidelity.summary(rows, k) for k in KEYS}
    bar = 0.5 * summary["constant"]["median_abs_error"]
    rule = {k: {"error": summary[k]["median_abs_error"], "bar": bar,
                "met": summary[k]["median_abs_error"] is not None
                and d16.verdict(summary[k]["median_abs_error"], summary["constant"][
                    "median_abs_error"])}
            for k in ("model", "relaxed_from_startup", "durable")}
    serial = serials(data, w3.workload_names(data))
    ratio = []
    for w in sorted(set(serial["relaxed_runtime"]) & set(serial["relaxed"])):
        measured_ratio = serial["relaxed_runtime"][w] / serial["relaxed"][w]
        pr = pred["serial_ratio"][w]["model"]
        ratio.append({"workload": w, "runtime_s": serial["relaxed_runtime"][w],
                      "startup_s": serial["relaxed"][w], "measured": measured_ratio,
                      "model": pr, "error": pr / measured_ratio - 1})
    return {"rows": rows, "summary": summary, "rule": rule, "constant": constant,
            "noise": d16.noise_floor(meas["relaxed_runtime"]), "serial_ratio": ratio,
            "rounds": {s: sorted({r["round"] for r in data[s]}) for s in SETTINGS}}


def markdown(t: dict, pred: dict) -> str:
    r = t["rule"]["model"]
    L = ["# device16_w3, second registration: relaxed at run time", "",
         "Pre-registered in `device16_w3/preregistered_runtime.json` (committed before the "
         "run). The two workloads recorded again on the second run's machine "
         "(`NAME/meta.json`; their traces are what the model simulates), applied relaxed at run "
         f"time (rounds {t['rounds']['relaxed_runtime']}) and relaxed from start-up (rounds "
         f"{t['rounds']['relaxed']}), alternating (`timings_relaxed_runtime.csv`, "
         "`timings_relaxed.csv`; machine in `machine.txt`). The model: replica16's profile "
         "(`device16_w3/registered_profile.json`), relaxed, with `log_write` = "
         f"{pred['log_write_us']:.1f} µs (machine.txt's O_DIRECT 4 KiB write), grouped as the "
         "model groups it; nothing else changed. The last column is not registered: the same "
         "model without the log write.", "",
         f"**Verdict (the registered rule): {'met' if r['met'] else 'not met'}**: the model's "
         f"median |error| over the {t['summary']['model']['n']} configurations is "
         f"{w3._pct(r['error'])}, the bar (half the constant's) {w3._pct(r['bar'])}.", "",
         "| workload | mode | W | rounds | measured median [min, max] | "
         + " | ".join(NAMES[k] for k in KEYS) + " |", "|---" * (5 + len(KEYS)) + "|"]
    for x in t["rows"]:
        L.append(f"| {x['workload']} | {x['mode']} | {x['threads']} | {x['rounds']} | "
                 f"{x['median']:.2f} [{x['min']:.2f}, {x['max']:.2f}] | "
                 + " | ".join(w3._cell(x[k], x) for k in KEYS) + " |")
    L += ["", "| | median abs error | inside measured min-max | half the constant's |",
          "|---|---|---|---|"]
    for k in KEYS:
        s = t["summary"][k]
        met = t["rule"].get(k)
        L.append(f"| {NAMES[k]} | {w3._pct(s['median_abs_error'])} | {w3._pct(s['inside'])} | "
                 + (("met" if met["met"] else "not met") if met else "") + " |")
    L += [f"| single-run noise floor | {w3._pct(t['noise'])} | | |", "",
          "Serial apply, relaxed at run time / relaxed from start-up (medians over the rounds):",
          "", "| workload | at run time (s) | from start-up (s) | measured ratio | model ratio | "
          "error |", "|---|---|---|---|---|---|"]
    for x in t["serial_ratio"]:
        L.append(f"| {x['workload']} | {x['runtime_s']:.3f} | {x['startup_s']:.3f} | "
                 f"{x['measured']:.2f} | {x['model']:.2f} | {100 * x['error']:+.0f}% |")
    L += ["", f"Constant (replica16's median relaxed speedup, from its timings): "
          f"{t['constant']:.2f}."]
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- the command

def report(folder: str = FOLDER, doc: str | None = w3.DOC, progress=print) -> str:
    pred = predictions(folder, FIRST, progress)
    t = tables(pred, folder)
    md = markdown(t, pred)
    d16._write(os.path.join(folder, "report.json"), json.dumps(
        {"predictions": pred, "tables": d16._jsonable(t)}, indent=1, sort_keys=True) + "\n")
    d16._write(os.path.join(folder, "report.md"), md)
    if doc:
        update_doc(doc, md)
    return md


def update_doc(path: str, md: str) -> None:
    """This part in device16_w3's section: replaced, or put right after that section's tables
    (their end marker), which `make device16-w3-report` leaves in place."""
    body = md.split("\n", 2)[2].replace("\n## ", "\n#### ")
    part = (f"{HEADING}{BEGIN}\n"
            "The tables are `runtime/report.md`'s (`traces/record/new_workloads16_runtime.py`, "
            f"`make device16-w3-runtime-report`).\n\n{body}{END}\n")
    d16.put_section(path, part, HEADING + BEGIN, END, after=w3.END,
                    missing="no device16_w3 section (make device16-w3-report first)")


def main(argv=None) -> int:
    return w3.cli(argv, prog="new_workloads16_runtime", description=__doc__, folder=FOLDER,
                  unpack_run=unpack, report_run=report,
                  tables_md=lambda pred, folder: markdown(tables(pred, folder), pred))


if __name__ == "__main__":
    sys.exit(main())
