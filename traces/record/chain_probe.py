"""The commit-chain probe: does the simulator's rule for waiting on a core hold on this machine?

A parallel replica's threads do a burst of CPU work, wait for their commit turn (in order, each
woken by its predecessor), do a short serial step and go on. With more threads than cores, what
decides the apply time is how the kernel hands cores to woken threads. This probe runs that
pattern with no database (a C program: `threads` workers apply `transactions` transactions of
`exec` µs of CPU, then wait for their turn on their own pthread condition variable, then `commit`
µs of CPU, then wake the next transaction's worker) and compares its time per transaction with
the simulator's `CpuPool` under both of its rules, given the machine's wake-up latency measured
by the same run (`calib_server.wakeup_probe`): one shared first-come-first-served queue, and
per-core run queues (`Profile.per_core_queues`, docs/model.md). Nothing is fitted to the probe.

    python traces/record/chain_probe.py measure --out traces/calibration/chain_probe
    python traces/record/chain_probe.py report traces/calibration/chain_probe [--markdown]
"""
from __future__ import annotations

import argparse
import csv
import heapq
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from record import _import_importers  # noqa: E402

_import_importers()
from commitsched.simcore import CpuPool  # noqa: E402

CHAIN_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9; }
static double thread_cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9; }
static void burn(double us) { double end = thread_cpu() + us * 1e-6; while (thread_cpu() < end); }
static int n, workers, next_txn = 0, turn = 0;
static double exec_us, commit_us;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t own[256];
static int waiting_for[256];
static void *work(void *arg) {
  int me = (int)(long)arg;
  for (;;) {
    pthread_mutex_lock(&m); int t = next_txn++; pthread_mutex_unlock(&m);
    if (t >= n) return 0;
    burn(exec_us);
    pthread_mutex_lock(&m);              /* wait for the commit turn, on its own condition */
    waiting_for[me] = t;
    while (turn != t) pthread_cond_wait(&own[me], &m);
    waiting_for[me] = -1;
    pthread_mutex_unlock(&m);
    burn(commit_us);
    pthread_mutex_lock(&m);              /* pass the turn: wake the next one's worker only */
    turn = t + 1;
    for (int i = 0; i < workers; i++) if (waiting_for[i] == t + 1) pthread_cond_signal(&own[i]);
    pthread_mutex_unlock(&m);
  }
}
int main(int argc, char **argv) {
  if (argc != 5) { fprintf(stderr, "usage: chain N THREADS EXEC_US COMMIT_US\n"); return 2; }
  n = atoi(argv[1]); workers = atoi(argv[2]); exec_us = atof(argv[3]); commit_us = atof(argv[4]);
  if (workers < 1 || workers > 256) { fprintf(stderr, "THREADS: 1 to 256\n"); return 2; }
  pthread_t th[256]; struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0); double t0 = now();
  for (int i = 0; i < workers; i++) { pthread_cond_init(&own[i], 0); waiting_for[i] = -1;
    pthread_create(&th[i], 0, work, (void *)(long)i); }
  for (int i = 0; i < workers; i++) pthread_join(th[i], 0);
  double wall = now() - t0; getrusage(RUSAGE_SELF, &r1);
  double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec)
    + ((r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec)) * 1e-6;
  printf("%.6f %.6f %ld\n", wall, cpu, r1.ru_nvcsw - r0.ru_nvcsw);
  return 0;
}
"""

FIELDS = ("round", "threads", "exec_us", "commit_us", "transactions", "wall_s", "cpu_s",
          "blocking_waits", "us_per_txn", "busy_cores", "cpu_avail", "started_utc")


def simulate(transactions: int, threads: int, exec_us: float, commit_us: float, cores: int,
             wakeup: float, per_core: bool) -> float:
    """The probe's pattern in the simulator's terms: µs per transaction. Work runs on
    `CpuPool` cores; a worker whose turn has not come sleeps and runs `wakeup` µs after its
    predecessor's commit step ends; a worker that finds its turn already come goes on."""
    heap: list = []
    counter = itertools.count()
    pool = CpuPool(cores, heap, counter, per_core)
    EXEC, WOKEN, COMMIT = 0, 1, 2
    next_txn, turn = 0, 0
    waiting: dict[int, object] = {}
    txn_of: dict[object, int] = {}

    def take(worker, now: float) -> None:
        nonlocal next_txn
        if next_txn < transactions:
            txn_of[worker] = next_txn
            next_txn += 1
            pool.execute(worker, now, exec_us, EXEC, worker)

    for w in range(threads):
        take(("worker", w), 0.0)
    end = 0.0
    while heap:
        now, _, kind, worker = heapq.heappop(heap)
        end = now
        if kind == EXEC:
            pool.release(worker, now)
            if turn == txn_of[worker]:
                pool.execute(worker, now, commit_us, COMMIT, worker)
            else:
                waiting[txn_of[worker]] = worker
        elif kind == WOKEN:
            pool.execute(worker, now, commit_us, COMMIT, worker)
        else:
            pool.release(worker, now)
            turn += 1
            woken = waiting.pop(turn, None)
            if woken is not None:
                heapq.heappush(heap, (now + wakeup, next(counter), WOKEN, woken))
            take(worker, now)
    return end / transactions


