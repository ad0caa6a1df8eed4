#!/usr/bin/env python3
"""Calibrate the simulator against a real MariaDB parallel replica (docs/calibration.md).

    python traces/record/calibrate.py measure --out traces/calibration/NAME [workload options]
    python traces/record/calibrate.py fit     --out traces/calibration/NAME [--profiles FILE]
    python traces/record/calibrate.py report  --out traces/calibration/NAME [--doc FILE]

`measure`: a private primary and replica on 127.0.0.1 (own datadirs, sockets, ports). The replica
replicates the sysbench `prepare`, is stopped and copied cold (the snapshot: the exact state
before the workload). The primary then runs the workload between two `FLUSH BINARY LOGS`; those
binlog files are imported into the trace the model replays. For every run the replica is restored
from the snapshot, started with the run's settings, fetches the whole workload into its relay log
(IO thread only), then the SQL thread is started with `UNTIL MASTER_LOG_FILE=<next file>,
MASTER_LOG_POS=4` and the apply is timed on the server (`NOW(6)` around `MASTER_POS_WAIT`).
Configurations run interleaved, shuffled per round; /proc/stat is read around each apply and a
run with heavy CPU steal, or with less than 3/4 of the host's cores free right before it (a
busy process per CPU measures that), is repeated. Each run's row (timing, server counters,
host load, table checksums against the primary) is appended to `runs.csv` as soon as it ends.
`fit`: the cost profiles from the serial runs and the counters (calib_fit.py).
`report`: predicted against measured speedups, a table and an SVG (calib_report.py).
"""
from __future__ import annotations

import argparse
import atexit
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from record import _import_importers, sysbench_cmd  # noqa: E402
from calib_fit import disturbed  # noqa: E402
from calib_server import (CalibServer, ThreadSampler, cpu_shares, find_tools, wakeup_probe,  # noqa: E402
                          cpu_probe, free_port, fsync_pattern_probe, fsync_probe, loadavg,
                          proc_stat, process_cpu)

SYNC_SETTINGS = {  # the replica's durability settings
    "durable": {"sync_binlog": "1", "innodb_flush_log_at_trx_commit": "1"},
    "relaxed": {"sync_binlog": "0", "innodb_flush_log_at_trx_commit": "2"},
    # fit only (serial runs): one of the two syncs each, to split the durable cost into the
    # binlog's group sync and InnoDB's prepare-time redo sync
    "binlog_sync": {"sync_binlog": "1", "innodb_flush_log_at_trx_commit": "2"},
    "redo_sync": {"sync_binlog": "0", "innodb_flush_log_at_trx_commit": "1"},
    # fit only (serial): relaxed without writing the replica's own binlog (log_slave_updates
    # OFF): the part of the execution the binlog write is, which a parallel replica's group
    # commit leader does for every member one after the other
    "no_binlog": {"sync_binlog": "0", "innodb_flush_log_at_trx_commit": "2",
                  "log_slave_updates": "OFF"},
    # measurement only (traces/calibration/redo_write_cpu): no redo write at commit at all (InnoDB
    # writes the log about once a second), to weigh what a relaxed commit's writes cost the
    # appliers; no profile predicts it
    "lazy": {"sync_binlog": "0", "innodb_flush_log_at_trx_commit": "0"},
}
COUNTERS = ("slave_retried_transactions", "binlog_commits", "binlog_group_commits",
            "binlog_group_commit_trigger_count", "binlog_group_commit_trigger_timeout",
            "binlog_group_commit_trigger_lock_wait", "innodb_os_log_fsyncs", "innodb_data_fsyncs",
            "com_commit", "handler_commit", "handler_update", "handler_write", "handler_delete")
