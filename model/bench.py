"""`make bench`: the scorer's speed and memory, measured in one run and reported as figures and
ratios to the targets (never asserted: the machine is shared and noisy).

1. Generate (once, cached under build/bench/) a trace of `--transactions` (default 200,000)
   transactions and time loading it: as Txn objects (the reference engine's input) and as
   columns (model/columnar.py, the compiled core's), cold (from the file) and warm (from the
   column cache, model/column_cache.py), the median of `--load-runs` each.
2. The bench sweep in the compiled core (model/engine.py): every scheduler at W in
   {1, 2, 4, 8, 16, 64}: transactions per second of each run alone (the fastest of
   `--run-repeats`), and with the whole load
   added to each run, cold and warm (the issue 29 target: >= 1 M txn/s each, "load
   included"), beside the
   reference engine's rate on the same runs (a slice of the trace, `--reference-slice`).
3. Growth: time per transaction at W = 64 over W = 4, and at n over n/4.
4. Memory: the columns' bytes per transaction, and tracemalloc's peak of one compiled run.
5. Import (with `--binlog FILE... [--schema SQL]`): the binary reader against the server's own
   printer (as before).
6. A day (`--day N`, `make bench-day`: 10,000,000): `commitsched score` of a generated N-transaction
   trace over the report's default runs (every scheduler x W 1, 2, 4, 8, 16, no sampling), its
   wall time against 10 minutes and its peak memory (the proportional set size of all its
   processes, sampled every 0.2 s) against 200 bytes per transaction.
7. Compressed transactions (`--compressed N`, default 100,000; 0: skip): the same N
   oltp_update_index-like MySQL 8.0 transactions (one UPDATE of a sysbench row each) written
   plain and as a server with binlog_transaction_compression=ON writes them (zstd level 3,
   importers/mysql_writer.py), imported `--import-runs` times each, alternating: the reader's
   rate on the compressed path as a ratio to the plain path (CPU time, fastest of each), and
   the two traces alike but for each transaction's events and bytes.
8. A long drain (`--drain DURATION`, `make bench-drain`: 20m): `commitsched lag --backlog` of a
   generated 20,000-transaction two-client trace at W=2, where the drain's horizon is hundreds
   of laps of the trace: its wall time and peak memory (as in 6) per transaction its first
   attempt replays, against the 48 B that its two replays' times (source, dispatch, commit)
   take.
9. A day replayed as it arrived (`--lag N`, `make bench-lag`: 10,000,000, the trace of 6):
   `commitsched lag` of one configuration (writeset+mysql, W=4: two laps, the headroom
   search), its wall time per million transactions and its peak memory (as in 6) per
   transaction against the day's 200 bytes.
10. A day's report (`--report N`, `make bench-report`: 10,000,000, the trace of 6):
   `commitsched report --jobs 2` of the trace with its defaults (every scheduler x W 1, 2, 4, 8,
   16, the keeping-up replays, the what-ifs on their sample; the blame section is left out
   past 200,000 transactions), its wall time and peak memory (as in 6) per transaction, beside
   the day's 600 s and 200 bytes.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
import tracemalloc

from .metrics import RunMetrics
from .profiles import get_profile
from .schedulers import DEFAULT_SCHEDULERS, run_scheduler
from .trace import load_trace, write_trace

WORKERS = (1, 2, 4, 8, 16, 64)
TARGET_TPS = 1_000_000              # each run of the sweep, load included (issue 29)
DAY_SECONDS = 600.0                 # a day's sweep (issue 29)
DAY_BYTES_PER_TXN = 200.0
LOAD_TARGET_TPS = 500_000           # trace load, parse + validate into memory (issue 13)
IMPORT_TARGET_RATIO = 10.0          # binary import rate / the printer's decode rate (issue 13)


def _trace_path(n: int, directory: str) -> str:
    return os.path.join(directory, f"bench-{n}.jsonl.gz")


def ensure_trace(n: int, directory: str, log) -> str:
    from .generate import generate, generate_source_header
    path = _trace_path(n, directory)
    if not os.path.exists(path):
        params = dict(workload="oltp_read_write", clients=32, tables=8, seed=7, rotate_every=200_000)
        log(f"generating {n} transactions into {path} (once; cached)")
        t0 = time.perf_counter()
        write_trace(path, generate(n, **params), generate_source_header(n, **params))
        log(f"  generated in {time.perf_counter() - t0:.1f} s")
    return path


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _import_rows(binlogs: list[str], schema: str | None, directory: str, log,
                 text: bool = True, runs: int = 3) -> dict:
    """Time the binary reader, the printer alone and (`text`) printer + text importer on the
    same binlog files, wall clock and CPU time (the machine is shared: CPU time is what the
    work itself took)."""
    import shutil
    import subprocess
    from .importers import import_binlog
    printer = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    out_native = os.path.join(directory, "import-native.jsonl")
    out_text = os.path.join(directory, "import-text.jsonl")
    name = os.path.basename(binlogs[0]) + (f" (+{len(binlogs) - 1} files)" if len(binlogs) > 1
                                           else "")

    def native():
        t0, c0 = time.perf_counter(), time.process_time()
        stats = import_binlog(binlogs, out_native, schema=schema, progress=False)
        return time.perf_counter() - t0, time.process_time() - c0, stats

    def decode():
        t0, c0 = time.perf_counter(), _cpu_children()
        subprocess.run([printer, "--no-defaults", "-vv", "--base64-output=decode-rows",
                        *binlogs], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        return time.perf_counter() - t0, _cpu_children() - c0

    # each `runs` times, alternating, the fastest of each: on a shared host one run of either
    # can lose a core for part of its time; the best of several is what the work itself takes
    runs = max(1, runs)
    natives, printers = [], []
    for _ in range(runs):
        natives.append(native())
        if printer is not None:
            printers.append(decode())
    native_s = min(r[0] for r in natives)
    native_cpu = min(r[1] for r in natives)
    stats = natives[-1][2]
    n = stats.transactions
    row = {"files": binlogs, "transactions": n, "runs": runs,
           "native_seconds": round(native_s, 3),
           "native_cpu_seconds": round(native_cpu, 3), "native_txn_per_s": round(n / native_s)}
    print(f"import {name}: {n} transactions, best of {runs} runs each; binary reader "
          f"{native_s:.2f} s = "
          f"{n / native_s:,.0f} txn/s (CPU {native_cpu:.2f} s = {n / native_cpu:,.0f} txn/s)")
    if printer is None:
        print("  (no mariadb-binlog/mysqlbinlog installed: no printer comparison)")
        return row
    printer_s = min(r[0] for r in printers)
    printer_cpu = min(r[1] for r in printers)
    row.update(printer_seconds=round(printer_s, 3), printer_cpu_seconds=round(printer_cpu, 3),
               ratio_wall=round(printer_s / native_s, 2), ratio_cpu=round(printer_cpu / native_cpu, 2))
    print(f"  printer decode alone {printer_s:.2f} s = {n / printer_s:,.0f} txn/s (CPU "
          f"{printer_cpu:.2f} s)")
    print(f"  binary reader / printer decode = {printer_s / native_s:.2f}x wall, "
          f"{printer_cpu / native_cpu:.2f}x CPU (target {IMPORT_TARGET_RATIO:.0f}x)")
    if text:
        t0 = time.perf_counter()
        import_binlog(binlogs, out_text, schema=schema, binlog_tool=printer, progress=False)
        text_s = time.perf_counter() - t0
        with open(out_native, "rb") as a, open(out_text, "rb") as b:
            same = a.read() == b.read()
        row.update(text_import_seconds=round(text_s, 3), identical=same)
        print(f"  printer + text importer {text_s:.2f} s = {n / text_s:,.0f} txn/s: "
              f"{text_s / native_s:.2f}x the binary reader's time; traces byte-identical: "
              f"{'yes' if same else 'NO'}")
    return row


COMPRESSED_SCHEMA = ("CREATE TABLE sbtest.sbtest1 (id INT NOT NULL, k INT NOT NULL, "
                     "c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL, PRIMARY KEY (id));\n")


def _compressed_files(n: int, directory: str) -> tuple[str, str, str]:
    """(plain binlog, compressed binlog, schema) of the same `n` transactions (section 7)."""
    import random
    from .importers import mysql_writer as mw
    rng = random.Random(7)
    types, metas = [mw.LONG, mw.LONG, mw.STRING, mw.STRING], [b"", b"", b"\xfe\x78",
                                                              b"\xfe\x3c"]
    tmap = mw.table_map_body(108, "sbtest", "sbtest1", types, metas)

    def image(i: int, k: int, c: str, pad: str) -> bytes:
        return (b"\0" + i.to_bytes(4, "little") + k.to_bytes(4, "little")
                + bytes([len(c)]) + c.encode() + bytes([len(pad)]) + pad.encode())

    def digits(groups: int) -> str:
        return "-".join(f"{rng.randrange(10**11):011d}" for _ in range(groups))

    plain, packed = mw.Writer(), mw.Writer()
    ts = 1_700_000_000_000_000
    for sn in range(1, n + 1):
        row, k, pad = rng.randrange(1, 10_001), rng.randrange(1, 10_001), digits(5)
        c_old, c_new = digits(10), digits(10)
        events = [(mw.QUERY, mw.query_body("BEGIN", "sbtest")), (mw.TABLE_MAP, tmap),
                  (mw.UPDATE_ROWS, mw.rows_body(108, 4, [image(row, k, c_old, pad),
                                                         image(row, k, c_new, pad)], True)),
                  (mw.XID, sn.to_bytes(8, "little"))]
        ts += rng.randrange(1, 200)
        lc = max(0, sn - 1 - rng.randrange(0, 4))
        plain.transaction(lc, sn, ts, events)
        packed.transaction(lc, sn, ts, events, compress=True)
    paths = [os.path.join(directory, f"mysql-{n}.{kind}.000001") for kind in ("plain", "zstd")]
    for path, w in zip(paths, (plain, packed)):
        with open(path, "wb") as fh:
            fh.write(w.data)
    schema = os.path.join(directory, "mysql-compressed-schema.sql")
    with open(schema, "w") as fh:
        fh.write(COMPRESSED_SCHEMA)
    return paths[0], paths[1], schema


def _compressed_row(n: int, directory: str, log, runs: int = 3) -> dict:
    """Section 7: the reader on compressed transactions against the same ones plain."""
    from .importers import import_binlog
    log(f"writing {n} MySQL transactions plain and compressed (section 7)")
    plain, packed, schema = _compressed_files(n, directory)
    outs = {p: os.path.join(directory, os.path.basename(p) + ".jsonl") for p in (plain, packed)}
    best: dict = {}
    for _ in range(max(1, runs)):
        for path in (plain, packed):
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            import_binlog([path], outs[path], schema=schema, progress=False)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            prev = best.get(path, (wall, cpu))
            best[path] = (min(prev[0], wall), min(prev[1], cpu))
    strip = ("events", "bytes")
    alike = [{k: v for k, v in t.to_json().items() if k not in strip}
             for t in load_trace(outs[plain])] == \
        [{k: v for k, v in t.to_json().items() if k not in strip} for t in load_trace(outs[packed])]
    (pw, pc), (zw, zc) = best[plain], best[packed]
    sizes = os.path.getsize(plain), os.path.getsize(packed)
    print(f"compressed transactions: {n} MySQL 8.0 UPDATEs, plain {sizes[0] / 1e6:.1f} MB, "
          f"zstd {sizes[1] / 1e6:.1f} MB; best of {runs} each: plain {n / pc:,.0f} txn/s CPU "
          f"({n / pw:,.0f} wall), compressed {n / zc:,.0f} txn/s CPU ({n / zw:,.0f} wall): "
          f"compressed / plain = {pc / zc:.2f}x CPU, {pw / zw:.2f}x wall; traces alike but for "
          f"events and bytes: {'yes' if alike else 'NO'}")
    return {"transactions": n, "plain_bytes": sizes[0], "compressed_bytes": sizes[1],
            "plain_cpu_seconds": round(pc, 3), "compressed_cpu_seconds": round(zc, 3),
            "plain_seconds": round(pw, 3), "compressed_seconds": round(zw, 3),
            "ratio_cpu": round(pc / zc, 3), "ratio_wall": round(pw / zw, 3), "alike": alike}


def _median(xs):
    return sorted(xs)[len(xs) // 2]


def _tree_pss(pid: int) -> int:
    """Proportional set size of `pid` and every process under it (/proc/PID/smaps_rollup): a
    page shared by a sweep's forked processes (the trace's columns) counts once in all, as
    memory the machine needs."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo.extend(int(c) for c in fh.read().split())
        except OSError:
            continue
    return total