def _ints(s: str) -> list[int]:
    try:
        vals = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}")
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {s!r}")
    return vals


def cmd_measure(a) -> int:
    import calib_server
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("chain_probe: needs a C compiler (cc or gcc)", file=sys.stderr)
        return 2
    if max(a.threads) > 256:
        print("chain_probe: --threads: at most 256", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    runs_path = os.path.join(a.out, "runs.csv")
    configs = [(w, e, c) for e in a.exec for c in a.commit for w in a.threads]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "chain.c"), os.path.join(tmp, "chain")
        with open(src, "w") as f:
            f.write(CHAIN_C)
        subprocess.run([cc, "-O2", "-pthread", src, "-o", exe], check=True, capture_output=True)
        wake = calib_server.wakeup_probe(tmp)
        rows = []
        total = a.rounds * len(configs)
        for r in range(1, a.rounds + 1):
            for i, (w, e, c) in enumerate(configs):
                avail = calib_server.cpu_probe()
                started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                out = subprocess.run([exe, str(a.transactions), str(w), str(e), str(c)],
                                     check=True, capture_output=True, text=True, timeout=600)
                wall, cpu, waits = out.stdout.split()
                wall, cpu = float(wall), float(cpu)
                rows.append({"round": r, "threads": w, "exec_us": e, "commit_us": c,
                             "transactions": a.transactions, "wall_s": wall, "cpu_s": cpu,
                             "blocking_waits": int(waits),
                             "us_per_txn": round(wall / a.transactions * 1e6, 2),
                             "busy_cores": round(cpu / wall, 3), "cpu_avail": avail,
                             "started_utc": started})
                done = (r - 1) * len(configs) + i + 1
                print(f"[{done}/{total}] round {r} W={w} exec {e} commit {c}: "
                      f"{rows[-1]['us_per_txn']} us/txn, busy {rows[-1]['busy_cores']}",
                      file=sys.stderr, flush=True)
    tmp_path = runs_path + ".tmp"
    with open(tmp_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp_path, runs_path)
    meta = {"cores": os.cpu_count(), "wakeup_probe": wake, "transactions": a.transactions,
            "rounds": a.rounds, "host": os.uname().nodename,
            "kernel": os.uname().release,
            "command": "python traces/record/chain_probe.py " + " ".join(sys.argv[1:])}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {runs_path} ({len(rows)} runs)", file=sys.stderr)
    return 0