RUN_FIELDS = ("round", "order", "purpose", "sync", "mode", "threads", "apply_s", "steal",
              "iowait", "host_busy", "load_before", "load_after", "replica_cpu_s",
              "new_thread_cpu_s", "repeated", "checksum_ok", "started_utc", "cpu_avail",
              "fsync_ms", "new_thread_run_delay_s", "new_thread_waits") + tuple(
                  "d_" + c for c in COUNTERS)
BASE_SETTINGS = {"binlog_format": "ROW", "binlog_row_image": "FULL",
                 "binlog_row_metadata": "FULL", "innodb_buffer_pool_size": "268435456",
                 "innodb_log_file_size": "50331648", "max_connections": "300"}


def log(msg: str) -> None:
    print(f"calibrate: {msg}", file=sys.stderr, flush=True)


def configs(threads: list[int], modes: list[str], syncs: list[str]) -> list[tuple]:
    """(sync, mode, threads); the serial apply (threads 0) has no mode."""
    out = []
    for s in syncs:
        for t in threads:
            for m in (["-"] if t == 0 else modes):
                out.append((s, m, t))
    return out


def replica_settings(workdir: str, sync: str, mode: str, threads: int) -> dict:
    d = os.path.join(workdir, "data")
    s = dict(BASE_SETTINGS, server_id="2", log_bin=os.path.join(d, "binlog"),
             log_slave_updates="ON", relay_log=os.path.join(d, "relay"),
             skip_slave_start="ON", slave_parallel_threads=str(threads))
    s.update(SYNC_SETTINGS[sync])
    if threads:
        s["slave_parallel_mode"] = mode
    return s


