"""A live replica, read-only unless a probe is asked for (`commitsched calibrate`, docs/lag.md).

Talks SQL through PyMySQL: a pure-Python client, so it installs wherever Python does (the C
clients, mysqlclient and MariaDB's Connector/Python, build against the C client library's
headers, which a DBA's laptop seldom has; a position query takes well under a millisecond
either way, far below the sampling interval).

What it reads: the server's version and the replica's parallel settings, durability and
binlog setting (`ReplicaSettings`); its applied position (`applied`), sampled over a window;
with `probe`, it stops the SQL thread for the given time and starts it again.
"""
from __future__ import annotations

import os
import re
import time
import urllib.parse
from dataclasses import asdict, dataclass


class LiveError(Exception):
    """A replica that cannot be reached or read; the message is one line saying why."""


@dataclass(frozen=True)
class Address:
    host: str
    port: int
    user: str
    password: str | None
    socket: str | None

    def label(self) -> str:
        return self.socket or f"{self.host}:{self.port}"


def parse_url(url: str) -> Address:
    """`mysql://USER[:PASSWORD]@HOST[:PORT][?socket=PATH]` (or `mariadb://`); no password:
    the MYSQL_PWD environment variable, as the server's own clients read it."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("mysql", "mariadb") or not (u.hostname or "socket=" in u.query):
        raise LiveError(f"{url!r}: expected mysql://USER[:PASSWORD]@HOST[:PORT] "
                        f"(or ?socket=PATH)")
    query = urllib.parse.parse_qs(u.query)
    try:
        port = u.port or 3306
    except ValueError:
        # urllib says "out of range" for 99999 and "could not convert" for "x": say which
        said = u.netloc.rpartition(":")[2]
        raise LiveError(f"{url!r}: port must be 1-65535, got {said!r}" if said.isdigit() else
                        f"{url!r}: port must be a number, 1-65535, got {said!r}") from None
    if u.port == 0:
        raise LiveError(f"{url!r}: port must be 1-65535, got '0'")
    password = (urllib.parse.unquote(u.password) if u.password is not None
                else os.environ.get("MYSQL_PWD"))
    return Address(u.hostname or "localhost", port, urllib.parse.unquote(u.username or "root"),
                   password, (query.get("socket") or [None])[0])


def connect(address: Address, timeout: float = 10.0):
    import pymysql
    kw = dict(user=address.user, password=address.password or "", connect_timeout=timeout,
              read_timeout=max(timeout, 60.0), autocommit=True)
    if address.socket:
        kw["unix_socket"] = address.socket
    else:
        kw.update(host=address.host, port=address.port)
    try:
        return pymysql.connect(**kw)
    except pymysql.err.OperationalError as e:
        code, msg = (e.args + ("",))[:2]
        raise LiveError(f"{address.label()}: cannot connect ({code}: {msg})") from None


def query(conn, sql: str) -> list[tuple]:
    return query_named(conn, sql)[1]


def query_named(conn, sql: str) -> tuple[list[str], list[tuple]]:
    """(column names, rows) of `sql`; LiveError naming the privilege when it is refused."""
    import pymysql
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return [d[0] for d in cur.description or ()], list(cur.fetchall())
    except (pymysql.err.OperationalError, pymysql.err.ProgrammingError,
            pymysql.err.InternalError) as e:
        code, msg = (e.args + ("",))[:2]
        if code in (1142, 1227, 1044, 1045):
            raise LiveError(f"not allowed to run {sql.split()[0]} ... ({code}: {msg}); the "
                            f"calibration needs a user with REPLICA MONITOR (MariaDB) or "
                            f"REPLICATION CLIENT, and REPLICATION SLAVE ADMIN / SUPER for "
                            f"--probe") from None
        raise LiveError(f"{sql[:60]}: {code}: {msg}") from None


def variables(conn, names: list[str]) -> dict[str, str]:
    rows = query(conn, "SHOW GLOBAL VARIABLES WHERE Variable_name IN (" +
                 ",".join(f"'{n}'" for n in names) + ")")
    return {k.lower(): v for k, v in rows}


@dataclass(frozen=True)
class ReplicaSettings:
    """What the replica is and how it applies (the settings a prediction must match)."""
    version: str
    flavor: str                  # "mariadb" | "mysql"
    scheduler: str               # commitsched's name for what it runs ("serial" with 0 threads)
    workers: int
    durability: str              # "durable" | "relaxed" | "mixed (...)"
    log_replica_updates: bool
    sync_binlog: int
    flush_at_commit: int
    datadir: str
    pid_file: str
    # MariaDB >= 10.8's innodb_log_file_buffering: OFF, the redo log is written with O_DIRECT, so
    # even a relaxed replica (innodb_flush_log_at_trx_commit=2) waits for the device at every
    # log write; None: not said (MySQL, an older MariaDB)
    log_file_buffered: bool | None = None

    def to_json(self) -> dict:
        return asdict(self)


MARIADB_MODES = {"conservative": "commit_id+mariadb_conservative",
                 "optimistic": "commit_id+mariadb_optimistic",
                 "aggressive": "commit_id+mariadb_aggressive"}


def read_settings(conn) -> ReplicaSettings:
    version = query(conn, "SELECT VERSION()")[0][0]
    mariadb = "mariadb" in version.lower()
    names = ["sync_binlog", "innodb_flush_log_at_trx_commit", "datadir", "pid_file", "log_bin",
             "slave_parallel_threads", "slave_parallel_mode", "log_slave_updates",
             "replica_parallel_workers", "slave_parallel_workers", "replica_parallel_type",
             "slave_parallel_type", "log_replica_updates", "replica_preserve_commit_order",
             "slave_preserve_commit_order", "innodb_log_file_buffering"]
    v = variables(conn, names)
    sync_binlog = int(v.get("sync_binlog", "0"))
    flush = int(v.get("innodb_flush_log_at_trx_commit", "1"))
    binlog = (v.get("log_bin", "OFF").upper() == "ON"
              and v.get("log_slave_updates", v.get("log_replica_updates", "OFF")).upper() == "ON")
    if mariadb:
        workers = int(v.get("slave_parallel_threads", "0"))
        mode = v.get("slave_parallel_mode", "optimistic")
        if workers == 0 or mode in ("none", "minimal"):
            scheduler, workers = "serial", 1
        else:
            scheduler = MARIADB_MODES.get(mode)
            if scheduler is None:
                raise LiveError(f"slave_parallel_mode={mode}: not a mode commitsched models")
    else:
        workers = int(v.get("replica_parallel_workers", v.get("slave_parallel_workers", "0")))
        kind = v.get("replica_parallel_type", v.get("slave_parallel_type", "LOGICAL_CLOCK"))
        if workers <= 1:
            scheduler, workers = "serial", 1
        elif kind.upper() == "DATABASE":
            scheduler = "database+mysql"
        else:
            scheduler = "commit_order+mysql"
    durable = flush == 1 and (sync_binlog == 1 or not binlog)
    relaxed = flush != 1 and (sync_binlog != 1 or not binlog)
    durability = ("durable" if durable else "relaxed" if relaxed else
                  f"mixed (sync_binlog={sync_binlog}, innodb_flush_log_at_trx_commit={flush})")
    return ReplicaSettings(version, "mariadb" if mariadb else "mysql", scheduler, workers,
                           durability, binlog, sync_binlog, flush, v.get("datadir", ""),
                           v.get("pid_file", ""),
                           None if "innodb_log_file_buffering" not in v else
                           v["innodb_log_file_buffering"].upper() == "ON")


_MARIADB_GTID = re.compile(r"(\d+)-(\d+)-(\d+)")


def mariadb_position(gtid_pos: str, domain: int | None = None) -> tuple[int, int] | None:
    """(domain, seq_no) of a `gtid_slave_pos` / `gtid_binlog_pos` value in one domain: the
    given one, else the only one (several domains: LiveError)."""
    found = {int(d): int(n) for d, _, n in _MARIADB_GTID.findall(gtid_pos or "")}
    if not found:
        return None
    if domain is not None:
        return (domain, found[domain]) if domain in found else None
    if len(found) > 1:
        raise LiveError(f"the replica applies several replication domains ({gtid_pos}): "
                        f"commitsched models one")
    return next(iter(found.items()))


def mysql_position(gtid_set: str, uuid: str) -> int | None:
    """The highest transaction number of `uuid` in a MySQL GTID set, if it is one interval
    from 1 (what an in-order applier leaves; with gaps, the end of the first interval)."""
    for part in gtid_set.replace("\n", "").split(","):
        head, *ranges = part.strip().split(":")
        if head.lower() != uuid.lower() or not ranges:
            continue
        first = ranges[0].split("-")
        return int(first[-1])
    return None


def applied(conn, flavor: str) -> str:
    """The replica's applied GTID state as the server says it."""
    sql = "SELECT @@gtid_slave_pos" if flavor == "mariadb" else "SELECT @@gtid_executed"
    return query(conn, sql)[0][0] or ""


