"""The trace format v1 (design §3, docs/trace-format.md): loading, validation, writing.

A trace is JSON Lines: a header line, then one transaction per line in source binlog order.
Loading validates as it reads; a bad file raises `TraceError` naming the file, the line and
what is wrong. Writing is atomic (temporary file + rename), so nothing is ever half-written.
"""
from __future__ import annotations

import gc
import gzip
import io
import itertools
import json
import math
import operator
import os
import re
import shutil
import tempfile
import zlib
from dataclasses import dataclass, field
from typing import IO, Annotated, Iterable, Iterator, Literal, Optional, Union

import msgspec
from isal import igzip, isal_zlib

FORMAT = "commitsched-trace"
# Version 2 adds `keys_unknown` and `keys_partial` (docs/trace-format.md); a trace that has
# neither is written as version 1, which every earlier commitsched reads. Both are read.
VERSION = 2
VERSIONS = (1, 2)

# MariaDB GTID flags a trace may carry (semantics.md §3.1), by their trace spelling.
MARIADB_FLAGS = ("ddl", "waited", "transactional", "allow_parallel")

_TXN_FIELDS = (
    "seq", "writes", "before_images", "gtid", "file", "last_committed", "sequence_number", "commit_id",
    "flags", "session", "db", "ddl", "admin", "no_pk", "fk_parent", "exec", "commit",
    "timestamp", "events", "bytes", "rows", "write_set_size", "replica_locks",
    "keys_unknown", "keys_partial",
)
# The fields version 2 added: a trace holding any of them is written as version 2.
_V2_FIELDS = ("keys_unknown", "keys_partial")
_TABLE_LISTS = ("keys_unknown", "keys_partial")


class TraceError(Exception):
    """A trace that cannot be used, with where and why: `file:line: reason`."""

    def __init__(self, path: str, line: int | None, reason: str):
        self.path, self.line, self.reason = path, line, reason
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")


# Field types double as the fast decoder's schema (msgspec checks them in C while decoding a
# line); constructing a Txn in code checks nothing, as before.
_NonNeg = Annotated[int, msgspec.Meta(ge=0)]
_Cost = Annotated[float, msgspec.Meta(ge=0)]
_Int64 = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_Flag = Literal["ddl", "waited", "transactional", "allow_parallel"]
_Table = Annotated[str, msgspec.Meta(pattern=r"\.")]     # db.table
# The few distinct flag sets, shared: each seen as a frozenset, or as the tuple a trace line
# decodes to (short ones only: a line may repeat a flag any number of times), to its one set.
_NO_FLAGS: frozenset = frozenset()
_FLAG_SETS: dict[frozenset | tuple, frozenset] = {_NO_FLAGS: _NO_FLAGS, (): _NO_FLAGS}


def _share_flags(flags) -> frozenset:
    shared = frozenset(flags)
    shared = _FLAG_SETS.setdefault(shared, shared)
    if type(flags) is tuple and len(flags) <= len(MARIADB_FLAGS):
        _FLAG_SETS[flags] = shared
    return shared


class _TxnMeta(type(msgspec.Struct)):
    """`Txn(...)` in code normalises what its caller may pass loosely (`_normalise`). Decoding a
    trace line does not come through here (msgspec builds the struct in C; a decoded line never
    holds those loose forms): the loader normalises a decoded chunk in the same pass that checks
    it (`_settle`). A `__post_init__` would run for every decoded line too, and cost a fifth of
    the load."""

    def __call__(cls, *args, **kwargs):
        txn = super().__call__(*args, **kwargs)
        _normalise(txn)
        return txn


class _TxnHead(msgspec.Struct, gc=False):
    seq: Annotated[int, msgspec.Meta(ge=1)]
    writes: tuple[str, ...]


