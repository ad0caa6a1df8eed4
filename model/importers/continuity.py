"""Several binlog files given in order and without a hole between them (docs/import.md).

A server numbers its transactions in GTID streams: MariaDB's `DOMAIN-SERVER-SEQNO` counts on
per replication domain (whichever server wrote it, so a failover does not break it), MySQL's
`UUID:N` (or `UUID:TAG:N`) per source server. Where one binlog file ends, the next one's
transactions of the same stream go on at the next number. So, at the first transaction of each
stream in each file after the first:

- a number at or below the last one read of that stream is files given **out of order** (or
  one given twice): refused, naming both files and GTIDs; the replay would read a pace that
  never was;
- a number more than one above it is a **gap**: transactions between the files are missing (a
  binlog file not given, or purged): said in one line and kept in the trace's header, not
  refused; a DBA may mean to give part of a sequence, but the replay reads the hole as a quiet
  spell.

Only across files: within one file a stream's numbers may step (a replica filtering, MariaDB's
non-strict GTID mode), as the server wrote them. Binlogs without GTIDs (MySQL with gtid_mode
OFF: anonymous) are checked by their file names instead (`binlog.000042` then `.000043`), as a
warning only: after a failover the next server's files are numbered afresh.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..trace import TraceError

_NUMBERED = re.compile(r"^(?P<stem>.+)\.(?P<number>\d{6,})(?P<suffix>(?:\.[A-Za-z0-9]+)*)$")


def stream_of(gtid: str | None) -> tuple[str, int] | None:
    """(stream, number) of a GTID: MariaDB's domain, MySQL's UUID[:TAG]; None without one."""
    if not gtid:
        return None
    if ":" in gtid:
        stream, _, number = gtid.rpartition(":")
    else:
        parts = gtid.split("-")
        if len(parts) != 3:
            return None
        stream, number = parts[0], parts[2]
    return (stream, int(number)) if number.isdigit() else None


@dataclass
class Continuity:
    """Fed every transaction in order (`add`), with the input file it came from. Per
    transaction only the GTID's stream is split off (a million a second); numbers are read
    at each file's first transaction of a stream and of the file before's last."""
    last: dict = field(default_factory=dict)     # stream -> (gtid, path) before this file
    current: dict = field(default_factory=dict)  # stream -> last gtid in this file
    file: int | None = None
    path: str = ""
    gaps: list[str] = field(default_factory=list)
    gtids: bool = False

    def add(self, gtid: str | None, file: int, path: str) -> None:
        if file != self.file:
            for stream, last in self.current.items():
                self.last[stream] = (last, self.path)
            self.file, self.path, self.current = file, path, {}
        if not gtid:
            return
        stream = gtid.rpartition(":")[0] if ":" in gtid else gtid.partition("-")[0]
        if stream not in self.current:
            self.gtids = True
            prev = self.last.get(stream)
            if prev is not None:
                self._check(stream, gtid, path, *prev)
        self.current[stream] = gtid

    def _check(self, stream: str, gtid: str, path: str, p_gtid: str, p_path: str) -> None:
        found, before = stream_of(gtid), stream_of(p_gtid)
        if found is None or before is None:
            return
        number, p_number = found[1], before[1]
        name = ("the binlog file before it in this input" if p_path == path
                else os.path.basename(p_path))
        if number <= p_number:
            twice = " (the same file given twice?)" if number == p_number else ""
            raise TraceError(path, None, f"binlog files out of order: this file's GTID "
                                         f"{gtid} is not after {p_gtid}, where {name} "
                                         f"ended{twice}; give the files in the order the "
                                         f"server wrote them")
        if number > p_number + 1:
            missing = number - p_number - 1
            self.gaps.append(f"{path}: starts at GTID {gtid}, but {name} ended at {p_gtid}: "
                             f"{missing:,} transaction{'s' if missing > 1 else ''} of stream "
                             f"{stream} between them {'are' if missing > 1 else 'is'} not in "
                             f"the files given (a binlog file left out, or purged?); the "
                             f"replay reads the hole as a quiet spell")


def name_warnings(paths: list[str]) -> list[str]:
    """Files without GTIDs: what their names (STEM.NNNNNN) say of their order, in words."""
    out = []
    prev = None
    for path in paths:
        m = _NUMBERED.match(os.path.basename(path))
        if m is None:
            prev = None
            continue
        key, number = (m["stem"], m["suffix"]), int(m["number"])
        if prev is not None and prev[0] == key:
            p_number, p_path = prev[1], prev[2]
            if number <= p_number:
                out.append(f"{path}: given after {os.path.basename(p_path)}, which its name "
                           f"says the server wrote later (or the same file); without GTIDs "
                           f"the order cannot be checked otherwise: give them in order")
            elif number > p_number + 1:
                skipped = number - p_number - 1
                out.append(f"{path}: given after {os.path.basename(p_path)}: "
                           f"{skipped:,} binlog file{'s' if skipped > 1 else ''} between them "
                           f"by name not given (empty ones leave no gap)")
        prev = (key, number, path)
    return out


def check_distinct(paths: list[str]) -> None:
    """TraceError if one file is given twice (by any name)."""
    seen: dict = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue                 # read_binlog says what is wrong with it
        key = (st.st_dev, st.st_ino)
        if key in seen:
            raise TraceError(path, None, f"given twice (also as {seen[key]}): each binlog file "
                                         f"once, in order")
        seen[key] = path
