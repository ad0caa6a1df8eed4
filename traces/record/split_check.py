#!/usr/bin/env python3
"""The split what-if against a real replica (docs/blame.md).

    python traces/record/split_check.py measure --out DIR [--chunks C] [--sync relaxed]
        [--workdir /dev/shm [--servers-tmpdir]] [--primary-setting NAME=VALUE ...]
        [--replica-setting NAME=VALUE ...] [--max-minutes M] [calibrate options]
    python traces/record/split_check.py report DIR [--profile P] [--json]

`measure`: two private primary/replica pairs (calibrate.py's `Rig`, ports --port .. --port+3),
one recording `bulk_updates.lua` as is ("whole"), the other the same workload with every bulk
UPDATE sent as C autocommit chunks ("split"). Their replicas' applies are then timed: per round
the configurations in a shuffled order, and each configuration's two applies back to back in a
random order, so a pair sees the same host. On this shared VM the disk's sync latency jumps
between ~0.2 and ~4 ms within minutes (the first attempt, docs/blame.md): `--workdir /dev/shm`
puts the datadirs, relay logs and snapshots on tmpfs, and `--sync relaxed` times replicas that
do not sync; the disk is still probed (fdatasync in --disk-probe-dir, default DIR) before each
apply, for the record; `--servers-tmpdir` moves the servers' temporary files (where a
transaction's binlog cache beyond `binlog_cache_size` spills) there too.
`--primary-setting binlog_commit_wait_count=N` makes the primary's commit groups by count, not
by the disk's sync latency (on tmpfs a primary groups next to nothing). Rows go to DIR/runs.csv (calibrate's columns + `workload`, `disk_fsync_ms`), the
traces to DIR/{whole,split}.jsonl.gz.
`report`: per configuration, the split/whole apply ratio of each round and the speedup change
of each round (serial ratio / parallel ratio - 1), with its median, a 95% interval of the median
(order statistics) and a sign test; the medians of all runs (and per disk state: fast < 1 ms <=
slow); against two predictions of the model with the profile of the replicas' durability:
scoring the two recorded traces, and the split what-if applied to the whole trace alone (every
multi-row transaction cut into C chunks, as `commitsched blame --split-top` does). It also says
which of the trace's size fields (rows, events, bytes) the profile's costs read.
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


PROFILE_FOR_SYNC = {"durable": "durable-mariadb", "relaxed": "relaxed-mariadb"}


class ReportError(Exception):
    """A results folder that cannot be reported on (one line, no traceback)."""


def read_runs(folder: str) -> list[dict]:
    """runs.csv's rows; one durability only (the timed applies of one session)."""
    path = os.path.join(folder, "runs.csv")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise ReportError(f"{path}: {e.strerror}") from None
    need = {"workload", "round", "sync", "mode", "threads", "apply_s", "load_before"}
    if not rows or need - set(rows[0]):
        raise ReportError(f"{path}: no runs, or columns missing: "
                          f"{', '.join(sorted(need - set(rows[0] if rows else {})))}")
    syncs = sorted({r["sync"] for r in rows})
    if len(syncs) != 1:
        raise ReportError(f"{path}: runs of several durabilities ({', '.join(syncs)}); "
                          "one session measures one")
    for i, r in enumerate(rows, 2):
        if r["workload"] not in WORKLOADS:
            raise ReportError(f"{path}, line {i}: workload {r['workload']!r}, not whole/split")
        try:
            r["apply_s"], r["threads"] = float(r["apply_s"]), int(r["threads"])
            r["load_before"] = float(r["load_before"])
            # the disk's sync latency: the probe of the disk itself when the servers ran on
            # tmpfs (disk_fsync_ms), else the probe in the replica's datadir (fsync_ms)
            r["disk_ms"] = float(r.get("disk_fsync_ms") or r["fsync_ms"])
        except (TypeError, ValueError):
            raise ReportError(f"{path}, line {i}: a number expected in apply_s, threads, "
                              "load_before and fsync_ms") from None
    return rows


