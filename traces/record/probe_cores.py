#!/usr/bin/env python3
"""Does a disk probe read the disk, or the core it runs on? calibrate's O_DIRECT write probe
(calibrate_replica.direct_write_ms, 5 rounds) run on CPU 0 and on CPU 1 while a burner keeps
CPU 0 busy 0%, 50% and 90% of each millisecond (docs/calibration.md, "Where the probes run").

    python traces/record/probe_cores.py [DIR]

DIR: where the probe writes (default /tmp, the lag-check rig's disk). Needs two CPUs. The
lag-check rig runs its primary and `calibrate` on CPU 0 and the replica on CPU 1: a probe
thread woken by its write waits for the busy core before it can stop its clock, which the
replica's applier, alone on its core, does not. Markdown on stdout.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time

ROUNDS = 5
DUTIES = (0.0, 0.5, 0.9)


def burn(duty: float, stop) -> None:
    """Keep CPU 0 busy `duty` of each millisecond until `stop`."""
    os.sched_setaffinity(0, {0})
    while not stop.is_set():
        t = time.perf_counter()
        while time.perf_counter() - t < duty * 1e-3:
            pass
        time.sleep((1 - duty) * 1e-3)


def rounds_on(cpu: int, directory: str) -> list[float]:
    from commitsched.calibrate_replica import direct_write_ms
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        out = []
        for _ in range(ROUNDS):
            ms = direct_write_ms(directory)
            if ms is None:
                raise SystemExit(f"probe_cores.py: {directory}: the file system refuses "
                                 f"O_DIRECT writes")
            out.append(round(ms * 1e3, 1))
        return out
    finally:
        os.sched_setaffinity(0, mine)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="probe_cores.py", description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog=" ".join(__doc__.split("\n\n")[2].split()))
    ap.add_argument("directory", nargs="?", default="/tmp", metavar="DIR")
    a = ap.parse_args(argv)
    if not {0, 1} <= os.sched_getaffinity(0):
        raise SystemExit("probe_cores.py: needs CPUs 0 and 1")
    if not os.path.isdir(a.directory):
        raise SystemExit(f"probe_cores.py: {a.directory}: not a directory")
    print(f"O_DIRECT 4 KiB write, µs (calibrate's probe, {ROUNDS} rounds of 50 each; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, {a.directory})\n")
    print("| CPU 0 busy | probe on CPU 0: rounds | median | probe on CPU 1: rounds | median |")
    print("|---|---|---|---|---|")
    for duty in DUTIES:
        stop = mp.Event()
        burner = None
        if duty:
            burner = mp.Process(target=burn, args=(duty, stop))
            burner.start()
            time.sleep(0.2)
        try:
            on0, on1 = rounds_on(0, a.directory), rounds_on(1, a.directory)
        finally:
            stop.set()
            if burner:
                burner.join()
        print(f"| {duty:.0%} | {', '.join(map(str, on0))} | {statistics.median(on0):.1f} | "
              f"{', '.join(map(str, on1))} | {statistics.median(on1):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
