#!/usr/bin/env python3
"""Measure the sustained throughput of a 3-node MariaDB Galera cluster on this machine
(docs/certification.md, "The real check").

    /work/bin/measure python traces/record/galera_measure.py run --out traces/calibration/galera \
        --configs t1-fc16-durable,t2-fc16-durable        # a piece of the campaign
    python traces/record/galera_measure.py fsync --out traces/calibration/galera  # the disk probe

A configuration is `t<wsrep_slave_threads>-fc<gcs.fc_limit>-<durable|relaxed>`, optionally with
`-ff<gcs.fc_factor>` (default 1.0) and `-tab<sysbench tables>` (default 4) after it. For each one a
fresh cluster is started (traces/record/galera_cluster.py: node 0 bootstraps, nodes 1 and 2 join
by rsync SST; every node with log_bin and log_slave_updates), sysbench prepares oltp_write_only
(4 tables x 10,000 rows, or -tab<N>) on node 0, and a single writer (sysbench, 32 client threads, node 0
only) is driven:
  1. warm-up, 15 s unthrottled;
  2. probe, 20 s unthrottled (`--rate=0`): the writer's own tps (`tps_unthrottled`);
  3. a bisection on the offered rate R (`sysbench --rate=R`, 30 s a step, 6 steps, between 0
     and 1.2 x tps_unthrottled): R is *kept up* when the writer achieved at least 97% of R and,
     at the end of the step, no node's receive queue (`wsrep_local_recv_queue`) holds more than
     max(30, 2% of the step's offered transactions). The sustained throughput is the highest
     rate kept up. Between steps the cluster drains (every node's `wsrep_last_committed` equal).
Every step records the writer's achieved tps and latency, and per node the deltas of
`wsrep_flow_control_paused`, `wsrep_local_recv_queue_avg`, `wsrep_local_cert_failures`,
`wsrep_cert_deps_distance`, `wsrep_flow_control_sent/recv`, `wsrep_apply_window`,
`wsrep_commit_window`, `wsrep_evs_repl_latency` (after FLUSH LOCAL STATUS: without LOCAL,
Galera would replicate it), and the CPU time (utime + stime from /proc) of each node and of sysbench. One JSON line per step in `steps.jsonl`, one per
configuration in `configs.jsonl`; `meta.json` says when, on what, with which versions.

Durable: sync_binlog=1, innodb_flush_log_at_trx_commit=1; relaxed: 0 and 2. The machine's cores
are shared by the three nodes and sysbench: nothing is pinned (docs/certification.md models the
cores as one pool shared by all of them).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from galera_cluster import BASE_PORT, ClusterError, GaleraCluster  # noqa: E402

TABLES, TABLE_SIZE, CLIENTS = 4, 10000, 32
WARMUP_S, PROBE_S, STEP_S, BISECT_STEPS = 15, 20, 30, 6
STATUS = ("wsrep_flow_control_paused", "wsrep_local_recv_queue_avg", "wsrep_local_recv_queue_max",
          "wsrep_local_cert_failures", "wsrep_cert_deps_distance", "wsrep_flow_control_sent",
          "wsrep_flow_control_recv", "wsrep_apply_window", "wsrep_commit_window",
          "wsrep_evs_repl_latency", "wsrep_local_recv_queue", "wsrep_last_committed",
          "wsrep_replicated", "wsrep_received", "wsrep_local_send_queue_avg",
          "binlog_commits", "binlog_group_commits")
ALL_CONFIGS = [f"t{t}-fc{fc}-{d}" for d in ("durable", "relaxed") for fc in (16, 10000)
               for t in (1, 2, 4)]
# CPU ticks per second of /proc/<pid>/stat
CLK_TCK = os.sysconf("SC_CLK_TCK")


def parse_config(name: str) -> dict:
    """`t<threads>-fc<limit>-<durable|relaxed>`, optionally followed by `-ff<gcs.fc_factor>`
    (default 1.0) and `-tab<tables>` (sysbench tables, default 4), in that order."""
    try:
        parts = name.split("-")
        t, fc, dur, extra = parts[0], parts[1], parts[2], parts[3:]
        assert t[0] == "t" and fc[:2] == "fc" and dur in ("durable", "relaxed")
        factor, tables = 1.0, TABLES
        if extra and extra[0].startswith("ff"):
            factor = float(extra.pop(0)[2:])
            assert 0 < factor <= 1
        if extra and extra[0].startswith("tab"):
            tables = int(extra.pop(0)[3:])
            assert tables >= 1
        assert not extra
        return {"name": name, "slave_threads": int(t[1:]), "fc_limit": int(fc[2:]),
                "durability": dur, "fc_factor": factor, "tables": tables}
    except (ValueError, AssertionError, IndexError):
        raise SystemExit(f"galera_measure: bad configuration {name!r}: give t<threads>-fc<limit>-"
                         f"<durable|relaxed>[-ff<fc_factor>][-tab<tables>], e.g. t2-fc16-durable "
                         f"or t2-fc16-durable-ff0.5-tab1") from None


def settings_of(cfg: dict) -> dict:
    durable = cfg["durability"] == "durable"
    return {"log_bin": "mysql-bin", "log_slave_updates": "ON",
            "sync_binlog": 1 if durable else 0,
            "innodb_flush_log_at_trx_commit": 1 if durable else 2,
            "wsrep_slave_threads": cfg["slave_threads"], "max_connections": 200}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its threads, in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return float("nan")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Campaign:
    def __init__(self, cluster: GaleraCluster, tables: int = TABLES):
        self.c = cluster
        n0 = cluster.nodes[0]
        self.sb = ["sysbench", "oltp_write_only", "--db-driver=mysql",
                   f"--mysql-socket={n0.sock}", "--mysql-user=root", f"--tables={tables}",
                   f"--table-size={TABLE_SIZE}", "--mysql-db=sbtest", "--mysql-ignore-errors=all"]

    def prepare(self) -> None:
        self.c.sql(0, "CREATE DATABASE sbtest")
        r = subprocess.run(self.sb + ["prepare"], capture_output=True, text=True)
        if r.returncode != 0:
            raise ClusterError("sysbench prepare failed:\n" + r.stdout[-800:] + r.stderr[-800:])
        self.drain()

    def drain(self, timeout: float = 120) -> float:
        """Wait until every node committed what node 0 did; the seconds it took."""
        t0 = time.time()
        target = int(self.c.nodes[0].status_value("wsrep_last_committed"))
        while time.time() - t0 < timeout:
            done = all(int(n.status_value("wsrep_last_committed")) >= target
                       for n in self.c.nodes)
            if done:
                return time.time() - t0
            time.sleep(0.2)
        raise ClusterError(f"the cluster did not drain within {timeout:.0f} s")

    def step(self, seconds: int, rate: float) -> dict:
        """One sysbench run at `rate` (0: unthrottled) with the status and CPU around it."""
        for n in self.c.nodes:
            n.sql("FLUSH LOCAL STATUS")
        before = [n.status() for n in self.c.nodes]
        cpu0 = [cpu_seconds(n.pid) for n in self.c.nodes]
        t0 = time.time()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen(self.sb + [f"--threads={CLIENTS}", f"--time={seconds}",
                                           f"--rate={int(round(rate))}", "--percentile=95", "run"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate()
        wall = time.time() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)   # sysbench's CPU (waited child)
        cpu1 = [cpu_seconds(n.pid) for n in self.c.nodes]
        after = [n.status() for n in self.c.nodes]
        if proc.returncode != 0:
            raise ClusterError("sysbench run failed:\n" + out[-800:] + err[-800:])
        res = parse_sysbench(out)
        res.update(rate=rate, seconds=seconds, wall=round(wall, 3),
                   node_cpu=[round(b - a, 3) for a, b in zip(cpu0, cpu1)],
                   client_cpu=round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 3),
                   nodes=[{k: a.get(k) for k in STATUS} for a in after],
                   replicated_delta=int(after[0]["wsrep_replicated"]) - int(before[0]["wsrep_replicated"]),
                   queue_end=[int(a["wsrep_local_recv_queue"]) for a in after])
        res["drain_s"] = round(self.drain(), 3)
        return res


def parse_sysbench(out: str) -> dict:
    import re
    res = {}
    m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
    res["transactions"], res["tps"] = (int(m.group(1)), float(m.group(2))) if m else (0, 0.0)
    m = re.search(r"ignored errors:\s+(\d+)", out)
    res["errors"] = int(m.group(1)) if m else 0
    m = re.search(r"avg:\s+([\d.]+)", out)
    res["lat_avg_ms"] = float(m.group(1)) if m else None
    m = re.search(r"95th percentile:\s+([\d.]+)", out)
    res["lat_p95_ms"] = float(m.group(1)) if m else None
    m = re.search(r"total time:\s+([\d.]+)s", out)
    res["total_time"] = float(m.group(1)) if m else None
    return res


def kept_up(step: dict) -> bool:
    offered = step["rate"] * step["seconds"]
    return (step["tps"] >= 0.97 * step["rate"]
            and max(step["queue_end"]) <= max(30, 0.02 * offered))


def run_config(cfg: dict, out_dir: str, workdir: str, record_binlog: bool,
               base_port: int = BASE_PORT) -> tuple[dict, list]:
    log(f"{cfg['name']}: starting the cluster")
    t_start = time.time()
    cluster = GaleraCluster(workdir, 3, settings=settings_of(cfg),
                            provider_options={"gcs.fc_limit": cfg["fc_limit"],
                                              "gcs.fc_factor": str(cfg["fc_factor"])},
                            base_port=base_port)
    with cluster:
        camp = Campaign(cluster, cfg["tables"])
        camp.prepare()
        log(f"{cfg['name']}: warm-up {WARMUP_S} s")
        camp.step(WARMUP_S, 0)
        cluster.sql(1, "FLUSH LOCAL BINARY LOGS")
        first_binlog = cluster.sql(1, "SHOW MASTER STATUS")[0][0]
        log(f"{cfg['name']}: probe {PROBE_S} s unthrottled")
        probe = camp.step(PROBE_S, 0)
        cluster.sql(1, "FLUSH LOCAL BINARY LOGS")
        steps = [dict(probe, kind="probe")]
        lo, hi = 0.0, 1.2 * probe["tps"]
        best = None
        for k in range(BISECT_STEPS):
            rate = (lo + hi) / 2
            s = camp.step(STEP_S, rate)
            s["kind"], s["kept_up"] = "bisect", kept_up(s)
            steps.append(s)
            log(f"{cfg['name']}: rate {rate:.0f}: {s['tps']:.0f} tps, queues {s['queue_end']}, "
                f"{'kept up' if s['kept_up'] else 'NOT kept up'}")
            if s["kept_up"]:
                lo, best = rate, s
            else:
                hi = rate
        if record_binlog:
            save_binlog(cluster, first_binlog, out_dir, cfg)
    row = {**cfg, "sustained": lo, "sustained_hi": hi, "tps_unthrottled": probe["tps"],
           "best_step": best, "seconds": round(time.time() - t_start, 1)}
    for s in steps:
        s["config"] = cfg["name"]
    return row, steps


def save_binlog(cluster: GaleraCluster, first: str, out_dir: str, cfg: dict) -> None:
    """Node 1's binlog file of the probe run (log_slave_updates: every write-set of the cluster
    in its total order), kept as a trace: imported by commitsched."""
    node = cluster.nodes[1]
    src = os.path.join(node.datadir, first)
    dest = os.path.join(out_dir, f"probe_{cfg['name']}.binlog")
    subprocess.run(["cp", src, dest], check=True)
    schema = subprocess.run([cluster.tools["dump"], "--no-defaults", f"--socket={node.sock}",
                             "-uroot", "--no-data", "--databases", "sbtest"], capture_output=True, text=True,
                            check=True).stdout
    with open(os.path.join(out_dir, "sbtest.schema.sql"), "w") as f:
        f.write(schema)


def machine() -> dict:
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""
    cpu = [ln.split(":", 1)[1].strip() for ln in read("/proc/cpuinfo").splitlines()
           if ln.startswith("model name")]
    mem = read("/proc/meminfo").splitlines()[0] if read("/proc/meminfo") else ""
    versions = {}
    for tool, args in (("mariadbd", ["--version"]), ("sysbench", ["--version"])):
        try:
            exe = tool if tool != "mariadbd" else "/usr/sbin/mariadbd"
            versions[tool] = subprocess.run([exe, *args], capture_output=True, text=True).stdout.strip()
        except OSError:
            versions[tool] = None
    try:
        galera = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "galera-4"],
                                capture_output=True, text=True).stdout
    except OSError:
        galera = None
    versions["galera-4"] = galera
    return {"cores": os.cpu_count(), "cpu": cpu[0] if cpu else None, "memory": mem,
            "kernel": platform.release(), "versions": versions,
            "loadavg_start": read("/proc/loadavg").strip()}


def cmd_run(a) -> int:
    global WARMUP_S, PROBE_S, STEP_S, BISECT_STEPS
    if a.quick:
        WARMUP_S, PROBE_S, STEP_S, BISECT_STEPS = 2, 4, 4, 2
    cfgs = [parse_config(c) for c in a.configs.split(",")]
    os.makedirs(a.out, exist_ok=True)
    meta_path = os.path.join(a.out, "meta.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {"pieces": []}
    piece = {"started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
             "configs": [c["name"] for c in cfgs], "machine": machine(),
             "base_port": a.base_port,
             "workload": {"sysbench": "oltp_write_only",
                          "tables": sorted({c["tables"] for c in cfgs}),
                          "table_size": TABLE_SIZE, "clients": CLIENTS, "writer": "node0",
                          "warmup_s": WARMUP_S, "probe_s": PROBE_S, "step_s": STEP_S,
                          "bisect_steps": BISECT_STEPS}}
    for cfg in cfgs:
        row, steps = run_config(cfg, a.out, a.workdir, a.record_binlog, a.base_port)
        with open(os.path.join(a.out, "steps.jsonl"), "a") as f:
            for s in steps:
                f.write(json.dumps(s) + "\n")
        with open(os.path.join(a.out, "configs.jsonl"), "a") as f:
            f.write(json.dumps({k: v for k, v in row.items() if k != "best_step"}) + "\n")
        log(f"{cfg['name']}: sustained {row['sustained']:.0f} tps (next rate tried "
            f"{row['sustained_hi']:.0f}), unthrottled writer {row['tps_unthrottled']:.0f} tps")
    piece["finished_utc"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    piece["loadavg_end"] = open("/proc/loadavg").read().strip()
    meta["pieces"].append(piece)
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    return 0


def cmd_fsync(a) -> int:
    """The disk's fsync latency where the datadirs live: 4 KiB appended and fsync'ed, 2,000
    times, one writer, and the CPU it costs the writer (the cluster profile's `fsync` and
    `fsync_cpu` terms, measured, not fitted)."""
    os.makedirs(a.workdir, exist_ok=True)
    path = os.path.join(a.workdir, "fsync_probe")
    times = []
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    with open(path, "wb") as f:
        block = os.urandom(4096)
        for _ in range(2000):
            t = time.perf_counter()
            f.write(block)
            f.flush()
            os.fsync(f.fileno())
            times.append(time.perf_counter() - t)
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    os.unlink(path)
    cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    times.sort()
    res = {"measured_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
           "n": len(times), "median_us": round(times[len(times) // 2] * 1e6, 1),
           "mean_us": round(sum(times) / len(times) * 1e6, 1),
           "p90_us": round(times[int(len(times) * 0.9)] * 1e6, 1),
           "cpu_us": round(cpu / len(times) * 1e6, 1)}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "fsync.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="measure configurations (a piece of the campaign)")
    r.add_argument("--configs", default=",".join(ALL_CONFIGS),
                   help="comma-separated t<threads>-fc<limit>-<durable|relaxed>")
    r.add_argument("--out", default="traces/calibration/galera")
    r.add_argument("--workdir", default="build/galera-measure")
    r.add_argument("--base-port", type=int, default=BASE_PORT,
                   help=f"the cluster's port block: node i uses BASE + 10 i .. + 3 (default "
                        f"{BASE_PORT})")
    r.add_argument("--quick", action="store_true",
                   help="seconds instead of minutes: checks the script, measures nothing")
    r.add_argument("--record-binlog", action="store_true",
                   help="keep node 1's binlog of the probe run (and the schema) in --out")
    f = sub.add_parser("fsync", help="the disk's fsync latency (one writer)")
    f.add_argument("--out", default="traces/calibration/galera")
    f.add_argument("--workdir", default="build/galera-measure")
    a = p.parse_args(argv)
    try:
        return {"run": cmd_run, "fsync": cmd_fsync}[a.cmd](a)
    except ClusterError as e:
        print(f"galera_measure: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