def _sampled_run(cmd: list[str], what: str, log) -> tuple[float, int]:
    """Run `cmd`: (its wall time, the peak of its processes' proportional set size, sampled
    every 0.2 s)."""
    import subprocess
    log("running " + " ".join(cmd))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_pss(proc.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"bench: {what} failed (exit {proc.returncode})")
    return wall, peak


def day_sweep(n: int, directory: str, profile: str, log) -> dict:
    """`commitsched score` of a generated n-transaction trace over the report's default runs,
    timed, its processes' memory sampled every 0.2 s."""
    path = ensure_trace(n, directory, log)
    out = os.path.join(directory, f"day-{n}.json")
    cmd = [sys.executable, "-m", "commitsched", "score", path, "--workers", "1,2,4,8,16",
           "--profile", profile, "--json", "--quiet", "--z3-bound", "off", "-o", out]
    wall, peak = _sampled_run(cmd, "the day's sweep", log)
    with open(out) as fh:
        runs = len(json.load(fh))
    row, figures = _day_row(n, runs, wall, peak)
    print(f"day: {n:,} transactions, {runs} runs (every scheduler x W 1,2,4,8,16, profile "
          f"{profile}): {figures}")
    return row


def _day_row(n: int, runs: int, wall: float, peak: int) -> tuple[dict, str]:
    """A day's command as measured, against the day's 600 s and 200 B a transaction: (its row,
    the same in words)."""
    row = {"transactions": n, "runs": runs, "seconds": round(wall, 1), "peak_bytes": peak,
           "bytes_per_txn": round(peak / n, 1),
           "ratio_time": round(DAY_SECONDS / wall, 3),
           "ratio_memory": round(DAY_BYTES_PER_TXN / (peak / n), 3)}
    return row, (f"{wall:.1f} s = {DAY_SECONDS / wall:.2f}x the day's 600 s target; peak "
                 f"memory (every process's proportional set size, sampled) {peak / 1e6:,.0f} MB "
                 f"= {peak / n:.0f} B/txn = {DAY_BYTES_PER_TXN / (peak / n):.2f}x the day's "
                 f"200 B/txn target")