class Rig:
    """The primary (running throughout) and the replica (restarted for every run)."""

    def __init__(self, a, tools, root: str):
        self.a, self.tools, self.root = a, tools, root
        p_port = free_port(a.port)
        self.primary = CalibServer(tools, os.path.join(root, "primary"), p_port, "primary")
        # the replica needs a second free port: the next one (keeps a run inside the port
        # range it was given), else one of record.free_port's fallback range
        r_port = free_port(p_port + 1)
        if r_port == p_port:
            r_port = free_port(33399)
        self.replica = CalibServer(tools, os.path.join(root, "replica"), r_port, "replica")
        self.snapshot = os.path.join(root, "replica-snapshot")

    def setup(self) -> dict:
        a, P, R = self.a, self.primary, self.replica
        os.makedirs(P.workdir), os.makedirs(R.workdir)
        P.install()
        p_set = dict(BASE_SETTINGS, server_id="1",
                     log_bin=os.path.join(P.datadir, "binlog"), **SYNC_SETTINGS["durable"])
        # extra primary settings a caller gives (split_check.py: group commit by count)
        p_set.update(getattr(a, "primary_settings", None) or {})
        log(f"primary on 127.0.0.1:{P.port}, replica on 127.0.0.1:{R.port}, under {self.root}")
        P.start(p_set)
        self.version = P.sql("SELECT VERSION()")[0][0]
        P.sql("CREATE DATABASE sbtest; CREATE USER 'sbtest'@'127.0.0.1' IDENTIFIED BY 'sbtest';"
              "GRANT ALL ON sbtest.* TO 'sbtest'@'127.0.0.1';"
              "CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';"
              "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'")
        log("sysbench prepare")
        prep = subprocess.run(sysbench_cmd(self.tools, a, P.port, "prepare"),
                              capture_output=True, text=True)
        if prep.returncode != 0:
            raise SystemExit("calibrate: sysbench prepare failed\n" + prep.stdout + prep.stderr)
        self.schema = os.path.join(self.root, "schema.sql")
        with open(self.schema, "w") as f:
            subprocess.run([self.tools["dump"], "--no-defaults", f"--socket={P.sock}", "-uroot",
                            "--no-data", "--databases", "sbtest"], stdout=f, check=True)
        # the replica: replicate everything up to here, from the primary's first binlog
        R.install()
        R.start(replica_settings(R.workdir, "durable", "-", 0))
        first = P.sql("SHOW BINARY LOGS")[0][0]
        R.sql(f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={P.port}, "
              f"MASTER_USER='repl', MASTER_PASSWORD='repl', MASTER_LOG_FILE='{first}', "
              f"MASTER_LOG_POS=4, MASTER_USE_GTID=no; START SLAVE")
        file, pos = P.sql("SHOW MASTER STATUS")[0][:2]
        r = R.sql(f"SELECT MASTER_POS_WAIT('{file}', {pos}, 600)")[0][0]
        if r in ("NULL", "-1"):
            raise SystemExit("calibrate: replica did not catch up with the prepare:\n"
                             + json.dumps(R.slave_status(), indent=1))
        R.sql("STOP SLAVE")
        R.stop()
        R.snapshot(self.snapshot)
        log("replica snapshot taken (state before the workload)")
        # the workload, between two rotations
        P.sql("FLUSH BINARY LOGS")
        wl_first = P.sql("SHOW MASTER STATUS")[0][0]
        names = ("binlog_commits", "binlog_group_commits")
        before = {k: int(P.status()[k]) for k in names}
        cmd = sysbench_cmd(self.tools, a, P.port, "run")
        log("sysbench run: sysbench " + " ".join(cmd[1:]))
        t0 = time.time()
        run = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - t0
        if run.returncode != 0:
            raise SystemExit("calibrate: sysbench run failed\n" + run.stdout + run.stderr)
        st = P.status()
        delta = {k: int(st[k]) - before[k] for k in names}
        P.sql("FLUSH BINARY LOGS")
        self.until_file, until_end = P.sql("SHOW MASTER STATUS")[0][:2]
        self.until_end = int(until_end)
        files = [n for n, *_ in P.sql("SHOW BINARY LOGS") if wl_first <= n < self.until_file]
        self.checksum = self.checksums(P)
        return {"server": "MariaDB", "version": self.version,
                "primary_settings": {k: v for k, v in p_set.items() if k != "log_bin"},
                "sysbench_command": "sysbench " + " ".join(
                    x for x in cmd[1:] if not x.startswith(("--mysql-password", "--mysql-port"))),
                "workload_wall_s": round(wall, 2), "binlog_files": files,
                "until": [self.until_file, 4],
                "primary_binlog_commits": delta["binlog_commits"],
                "primary_binlog_group_commits": delta["binlog_group_commits"],
                "paths": [os.path.join(P.datadir, n) for n in files]}

    def checksums(self, server) -> str:
        tables = ",".join(f"sbtest.sbtest{i}" for i in range(1, self.a.tables + 1))
        return ";".join(r[1] for r in server.sql(f"CHECKSUM TABLE {tables}"))

    def run(self, sync: str, mode: str, threads: int, until: bool = True) -> dict:
        """Restore, fetch the workload into the relay log, time the SQL thread's apply."""
        R = self.replica
        R.restore(self.snapshot)
        # extra replica settings a caller gives (split_check.py: tmpdir on tmpfs)
        R.start(dict(replica_settings(R.workdir, sync, mode, threads),
                     **(getattr(self.a, "replica_settings", None) or {})))
        deadline = time.time() + 120
        while "complet" not in R.sql("SHOW STATUS LIKE 'Innodb_buffer_pool_load_status'")[0][1]:
            if time.time() > deadline:
                break
            time.sleep(0.2)
        R.sql("START SLAVE IO_THREAD")
        deadline = time.time() + 600
        while True:
            ss = R.slave_status()
            if (ss.get("Master_Log_File") == self.until_file
                    and int(ss.get("Read_Master_Log_Pos", 0)) >= self.until_end):
                break
            if time.time() > deadline or ss.get("Last_IO_Error"):
                raise SystemExit("calibrate: relay log fetch failed: "
                                 + ss.get("Last_IO_Error", ""))
            time.sleep(0.2)
        R.sql("STOP SLAVE IO_THREAD")
        # what the host offers right before the apply: cores (a busy process per CPU) and the
        # disk's sync latency, which changes by 10x within minutes on this shared VM
        cpu_avail = cpu_probe()
        fsync_ms = fsync_probe(R.workdir, n=30)["median_ms"]
        c0 = R.status()
        load0 = loadavg()
        utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        sampler = ThreadSampler(R.pid)
        cpu0, stat0 = process_cpu(R.pid), proc_stat()
        # without UNTIL (the driver-CPU fit run) the SQL thread stays alive after the apply,
        # so its threads' CPU can be read exactly; the timed runs stop at the next binlog file
        bound = (f" UNTIL MASTER_LOG_FILE='{self.until_file}', MASTER_LOG_POS=4" if until else "")
        out = R.sql(f"SET @t0 = NOW(6); START SLAVE SQL_THREAD{bound}; "
                    f"SELECT MASTER_POS_WAIT('{self.until_file}', 4, 3600); "
                    f"SELECT TIMESTAMPDIFF(MICROSECOND, @t0, NOW(6))", timeout=3700)
        stat1, cpu1 = proc_stat(), process_cpu(R.pid)
        used = sampler.stop()
        run_delay, waits = sampler.new_threads_sched()
        if not until:
            R.sql("STOP SLAVE SQL_THREAD")
        load1 = loadavg()
        apply_s = int(out[-1][0]) / 1e6
        c1 = R.status()
        ss = R.slave_status()
        if ss.get("Relay_Master_Log_File") != self.until_file or ss.get("Last_SQL_Error"):
            raise SystemExit(f"calibrate: apply incomplete ({sync} {mode} {threads}): "
                             f"{ss.get('Relay_Master_Log_File')}:{ss.get('Exec_Master_Log_Pos')} "
                             f"{ss.get('Last_SQL_Error')}")
        ok = self.checksums(R) == self.checksum
        R.stop()
        shares = cpu_shares(stat0, stat1)
        row = {"sync": sync, "mode": mode, "threads": threads, "apply_s": round(apply_s, 6),
               "steal": round(shares["steal"], 4), "iowait": round(shares["iowait"], 4),
               "host_busy": round(shares["busy"], 4), "load_before": load0, "load_after": load1,
               "replica_cpu_s": round(cpu1 - cpu0, 3),
               # threads started by START SLAVE SQL_THREAD (driver and workers; MariaDB names
               # no threads), busiest first: in the 1-thread fit run [worker, driver, ...]
               "new_thread_cpu_s": " ".join(f"{v:.3f}" for v in sampler.new_threads(used)[:8]),
               "checksum_ok": ok, "started_utc": utc, "cpu_avail": cpu_avail,
               "fsync_ms": fsync_ms,
               # the driver's and workers' time runnable without a core, and how often they
               # blocked (lock, condition, sync): CPU-bound or latency-bound
               "new_thread_run_delay_s": round(run_delay, 4), "new_thread_waits": waits}
        for c in COUNTERS:
            row["d_" + c] = int(c1.get(c, 0)) - int(c0.get(c, 0))
        return row


