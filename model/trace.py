"""The trace format v1 (design §3, docs/trace-format.md): loading, validation, writing.

A trace is JSON Lines: a header line, then one transaction per line in source binlog order.
Loading validates as it reads; a bad file raises `TraceError` naming the file, the line and
what is wrong. Writing is atomic (temporary file + rename), so nothing is ever half-written.
"""
from __future__ import annotations

import gzip
import io
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import IO, Iterable, Iterator

FORMAT = "commitsched-trace"
VERSION = 1

# MariaDB GTID flags a trace may carry (semantics.md §3.1), by their trace spelling.
MARIADB_FLAGS = ("ddl", "waited", "transactional", "allow_parallel")

_TXN_FIELDS = (
    "seq", "writes", "before_images", "gtid", "file", "last_committed", "sequence_number", "commit_id",
    "flags", "session", "db", "ddl", "admin", "no_pk", "fk_parent", "exec", "commit",
    "timestamp", "events", "bytes", "rows", "write_set_size",
)


class TraceError(Exception):
    """A trace that cannot be used, with where and why: `file:line: reason`."""

    def __init__(self, path: str, line: int | None, reason: str):
        self.path, self.line, self.reason = path, line, reason
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")


class Txn:
    """One source transaction. `writes` are row keys `db.table/INDEX=v1,v2` (design §3)."""

    __slots__ = _TXN_FIELDS

    def __init__(self, seq: int, writes: Iterable[str] = (), *,
                 before_images: Iterable[str] = (), gtid: str | None = None,
                 file: int = 1, last_committed: int | None = None,
                 sequence_number: int | None = None, commit_id: int | None = None,
                 flags: frozenset[str] = frozenset(), session: int | str | None = None,
                 db: tuple[str, ...] | None = None, ddl: bool = False, admin: bool = False,
                 no_pk: bool = False, fk_parent: bool = False, exec: float | None = None,
                 commit: float | None = None, timestamp: float | None = None,
                 events: int | None = None, bytes: int | None = None, rows: int | None = None,
                 write_set_size: int | None = None):
        self.seq = seq
        # An UPDATE that keeps a key lists it in both images: a key is written once.
        self.writes = tuple(dict.fromkeys(writes))
        # Keys that only an UPDATE's before image contributes (a changed unique value): part of
        # `writes`, listed again so that `before_image_ignored` can be modelled.
        self.before_images = tuple(before_images)
        self.gtid = gtid
        self.file = file
        self.last_committed = last_committed
        self.sequence_number = sequence_number
        self.commit_id = commit_id
        self.flags = frozenset(flags)
        self.session = session
        self.db = tuple(db) if db is not None else None
        self.ddl = ddl
        self.admin = admin
        self.no_pk = no_pk
        self.fk_parent = fk_parent
        self.exec = exec
        self.commit = commit
        self.timestamp = timestamp
        # Size in the source binlog (docs/trace-format.md): what the replica's driver / coordinator
        # reads, parses and queues one event at a time.
        self.events = events
        self.bytes = bytes
        self.rows = rows
        # How many hashes MySQL 8's write-set vector holds: one per key per row image, so an
        # UPDATE that keeps its key hashes it twice (None: as many as `writes`). Only the
        # WRITESET history's capacity check counts duplicates (design: docs/mysql-tests.md).
        self.write_set_size = write_set_size

    @property
    def schemas(self) -> tuple[str, ...]:
        """Schemas touched: the `db` field when given, else the schemas of the write keys."""
        if self.db is not None:
            return self.db
        writes = self.writes
        if not writes:
            return ()
        first = writes[0][: writes[0].find(".") + 1]      # "db." (the common case: one schema)
        if all(k.startswith(first) for k in writes):
            return (first[:-1],)
        return tuple(dict.fromkeys(k.partition(".")[0] for k in writes))

    def to_json(self) -> dict:
        """The JSON object of this transaction, omitting fields at their defaults."""
        out: dict = {"seq": self.seq, "writes": list(self.writes)}
        for name in _TXN_FIELDS[2:]:
            value = getattr(self, name)
            if name == "file" and value == 1:
                continue
            if value is None or value is False or (name in ("flags", "before_images") and not value):
                continue
            if name == "flags":
                value = sorted(value)
            elif name in ("db", "before_images"):
                value = list(value)
            out[name] = value
        return out

    def __repr__(self) -> str:
        return f"Txn({self.to_json()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Txn) and self.to_json() == other.to_json()


