#!/usr/bin/env python3
"""A private MariaDB Galera cluster on 127.0.0.1: N nodes, each with its own datadir, socket,
client port, group-communication port (`gmcast.listen_addr`), IST port (`ist.recv_addr`) and SST
port, all inside one port block (default 4400-4599: node i uses BASE + 10 i .. BASE + 10 i + 3).

    with GaleraCluster(workdir, nodes=3, settings={...}) as cluster:   # bootstrap + joins (SST)
        cluster.sql(0, "CREATE DATABASE sbtest")
        ...
    # every node is shut down on every path: the context manager, atexit, SIGTERM/SIGINT

Node 0 bootstraps the group (`--wsrep-new-cluster`), the others join it and receive a state
snapshot transfer by rsync (`wsrep_sst_method=rsync`). Never touches the system service or its
configuration (`--no-defaults`). Used by traces/record/galera_measure.py and the slow suite's
smoke test (tests/test_galera_cluster.py).
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from record import find_tools, install_datadir, private_tmpdir, server_user  # noqa: E402

PROVIDER_PATHS = ("/usr/lib/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so",
                  "/usr/lib64/galera-4/libgalera_smm.so", "/usr/lib/galera-4/libgalera_smm.so")
BASE_PORT = 4400


class ClusterError(RuntimeError):
    """A node failed to start, join or answer; the message carries its error log's tail."""


def find_provider() -> str:
    for p in PROVIDER_PATHS:
        if os.path.exists(p):
            return p
    raise ClusterError("no Galera provider (libgalera_smm.so): apt-get install galera-4")


def node_ports(i: int, base: int = BASE_PORT) -> dict[str, int]:
    """Node i's ports: client, group communication, IST, SST (one block of 10 per node)."""
    b = base + 10 * i
    return {"client": b, "gmcast": b + 1, "ist": b + 2, "sst": b + 3}


