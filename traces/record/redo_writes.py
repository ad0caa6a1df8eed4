#!/usr/bin/env python3
"""What a relaxed replica's commit really asks of the disk (issue 27): the redo log's writes per
applied transaction, seen by `perf` tracepoints in a drain on a live primary and replica.

    python traces/record/redo_writes.py measure --out DIR [--runs relaxed-serial-1,...]
    python traces/record/redo_writes.py probes  --out DIR [--repeats 8]

`measure` (root: perf's tracepoints, the servers run as mysql): lag_check's rig (a relaxed
primary on CPU 0, the replica with log_slave_updates on CPU 1, started durable as the lag-check
campaigns start it, its settings then SET for each run). For each run the replica's SQL thread
is stopped, sysbench queues a backlog at the primary, then `perf record -a -k mono` watches the
drain: pwrite64/pwritev/fdatasync/fsync entries and exits and the block layer's requests
(block_rq_issue / block_rq_complete). Reported per applied transaction, in `DIR/<run>.json` and
`DIR/summary.md`: the pwrite calls to ib_logfile0 by thread (performance_schema's thread names),
their sizes and latencies, the device writes to the log file's own sectors (from `filefrag`),
how many of those were issued inside a pwrite (the thread waited for them), and the open flags
of ib_logfile0 and the binlog (/proc/<pid>/fdinfo: O_DIRECT or the page cache). The last run,
`relaxed-serial-1-startup`, restarts the replica with innodb_flush_log_at_trx_commit=2 in its
start settings, as a DBA's relaxed my.cnf would have it.

`probes`: the old and the new O_DIRECT write probe (`commitsched.calibrate_replica`) taken
alternately, `--repeats` times each, in a directory on the replica's disk: their spread.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from lag_check import REPLICA_CPU, Rig, log, new_rig, pin  # noqa: E402
from calibrate import SYNC_SETTINGS  # noqa: E402

EVENTS = ["syscalls:sys_enter_pwrite64", "syscalls:sys_exit_pwrite64",
          "syscalls:sys_enter_pwritev", "syscalls:sys_exit_pwritev",
          "syscalls:sys_enter_fdatasync", "syscalls:sys_exit_fdatasync",
          "syscalls:sys_enter_fsync", "syscalls:sys_exit_fsync",
          "block:block_rq_issue", "block:block_rq_complete"]
O_DIRECT = 0o40000
O_DSYNC = 0o10000
RUNS = ("relaxed-serial-1", "relaxed-optimistic-4", "relaxed-conservative-4", "durable-serial-1",
        "relaxed-serial-1-startup")
MORE_RUNS = ("relaxed-conservative-2", "relaxed-optimistic-2", "relaxed-conservative-1",
             "relaxed-optimistic-8")
BACKLOG_RATE, BACKLOG_SECONDS = 800, 6

LINE = re.compile(r"^\s*(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)$")


def fd_flags(pid: int, fd: int) -> int:
    with open(f"/proc/{pid}/fdinfo/{fd}") as f:
        for line in f:
            if line.startswith("flags:"):
                return int(line.split()[1], 8)
    raise ValueError("no flags")


def open_files(pid: int) -> dict[str, int]:
    """{path: fd} of the server's open files."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[os.readlink(f"/proc/{pid}/fd/{fd}")] = int(fd)
        except OSError:
            pass
    return out


def flags_of(pid: int, datadir: str) -> dict:
    """ib_logfile0's and the current binlog's fd, open flags (octal) and whether O_DIRECT."""
    files = open_files(pid)
    out = {}
    for path, fd in sorted(files.items()):
        name = os.path.basename(path)
        if name == "ib_logfile0" or re.fullmatch(r"binlog\.\d+", name):
            fl = fd_flags(pid, fd)
            out[name] = {"fd": fd, "flags": oct(fl), "O_DIRECT": bool(fl & O_DIRECT),
                         "O_DSYNC": bool(fl & O_DSYNC)}
    return out


