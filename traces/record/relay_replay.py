"""Time a MariaDB replica applying recorded binlogs, with no primary: the binlog files become
the replica's relay log and only its SQL thread runs.

replica16's procedure (shared/replica16/README.md) fetched each recording through a primary's
IO thread, then timed `START SLAVE SQL_THREAD` to `MASTER_GTID_WAIT(end)`. Here the recorded
files are the relay log from the start (`relay.000001`, ... listed in `relay.index`), so a
machine needs only the server binary: each run stops the SQL thread, sets the parallel mode and
threads, puts `gtid_slave_pos` back before the recording, points the SQL thread at the
recording's first byte (`CHANGE MASTER TO RELAY_LOG_FILE=..., RELAY_LOG_POS=4`, which keeps the
relay logs), and times the apply. A recording leaves every row it touched present (sysbench's
oltp workloads delete and re-insert the same id in one transaction), so the same binlog applies
again on what the last run left.

Durability is a start-up setting here (a server per durability): MariaDB >= 10.8 keeps its redo
log unbuffered (O_DIRECT) unless it *started* with innodb_flush_log_at_trx_commit=2 (MDEV-28766),
and replica16's relaxed replica started relaxed.

Output: one CSV row per run as replica16's timings.csv has them (seconds measured on the client
across START SLAVE .. MASTER_GTID_WAIT on a local socket), written as each run ends.

    python3 relay_replay.py --mariadbd PATH --share DIR --datadir-tar DATA.tar.xz \
        --recordings DIR --work DIR --out CSV [--durabilities durable,relaxed,relaxed_runtime]

(`--share`: the folder holding errmsg.sys, with charsets/ in it; `--datadir-tar`: a folder data/
made by mariadb-install-db, packed: a bare machine cannot run that script.)
"""
from __future__ import annotations

import argparse
import csv
import json
import lzma
import os
import random
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pymysql

CONFIGS = [("serial", 0)] + [(m, w) for m in ("conservative", "optimistic") for w in (2, 4, 8, 16)]
FIELDS = ["workload", "durability", "mode", "threads", "round", "seconds", "tps", "retried_txns",
          "fsync_ms", "cpu_busy_cores", "cpu_iowait_pct", "cpu_steal_pct", "server_cpu_s", "utc"]
SETTINGS = {"durable": {"sync_binlog": 1, "innodb_flush_log_at_trx_commit": 1},
            "relaxed": {"sync_binlog": 0, "innodb_flush_log_at_trx_commit": 2}}
# `relaxed_runtime`: started durable, switched to relaxed with SET GLOBAL, as a DBA relaxes a
# running replica: its redo log stays unbuffered (O_DIRECT writes at each commit, MDEV-28766)
RUNTIME = {"relaxed_runtime": ("durable", "relaxed")}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def cpu_times() -> list[int]:
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:9]]


def cpu_shares(before: list[int], after: list[int], seconds: float) -> tuple[float, float, float]:
    """Busy cores (non-idle, non-iowait), iowait % and steal % over the interval."""
    d = [b - a for a, b in zip(before, after)]
    total = sum(d) or 1
    idle, iowait, steal = d[3], d[4], d[7]
    cores = os.cpu_count() or 1
    return cores * (total - idle - iowait) / total, 100 * iowait / total, 100 * steal / total


