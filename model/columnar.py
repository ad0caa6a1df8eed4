"""The columnar trace (issue 29): a trace as a few numpy arrays, one per field, by position, for
the compiled simulation core (model/engine.py, model/simcore_rs).

A transaction is not a Python object here: its fields are the i-th entries of integer and float
arrays, and its write set a slice of one array of key ids (`w_keys[w_off[i]:w_off[i+1]]`), each
row key interned to an integer once, at load. Absent values are -1 (integers, all
non-negative in a valid trace) or NaN (costs); a column absent from every transaction is None.
Only what a simulation reads is kept: a trace's `gtid`, `timestamp`, `db` and `before_images`
stay with the Txn objects (the reference engine, the other commands).

Why numpy and not Arrow (measured, docs/engine.md): both hand the Rust core contiguous buffers
without a copy; numpy is already a dependency of the fits, its arrays fork into a sweep's
processes copy-on-write, and building from Python lists is as fast; Arrow's list arrays would
only rename `w_off` / `w_keys`.
"""
from __future__ import annotations

import itertools
import operator
from typing import Iterable, Iterator

import numpy as np

# The core's bit layouts (model/simcore_rs/src/cols.rs).
FLAG_BITS = {"ddl": 1, "waited": 2, "transactional": 4, "allow_parallel": 8}
BIT_DDL, BIT_ADMIN, BIT_NO_PK, BIT_FK_PARENT = 1, 2, 4, 8

INT_COLUMNS = ("last_committed", "sequence_number", "commit_id", "events", "bytes", "rows",
               "write_set_size")
FLOAT_COLUMNS = ("exec", "commit")
CHUNK = 1 << 16
_FIELDS = ("seq", "file") + INT_COLUMNS + FLOAT_COLUMNS + (
    "flags", "ddl", "admin", "no_pk", "fk_parent", "session", "writes", "replica_locks", "db",
    "keys_unknown")
_GET = operator.attrgetter(*_FIELDS)


class Columns:
    """A trace's columns. `n` transactions, seqs `seq0 .. seq0 + n - 1` (None when the core
    cannot run them: seqs not consecutive, an integer beyond 64 bits, more than 2^32 keys); `arrays` by the core's column names; `keys`: the row
    keys by id; `replica_locks`: whether any transaction has some (the compiled MySQL applier
    does not model them); `keys_unknown`: whether any transaction names tables whose keys are
    unknown (trace format version 2, model/keys.py: a run that needs keys then goes to the
    reference, whose guard names the tables; a slice keeps its whole trace's answer)."""

    __slots__ = ("n", "seq0", "arrays", "keys", "replica_locks", "schemas", "keys_unknown",
                 "laps", "file_step", "cid_step")

    def __init__(self, n: int, seq0: int | None, arrays: dict, keys: list[str],
                 replica_locks: bool, schemas: list[str] | None = None,
                 keys_unknown: bool = False):
        self.n, self.seq0, self.arrays, self.keys = n, seq0, arrays, keys
        self.replica_locks = replica_locks
        self.schemas = schemas or []          # schema names by id (s_ids)
        self.keys_unknown = keys_unknown
        # a lapped view (`lapped`): `arrays` hold one lap of n / laps transactions, lap k's
        # binlog files moved by k * file_step and its commit ids by k * cid_step
        self.laps, self.file_step, self.cid_step = 1, 0, 0

    def __len__(self) -> int:
        return self.n

    def slice(self, start: int, count: int) -> "Columns":
        """Transactions start .. start + count - 1 (positions), without copying."""
        if self.laps != 1:
            raise ValueError("a lapped view of columns cannot be sliced")
        start = max(0, min(start, self.n))
        end = max(start, min(start + count, self.n))
        arrays = {}
        for name, a in self.arrays.items():
            if a is None:
                arrays[name] = None
            elif name in ("w_off", "s_off"):
                arrays[name] = a[start:end + 1]
            elif name in ("w_keys", "s_ids"):
                arrays[name] = a
            else:
                arrays[name] = a[start:end]
        return Columns(end - start, None if self.seq0 is None else self.seq0 + start, arrays,
                       self.keys, self.replica_locks, self.schemas, self.keys_unknown)

    def lapped(self, laps: int) -> "Columns":
        """The trace replayed `laps` times one after the other, as replay.lapped makes it: lap k
        continues the seqs, moves its binlog files past the last lap's and its commit ids past
        the last lap's largest (clocks are per file, so they stay). A view: the arrays are this
        lap's, not copied; only the compiled core reads it (model/engine.py), lap by lap."""
        if self.laps != 1:
            raise ValueError("a lapped view of columns cannot be lapped again")
        if laps == 1:
            return self
        a = self.arrays
        view = Columns(self.n * laps, self.seq0, a, self.keys, self.replica_locks,
                       self.schemas, self.keys_unknown)
        view.laps = laps
        view.file_step = int(a["file"].max()) if self.n else 0
        cid = a.get("commit_id")
        view.cid_step = (int(cid.max()) + 1 if self.n else 1) if cid is not None else 0
        return view

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values() if a is not None)


