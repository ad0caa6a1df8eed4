"""Integration: record a tiny sysbench workload on a private MariaDB, import it, and hold the
trace against the server's own counters (binlog_commits, binlog_group_commits)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from commitsched.importers import group_stats
from commitsched.trace import load_trace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(REPO, "traces", "record", "record.py")


def _missing() -> list[str]:
    need = [("mariadbd", "mysqld"), ("mariadb-install-db", "mysql_install_db"),
            ("mariadb-binlog", "mysqlbinlog"), ("sysbench",)]
    return ["/".join(n) for n in need
            if not any(shutil.which(x) or os.path.exists(f"/usr/sbin/{x}") for x in n)]


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(_missing()),
                       reason="mariadb-server / sysbench not installed "
                              "(apt-get install -y mariadb-server sysbench): " + ", ".join(_missing())),
]


def _record(tmp_path, *args) -> tuple[dict, list]:
    out = tmp_path / "rec.jsonl.gz"
    r = subprocess.run([sys.executable, RECORD, *args, "-o", str(out)],
                       capture_output=True, text=True, timeout=170)
    assert r.returncode == 0, r.stdout + r.stderr
    tr = load_trace(str(out))
    # the server was shut down and its private directory removed
    datadir = re.search(r"datadir (\S+)", r.stderr).group(1)
    assert not os.path.exists(datadir)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert datadir not in ps
    return tr.source, tr.txns


def test_record_update_index(tmp_path):
    src, txns = _record(tmp_path, "--workload", "oltp_update_index", "--threads", "8",
                        "--time", "30", "--events", "400", "--tables", "2", "--table-size", "200")
    n, groups = group_stats(txns)
    # every oltp_update_index event is one autocommit UPDATE that changes a row
    assert n == src["sysbench_transactions"] == src["binlog_commits"] == 400
    assert groups == src["binlog_group_commits"]
    assert src["import"]["commit_groups"] == groups
    assert src["server"] == "MariaDB" and src["client_threads"] == 8
    assert src["settings"]["binlog_format"] == "ROW"
    assert all(len(t.writes) == 1 and t.writes[0].startswith("sbtest.sbtest") for t in txns)


def test_record_ddl_workload_counts(tmp_path):
    src, txns = _record(tmp_path, "--workload", "ddl_mix", "--threads", "2", "--time", "30",
                        "--events", "120", "--tables", "1", "--table-size", "100",
                        "--sysbench-arg=--ddl_every=20")
    ddl = [t for t in txns if t.ddl]
    assert ddl
    n, groups = group_stats(txns)
    # standalone DDL is binlogged outside group commit: not in the server's counters
    assert n - len(ddl) == src["binlog_commits"]
    assert groups - len(ddl) == src["binlog_group_commits"]


def test_failed_workload_still_stops_the_server(tmp_path):
    out = tmp_path / "rec.jsonl"
    r = subprocess.run([sys.executable, RECORD, "--workload", "oltp_update_index", "--tables", "1",
                        "--table-size", "10", "--sysbench-arg=--no-such-option=1", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "sysbench prepare failed" in r.stderr
    datadir = re.search(r"datadir (\S+)", r.stderr).group(1)
    assert not os.path.exists(datadir)
    assert datadir not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert not out.exists()


def test_record_with_rotation(tmp_path):
    """A small max_binlog_size: the run spans several binlog files; the importer numbers them
    1, 2, ... in order and the counts still match the server's."""
    src, txns = _record(tmp_path, "--workload", "oltp_update_index", "--threads", "4",
                        "--time", "30", "--events", "300", "--tables", "1", "--table-size", "100",
                        "--max-binlog-size", "16384")
    files = [t.file for t in txns]
    assert len(src["binlog_files"]) > 2 and files[-1] == len(src["binlog_files"])
    assert files == sorted(files) and set(files) == set(range(1, files[-1] + 1))
    n, groups = group_stats(txns)
    assert n == src["binlog_commits"] == 300 and groups == src["binlog_group_commits"]


def test_a_server_leaves_other_servers_temporary_tables_alone():
    """Every mariadbd, and mariadb-install-db's bootstrap, deletes the `#sql*` files in its tmpdir
    when it starts. In /tmp those are other servers' temporary tables: CI's slow suite failed
    when one test's server start deleted another test's install_db table. A server here has its
    own tmpdir, so a `#sql` file in /tmp outlives its install and start."""
    import tempfile
    from record_scripts import import_record_scripts
    (record,) = import_record_scripts("record")
    work = tempfile.mkdtemp(prefix="commitsched-tmpdir-", dir="/tmp")
    os.chmod(work, 0o755)
    srv = record.Server(record.find_tools(), work, record.free_port(3440), {})
    with tempfile.NamedTemporaryFile(prefix="#sql-commitsched-", suffix=".MAI", dir="/tmp") as f:
        try:
            srv.start()
            assert srv.sql("SELECT @@tmpdir") == [[os.path.join(work, "tmp")]]
        finally:
            srv.stop()
            shutil.rmtree(work, ignore_errors=True)
        assert os.path.exists(f.name)