def extents(path: str) -> list[tuple[int, int]]:
    """The file's physical extents as 512-byte sector ranges [start, end) (filefrag)."""
    r = subprocess.run(["filefrag", "-v", "-b4096", path], capture_output=True, text=True,
                       check=True)
    out = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*\d+:\s+\d+\.\.\s*\d+:\s+(\d+)\.\.\s*(\d+):", line)
        if m:
            out.append((int(m.group(1)) * 8, (int(m.group(2)) + 1) * 8))
    return out


def thread_names(server) -> dict[int, str]:
    rows = server.sql("SELECT THREAD_OS_ID, NAME FROM performance_schema.threads "
                      "WHERE THREAD_OS_ID IS NOT NULL")
    return {int(t): n.rsplit("/", 1)[-1] for t, n in rows if t not in ("", "NULL")}


def parse_perf(text: str, tids: set[int], log_fd: int, log_sectors, t0: float, t1: float):
    """The drain's events, [t0, t1] (monotonic seconds), of the replica's threads (syscalls) and
    of the block layer (any context): pwrites to the log fd with their latency and the log-file
    device writes issued while each was in the kernel."""
    def in_log(sector: int) -> bool:
        return any(a <= sector < b for a, b in log_sectors)

    open_calls: dict[int, dict] = {}
    pwrites, syncs, issues, completes = [], [], [], {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        tid, ts, ev, rest = int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)
        if not t0 <= ts <= t1:
            continue
        if ev.startswith("block:"):
            b = re.match(r"(\d+,\d+)\s+(\S+)\s+(?:\d+\s+)?\(\S*\)\s+(\d+)\s+\+\s+(\d+)", rest)
            if not b:
                continue
            rwbs, sector, n = b.group(2), int(b.group(3)), int(b.group(4))
            if ev == "block:block_rq_issue":
                issues.append({"t": ts, "tid": tid, "rwbs": rwbs, "sector": sector, "n": n,
                               "log": in_log(sector)})
            else:
                completes.setdefault((sector, n), []).append(ts)
            continue
        if tid not in tids:
            continue
        name = ev.split(":")[1]
        if name.startswith("sys_enter_"):
            fd = int(re.search(r"fd: 0x([0-9a-f]+)", rest).group(1), 16)
            c = re.search(r"count: 0x([0-9a-f]+)", rest) or re.search(r"vlen: 0x([0-9a-f]+)", rest)
            pos = re.search(r"pos: 0x([0-9a-f]+)", rest)
            open_calls[tid] = {"call": name[10:], "fd": fd, "t": ts,
                               "count": int(c.group(1), 16) if c else None,
                               "pos": int(pos.group(1), 16) if pos else None}
        elif name.startswith("sys_exit_") and tid in open_calls:
            call = open_calls.pop(tid)
            call.update(tid=tid, end=ts, ret=int(rest.split()[-1], 16) if rest else None)
            if call["fd"] != log_fd:
                if call["call"] in ("fdatasync", "fsync"):
                    syncs.append(call)
                continue
            (pwrites if call["call"].startswith("pwrite") else syncs).append(call)
    for req in issues:
        done = [c for c in completes.get((req["sector"], req["n"]), []) if c >= req["t"]]
        req["latency_us"] = 1e6 * (min(done) - req["t"]) if done else None
    log_writes = [r for r in issues if r["log"] and "W" in r["rwbs"]]
    for p in pwrites:
        p["device_writes"] = [r for r in log_writes if p["t"] <= r["t"] <= p["end"]]
    return pwrites, syncs, issues, log_writes


COUNTERS = ("binlog_commits", "binlog_group_commits", "innodb_log_writes",
            "innodb_os_log_written", "innodb_os_log_fsyncs", "innodb_data_fsyncs")


