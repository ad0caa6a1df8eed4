"""device16_w3: the pre-registered held-out test of the replica16 model on two NEW workloads
recorded and applied on a lent 16-core machine (traces/calibration/device16_w3/: README.md,
preregistered.json).

    python traces/record/new_workloads16.py unpack DIR  # the device run's files into the folder
    python traces/record/new_workloads16.py report      # simulate; report.md/.json, the doc section
    python traces/record/new_workloads16.py tables      # report.md again from report.json (fast)

(`unpack`: DIR holds results.tar.gz, NAME.binlog.tar and log.txt; each binlog is imported into
NAME/trace.jsonl.gz.)

The model under test is registered_profile.json (replica16's profile, unchanged), simulated on
each new trace; device16.py's functions measure the speedups, calibrate the secondary model and
score (nothing copied from it). The device side is new_workloads16.sh / new_workloads16_rig.py.
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import statistics
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import device16 as d16  # noqa: E402
import fidelity  # noqa: E402
import fit_machine as fm  # noqa: E402
import replica16 as r16  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
FOLDER = os.path.join(REPO, "traces", "calibration", "device16_w3")
BINLOGS = os.path.join(REPO, ".dev16", "w3_binlogs")
DOC = os.path.join(REPO, "docs", "calibration.md")
DOC_TITLE = "## device16_w3: new workloads recorded on a lent 16-core machine, pre-registered"
BEGIN = "<!-- device16_w3 tables: begin (make device16-w3-report) -->"
END = "<!-- device16_w3 tables: end -->"
DURABILITIES = d16.DURABILITIES
DataError = d16.DataError


# ---------------------------------------------------------------- unpacking the device's files

def unpack(src: str, folder: str = FOLDER, binlogs: str = BINLOGS, progress=print,
           timings=("timings.csv", "timings_relaxed.csv"), schema: str | None = None
           ) -> list[str]:
    """The device run's files into `folder` (its `timings` CSVs, log, machine.txt,
    NAME/meta.json and sysbench_output.txt) and `binlogs` (NAME/primary-bin.N.xz); each binlog
    imported into `folder`/NAME/trace.jsonl.gz with `schema` (default: `folder`'s
    sbtest_schema.sql). Returns the workload names."""
    res = os.path.join(src, "results.tar.gz")
    if not os.path.isfile(res):
        raise DataError(f"{res}: missing (the device run's results)")
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        _extract(res, tmp)
        base = os.path.join(tmp, "results")
        for f in (*timings, "machine.txt"):
            if not os.path.isfile(os.path.join(base, f)):
                raise DataError(f"{res}: no results/{f} in it")
            shutil.copy(os.path.join(base, f), os.path.join(folder, f))
        names = sorted(os.listdir(os.path.join(base, "recordings")))
        for name in names:
            os.makedirs(os.path.join(folder, name), exist_ok=True)
            for f in ("meta.json", "sysbench_output.txt"):
                shutil.copy(os.path.join(base, "recordings", name, f),
                            os.path.join(folder, name, f))
    if os.path.isfile(os.path.join(src, "log.txt")):
        shutil.copy(os.path.join(src, "log.txt"), os.path.join(folder, "log.txt"))
    for name in names:
        tar = os.path.join(src, f"{name}.binlog.tar")
        if not os.path.isfile(tar):
            raise DataError(f"{tar}: missing")
        _extract(tar, binlogs)
        with open(os.path.join(folder, name, "meta.json")) as f:
            meta = json.load(f)
        xz = os.path.join(binlogs, name, meta["binlog_files"][0] + ".xz")
        progress(f"importing {xz}")
        import_trace(xz, os.path.join(folder, name, "trace.jsonl.gz"), folder, meta, schema)
    return names


def _extract(tar: str, into: str) -> None:
    with tarfile.open(tar) as t:
        for m in t.getmembers():    # files and folders only, inside `into`
            if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in m.name:
                raise DataError(f"{tar}: unexpected member {m.name!r}")
        t.extractall(into)


def import_trace(xz: str, out: str, folder: str, meta: dict, schema: str | None = None
                 ) -> None:
    """The project's importer on the recorded binlog (decompressed beside), with the schema."""
    schema = schema or os.path.join(folder, "sbtest_schema.sql")
    from commitsched.importers import import_binlog
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, meta["binlog_files"][0])
        with lzma.open(xz) as f, open(raw, "wb") as o:
            shutil.copyfileobj(f, o)
        stats = import_binlog([raw], out, schema=[schema],
                              source={"recording": meta["name"], "sysbench": meta[
                                  "sysbench_command"]}, progress=False)
    n = len(fm.load_trace(out).txns)
    if n != meta["transaction_count_gtid_events"]:
        raise DataError(f"{out}: {n} transactions imported, meta.json says "
                        f"{meta['transaction_count_gtid_events']} ({stats})")


