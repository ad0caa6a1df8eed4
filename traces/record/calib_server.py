"""Private MariaDB servers for the calibration: a primary and a replica on 127.0.0.1, each with
its own datadir, socket, port and error log, and a replica datadir that can be restored from a
cold snapshot before every timed run. Host resources read from /proc for every run.

Reuses `record.py`'s tool lookup and port choice; never touches the system service or its config.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

from record import install_datadir, private_tmpdir, server_user, share_args
from record import find_tools, free_port  # noqa: F401  (re-exported for calibrate.py)


class CalibServer:
    """One mariadbd bound to 127.0.0.1. `install()` creates a fresh datadir; `start()` runs the
    server on whatever datadir is there (a fresh one or a restored snapshot)."""

    def __init__(self, tools: dict, workdir: str, port: int, name: str):
        self.tools, self.workdir, self.port, self.name = tools, workdir, port, name
        self.datadir = os.path.join(workdir, "data")
        self.sock = os.path.join(workdir, "mysqld.sock")
        self.errlog = os.path.join(workdir, "error.log")
        self.proc: subprocess.Popen | None = None
        self.user = server_user()

    def _own(self, path: str) -> None:
        if self.user:
            subprocess.run(["chown", "-R", f"{self.user}:{self.user}", path], check=True)

    def install(self) -> None:
        os.makedirs(self.datadir, exist_ok=True)
        os.chmod(self.workdir, 0o755)
        self._own(self.workdir)
        owner = [f"--user={self.user}"] if self.user else []
        tmp = f"--tmpdir={private_tmpdir(self.workdir, self.user)}"
        r = install_datadir(self.tools, self.datadir, [*owner, tmp])
        if r.returncode != 0:
            raise SystemExit(f"calibrate: install_db failed for {self.name}:\n" + r.stdout[-1500:])

    def start(self, settings: dict[str, str]) -> None:
        owner = [f"--user={self.user}"] if self.user else []
        args = [self.tools["server"], "--no-defaults", f"--datadir={self.datadir}",
                f"--socket={self.sock}", f"--port={self.port}", "--bind-address=127.0.0.1",
                f"--pid-file={os.path.join(self.workdir, 'mysqld.pid')}",
                f"--log-error={self.errlog}", "--skip-name-resolve", *owner,
                f"--tmpdir={private_tmpdir(self.workdir, self.user)}", *share_args()]
        args += [f"--{k.replace('_', '-')}={v}" for k, v in settings.items()]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"calibrate: {self.name} mariadbd exited at start:\n"
                                 + self.error_tail())
            r = subprocess.run([self.tools["admin"], "--no-defaults", f"--socket={self.sock}",
                                "-uroot", "ping"], capture_output=True)
            if r.returncode == 0:
                return
            time.sleep(0.3)
        raise SystemExit(f"calibrate: {self.name} did not answer within 90 s\n" + self.error_tail())

    @property
    def pid(self) -> int:
        return self.proc.pid

    def error_tail(self, n: int = 15) -> str:
        try:
            with open(self.errlog) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def sql(self, query: str, timeout: float = 600) -> list[list[str]]:
        r = subprocess.run([self.tools["client"], "--no-defaults", f"--socket={self.sock}",
                            "-uroot", "-N", "-B", "-e", query], capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise SystemExit(f"calibrate: SQL on {self.name} failed: {query}\n{r.stderr}"
                             + self.error_tail(5))
        return [line.split("\t") for line in r.stdout.splitlines()]

    def status(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.sql("SHOW GLOBAL STATUS")}

    def slave_status(self) -> dict[str, str]:
        r = subprocess.run([self.tools["client"], "--no-defaults", f"--socket={self.sock}",
                            "-uroot", "-E", "-e", "SHOW SLAVE STATUS"], capture_output=True,
                           text=True, check=True)
        out = {}
        for line in r.stdout.splitlines():
            k, sep, v = line.strip().partition(": ")
            if sep:
                out[k] = v
        return out

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        subprocess.run([self.tools["admin"], "--no-defaults", f"--socket={self.sock}", "-uroot",
                        "shutdown"], capture_output=True, timeout=120)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # only our own server's process group
            self.proc.wait()

    def snapshot(self, dest: str) -> None:
        """Cold copy of the (stopped) datadir."""
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(self.datadir, dest, symlinks=True)

    def restore(self, src: str) -> None:
        """Replace the (stopped) datadir by the snapshot, and drop the old error log."""
        shutil.rmtree(self.datadir, ignore_errors=True)
        shutil.copytree(src, self.datadir, symlinks=True)
        self._own(self.datadir)
        try:
            os.remove(self.errlog)
        except OSError:
            pass


# ---------------------------------------------------------------- host measurements (/proc)

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def proc_stat() -> dict[str, int]:
    with open("/proc/stat") as f:
        vals = f.readline().split()[1:1 + len(CPU_FIELDS)]
    return dict(zip(CPU_FIELDS, map(int, vals)))


def cpu_shares(before: dict, after: dict) -> dict[str, float]:
    """Fractions of all CPU time (every core) between two /proc/stat reads."""
    d = {k: after[k] - before[k] for k in CPU_FIELDS}
    total = sum(d.values()) or 1
    return {"steal": d["steal"] / total, "iowait": d["iowait"] / total,
            "idle": d["idle"] / total,
            "busy": (total - d["idle"] - d["iowait"] - d["steal"]) / total}


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of every thread of `pid`."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError):
            continue
    return out


def process_cpu(pid: int) -> float:
    """CPU seconds of the whole process, threads that already ended included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_sched(pid: int) -> dict[int, tuple[float, int]]:
    """Per thread of `pid`: seconds spent runnable but waiting for a core (schedstat's run
    delay) and voluntary context switches (times it blocked: a lock, a condition, a sync)."""
    out = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                delay_ns = int(f.read().split()[1])
            with open(f"{base}/{tid}/status") as f:
                vol = next(int(line.split()[1]) for line in f
                           if line.startswith("voluntary_ctxt_switches"))
            out[int(tid)] = (delay_ns / 1e9, vol)
        except (OSError, IndexError, ValueError, StopIteration):
            continue
    return out


