"""device16_w3's rig, run on the lent machine by new_workloads16.sh: record two new workloads on
a durable primary (replica16's primary settings), then time a replica applying them with
relay_replay.py, and pack everything for $OUT.

Runs with the machine's python3 and the bundle only (new_workloads16_bundle.sh: mariadbd,
sysbench, their libraries, a datadir, the pymysql wheel); imports nothing of commitsched.

    python3 new_workloads16_rig.py --bundle DIR --work DIR --out DIR [--events N] [--rounds R]
"""
from __future__ import annotations

import argparse
import json
import lzma
import mmap
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# name, sysbench script, clients: re-appliable (every transaction leaves the rows it touched
# present: write_only deletes and re-inserts the same id; update_non_index updates in place)
WORKLOADS = [("write_only_32", "oltp_write_only", 32), ("update_non_index_8",
                                                        "oltp_update_non_index", 8)]
PRIMARY_SETTINGS = ["--binlog-format=ROW", "--binlog-row-image=FULL", "--sync-binlog=1",
                    "--innodb-flush-log-at-trx-commit=1", "--gtid-strict-mode=ON",
                    "--gtid-domain-id=0", "--server-id=1", "--binlog-commit-wait-count=0",
                    "--innodb-buffer-pool-size=1G", "--innodb-log-file-size=96M",
                    "--max-connections=500", "--max-binlog-size=1G"]
COUNTERS = ("Binlog_commits", "Binlog_group_commits", "Binlog_group_commit_trigger_count",
            "Binlog_group_commit_trigger_lock_wait", "Binlog_group_commit_trigger_timeout",
            "Com_commit", "Com_rollback")
SETTINGS_SHOWN = ("binlog_checksum", "binlog_commit_wait_count", "binlog_commit_wait_usec",
                  "binlog_format", "binlog_row_image", "gtid_domain_id", "gtid_strict_mode",
                  "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit",
                  "innodb_log_file_size", "log_bin", "max_binlog_size", "max_connections",
                  "server_id", "sync_binlog", "tx_isolation")
T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())} +{time.time() - T0:5.0f}s] {msg}",
          flush=True)


def fail(msg: str) -> None:
    log(f"FAILED: {msg}")
    raise SystemExit(f"new_workloads16: {msg}")


def env_with_libs(b: Path) -> dict:
    env = dict(os.environ, LD_LIBRARY_PATH=str(b / "lib"))
    env["LUA_PATH"] = f"{b / 'sysbench'}/?.lua;;"
    return env


def install_pymysql(b: Path, target: Path) -> None:
    """The wheel is a zip of pure Python: unpacked into a private folder (no pip needed)."""
    import zipfile
    wheels = sorted((b / "wheels").glob("*.whl"))
    if not wheels:
        fail(f"{b}/wheels: no pymysql wheel")
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(target)
    sys.path.insert(0, str(target))


def preflight(b: Path) -> None:
    env = env_with_libs(b)
    for cmd in ([str(b / "bin/mariadbd"), "--version"], [str(b / "bin/sysbench"), "--version"]):
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"{cmd[0]} does not run: {(p.stderr or p.stdout).strip()[:300]}")
        log(f"preflight: {p.stdout.strip()}")
    try:
        import pymysql
    except ImportError as e:
        fail(f"pymysql does not import: {e}")
    log(f"preflight: pymysql {getattr(pymysql, 'VERSION_STRING', '?')} from "
        f"{Path(pymysql.__file__).parent}, python {sys.version.split()[0]}")


def machine_txt(work: Path, out: Path) -> None:
    """lscpu, memory, file system, an fdatasync probe and an O_DIRECT 4 KiB write probe."""
    import relay_replay as rr
    lines = []
    for cmd in (["lscpu"], ["free", "-g"], ["df", "-hT", str(work)], ["uname", "-a"], ["nproc"]):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            lines += [f"$ {' '.join(cmd)}", p.stdout.rstrip()]
        except (OSError, subprocess.TimeoutExpired) as e:
            lines += [f"$ {' '.join(cmd)}", f"(failed: {e})"]
    lines.append(f"fdatasync 512 B append median ms {rr.fsync_probe_ms(work, 100):.3f}")
    lines += direct_probe(work)
    (out / "machine.txt").write_text("\n".join(lines) + "\n")


