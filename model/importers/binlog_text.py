"""Streaming reader of `mariadb-binlog`/`mysqlbinlog -vv [--base64-output=decode-rows]` text.

One pass, line by line, never holding more than the current transaction. The printers share
their event layout (`# at POS`, an event header line `#YYMMDD HH:MM:SS server id ...`, then the
event's SQL or `###` decoded rows); only the GTID event differs (mariadb.py, mysql.py).
"""
from __future__ import annotations

import base64 as base64_mod
import binascii
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..trace import Txn
from . import mariadb, mysql
from .schema import Catalog, Table, table_from_metadata

HEADER_RE = re.compile(r"^#(\d{6})\s+(\d{1,2}):(\d\d):(\d\d) server id (\d+)\s+end_log_pos (\d+)"
                       r"(?: CRC32 0x[0-9a-fA-F]+)?\s+(.*)$")
# Numbers are the servers' 64-bit values, at most 20 digits: a longer one is malformed input.
TABLE_MAP_RE = re.compile(r"^Table_map: `((?:[^`]|``)+)`\.`((?:[^`]|``)+)` mapped to number (\d{1,20})(?!\d)")
# MariaDB prints its compressed rows events (log_bin_compress) as Write_compressed_rows[_v1]
ROWS_EV_RE = re.compile(r"^(Write|Update|Delete)(?:_compressed)?_rows(?:_v1|_compressed|_compressed_v1)?: table id (\d{1,20})(?!\d)")
ROW_START_RE = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `((?:[^`]|``)+)`\.`((?:[^`]|``)+)`$")
COL_RE = re.compile(r"^###   @(\d{1,5})=(.*)$")    # a table has at most 4096 columns
# -vv appends the column type: " /* INT meta=0 nullable=0 is_null=0 */"
TYPE_COMMENT_RE = re.compile(r" /\* [^*]*? meta=\d+ nullable=\d is_null=\d \*/$")
SERVER_V_RE = re.compile(r"server v (\S+)")   # Format_description: "server v 8.0.36"
QUERY_EV_RE = re.compile(r"^Query(?:_compressed)?\s+thread_id=(\d{1,20})(?!\d)")
STMT_END = "/*!*/;"
# a BINLOG statement's lines: each event's base64, wrapped at 76 characters (multiples of 4)
_BASE64_RE = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
_B64_PARTS = re.compile(r"[^=]*=*")   # one statement's events, each its own padded stream
UNPRINTED = "\0?"         # a value the binary reader's parser does not print yet

try:        # the binary reader's parser (model/binlog_rs): rows printed only in base64
    from commitsched_binlog import BlockDecoder
except ImportError:
    BlockDecoder = None

_DDL_WORDS = ("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "REVOKE", "FLUSH",
              "INSTALL", "UNINSTALL", "SET PASSWORD")
_ADMIN_RE = re.compile(r"^(ANALYZE|OPTIMIZE|REPAIR|CHECK)\s+(?:NO_WRITE_TO_BINLOG\s+|LOCAL\s+)?TABLE|"
                       r"^(CREATE|ALTER|DROP)\s+(DATABASE|SCHEMA)\b", re.I)
_DML_RE = re.compile(r"^(INSERT|REPLACE|UPDATE|DELETE|LOAD\s+DATA)\b", re.I)


_DDL_TARGET_RE = re.compile(
    r"^(?:CREATE|ALTER|DROP|TRUNCATE|RENAME)\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?"
    r"(TABLE|DATABASE|SCHEMA|VIEW|INDEX\s+\S+\s+ON)?\s*(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"
    r"(`(?:[^`]|``)+`|\w+)(?:\.(`(?:[^`]|``)+`|\w+))?", re.I)


BEFORE_57 = ("MySQL before 5.7 writes no logical clock (last_committed / sequence_number), "
             "which this reader needs; it reads MySQL 5.7, 8.x, 9.x and MariaDB 10+ binlogs")


def _before_57(version: str) -> bool:
    """A MySQL (not MariaDB) server version before 5.7 ("5.6.51-log")."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return bool(m) and "mariadb" not in version.lower() and \
        (int(m.group(1)), int(m.group(2))) < (5, 7)


def _ddl_schemas(sql: str) -> list[str]:
    """The schema a DDL statement names explicitly (`db`.`t`, or CREATE DATABASE db), if any."""
    m = _DDL_TARGET_RE.match(sql)
    if not m:
        return []
    unq = lambda x: x[1:-1].replace("``", "`") if x.startswith("`") else x
    if m.group(1) and m.group(1).upper() in ("DATABASE", "SCHEMA"):
        return [unq(m.group(2))]
    return [unq(m.group(2))] if m.group(3) else []



def _key_values(positions: list[int], image: dict, before: dict | None) -> list | None:
    """The (value, is_null) of each key column, from the row image or else its before image;
    None when some column is in neither (the key is not in the images)."""
    vals = []
    for pos in positions:
        v = image.get(pos)
        if v is None and before is not None:
            v = before.get(pos)
        if v is None:
            return None
        vals.append(v)
    return vals

class InputError(Exception):
    """A problem at one line of the input: where, and why."""

    def __init__(self, line: int, reason: str):
        super().__init__(reason)
        self.line, self.reason = line, reason


@dataclass
class Skipped:
    """A transaction left out under --skip-bad: where it started and why."""
    line: int
    gtid: str | None
    reason: str
    outside: bool = False   # a bad line between transactions: no transaction was lost


@dataclass
class _Open:
    """The transaction being read."""
    line: int
    gtid: str | None = None
    file: int = 1
    last_committed: int | None = None
    sequence_number: int | None = None
    commit_id: int | None = None
    flags: set = field(default_factory=set)
    standalone: bool = True        # no BEGIN seen yet: a lone statement (DDL) ends the group
    in_body: bool = False
    session: int | None = None
    timestamp: float | None = None
    writes: dict = field(default_factory=dict)   # key -> None, insertion-ordered
    after_keys: set = field(default_factory=set)
    before_keys: set = field(default_factory=set)
    db: dict = field(default_factory=dict)
    ddl: bool = False
    admin: bool = False
    no_pk: bool = False
    fk_parent: bool = False
    hashes: int = 0                # keys over all row images, repeats included (MySQL 8's vector)
    keys_unknown: dict = field(default_factory=dict)   # tables without keys, insertion-ordered
    keys_partial: dict = field(default_factory=dict)   # tables whose images lacked key columns
    bad: tuple[int, str] | None = None   # (line, reason) of the first problem
    # Size in the binlog: events from the GTID event to the commit event, their bytes (from the
    # GTID event's position to the last event's end_log_pos), decoded rows.
    events: int = 0
    start_pos: int | None = None
    end_pos: int | None = None
    length: int | None = None      # MySQL's transaction_length, when the GTID event has it
    rows: int = 0

    def to_txn(self, seq: int) -> Txn:
        before_only = [k for k in self.writes if k in self.before_keys and k not in self.after_keys]
        return Txn(seq, list(self.writes), before_images=before_only, gtid=self.gtid,
                   file=self.file, last_committed=self.last_committed,
                   sequence_number=self.sequence_number, commit_id=self.commit_id,
                   flags=frozenset(self.flags), session=self.session,
                   db=tuple(self.db) if (self.ddl or self.admin) and self.db else None,
                   ddl=self.ddl, admin=self.admin, no_pk=self.no_pk, fk_parent=self.fk_parent,
                   timestamp=self.timestamp, events=self.events or None, bytes=self.size(),
                   rows=self.rows if self.events else None,
                   write_set_size=self.hashes if self.hashes > len(self.writes) else None,
                   keys_unknown=tuple(self.keys_unknown), keys_partial=tuple(self.keys_partial))

    def size(self) -> int | None:
        """Bytes in the binlog: MySQL's own transaction_length, else the span of positions."""
        if self.length:
            return self.length
        if self.start_pos is not None and self.end_pos is not None and self.end_pos > self.start_pos:
            return self.end_pos - self.start_pos
        return None


def _value(raw: str) -> tuple[str, bool]:
    """A printed column value without its -vv type comment, and whether it is NULL."""
    m = TYPE_COMMENT_RE.search(raw)
    if m:
        raw = raw[:m.start()]
    # FLOAT is printed padded ("%-20g": "12345.7              /* FLOAT"), with -v too; no other
    # value ends in a space (strings are quoted)
    raw = raw.rstrip(" ")
    return raw, raw == "NULL"


class Reader:
    """Reads one or more texts in binlog order into `Txn`s (unnumbered: seq is set on output).

    `strict`: the first problem raises `InputError`; otherwise a bad transaction is dropped and
    recorded in `skipped`, and reading resumes at the next GTID event.
    """

    def __init__(self, catalog: Catalog, strict: bool = True):
        self.catalog = catalog
        self.strict = strict
        self.skipped: list[Skipped] = []
        self.dialects: Counter = Counter()
        self.metadata_tables: set[str] = set()
        # tables whose keys were unknown (-> why), and whose images lacked some key's columns
        self.keys_unknown: dict[str, str] = {}
        self.keys_partial: set[str] = set()
        self.ignorable_skipped = 0     # events of unknown types marked LOG_EVENT_IGNORABLE_F
        self.server_version: str | None = None   # "server v X" of the first Start event
        self.file = 1
        self._started = False          # any binlog file (or input) seen yet
        self._rotated = False          # a Rotate event ended the last file
        self._start_file: int | None = None  # file index of the last Start event
        # (file, sequence_number) of the last transaction yielded: the clock goes up in a file
        self._last_clock: tuple[int, int] | None = None
        self._fk_parent_cache: dict[tuple[str, str], bool] = {}
        self._allow_parallel: bool | None = None
        self._meta: dict[int, tuple[str, str]] = {}
        self._ts_cache: dict[str, float] = {}
        self._meta_seen: dict[tuple[str, str], tuple] = {}

    # ------------------------------------------------------------ helpers
    def _stamp(self, date: str, h: str, mi: str, s: str) -> float:
        # mysqlbinlog prints the event time in the local time zone of the printing process
        base = self._ts_cache.get(date)
        if base is None:
            try:
                base = time.mktime(time.strptime(date, "%y%m%d"))
            except (ValueError, OverflowError):
                raise ValueError(f"malformed event date {date!r} (YYMMDD)") from None
            self._ts_cache[date] = base
        return base + int(h) * 3600 + int(mi) * 60 + int(s)

    @staticmethod
    def _first_event(pos: str | None, end_pos: int) -> dict:
        """The size fields of a transaction whose GTID event starts at `pos` ('# at POS')."""
        start = int(pos) if pos is not None and pos.isdigit() and len(pos) <= 20 else None
        return {"events": 1, "start_pos": start, "end_pos": end_pos}

    def _fk_parent(self, t: Table) -> bool:
        k = (t.db.lower(), t.name.lower())
        if k not in self._fk_parent_cache:
            self._fk_parent_cache[k] = self.catalog.is_fk_parent(t.db, t.name)
        return self._fk_parent_cache[k]

    def _row_keys(self, db: str, name: str, image: dict[int, tuple[str, bool]],
                  before: dict | None = None) -> tuple[list[str], list[str], bool]:
        """The row keys of one row image: PRIMARY and every UNIQUE index (a NULL in a UNIQUE
        key: no key, NULLs never conflict), and each foreign key's referenced parent key.
        Returns (keys, tables whose keys are unknown, whether some key's columns were missing).

        A table with no known definition gives no keys: it is named instead (the trace marks it
        `keys_unknown`), as is a foreign key's parent whose keys are unknown. A row image without
        all of an index's columns (binlog_row_image=MINIMAL or NOBLOB) gives no key for that
        index, and says so (`keys_partial`), except where `before` (an UPDATE's before image)
        holds the missing columns: MINIMAL's after image lists only the changed columns, so the
        others, the primary key's among them, are the before image's."""
        t = self.catalog.get(db, name)
        if t is None:
            self._note_unknown(db, name)
            return [], [f"{db}.{name}"], False
        if image and max(image) > len(t.columns):
            if t.origin == "server":        # altered on the server since the binlog was written
                self.catalog.forget(db, name, f"the server's definition has {len(t.columns)} "
                                              f"columns, the binlog's rows more: altered since")
                self._note_unknown(db, name)
                return [], [f"{db}.{name}"], False
            raise ValueError(f"row of {db}.{name} has column @{max(image)} but its definition "
                             f"has {len(t.columns)} columns (schema out of date?)")
        keys: list[str] = []
        unknown: list[str] = []
        partial = False
        for index, cols in t.unique.items():
            positions = []
            for c in cols:
                try:
                    positions.append(t.position(c))
                except ValueError:
                    raise ValueError(f"index {index} of {db}.{name} names unknown column {c}") from None
            vals = _key_values(positions, image, before)
            if vals is None:
                partial = True          # this index's key is not in the image
            elif not any(null for _, null in vals):
                keys.append(f"{t.db}.{t.name}/{index}=" + ",".join(v for v, _ in vals))
        if not t.unique_complete:
            partial = True              # table-map metadata: the primary key only
        for fk in t.fks:
            parent = self.catalog.get(fk.parent_db, fk.parent_table)
            if parent is None:
                self._note_unknown(fk.parent_db, fk.parent_table)
                unknown.append(f"{fk.parent_db}.{fk.parent_table}")
                continue
            want = [c.lower() for c in fk.parent_columns]
            pindex = next((i for i, cs in parent.unique.items()
                           if sorted(c.lower() for c in cs) == sorted(want)), None)
            if pindex is None:
                continue  # a non-unique referenced key gives no conflict key (semantics §2.1)
            vals = _key_values([t.position(fk.columns[want.index(pc.lower())])
                                for pc in parent.unique[pindex]], image, before)
            if vals is None:
                partial = True
            elif not any(null for _, null in vals):
                keys.append(f"{parent.db}.{parent.name}/{pindex}=" + ",".join(v for v, _ in vals))
        return keys, unknown, partial

    def _note_unknown(self, db: str, name: str) -> None:
        """Remember why a table's keys are unknown, for the import's notes (the first reason)."""
        table = f"{db}.{name}"
        if table not in self.keys_unknown:
            why = self.catalog.unknown.get((db.lower(), name.lower()))
            self.keys_unknown[table] = why or ("no CREATE TABLE in the log or in --schema, and "
                                               "no binlog_row_metadata=FULL table-map metadata")

    # ------------------------------------------------------------ the reader
    def read(self, lines: Iterable[str], new_file: bool = True) -> Iterator[Txn]:
        """Yield the transactions of one input text. `new_file`: this input is a new binlog
        file (several inputs given) unless the previous one ended with a Rotate event."""
        if self._started and new_file and not self._rotated:
            self.file += 1
            self._rotated = True  # its own Start event must not count it again
        self._started = True
        cur: _Open | None = None
        event = None          # kind of the event whose body we are in
        stmt: list[str] = []  # statement lines of a Query event
        row = None            # (kind, db, table) of the row being read
        image: dict | None = None
        before: dict | None = None
        after: dict | None = None
        query_db: str | None = None
        preamble = False
        ended = False
        meta_pending = None   # (db, table, column text lines, pk text) of a Table_map
        lineno = 0
        pos = None
        # `-v` without --base64-output=decode-rows also prints each event as a base64 BINLOG
        # statement (the Format_description event, a statement's table maps and rows events);
        # the decoded `###` rows follow it. base64: inside one; b64_rows: a rows event's
        # statement ended and no decoded row has followed yet.
        base64 = False
        b64_rows = 0          # line of a rows event's BINLOG statement not yet followed by rows
        # Without -v the rows are only in base64: every statement is decoded by the binary
        # reader's parser (it follows the Format_description and table maps), and a rows event's
        # rows are read from it when no decoded rows follow.
        b64_text: list[str] = []
        b64_items: list | str = []   # the last statement's rows events, or why it did not decode
        decoder = None
        from_block = False    # the row being flushed comes from a BINLOG statement

        def problem(reason: str, at: int | None = None):
            at = lineno if at is None else at
            where = f" (binlog position {pos})" if pos is not None else ""
            if self.strict:
                raise InputError(at, reason + where)
            if cur is not None:
                if cur.bad is None:
                    cur.bad = (at, reason + where)
            else:
                self.skipped.append(Skipped(at, None, reason + where, outside=True))

        def decode_statement() -> None:
            nonlocal decoder, b64_items
            if BlockDecoder is None:
                b64_items = "no decoder"
                return
            try:
                data = b"".join(base64_mod.b64decode(part, validate=True)
                                for part in _B64_PARTS.findall("".join(b64_text)) if part)
                decoder = decoder or BlockDecoder()
                b64_items = decoder.feed(data)
            except (binascii.Error, ValueError) as e:
                b64_items = f"cannot decode the BINLOG statement: {e}"

        def undecoded():
            nonlocal b64_rows, row, before, after, image, from_block, lineno
            if b64_rows:
                at, b64_rows = b64_rows, 0
                if b64_items == "no decoder":
                    problem("rows event printed only as base64 (BINLOG): print the log with -v "
                            "(-vv --base64-output=decode-rows), or build the binary reader "
                            "(`make setup`), which decodes it", at)
                    return
                if isinstance(b64_items, str):
                    problem(b64_items, at)
                    return
                flush_row()
                # the statement's rows: their problems are at its closing line
                from_block, here, lineno = True, lineno, at
                for kind, db, name, rows in b64_items:
                    for b, a in rows:
                        row, before, after, image = (kind, db, name), b, a, None
                        if cur is not None:
                            cur.rows += 1
                        flush_row()
                from_block, lineno = False, here

        def flush_row():
            nonlocal row, image, before, after
            if row is None:
                return
            kind, db, name = row
            row = None
            if cur is None or cur.bad is not None:
                return
            try:
                if kind == "UPDATE":
                    if before is None or after is None:
                        raise ValueError(f"UPDATE of {db}.{name} without both WHERE and SET images")
                    bk, bu, bp = self._row_keys(db, name, before)
                    ak, au, ap = self._row_keys(db, name, after, before)
                    cur.before_keys.update(bk)
                    cur.after_keys.update(ak)
                    keys, unknown, partial = bk + ak, bu + au, bp or ap
                else:
                    img = after if kind == "INSERT INTO" else before
                    if img is None:
                        raise ValueError(f"{kind} of {db}.{name} without its row image")
                    keys, unknown, partial = self._row_keys(db, name, img)
                    cur.after_keys.update(keys)
                if from_block:
                    for k in keys:
                        if UNPRINTED in k:
                            raise ValueError(
                                f"a key column of {db}.{name} has a type whose values the binary "
                                f"reader does not print yet ({k.partition(UNPRINTED)[2].split(',')[0]})")
            except ValueError as e:
                problem(str(e))
                return
            for u in unknown:
                cur.keys_unknown[u] = None
            if partial:
                cur.keys_partial[f"{db}.{name}"] = None
                self.keys_partial.add(f"{db}.{name}")
            t = self.catalog.get(db, name)
            if t is not None and not t.has_pk:
                cur.no_pk = True
            if t is not None and self._fk_parent(t):
                cur.fk_parent = True
            for k in keys:
                cur.writes[k] = None
            cur.hashes += len(keys)
            image = before = after = None

        def finish() -> Txn | None:
            nonlocal cur
            flush_row()
            done, cur = cur, None
            if done is None:
                return None
            if done.bad is not None:
                self.skipped.append(Skipped(done.bad[0], done.gtid, done.bad[1]))
                return None
            if done.sequence_number is not None:
                # the trace's loader refuses a clock that goes back within a file: a GTID event
                # out of place is this transaction's problem, not a trace that cannot be read
                last = self._last_clock
                if last is not None and last[0] == done.file and done.sequence_number <= last[1]:
                    reason = (f"sequence_number {done.sequence_number} is not above the previous "
                              f"transaction's {last[1]} in the same binlog file" +
                              (f" (binlog position {done.start_pos})"
                               if done.start_pos is not None else ""))
                    if self.strict:
                        raise InputError(done.line, reason)
                    self.skipped.append(Skipped(done.line, done.gtid, reason))
                    return None
                self._last_clock = (done.file, done.sequence_number)
            return done.to_txn(0)

        def start(fields: dict, at: int) -> None:
            nonlocal cur
            if cur is not None:
                problem(f"transaction {cur.gtid or ''} (line {cur.line}) has no COMMIT before "
                        f"the next GTID event", cur.line)
                if cur is not None and cur.bad is not None:
                    self.skipped.append(Skipped(cur.bad[0], cur.gtid, cur.bad[1]))
            cur = _Open(line=at, file=self.file, **fields)
            self._rotated = False

        def statement(text: str, at: int) -> Txn | None:
            """A complete statement of a Query event (or the GTID event's START TRANSACTION)."""
            nonlocal query_db
            s = text.strip()
            u = s.upper()
            if u.startswith("SET ") or s.startswith("/*"):
                m = mariadb.SKIP_PARALLEL_RE.search(s)
                if m:
                    self._allow_parallel = m.group(1) == "0"
                return None
            m = re.match(r"^use `((?:[^`]|``)+)`$", s, re.I)
            if m:
                query_db = m.group(1).replace("``", "`")
                return None
            if cur is None:
                if s:
                    problem(f"statement outside any transaction: {s[:60]!r}", at)
                return None
            if u in ("BEGIN", "START TRANSACTION") or u.startswith("XA START"):
                cur.standalone = False
                cur.in_body = True
                return None
            if u in ("COMMIT", "ROLLBACK") or u.startswith(("XA END", "XA PREPARE", "XA COMMIT", "XA ROLLBACK")):
                if u.startswith("XA END"):
                    return None
                return finish()
            if u.startswith(("SAVEPOINT", "ROLLBACK TO", "RELEASE SAVEPOINT")):
                return None
            if _DML_RE.match(s):
                problem("statement-based DML: row keys unknown (record with binlog_format=ROW): "
                        f"{s[:60]!r}", at)
            else:
                if _ADMIN_RE.match(s):
                    cur.admin = True
                if u.startswith(_DDL_WORDS) or _ADMIN_RE.match(s) or "ddl" in cur.flags:
                    cur.ddl = cur.ddl or not u.startswith(("ANALYZE", "OPTIMIZE", "REPAIR", "CHECK"))
                    for d in _ddl_schemas(s) or ([query_db] if query_db else []):
                        cur.db[d] = None
                    self.catalog.apply_ddl(s, query_db)
                    self._fk_parent_cache.clear()
                elif cur.bad is None:
                    problem(f"unrecognised statement {s[:60]!r}", at)
            if cur.standalone:
                return finish()
            return None

        for text in lines:
            lineno += 1
            line = text.rstrip("\n").rstrip("\r")
            if not line:
                continue
            if base64:
                if line.endswith("'" + STMT_END):
                    base64 = False
                    b64_text.append(line[: -len("'" + STMT_END)])
                    decode_statement()
                    b64_rows = lineno if event == "rows" else 0
                    continue
                if _BASE64_RE.match(line):
                    b64_text.append(line)
                    continue
                base64 = False
                problem("BINLOG statement ends without its closing \"'/*!*/;\"")
            c0 = line[0]
            if c0 == "#":
                if line.startswith("###"):
                    if event not in ("rows",):
                        problem(f"decoded row line outside a rows event: {line[:60]!r}")
                        continue
                    m = ROW_START_RE.match(line)
                    if m:
                        b64_rows = 0
                        flush_row()
                        row = (m.group(1), m.group(2).replace("``", "`"), m.group(3).replace("``", "`"))
                        if cur is not None:
                            cur.rows += 1
                        image = before = after = None
                        continue
                    if row is None:
                        problem(f"decoded row line before its INSERT/UPDATE/DELETE line: {line[:60]!r}")
                        continue
                    if line == "### WHERE":
                        image = before = {}
                        continue
                    if line == "### SET":
                        image = after = {}
                        continue
                    m = COL_RE.match(line)
                    if m and image is not None:
                        image[int(m.group(1))] = _value(m.group(2))
                        continue
                    problem(f"malformed decoded row line {line[:60]!r}")
                    continue
                if line.startswith("# at "):
                    undecoded()
                    flush_row()
                    if meta_pending is not None:
                        self._learn_metadata(meta_pending)
                        meta_pending = None
                    p = line[5:].strip()
                    if not p.isdigit():
                        problem(f"malformed position line {line[:60]!r}")
                    pos = p
                    if event == "query" and stmt:
                        problem("Query event ends without its '/*!*/;' terminator")
                        stmt = []
                    event = None
                    continue
                m = HEADER_RE.match(line)
                if m:
                    undecoded()
                    flush_row()
                    if meta_pending is not None:
                        self._learn_metadata(meta_pending)
                        meta_pending = None
                    if stmt:
                        problem("Query event ends without its '/*!*/;' terminator")
                        stmt = []
                    body = m.group(7).strip()
                    event = "other"
                    if len(m.group(6)) > 20:            # a 64-bit position: at most 20 digits
                        problem(f"malformed end_log_pos {m.group(6)[:30]}...")
                        continue
                    end_pos = int(m.group(6))
                    if cur is not None:
                        cur.events += 1
                        cur.end_pos = end_pos
                    try:
                        ts = self._stamp(m.group(1), m.group(2), m.group(3), m.group(4))
                    except ValueError as e:
                        problem(str(e))
                        continue
                    try:
                        g = mariadb.parse_gtid(body)
                        if g is not None:
                            self.dialects["mariadb"] += 1
                            flags = g["flags"]
                            if self._allow_parallel is not None and self._allow_parallel:
                                flags.add("allow_parallel")
                            start({"gtid": g["gtid"], "commit_id": g["commit_id"], "flags": flags,
                                   "standalone": g["standalone"], "timestamp": ts,
                                   "ddl": "ddl" in flags, **self._first_event(pos, end_pos)}, lineno)
                            event = "gtid"
                            continue
                        g = mysql.parse_gtid(body)
                        if g is not None:
                            self.dialects["mysql"] += 1
                            t_us = g.get("original_committed_timestamp") or g.get("immediate_commit_timestamp")
                            start({"last_committed": g["last_committed"],
                                   "sequence_number": g["sequence_number"],
                                   "timestamp": t_us / 1e6 if t_us else ts,
                                   "length": g.get("transaction_length"),
                                   **self._first_event(pos, end_pos)}, lineno)
                            event = "gtid"
                            continue
                    except ValueError as e:
                        problem(str(e))
                        if cur is None:
                            # resume at the next good GTID; this group's events are dropped
                            cur = _Open(line=lineno, file=self.file, bad=(lineno, str(e)))
                        continue
                    if body.startswith("Table_map:"):
                        mt = TABLE_MAP_RE.match(body)
                        if not mt:
                            problem(f"malformed Table_map event {body[:60]!r}")
                            continue
                        self._meta[int(mt.group(3))] = (mt.group(1), mt.group(2))
                        meta_pending = [mt.group(1).replace("``", "`"), mt.group(2).replace("``", "`"), None, None]
                        event = "table_map"
                        if cur is None:
                            problem("Table_map event outside any transaction")
                        continue
                    mr = ROWS_EV_RE.match(body)
                    if mr:
                        if int(mr.group(2)) not in self._meta:
                            problem(f"rows event for table id {mr.group(2)} with no Table_map")
                        if cur is None:
                            problem("rows event outside any transaction")
                        event = "rows"
                        continue
                    mq = QUERY_EV_RE.match(body)
                    if mq:
                        event = "query"
                        if cur is not None and cur.session is None:
                            cur.session = int(mq.group(1))
                        continue
                    if body.startswith("Xid = ") or body.startswith("XID = "):
                        event = "xid"
                        continue
                    if body.startswith("Rotate to ") and end_pos == 0:
                        # artificial (time 0, end_log_pos 0): a printer reading from a server
                        # names the file that follows; no file ends here
                        event = "rotate"
                        continue
                    if body.startswith("Rotate to "):
                        if cur is not None:
                            problem("Rotate event inside a transaction")
                        self.file += 1
                        self._rotated = True
                        event = "rotate"
                        continue
                    if body.startswith("Start: binlog v") or body.startswith("Format_desc"):
                        # each binlog file opens with this event: a second one in the same file
                        # index with no Rotate before it means the next file's text follows
                        if self._rotated:
                            self._rotated = False
                        elif self._start_file == self.file:
                            self.file += 1
                        self._start_file = self.file
                        m = SERVER_V_RE.search(body)
                        if m and _before_57(m.group(1)):
                            raise InputError(lineno, f"a MySQL {m.group(1)} binlog: "
                                             f"{BEFORE_57}")
                        if m and self.server_version is None:
                            self.server_version = m.group(1)
                        event = "start"
                        continue
                    if body.startswith("Incident"):
                        problem("Incident event: the source marked a gap in its binlog")
                        continue
                    if body.startswith(("Stop", "Gtid list", "Binlog checkpoint", "Previous-GTIDs",
                                        "Intvar", "User_var", "Rand", "Annotate_rows", "Rows_query",
                                        "Heartbeat", "Start_encryption", "Execute_load_query",
                                        "Begin_load_query", "Append_block", "Delete_file",
                                        "Transaction_payload", "Transaction_context",
                                        "View_change", "XA PREPARE", "Unknown")):
                        continue
                    if body.startswith(("Write_rows", "Update_rows", "Delete_rows", "Write_compressed",
                                        "Update_compressed", "Delete_compressed")):
                        problem(f"unknown rows event form {body[:60]!r}")
                        continue
                    continue  # an event we do not need
                if line.startswith("# Columns("):
                    if meta_pending is not None:
                        meta_pending[2] = [line[len("# Columns("):]]
                    continue
                if meta_pending is not None and meta_pending[2] is not None and meta_pending[3] is None \
                        and line.startswith("#         "):
                    meta_pending[2].append(line[1:])
                    continue
                if line.startswith("# Primary Key(") and meta_pending is not None:
                    meta_pending[3] = line[len("# Primary Key("):].rstrip().rstrip(")")
                    continue
                if line.startswith("# End of log file"):
                    ended = True
                    continue
                if not line.startswith("#"):
                    problem(f"unreadable line {line[:60]!r}")
                continue  # other comments: annotations (#Q>), original_commit_timestamp, ...
            # ---- a line that is not a comment: SQL text of the current event
            if line.startswith("DELIMITER "):
                preamble = True
                continue
            if line.startswith("ROLLBACK /* added by mysqlbinlog */") or line.startswith("/*!50003 SET") \
                    or line.startswith("/*!50530 SET") or line.startswith("/*!40019 SET"):
                continue
            if line.startswith("BINLOG '"):
                # the event again in base64: with -v its decoded rows follow it
                base64 = not line.endswith("'" + STMT_END)
                b64_text = [line[len("BINLOG '"):]]
                if not base64:
                    b64_text[0] = b64_text[0][: -len("'" + STMT_END)]
                    decode_statement()
                b64_rows = lineno if not base64 and event == "rows" else 0
                continue
            if event in ("rows", "table_map"):
                problem(f"unexpected text inside a {event} event: {line[:60]!r}")
                continue
            if event == "gtid":
                m = mysql.GTID_NEXT_RE.match(line)
                if m and cur is not None:
                    if m.group(1) != "ANONYMOUS":
                        cur.gtid = m.group(1)
                    continue
                if line.startswith("/*M!100101 SET @@session.skip_parallel_replication="):
                    m = mariadb.SKIP_PARALLEL_RE.search(line)
                    if m is None:
                        problem(f"malformed skip_parallel_replication line {line[:60]!r}")
                        continue
                    self._allow_parallel = m.group(1) == "0"
                    if cur is not None:
                        (cur.flags.add if self._allow_parallel else cur.flags.discard)("allow_parallel")
                    continue
                if line.startswith("/*"):
                    continue  # session settings carried by the GTID event
                if line == "START TRANSACTION" or line == STMT_END:
                    if line == "START TRANSACTION" and cur is not None:
                        cur.standalone = False
                        cur.in_body = True
                    continue
                if line.startswith("XA START"):
                    continue
                problem(f"unexpected text after a GTID event: {line[:60]!r}")
                continue
            if event == "xid":
                if line == "COMMIT" + STMT_END or line == "COMMIT":
                    if cur is None:
                        problem("COMMIT outside any transaction")
                        continue
                    t = finish()
                    event = None  # printer trailers (GTID_NEXT='AUTOMATIC') may follow
                    if t is not None:
                        yield t
                    continue
                problem(f"unexpected text after an Xid event: {line[:60]!r}")
                continue
            if event == "query":
                if line.endswith(STMT_END):
                    stmt.append(line[: -len(STMT_END)])
                    full = "\n".join(stmt)
                    stmt = []
                    t = statement(full, lineno)
                    if t is not None:
                        yield t
                else:
                    stmt.append(line)
                continue
            if event in ("start", "other", "rotate", None):
                if line.startswith("/*") or line.startswith("SET ") or line == STMT_END \
                        or line.startswith("use ") or line == "ROLLBACK" + STMT_END:
                    continue
            problem(f"unreadable line {line[:60]!r}")
        # ---- end of this input
        if base64:
            problem("input ends inside a BINLOG statement (truncated?)")
        undecoded()
        flush_row()
        if stmt:
            problem("input ends inside a Query event (truncated?)")
        if cur is not None:
            problem(f"input ends inside transaction {cur.gtid or ''} begun at line {cur.line}: "
                    "truncated?", lineno)
            if cur is not None and cur.bad is not None:
                self.skipped.append(Skipped(cur.bad[0], cur.gtid, cur.bad[1]))
            cur = None
        if preamble and not ended:
            problem("input ends without '# End of log file': truncated", lineno)

    def _learn_metadata(self, meta: list) -> None:
        db, name, col_lines, pk = meta
        if col_lines is None:
            return
        text = " ".join(s.strip() for s in col_lines).strip()
        if text.endswith(")"):
            text = text[:-1]
        known = self.catalog.get(db, name)
        # every Table_map repeats the metadata: parse it only when it changes
        if known is not None and self._meta_seen.get((db, name)) == (text, pk, id(known)):
            return
        self._meta_seen[(db, name)] = (text, pk, id(known))
        meta_t = table_from_metadata(db, name, text, pk)
        if known is not None and known.origin != "table-map metadata":
            if len(known.columns) != len(meta_t.columns):
                self.catalog.forget(db, name, f"schema gives {len(known.columns)} columns, the "
                                              f"binlog's table map {len(meta_t.columns)}")
            return
        if known is None and (db.lower(), name.lower()) in self.catalog.unknown:
            return
        if known is not None:
            # keep UNIQUE keys an ALTER TABLE in the log added to a metadata-only table
            for index, cols in known.unique.items():
                if index != "PRIMARY" and all(c.lower() in meta_t.columns_lower for c in cols):
                    meta_t.unique.setdefault(index, cols)
            meta_t.fks = known.fks
        self.catalog.add(meta_t)
        self._meta_seen[(db, name)] = (text, pk, id(meta_t))
        self.metadata_tables.add(f"{db}.{name}")
        self._fk_parent_cache.clear()