def _write_json(path: str, obj) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def _meta(a, info, stats, t_start, load_start, n_runs, complete: bool, probes=None) -> dict:
    probes = probes or {}
    return {
        "fsync_probe": {k: v for k, v in probes.items() if not k.startswith("wakeup")},
        # thread wake-up latency (µs, calib_server.wakeup_probe), at the start and at the end
        "wakeup_probe": {k[len("wakeup_"):]: v for k, v in probes.items()
                         if k.startswith("wakeup")},
        "measured_by": "traces/record/calibrate.py measure",
        "command": "python traces/record/calibrate.py " + " ".join(sys.argv[1:]),
        "complete": complete,
        "host": {"cpus": os.cpu_count(), "load_at_start": load_start, "load_now": loadavg(),
                 "kernel": os.uname().release},
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
        "total_s": round(time.time() - t_start, 1), "runs": n_runs, "rounds": a.rounds,
        "steal_max": a.steal_max, "cpu_min": a.cpu_min, "seed": a.seed,
        "replica_settings": {"common": {k: v for k, v in replica_settings(
            "/x", "durable", "conservative", 4).items()
            if k not in ("log_bin", "relay_log", "slave_parallel_threads", "slave_parallel_mode")
            and k not in SYNC_SETTINGS["durable"]}, **SYNC_SETTINGS},
        "workload": info,
        "trace": {"path": "trace.jsonl.gz", "transactions": stats.transactions,
                  "commit_groups": stats.groups},
    }


