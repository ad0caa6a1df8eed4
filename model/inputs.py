"""What `score` and `report` read: a trace file, or binlog files imported on the fly.

Binlogs (binary MySQL 8 / MariaDB ones, or `mysqlbinlog`/`mariadb-binlog -vv` text; several are
files in order) are imported once, streaming, into a trace in a private temporary directory,
removed when the command ends however it ends (an error, Ctrl-C, SIGTERM: `cli.main` turns
SIGTERM into an exception). The command then reads that trace as it reads any other
(`cli.TraceSource`: held in memory, or re-read per run when large), and it is the very file
`commitsched import -o X.jsonl.gz` writes, header included, so the outputs are those of import
followed by score/report.
"""
from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import stat
import sys
import tempfile
import zlib
from dataclasses import dataclass
from typing import Iterator, Sequence

# Names that say "trace": an empty or unreadable file so named is left to the trace loader,
# whose errors say what a trace should be.
TRACE_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
# The temporary directory of a trace imported on the fly (removed at the end: never cached,
# model/column_cache.py).
IMPORT_DIR_PREFIX = "commitsched-"
SNIFF_BYTES = 4096


def kind_of(path: str) -> str:
    """'trace' or 'binlog', from the file's content: a binary binlog starts with its magic
    bytes, a trace's first line is its JSON header (an object), anything else is binlog text.
    A path that is not a regular file (missing, a folder, a device, a pipe) is 'trace', read
    as before by the trace loader, which says what is wrong without consuming a pipe here."""
    from .importers import BINLOG_MAGIC
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        regular = False
    if not regular:
        return "trace"
    try:
        with open(path, "rb") as f:
            if f.read(len(BINLOG_MAGIC)) == BINLOG_MAGIC:
                return "binlog"
        # .gz by name, as both the trace loader and the text importer decide
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            head = f.read(SNIFF_BYTES).lstrip()
    except (OSError, EOFError, zlib.error):
        head = b""
    if head:
        return "trace" if head.startswith(b"{") else "binlog"
    return "trace" if path.endswith(TRACE_SUFFIXES) else "binlog"


@dataclass
class Input:
    trace: str               # the trace file to read: the user's, or the imported temporary one
    label: str               # how the outputs name the input
    stats: object = None     # importers.ImportStats of an on-the-fly import


def label_of(paths: Sequence[str]) -> str:
    if len(paths) == 1:
        return paths[0]
    return f"{paths[0]} .. {paths[-1]} ({len(paths)} binlog files)"


def check(command: str, paths: Sequence[str], schema, skip_bad: bool,
          schema_from: str | None = None) -> str:
    """The kind of the inputs ('trace' or 'binlog'), or a `UsageError` for a mix, two traces,
    or import options given with a trace."""
    from .cli import UsageError
    from .trace import TraceError
    if len(paths) > 1:          # binlogs then: a missing one is named as such, not as a trace
        for p in paths:
            if os.path.isdir(p):
                raise TraceError(p, None, "is a directory, not a binlog")
            if not os.path.isfile(p):
                raise TraceError(p, None, "no such file" if not os.path.lexists(p)
                                 else "not a regular file")
    kinds = [kind_of(p) for p in paths]
    traces = [p for p, k in zip(paths, kinds) if k == "trace"]
    if traces and len(paths) > 1:
        raise UsageError(f"{command}: {traces[0]} is a trace: give one trace file, or binlog "
                         f"files (in order), not both or several traces")
    if traces and (schema or skip_bad or schema_from):
        option = "--schema" if schema else "--schema-from" if schema_from else "--skip-bad"
        raise UsageError(f"{command}: {option} is for binlog inputs, and {traces[0]} is a "
                         f"trace (its keys were resolved when it was imported)")
    return "trace" if traces else "binlog"


@contextlib.contextmanager
def opened(command: str, paths: Sequence[str], *, schema=None, skip_bad: bool = False,
           quiet: bool = False, schema_from: str | None = None) -> Iterator[Input]:
    """The trace to read for `paths`; for binlogs, imported into a temporary directory that
    is removed when the `with` block is left."""
    paths = list(paths)
    if check(command, paths, schema, skip_bad, schema_from) == "trace":
        yield Input(paths[0], paths[0])
        return
    from .importers import import_binlog, print_notes
    tmp = tempfile.mkdtemp(prefix=IMPORT_DIR_PREFIX)
    try:
        # gzip, as the documented `import -o X.jsonl.gz`: the same file, so `TraceSource`
        # makes the same hold-or-stream choice on it, and a tmpfs /tmp holds a tenth as much
        name = os.path.basename(paths[0]) + ".jsonl.gz"
        trace = os.path.join(tmp, name)
        stats = import_binlog(paths, trace, schema=schema, skip_bad=skip_bad,
                              progress=False if quiet else None, schema_from=schema_from)
        if not quiet:
            print_notes(stats, sys.stderr)
        yield Input(trace, label_of(paths), stats)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