def direct_probe(work: Path, n: int = 200) -> list[str]:
    path = work / "direct_probe"
    buf = mmap.mmap(-1, 4096)           # page-aligned, as O_DIRECT wants
    buf.write(b"y" * 4096)
    out = []
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
    except OSError as e:
        return [f"direct probe failed: {e}"]
    try:
        for sync in (False, True):
            wall, cpu = [], []
            for i in range(n):
                c0, t0 = time.process_time(), time.perf_counter()
                os.pwrite(fd, buf, 4096 * (i % 64))
                if sync:
                    os.fdatasync(fd)
                wall.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            tag = "direct+fdatasync" if sync else "direct"
            out.append(f"{tag} wall us/op {1e6 * sorted(wall)[n // 2]:.1f}")
            out.append(f"{tag} cpu us/op {1e6 * sum(cpu) / n:.1f}")
    finally:
        os.close(fd)
        path.unlink()
    return out


class Primary:
    def __init__(self, b: Path, work: Path, port: int):
        self.b, self.work, self.port = b, work / "primary", port
        self.data, self.sock = self.work / "data", str(work / "primary" / "primary.sock")
        self.proc = None

    def start(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        with tarfile.open(self.b / "datadir.tar.xz") as tar:
            tar.extractall(self.work)
        cmd = [str(self.b / "bin/mariadbd"), "--no-defaults", f"--datadir={self.data}",
               f"--socket={self.sock}", f"--port={self.port}", "--bind-address=127.0.0.1",
               "--user=root", f"--lc-messages-dir={self.b / 'share'}",
               f"--character-sets-dir={self.b / 'share/charsets'}",
               f"--log-bin={self.data}/primary-bin", f"--log-error={self.work}/error.log",
               f"--pid-file={self.work}/pid"] + PRIMARY_SETTINGS
        self.proc = subprocess.Popen(cmd, env=env_with_libs(self.b), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        import pymysql
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                fail(f"primary mariadbd exited with {self.proc.returncode}: "
                     + self.error_tail())
            try:
                self.connect().close()
                return
            except pymysql.err.OperationalError:
                time.sleep(0.2)
        fail("primary mariadbd did not answer within 60 s")

    def error_tail(self) -> str:
        try:
            return " | ".join((self.work / "error.log").read_text().splitlines()[-5:])
        except OSError:
            return "(no error log)"

    def connect(self):
        import pymysql
        return pymysql.connect(unix_socket=self.sock, user="root", autocommit=True)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                with self.connect() as c:
                    c.cursor().execute("SHUTDOWN")
            except Exception:  # noqa: BLE001 -- any failure: terminate it instead
                self.proc.terminate()
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def q1(c, sql: str):
    cur = c.cursor()
    cur.execute(sql)
    return cur.fetchone()


def status(c) -> dict:
    cur = c.cursor()
    cur.execute("SHOW GLOBAL STATUS")
    return {k: v for k, v in cur.fetchall()}


def sysbench(p: Primary, script: str, args: list[str], out_path: Path | None = None) -> str:
    cmd = [str(p.b / "bin/sysbench"), str(p.b / "sysbench" / f"{script}.lua"),
           "--db-driver=mysql", f"--mysql-socket={p.sock}", "--mysql-user=root",
           "--mysql-db=sbtest", "--tables=8", "--table-size=20000"] + args
    r = subprocess.run(cmd, env=env_with_libs(p.b), capture_output=True, text=True,
                       cwd=p.b / "sysbench")
    if out_path:
        out_path.write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        fail(f"sysbench {script} {args[-1]} exited {r.returncode}: "
             + (r.stderr or r.stdout).strip()[-400:])
    return r.stdout


def sysbench_figure(text: str, label: str) -> float | None:
    for line in text.splitlines():
        if line.strip().startswith(label):
            rest = line.split(":", 1)[1].split()
            try:
                return float(rest[0].rstrip("s"))
            except (IndexError, ValueError):
                return None
    return None


def record(p: Primary, rec_dir: Path, events: int, only: list[str]) -> list[str]:
    with p.connect() as c:
        c.cursor().execute("CREATE DATABASE IF NOT EXISTS sbtest")
        version = q1(c, "SELECT @@version")[0]
    log("sysbench prepare: 8 tables x 20000 rows")
    sysbench(p, "oltp_read_write", ["--threads=8", "prepare"])
    names = []
    for name, script, clients in WORKLOADS:
        if only and name not in only:
            continue
        d = rec_dir / name
        d.mkdir(parents=True, exist_ok=True)
        with p.connect() as c:
            c.cursor().execute("FLUSH BINARY LOGS")
            binlog = q1(c, "SHOW MASTER STATUS")[0]
            start = q1(c, "SELECT @@gtid_binlog_pos")[0]
            s0 = status(c)
        args = [f"--threads={clients}", f"--events={events}", "--time=0", "--rand-seed=42",
                "--report-interval=0", "run"]
        log(f"{name}: sysbench {script} {' '.join(args)} (binlog {binlog}, from {start})")
        t0 = time.time()
        text = sysbench(p, script, args, d / "sysbench_output.txt")
        wall = time.time() - t0
        with p.connect() as c:
            end = q1(c, "SELECT @@gtid_binlog_pos")[0]
            s1 = status(c)
            cur = c.cursor()
            cur.execute("SHOW GLOBAL VARIABLES")
            settings = {k: v for k, v in cur.fetchall() if k in SETTINGS_SHOWN}
            c.cursor().execute("FLUSH BINARY LOGS")
        n = int(end.split("-")[-1]) - int(start.split("-")[-1])
        delta = {k: int(s1.get(k, 0)) - int(s0.get(k, 0)) for k in COUNTERS}
        src = p.data / binlog
        with open(src, "rb") as f, lzma.open(d / f"{binlog}.xz", "wb", preset=1) as z:
            shutil.copyfileobj(f, z)
        meta = {"name": name, "server_version": version + "-log",
                "sysbench_version": "sysbench 1.0.20",
                "machine": "the lent 16-core machine itself (machine.txt); primary and sysbench "
                           "on the same host",
                "primary_settings_after": settings, "sysbench_test": script,
                "database": "sbtest", "tables": 8, "table_size": 20000, "threads": clients,
                "events": events,
                "sysbench_command": f"sysbench {script} --db-driver=mysql --mysql-socket="
                                    "<scratch>/primary.sock --mysql-user=root --mysql-db=sbtest "
                                    f"--tables=8 --table-size=20000 {' '.join(args)}",
                "binlog_files": [binlog], "binlog_bytes": src.stat().st_size,
                "start_gtid_pos": start, "end_gtid_pos": end,
                "transaction_count_gtid_events": n,
                "sysbench_transactions": int(sysbench_figure(text, "transactions") or 0),
                "sysbench_total_time_s": sysbench_figure(text, "total time"),
                "sysbench_ignored_errors": int(sysbench_figure(text, "ignored errors") or 0),
                "wall_time_s": round(wall, 3), "status_delta": delta,
                "recorded_at_unix": time.time()}
        (d / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        # an update that changes nothing writes no transaction: a few fewer GTIDs than events
        if delta["Binlog_commits"] != n or not 0.98 * events <= n <= events:
            fail(f"{name}: {n} GTIDs, {delta['Binlog_commits']} binlog commits, {events} events")
        log(f"{name}: {n} transactions in {wall:.1f} s, binlog "
            f"{src.stat().st_size / 2**20:.1f} MiB, {delta['Binlog_group_commits']} group commits")
        names.append(name)
    shutil.copy(p.b / "sbtest_schema.sql", rec_dir / "sbtest_schema.sql")
    return names


# device16's file per setting (device16.FILES; this rig imports nothing of commitsched)
TIMINGS = {"durable": "timings.csv", "relaxed": "timings_relaxed.csv",
           "relaxed_runtime": "timings_relaxed_runtime.csv"}


def split_timings(all_csv: Path, res: Path, durabilities=("durable", "relaxed")) -> None:
    """relay_replay's one CSV -> device16's one per setting (timings.csv durable,
    timings_relaxed.csv, timings_relaxed_runtime.csv), for each setting asked for."""
    import csv
    with open(all_csv, newline="") as f:
        reader = csv.DictReader(f)
        rows, fields = list(reader), reader.fieldnames or ["workload"]
    for durability in durabilities:
        name = TIMINGS[durability]
        with open(res / name, "w", newline="") as f:
            w = csv.DictWriter(f, fields)
            w.writeheader()
            w.writerows(r for r in rows if r["durability"] == durability)


def pack(work: Path, res: Path, rec_dir: Path, out: Path) -> None:
    """At most 8 files under $OUT, each <= 16 MiB: results.tar.gz (CSVs, logs, machine.txt,
    every recording's meta.json and sysbench output) and one NAME.binlog.tar per recording."""
    for f in (work / "primary" / "error.log", *sorted((work / "replica").glob("error-*.log"))):
        if f.exists():
            shutil.copy(f, res / f"mariadbd_{f.parent.name}_{f.name}")
    for d in sorted(p for p in rec_dir.iterdir() if p.is_dir()):
        (res / "recordings" / d.name).mkdir(parents=True, exist_ok=True)
        for f in ("meta.json", "sysbench_output.txt"):
            if (d / f).exists():
                shutil.copy(d / f, res / "recordings" / d.name / f)
    with tarfile.open(out / "results.tar.gz", "w:gz") as t:
        t.add(res, arcname="results")
    for d in sorted(p for p in rec_dir.iterdir() if p.is_dir()):
        with tarfile.open(out / f"{d.name}.binlog.tar", "w") as t:
            for f in sorted(d.glob("*.xz")):
                t.add(f, arcname=f"{d.name}/{f.name}")
    for f in sorted(out.iterdir()):
        size = f.stat().st_size
        log(f"$OUT/{f.name}: {size / 2**20:.2f} MiB" + ("  TOO BIG (> 16 MiB)"
                                                        if size > 16 * 2**20 else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True, help="the unpacked bundle (w3/)")
    ap.add_argument("--work", required=True, help="scratch folder on the disk to measure")
    ap.add_argument("--out", required=True)
    ap.add_argument("--events", type=int, default=16000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--configs", default="", help="relay_replay's --configs (default: its 9)")
    ap.add_argument("--workloads", default="", help="a subset of the names (default: both)")
    ap.add_argument("--total-s", type=float, default=480,
                    help="everything ends within this many seconds of the start")
    ap.add_argument("--port", type=int, default=3390, help="the primary's; the replica's +1")
    ap.add_argument("--durabilities", default="durable,relaxed",
                    help="relay_replay's, alternating in each round (relaxed_runtime: started "
                         "durable, SET GLOBAL 0/2)")
    ap.add_argument("--block-margin-s", type=float, default=95,
                    help="no new durability block in the last this many seconds of --total-s")
    ap.add_argument("--run-margin-s", type=float, default=25,
                    help="no new run in the last this many seconds of --total-s")
    a = ap.parse_args(argv)
    bad = [d for d in a.durabilities.split(",") if d not in TIMINGS]
    if bad or not a.durabilities:
        ap.error(f"--durabilities: {','.join(bad) or 'none'}: known {', '.join(TIMINGS)}")
    if not 0 < a.run_margin_s <= a.block_margin_s < a.total_s:
        ap.error("--run-margin-s <= --block-margin-s < --total-s, all positive")
    b, work, out = Path(a.bundle), Path(a.work), Path(a.out)
    res = work / "results"
    rec_dir = work / "recordings"
    for d in (res, rec_dir, out):
        d.mkdir(parents=True, exist_ok=True)
    install_pymysql(b, work / "pylib")
    preflight(b)
    sys.path.insert(0, str(HERE))
    rc = 1
    try:
        rc = measure(a, b, work, res, rec_dir)
    finally:    # whatever was measured comes back, also after a failure
        pack(work, res, rec_dir, out)
        log("done" if rc == 0 else f"ended with status {rc}")
    return rc


def measure(a, b: Path, work: Path, res: Path, rec_dir: Path) -> int:
    machine_txt(work, res)
    log("machine.txt written")
    primary = Primary(b, work, a.port)
    try:
        primary.start()
        log("primary started")
        names = record(primary, rec_dir, a.events, [x for x in a.workloads.split(",") if x])
    finally:
        primary.stop()
        log("primary stopped")
    left = T0 + a.total_s - time.time()
    # no new durability block in its last --block-margin-s (a block: a server start, two
    # warm-up applies, 18 runs; ~20 s durable on the first lent machine, so 95 s by default),
    # no new run in its last --run-margin-s (a run, the server's stop, the packing)
    cmd = [sys.executable, str(HERE / "relay_replay.py"), f"--mariadbd={b / 'bin/mariadbd'}",
           f"--share={b / 'share'}", f"--datadir-tar={b / 'datadir.tar.xz'}",
           f"--recordings={rec_dir}", f"--workloads={','.join(names)}",
           f"--work={work / 'replica'}", f"--out={res / 'timings_all.csv'}",
           f"--rounds={a.rounds}", f"--durabilities={a.durabilities}",
           f"--budget-s={max(left - a.block_margin_s, 1):.0f}",
           f"--hard-budget-s={max(left - a.run_margin_s, 1):.0f}",
           f"--libs={b / 'lib'}", "--run-timeout-s=60", f"--port={a.port + 1}"]
    if a.configs:
        cmd.append(f"--configs={a.configs}")
    log(f"relay_replay: {left:.0f} s left; " + " ".join(cmd[2:]))
    env = dict(os.environ, PYTHONPATH=str(work / "pylib"))
    try:    # a hung run: killed before the lease's timeout, so the packing still happens
        rc = subprocess.run(cmd, env=env, timeout=max(left - 5, 1)).returncode
    except subprocess.TimeoutExpired:
        rc = 124
    log(f"relay_replay exited {rc}")
    if (res / "timings_all.csv").exists():
        split_timings(res / "timings_all.csv", res, tuple(a.durabilities.split(",")))
    return rc


if __name__ == "__main__":
    sys.exit(main())