class _Builder:
    """Columns filled a chunk of transactions at a time (the loader's chunks, or any iterable):
    each chunk becomes arrays at once, and the Txn objects can go."""

    def __init__(self):
        self.parts: dict[str, list] = {name: [] for name in (
            "file", "flags", "bits", "session", "w_len", "w_keys", "s_len", "s_ids")
            + INT_COLUMNS + FLOAT_COLUMNS}
        self.present = dict.fromkeys(INT_COLUMNS + FLOAT_COLUMNS + ("flags", "bits", "session"),
                                     False)
        self.key_ids: dict[str, int] = {}
        self.key_schema: list[int] = []          # key id -> its schema's id
        self.schema_ids: dict[str, int] = {}
        self.session_ids: dict = {}
        self.n = 0
        self.seq0: int | None = None
        self.consecutive = True
        self.replica_locks = False
        self.keys_unknown = False

    def add(self, batch: list) -> None:
        """One chunk: its fields read in one C-level pass (`attrgetter`, transposed), each
        column made by numpy from the list of its values."""
        if not batch:
            return
        m = len(batch)
        cols = dict(zip(_FIELDS, zip(*map(_GET, batch))))
        seqs = np.array(cols["seq"], np.int64)
        if self.seq0 is None:
            self.seq0 = int(seqs[0])
        if self.consecutive and (seqs[0] != self.seq0 + self.n
                                 or (m > 1 and not (np.diff(seqs) == 1).all())):
            self.consecutive = False
        parts, present = self.parts, self.present
        try:
            parts["file"].append(np.array(cols["file"], np.int64))
            for name in INT_COLUMNS:
                values = cols[name]
                nones = values.count(None)
                if nones == m:
                    parts[name].append(None)
                    continue
                present[name] = True
                if nones:
                    arr = np.array(values, np.float64)     # None -> NaN
                    if np.nanmax(arr) >= 2.0 ** 53:        # beyond a float's integers
                        arr = np.fromiter((-1 if v is None else v for v in values), np.int64, m)
                    else:
                        arr = np.where(np.isnan(arr), -1.0, arr).astype(np.int64)
                else:
                    arr = np.array(values, np.int64)
                parts[name].append(arr)
        except OverflowError:                  # an integer beyond int64: no core run
            self.consecutive = False
            for name in ("file",) + INT_COLUMNS:
                if len(parts[name]) > len(parts["w_len"]):
                    parts[name].pop()
                parts[name].append(np.full(m, -1, np.int64))
        for name in FLOAT_COLUMNS:
            values = cols[name]
            if values.count(None) == m:
                parts[name].append(None)
                continue
            present[name] = True
            parts[name].append(np.array(values, np.float64))
        flags = cols["flags"]
        if any(flags):
            present["flags"] = True
            parts["flags"].append(np.fromiter(map(_flag_mask, flags), np.uint8, m))
        else:
            parts["flags"].append(None)
        bits = (np.array(cols["ddl"], np.uint8) | (np.array(cols["admin"], np.uint8) << 1)
                | (np.array(cols["no_pk"], np.uint8) << 2)
                | (np.array(cols["fk_parent"], np.uint8) << 3))
        if bits.any():
            present["bits"] = True
            parts["bits"].append(bits)
        else:
            parts["bits"].append(None)
        sessions = cols["session"]
        if sessions.count(None) == m:
            parts["session"].append(None)
        else:
            present["session"] = True
            ids = self.session_ids
            parts["session"].append(np.fromiter(
                (-1 if s is None else ids.setdefault((type(s), s), len(ids)) for s in sessions),
                np.int64, m))
        writes = cols["writes"]
        w_len = np.fromiter(map(len, writes), np.int64, m)
        parts["w_len"].append(w_len)
        keys = list(itertools.chain.from_iterable(writes))
        key_ids = self.key_ids
        found = list(map(key_ids.get, keys))
        if None in found:                     # keys seen for the first time
            schemas = self.key_schema
            for j, k in enumerate(keys):
                if found[j] is None:
                    found[j] = key_ids.get(k)
                    if found[j] is None:
                        found[j] = key_ids[k] = len(key_ids)
                        schemas.append(self._schema_id(k.partition(".")[0]))
        w_keys = np.array(found, np.uint32)
        parts["w_keys"].append(w_keys)
        self._schemas(cols["db"], w_len, w_keys, cols["keys_unknown"])
        if not self.replica_locks and any(cols["replica_locks"]):
            self.replica_locks = True
        self.n += m

    def _schema_id(self, name: str) -> int:
        return self.schema_ids.setdefault(name, len(self.schema_ids))

    def _schemas(self, dbs: tuple, w_len: np.ndarray, w_keys: np.ndarray,
                 unknown: tuple) -> None:
        """`Txn.schemas` of a chunk, as ids: the `db` field when given (as it is), else the
        distinct schemas of the write keys and of the tables whose keys are unknown (their
        order does not matter to the database applier: it only asks which workers hold
        them)."""
        m = len(w_len)
        txn_of = np.repeat(np.arange(m, dtype=np.int64), w_len)
        sid = np.asarray(self.key_schema, np.int64)[w_keys] if len(w_keys) else \
            np.zeros(0, np.int64)
        pair = np.unique(txn_of * (1 << 32) + sid)
        per = [list(x) for x in np.split(pair & 0xFFFFFFFF, np.searchsorted(pair >> 32,
                                                                            np.arange(1, m)))]
        if any(unknown):
            self.keys_unknown = True
            for j, tables in enumerate(unknown):
                if tables:
                    per[j] = list(dict.fromkeys(per[j] + [self._schema_id(t.partition(".")[0])
                                                          for t in tables]))
        if any(d is not None for d in dbs):
            for j, d in enumerate(dbs):
                if d is not None:
                    per[j] = [self._schema_id(x) for x in d]
        self.parts["s_len"].append(np.fromiter(map(len, per), np.int64, m))
        self.parts["s_ids"].append(np.array(list(itertools.chain.from_iterable(per)), np.uint32))

    def build(self) -> Columns:
        n, parts = self.n, self.parts
        arrays: dict = {}

        def cat(name, dtype, fill):
            chunks = parts[name]
            if not self.present.get(name, True):
                return None
            full = []
            for c, size in zip(chunks, parts["w_len"]):
                full.append(c if c is not None else np.full(len(size), fill, dtype))
            return np.concatenate(full) if full else np.zeros(0, dtype)

        arrays["file"] = (np.concatenate(parts["file"]) if parts["file"]
                          else np.zeros(0, np.int64))
        for name in INT_COLUMNS + ("session",):
            arrays[name] = cat(name, np.int64, -1)
        for name in FLOAT_COLUMNS:
            arrays[name] = cat(name, np.float64, np.nan)
        arrays["flags"] = cat("flags", np.uint8, 0)
        arrays["bits"] = cat("bits", np.uint8, 0)
        w_off = np.zeros(n + 1, np.int64)
        if n:
            np.cumsum(np.concatenate(parts["w_len"]), out=w_off[1:])
        arrays["w_off"] = w_off
        arrays["w_keys"] = (np.concatenate(parts["w_keys"]) if parts["w_keys"]
                            else np.zeros(0, np.uint32))
        s_off = np.zeros(n + 1, np.int64)
        if n:
            np.cumsum(np.concatenate(parts["s_len"]), out=s_off[1:])
        arrays["s_off"] = s_off
        arrays["s_ids"] = (np.concatenate(parts["s_ids"]) if parts["s_ids"]
                           else np.zeros(0, np.uint32))
        keys = list(self.key_ids)
        if len(keys) >= 1 << 32:
            self.consecutive = False            # more keys than the ids hold: no core run
        return Columns(n, self.seq0 if self.consecutive else None, arrays, keys,
                       self.replica_locks, list(self.schema_ids), self.keys_unknown)