def measured(rows: list[dict], fsync: str | None = None) -> tuple[dict, list[float]]:
    """workload -> (mode, threads) -> median apply seconds (serial: ("-", 0)), and the loads
    seen; `fsync` "fast"/"slow" keeps only the runs whose disk probe said so."""
    runs: dict = {}
    loads = []
    for row in rows:
        fast = row["disk_ms"] < 1.0
        if fsync is not None and fast != (fsync == "fast"):
            continue
        runs.setdefault(row["workload"], {}).setdefault(
            (row["mode"], row["threads"]), []).append(row["apply_s"])
        loads.append(row["load_before"])
    return ({w: {k: statistics.median(v) for k, v in by.items()} for w, by in runs.items()},
            loads)


def paired(rows: list[dict]) -> dict:
    """(mode, threads) -> round -> split apply / whole apply (the two applies of one
    configuration in one round: back to back since the pairing, minutes apart before)."""
    by: dict = {}
    for row in rows:
        by.setdefault((row["mode"], row["threads"], row["round"]), {})[
            row["workload"]] = row["apply_s"]
    ratios: dict = {}
    for (mode, threads, rnd), v in by.items():
        if len(v) == 2:
            ratios.setdefault((mode, threads), {})[rnd] = v["split"] / v["whole"]
    return ratios


def median_interval(values: list[float], level: float = 0.95) -> list:
    """Distribution-free interval of the median (order statistics, scipy's quantile_test);
    None for an end that too few values cannot bound."""
    from scipy.stats import quantile_test
    ci = quantile_test(values, q=statistics.median(values), p=0.5).confidence_interval(level)
    return [round(float(x), 4) if abs(float(x)) != float("inf") and x == x else None
            for x in (ci.low, ci.high)]


def sign_test(values: list[float]) -> dict:
    """How many values are above 0 and below, and the two-sided sign test's p (ties dropped)."""
    from scipy.stats import binomtest
    up, down = sum(v > 0 for v in values), sum(v < 0 for v in values)
    p = binomtest(up, up + down).pvalue if up + down else 1.0
    return {"above": up, "below": down, "p": round(float(p), 6)}


def paired_changes(ratios: dict) -> list[dict]:
    """Per parallel configuration, the speedup change of each round (serial ratio / parallel
    ratio - 1: the split's speedup over the whole's, both from applies of that round), its
    median with a 95% interval, and a sign test of "split speeds the replica up"."""
    serial = ratios.get(("-", 0), {})
    out = []
    for (mode, threads), by in sorted(ratios.items()):
        if threads == 0:
            continue
        rounds = sorted(set(by) & set(serial), key=int)
        if not rounds:
            continue
        par = [by[r] for r in rounds]
        change = [serial[r] / by[r] - 1 for r in rounds]
        out.append({"mode": mode, "threads": threads, "rounds": len(rounds),
                    "apply_ratio": round(statistics.median(par), 4),
                    "ratio_range": [round(min(par), 4), round(max(par), 4)],
                    "ratio_ci95": median_interval(par),
                    "speedup_change": round(statistics.median(change), 4),
                    "change_ci95": median_interval(change),
                    "change_range": [round(min(change), 4), round(max(change), 4)],
                    "sign_test": sign_test(change)})
    return out


SIZE_UNITS = {"_event": "events", "_byte": "bytes", "_row": "rows", "_rows": "rows"}


def size_terms(profile) -> dict:
    """Which of the trace's size fields the profile's costs read, and with what coefficient
    (its fields named per event / byte / row, non-zero): events, bytes, rows."""
    import dataclasses
    out: dict = {"events": {}, "bytes": {}, "rows": {}}
    for f in dataclasses.fields(profile):
        for suffix, unit in SIZE_UNITS.items():
            v = getattr(profile, f.name)
            if f.name.endswith(suffix) and isinstance(v, (int, float)) and v:
                out[unit][f.name] = v
    return out