@dataclass
class Trace:
    """A loaded trace: its header's `source` object and its transactions in binlog order."""

    txns: list[Txn]
    source: dict = field(default_factory=dict)
    path: str = "<memory>"

    def __len__(self) -> int:
        return len(self.txns)

    def __iter__(self) -> Iterator[Txn]:
        return iter(self.txns)


def header(source: dict | None = None) -> dict:
    return {"format": FORMAT, "version": VERSION, "source": dict(source or {})}


# ---------------------------------------------------------------- reading

def _open_text(path: str) -> IO[str]:
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, "r", encoding="utf-8")


def _is_int(v: object) -> bool:
    return type(v) is int


def _is_number(v: object) -> bool:
    return (type(v) is int or type(v) is float) and math.isfinite(v)


def _check_header(obj: object, path: str) -> dict:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise TraceError(path, 1, f'the first line must be the header {{"format": "{FORMAT}", '
                                  f'"version": {VERSION}, "source": {{...}}}}')
    if obj.get("version") != VERSION:
        raise TraceError(path, 1, f"unknown trace format version {obj.get('version')!r} "
                                  f"(this commitsched reads version {VERSION})")
    source = obj.get("source", {})
    if not isinstance(source, dict):
        raise TraceError(path, 1, '"source" must be an object')
    return source


_FIELDS = frozenset(_TXN_FIELDS)
_INT_FIELDS = ("file", "last_committed", "sequence_number", "commit_id", "events", "bytes", "rows")
_BOOL_FIELDS = ("ddl", "admin", "no_pk", "fk_parent")
_FLAG_SETS: dict[tuple, frozenset] = {}   # the few distinct flag lists, shared
_NO_FLAGS = frozenset()


