"""`commitsched calibrate --replica` against a real local MariaDB replica (slow): the suite starts
its own primary and replica on 127.0.0.1 (traces/record/lag_check.py's rig, no CPU limit) and
stops them on every path. It records a window with a probe while sysbench writes, fits a
profile from the binlog (a file, and read from the source over the replication protocol), and
checks the one-line errors: an unreachable server, a user without privileges, a binlog that is
not the window's."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from commitsched.cli import main
from commitsched.profiles import get_profile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _missing() -> list[str]:
    need = [("mariadbd", "mysqld"), ("mariadb-install-db", "mysql_install_db"),
            ("mariadb-binlog", "mysqlbinlog"), ("sysbench",), ("taskset",)]
    return ["/".join(n) for n in need
            if not any(shutil.which(x) or os.path.exists(f"/usr/sbin/{x}") for x in n)]


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(_missing()), reason="mariadb-server / sysbench not installed: "
                                                + ", ".join(_missing())),
]


@pytest.fixture(scope="module")
def rig():
    import tempfile
    from record_scripts import import_record_scripts
    (lag_check,) = import_record_scripts("lag_check")
    Rig = lag_check.Rig
    # Not under pytest's tmp_path: its parents are private to root, and the servers run as mysql.
    root = tempfile.mkdtemp(prefix="calibrate-live-")
    os.chmod(root, 0o755)
    # the primary's port, the replica's the next (record.free_port: where busy, one of
    # 33100-33399); COMMITSCHED_TEST_PORT for a range of one's own beside other runs
    r = Rig(root, int(os.environ.get("COMMITSCHED_TEST_PORT", "3590")), None)
    try:
        r.setup()
        yield r
    finally:
        r.stop()
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        shutil.rmtree(root, ignore_errors=True)
        assert root not in ps            # both servers are gone


def url(server, user="root") -> str:
    return f"mysql://{user}@localhost/?socket={server.sock}"


def test_calibrate_a_live_replica(rig, tmp_path, capsys):
    P, R = rig.primary, rig.replica
    rig.configure({"mode": "conservative", "threads": 2, "durability": "durable"})
    assert rig.wait_caught_up(120)
    P.sql("FLUSH BINARY LOGS")
    binlog = P.sql("SHOW MASTER STATUS")[0][0]
    load = subprocess.Popen(rig.sysbench_cmd("run", 300, 9, 4), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        window = tmp_path / "window.json"
        assert main(["calibrate", "--replica", url(R), "--window", "6", "--probe", "2",
                     "--probe-at", "1", "--record", str(window), "--quiet"]) == 0
    finally:
        load.wait(60)
    assert rig.wait_caught_up(120)
    P.sql("FLUSH BINARY LOGS")
    recorded = json.loads(window.read_text())
    assert recorded["settings"]["scheduler"] == "commit_id+mariadb_conservative"
    assert recorded["settings"]["workers"] == 2 and recorded["settings"]["durability"] == "durable"
    assert recorded["probe"]["start"] - recorded["probe"]["stop"] >= 2.0
    # the disk probed while the SQL thread was stopped (what did not fit, after the window),
    # from a worker thread: the stop no longer than asked (a sample's interval late at most,
    # and the query's time)
    at = recorded["probes_at"]
    assert not any("before" in c for c in at.values()), at
    assert at["fsync"].get("stop") and at["direct_write"].get("stop"), at
    assert all(sum(c.values()) - c.get("overran", 0) == n for c, n in (
        (at["fsync"], 5), (at["direct_write"], 5), (at["io_cpu"], 1), (at["sustained"], 1)))
    assert recorded["probe"]["start"] - recorded["probe"]["stop"] < 2.5
    print(f"probes_at {at}; fsync_ms_rounds {recorded['fsync_ms_rounds']}; "
          f"log_write_ms_rounds {recorded['log_write_ms_rounds']}")
    # the host's pace read on the real server (SELECT BENCHMARK) in the stop, replica idle
    assert set(recorded["host_loop"]) == {"stop"}
    assert all(recorded["host_loop"]["stop"][k]["us"] > 0 for k in ("compute", "rows"))
    assert recorded["fsync_ms"] > 0            # the datadir is on this machine
    # ... so its applier threads' CPU time is read with every sample, and it grows
    assert recorded["cpu_source"] == "threads"
    assert len(recorded["cpu"]) == len(recorded["samples"])
    assert recorded["cpu"][-1][0] > recorded["cpu"][0][0]
    # ... and beside it the process's and the IO thread's, the process's the larger
    assert len(recorded["cpu_others"]) == len(recorded["samples"])
    assert all(p >= io >= 0 for p, io in recorded["cpu_others"])
    assert recorded["cpu_others"][-1][0] - recorded["cpu_others"][0][0] >= \
        recorded["cpu"][-1][0] - recorded["cpu"][0][0] - 0.02       # 10 ms ticks
    assert recorded["settings"]["log_file_buffered"] is False     # started durable: O_DIRECT
    # the commit's writes and syncs probed for their CPU on the replica's disk
    assert all(recorded["io_cpu"][op]["cpu_us"] > 0 for op in
               ("direct_write", "direct_write_sync", "append_sync"))
    # the SQL thread runs again after the probe
    assert R.slave_status()["Slave_SQL_Running"] == "Yes"
    capsys.readouterr()
    profile = tmp_path / "mine.json"
    assert main(["calibrate", "--samples", str(window), "--binlog",
                 os.path.join(P.datadir, binlog), "--schema", rig.schema, "-o", str(profile),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "the probe's drain: measured" in text
    # performance_schema counts each worker's transactions: measured beside replayed, 2 each
    share = next(line for line in text.splitlines() if "share of the transactions" in line)
    measured, replayed = share.split(": measured ")[1].split("; replayed ")
    assert len(measured.split()) == 2 and len(replayed.split()) == 2, share
    mine = get_profile(str(profile))
    assert mine.calibrated["durability"] == ["durable"] and "calibrated" in mine.provenance
    # the server's other threads' CPU is the replica's own (its process less appliers and IO)
    assert "process's CPU less its applier and IO threads'" in mine.fitted_from["background_cpu"]
    assert mine.background_cpu == pytest.approx(
        mine.fitted_from["windows"][0]["background_cpu_us"], abs=0.051)
    # ... at the host's pace read in the stop, which `lag --host-now` scales from
    assert mine.fitted_from["host_pace"]["us"] == recorded["host_loop"]["stop"]["rows"]["us"]
    # the same window, its binlog read from the source over the replication protocol
    again = tmp_path / "again.json"
    assert main(["calibrate", "--samples", str(window), "--source", url(P), "--schema",
                 rig.schema, "-o", str(again), "--quiet"]) == 0
    assert get_profile(str(again)).exec_default == pytest.approx(mine.exec_default, rel=1e-6)


def test_errors_are_one_line(rig, tmp_path, capsys):
    P, R = rig.primary, rig.replica
    capsys.readouterr()
    assert main(["calibrate", "--replica", "mysql://root@127.0.0.1:1", "--record",
                 str(tmp_path / "w.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot connect" in err
    R.sql("CREATE USER IF NOT EXISTS 'nopriv'@'localhost'")
    assert main(["calibrate", "--replica", url(R, "nopriv"), "--record",
                 str(tmp_path / "w.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not allowed" in err
    assert not (tmp_path / "w.json").exists()
    # a monitoring user may sample, not probe: refused before the window, naming the privilege
    # (before: sampled until --probe-at, then "not allowed to run STOP ...")
    R.sql("CREATE USER IF NOT EXISTS 'monitor'@'localhost'")
    R.sql("GRANT REPLICA MONITOR ON *.* TO 'monitor'@'localhost'")
    assert main(["calibrate", "--replica", url(R, "monitor"), "--probe", "1", "--probe-at",
                 "1", "--window", "30", "--record", str(tmp_path / "w.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs REPLICATION SLAVE ADMIN" in err, err
    assert "this user has" in err and "MONITOR" in err
    assert not (tmp_path / "w.json").exists()
    # a window, then a binlog from before it: the primary writes past its first file first, so
    # the window's position lies beyond that file whether or not another test wrote before
    first = P.sql("SHOW BINARY LOGS")[0][0]
    P.sql("FLUSH BINARY LOGS")
    P.sql("CREATE DATABASE IF NOT EXISTS past_the_first_file")
    assert rig.wait_caught_up(120)
    window = tmp_path / "w2.json"
    assert main(["calibrate", "--replica", url(R), "--window", "1", "--record", str(window),
                 "--quiet"]) == 0
    assert "recorded" in capsys.readouterr().err
    time.sleep(0.1)
    assert main(["calibrate", "--samples", str(window), "--binlog",
                 os.path.join(P.datadir, first), "--schema", rig.schema, "-o",
                 str(tmp_path / "p.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not hold the window" in err
    assert not (tmp_path / "p.json").exists()