def same_block(pwrites) -> float | None:
    """The share of log pwrites whose offset's 4 KiB block is the previous pwrite's: the tail
    block rewritten (a circular log written a few hundred bytes a commit)."""
    pos = [p.get("pos") for p in pwrites]
    pairs = [(a, b) for a, b in zip(pos, pos[1:]) if a is not None and b is not None]
    return round(sum(1 for a, b in pairs if a // 4096 == b // 4096) / len(pairs), 3) if pairs else None


def quantiles(values: list[float]) -> dict | None:
    if not values:
        return None
    v = sorted(values)
    q = lambda f: round(v[min(len(v) - 1, int(f * len(v)))], 1)  # noqa: E731
    return {"n": len(v), "median": round(statistics.median(v), 1), "p10": q(0.1), "p90": q(0.9),
            "mean": round(statistics.fmean(v), 1)}


def summarize(pwrites, syncs, issues, log_writes, names: dict[int, str], applied: int,
              log_fd: int) -> dict:
    per_thread: dict[str, dict] = {}
    for p in pwrites:
        name = names.get(p["tid"], "other")
        t = per_thread.setdefault(name, {"calls": 0, "bytes": [], "latency_us": [],
                                         "with_device_write": 0, "latency_with_us": [],
                                         "latency_without_us": []})
        t["calls"] += 1
        t["bytes"].append(p["count"] or 0)
        lat = 1e6 * (p["end"] - p["t"])
        t["latency_us"].append(lat)
        if p["device_writes"]:
            t["with_device_write"] += 1
            t["latency_with_us"].append(lat)
        else:
            t["latency_without_us"].append(lat)
    threads = {}
    for name, t in sorted(per_thread.items()):
        sizes: dict[int, int] = {}
        for b in t["bytes"]:
            sizes[b] = sizes.get(b, 0) + 1
        threads[name] = {
            "pwrites": t["calls"], "pwrites_per_txn": round(t["calls"] / applied, 3),
            "with_device_write_per_txn": round(t["with_device_write"] / applied, 3),
            "bytes": quantiles(t["bytes"]),
            "sizes_top": sorted(sizes.items(), key=lambda kv: -kv[1])[:5],
            "latency_us": quantiles(t["latency_us"]),
            "latency_with_device_write_us": quantiles(t["latency_with_us"]),
            "latency_without_device_write_us": quantiles(t["latency_without_us"])}
    waited = sum(1 for p in pwrites if p["device_writes"])
    log_issue_ctx: dict[str, int] = {}
    for r in log_writes:
        k = names.get(r["tid"], "other/kernel")
        log_issue_ctx[k] = log_issue_ctx.get(k, 0) + 1
    writes = [r for r in issues if "W" in r["rwbs"] or "F" in r["rwbs"]]
    log_syncs = [s for s in syncs if s["fd"] == log_fd]
    return {
        "applied": applied,
        "log_pwrites_per_txn": round(len(pwrites) / applied, 3),
        "log_pwrites_by_thread": threads,
        "log_device_writes_per_txn": round(len(log_writes) / applied, 3),
        "log_device_writes_inside_a_pwrite_per_txn": round(
            sum(len(p["device_writes"]) for p in pwrites) / applied, 3),
        "log_pwrites_that_waited_for_the_device_per_txn": round(waited / applied, 3),
        # issue to completion, of the requests whose completion was matched by sector and
        # length (a subset: `n`); the applier's pwrite latency is the figure to read
        "log_device_write_latency_us": quantiles([r["latency_us"] for r in log_writes
                                                  if r["latency_us"] is not None]),
        "log_device_write_bytes": quantiles([512 * r["n"] for r in log_writes]),
        "log_device_writes_issued_by": log_issue_ctx,
        "log_syncs_per_txn": round(len(log_syncs) / applied, 3),
        "other_syncs_per_txn": round((len(syncs) - len(log_syncs)) / applied, 3),
        "device_requests_per_txn": round(len(issues) / applied, 3),
        "device_writes_and_flushes_per_txn": round(len(writes) / applied, 3),
        "device_writes_by_rwbs": {k: sum(1 for r in writes if r["rwbs"] == k)
                                  for k in sorted({r["rwbs"] for r in writes})},
    }


def run_drain(rig: Rig, spec: str, out: str) -> dict:
    R = rig.replica
    startup = spec.endswith("-startup")
    durability, mode, threads = spec.removesuffix("-startup").split("-")
    run = {"name": spec, "durability": durability, "mode": mode, "threads": int(threads)}
    if startup:
        # a replica started relaxed (my.cnf): innodb_log_file_buffering's default follows
        # innodb_flush_log_at_trx_commit at startup
        R.sql("STOP SLAVE")
        R.stop()
        settings = dict(rig.r_set, **SYNC_SETTINGS[durability])
        R.start(settings)
        pin(R.pid, REPLICA_CPU)
        R.sql("START SLAVE")
    rig.configure(run)
    if not rig.wait_caught_up(600):
        raise SystemExit(f"redo_writes: the replica did not catch up before {spec}")
    R.sql("STOP SLAVE SQL_THREAD")
    log(f"{spec}: backlog of {BACKLOG_RATE}/s for {BACKLOG_SECONDS} s")
    subprocess.run(rig.sysbench_cmd("run", BACKLOG_RATE, BACKLOG_SECONDS, 16),
                   capture_output=True, check=True)
    time.sleep(1.0)                              # the IO thread has it all
    buffering = R.sql("SELECT @@innodb_log_file_buffering, @@innodb_flush_log_at_trx_commit, "
                      "@@sync_binlog, @@log_slave_updates")[0]
    flags = flags_of(R.pid, R.datadir)
    log_path = os.path.join(R.datadir, "ib_logfile0")
    sectors = extents(log_path)
    # the probes as calibrate takes them, in the replica's datadir, just before the drain
    from commitsched.calibrate_replica import PROBE_ROUNDS, direct_write_ms
    probes = {"new_rounds_ms": [direct_write_ms(R.datadir) for _ in range(PROBE_ROUNDS)],
              "old_rounds_ms": [old_direct_write_ms(R.datadir) for _ in range(PROBE_ROUNDS)]}
    status0 = R.status()
    data = os.path.join(out, f"{spec}.perf.data")
    perf = subprocess.Popen(["perf", "record", "-q", "-a", "-k", "mono", "-m", "4096",
                             "-o", data, "-e", ",".join(EVENTS)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)                              # perf's buffers are mapped
    applied0 = rig.positions()[1]
    t0 = time.monotonic()
    R.sql("START SLAVE SQL_THREAD")
    rig.wait_caught_up(600)
    t1 = time.monotonic()
    applied = rig.positions()[1] - applied0
    status1 = R.status()
    time.sleep(0.2)
    perf.send_signal(signal.SIGINT)
    perf.wait(timeout=60)
    names = thread_names(R)
    tids = {int(t) for t in os.listdir(f"/proc/{R.pid}/task")}
    text = subprocess.run(["perf", "script", "-i", data, "-F", "tid,time,event,trace"],
                          capture_output=True, text=True).stdout
    os.remove(data)
    pw, sy, iss, lw = parse_perf(text, tids, flags["ib_logfile0"]["fd"], sectors, t0, t1)
    rec = {"run": spec, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "drain_s": round(t1 - t0, 3), "apply_rate": round(applied / (t1 - t0)),
           "innodb_log_file_buffering": buffering[0], "innodb_flush_log_at_trx_commit":
           buffering[1], "sync_binlog": buffering[2], "log_slave_updates": buffering[3],
           "fd_flags": flags, "log_extents_sectors": sectors[:4], "probes": probes,
           "counters_per_txn": {c: round((int(status1.get(c, 0)) - int(status0.get(c, 0)))
                                         / applied, 3) for c in COUNTERS},
           "log_pwrites_same_block_as_previous": same_block(pw),
           **summarize(pw, sy, iss, lw, names, applied, flags["ib_logfile0"]["fd"])}
    with open(os.path.join(out, f"{spec}.json"), "w") as f:
        json.dump(rec, f, indent=1)
    log(f"{spec}: {applied} txns in {rec['drain_s']} s; log pwrites/txn "
        f"{rec['log_pwrites_per_txn']}, log device writes/txn {rec['log_device_writes_per_txn']}, "
        f"waited/txn {rec['log_pwrites_that_waited_for_the_device_per_txn']}")
    return rec


def markdown(records: list[dict]) -> str:
    head = ("| run | probe µs old / new (medians of 5 rounds, just before) | buffering | ib_logfile0 O_DIRECT | apply/s | log pwrites/txn (by thread) "
            "| log device writes/txn | of them inside a pwrite | pwrites that waited/txn "
            "| pwrite µs median (waited / not) | device write µs median | bytes median "
            "| log syncs/txn | all device writes+flushes/txn |\n" + "|---" * 14 + "|\n")
    rows = []
    for r in records:
        th = r["log_pwrites_by_thread"]
        by = ", ".join(f"{k} {v['pwrites_per_txn']}" for k, v in th.items())
        lat = "; ".join(
            f"{k}: {(v['latency_with_device_write_us'] or {}).get('median', '-')} / "
            f"{(v['latency_without_device_write_us'] or {}).get('median', '-')}"
            for k, v in th.items())
        dl = (r["log_device_write_latency_us"] or {}).get("median", "-")
        db = (r["log_device_write_bytes"] or {}).get("median", "-")
        pr = r.get("probes") or {}
        med = lambda k: (round(1e3 * statistics.median(pr[k]), 1)  # noqa: E731
                         if pr.get(k) and None not in pr[k] else "-")
        rows.append(f"| {r['run']} | {med('old_rounds_ms')} / {med('new_rounds_ms')} | {r['innodb_log_file_buffering']} | "
                    f"{r['fd_flags']['ib_logfile0']['O_DIRECT']} | {r['apply_rate']} | "
                    f"{r['log_pwrites_per_txn']} ({by}) | {r['log_device_writes_per_txn']} | "
                    f"{r['log_device_writes_inside_a_pwrite_per_txn']} | "
                    f"{r['log_pwrites_that_waited_for_the_device_per_txn']} | {lat} | {dl} | "
                    f"{db} | {r['log_syncs_per_txn']} | "
                    f"{r['device_writes_and_flushes_per_txn']} |")
    return head + "\n".join(rows) + "\n"


def cmd_measure(a) -> int:
    if os.geteuid() != 0:
        raise SystemExit("redo_writes: measure needs root (perf's tracepoints, mysql's servers)")
    for tool in ("perf", "filefrag"):
        if shutil.which(tool) is None:
            raise SystemExit(f"redo_writes: {tool} not found (apt-get install "
                             f"{'linux-perf' if tool == 'perf' else 'e2fsprogs'})")
    runs = a.runs.split(",")
    for r in runs:
        if r not in RUNS + MORE_RUNS:
            raise SystemExit(f"redo_writes: unknown run {r!r}; known: "
                             f"{', '.join(RUNS + MORE_RUNS)}")
    os.makedirs(a.out, exist_ok=True)
    rig = new_rig("redowrites-", a.workdir, a.port, replica_binlog=True,
                  primary_durability="relaxed")
    records = []
    try:
        setup = rig.setup()
        rig.r_set = setup["replica_settings"]
        for spec in runs:
            records.append(run_drain(rig, spec, a.out))
        errlog = open(rig.replica.errlog).read()
        notes = sorted(set(re.findall(r"InnoDB: (?:File system buffers for log|Opened|"
                                      r"Buffered log writes)[^\n]*", errlog)))
    finally:
        rig.stop()
        subprocess.run(["rm", "-rf", rig.root])
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(f"MariaDB {setup['version']}; replica's error log: {'; '.join(notes)}\n\n")
        f.write(markdown(records))
    print(open(os.path.join(a.out, "summary.md")).read())
    return 0


def old_direct_write_ms(directory: str, n: int = 50) -> float | None:
    """The probe as it was before this change (kept here to compare): a fresh file (O_TRUNC),
    50 timed 4 KiB O_DIRECT writes over its first 16 blocks, the first 16 allocating them."""
    import mmap
    path = os.path.join(directory, f".redo-writes-old-{os.getpid()}")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    except OSError:
        return None
    buf = mmap.mmap(-1, 4096)
    buf.write(b"x" * 4096)
    lat = []
    try:
        for i in range(n):
            t = time.perf_counter()
            os.pwrite(fd, buf, 4096 * (i % 16))
            lat.append((time.perf_counter() - t) * 1e3)
    finally:
        os.close(fd)
        os.unlink(path)
    return round(statistics.median(lat), 4)


def cmd_probes(a) -> int:
    """Each repeat as calibrate takes a window's figure: PROBE_ROUNDS rounds back to back, the
    median of the rounds; the old probe and the new one alternately."""
    from commitsched.calibrate_replica import PROBE_ROUNDS, direct_write_ms
    os.makedirs(a.out, exist_ok=True)
    d = a.dir or tempfile.mkdtemp(prefix="redoprobe-", dir=a.workdir)
    rows = []
    for i in range(a.repeats):
        old_rounds = [old_direct_write_ms(d) for _ in range(PROBE_ROUNDS)]
        new_rounds = [direct_write_ms(d) for _ in range(PROBE_ROUNDS)]
        old, new = statistics.median(old_rounds), statistics.median(new_rounds)
        rows.append({"repeat": i + 1, "utc": time.strftime("%H:%M:%S", time.gmtime()),
                     "old_ms": old, "new_ms": new, "old_rounds_ms": old_rounds,
                     "new_rounds_ms": new_rounds})
        log(f"repeat {i + 1}: old {old} ms {old_rounds}, new {new} ms {new_rounds}")
        time.sleep(a.gap)
    if not a.dir:
        os.rmdir(d)
    olds, news = [r["old_ms"] for r in rows], [r["new_ms"] for r in rows]
    first = lambda key: [1e3 * r[key][0] for r in rows]  # noqa: E731
    rest = lambda key: [1e3 * v for r in rows for v in r[key][1:]]  # noqa: E731
    summary = {"rows": rows, "old": quantiles([1e3 * v for v in olds]),
               "new": quantiles([1e3 * v for v in news]),
               "old_first_round": quantiles(first("old_rounds_ms")),
               "old_later_rounds": quantiles(rest("old_rounds_ms")),
               "new_first_round": quantiles(first("new_rounds_ms")),
               "new_later_rounds": quantiles(rest("new_rounds_ms"))}
    with open(os.path.join(a.out, "probes.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="perf on drains of a live replica (root)")
    m.add_argument("--out", required=True)
    m.add_argument("--runs", default=",".join(RUNS))
    m.add_argument("--port", type=int, default=4120)
    m.add_argument("--workdir", default="/tmp")
    p = sub.add_parser("probes", help="the old and new O_DIRECT write probes, alternately")
    p.add_argument("--out", required=True)
    p.add_argument("--dir", help="where to probe (default: a fresh folder under --workdir)")
    p.add_argument("--workdir", default="/tmp")
    p.add_argument("--repeats", type=int, default=8)
    p.add_argument("--gap", type=float, default=2.0, help="seconds between repeats")
    a = ap.parse_args(argv)
    return cmd_measure(a) if a.cmd == "measure" else cmd_probes(a)


if __name__ == "__main__":
    sys.exit(main())
