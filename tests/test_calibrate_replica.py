"""`commitsched calibrate` without a server: the fit recovers a known machine speed from a window
that a simulated replica of that speed produced, and bad windows are refused in one line.
(The live replica is in tests/test_calibrate_live.py, slow.)"""
import json

import msgspec
import numpy as np
import pytest

from commitsched.calibrate_replica import (CalibrateError, Window, fit, nearest_base,
                                           scaled_profile, simulate_applied, window_trace)
from commitsched.cli import main
from commitsched.profiles import get_profile
from commitsched.replica_live import LiveError, mariadb_position, mysql_position, parse_url
from commitsched.trace import trace_from_dicts

BASE = get_profile("durable-mariadb")
EPOCH = 1_790_000_000


def machine(cpu_scale):
    """A replica whose CPU is `cpu_scale` times the base's, as `recorded_window` says it runs:
    one core, durable, no binlog of its own."""
    return scaled_profile(BASE, cpu_scale, 1.0, cores=1, durability="durable",
                          log_replica_updates=False)


def workload(n=3000, rate=400.0):
    """A MariaDB-like binlog: groups of 4 (commit ids), one-second stamps, rate per second."""
    return list(trace_from_dicts([
        {"seq": i, "writes": [f"d.t/PRIMARY={i % 500}"], "gtid": f"0-1-{100 + i}",
         "commit_id": (i - 1) // 4 + 1, "flags": ["transactional", "allow_parallel"],
         "events": 5, "rows": 2, "bytes": 400, "timestamp": float(EPOCH + int((i - 1) / rate))}
        for i in range(1, n + 1)]).txns)


def recorded_window(txns, profile, scheduler="serial", workers=1, probe=(2.0, 4.0)):
    """What `record` would have sampled of a replica that is exactly `profile`: applied
    positions every 50 ms, the SQL thread stopped at probe[0] s for probe[1] s."""
    t = EPOCH + np.arange(0.0, 9.0, 0.05)
    settings = {"version": "10.11.19-MariaDB", "flavor": "mariadb", "scheduler": scheduler,
                "workers": workers, "durability": "durable", "log_replica_updates": False}
    gtid = lambda k: f"0-1-{100 + k}" if k else "0-1-100"  # noqa: E731
    draft = Window("sim", settings, "2026-11-26T00:00:00Z", 0.05,
                   [(float(x), gtid(0), gtid(len(txns))) for x in t], None, None, 1)
    wt = window_trace(draft, txns)
    if probe is not None:
        stop, start = EPOCH + probe[0], EPOCH + probe[0] + probe[1]
        # the stop holds what was not applied by then: replay once without it to know that
        free = simulate_applied(wt, draft, scheduler, workers, profile, 0)
        at_stop = int(free.applied[np.searchsorted(t, stop)])
        draft.probe = {"stop": stop, "start": start, "seconds": probe[1]}
        draft.samples = [(float(x), gtid(at_stop if stop <= x < start else 0), "") for x in t]
        wt = window_trace(draft, txns)
    sim = simulate_applied(wt, draft, scheduler, workers, profile, 0)
    arrived = np.searchsorted(wt.source, t, side="right")
    draft.samples = [(float(x), gtid(int(a)), gtid(int(r)))
                     for x, a, r in zip(t, sim.applied, arrived)]
    return draft


@pytest.mark.parametrize("truth", [0.5, 3.0])
def test_fit_recovers_the_machine_speed(truth):
    txns = workload()
    window = recorded_window(txns, machine(truth))
    result = fit(window, txns, BASE, cores=1, fsync=BASE_FSYNC)
    assert result.cpu_scale == pytest.approx(truth, rel=0.05)
    assert result.fitted_drain == pytest.approx(result.measured_drain, abs=0.15)


BASE_FSYNC = 0.151          # the base machine's own: flush_scale 1


def test_a_fit_at_the_search_limit_says_so():
    """An fsync probe ten times too slow (a busy disk) leaves no CPU scale that fits: the flush
    latencies alone are slower than the pace. The fit says so instead of passing it silently."""
    txns = workload()
    window = recorded_window(txns, machine(3.0))
    assert not any("limit" in n for n in fit(window, txns, BASE, cores=1,
                                             fsync=BASE_FSYNC).notes)
    notes = fit(window, txns, BASE, cores=1, fsync=10 * BASE_FSYNC).notes
    assert any("search's limit" in n and "fsync probe" in n for n in notes), notes


