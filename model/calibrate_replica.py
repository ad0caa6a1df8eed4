"""Calibrate a machine profile on the user's own replica (`commitsched calibrate`, docs/lag.md).

Two steps, which the command runs one after the other or apart:

1. **Record** (`record`): the replica's settings, then its applied position (and what its IO
   thread has received) sampled over a window. With a probe, the SQL thread is stopped for the
   given time and started again, and the sampling goes on until the replica has caught up: a
   measured drain. Read-only without a probe. The storage's flush latency is probed in the
   replica's datadir when that is on this machine and writable (`--fsync-ms` otherwise), and
   with it how much of a sync holds the disk when the two logs sync at once (disk_overlap.py:
   the profile's `disk_hold_share`): before and after the window without a probe, during the
   probe's stop with one (the disk without the replica's own syncs on top; _DiskProbes).
2. **Fit** (`fit`): with the binlog of the window, the window is replayed (model/replay.py's
   arrivals: each transaction reaches the replica at its source commit time; the probe's stop
   as a hold) under the replica's own scheduler and settings, on a base profile whose CPU terms
   are scaled by one factor (`cpu_scale`) and whose flush latencies are scaled by the measured
   fsync latency over the base machine's (`flush_scale`). `cpu_scale` is the one number fitted:
   the one that makes the replay's applied position follow the measured one while the replica
   had a backlog (the probe's drain, or any stretch where it lagged). The mechanism terms and
   their ratios are the base profile's, fitted where many configurations were measured; the
   user's replica gives the machine's speed and its disk's.

A window in which the replica never had a backlog measures nothing about its capacity (it only
says the capacity is above the write rate): the fit refuses it and says to probe.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
from bisect import bisect_right
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .host_speed import PACE_ELASTICITY, PACE_LOOP, host_loop, pace_factor, pace_us
from .metrics import PER_SECOND
from .profiles import Profile
from .applier_cpu import AppliersCpu
from .replay import source_times
from .replica_live import LiveError, mariadb_position, mysql_position
from .disk_overlap import KINDS as OVERLAP_KINDS, SETTINGS as OVERLAP_SETTINGS
from . import disk_overlap

FORMAT = "commitsched-replica-window"
# The base machines' fsync latency (median ms of 512-byte append + fdatasync in the datadir),
# as measured beside their calibration runs: shared/replica16/timings.csv `fsync_ms`; the
# 2-core VM's traces/calibration/oltp_read_write_t64/meta.json `fsync_probe`.
BASE_FSYNC_MS = {"replica16": 0.0845, "durable-mariadb": 0.151, "relaxed-mariadb": 0.151}
# Terms that are CPU time (scaled by cpu_scale); the rest of `sync` and `commit_default`
# beyond their CPU parts is flush latency (scaled by flush_scale). `wakeup` is the scheduler's
# latency to run a woken thread and `retry`, `dispatch` follow the CPU.
CPU_TERMS = ("exec_default", "exec_event", "exec_row", "commit_serial", "commit_byte",
             "dispatch", "dispatch_event", "dispatch_thread", "coordination",
             "coordination_event", "coordination_thread", "shared_lock_thread", "handoff_event",
             "background_cpu", "retry", "wakeup")


class CalibrateError(ValueError):
    """A window or binlog the calibration cannot use; the message is one line saying why."""


@dataclass
class Window:
    """A recorded window of a live replica (what `record` measures; `--record FILE` keeps it)."""
    replica: str
    settings: dict
    started_utc: str
    interval: float
    samples: list               # [t, applied GTID state, received GTID state]
    probe: dict | None          # {"stop": t, "start": t, "seconds": S}
    fsync_ms: float | None
    cores: int | None
    workers_before: dict | None = None
    workers_after: dict | None = None
    # the applier threads' CPU at each sample ([CPU s, run-queue wait s, voluntary context
    # switches], model/applier_cpu.py) and what was read ("threads", "process"); None:
    # the replica is not on this machine
    cpu: list | None = None
    cpu_source: str | None = None
    # the quick probes' median (ms): the redo log's O_DIRECT write of one page
    log_write_ms: float | None = None
    # the CPU the commit's writes and syncs cost the committing thread, probed on the replica's
    # disk (io_cpu_us: {op: {"cpu_us", "switches"}}); None: not probed (an older window, or a
    # replica on another machine)
    io_cpu: dict | None = None
    # the mean time (ms) of a 4 KiB O_DIRECT write over a second or more of them back to back
    # (write_sustained_ms): 1 / the write IOs a second the disk sustains for one thread; taken
    # while the probe had the SQL thread stopped, else before the window (or after it, where it
    # did not fit in the stop: probes_at). None: not probed
    write_sustained_ms: float | None = None
    # each round of the quick probes (ms), PROBE_ROUNDS of them: `fsync_ms` and `log_write_ms`
    # are their medians, the rounds their spread. None: one round (an older window)
    fsync_ms_rounds: list | None = None
    log_write_ms_rounds: list | None = None
    # each round of the overlap probe (disk_overlap.probe: the redo log's in-place O_DIRECT
    # write + fdatasync and the binlog's append + fdatasync, alone and at once, µs), from
    # which the fit reads `disk_hold_share`; None: not probed (an older window, a remote
    # replica, or the probe failed: `overlap_error` says why)
    overlap_rounds: list | None = None
    overlap_error: str | None = None
    # where the disk probes' rounds ran: {kind: {place: rounds}}, kinds PROBE_KINDS, places
    # PROBE_PLACES ("before" / "after" the window, in --probe's "stop", "overran": dropped).
    # Each kind's rounds above are in the order of the places (before, stop, after). None: not
    # said (a window recorded before 2026-11-27, or a replica on another machine)
    probes_at: dict | None = None
    # the CPUs the disk probes ran on: the replica's (its server's affinity), so that a probe
    # thread woken by its write waits for the replica's cores, not for another process's
    # (on the lag-check rig the probes on the primary's busy core read the O_DIRECT write
    # 15-35 µs slower: docs/calibration.md, "Where the probes run"). None: where calibrate
    # ran (a window recorded before campaign N, 2026-11-27, or the replica's CPUs unknown
    # or out of this process's reach)
    probe_cpus: list | None = None
    # the host's pace (host_speed.host_loop: each loop's µs an iteration) by place: "stop" (in
    # --probe's stop, the SQL thread stopped: the replica idle), else "before" and "after" the
    # window (the replica applying: its load read with the pace). None: not read (a window
    # recorded before campaign P, 2026-11-27, or the server refused BENCHMARK)
    host_loop: dict | None = None
    # beside `cpu` read from the applier threads: the server process's CPU s and its IO
    # thread's at each sample ([process s, IO thread s]); what is left of the process is the
    # server's other threads' (`background_cpu`). None: not read (the threads not readable,
    # a window recorded before 2026-11-28, or the replica on another machine)
    cpu_others: list | None = None

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": 1, **asdict(self)}

    @classmethod
    def from_file(cls, path: str) -> "Window":
        """The one window of a file `--record` wrote (CalibrateError if it holds several)."""
        windows = read_windows(path)
        if len(windows) != 1:
            raise CalibrateError(f"{path}: {len(windows)} windows, where one was expected")
        return windows[0]

    @classmethod
    def from_json(cls, obj, path: str) -> "Window":
        """One window object (CalibrateError naming `path` if it is malformed)."""
        if not isinstance(obj, dict) or obj.get("format") != FORMAT or obj.get("version") != 1:
            raise CalibrateError(f"{path}: not a window recorded by `commitsched calibrate "
                                 f"--record` (format {FORMAT} version 1)")
        fields = {f for f in cls.__dataclass_fields__}
        try:
            w = cls(**{k: v for k, v in obj.items() if k in fields})
            samples = [(float(t), str(a), str(r)) for t, a, r in w.samples]
        except (TypeError, ValueError):
            raise CalibrateError(f"{path}: a malformed window (samples must be [time, applied, "
                                 f"received])") from None
        if len(samples) < 2:
            raise CalibrateError(f"{path}: fewer than two samples")
        if w.io_cpu is not None and not (isinstance(w.io_cpu, dict) and all(
                isinstance(w.io_cpu.get(k), dict)
                and isinstance(w.io_cpu[k].get("cpu_us"), (int, float))
                and math.isfinite(w.io_cpu[k]["cpu_us"]) and w.io_cpu[k]["cpu_us"] >= 0
                for k in IO_CPU_OPS)):
            raise CalibrateError(f"{path}: a malformed window (io_cpu must give cpu_us for "
                                 f"{', '.join(IO_CPU_OPS)})")
        if w.write_sustained_ms is not None and not (
                isinstance(w.write_sustained_ms, (int, float))
                and math.isfinite(w.write_sustained_ms) and w.write_sustained_ms > 0):
            raise CalibrateError(f"{path}: a malformed window (write_sustained_ms must be a "
                                 f"positive number of ms)")
        for name in ("fsync_ms_rounds", "log_write_ms_rounds"):
            rounds = getattr(w, name)
            if rounds is not None and not (isinstance(rounds, list) and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    and v > 0 for v in rounds)):
                raise CalibrateError(f"{path}: a malformed window ({name} must be a list of "
                                     f"positive numbers of ms)")
        if w.overlap_rounds is not None and not (isinstance(w.overlap_rounds, list) and all(
                _overlap_round_ok(r) for r in w.overlap_rounds) and w.overlap_rounds):
            raise CalibrateError(f"{path}: a malformed window (overlap_rounds must be rounds of "
                                 f"{', '.join(OVERLAP_KINDS)} syncs, alone and at once, with "
                                 f"positive mean_us)")
        if w.probes_at is not None and not (isinstance(w.probes_at, dict) and all(
                k in PROBE_KINDS and isinstance(c, dict) and all(
                    p in PROBE_PLACES and isinstance(n, int) and not isinstance(n, bool)
                    and n >= 0 for p, n in c.items()) for k, c in w.probes_at.items())):
            raise CalibrateError(f"{path}: a malformed window (probes_at must count rounds of "
                                 f"{', '.join(PROBE_KINDS)} by place: "
                                 f"{', '.join(PROBE_PLACES)})")
        if w.probe_cpus is not None and not (isinstance(w.probe_cpus, list) and w.probe_cpus
                                             and all(isinstance(c, int) and not isinstance(c, bool)
                                                     and c >= 0 for c in w.probe_cpus)):
            raise CalibrateError(f"{path}: a malformed window (probe_cpus must be a list of CPU "
                                 f"numbers)")
        if w.host_loop is not None and not (isinstance(w.host_loop, dict) and w.host_loop and all(
                place in HOST_LOOP_PLACES and pace_us(r) is not None
                for place, r in w.host_loop.items())):
            raise CalibrateError(f"{path}: a malformed window (host_loop must give the "
                                 f"{PACE_LOOP} loop's positive µs at {', '.join(HOST_LOOP_PLACES)})")
        w.samples = samples
        if w.cpu is not None:
            try:
                w.cpu = [(float(c), float(q), int(n)) for c, q, n in w.cpu]
            except (TypeError, ValueError):
                raise CalibrateError(f"{path}: a malformed window (cpu must be [CPU s, wait s, "
                                     f"switches] per sample)") from None
            if len(w.cpu) != len(samples):
                raise CalibrateError(f"{path}: {len(w.cpu)} CPU readings for {len(samples)} "
                                     f"samples")
        if w.cpu_others is not None:
            try:
                w.cpu_others = [(float(p), float(io)) for p, io in w.cpu_others]
            except (TypeError, ValueError):
                raise CalibrateError(f"{path}: a malformed window (cpu_others must be [process "
                                     f"CPU s, IO thread CPU s] per sample)") from None
            if len(w.cpu_others) != len(samples) or w.cpu is None:
                raise CalibrateError(f"{path}: {len(w.cpu_others)} process CPU readings for "
                                     f"{len(samples)} samples"
                                     + ("" if w.cpu is not None else " and no applier CPU"))
        return w


HOST_LOOP_PLACES = ("stop", "before", "after")


def window_pace(window: Window) -> float | None:
    """The window's host pace (µs an iteration of the PACE_LOOP): its reading in the stop,
    else the mean of before and after; None: not read."""
    h = window.host_loop or {}
    if pace_us(h.get("stop")) is not None:
        return pace_us(h["stop"])
    read = [pace_us(h.get(p)) for p in ("before", "after")]
    read = [v for v in read if v is not None]
    return sum(read) / len(read) if read else None


def _read_host(conn, progress) -> dict | None:
    """One host_loop reading, or None (said) where the server will not run it."""
    try:
        return host_loop(conn)
    except LiveError as e:
        progress(f"the host's pace not read: {e}")
        return None


def _overlap_round_ok(r) -> bool:
    def stat_ok(x):
        return (isinstance(x, dict) and all(
            isinstance(x.get(k), (int, float)) and not isinstance(x.get(k), bool)
            and math.isfinite(x[k]) and x[k] >= 0 for k in ("mean_us", "gap_us"))
            and x["mean_us"] > 0)
    return isinstance(r, dict) and all(
        isinstance(r.get(s), dict) and all(stat_ok(r[s].get(k)) for k in OVERLAP_KINDS)
        for s in OVERLAP_SETTINGS)


def read_windows(path: str) -> list["Window"]:
    """The windows of a file written by `--record`: one window, or several (`--repeat`:
    {"format": FORMAT, "version": 1, "windows": [...]})."""
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except OSError as e:
        raise CalibrateError(f"{path}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise CalibrateError(f"{path}: not JSON ({str(e)[:80]})") from None
    if isinstance(obj, dict) and isinstance(obj.get("windows"), list) \
            and obj.get("format") == FORMAT and obj.get("version") == 1:
        if not obj["windows"]:
            raise CalibrateError(f"{path}: no windows")
        return [Window.from_json(w, path) for w in obj["windows"]]
    return [Window.from_json(obj, path)]


def windows_json(windows: list["Window"]) -> dict:
    """What `--record` writes: the window itself, or several in one file."""
    if len(windows) == 1:
        return windows[0].to_json()
    return {"format": FORMAT, "version": 1, "windows": [w.to_json() for w in windows]}


# ---------------------------------------------------------------------------- record

def local_datadir(settings: dict, address) -> str | None:
    """The replica's datadir when it is on this machine and writable (to probe its disk)."""
    if address.socket is None and address.host not in ("127.0.0.1", "localhost", "::1"):
        return None
    d = settings.get("datadir") or ""
    return d if d and os.path.isdir(d) and os.access(d, os.W_OK) else None