class ThreadSampler:
    """Per-thread CPU of a process, sampled every `period` s while a run lasts: the replica's
    SQL driver and worker threads end when the SQL thread stops, so a read after the run would
    miss them. Keeps each thread's last value (at most one period of its CPU is lost). Also keeps
    each thread's run-queue delay and voluntary context switches (`sched`), sampled alike."""

    def __init__(self, pid: int, period: float = 0.1):
        import threading
        self.pid, self.period = pid, period
        self.start_values = thread_cpu(pid)
        self.last: dict[int, float] = dict(self.start_values)
        self.sched_start = thread_sched(pid)
        self.sched_last = dict(self.sched_start)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        self.last.update(thread_cpu(self.pid))
        self.sched_last.update(thread_sched(self.pid))

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self._sample()
            except OSError:
                return

    def stop(self) -> dict[int, float]:
        """CPU seconds each thread used since the start, threads new since then first."""
        self._stop.set()
        self._thread.join()
        try:
            self._sample()
        except OSError:
            pass
        return {t: v - self.start_values.get(t, 0.0) for t, v in self.last.items()}

    def new_threads(self, used: dict[int, float]) -> list[float]:
        """CPU of the threads that did not exist at the start, busiest first."""
        return sorted((v for t, v in used.items() if t not in self.start_values), reverse=True)

    def new_threads_sched(self) -> tuple[float, int]:
        """Run-queue delay (s) and voluntary switches, summed over the threads new since the
        start (the SQL driver and its workers), as last sampled."""
        new = [v for t, v in self.sched_last.items() if t not in self.sched_start]
        return sum(d for d, _ in new), sum(n for _, n in new)