def test_a_window_without_backlog_is_refused():
    txns = workload()
    window = recorded_window(txns, machine(0.2), probe=None)   # it keeps up throughout
    with pytest.raises(CalibrateError, match="kept up over the whole window"):
        fit(window, txns, BASE, cores=1)


def test_a_binlog_that_is_not_the_windows_is_refused():
    txns = workload()
    window = recorded_window(txns, machine(1.0))
    other = [msgspec.structs.replace(t, gtid=f"0-1-{90_000 + t.seq}") for t in txns]
    with pytest.raises(CalibrateError, match="does not hold the window"):
        fit(window, other, BASE, cores=1)


def test_calibrate_command_fits_a_recorded_window(tmp_path, capsys):
    txns = workload()
    window = recorded_window(txns, machine(2.0))
    w = tmp_path / "window.json"
    w.write_text(json.dumps(window.to_json()))
    binlog = tmp_path / "binlog.jsonl"
    from commitsched.trace import write_trace
    write_trace(str(binlog), txns)
    out = tmp_path / "mine.json"
    assert main(["calibrate", "--samples", str(w), "--binlog", str(binlog), "--cores", "1",
                 "--fsync-ms", str(BASE_FSYNC), "-o", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "CPU terms: 2.0" in text and "the probe's drain: measured" in text
    mine = get_profile(str(out))
    assert mine.name == "mine" and mine.cores == 1
    assert mine.exec_default == pytest.approx(2.0 * BASE.exec_default, rel=0.05)
    assert mine.calibrated["durability"] == ["durable"]
    # its predictions for another durability say they were never measured
    assert mine.with_durability("relaxed").unmeasured()


def test_calibrate_command_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "w.json"
    bad.write_text("{}")
    assert main(["calibrate", "--samples", str(bad), "--binlog", str(bad), "-o",
                 str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a window recorded" in err
    assert main(["calibrate", "--replica", "mysql://nobody@127.0.0.1:1", "--record",
                 str(tmp_path / "x.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot connect" in err
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "p.json").exists()


def test_urls_and_positions():
    a = parse_url("mysql://mon:s%40cret@db1:3307")
    assert (a.user, a.password, a.host, a.port, a.socket) == ("mon", "s@cret", "db1", 3307, None)
    assert parse_url("mariadb://root@localhost/?socket=/run/m.sock").socket == "/run/m.sock"
    with pytest.raises(LiveError):
        parse_url("http://x")
    assert mariadb_position("0-1-12345") == (0, 12345)
    assert mariadb_position("0-1-5,1-2-7", 1) == (1, 7)
    with pytest.raises(LiveError, match="several replication domains"):
        mariadb_position("0-1-5,1-2-7")
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert mysql_position(f"{uuid}:1-77,aaaa:1-3", uuid) == 77


def test_the_base_is_the_nearest_machine():
    assert nearest_base(1) == nearest_base(4) == "durable-mariadb"
    assert nearest_base(8) == nearest_base(32) == nearest_base(None) == "replica16"


def with_cpu(window, txns, profile, scheduler="serial", workers=1):
    """`window` with the CPU readings a replica that is exactly `profile` gives: its applier
    threads' CPU per transaction applied (model_cpu_per_txn), cumulated at each sample."""
    from commitsched.calibrate_replica import model_cpu_per_txn
    wt = window_trace(window, txns)
    per_txn = model_cpu_per_txn(profile, txns, scheduler, workers, background=False)
    window.cpu = [(float(a) * per_txn / 1e6, 0.0, 0) for a in wt.applied]
    window.cpu_source = "threads"
    return window


@pytest.mark.parametrize("cpu, flush", [(0.5, 2.0), (3.0, 0.7)])
def test_with_the_replicas_cpu_time_both_scales_are_recovered(cpu, flush):
    """The CPU time fixes the CPU scale, the pace the flush latencies: a busy disk's fsync probe
    (the prior, 3x the base's here) no longer decides the split."""
    txns = workload()
    truth = scaled_profile(BASE, cpu, flush, cores=1, durability="durable",
                           log_replica_updates=False)
    window = with_cpu(recorded_window(txns, truth), txns, truth)
    result = fit(window, txns, BASE, cores=1, fsync=3 * BASE_FSYNC)
    assert result.cpu_scale == pytest.approx(cpu, rel=0.02)
    assert result.flush_scale == pytest.approx(flush, rel=0.08)
    assert result.cpu_measured is not None
    assert any("measured CPU time" in n for n in result.notes)


def test_without_cpu_time_the_fit_says_how_it_split():
    txns = workload()
    notes = fit(recorded_window(txns, machine(2.0)), txns, BASE, cores=1,
                fsync=BASE_FSYNC).notes
    assert any("CPU time was not read" in n for n in notes), notes


def test_an_unbuffered_redo_log_keeps_a_grouped_write_when_relaxed():
    """innodb_log_file_buffering=OFF: a relaxed commit still waits for the log's write, one
    write for every commit waiting; a buffered log (log_write 0) costs no wait."""
    from commitsched.trace import Txn
    p = replace_profile(BASE, log_write=60.0)
    relaxed = p.with_durability("relaxed")
    txn = Txn(1, ("d.t/PRIMARY=1",))
    assert relaxed.commit_cost(txn) == 60.0 and relaxed.commit_grouped
    # written again for the commit record after the binlog's group commit; no binlog, no
    # second write
    assert relaxed.group_sync == 60.0
    assert relaxed.with_log_replica_updates(False).group_sync == 0.0
    assert p.commit_cost(txn) == BASE.commit_default          # a durable commit is longer
    assert BASE.with_durability("relaxed").commit_cost(txn) == 0.0
    assert not BASE.with_durability("relaxed").commit_grouped


def replace_profile(p, **kw):
    import dataclasses
    return dataclasses.replace(p, **kw)


def test_a_window_with_bad_cpu_readings_is_refused(tmp_path):
    txns = workload()
    window = recorded_window(txns, machine(1.0))
    obj = window.to_json()
    obj["cpu"] = [[0.0, 0.0, 0]]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(CalibrateError, match="CPU readings for"):
        Window.from_file(str(path))


def test_a_threads_cpu_time_is_read_from_proc():
    import os
    import threading
    from commitsched.applier_cpu import process_cpu, thread_times
    sum(i * i for i in range(200_000))                # some CPU on this thread
    cpu, wait, switches = thread_times(os.getpid(), threading.get_native_id())
    assert cpu > 0 and wait >= 0 and switches >= 0
    assert process_cpu(os.getpid()) >= 0
    assert thread_times(os.getpid(), 2 ** 22 + 7) is None     # no such thread


PROBED = {"direct_write": {"cpu_us": 20.0, "switches": 1.0},
          "direct_write_sync": {"cpu_us": 31.0, "switches": 2.0},
          "append_sync": {"cpu_us": 48.0, "switches": 3.0}}


def test_the_probed_commit_cpu_is_what_durability_changes():
    """With the probe's CPU per write and sync, a durable commit's CPU is the probe's syncs and
    writes, the rest of the base's commit CPU stays with every commit (exec_default), and a
    relaxed replica keeps the redo log's unbuffered write's CPU (log_write_cpu)."""
    from commitsched.trace import Txn
    plain = scaled_profile(BASE, 1.3, 0.8, cores=1, log_write=100.0)
    probed = scaled_profile(BASE, 1.3, 0.8, PROBED, cores=1, log_write=100.0)
    txn = Txn(1, ("d.t/PRIMARY=1",))
    assert (probed.commit_cpu, probed.sync_cpu, probed.log_write_cpu) == (31.0, 48.0, 20.0)
    # a durable transaction's CPU is unchanged ...
    durable = lambda p: p.exec_cost(txn) + p.commit_cpu + p.sync_cpu  # noqa: E731
    assert durable(probed) == pytest.approx(durable(plain))
    # ... and the flush latencies are too: only their CPU share moved
    assert probed.sync - probed.sync_cpu == pytest.approx(plain.sync - plain.sync_cpu)
    # relaxed drops the syncs' CPU, keeps the write's, on the grouped commit step
    relaxed = probed.with_durability("relaxed")
    assert relaxed.commit_cpu == 20.0 and relaxed.sync_cpu == 20.0 and relaxed.commit_grouped
    assert relaxed.sync == 100.0                   # the commit record's write, after the binlog's
    assert relaxed.commit_cost(txn) == 100.0
    assert plain.with_durability("relaxed").commit_cpu == 0.0       # not probed: no CPU
    # a buffered redo log: no write to keep
    assert replace_profile(probed, log_write=0.0).with_durability("relaxed").commit_cpu == 0.0


def test_the_fit_with_probed_commit_cpu_keeps_the_measured_cpu():
    """The CPU scale still makes the model's CPU per transaction the measured one when the
    commit's CPU is the probe's (the probed part is fixed, the rest scales)."""
    from commitsched.calibrate_replica import model_cpu_per_txn
    txns = workload()
    truth = scaled_profile(BASE, 2.0, 1.0, PROBED, cores=1, durability="durable",
                           log_replica_updates=False)
    window = with_cpu(recorded_window(txns, truth), txns, truth)
    window.io_cpu = PROBED
    result = fit(window, txns, BASE, cores=1, fsync=BASE_FSYNC)
    assert result.profile.commit_cpu == 31.0
    assert model_cpu_per_txn(result.profile, txns, "serial", 1, False) == pytest.approx(
        result.cpu_measured, rel=1e-6)
    assert any("the commit's CPU from the probe" in n for n in result.notes)


def test_a_window_with_a_bad_io_cpu_probe_is_refused(tmp_path):
    window = recorded_window(workload(), machine(1.0))
    obj = window.to_json()
    obj["io_cpu"] = {"direct_write": {"cpu_us": -1}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(CalibrateError, match="io_cpu must give cpu_us"):
        Window.from_file(str(path))


def test_the_io_cpu_probe_reads_cpu_and_switches(tmp_path):
    from commitsched.calibrate_replica import IO_CPU_OPS, io_cpu_us
    out = io_cpu_us(str(tmp_path), n=5, rounds=1)
    if out is None:
        pytest.skip("this file system refuses O_DIRECT")
    assert set(out) == set(IO_CPU_OPS)
    assert all(v["cpu_us"] > 0 and v["switches"] >= 0 for v in out.values())
    assert list(tmp_path.iterdir()) == []                     # its files removed


def test_the_sustained_write_probe_times_a_run_of_writes(tmp_path):
    from commitsched.calibrate_replica import write_sustained_ms
    ms = write_sustained_ms(str(tmp_path), seconds=0.05)
    if ms is None:
        pytest.skip("this file system refuses O_DIRECT")
    assert 0 < ms < 50
    assert list(tmp_path.iterdir()) == []                     # its file removed


@pytest.mark.parametrize("single, sustained, write, iops", [(0.05, 1.0, 50.0, 1000.0),
                                                            (0.05, 0.03, 50.0, None),
                                                            (0.05, None, 50.0, None),
                                                            (None, 1.0, 1000.0, None)])
def test_a_rationed_disk_keeps_the_single_write_and_limits_the_rate(single, sustained, write,
                                                                     iops):
    """An IOPS cap deals its allowance in slices: a short probe's median write passes at the
    device's speed, a saturated replica's at 1 / the cap. A commit's write (log_write) keeps the
    single write's latency and the disk is limited to what it sustained (disk_write_iops), a
    limit writes wait for only above the rate; with the sustained probe alone, its write."""
    txns = workload()
    window = recorded_window(txns, machine(1.0))
    window.settings["log_file_buffered"] = False
    window.log_write_ms, window.write_sustained_ms = single, sustained
    result = fit(window, txns, BASE, cores=1, fsync=BASE_FSYNC)
    assert result.profile.log_write == pytest.approx(write)
    assert result.profile.disk_write_iops == (None if iops is None else pytest.approx(iops))
    assert any("disk_write_iops 1000" in n for n in result.notes) == (iops is not None)
    assert any("rationed disk" in n for n in result.notes) == (single is None)


def test_a_window_with_a_bad_sustained_write_probe_is_refused(tmp_path):
    obj = recorded_window(workload(), machine(1.0)).to_json()
    obj["write_sustained_ms"] = -2
    path = tmp_path / "w.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(CalibrateError, match="write_sustained_ms"):
        Window.from_file(str(path))


# ---------------------------------------------------------------- the O_DIRECT write probe's file
# InnoDB's redo log is a preallocated file overwritten in place (circular): the probe's writes
# must not allocate blocks or grow the file, which a fresh file's first writes did (2-3x slower:
# the spread between calibrations, docs/calibration.md). O_DIRECT is taken away here so that the
# file handling is tested on any file system (tmpfs refuses O_DIRECT).

def _spy_writes(monkeypatch):
    import os
    seen = []
    real = os.pwrite

    def pwrite(fd, data, offset):
        st = os.fstat(fd)
        seen.append((offset, st.st_size, st.st_blocks * 512))
        return real(fd, data, offset)
    monkeypatch.setattr(os, "O_DIRECT", 0)
    monkeypatch.setattr(os, "pwrite", pwrite)
    return seen


def test_the_write_probe_overwrites_a_preallocated_file_in_place(tmp_path, monkeypatch):
    from commitsched.calibrate_replica import (DIRECT_BLOCK, DIRECT_FILE_BYTES, DIRECT_WARMUP,
                                               direct_write_ms)
    seen = _spy_writes(monkeypatch)
    ms = direct_write_ms(str(tmp_path), n=10)
    assert ms is not None and ms >= 0
    assert len(seen) == DIRECT_WARMUP + 10              # the warm-up writes are not timed
    # every write lands inside a file already at its full size and allocated: none grows it
    assert all(size == DIRECT_FILE_BYTES and allocated >= DIRECT_FILE_BYTES
               for _, size, allocated in seen)
    offsets = [o for o, _, _ in seen]
    assert offsets == [DIRECT_BLOCK * i for i in range(len(seen))]   # sequential, one block each
    assert list(tmp_path.iterdir()) == []               # removed


def test_the_write_probe_wraps_around_its_file(tmp_path, monkeypatch):
    from commitsched.calibrate_replica import DIRECT_BLOCK, DIRECT_FILE_BYTES, in_place_offset
    blocks = DIRECT_FILE_BYTES // DIRECT_BLOCK
    assert in_place_offset(blocks - 1) == DIRECT_FILE_BYTES - DIRECT_BLOCK
    assert in_place_offset(blocks) == 0


def test_the_sustained_and_cpu_probes_write_in_place_too(tmp_path, monkeypatch):
    from commitsched.calibrate_replica import DIRECT_FILE_BYTES, io_cpu_us, write_sustained_ms
    seen = _spy_writes(monkeypatch)
    assert write_sustained_ms(str(tmp_path), seconds=0.01) is not None
    assert io_cpu_us(str(tmp_path), n=3, rounds=1) is not None
    assert seen and all(size == DIRECT_FILE_BYTES for _, size, _ in seen)
    assert list(tmp_path.iterdir()) == []


def test_a_file_system_refusing_o_direct_leaves_nothing_behind(tmp_path, monkeypatch):
    import os
    from commitsched.calibrate_replica import direct_write_ms, io_cpu_us, write_sustained_ms
    real = os.open

    def refusing(path, flags, *a):
        if flags & os.O_DIRECT:
            raise OSError(22, "Invalid argument")
        return real(path, flags, *a)
    monkeypatch.setattr(os, "open", refusing)
    assert direct_write_ms(str(tmp_path)) is None
    assert write_sustained_ms(str(tmp_path), seconds=0.01) is None
    assert io_cpu_us(str(tmp_path), n=1, rounds=1) is None
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- a relaxed commit's redo writes
# Measured (traces/record/redo_writes.py, docs/lag-check/relaxed-redo-writes.md):
# a relaxed replica with its binlog and an O_DIRECT redo log makes 2.0 device writes a serial
# transaction (prepare, then the commit records after the binlog's group commit), 1.0-1.05 at
# W=4: InnoDB writes its log one write at a time, each covering every record logged before it.

def _makespan(profile, workers, n=200):
    """The last commit of `n` independent transactions in one group (a closed backlog); the
    compiled engine is held to the same by tests/engine_diff.py's relaxed profiles."""
    from commitsched.schedulers import run_scheduler
    txns = list(trace_from_dicts([
        {"seq": i, "writes": [f"d.t/PRIMARY={i}"], "commit_id": 1,
         "flags": ["transactional", "allow_parallel"], "events": 5, "rows": 2, "bytes": 400}
        for i in range(1, n + 1)]).txns)
    ends = []
    run_scheduler("commit_id+mariadb_conservative", iter(txns), workers, profile,
                  lambda r: ends.append(r.commit), engine="reference")
    return max(ends)


def test_a_relaxed_groups_redo_write_rides_on_the_next_prepares():
    p = replace_profile(BASE, log_write=100.0, cores=2)
    relaxed = p.with_durability("relaxed")
    assert relaxed.redo_write_shared
    assert not p.redo_write_shared                                  # durable: a sync each
    assert not BASE.with_durability("relaxed").redo_write_shared    # a buffered log: no write
    apart = replace_profile(relaxed, redo_write_shared=False)
    # one worker: nothing else is in flight, the group writes its own records
    assert _makespan(relaxed, 1) == _makespan(apart, 1)
    # four: the group's write is a wait, not a device write nor a core's work
    assert _makespan(relaxed, 4) < _makespan(apart, 4)
