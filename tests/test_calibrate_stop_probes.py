"""Where `calibrate` probes the disk (calibrate_replica.record, _DiskProbes): with --probe every
round runs while the SQL thread is stopped, from a worker thread, the sampling going on at its
interval and the restart on time however slow the probes; without one, before and after the
window as before (read-only). A fake replica, a fake clock and stubbed probes: no server, no
disk timing. (tests/test_calibrate_live.py runs it on a real MariaDB, slow.)"""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from commitsched import calibrate_replica as cr
from commitsched import disk_overlap, replica_live
from commitsched.calibrate_replica import (PROBE_ROUNDS, PROBE_THREAD, CalibrateError, Window,
                                           probes_at_words)
from commitsched.replica_live import Address

INTERVAL = 0.05
GTID = "0-1-100"


class FakeTime:
    """One clock for record's sampling thread, which moves it (`sleep`), and its probe worker,
    whose stubbed rounds take `hold(s)` of it (the sampling thread's own rounds move it). `sleep` returns only once the worker waits for a
    later time or is gone, so each run is the same: a round ends at the first sample at or
    after its end."""

    def __init__(self, t0: float = 1000.0):
        self.t = t0
        self.cv = threading.Condition()
        self.until = None              # the worker's round ends then

    def clock(self) -> float:
        with self.cv:
            return self.t

    def sleep(self, s: float) -> None:
        with self.cv:
            self.t = round(self.t + s, 9)
            self.cv.notify_all()
        limit = time.monotonic() + 10
        while time.monotonic() < limit:
            alive = any(th.name == PROBE_THREAD for th in threading.enumerate())
            with self.cv:
                if not alive or (self.until is not None and self.until > self.t):
                    return
                self.cv.wait(0.001)
        raise AssertionError("the probe worker neither waited nor ended")

    def hold(self, s: float) -> None:
        if threading.current_thread().name != PROBE_THREAD:
            with self.cv:                  # a round of the sampling thread's own
                self.t = round(self.t + s, 9)
            return
        with self.cv:
            end = round(self.t + s, 9)
            self.until = end
            self.cv.notify_all()
            if not self.cv.wait_for(lambda: self.t >= end, timeout=10):
                raise AssertionError("nobody moved the clock past a probe round")
            self.until = None


def overlap_round() -> dict:
    stat = {"n": 10, "median_us": 100.0, "mean_us": 100.0, "gap_us": 1.0}
    return {s: {k: dict(stat) for k in disk_overlap.KINDS} for s in disk_overlap.SETTINGS}


# each stub's reading and how long it holds the clock (s): about the 2-core VM's
READINGS = {"fsync": 0.15, "direct_write": 0.05, "overlap": overlap_round(),
            "io_cpu": {op: {"cpu_us": 10.0, "switches": 1.0} for op in cr.IO_CPU_OPS},
            "sustained": 0.06}
HOST_READING = {"compute": {"us": 0.6, "rounds_us": [0.6] * 5},
                "rows": {"us": 250.0, "rounds_us": [250.0] * 5}}
SECONDS = {"fsync": 0.01, "direct_write": 0.01, "overlap": 1.5, "io_cpu": 0.3, "sustained": 2.0}


@pytest.fixture
def replica(tmp_path, monkeypatch):
    """A fake local replica whose datadir is tmp_path: records the stop and the restart (fake
    clock times) and each probe round's (kind, start, end)."""
    fake = FakeTime()
    log = {"stop": [], "start": [], "rounds": [], "seconds": dict(SECONDS), "cpus": []}

    class Settings:
        flavor = "mariadb"

        def to_json(self):
            return {"version": "10.11.19-MariaDB", "flavor": "mariadb",
                    "scheduler": "serial", "workers": 1, "durability": "durable",
                    "log_replica_updates": False, "datadir": str(tmp_path), "pid_file": ""}

    class Conn:
        def close(self):
            pass
    monkeypatch.setattr(replica_live, "connect", lambda address: Conn())
    monkeypatch.setattr(replica_live, "read_settings", lambda conn: Settings())
    monkeypatch.setattr(replica_live, "applied", lambda conn, flavor: GTID)
    monkeypatch.setattr(replica_live, "worker_counts", lambda conn: None)
    monkeypatch.setattr(replica_live, "stop_sql_thread",
                        lambda conn, flavor: log["stop"].append(fake.clock()))
    monkeypatch.setattr(replica_live, "start_sql_thread",
                        lambda conn, flavor: log["start"].append(fake.clock()))
    monkeypatch.setattr(cr, "received", lambda conn, flavor: GTID)
    monkeypatch.setattr(cr, "check_applying", lambda conn, flavor: None)

    def stub(kind):
        def probe(*args, **kw):
            log["cpus"].append(os.sched_getaffinity(0))     # where this round runs
            t0 = fake.clock()
            fake.hold(log["seconds"][kind])
            log["rounds"].append((kind, t0, fake.clock()))
            return READINGS[kind]
        return probe
    monkeypatch.setattr(cr, "fsync_ms", stub("fsync"))
    monkeypatch.setattr(cr, "direct_write_ms", stub("direct_write"))
    monkeypatch.setattr(disk_overlap, "probe", stub("overlap"))
    monkeypatch.setattr(cr, "io_cpu_us", stub("io_cpu"))
    monkeypatch.setattr(cr, "write_sustained_ms", stub("sustained"))
    log["host"], log["host_rounds_before"] = [], []

    def host_loop(conn):
        log["host"].append(fake.clock())
        log["host_rounds_before"].append(len(log["rounds"]))   # disk rounds before it
        return HOST_READING
    monkeypatch.setattr(cr, "host_loop", host_loop)

    def record(**kw):
        kw = {"window": 20.0, "interval": INTERVAL, **kw}
        return cr.record(Address("127.0.0.1", 3306, "root", None, None), clock=fake.clock,
                         sleep=fake.sleep, **kw)
    log["record"] = record
    return log