class Txn(_TxnHead, metaclass=_TxnMeta, kw_only=True, forbid_unknown_fields=True, gc=False):
    """One source transaction. `writes` are row keys `db.table/INDEX=v1,v2` (design §3).

    Not tracked by the cycle collector (gc=False): a Txn holds only strings, numbers, tuples
    and frozensets, never a cycle, and a loaded trace of millions of them would otherwise be
    walked by every full collection of everything that runs after the load.

    `Txn(seq, writes, gtid=..., ...)`; the fields are the trace format's (docs/trace-format.md).
    Built so, it is normalised: lists become tuples, a key repeated in `writes` counts once,
    `flags` (any iterable) becomes its shared frozenset, `file=None` is 1. Setting a field
    afterwards (or `msgspec.structs.replace`) normalises nothing: give tuples and frozensets.
    """

    # Keys that only an UPDATE's before image contributes (a changed unique value): part of
    # `writes`, listed again so that `before_image_ignored` can be modelled.
    before_images: tuple[str, ...] = ()
    gtid: Optional[str] = None
    file: Optional[Annotated[int, msgspec.Meta(ge=1)]] = 1
    last_committed: Optional[_NonNeg] = None
    sequence_number: Optional[_NonNeg] = None
    commit_id: Optional[_NonNeg] = None
    # A frozenset once built (shared: _normalise, _settle). The annotation is the
    # decoder's schema: a line's flags decode to a tuple, which the loader turns into its shared
    # set by one dict lookup, cheaper than decoding a new frozenset per line.
    flags: tuple[_Flag, ...] = _NO_FLAGS
    session: Union[int, str, None] = None
    db: Optional[tuple[str, ...]] = None
    ddl: bool = False
    admin: bool = False
    no_pk: bool = False
    fk_parent: bool = False
    exec: Optional[_Cost] = None
    commit: Optional[_Cost] = None
    timestamp: Union[_Int64, float, None] = None   # a bigger int: the careful path decides
    # Size in the source binlog (docs/trace-format.md): what the replica's driver / coordinator
    # reads, parses and queues one event at a time.
    events: Optional[_NonNeg] = None
    bytes: Optional[_NonNeg] = None
    rows: Optional[_NonNeg] = None
    # How many hashes MySQL 8's write-set vector holds: one per key per row image, so an
    # UPDATE that keeps its key hashes it twice (None: as many as `writes`). Only the
    # WRITESET history's capacity check counts duplicates (design: docs/mysql-tests.md).
    write_set_size: Optional[_NonNeg] = None
    # Row keys the replica locks beyond `writes` that the source never locked (gap locks,
    # another plan's index scan: semantics.md §1.8), taken at the transaction's last
    # statement; the cause of commit-order deadlocks (model/applier_mysql.py).
    replica_locks: tuple[str, ...] = ()
    # Tables (`db.table`) whose rows this transaction changed but whose keys are not in `writes`
    # (version 2): their definition was unknown at import (no schema), or, `keys_partial`, the
    # row images lacked some key's columns (binlog_row_image=MINIMAL: the primary key is there,
    # UNIQUE keys need not be). A scheduler that needs keys says so (model/keys.py).
    keys_unknown: tuple[_Table, ...] = ()
    keys_partial: tuple[_Table, ...] = ()

    @property
    def schemas(self) -> tuple[str, ...]:
        """Schemas touched: the `db` field when given, else the schemas of the write keys (and
        of the tables whose keys are unknown)."""
        if self.db is not None:
            return self.db
        writes = self.writes
        if self.keys_unknown:
            return tuple(dict.fromkeys([k.partition(".")[0] for k in writes]
                                       + [t.partition(".")[0] for t in self.keys_unknown]))
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
            if value is None or value is False or (name in _EMPTY_OMITTED and not value):
                continue
            if name == "flags":
                value = sorted(value)
            elif name in _LISTS:
                value = list(value)
            out[name] = value
        return out

    def __repr__(self) -> str:
        return f"Txn({self.to_json()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Txn) and self.to_json() == other.to_json()


_EMPTY_OMITTED = ("flags", "before_images", "replica_locks") + _TABLE_LISTS
_LISTS = ("db", "before_images", "replica_locks") + _TABLE_LISTS


