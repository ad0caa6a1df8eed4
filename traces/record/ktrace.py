#!/usr/bin/env python3
"""A kernel timeline of one replica drain (docs/lag-check/drain-timeline-perf.md).

    python traces/record/ktrace.py measure --out DIR [--runs durable-conservative-4,...]
    python traces/record/ktrace.py report DIR [--profile [LABEL=]PROFILE.json ...] [--to DIR]
    python traces/record/ktrace.py overlap-probe DIR [--seconds 3] [--rounds N] [--cpu C]

`measure` (root; perf): lag_check's rig (a MariaDB 10.11 primary on CPU 0, a replica with
log_slave_updates on CPU 1, its IO thread moved to CPU 0). Per run: the replica's SQL thread
stopped, a backlog written at the source (sysbench, 16 clients), the IO thread left to
receive all of it, the replica's binlog rotated; then the SQL thread restarted under `perf
record -a -k mono` (scheduler switches and wakeups, the sync/write syscalls, block requests)
until it has applied the backlog (a closed drain: nothing arrives while it runs). A run named
`...+noperf` is the same drain without perf (the instrument's overhead); `...+sample` samples
the replica's core (CPU 1) at 4 kHz instead, user and kernel, and keeps in meta.json only its
µs a transaction by thread role, library and function (`sample_summary`). Each run's folder:
`meta.json` (drain start/end on CLOCK_MONOTONIC, transactions, apply rate, counters),
`threads.json` (tid -> performance_schema thread name), `fds.json` (fd -> file),
`groups.tsv` (the replica's own binlog: seq_no, commit id as mariadb-binlog's cid=, one line a
transaction), `perf.script.gz` (perf script's text) and `trace.jsonl.gz` (the primary's binlog of
the backlog, imported: the model's input).

`report`: each run's timeline in pieces (`summarize`, `group_timeline`) as markdown
(report.md, and summary.json); with `--profile`, the same backlog through the model (reference
engine, closed backlog) beside it. `overlap-probe`: does the disk queue an in-place sync (the
redo log) behind an append sync (the binlog), what the model's `shared_disk` assumes.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

EVENTS = ["sched:sched_switch", "sched:sched_wakeup", "sched:sched_wakeup_new",
          "syscalls:sys_enter_fdatasync", "syscalls:sys_exit_fdatasync",
          "syscalls:sys_enter_fsync", "syscalls:sys_exit_fsync",
          "syscalls:sys_enter_pwrite64", "syscalls:sys_exit_pwrite64",
          "syscalls:sys_enter_write", "syscalls:sys_exit_write",
          "block:block_rq_issue", "block:block_rq_complete"]
SYSCALLS = ("fdatasync", "fsync", "pwrite64", "write")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------ perf script's text, parsed

# `perf script -F comm,pid,tid,cpu,time,event,trace`: "COMM PID/TID [CPU] SECS: EVENT: TRACE"
LINE = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+"
                  r"(?P<t>\d+\.\d+):\s+(?P<event>[\w]+:[\w]+):\s?(?P<trace>.*)$")
KV = re.compile(r"(\w+)=(\S+)")
SYS = re.compile(r"^syscalls:sys_(enter|exit)_(\w+)$")
BLOCK = re.compile(r"^(?P<dev>\d+,\d+)\s+(?P<rwbs>\S+)\s+(?:(?P<bytes>\d+)\s+)?\(.*?\)\s+"
                   r"(?P<sector>\d+)\s+\+\s+(?P<n>\d+)")


class ParseError(ValueError):
    pass


@dataclass
class Timeline:
    """What one drain's perf script says, per thread (times in seconds, CLOCK_MONOTONIC)."""
    slices: dict = field(default_factory=lambda: defaultdict(list))   # tid -> [(cpu, on, off, state)]
    calls: list = field(default_factory=list)        # (tid, name, fd, enter, exit, ret)
    wakeups: list = field(default_factory=list)      # (t, waker tid, wakee tid)
    blocks: list = field(default_factory=list)       # (issue, complete, rwbs, sectors)
    first: float | None = None
    last: float | None = None