def counts(log) -> dict:
    out: dict = {}
    for kind, _, _ in log["rounds"]:
        out[kind] = out.get(kind, 0) + 1
    return out


def gaps(window) -> set:
    t = [s[0] for s in window.samples]
    return {round(b - a, 6) for a, b in zip(t, t[1:])}


@pytest.mark.parametrize("fsync", [None, 0.2])
def test_with_a_probe_every_round_runs_while_the_sql_thread_is_stopped(replica, fsync):
    w = replica["record"](probe=15.0, probe_at=1.0, fsync=fsync)
    (stop,), (start,) = replica["stop"], replica["start"]
    assert w.probe["stop"] == stop and start - stop == pytest.approx(15.0, abs=INTERVAL)
    quick = 0 if fsync else PROBE_ROUNDS
    assert counts(replica) == {**({"fsync": quick} if quick else {}),
                               "direct_write": PROBE_ROUNDS, "overlap": PROBE_ROUNDS,
                               "io_cpu": 1, "sustained": 1}
    assert all(stop <= t0 and t1 <= start for _, t0, t1 in replica["rounds"])
    # the sampling went on through the stop at the window's interval
    assert gaps(w) == {INTERVAL}
    assert any(stop < s[0] < start for s in w.samples)
    assert w.probes_at == {**({"fsync": {"stop": quick}} if quick else {}),
                           "direct_write": {"stop": PROBE_ROUNDS},
                           "overlap": {"stop": PROBE_ROUNDS}, "io_cpu": {"stop": 1},
                           "sustained": {"stop": 1}}
    assert w.fsync_ms == (fsync or 0.15) and w.log_write_ms == 0.05
    assert len(w.overlap_rounds) == PROBE_ROUNDS and w.write_sustained_ms == 0.06
    assert probes_at_words(w.probes_at).startswith("all ")
    # ... and the window keeps where they ran
    again = Window.from_json(json.loads(json.dumps(w.to_json())), "w.json")
    assert again.probes_at == w.probes_at


def test_slow_probes_never_lengthen_the_stop(replica):
    """An overlap round 3x its estimate runs past the restart: the SQL thread starts on time,
    the sampling never pauses, the round's reading is dropped and it is taken again after the
    window with the rounds that did not fit."""
    replica["seconds"]["overlap"] = 5.0
    w = replica["record"](probe=3.0, probe_at=1.0)
    (stop,), (start,) = replica["stop"], replica["start"]
    assert start - stop == pytest.approx(3.0, abs=INTERVAL)
    assert gaps(w) == {INTERVAL}
    # no round started where it could not end before the restart, by its estimate, and the
    # only one to end after it is the slow overlap round begun inside the stop
    inside = [r for r in replica["rounds"] if r[1] < start]
    assert all(t0 >= stop for _, t0, _ in inside)
    assert [k for k, _, t1 in inside if t1 > start] == ["overlap"]
    after = [r for r in replica["rounds"] if r[1] >= start]
    assert after and all(t0 >= w.samples[-1][0] for _, t0, _ in after)
    assert w.probes_at["overlap"] == {"overran": 1, "after": PROBE_ROUNDS}
    assert w.probes_at["fsync"] == {"stop": 1, "after": PROBE_ROUNDS - 1}
    assert w.probes_at["sustained"] == {"after": 1}
    assert len(w.overlap_rounds) == PROBE_ROUNDS             # the overrun reading dropped
    assert "ran past the restart" in probes_at_words(w.probes_at)