WAKEUP_PROBE_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <time.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int turn = 0, n = 20000;
static void *other(void *x) {
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&m); while (turn != 1) pthread_cond_wait(&c, &m);
    turn = 0; pthread_cond_signal(&c); pthread_mutex_unlock(&m);
  }
  return x;
}
int main(void) {
  pthread_t t; struct timespec a, b;
  pthread_create(&t, 0, other, 0);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&m); turn = 1; pthread_cond_signal(&c);
    while (turn != 0) pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  pthread_join(t, 0);
  printf("%.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n / 2 / 1000.0);
  return 0;
}
"""


def wakeup_probe(directory: str, rounds: int = 5) -> dict | None:
    """The machine's thread wake-up latency (µs): two threads hand a turn back and forth through
    a pthread condition variable, as MariaDB's threads do (`COND_rpl_thread`, the prior-commit
    wake-up); one hand-off = half a round trip. Each thread blocks at every turn, so on an idle
    core the wake-up pays the scheduler's (and a VM's halted-vCPU) latency. Needs a C compiler
    (`cc`); None without one."""
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src, exe = os.path.join(directory, "wakeup-probe.c"), os.path.join(directory, "wakeup-probe")
    with open(src, "w") as f:
        f.write(WAKEUP_PROBE_C)
    try:
        subprocess.run([cc, "-O2", "-pthread", src, "-o", exe], check=True,
                       capture_output=True, timeout=60)
        vals = sorted(float(subprocess.run([exe], check=True, capture_output=True, text=True,
                                           timeout=60).stdout) for _ in range(rounds))
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    finally:
        for path in (src, exe):
            try:
                os.unlink(path)
            except OSError:
                pass
    return {"rounds": rounds, "median_us": vals[len(vals) // 2], "min_us": vals[0],
            "max_us": vals[-1]}


def _spin(seconds: float, conn) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    conn.send(time.process_time())
    conn.close()


def cpu_probe(seconds: float = 0.3) -> float:
    """Cores this host gives us right now: one busy process per CPU for `seconds`, their CPU
    seconds / the wall time. 2.0 on an idle 2-core host; about 1 when another tenant keeps one
    core busy (the calibration's first measurement found the replica using about one core)."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    pipes, procs = [], []
    t0 = time.perf_counter()
    for _ in range(os.cpu_count() or 1):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_spin, args=(seconds, send))
        proc.start()
        pipes.append(recv)
        procs.append(proc)
    used = sum(r.recv() for r in pipes)
    for proc in procs:
        proc.join()
    return round(used / max(time.perf_counter() - t0, seconds), 3)


def fsync_probe(directory: str, n: int = 100) -> dict[str, float]:
    """Latency (ms) of `n` append + fdatasync pairs in `directory`: the replica's disk."""
    path = os.path.join(directory, "fsync-probe.bin")
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
        os.remove(path)
    lat.sort()
    return {"n": n, "median_ms": round(lat[n // 2], 3), "p10_ms": round(lat[n // 10], 3),
            "p90_ms": round(lat[(9 * n) // 10], 3)}


def fsync_pattern_probe(directory: str, per_thread: int = 50) -> dict[str, dict]:
    """How the disk answers sync patterns the replica makes (what a serial fit cannot see):
    one thread syncing one file; one thread alternating two files (serial durable commit: redo
    then binlog); 4 and 16 threads each syncing its own file at once (parallel workers).
    Per pattern: median latency of one fdatasync (ms) and fdatasyncs completed per second."""
    import threading

    def worker(paths, n, lat):
        fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for p in paths]
        try:
            for i in range(n):
                fd = fds[i % len(fds)]
                os.write(fd, b"x" * 512)
                t = time.perf_counter()
                os.fdatasync(fd)
                lat.append((time.perf_counter() - t) * 1e3)
        finally:
            for fd in fds:
                os.close(fd)

    out = {}
    for name, threads, files in (("1 thread, 1 file", 1, 1), ("1 thread, 2 files", 1, 2),
                                 ("4 threads", 4, 1), ("16 threads", 16, 1)):
        lat: list[float] = []
        paths = [[os.path.join(directory, f"probe-{t}-{k}.bin") for k in range(files)]
                 for t in range(threads)]
        ts = [threading.Thread(target=worker, args=(p, per_thread, lat)) for p in paths]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        wall = time.perf_counter() - t0
        for group in paths:
            for p in group:
                os.remove(p)
        lat.sort()
        out[name] = {"fsyncs": len(lat), "median_ms": round(lat[len(lat) // 2], 3),
                     "per_second": round(len(lat) / wall, 1)}
    return out