DRAIN_TRACE = dict(workload="oltp_read_write", clients=2, tables=8, seed=7)
DRAIN_FLOOR_BYTES = 48.0     # a drain's two replays keep source, dispatch, commit: 2 x 3 x 8 B


def long_drain(n: int, backlog: str, directory: str, profile: str, log) -> dict:
    """`commitsched lag --backlog` of a generated n-transaction, two-client trace at W=2
    (headroom about 1.1 with replica16: a drain whose horizon is many laps of the trace), timed,
    its memory sampled; per transaction of the horizon its first attempt replays."""
    from .generate import generate, generate_source_header
    from .lag import parse_duration
    from .replay import drain_laps, source_times
    from .trace import iter_trace
    path = os.path.join(directory, f"drain-{n}.jsonl.gz")
    if not os.path.exists(path):
        log(f"generating {n} two-client transactions into {path} (once; cached)")
        write_trace(path, generate(n, **DRAIN_TRACE), generate_source_header(n, **DRAIN_TRACE))
    out = os.path.join(directory, f"drain-{n}.json")
    cmd = [sys.executable, "-m", "commitsched", "lag", path, "--scheduler", "writeset+mysql",
           "--workers", "2", "--backlog", backlog, "--profile", profile, "--jobs", "1",
           "--json", "--quiet", "-o", out]
    wall, peak = _sampled_run(cmd, "the long drain", log)
    with open(out) as fh:
        (r,) = json.load(fh)
    laps, _ = drain_laps(source_times(iter_trace(path)[1]), parse_duration(backlog) * 1e6, 0.0,
                         r["headroom"])
    replayed = laps * n
    row = {"transactions": n, "backlog": backlog, "headroom": r["headroom"],
           "drain_s": r.get("drain_s"), "laps": laps, "replayed": replayed,
           "seconds": round(wall, 1), "peak_bytes": peak,
           "bytes_per_replayed": round(peak / replayed, 1),
           "ratio_floor": round(DRAIN_FLOOR_BYTES / (peak / replayed), 3)}
    print(f"long drain: {n:,} transactions at headroom {r['headroom']}, a {backlog} stop: "
          f"drained in {r.get('drain_s')} s; its first attempt replays {laps:,} laps = "
          f"{replayed:,} transactions twice in {wall:.1f} s; peak memory {peak / 1e6:,.0f} MB = "
          f"{peak / replayed:.0f} B per replayed transaction, {DRAIN_FLOOR_BYTES / (peak / replayed):.2f}x "
          f"the {DRAIN_FLOOR_BYTES:.0f} B its two replays' times take")
    return row