_FLAG_MASKS: dict = {}


def _flag_mask(flags) -> int:
    mask = _FLAG_MASKS.get(flags)
    if mask is None:
        mask = 0
        for f in flags:
            mask |= FLAG_BITS[f]
        _FLAG_MASKS[flags] = mask
    return mask


def from_txns(txns: Iterable) -> Columns:
    """The columns of Txn objects (a list, or any iterable: read a chunk at a time)."""
    b = _Builder()
    it = iter(txns)
    while True:
        batch = list(itertools.islice(it, CHUNK))
        if not batch:
            break
        b.add(batch)
    return b.build()


def from_batches(batches: Iterable[list]) -> Columns:
    """The columns of the loader's decoded chunks (trace._open_batches): one chunk of Txn objects
    at a time, each dropped once its arrays are made."""
    b = _Builder()
    for batch in batches:
        b.add(batch)
    return b.build()


def load_columns(path: str) -> tuple[dict, Columns]:
    """Load and validate a trace file straight into columns: its header's `source` and the
    columns. The compiled core's loader reads the lines into the arrays with no Python object
    per transaction (`_load_compiled`); a file it refuses (any problem, or anything it is unsure
    of) is read by the Python loader, one decoded chunk of Txn objects at a time, which
    accepts the same files with the same values and names the problem exactly. A file loaded
    before, unchanged since, is read back from the column cache (model/column_cache.py)."""
    from . import column_cache
    cached, ident = column_cache.load(path)
    if cached is not None:
        return cached
    loaded = _load_compiled(path)
    if loaded is None:
        from .trace import _open_batches
        source, _, batches = _open_batches(path)
        loaded = source, from_batches(batches)
    column_cache.store(path, loaded[0], loaded[1], ident)
    return loaded


