"""The CPU time of a local replica's applier threads (`commitsched calibrate`, docs/lag.md).

A replica's CPU per applied transaction is what fixes the machine's CPU speed in a calibration:
the pace of the apply alone cannot split a transaction's time between CPU and the waits for the
disk. When the server runs on this machine, performance_schema.threads gives each applier
thread's OS thread id (`THREAD_OS_ID`: MariaDB's SQL thread and its parallel workers; MySQL's
coordinator and workers), and /proc gives its CPU time: `schedstat` (nanoseconds on a core,
nanoseconds waiting for one, and, from `status`, the voluntary context switches: how often it
went off its core to wait). Without performance_schema the whole process's CPU time
(/proc/PID/stat) stands in: it also counts the IO thread and the background threads, and the
window says which was read. With the threads read, the process's CPU and the IO thread's are
read beside them (`others`): what is left of the process is the server's other threads'
(purge, page cleaner, the binlog's background thread), which calibrate fits as `background_cpu`.
"""
from __future__ import annotations

import os

# performance_schema.threads names of the threads that apply (not the IO thread's)
APPLIER_THREADS = ("thread/sql/slave_sql", "thread/sql/rpl_parallel_thread",
                   "thread/sql/replica_sql", "thread/sql/replica_worker",
                   "thread/sql/slave_worker")
IO_THREADS = ("thread/sql/slave_io", "thread/sql/replica_io")
# how often (in samples) the thread list is read again: the SQL thread gets a new OS thread at
# every START SLAVE SQL_THREAD (the probe's), the workers at a change of their number
REFRESH_EVERY = 20


def thread_ids(conn, names=APPLIER_THREADS) -> list[int] | None:
    """OS thread ids of the server's threads with these instrument names; None where
    performance_schema cannot say (off, no THREAD_OS_ID column, no privilege)."""
    from .replica_live import LiveError, query
    try:
        rows = query(conn, "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE NAME IN ("
                     + ", ".join(f"'{n}'" for n in names) + ")")
    except LiveError:
        return None
    ids = [int(r[0]) for r in rows if r and r[0] not in (None, "", "NULL")]
    return ids or None


def thread_times(pid: int, tid: int) -> tuple[float, float, int] | None:
    """(CPU s, run-queue wait s, voluntary context switches) of one thread; None if gone."""
    base = f"/proc/{pid}/task/{tid}"
    try:
        with open(f"{base}/schedstat", encoding="ascii") as f:
            on_cpu, waiting = (int(x) for x in f.read().split()[:2])
        switches = 0
        with open(f"{base}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    switches = int(line.split()[1])
        return on_cpu / 1e9, waiting / 1e9, switches
    except (OSError, ValueError):
        return None


def process_cpu(pid: int) -> float | None:
    """CPU seconds of the whole process (every thread), user + system; None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class AppliersCpu:
    """Cumulative CPU of a local replica's applier threads, read at each sample. Threads come
    and go (the probe's restart, a change of workers): each thread's last reading is kept, so
    the sum only grows. `source` says what was read: "threads", "process" (no thread
    ids: the IO and background threads counted too), or None (not on this machine)."""

    def __init__(self, conn, pid: int | None, names=APPLIER_THREADS):
        self.conn, self.pid, self.names = conn, pid, names
        self.stale = False
        self.seen: dict[int, tuple[float, float, int]] = {}
        self.tids: list[int] = []
        self.count = 0
        self.source = None
        if pid is None or not os.path.isdir(f"/proc/{pid}"):
            return
        self.tids = thread_ids(conn, names) or []
        self.source = "threads" if self.tids else (
            "process" if process_cpu(pid) is not None else None)
        # the IO thread beside the appliers (`others`); not for a reader of other threads
        self.io_tids = (thread_ids(conn, IO_THREADS) or []
                        if self.source == "threads" and names == APPLIER_THREADS else [])
        self.io_seen: dict[int, float] = {}

    def read(self) -> tuple[float, float, int] | None:
        """(CPU s, run-queue wait s, voluntary switches) so far; None when not readable."""
        if self.source is None:
            return None
        if self.source == "process":
            cpu = process_cpu(self.pid)
            return None if cpu is None else (cpu, 0.0, 0)
        self.count += 1
        if self.stale or self.count % REFRESH_EVERY == 0:
            self.tids = thread_ids(self.conn, self.names) or self.tids
            self.stale = False
        for tid in self.tids:
            t = thread_times(self.pid, tid)
            if t is not None:
                self.seen[tid] = t
        return (sum(v[0] for v in self.seen.values()), sum(v[1] for v in self.seen.values()),
                sum(v[2] for v in self.seen.values()))

    def others(self) -> tuple[float, float] | None:
        """(the process's CPU s, its IO thread's CPU s) so far, read with the appliers' (after
        `read`); None unless the applier threads are read (the process's CPU then holds all)."""
        if self.source != "threads":
            return None
        cpu = process_cpu(self.pid)
        if cpu is None:
            return None
        if self.count % REFRESH_EVERY == 0:
            self.io_tids = thread_ids(self.conn, IO_THREADS) or self.io_tids
        for tid in self.io_tids:
            t = thread_times(self.pid, tid)
            if t is not None:
                self.io_seen[tid] = t[0]
        return cpu, sum(self.io_seen.values())

    def refresh(self) -> None:
        """Read the thread list again at the next reading (the SQL thread was started again:
        a new thread); the reading's own thread does it, so the connection stays its own."""
        self.stale = True