# ---------------------------------------------------------------- loading

def load(folder: str = FOLDER) -> dict[str, list[dict]]:
    return {d: d16.load_rows(d, folder) for d in DURABILITIES}


def workload_names(data: dict[str, list[dict]]) -> list[str]:
    names = sorted({r["workload"] for rows in data.values() for r in rows})
    if not names:
        raise DataError("no runs in the timings")
    return names


def serial_seconds(rows: list[dict], names: list[str]) -> dict[str, float]:
    out = {}
    for w in names:
        s = [r["seconds"] for r in rows if r["workload"] == w and r["mode"] == "serial"]
        if not s:
            raise DataError(f"{w}: no serial apply")
        out[w] = statistics.median(s)
    return out


def registered_profile(folder: str = FOLDER):
    with open(os.path.join(folder, "registered_profile.json")) as f:
        return fidelity.profile_from_dict(json.load(f)["profile"])


# ---------------------------------------------------------------- predictions (simulated)

def predictions(folder: str = FOLDER, progress=print) -> dict:
    data = load(folder)
    names = workload_names(data)
    model = registered_profile(folder)
    serial = {d: serial_seconds(data[d], names) for d in DURABILITIES}
    wls = {w: fm.Workload(w, os.path.join(folder, w, "trace.jsonl.gz"),
                          {d: serial[d][w] for d in DURABILITIES}) for w in names}
    try:    # the secondary model: absent when the serial applies cannot be solved for it
        calibrated, terms = d16.calibrate(model, data, wls)
    except DataError as e:
        calibrated, terms = None, {"error": str(e)}
    out = {"calibrated_terms": terms,
           "calibrated_profile": calibrated and {k: getattr(calibrated, k)
                                                 for k in d16.SERIAL_TERMS},
           "trace": {w: {"transactions": wl.full_count, "mean_events": wl.mean_events,
                         "mean_rows": wl.mean_rows} for w, wl in wls.items()},
           "configs": {}}
    for d in DURABILITIES:
        for (w, mode, n) in sorted(d16.measured(data[d])):
            progress(f"  device16_w3 {d} {w} {mode} W={n}")
            out["configs"][d16._key(d, w, mode, n)] = {
                "model": fm.predict(wls[w], model.with_durability(d), mode, n),
                "calibrated": calibrated and fm.predict(wls[w], calibrated.with_durability(d),
                                                        mode, n)}
    return out


# ---------------------------------------------------------------- tables (fast)

KEYS = ("model", "constant", "replica16_same", "calibrated")
NAMES = {"model": "model under test: replica16's profile, unchanged",
         "constant": "baseline: constant (replica16's median speedup)",
         "replica16_same": "baseline: replica16, same configuration (mean of its 2 workloads)",
         "calibrated": "secondary (not the rule): serial terms from the new serial applies"}