def parse_perf_script(lines, path: str = "perf script") -> Timeline:
    """Parse `perf script -F comm,pid,tid,cpu,time,event,trace` lines into a Timeline. A line
    that is neither blank nor an event line raises ParseError naming it."""
    tl = Timeline()
    running: dict[int, tuple[int, float]] = {}       # cpu -> (tid, since)
    open_calls: dict[tuple[int, str], tuple[float, int]] = {}
    issued: dict[tuple[str, int], tuple[float, str, int]] = {}
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        m = LINE.match(line)
        if not m:
            raise ParseError(f"{path}:{no}: not a perf script event line: {line[:80]!r}")
        t, tid, cpu, ev, trace = (float(m["t"]), int(m["tid"]), int(m["cpu"]), m["event"],
                                  m["trace"])
        tl.first = t if tl.first is None else tl.first
        tl.last = t
        was = running.get(cpu)
        if was is None:
            # a core's first event: its thread has run since then at least
            running[cpu] = was = (tid, t)
        if was[0] == 0 and tid != 0:
            # perf here drops the idle task's own events (its switch to the woken thread
            # too): the idle slice ends at the first event of a thread on that core
            tl.slices[0].append((cpu, was[1], t, "R"))
            running[cpu] = (tid, t)
        if ev == "sched:sched_switch":
            kv = dict(KV.findall(trace.replace(" ==> ", " ")))
            try:
                prev, nxt, state = int(kv["prev_pid"]), int(kv["next_pid"]), kv["prev_state"]
            except KeyError:
                raise ParseError(f"{path}:{no}: sched_switch without prev_pid/next_pid") from None
            was = running.get(cpu)
            if was is not None and was[0] == prev and prev != 0:
                tl.slices[prev].append((cpu, was[1], t, state))
            running[cpu] = (nxt, t)
        elif ev in ("sched:sched_wakeup", "sched:sched_wakeup_new"):
            kv = dict(KV.findall(trace))
            if "pid" not in kv:
                raise ParseError(f"{path}:{no}: sched_wakeup without pid=")
            tl.wakeups.append((t, tid, int(kv["pid"])))
        elif (s := SYS.match(ev)) is not None:
            kind, name = s.groups()
            if kind == "enter":
                fd = re.search(r"fd: (0x[0-9a-f]+)", trace)
                open_calls[(tid, name)] = (t, int(fd.group(1), 16) if fd else -1)
            else:
                start = open_calls.pop((tid, name), None)
                if start is not None:
                    ret = trace.strip()
                    try:
                        r = int(ret, 16) if ret.startswith("0x") else int(ret)
                    except ValueError:
                        r = 0
                    tl.calls.append((tid, name, start[1], start[0], t, r))
        elif ev in ("block:block_rq_issue", "block:block_rq_complete"):
            b = BLOCK.match(trace)
            if b is None:
                raise ParseError(f"{path}:{no}: block event not understood: {trace[:60]!r}")
            key = (b["dev"], int(b["sector"]))
            if ev == "block:block_rq_issue":
                issued[key] = (t, b["rwbs"], int(b["n"]))
            else:
                st = issued.pop(key, None)
                if st is not None:
                    tl.blocks.append((st[0], t, st[1], st[2]))
    return tl


def open_text(path: str):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


# ------------------------------------------------------------------ the timeline, summarised

def roles(threads: dict[str, str]) -> dict[int, str]:
    """tid -> role from performance_schema's thread names."""
    out = {}
    for tid, name in threads.items():
        if name.endswith("slave_sql"):
            role = "driver"
        elif "rpl_parallel_thread" in name:
            role = "worker"
        elif name.endswith("slave_io"):
            role = "io"
        else:
            role = "other"
        out[int(tid)] = role
    return out


