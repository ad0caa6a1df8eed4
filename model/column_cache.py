"""A trace's columns kept on disk beside nothing of the user's (issue 29): the second load of
the same trace file reads its arrays back instead of decompressing and parsing it again.

Measured on `make bench`'s 200,000-transaction trace (docs/engine.md): the cold load
(decompress with isal, parse and validate in the core's loader) takes about 0.4 s, of which the
decompression alone is 0.17 s and the parse about 0.25 s; the cached columns (about 18 MB)
read back in a few hundredths of a second, the file's hash included.

An entry is used only when it was made from the very same file: its size, its modification
time (ns) and the SHA-1 of its bytes (every byte is read: a trace edited within the clock's
granularity, or copied over with its times kept, is not taken for the old one), and only by
the same code (`CODE_STAMP`: this format's version, the size and modification time of the
loader's modules and of the compiled core). Anything else, or a damaged entry, and the trace
is loaded from the file (and the entry made again). Writing is atomic (a temporary file
renamed); a cache that cannot be written is skipped, never an error.

Where: `$COMMITSCHED_CACHE` (a directory; `off` for none), else
`$XDG_CACHE_HOME/commitsched/columns`, else `~/.cache/commitsched/columns`; one entry per
trace path (a newer load of the same path replaces it). Files under `MIN_BYTES` are not cached
(they load in milliseconds), nor the temporary trace of binlogs imported on the fly.

Size: the entries together are kept under `$COMMITSCHED_CACHE_MAX_MB` (default 4096 MB), the
least recently used first out, after each entry written (an entry read back counts as used:
its modification time is refreshed). The entry just written always stays, even over the limit.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import tempfile
import time

import numpy as np

FORMAT = 1
MAGIC = b"CSCOLS01"
MIN_BYTES = 1 << 20
_ALIGN = 64
_HASH_BLOCK = 8 << 20
DEFAULT_MAX_MB = 4096
_STALE_TEMPORARY_S = 3600         # a writer's temporary file this old was left by a crash


def cache_dir() -> str | None:
    """The cache's directory, or None when it is turned off."""
    env = os.environ.get("COMMITSCHED_CACHE")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "no") else env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "commitsched", "columns")


def max_bytes() -> int:
    """The entries' total size limit: `$COMMITSCHED_CACHE_MAX_MB` megabytes, else the default
    (a value that is not a whole number of megabytes is said once and the default used)."""
    env = os.environ.get("COMMITSCHED_CACHE_MAX_MB")
    if env is None or not env.strip():
        return DEFAULT_MAX_MB << 20
    try:
        mb = int(env)
        if mb < 0:
            raise ValueError
        return mb << 20
    except ValueError:
        print(f"commitsched: COMMITSCHED_CACHE_MAX_MB={env!r} is not a whole number of "
              f"megabytes; the column cache keeps the default {DEFAULT_MAX_MB} MB",
              file=sys.stderr)
        os.environ.pop("COMMITSCHED_CACHE_MAX_MB", None)      # said once
        return DEFAULT_MAX_MB << 20