def local_pid(settings: dict, address) -> int | None:
    """The replica's server process id, when it runs on this machine."""
    if address.socket is None and address.host not in ("127.0.0.1", "localhost", "::1"):
        return None
    try:
        with open(settings.get("pid_file") or "", encoding="ascii") as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return pid if os.path.isdir(f"/proc/{pid}") else None


def local_cores(settings: dict, address) -> int | None:
    """How many CPUs the replica's server process may run on, when it runs on this machine."""
    cpus = local_cpus(settings, address)
    return None if cpus is None else len(cpus)


def local_cpus(settings: dict, address) -> set | None:
    """The CPUs the replica's server process may run on (its affinity), when it runs on this
    machine."""
    pid = local_pid(settings, address)
    try:
        return set(os.sched_getaffinity(pid)) if pid else None
    except OSError:
        return None


@contextlib.contextmanager
def on_cpus(cpus: set | None):
    """Run the calling thread (and the threads it starts) on `cpus` meanwhile; nothing where
    None or the same as now. Linux's affinity is a thread's: other threads are untouched."""
    mine = os.sched_getaffinity(0)
    if not cpus or set(cpus) == mine:
        yield
        return
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, mine)


def fsync_ms(directory: str, n: int = 50) -> float:
    """Median latency (ms) of a 512-byte append + fdatasync in `directory`: the replica's
    disk, as the base machines were probed."""
    path = os.path.join(directory, f".commitsched-fsync-{os.getpid()}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    lat = []
    try:
        for _ in range(n):
            os.write(fd, b"x" * 512)
            t = time.perf_counter()
            os.fdatasync(fd)
            lat.append((time.perf_counter() - t) * 1e3)
    finally:
        os.close(fd)
        os.unlink(path)
    return round(float(np.median(lat)), 4)


# The O_DIRECT write probe mirrors the redo log it prices: ib_logfile0 is created at its full
# size and then overwritten in place, round and round (a circular log), so a commit's write
# never allocates a block nor grows the file, where a fresh file's first writes do both (ext4
# allocates the block and converts its extent in the journal when the write completes). The
# scratch file is written out in full and synced before it is timed, then overwritten
# sequentially a block at a time, `DIRECT_WARMUP` writes untimed first. Side by side on the
# 2-core VM (docs/calibration.md, "The redo write probe") the fresh file read no slower there
# (medians 49.5 against 48.7 µs over 10 repeats): the probe's spread between calibrations is
# the host's drift, which this does not remove.
DIRECT_FILE_BYTES = 1 << 20
DIRECT_BLOCK = 4096
DIRECT_WARMUP = 16


def preallocated_direct(path: str, size: int = DIRECT_FILE_BYTES) -> int | None:
    """`path` created at `size` bytes, every block written and synced through the page cache,
    then opened for O_DIRECT writes: its fd, or None where the file system refuses O_DIRECT
    (the file removed)."""
    with open(path, "wb") as f:
        os.chmod(path, 0o600)
        f.write(b"\0" * size)
        f.flush()
        os.fsync(f.fileno())
    try:
        return os.open(path, os.O_WRONLY | os.O_DIRECT)
    except (OSError, AttributeError):
        os.unlink(path)
        return None


@contextlib.contextmanager
def _direct_file(directory: str, tag: str):
    """A preallocated scratch file in `directory` opened for O_DIRECT writes and a
    page-aligned `DIRECT_BLOCK` buffer (as O_DIRECT needs): (fd, buffer), or None where the file
    system refuses O_DIRECT; closed and removed on the way out."""
    import mmap
    path = os.path.join(directory, f".commitsched-{tag}-{os.getpid()}")
    fd = preallocated_direct(path)
    if fd is None:
        yield None
        return
    buf = mmap.mmap(-1, DIRECT_BLOCK)
    buf.write(b"x" * DIRECT_BLOCK)
    try:
        yield fd, buf
    finally:
        os.close(fd)
        os.unlink(path)


def in_place_offset(i: int) -> int:
    """The `i`th write's offset: sequential blocks of the preallocated file, round and round,
    as InnoDB's circular log is written."""
    return DIRECT_BLOCK * (i % (DIRECT_FILE_BYTES // DIRECT_BLOCK))


def direct_write_ms(directory: str, n: int = 50) -> float | None:
    """Median latency (ms) of a 4 KiB O_DIRECT overwrite in place in `directory` (InnoDB's redo
    log write when innodb_log_file_buffering=OFF: the device's, without a flush), after
    `DIRECT_WARMUP` untimed ones; None where the file system refuses O_DIRECT."""
    with _direct_file(directory, "direct") as opened:
        if opened is None:
            return None
        fd, buf = opened
        lat = []
        try:
            for i in range(DIRECT_WARMUP + n):
                t = time.perf_counter()
                os.pwrite(fd, buf, in_place_offset(i))
                if i >= DIRECT_WARMUP:
                    lat.append((time.perf_counter() - t) * 1e3)
        except OSError:
            return None
    return round(float(np.median(lat)), 4)


def write_sustained_ms(directory: str, seconds: float = 2.0) -> float | None:
    """Mean time (ms) of a 4 KiB O_DIRECT write over `seconds` of them back to back in
    `directory`: 1 / the write IOs a second the disk sustains. On a plain disk it is about the
    write's latency (`direct_write_ms`). On a disk whose IOs are rationed (a cloud volume's
    IOPS cap, cgroup blkio throttling) it is 1 / the cap, where a short quiet probe's median
    sees the allowance's burst at the device's speed: the throttle deals the allowance per
    slice (100 ms for blk-throttle; seconds of burst credit for a cloud volume), so most writes
    pass at once and a few wait for the next slice. A commit's device write costs the cap's
    1 / IOPS once the replica's writes use the whole allowance, which is when it lags. None
    where the file system refuses O_DIRECT."""
    with _direct_file(directory, "sustained") as opened:
        if opened is None:
            return None
        fd, buf = opened
        n = 0
        try:
            t0 = time.perf_counter()
            while True:
                os.pwrite(fd, buf, in_place_offset(n))
                n += 1
                span = time.perf_counter() - t0
                if span >= seconds:
                    break
        except OSError:
            return None
    return round(1e3 * span / n, 4)


# The quick probes (fsync, the O_DIRECT write) are each taken this many times: their median is
# the window's figure, the rounds its spread (one probe of one write read 72 µs in campaign F and
# 255 µs in H on the same VM). Without --probe, in rounds a window apart in time (before it and
# after it); with one, in its stop (_DiskProbes).
PROBE_ROUNDS = 5


def probe_rounds(probe, directory: str, rounds: int) -> list:
    """`rounds` readings of `probe(directory)` (None readings left out)."""
    out = [probe(directory) for _ in range(rounds)]
    return [v for v in out if v is not None]


# each round of the overlap probe runs each setting this long (s): 1.5 s a round
OVERLAP_SECONDS = 0.5
# the sustained write rate's probe (write_sustained_ms) runs this long (s)
SUSTAINED_SECONDS = 2.0


class _OverlapRounds:
    """The overlap probe's rounds; the first failure (a directory refusing O_DIRECT) stops it,
    as one line."""

    def __init__(self):
        self.rounds: list = []
        self.error: str | None = None

    def one(self, directory: str) -> dict | None:
        """One round (None once the probe has failed)."""
        if self.error:
            return None
        try:
            return disk_overlap.probe(directory, OVERLAP_SECONDS)
        except OSError as e:
            self.error = str(e)
            return None

    def take(self, directory: str, rounds: int) -> None:
        for _ in range(rounds):
            r = self.one(directory)
            if r is not None:
                self.rounds.append(r)


# The disk probes (Window.probes_at's kinds) and where a round runs: "before" / "after" the
# window while the replica applies (no --probe: read-only), or in --probe's "stop" (the SQL
# thread stopped: the disk without the replica's own syncs and writes on top, which is the disk
# its commits have to themselves; campaign J, docs/lag-check/campaign-j.md). "overran": a round
# begun in the stop that ended after the restart, its reading dropped and taken again after the
# window.
PROBE_KINDS = ("fsync", "direct_write", "overlap", "io_cpu", "sustained")
PROBE_PLACES = ("before", "stop", "after", "overran")
# the worker thread that runs the stop's rounds
PROBE_THREAD = "calibrate-disk-probes"
# A round of the stop starts only if it should end before the restart: its estimate is the
# longest round of its kind so far (else its nominal length, else a first guess), times
# ESTIMATE_MARGIN, plus ESTIMATE_SLACK s (starting threads and files).
ESTIMATE_MARGIN = 1.1
ESTIMATE_SLACK = 0.05
FIRST_GUESS_S = {"fsync": 0.25, "direct_write": 0.25, "io_cpu": 2.0}


class _DiskProbes:
    """The disk probes of one window in the replica's datadir: their readings, and how many
    rounds of each kind ran where (`at`: Window.probes_at). The probe functions are looked up
    when a round runs (tests stub them)."""

    def __init__(self, directory: str, fsync_given: bool, cpus: set | None = None):
        self.d = directory
        # the replica's CPUs, where every round runs (`on_cpus`; Window.probe_cpus); None
        # where this process may not run there (another cpuset): the rounds stay where it is
        if cpus:
            try:
                with on_cpus(cpus):
                    pass
            except OSError:
                cpus = None
        self.cpus = cpus
        self.wanted = {"fsync": 0 if fsync_given else PROBE_ROUNDS,
                       "direct_write": PROBE_ROUNDS, "overlap": PROBE_ROUNDS, "io_cpu": 1,
                       "sustained": 1}
        self.fsync_rounds: list = []
        self.write_rounds: list = []
        self.overlap = _OverlapRounds()
        self.io_cpu: dict | None = None
        self.sustained: float | None = None
        self.at: dict = {}

    def run(self, kind: str):
        """One round of `kind` (its reading; None where the disk refused it), on the replica's
        CPUs."""
        with on_cpus(self.cpus):
            return self._run(kind)

    def _run(self, kind: str):
        if kind == "fsync":
            return fsync_ms(self.d)
        if kind == "direct_write":
            return direct_write_ms(self.d)
        if kind == "overlap":
            return self.overlap.one(self.d)
        if kind == "io_cpu":
            return io_cpu_us(self.d)
        return write_sustained_ms(self.d, SUSTAINED_SECONDS)

    def keep(self, kind: str, place: str, value) -> None:
        counts = self.at.setdefault(kind, {})
        counts[place] = counts.get(place, 0) + 1
        if place == "overran" or value is None:
            return
        if kind == "fsync":
            self.fsync_rounds.append(value)
        elif kind == "direct_write":
            self.write_rounds.append(value)
        elif kind == "overlap":
            self.overlap.rounds.append(value)
        elif kind == "io_cpu":
            self.io_cpu = value
        else:
            self.sustained = value

    def left(self, kind: str) -> int:
        """Rounds of `kind` still to take (an overrun one is taken again; a failed overlap
        probe is not)."""
        if kind == "overlap" and self.overlap.error:
            return 0
        ran = sum(n for place, n in self.at.get(kind, {}).items() if place != "overran")
        return max(0, self.wanted[kind] - ran)

    def take(self, kind: str, rounds: int, place: str) -> None:
        for _ in range(rounds):
            self.keep(kind, place, self.run(kind))

    def before_window(self, progress) -> None:
        """Without --probe, as before it (read-only): most rounds of the quick probes and the
        overlap probe before the window, the CPU of the commit's writes, the sustained rate."""
        before = PROBE_ROUNDS - PROBE_ROUNDS // 2
        self.take("fsync", min(before, self.wanted["fsync"]), "before")
        self.take("direct_write", before, "before")
        progress("probing the disk before the window (read-only: nothing is stopped): the "
                 "two logs' syncs, alone and at once")
        self.take("overlap", before, "before")
        self.take("io_cpu", 1, "before")
        # beside the replica's own writes (what the disk has left)
        self.take("sustained", 1, "before")

    def stop_plan(self) -> list:
        """The stop's rounds in order: a round of each quick probe and of the overlap probe,
        the commit's CPU and the sustained rate, then the other rounds, so that a short stop
        still holds some of each."""
        plan = []
        for i in range(PROBE_ROUNDS):
            plan += ["fsync"] * (i < self.wanted["fsync"]) + ["direct_write", "overlap"]
            if i == 0:
                plan += ["io_cpu", "sustained"]
        return plan

    def estimate(self, kind: str, done: list) -> float:
        """How long a round of `kind` should take (s), from the rounds `done` so far."""
        seen = [t1 - t0 for k, t0, t1, _ in done if k == kind]
        if seen:
            base = max(seen)
        elif kind == "overlap":
            base = (len(disk_overlap.KINDS) + 1) * OVERLAP_SECONDS
        elif kind == "sustained":
            base = SUSTAINED_SECONDS
        elif kind == "io_cpu" and self._op_seconds(done):
            # 500 of each op: the direct write, the write + sync, the append + sync
            write, sync = self._op_seconds(done)
            base = 500 * (2 * write + 2 * sync)
        else:
            base = FIRST_GUESS_S[kind]
        return ESTIMATE_MARGIN * base + ESTIMATE_SLACK

    @staticmethod
    def _op_seconds(done: list) -> tuple | None:
        """(one O_DIRECT write, one append + fdatasync) s, from the stop's quick rounds."""
        w = [t1 - t0 for k, t0, t1, _ in done if k == "direct_write"]
        f = [t1 - t0 for k, t0, t1, _ in done if k == "fsync"]
        if not w or not f:
            return None
        return max(w) / (DIRECT_WARMUP + 50), max(f) / 50

    def in_stop(self, deadline: float, clock, cancel) -> list:
        """The stop's rounds (worker thread): each that should end by `deadline` (the
        restart), in stop_plan's order; those that would not are skipped (taken after the
        window). [(kind, start, end, reading)], readings kept by the caller (`settle`)."""
        done: list = []
        for kind in self.stop_plan():
            if cancel.is_set():
                break
            t0 = clock()
            if t0 + self.estimate(kind, done) > deadline:
                continue
            value = self.run(kind)
            done.append((kind, t0, clock(), value))
        return done

    def settle(self, done: list, restarted: float | None) -> int:
        """Keep the stop's rounds that ended before the restart (`restarted`: when START was
        sent); the others ran into the catch-up: "overran". How many overran."""
        late = 0
        for kind, _, t1, value in done:
            inside = restarted is None or t1 <= restarted
            late += not inside
            self.keep(kind, "stop" if inside else "overran", value)
        return late

    def after_window(self, progress, probed_in_stop: bool) -> None:
        """What is left, after the window: the rest of the rounds (without --probe), or
        those that did not fit in the stop."""
        left = {k: self.left(k) for k in PROBE_KINDS}
        if not sum(left.values()):
            return
        progress("probing the disk after the window"
                 + (f": {sum(left.values())} rounds that did not fit in the stop"
                    if probed_in_stop else ""))
        for kind in PROBE_KINDS:
            self.take(kind, left[kind], "after")


def probe_place(window: "Window", kind: str) -> str:
    """Where a probe's rounds ran, in a few words: "in the probe's stop", "around the window"
    (before and after it; an older window too)."""
    c = (window.probes_at or {}).get(kind) or {}
    if c.get("stop") and not (c.get("before") or c.get("after")):
        return "in the probe's stop"
    if c.get("stop"):
        return "in the probe's stop and after the window"
    return "around the window"


def probes_at_words(probes_at: dict | None) -> str | None:
    """Where the window's disk probes ran, in words (None: not said, an older window, or not
    probed)."""
    if not probes_at:
        return None
    total = {p: sum(c.get(p, 0) for c in probes_at.values()) for p in PROBE_PLACES}
    stop, elsewhere = total["stop"], total["before"] + total["after"]
    if stop and not elsewhere and not total["overran"]:
        return f"all {stop} rounds in the probe's stop (the SQL thread stopped)"
    if not stop and not total["overran"]:
        return "before and after the window, while the replica applied (nothing stopped)"
    return (f"{stop} rounds in the probe's stop (the SQL thread stopped), {total['after']} "
            f"after the window (they did not fit in it)"
            + (f", {total['before']} before it" if total["before"] else "")
            + (f"; {total['overran']} ran past the restart, dropped and taken again after"
               if total["overran"] else ""))


def median_of(values: list) -> float | None:
    return round(float(np.median(values)), 4) if values else None


# What `io_cpu_us` measures, each as its server does it at commit: `direct_write` the redo log's
# 4 KiB O_DIRECT write (innodb_log_file_buffering=OFF; a relaxed replica keeps it),
# `direct_write_sync` that write and its fdatasync (a durable commit's redo flush), `append_sync`
# a 512-byte buffered append and its fdatasync (the binlog's sync, sync_binlog=1).
IO_CPU_OPS = ("direct_write", "direct_write_sync", "append_sync")


def io_cpu_us(directory: str, n: int = 100, rounds: int = 5) -> dict | None:
    """The CPU (µs) one of each of IO_CPU_OPS costs the thread that does it, and its voluntary
    context switches, in `directory` (the replica's datadir): the kernel's work for the write
    and the sync and the wake-ups they cause, which the replica's commit pays on its core as
    well. Each op `n` times a round; the median of `rounds` rounds' means (thread CPU clock,
    getrusage's switches). None where the file system refuses O_DIRECT."""
    import mmap
    import resource
    buf = mmap.mmap(-1, 4096)                 # page-aligned, as O_DIRECT needs
    buf.write(b"x" * 4096)
    direct_path = os.path.join(directory, f".commitsched-iocpu-d-{os.getpid()}")
    append_path = os.path.join(directory, f".commitsched-iocpu-a-{os.getpid()}")
    dfd = preallocated_direct(direct_path)     # overwritten in place, as the redo log is
    if dfd is None:
        return None
    afd = os.open(append_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)

    def direct(i):
        os.pwrite(dfd, buf, in_place_offset(i))

    def direct_sync(i):
        os.pwrite(dfd, buf, in_place_offset(i))
        os.fdatasync(dfd)

    def append_sync(i):
        os.write(afd, b"x" * 512)
        os.fdatasync(afd)

    out = {}
    try:
        for name, op in zip(IO_CPU_OPS, (direct, direct_sync, append_sync)):
            cpu, switches = [], []
            for _ in range(rounds):
                c0, v0 = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
                for i in range(n):
                    op(i)
                c1, v1 = time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
                cpu.append(1e6 * (c1 - c0) / n)
                switches.append((v1 - v0) / n)
            out[name] = {"cpu_us": round(float(np.median(cpu)), 2),
                         "switches": round(float(np.median(switches)), 2)}
    except OSError:
        return None
    finally:
        os.close(dfd), os.close(afd)
        for path in (direct_path, append_path):
            try:
                os.unlink(path)
            except OSError:
                pass
    return out


def received(conn, flavor: str) -> str:
    """What the replica's IO thread has received (MariaDB `Gtid_IO_Pos`, MySQL
    `Retrieved_Gtid_Set`); LiveError if the server is not a replica."""
    from .replica_live import query_named
    statement = "SHOW SLAVE STATUS" if flavor == "mariadb" else "SHOW REPLICA STATUS"
    names, rows = query_named(conn, statement)
    if not rows:
        raise LiveError(f"the server is not a replica ({statement} is empty)")
    status = dict(zip(names, rows[0]))
    return status.get("Gtid_IO_Pos" if flavor == "mariadb" else "Retrieved_Gtid_Set") or ""


def check_applying(conn, flavor: str) -> None:
    """LiveError if the replica's SQL thread is not running: a window of it says nothing of its
    speed, and a probe would start what its DBA stopped."""
    from .replica_live import query_named
    statement = "SHOW SLAVE STATUS" if flavor == "mariadb" else "SHOW REPLICA STATUS"
    names, rows = query_named(conn, statement)
    if not rows:
        raise LiveError(f"the server is not a replica ({statement} is empty)")
    status = dict(zip(names, rows[0]))
    running = status.get("Slave_SQL_Running", status.get("Replica_SQL_Running"))
    if running is None or str(running).lower() == "yes":
        return
    error = status.get("Last_SQL_Error") or ""
    raise LiveError(f"the replica's SQL thread is not running (SQL_Running: {running}"
                    + (f"; last error: {error[:120]}" if error else "")
                    + "): nothing is applied to sample; start it (START "
                    + ("SLAVE" if flavor == "mariadb" else "REPLICA")
                    + " SQL_THREAD) and calibrate again")


def record(address, *, window: float, interval: float, probe: float | None = None,
           probe_at: float = 5.0, fsync: float | None = None, cores: int | None = None,
           progress=lambda s: None, clock=time.time, sleep=time.sleep) -> Window:
    """Sample the replica for `window` seconds (and, with a probe, until it has caught up
    after it); the SQL thread is started again on every path once stopped. The disk (a local
    datadir) is probed before and after the window without a probe (read-only), and in the
    probe's stop with one, from a worker thread while the sampling goes on (_DiskProbes)."""
    import threading
    from .replica_live import (applied, connect, read_settings, start_sql_thread,
                               stop_sql_thread, worker_counts)
    conn = connect(address)
    try:
        settings = read_settings(conn)
        flavor = settings.flavor
        received(conn, flavor)                 # a replica at all?
        check_applying(conn, flavor)           # and applying?
        s = settings.to_json()
        # the disk: a prior and a diagnostic (the fit takes the flush latency from the pace)
        d = local_datadir(s, address)
        probes = _DiskProbes(d, fsync is not None, local_cpus(s, address)) if d else None
        if probes and not probe:
            probes.before_window(progress)
        elif probes:
            progress(f"the disk is probed in the probe's stop ({probe:g} s at {probe_at:g} s, "
                     f"the SQL thread stopped)")
        if cores is None:
            cores = local_cores(s, address)
        host: dict = {}
        if not probe:
            host["before"] = _read_host(conn, progress)
        before = worker_counts(conn)
        appliers = AppliersCpu(conn, local_pid(s, address))
        cpu: list = []
        others: list = []
        samples: list = []
        state = {"stopped": None, "started": None}
        start = clock()
        deadline = start + window
        stopped = False
        # the stop's disk probes: a worker thread, so that the samples keep their times and
        # the restart its own (never later for a probe round)
        cancel = threading.Event()
        worker = None
        in_stop: dict = {"done": [], "error": None}
        restarted = None

        def probe_in_stop(until: float) -> None:
            try:
                in_stop["done"] = probes.in_stop(until, clock, cancel)
            except BaseException as e:          # raised again by the sampling thread
                in_stop["error"] = e
        try:
            while True:
                now = clock()
                samples.append((now, applied(conn, flavor), received(conn, flavor)))
                reading = appliers.read()
                cpu.append(reading)
                others.append(appliers.others())
                since = now - start
                if probe and state["stopped"] is None and since >= probe_at:
                    stop_sql_thread(conn, flavor)
                    stopped = True
                    state["stopped"] = clock()
                    # the host's pace with the replica idle, before the disk probes start
                    host["stop"] = _read_host(conn, progress)
                    progress(f"probe: SQL thread stopped for {probe:g} s"
                             + ("; probing the disk meanwhile" if probes else ""))
                    if probes:
                        worker = threading.Thread(target=probe_in_stop, name=PROBE_THREAD,
                                                  args=(state["stopped"] + probe,))
                        worker.start()
                elif stopped and clock() - state["stopped"] >= probe:
                    restarted = clock()
                    start_sql_thread(conn, flavor)
                    stopped = False
                    state["started"] = clock()
                    appliers.refresh()              # the SQL thread is a new thread
                    progress("probe: SQL thread started again; timing the catch-up")
                done = now >= deadline and not stopped
                if done and state["started"] is not None:
                    # go on until caught up after the probe (at most the window again)
                    a, r = samples[-1][1], samples[-1][2]
                    done = _caught_up(a, r, flavor) or now >= deadline + window
                if done:
                    break
                progress(f"sampling the replica: {since:.0f} of {window:g} s")
                sleep(max(0.0, interval - (clock() - now)))
        finally:
            if stopped:
                restarted = clock()
                start_sql_thread(conn, flavor)
            if worker is not None:
                cancel.set()                    # no round starts after the window
                worker.join()
        if in_stop["error"] is not None:
            raise in_stop["error"]
        after = worker_counts(conn)
        if not probe:
            host["after"] = _read_host(conn, progress)
        if probes:
            probes.settle(in_stop["done"], restarted)
            probes.after_window(progress, probed_in_stop=state["stopped"] is not None)
    finally:
        conn.close()
    fsync_rounds = probes.fsync_rounds if probes else []
    write_rounds = probes.write_rounds if probes else []
    if fsync is None:
        fsync = median_of(fsync_rounds)
    log_write = median_of(write_rounds)
    probe_info = None
    if state["stopped"] is not None:
        probe_info = {"stop": state["stopped"], "start": state["started"], "seconds": probe}
    readable = all(c is not None for c in cpu)
    return Window(address.label(), s, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
                  interval, samples, probe_info, fsync, cores, before, after,
                  cpu if readable and cpu else None,
                  appliers.source if readable and cpu else None, log_write,
                  probes.io_cpu if probes else None, probes.sustained if probes else None,
                  fsync_rounds or None, write_rounds or None,
                  (probes.overlap.rounds or None) if probes else None,
                  probes.overlap.error if probes else None, probes.at if probes else None,
                  sorted(probes.cpus) if probes and probes.cpus else None,
                  {k: v for k, v in host.items() if v is not None} or None,
                  others if readable and others and all(o is not None for o in others)
                  else None)


def _caught_up(applied_state: str, received_state: str, flavor: str) -> bool:
    if flavor == "mariadb":
        a, r = mariadb_position(applied_state), mariadb_position(received_state)
        return a is not None and r is not None and a[1] >= r[1]
    return applied_state.strip() == received_state.strip() or not received_state


# ---------------------------------------------------------------------------- fit

@dataclass
class WindowTrace:
    """The window's transactions (trace positions) and what was measured of them."""
    txns: list                  # the trace's transactions from the first the window may apply
    source: np.ndarray          # their source commit times (Unix s, spread in whole seconds)
    whole_seconds: bool
    t: np.ndarray               # sample times (Unix s)
    applied: np.ndarray         # transactions of `txns` applied at each sample (0..len)
    received: np.ndarray        # ... and in the relay log at each sample


def _positions(states: list[str], keys: list[int], flavor: str, domain, uuid) -> np.ndarray:
    """How many of the window's transactions (whose GTID numbers are `keys`, in order) each
    GTID state covers."""
    out = []
    for s in states:
        if flavor == "mariadb":
            pos = mariadb_position(s, domain)
            n = pos[1] if pos else None
        else:
            n = mysql_position(s, uuid)
        out.append(0 if n is None else bisect_right(keys, n))
    return np.asarray(out, dtype=np.int64)


def window_trace(window: Window, txns: list) -> WindowTrace:
    """Match the window's samples to the binlog's transactions (CalibrateError if the binlog
    does not hold the window)."""
    if not txns:
        raise CalibrateError("the binlog has no transactions")
    flavor = window.settings.get("flavor", "mariadb")
    gtids = [t.gtid for t in txns]
    if any(g is None for g in gtids):
        raise CalibrateError("the binlog's transactions carry no GTIDs: the replica's applied "
                             "position cannot be matched to them")
    domain = uuid = None
    if flavor == "mariadb":
        try:
            domain = int(gtids[0].split("-")[0])
            keys = [int(g.rsplit("-", 1)[1]) for g in gtids]
        except ValueError:
            raise CalibrateError(f"GTID {gtids[0]!r} is not a MariaDB GTID, but the replica "
                                 f"is MariaDB") from None
    else:
        uuid = gtids[0].split(":")[0]
        keys = [int(g.rsplit(":", 1)[1]) for g in gtids]
    if any(b <= a for a, b in zip(keys, keys[1:])):
        raise CalibrateError("the binlog's GTIDs do not increase: give its files in order")
    t = np.asarray([s[0] for s in window.samples])
    applied = _positions([s[1] for s in window.samples], keys, flavor, domain, uuid)
    received = _positions([s[2] for s in window.samples], keys, flavor, domain, uuid)
    first_applied = _first_number(window.samples[0][1], flavor, domain, uuid)
    last_applied = _first_number(window.samples[-1][1], flavor, domain, uuid)
    if first_applied is None or last_applied is None or last_applied > keys[-1] \
            or first_applied < keys[0] - 1:
        raise CalibrateError(f"the binlog does not hold the window: the replica applied GTID "
                             f"numbers {first_applied} to {last_applied} during it, the binlog "
                             f"has {keys[0]} to {keys[-1]}")
    times = source_times(txns)
    base = (times.epoch or 0.0)
    source = base + np.asarray(times.times) / PER_SECOND
    return WindowTrace(txns, source, times.whole_seconds, t, applied, received)


def _first_number(state: str, flavor: str, domain, uuid) -> int | None:
    if flavor == "mariadb":
        pos = mariadb_position(state, domain)
        return pos[1] if pos else None
    return mysql_position(state, uuid)


def nearest_base(cores: int | None) -> str:
    """The base profile for a replica with `cores`: the fitted machine whose core count is
    nearest (ties and unknown: replica16). The parallel-mode overheads the bases measured
    (threads spinning and waiting for each other's locks, hand-offs) depend on how many cores
    the threads have, which no scale factor carries from one machine to another."""
    from .profiles import PROFILES
    bases = [PROFILES[n] for n in ("replica16", "durable-mariadb") if n in PROFILES]
    if cores is None or not bases:
        return "replica16"
    return min(bases, key=lambda p: (abs(math.log(p.cores / cores)), p.name != "replica16")).name


def scaled_profile(base: Profile, cpu_scale: float, flush_scale: float,
                   io_cpu: dict | None = None, **settings) -> Profile:
    """`base` with its CPU terms times `cpu_scale`, its flush latencies times `flush_scale`
    (`settings` replace terms: cores, durability, log_write, ...).

    With `io_cpu` (the probe's CPU per write and sync on the replica's disk, io_cpu_us), what
    durability changes is the probe's: `commit_cpu` the redo log's write and sync, `sync_cpu`
    the binlog's sync, `log_write_cpu` the redo log's write alone (which a relaxed commit
    keeps). The rest of the base's commit CPU is CPU of the commit's path that every commit
    pays, durable or not: it moves to `exec_default`, so a durable transaction costs what it
    did and a relaxed one keeps all but the syncs."""
    kw = {k: getattr(base, k) * cpu_scale for k in CPU_TERMS}
    sync_cpu, commit_cpu = base.sync_cpu * cpu_scale, base.commit_cpu * cpu_scale
    if io_cpu:
        probed_sync = io_cpu["append_sync"]["cpu_us"]
        probed_commit = io_cpu["direct_write_sync"]["cpu_us"]
        kw["exec_default"] = max(0.0, kw["exec_default"] + sync_cpu + commit_cpu
                                 - probed_sync - probed_commit)
        sync_cpu, commit_cpu = probed_sync, probed_commit
        kw["log_write_cpu"] = io_cpu["direct_write"]["cpu_us"]
    kw["sync_cpu"], kw["commit_cpu"] = sync_cpu, commit_cpu
    kw["sync"] = sync_cpu + (base.sync - base.sync_cpu) * flush_scale
    kw["commit_default"] = commit_cpu + (base.commit_default - base.commit_cpu) * flush_scale
    return replace(base, **{**kw, **settings})


# a flush term's CPU part, and the term it is part of (the rest is the device's wait)
CPU_PARTS = (("sync_cpu", "sync"), ("commit_cpu", "commit_default"),
             ("log_write_cpu", "log_write"))


def pace_terms(terms: dict, factor: float) -> dict:
    """The terms in `terms` (a profile's, or a spread end's) at a host `factor` times slower:
    every CPU cost times it, each flush term's CPU part too (its device wait unchanged)."""
    out = {k: terms[k] * factor for k in CPU_TERMS if k in terms}
    for cpu, total in CPU_PARTS:
        if cpu in terms and total in terms:
            out[cpu] = terms[cpu] * factor
            out[total] = terms[total] + out[cpu] - terms[cpu]
    return out


def at_pace(profile: Profile, factor: float, note: str | None = None) -> Profile:
    """`profile` on a host `factor` times slower than it was calibrated at (host_speed: the
    loop's ratio ** PACE_ELASTICITY), its calibration spread's ends with it."""
    import dataclasses
    terms = {f.name: getattr(profile, f.name) for f in dataclasses.fields(profile)}
    fitted = dict(profile.fitted_from or {})
    spread = fitted.get("spread")
    if isinstance(spread, dict):
        fitted["spread"] = {**spread, **{end: {**spread[end], **pace_terms(spread[end], factor)}
                                         for end in ("slowest", "fastest")
                                         if isinstance(spread.get(end), dict)}}
    if note:
        fitted["host_pace_now"], fitted["host_pace_factor"] = note, round(factor, 6)
    return replace(profile, **pace_terms(terms, factor), fitted_from=fitted)


def backlog_samples(wt: WindowTrace, window: Window) -> np.ndarray:
    """The samples at which the replica had a backlog: from the probe's restart until it
    caught up, else wherever what it received ran ahead of what it applied by more than a
    second of the window's writes."""
    t, a, r = wt.t, wt.applied, wt.received
    if window.probe and window.probe.get("start"):
        start = window.probe["start"]
        after = np.flatnonzero(t >= start)
        caught = next((i for i in after if i > 0 and a[i] >= r[i - 1]), None)
        end = caught if caught is not None else (after[-1] if after.size else None)
        if end is None:
            return np.asarray([], dtype=np.int64)
        return after[after <= end]
    span = max(t[-1] - t[0], 1e-9)
    per_second = max(1.0, (a[-1] - a[0]) / span)
    return np.flatnonzero(r - a > per_second)


@dataclass
class Fit:
    profile: Profile             # the machine's (durable) terms; durability is a setting
    cpu_scale: float
    flush_scale: float
    loss: float                  # mean squared position error over the backlog samples
    samples_used: int
    measured_drain: float | None     # s from the probe's restart until caught up
    fitted_drain: float | None
    scheduler: str
    workers: int
    notes: list
    predicted_share: list = field(default_factory=list)   # by worker, largest first
    cpu_measured: float | None = None     # the replica's CPU µs per transaction applied
    prior_flush: float = 1.0              # the fsync probe's flush scale (the prior)
    # the overlap probe read: (disk_hold_share, 1 for the whole sync; measured slowdown µs,
    # whole syncs' slowdown µs); None: not probed
    overlap: tuple | None = None
    # the server's other threads' CPU µs a transaction measured on the replica (its
    # `background_cpu`); None: not read, the base's at the CPU scale
    background_measured: float | None = None


@dataclass
class Replayed:
    """The window replayed: applied count at every sample, and when it caught up after the
    probe (s from the restart; None: not within the window)."""
    applied: np.ndarray
    drain: float | None
    worker_share: list[float] = field(default_factory=list)    # by worker, largest first


def simulate_applied(wt: WindowTrace, window: Window, scheduler: str, workers: int,
                     profile: Profile, start_index: int) -> Replayed:
    """Replay the window: arrivals at the source times; it starts with what the replica had
    applied at its first sample; the probe holds what it had not applied when it stopped."""
    from .schedulers import run_scheduler
    t0 = wt.t[0]
    txns = wt.txns[start_index:]
    arrive = np.maximum((wt.source[start_index:] - t0) * PER_SECOND, 0.0)
    restart = held_from = None
    if window.probe and window.probe.get("start"):
        stop_i = int(np.searchsorted(wt.t, window.probe["stop"]))
        held_from = max(int(wt.applied[min(stop_i, len(wt.t) - 1)]) - start_index, 0)
        restart = (window.probe["start"] - t0) * PER_SECOND
        np.maximum(arrive[held_from:], restart, out=arrive[held_from:])
    arrival = arrive.tolist()
    first = txns[0].seq
    commit = [0.0] * len(txns)
    per_worker: dict[int, int] = {}

    def sink(run) -> None:
        commit[run.seq - first] = run.commit
        per_worker[run.worker] = per_worker.get(run.worker, 0) + 1

    run_scheduler(scheduler, iter(txns), workers, profile, sink,
                  arrival=lambda seq: arrival[seq - first])
    done = np.maximum.accumulate(np.asarray(commit))     # in-order: a prefix is applied
    at = (wt.t - t0) * PER_SECOND
    drain = None
    if restart is not None:
        # caught up: the first commit after which nothing that has arrived is left to apply
        arrived = np.searchsorted(arrive, done[held_from:], side="right")
        idle = np.flatnonzero(np.arange(held_from + 1, len(done) + 1) >= arrived)
        if idle.size:
            drain = max(0.0, float(done[held_from + idle[0]]) - restart) / PER_SECOND
    return Replayed(start_index + np.searchsorted(done, at, side="right"), drain,
                    shares(per_worker))


def shares(counts: dict) -> list[float]:
    """Each worker's share of the transactions, largest first (which thread is which worker
    differs between the server and the model; the spread is what compares)."""
    total = sum(counts.values())
    return sorted((c / total for c in counts.values()), reverse=True) if total else []


def measured_cpu_per_txn(window: Window, wt: WindowTrace, used: np.ndarray) -> float | None:
    """The replica's CPU µs per transaction it applied over the backlog samples (the applier
    threads', or the process's), from the window's CPU readings; None without them or with
    too few transactions applied (fewer than 100) to say."""
    if window.cpu is None or used.size < 2:
        return None
    i, j = int(used[0]), int(used[-1])
    applied = int(wt.applied[j] - wt.applied[i])
    cpu = window.cpu[j][0] - window.cpu[i][0]
    if applied < 100 or cpu <= 0:
        return None
    return 1e6 * cpu / applied


def measured_background_per_txn(window: Window, wt: WindowTrace, used: np.ndarray
                                ) -> float | None:
    """The server's other threads' CPU µs per transaction applied over the backlog samples
    (the process's CPU less the applier threads' and the IO thread's: purge, page cleaner, the
    binlog's background thread), where the window read them beside the appliers'; None
    without them or with too few transactions applied (fewer than 100) to say."""
    if window.cpu_others is None or window.cpu is None or used.size < 2:
        return None
    i, j = int(used[0]), int(used[-1])
    applied = int(wt.applied[j] - wt.applied[i])
    if applied < 100:
        return None
    process = window.cpu_others[j][0] - window.cpu_others[i][0]
    io = window.cpu_others[j][1] - window.cpu_others[i][1]
    appliers = window.cpu[j][0] - window.cpu[i][0]
    # the process's CPU is read in clock ticks (10 ms): a short drain can leave it a tick
    # below what its threads' nanosecond counters add up to
    return max(0.0, 1e6 * (process - appliers - io) / applied)


def model_cpu_per_txn(profile: Profile, txns: list, scheduler: str, workers: int,
                      background: bool) -> float:
    """The profile's CPU µs per transaction of `txns` at this configuration: what its terms put
    on a core (execution, the driver's dispatch, the commit's and the binlog sync's CPU, the
    parallel mode's coordination and contention, and with `background` the server's other
    threads'). A parallel replica's binlog sync is counted once per transaction (groups of
    one: an upper bound; the groups' size is the replay's)."""
    serial = scheduler == "serial"
    w = 1 if serial else workers
    total = 0.0
    for txn in txns:
        cost = profile.exec_cost(txn)
        if not serial:
            cost = (profile.parallel_exec(txn, cost, w) + profile.member_cost(txn)
                    + profile.contention_cpu(txn, w))
        total += cost + profile.dispatch_cost(txn, w)
    n = max(len(txns), 1)
    per_txn = total / n + profile.commit_cpu
    if profile.log_replica_updates:
        per_txn += profile.sync_cpu
    if background:
        per_txn += profile.background_cpu
    return per_txn


def fit(window: Window, txns: list, base: Profile, *, cores: int | None = None,
        fsync: float | None = None, progress=lambda s: None) -> Fit:
    """Fit the machine's CPU scale and its flush latencies' (module doc). With the replica's
    CPU time (a local replica), `cpu_scale` is its CPU per applied transaction over the base's
    and `flush_scale` the one that makes the replay follow the measured pace; without it (a
    remote replica), `flush_scale` is the fsync probe's and `cpu_scale` follows the pace.
    CalibrateError when the window cannot say."""
    wt = window_trace(window, txns)
    s = window.settings
    notes = []
    if s.get("durability") not in ("durable", "relaxed"):
        raise CalibrateError(f"the replica's durability is {s.get('durability')}: commitsched "
                             f"models durable (sync_binlog=1, innodb_flush_log_at_trx_commit=1) "
                             f"and relaxed (0 / 2) replicas")
    fsync = fsync if fsync is not None else window.fsync_ms
    base_fsync = BASE_FSYNC_MS.get(base.name)
    if fsync is not None and base_fsync:
        prior_flush = fsync / base_fsync
    else:
        prior_flush = 1.0
        notes.append("the replica's fsync latency was not measured (not on this machine; "
                     "--fsync-ms): the base machine's flush latencies are the prior")
    cores = cores or window.cores or base.cores
    if cores != base.cores:
        notes.append(f"cores: {cores} (the base profile's machine had {base.cores})")
    settings = dict(cores=cores, durability="durable", log_replica_updates=bool(
        s.get("log_replica_updates")))
    used = backlog_samples(wt, window)
    if used.size < 3:
        raise CalibrateError("the replica kept up over the whole window, so the window says "
                             "only that its capacity is above the write rate: run the "
                             "calibration with --probe SECONDS (a measured drain), or over a "
                             "window in which it lagged")
    start_index = int(wt.applied[0])
    scheduler, workers = s["scheduler"], int(s["workers"])
    # the durable machine's terms; a relaxed replica gets them through with_durability
    durability = s["durability"]
    # an unbuffered redo log (innodb_log_file_buffering=OFF) is written to the device at every
    # commit, relaxed too: the probe's O_DIRECT write (as measured: a busy disk slows a sync far
    # more than a write, so the fsync probe's slowdown does not carry to it)
    unbuffered = s.get("log_file_buffered") is False
    io_cpu = window.io_cpu if window.io_cpu and all(
        k in window.io_cpu for k in IO_CPU_OPS) else None
    if io_cpu and not unbuffered:
        # a buffered redo log's write is a copy, not this device write
        io_cpu = {**io_cpu, "direct_write": {"cpu_us": 0.0, "switches": 0.0}}
    write_us = 1e3 * window.log_write_ms if unbuffered and window.log_write_ms else 0.0
    sustained_us = 1e3 * window.write_sustained_ms if window.write_sustained_ms else 0.0
    if unbuffered and sustained_us > write_us and write_us:
        # back to back the disk took longer a write than alone: a rate it sustains (an IOPS
        # cap, the host disk's own pace). A limit binds only when the demand exceeds it, so a
        # commit's write keeps the single write's latency and the device is rate-limited at
        # what it sustained (Profile.disk_write_iops, simcore.WriteBucket)
        settings["disk_write_iops"] = 1e6 / sustained_us
        notes.append(f"the redo log's write {write_us:.0f} µs alone; back to back the disk "
                     f"sustained {1e6 / sustained_us:.0f} writes a second ({sustained_us:.0f} "
                     f"µs each): disk_write_iops {1e6 / sustained_us:.0f}, a limit the writes "
                     f"wait for only where they come faster")
    elif unbuffered and sustained_us > write_us:
        # only the sustained probe: a commit's write costs 1 / the IOs a second the disk
        # sustains once the replica's writes use it all (write_sustained_ms)
        notes.append(f"the redo log's write {sustained_us:.0f} µs: the disk sustained "
                     f"{1e6 / sustained_us:.0f} writes a second, where a single write was not "
                     f"probed (a rationed disk: an IOPS cap)")
        write_us = sustained_us
    if unbuffered and not write_us:
        notes.append("the redo log is unbuffered (innodb_log_file_buffering=OFF) but its write "
                     "latency was not probed: a relaxed prediction leaves the write out")

    overlap = None
    if window.overlap_rounds:
        # how much of a sync holds the disk: the overlap probe read through simcore.Disk, as
        # a share of each sync (the replica's syncs are not the probe's)
        share, slowed, whole = disk_overlap.share_of(window.overlap_rounds)
        settings["disk_hold_share"] = share
        overlap = (share, slowed, whole)
        notes.append(f"the disk's serial part: the two logs' syncs at once slowed each other by "
                     f"{slowed:.0f} µs together (the median of {len(window.overlap_rounds)} rounds), "
                     f"{whole:.0f} had each held the disk whole: disk_hold_share "
                     f"{share_words(share)}")
    elif window.overlap_error:
        notes.append(f"the disk's serial part was not probed ({window.overlap_error}): each "
                     f"sync holds the shared disk whole")

    # the server's other threads, measured on this replica where it can say, else the base's
    # at the machine's CPU scale (a constant CPU a transaction, where the base is measured)
    others_cpu = measured_background_per_txn(window, wt, used)
    if others_cpu is not None:
        settings = {**settings, "background_cpu": others_cpu}
        notes.append(f"the server's other threads' CPU from the replica's own counters (its "
                     f"process's CPU less the applier and IO threads'): {others_cpu:.1f} µs a "
                     f"transaction applied, in place of the base's at this CPU scale")

    def profile_for(cpu_scale: float, flush_scale: float) -> Profile:
        """The machine (durable terms) at these scales, then the replica's durability."""
        return scaled_profile(base, cpu_scale, flush_scale, io_cpu,
                              log_write=write_us, **settings)

    def loss_of(profile: Profile) -> float:
        sim = simulate_applied(wt, window, scheduler, workers,
                               profile.with_durability(durability), start_index).applied
        err = (sim[used] - wt.applied[used]).astype(float)
        return float(np.mean(err * err))

    cpu_measured = measured_cpu_per_txn(window, wt, used)
    if cpu_measured is not None:
        background = window.cpu_source == "process"
        lo, hi = int(wt.applied[used[0]]), int(wt.applied[used[-1]])

        def model_cpu(scale: float) -> float:
            return model_cpu_per_txn(profile_for(scale, prior_flush).with_durability(durability),
                                     txns[lo:hi] or txns, scheduler, workers, background)
        # the model's CPU per transaction is fixed (the probed commit CPU) + scale x the rest
        per_scale = model_cpu(2.0) - model_cpu(1.0)
        fixed = model_cpu(1.0) - per_scale
        cpu_scale = (cpu_measured - fixed) / per_scale
        if io_cpu:
            notes.append(f"the commit's CPU from the probe on its disk: the redo log's write and "
                         f"sync {io_cpu['direct_write_sync']['cpu_us']:.1f} µs, the binlog's "
                         f"sync {io_cpu['append_sync']['cpu_us']:.1f} µs, the redo log's write "
                         f"alone {io_cpu['direct_write']['cpu_us']:.1f} µs")
        if cpu_scale <= 0.02:
            notes.append(f"the probed commit CPU ({fixed:.0f} µs) is nearly all the measured "
                         f"CPU ({cpu_measured:.0f} µs): the CPU scale is held at 0.02")
            cpu_scale = 0.02
        what = ("its applier threads'" if window.cpu_source == "threads" else
                "its process's (the IO and background threads' counted too: no thread ids)")
        notes.append(f"CPU scale from the replica's measured CPU time, {what}: "
                     f"{cpu_measured:.0f} µs a transaction applied; the flush latencies fitted "
                     f"to the pace" + (f" (the fsync probe {probe_place(window, 'fsync')} "
                                       f"said {prior_flush:.2f}x)" if fsync is not None else ""))
        if durability == "relaxed" and not write_us:
            # nothing of the pace depends on the flush: keep the probe's
            flush_scale = prior_flush
            res_fun = loss_of(profile_for(cpu_scale, flush_scale))
            notes.append("a relaxed replica's pace says nothing of its flushes: the flush "
                         "latencies are the fsync probe's")
        else:
            res_x, res_fun = _search(lambda x: loss_of(profile_for(cpu_scale, math.exp(x))),
                                     "the replica's flush latencies", progress)
            flush_scale = math.exp(res_x)
            if _at_limit(res_x):
                notes.append(f"the flush scale ended at the search's limit ({flush_scale:.3g}): "
                             f"no flush latency reproduces the measured pace with the measured "
                             f"CPU")
    else:
        flush_scale = prior_flush
        notes.append("the replica's CPU time was not read (not on this machine): the CPU scale "
                     "is fitted to the pace, the flush latencies are the fsync probe's")
        res_x, res_fun = _search(lambda x: loss_of(profile_for(math.exp(x), flush_scale)),
                                 "the replica's CPU scale", progress)
        cpu_scale = math.exp(res_x)
        if _at_limit(res_x):
            # at the lower limit the flush latencies alone (the fsync probe's) are already
            # slower than the measured pace
            notes.append(f"the CPU scale ended at the search's limit ({cpu_scale:.3g}): no "
                         f"machine speed reproduces the measured pace"
                         + (f" with flush latencies {flush_scale:.2f}x the base's (the fsync "
                            f"probe; a probe taken while the disk was busy reads slow)"
                            if res_x <= _GRID[0] + 1e-9 else ""))
    profile = profile_for(cpu_scale, flush_scale)
    measured = None
    replayed = simulate_applied(wt, window, scheduler, workers,
                                profile.with_durability(durability), start_index)
    if window.probe and window.probe.get("start"):
        measured = _drain(wt.t, wt.applied, wt.received, window.probe["start"])
    result = Fit(profile, cpu_scale, flush_scale, float(res_fun), int(used.size), measured,
                 replayed.drain, scheduler, workers, notes, replayed.worker_share)
    result.cpu_measured = cpu_measured
    result.prior_flush = prior_flush
    result.overlap = overlap
    result.background_measured = others_cpu
    return result


# the scales searched (log): a grid first, since far from the answer the loss flattens (a replay
# that never drains within the window, or drains at once, misses every sample alike), where a
# scalar search alone can stop; then a bounded search between the best point's neighbours
_GRID = np.linspace(math.log(0.02), math.log(50.0), 33)


def _at_limit(x: float) -> bool:
    return x <= _GRID[0] + 1e-9 or x >= _GRID[-1] - 1e-9


def _search(loss, what: str, progress) -> tuple[float, float]:
    from scipy.optimize import minimize_scalar
    losses = []
    for i, x in enumerate(_GRID):
        progress(f"fitting {what}: {i + 1}/{len(_GRID)}")
        losses.append(loss(x))
    best = int(np.argmin(losses))
    lo, hi = _GRID[max(best - 1, 0)], _GRID[min(best + 1, len(_GRID) - 1)]
    progress(f"fitting {what}: refining")
    res = minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 2e-3})
    if res.fun > losses[best]:
        return float(_GRID[best]), float(losses[best])
    return float(res.x), float(res.fun)


def _drain(t: np.ndarray, applied: np.ndarray, received: np.ndarray, start: float
           ) -> float | None:
    """Seconds from `start` until the replica has applied all that it had received one sample
    earlier (a replica that keeps up is seldom seen idle at the very instant of a sample)."""
    for i in np.flatnonzero(t >= start):
        if i > 0 and applied[i] >= received[i - 1]:
            return float(t[i] - start)
    return None


def share_words(share: float) -> str:
    """A disk_hold_share in words."""
    return "1 (the whole sync)" if share >= 1 else f"{share:.3f} of each sync"


def _overlap_fitted_from(overlap: tuple, window: Window) -> str:
    share, slowed, whole = overlap
    m = disk_overlap.median_round(window.overlap_rounds)
    alone = ", ".join(f"{k} {m['alone'][k]['mean_us']:.0f}" for k in OVERLAP_KINDS)
    at_once = ", ".join(f"{k} {m['at once'][k]['mean_us']:.0f}" for k in OVERLAP_KINDS)
    return (f"{share:.3f}" + (" (the whole sync)" if share >= 1 else "")
            + f": the overlap probe on the replica's disk ({len(window.overlap_rounds)} rounds "
            f"of {OVERLAP_SECONDS:g} s a setting, medians of the mean µs): the redo log's "
            f"in-place 4 KiB O_DIRECT write + fdatasync and the binlog's 512-byte append + "
            f"fdatasync, each from its own thread back to back, alone ({alone}) and at once "
            f"({at_once}); slowed {slowed:.0f} µs together where whole syncs taking turns "
            f"would be {whole:.0f}; each round's share of a sync held is what makes "
            f"simcore.Disk slow its loops as much (disk_overlap.share_from), the figure their "
            f"median")


def described(fit: Fit, window: Window, base: Profile, name: str) -> Profile:
    """The fitted profile with its provenance: which replica, when, settings, from what."""
    s = window.settings
    what = (f"{s.get('scheduler')} W={s.get('workers')}, {s.get('durability')}, "
            f"log_replica_updates {'on' if s.get('log_replica_updates') else 'off'}")
    probe = (f", a {window.probe['seconds']:g} s probe (measured drain "
             f"{fit.measured_drain:.2f} s, replayed {fit.fitted_drain:.2f} s)"
             if window.probe and fit.measured_drain is not None and fit.fitted_drain is not None
             else "")
    machine = (f"the replica at {window.replica} ({s.get('version')}), {fit.profile.cores} "
               f"cores, fsync {window.fsync_ms if window.fsync_ms is not None else '?'} ms, "
               f"calibrated {window.started_utc}")
    if fit.cpu_measured is not None:
        cpu_how = (f"from the replica's CPU time ({fit.cpu_measured:.0f} µs a transaction, "
                   f"{'its applier threads' if window.cpu_source == 'threads' else 'its process'})")
        flush_how = "fitted to the pace"
    else:
        cpu_how, flush_how = "fitted to the pace", "the fsync probe"
    write = (f", the redo log's unbuffered write {fit.profile.log_write:.1f} µs (the O_DIRECT "
             f"write probe's)"
             if fit.profile.log_write else "")
    if fit.profile.disk_write_iops is not None:
        write += (f", the disk's writes limited to {fit.profile.disk_write_iops:.0f} a second "
                  f"(the sustained write probe's)")
    if window.io_cpu:
        write += (f", the commit's CPU from the probe on its disk (the redo log's write and sync "
                  f"{fit.profile.commit_cpu:.1f} µs, the binlog's sync {fit.profile.sync_cpu:.1f}"
                  f" µs, the redo log's write alone {fit.profile.log_write_cpu:.1f} µs)")
    provenance = (f"calibrated by `commitsched calibrate` on {window.replica} at {what}, from a "
                  f"{window.samples[-1][0] - window.samples[0][0]:.0f} s window{probe}: CPU "
                  f"terms {fit.cpu_scale:.3f} x {base.name}'s ({cpu_how}), flush latencies "
                  f"{fit.flush_scale:.3f} x {base.name}'s ({flush_how}; the fsync probe "
                  f"{probe_place(window, 'fsync')} said {fit.prior_flush:.3f}){write}; the "
                  f"mechanism terms and their ratios are "
                  f"{base.name}'s")
    p = fit.profile
    return replace(p, name=name, machine=machine, provenance=provenance, band=(),
                   fitted_from={"cpu_scale": f"{fit.cpu_scale:.4f}: " + (
                                    f"measured CPU {fit.cpu_measured:.1f} µs/txn over the base's"
                                    if fit.cpu_measured is not None else
                                    f"the replay's applied position against the measured one "
                                    f"over {fit.samples_used} samples with a backlog"),
                                "flush_scale": f"{fit.flush_scale:.4f}: " + (
                                    f"the replay's applied position against the measured one "
                                    f"over {fit.samples_used} samples with a backlog"
                                    if fit.cpu_measured is not None else
                                    f"fsync probe / {base.name}'s"),
                                "log_write": f"{p.log_write:.2f}", "base": base.name,
                                **({"disk_write_iops": f"{p.disk_write_iops:.0f}: 1e6 / the "
                                    f"sustained write probe's "
                                    f"{1e3 * window.write_sustained_ms:.1f} µs (slower than "
                                    f"the single write's {1e3 * window.log_write_ms:.1f} µs)"}
                                   if p.disk_write_iops is not None else {}),
                                **({"disk_hold_share": _overlap_fitted_from(fit.overlap,
                                                                             window)}
                                   if fit.overlap else {}),
                                **({"commit_cpu, sync_cpu, log_write_cpu":
                                    "the probe's CPU per write and sync on the replica's disk "
                                    "(calibrate_replica.io_cpu_us)"} if window.io_cpu else {}),
                                **background_record([fit]),
                                **host_pace_record([window])},
                   calibrated={"durability": [s.get("durability")], "cores": [p.cores],
                               "log_replica_updates": [bool(s.get("log_replica_updates"))]})


def background_record(fits: list[Fit]) -> dict:
    """fitted_from["background_cpu"] where the windows measured it (every one of them)."""
    got = [f.background_measured for f in fits]
    if not got or any(g is None for g in got):
        return {}
    how = ("the server process's CPU less its applier and IO threads', per transaction "
           "applied in the window's drain (calibrate_replica.measured_background_per_txn)")
    if len(got) == 1:
        return {"background_cpu": f"{got[0]:.2f}: {how}"}
    return {"background_cpu": f"the median of {', '.join(f'{g:.1f}' for g in got)}: {how}"}


def host_pace_record(windows: list[Window]) -> dict:
    """fitted_from["host_pace"]: the host's pace the profile's CPU terms hold at (the median of
    its windows' readings) and what `lag --host-now` scales them by; {} where a window has no
    reading (the profile then holds at whatever pace its windows ran)."""
    paces = [window_pace(w) for w in windows]
    if not paces or any(p is None for p in paces):
        return {}
    return {"host_pace": {"loop": PACE_LOOP, "us": round(float(np.median(paces)), 4),
                          "windows_us": [round(p, 4) for p in paces],
                          "elasticity": PACE_ELASTICITY,
                          "how": "each window's CPU terms brought to the median reading (x "
                                 "(median / its reading) ** elasticity) before the median of "
                                 "the fits; `lag --host-now` scales them by (now / this) ** "
                                 "elasticity (model/host_speed.py)"}}


def profile_pace(profile: Profile) -> float | None:
    """The host pace (µs an iteration of its loop) a calibrated profile's CPU terms hold at."""
    rec = (profile.fitted_from or {}).get("host_pace")
    try:
        us = float(rec["us"]) if rec.get("loop") == PACE_LOOP else None
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return us if us and us > 0 else None


def at_pace_now(profile: Profile, now_us: float, where: str) -> Profile:
    """`profile` at the host pace read now (`now_us`, at `where`); ValueError (one line) for a
    profile that records no pace of its own."""
    then = profile_pace(profile)
    if then is None:
        raise ValueError(f"profile {profile.name} records no host pace (fitted_from.host_pace: "
                         f"calibrate it again with this version)")
    factor = pace_factor(now_us, then)
    return at_pace(profile, factor, f"the host loop read {now_us:.1f} µs at {where} against "
                                    f"{then:.1f} at calibration: CPU terms x {factor:.3f}")


# ---------------------------------------------------------------------------- several windows

# What every window of one calibration shares: one replica, one configuration. A window of
# another configuration would make the spread the model's error between configurations, not
# the machine's drift.
ALIKE_SETTINGS = ("version", "flavor", "scheduler", "workers", "durability",
                  "log_replica_updates", "log_file_buffered")
# Profile fields that are not the machine's terms (or that a calibration sets, not fits)
_NOT_TERMS = frozenset({"name", "provenance", "machine", "band", "bands", "fitted_from",
                        "calibrated", "cores", "durability", "log_replica_updates"})


def settings_words(window: Window) -> str:
    s = window.settings
    return (f"{s.get('scheduler')} W={s.get('workers')}, {s.get('durability')}, "
            f"log_replica_updates {'on' if s.get('log_replica_updates') else 'off'}")


def check_alike(windows: list[Window], labels: list[str]) -> None:
    """CalibrateError (one line, naming the window) unless the windows are of one replica at
    one configuration, each given once."""
    first, name = windows[0], labels[0]
    seen = {}
    for w, label in zip(windows, labels):
        key = (w.started_utc, w.samples[0][0])
        if key in seen:
            raise CalibrateError(f"{label}: the same window as {seen[key]} (started "
                                 f"{w.started_utc}): give each window once")
        seen[key] = label
        if w.replica != first.replica:
            raise CalibrateError(f"{label}: a window of {w.replica}, where {name}'s is of "
                                 f"{first.replica}: the windows of one calibration are of one "
                                 f"replica")
        differ = [k for k in ALIKE_SETTINGS if w.settings.get(k) != first.settings.get(k)]
        if differ:
            k = differ[0]
            raise CalibrateError(f"{label}: recorded at {k} {w.settings.get(k)!r}, {name} at "
                                 f"{first.settings.get(k)!r}: the windows of one calibration "
                                 f"share the replica's settings (calibrate each configuration "
                                 f"on its own)")
        if w.cores != first.cores:
            raise CalibrateError(f"{label}: the replica had {w.cores} cores, in {name} "
                                 f"{first.cores}: the windows of one calibration are of one "
                                 f"machine")


def machine_terms(profile: Profile) -> dict:
    """The profile's terms a calibration fits (costs in µs, and the base's switches)."""
    import dataclasses
    return {f.name: getattr(profile, f.name) for f in dataclasses.fields(profile)
            if f.name not in _NOT_TERMS}


@dataclass
class ManyFit:
    """A calibration from several windows: each window fitted on its own; the profile is each
    term's median over the windows' fits, and the spread's ends each term at its largest
    (`slowest`) and smallest (`fastest`) over them: every term is a cost, so the slowest end is
    no faster than any window's fit in any configuration."""
    fits: list[Fit]
    windows: list[Window]
    labels: list[str]
    profile: Profile
    slowest: dict
    fastest: dict


def fit_many(windows: list[Window], txns_of: list[list], base: Profile, *,
             labels: list[str], cores: int | None = None, fsync: float | None = None,
             progress=lambda s: None) -> ManyFit:
    """Fit each window on its own (`fit`), then the median and the spread (ManyFit)."""
    check_alike(windows, labels)
    fits = []
    for i, (w, txns) in enumerate(zip(windows, txns_of)):
        def said(text, i=i):
            progress(f"window {i + 1} of {len(windows)}: {text}")
        try:
            fits.append(fit(w, txns, base, cores=cores, fsync=fsync, progress=said))
        except CalibrateError as e:
            raise CalibrateError(f"{labels[i]}: {e}") from None
    paces = [window_pace(w) for w in windows]
    if len(fits) > 1 and all(p is not None for p in paces):
        # every window's CPU terms at one host pace (the readings' median): the spread is the
        # machine's, less the host's drift between the windows
        ref = float(np.median(paces))
        fits = [replace(f, profile=at_pace(f.profile, pace_factor(ref, p)))
                for f, p in zip(fits, paces)]
    terms = [machine_terms(f.profile) for f in fits]

    def over(func) -> dict:
        out = {}
        for k, v in terms[0].items():
            if k == "disk_write_iops":
                # as µs a write (None: no limit, 0), so that the slowest end is the lowest rate
                r = float(func([0.0 if t[k] is None else 1e6 / t[k] for t in terms]))
                out[k] = None if r == 0.0 else round(1e6 / r, 6)
            elif k == "disk_hold":
                # None: the whole sync held, the longest hold (and the slowest)
                r = float(func([math.inf if t[k] is None else t[k] for t in terms]))
                out[k] = None if math.isinf(r) else round(r, 6)
            elif k == "disk_hold_share":
                # None: not probed, the whole sync held (a share of 1, the slowest)
                shares = [1.0 if t[k] is None else t[k] for t in terms]
                out[k] = (None if all(t[k] is None for t in terms)
                          else round(float(func(shares)), 6))
            elif isinstance(v, bool) or not isinstance(v, (int, float)):
                out[k] = v                  # a switch of the base's: the same in every fit
            else:
                out[k] = round(float(func([t[k] for t in terms])), 6)
        return out
    median = over(np.median) if len(fits) > 1 else terms[0]
    profile = replace(fits[0].profile, **median)
    return ManyFit(fits, list(windows), list(labels), profile, over(max), over(min))


def window_txns(window: Window, txns: list) -> list:
    """The transactions of `txns` (binlog files covering several windows) that one window can
    have applied: from the first it had not applied at its first sample to the last its IO
    thread had received at its last."""
    flavor = window.settings.get("flavor", "mariadb")
    gtids = [t.gtid for t in txns]
    if not txns or any(g is None for g in gtids):
        return txns                          # window_trace says what is wrong
    try:
        if flavor == "mariadb":
            domain, uuid = int(gtids[0].split("-")[0]), None
            keys = [int(g.rsplit("-", 1)[1]) for g in gtids]
        else:
            domain, uuid = None, gtids[0].split(":")[0]
            keys = [int(g.rsplit(":", 1)[1]) for g in gtids]
    except ValueError:
        return txns
    if any(b <= a for a, b in zip(keys, keys[1:])):
        return txns
    first = _first_number(window.samples[0][1], flavor, domain, uuid)
    last = _first_number(window.samples[-1][2], flavor, domain, uuid)
    lo = 0 if first is None else bisect_right(keys, first)
    hi = len(keys) if last is None else max(bisect_right(keys, last), lo + 1)
    return txns[max(lo - 1, 0):hi]


def window_record(f: Fit, w: Window, label: str) -> dict:
    """One window's fit as the profile keeps it (fitted_from["windows"])."""
    r = lambda v, n=4: None if v is None else round(float(v), n)  # noqa: E731
    return {"window": label, "started_utc": w.started_utc,
            "seconds": r(w.samples[-1][0] - w.samples[0][0], 1),
            "cpu_scale": r(f.cpu_scale), "flush_scale": r(f.flush_scale),
            "log_write_us": r(f.profile.log_write, 2),
            "log_write_ms_rounds": w.log_write_ms_rounds, "fsync_ms": w.fsync_ms,
            "fsync_ms_rounds": w.fsync_ms_rounds,
            "cpu_measured_us": r(f.cpu_measured, 1), "host_pace_us": r(window_pace(w)),
            "background_cpu_us": r(f.background_measured, 1),
            "probe_drain_measured_s": r(f.measured_drain, 3),
            "probe_drain_replayed_s": r(f.fitted_drain, 3)}


def described_many(mf: ManyFit, base: Profile, name: str) -> Profile:
    """The profile of a calibration from one or several windows, with its provenance; with
    several, fitted_from["spread"] holds the ends `commitsched lag` replays for its ranges."""
    records = [window_record(f, w, label) for f, w, label in zip(mf.fits, mf.windows,
                                                                  mf.labels)]
    if len(mf.fits) == 1:
        p = described(mf.fits[0], mf.windows[0], base, name)
        return replace(p, fitted_from={**p.fitted_from, "windows": records})
    first = mf.windows[0]
    s = first.settings
    scales = lambda key: ", ".join(f"{rec[key]:.3f}" for rec in records)  # noqa: E731
    med = lambda key: float(np.median([rec[key] for rec in records]))  # noqa: E731
    p = mf.profile
    writes = ", ".join(f"{rec['log_write_us']:.1f}" for rec in records)
    machine = (f"the replica at {first.replica} ({s.get('version')}), {p.cores} cores, "
               f"calibrated from {len(records)} windows, "
               f"{records[0]['started_utc']} to {records[-1]['started_utc']}")
    provenance = (f"calibrated by `commitsched calibrate` on {first.replica} at "
                  f"{settings_words(first)}, from {len(records)} windows fitted each on its own "
                  f"({', '.join(r['window'] for r in records)}): each term the median of the "
                  f"windows' fits (CPU scale {med('cpu_scale'):.3f} of {scales('cpu_scale')}; "
                  f"flush scale {med('flush_scale'):.3f} of {scales('flush_scale')}; the redo "
                  f"log's write {p.log_write:.1f} µs of {writes}), "
                  f"the spread's ends each term at its slowest and fastest window's; the "
                  f"mechanism terms and their ratios are {base.name}'s")
    return replace(p, name=name, machine=machine, provenance=provenance, band=(),
                   fitted_from={"cpu_scale": f"{med('cpu_scale'):.4f}: the median of "
                                             f"{scales('cpu_scale')}",
                                "flush_scale": f"{med('flush_scale'):.4f}: the median of "
                                               f"{scales('flush_scale')}",
                                "log_write": f"{p.log_write:.2f}: the median of the windows'",
                                **({"disk_hold_share": (
                                    f"{p.disk_hold_share:.3f}: the median of the windows' "
                                    f"overlap probes ("
                                    + ", ".join(f"{f.overlap[0]:.3f}"
                                                for f in mf.fits if f.overlap)
                                    + "; each: calibrate_replica._overlap_fitted_from)")}
                                   if any(f.overlap for f in mf.fits) else {}),
                                **({"disk_write_iops": f"{p.disk_write_iops:.0f}: the "
                                    f"median of the windows' sustained write probes, as µs a "
                                    f"write"}
                                   if p.disk_write_iops is not None else {}),
                                **background_record(mf.fits),
                                **host_pace_record(mf.windows),
                                "base": base.name, "windows": records,
                                "spread": {"durability": "durable", "slowest": mf.slowest,
                                           "fastest": mf.fastest}},
                   calibrated={"durability": [s.get("durability")], "cores": [p.cores],
                               "log_replica_updates": [bool(s.get("log_replica_updates"))]})
