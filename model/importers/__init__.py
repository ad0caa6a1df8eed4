"""Binlog importers: recorded MariaDB / MySQL 8 binlogs -> commitsched traces (design §3).

    from commitsched.importers import import_binlog
    stats = import_binlog(["binlog.000002.txt"], "trace.jsonl.gz", schema="schema.sql")

Inputs are `mariadb-binlog`/`mysqlbinlog -vv --base64-output=decode-rows` texts (optionally
.gz), or binary binlog files, read directly by the `commitsched_binlog` extension
(binlog_binary.py; `binlog_tool=` a printer's path decodes them with that printer instead). Several inputs
are several binlog files in order. Output is written atomically; on any error nothing is written
(strict mode), or with `skip_bad=True` the valid transactions are written and the skipped ones
counted by reason.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..progress import Progress
from ..trace import TraceError, write_jsonl_atomic, header
import msgspec

from . import binlog_binary
from .binlog_text import InputError, Reader, Skipped
from .continuity import Continuity, check_distinct, name_warnings
from .schema import Catalog, SchemaError

__all__ = ["import_binlog", "ImportStats", "read_binlog", "TraceError", "group_stats",
           "print_notes"]

BINLOG_MAGIC = b"\xfebin"
# The longest text line read (a decoded row with a large TEXT/BLOB value is one line): longer
# lines are refused with file:line rather than read without bound.
MAX_LINE_CHARS = 64 * 1024 * 1024


@dataclass
class ImportStats:
    transactions: int = 0
    groups: int | None = None          # MariaDB binlog group commits, from commit ids
    ddl: int = 0                       # standalone DDL transactions (not in binlog_commits)
    skipped: Counter = field(default_factory=Counter)   # reason -> transactions skipped
    bad_lines_outside: int = 0         # bad lines between transactions (--skip-bad)
    skipped_examples: list = field(default_factory=list)
    files: int = 0
    dialect: str | None = None
    metadata_tables: list = field(default_factory=list)
    keys_unknown: dict = field(default_factory=dict)    # table -> why its keys are unknown
    keys_partial: list = field(default_factory=list)    # tables whose images lacked key columns
    ignorable_skipped: int = 0         # events of types not known, marked ignorable: skipped
    # transactions missing between the files given (GTID gaps), or without GTIDs what the
    # file names say of their order (continuity.py): one line each
    file_gaps: list = field(default_factory=list)

    @property
    def mean_group_size(self) -> float | None:
        return self.transactions / self.groups if self.groups else None

    def summary(self) -> dict:
        out = {"transactions": self.transactions, "binlog_files_read": self.files,
               "dialect": self.dialect}
        if self.groups is not None:
            out["commit_groups"] = self.groups
            out["mean_group_size_trace"] = round(self.mean_group_size, 4) if self.groups else None
            # MariaDB writes a standalone DDL outside group commit: binlog_commits and
            # binlog_group_commits do not count it, so compare these with the server's deltas
            out["ddl_transactions"] = self.ddl
            out["transactions_excluding_ddl"] = self.transactions - self.ddl
            out["commit_groups_excluding_ddl"] = self.groups - self.ddl
        if self.skipped:
            out["skipped"] = dict(self.skipped)
        if self.bad_lines_outside:
            out["bad_lines_outside_transactions"] = self.bad_lines_outside
        if self.metadata_tables:
            out["keys_from_table_map_metadata"] = sorted(self.metadata_tables)
        if self.keys_unknown:
            out["keys_unknown"] = dict(sorted(self.keys_unknown.items()))
        if self.keys_partial:
            out["keys_partial"] = sorted(self.keys_partial)
        if self.ignorable_skipped:
            out["ignorable_events_skipped"] = self.ignorable_skipped
        if self.file_gaps:
            out["file_gaps"] = list(self.file_gaps)
        return out


class _Ids(msgspec.Struct):
    """What the order check reads of a binary file's finished trace line."""
    gtid: str | None = None
    file: int | None = 1


