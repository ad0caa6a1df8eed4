#!/usr/bin/env python3
"""The split what-if against a real replica (docs/blame.md).

    python traces/record/split_check.py measure --out DIR [--chunks C] [calibrate options]
    python traces/record/split_check.py report DIR [--profile P] [--json]

`measure`: two private primary/replica pairs (calibrate.py's `Rig`, ports --port .. --port+3),
one recording `bulk_updates.lua` as is ("whole"), the other the same workload with every bulk
UPDATE sent as C autocommit chunks ("split"). Their replicas' applies are then timed
interleaved, in one shuffled order per round, so both see the same host: on a shared VM the
disk's sync latency jumps between ~0.2 and ~4 ms within minutes, and two sessions measured one
after the other are not comparable (the first attempt, docs/blame.md). Rows go to
DIR/runs.csv (calibrate's columns + `workload`), the traces to DIR/{whole,split}.jsonl.gz.
`report`: per mode and thread count the measured speedup (median serial apply / median parallel
apply) of each recording and its change, against two predictions of the model: scoring the two
recorded traces, and the split what-if applied to the whole trace alone (every multi-row
transaction cut into C chunks, as `commitsched blame --split-top` does). Medians are also given
per fsync state (the probe before each run: fast < 1 ms <= slow).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))


WORKLOADS = ("whole", "split")


def measured(folder: str, fsync: str | None = None) -> tuple[dict, list[float]]:
    """workload -> (mode, threads) -> median apply seconds (serial: ("-", 0)), and the loads
    seen; `fsync` "fast"/"slow" keeps only the runs whose disk probe said so."""
    runs: dict = {}
    loads = []
    with open(os.path.join(folder, "runs.csv")) as f:
        for row in csv.DictReader(f):
            if row["sync"] != "durable":
                continue
            fast = float(row["fsync_ms"]) < 1.0
            if fsync is not None and fast != (fsync == "fast"):
                continue
            runs.setdefault(row["workload"], {}).setdefault(
                (row["mode"], int(row["threads"])), []).append(float(row["apply_s"]))
            loads.append(float(row["load_before"]))
    return ({w: {k: statistics.median(v) for k, v in by.items()} for w, by in runs.items()},
            loads)


def paired(folder: str) -> dict:
    """(mode, threads) -> the ratios split apply / whole apply of each round, sorted (the two
    runs of one round are minutes apart at most: the same host state, more or less)."""
    by: dict = {}
    with open(os.path.join(folder, "runs.csv")) as f:
        for row in csv.DictReader(f):
            if row["sync"] == "durable":
                by.setdefault((row["mode"], int(row["threads"]), row["round"]), {})[
                    row["workload"]] = float(row["apply_s"])
    ratios: dict = {}
    for (mode, threads, _), v in by.items():
        if len(v) == 2:
            ratios.setdefault((mode, threads), []).append(v["split"] / v["whole"])
    return {k: sorted(v) for k, v in ratios.items()}


def predicted(txns, mode: str, threads: int, profile) -> float:
    from commitsched.metrics import RunMetrics
    from commitsched.schedulers import run_scheduler
    ms = {}
    for name, w in (("serial", 1), (f"commit_id+mariadb_{mode}", threads)):
        m = RunMetrics(w)
        run_scheduler(name, iter(txns), w, profile, m)
        ms[name] = m.makespan
    return ms["serial"] / ms[f"commit_id+mariadb_{mode}"]


def cmd_measure(a) -> int:
    import random
    import shutil
    import signal
    import tempfile
    import time
    sys.path.insert(0, HERE)
    import calibrate
    from calib_server import find_tools, fsync_probe, loadavg
    from record import _import_importers
    tools = find_tools()
    import_binlog = _import_importers()
    os.makedirs(a.out, exist_ok=True)
    root = tempfile.mkdtemp(prefix="commitsched-split-")
    os.chmod(root, 0o755)
    rigs = {}
    for i, w in enumerate(WORKLOADS):
        ns = argparse.Namespace(**vars(a))
        ns.port = a.port + 2 * i
        ns.sysbench_arg = list(a.sysbench_arg) + [
            f"--bulk_chunks={1 if w == 'whole' else a.chunks}"]
        os.makedirs(os.path.join(root, w))
        rigs[w] = calibrate.Rig(ns, tools, os.path.join(root, w))

    def cleanup(*_):
        for rig in rigs.values():
            rig.replica.stop()
            rig.primary.stop()
        shutil.rmtree(root, ignore_errors=True)
    import atexit
    atexit.register(cleanup)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s_, f: sys.exit(128 + s_))
    t_start, load_start = time.time(), loadavg()
    info = {}
    for w, rig in rigs.items():
        info[w] = rig.setup()
        paths = info[w].pop("paths")
        source = dict(info[w], recorded_by="traces/record/split_check.py measure",
                      workload=f"bulk_updates ({w})", client_threads=a.threads,
                      time_unit="s (timestamp: binlog event time, 1 s resolution)")
        stats = import_binlog(paths, os.path.join(a.out, f"{w}.jsonl.gz"), schema=rig.schema,
                              source=source, binlog_tool=tools["binlog"])
        info[w]["transactions"] = stats.transactions
        calibrate.log(f"{w}: {stats.transactions} transactions, {stats.groups} commit groups")
    fields = ("workload",) + calibrate.RUN_FIELDS
    runs_csv = os.path.join(a.out, "runs.csv")
    with open(runs_csv, "w", newline="") as f:
        csv.writer(f).writerow(fields)
    rng = random.Random(a.seed)
    cfgs = calibrate.configs(a.threads_list, a.modes, ["durable"])
    for rnd in range(1, a.rounds + 1):
        order = [(w, c) for w in WORKLOADS for c in cfgs]
        rng.shuffle(order)
        for i, (w, (sync, mode, threads)) in enumerate(order, 1):
            row = rigs[w].run(sync, mode, threads)
            row.update(workload=w, round=rnd, order=i, repeated=False, purpose="predict")
            with open(runs_csv, "a", newline="") as f:
                csv.DictWriter(f, fields).writerow(row)
            calibrate.log(f"round {rnd} #{i}: {w:5} {mode:12} threads {threads:2}: "
                          f"{row['apply_s']:8.3f} s  fsync {row['fsync_ms']} ms  load "
                          f"{row['load_before']:.1f}  checksum "
                          f"{'ok' if row['checksum_ok'] else 'DIFFERENT'}")
    meta = {"measured_by": "traces/record/split_check.py measure",
            "command": "python traces/record/split_check.py " + " ".join(sys.argv[1:]),
            "host": {"cpus": os.cpu_count(), "load_at_start": load_start,
                     "load_end": loadavg()},
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
            "total_s": round(time.time() - t_start, 1), "chunks": a.chunks,
            "fsync_probe_end": fsync_probe(root), "workloads": info}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return 0


def compare(folder: str, profile_name: str, chunks: int) -> dict:
    from commitsched.profiles import get_profile
    from commitsched.split import split_txns
    from commitsched.trace import load_trace
    profile = get_profile(profile_name)
    whole = load_trace(os.path.join(folder, "whole.jsonl.gz")).txns
    split_rec = load_trace(os.path.join(folder, "split.jsonl.gz")).txns
    big = {t.seq: chunks for t in whole if len(t.writes) >= 2}
    whatif, _ = split_txns(whole, big, profile)
    out = {"profile": profile_name, "chunks": chunks,
           "transactions": {"whole": len(whole), "split": len(split_rec),
                            "whole_multi_row": len(big)}, "states": {}}
    cache: dict = {}

    def pred(txns, key, mode, threads):
        k = (key, mode, threads)
        if k not in cache:
            cache[k] = predicted(txns, mode, threads, profile)
        return cache[k]
    ratios = paired(folder)
    pr = {k: statistics.median(v) for k, v in ratios.items()}
    if ("-", 0) in pr:
        out["paired"] = [{"mode": m, "threads": t, "apply_ratio": round(r, 4),
                          "ratio_range": [round(ratios[(m, t)][0], 4),
                                          round(ratios[(m, t)][-1], 4)],
                          "speedup_change": round(pr[("-", 0)] / r - 1, 4)}
                         for (m, t), r in sorted(pr.items()) if t > 0]
        out["paired_serial_ratio"] = round(pr[("-", 0)], 4)
        out["paired_serial_range"] = [round(ratios[("-", 0)][0], 4),
                                      round(ratios[("-", 0)][-1], 4)]
    for state in (None, "fast", "slow"):
        med, loads = measured(folder, state)
        if not all(w in med and ("-", 0) in med[w] for w in WORKLOADS):
            continue
        rows = []
        for (mode, threads) in sorted(k for k in med["whole"] if k[1] > 0):
            if (mode, threads) not in med["split"]:
                continue
            sw = med["whole"][("-", 0)] / med["whole"][(mode, threads)]
            ss = med["split"][("-", 0)] / med["split"][(mode, threads)]
            pw = pred(whole, "whole", mode, threads)
            ps = pred(split_rec, "split", mode, threads)
            pf = pred(whatif, "whatif", mode, threads)
            rows.append({"mode": mode, "threads": threads,
                         "measured": {"whole": round(sw, 3), "split": round(ss, 3),
                                      "change": round(ss / sw - 1, 4),
                                      "apply_change": round(med["split"][(mode, threads)]
                                                            / med["whole"][(mode, threads)] - 1,
                                                            4)},
                         "scored": {"whole": round(pw, 3), "split": round(ps, 3),
                                    "change": round(ps / pw - 1, 4)},
                         "whatif": {"split": round(pf, 3), "change": round(pf / pw - 1, 4)}})
        out["states"][state or "all"] = {
            "serial_apply_s": {w: med[w][("-", 0)] for w in WORKLOADS},
            "load_average": [min(loads), max(loads)], "rows": rows}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--chunks", type=int, default=4)
    m.add_argument("--workload", default="bulk_updates")
    m.add_argument("--threads", type=int, default=16, help="sysbench client threads")
    m.add_argument("--time", type=int, default=120)
    m.add_argument("--events", type=int, default=4000)
    m.add_argument("--tables", type=int, default=4)
    m.add_argument("--table-size", type=int, default=10000)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--sysbench-arg", action="append", default=[])
    m.add_argument("--threads-list", type=lambda s: [int(x) for x in s.split(",")],
                   default=[0, 2, 4])
    m.add_argument("--modes", type=lambda s: s.split(","), default=["conservative", "optimistic"])
    m.add_argument("--rounds", type=int, default=4)
    m.add_argument("--port", type=int, default=33500, help="uses this port and the next 3")
    r = sub.add_parser("report")
    r.add_argument("dir")
    r.add_argument("--profile", default="durable-mariadb")
    r.add_argument("--chunks", type=int, default=4)
    r.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "measure":
        return cmd_measure(a)
    out = compare(a.dir, a.profile, a.chunks)
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    t = out["transactions"]
    print(f"whole: {t['whole']} transactions ({t['whole_multi_row']} multi-row), split: "
          f"{t['split']}; profile {a.profile}")
    if "paired" in out:
        lo, hi = out["paired_serial_range"]
        print(f"\npaired by round (median of split apply / whole apply, [min, max] over rounds):"
              f" serial {out['paired_serial_ratio']:.3f} [{lo:.2f}, {hi:.2f}]")
        for r in out["paired"]:
            lo, hi = r["ratio_range"]
            print(f"  {r['mode']:<13}{r['threads']:>3}: apply ratio {r['apply_ratio']:.3f} "
                  f"[{lo:.2f}, {hi:.2f}], speedup change {100 * r['speedup_change']:+.1f}%")
    for state, st in out["states"].items():
        sa = st["serial_apply_s"]
        print(f"\nruns: {state} (fsync probe {'< 1 ms' if state == 'fast' else '>= 1 ms' if state == 'slow' else 'any'}); "
              f"serial apply {sa['whole']:.3f} s whole, {sa['split']:.3f} s split; load average "
              f"{st['load_average'][0]:.1f}-{st['load_average'][1]:.1f}")
        print(f"{'mode':<13}{'W':>3} | {'measured whole':>14} {'split':>6} {'change':>7} | "
              f"{'scored whole':>12} {'split':>6} {'change':>7} | {'what-if':>7} {'change':>7}")
        for row in st["rows"]:
            mm, sc, w = row["measured"], row["scored"], row["whatif"]
            print(f"{row['mode']:<13}{row['threads']:>3} | {mm['whole']:>14.2f} "
                  f"{mm['split']:>6.2f} {100 * mm['change']:>+6.1f}% | {sc['whole']:>12.2f} "
                  f"{sc['split']:>6.2f} {100 * sc['change']:>+6.1f}% | {w['split']:>7.2f} "
                  f"{100 * w['change']:>+6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