def _normalise(txn: Txn) -> None:
    """What `Txn(...)` does after building: normalise what code may pass loosely (lists, sets,
    None for file 1), remove repeated keys from `writes`, share the few flag sets."""
    writes = txn.writes
    if type(writes) is tuple:
        n = len(writes)             # repeats are rare: few keys are compared, not hashed
        if n > 1 and (writes[0] == writes[1] if n == 2 else
                      (writes[0] == writes[1] or writes[0] == writes[2] or writes[1] == writes[2])
                      if n == 3 else len(set(writes)) != n):
            # An UPDATE that keeps a key lists it in both images: a key is written once.
            txn.writes = tuple(dict.fromkeys(writes))
    else:
        txn.writes = tuple(dict.fromkeys(writes))
    flags = txn.flags
    if flags:
        try:
            shared = _FLAG_SETS[flags]
        except (KeyError, TypeError):       # a set not seen yet, or a list
            shared = _share_flags(flags)
        if shared is not flags:
            txn.flags = shared
    elif flags is not _NO_FLAGS:
        txn.flags = _NO_FLAGS
    if txn.file is None:            # null: absent, as for every other optional field
        txn.file = 1
    if type(txn.before_images) is not tuple:
        txn.before_images = tuple(txn.before_images)
    if type(txn.replica_locks) is not tuple:
        txn.replica_locks = tuple(txn.replica_locks)
    for name in _TABLE_LISTS:
        tables = getattr(txn, name)
        if type(tables) is not tuple:
            setattr(txn, name, tuple(tables))
    if txn.db is not None and type(txn.db) is not tuple:
        txn.db = tuple(txn.db)


@dataclass
class Trace:
    """A loaded trace: its header's `source` object and its transactions in binlog order."""

    txns: list[Txn]
    source: dict = field(default_factory=dict)
    path: str = "<memory>"
    version: int = 1                # of the file's header (VERSIONS)

    def __len__(self) -> int:
        return len(self.txns)

    def __iter__(self) -> Iterator[Txn]:
        return iter(self.txns)


def header(source: dict | None = None, version: int = 1) -> dict:
    """The header line; `version` 2 for a trace that has version 2's fields (`needs_v2`)."""
    return {"format": FORMAT, "version": version, "source": dict(source or {})}


def needs_v2(txn: Txn) -> bool:
    """Whether a transaction has a field only version 2 of the format knows."""
    return bool(txn.keys_unknown or txn.keys_partial)


# ---------------------------------------------------------------- reading
#
# Two decoders, one behaviour. The fast one (msgspec, typed) checks types, ranges and the row-key
# form in C; it only ever accepts what the careful one (json + `_parse_txn`) accepts, with the
# same values. Any line the fast one refuses is decoded again by the careful one, which names the
# problem exactly as before. So speed changes nothing a user sees except the time.

# Documented input limits (docs/trace-format.md), each with its own one-line error.
MAX_LINE_BYTES = 64 << 20          # a transaction line (1.5 M row keys of ~40 bytes)
MAX_JSON_DEPTH = 64                 # nesting: a transaction needs 2 levels
_BLOCK = 1 << 20


def _is_int(v: object) -> bool:
    return type(v) is int


def _is_number(v: object) -> bool:
    try:
        return (type(v) is int or type(v) is float) and math.isfinite(v)
    except OverflowError:           # an integer too large for a float
        return False


def _show(v: object) -> str:
    """repr() for a message, cut short: a value may be megabytes of input."""
    try:
        text = repr(v)
    except ValueError:              # an int too long to print (sys.int_info)
        return "<an integer too long to show>"
    return text if len(text) <= 80 else text[:60] + f"... ({len(text)} characters)"


def _check_header(obj: object, path: str) -> tuple[dict, int]:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise TraceError(path, 1, f'the first line must be the header {{"format": "{FORMAT}", '
                                  f'"version": {VERSION}, "source": {{...}}}}')
    if obj.get("version") not in VERSIONS or type(obj.get("version")) is not int:
        raise TraceError(path, 1, f"unknown trace format version {_show(obj.get('version'))} "
                                  f"(this commitsched reads versions "
                                  f"{', '.join(map(str, VERSIONS))})")
    source = obj.get("source", {})
    if not isinstance(source, dict):
        raise TraceError(path, 1, '"source" must be an object')
    return source, obj["version"]