def sample(conn, flavor: str, seconds: float, interval: float, *, clock=time.time,
           sleep=time.sleep, during=None) -> list[tuple[float, str]]:
    """(time, applied GTID state) every `interval` seconds for `seconds`; `during(t)` (if
    given) is called after each sample with the time since the start (the probe's hook)."""
    out = []
    start = clock()
    nxt = start
    while True:
        now = clock()
        out.append((now, applied(conn, flavor)))
        if during is not None:
            during(now - start)
        if now - start >= seconds:
            return out
        nxt += interval
        delay = nxt - clock()
        if delay > 0:
            sleep(delay)


_GLOBAL_GRANT = re.compile(r"^GRANT (.+?) ON \*\.\* TO ", re.I)
_ROLE_GRANT = re.compile(r"^GRANT (?!.* ON ).+ TO ", re.I)


def _version_tuple(version: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


def probe_privileges(version: str) -> tuple[str, ...]:
    """The global privileges any one of which lets a user stop and start the SQL thread
    (`STOP SLAVE SQL_THREAD`) on this server version: MariaDB split REPLICATION SLAVE ADMIN off
    SUPER in 10.5.2 and SUPER stopped implying it in 11.0.1 (MDEV-29668); MySQL 8.0 added the
    dynamic REPLICATION_SLAVE_ADMIN beside SUPER."""
    v = _version_tuple(version)
    if "mariadb" in version.lower():
        if v < (10, 5, 2):
            return ("SUPER",)
        names = ("REPLICATION SLAVE ADMIN", "REPLICATION REPLICA ADMIN")
        return names if v >= (11, 0, 1) else names + ("SUPER",)
    return ("SUPER",) if v < (8, 0, 0) else ("REPLICATION_SLAVE_ADMIN", "SUPER")


def probe_privilege_missing(version: str, grants: list[str]) -> str | None:
    """Why `grants` (the lines of SHOW GRANTS for the current user) cannot stop the SQL
    thread on this server version, in words; None when they can, or when these lines cannot
    tell (a role is granted: its privileges are not in them, so the server decides)."""
    held: set[str] = set()
    for line in grants:
        line = line.strip()
        m = _GLOBAL_GRANT.match(line)
        if m:
            held.update(p.strip().upper() for p in m.group(1).split(","))
        elif _ROLE_GRANT.match(line):
            return None
    needed = probe_privileges(version)
    if held & {"ALL", "ALL PRIVILEGES"} or held & set(needed):
        return None
    name = "MariaDB" if "mariadb" in version.lower() else "MySQL"
    shown = version.split("-")[0]
    has = ", ".join(sorted(held - {"USAGE"})) or "no global privilege"
    return (f"--probe stops and starts the replica's SQL thread, which needs "
            f"{' or '.join(dict.fromkeys(p for p in needed if p != 'REPLICATION REPLICA ADMIN'))}"
            f" on {name} {shown}; this user has {has} (GRANT {needed[0]} ON *.* TO it, or "
            f"calibrate without --probe)")


def check_probe_privileges(conn) -> None:
    """LiveError, before anything is sampled, if the current user cannot stop and start the
    SQL thread (`probe_privilege_missing`)."""
    version = query(conn, "SELECT VERSION()")[0][0]
    grants = [row[0] for row in query(conn, "SHOW GRANTS")]
    why = probe_privilege_missing(version, grants)
    if why:
        raise LiveError(why)


def stop_sql_thread(conn, flavor: str) -> None:
    query(conn, "STOP SLAVE SQL_THREAD" if flavor == "mariadb" else "STOP REPLICA SQL_THREAD")


def start_sql_thread(conn, flavor: str) -> None:
    query(conn, "START SLAVE SQL_THREAD" if flavor == "mariadb" else "START REPLICA SQL_THREAD")


def worker_counts(conn) -> dict[int, int] | None:
    """Transactions each applier worker (by its thread id) committed, where performance_schema
    says it (`events_transactions_summary_by_thread_by_event_name` joined to
    `replication_applier_status_by_worker`); None where it does not (off, or not exposed)."""
    try:
        # keyed by THREAD_ID: MariaDB's table has no WORKER_ID column
        rows = query(conn, "SELECT w.THREAD_ID, t.COUNT_STAR FROM "
                           "performance_schema.replication_applier_status_by_worker w JOIN "
                           "performance_schema.events_transactions_summary_by_thread_by_event_name"
                           " t ON t.THREAD_ID = w.THREAD_ID")
    except LiveError:
        return None
    counts = {int(w): int(c) for w, c in rows if w is not None}
    return counts if counts and any(counts.values()) else None
