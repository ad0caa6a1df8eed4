"""The lag-check rig on a machine without MariaDB (traces/record/lag_check_device.sh): the tools
from one folder only, a datadir copied from a template, the bundle's share folder, the server's
user, the deadline that leaves out the runs a lent machine's call cannot finish, and the pinning
check. Nothing here starts a server: the slow suite's live tests do (tests/test_calibrate_live.py
and the rig's own campaigns); the bundle's dry run is in docs/lag-check.md."""
from __future__ import annotations

import json
import os
import stat

import pytest
from record_scripts import import_record_scripts

record, lag_check = import_record_scripts("record", "lag_check")

ROLES = {"mariadbd", "mariadb", "mariadb-admin", "mariadb-dump", "mariadb-binlog", "sysbench"}


def tools_dir(tmp_path, names=ROLES):
    d = tmp_path / "tools"
    d.mkdir()
    for n in names:
        p = d / n
        p.write_text("#!/bin/sh\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return d


def template(tmp_path):
    t = tmp_path / "template"
    (t / "mysql").mkdir(parents=True)
    (t / "mysql" / "user.frm").write_text("x")
    (t / "ibdata1").write_text("y")
    return t


def test_the_tools_come_from_the_folder_alone(tmp_path, monkeypatch):
    """With COMMITSCHED_TOOLS_DIR every tool is that folder's (the system's are not looked at);
    with the template, no install_db is needed."""
    d = tools_dir(tmp_path)
    monkeypatch.setenv(record.TOOLS_DIR_ENV, str(d))
    monkeypatch.setenv(record.TEMPLATE_ENV, str(template(tmp_path)))
    found = record.find_tools()
    assert found["install_db"] is None
    assert {os.path.dirname(p) for r, p in found.items() if r != "install_db"} == {str(d)}
    assert os.path.basename(found["server"]) == "mariadbd"


def test_a_tool_missing_from_the_folder_is_named(tmp_path, monkeypatch):
    d = tools_dir(tmp_path, ROLES - {"mariadb-dump"})
    monkeypatch.setenv(record.TOOLS_DIR_ENV, str(d))
    monkeypatch.setenv(record.TEMPLATE_ENV, str(template(tmp_path)))
    with pytest.raises(SystemExit, match=r"missing mariadb-dump/mysqldump in COMMITSCHED_TOOLS"):
        record.find_tools()


def test_a_template_that_is_no_datadir_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(record.TEMPLATE_ENV, str(tmp_path))
    with pytest.raises(SystemExit, match="not a datadir made by mariadb-install-db"):
        record.find_tools()


def test_the_datadir_is_the_templates_copy(tmp_path, monkeypatch):
    t = template(tmp_path)
    monkeypatch.setenv(record.TEMPLATE_ENV, str(t))
    monkeypatch.setenv(record.SERVER_USER_ENV, "")
    monkeypatch.setattr(record.os, "geteuid", lambda: 1000)     # no chown
    data = tmp_path / "w" / "data"
    data.mkdir(parents=True)
    r = record.install_datadir({"install_db": None}, str(data), ["--user=x"])
    assert r.returncode == 0
    assert (data / "mysql" / "user.frm").read_text() == "x" and (data / "ibdata1").exists()
    assert (t / "ibdata1").exists()                               # the template stays


def test_the_server_user_and_share(monkeypatch):
    monkeypatch.setenv(record.SERVER_USER_ENV, "root")
    assert record.server_user() == "root"
    monkeypatch.delenv(record.SERVER_USER_ENV)
    monkeypatch.setattr(record.os, "geteuid", lambda: 0)
    assert record.server_user() == "mysql"
    monkeypatch.setattr(record.os, "geteuid", lambda: 1000)
    assert record.server_user() is None
    monkeypatch.delenv(record.SHARE_ENV, raising=False)
    assert record.share_args() == []
    monkeypatch.setenv(record.SHARE_ENV, "/b/share")
    assert record.share_args() == ["--lc-messages-dir=/b/share",
                                   "--character-sets-dir=/b/share/charsets"]


def test_the_deadline_starts_only_runs_that_can_end_in_time():
    run = lag_check.parse_run("durable-serial-1@800x30+stop5:12")
    allowance = lag_check.RUN_ALLOWANCE_S
    assert lag_check.fits_deadline(run, began=100.0, deadline_s=30 + allowance, now=100.0)
    assert not lag_check.fits_deadline(run, began=100.0, deadline_s=30 + allowance, now=100.1)
    assert lag_check.fits_deadline(run, began=0.0, deadline_s=500, now=500 - 30 - allowance)


def test_the_runs_left_out_reach_the_report(tmp_path):
    assert lag_check.not_measured(str(tmp_path)) is None
    lag_check.write_skipped(str(tmp_path), ["a_0x20", "b_0x20"], 500.0)
    left = lag_check.not_measured(str(tmp_path))
    assert left == {"deadline_s": 500.0, "not_started": ["a_0x20", "b_0x20"]}
    assert json.load(open(tmp_path / "skipped.json")) == left


def test_the_measure_loop_stops_at_the_deadline(tmp_path, monkeypatch):
    """cmd_measure with a rig that measures nothing: the runs past the deadline are not
    started, and skipped.json names them."""
    measured = []

    class Rig:
        root = str(tmp_path / "root")

        def setup(self):
            return {"version": "fake"}

        def measure(self, run, out):
            measured.append(run["name"])
            clock[0] += run["seconds"] + 10
            return {"transactions": 1, "caught_up": True}

        def stop(self):
            pass

    clock = [0.0]
    monkeypatch.setattr(lag_check.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(lag_check, "new_rig", lambda *a, **k: Rig())
    monkeypatch.setattr(lag_check, "check_io_cap", lambda iops: None)
    runs = "durable-serial-1@0x20,durable-serial-1@0x20#2,durable-serial-1@0x20#3"
    out = tmp_path / "out"
    # the first ends at 30, the second may start (30 + 20 + allowance <= 85), the third not
    rc = lag_check.main(["measure", "--out", str(out), "--runs", runs, "--pin", "on",
                         "--deadline-s", str(50 + lag_check.RUN_ALLOWANCE_S + 5), "--keep"])
    assert rc == 0
    assert measured == ["durable-serial-1_0x20", "durable-serial-1_0x20_r2"]
    assert lag_check.not_measured(str(out))["not_started"] == ["durable-serial-1_0x20_r3"]
    setup = json.load(open(out / "setup.json"))
    assert setup["pinned"] is True and setup["version"] == "fake"


def test_pinning_is_checked_by_what_two_spinners_get():
    """This machine's kernel enforces an affinity (the rig's campaigns rely on it)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to tell apart")
    assert lag_check.pinning_works(cpu=min(os.sched_getaffinity(0)), seconds=0.3) is True