def cost_examples(txns, profile) -> dict:
    """The profile's execution cost of the median one-row and the median multi-row transaction
    (with their size fields): how much more a bulk UPDATE costs the model."""
    out = {}
    for kind, pick in (("one_row", lambda t: len(t.writes) == 1),
                       ("multi_row", lambda t: len(t.writes) >= 2)):
        sel = sorted((t for t in txns if pick(t)), key=profile.exec_cost)
        if sel:
            t = sel[len(sel) // 2]
            out[kind] = {"exec_us": round(profile.exec_cost(t), 2), "rows": t.rows, "events": t.events,
                         "bytes": t.bytes, "count": len(sel)}
    return out


def makespan(txns, mode: str, threads: int, profile) -> float:
    """The model's apply time: serial for threads 0, else MariaDB's `mode` on `threads`."""
    from commitsched.metrics import RunMetrics
    from commitsched.schedulers import run_scheduler
    name, w = ("serial", 1) if threads == 0 else (f"commit_id+mariadb_{mode}", threads)
    m = RunMetrics(w)
    run_scheduler(name, iter(txns), w, profile, m)
    return m.makespan


def predicted(txns, mode: str, threads: int, profile) -> float:
    """The model's speedup of `mode` on `threads` over the serial apply."""
    return makespan(txns, "-", 0, profile) / makespan(txns, mode, threads, profile)


def disk_probe_dir(a) -> str:
    """Where the per-apply disk probe syncs: --disk-probe-dir, else the results folder (on the
    machine's disk even when the servers run on tmpfs, so the disk's state is still on record)."""
    return a.disk_probe_dir or a.out


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
    if a.workdir:
        os.makedirs(a.workdir, exist_ok=True)
    root = tempfile.mkdtemp(prefix="commitsched-split-", dir=a.workdir)
    os.chmod(root, 0o755)
    a.primary_settings = dict(kv.split("=", 1) for kv in a.primary_setting)
    a.replica_settings = dict(kv.split("=", 1) for kv in a.replica_setting)
    if a.servers_tmpdir:
        # the servers' temporary files (a transaction's binlog cache beyond binlog_cache_size
        # spills there) next to their datadirs, not on the disk's /tmp
        tmp = os.path.join(root, "tmp")
        os.makedirs(tmp)
        os.chmod(tmp, 0o1777)   # the server may run as another user (mysql)
        a.primary_settings["tmpdir"] = a.replica_settings["tmpdir"] = tmp
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
    probes = {"start_servers_dir": fsync_probe(root), "start_disk": fsync_probe(disk_probe_dir(a))}
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
    fields = ("workload",) + calibrate.RUN_FIELDS + ("disk_fsync_ms",)
    runs_csv = os.path.join(a.out, "runs.csv")
    with open(runs_csv, "w", newline="") as f:
        csv.writer(f).writerow(fields)
    rng = random.Random(a.seed)
    cfgs = calibrate.configs(a.threads_list, a.modes, [a.sync])
    rounds_done, t_round = 0, 0.0
    for rnd in range(1, a.rounds + 1):
        # a round started is a round finished: the next starts only if it fits the budget,
        # as long as the last one took
        if a.max_minutes and time.time() - t_start + t_round > 60 * a.max_minutes:
            calibrate.log(f"time budget: stopping after {rounds_done} rounds")
            break
        t0 = time.time()
        # the configurations in a shuffled order; each one's two applies back to back, in a
        # random order: a pair sees the same host state (seconds apart), whatever it is
        rng.shuffle(cfgs)
        order = []
        for c in cfgs:
            pair = list(WORKLOADS)
            rng.shuffle(pair)
            order += [(w, c) for w in pair]
        for i, (w, (sync, mode, threads)) in enumerate(order, 1):
            disk_ms = fsync_probe(disk_probe_dir(a), n=30)["median_ms"]
            row = rigs[w].run(sync, mode, threads)
            row.update(workload=w, round=rnd, order=i, repeated=False, purpose="predict",
                       disk_fsync_ms=disk_ms)
            with open(runs_csv, "a", newline="") as f:
                csv.DictWriter(f, fields).writerow(row)
            calibrate.log(f"round {rnd} #{i}: {w:5} {mode:12} threads {threads:2}: "
                          f"{row['apply_s']:8.3f} s  disk fsync {disk_ms} ms  load "
                          f"{row['load_before']:.1f}  checksum "
                          f"{'ok' if row['checksum_ok'] else 'DIFFERENT'}")
        rounds_done, t_round = rnd, time.time() - t0
    probes["end_servers_dir"] = fsync_probe(root)
    probes["end_disk"] = fsync_probe(disk_probe_dir(a))
    meta = {"measured_by": "traces/record/split_check.py measure",
            "command": "python traces/record/split_check.py " + " ".join(sys.argv[1:]),
            "host": {"cpus": os.cpu_count(), "load_at_start": load_start,
                     "load_end": loadavg()},
            "servers_dir": a.workdir or tempfile.gettempdir(), "sync": a.sync,
            "primary_extra_settings": a.primary_settings,
            "replica_extra_settings": a.replica_settings,
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
            "total_s": round(time.time() - t_start, 1), "chunks": a.chunks,
            "rounds": rounds_done, "rounds_asked": a.rounds,
            "fsync_probes": probes, "workloads": info}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return 0


def compare(folder: str, profile_name: str | None, chunks: int) -> dict:
    from commitsched.profiles import get_profile
    from commitsched.split import split_txns
    from commitsched.trace import load_trace
    rows = read_runs(folder)
    sync = rows[0]["sync"]
    profile_name = profile_name or PROFILE_FOR_SYNC[sync]
    profile = get_profile(profile_name)
    whole = load_trace(os.path.join(folder, "whole.jsonl.gz")).txns
    split_rec = load_trace(os.path.join(folder, "split.jsonl.gz")).txns
    big = {t.seq: chunks for t in whole if len(t.writes) >= 2}
    whatif, _ = split_txns(whole, big, profile)
    out = {"profile": profile_name, "sync": sync, "chunks": chunks,
           "transactions": {"whole": len(whole), "split": len(split_rec),
                            "whole_multi_row": len(big)},
           "profile_size_terms": size_terms(profile),
           "profile_exec_cost": cost_examples(whole, profile), "states": {}}
    cache: dict = {}

    def pred(txns, key, mode, threads):
        k = (key, mode, threads)
        if k not in cache:
            cache[k] = predicted(txns, mode, threads, profile)
        return cache[k]
    ratios = paired(rows)
    if ("-", 0) in ratios:
        ser = list(ratios[("-", 0)].values())
        out["paired_serial_ratio"] = round(statistics.median(ser), 4)
        out["paired_serial_range"] = [round(min(ser), 4), round(max(ser), 4)]
        out["paired_serial_ci95"] = median_interval(ser)
        out["paired"] = paired_changes(ratios)
        for r in out["paired"]:
            r["predicted_whatif"] = round(pred(whatif, "whatif", r["mode"], r["threads"])
                                          / pred(whole, "whole", r["mode"], r["threads"]) - 1, 4)
            r["predicted_scored"] = round(pred(split_rec, "split", r["mode"], r["threads"])
                                          / pred(whole, "whole", r["mode"], r["threads"]) - 1, 4)
            # the model's split apply / whole apply, to hold against the measured apply ratio
            base = makespan(whole, r["mode"], r["threads"], profile)
            r["predicted_apply_ratio"] = {
                "whatif": round(makespan(whatif, r["mode"], r["threads"], profile) / base, 4),
                "scored": round(makespan(split_rec, r["mode"], r["threads"], profile) / base, 4)}
        base = makespan(whole, "-", 0, profile)
        out["predicted_serial_ratio"] = {
            "whatif": round(makespan(whatif, "-", 0, profile) / base, 4),
            "scored": round(makespan(split_rec, "-", 0, profile) / base, 4)}
    for state in (None, "fast", "slow"):
        med, loads = measured(rows, state)
        if not all(w in med and ("-", 0) in med[w] for w in WORKLOADS):
            continue
        table = []
        for (mode, threads) in sorted(k for k in med["whole"] if k[1] > 0):
            if (mode, threads) not in med["split"]:
                continue
            sw = med["whole"][("-", 0)] / med["whole"][(mode, threads)]
            ss = med["split"][("-", 0)] / med["split"][(mode, threads)]
            pw = pred(whole, "whole", mode, threads)
            ps = pred(split_rec, "split", mode, threads)
            pf = pred(whatif, "whatif", mode, threads)
            table.append({"mode": mode, "threads": threads,
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
            "load_average": [min(loads), max(loads)], "rows": table}
    return out


def _num(x) -> str:
    return "?" if x is None else f"{x:.2f}"


def _pct(x) -> str:
    return "?" if x is None else f"{100 * x:+.1f}%"


def _signed_pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%".replace("-", "\u2212")


def markdown_table(out: dict) -> str:
    """The docs' table (docs/blame.md, "The real-replica check"), printed from the figures."""
    def r3(x):
        return f"{x:.3f}"

    def r2(x):
        return "-" if x is None else f"{x:.2f}"
    ps = out["predicted_serial_ratio"]
    lo, hi = out["paired_serial_ci95"]
    mn, mx = out["paired_serial_range"]
    lines = ["| mode | threads | split apply / whole apply: median (95% interval) [min, max] "
             "| predicted (what-if / recordings) | speedup change, per round: median (95% "
             "interval) | rounds with the change up / down (sign test p) | predicted change "
             "(what-if / recordings) |", "|---|---|---|---|---|---|---|",
             f"| serial | 1 | {r3(out['paired_serial_ratio'])} ({r2(lo)}, {r2(hi)}) "
             f"[{r2(mn)}, {r2(mx)}] | {r3(ps['whatif'])} / {r3(ps['scored'])} | | | |"]
    for row in out["paired"]:
        lo, hi = row["ratio_ci95"]
        mn, mx = row["ratio_range"]
        cl, ch = row["change_ci95"]
        st = row["sign_test"]
        pa = row["predicted_apply_ratio"]
        lines.append(
            f"| {row['mode']} | {row['threads']} | {r3(row['apply_ratio'])} ({r2(lo)}, {r2(hi)}) "
            f"[{r2(mn)}, {r2(mx)}] | {r3(pa['whatif'])} / {r3(pa['scored'])} | "
            f"{_signed_pct(row['speedup_change'])} ({_signed_pct(cl)}, {_signed_pct(ch)}) | "
            f"{st['above']} / {st['below']} (p {st['p']:.2g}) | "
            f"{_signed_pct(row['predicted_whatif'])} / {_signed_pct(row['predicted_scored'])} |")
    return "\n".join(lines)


def print_report(out: dict) -> None:
    t = out["transactions"]
    print(f"whole: {t['whole']} transactions ({t['whole_multi_row']} multi-row), split: "
          f"{t['split']}; replicas {out['sync']}; profile {out['profile']}")
    terms = out["profile_size_terms"]
    print("the profile's size terms: " + "; ".join(
        f"{unit}: " + (", ".join(f"{k}={v:g}" for k, v in terms[unit].items()) or "not used")
        for unit in ("rows", "events", "bytes")))
    for kind, c in out["profile_exec_cost"].items():
        print(f"  its execution cost of the median {kind.replace('_', '-')} transaction "
              f"(of {c['count']}): {c['exec_us']:.1f} us (rows {c['rows']}, events "
              f"{c['events']}, bytes {c['bytes']})")
    if "paired" in out:
        lo, hi = out["paired_serial_range"]
        sci = out["paired_serial_ci95"]
        print(f"\npaired by round: split apply / whole apply, median [min, max] over rounds"
              f" (95% interval of the median): serial {out['paired_serial_ratio']:.3f} "
              f"[{lo:.2f}, {hi:.2f}] ({_num(sci[0])}, {_num(sci[1])}); predicted "
              f"{out['predicted_serial_ratio']['whatif']:.3f} (what-if) / "
              f"{out['predicted_serial_ratio']['scored']:.3f} (scored recordings)")
        print("speedup change of each round (serial ratio / parallel ratio - 1): median "
              "[95% interval of the median]; sign test; predicted (what-if / scored recordings)")
        for r in out["paired"]:
            lo, hi = r["ratio_range"]
            st = r["sign_test"]
            ci = r["change_ci95"]
            rci = r["ratio_ci95"]
            print(f"  {r['mode']:<13}{r['threads']:>3}: apply ratio {r['apply_ratio']:.3f} "
                  f"[{lo:.2f}, {hi:.2f}] ({_num(rci[0])}, {_num(rci[1])}), predicted "
                  f"{r['predicted_apply_ratio']['whatif']:.3f} / "
                  f"{r['predicted_apply_ratio']['scored']:.3f}; change {_pct(r['speedup_change'])} "
                  f"[{_pct(ci[0])}, {_pct(ci[1])}], {st['above']} up / {st['below']} down of "
                  f"{r['rounds']} (p {st['p']:.2g}); predicted {_pct(r['predicted_whatif'])} / "
                  f"{_pct(r['predicted_scored'])}")
    for state, st in out["states"].items():
        sa = st["serial_apply_s"]
        probe = {"fast": "< 1 ms", "slow": ">= 1 ms"}.get(state, "any")
        print(f"\nmedians of runs: {state} (disk fsync probe {probe}); serial apply "
              f"{sa['whole']:.3f} s whole, {sa['split']:.3f} s split; load average "
              f"{st['load_average'][0]:.1f}-{st['load_average'][1]:.1f}")
        print(f"{'mode':<13}{'W':>3} | {'measured whole':>14} {'split':>6} {'change':>7} | "
              f"{'scored whole':>12} {'split':>6} {'change':>7} | {'what-if':>7} {'change':>7}")
        for row in st["rows"]:
            mm, sc, w = row["measured"], row["scored"], row["whatif"]
            print(f"{row['mode']:<13}{row['threads']:>3} | {mm['whole']:>14.2f} "
                  f"{mm['split']:>6.2f} {100 * mm['change']:>+6.1f}% | {sc['whole']:>12.2f} "
                  f"{sc['split']:>6.2f} {100 * sc['change']:>+6.1f}% | {w['split']:>7.2f} "
                  f"{100 * w['change']:>+6.1f}%")


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
    m.add_argument("--max-minutes", type=float, default=0,
                   help="start no round that would end after this many minutes (0: no limit)")
    m.add_argument("--port", type=int, default=33500, help="uses this port and the next 3")
    m.add_argument("--sync", choices=("durable", "relaxed"), default="durable",
                   help="the replicas' durability in the timed applies")
    m.add_argument("--workdir", help="where the servers' datadirs, relay logs and snapshots "
                   "go (e.g. /dev/shm: no disk sync latency); default: the temporary folder")
    m.add_argument("--disk-probe-dir", help="the disk the fsync probe before each apply "
                   "measures (default: --out)")
    m.add_argument("--primary-setting", action="append", default=[], metavar="NAME=VALUE",
                   help="extra primary server setting, e.g. binlog_commit_wait_count=8")
    m.add_argument("--replica-setting", action="append", default=[], metavar="NAME=VALUE",
                   help="extra replica server setting in the timed applies")
    m.add_argument("--servers-tmpdir", action="store_true",
                   help="the servers' tmpdir in --workdir's folder (default: the server's, /tmp)")
    r = sub.add_parser("report")
    r.add_argument("dir")
    r.add_argument("--profile", help="default: durable-mariadb or relaxed-mariadb, as the "
                   "replicas' durability in runs.csv")
    r.add_argument("--chunks", type=int, default=4)
    r.add_argument("--json", action="store_true")
    r.add_argument("--markdown", action="store_true",
                   help="only the paired table, as docs/blame.md shows it")
    a = ap.parse_args(argv)
    if a.cmd == "measure":
        for opt, kvs in (("--primary-setting", a.primary_setting),
                         ("--replica-setting", a.replica_setting)):
            for kv in kvs:
                if "=" not in kv.strip("="):
                    ap.error(f"{opt} {kv!r}: expected NAME=VALUE")
        return cmd_measure(a)
    from commitsched.profiles import ProfileError
    from commitsched.trace import TraceError
    try:
        out = compare(a.dir, a.profile, a.chunks)
    except (ReportError, ProfileError, TraceError) as e:
        print(f"split_check: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(out, indent=1))
    elif a.markdown:
        print(markdown_table(out))
    else:
        print_report(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