def load(folder: str) -> tuple[dict, list[dict]]:
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    with open(os.path.join(folder, "runs.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return meta, rows


def compare(folder: str, transactions: int = 4000) -> list[dict]:
    """Per configuration: the measured µs per transaction (median, min, max over the rounds)
    and the simulator's, with one shared queue and with per-core queues, and the ideal (both
    cores always busy, the commit steps one after the other)."""
    meta, rows = load(folder)
    wake = meta["wakeup_probe"]["median_us"]
    cores = int(meta["cores"])
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (int(r["threads"]), float(r["exec_us"]), float(r["commit_us"]))
        groups.setdefault(key, []).append(r)
    out = []
    for (w, e, c), runs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        vals = [float(r["us_per_txn"]) for r in runs]
        ideal = e + c if w == 1 else max(c, (e + c) / min(w, cores))
        # the CPU beyond the burned work, per transaction, and the blocking waits (voluntary
        # context switches) per transaction: what one sleep and wake-up costs in CPU here
        extra = statistics.median(float(r["cpu_s"]) * 1e6 / int(r["transactions"]) - e - c
                                  for r in runs)
        waits = statistics.median(int(r["blocking_waits"]) / int(r["transactions"])
                                  for r in runs)
        out.append({"threads": w, "exec_us": e, "commit_us": c, "median": statistics.median(vals),
                    "min": min(vals), "max": max(vals), "rounds": len(vals), "ideal": ideal,
                    "extra_cpu_us": extra, "waits": waits,
                    "cpu_per_wait_us": extra / waits if waits >= 0.1 else None,
                    "shared": simulate(transactions, w, e, c, cores, wake, False),
                    "per_core": simulate(transactions, w, e, c, cores, wake, True)})
    return out


def _err(pred: float, meas: float) -> float:
    return abs(pred / meas - 1)


def report(folder: str, markdown: bool) -> str:
    meta, _ = load(folder)
    rows = compare(folder)
    keys = (("per_core", "simulator, per-core queues"), ("shared", "simulator, one shared queue"),
            ("ideal", "baseline: ideal (cores always busy)"))
    lines = [f"Commit-chain probe, {meta['cores']} cores, kernel {meta['kernel']}; wake-up "
             f"probe {meta['wakeup_probe']['median_us']:.1f} µs (median of "
             f"{meta['wakeup_probe']['rounds']}); {meta['transactions']} transactions a run, "
             f"{meta['rounds']} rounds. µs per transaction; in brackets the error against the "
             "measured median.", ""]
    lines.append("| threads | exec µs | commit µs | measured median [min, max] | "
                 + " | ".join(title for _, title in keys)
                 + " | blocking waits per transaction | CPU µs per wait |")
    lines.append("|---|---|---|---|" + "---|" * len(keys) + "---|---|")
    for r in rows:
        cells = [f"{r[k]:.1f} ({r[k] / r['median'] - 1:+.0%})" for k, _ in keys]
        per_wait = "-" if r["cpu_per_wait_us"] is None else f"{r['cpu_per_wait_us']:.1f}"
        lines.append(f"| {r['threads']} | {r['exec_us']:g} | {r['commit_us']:g} | "
                     f"{r['median']:.1f} [{r['min']:.1f}, {r['max']:.1f}] | "
                     + " | ".join(cells) + f" | {r['waits']:.2f} | {per_wait} |")
    lines += ["", "| configurations | " + " | ".join(t for _, t in keys) + " |",
              "|---|" + "---|" * len(keys)]
    for label, sel in (("all", rows), ("more threads than cores",
                                        [r for r in rows if r["threads"] > int(meta["cores"])])):
        if sel:
            meds = [statistics.median(_err(r[k], r["median"]) for r in sel) for k, _ in keys]
            lines.append(f"| {label} ({len(sel)}): median abs error | "
                         + " | ".join(f"{m:.0%}" for m in meds) + " |")
    per_wait = [r["cpu_per_wait_us"] for r in rows if r["cpu_per_wait_us"] is not None]
    if per_wait:
        lines += ["", f"CPU per blocking wait (the process's CPU beyond the burned work, over its "
                      f"voluntary context switches; configurations with at least 0.1 a "
                      f"transaction): median {statistics.median(per_wait):.1f} µs, range "
                      f"{min(per_wait):.1f}-{max(per_wait):.1f}, over {len(per_wait)} "
                      f"configurations."]
    text = "\n".join(lines) + "\n"
    if not markdown:
        text = text.replace("| ", "").replace(" |", "")
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="run the probe grid on this machine")
    m.add_argument("--out", required=True, help="folder for runs.csv and meta.json")
    m.add_argument("--threads", type=_ints, default=[1, 2, 3, 4, 8, 16])
    m.add_argument("--exec", type=_ints, default=[20, 40, 80], help="µs of CPU per transaction")
    m.add_argument("--commit", type=_ints, default=[5, 20], help="µs of CPU per commit step")
    m.add_argument("--transactions", type=int, default=10000)
    m.add_argument("--rounds", type=int, default=3)
    r = sub.add_parser("report", help="measured against simulated, from a measured folder")
    r.add_argument("folder")
    r.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "measure":
        if a.transactions < 1 or a.rounds < 1:
            ap.error("--transactions and --rounds must be at least 1")
        return cmd_measure(a)
    try:
        print(report(a.folder, a.markdown), end="")
    except (OSError, KeyError, ValueError) as e:
        print(f"chain_probe: {a.folder}: not a measured probe folder ({e})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