def test_a_short_stop_holds_what_fits_and_the_rest_goes_after(replica):
    w = replica["record"](probe=2.0, probe_at=1.0)
    (stop,), (start,) = replica["stop"], replica["start"]
    assert start - stop == pytest.approx(2.0, abs=INTERVAL)
    assert all(t1 <= start for _, t0, t1 in replica["rounds"] if t0 < start)
    assert w.probes_at["overlap"] == {"stop": 1, "after": PROBE_ROUNDS - 1}
    assert w.probes_at["sustained"] == {"after": 1}        # 2 s never fits a 2 s stop
    assert sum(c.get("stop", 0) for c in w.probes_at.values()) >= 3
    assert "after the window (they did not fit" in probes_at_words(w.probes_at)


def test_without_a_probe_nothing_is_stopped_and_the_probes_run_around_the_window(replica):
    w = replica["record"](window=3.0)
    assert replica["stop"] == [] and replica["start"] == [] and w.probe is None
    first, last = w.samples[0][0], w.samples[-1][0]
    kinds = [k for k, _, _ in replica["rounds"]]
    # as before: 3 rounds of each quick probe and of the overlap probe, the commit's CPU and
    # the sustained rate before the window; 2 rounds of each after it
    assert kinds == (["fsync"] * 3 + ["direct_write"] * 3 + ["overlap"] * 3
                     + ["io_cpu", "sustained"] + ["fsync"] * 2 + ["direct_write"] * 2
                     + ["overlap"] * 2)
    assert all(t1 <= first for _, _, t1 in replica["rounds"][:11])
    assert all(t0 >= last for _, t0, _ in replica["rounds"][11:])
    assert w.probes_at == {"fsync": {"before": 3, "after": 2},
                           "direct_write": {"before": 3, "after": 2},
                           "overlap": {"before": 3, "after": 2}, "io_cpu": {"before": 1},
                           "sustained": {"before": 1}}
    assert probes_at_words(w.probes_at).startswith("before and after the window")


def test_a_failing_probe_in_the_stop_is_raised_and_the_sql_thread_restarted(replica,
                                                                             monkeypatch):
    def broken(directory, n=50):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(cr, "fsync_ms", broken)
    with pytest.raises(OSError, match="Input/output"):
        replica["record"](probe=3.0, probe_at=1.0)
    assert len(replica["stop"]) == 1 and len(replica["start"]) == 1


def test_older_windows_without_probes_at_still_load(tmp_path):
    from test_calibrate_replica import machine, recorded_window, workload
    old = recorded_window(workload(300), machine(1.0)).to_json()
    del old["probes_at"]
    w = Window.from_json(old, "old.json")
    assert w.probes_at is None and probes_at_words(None) is None
    assert cr.probe_place(w, "fsync") == "around the window"
    bad = {**old, "probes_at": {"fsync": {"during": 3}}}
    with pytest.raises(CalibrateError, match="probes_at") as e:
        Window.from_json(bad, "bad.json")
    assert "\n" not in str(e.value)


