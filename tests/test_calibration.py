"""Calibration against a real MariaDB replica (traces/record/calibrate.py, docs/calibration.md).

Fast: the fit's arithmetic on a synthetic results folder (only serial applies and counters feed
it), the measured-speedup pairing by round, the fitted profiles file and the CLI using it.
Slow: the whole pipeline end to end on a tiny workload (private primary + replica), no timing
asserted."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import tempfile
import sys

import pytest

from record_scripts import RECORD_DIR, import_record_scripts

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
calib_fit, calib_report, calibrate = import_record_scripts("calib_fit", "calib_report",
                                                           "calibrate")
RUN_FIELDS = calibrate.RUN_FIELDS

from commitsched import profiles  # noqa: E402
from commitsched.trace import Txn, write_trace  # noqa: E402


def _row(rnd, sync, mode, threads, apply_s, purpose="predict", groups=1000, threads_cpu="",
         process_cpu=0.0, repeated=False, cpu_avail=1.9):
    row = dict.fromkeys(RUN_FIELDS, 0)
    row.update(round=rnd, order=1, purpose=purpose, sync=sync, mode=mode, threads=threads,
               apply_s=apply_s, repeated=repeated, load_before=7.0, steal=0.0, iowait=0.0,
               d_binlog_group_commits=groups, d_binlog_commits=1000,
               new_thread_cpu_s=threads_cpu, replica_cpu_s=process_cpu, cpu_avail=cpu_avail)
    return row


def _folder(tmp_path, rows, n=1000):
    with open(tmp_path / "runs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, RUN_FIELDS)
        w.writeheader()
        w.writerows(rows)
    meta = {"trace": {"transactions": n}, "host": {"cpus": 2}, "started_utc": "T",
            "workload": {"version": "10.11", "sysbench_command": "sysbench x"}}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    # the trace: n transactions of 5 binlog events each
    write_trace(str(tmp_path / "trace.jsonl.gz"),
                [Txn(i, [f"d.t/PRIMARY={i}"], events=5) for i in range(1, n + 1)])
    return str(tmp_path)


def _serial_rows(rnd, scale=1.0):
    # serial SQL thread CPU: relaxed 0.8 s, binlog_sync 1.8 s, durable 2.3 s; the whole
    # process: 0.1 s (relaxed) and 0.2 s (durable) more; the 1-thread run's worker 1.2 s and
    # driver 0.05 s
    return [_row(rnd, "relaxed", "-", 0, 1.0 * scale, threads_cpu="0.800", process_cpu=0.9),
            _row(rnd, "binlog_sync", "-", 0, 3.0 * scale, "fit", threads_cpu="1.800",
                 process_cpu=1.9),
            _row(rnd, "redo_sync", "-", 0, 2.9 * scale, "fit"),
            _row(rnd, "no_binlog", "-", 0, 0.9 * scale, "fit"),
            _row(rnd, "durable", "-", 0, 5.0 * scale, threads_cpu="2.300", process_cpu=2.5),
            _row(rnd, "relaxed", "conservative", 1, 9.9, "fit", groups=1000,
                 threads_cpu="1.200 0.050")]


def test_fit_from_serial_runs_only(tmp_path):
    rows = [r for rnd in (1, 2, 3) for r in _serial_rows(rnd, scale=(0.9, 1.0, 1.2)[rnd - 1])]
    parallel = [_row(rnd, "durable", "optimistic", 4, t) for rnd, t in ((1, 1.0), (2, 1.5), (3, 2))]
    got = calib_fit.fit(_folder(tmp_path, rows + parallel))
    prof = {p["name"]: p for p in got["profiles"]}
    d, r = prof["durable-mariadb"], prof["relaxed-mariadb"]
    # medians are round 2's values: relaxed 1.0 s, binlog 3.0 s, durable 5.0 s over 1000 txns
    # driver 0.05 s CPU / 1000, per event of the trace's 5
    assert d["dispatch_event"] == pytest.approx(50.0 / 5) and d["dispatch"] == 0.0
    assert d["exec_default"] == pytest.approx(1000.0 - 50.0)
    assert d["sync"] == pytest.approx(2000.0)              # (3.0 - 1.0) s / 1000 groups
    assert d["commit_default"] == pytest.approx(2000.0)    # (5.0 - 3.0) s / 1000
    assert got["fit"]["non_additivity_us"] == pytest.approx(2000.0 - 1900.0)
    assert r["sync"] == r["commit_default"] == 0.0 and r["exec_default"] == d["exec_default"]
    assert d["cores"] == 2 and "fitted" in d["provenance"]
    # the CPU parts, from the serial SQL thread's and the process's CPU seconds
    assert d["sync_cpu"] == pytest.approx(1000.0)          # (1.8 - 0.8) s / 1000 groups
    assert d["commit_cpu"] == pytest.approx(500.0)         # (2.3 - 1.8) s / 1000
    assert d["commit_grouped"] is True and "commit_grouped" not in r
    assert r["background_cpu"] == pytest.approx(100.0)     # (0.9 - 0.8) s / 1000
    assert d["background_cpu"] == pytest.approx(200.0)     # (2.5 - 2.3) s / 1000
    # 1-thread worker - exec, per event
    assert d["coordination_event"] == pytest.approx((1200.0 - 950.0) / 5)
    # no other machine to take the thread growth from: none
    assert (d["dispatch_thread"] == d["coordination_thread"] == d["shared_lock_thread"]
            == d["wakeup"] == 0.0)
    moved = calib_fit.fit(tmp_path, {"source": "m16", "dispatch_thread_ratio": 0.5,
                                     "coordination_thread_ratio": 0.1,
                                     "shared_lock_thread_ratio": 0.2, "wakeup": 7.0})
    m = {p["name"]: p for p in moved["profiles"]}["durable-mariadb"]
    assert (m["dispatch_thread"], m["coordination_thread"], m["wakeup"]) == (5.0, 5.0, 7.0)
    # the worker's shared-lock wait: its 1-thread CPU per transaction (1200 - 950 us) x 0.2
    assert m["shared_lock_thread"] == pytest.approx(50.0)
    assert "m16" in m["fitted_from"]["shared_lock_thread"]
    assert "m16" in m["fitted_from"]["wakeup"]
    assert d["commit_serial"] == r["commit_serial"] == pytest.approx(100.0)  # (1.0 - 0.9) s
    # the machine's own wake-up probe, when the measurement ran it, wins over the transferred one
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["wakeup_probe"] = {"start": {"median_us": 20.0}, "end": {"median_us": 30.0}}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    probed = calib_fit.fit(tmp_path, {"source": "m16", "wakeup": 7.0})
    p = {q["name"]: q for q in probed["profiles"]}["durable-mariadb"]
    assert p["wakeup"] == 25.0 and "probe" in p["fitted_from"]["wakeup"]
    # the parallel timings it will predict do not move the fit
    parallel2 = [_row(rnd, "durable", "optimistic", 4, 10 * rnd) for rnd in (1, 2, 3)]
    assert calib_fit.fit(_folder(tmp_path, rows + parallel2))["profiles"] == got["profiles"]


def test_fit_needs_every_serial_setting(tmp_path):
    rows = [r for r in _serial_rows(1) if r["sync"] != "binlog_sync"]
    with pytest.raises(SystemExit, match="binlog_sync"):
        calib_fit.fit(_folder(tmp_path, rows))


def test_measured_speedup_pairs_rounds_and_drops_repeated(tmp_path):
    rows = [_row(1, "durable", "-", 0, 10.0), _row(2, "durable", "-", 0, 20.0),
            _row(1, "durable", "optimistic", 4, 5.0), _row(2, "durable", "optimistic", 4, 5.0),
            _row(2, "durable", "optimistic", 4, 1.0, repeated=True)]
    m = calib_report.measured(calib_fit.load_runs(_folder(tmp_path, rows)))
    assert sorted(m[("durable", "optimistic", 4)]["speedup"]) == [2.0, 4.0]
    assert m[("durable", "-", 0)]["speedup"] == [1.0, 1.0]


def test_a_run_with_too_few_free_cores_does_not_count(tmp_path):
    """Another tenant held a core right before the apply (cpu_avail 0.9 of 2 CPUs): the run is
    kept in runs.csv but left out, like a run with heavy steal."""
    rows = [_row(1, "durable", "-", 0, 10.0), _row(2, "durable", "-", 0, 20.0),
            _row(1, "durable", "optimistic", 4, 5.0),
            _row(2, "durable", "optimistic", 4, 1.0, cpu_avail=0.9)]
    m = calib_report.measured(calib_fit.load_runs(_folder(tmp_path, rows)))
    assert m[("durable", "optimistic", 4)]["speedup"] == [2.0]


def test_load_fitted_file(tmp_path):
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"profiles": [dict(
        name="x-fit", exec_default=3.0, commit_default=1.0, sync=2.0, dispatch=0.5, retry=0.0,
        cores=2, provenance="fitted: test", extra_field="ignored")]}))
    (p,) = profiles.load_fitted(str(path))
    assert (p.name, p.exec_default, p.sync, p.cores) == ("x-fit", 3.0, 2.0, 2)
    assert profiles.load_fitted(str(tmp_path / "none.json")) == []


@pytest.mark.skipif(not os.path.exists(profiles.FITTED_PATH), reason="no fitted profiles yet")
def test_bundled_fitted_profiles_score():
    """What `commitsched score --profile durable-mariadb` runs (the CLI's choices are PROFILES)."""
    from commitsched.scoring import score_trace
    from commitsched.trace import load_trace
    trace = load_trace(os.path.join(REPO, "traces", "recorded", "oltp_read_write_t8.jsonl.gz"))

    class Source:
        count = len(trace.txns)
        txns = staticmethod(lambda: iter(trace.txns))
    for name in ("durable-mariadb", "relaxed-mariadb"):
        assert name in profiles.PROFILES
        p = profiles.get_profile(name)
        assert "fitted" in p.provenance and p.cores and p.exec_default > 0
        res = score_trace(Source, ["serial", "commit_id+mariadb_conservative"], [2], p)
        assert [r["scheduler"] for r in res] == ["serial", "commit_id+mariadb_conservative"]
        assert res[1]["profile"] == name and res[1]["speedup"] > 0


def _missing() -> list[str]:
    need = [("mariadbd", "mysqld"), ("mariadb-install-db", "mysql_install_db"),
            ("mariadb-binlog", "mysqlbinlog"), ("sysbench",)]
    return ["/".join(n) for n in need
            if not any(shutil.which(x) or os.path.exists(f"/usr/sbin/{x}") for x in n)]


@pytest.mark.slow
@pytest.mark.skipif(bool(_missing()), reason="mariadb-server / sysbench not installed")
def test_calibration_pipeline_end_to_end(tmp_path):
    out = tmp_path / "cal"
    # The servers run as the mysql user: their workdir must be reachable for it (pytest's
    # tmp_path is private to root).
    workdir = tempfile.mkdtemp(prefix="commitsched-calib-test-")
    os.chmod(workdir, 0o755)
    cal = os.path.join(RECORD_DIR, "calibrate.py")
    r = subprocess.run([sys.executable, cal, "measure", "--out", str(out), "--workdir", str(workdir),
                        "--workload", "oltp_update_index", "--threads", "8", "--events", "300",
                        "--time", "60", "--tables", "2", "--table-size", "200",
                        "--threads-list", "0,2", "--modes", "conservative", "--rounds", "1",
                        "--port", "33357", "--cpu-min", "0"],   # pipeline only: keep every run
                       capture_output=True, text=True, timeout=170)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["complete"] and meta["trace"]["transactions"] == 300
    assert meta["fsync_probe"]["start"]["n"] == 100 and "16 threads" in meta["fsync_probe"][
        "end_patterns"]
    rows = list(csv.DictReader(open(out / "runs.csv")))
    # 2 sync settings x (serial, 2 threads) + 3 fit runs, at least
    assert len(rows) >= 7
    for row in rows:
        assert row["checksum_ok"] == "True"                      # replica equals primary
        if row["sync"] != "no_binlog":                           # log_slave_updates: all applied
            assert int(row["d_binlog_commits"]) == 300
        assert float(row["apply_s"]) > 0
        assert float(row["cpu_avail"]) > 0 and float(row["fsync_ms"]) > 0   # the host probes
        assert float(row["new_thread_run_delay_s"]) >= 0 and int(row["new_thread_waits"]) >= 0
    # the driver's and worker's scheduling, read at the end of the 1-thread run (its threads
    # outlive it): the worker blocks for the events the driver hands it
    assert any(int(r["new_thread_waits"]) > 0 for r in rows if r["threads"] == "1")
    if shutil.which("cc") or shutil.which("gcc"):                # the wake-up probe ran
        assert 0 < meta["wakeup_probe"]["start"]["median_us"] < 10_000
    # this run's private servers are gone (matched by its own workdir: another calibration
    # may be running on the same machine)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert workdir not in ps
    shutil.rmtree(workdir, ignore_errors=True)
    prof = tmp_path / "profiles.json"
    r = subprocess.run([sys.executable, cal, "fit", "--out", str(out), "--profiles", str(prof)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert {p.name for p in profiles.load_fitted(str(prof))} == {"durable-mariadb",
                                                                  "relaxed-mariadb"}
    r = subprocess.run([sys.executable, cal, "report", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    pred = list(csv.DictReader(open(out / "predictions.csv")))
    assert {(p["sync"], p["threads"]) for p in pred} == {
        ("durable", "0"), ("durable", "2"), ("relaxed", "0"), ("relaxed", "2")}
    assert all(float(p["predicted_speedup"]) > 0 for p in pred)
    assert (out / "speedup.svg").read_text().startswith("<svg")


def test_exec_per_row_is_solved_from_two_workloads(monkeypatch):
    """Two folders' serial execution per transaction and their mean rows: the line through
    both (48.5 us at 4 rows, 23.2 at 1: 14.77 + 8.43 per row); none when it cannot be told."""
    rows = {"a": 4.0, "b": 1.0, "c": 1.2, "d": 9.0}
    monkeypatch.setattr(calib_fit, "mean_rows", rows.__getitem__)

    def fits(*execs):
        return [{"fit": {"per_txn_us": {"exec": e}}} for e in execs]
    base, per_row = calib_fit.exec_per_row(["a", "b"], fits(48.5, 23.2))
    assert per_row == pytest.approx(25.3 / 3) and base == pytest.approx(23.2 - 25.3 / 3)
    assert base + 4 * per_row == pytest.approx(48.5)
    assert calib_fit.exec_per_row(["b", "c"], fits(23.2, 30.0)) is None   # rows alike
    assert calib_fit.exec_per_row(["a", "d"], fits(48.5, 20.0)) is None   # negative per row
    assert calib_fit.exec_per_row(["a"], fits(48.5)) is None


def test_free_port_takes_a_port_in_time_wait():
    """A port whose last connection is in TIME_WAIT is free for mariadbd (it binds with
    SO_REUSEADDR); the probe without the option took it for busy and fell back outside the
    caller's port range. A port with a listener stays busy."""
    import socket
    listener = socket.socket()   # a server's, as mariadbd's: SO_REUSEADDR
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()             # the listening side closes first: its end enters TIME_WAIT
    client.close()
    listener.close()
    plain = socket.socket()
    with pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))
    plain.close()
    assert calibrate.free_port(port) == port

    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        assert calibrate.free_port(busy.getsockname()[1]) != busy.getsockname()[1]
    finally:
        busy.close()


def test_transfer_takes_the_16_core_fits_ratios(tmp_path):
    """What a 2-core fit takes from replica16's fit.json: each growth as a ratio to its
    one-thread value, the shared-lock wait to the worker's parallel-mode CPU per transaction."""
    path = tmp_path / "fit.json"
    path.write_text(json.dumps({
        "profile": {"dispatch_event": 4.0, "dispatch_thread": 0.2, "coordination": 50.0,
                    "shared_lock_thread": 5.0, "wakeup": 8.0},
        "cpu_growth": {"coordination_event": 2.0, "coordination_thread": 0.5}}))
    t = calib_fit.replica16_transfer(str(path))
    assert t["dispatch_thread_ratio"] == pytest.approx(0.05)
    assert t["coordination_thread_ratio"] == pytest.approx(0.25)
    assert t["shared_lock_thread_ratio"] == pytest.approx(0.1)
    assert t["wakeup"] == 8.0
    assert calib_fit.replica16_transfer(str(tmp_path / "none.json")) is None
