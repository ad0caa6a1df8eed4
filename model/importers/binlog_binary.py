"""Binary binlog files read directly: no printer, no text in between (docs/import.md).

The `commitsched_binlog` extension (model/binlog_rs: Rust, the `mysql_common` crate's binlog
parser through PyO3) reads the events and applies the text importer's rules to them
(binlog_text.Reader: same transactions, row keys, size fields, refusals), handing back each
finished transaction as its trace line. What needs the table catalog stays here, in `_Hooks`,
which the extension calls rarely: a table's key plan (once per table, again after DDL),
statements other than BEGIN / COMMIT, and row keys it cannot make alone (foreign keys, unknown
tables or columns: the text importer's own code and messages). Both readers give identical
traces for the same binlog (tests/test_binlog_binary.py).
"""
from __future__ import annotations

import re
from typing import Iterator

from .binlog_text import _ADMIN_RE, _DDL_WORDS, _DML_RE, InputError, Reader, Skipped, _ddl_schemas

try:
    from commitsched_binlog import BinlogProblem, TxnReader
except ImportError:                 # the extension is built by `make setup` (cargo + maturin)
    TxnReader = None

    class BinlogProblem(ValueError):
        pass

# What `_Hooks.statement` tells the extension to do (model/binlog_rs/src/lib.rs, A_*).
A_IGNORE, A_PROBLEM, A_BEGIN, A_FINISH, A_DDL, A_PROBLEM_THEN, A_THEN = range(7)
_USE_RE = re.compile(r"^use `((?:[^`]|``)+)`$", re.I)
_BATCH = 8192                       # events per call into the extension


class BinaryInputError(InputError):
    """A problem at one event of a binary binlog: `line` holds its binlog position."""


def available() -> bool:
    return TxnReader is not None


def read_binary(reader: Reader, path: str, tally, new_file: bool = True,
                progress=None) -> Iterator[str]:
    """Yield the transactions of one binary binlog file as runs of trace lines, numbered on from
    `tally.seq`; `tally` (importers._Tally) counts them, their commit groups, standalone DDL and
    files. Shares `reader`'s state (catalog, file index, skipped transactions) so text and
    binary inputs can follow each other."""
    if TxnReader is None:
        raise BinaryInputError(0, "the binary binlog reader (commitsched_binlog) is not built: "
                                  "run `make setup`")
    if reader._started and new_file and not reader._rotated:
        reader.file += 1
        reader._rotated = True
    reader._started = True
    try:
        events = TxnReader(path, _Hooks(reader), reader.strict, reader.file, reader._rotated,
                           reader._start_file)
    except ValueError as e:
        raise BinaryInputError(0, str(e).partition(": ")[2] or str(e)) from None
    try:
        while True:
            try:
                batch = events.next_batch(_BATCH, tally.seq, tally.groups.last)
            except BinlogProblem as e:          # strict: the first problem ends the import
                raise BinaryInputError(e.args[0], e.args[1]) from None
            if batch is None:
                break
            text, count, groups, tally.groups.last, ddl, last_file = batch
            tally.seq += count
            tally.groups.groups += groups
            tally.ddl += ddl
            tally.last_file = max(tally.last_file, last_file)
            if text:
                yield text
            if progress is not None:
                progress(events.offset)
    finally:
        reader.file, reader._rotated = events.file, events.rotated
        reader._start_file = events.start_file
        if reader.server_version is None:
            reader.server_version = events.server_version
        reader.dialects["mariadb"] += events.mariadb_gtids
        reader.dialects["mysql"] += events.mysql_gtids
        reader.skipped.extend(Skipped(*s) for s in events.take_skipped())
        reader.keys_partial.update(events.keys_partial_tables)
        reader.ignorable_skipped += events.ignorable_skipped