LAG_RUN = ("writeset+mysql", 4)


def lag_day(n: int, directory: str, profile: str, log) -> dict:
    """`commitsched lag` of the generated n-transaction trace (section 6's) for one
    configuration, timed, its memory sampled."""
    path = ensure_trace(n, directory, log)
    out = os.path.join(directory, f"lag-{n}.json")
    scheduler, workers = LAG_RUN
    cmd = [sys.executable, "-m", "commitsched", "lag", path, "--scheduler", scheduler,
           "--workers", str(workers), "--profile", profile, "--jobs", "1", "--json", "--quiet",
           "-o", out]
    wall, peak = _sampled_run(cmd, "the lag replay", log)
    with open(out) as fh:
        (r,) = json.load(fh)
    row = {"transactions": n, "scheduler": scheduler, "workers": workers,
           "simulations": r["simulations"], "headroom": r["headroom"],
           "seconds": round(wall, 1), "seconds_per_million": round(wall / (n / 1e6), 2),
           "peak_bytes": peak, "bytes_per_txn": round(peak / n, 1),
           "ratio_memory": round(DAY_BYTES_PER_TXN / (peak / n), 3)}
    print(f"lag: {n:,} transactions, {scheduler} W={workers} ({r['simulations']} replays: the "
          f"closed backlog, two laps, the headroom search to {r['headroom']}): {wall:.1f} s = "
          f"{wall / (n / 1e6):.2f} s per million transactions; peak memory (every process's "
          f"proportional set size, sampled) {peak / 1e6:,.0f} MB = {peak / n:.0f} B/txn = "
          f"{DAY_BYTES_PER_TXN / (peak / n):.2f}x the {DAY_BYTES_PER_TXN:.0f} B/txn target")
    return row