def tables(pred: dict, folder: str = FOLDER) -> dict:
    data = load(folder)
    meas = {d: d16.measured(data[d]) for d in DURABILITIES}
    r16_meas = {d: r16.measured(durability=d) for d in DURABILITIES}
    constant = {d: statistics.median(m["median"] for m in r16_meas[d].values())
                for d in DURABILITIES}
    rows = []
    for d in DURABILITIES:
        for (w, mode, n), m in sorted(meas[d].items()):
            key = d16._key(d, w, mode, n)
            if key not in pred["configs"]:
                raise DataError(f"no stored prediction for {key} (run report)")
            p = pred["configs"][key]
            same = [r16_meas[d][(w16, mode, n)]["median"] for w16 in r16.WORKLOADS]
            rows.append({"durability": d, "workload": w, "mode": mode, "threads": n,
                         "median": m["median"], "min": m["min"], "max": m["max"],
                         "rounds": len(m["speedups"]), "model": p["model"],
                         "calibrated": p["calibrated"], "constant": constant[d],
                         "replica16_same": statistics.fmean(same)})
    summary = {k: {"all": fidelity.summary(rows, k),
                   **{d: fidelity.summary([r for r in rows if r["durability"] == d], k)
                      for d in DURABILITIES}} for k in KEYS}
    noise = {"all": d16.noise_floor({(d,) + k: v for d in DURABILITIES
                                     for k, v in meas[d].items()}),
             **{d: d16.noise_floor(meas[d]) for d in DURABILITIES}}
    rule = {}
    for scope in ("all",) + DURABILITIES:
        c = summary["constant"][scope]["median_abs_error"]
        rule[scope] = {k: {"error": summary[k][scope]["median_abs_error"], "bar": 0.5 * c,
                           "met": summary[k][scope]["median_abs_error"] is not None
                           and d16.verdict(summary[k][scope]["median_abs_error"], c)}
                       for k in ("model", "replica16_same", "calibrated")}
    serial = {d: serial_seconds(data[d], workload_names(data)) for d in DURABILITIES}
    rounds = {d: sorted({r["round"] for r in data[d]}) for d in DURABILITIES}
    return {"rows": rows, "summary": summary, "noise": noise, "rule": rule,
            "constant": constant, "serial_s": serial, "rounds": rounds}


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _cell(v: float | None, r: dict) -> str:
    if v is None:
        return "n/a"
    return f"{v:.2f} ({100 * (v / r['median'] - 1):+.0f}%)"


def markdown(t: dict, pred: dict, folder: str = FOLDER) -> str:
    metas = {}
    for w in pred["trace"]:
        with open(os.path.join(folder, w, "meta.json")) as f:
            metas[w] = json.load(f)
    verdict = t["rule"]["all"]["model"]
    L = ["# device16_w3: replica16's model on two new workloads, recorded and applied on a lent "
         "16-core machine", "",
         "Pre-registered in `preregistered.json` (committed before the device run); the model "
         "under test is `registered_profile.json` (replica16's profile, unchanged), simulated on "
         "each workload's trace imported from its recorded binlog. Measured: "
         f"durable rounds {t['rounds']['durable']}, relaxed rounds {t['rounds']['relaxed']} "
         "(`timings.csv`, `timings_relaxed.csv`; machine in `machine.txt`).", "",
         "| workload | sysbench | clients | transactions | primary's group commits | events/txn "
         "| rows/txn | serial durable (s) | serial relaxed (s) |",
         "|---|---|---|---|---|---|---|---|---|"]
    for w, m in metas.items():
        tr = pred["trace"][w]
        L.append(f"| {w} | {m['sysbench_test']} | {m['threads']} | "
                 f"{m['transaction_count_gtid_events']} | "
                 f"{m['status_delta']['Binlog_group_commits']} | {tr['mean_events']:.2f} | "
                 f"{tr['mean_rows']:.2f} | "
                 f"{t['serial_s']['durable'][w]:.3f} | {t['serial_s']['relaxed'][w]:.3f} |")
    L += ["", f"**Verdict (the registered rule): "
          f"{'met' if verdict['met'] else 'not met'}**: the model's median |error| over the "
          f"{t['summary']['model']['all']['n']} configurations is {_pct(verdict['error'])}, the "
          f"bar (half the constant's) {_pct(verdict['bar'])}.", "",
          "| durability | workload | mode | W | rounds | measured median [min, max] | "
          + " | ".join(NAMES[k] for k in KEYS) + " |", "|---" * (6 + len(KEYS)) + "|"]
    for r in t["rows"]:
        L.append(f"| {r['durability']} | {r['workload']} | {r['mode']} | {r['threads']} | "
                 f"{r['rounds']} | {r['median']:.2f} [{r['min']:.2f}, {r['max']:.2f}] | "
                 + " | ".join(_cell(r[k], r) for k in KEYS) + " |")
    L += ["", "| | median abs error: all | durable | relaxed | inside measured min-max (all) |",
          "|---|---|---|---|---|"]
    for k in KEYS:
        s = t["summary"][k]
        L.append(f"| {NAMES[k]} | {_pct(s['all']['median_abs_error'])} | "
                 f"{_pct(s['durable']['median_abs_error'])} | "
                 f"{_pct(s['relaxed']['median_abs_error'])} | {_pct(s['all']['inside'])} |")
    n = t["noise"]
    L.append(f"| single-run noise floor | {_pct(n['all'])} | {_pct(n['durable'])} | "
             f"{_pct(n['relaxed'])} | |")
    L += ["", "Half the constant's error, per scope (the verdict is the 'all' row's; the "
          "others are for reading):", "",
          "| scope | bar | model | replica16, same configuration | secondary (calibrated) |",
          "|---|---|---|---|---|"]
    for scope, v in t["rule"].items():
        L.append(f"| {scope} | {_pct(v['model']['bar'])} | " + " | ".join(
            f"{_pct(v[k]['error'])} ({'met' if v[k]['met'] else 'not met'})"
            for k in ("model", "replica16_same", "calibrated")) + " |")
    c = t["constant"]
    if pred["calibrated_profile"] is None:
        L += ["", f"The secondary model is absent: {pred['calibrated_terms']['error']}."]
    L += ["", f"Constants (replica16's median measured speedup, from its timings): durable "
          f"{c['durable']:.2f}, relaxed {c['relaxed']:.2f}."]
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- the command

