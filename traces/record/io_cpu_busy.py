#!/usr/bin/env python3
"""What an IO costs the thread that waits for it, on an idle core and on a busy one: calibrate's
own probe (`calibrate_replica.io_cpu_us`: an in-place O_DIRECT write, the same with fdatasync,
an append with fdatasync) pinned to one CPU, alone and with a spinning process on that CPU, in
alternating rounds (docs/lag-check/one-core-cpu.md, "What is left").

    python traces/record/io_cpu_busy.py --dir DIR [--cpu N] [--rounds R] [--out FILE.json]

`calibrate` probes on the replica's CPUs while the replica idles in its stop; a replica applying
on one saturated core waits for its IOs while its other threads hold the core. A measurement,
no model: the medians and every round to FILE.json, a Markdown table on stdout.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def spinner(cpu: int) -> subprocess.Popen:
    """A process burning `cpu` until killed."""
    return subprocess.Popen([sys.executable, "-c", "import os; os.sched_setaffinity(0, {%d})\n"
                             "while True: pass" % cpu])


def measure(directory: str, cpu: int, rounds: int, n: int) -> dict:
    from commitsched.calibrate_replica import io_cpu_us
    os.sched_setaffinity(0, {cpu})
    out = {"idle": [], "busy": []}
    for r in range(rounds):
        for state in ("idle", "busy") if r % 2 == 0 else ("busy", "idle"):
            spin = spinner(cpu) if state == "busy" else None
            try:
                time.sleep(0.2)                 # the spinner is running before the probe
                probe = io_cpu_us(directory, n=n)
            finally:
                if spin is not None:
                    spin.kill()
                    spin.wait()
            if probe is None:
                raise SystemExit(f"io_cpu_busy: {directory} refuses O_DIRECT: no probe there")
            out[state].append(probe)
            print(f"round {r + 1} {state}: " + ", ".join(
                f"{k} {v['cpu_us']:.1f} µs" for k, v in probe.items()), file=sys.stderr)
    return out


def summary(rounds: dict) -> dict:
    ops = rounds["idle"][0].keys()
    return {state: {op: {"cpu_us": round(statistics.median(p[op]["cpu_us"] for p in probes), 2),
                         "switches": round(statistics.median(p[op]["switches"] for p in probes), 2)}
                    for op in ops}
            for state, probes in rounds.items()}


def table(med: dict, rounds: int) -> str:
    lines = [f"| probe (calibrate's, {rounds} rounds each, medians) | CPU µs, idle core | CPU µs, "
             "busy core | busy / idle | voluntary switches |", "|---|---|---|---|---|"]
    for op, idle in med["idle"].items():
        busy = med["busy"][op]
        lines.append(f"| {op} | {idle['cpu_us']:.1f} | {busy['cpu_us']:.1f} | "
                     f"{busy['cpu_us'] / idle['cpu_us']:.2f} | {idle['switches']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="a directory on the disk to probe")
    ap.add_argument("--cpu", type=int, default=1, help="the CPU to pin to (default 1)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--n", type=int, default=100, help="each op this many times a probe round")
    ap.add_argument("--out", help="write every round and the medians here (JSON)")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.dir):
        print(f"io_cpu_busy: {a.dir}: not a directory", file=sys.stderr)
        return 2
    if a.cpu not in os.sched_getaffinity(0):
        print(f"io_cpu_busy: CPU {a.cpu} is not one this process may run on "
              f"({sorted(os.sched_getaffinity(0))})", file=sys.stderr)
        return 2
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rounds = measure(a.dir, a.cpu, a.rounds, a.n)
    med = summary(rounds)
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"started_utc": started, "dir": a.dir, "cpu": a.cpu, "n": a.n,
                       "medians": med, "rounds": rounds}, f, indent=1)
        os.replace(tmp, a.out)
    sys.stdout.write(table(med, a.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