def _parse_txn(obj: object, path: str, line: int) -> Txn:
    """Check one transaction object's fields (not its place in the trace) and build it.
    Written for speed (it runs once per line of multi-million-line traces): direct slot
    assignment, no keyword dictionaries."""
    def bad(reason: str) -> TraceError:
        return TraceError(path, line, reason)

    if type(obj) is not dict:
        raise bad("a transaction must be a JSON object")
    if not _FIELDS.issuperset(obj):
        unknown = sorted(set(obj) - _FIELDS)
        raise bad(f"unknown field(s) {', '.join(unknown)}; "
                  f"a v1 transaction has {', '.join(_TXN_FIELDS)}")
    seq = obj.get("seq")
    if seq is None:
        raise bad('missing "seq"')
    if type(seq) is not int or seq < 1:
        raise bad(f'"seq" must be a positive integer, got {seq!r}')
    writes = obj.get("writes")
    if writes is None:
        raise bad('missing "writes" (use [] for a transaction that writes no row)')
    if type(writes) is not list:
        raise bad('"writes" must be a list of row keys')
    for key in writes:
        if type(key) is not str:
            raise bad(f"row key {key!r} is not a string")
        slash = key.find("/")
        if slash < 0 or key.find(".", 0, slash) < 0 or key.find("=", slash) < 0:
            raise bad(f"row key {key!r} is not of the form db.table/INDEX=v1,v2")
    txn = Txn.__new__(Txn)
    txn.seq = seq
    txn.writes = tuple(dict.fromkeys(writes)) if len(set(writes)) != len(writes) else tuple(writes)
    before = obj.get("before_images")
    if before is None:
        txn.before_images = ()
    elif type(before) is not list or not set(before) <= set(writes):
        raise bad('"before_images" must be a list of keys that are also in "writes"')
    else:
        txn.before_images = tuple(before)
    for name in _INT_FIELDS:
        v = obj.get(name)
        if v is not None and (type(v) is not int or v < 0):
            raise bad(f'"{name}" must be a non-negative integer, got {v!r}')
    f = obj.get("file", 1)
    if f < 1:
        raise bad('"file" (binlog file index) must be at least 1')
    txn.file = f
    lc, sn = obj.get("last_committed"), obj.get("sequence_number")
    if (lc is None) != (sn is None):
        raise bad('"last_committed" and "sequence_number" come together')
    if sn is not None and lc >= sn:
        raise bad(f"last_committed ({lc}) must be below sequence_number ({sn})")
    txn.last_committed, txn.sequence_number = lc, sn
    txn.commit_id = obj.get("commit_id")
    txn.events, txn.bytes, txn.rows = obj.get("events"), obj.get("bytes"), obj.get("rows")
    for name in ("exec", "commit"):
        v = obj.get(name)
        if v is not None:
            if not _is_number(v):
                raise bad(f'cost "{name}" must be a number, got {v!r}')
            if v < 0:
                raise bad(f'negative cost "{name}": {v}')
            v = float(v)
        setattr(txn, name, v)
    ts = obj.get("timestamp")
    if ts is not None and not _is_number(ts):
        raise bad(f'"timestamp" must be a number, got {ts!r}')
    txn.timestamp = ts
    for name in _BOOL_FIELDS:
        v = obj.get(name, False)
        if type(v) is not bool:
            raise bad(f'"{name}" must be true or false')
        setattr(txn, name, v)
    flags = obj.get("flags")
    if flags is None:
        txn.flags = _NO_FLAGS
    else:
        key = tuple(flags) if type(flags) is list else None
        shared = _FLAG_SETS.get(key) if key is not None else None
        if shared is None:
            if type(flags) is not list or any(f not in MARIADB_FLAGS for f in flags):
                raise bad(f'"flags" must be a list of {", ".join(MARIADB_FLAGS)}; got {flags!r}')
            shared = _FLAG_SETS[key] = frozenset(flags)
        txn.flags = shared
    s = obj.get("session")
    if s is not None and not (type(s) is str or type(s) is int):
        raise bad('"session" must be a string or an integer')
    txn.session = s
    d = obj.get("db")
    if d is not None:
        if type(d) is not list or not all(type(x) is str for x in d):
            raise bad('"db" must be a list of schema names')
        d = tuple(d)
    txn.db = d
    g = obj.get("gtid")
    if g is not None and type(g) is not str:
        raise bad('"gtid" must be a string')
    txn.gtid = g
    w = obj.get("write_set_size")
    if w is not None and (type(w) is not int or w < len(txn.writes)):
        raise bad(f'"write_set_size" must be an integer no smaller than the number of '
                  f'"writes" ({len(txn.writes)}), got {w!r}')
    txn.write_set_size = w
    return txn


class _OrderCheck:
    """Checks what one line cannot: seq numbering and the order of files and clocks."""

    def __init__(self, path: str):
        self.path = path
        self.prev: Txn | None = None

    def __call__(self, txn: Txn, line: int) -> None:
        prev = self.prev
        expected = 1 if prev is None else prev.seq + 1
        if txn.seq != expected:
            if prev is not None and txn.seq == prev.seq:
                reason = f"duplicate seq {txn.seq}"
            elif prev is not None and txn.seq < prev.seq:
                reason = f"seq {txn.seq} after seq {prev.seq}: seq must increase in binlog order"
            else:
                reason = f"seq {txn.seq} where {expected} was expected (seq counts 1, 2, ... with no gap)"
            raise TraceError(self.path, line, reason)
        if prev is not None:
            if txn.file < prev.file:
                raise TraceError(self.path, line, f"file {txn.file} after file {prev.file}: "
                                                  "binlog files must not go back")
            if (txn.file == prev.file and txn.sequence_number is not None
                    and prev.sequence_number is not None
                    and txn.sequence_number <= prev.sequence_number):
                raise TraceError(self.path, line,
                                 f"sequence_number {txn.sequence_number} is not above the previous "
                                 f"transaction's {prev.sequence_number} in the same binlog file")
        self.prev = txn