def file_kind(path: str) -> str:
    base = os.path.basename(path)
    if base.startswith("ib_logfile"):
        return "redo"
    if base.startswith("binlog.") and base[7:].isdigit():
        return "binlog"
    if base.startswith("relay.") and base[6:].isdigit():
        return "relay"
    if base.endswith(".ibd") or base.startswith("ibdata") or base.startswith("undo"):
        return "data"
    return "other"


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def summarize(tl: Timeline, threads: dict, fds: dict, start: float, end: float,
              cpu: int = 1, txns: int | None = None) -> dict:
    """The drain [start, end] as pieces: the replica core's time by role; each sync and write
    by file (count, mean, and what ran on the core meanwhile); the binlog syncs' followers."""
    role = roles(threads)
    kinds = {int(fd): file_kind(p) for fd, p in fds.items()}
    span = end - start
    busy = defaultdict(float)
    for tid, sl in tl.slices.items():
        r = role.get(tid, "idle" if tid == 0 else "not replica")
        for c, on, off, _ in sl:
            if c == cpu:
                busy[r] += overlap(on, off, start, end)
    core = {r: v / span for r, v in sorted(busy.items())}
    core["unaccounted"] = max(0.0, 1 - sum(core.values()))
    # what the replica core ran while each sync was in the kernel
    on_core = [(on, off, role.get(tid, "idle" if tid == 0 else "not replica"), tid)
               for tid, sl in tl.slices.items() for c, on, off, _ in sl if c == cpu
               and off > start and on < end]
    on_core.sort()
    calls = [c for c in tl.calls if c[0] in role and start <= c[3] <= end]
    by = defaultdict(list)
    for tid, name, fd, t0, t1, ret in calls:
        by[(name, kinds.get(fd, "other"), role[tid])].append((t0, t1, tid))
    import bisect
    starts = [s[0] for s in on_core]

    def during(t0, t1, tid):
        out = defaultdict(float)
        i = max(0, bisect.bisect_left(starts, t0) - 1)
        while i < len(on_core) and on_core[i][0] < t1:
            on, off, r, who = on_core[i]
            if who != tid:
                out[r] += overlap(on, off, t0, t1)
            i += 1
        return out
    syscalls = {}
    for (name, kind, r), xs in sorted(by.items()):
        lat = sorted(t1 - t0 for t0, t1, _ in xs)
        d = defaultdict(float)
        total = sum(lat)
        if name in ("fdatasync", "fsync") or (name == "pwrite64" and kind == "redo"):
            for t0, t1, tid in xs:
                for k, v in during(t0, t1, tid).items():
                    d[k] += v
        syscalls[f"{name} {kind} by {r}"] = {
            "n": len(xs), "per_txn": len(xs) / txns if txns else None,
            "mean_us": 1e6 * total / len(xs), "p50_us": 1e6 * lat[len(lat) // 2],
            "p90_us": 1e6 * lat[int(len(lat) * 0.9)],
            "share_of_drain": total / span,
            "core_meanwhile": {k: v / total for k, v in sorted(d.items())} if d else None}
    # binlog syncs against redo syncs: do they overlap on the device?
    bsync = sorted((t0, t1) for (n, k, _), xs in by.items() if k == "binlog" and
                   n in ("fdatasync", "fsync") for t0, t1, _ in xs)
    rsync = sorted((t0, t1) for (n, k, _), xs in by.items() if k == "redo" and
                   n in ("fdatasync", "fsync") for t0, t1, _ in xs)
    redo_in_binlog = sum(1 for r0, r1 in rsync if any(overlap(r0, r1, b0, b1) > 0
                                                         for b0, b1 in _near(bsync, r0, r1)))
    # wakeups: who wakes whom among the replica's threads (by role), in the drain
    wk = defaultdict(int)
    for t, waker, wakee in tl.wakeups:
        if start <= t <= end and wakee in role:
            wk[f"{role.get(waker, 'idle' if waker == 0 else 'not replica')} -> {role[wakee]}"] += 1
    # switches per thread role
    sw = defaultdict(lambda: [0, 0])
    for tid, sl in tl.slices.items():
        if tid in role:
            for c, on, off, state in sl:
                if start <= off <= end:
                    sw[role[tid]][0 if state.startswith(("S", "D")) else 1] += 1
    blocks = [b for b in tl.blocks if start <= b[0] <= end]
    flushes = [b for b in blocks if "F" in b[2]]
    writes = [b for b in blocks if "W" in b[2] and "F" not in b[2]]
    return {
        "span_s": span, "txns": txns, "apply_rate": txns / span if txns else None,
        "core_share": core,
        "cpu_us_per_txn": {r: 1e6 * v / txns for r, v in busy.items()} if txns else None,
        "syscalls": syscalls,
        "redo_syncs_overlapping_a_binlog_sync": (redo_in_binlog, len(rsync)),
        "wakeups": dict(sorted(wk.items())),
        "switches_blocking_preempted": {r: tuple(v) for r, v in sorted(sw.items())},
        "block": {"flushes": len(flushes), "writes": len(writes),
                  "flush_mean_us": 1e6 * sum(b[1] - b[0] for b in flushes) / len(flushes)
                  if flushes else None,
                  "write_mean_us": 1e6 * sum(b[1] - b[0] for b in writes) / len(writes)
                  if writes else None,
                  # completions delivered in the idle task's context are dropped by perf here,
                  # and a flush (issued at sector 0, completed at -1) is never matched: these
                  # count only the requests seen both ways
                  "note": "partial: completions in idle context are not recorded"},
    }


def blocking_calls(tl: Timeline, tids: set, start: float, end: float):
    """Each sync/write call of `tids` begun in [start, end], its time split three ways:
    (tid, name, fd, enter, exit, cpu, sleep, runq, sleeps): on the core inside the call, asleep
    (the device, the journal, a lock), and runnable but waiting for the core (from each wakeup
    or preemption inside the call to the thread's next slice); `sleeps`: the asleep windows."""
    import bisect
    wake = defaultdict(list)
    for t, _, wakee in tl.wakeups:
        if wakee in tids:
            wake[wakee].append(t)
    sl = {tid: sorted(tl.slices.get(tid, []), key=lambda x: x[1]) for tid in tids}
    ons = {tid: [x[1] for x in v] for tid, v in sl.items()}
    out = []
    for tid, name, fd, t0, t1, _ in tl.calls:
        if tid not in tids or not (start <= t0 <= end):
            continue
        xs, on = sl[tid], ons[tid]
        i = max(0, bisect.bisect_right(on, t0) - 1)
        cpu, runq = 0.0, 0.0
        sleeps = []
        k = i
        while k < len(xs) and xs[k][1] < t1:
            c, a, b, state = xs[k]
            cpu += overlap(a, b, t0, t1)
            if state.startswith("R") and t0 <= b <= t1 and k + 1 < len(xs):
                runq += overlap(b, xs[k + 1][1], t0, t1)     # preempted inside the call
            elif state[:1] in "SD" and t0 <= b <= t1:
                ws = wake[tid]
                a = bisect.bisect_right(ws, b)
                back = xs[k + 1][1] if k + 1 < len(xs) else t1
                sleeps.append((b, min(ws[a], back) if a < len(ws) else back))
            k += 1
        ws = wake[tid]
        a = bisect.bisect_right(ws, t0)
        while a < len(ws) and ws[a] <= t1:
            j = bisect.bisect_left(on, ws[a])
            back = on[j] if j < len(on) else t1
            runq += overlap(ws[a], back, t0, t1)
            a += 1
        runq = min(runq, t1 - t0 - cpu)
        out.append((tid, name, fd, t0, t1, cpu, max(0.0, t1 - t0 - cpu - runq), runq, sleeps))
    return out


def preemptions(tl: Timeline, tids: set, start: float, end: float, cpu: int = 1) -> dict:
    """Switches where a replica thread lost the core while runnable (prev_state R), by what
    took the core: a thread inside a sync or write call (woken from its I/O), another."""
    inside = defaultdict(list)
    for tid, name, fd, t0, t1, _ in tl.calls:
        inside[tid].append((t0, t1, name))
    nxt_at = []
    for tid, sl in tl.slices.items():
        for c, on, off, _ in sl:
            if c == cpu and start <= on <= end:
                nxt_at.append((on, tid))
    nxt_at.sort()
    import bisect
    ons = [x[0] for x in nxt_at]
    out = defaultdict(int)
    for tid in tids:
        for c, on, off, state in tl.slices.get(tid, []):
            if c != cpu or not (start <= off <= end) or not state.startswith("R"):
                continue
            i = bisect.bisect_left(ons, off - 1e-7)
            who = nxt_at[i][1] if i < len(nxt_at) and nxt_at[i][0] - off < 1e-5 else None
            what = "other"
            if who is not None:
                for t0, t1, name in inside.get(who, ()):
                    if t0 <= off <= t1:
                        what = f"by a thread in {name}"
                        break
                else:
                    what = "by a replica thread" if who in tids else (
                        "idle?" if who == 0 else "by another process")
            out[what] += 1
    return dict(out)


def group_timeline(tl: Timeline, threads: dict, fds: dict, start: float, end: float,
                   sizes: list[int]) -> dict:
    """The binlog groups against the kernel: the n-th binlog sync of the drain is the n-th
    group of the replica's binlog (sync_binlog=1). Per group: how long its sync blocked, how
    many workers began a redo-log prepare (pwrite or fdatasync of ib_logfile0) while it ran,
    and the next group's size."""
    role = roles(threads)
    kinds = {int(fd): file_kind(p) for fd, p in fds.items()}
    workers = {t for t, r in role.items() if r == "worker"} or {
        t for t, r in role.items() if r == "driver"}
    calls = blocking_calls(tl, workers, start, end)
    bsync = sorted((c for c in calls if c[1] in ("fdatasync", "fsync") and
                    kinds.get(c[2]) == "binlog"), key=lambda c: c[3])
    redo = sorted((c for c in calls if kinds.get(c[2]) == "redo"), key=lambda c: c[3])
    out = {"binlog_syncs": len(bsync), "groups": len(sizes)}
    if not bsync:
        return out

    def stats(xs):
        xs = sorted(xs)
        return {"n": len(xs), "mean_us": 1e6 * sum(xs) / len(xs) if xs else None,
                "p50_us": 1e6 * xs[len(xs) // 2] if xs else None}
    for label, cs in (("binlog fdatasync", bsync),
                      ("redo pwrite", [c for c in redo if c[1] == "pwrite64"]),
                      ("redo fdatasync", [c for c in redo if c[1] == "fdatasync"])):
        out[label] = {"whole call": stats([c[4] - c[3] for c in cs]),
                      "on the core": stats([c[5] for c in cs]),
                      "asleep": stats([c[6] for c in cs]),
                      "waiting for the core": stats([c[7] for c in cs])}
    import bisect
    bsleep = sorted(w for c in bsync for w in c[8])
    b0 = [w[0] for w in bsleep]

    def overlaps(c):
        """Was the device asked for this redo sync while a binlog sync slept on it?"""
        for r0, r1 in c[8]:
            i = bisect.bisect_right(b0, r1)
            if any(overlap(r0, r1, x0, x1) > 0 for x0, x1 in bsleep[max(0, i - 4):i]):
                return True
        return False
    rs = [c for c in redo if c[1] == "fdatasync" and c[8]]
    out["redo fdatasync asleep, overlapping a binlog sync"] = stats(
        [c[6] for c in rs if overlaps(c)])
    out["redo fdatasync asleep, alone"] = stats([c[6] for c in rs if not overlaps(c)])
    # and the other way: a binlog sync whose sleep overlapped a redo sync's
    rsleep = sorted(w for c in rs for w in c[8])
    q0 = [w[0] for w in rsleep]

    def overlapped(c):
        for x0, x1 in c[8]:
            i = bisect.bisect_right(q0, x1)
            if any(overlap(x0, x1, y0, y1) > 0 for y0, y1 in rsleep[max(0, i - 8):i]):
                return True
        return False
    out["binlog fdatasync asleep, overlapping a redo sync"] = stats(
        [c[6] for c in bsync if c[8] and overlapped(c)])
    out["binlog fdatasync asleep, alone"] = stats(
        [c[6] for c in bsync if c[8] and not overlapped(c)])
    # prepares begun during group k's binlog sync against group k+1's size
    if len(bsync) == len(sizes):
        r0 = [c[3] for c in redo]
        pairs = []
        for k in range(len(bsync) - 1):
            s0, s1 = bsync[k][3], bsync[k][4]
            i, j = bisect.bisect_left(r0, s0), bisect.bisect_right(r0, s1)
            began = {redo[x][0] for x in range(i, j) if redo[x][0] != bsync[k][0]}
            pairs.append((len(began), sizes[k + 1]))
        n = len(pairs)
        out["next group size by prepares begun during the sync"] = {
            str(b): {"syncs": sum(1 for p in pairs if p[0] == b),
                     "next group mean": sum(p[1] for p in pairs if p[0] == b) /
                     max(1, sum(1 for p in pairs if p[0] == b))}
            for b in sorted({p[0] for p in pairs})}
        out["syncs with a prepare begun during them"] = (
            sum(1 for p in pairs if p[0]) / n if n else None)
    out["preemptions"] = preemptions(tl, set(role), start, end)
    return out


MODEL_SCHEDULERS = {"serial": "serial", "conservative": "commit_id+mariadb_conservative",
                    "optimistic": "commit_id+mariadb_optimistic"}


def model_timeline(trace_path: str, profile, mode: str, workers: int,
                   engine: str = "reference") -> dict:
    """The same closed backlog through the model: its apply rate, binlog groups and the mean
    pieces of a transaction's commit path (µs): execution (start to its XID, queueing for the
    core included), prepare (XID to ready: the redo log's write and flush), ready to commit
    (waiting for the group in progress, then its own group's sync)."""
    from commitsched.schedulers import run_scheduler
    from commitsched.trace import load_trace
    txns = load_trace(trace_path).txns
    runs = []
    run_scheduler(MODEL_SCHEDULERS[mode], txns, max(1, workers), profile, runs.append,
                  engine=engine)
    n = len(runs)
    end = max(r.commit for r in runs)
    commits = sorted(r.commit for r in runs)
    groups = 1 + sum(1 for a, b in zip(commits, commits[1:]) if b - a > 1e-9)

    def mean(f):
        xs = [f(r) for r in runs if f(r) is not None]
        return sum(xs) / len(xs) if xs else None
    return {"transactions": n, "seconds": end / 1e6, "apply_rate": n / (end / 1e6),
            "binlog_group": n / groups,
            "execution_us": mean(lambda r: r.exec_end - r.start if r.start is not None
                                 else None),
            "prepare_us": mean(lambda r: r.ready - r.exec_end),
            "ready_to_commit_us": mean(lambda r: r.commit - r.ready),
            "commit_interval_us": end / groups}


def _near(intervals, t0, t1):
    import bisect
    i = bisect.bisect_left(intervals, (t0 - 1.0, 0.0))
    while i < len(intervals) and intervals[i][0] < t1:
        yield intervals[i]
        i += 1


def binlog_groups(path: str) -> list[tuple[int, int | None]]:
    out = []
    with open(path) as f:
        for line in f:
            seq, cid = line.split("\t")
            out.append((int(seq), None if cid.strip() in ("", "-") else int(cid)))
    return out


def group_sizes(rows) -> list[int]:
    sizes, last = [], object()
    for _, cid in rows:
        if cid is not None and cid == last:
            sizes[-1] += 1
        else:
            sizes.append(1)
        last = cid
    return sizes


# ------------------------------------------------------------------ measuring

CID = re.compile(r"\bGTID (\d+)-(\d+)-(\d+)(?: cid=(\d+))?")


def read_groups(tool: str, files: list[str]) -> list[tuple[int, int | None]]:
    r = subprocess.run([tool, "--no-defaults", *files], capture_output=True, text=True,
                       check=True)
    out = []
    for line in r.stdout.splitlines():
        m = CID.search(line)
        if m and line.startswith("#"):
            out.append((int(m.group(3)), int(m.group(4)) if m.group(4) else None))
    return out


def parse_name(text: str) -> dict:
    name, _, flag = text.partition("+")
    parts = name.split("-")
    if len(parts) != 3 or parts[0] not in ("durable", "relaxed") or \
            parts[1] not in ("serial", "conservative", "optimistic") or not parts[2].isdigit():
        raise SystemExit(f"ktrace: bad run {text!r} (DURABILITY-MODE-THREADS[+noperf|+sample])")
    if flag not in ("", "noperf", "sample"):
        raise SystemExit(f"ktrace: bad run {text!r}: only +noperf or +sample after the name")
    return {"name": text.replace("+", "_"), "durability": parts[0], "mode": parts[1],
            "threads": int(parts[2]), "perf": flag != "noperf", "sample": flag == "sample"}


def sample_command(data: str) -> list[str]:
    """`perf record` sampling the replica's core (CPU 1) at SAMPLE_HZ, user and kernel: where
    its time goes, by thread, library and function (`+sample` runs; `sample_summary`)."""
    return ["taskset", "-c", "0", "perf", "record", "-q", "-C", "1", "-e", "cpu-clock",
            "-F", str(SAMPLE_HZ), "-m", "4096", "-o", data]


SAMPLE_HZ = 4000


def sample_summary(data: str, threads: dict, transactions: int, top: int = 25) -> dict:
    """A `+sample` run's samples per transaction (µs of the core a transaction) by thread role
    (performance_schema's names), by library and by function (the top `top`)."""
    r = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("ktrace: perf script failed: " + r.stderr[-300:])
    role_of = roles(threads)
    by_role, by_dso, by_sym = defaultdict(int), defaultdict(int), defaultdict(int)
    n = 0
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) < 3 or not f[0].isdigit():
            continue
        tid, dso = int(f[0]), f[-1].strip("()")
        sym = " ".join(f[2:-1]) or "[unknown]"
        role = "idle" if tid == 0 else role_of.get(tid, "outside the server")
        by_role[role] += 1
        by_dso[f"{role if role in ('idle',) else 'server' if tid in role_of else 'other'}: "
               f"{os.path.basename(dso)}"] += 1
        by_sym[f"{os.path.basename(dso)}: {sym}"] += 1
        n += 1
    us = lambda k: round(1e6 * k / SAMPLE_HZ / max(transactions, 1), 2)  # noqa: E731
    order = lambda d: dict(sorted(((k, us(v)) for k, v in d.items()),  # noqa: E731
                                  key=lambda kv: -kv[1]))
    return {"samples": n, "hz": SAMPLE_HZ, "us_per_txn_by_role": order(by_role),
            "us_per_txn_by_dso": order(by_dso),
            "us_per_txn_top_symbols": dict(list(order(by_sym).items())[:top])}


def perf_command(data: str) -> list[str]:
    """`perf record` of the whole machine (both cores: a wakeup or a block completion may come
    from the other), for a shell's `exec` (taskset execs perf in turn): perf's own writes of its buffer are left out of
    the write events (`$$`: the shell's pid, which exec gives to perf), or they would feed on
    themselves."""
    # perf itself on the source's core (CPU 0), with a large buffer (fewer wakeups of it)
    cmd = ["taskset", "-c", "0", "perf", "record", "-q", "-a", "-k", "mono", "-m", "4096",
           "-o", data]
    for e in EVENTS:
        cmd += ["-e", e]
        if e.startswith("syscalls:"):
            cmd += ["--filter", '"common_pid != $$"']
    return cmd


def drain(rig, run: dict, out: str, rate: int, seconds: int) -> dict:
    P, R = rig.primary, rig.replica
    rig.configure(run)
    if not rig.wait_caught_up(600):
        raise SystemExit("ktrace: the replica did not catch up before the run")
    R.sql("STOP SLAVE SQL_THREAD")
    P.sql("FLUSH BINARY LOGS")
    pbinlog = P.sql("SHOW MASTER STATUS")[0][0]
    log(f"  backlog: {rate}/s for {seconds} s at the source")
    r = subprocess.run(rig.sysbench_cmd("run", rate, seconds), capture_output=True, text=True,
                       timeout=seconds + 120)
    if r.returncode != 0:
        raise SystemExit("ktrace: sysbench failed\n" + r.stdout[-800:] + r.stderr[-800:])
    target = rig.positions()[0]
    deadline = time.time() + 120
    while True:                                   # the IO thread has received it all
        io = R.slave_status().get("Gtid_IO_Pos", "")
        if io and int(io.rsplit("-", 1)[1]) >= target:
            break
        if time.time() > deadline:
            raise SystemExit("ktrace: the IO thread did not receive the backlog")
        time.sleep(0.2)
    R.sql("FLUSH BINARY LOGS")
    rbinlog = R.sql("SHOW MASTER STATUS")[0][0]
    first = rig.positions()[1]
    fds = {}
    for fd in os.listdir(f"/proc/{R.pid}/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/{R.pid}/fd/{fd}")
        except OSError:
            pass
    os.makedirs(out, exist_ok=True)
    perf = None
    data = os.path.join(out, "perf.data")
    if run["perf"]:
        command = sample_command(data) if run.get("sample") else perf_command(data)
        perf = subprocess.Popen(["sh", "-c", "exec " + " ".join(command)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.5)
    c0 = R.status()
    t0 = time.monotonic()
    R.sql("START SLAVE SQL_THREAD")
    import pymysql
    rc = pymysql.connect(unix_socket=R.sock, user="root", autocommit=True)
    cur = rc.cursor()
    while True:
        cur.execute("SELECT @@gtid_slave_pos")
        g = cur.fetchone()[0]
        if g and int(g.rsplit("-", 1)[1]) >= target:
            t1 = time.monotonic()
            break
        if time.monotonic() - t0 > 300:
            raise SystemExit(f"ktrace: the drain did not end in 300 s: {stuck(R, out, g, target)}")
        time.sleep(0.005)
    rc.close()
    c1 = R.status()
    # the SQL thread and the workers exist only while it runs: their names now
    threads = {row[0]: row[1] for row in R.sql(
        "SELECT THREAD_OS_ID, NAME FROM performance_schema.threads WHERE THREAD_OS_ID "
        "IS NOT NULL")}
    if perf is not None:
        time.sleep(0.2)
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
    R.sql("FLUSH BINARY LOGS")
    P.sql("FLUSH BINARY LOGS")
    groups = read_groups(rig.tools["binlog"], [os.path.join(R.datadir, rbinlog)])
    with open(os.path.join(out, "groups.tsv"), "w") as f:
        f.writelines(f"{s}\t{'' if c is None else c}\n" for s, c in groups)
    from commitsched.importers import import_binlog
    import_binlog([os.path.join(P.datadir, pbinlog)], os.path.join(out, "trace.jsonl.gz"),
                  schema=[rig.schema], progress=False)
    counters = ("binlog_commits", "binlog_group_commits", "innodb_data_fsyncs",
                "innodb_os_log_fsyncs", "slave_retried_transactions")
    meta = {"run": run, "drain_start_mono": t0, "drain_end_mono": t1,
            "transactions": target - first, "seconds": t1 - t0,
            "apply_rate": (target - first) / (t1 - t0),
            "counters": {c: int(c1.get(c, 0)) - int(c0.get(c, 0)) for c in counters},
            "replica_pid": R.pid, "version": rig.version,
            "backlog": {"rate": rate, "seconds": seconds}, "perf_events": EVENTS if perf else None,
            "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(out, "threads.json"), "w") as f:
        json.dump(threads, f, indent=1)
    with open(os.path.join(out, "fds.json"), "w") as f:
        json.dump(fds, f, indent=1)
    if perf is not None and run.get("sample"):
        meta["sampled"] = sample_summary(data, threads, meta["transactions"])
        with open(os.path.join(out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        os.remove(data)
    elif perf is not None:
        script = subprocess.Popen(["perf", "script", "-i", data, "-F",
                                   "comm,pid,tid,cpu,time,event,trace"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        with gzip.open(os.path.join(out, "perf.script.gz"), "wt", compresslevel=6) as f:
            for line in script.stdout:
                f.write(line)
        if script.wait() != 0:
            raise SystemExit("ktrace: perf script failed")
        os.remove(data)
    log(f"  {meta['transactions']} transactions in {meta['seconds']:.2f} s "
        f"({meta['apply_rate']:.0f}/s), binlog group {len(groups) / len(group_sizes(groups)):.2f}")
    return meta


def stuck(server, out: str, applied: str, target: int) -> str:
    """A drain that does not end: what the replica's threads were doing (its processlist and
    slave status, kept in OUT/stuck.json), and one line of it."""
    status = server.slave_status()
    threads = server.sql("SELECT ID, USER, COMMAND, TIME, STATE, LEFT(INFO, 80) FROM "
                         "information_schema.PROCESSLIST WHERE USER = 'system user'")
    with open(os.path.join(out, "stuck.json"), "w") as f:
        json.dump({"applied": applied, "target": target, "slave_status": status,
                   "system_threads": threads}, f, indent=1)
    states = sorted({row[4] for row in threads if len(row) > 4 and row[4]})
    return (f"applied {applied} of ...-{target}; SQL thread {status.get('Slave_SQL_Running')} "
            f"({status.get('Slave_SQL_Running_State') or '-'}), last error "
            f"{status.get('Last_SQL_Error') or 'none'}; the system threads' states: "
            f"{'; '.join(states) or '-'} (all in {os.path.join(out, 'stuck.json')})")


def overlap_probe(directory: str, seconds: float = 3.0, rounds: int = 1,
                  cpu: int | None = None) -> dict:
    """Do an in-place sync (the redo log as MariaDB 10.11 writes it: 4 KiB overwritten with
    O_DIRECT, then fdatasync) and an append sync (the binlog: 512 bytes appended, then
    fdatasync, which commits ext4's journal) queue behind each other on this disk? `rounds`
    rounds of `commitsched calibrate`'s probe (model/disk_overlap.py: each kind's write + sync
    alone for `seconds`, then both at once, back to back), µs, each with the `disk_hold` it
    reads, and their medians (the hold's is what calibrate takes). `cpu`: pinned to that core (the
    rig's replica has one)."""
    from commitsched import disk_overlap
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})

    def held(r):
        hold, slowed, whole = disk_overlap.hold_from(r)
        return {"disk_hold_us": hold, "slowed_us": round(slowed, 1),
                "slowed_if_whole_us": round(whole, 1)}
    out = []
    try:
        for i in range(rounds):
            print(f"overlap probe: round {i + 1} of {rounds}", file=sys.stderr, flush=True)
            r = disk_overlap.probe(directory, seconds)
            out.append({**r, **held(r)})
    except OSError as e:
        raise SystemExit(f"ktrace: overlap-probe: {e}") from None
    hold, slowed, whole = disk_overlap.hold_of(out)
    return {"seconds": seconds, "cpu": cpu, "rounds": out,
            "median": {**disk_overlap.median_round(out), "disk_hold_us": hold,
                       "slowed_us": round(slowed, 1), "slowed_if_whole_us": round(whole, 1)}}


def cmd_measure(a) -> int:
    from lag_check import new_rig
    if os.geteuid() != 0:
        raise SystemExit("ktrace: measure needs root (perf record -a)")
    runs, seen = [], defaultdict(int)
    for text in a.runs.split(","):
        run = parse_name(text)
        seen[run["name"]] += 1
        if seen[run["name"]] > 1:                 # a repeat: its own folder
            run["name"] += f"_r{seen[run['name']]}"
        runs.append(run)
    rig = new_rig("ktrace-", a.workdir, a.port, replica_binlog=True,
                  primary_durability="relaxed")
    try:
        setup = rig.setup()
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "setup.json"), "w") as f:
            json.dump(setup, f, indent=1)
        for run in runs:
            log(f"run {run['name']}")
            drain(rig, run, os.path.join(a.out, "runs", run["name"]), a.rate, a.seconds)
    finally:
        rig.stop()
        subprocess.run(["rm", "-rf", rig.root])
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="drains under perf on lag_check's rig (root)")
    m.add_argument("--out", required=True)
    m.add_argument("--runs", default="durable-serial-1,durable-conservative-2,"
                   "durable-conservative-4,durable-optimistic-4,durable-conservative-4+noperf",
                   help="DURABILITY-MODE-THREADS[+noperf|+sample], comma-separated")
    m.add_argument("--port", type=int, default=4100)
    m.add_argument("--rate", type=int, default=2000, help="the backlog's write rate (txn/s)")
    m.add_argument("--seconds", type=int, default=6, help="the backlog's seconds of writes")
    m.add_argument("--workdir", default=None)
    m.set_defaults(func=cmd_measure)
    o = sub.add_parser("overlap-probe", help="do an in-place and an append fdatasync queue "
                       "behind each other on this disk? (what the model's shared_disk assumes)")
    o.add_argument("directory", help="a folder on the disk to probe (the replica's datadir's)")
    o.add_argument("--seconds", type=float, default=3.0, help="each setting's (default 3)")
    o.add_argument("--rounds", type=int, default=1)
    o.add_argument("--cpu", type=int, default=None, help="pin the probe to this core")
    o.set_defaults(func=lambda a: print(json.dumps(overlap_probe(a.directory, a.seconds,
                                                                 a.rounds, a.cpu),
                                                   indent=1)) or 0)
    r = sub.add_parser("report", help="each run's timeline, summarised")
    r.add_argument("out")
    r.add_argument("--profile", action="append", metavar="[LABEL=]PROFILE.json",
                   help="also put each perf run's backlog through the model with this profile")
    r.add_argument("--to", default=None, help="write report.md and summary.json here "
                   "(default: the measure folder)")
    r.set_defaults(func=cmd_report)
    a = p.parse_args(argv)
    return a.func(a)


def run_summary(rd: str) -> dict:
    """One run's folder read back: its meta, binlog groups and (with perf) its timeline."""
    with open(os.path.join(rd, "meta.json")) as f:
        meta = json.load(f)
    sizes = group_sizes(binlog_groups(os.path.join(rd, "groups.tsv")))
    row = {"run": os.path.basename(rd), "transactions": meta["transactions"],
           "seconds": meta["seconds"], "apply_rate": meta["apply_rate"],
           "binlog_group": sum(sizes) / len(sizes), "perf": meta["run"]["perf"]}
    script = os.path.join(rd, "perf.script.gz")
    if os.path.exists(script):
        with open(os.path.join(rd, "threads.json")) as f:
            threads = json.load(f)
        with open(os.path.join(rd, "fds.json")) as f:
            fds = json.load(f)
        with open_text(script) as f:
            tl = parse_perf_script(f, script)
        a, b = meta["drain_start_mono"], meta["drain_end_mono"]
        row["timeline"] = summarize(tl, threads, fds, a, b, txns=meta["transactions"])
        row["groups"] = group_timeline(tl, threads, fds, a, b, sizes)
    return row


def _us(piece: dict | None, key: str) -> str:
    v = (piece or {}).get(key, {}).get("mean_us")
    return "-" if v is None else f"{v:.0f}"


def _mean(stat: dict) -> str:
    return "-" if stat.get("mean_us") is None else f"{stat['mean_us']:.0f}"


def markdown(rows: list[dict], model: dict) -> str:
    out = ["| run | txns | drain s | apply rate /s | binlog group | core: workers / driver / "
           "other server threads / other processes / idle | applier CPU µs/txn (workers + "
           "driver) | preempted while runnable, per txn |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r.get("timeline")
        if t is None:
            out.append(f"| {r['run']} | {r['transactions']} | {r['seconds']:.2f} | "
                       f"{r['apply_rate']:.0f} | {r['binlog_group']:.2f} | (no perf) | - | - |")
            continue
        c, cpu = t["core_share"], t["cpu_us_per_txn"]
        pre = sum(r["groups"]["preemptions"].values()) / r["transactions"]
        out.append(
            f"| {r['run']} | {r['transactions']} | {r['seconds']:.2f} | {r['apply_rate']:.0f} | "
            f"{r['binlog_group']:.2f} | " + " / ".join(
                f"{100 * c.get(k, 0):.0f}%" for k in ("worker", "driver", "other",
                                                      "not replica", "idle")) +
            f" | {cpu.get('worker', 0) + cpu.get('driver', 0):.0f} | {pre:.2f} |")
    out += ["", "Each call of the commit path, mean µs: whole call = on the core + asleep (the "
            "device, the journal) + runnable, waiting for the core (after its wakeup or a "
            "preemption inside the call).", "",
            "| run | binlog fdatasync (leader) | redo pwrite | redo fdatasync | redo fdatasync "
            "asleep: overlapping a binlog sync's sleep / alone (n) | binlog fdatasync asleep: "
            "overlapping a redo sync's sleep / alone (n) | binlog syncs with another worker's "
            "prepare begun during them |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        g = r.get("groups")
        if g is None or "binlog fdatasync" not in g:
            continue

        def piece(name):
            p = g[name]
            return (f"{_us(p, 'whole call')} = {_us(p, 'on the core')} + {_us(p, 'asleep')} + "
                    f"{_us(p, 'waiting for the core')}")
        ov = g["redo fdatasync asleep, overlapping a binlog sync"]
        al = g["redo fdatasync asleep, alone"]
        bo = g["binlog fdatasync asleep, overlapping a redo sync"]
        ba = g["binlog fdatasync asleep, alone"]
        share = g.get("syncs with a prepare begun during them")
        out.append(f"| {r['run']} | {piece('binlog fdatasync')} | {piece('redo pwrite')} | "
                   f"{piece('redo fdatasync')} | {_mean(ov)} ({ov['n']}) / {_mean(al)} "
                   f"({al['n']}) | {_mean(bo)} ({bo['n']}) / {_mean(ba)} ({ba['n']}) | "
                   f"{'-' if share is None else f'{100 * share:.0f}%'} |")
    if model:
        out += ["", "The same backlogs through the model (reference engine, closed backlog), "
                "mean µs a transaction:", "",
                "| profile | run | apply rate /s (measured) | binlog group (measured) | "
                "execution | prepare (XID to ready) | ready to commit | µs between group "
                "commits (measured) |", "|---|---|---|---|---|---|---|---|"]
        meas = {r["run"]: r for r in rows}
        for (pname, run), m in model.items():
            r = meas[run]
            out.append(f"| {pname} | {run} | {m['apply_rate']:.0f} ({r['apply_rate']:.0f}) | "
                       f"{m['binlog_group']:.2f} ({r['binlog_group']:.2f}) | "
                       f"{m['execution_us']:.0f} | {m['prepare_us']:.0f} | "
                       f"{m['ready_to_commit_us']:.0f} | {m['commit_interval_us']:.0f} "
                       f"({1e6 * r['seconds'] * r['binlog_group'] / r['transactions']:.0f}) |")
    return "\n".join(out) + "\n"


def cmd_report(a) -> int:
    runs = os.path.join(a.out, "runs")
    if not os.path.isdir(runs):
        raise SystemExit(f"ktrace: {runs}: no runs (a ktrace measure folder?)")
    names = sorted(os.listdir(runs))
    rows = []
    for i, d in enumerate(names, 1):
        print(f"[{i}/{len(names)}] {d}", file=sys.stderr, flush=True)
        rows.append(run_summary(os.path.join(runs, d)))
    model = {}
    for spec in a.profile or []:
        from commitsched.profiles import load_profile_file
        label, _, path = spec.rpartition("=")
        prof = load_profile_file(path)
        for r in rows:
            if r["perf"]:
                run = parse_name(r["run"].split("_")[0])
                model[(label or os.path.basename(path), r["run"])] = model_timeline(
                    os.path.join(runs, r["run"], "trace.jsonl.gz"), prof, run["mode"],
                    run["threads"])
    text = markdown(rows, model)
    to = a.to or a.out
    os.makedirs(to, exist_ok=True)
    with open(os.path.join(to, "report.md"), "w") as f:
        f.write(text)
    with open(os.path.join(to, "summary.json"), "w") as f:
        json.dump(rows, f, indent=1, sort_keys=True)
    print(text, end="")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ParseError as e:
        raise SystemExit(f"ktrace: {e}")
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"ktrace: {e}")
    except KeyError as e:
        raise SystemExit(f"ktrace: a run's files lack {e} (not a ktrace measure folder?)")
