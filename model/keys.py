"""What a trace imported without all its row keys lets a scheduler, a what-if or the blame do.

A binlog imported with no schema at hand names the tables whose keys it could not know in each
transaction's `keys_unknown`, and a MINIMAL row image's tables in `keys_partial` (trace format
version 2, docs/trace-format.md). The source's own dependencies (MySQL's logical clock,
MariaDB's commit ids) need no keys: `commit_order` and `commit_id` run, and so do the
durability what-if and `database` (the schemas are known); but the replica's own row-lock waits
on those tables (a transaction of the next commit group that starts while the previous group
commits, and waits for its row) are not simulated, so those runs tend to be faster than the
server (`UNKNOWN_LOCKS_NOTE`; measured on the tiny binlog's fixture, durable-mariadb,
conservative W=4: 3,171 without the keys against 5,162 with them). What recomputes or simulates
conflicts from the keys cannot: the write-set trackers, the intermediate replica's group commit
(`slave_group_commit`: a lock wait splits its groups), the optimistic appliers' conflicts, and
the blame. They say so in one line, naming the tables and how to give their keys; with partial
keys they run, and say that they find fewer conflicts than the server did.
"""
from __future__ import annotations

from dataclasses import dataclass

# Trackers and appliers whose answer is made from the row keys.
# `certification`: the certifiers of Galera and Group Replication (docs/certification.md).
KEY_TRACKERS = frozenset({"writeset", "writeset_session", "slave_group_commit", "certification"})
KEY_APPLIERS = frozenset({"mariadb_optimistic", "mariadb_aggressive"})
HOW = "give --schema FILE (mysqldump --no-data) or --schema-from URL when importing the binlog"


@dataclass(frozen=True)
class MissingKeys:
    """The tables, over a whole trace, whose keys are unknown, and whose keys are partial."""
    unknown: tuple[str, ...] = ()
    partial: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.unknown or self.partial)


NONE = MissingKeys()


def needs_keys(scheduler) -> bool:
    """Whether a scheduler (a `schedulers.Scheduler` or its name) is made from row keys."""
    if isinstance(scheduler, str):
        from .schedulers import parse_scheduler
        scheduler = parse_scheduler(scheduler)
    return scheduler.tracker in KEY_TRACKERS or scheduler.applier in KEY_APPLIERS


def tables_text(tables, most: int = 6) -> str:
    tables = list(tables)
    shown = ", ".join(tables[:most])
    return shown + (f" and {len(tables) - most} more" if len(tables) > most else "")


def unknown_message(tables, what: str = "") -> str:
    """The one line of a scheduler, what-if or blame that needs keys the trace lacks."""
    lead = f"{what}: " if what else ""
    return f"{lead}keys unknown for tables {tables_text(tables)}; {HOW}"


def unknown_locks_note(tables) -> str:
    """The note of the runs that do run on a trace with unknown keys: what they cannot see."""
    return (f"keys unknown for tables {tables_text(tables)}: the replica's row-lock waits on "
            f"them are not simulated, so commit_order, commit_id and database runs are likely "
            f"faster than the server; {HOW}")


def partial_message(tables) -> str:
    return (f"keys partial for tables {tables_text(tables)} (binlog_row_image=MINIMAL or "
            f"NOBLOB: the primary keys only): writeset, slave_group_commit, the optimistic "
            f"appliers and blame find fewer conflicts than the server did; {HOW}, from a "
            f"binlog written with binlog_row_image=FULL")


def scan(txns) -> MissingKeys:
    """One pass over transactions: the tables named in their keys_unknown / keys_partial."""
    unknown: dict = {}
    partial: dict = {}
    for t in txns:
        if t.keys_unknown:
            unknown.update(dict.fromkeys(t.keys_unknown))
        if t.keys_partial:
            partial.update(dict.fromkeys(t.keys_partial))
    return MissingKeys(tuple(sorted(unknown)), tuple(sorted(partial))) if unknown or partial else NONE


def missing_keys(trace) -> MissingKeys:
    """What a trace (`Trace`, or anything with `.txns()` and `.path`, e.g. cli.TraceSource)
    lacks, worked out once per trace object: a version 1 trace lacks nothing (its header says
    so without a pass over it); else one pass."""
    cached = getattr(trace, "_missing_keys", None)
    if cached is not None:
        return cached
    version = getattr(trace, "version", None)
    if version is None and isinstance(getattr(trace, "path", None), str):
        from .trace import TraceError, open_trace
        try:
            version = open_trace(trace.path)[1]
        except TraceError:
            version = None
    if version == 1:
        found = NONE
    else:
        txns = trace.txns() if callable(getattr(trace, "txns", None)) else trace.txns
        found = scan(txns)
    try:
        trace._missing_keys = found
    except AttributeError:
        pass
    return found


def guard(txns, scheduler_name: str):
    """`txns`, stopped with a SchedulerError at the first transaction whose keys are unknown:
    the last net for a run that needs keys (`score` and `report` say it before any run)."""
    from .schedulers import SchedulerError
    for t in txns:
        if t.keys_unknown:
            raise SchedulerError(unknown_message(t.keys_unknown, scheduler_name)
                                 + f" (first met at seq {t.seq})")
        yield t