def cmd_measure(a) -> int:
    tools = find_tools()
    import_binlog = _import_importers()
    os.makedirs(a.out, exist_ok=True)
    root = a.workdir or tempfile.mkdtemp(prefix="commitsched-calib-")
    os.makedirs(root, exist_ok=True)
    os.chmod(root, 0o755)
    rig = Rig(a, tools, root)

    def cleanup(*_):
        rig.replica.stop()
        rig.primary.stop()
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    atexit.register(cleanup)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))

    t_start = time.time()
    load_start = loadavg()
    probes = {"start": fsync_probe(root), "start_patterns": fsync_pattern_probe(root),
              "wakeup_start": wakeup_probe(root)}
    info = rig.setup()
    paths = info.pop("paths")
    trace_path = os.path.join(a.out, "trace.jsonl.gz")
    source = {k: v for k, v in info.items()}
    source.update(recorded_by="traces/record/calibrate.py measure", workload=a.workload,
                  client_threads=a.threads,
                  time_unit="s (timestamp: binlog event time, 1 s resolution)")
    stats = import_binlog(paths, trace_path, schema=rig.schema, source=source,
                          binlog_tool=tools["binlog"])
    log(f"workload: {stats.transactions} transactions, {stats.groups} commit groups "
        f"(primary: {info['primary_binlog_commits']} commits, "
        f"{info['primary_binlog_group_commits']} group commits)")

    meta = _meta(a, info, stats, t_start, load_start, 0, complete=False, probes=probes)
    _write_json(os.path.join(a.out, "meta.json"), meta)   # rewritten at the end
    cfgs = configs(a.threads_list, a.modes, a.syncs)
    # fit-only runs, never predicted: one worker thread (the driver's CPU = dispatch cost) and
    # the serial apply with one sync at a time (splits the durable sync cost)
    fit_cfgs = ([("relaxed", "conservative", 1), ("binlog_sync", "-", 0), ("redo_sync", "-", 0),
                 ("no_binlog", "-", 0)]
                if a.fit_runs else [])
    runs_csv = os.path.join(a.out, "runs.csv")
    with open(runs_csv, "w", newline="") as f:
        csv.writer(f).writerow(RUN_FIELDS)
    rng = random.Random(a.seed)
    n_runs = 0

    def record(row):
        nonlocal n_runs
        n_runs += 1
        with open(runs_csv, "a", newline="") as f:
            csv.DictWriter(f, RUN_FIELDS).writerow(row)

    for rnd in range(1, a.rounds + 1):
        # the 1-thread runs only feed the fit (driver CPU); they are not predicted
        order = cfgs + fit_cfgs
        rng.shuffle(order)
        queue = [(c, 0) for c in order]
        i = 0
        while queue:
            (sync, mode, threads), tries = queue.pop(0)
            i += 1
            row = rig.run(sync, mode, threads, until=threads != 1)
            row.update(round=rnd, order=i, repeated=False,
                        purpose="fit" if (sync, mode, threads) in fit_cfgs else "predict")
            heavy = (row["steal"] > a.steal_max
                     or disturbed({"cpu_avail": row["cpu_avail"]}, os.cpu_count() or 1,
                                  a.cpu_min))
            if heavy and tries < a.max_repeats:
                row["repeated"] = True        # kept in the file, left out of the statistics
                queue.append(((sync, mode, threads), tries + 1))
            record(row)
            log(f"round {rnd} #{i}: {sync:7} {mode:12} threads {threads:2}: "
                f"{row['apply_s']:8.3f} s  steal {row['steal']:.3f} iowait {row['iowait']:.3f} "
                f"load {row['load_before']:.1f} groups {row['d_binlog_group_commits']} "
                f"retries {row['d_slave_retried_transactions']} checksum "
                f"{'ok' if row['checksum_ok'] else 'DIFFERENT'}"
                + (f"  (heavy steal or only {row['cpu_avail']} cores free: repeated)"
                   if row["repeated"] else ""))
    probes["end"] = fsync_probe(root)
    probes["end_patterns"] = fsync_pattern_probe(root)
    probes["wakeup_end"] = wakeup_probe(root)
    meta = _meta(a, info, stats, t_start, load_start, n_runs, complete=True, probes=probes)
    _write_json(os.path.join(a.out, "meta.json"), meta)
    log(f"{n_runs} runs in {meta['total_s']} s; results in {a.out}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="record a workload and time the replica's applies")
    m.add_argument("--out", required=True, help="results folder (runs.csv, meta.json, trace)")
    m.add_argument("--workload", default="oltp_read_write")
    m.add_argument("--threads", type=int, default=64, help="sysbench client threads")
    m.add_argument("--time", type=int, default=120)
    m.add_argument("--events", type=int, default=20000)
    m.add_argument("--tables", type=int, default=4)
    m.add_argument("--table-size", type=int, default=10000)
    m.add_argument("--seed", type=int, default=1, help="sysbench and shuffle seed")
    m.add_argument("--sysbench-arg", action="append", default=[])
    m.add_argument("--threads-list", type=lambda s: [int(x) for x in s.split(",")],
                   default=[0, 2, 4, 8, 16], help="slave_parallel_threads values")
    m.add_argument("--modes", type=lambda s: s.split(","), default=["conservative", "optimistic"])
    m.add_argument("--syncs", type=lambda s: s.split(","), default=["durable", "relaxed"])
    m.add_argument("--rounds", type=int, default=5)
    m.add_argument("--no-fit-runs", dest="fit_runs", action="store_false",
                   help="leave out the 1-thread runs that measure the driver's CPU")
    m.add_argument("--steal-max", type=float, default=0.10,
                   help="repeat a run whose CPU steal share exceeds this")
    m.add_argument("--cpu-min", type=float, default=0.75,
                   help="repeat a run when, right before it, a busy process per CPU got less "
                        "than this share of the host's CPUs (another tenant was busy); 0: never")
    m.add_argument("--max-repeats", type=int, default=2)
    m.add_argument("--port", type=int, default=33207)
    m.add_argument("--workdir")
    m.add_argument("--keep", action="store_true")
    for name in ("fit", "report"):
        q = sub.add_parser(name)
        q.add_argument("--out", required=True)
        if name == "fit":
            q.add_argument("--profiles", default=os.path.join(
                os.path.dirname(os.path.dirname(HERE)), "model", "profiles_fitted.json"),
                help="fitted profiles file to write (merged by name)")
        else:
            q.add_argument("--profiles",
                           help="fitted profiles file (default: the folder's fit.json)")
            q.add_argument("--doc", help="also write the Markdown table here")
    a = p.parse_args(argv)
    a.events = getattr(a, "events", 0)
    if a.cmd == "measure":
        for s in a.syncs:
            if s not in SYNC_SETTINGS:
                p.error(f"--syncs: unknown {s!r}")
        return cmd_measure(a)
    if a.cmd == "fit":
        from calib_fit import cmd_fit
        return cmd_fit(a)
    from calib_report import cmd_report
    return cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
