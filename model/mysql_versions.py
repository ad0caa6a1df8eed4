"""What a MySQL version does by default on a source and a replica (`--mysql 5.7|8.0|8.4`).

`score` and `report` apply the version's defaults where the user gave none, and say which:
  - the replica's `replica_preserve_commit_order` (the mysql applier's preserve_commit_order);
  - which dependency tracking the source can write (`binlog_transaction_dependency_tracking`,
    removed in 8.4 where the source always writes WRITESET), hence which TRACKER+mysql
    schedulers exist (an explicit one the version lacks is refused);
  - how the source counts a write set against the history size: 5.7 a set of distinct hashes,
    8.0/8.4 a vector with repeats (the writeset trackers' `write_set` option,
    docs/mysql-tests.md);
  - the replica's default worker count, shown next to the results (`replica_parallel_workers`,
    0 = the SQL thread alone in 5.7).
Without `--mysql`, a trace whose header names a real MySQL server ("MySQL 8.0.36", as
`commitsched import` writes from the binlog's format description event) selects its version.
Sources: the MySQL 5.7, 8.0 and 8.4 reference manuals' system variable pages.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class MySQLDefaults:
    version: str
    source_tracking: str            # the tracker naming what the source writes by default
    trackers: tuple[str, ...]       # MySQL trackers the version offers (+mysql schedulers)
    write_set: str                  # "set" | "vector": the writeset trackers' counting rule
    replica_parallel_workers: int   # 0: the SQL thread applies alone
    replica_parallel_type: str
    preserve_commit_order: bool
    note: str

    def describe(self) -> str:
        po = "ON" if self.preserve_commit_order else "OFF"
        return (f"MySQL {self.version} defaults: source dependency tracking "
                f"{self.source_tracking.upper()}; replica_parallel_workers="
                f"{self.replica_parallel_workers}, replica_parallel_type="
                f"{self.replica_parallel_type}, replica_preserve_commit_order={po}; "
                f"write sets counted as a {self.write_set}. {self.note}")

    def to_json(self) -> dict:
        return {"version": self.version, "source_tracking": self.source_tracking,
                "trackers": list(self.trackers), "write_set": self.write_set,
                "replica_parallel_workers": self.replica_parallel_workers,
                "replica_parallel_type": self.replica_parallel_type,
                "replica_preserve_commit_order": self.preserve_commit_order,
                "note": self.note}


MYSQL_VERSIONS = {
    "5.7": MySQLDefaults(
        "5.7", "commit_order", ("commit_order", "writeset", "writeset_session", "database"),
        "set", 0, "DATABASE", False,
        "WRITESET and WRITESET_SESSION from 5.7.22; slave_* variable names."),
    "8.0": MySQLDefaults(
        "8.0", "commit_order", ("commit_order", "writeset", "writeset_session", "database"),
        "vector", 4, "LOGICAL_CLOCK", True,
        "These are 8.0.27+ defaults (before: workers 0, DATABASE, preserve OFF); "
        "binlog_transaction_dependency_tracking is deprecated from 8.0.35."),
    "8.4": MySQLDefaults(
        "8.4", "writeset", ("commit_order", "writeset"),
        "vector", 4, "LOGICAL_CLOCK", True,
        "binlog_transaction_dependency_tracking is gone: the source always writes WRITESET "
        "(commit_order+mysql replays the trace's own timestamps); no WRITESET_SESSION, no "
        "DATABASE parallel type."),
}

_SERVER_RE = re.compile(r"^MySQL (\d+)\.(\d+)\.(\d+)")


class MySQLVersionError(ValueError):
    pass


def get_defaults(version: str) -> MySQLDefaults:
    d = MYSQL_VERSIONS.get(version)
    if d is None:
        raise MySQLVersionError(f"unknown MySQL version {version!r}; "
                                f"known: {', '.join(MYSQL_VERSIONS)}")
    return d


def version_of_server(server: object) -> str | None:
    """The defaults' version for a trace header's `server` ("MySQL 8.0.36" -> "8.0"; 8.1 and
    later -> "8.4"), or None when it names no MySQL release."""
    m = _SERVER_RE.match(server) if isinstance(server, str) else None
    if not m:
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    if (major, minor) == (5, 7):
        return "5.7"
    if (major, minor) == (8, 0):
        return "8.0"
    if major >= 8:
        return "8.4"
    return None


def check_schedulers(defaults: MySQLDefaults, names) -> None:
    """Refuse a TRACKER+mysql scheduler whose tracking the version does not have."""
    for name in names:
        tracker, plus, applier = name.partition("+")
        if plus and applier == "mysql" and tracker not in defaults.trackers:
            raise MySQLVersionError(
                f"scheduler {name}: MySQL {defaults.version} has no {tracker} dependency "
                f"tracking (it offers {', '.join(defaults.trackers)})")


def default_schedulers(defaults: MySQLDefaults) -> list[str]:
    """`serial` and TRACKER+mysql for each tracking the version offers, its default first."""
    order = [defaults.source_tracking] + [t for t in defaults.trackers
                                          if t != defaults.source_tracking]
    return ["serial"] + [f"{t}+mysql" for t in order]
