#!/usr/bin/env python3
"""The host loop (model/host_speed.py) on a quiet lent machine: how much do its readings move with
nothing else running, and with every other core busy? Run on a lent 16-core machine with the
device16 bundle's MariaDB (carry: [".dev16/w3.tar.xz"]; `make device16-w3-bundle` builds it;
a checkout without the stored campaigns' runs, which the lent machine cannot take: docs/lag.md,
"The host's pace"):

    OUT=... python3 traces/record/host_loop_quiet.py [--idle N] [--busy N]

Starts the bundle's mariadbd on CPU 1 (its own datadir under .dev16/quiet, port 4291, always
stopped), reads `host_loop` N times a second apart with the machine idle, then N times with a
spinning process on every CPU but 0 and 1 (neighbours on the same host: shared caches, memory,
power), then N idle again. Writes $OUT/host_loop_quiet.json (every reading, with its time and
phase, and a summary) and prints the summary. Needs only the machine's python3 and the bundle.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
import types
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PORT = 4291


def load_host_speed():
    """model/host_speed.py as commitsched.host_speed without installing the package (the lent
    machine has no pip): a package object over model/."""
    pkg = types.ModuleType("commitsched")
    pkg.__path__ = [str(REPO / "model")]
    sys.modules["commitsched"] = pkg
    from commitsched import host_speed
    return host_speed


def spin(cpu: int, stop) -> None:
    os.sched_setaffinity(0, {cpu})
    x = 0
    while not stop.is_set():
        for i in range(100000):
            x = (x * 1103515245 + i) & 0xFFFFFFFF


def spread(values: list) -> dict:
    v = sorted(values)
    return {"n": len(v), "min": v[0], "p10": v[len(v) // 10], "median": statistics.median(v),
            "p90": v[(9 * len(v)) // 10], "max": v[-1]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--idle", type=int, default=30, help="readings in each idle phase")
    p.add_argument("--busy", type=int, default=30, help="readings with the other cores busy")
    a = p.parse_args(argv)
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    bundle = REPO / ".dev16" / "w3.tar.xz"
    if not bundle.is_file():
        raise SystemExit(f"host_loop_quiet: {bundle} missing (make device16-w3-bundle)")
    work = REPO / ".dev16" / "quiet"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with tarfile.open(bundle) as t:
        t.extractall(work)
    b = work / "w3"
    with zipfile.ZipFile(next((b / "wheels").glob("pymysql-*.whl"))) as z:
        z.extractall(work / "py")
    sys.path.insert(0, str(work / "py"))
    import pymysql
    hs = load_host_speed()
    with tarfile.open(b / "datadir.tar.xz") as t:
        t.extractall(work)
    sock = str(work / "quiet.sock")
    env = dict(os.environ, LD_LIBRARY_PATH=str(b / "lib"))
    cmd = ["taskset", "-c", "1", str(b / "bin/mariadbd"), "--no-defaults",
           f"--datadir={work / 'data'}", f"--socket={sock}", f"--port={PORT}",
           "--bind-address=127.0.0.1", "--user=root", f"--lc-messages-dir={b / 'share'}",
           f"--character-sets-dir={b / 'share/charsets'}", "--skip-log-bin",
           f"--log-error={work / 'error.log'}"]
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    readings, spinners, stop = [], [], mp.Event()
    try:
        deadline = time.time() + 60
        while True:
            try:
                conn = pymysql.connect(unix_socket=sock, user="root", autocommit=True)
                break
            except pymysql.err.OperationalError:
                if server.poll() is not None or time.time() > deadline:
                    raise SystemExit("host_loop_quiet: mariadbd did not start: "
                                     + (work / "error.log").read_text()[-500:])
                time.sleep(0.2)
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM mysql.help_topic")
            topics = cur.fetchone()[0]
        os.sched_setaffinity(0, {0})
        for phase, n in (("idle", a.idle), ("busy", a.busy), ("idle again", a.idle)):
            if phase == "busy":
                spinners = [mp.Process(target=spin, args=(c, stop), daemon=True)
                            for c in range(2, os.cpu_count() or 2)]
                for s in spinners:
                    s.start()
                time.sleep(1.0)
            elif spinners:
                stop.set()
                for s in spinners:
                    s.join()
                spinners = []
            for _ in range(n):
                t0 = time.time()
                readings.append({"phase": phase, "t": round(t0, 3), **hs.host_loop(conn)})
                time.sleep(max(0.0, 1.0 - (time.time() - t0)))
        conn.close()
    finally:
        stop.set()
        server.terminate()
        server.wait(60)
    summary = {"cpus": os.cpu_count(), "help_topics": topics,
               "machine": subprocess.run(["uname", "-srm"], capture_output=True,
                                         text=True).stdout.strip(),
               **{f"{phase} {kind}": spread([r[kind]["us"] for r in readings
                                             if r["phase"] == phase])
                  for phase in ("idle", "busy", "idle again") for kind in ("rows", "compute")}}
    (out / "host_loop_quiet.json").write_text(json.dumps({"summary": summary,
                                                           "readings": readings}, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
