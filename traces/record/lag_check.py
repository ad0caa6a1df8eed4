#!/usr/bin/env python3
"""The real check of `commitsched lag` (docs/lag-check.md): a live MariaDB primary and replica
on this machine, the source driven by sysbench at fixed rates, the replica's lag measured over time.

    python traces/record/lag_check.py measure --out traces/calibration/lag_check [--runs NAME,...]
    python traces/record/lag_check.py report  --out traces/calibration/lag_check

`measure`: a private primary and replica on 127.0.0.1 (own datadirs, sockets, ports; stopped on
every path). The primary and sysbench are pinned to CPU 0, the replica to CPU 1 (taskset), so
that neither takes the other's core: the replica is a one-core machine, which every prediction
says (`--cores 1`). The replica stays up between runs; each run sets its settings (dynamic:
`slave_parallel_threads`/`_mode`, `sync_binlog`, `innodb_flush_log_at_trx_commit`), waits for
it to be caught up, rotates the primary's binlog, then runs sysbench at the run's `--rate`
while both servers' GTID positions are sampled every 50 ms (the primary's `gtid_binlog_pos`,
the replica's `gtid_slave_pos`). A run with a stop stops the replica's SQL thread at the given
time for the given span and starts it again (the drain). After sysbench the replica is waited
for until caught up, the binlog is rotated and imported into the run's trace.

Each run's folder holds `samples.csv` (t, primary seq_no, replica seq_no), `meta.json` (settings,
rate, stop, counters, the commands) and `trace.jsonl.gz` (the run's binlog, imported).
`report` turns samples into measured lag, drain time and keeps-up (`commitsched.lag_measure`)
and sets them beside the predictions (`calibrate` on one run, `lag` for the others) and the
straight-line extrapolation.
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import csv
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from calib_server import CalibServer, find_tools, free_port, fsync_probe  # noqa: E402
from calibrate import BASE_SETTINGS, SYNC_SETTINGS  # noqa: E402

PRIMARY_CPU, REPLICA_CPU = 0, 1
SAMPLE_INTERVAL = 0.05
TABLES, TABLE_SIZE, CLIENTS = 4, 10000, 16


# how long past its --time a sysbench run may go before the run is called stuck
SYSBENCH_GRACE_S = 120


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# Whether the rig pins (`measure --pin`): on this VM always; on a machine whose kernel takes an
# affinity without enforcing it (gVisor, one of the lent machines' runtimes) the rig runs
# unpinned, the replica's cores then all of the machine's, as calibrate reads them.
PINNED = True


def pin(pid: int, cpu: int) -> None:
    """Every thread of `pid` (and those it starts later, which inherit it) on CPU `cpu`."""
    if not PINNED:
        return
    subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid)], check=True,
                   capture_output=True)


def on_cpu(cpu: int) -> list[str]:
    """The command prefix that starts a program on CPU `cpu` (none when the rig does not pin)."""
    return ["taskset", "-c", str(cpu)] if PINNED else []


def pinning_works(cpu: int = REPLICA_CPU, seconds: float = 0.6) -> bool:
    """Whether an affinity is enforced here: two processes spinning for `seconds` on one CPU
    get about `seconds` of CPU between them where it is, twice that where it is not."""
    import resource
    spin = ("import os, time; os.sched_setaffinity(0, {%d}); t = time.monotonic()\n"
            "while time.monotonic() - t < %r: pass" % (cpu, seconds))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    if any(p.wait() != 0 for p in procs):
        return False
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return used < 1.5 * seconds


CGROUP = "/sys/fs/cgroup/cpu/commitsched-lag-replica"


def limit_cpu(pid: int, percent: int | None) -> None:
    """The replica's CPU bandwidth: `percent` of one core (cgroup v1 `cpu` quota), so that it
    is a slower machine than the source's; None: no limit."""
    if percent is None:
        return
    os.makedirs(CGROUP, exist_ok=True)
    # short periods, so that a throttled thread waits milliseconds, not tens: the kernel's
    # smallest quota is 1 ms, so the period is 100 ms / percent (5 ms at 20%)
    period = max(1000, 100_000 // percent)
    with open(os.path.join(CGROUP, "cpu.cfs_period_us"), "w") as f:
        f.write(str(period))
    with open(os.path.join(CGROUP, "cpu.cfs_quota_us"), "w") as f:
        f.write(str(period * percent // 100))
    with open(os.path.join(CGROUP, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def move_io_thread(server, limited: bool) -> int | None:
    """The replica's IO thread (receiving the binlog, writing the relay log) to CPU 0 beside
    the primary (and, with a CPU limit, out of it): the model prices the apply, not the
    receiving (on a replica whose IO thread shares one slow core with the appliers, the apply
    slowed by a quarter to a third while events arrived: docs/lag-check.md). Its thread id from
    performance_schema.threads; None if not found."""
    rows = server.sql("SELECT THREAD_OS_ID FROM performance_schema.threads "
                      "WHERE NAME = 'thread/sql/slave_io'")
    if not rows or not rows[0] or rows[0][0] in ("", "NULL"):
        return None
    tid = int(rows[0][0])
    if limited:
        with open("/sys/fs/cgroup/cpu/tasks", "w") as f:     # the root cpu cgroup: no limit
            f.write(str(tid))
    if PINNED:
        subprocess.run(["taskset", "-p", "-c", str(PRIMARY_CPU), str(tid)], check=True,
                       capture_output=True)
    return tid


def release_cpu_limit() -> None:
    try:
        os.rmdir(CGROUP)
    except OSError:
        pass


BLKIO = "/sys/fs/cgroup/blkio"
IO_CGROUP = "commitsched-lag-replica-io"


def block_device(path: str, sysfs: str = "/sys/dev/block") -> str:
    """`MAJ:MIN` of the disk that holds `path` (a partition's disk: blk-throttle's rules are
    per disk)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    node = os.path.realpath(os.path.join(sysfs, dev))
    if os.path.exists(os.path.join(node, "partition")):
        with open(os.path.join(os.path.dirname(node), "dev")) as f:
            dev = f.read().strip()
    return dev


class IoCap:
    """The replica's disk as a cloud volume: the writes of every thread of the replica's
    server capped at `iops` a second on its disk (cgroup v1 blkio's
    `blkio.throttle.write_iops_device`), reads uncapped. What the cap charges: every bio a
    task of the cgroup submits, an empty flush included (an fdatasync of a 4 KiB write is two),
    and nothing the kernel's own threads submit for it (cgroup v1: page-cache writeback of its
    buffered writes, ext4's journal commits by jbd2). The throttle deals its allowance in
    100 ms slices, so a quiet loop of a few writes passes at the device's speed and a
    saturated one at the cap. `calibrate`'s probes of the replica's disk run inside it too
    (`join`, `thread_inside`): a user runs calibrate on the replica's host. The cgroup is
    removed on every path (`release`)."""

    def __init__(self, iops: int, directory: str, root: str = BLKIO, name: str = IO_CGROUP,
                 device: str | None = None):
        if iops < 1:
            raise SystemExit(f"lag_check: --replica-write-iops {iops}: at least 1")
        self.iops, self.root = iops, root
        self.path = os.path.join(root, name)
        self.device = device or block_device(directory)

    def create(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        with open(os.path.join(self.path, "blkio.throttle.write_iops_device"), "w") as f:
            f.write(f"{self.device} {self.iops}")

    def add(self, pid: int) -> None:
        """The process `pid` (every thread, and those it starts later) inside the cap."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def command_inside(self, cmd: list[str]) -> list[str]:
        """`cmd` started inside: a shell joins the cgroup, then becomes the command."""
        procs = os.path.join(self.path, "cgroup.procs")
        return ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", *cmd]

    @contextlib.contextmanager
    def thread_inside(self):
        """The calling thread alone inside for the block (cgroup v1 moves single threads
        through `tasks`), then back in the root group."""
        tid = str(threading.get_native_id())
        with open(os.path.join(self.path, "tasks"), "w") as f:
            f.write(tid)
        try:
            yield
        finally:
            with open(os.path.join(self.root, "tasks"), "w") as f:
                f.write(tid)

    def serviced(self) -> dict[str, int]:
        """The IOs the cgroup's tasks submitted to the disk so far: {"Read": n, "Write": n}."""
        out = {"Read": 0, "Write": 0}
        try:
            with open(os.path.join(self.path, "blkio.throttle.io_serviced")) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3 and parts[0] == self.device and parts[1] in out:
                        out[parts[1]] = int(parts[2])
        except OSError:
            pass
        return out

    def release(self) -> None:
        """Every task still inside back to the root group, then the cgroup removed."""
        if not os.path.isdir(self.path):
            return
        try:
            with open(os.path.join(self.path, "tasks")) as f:
                left = [t for t in f.read().split() if t]
            for tid in left:
                try:
                    with open(os.path.join(self.root, "tasks"), "w") as f:
                        f.write(tid)
                except OSError:
                    pass                      # gone meanwhile
            os.rmdir(self.path)
        except OSError as e:
            log(f"removing {self.path}: {e}")


def write_rate_probe(directory: str, seconds: float = 1.0) -> dict:
    """4 KiB O_DIRECT writes back to back in `directory` for `seconds`: how many a second the
    disk took (its sustained write IOPS for one thread) and the median and p99 latency (ms).
    Beside the cap: what the replica's threads see."""
    import mmap
    path = os.path.join(directory, f".lag-check-iops-{os.getpid()}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    buf = mmap.mmap(-1, 4096)
    buf.write(b"x" * 4096)
    lat = []
    try:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            t = time.perf_counter()
            os.pwrite(fd, buf, 4096 * (len(lat) % 16))
            lat.append(time.perf_counter() - t)
        span = time.perf_counter() - t0
    finally:
        os.close(fd)
        os.unlink(path)
    lat.sort()
    return {"writes": len(lat), "seconds": round(span, 3),
            "writes_per_s": round(len(lat) / span, 1),
            "median_ms": round(1e3 * lat[len(lat) // 2], 4),
            "p99_ms": round(1e3 * lat[(99 * len(lat)) // 100], 4)}


# A run: (name, durability, mode, threads, rate, seconds, stop_at, stop_for, clients)
def parse_run(text: str) -> dict:
    """`durable-conservative-4@400x60+stop20:15` (clients 16) or with `/c1` for one client;
    `+cal` after the stop: the stop is `commitsched calibrate --probe`'s (the calibrating run);
    `#N` at the end: the Nth repeat of the same run (its folder gets `_rN`)."""
    text, _, repeat = text.partition("#")
    text, cal = (text[:-4], True) if text.endswith("+cal") else (text, False)
    spec, _, clients = text.partition("/c")
    head, _, stop = spec.partition("+stop")
    cfg, _, load = head.partition("@")
    durability, mode, threads = cfg.split("-")
    rate, _, seconds = load.partition("x")
    name = text.replace("/", "_").replace("+", "_").replace("@", "_").replace(":", "_")
    run = {"name": name + (f"_r{int(repeat)}" if repeat else ""),
           "durability": durability, "mode": mode, "threads": int(threads), "rate": int(rate),
           "seconds": int(seconds), "clients": int(clients) if clients else CLIENTS,
           "stop_at": None, "stop_for": None, "calibrate": cal}
    if stop:
        at, _, span = stop.partition(":")
        run["stop_at"], run["stop_for"] = float(at), float(span)
    if cal and not stop:
        raise SystemExit(f"lag_check: {text!r}: +cal needs a +stop (the probe)")
    if durability not in SYNC_SETTINGS or mode not in ("serial", "conservative", "optimistic"):
        raise SystemExit(f"lag_check: bad run {text!r}")
    return run


class Rig:
    def __init__(self, root: str, port: int, cpu_percent: int | None,
                 replica_binlog: bool = False, primary_durability: str = "durable",
                 lean_perf_schema: bool = False, replica_write_iops: int | None = None):
        self.tools = find_tools()
        # the replica's disk capped at this many writes a second (IoCap); None: not capped
        self.replica_write_iops = replica_write_iops
        self.io_cap: IoCap | None = None
        self.cpu_percent = cpu_percent
        # log_slave_updates (not dynamic: one setting for a whole campaign) and the primary's
        # durability (a relaxed primary writes faster than a durable one)
        self.replica_binlog = replica_binlog
        self.primary_durability = primary_durability
        self.lean_perf_schema = lean_perf_schema
        self.root = root
        p_port = free_port(port)
        r_port = free_port(p_port + 1)
        self.primary = CalibServer(self.tools, os.path.join(root, "primary"), p_port, "primary")
        self.replica = CalibServer(self.tools, os.path.join(root, "replica"), r_port, "replica")
        self.sysbench = None

    def sysbench_cmd(self, action: str, rate: int = 0, seconds: int = 0,
                     clients: int = CLIENTS) -> list[str]:
        cmd = [*on_cpu(PRIMARY_CPU), self.tools["sysbench"], "oltp_write_only",
               "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={self.primary.port}",
               "--mysql-user=sbtest", "--mysql-password=sbtest", "--mysql-db=sbtest",
               f"--tables={TABLES}", f"--table-size={TABLE_SIZE}", "--rand-seed=1"]
        if action == "run":
            cmd += [f"--threads={clients}", f"--time={seconds}", f"--rate={rate}",
                    "--events=0", "--report-interval=0", "--mysql-ignore-errors=all"]
        return cmd + [action]

    def setup(self) -> dict:
        P, R = self.primary, self.replica
        os.makedirs(P.workdir), os.makedirs(R.workdir)
        P.install()
        p_set = dict(BASE_SETTINGS, server_id="1", log_bin=os.path.join(P.datadir, "binlog"),
                     gtid_strict_mode="ON", **SYNC_SETTINGS[self.primary_durability])
        P.start(p_set)
        pin(P.pid, PRIMARY_CPU)
        P.sql("CREATE DATABASE sbtest; CREATE USER 'sbtest'@'127.0.0.1' IDENTIFIED BY 'sbtest';"
              "GRANT ALL ON sbtest.* TO 'sbtest'@'127.0.0.1';"
              "CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';"
              "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'")
        log("sysbench prepare")
        r = subprocess.run(self.sysbench_cmd("prepare"), capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("lag_check: sysbench prepare failed\n" + r.stdout + r.stderr)
        self.schema = os.path.join(self.root, "schema.sql")
        with open(self.schema, "w") as f:
            subprocess.run([self.tools["dump"], "--no-defaults", f"--socket={P.sock}", "-uroot",
                            "--no-data", "--databases", "sbtest"], stdout=f, check=True)
        R.install()
        r_set = dict(BASE_SETTINGS, server_id="2", log_bin=os.path.join(R.datadir, "binlog"),
                     log_slave_updates="ON" if self.replica_binlog else "OFF",
                     relay_log=os.path.join(R.datadir, "relay"),
                     skip_slave_start="ON", gtid_strict_mode="ON", performance_schema="ON",
                     # the workers' transaction counts that calibrate shows
                     performance_schema_instrument="transaction=ON",
                     slave_parallel_threads="0", **SYNC_SETTINGS["durable"])
        R.start(r_set)
        if self.lean_perf_schema:
            # only what finds the IO thread (performance_schema.threads): every other
            # instrument and consumer off, as on the calibration rig's replica (P_S off)
            R.sql("UPDATE performance_schema.setup_instruments SET ENABLED='NO', TIMED='NO' "
                  "WHERE NAME NOT LIKE 'thread/%'; UPDATE performance_schema.setup_consumers "
                  "SET ENABLED='NO' WHERE NAME NOT IN ('global_instrumentation', "
                  "'thread_instrumentation')")
        pin(R.pid, REPLICA_CPU)
        limit_cpu(R.pid, self.cpu_percent)
        io_cap = self.cap_replica_disk() if self.replica_write_iops else None
        R.sql(f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={P.port}, "
              f"MASTER_USER='repl', MASTER_PASSWORD='repl', MASTER_USE_GTID=slave_pos; "
              f"START SLAVE")
        self.wait_caught_up(600)
        self.version = P.sql("SELECT VERSION()")[0][0]
        settled = settle_disk(R.workdir)
        return {"version": self.version, "primary_settings": p_set, "replica_settings": r_set,
                "disk_settled": settled,
                "replica_cpu_percent_of_one_core": self.cpu_percent,
                "replica_io_thread_cpu": PRIMARY_CPU,
                "replica_perf_schema": "threads only" if self.lean_perf_schema else "on",
                "replica_io_cap": io_cap}

    def cap_replica_disk(self) -> dict:
        """The replica's server inside an IoCap, and a probe of what its threads see: one
        thread's 4 KiB O_DIRECT writes for a second in its datadir, inside the cap and outside
        it (IOs the cgroup counted beside them: the probe's own and the server's)."""
        R = self.replica
        self.io_cap = IoCap(self.replica_write_iops, R.datadir)
        self.io_cap.create()
        self.io_cap.add(R.pid)
        outside = write_rate_probe(R.datadir)
        before = self.io_cap.serviced()
        with self.io_cap.thread_inside():
            inside = write_rate_probe(R.datadir)
        after = self.io_cap.serviced()
        probe = {"write_iops": self.replica_write_iops, "device": self.io_cap.device,
                 "reads": "not capped", "probe_outside": outside, "probe_inside": inside,
                 "cgroup_writes_during_inside_probe": after["Write"] - before["Write"]}
        log(f"replica's disk capped at {self.replica_write_iops} writes/s: a thread inside "
            f"wrote {inside['writes_per_s']:.0f}/s, outside {outside['writes_per_s']:.0f}/s")
        return probe

    def positions(self) -> tuple[int, int]:
        p = self.primary.sql("SELECT @@gtid_binlog_pos")[0][0]
        r = self.replica.sql("SELECT @@gtid_slave_pos")[0][0]
        seq = lambda g: int(g.rsplit("-", 1)[1]) if g else 0  # noqa: E731
        return seq(p), seq(r)

    def wait_caught_up(self, timeout: float) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline:
            p, r = self.positions()
            if r >= p:
                return True
            time.sleep(0.2)
        return False

    def configure(self, run: dict) -> None:
        R = self.replica
        R.sql("STOP SLAVE")
        threads = 0 if run["mode"] == "serial" else run["threads"]
        sets = [f"SET GLOBAL slave_parallel_threads={threads}"]
        if threads:
            sets.append(f"SET GLOBAL slave_parallel_mode='{run['mode']}'")
        for k, v in SYNC_SETTINGS[run["durability"]].items():
            sets.append(f"SET GLOBAL {k}={v}")
        R.sql("; ".join(sets) + "; START SLAVE")
        time.sleep(0.5)
        pin(R.pid, REPLICA_CPU)            # the new worker threads too
        self.io_tid = move_io_thread(R, self.cpu_percent is not None)
        if self.io_tid is None:
            raise SystemExit("lag_check: the replica's IO thread was not found in "
                             "performance_schema.threads")

    def measure(self, run: dict, out: str) -> dict:
        import pymysql
        P, R = self.primary, self.replica
        self.configure(run)
        if not self.wait_caught_up(900):
            raise SystemExit("lag_check: the replica did not catch up before the run")
        P.sql("FLUSH BINARY LOGS")
        binlog = P.sql("SHOW MASTER STATUS")[0][0]
        status0 = {"primary": P.status(), "replica": R.status()}
        if self.io_cap is not None:
            with self.io_cap.thread_inside():     # the replica's disk as its threads see it
                fsync = fsync_probe(R.workdir, n=30)
        else:
            fsync = fsync_probe(R.workdir, n=30)
        cap = self.io_cap
        io0 = cap.serviced() if cap is not None else None
        pc = pymysql.connect(unix_socket=P.sock, user="root", autocommit=True)
        rc = pymysql.connect(unix_socket=R.sock, user="root", autocommit=True)
        samples: list[tuple[float, int, int]] = []
        events: dict[str, float] = {}
        done = threading.Event()

        def seqno(conn, sql):
            with conn.cursor() as cur:
                cur.execute(sql)
                g = cur.fetchone()[0]
            return int(g.rsplit("-", 1)[1]) if g else 0

        ticks = os.sysconf("SC_CLK_TCK")

        def replica_cpu() -> float:
            """The replica process's CPU seconds so far (user + system, every thread)."""
            with open(f"/proc/{R.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks

        # the applier threads' own CPU, run-queue wait and voluntary context switches, and the
        # IO thread's CPU (campaign D on): what the process's CPU time mixes together
        from commitsched.applier_cpu import IO_THREADS, AppliersCpu
        tc = pymysql.connect(unix_socket=R.sock, user="root", autocommit=True)
        appliers = AppliersCpu(tc, R.pid)
        io_thread = AppliersCpu(tc, R.pid, IO_THREADS)

        def sampler():
            nxt = time.time()
            while not done.is_set():
                t = time.time()
                a = appliers.read() or (0.0, 0.0, 0)
                io = io_thread.read() or (0.0, 0.0, 0)
                disk = cap.serviced() if cap is not None else None
                samples.append((t, seqno(pc, "SELECT @@gtid_binlog_pos"),
                                seqno(rc, "SELECT @@gtid_slave_pos"), replica_cpu(),
                                a[0], a[1], a[2], io[0])
                               + ((disk["Write"], disk["Read"]) if disk else ()))
                nxt += SAMPLE_INTERVAL
                time.sleep(max(0.0, nxt - time.time()))

        # the host's pace on a fixed loop inside the replica server, idle (model/host_speed.py):
        # what a prediction for this run can scale the profile's CPU terms by
        from commitsched.host_speed import host_loop
        host = {"before": host_loop(rc)}
        th = threading.Thread(target=sampler, daemon=True)
        th.start()
        time.sleep(1.0)
        cmd = self.sysbench_cmd("run", run["rate"], run["seconds"], run["clients"])
        events["sysbench_start"] = time.time()
        sb = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.sysbench = sb
        cal = None
        drain0 = None
        if run["calibrate"]:
            # the probe by the tool itself, as a user runs it: it samples the replica over the
            # run and stops its SQL thread at stop_at for stop_for seconds
            cal_cmd = [*on_cpu(PRIMARY_CPU), sys.executable, "-m", "commitsched",
                       "calibrate", "--replica", f"mysql://root@localhost/?socket={R.sock}",
                       "--window", str(run["seconds"]), "--probe", str(run["stop_for"]),
                       "--probe-at", str(run["stop_at"]), "--quiet",
                       "--record", os.path.join(out, "window.json")]
            os.makedirs(out, exist_ok=True)
            if cap is not None:
                # on the replica's host, whose disk is the capped one: its probes inside the cap
                cal_cmd = cap.command_inside(cal_cmd)
            cal = subprocess.Popen(cal_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
        elif run["stop_at"] is not None:
            time.sleep(max(0.0, events["sysbench_start"] + run["stop_at"] - time.time()))
            R.sql("STOP SLAVE SQL_THREAD")
            events["stop"] = time.time()
            time.sleep(max(0.0, events["stop"] + run["stop_for"] - time.time()))
            R.sql("START SLAVE SQL_THREAD")
            events["start"] = time.time()
            appliers.refresh()                  # the SQL thread is a new thread
            drain0 = R.status()                 # the drain's own group commits (lag_groups.py)
        try:
            # a stuck primary (seen once: every client in its statement for minutes, nothing
            # in the error log) ends the campaign in one line instead of hanging it
            sb_out, _ = sb.communicate(timeout=run["seconds"] + SYSBENCH_GRACE_S)
        except subprocess.TimeoutExpired:
            sb.kill()
            sb.communicate()
            if cal is not None:
                cal.kill()
            raise SystemExit(f"lag_check: run {run['name']}: sysbench still running "
                             f"{SYSBENCH_GRACE_S} s after its {run['seconds']} s; "
                             "stopped the servers (the runs before it are kept)")
        self.sysbench = None
        if cal is not None:
            cal_out, _ = cal.communicate()
            if cal.returncode != 0:
                raise SystemExit(f"lag_check: commitsched calibrate failed:\n{cal_out}")
            window = json.load(open(os.path.join(out, "window.json")))
            events["stop"], events["start"] = window["probe"]["stop"], window["probe"]["start"]
        events["sysbench_end"] = time.time()
        caught = self.wait_caught_up(600)
        events["caught_up"] = time.time()
        drain1 = R.status() if drain0 is not None else None
        time.sleep(1.0)
        done.set()
        th.join()
        if caught:
            host["after"] = host_loop(rc)
        pc.close(), rc.close(), tc.close()
        status1 = {"primary": P.status(), "replica": R.status()}
        P.sql("FLUSH BINARY LOGS")
        ss = R.slave_status()
        if ss.get("Last_SQL_Error"):
            raise SystemExit(f"lag_check: replica error in {run['name']}: {ss['Last_SQL_Error']}")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "samples.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t", "primary_seq", "replica_seq", "replica_cpu_s", "applier_cpu_s",
                        "applier_runq_s", "applier_vcsw", "io_cpu_s"]
                       + (["disk_writes", "disk_reads"] if cap is not None else []))
            w.writerows((f"{s[0]:.4f}", s[1], s[2], f"{s[3]:.2f}", f"{s[4]:.5f}", f"{s[5]:.5f}",
                         s[6], f"{s[7]:.5f}", *s[8:]) for s in samples)
        from commitsched.importers import import_binlog
        stats = import_binlog([os.path.join(P.datadir, binlog)],
                              os.path.join(out, "trace.jsonl.gz"), schema=[self.schema],
                              progress=False)
        counters = ("binlog_commits", "binlog_group_commits", "com_commit",
                    "slave_retried_transactions", "innodb_os_log_fsyncs", "innodb_data_fsyncs",
                    "innodb_log_writes", "innodb_log_write_requests")
        meta = {"run": run, "binlog": binlog, "events": events, "caught_up": caught,
                "fsync_probe_ms": fsync, "host_loop": host, "version": self.version,
                "sysbench": " ".join(cmd[3:]), "sysbench_tail": sb_out[-1500:],
                "transactions": getattr(stats, "transactions", None),
                "counters": {side: {c: int(status1[side].get(c, 0)) - int(status0[side].get(c, 0))
                                    for c in counters} for side in ("primary", "replica")},
                "counters_in_drain": None if drain1 is None else {
                    c: int(drain1.get(c, 0)) - int(drain0.get(c, 0)) for c in counters},
                "host": {"nproc": os.cpu_count(), "load": os.getloadavg()},
                "pinned": {"primary_and_sysbench_cpu": PRIMARY_CPU, "replica_cpu": REPLICA_CPU},
                "replica_cpu_percent_of_one_core": self.cpu_percent,
                "replica_log_slave_updates": self.replica_binlog,
                "primary_durability": self.primary_durability,
                "replica_cpu_columns": appliers.source,
                # the IOs the capped replica's threads submitted over the run (the rig's fsync
                # probe before it excluded; calibrate's probes included on its run)
                "replica_disk_ios": (None if cap is None else
                                     {k: v - io0[k] for k, v in cap.serviced().items()}),
                "replica_write_iops": self.replica_write_iops,
                "replica_log_file_buffering": R.sql(
                    "SELECT @@innodb_log_file_buffering")[0][0]}
        with open(os.path.join(out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        return meta

    def stop(self) -> None:
        if self.sysbench is not None and self.sysbench.poll() is None:
            self.sysbench.kill()
        for s in (self.replica, self.primary):
            try:
                s.stop()
            except Exception as e:  # stop both whatever happens to one
                log(f"stopping {s.name}: {e}")
        release_cpu_limit()
        if self.io_cap is not None:
            self.io_cap.release()


def check_io_cap(iops: int | None, root: str = BLKIO) -> None:
    """Refuse a cap the machine cannot give before any server starts (one line)."""
    if iops is None:
        return
    if iops < 1:
        raise SystemExit(f"lag_check: --replica-write-iops {iops}: at least 1")
    if not os.path.isfile(os.path.join(root, "blkio.throttle.write_iops_device")):
        raise SystemExit(f"lag_check: --replica-write-iops needs cgroup v1 blkio throttling "
                         f"({root}/blkio.throttle.write_iops_device not found)")
    if not os.access(root, os.W_OK):
        raise SystemExit(f"lag_check: --replica-write-iops needs write access to {root} (root)")


def new_rig(prefix: str, workdir: str | None, port: int, **settings) -> "Rig":
    """A rig (Rig's `settings`) in a fresh folder under `workdir`, stopped at exit and on
    SIGTERM, with this process (the sampler) pinned beside the primary."""
    root = tempfile.mkdtemp(prefix=prefix, dir=workdir)
    os.chmod(root, 0o755)                        # the servers run as mysql
    rig = Rig(root, port, settings.pop("cpu_percent", None), **settings)
    atexit.register(rig.stop)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if PINNED:
        os.sched_setaffinity(0, {PRIMARY_CPU})
    return rig


# What a run takes beyond its sysbench --time: the host loop read before and after it (~2 x 4
# s), the fsync probe, the catch-up after a lagging load, the binlog's import. A deadline keeps
# this much free for each run it starts (a lent machine's call ends at its limit, and with it
# every run that has not been written).
RUN_ALLOWANCE_S = 30.0


def settle_disk(directory: str) -> dict:
    """Every dirty page written out before the first run (a setup leaves hundreds of MB in the
    page cache: two datadirs, the tables, on a lent machine the unpacked bundle, which the
    kernel writes back ~30 s later, inside the first run), and the fsync probe after it, as the
    runs read it. A precaution, not a measured cure: the Q16 rehearsal's first attempt
    calibrated on a window whose disk was slow (calibrate's fsync probe 3.8 ms, the rig's 0.155
    ms six seconds before), but the bundle's unpacking and two datadir copies did not slow the
    fsync probe in the 50 s after them (00:58 UTC, medians 0.10-0.22 ms)."""
    t = time.monotonic()
    os.sync()
    took = time.monotonic() - t
    return {"sync_s": round(took, 3), "fsync_probe_ms": fsync_probe(directory, n=30)}


def fits_deadline(run: dict, began: float, deadline_s: float, now: float | None = None) -> bool:
    """Whether `run` would end within `deadline_s` of `began` (time.monotonic) if started now."""
    now = time.monotonic() if now is None else now
    return now - began + run["seconds"] + RUN_ALLOWANCE_S <= deadline_s


def write_skipped(out: str, names: list[str], deadline_s: float) -> None:
    """The runs a deadline left out, beside the campaign's setup (the report reads only the
    runs measured, and says which were left out)."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "skipped.json"), "w") as f:
        json.dump({"deadline_s": deadline_s, "not_started": names}, f, indent=1)


def cmd_measure(a) -> int:
    global PINNED
    began = time.monotonic()
    runs = [parse_run(r) for r in a.runs.split(",")]
    PINNED = a.pin == "on" or (a.pin == "auto" and pinning_works())
    if not PINNED:
        log("not pinned (--pin %s): the primary, sysbench and the replica share all %d CPUs"
            % (a.pin, os.cpu_count() or 0))
    check_io_cap(a.replica_write_iops)
    rig = new_rig("lagcheck-", a.workdir, a.port, cpu_percent=a.cpu_percent,
                  replica_binlog=a.replica_binlog, primary_durability=a.primary_durability,
                  lean_perf_schema=a.lean_perf_schema, replica_write_iops=a.replica_write_iops)
    try:
        setup = rig.setup()
        os.makedirs(a.out, exist_ok=True)
        name, n = "setup.json", 1
        while a.append and os.path.exists(os.path.join(a.out, name)):
            n += 1
            name = f"setup-{n}.json"             # a later piece of the same campaign
        with open(os.path.join(a.out, name), "w") as f:
            json.dump({**setup, "pinned": PINNED, "cpus": os.cpu_count(),
                       "kernel": os.uname().release,
                       "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                      f, indent=1)
        for i, run in enumerate(runs):
            if a.deadline_s is not None and not fits_deadline(run, began, a.deadline_s):
                left = [r["name"] for r in runs[i:]]
                write_skipped(a.out, left, a.deadline_s)
                log(f"deadline: {len(left)} of {len(runs)} runs not started ({', '.join(left)})")
                break
            log(f"run {run['name']}")
            meta = rig.measure(run, os.path.join(a.out, "runs", run["name"]))
            log(f"  {meta['transactions']} transactions, caught up: {meta['caught_up']}")
    finally:
        rig.stop()
        if not a.keep:
            subprocess.run(["rm", "-rf", rig.root])
    return 0


SCHEDULERS = {"serial": "serial", "conservative": "commit_id+mariadb_conservative",
              "optimistic": "commit_id+mariadb_optimistic"}


def measured(run_dir: str) -> dict:
    """What the samples say of one run (commitsched.lag_measure)."""
    import numpy as np
    from commitsched.lag_measure import (apply_rate, caught_up_at, max_lag_outside,
                                         measured_lag, write_rate)
    from commitsched.trace import load_trace
    meta = json.load(open(os.path.join(run_dir, "meta.json")))
    rows = list(csv.reader(stored(os.path.join(run_dir, "samples.csv"))))[1:]
    t = np.asarray([float(r[0]) for r in rows])
    p = np.asarray([int(r[1]) for r in rows])
    r = np.asarray([int(r[2]) for r in rows])
    # the replica process's CPU seconds (campaign C on): the samples' fourth column
    cpu = np.asarray([float(x[3]) for x in rows]) if rows and len(rows[0]) > 3 else None
    # the applier threads' CPU, run-queue wait, voluntary switches and the IO thread's CPU
    # (campaign D on)
    threads = (np.asarray([[float(v) for v in x[4:8]] for x in rows])
               if rows and len(rows[0]) > 7 else None)
    # the IOs the capped replica's threads submitted (campaign G on: --replica-write-iops)
    disk = (np.asarray([[int(v) for v in x[8:10]] for x in rows])
            if rows and len(rows[0]) > 9 else None)
    txns = load_trace(os.path.join(run_dir, "trace.jsonl.gz")).txns
    numbers = np.asarray([int(x.gtid.rsplit("-", 1)[1]) for x in txns])
    ev = meta["events"]
    m = measured_lag(t, p, r, numbers)
    out = {"meta": meta, "txns": txns, "trace": os.path.join(run_dir, "trace.jsonl.gz"),
           "events": ev,
           "write_rate": write_rate(t, p, ev["sysbench_start"] + 1, ev["sysbench_end"])}
    windows = []
    if "start" in ev:
        caught = caught_up_at(t, p, r, ev["start"])
        out["drain_s"] = None if caught is None else caught - ev["start"]
        out["apply_rate_in_drain"] = (apply_rate(t, r, ev["start"], caught)
                                      if caught else None)
        out["cpu_us_per_txn_in_drain"] = None
        if caught and cpu is not None:
            i, j = np.searchsorted(t, ev["start"]), np.searchsorted(t, caught) - 1
            if j > i and r[j] > r[i]:
                out["cpu_us_per_txn_in_drain"] = float(1e6 * (cpu[j] - cpu[i]) / (r[j] - r[i]))
                if threads is not None:
                    d, n = threads[j] - threads[i], r[j] - r[i]
                    out["threads_in_drain"] = {
                        "applier_cpu_us_per_txn": float(1e6 * d[0] / n),
                        "applier_runq_us_per_txn": float(1e6 * d[1] / n),
                        "applier_switches_per_txn": float(d[2] / n),
                        "io_cpu_us_per_txn": float(1e6 * d[3] / n),
                        "wall_us_per_txn": float(1e6 * (t[j] - t[i]) / n),
                        "appliers_busy": float(d[0] / (t[j] - t[i]))}
                if disk is not None:
                    out["disk_in_drain"] = {
                        "writes_per_txn": float((disk[j, 0] - disk[i, 0]) / (r[j] - r[i])),
                        "writes_per_s": float((disk[j, 0] - disk[i, 0]) / (t[j] - t[i])),
                        "reads_per_s": float((disk[j, 1] - disk[i, 1]) / (t[j] - t[i]))}
        windows.append((ev["stop"], caught or t[-1]))
    out["max_lag_s"] = max_lag_outside(m, windows)
    end = int(np.searchsorted(t, ev["sysbench_end"])) - 1
    # keeps up: at the end of the load, no more behind than a second of its writes
    out["backlog_at_end"] = int(p[end] - r[end])
    out["keeps_up"] = bool(p[end] - r[end] <= max(out["write_rate"], 1.0))
    out["source_first"] = float(m.source[0])
    return out


def _err(pred, meas):
    if pred is None or meas is None or not meas:
        return None
    return (pred - meas) / meas


def stored(path: str):
    """A run's stored text file, or its gzipped copy (campaign I on: `make lag-check-i`
    compresses the samples and the window after measuring)."""
    import gzip
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def stored_window(run_dir: str):
    """The window `calibrate --record` kept in a run's folder (window.json, or .gz)."""
    from commitsched.calibrate_replica import Window
    path = os.path.join(run_dir, "window.json")
    with stored(path) as f:
        return Window.from_json(json.load(f), path)


def rig_window(run_dir: str, template, run: dict):
    """A calibration window made from the rig's own samples of a run that `calibrate` did not
    sample (a repeat of the calibrating configuration whose stop was the rig's): the replica's
    applied position and the primary's (for what the replica had received), the applier
    threads' CPU, the rig's stop as the probe. The replica, its settings and the disk probes
    (O_DIRECT write, the commit's CPU) are `template`'s, the calibrating window's: the
    retro-check on stored runs only (a live calibration samples its own)."""
    import dataclasses
    meta = json.load(open(os.path.join(run_dir, "meta.json")))
    rows = list(csv.reader(stored(os.path.join(run_dir, "samples.csv"))))[1:]
    prefix = template.samples[0][1].rsplit("-", 1)[0] + "-"
    ev = meta["events"]
    return dataclasses.replace(
        template, samples=[(float(r[0]), f"{prefix}{r[2]}", f"{prefix}{r[1]}") for r in rows],
        cpu=[(float(r[4]), float(r[5]), int(r[6])) for r in rows], cpu_source="threads",
        cpu_others=[(float(r[3]), float(r[7])) for r in rows] if len(rows[0]) > 7 else None,
        probe={"stop": ev["stop"], "start": ev["start"], "seconds": run["stop_for"]},
        started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(rows[0][0]))),
        fsync_ms=meta["fsync_probe_ms"]["median_ms"], fsync_ms_rounds=None,
        workers_before=None, workers_after=None)


def calibrating_runs(a, run_dirs: list[str], runs: dict) -> list[str]:
    """The runs the profile is fitted on: `--calibrate-on` (a retro-check), else the `+cal`
    runs (one, or several spread over the campaign: campaign I on)."""
    if a.calibrate_on:
        cal = a.calibrate_on.split(",")
        missing = [d for d in cal if d not in runs]
        if missing:
            raise SystemExit(f"lag_check: --calibrate-on: no run {missing[0]} in {a.out}")
        return cal
    cal = [d for d in run_dirs if runs[d]["meta"]["run"].get("calibrate")]
    if not cal:
        raise SystemExit("lag_check: no calibrating run (+cal) in the campaign")
    return cal


def cmd_report(a) -> int:
    import statistics
    from commitsched.calibrate_replica import described_many, fit_many
    from commitsched.lag import spread_ends, straight_line_drain, with_ranges
    from commitsched.profiles import get_profile
    run_dirs = sorted(d for d in os.listdir(os.path.join(a.out, "runs")))
    runs = {d: measured(os.path.join(a.out, "runs", d)) for d in run_dirs}
    cal = calibrating_runs(a, run_dirs, runs)
    live = [d for d in cal if any(os.path.exists(os.path.join(a.out, "runs", d, name))
                                  for name in ("window.json", "window.json.gz"))]
    if not live:
        raise SystemExit(f"lag_check: none of the calibrating runs {cal} has calibrate's "
                         f"window.json")
    template = stored_window(os.path.join(a.out, "runs", live[0]))
    backfilled = backfill(template, os.path.join(a.out, "runs", live[0]), a)
    windows, labels = [], []
    for d in cal:
        run_dir = os.path.join(a.out, "runs", d)
        if d in live:
            w = template if d == live[0] else stored_window(run_dir)
            labels.append(d)
        else:
            w = rig_window(run_dir, template, runs[d]["meta"]["run"])
            labels.append(f"{d} (the rig's samples)")
            backfilled.append(f"{d}: no calibrate window; the rig's samples of it, with "
                              f"{live[0]}'s disk probes (a retro-check)")
        if rig_others(w, run_dir):
            backfilled.append(f"{d}: the window predates calibrate's reading of the process's "
                              f"and the IO thread's CPU: the rig's samples of them stand in")
        windows.append(w)
    from commitsched.calibrate_replica import nearest_base
    base = get_profile(a.base or nearest_base(template.cores))
    from commitsched.calibrate_replica import CalibrateError
    try:
        many = fit_many(windows, [runs[d]["txns"] for d in cal], base, labels=labels)
    except CalibrateError as e:
        raise SystemExit(f"lag_check: calibrating on {', '.join(cal)}: {e}") from None
    profile = described_many(many, base, "lag-check-replica")
    result = many.fits[0] if len(cal) == 1 else None
    ends = spread_ends(profile)
    to = a.to or a.out
    os.makedirs(to, exist_ok=True)
    with open(os.path.join(to, "profile.json"), "w") as f:
        json.dump({"profiles": [profile.to_json()]}, f, indent=1)
    # the straight line's apply rate: the calibrating runs' measured drain rate (their median:
    # the same information the model is given)
    line_rate = statistics.median(runs[d]["apply_rate_in_drain"] for d in cal)
    # every run at the median profile and at each end of its spread, `--jobs` at a time
    from commitsched.scoring import fork_map
    profiles = {"median": profile, **(ends or {})}
    tasks = [(d, which) for d in run_dirs for which in profiles]

    def work(task):
        d, which = task
        run = runs[d]["meta"]["run"]
        workers = 1 if run["mode"] == "serial" else run["threads"]
        return predict(runs[d], run, SCHEDULERS[run["mode"]], workers,
                       paced(profiles[which], d))

    def paced(prof, d):
        """The profile at the host's pace read just before run d (campaign P on: the rig's
        reading, as `lag --host-now` reads it); unchanged without readings or --no-host-pace."""
        from commitsched.calibrate_replica import at_pace_now, profile_pace
        from commitsched.host_speed import pace_us
        now = pace_us((runs[d]["meta"].get("host_loop") or {}).get("before"))
        if getattr(a, "no_host_pace", False) or now is None or profile_pace(prof) is None:
            return prof
        return at_pace_now(prof, now, f"the start of {d}")
    preds = {}
    for task, pred in zip(tasks, fork_map(work, tasks, a.jobs)):
        preds[task] = pred
        log(f"predicted {task[0]}" + (f" at the {task[1]} calibrated pace"
                                      if task[1] != "median" else ""))
    rows = []
    for d in run_dirs:
        m, run = runs[d], runs[d]["meta"]["run"]
        workers = 1 if run["mode"] == "serial" else run["threads"]
        pred = preds[(d, "median")]
        if ends:
            with_ranges([pred], {end: [preds[(d, end)]] for end in ends})
        backlog = run["stop_for"]
        closed = bool(backlog) and closed_drain(m)
        w = m["write_rate"]
        # the secondary verdict (campaign G on): read like the measured one, at the load's end
        # (no more behind than a second of its writes), on runs without a stop
        end_model = pred.get("end_backlog")
        end_line = max(0.0, (w - line_rate) * run["seconds"])
        line = {"keeps_up": line_rate > w,
                "keeps_up_at_end": None if backlog else end_line <= max(w, 1.0),
                "drain_s": (straight_line_drain(backlog, line_rate, w, closed=closed)
                            if backlog else None),
                "max_lag_s": (1.0 / line_rate if line_rate > w
                              else run["seconds"] * (w / line_rate - 1.0))}
        model = {"keeps_up": pred["keeps_up"], "max_lag_s": pred["max_lag_s"],
                 "keeps_up_at_end": (None if backlog or end_model is None
                                     else end_model <= max(w, 1.0)),
                 "end_backlog": end_model,
                 "drain_s": pred.get("drain_s"), "headroom": pred["headroom"],
                 "apply_rate": pred["apply_rate"]}
        for key in ("keeps_up_slowest", "keeps_up_fastest", "max_lag_s_range",
                    "drain_s_range", "headroom_range"):
            if key in pred:
                model[key] = pred[key]
        host = paced(profile, d).fitted_from
        rows.append({"run": d, "calibrating": d in cal, "host_pace": host.get("host_pace_now"),
                     "host_pace_factor": host.get("host_pace_factor"),
                     "config": f"{run['durability']} "
                     f"{run['mode']} W={workers}" + (" 1 client" if run["clients"] == 1 else ""),
                     "rate": run["rate"], "write_rate": round(w, 1), "stop_s": backlog,
                     "closed_drain": closed,
                     "measured": {"keeps_up": m["keeps_up"], "max_lag_s": m["max_lag_s"],
                                  "drain_s": m.get("drain_s"),
                                  "apply_rate_in_drain": m.get("apply_rate_in_drain"),
                                  "cpu_us_per_txn_in_drain": m.get("cpu_us_per_txn_in_drain"),
                                  "threads_in_drain": m.get("threads_in_drain"),
                                  "disk_in_drain": m.get("disk_in_drain"),
                                  "disk_ios": m["meta"].get("replica_disk_ios"),
                                  "group_commits": m["meta"]["counters"]["replica"].get(
                                      "binlog_group_commits"),
                                  "commits": m["meta"]["counters"]["replica"].get(
                                      "binlog_commits")},
                     "model": model, "line": line})
    summary = summarize(rows, a.material_lag)
    if ends:
        summary["coverage"] = coverage([r for r in rows if not r["calibrating"]],
                                       a.material_lag)
    med = lambda key: statistics.median(f_.__dict__[key] for f_ in many.fits)  # noqa: E731
    report = {"calibrating_run": cal[0] if len(cal) == 1 else cal, "base": base.name,
              "cpu_scale": med("cpu_scale"), "flush_scale": med("flush_scale"),
              "prior_flush_scale": med("prior_flush"),
              "cpu_measured_us_per_txn": (None if any(f_.cpu_measured is None
                                                      for f_ in many.fits)
                                          else med("cpu_measured")),
              "cpu_source": template.cpu_source,
              "log_write_us": profile.log_write, "fit_notes": [n for f_ in many.fits
                                                                for n in f_.notes],
              "windows": profile.fitted_from.get("windows"),
              "host_pace": profile.fitted_from.get("host_pace"),
              "backfilled": backfilled, "line_apply_rate": line_rate,
              "fit_drain_measured_s": result.measured_drain if result else None,
              "fit_drain_replayed_s": result.fitted_drain if result else None,
              "rows": rows, "summary": summary, "not_measured": not_measured(a.out)}
    with open(os.path.join(to, "results.json"), "w") as f:
        json.dump(report, f, indent=1)
    text = markdown(report, a.material_lag)
    with open(os.path.join(to, "report.md"), "w") as f:
        f.write(text)
    if a.doc:
        put_in_doc(a.doc, text, a.doc_marker)
    print(text)
    return 0


# how soon after the SQL thread's restart the load may end for the drain to count as closed
# (nothing more arriving while it drains): sysbench's exit is read within a sample or two
CLOSED_WITHIN_S = 0.5


def closed_drain(m: dict) -> bool:
    """Whether the run's load ended by its restart (`800x20+stop5:15`: the backlog drains with
    nothing more arriving), which its prediction and the straight line must know."""
    ev = m.get("events") or {}
    return (ev.get("start") is not None and ev.get("sysbench_end") is not None
            and ev["sysbench_end"] <= ev["start"] + CLOSED_WITHIN_S)


def predict(m: dict, run: dict, sched: str, workers: int, profile) -> dict:
    """`lag`'s answers for one run from its own binlog, its stop as the backlog (drained with
    the source writing on at its pace, or with nothing more arriving where the load ended by
    the restart: `closed_drain`)."""
    from commitsched.lag import lag_one
    from commitsched.replay import source_times
    times = source_times(m["txns"])
    backlog = run["stop_for"]
    at = (m["events"]["stop"] - times.epoch) if backlog else 0.0
    # the run's trace file with its columns, so that the replays run in the compiled core as
    # `lag` runs them (a list of Txn objects runs in the reference engine: the same answers,
    # but a drain near headroom 1 replays millions of transactions there for an hour)
    from commitsched.cli import TraceSource
    source = TraceSource(m["trace"])
    return lag_one(source.txns, times, sched, workers,
                   profile.with_durability(run["durability"]), backlog=backlog,
                   backlog_at=max(at, 0.0), closed_drain=bool(backlog) and closed_drain(m))


def coverage(held: list[dict], material: float) -> dict:
    """How often the model's range (its replays at the calibration spread's ends and at its
    median) holds the measured answer, over the held-out runs: the drain (a high end of None:
    never), the max lag where it is material, and the keeps-up verdict (right at one of the
    three paces at least)."""
    def inside(pair, v):
        lo, hi = pair
        return v is not None and lo is not None and lo <= v and (hi is None or v <= hi)
    drains = [r for r in held if r["stop_s"] and r["measured"]["drain_s"] is not None
              and "drain_s_range" in r["model"]]
    lags = [r for r in held if r["measured"]["max_lag_s"] >= material
            and "max_lag_s_range" in r["model"]]
    verdicts = [r for r in held if "keeps_up_slowest" in r["model"] and verdict_measured(r)]
    return {
        "drain": [sum(inside(r["model"]["drain_s_range"], r["measured"]["drain_s"])
                      for r in drains), len(drains)],
        "max_lag": [sum(inside(r["model"]["max_lag_s_range"], r["measured"]["max_lag_s"])
                        for r in lags), len(lags)],
        "keeps_up": [sum(r["measured"]["keeps_up"] in (r["model"]["keeps_up"],
                                                       r["model"]["keeps_up_slowest"],
                                                       r["model"]["keeps_up_fastest"])
                         for r in verdicts), len(verdicts)],
        "keeps_up_flips": sum(len({r["model"]["keeps_up"], r["model"]["keeps_up_slowest"],
                                   r["model"]["keeps_up_fastest"]}) > 1 for r in verdicts)}


def backfill(window, run_dir: str, a) -> list[str]:
    """A window recorded before `calibrate` read what it reads now (campaign C): the CPU time
    the rig sampled of the replica's process (what calibrate falls back to without thread
    ids), and the redo log's buffering and write latency when given (`--log-file-buffered`,
    `--log-write-ms`). Says what it filled in."""
    import numpy as np
    said = []
    if window.cpu is None:
        rows = list(csv.reader(stored(os.path.join(run_dir, "samples.csv"))))[1:]
        if rows and len(rows[0]) > 3:
            t = np.asarray([float(r[0]) for r in rows])
            c = np.asarray([float(r[3]) for r in rows])
            at = np.interp([s[0] for s in window.samples], t, c)
            window.cpu = [(float(x), 0.0, 0) for x in at]
            window.cpu_source = "process"
            said.append("the window predates calibrate's CPU reading: the replica process's "
                        "CPU time the rig sampled (samples.csv) stands in")
    if a.log_file_buffered is not None and "log_file_buffered" not in window.settings:
        window.settings["log_file_buffered"] = a.log_file_buffered == "on"
        said.append(f"innodb_log_file_buffering={a.log_file_buffered.upper()} (given)")
    if a.log_write_ms is not None and window.log_write_ms is None:
        window.log_write_ms = a.log_write_ms
        said.append(f"the redo log's O_DIRECT write {a.log_write_ms} ms (given)")
    if getattr(a, "io_cpu", None) and window.io_cpu is None:
        window.io_cpu = json.load(open(a.io_cpu))["io_cpu"]
        said.append(f"the commit's CPU per write and sync probed later, not with the window "
                    f"({a.io_cpu}: a refit)")
    return said


def rig_others(window, run_dir: str) -> bool:
    """A window recorded before `calibrate` read the process's and the IO thread's CPU beside
    the appliers' (2026-11-28): the rig's samples of both (samples.csv) at the window's sample
    times, from which the fit reads the server's other threads' CPU (`background_cpu`). False
    where there is nothing to fill or the rig did not sample them."""
    import numpy as np
    if window.cpu_others is not None or window.cpu_source != "threads":
        return False
    rows = list(csv.reader(stored(os.path.join(run_dir, "samples.csv"))))
    header, rows = rows[0], rows[1:]
    if not rows or "replica_cpu_s" not in header or "io_cpu_s" not in header:
        return False
    t = np.asarray([float(r[0]) for r in rows])
    at = [s_[0] for s_ in window.samples]
    process = np.interp(at, t, [float(r[header.index("replica_cpu_s")]) for r in rows])
    io = np.interp(at, t, [float(r[header.index("io_cpu_s")]) for r in rows])
    window.cpu_others = [(float(p_), float(i_)) for p_, i_ in zip(process, io)]
    return True


def put_in_doc(path: str, text: str, marker: str = "lag-check") -> None:
    """Replace what stands between the doc's `marker` markers by `text`."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    doc = open(path, encoding="utf-8").read()
    if begin not in doc or end not in doc:
        raise SystemExit(f"lag_check: {path} has no {begin} ... {end} markers")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + begin + "\n" + text + end + tail)


def verdict_measured(row: dict) -> bool:
    """Whether the run measured a keeps-up verdict: not a closed drain, whose stop held the
    load's end (the backlog then is the stop's, whatever the replica's pace)."""
    return not row.get("closed_drain")


def summarize(rows: list[dict], material: float) -> dict:
    """Over the runs not used to calibrate: median |error| of drain and of max lag (where the
    measured lag is material: at least `material` s, ten sampling intervals and more), and
    how many keeps-up verdicts are right; for the model and the straight line."""
    held = [r for r in rows if not r["calibrating"]]
    out = _summary(held, material)
    # the same over each durability's runs alone
    for durability in ("durable", "relaxed"):
        out[durability] = _summary([r for r in held if r["config"].startswith(durability)],
                                   material)
    return out


def _summary(held: list[dict], material: float) -> dict:
    import statistics
    out = {}
    for who in ("model", "line"):
        drains = [abs(_err(r[who]["drain_s"], r["measured"]["drain_s"])) for r in held
                  if r["stop_s"] and _err(r[who]["drain_s"], r["measured"]["drain_s"]) is not None]
        never = sum(1 for r in held if r["stop_s"] and r[who]["drain_s"] is None
                    and r["measured"]["drain_s"] is not None)
        # a drain said never to end that did end is the largest miss there is: it counts, as an
        # error above every other (before 2026-11-27 evening it was left out: see
        # docs/lag-check/drains-said-never.md)
        drains += [math.inf] * never
        median = statistics.median(drains) if drains else None
        lags = [abs(_err(r[who]["max_lag_s"], r["measured"]["max_lag_s"])) for r in held
                if r["measured"]["max_lag_s"] >= material]
        verdicts = [r for r in held if verdict_measured(r)]
        right = sum(1 for r in verdicts if r[who]["keeps_up"] == r["measured"]["keeps_up"])
        at_end = [r for r in held if r[who].get("keeps_up_at_end") is not None]
        out[who + "_at_end"] = {
            "right": sum(1 for r in at_end
                         if r[who]["keeps_up_at_end"] == r["measured"]["keeps_up"]),
            "runs": len(at_end)}
        out[who] = {"drain_median_error": ("never" if median is not None and math.isinf(median)
                                           else median),
                    "drain_runs": len(drains), "drain_never_but_drained": never,
                    "drains_never_counted": True,
                    "max_lag_median_error": statistics.median(lags) if lags else None,
                    "max_lag_runs": len(lags), "keeps_up_right": right,
                    "keeps_up_runs": len(verdicts)}
    return out


def cmd_rescore(a) -> int:
    """One markdown row a campaign: the drain and max-lag medians and the keeps-up count as
    stored, and as `summarize` scores the same stored rows now."""
    print("| campaign | drain, model: stored / now | drain, line: stored / now | durable drains, "
          "model: now | relaxed drains, model: now | max lag, model / line | keeps up, model / "
          "line |")
    print("|---|---|---|---|---|---|---|")
    for d in a.campaigns:
        path = os.path.join(d, "results.json")
        try:
            stored = json.load(open(path))
            rows, old = stored["rows"], stored["summary"]
            now = summarize(rows, a.material_lag)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"lag_check.py rescore: {path}: not a report's results "
                             f"({type(e).__name__}: {e})") from None
        cell = _error_cell
        print(f"| {os.path.basename(os.path.normpath(d))} | "
              f"{cell(_stored_cell(old['model']), 'drain_median_error')} / "
              f"{cell(now['model'], 'drain_median_error')} | "
              f"{cell(_stored_cell(old['line']), 'drain_median_error')} / "
              f"{cell(now['line'], 'drain_median_error')} | "
              f"{cell(now['durable']['model'], 'drain_median_error')} | "
              f"{cell(now['relaxed']['model'], 'drain_median_error')} | "
              f"{cell(now['model'], 'max_lag_median_error')} / "
              f"{cell(now['line'], 'max_lag_median_error')} | "
              f"{now['model']['keeps_up_right']} / {now['line']['keeps_up_right']} of "
              f"{now['model']['keeps_up_runs']} |")
    return 0


def _stored_cell(s: dict) -> dict:
    """A summary as stored: one from before drains said never were counted (no
    `drains_never_counted`) had the others as its runs."""
    return s if s.get("drains_never_counted") else {**s, "drain_never_but_drained": 0}


def _error_cell(s: dict, key: str) -> str:
    """A median error and its runs: `drain_runs` counts the drains said never to end (that
    did), and the cell says how many there were."""
    v = s[key]
    drain = key.startswith("drain")
    n = s["drain_runs" if drain else "max_lag_runs"]
    never = s.get("drain_never_but_drained", 0) if drain else 0
    if v is None:
        return "-"
    runs = f"{n} runs" + (f", {never} said never" if never else "")
    return f"never ({runs})" if v == "never" else f"{100 * v:.0f}% ({runs})"


def _verdict_cell(s: dict) -> str:
    """'right of runs', or '-' where no run measured a verdict (closed drains only)."""
    return f"{s['keeps_up_right']} of {s['keeps_up_runs']}" if s["keeps_up_runs"] else "-"


def _fmt_s(v) -> str:
    return "never" if v is None else f"{v:.2f}"


def _fmt_range(pair) -> str:
    """The model's range (the calibration spread's ends), where the profile has one."""
    if not pair:
        return ""
    return f" [{_fmt_s(pair[0])}-{_fmt_s(pair[1])}]"


def _fmt_e(pred, meas) -> str:
    e = _err(pred, meas)
    return "" if e is None else f" ({100 * e:+.0f}%)"


def markdown(report: dict, material: float) -> str:
    lines = ["| run | configuration | rate | keeps up: measured / model / line | "
             "max lag s: measured / model / line | drain s: measured / model / line |",
             "|---|---|---|---|---|---|"]
    yn = lambda v: "yes" if v else "no"  # noqa: E731
    for r in report["rows"]:
        m, p, l = r["measured"], r["model"], r["line"]
        name = (r["run"] + (" (calibrated on it)" if r["calibrating"] else "")
                + (" (closed drain: the load ended at the restart)" if r.get("closed_drain")
                   else ""))
        drain = "-" if not r["stop_s"] else (
            f"{_fmt_s(m['drain_s'])} / {_fmt_s(p['drain_s'])}{_fmt_e(p['drain_s'], m['drain_s'])}"
            + _fmt_range(p.get("drain_s_range"))
            + f" / {_fmt_s(l['drain_s'])}{_fmt_e(l['drain_s'], m['drain_s'])}")
        lag = (f"{m['max_lag_s']:.2f} / {p['max_lag_s']:.2f}"
               + (_fmt_e(p['max_lag_s'], m['max_lag_s']) if m['max_lag_s'] >= material else "")
               + _fmt_range(p.get("max_lag_s_range"))
               + f" / {l['max_lag_s']:.2f}"
               + (_fmt_e(l['max_lag_s'], m['max_lag_s']) if m['max_lag_s'] >= material else ""))
        model_verdict = yn(p["keeps_up"])
        if "keeps_up_slowest" in p and len({p["keeps_up"], p["keeps_up_slowest"],
                                            p["keeps_up_fastest"]}) > 1:
            model_verdict += (f" [slowest {yn(p['keeps_up_slowest'])}, fastest "
                              f"{yn(p['keeps_up_fastest'])}]")
        verdicts = (f"{yn(m['keeps_up'])} / {model_verdict} / {yn(l['keeps_up'])}"
                    if verdict_measured(r) else "- (the stop held the load's end)")
        lines.append(f"| {name} | {r['config']} | {r['write_rate']:.0f}/s | {verdicts} | "
                     f"{lag} | {drain} |")
    s = report["summary"]
    lines += ["", "| over the runs not used to calibrate | model | straight line |",
              "|---|---|---|"]
    for key, label in (("drain_median_error", "drain time: median error"),
                       ("max_lag_median_error", f"max lag (measured >= {material:g} s): "
                                                "median error")):
        cells = []
        for who in ("model", "line"):
            cells.append(_error_cell(s[who], key))
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    lines.append(f"| keeps-up verdict right | {_verdict_cell(s['model'])} | "
                 f"{_verdict_cell(s['line'])} |")
    if s.get("model_at_end", {}).get("runs"):
        lines.append(f"| keeps-up at the load's end right (secondary; runs without a stop) | "
                     f"{s['model_at_end']['right']} of {s['model_at_end']['runs']} | "
                     f"{s['line_at_end']['right']} of {s['line_at_end']['runs']} |")
    cov = s.get("coverage")
    if cov:
        frac = lambda k: (f"{cov[k][0]} of {cov[k][1]}" if cov[k][1] else "-")  # noqa: E731
        lines.append(f"| the model's range holds the measured: drain / max lag (measured >= "
                     f"{material:g} s) / keeps-up | {frac('drain')} / {frac('max_lag')} / "
                     f"{frac('keeps_up')} (the verdict flips inside the range in "
                     f"{cov['keeps_up_flips']}) | - |")
    for durability in ("durable", "relaxed"):
        part = s.get(durability)
        if not part or not (part["model"]["keeps_up_runs"] or part["model"]["drain_runs"]
                            or part["model"]["max_lag_runs"]):
            continue
        for key, label in (("drain_median_error", "drain"),
                           ("max_lag_median_error", "max lag")):
            cells = [_error_cell(part[who], key) for who in ("model", "line")]
            lines.append(f"| {durability} runs only: {label} | {cells[0]} | {cells[1]} |")
        lines.append(f"| {durability} runs only: keeps-up right | "
                     f"{_verdict_cell(part['model'])} | {_verdict_cell(part['line'])} |")
    left = report.get("not_measured")
    if left:
        lines += ["", f"Not measured (the rig's deadline, {left['deadline_s']:.0f} s, came "
                      f"first): {', '.join(left['not_started'])}."]
    return "\n".join(lines) + "\n" + apply_rates(report) + disk_table(report) + pace_words(report)


def not_measured(out: str) -> dict | None:
    """The runs `measure --deadline-s` left out (skipped.json), or None."""
    path = os.path.join(out, "skipped.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def pace_words(report: dict) -> str:
    """The host's pace (campaign P on): the profile's, and the factor each run was replayed at."""
    pace = (report.get("host_pace") or {})
    factors = [r["host_pace_factor"] for r in report["rows"] if r.get("host_pace_factor")]
    if not pace:
        return ""
    windows = ", ".join(f"{v:.1f}" for v in pace["windows_us"])
    text = (f"\nThe host's pace: the profile's CPU terms hold at the `{pace['loop']}` loop's "
            f"{pace['us']:.1f} µs (the median of the windows' {windows}; each window brought "
            f"to it)")
    if factors:
        text += (f"; each run replayed at the pace read before it: CPU terms x "
                 f"{min(factors):.3f} to {max(factors):.3f} over {len(factors)} runs")
    else:
        text += "; every run replayed at that pace (--no-host-pace)"
    return text + ".\n"


def disk_table(report: dict) -> str:
    """The capped disk's side (campaign G on): per run, the write IOs the replica's threads
    submitted per transaction and per binlog group commit (the transactions a group made
    durable together), and in the drain the IOs a second against the cap."""
    rows = [r for r in report["rows"] if r["measured"].get("disk_ios")]
    if not rows:
        return ""
    lines = ["", "| run | writes/txn | group commit size | writes/group commit | "
                 "drain: writes/s | drain: writes/txn | drain: reads/s |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r["measured"]
        ios, groups, commits = m["disk_ios"], m.get("group_commits"), m.get("commits")
        per_txn = ios["Write"] / commits if commits else None
        size = commits / groups if groups else None
        per_group = ios["Write"] / groups if groups else None
        d = m.get("disk_in_drain") or {}
        f = lambda v, p=2: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
        lines.append(f"| {r['run']} | {f(per_txn)} | {f(size)} | {f(per_group)} | "
                     f"{f(d.get('writes_per_s'), 0)} | {f(d.get('writes_per_txn'))} | "
                     f"{f(d.get('reads_per_s'), 0)} |")
    return "\n".join(lines) + "\n"


def apply_rates(report: dict) -> str:
    """Where the model goes wrong: each drain's measured apply rate (and the replica's CPU per
    transaction, where sampled: the process's, and where the rig read them the applier
    threads' and the IO thread's, how busy the appliers kept their core and how often they
    went off it to wait) beside the model's apply rate of the run's binlog as a closed backlog
    and the straight line's one rate."""
    rows = [r for r in report["rows"] if r["stop_s"] and r["measured"]["apply_rate_in_drain"]]
    if not rows:
        return ""
    threads = any(r["measured"].get("threads_in_drain") for r in rows)
    extra = (" applier threads' CPU µs/txn | IO thread's CPU µs/txn | appliers' core busy | "
             "voluntary switches/txn |" if threads else "")
    lines = ["", "| run | apply rate in the drain, measured (txn/s) | replica process CPU per "
                 "txn measured (µs) |" + extra + " model's apply rate (closed backlog) | "
                 "straight line's |",
             "|---|---|---|" + ("---|---|---|---|" if threads else "") + "---|---|"]
    for r in rows:
        m = r["measured"]
        meas, model = m["apply_rate_in_drain"], r["model"].get("apply_rate")
        cpu = m.get("cpu_us_per_txn_in_drain")
        cells = ""
        if threads:
            th = m.get("threads_in_drain")
            cells = (" - | - | - | - |" if not th else
                     f" {th['applier_cpu_us_per_txn']:.0f} | {th['io_cpu_us_per_txn']:.0f} | "
                     f"{100 * th['appliers_busy']:.0f}% | {th['applier_switches_per_txn']:.1f} |")
        lines.append(f"| {r['run']} | {meas:.0f} | {'-' if cpu is None else f'{cpu:.0f}'} |"
                     + cells + " "
                     + ("-" if model is None else f"{model:.0f}{_fmt_e(model, meas)}")
                     + f" | {report['line_apply_rate']:.0f}"
                     f"{_fmt_e(report['line_apply_rate'], meas)} |")
    windows = report.get("windows") or []
    if len(windows) > 1:
        per = "; ".join(f"{w['window']}: CPU scale {w['cpu_scale']:.3f} (measured "
                        f"{w['cpu_measured_us'] or 0:.0f} µs a transaction), flush scale "
                        f"{w['flush_scale']:.3f}, the redo log's write {w['log_write_us']:.1f} µs"
                        for w in windows)
        fit = [f"The fit (several windows, each fitted on its own, the profile each term's "
               f"median, base {report['base']}): {per}. The straight line's apply rate is the "
               f"calibrating runs' median drain rate, {report['line_apply_rate']:.0f}/s."]
        fit += [f"Filled in: {b}." for b in report.get("backfilled") or []]
        return "\n".join(lines) + "\n\n" + " ".join(fit) + "\n"
    fit = [f"The fit (calibrating run {report['calibrating_run']}, base {report['base']}): CPU "
           f"scale {report['cpu_scale']:.3f}"
           + (f" (measured CPU {report['cpu_measured_us_per_txn']:.0f} µs a transaction, "
              f"{report.get('cpu_source')})" if report.get("cpu_measured_us_per_txn") else "")
           + f", flush scale {report['flush_scale']:.3f} (the fsync probe's "
           f"{report.get('prior_flush_scale', 0):.3f}), the redo log's unbuffered write "
           f"{report.get('log_write_us', 0):.1f} µs."]
    fit += [f"Filled in: {b}." for b in report.get("backfilled") or []]
    return "\n".join(lines) + "\n\n" + " ".join(fit) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--runs", required=True,
                   help="comma-separated DURABILITY-MODE-THREADS@RATExSECONDS[+stopAT:SPAN][/cN]")
    m.add_argument("--port", type=int, default=3511)
    m.add_argument("--workdir", default=None)
    m.add_argument("--keep", action="store_true")
    m.add_argument("--append", action="store_true",
                   help="a later piece of a campaign: its setup goes to setup-N.json beside "
                        "the first piece's")
    m.add_argument("--cpu-percent", type=int, default=None,
                   help="limit the replica to this share of one core (a slower machine)")
    m.add_argument("--replica-binlog", action="store_true",
                   help="log_slave_updates=ON: the replica writes what it applies to its own "
                        "binlog (a durable replica then syncs it at every group commit)")
    m.add_argument("--primary-durability", choices=("durable", "relaxed"), default="durable",
                   help="the primary's sync_binlog / innodb_flush_log_at_trx_commit (relaxed: "
                        "the source writes faster)")
    m.add_argument("--lean-perf-schema", action="store_true",
                   help="the replica's performance_schema instruments off but its threads' (no "
                        "per-worker counts for calibrate)")
    m.add_argument("--replica-write-iops", type=int, default=None, metavar="N",
                   help="cap the replica's writes to its disk at N IOs a second (a cloud "
                        "volume: cgroup v1 blkio throttle, root only; reads uncapped; "
                        "calibrate's disk probes run inside the cap too)")
    m.add_argument("--pin", choices=("on", "off", "auto"), default="on",
                   help="on (default): the primary and sysbench on CPU 0, the replica on CPU 1; "
                        "off: nothing pinned; auto: on where the kernel enforces an affinity "
                        "(two spinning processes on one CPU get one CPU between them), off "
                        "where it does not (gVisor); setup.json says which")
    m.add_argument("--deadline-s", type=float, default=None, metavar="S",
                   help="start no run that would end more than S seconds after this command "
                        "began (its --time plus %.0f s for its readings, catch-up and "
                        "import); the runs left out are named in skipped.json (a lent "
                        "machine's call has a hard limit)" % RUN_ALLOWANCE_S)
    m.set_defaults(func=cmd_measure)
    r = sub.add_parser("report")
    r.add_argument("--out", required=True)
    r.add_argument("--base", default=None,
                   help="the base profile (default: calibrate's, the nearest core count)")
    r.add_argument("--doc", help="also put the table in this doc, between its lag-check markers")
    r.add_argument("--doc-marker", default="lag-check",
                   help="the doc's markers' name (<!-- NAME:begin --> ... <!-- NAME:end -->)")
    r.add_argument("--to", default=None, metavar="DIR",
                   help="write report.md, results.json and profile.json here (default: --out)")
    r.add_argument("--log-file-buffered", choices=("on", "off"), default=None,
                   help="a window recorded before calibrate read innodb_log_file_buffering: "
                        "what the replica had")
    r.add_argument("--log-write-ms", type=float, default=None,
                   help="a window recorded before calibrate probed the redo log's O_DIRECT "
                        "write: its latency (ms)")
    r.add_argument("--io-cpu", default=None, metavar="FILE",
                   help="a window recorded before calibrate probed the CPU of the commit's "
                        "writes and syncs: a probe's output ({\"io_cpu\": ...}) taken later")
    r.add_argument("--jobs", type=int, default=2, metavar="N",
                   help="predictions in N processes (default 2); the results do not depend "
                        "on it")
    r.add_argument("--no-host-pace", action="store_true",
                   help="predict every run at the calibration's host pace (an ablation): "
                        "without it, a run whose rig read the host's pace before it (campaign "
                        "P on) is predicted at that pace, as `lag --host-now` would")
    r.add_argument("--calibrate-on", default=None, metavar="RUN,RUN",
                   help="fit on these runs (each fitted on its own, the profile the median) "
                        "instead of the +cal runs; a run without calibrate's window is read "
                        "from the rig's samples with the first's disk probes (a retro-check)")
    r.add_argument("--material-lag", type=float, default=0.5,
                   help="max lags below this (s) are within the sampling's resolution: shown, "
                        "not counted in the median error")
    r.set_defaults(func=cmd_report)
    s = sub.add_parser("rescore", help="each stored campaign's summary from its results.json "
                       "as scored now (nothing replayed or refitted), beside the one stored")
    s.add_argument("campaigns", nargs="+", metavar="DIR",
                   help="a `report` folder with results.json")
    s.add_argument("--material-lag", type=float, default=0.5,
                   help="as report's (the stored reports used 0.5)")
    s.set_defaults(func=cmd_rescore)
    a = p.parse_args(argv)
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())