def iter_trace(path: str) -> tuple[dict, Iterator[Txn]]:
    """Open a trace for streaming: its header's `source`, and an iterator that validates as it
    goes (raising `TraceError` at the first bad line)."""
    try:
        fh = _open_text(path)
        first = fh.readline()
    except FileNotFoundError:
        raise TraceError(path, None, "no such file") from None
    except IsADirectoryError:
        raise TraceError(path, None, "is a directory, not a trace file") from None
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise TraceError(path, None, f"cannot read: {e}") from None
    if not first.strip():
        fh.close()
        raise TraceError(path, 1, "empty file: a trace starts with its header line")
    try:
        head = json.loads(first)
    except json.JSONDecodeError as e:
        fh.close()
        raise TraceError(path, 1, f"bad JSON: {e.msg} at column {e.colno}") from None
    source = _check_header(head, path)

    def txns() -> Iterator[Txn]:
        check = _OrderCheck(path)
        loads = json.loads
        line = 1
        with fh:
            try:
                for text in fh:
                    line += 1
                    if not text.strip():
                        continue
                    try:
                        obj = loads(text)
                    except json.JSONDecodeError as e:
                        raise TraceError(path, line, f"bad JSON: {e.msg} at column {e.colno}") from None
                    txn = _parse_txn(obj, path, line)
                    check(txn, line)
                    yield txn
            except (OSError, UnicodeDecodeError, EOFError) as e:
                raise TraceError(path, line + 1, f"cannot read: {e}") from None

    return source, txns()


def load_trace(path: str) -> Trace:
    """Load and validate a whole trace into memory."""
    source, txns = iter_trace(path)
    return Trace(list(txns), source, path)


def trace_from_dicts(objs: Iterable[dict], source: dict | None = None,
                     path: str = "<memory>") -> Trace:
    """Build a validated trace from transaction objects (tests, generators, importers)."""
    check = _OrderCheck(path)
    txns = []
    for line, obj in enumerate(objs, start=2):
        txn = _parse_txn(obj, path, line)
        check(txn, line)
        txns.append(txn)
    return Trace(txns, dict(source or {}), path)


# ---------------------------------------------------------------- writing

def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_jsonl_atomic(path: str, lines: Iterable[dict]) -> None:
    """Write JSON objects one per line to `path` atomically (gzip when it ends in .gz)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=directory)
    os.chmod(tmp, _umask_mode())     # mkstemp makes 0600; a written file gets the usual mode
    try:
        with os.fdopen(fd, "wb") as raw:
            # Level 6: nearly level 9's size at a fraction of its time; mtime 0: reproducible.
            sink = (gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6)
                    if path.endswith(".gz") else raw)
            with io.TextIOWrapper(sink, encoding="utf-8", newline="\n") as out:
                dumps = json.dumps
                for obj in lines:
                    out.write(dumps(obj, separators=(",", ":")))
                    out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str, text: str) -> None:
    """Write a text file atomically (temporary file in the same folder + rename)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=directory)
    os.chmod(tmp, _umask_mode())
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_trace(path: str, txns: Iterable[Txn], source: dict | None = None) -> None:
    """Write a trace atomically: header, then one transaction per line."""
    def lines() -> Iterator[dict]:
        yield header(source)
        for txn in txns:
            yield txn.to_json()
    write_jsonl_atomic(path, lines())