def report(folder: str = FOLDER, doc: str | None = DOC, progress=print) -> str:
    pred = predictions(folder, progress)
    t = tables(pred, folder)
    md = markdown(t, pred, folder)
    d16._write(os.path.join(folder, "report.json"), json.dumps(
        {"predictions": pred, "tables": d16._jsonable(t)}, indent=1, sort_keys=True) + "\n")
    d16._write(os.path.join(folder, "report.md"), md)
    if doc:
        update_doc(doc, md)
    return md


def doc_section(md: str) -> str:
    body = md.split("\n", 2)[2].replace("\n## ", "\n### ")
    return (f"{DOC_TITLE}\n\nA held-out test on workloads no fit has seen "
            "(`traces/calibration/device16_w3/`: README.md, preregistered.json; "
            "`traces/record/new_workloads16.py`): oltp_write_only at 32 clients and "
            "oltp_update_non_index at 8, recorded by a durable primary on a lent machine of "
            "replica16's type and applied there by relay_replay.py. The tables are `report.md`'s, "
            "regenerated by `make device16-w3-report`.\n\n" + BEGIN + "\n" + body + END + "\n")


def update_doc(path: str, md: str) -> None:
    """Replace this section, or put it right after device16's (at the end when that is absent)."""
    d16.put_section(path, doc_section(md), DOC_TITLE, END, after=d16.END)


def cli(argv, *, prog: str, description: str, folder: str, unpack_run, report_run,
        tables_md) -> int:
    """The unpack / report / tables command line that this test's runs share:
    `unpack_run(src, folder, binlogs, progress)`, `report_run(folder, doc, progress)`,
    `tables_md(stored predictions, folder)`; a bad file is one line on stderr, exit 1."""
    ap = argparse.ArgumentParser(prog=prog, description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", default=folder, help="the run's folder (default: %(default)s)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("unpack", help="the device run's files into the folder, binlogs imported")
    u.add_argument("src", help="the folder the run's $OUT came back in")
    u.add_argument("--binlogs", default=BINLOGS, help="where the binlogs go (ignored folder)")
    r = sub.add_parser("report", help="simulate, write report.md, report.json and the doc's part")
    r.add_argument("--no-doc", action="store_true", help="leave docs/calibration.md alone")
    sub.add_parser("tables", help="report.md again from report.json's stored predictions")
    a = ap.parse_args(argv)
    quiet = (lambda s: None) if not sys.stderr.isatty() else (lambda s: print(s, file=sys.stderr))
    try:
        if a.cmd == "unpack":
            names = unpack_run(a.src, a.folder, a.binlogs, quiet)
            print(f"unpacked {', '.join(names)} into {a.folder}")
        elif a.cmd == "report":
            sys.stdout.write(report_run(a.folder, None if a.no_doc else DOC, quiet))
        else:
            with open(os.path.join(a.folder, "report.json")) as f:
                pred = json.load(f)["predictions"]
            sys.stdout.write(tables_md(pred, a.folder))
    except (DataError, OSError, KeyError, json.JSONDecodeError, tarfile.TarError) as e:
        print(f"{prog}: {type(e).__name__ if isinstance(e, KeyError) else ''}{e}",
              file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    return cli(argv, prog="new_workloads16", description=__doc__, folder=FOLDER,
               unpack_run=unpack, report_run=report,
               tables_md=lambda pred, folder: markdown(tables(pred, folder), pred, folder))


if __name__ == "__main__":
    sys.exit(main())