def prune(directory: str, keep: str | None = None) -> list[str]:
    """Remove the least recently used entries until they fit in `max_bytes()`, never `keep`
    (the entry just written), and writers' temporary files left by a crash; the names
    removed."""
    limit = max_bytes()
    now = time.time()
    entries, removed = [], []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(directory, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if name.startswith(".tmp-"):
            if now - st.st_mtime > _STALE_TEMPORARY_S:
                try:
                    os.unlink(path)
                    removed.append(name)
                except OSError:
                    pass
        elif name.endswith(".cols"):
            entries.append((st.st_mtime_ns, name, st.st_size))
    total = sum(size for _, _, size in entries)
    for _, name, size in sorted(entries):
        if total <= limit:
            break
        if keep is not None and name == os.path.basename(keep):
            continue
        try:
            os.unlink(os.path.join(directory, name))
            removed.append(name)
            total -= size
        except OSError:
            pass
    return removed


def _code_stamp() -> list:
    """What the columns were made by: a changed loader makes every entry stale."""
    from . import columnar, trace
    parts: list = [FORMAT]
    mods = [columnar.__file__, trace.__file__]
    try:
        import commitsched_simcore
        mods.append(commitsched_simcore.__file__)
    except ImportError:
        mods.append(None)
    for path in mods:
        try:
            st = os.stat(path)
            parts.append([os.path.basename(path), st.st_size, st.st_mtime_ns])
        except (OSError, TypeError):
            parts.append(None)
    return parts


def _entry(path: str, directory: str) -> str:
    key = hashlib.sha1(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(directory, key + ".cols")


def _temporary(path: str) -> bool:
    """A trace imported on the fly from binlogs (model/inputs.py): removed when the command
    ends, so an entry for it would only take space."""
    from .inputs import IMPORT_DIR_PREFIX
    parent = os.path.dirname(os.path.realpath(path))
    return (os.path.basename(parent).startswith(IMPORT_DIR_PREFIX)
            and os.path.dirname(parent) == os.path.realpath(tempfile.gettempdir()))


def _identity(path: str) -> dict | None:
    """The file's size, modification time and SHA-1 (None if it cannot be read)."""
    try:
        st = os.stat(path)
        h = hashlib.sha1()
        with open(path, "rb") as fh:
            while True:
                block = fh.read(_HASH_BLOCK)
                if not block:
                    break
                h.update(block)
        return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha1": h.hexdigest()}
    except OSError:
        return None


def load(path: str):
    """(source, Columns) from the cache when it holds this very file, else None; also the
    identity to store with a fresh load (`store`): (result or None, identity or None)."""
    directory = cache_dir()
    if directory is None:
        return None, None
    try:
        if os.path.getsize(path) < MIN_BYTES:
            return None, None
    except OSError:
        return None, None
    ident = _identity(path)
    if ident is None:
        return None, None
    entry = _entry(path, directory)
    try:
        with open(entry, "rb") as fh:
            data = fh.read()
    except OSError:
        return None, ident
    try:
        result = _decode(data, ident)
        if result is not None:
            try:
                os.utime(entry)         # used: the last to be pruned
            except OSError:
                pass
        return result, ident
    except (ValueError, KeyError, TypeError, struct.error, json.JSONDecodeError):
        return None, ident          # damaged or from another version: loaded again


def _decode(data: bytes, ident: dict):
    from .columnar import Columns
    if data[:8] != MAGIC:
        return None
    (size,) = struct.unpack_from("<Q", data, 8)
    head = json.loads(data[16:16 + size])
    if head["file"] != ident or head["code"] != json.loads(json.dumps(_code_stamp())):
        return None
    base = 16 + size
    arrays = {}
    for name, spec in head["arrays"].items():
        if spec is None:
            arrays[name] = None
            continue
        dtype, offset, count = spec
        a = np.frombuffer(data, np.dtype(dtype), count, base + offset)
        arrays[name] = a
    cols = Columns(head["n"], head["seq0"], arrays, head["keys"], head["replica_locks"],
                   head["schemas"], head["keys_unknown"])
    return head["source"], cols


def store(path: str, source: dict, cols, ident: dict | None) -> None:
    """Keep the columns of `path` (whose identity, read before it was loaded, is `ident`);
    nothing when the cache is off, the file small or changed since, or nothing can be
    written."""
    directory = cache_dir()
    if directory is None or ident is None or ident["size"] < MIN_BYTES or _temporary(path):
        return
    try:
        st = os.stat(path)
        if st.st_size != ident["size"] or st.st_mtime_ns != ident["mtime_ns"]:
            return                  # changed while it was loaded: not this content
        # the arrays are written as they are (no copy: a 10M-transaction trace's columns are
        # most of a sweep's memory), each at an offset aligned for its type
        specs, chunks, offset = {}, [], 0
        for name, a in cols.arrays.items():
            if a is None:
                specs[name] = None
                continue
            a = np.ascontiguousarray(a)
            pad = -offset % _ALIGN
            if pad:
                chunks.append(b"\0" * pad)
                offset += pad
            specs[name] = [a.dtype.str, offset, int(a.size)]
            chunks.append(memoryview(a).cast("B"))
            offset += a.nbytes
        head = json.dumps({"file": ident, "code": _code_stamp(), "n": cols.n,
                           "seq0": cols.seq0, "keys": cols.keys, "schemas": cols.schemas,
                           "replica_locks": bool(cols.replica_locks),
                           "keys_unknown": bool(cols.keys_unknown), "source": source,
                           "arrays": specs}).encode()
        head += b" " * (-(16 + len(head)) % _ALIGN)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".cols")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + struct.pack("<Q", len(head)) + head)
                for c in chunks:
                    fh.write(c)
            entry = _entry(path, directory)
            os.replace(tmp, entry)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return
    prune(directory, keep=entry)