class _Groups:
    """Counts MariaDB binlog group commits from commit ids: a run of consecutive transactions
    with the same commit id is one group; a transaction without one is a group by itself
    (the server writes no commit id for a group of one, semantics.md §3.1)."""

    def __init__(self) -> None:
        self.groups = 0
        self.last = None

    def add(self, commit_id: int | None) -> None:
        if commit_id is None or commit_id != self.last:
            self.groups += 1
        self.last = commit_id


@dataclass
class _Tally:
    """The import's running counts: transactions (the last seq), commit groups, standalone DDL
    and the highest binlog file index."""
    seq: int = 0
    groups: _Groups = field(default_factory=_Groups)
    ddl: int = 0
    last_file: int = 0
    path: str = ""                  # the input being read (read_binlog sets it)

    def add(self, txn) -> None:
        """Number one transaction read from text and count it."""
        self.seq += 1
        txn.seq = self.seq
        self.groups.add(txn.commit_id)
        if txn.ddl and "transactional" not in txn.flags and txn.commit_id is None:
            self.ddl += 1
        self.last_file = max(self.last_file, txn.file)


def group_stats(txns: Iterable) -> tuple[int, int]:
    """(transactions, commit groups) of a sequence of `Txn`s by their commit ids."""
    g, n = _Groups(), 0
    for t in txns:
        g.add(t.commit_id)
        n += 1
    return n, g.groups


class _LineCounter:
    """Iterates over an input's lines and remembers the number of the last one handed out, so
    an unforeseen failure while reading can still name its line."""

    def __init__(self, lines: Iterable[str]):
        self._lines = iter(lines)
        self.line = 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        text = next(self._lines)
        self.line += 1
        return text


def _find_printer(preferred: str | None) -> str | None:
    if preferred:
        return preferred
    for name in ("mariadb-binlog", "mysqlbinlog"):
        p = shutil.which(name)
        if p:
            return p
    return None


class _Progress:
    """`importing binlog.000002 (file 1/3): 12.3/100.0 MB, 4567 transactions` on the progress
    line (commitsched.progress), at most 2 updates/s. `enabled`: None when stderr is a
    terminal, False never, True always."""

    def __init__(self, enabled: bool | None = None):
        self.line = Progress(quiet=enabled is False)
        if enabled:
            self.line.enabled = True
        self.on = self.line.enabled
        self.last = 0.0

    def show(self, path: str, done: int, total: int | None, txns: int, index: int = 0,
             files: int = 1) -> None:
        if not self.on:
            return
        now = time.monotonic()
        if now - self.last < 0.5:
            return
        self.last = now
        size = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else f"{done / 1e6:.1f} MB"
        of = f" (file {index + 1}/{files})" if files > 1 else ""
        self.line(f"importing {os.path.basename(path)}{of}: {size}, {txns} transactions")

    def end(self) -> None:
        self.line.done()


