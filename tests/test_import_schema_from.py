"""`--schema-from URL`: the definitions of exactly the tables a binlog names, read from a live
server with `SHOW CREATE TABLE` (model/importers/schema_from.py). The server tests start a
private MariaDB (slow suite); the URL and connection checks need only the client."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest
from record_scripts import import_record_scripts

from commitsched.importers import import_binlog
from commitsched.importers.schema_from import _unescape
from commitsched.trace import TraceError, load_trace

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
TINY = os.path.join(FIX, "mariadb_tiny.binlog.000002")
TINY_TEXT = os.path.join(FIX, "mariadb_no_metadata.txt")
TINY_SCHEMA = os.path.join(FIX, "mariadb_tiny.schema.sql")
CLIENT = shutil.which("mariadb") or shutil.which("mysql")
needs_client = pytest.mark.skipif(CLIENT is None, reason="mariadb-client not installed "
                                                         "(make setup installs it)")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_batch_fields_are_unescaped():
    assert _unescape(r"CREATE TABLE `t` (\n  `a` int,\n  `b` char(2) DEFAULT 'x\\y\ty'\n)") == \
        "CREATE TABLE `t` (\n  `a` int,\n  `b` char(2) DEFAULT 'x\\y\ty'\n)"


@pytest.mark.parametrize("url", ["http://db/", "mysql://", "db1:3306"])
def test_a_url_it_cannot_use_is_one_line(tmp_path, url):
    with pytest.raises(TraceError) as e:
        import_binlog([TINY], str(tmp_path / "o.jsonl"), schema_from=url)
    assert "--schema-from takes mysql://" in e.value.reason
    assert not (tmp_path / "o.jsonl").exists()


@needs_client
def test_a_server_it_cannot_reach_is_one_line_before_reading(tmp_path):
    r = subprocess.run([sys.executable, "-m", "commitsched", "import", TINY, "-o",
                        str(tmp_path / "o.jsonl"), "--schema-from",
                        f"mysql://reader:secret@127.0.0.1:{_closed_port()}/"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "cannot read the schema from the server: ERROR 2002" in r.stderr
    assert "secret" not in r.stderr and ":***@" in r.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_a_trace_takes_no_schema_from(tmp_path, capsys):
    from commitsched.cli import main
    trace = str(tmp_path / "t.jsonl")
    import_binlog([TINY], trace, schema=TINY_SCHEMA)
    assert main(["score", trace, "--schema-from", "mysql://x@127.0.0.1/"]) == 2
    assert "--schema-from is for binlog inputs" in capsys.readouterr().err


# ---------------------------------------------------------------- a live server

def _server_tools() -> dict | None:
    names = {"server": ("mariadbd", "mysqld"), "install_db": ("mariadb-install-db",
                                                              "mysql_install_db"),
             "client": ("mariadb", "mysql"), "admin": ("mariadb-admin", "mysqladmin")}
    tools = {}
    for role, cands in names.items():
        found = next((p for c in cands for p in (shutil.which(c), f"/usr/sbin/{c}")
                      if p and os.path.exists(p)), None)
        if found is None:
            return None
        tools[role] = found
    return tools


@pytest.fixture(scope="module")
def server():
    """A private MariaDB on 127.0.0.1 holding the tiny binlog's tables, and a user who may only
    read them; stopped and removed at the end."""
    tools = _server_tools()
    if tools is None:
        pytest.skip("mariadb-server not installed (apt-get install -y mariadb-server)")
    (record,) = import_record_scripts("record")
    work = tempfile.mkdtemp(prefix="commitsched-schema-from-", dir="/tmp")
    os.chmod(work, 0o755)           # the server's own user reaches its datadir
    srv = record.Server(tools, work, record.free_port(3430), {})
    try:
        srv.start()
        schema = open(TINY_SCHEMA, encoding="utf-8").read()
        srv.sql("CREATE DATABASE sbtest")
        subprocess.run([tools["client"], "--no-defaults", f"--socket={srv.sock}", "-uroot",
                        "sbtest"], input=schema, text=True, check=True, capture_output=True)
        srv.sql("CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'pw'; "
                "GRANT SELECT ON sbtest.* TO 'reader'@'127.0.0.1'")
        yield srv, f"mysql://reader:pw@127.0.0.1:{srv.port}/"
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("binlog", [TINY, TINY_TEXT], ids=["binary", "text"])
def test_schema_from_the_server_gives_the_schema_files_trace(server, tmp_path, binlog):
    srv, url = server
    a, b = str(tmp_path / "from.jsonl"), str(tmp_path / "file.jsonl")
    stats = import_binlog([binlog], a, schema_from=url)
    import_binlog([binlog], b, schema=TINY_SCHEMA)
    assert [t.to_json() for t in load_trace(a)] == [t.to_json() for t in load_trace(b)]
    assert not stats.keys_unknown
    head = load_trace(a).source["schema_from"]
    assert head == {"server": f"mysql://reader:***@127.0.0.1:{srv.port}/", "tables_asked": 2}


@pytest.mark.slow
def test_tables_the_server_lacks_or_changed_stay_unknown(server, tmp_path):
    """A table dropped since the binlog was written, or altered (its column count is not the
    binlog's), gives no keys and is named, with why."""
    srv, url = server
    srv.sql("ALTER TABLE sbtest.sbtest2 ADD COLUMN extra INT; RENAME TABLE sbtest.sbtest1 TO "
            "sbtest.gone")
    try:
        stats = import_binlog([TINY], str(tmp_path / "o.jsonl"), schema_from=url)
    finally:
        srv.sql("ALTER TABLE sbtest.sbtest2 DROP COLUMN extra; RENAME TABLE sbtest.gone TO "
                "sbtest.sbtest1")
    assert stats.keys_unknown["sbtest.sbtest1"].startswith("not on the server mysql://reader:***@")
    assert "altered since" in stats.keys_unknown["sbtest.sbtest2"]