_DTYPES = {"file": np.int64, "exec": np.float64, "commit": np.float64, "flags": np.uint8,
           "bits": np.uint8, "session": np.int64, "w_off": np.int64, "w_keys": np.uint32,
           "s_off": np.int64, "s_ids": np.uint32, **dict.fromkeys(INT_COLUMNS, np.int64)}
_BLOCK = 4 << 20


def _load_compiled(path: str) -> tuple[dict, Columns] | None:
    """The core's loader, or None (not built, or it refused the file)."""
    try:
        from commitsched_simcore import ColumnLoader
    except ImportError:
        return None
    from .trace import (_READ_ERRORS, MAX_LINE_BYTES, TraceError, _check_header, _decode_json,
                        _open_binary)
    loader = ColumnLoader()
    try:
        with _open_binary(path) as fh:
            first = fh.readline(MAX_LINE_BYTES + 1)
            if not first.strip() or not first.endswith(b"\n"):
                return None
            source, version = _check_header(_decode_json(first[:-1], path, 1), path)
            rest = b""
            while True:
                block = fh.read(_BLOCK)
                if not block:
                    break
                block = rest + block
                cut = block.rfind(b"\n")
                if cut < 0:
                    if len(block) > MAX_LINE_BYTES:
                        return None
                    rest = block
                    continue
                rest = block[cut + 1:]
                if not loader.feed(block[:cut + 1]):
                    return None
            if rest and not loader.feed(rest):
                return None
    except _READ_ERRORS + (ValueError, TraceError):
        # a damaged gzip stream (isal's error is not an OSError) too: the Python loader says
        # what is wrong, in its own words
        return None
    out = loader.finish()
    n = out.pop("n")
    if n == 0:
        return None
    keys = out.pop("keys")
    schemas = out.pop("schemas")
    replica_locks = out.pop("replica_locks")
    keys_unknown = out.pop("keys_unknown")
    if out.pop("marked") and version < 2:
        return None          # version 2's fields under a version 1 header: the Python loader says so
    arrays = {name: None if b is None else np.frombuffer(b, _DTYPES[name])
              for name, b in out.items()}
    return source, Columns(n, 1, arrays, keys, replica_locks, schemas, keys_unknown)


class ColumnarTxns:
    """What `TraceSource.txns()` returns: an iterable of the trace's Txn objects (a fresh
    iterator per `iter()`, so everything that reads a trace keeps working) that also carries the
    trace's columns, so that `run_scheduler` can hand the run to the compiled core."""

    __slots__ = ("columns", "_factory")

    def __init__(self, columns, factory):
        self.columns = columns            # a Columns, or a callable making it on first use
        self._factory = factory

    def __iter__(self) -> Iterator:
        return iter(self._factory())

    def get_columns(self) -> Columns | None:
        if callable(self.columns):
            self.columns = self.columns()
        return self.columns

    def slice(self, start: int, count: int) -> "ColumnarTxns":
        """Positions start .. start + count - 1, with their columns (the report's what-if
        sample)."""
        parent = self

        def cols():
            c = parent.get_columns()
            return None if c is None else c.slice(start, count)

        return ColumnarTxns(cols, lambda: itertools.islice(iter(parent), start, start + count))