def test_the_summary_and_the_provenance_say_where_the_disk_was_probed(tmp_path, capsys):
    from commitsched.cli import main
    from commitsched.profiles import get_profile
    from commitsched.trace import write_trace
    from test_calibrate_windows import windows_of, workload
    txns = workload()
    w = windows_of(txns, (1.5,))[0]
    w.fsync_ms, w.fsync_ms_rounds = 0.15, [0.15] * PROBE_ROUNDS
    w.probes_at = {"fsync": {"stop": PROBE_ROUNDS}, "direct_write": {"stop": PROBE_ROUNDS}}
    (tmp_path / "w.json").write_text(json.dumps(w.to_json()))
    write_trace(str(tmp_path / "binlog.jsonl"), txns)
    assert main(["calibrate", "--samples", str(tmp_path / "w.json"), "--binlog",
                 str(tmp_path / "binlog.jsonl"), "--cores", "1", "-o", str(tmp_path / "p.json"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "the disk probes: all 10 rounds in the probe's stop (the SQL thread stopped)" in out
    assert "the fsync probe in the probe's stop said" in get_profile(
        str(tmp_path / "p.json")).provenance


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to choose one")
@pytest.mark.parametrize("probe", [None, 15.0])
def test_every_round_runs_on_the_replicas_cpus_and_the_caller_keeps_its_own(replica,
                                                                             monkeypatch, probe):
    """The replica's server may run on one CPU of ours: every probe round, in the stop (the
    worker thread) or around the window (the sampling thread), runs on it; the sampling
    thread's affinity is its own again after; the window says where they ran."""
    mine = os.sched_getaffinity(0)
    theirs = {max(mine)}
    monkeypatch.setattr(cr, "local_cpus", lambda settings, address: set(theirs))
    w = replica["record"](probe=probe, probe_at=1.0) if probe else replica["record"](window=3.0)
    assert replica["cpus"] and all(c == theirs for c in replica["cpus"])
    assert os.sched_getaffinity(0) == mine
    assert w.probe_cpus == sorted(theirs)
    assert Window.from_json(json.loads(json.dumps(w.to_json())), "w.json").probe_cpus == \
        sorted(theirs)


def test_the_replicas_cpus_unknown_or_ours_leave_the_probes_where_they_are(replica,
                                                                          monkeypatch):
    mine = os.sched_getaffinity(0)
    for cpus in (None, set(mine)):
        monkeypatch.setattr(cr, "local_cpus", lambda settings, address, c=cpus: c)
        replica["cpus"].clear()
        w = replica["record"](window=3.0)
        assert all(c == mine for c in replica["cpus"])
        assert w.probe_cpus == (None if cpus is None else sorted(mine))
    with cr.on_cpus(None):
        assert os.sched_getaffinity(0) == mine


def test_a_window_with_malformed_probe_cpus_is_refused_in_one_line():
    from test_calibrate_replica import machine, recorded_window, workload
    old = recorded_window(workload(300), machine(1.0)).to_json()
    assert Window.from_json(old, "w.json").probe_cpus is None
    for bad in ([], [-1], ["1"], 3, [True]):
        with pytest.raises(CalibrateError, match="probe_cpus") as e:
            Window.from_json({**old, "probe_cpus": bad}, "bad.json")
        assert "\n" not in str(e.value)
    del old["probe_cpus"]                                 # an older window still loads
    assert Window.from_json(old, "old.json").probe_cpus is None


def test_cpus_this_process_may_not_use_leave_the_probes_where_they_are(tmp_path, monkeypatch):
    """The replica in another cpuset: setting the affinity fails, the probes run where
    calibrate runs and the window says nothing of CPUs."""
    def refuse(pid, cpus):
        raise OSError(22, "Invalid argument")
    monkeypatch.setattr(cr.os, "sched_setaffinity", refuse)
    other = {max(os.sched_getaffinity(0)) + 1}
    assert cr._DiskProbes(str(tmp_path), True, other).cpus is None
    assert cr._DiskProbes(str(tmp_path), True, None).cpus is None


def test_the_hosts_pace_is_read_in_the_stop_with_a_probe_else_around_the_window(replica):
    """The host loop (model/host_speed.py) with the replica idle: at the stop, before the
    disk probes; without a probe (read-only) before and after the window, its load with it.
    The window keeps it by place, and it survives a round trip through --record's JSON."""
    w = replica["record"](probe=15.0, probe_at=1.0)
    assert replica["host"] == replica["stop"]                # the stop's first act,
    assert replica["host_rounds_before"] == [0] and replica["rounds"]   # before the disk's
    assert w.host_loop == {"stop": HOST_READING}
    assert cr.window_pace(w) == 250.0
    assert Window.from_json(json.loads(json.dumps(w.to_json())), "w.json").host_loop == \
        {"stop": HOST_READING}
    replica["host"].clear()
    w = replica["record"](window=3.0)
    assert len(replica["host"]) == 2 and replica["host"][0] <= w.samples[0][0] \
        and replica["host"][1] >= w.samples[-1][0]
    assert set(w.host_loop) == {"before", "after"}


def test_a_server_that_refuses_the_host_loop_leaves_the_window_without_it(replica,
                                                                         monkeypatch):
    def refused(conn):
        raise replica_live.LiveError("SELECT BENCHMARK(...: 1227: denied")
    monkeypatch.setattr(cr, "host_loop", refused)
    said = []
    w = replica["record"](probe=15.0, probe_at=1.0, progress=said.append)
    assert w.host_loop is None and cr.window_pace(w) is None
    assert any("the host's pace not read: SELECT BENCHMARK" in s for s in said)


def test_a_window_with_a_malformed_host_loop_is_refused_in_one_line():
    from test_calibrate_replica import machine, recorded_window, workload
    old = recorded_window(workload(300), machine(1.0)).to_json()
    assert Window.from_json(old, "w.json").host_loop is None
    for bad in ({}, {"stop": {}}, {"stop": {"rows": {"us": -1}}}, {"during": HOST_READING},
                {"stop": {"rows": {"us": "x"}}}, [HOST_READING]):
        with pytest.raises(CalibrateError, match="host_loop") as e:
            Window.from_json({**old, "host_loop": bad}, "bad.json")
        assert "\n" not in str(e.value)
