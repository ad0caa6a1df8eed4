"""The source's binlog files of a recorded window, read over the replication protocol
(`calibrate --source URL`): the server's own client, `mariadb-binlog` / `mysqlbinlog`
`--read-from-remote-server --raw`, copies them byte for byte into a temporary folder (removed
when done), as a replica's IO thread would read them: read-only on the source, which needs the
REPLICATION SLAVE right."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from typing import Iterator

from .replica_live import LiveError, connect, mariadb_position, parse_url, query

TOOLS = ("mariadb-binlog", "mysqlbinlog")


def _tool() -> str:
    for name in TOOLS:
        path = shutil.which(name)
        if path:
            return path
    raise LiveError("--source needs mariadb-binlog or mysqlbinlog on the PATH (Debian: "
                    "mariadb-client)")


def first_file(conn, window) -> list[str]:
    """The source's binlog files from the last one that starts at or before the window's
    first applied transaction (MariaDB: `BINLOG_GTID_POS` of each file's start)."""
    files = [r[0] for r in query(conn, "SHOW BINARY LOGS")]
    if not files:
        raise LiveError("the source has no binary logs (log_bin is off?)")
    if window.settings.get("flavor") != "mariadb":
        return files            # MySQL: every file the source still has
    start = mariadb_position(window.samples[0][1])
    if start is None:
        return files
    domain, seq = start
    chosen = 0
    for i, name in enumerate(files):
        pos = query(conn, f"SELECT BINLOG_GTID_POS('{name}', 4)")[0][0] or ""
        at = mariadb_position(pos, domain)
        if at is None or at[1] <= seq:
            chosen = i
        else:
            break
    return files[chosen:]


@contextlib.contextmanager
def fetch_binlogs(url: str, window) -> Iterator[list[str]]:
    address = parse_url(url)
    conn = connect(address)
    try:
        files = first_file(conn, window)
    finally:
        conn.close()
    tmp = tempfile.mkdtemp(prefix="commitsched-binlog-")
    try:
        cmd = [_tool(), "--read-from-remote-server", "--raw", f"--result-file={tmp}/",
               f"--user={address.user}"]
        cmd += ([f"--socket={address.socket}"] if address.socket
                else [f"--host={address.host}", f"--port={address.port}"])
        env = dict(os.environ)
        if address.password:
            env["MYSQL_PWD"] = address.password
        r = subprocess.run(cmd + files, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            msg = (r.stderr.strip().splitlines() or ["failed"])[-1]
            raise LiveError(f"reading the binlog from {address.label()}: {msg}")
        yield [os.path.join(tmp, f) for f in files]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
