"""`--schema-from URL`: the `CREATE TABLE` of exactly the tables a binlog names, read from a live
server, read-only (`SHOW CREATE TABLE`, one table at a time, when the import first needs it).

    commitsched import binlog.000042 --schema-from mysql://reader@db1.example:3306/ -o t.jsonl
    commitsched import binlog.000042 --schema-from 'mysql://root@localhost/?socket=/run/mysqld/mysqld.sock'

The client is the `mariadb` (or `mysql`) command-line client, as the calibration work uses it
(traces/record/calib_server.py) and as `make setup` installs it (Debian's mariadb-client): no
driver library to add, and the one tool a DBA has at hand. It reads no option file
(`--no-defaults`); the password comes from the URL or from $MYSQL_PWD, and is handed to the
client in its environment, never on its command line. A table the server does not have (dropped
since the binlog was written) stays unknown, and the import names it; a server that cannot be
reached is one line before the binlog is read.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from urllib.parse import parse_qs, unquote, urlsplit

from ..trace import TraceError

CLIENTS = ("mariadb", "mysql")
TIMEOUT = 60.0          # seconds for one client call


def _unescape(field: str) -> str:
    """A field of the client's --batch output: \\n, \\t, \\0 and \\\\ escaped."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        c = field[i]
        if c == "\\" and i + 1 < len(field):
            nxt = field[i + 1]
            out.append({"n": "\n", "t": "\t", "0": "\0", "\\": "\\"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _quote(ident: str) -> str:
    return "`" + ident.replace("`", "``") + "`"


class ServerSchema:
    """Table definitions read from the server at `url` (mysql:// or mariadb://)."""

    def __init__(self, url: str, client: str | None = None):
        parts = urlsplit(url)
        self.shown = url
        if parts.scheme not in ("mysql", "mariadb") or not (parts.hostname or parts.query):
            raise TraceError(url, None, "--schema-from takes mysql://USER[:PASSWORD]@HOST[:PORT]/ "
                                        "or mysql://USER@localhost/?socket=PATH")
        if parts.password is not None:     # shown in messages without it
            self.shown = url.replace(f":{parts.password}@", ":***@", 1)
        query = parse_qs(parts.query)
        args = ["--no-defaults", "--batch", "--skip-column-names"]
        if parts.username:
            args.append(f"--user={unquote(parts.username)}")
        if query.get("socket"):
            args.append(f"--socket={query['socket'][0]}")
        else:
            args.append(f"--host={parts.hostname}")
            args.append(f"--port={parts.port or 3306}")
            args.append("--protocol=TCP")
        self.env = dict(os.environ)
        if parts.password is not None:
            self.env["MYSQL_PWD"] = unquote(parts.password)
        exe = client or next((shutil.which(c) for c in CLIENTS if shutil.which(c)), None)
        if exe is None:
            raise TraceError(self.shown, None, "--schema-from needs the mariadb (or mysql) "
                                               "command-line client: `make setup` installs it "
                                               "(Debian package mariadb-client)")
        self.argv = [exe, *args]
        self.asked = 0
        self._run("SELECT VERSION()")     # can it be reached at all: one line, now

    def _run(self, sql: str) -> tuple[int, str, str]:
        try:
            r = subprocess.run([*self.argv, "-e", sql], capture_output=True, text=True,
                               env=self.env, timeout=TIMEOUT, encoding="utf-8",
                               errors="replace")
        except subprocess.TimeoutExpired:
            raise TraceError(self.shown, None, f"the server did not answer within "
                                               f"{TIMEOUT:.0f} s") from None
        except OSError as e:
            raise TraceError(self.shown, None, f"cannot run {self.argv[0]}: {e}") from None
        if r.returncode != 0 and not _no_such_table(r.stderr):
            raise TraceError(self.shown, None, "cannot read the schema from the server: "
                                               + (r.stderr.strip().splitlines() or ["(no message)"])[-1])
        return r.returncode, r.stdout, r.stderr

    def create_table(self, db: str, name: str) -> str | None:
        """The server's CREATE TABLE of `db`.`name`, or None when it has no such table."""
        self.asked += 1
        rc, out, _ = self._run(f"SHOW CREATE TABLE {_quote(db)}.{_quote(name)}")
        if rc != 0:
            return None
        first = out.split("\n", 1)[0]
        _table, tab, sql = first.partition("\t")
        if not tab:
            return None
        # a statement the server may qualify with neither schema: give it the binlog's
        return _unescape(sql.split("\t")[0])


def _no_such_table(stderr: str) -> bool:
    """ER_NO_SUCH_TABLE (1146) or ER_BAD_DB_ERROR (1049): the table is not there (any more)."""
    return "ERROR 1146" in stderr or "ERROR 1049" in stderr