def _is_binary(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == BINLOG_MAGIC


def _text_lines(path: str, counter: list) -> Iterator[str]:
    opener = (lambda: io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")) \
        if path.endswith(".gz") else (lambda: open(path, encoding="utf-8", errors="replace"))
    raw = os.path.getsize(path)
    n = 0
    with opener() as f:
        while True:
            line = f.readline(MAX_LINE_CHARS + 1)    # bounded: /dev/zero must not hang
            if not line:
                break
            n += 1
            if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
                raise TraceError(path, n, f"line longer than {MAX_LINE_CHARS} characters "
                                          f"(the documented limit; docs/import.md)")
            counter[0] += len(line)
            yield line
    counter[0] = raw if not path.endswith(".gz") else counter[0]


def _decoded_lines(path: str, printer: str, errors: list) -> Iterator[str]:
    """Run the binlog printer on a binary file and stream its text."""
    cmd = [printer, "--no-defaults", "-vv", "--base64-output=decode-rows", "--print-table-metadata",
           path]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8", errors="replace")
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            yield line
    finally:
        if proc.poll() is None and proc.stdout is not None:
            proc.stdout.close()
        err = proc.stderr.read() if proc.stderr else ""
        rc = proc.wait()
        if rc != 0:
            errors.append(f"{os.path.basename(printer)} failed (exit {rc}): {err.strip()[:300]}")


def read_binlog(paths: list[str], catalog: Catalog, *, skip_bad: bool = False,
                binlog_tool: str | None = None, progress: _Progress | None = None,
                reader: Reader | None = None, tally: _Tally | None = None) -> Iterator:
    """Yield the transactions of the inputs in order: a `Txn` (seq not yet set: `tally.add`
    numbers and counts it) from text, and from a binary file runs of finished trace lines
    (str), numbered and counted in `tally` already (binlog_binary.read_binary); raises
    `TraceError` with the input's file and line on the first problem unless `skip_bad`."""
    reader = reader or Reader(catalog, strict=not skip_bad)
    progress = progress or _Progress(False)
    tally = tally or _Tally()
    for i, path in enumerate(paths):
        tally.path = path
        if not os.path.exists(path):
            raise TraceError(path, None, "no such file")
        if os.path.isdir(path):
            raise TraceError(path, None, "is a directory, not a binlog")
        errors: list[str] = []
        counter = [0]
        if _is_binary(path) and binlog_tool is None and binlog_binary.available():
            done = [0]
            size = os.path.getsize(path)
            try:
                for lines in binlog_binary.read_binary(
                        reader, path, tally, new_file=True,
                        progress=lambda off: done.__setitem__(0, off)):
                    progress.show(path, done[0], size, tally.seq, i, len(paths))
                    yield lines
            except InputError as e:
                raise TraceError(path, None, e.reason) from None
            continue
        if _is_binary(path):
            printer = _find_printer(binlog_tool)
            if printer is None:
                raise TraceError(path, None, "binary binlog, but neither mariadb-binlog nor "
                                             "mysqlbinlog is installed to decode it")
            lines = _decoded_lines(path, printer, errors)
            where = f"{path} (as decoded by {os.path.basename(printer)})"
            total = None
        else:
            lines = _text_lines(path, counter)
            where = path
            total = os.path.getsize(path)
        at = _LineCounter(lines)
        try:
            for txn in reader.read(at, new_file=True):
                progress.show(path, counter[0], total, tally.seq, i, len(paths))
                yield txn
        except InputError as e:
            raise TraceError(where, e.line, e.reason) from None
        except (OSError, EOFError, zlib.error) as e:       # a corrupt .gz, a read error
            raise TraceError(where, at.line or None, f"cannot read: {e}") from None
        except (ValueError, LookupError, AttributeError, TypeError, ArithmeticError) as e:
            # The one place a line the reader's patterns did not foresee becomes a one-line
            # error (with or without --skip-bad: the reader cannot tell which transaction to
            # drop), instead of a traceback.
            raise TraceError(where, at.line or None,
                             f"cannot read this line ({type(e).__name__}: {str(e)[:160]})") \
                from None
        if errors:
            if skip_bad:
                reader.skipped.append(Skipped(0, None, errors[0]))
            else:
                raise TraceError(where, None, errors[0])


SCHEMA_FROM_HELP = ("read the CREATE TABLE of the tables the binlog names from a live server, "
                    "read-only (SHOW CREATE TABLE), with the mariadb/mysql client: "
                    "mysql://USER[:PASSWORD]@HOST[:PORT]/ or mysql://USER@localhost/?socket=PATH "
                    "(password also from $MYSQL_PWD)")


def import_binlog(paths: str | list[str], output: str, *, schema: str | list[str] | None = None,
                  skip_bad: bool = False, source: dict | None = None,
                  binlog_tool: str | None = None, progress: bool | None = None,
                  schema_from: str | None = None) -> ImportStats:
    """Import binlog inputs into a trace at `output` (atomically). Returns the counts.

    `schema`: a `mysqldump --no-data` file of the table definitions (also learnt from CREATE
    TABLE in the log and from binlog_row_metadata=FULL table maps). `schema_from`: a server URL
    whose definitions of the tables the binlog names are read when first needed
    (schema_from.py). `source`: provenance put in the trace header, next to what the import
    itself measured.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [os.fspath(paths)]
    catalog = Catalog()
    schemas = [schema] if isinstance(schema, (str, os.PathLike)) else list(schema or [])
    for sch in schemas:
        try:
            catalog.load_sql_file(os.fspath(sch))
        except SchemaError as e:
            raise TraceError(os.fspath(sch), e.line, f"cannot read schema: {e}") from None
        except OSError as e:
            raise TraceError(os.fspath(sch), None, f"cannot read schema: {e.strerror or e}") \
                from None
    if schema_from:
        from .schema_from import ServerSchema
        catalog.server = ServerSchema(schema_from)
    check_distinct(paths)
    reader = Reader(catalog, strict=not skip_bad)
    prog = _Progress(progress)
    stats = ImportStats(files=0)
    tally = _Tally()
    order = Continuity()
    ids = msgspec.json.Decoder(_Ids)
    out_dir = os.path.dirname(os.path.abspath(output))
    os.makedirs(out_dir, exist_ok=True)
    fd, spool = tempfile.mkstemp(prefix=".import-", suffix=".jsonl", dir=out_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for txn in read_binlog(paths, catalog, skip_bad=skip_bad, binlog_tool=binlog_tool,
                                   progress=prog, reader=reader, tally=tally):
                if type(txn) is str:        # a binary file's lines, numbered and counted
                    for one in ids.decode_lines(txn):
                        order.add(one.gtid, one.file, tally.path)
                    out.write(txn)
                    continue
                order.add(txn.gtid, txn.file, tally.path)
                tally.add(txn)
                out.write(json.dumps(txn.to_json(), separators=(",", ":")))
                out.write("\n")
        if prog.on:
            prog.line(f"writing {output}")
        stats.transactions = tally.seq
        stats.ddl = tally.ddl
        stats.files = tally.last_file
        stats.dialect = ("mariadb" if reader.dialects["mariadb"] >= reader.dialects["mysql"]
                         else "mysql") if reader.dialects else None
        stats.groups = tally.groups.groups if stats.dialect == "mariadb" else None
        for s in reader.skipped:
            if s.outside:
                stats.bad_lines_outside += 1
            else:
                stats.skipped[_reason_class(s.reason)] += 1
        stats.skipped_examples = [
            {"line": s.line, "gtid": s.gtid, "reason": s.reason} for s in reader.skipped[:20]]
        stats.metadata_tables = sorted(reader.metadata_tables)
        stats.keys_unknown = dict(reader.keys_unknown)
        stats.keys_partial = sorted(reader.keys_partial)
        stats.ignorable_skipped = reader.ignorable_skipped
        stats.file_gaps = order.gaps if order.gtids else name_warnings(paths)
        if stats.transactions == 0 and not skip_bad:
            raise TraceError(paths[0], None, "no transactions found (is this mysqlbinlog -vv "
                                             "--base64-output=decode-rows output?)")
        head = dict(source or {})
        head.setdefault("importer", "commitsched.importers")
        v = reader.server_version
        if v and "mariadb" not in v.lower():
            # what --mysql reads when not given (model/mysql_versions.py)
            head.setdefault("server", f"MySQL {v}")
        head["inputs"] = [os.path.basename(p) for p in paths]
        if schemas:
            head["schema"] = [os.path.basename(os.fspath(x)) for x in schemas]
        if catalog.server is not None:
            head["schema_from"] = {"server": catalog.server.shown,
                                   "tables_asked": catalog.server.asked}
        head.update({"import": stats.summary()})
        if stats.skipped_examples:
            head["import"]["skipped_examples"] = stats.skipped_examples

        # the transactions' lines were encoded once, when spooled: copied as they are; version 2
        # where some transaction names tables whose keys are unknown or partial
        marked = bool(stats.keys_unknown or stats.keys_partial)
        write_jsonl_atomic(output, [header(head, 2 if marked else 1)], then=spool)
    finally:
        prog.end()          # also on failure: the error's line starts at the margin
        if os.path.exists(spool):
            os.unlink(spool)
    return stats


def _reason_class(reason: str) -> str:
    """A short class of a skip reason, for counting."""
    for pat, name in (("keys unknown", "table keys unknown"), ("truncated", "truncated input"),
                      ("no COMMIT", "transaction without COMMIT"),
                      ("statement-based", "statement-based DML"),
                      ("binlog_row_image", "row image not FULL"),
                      ("failed (exit", "binlog printer failed")):
        if pat in reason:
            return name
    return "malformed input"


def import_main(args) -> int:
    """`commitsched import BINLOG... -o TRACE [--schema SQL]... [--skip-bad] [--quiet]`."""
    quiet = getattr(args, "quiet", False)
    stats = import_binlog(list(args.binlog), args.output, schema=args.schema,
                          skip_bad=args.skip_bad, progress=False if quiet else None,
                          schema_from=getattr(args, "schema_from", None))
    if not quiet:
        parts = [f"{args.output}: {stats.transactions} transactions"]
        if stats.groups is not None:
            parts.append(f"{stats.groups} commit groups (mean {stats.mean_group_size:.3f})"
                         if stats.groups else "0 commit groups")
        parts.append(f"{stats.files} binlog file(s)")
        print(", ".join(parts))
        print_notes(stats, sys.stderr)
    return 0


def print_notes(stats: ImportStats, out) -> None:
    """What an import skipped or guessed, for the user (also `score`/`report` of binlogs)."""
    if stats.bad_lines_outside:
        print(f"ignored {stats.bad_lines_outside} bad line(s) between transactions", file=out)
    if stats.skipped:
        print(f"skipped {sum(stats.skipped.values())} transaction(s): " +
              "; ".join(f"{n} {why}" for why, n in stats.skipped.most_common()), file=out)
        for ex in stats.skipped_examples[:5]:
            print(f"  line {ex['line']}: {ex['reason']}", file=out)
    if stats.metadata_tables:
        print("note: keys of " + ", ".join(stats.metadata_tables) + " come from the binlog's "
              "table-map metadata, which names the PRIMARY key only; give --schema for "
              "UNIQUE keys and foreign keys", file=out)
    if stats.keys_unknown:
        print(keys_unknown_note(stats.keys_unknown), file=out)
    partial = [t for t in stats.keys_partial if t not in stats.metadata_tables]
    if partial:
        print(f"note: the row images of {_tables_text(partial)} lack some key's columns "
              "(binlog_row_image=MINIMAL or NOBLOB): their primary keys are in the trace, not "
              "all their UNIQUE or foreign keys, so a writeset what-if finds fewer conflicts "
              "than the server did", file=out)
    for gap in stats.file_gaps:
        print(f"warning: {gap}", file=out)
    if stats.ignorable_skipped:
        print(f"note: skipped {stats.ignorable_skipped} event(s) of types this reader does not "
              "know, marked ignorable (LOG_EVENT_IGNORABLE_F), as a replica skips them",
              file=out)


def _tables_text(tables, most: int = 8) -> str:
    tables = list(tables)
    shown = ", ".join(tables[:most])
    return shown + (f" and {len(tables) - most} more" if len(tables) > most else "")


def keys_unknown_note(keys_unknown: dict) -> str:
    """What an import says of tables whose keys it could not know (with the first reasons)."""
    reasons = dict.fromkeys(keys_unknown.values())
    why = "; ".join(reasons) if len(reasons) <= 2 else next(iter(reasons)) + "; ..."
    return (f"note: keys unknown for {_tables_text(keys_unknown)} ({why}): the trace has each "
            "transaction's clock, sizes and events; commit_order and commit_id score as usual, "
            "writeset, the optimistic appliers and blame need the keys: give --schema FILE "
            "(mysqldump --no-data) or --schema-from URL")