def _json_depth_ok(text: str) -> bool:
    """Whether brackets nest at most MAX_JSON_DEPTH deep (a cheap upper bound: brackets inside
    strings count too, so it can only refuse lines that are odd anyway)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return True
    depth = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _decode_json(raw: bytes | str, path: str, line: int) -> object:
    """The careful decoder: one place that turns every way a line can fail to decode into
    `TraceError` (bad UTF-8, bad JSON, nesting, integer literals past Python's digit limit)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as e:
        raise TraceError(path, line, f"cannot read: {e}") from None
    if not _json_depth_ok(text):
        raise TraceError(path, line, f"bad JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise TraceError(path, line, f"bad JSON: {e.msg} at column {e.colno}") from None
    except (ValueError, RecursionError) as e:    # e.g. "Exceeds the limit (4300 digits)"
        raise TraceError(path, line, f"bad JSON: {str(e).splitlines()[0][:120]}") from None


_FIELDS = frozenset(_TXN_FIELDS)
_INT_FIELDS = ("file", "last_committed", "sequence_number", "commit_id", "events", "bytes", "rows")
_BOOL_FIELDS = ("ddl", "admin", "no_pk", "fk_parent")


def _parse_txn(obj: object, path: str, line: int) -> Txn:
    """Check one transaction object's fields (not its place in the trace) and build it: the
    careful path, whose messages are the reference."""
    def bad(reason: str) -> TraceError:
        return TraceError(path, line, reason)

    if type(obj) is not dict:
        raise bad("a transaction must be a JSON object")
    if not _FIELDS.issuperset(obj):
        unknown = sorted(set(obj) - _FIELDS)
        raise bad(f"unknown field(s) {', '.join(u if len(u) <= 80 and u.isprintable() else _show(u) for u in unknown)}; "
                  f"a transaction has {', '.join(_TXN_FIELDS)}")
    seq = obj.get("seq")
    if seq is None:
        raise bad('missing "seq"')
    if type(seq) is not int or seq < 1:
        raise bad(f'"seq" must be a positive integer, got {_show(seq)}')
    writes = obj.get("writes")
    if writes is None:
        raise bad('missing "writes" (use [] for a transaction that writes no row)')
    if type(writes) is not list:
        raise bad('"writes" must be a list of row keys')
    for key in writes:
        if type(key) is not str:
            raise bad(f"row key {_show(key)} is not a string")
        slash = key.find("/")
        if slash < 0 or key.find(".", 0, slash) < 0 or key.find("=", slash) < 0:
            raise bad(f"row key {_show(key)} is not of the form db.table/INDEX=v1,v2")
    if len(set(writes)) != len(writes):
        writes = list(dict.fromkeys(writes))
    before = obj.get("before_images")
    if before is not None and (type(before) is not list or not all(type(k) is str for k in before)
                               or not set(before) <= set(writes)):
        raise bad('"before_images" must be a list of keys that are also in "writes"')
    xl = obj.get("replica_locks")
    if xl is not None and (type(xl) is not list or not all(type(k) is str for k in xl)):
        raise bad('"replica_locks" must be a list of row keys')
    tables = {}
    for name in _TABLE_LISTS:
        v = obj.get(name)
        if v is not None and (type(v) is not list or not all(type(t) is str and "." in t
                                                              for t in v)):
            raise bad(f'"{name}" must be a list of table names db.table')
        tables[name] = v or ()
    for name in _INT_FIELDS:
        v = obj.get(name)
        if v is not None and (type(v) is not int or v < 0):
            raise bad(f'"{name}" must be a non-negative integer, got {_show(v)}')
    f = obj.get("file")
    if f is not None and f < 1:
        raise bad('"file" (binlog file index) must be at least 1')
    lc, sn = obj.get("last_committed"), obj.get("sequence_number")
    if (lc is None) != (sn is None):
        raise bad('"last_committed" and "sequence_number" come together')
    if sn is not None and lc >= sn:
        raise bad(f"last_committed ({lc}) must be below sequence_number ({sn})")
    costs = {}
    for name in ("exec", "commit"):
        v = obj.get(name)
        if v is not None:
            if not _is_number(v):
                raise bad(f'cost "{name}" must be a number, got {_show(v)}')
            if v < 0:
                raise bad(f'negative cost "{name}": {v}')
            v = float(v)
        costs[name] = v
    ts = obj.get("timestamp")
    if ts is not None and not _is_number(ts):
        raise bad(f'"timestamp" must be a number, got {_show(ts)}')
    bools = {}
    for name in _BOOL_FIELDS:
        v = obj.get(name, False)
        if type(v) is not bool:
            raise bad(f'"{name}" must be true or false')
        bools[name] = v
    flags = obj.get("flags")
    if flags is not None and (type(flags) is not list
                              or not all(type(x) is str and x in MARIADB_FLAGS for x in flags)):
        raise bad(f'"flags" must be a list of {", ".join(MARIADB_FLAGS)}; got {_show(flags)}')
    s = obj.get("session")
    if s is not None and not (type(s) is str or type(s) is int):
        raise bad('"session" must be a string or an integer')
    d = obj.get("db")
    if d is not None and (type(d) is not list or not all(type(x) is str for x in d)):
        raise bad('"db" must be a list of schema names')
    g = obj.get("gtid")
    if g is not None and type(g) is not str:
        raise bad('"gtid" must be a string')
    w = obj.get("write_set_size")
    if w is not None and (type(w) is not int or w < len(writes)):
        raise bad(f'"write_set_size" must be an integer no smaller than the number of '
                  f'"writes" ({len(writes)}), got {_show(w)}')
    return Txn(seq, writes, before_images=before or (), gtid=g, file=f, last_committed=lc,
               sequence_number=sn, commit_id=obj.get("commit_id"), flags=flags or _NO_FLAGS,
               session=s, db=d, timestamp=ts, events=obj.get("events"), bytes=obj.get("bytes"),
               rows=obj.get("rows"), write_set_size=w, replica_locks=xl or (), **costs, **bools,
               **tables)


class _OrderCheck:
    """Checks what one line cannot: seq numbering and the order of files and clocks; and,
    under a version 1 header, that no line has version 2's fields (a version 1 trace lacks no
    keys: model/keys.py takes its header's word for it)."""

    def __init__(self, path: str, version: int = VERSION):
        self.path = path
        self.version = version
        self.prev: Txn | None = None

    def __call__(self, txn: Txn, line: int) -> None:
        if self.version < 2 and (txn.keys_unknown or txn.keys_partial):
            name = "keys_unknown" if txn.keys_unknown else "keys_partial"
            raise TraceError(self.path, line, f'"{name}" is a field of trace format version 2, '
                                              f'but the header says version {self.version}')
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


_READ_ERRORS = (OSError, EOFError, zlib.error, isal_zlib.error)   # BadGzipFile is an OSError
# Row keys' form, db.table/INDEX=... (a '.' before the first '/', an '=' after it), checked for
# a whole chunk at once on its keys joined by NUL; a key holding a NUL fails the match and
# goes to the careful path (and a match of every NUL-separated part implies each key is good).
# Only NUL . / = decide the match, so every other byte is deleted first (bytes.translate, in
# C; no UTF-8 sequence of a non-ASCII character holds an ASCII byte): the regex then reads about
# 4 characters per key instead of 30, a fifth of the time.
_KEYS_RE = re.compile(rb"(?:[^/\0]*\.[^/\0]*/[^\0]*=[^\0]*)(?:\0[^/\0]*\.[^/\0]*/[^\0]*=[^\0]*)*")
_NOT_FORM = bytes(b for b in range(256) if b not in b"\0./=")


def _keys_ok(keys: str) -> bool:
    """Whether every key of `keys` (joined by NUL) has the row-key form. The common case
    first: every key's form characters are exactly "./=" (db.table/INDEX=v), so the translated
    bytes are that pattern repeated, one comparison; the regex decides otherwise."""
    form = keys.encode("utf-8", "surrogatepass").translate(None, _NOT_FORM)
    if len(form) & 3 == 3 and _COMMON_FORM.startswith(form):
        return True
    return _KEYS_RE.fullmatch(form) is not None


_COMMON_FORM = b"./=\0" * (1 << 16)  # up to 65,536 keys a chunk; more: the regex
_decode_lines = msgspec.json.Decoder(Txn).decode_lines


def _too_long(path: str, line: int) -> TraceError:
    return TraceError(path, line, f"line longer than {MAX_LINE_BYTES >> 20} MiB (the limit of "
                                  "one transaction line; is this a trace?)")


def _chunks(fh: IO[bytes], path: str) -> Iterator[tuple[int, bytes | memoryview, int]]:
    """(number of its first line, a run of whole lines, how many newlines it holds) of a
    binary stream, read in blocks of about 1 MiB; a line longer than MAX_LINE_BYTES is refused
    before it is held whole (so reading /dev/zero ends too). A block's whole lines come as a
    memoryview of it (not copied); a line that spans blocks comes alone, as bytes."""
    line = 1
    rest: list[bytes] = []          # the start of a line that spans blocks
    rest_len = 0
    while True:
        try:
            block = fh.read(_BLOCK)
        except _READ_ERRORS as e:
            raise TraceError(path, line, f"cannot read: {e}") from None
        if not block:
            break
        cut = block.rfind(b"\n")
        if cut < 0:
            rest.append(block)
            rest_len += len(block)
            if rest_len > MAX_LINE_BYTES:
                raise _too_long(path, line)
            continue
        # the block's newlines, counted by deleting them: memchr and memcpy, 4x faster than
        # bytes.count's byte-by-byte loop for a one-byte needle
        newlines = len(block) - len(block.replace(b"\n", b""))
        start = 0
        if rest:
            start = block.find(b"\n") + 1
            if rest_len + start - 1 > MAX_LINE_BYTES:
                raise _too_long(path, line)
            rest.append(block[:start])
            yield line, b"".join(rest), 1
            line += 1
            newlines -= 1
        if start <= cut:
            yield line, memoryview(block)[start:cut + 1], newlines
            line += newlines
        rest = [block[cut + 1:]] if cut + 1 < len(block) else []
        rest_len = len(block) - cut - 1
    if rest:
        yield line, b"".join(rest), 0


def _settle(batch: list[Txn], prev: Txn | None, v1: bool = False) -> list[tuple[str, ...]] | None:
    """A decoded chunk's transactions normalised and checked across lines, in one pass: each
    one's `writes` (in order), or None to send the chunk to the careful path (which then finds
    the problem, or not: None for a chunk that is good only costs time).

    Normalised as `Txn(...)` would (`_normalise`; a decoded line holds no list or set): a key
    repeated in `writes` counts once, `flags` (decoded as a tuple) becomes its shared frozenset,
    a null `file` is 1. Checked as `_OrderCheck` does one transaction at a time: seq counts on
    from `prev`'s, files never go back, last_committed/sequence_number come together with lc <
    sn, sequence_number increases within a file (from the transaction before); before_images
    within writes, write_set_size at least len(writes); with `v1`, no version 2 field.

    One Python loop reading each transaction's fields once: measured against whole-list
    operations (an `operator.attrgetter` list per field, `map` over them) and a per-line
    `__post_init__`, it is the cheapest by far, as each of those walks a chunk's few thousand
    objects again (or pays a call per line)."""
    if prev is None:
        seq, file, last_sn = 0, 0, None     # file 0: before any (files count from 1)
    else:
        seq, file, last_sn = prev.seq, prev.file, prev.sequence_number
    flag_sets, no_flags = _FLAG_SETS, _NO_FLAGS
    last_flags, last_shared = None, None
    writes_of_each: list[tuple[str, ...]] = []
    add = writes_of_each.append
    for txn in batch:
        seq += 1
        if txn.seq != seq:
            return None
        if v1 and (txn.keys_unknown or txn.keys_partial):
            return None
        writes = txn.writes
        n = len(writes)
        if n > 1:                   # repeats are rare: few keys are compared, not hashed
            if n == 3:
                a, b, c = writes
                repeats = a == b or a == c or b == c
            elif n == 2:
                repeats = writes[0] == writes[1]
            else:
                repeats = len(set(writes)) != n
            if repeats:             # an UPDATE that keeps a key lists it in both images
                txn.writes = writes = tuple(dict.fromkeys(writes))
        add(writes)
        flags = txn.flags
        if flags is not no_flags:   # a tuple as decoded (the default is shared already)
            if flags != last_flags:     # most lines repeat the line before's
                last_flags = flags
                last_shared = flag_sets.get(flags)
                if last_shared is None:
                    last_shared = _share_flags(flags)
            txn.flags = last_shared
        f = txn.file
        if f != file:
            if f is None:           # null: absent, as for every optional field
                txn.file = f = 1
            if f < file:
                return None
            if f != file:
                file, last_sn = f, None
        sn, lc = txn.sequence_number, txn.last_committed
        if sn is None:
            if lc is not None:
                return None
        elif lc is None or lc >= sn or (last_sn is not None and sn <= last_sn):
            return None
        last_sn = sn
        if txn.before_images and not set(txn.before_images) <= set(writes):
            return None
        size = txn.write_set_size
        if size is not None and size < len(writes):
            return None
    return writes_of_each


def _fast_batch(chunk: bytes | memoryview, newlines: int, check: _OrderCheck) -> list[Txn] | None:
    """The fast path: a chunk's transactions decoded and checked in one go, or None to let the
    careful path find and name the problem (or accept what msgspec alone would not)."""
    try:
        batch = _decode_lines(chunk)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
        return None
    if len(batch) != newlines + (chunk[-1] != 10):    # 10: b"\n"
        return None                 # blank lines: line numbers need the careful path
    if not batch:
        return batch
    writes = _settle(batch, check.prev, check.version < 2)
    if writes is None:
        return None
    keys = "\0".join(itertools.chain.from_iterable(writes))
    if (keys or any(writes)) and not _keys_ok(keys):   # "": no key, or [""]
        return None
    check.prev = batch[-1]
    return batch


def _careful_batch(first_line: int, chunk: bytes | memoryview, check: _OrderCheck,
                   path: str) -> list[Txn]:
    """The careful path, line by line: the exact reason and line of the first problem."""
    batch = []
    for line, raw in enumerate(bytes(chunk).split(b"\n"), start=first_line):
        if not raw.strip():
            continue
        txn = _parse_txn(_decode_json(raw, path, line), path, line)
        check(txn, line)
        batch.append(txn)
    return batch


def _open_binary(path: str) -> IO[bytes]:
    # isal's gzip reader: the same format, decompressed about 4x faster than zlib's. Not its
    # threaded reader: a trace opened for its header only keeps that thread and its locks
    # alive, and a process forked meanwhile (`score --jobs`, multiprocessing's fork) can hang
    # on them in the child (a forked pytest child was seen stuck in a futex wait)
    return igzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _open_batches(path: str) -> tuple[dict, int, Iterator[list[Txn]]]:
    """Open a trace: its header's `source` and version, and an iterator of its transactions a decoded and
    validated chunk (about 1 MiB of lines) at a time, raising `TraceError` at the first bad
    line."""
    fh, source, version, chunks = _open_chunks(path)

    def batches() -> Iterator[list[Txn]]:
        check = _OrderCheck(path, version)
        with fh:
            for first_line, part, count in chunks:
                batch = _fast_batch(part, count, check)
                if batch is None:
                    batch = _careful_batch(first_line, part, check, path)
                yield batch

    return source, version, batches()


def _open_chunks(path: str):
    """(the open file, its header's `source` and version, its transactions' lines as
    `_chunks` gives them, the header's line taken out)."""
    try:
        fh = _open_binary(path)
    except FileNotFoundError:
        raise TraceError(path, None, "no such file") from None
    except IsADirectoryError:
        raise TraceError(path, None, "is a directory, not a trace file") from None
    except _READ_ERRORS as e:
        raise TraceError(path, None, f"cannot read: {e}") from None
    chunks = _chunks(fh, path)
    try:
        _, chunk, newlines = next(chunks, (1, b"", 0))
        chunk = bytes(chunk)
        nl = chunk.find(b"\n")
        first, chunk = (chunk, b"") if nl < 0 else (chunk[:nl], chunk[nl + 1:])
        newlines = max(0, newlines - 1)
        if not first.strip():
            raise TraceError(path, 1, "empty file: a trace starts with its header line")
        source, version = _check_header(_decode_json(first, path, 1), path)
    except BaseException:
        fh.close()
        raise
    return fh, source, version, (c for c in itertools.chain(((2, chunk, newlines),), chunks)
                                 if c[1])


class Stamp(msgspec.Struct, gc=False):
    """What `replay.source_times` reads of a transaction: its seq, source commit time and
    binlog file (1 where absent or null, as the loader makes it)."""
    seq: int
    timestamp: Union[_Int64, float, None] = None
    file: Optional[int] = 1


_decode_stamps = msgspec.json.Decoder(Stamp).decode_lines


def iter_stamps(path: str) -> Iterator[Stamp]:
    """Each transaction's `Stamp`, each line decoded for those three fields only: a day of
    binlog's source times without making its tens of millions of Txn objects (about four
    times as fast). For a file a loader has validated (`columnar.load_columns`); a chunk the
    fast decoder refuses is read by the careful path, as Txn objects."""
    fh, _, _, chunks = _open_chunks(path)
    with fh:
        for first_line, part, count in chunks:
            try:
                batch = _decode_stamps(part)
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
                batch = _careful_batch(first_line, part, lambda txn, line: None, path)
            for stamp in batch:
                if stamp.file is None:
                    stamp.file = 1
                yield stamp


def open_trace(path: str) -> tuple[dict, int, Iterator[Txn]]:
    """Open a trace for streaming: its header's `source` and format version, and an iterator
    that validates as it goes (raising `TraceError` at the first bad line)."""
    source, version, batches = _open_batches(path)

    def txns() -> Iterator[Txn]:
        for batch in batches:
            yield from batch

    return source, version, txns()


def iter_trace(path: str) -> tuple[dict, Iterator[Txn]]:
    """`open_trace` without the version."""
    source, _, txns = open_trace(path)
    return source, txns


def load_trace(path: str) -> Trace:
    """Load and validate a whole trace into memory."""
    source, version, batches = _open_batches(path)
    # A loaded trace is a million small acyclic objects: the cycle collector would walk them
    # again and again as they accumulate (a 5x slowdown) and can never free any of them.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        txns: list[Txn] = []
        for batch in batches:       # a whole chunk at a time, not a transaction at a time
            txns.extend(batch)
        return Trace(txns, source, path, version)
    finally:
        if was_enabled:
            gc.enable()


def trace_from_dicts(objs: Iterable[dict], source: dict | None = None,
                     path: str = "<memory>") -> Trace:
    """Build a validated trace from transaction objects (tests, generators, importers)."""
    check = _OrderCheck(path)
    txns = []
    for line, obj in enumerate(objs, start=2):
        txn = _parse_txn(obj, path, line)
        check(txn, line)
        txns.append(txn)
    return Trace(txns, dict(source or {}), path, 2 if any(map(needs_v2, txns)) else 1)


# ---------------------------------------------------------------- writing

def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_jsonl_atomic(path: str, lines: Iterable[dict | str], then: str | None = None) -> None:
    """Write JSON objects one per line to `path` atomically (gzip when it ends in .gz). A `str`
    item is a line already encoded (without its newline), written as it is. `then`: a file of
    lines already encoded (UTF-8, each ending in a newline) copied as it is after them."""
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
                    out.write(obj if type(obj) is str else dumps(obj, separators=(",", ":")))
                    out.write("\n")
                if then is not None:
                    out.flush()
                    with open(then, "rb") as src:
                        shutil.copyfileobj(src, out.buffer, 1 << 20)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str, text: str) -> None:
    """Write a text file atomically (temporary file in the same folder + rename). A lone
    surrogate (a trace's string may hold one: valid JSON, not Unicode) is written as its
    escape, `\ud800`, as standard output prints it."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=directory)
    os.chmod(tmp, _umask_mode())
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_trace(path: str, txns: Iterable[Txn], source: dict | None = None,
                version: int = 1) -> None:
    """Write a trace atomically: header, then one transaction per line. `version` 2 where the
    transactions may have version 2's fields (the version of the trace they were read from):
    one that has them under a version 1 header is a ValueError, and nothing is written."""
    def lines() -> Iterator[dict]:
        yield header(source, version)
        for txn in txns:
            if version < 2 and needs_v2(txn):
                raise ValueError(f"transaction {txn.seq} has version 2's fields "
                                 f"(keys_unknown / keys_partial): write it as version 2")
            yield txn.to_json()
    write_jsonl_atomic(path, lines())