def fsync_probe_ms(directory: Path, n: int = 30) -> float:
    """Median of n fdatasyncs of a 512-byte append (replica16's `fsync_ms`). The same probe as
    commitsched.calibrate_replica.fsync_ms, written again because this rig runs on a bare
    machine with no commitsched installed (its only dependency is PyMySQL)."""
    path = directory / "fsync_probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    times = []
    try:
        for _ in range(n):
            os.write(fd, b"x" * 512)
            t = time.perf_counter()
            os.fdatasync(fd)
            times.append(time.perf_counter() - t)
    finally:
        os.close(fd)
        path.unlink()
    return 1e3 * sorted(times)[n // 2]


class Server:
    def __init__(self, args, durability: str):
        self.args, self.durability = args, durability
        self.work = Path(args.work)
        self.data = self.work / "data"
        self.sock = str(self.work / "replica.sock")
        self.proc = None

    def start(self) -> None:
        at_start, _ = RUNTIME.get(self.durability, (self.durability, None))
        s = SETTINGS[at_start]
        cmd = [self.args.mariadbd, "--no-defaults", f"--datadir={self.data}",
               f"--socket={self.sock}", f"--port={self.args.port}", "--bind-address=127.0.0.1",
               "--user=root", f"--lc-messages-dir={self.args.share}",
               f"--character-sets-dir={self.args.share}/charsets", "--server-id=2",
               f"--log-bin={self.data}/binlog", "--log-slave-updates=OFF",
               f"--relay-log={self.data}/relay", "--relay-log-purge=OFF", "--skip-slave-start",
               "--binlog-format=ROW", "--innodb-buffer-pool-size=1G",
               "--innodb-log-file-size=96M", "--max-connections=200",
               f"--sync-binlog={s['sync_binlog']}",
               f"--innodb-flush-log-at-trx-commit={s['innodb_flush_log_at_trx_commit']}",
               f"--log-error={self.work}/error-{self.durability}.log", f"--pid-file={self.work}/pid"]
        env = dict(os.environ)
        if self.args.libs:  # the server's own shared libraries, carried to a bare machine
            env["LD_LIBRARY_PATH"] = self.args.libs
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"mariadbd exited with {self.proc.returncode}; see "
                                 f"{self.work}/error-{self.durability}.log")
            try:
                c = self.connect()
            except pymysql.err.OperationalError:
                time.sleep(0.2)
                continue
            with c:
                _, later = RUNTIME.get(self.durability, (None, None))
                for name, value in SETTINGS.get(later, {}).items():
                    c.cursor().execute(f"SET GLOBAL {name}={value}")
            return
        raise SystemExit("mariadbd did not answer within 60 s")

    def cpu_seconds(self) -> float:
        """The server process's user + system CPU so far (all its threads)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def connect(self):
        return pymysql.connect(unix_socket=self.sock, user="root", autocommit=True)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                with self.connect() as c:
                    c.cursor().execute("SHUTDOWN")
            except pymysql.err.Error:
                self.proc.terminate()
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def bootstrap(args) -> None:
    """A fresh datadir from `--datadir-tar` (made by mariadb-install-db where it is installed:
    a machine with only the server binary cannot run that script)."""
    work = Path(args.work)
    data = work / "data"
    if data.exists():
        shutil.rmtree(data)
    log(f"unpacking {args.datadir_tar} into {work}")
    with tarfile.open(args.datadir_tar) as tar:  # python's own xz: a bare machine may lack it
        tar.extractall(work)
    if not (data / "mysql").is_dir():
        raise SystemExit(f"{args.datadir_tar}: no data/mysql in it")


def place_relay_logs(args, recordings: list[dict]) -> None:
    data = Path(args.work) / "data"
    names = []
    for i, rec in enumerate(recordings, 1):
        name = f"relay.{i:06d}"
        src = Path(rec["binlog"])
        with (lzma.open(src) if src.suffix == ".xz" else open(src, "rb")) as f, \
                open(data / name, "wb") as out:
            shutil.copyfileobj(f, out)
        rec["relay_file"] = name
        rec["relay_size"] = (data / name).stat().st_size
        names.append(str(data / name))
    (data / "relay.index").write_text("".join(n + "\n" for n in names))


def fill_tables(c, schema_sql: str, tables: int, rows: int) -> None:
    cur = c.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS sbtest")
    for stmt in schema_sql.split(";"):
        if "`sbtest`." in stmt:
            cur.execute(stmt)
    cur.execute("SET SESSION sql_log_bin=0")
    cur.execute(f"SET SESSION max_recursive_iterations={rows + 1}")
    for t in range(1, tables + 1):
        # sysbench's shapes: c is 11 groups of 11 digits, pad 5 groups; ids 1..rows
        cur.execute(
            f"INSERT INTO sbtest.sbtest{t} (id, k, c, pad) "
            f"WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {rows}) "
            "SELECT n, FLOOR(1 + RAND(n) * %s), "
            "LEFT(REPEAT(CONCAT(LPAD(FLOOR(RAND() * 1e11), 11, '0'), '-'), 11), 119), "
            "LEFT(REPEAT(CONCAT(LPAD(FLOOR(RAND() * 1e11), 11, '0'), '-'), 5), 59) FROM s",
            (rows,))


def status(cur, name: str) -> int:
    cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
    row = cur.fetchone()
    return int(row[1]) if row else 0


def apply_once(c, server, rec: dict, mode: str, threads: int, timeout_s: int) -> dict:
    cur = c.cursor()
    cur.execute("STOP SLAVE SQL_THREAD")
    cur.execute(f"SET GLOBAL slave_parallel_threads={threads}")
    if threads:
        cur.execute(f"SET GLOBAL slave_parallel_mode='{mode}'")
    cur.execute("SET GLOBAL gtid_slave_pos=%s", (rec["start_gtid_pos"],))
    cur.execute(f"CHANGE MASTER TO RELAY_LOG_FILE='{rec['relay_file']}', RELAY_LOG_POS=4")
    retried = status(cur, "Slave_retried_transactions")
    before, cpu0 = cpu_times(), server.cpu_seconds()
    t0 = time.perf_counter()
    # UNTIL the file's end: the next recording follows it in the relay log
    cur.execute(f"START SLAVE SQL_THREAD UNTIL RELAY_LOG_FILE='{rec['relay_file']}', "
                f"RELAY_LOG_POS={rec['relay_size']}")
    cur.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (rec["end_gtid_pos"], timeout_s))
    waited = cur.fetchone()[0]
    seconds = time.perf_counter() - t0
    after, cpu1 = cpu_times(), server.cpu_seconds()
    cur.execute("STOP SLAVE SQL_THREAD")
    cur.execute("SHOW SLAVE STATUS")
    cols = [d[0] for d in cur.description]
    st = dict(zip(cols, cur.fetchone()))
    cur.execute("SELECT @@gtid_slave_pos")
    pos = cur.fetchone()[0]
    if waited != 0 or st["Last_SQL_Errno"] or rec["end_gtid_pos"] not in pos.split(","):
        raise RuntimeError(f"{rec['name']} {mode} {threads}: wait={waited} gtid_slave_pos={pos} "
                           f"error {st['Last_SQL_Errno']}: {st['Last_SQL_Error']}")
    busy, iowait, steal = cpu_shares(before, after, seconds)
    return {"seconds": round(seconds, 4), "tps": round(rec["transactions"] / seconds, 1),
            "retried_txns": status(cur, "Slave_retried_transactions") - retried,
            "cpu_busy_cores": round(busy, 2), "cpu_iowait_pct": round(iowait, 1),
            "cpu_steal_pct": round(steal, 1), "server_cpu_s": round(cpu1 - cpu0, 3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mariadbd", required=True)
    ap.add_argument("--share", required=True, help="errmsg.sys's folder (with charsets/ in it)")
    ap.add_argument("--datadir-tar", required=True,
                    help="tar.xz of a folder data/ made by mariadb-install-db")
    ap.add_argument("--recordings", required=True, help="shared/replica16/recordings")
    ap.add_argument("--workloads", default="oltp_rw_64,update_index_48")
    ap.add_argument("--work", required=True, help="scratch folder on the disk to measure")
    ap.add_argument("--out", required=True, help="CSV, written as runs end")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--durabilities", default="durable,relaxed")
    ap.add_argument("--configs", default="", help="mode:threads,... (default: replica16's 9)")
    ap.add_argument("--budget-s", type=float, default=300,
                    help="start no new round after this many seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--libs", default="", help="LD_LIBRARY_PATH for mariadbd only")
    ap.add_argument("--hard-budget-s", type=float, default=0,
                    help="start no new run after this many seconds (0: no limit)")
    ap.add_argument("--port", type=int, default=3391, help="the replica's TCP port (it is "
                    "reached on its socket; a shared machine needs a free one)")
    ap.add_argument("--run-timeout-s", type=int, default=600,
                    help="a run that takes longer fails the whole measurement")
    args = ap.parse_args(argv)

    recs = []
    for name in args.workloads.split(","):
        d = Path(args.recordings) / name
        meta = json.loads((d / "meta.json").read_text())
        binlog = next(iter(sorted(d.glob("primary-bin.*"))))
        recs.append({"name": name, "binlog": binlog, "start_gtid_pos": meta["start_gtid_pos"],
                     "end_gtid_pos": meta["end_gtid_pos"],
                     "transactions": meta["transaction_count_gtid_events"]})
    configs = CONFIGS if not args.configs else [
        (m, int(w)) for m, w in (x.split(":") for x in args.configs.split(","))]
    schema = (Path(args.recordings) / "sbtest_schema.sql").read_text()
    t_start = time.time()
    args.hard_deadline = t_start + args.hard_budget_s if args.hard_budget_s else float("inf")
    rng = random.Random(args.seed)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    bootstrap(args)
    prepare(args, recs, schema)
    durabilities = args.durabilities.split(",")
    with open(args.out, "w", newline="") as out:
        writer = csv.DictWriter(out, FIELDS)
        writer.writeheader()
        # rounds outermost, each durability its own server start within a round (alternating
        # which goes first), so a run cut short by --budget-s still has both settings
        for rnd in range(1, args.rounds + 1):
            order = durabilities if rnd % 2 else durabilities[::-1]
            for durability in order:
                if time.time() - t_start > args.budget_s:
                    log(f"budget of {args.budget_s:.0f} s reached before round {rnd} {durability}")
                    break
                run_block(args, recs, configs, durability, rnd, rng, writer, out)
            else:
                continue
            break
    log(f"done in {time.time() - t_start:.0f} s")
    return 0


def prepare(args, recs: list[dict], schema: str) -> None:
    """The sbtest tables filled, the recordings as relay logs, the SQL thread pointed at them."""
    server = Server(args, "relaxed")
    try:
        server.start()
        with server.connect() as c:
            fill_tables(c, schema, 8, 20000)
            # a master log name before the relay logs exist (this CHANGE MASTER purges relay
            # logs): the IO thread would have written one in a Rotate event, and a parallel SQL
            # thread without one crashes in compare_log_name (10.11.19, seen here)
            c.cursor().execute(
                "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=1, MASTER_USER='none', "
                "MASTER_USE_GTID=no, "
                f"MASTER_LOG_FILE='{recs[0]['binlog'].name.removesuffix('.xz')}', MASTER_LOG_POS=4")
    finally:
        server.stop()
    place_relay_logs(args, recs)


def run_block(args, recs, configs, durability, rnd, rng, writer, out) -> None:
    server = Server(args, durability)
    try:
        server.start()
        with server.connect() as c:
            cur = c.cursor()
            cur.execute("SELECT @@version, @@innodb_flush_log_at_trx_commit, @@sync_binlog, "
                        "@@innodb_log_file_buffering")
            log(f"round {rnd} {durability} server: {cur.fetchone()}")
            for rec in recs:  # warm the buffer pool, untimed
                apply_once(c, server, rec, "conservative", 4, 600)
            runs = [(rec, m, w) for rec in recs for m, w in configs]
            rng.shuffle(runs)
            for rec, mode, w in runs:
                if time.time() > args.hard_deadline:
                    log(f"hard budget reached: round {rnd} {durability} cut short")
                    break
                fs = fsync_probe_ms(server.data)
                r = apply_once(c, server, rec, mode, w, args.run_timeout_s)
                r.update(workload=rec["name"], durability=durability, mode=mode, threads=w,
                         round=rnd, fsync_ms=round(fs, 3),
                         utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                writer.writerow(r)
                out.flush()
            log(f"round {rnd} {durability} done")
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