class _Hooks:
    """What the extension asks of the catalog (binlog_text.Reader's rules and messages)."""

    def __init__(self, reader: Reader):
        self.r = reader

    def plan(self, db: str, name: str, mapped: int) -> tuple:
        """How to make a row's keys fast: ([(key prefix, column positions)] per unique index,
        or None when `row_keys` must make them: foreign keys, an unknown column), whether the
        table is known, has a primary key, is a foreign-key parent, and its column count.
        `mapped`: the table map's column count; a server's definition (--schema-from) that
        differs was altered since the binlog was written, and is not used."""
        r = self.r
        t = r.catalog.get(db, name)
        if t is not None and t.origin == "server" and len(t.columns) != mapped:
            r.catalog.forget(db, name, f"the server's definition has {len(t.columns)} columns, "
                                       f"the binlog's table map {mapped}: altered since")
            t = None
        if t is None:
            r._note_unknown(db, name)           # the extension marks its rows keys_unknown
            return None, False, False, False, 0
        steps = None
        if not t.fks and t.unique_complete:
            try:
                steps = [(f"{t.db}.{t.name}/{index}=", [t.position(c) for c in cols])
                         for index, cols in t.unique.items()]
            except ValueError:
                steps = None
        return steps, True, t.has_pk, r._fk_parent(t), len(t.columns)

    def row_keys(self, db: str, name: str, image: dict, before: dict | None) -> tuple:
        """(keys, tables whose keys are unknown, whether some key's columns were missing):
        binlog_text.Reader._row_keys; `before`: an UPDATE's before image, for its after image."""
        return self.r._row_keys(db, name, image, before)

    def statement(self, text: str, query_db: str | None, in_txn: bool, ddl_flag: bool,
                  cur_ddl: bool, has_bad: bool) -> tuple:
        """A Query event's statement other than BEGIN / COMMIT: binlog_text.Reader.read's
        `statement`, same rules. Returns (action, query_db, problem, admin, ddl, schemas)."""
        s = text.strip()
        u = s.upper()
        if u.startswith("SET ") or s.startswith("/*"):
            return A_IGNORE, query_db, "", False, False, []
        m = _USE_RE.match(s)
        if m:
            return A_IGNORE, m.group(1).replace("``", "`"), "", False, False, []
        if not in_txn:
            if s:
                return (A_PROBLEM, query_db, f"statement outside any transaction: {s[:60]!r}",
                        False, False, [])
            return A_IGNORE, query_db, "", False, False, []
        if u in ("BEGIN", "START TRANSACTION") or u.startswith("XA START"):
            return A_BEGIN, query_db, "", False, False, []
        if u in ("COMMIT", "ROLLBACK") or u.startswith(("XA END", "XA PREPARE", "XA COMMIT",
                                                        "XA ROLLBACK")):
            return (A_IGNORE if u.startswith("XA END") else A_FINISH), query_db, "", False, \
                False, []
        if u.startswith(("SAVEPOINT", "ROLLBACK TO", "RELEASE SAVEPOINT")):
            return A_IGNORE, query_db, "", False, False, []
        if _DML_RE.match(s):
            return (A_PROBLEM_THEN, query_db, "statement-based DML: row keys unknown (record "
                    f"with binlog_format=ROW): {s[:60]!r}", False, False, [])
        admin = bool(_ADMIN_RE.match(s))
        if u.startswith(_DDL_WORDS) or admin or ddl_flag:
            ddl = cur_ddl or not u.startswith(("ANALYZE", "OPTIMIZE", "REPAIR", "CHECK"))
            schemas = _ddl_schemas(s) or ([query_db] if query_db else [])
            r = self.r
            r.catalog.apply_ddl(s, query_db)
            r._fk_parent_cache.clear()
            return A_DDL, query_db, "", admin, ddl, schemas
        if not has_bad:
            return A_PROBLEM_THEN, query_db, f"unrecognised statement {s[:60]!r}", False, False, []
        return A_THEN, query_db, "", False, False, []
