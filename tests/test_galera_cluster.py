"""Integration (slow): a real 3-node MariaDB Galera cluster on 127.0.0.1 (traces/record/
galera_cluster.py): bootstrap, two joiners by rsync SST, a write replicated to every node, a
short sysbench run, node 1's binlog imported and scored under both certification schedulers,
every node stopped. Well under two minutes (about 30 s on the 2-core VM)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from commitsched.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "traces", "record"))


def _missing() -> list[str]:
    need = [("mariadbd",), ("mariadb-install-db", "mysql_install_db"), ("sysbench",),
            ("rsync",), ("mariadb-dump", "mysqldump")]
    out = ["/".join(n) for n in need
           if not any(shutil.which(x) or os.path.exists(f"/usr/sbin/{x}") for x in n)]
    if not os.path.exists("/usr/lib/galera/libgalera_smm.so"):
        out.append("galera-4")
    return out


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(_missing()),
                       reason="needs mariadb-server, galera-4, rsync, sysbench "
                              "(apt-get install -y mariadb-server galera-4 rsync sysbench): "
                              + ", ".join(_missing())),
]


def test_three_node_cluster_replicates_and_scores(tmp_path):
    from record_scripts import import_record_scripts
    (galera_cluster,) = import_record_scripts("galera_cluster")
    GaleraCluster = galera_cluster.GaleraCluster
    # mariadbd runs as mysql: the cluster's folder must be reachable by it (pytest's tmp_path
    # sits under a root-only folder)
    import pathlib
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(prefix="commitsched-galera-"))
    base.chmod(0o755)
    try:
        _scenario(tmp_path, base / "cluster", GaleraCluster)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _scenario(tmp_path, work, GaleraCluster):
    cluster = GaleraCluster(str(work), 3, settings={"log_bin": "mysql-bin",
                                                    "log_slave_updates": "ON",
                                                    "wsrep_slave_threads": 2},
                            provider_options={"gcs.fc_limit": 16},
                            # the measurements use 4400-4439; a shared machine can move it
                            base_port=int(os.environ.get("COMMITSCHED_GALERA_TEST_PORT", "4500")))
    with cluster:
        assert cluster.cluster_size() == 3
        n0, n1, n2 = cluster.nodes
        n0.sql("CREATE DATABASE sbtest")
        n0.sql("CREATE TABLE sbtest.t (id INT PRIMARY KEY, v INT)")
        n0.sql("INSERT INTO sbtest.t VALUES (1, 10), (2, 20)")
        n2.sql("SET SESSION wsrep_sync_wait = 1")
        assert n2.sql("SELECT SUM(v) FROM sbtest.t") == [["30"]]
        n1.sql("FLUSH LOCAL BINARY LOGS")
        first = n1.sql("SHOW MASTER STATUS")[0][0]
        sb = ["sysbench", "oltp_write_only", "--db-driver=mysql", f"--mysql-socket={n0.sock}",
              "--mysql-user=root", "--mysql-db=sbtest", "--tables=1", "--table-size=500"]
        r = subprocess.run(sb + ["prepare"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run(sb + ["--threads=4", "--time=3", "run"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        status = n1.status()
        assert int(status["wsrep_received"]) > 100
        assert status["wsrep_local_state_comment"] == "Synced"
        n1.sql("FLUSH LOCAL BINARY LOGS")
        binlog = work / "node1" / "data" / first
        schema = subprocess.run([cluster.tools["dump"], "--no-defaults", f"--socket={n1.sock}",
                                 "-uroot", "--no-data", "--databases", "sbtest"],
                                capture_output=True, text=True, check=True).stdout
        (tmp_path / "schema.sql").write_text(schema)
        shutil.copy(binlog, tmp_path / "node1.binlog")
        pids = [n.pid for n in cluster.nodes]
    # every node is gone
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read().lower()
    trace = tmp_path / "t.jsonl"
    assert main(["import", str(tmp_path / "node1.binlog"), "--schema", str(tmp_path / "schema.sql"),
                 "-o", str(trace)]) == 0
    out = tmp_path / "score.json"
    assert main(["score", str(trace), "--scheduler", "certification+galera",
                 "--scheduler", "certification+group_replication", "--workers", "1,4",
                 "--json", "-o", str(out), "--quiet"]) == 0
    import json
    rows = json.loads(out.read_text())
    assert {r["scheduler"] for r in rows} >= {"certification+galera",
                                              "certification+group_replication"}
    assert all(r.get("transactions", 0) > 100 for r in rows)