class Node:
    def __init__(self, cluster: "GaleraCluster", i: int):
        self.cluster, self.i = cluster, i
        self.dir = os.path.join(cluster.workdir, f"node{i}")
        self.datadir = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "mysqld.sock")
        self.errlog = os.path.join(self.dir, "error.log")
        self.ports = node_ports(i, cluster.base_port)
        self.proc: subprocess.Popen | None = None

    def args(self, bootstrap: bool) -> list[str]:
        c = self.cluster
        peers = ",".join(f"127.0.0.1:{node_ports(j, c.base_port)['gmcast']}"
                         for j in range(c.n))
        provider_options = ";".join(
            [f"gmcast.listen_addr=tcp://127.0.0.1:{self.ports['gmcast']}",
             f"ist.recv_addr=127.0.0.1:{self.ports['ist']}",
             f"base_host=127.0.0.1", f"base_port={self.ports['gmcast']}",
             *(f"{k}={v}" for k, v in c.provider_options.items())])
        owner = [f"--user={c.user}"] if c.user else []
        a = [c.tools["server"], "--no-defaults", f"--datadir={self.datadir}",
             f"--socket={self.sock}", f"--port={self.ports['client']}", "--bind-address=127.0.0.1",
             f"--pid-file={os.path.join(self.dir, 'mysqld.pid')}", f"--log-error={self.errlog}",
             "--skip-name-resolve", *owner, f"--tmpdir={private_tmpdir(self.dir, c.user)}",
             f"--server-id={self.i + 1}", "--binlog-format=ROW", "--innodb-autoinc-lock-mode=2",
             "--default-storage-engine=InnoDB",
             "--wsrep-on=ON", f"--wsrep-provider={c.provider}",
             f"--wsrep-cluster-address=gcomm://{'' if bootstrap else peers}",
             "--wsrep-cluster-name=commitsched",
             f"--wsrep-node-name=node{self.i}", f"--wsrep-node-address=127.0.0.1:{self.ports['gmcast']}",
             f"--wsrep-node-incoming-address=127.0.0.1:{self.ports['client']}",
             f"--wsrep-sst-receive-address=127.0.0.1:{self.ports['sst']}",
             "--wsrep-sst-method=rsync", f"--wsrep-provider-options={provider_options}"]
        if bootstrap:
            a.append("--wsrep-new-cluster")
        a += [f"--{k.replace('_', '-')}={v}" for k, v in c.settings.items()]
        return a

    def install(self) -> None:
        os.makedirs(self.datadir, exist_ok=True)
        c = self.cluster
        owner = [f"--user={c.user}"] if c.user else []
        if c.user:
            subprocess.run(["chown", "-R", f"{c.user}:{c.user}", self.dir], check=True)
        r = install_datadir(c.tools, self.datadir,
                            [*owner, f"--tmpdir={private_tmpdir(self.dir, c.user)}"])
        if r.returncode != 0:
            raise ClusterError(f"node{self.i}: install_db failed:\n{r.stdout[-1500:]}")

    def start(self, bootstrap: bool, timeout: float) -> None:
        self.proc = subprocess.Popen(self.args(bootstrap), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise ClusterError(f"node{self.i}: mariadbd exited at start:\n{self.error_tail()}")
            try:
                if self.status_value("wsrep_local_state_comment") == "Synced":
                    return
            except ClusterError:
                pass
            time.sleep(0.3)
        raise ClusterError(f"node{self.i}: not Synced within {timeout:.0f} s\n{self.error_tail()}")

    def error_tail(self, n: int = 15) -> str:
        try:
            with open(self.errlog, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def sql(self, query: str, timeout: float = 600) -> list[list[str]]:
        r = subprocess.run([self.cluster.tools["client"], "--no-defaults", f"--socket={self.sock}",
                            "-uroot", "-N", "-B", "-e", query], capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise ClusterError(f"node{self.i}: SQL failed: {query}\n{r.stderr.strip()}")
        return [line.split("\t") for line in r.stdout.splitlines()]

    def status(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.sql("SHOW GLOBAL STATUS")}

    def status_value(self, name: str) -> str | None:
        rows = self.sql(f"SHOW GLOBAL STATUS LIKE '{name}'", timeout=10)
        return rows[0][1] if rows else None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        subprocess.run([self.cluster.tools["admin"], "--no-defaults", f"--socket={self.sock}",
                        "-uroot", "shutdown"], capture_output=True, timeout=120)
        try:
            self.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)   # our own server's process group only
            self.proc.wait()


class GaleraCluster:
    """`nodes` MariaDB Galera nodes on 127.0.0.1 under `workdir` (created fresh).

    `settings`: mariadbd options for every node (e.g. wsrep_slave_threads, sync_binlog,
    innodb_flush_log_at_trx_commit, log_bin); `provider_options`: Galera provider options
    (e.g. {"gcs.fc_limit": 16}). The cluster is started by `start()` (or `with`) and every node
    is stopped by `stop()`, at interpreter exit, and on SIGTERM/SIGINT."""

    def __init__(self, workdir: str, nodes: int = 3, *, settings: dict | None = None,
                 provider_options: dict | None = None, base_port: int = BASE_PORT,
                 start_timeout: float = 120.0):
        if not 1 <= nodes <= 19:
            raise ClusterError("nodes must be 1..19 (ports BASE..BASE+199)")
        self.workdir, self.n, self.base_port = os.path.abspath(workdir), nodes, base_port
        self.settings = dict(settings or {})
        self.provider_options = dict(provider_options or {})
        self.start_timeout = start_timeout
        self.tools = find_tools()
        self.provider = find_provider()
        self.user = server_user()
        self.nodes = [Node(self, i) for i in range(nodes)]
        self._stopped = False

    def start(self) -> "GaleraCluster":
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        os.chmod(self.workdir, 0o755)
        atexit.register(self.stop)
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)

            def handler(signum, frame, previous=previous):
                self.stop()
                if callable(previous):
                    previous(signum, frame)
                raise SystemExit(128 + signum)
            signal.signal(sig, handler)
        try:
            self.nodes[0].install()
            self.nodes[0].start(bootstrap=True, timeout=self.start_timeout)
            for node in self.nodes[1:]:
                os.makedirs(node.datadir, exist_ok=True)     # empty: the SST fills it
                if self.user:
                    subprocess.run(["chown", "-R", f"{self.user}:{self.user}", node.dir],
                                   check=True)
                node.start(bootstrap=False, timeout=self.start_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> "GaleraCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def sql(self, i: int, query: str, timeout: float = 600) -> list[list[str]]:
        return self.nodes[i].sql(query, timeout)

    def cluster_size(self) -> int:
        return int(self.nodes[0].status_value("wsrep_cluster_size") or 0)

    def stop(self) -> None:
        """Stop every node, joiners first; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        for node in reversed(self.nodes):
            try:
                node.stop()
            except Exception:                      # keep stopping the others
                if node.proc is not None and node.proc.poll() is None:
                    os.killpg(node.proc.pid, signal.SIGKILL)


def main(argv=None) -> int:
    """Start a cluster, print its size and each node's state, stop it (a manual smoke test)."""
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workdir", default="build/galera-smoke")
    p.add_argument("--nodes", type=int, default=3)
    a = p.parse_args(argv)
    started = time.time()
    with GaleraCluster(a.workdir, a.nodes) as c:
        print(f"cluster of {c.cluster_size()} nodes up in {time.time() - started:.1f} s")
        for node in c.nodes:
            print(f"node{node.i}: {node.status_value('wsrep_local_state_comment')}, "
                  f"port {node.ports['client']}")
    print(f"stopped after {time.time() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