def report_day(n: int, directory: str, profile: str, log) -> dict:
    """`commitsched report --jobs 2` of the generated n-transaction trace (section 6's), timed,
    its processes' memory sampled."""
    path = ensure_trace(n, directory, log)
    out = os.path.join(directory, f"report-{n}")
    cmd = [sys.executable, "-m", "commitsched", "report", path, "--profile", profile,
           "--jobs", "2", "--quiet", "-o", out]
    wall, peak = _sampled_run(cmd, "the report", log)
    with open(os.path.join(out, "report.json")) as fh:
        runs = len(json.load(fh)["results"])
    row, figures = _day_row(n, runs, wall, peak)
    print(f"report: {n:,} transactions, {runs} sweep runs and the sections after them "
          f"(--jobs 2, profile {profile}): {figures}")
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m commitsched.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=200_000)
    ap.add_argument("--dir", default="build/bench")
    ap.add_argument("--profile", default="replica16",
                    help="the profile of the runs (default replica16, the default of score)")
    ap.add_argument("--scheduler", action="append", help="default: every scheduler")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    ap.add_argument("--binlog", nargs="+", help="also time importing these binary binlog files "
                    "(section 5)")
    ap.add_argument("--no-text-import", action="store_true",
                    help="with --binlog: skip printer + text importer (and the identical check)")
    ap.add_argument("--schema", help="table definitions for --binlog (mysqldump --no-data)")
    ap.add_argument("--import-runs", type=int, default=3,
                    help="with --binlog: import and print the files this many times each, "
                         "alternating, and compare the fastest of each (default 3)")
    ap.add_argument("--load-runs", type=int, default=3,
                    help="time the trace load this many times; the median is reported (default 3)")
    ap.add_argument("--compressed", type=int, default=100_000, metavar="N",
                    help="time the reader on N compressed MySQL transactions against the same "
                         "ones plain (section 7; 0: skip)")
    ap.add_argument("--run-repeats", type=int, default=3,
                    help="time each compiled run this many times; the fastest is reported "
                         "(default 3: a single run on a shared VM can lose its core for part "
                         "of its tenth of a second)")
    ap.add_argument("--reference-slice", type=int, default=20_000,
                    help="transactions the reference engine runs for its rate (default 20000)")
    ap.add_argument("--only-io", action="store_true",
                    help="only the load and import figures, no scheduler runs")
    ap.add_argument("--day", type=int, metavar="N",
                    help="only section 6: the day's sweep of an N-transaction trace")
    ap.add_argument("--drain", metavar="DURATION",
                    help="only section 8: `lag --backlog DURATION` on a short trace, its "
                         "memory per replayed transaction (make bench-drain: 20m)")
    ap.add_argument("--lag", type=int, metavar="N",
                    help="only section 9: `lag` of one configuration on the N-transaction "
                         "trace, its time and memory (make bench-lag: 10,000,000)")
    ap.add_argument("--report", type=int, metavar="N",
                    help="only section 10: `report` of the N-transaction trace, its time and "
                         "memory (make bench-report: 10,000,000)")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    from . import columnar, engine
    from .schedulers import parse_scheduler
    os.makedirs(args.dir, exist_ok=True)
    if args.day or args.drain or args.lag or args.report:
        if args.report:
            key, row = "report", report_day(args.report, args.dir, args.profile, log)
        elif args.day:
            key, row = "day", day_sweep(args.day, args.dir, args.profile, log)
        elif args.drain:
            key, row = "drain", long_drain(20_000, args.drain, args.dir, args.profile, log)
        else:
            key, row = "lag", lag_day(args.lag, args.dir, args.profile, log)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({key: row}, fh, indent=2)
        return 0
    profile = get_profile(args.profile)
    # first, while nothing else is in memory
    imported = _import_rows(args.binlog, args.schema, args.dir, log,
                            text=not args.no_text_import,
                            runs=args.import_runs) if args.binlog else None
    compressed = _compressed_row(args.compressed, args.dir, log, args.import_runs) \
        if args.compressed else None
    path = ensure_trace(args.transactions, args.dir, log)
    # the column cache (model/column_cache.py), in the bench's own directory: the cold loads
    # with it off, the warm ones reading back the entry one load made
    cache = os.path.join(args.dir, "column-cache")
    loads, col_loads, warm_loads = [], [], []
    for i in range(args.load_runs):
        trace = cols = None
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        trace = load_trace(path)
        loads.append((time.perf_counter() - t0, time.process_time() - c0))
        gc.collect()
        os.environ["COMMITSCHED_CACHE"] = "off"
        t0 = time.perf_counter()
        _, cols = columnar.load_columns(path)
        col_loads.append(time.perf_counter() - t0)
    os.environ["COMMITSCHED_CACHE"] = cache
    columnar.load_columns(path)              # makes (or refreshes) the entry
    for i in range(args.load_runs):
        warm = None
        gc.collect()
        t0 = time.perf_counter()
        _, warm = columnar.load_columns(path)
        warm_loads.append(time.perf_counter() - t0)
    n = len(trace)
    load_s = _median([w for w, _ in loads])
    load_cpu = _median([c for _, c in loads])
    col_s = _median(col_loads)
    warm_s = _median(warm_loads)
    print(f"trace: {path}: {n} transactions")
    print(f"load as Txn objects (the reference's input), median of {len(loads)}: {load_s:.2f} s "
          f"= {n / load_s:,.0f} txn/s (CPU {load_cpu:.2f} s)")
    print(f"load as columns (the compiled core's input), cold (gunzip, parse, validate), median "
          f"of {len(col_loads)}: {col_s:.3f} s = {n / col_s:,.0f} txn/s; {cols.nbytes() / n:.0f} "
          f"bytes per transaction in {len(cols.keys):,} distinct keys; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"load as columns, warm (the column cache, the file's SHA-1 checked), median of "
          f"{len(warm_loads)}: {warm_s:.3f} s = {n / warm_s:,.0f} txn/s")
    load_json = {"load_seconds": load_s, "load_cpu_seconds": load_cpu,
                 "load_txn_per_s": round(n / load_s), "columns_load_seconds": round(col_s, 3),
                 "columns_warm_load_seconds": round(warm_s, 4),
                 "columns_bytes_per_txn": round(cols.nbytes() / n, 1),
                 "load_runs": [{"seconds": round(w, 3), "cpu_seconds": round(c, 3)}
                               for w, c in loads]}
    if args.only_io:
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"transactions": n, **load_json, "import": imported,
                           "compressed": compressed}, fh, indent=2)
        return 0
    ref_slice = trace.txns[:args.reference_slice]
    print(f"\nprofile: {profile.name}; compiled core; target: each run >= {TARGET_TPS:,} txn/s "
          f"with the columns' whole load added to it (cold: from the file; warm: from the "
          f"column cache)")
    print(f"{'scheduler':<40} {'W':>3} {'run s':>7} {'txn/s alone':>12} {'+cold load':>11} "
          f"{'+warm load':>11} {'vs target':>9} {'reference':>10} {'x ref':>6}")
    rows = []
    schedulers = args.scheduler or DEFAULT_SCHEDULERS
    for name in schedulers:
        sched = parse_scheduler(name)
        for w in ([1] if sched.is_serial else WORKERS):
            secs = float("inf")
            for _ in range(max(1, args.run_repeats)):    # the fastest: the shared VM's noise
                gc.collect()
                t0 = time.perf_counter()
                out = engine.simulate(sched, cols, w, profile)
                secs = min(secs, time.perf_counter() - t0)
            with_load = n / (secs + col_s)
            with_warm = n / (secs + warm_s)
            ref_tps = None
            if w in (1, 16):              # the reference's rate, on a slice (it is slow)
                t0 = time.perf_counter()
                run_scheduler(name, iter(ref_slice), w, profile, RunMetrics(w),
                              engine="reference")
                ref_tps = len(ref_slice) / (time.perf_counter() - t0)
            rows.append({"scheduler": name, "workers": w, "seconds": round(secs, 4),
                         "txn_per_s": round(n / secs), "txn_per_s_with_load": round(with_load),
                         "txn_per_s_with_warm_load": round(with_warm),
                         "reference_txn_per_s": None if ref_tps is None else round(ref_tps),
                         "makespan": out["makespan"]})
            ref_text = f"{ref_tps:>10,.0f} {n / secs / ref_tps:>6.0f}" if ref_tps else ""
            print(f"{name:<40} {w:>3} {secs:>7.3f} {n / secs:>12,.0f} {with_load:>11,.0f} "
                  f"{with_warm:>11,.0f} {with_warm / TARGET_TPS:>8.2f}x {ref_text}", flush=True)
    probe = "commit_id+mariadb_conservative"
    by_w = {r["workers"]: r["seconds"] for r in rows if r["scheduler"] == probe}
    quarter = cols.slice(0, n // 4)
    t0 = time.perf_counter()
    engine.simulate(parse_scheduler(probe), quarter, 4, profile)
    secs_q = time.perf_counter() - t0
    growth_n = (by_w[4] / n) / (secs_q / quarter.n) if 4 in by_w else None
    growth_w = (by_w[64] / by_w[4]) if 64 in by_w and 4 in by_w else None
    tracemalloc.start()
    engine.simulate(parse_scheduler(probe), cols, 16, profile)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    alone = [r["txn_per_s"] for r in rows]
    loaded = [r["txn_per_s_with_load"] for r in rows]
    warmed = [r["txn_per_s_with_warm_load"] for r in rows]
    print()
    print(f"slowest run alone: {min(alone):,} txn/s; with the warm load: {min(warmed):,} txn/s = "
          f"{min(warmed) / TARGET_TPS:.2f}x the target; with the cold load: {min(loaded):,} "
          f"txn/s = {min(loaded) / TARGET_TPS:.2f}x; runs meeting it with the warm load: "
          f"{sum(t >= TARGET_TPS for t in warmed)}/{len(warmed)}, the cold load: "
          f"{sum(t >= TARGET_TPS for t in loaded)}/{len(loaded)}, alone: "
          f"{sum(t >= TARGET_TPS for t in alone)}/{len(alone)}")
    if growth_w is not None:
        print(f"growth with W ({probe}): time at W=64 / time at W=4 = {growth_w:.2f}")
    if growth_n is not None:
        print(f"growth with n ({probe}, W=4): time per txn at n / at n/4 = {growth_n:.2f}")
    print(f"memory: the columns {cols.nbytes() / n:.0f} B/txn; one compiled run's Python-side "
          f"peak (tracemalloc: its result) {peak / 1e3:.0f} kB (the core holds only the runs in "
          f"flight)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"transactions": n, **load_json, "import": imported,
                       "compressed": compressed, "runs": rows,
                       "growth_w": growth_w, "growth_n": growth_n,
                       "run_python_peak_bytes": peak}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
