"""traces/record/lag_check.py's IOPS-capped replica disk (`--replica-write-iops`, campaign G)
without root: the cgroup v1 blkio files are a temporary folder, so what the rig writes where
is checked, not the kernel's throttling (the rig's own probe checks that, in setup.json)."""
from __future__ import annotations

import json
import os
import subprocess
import threading

import pytest
from record_scripts import import_record_scripts

(lag_check,) = import_record_scripts("lag_check")


@pytest.fixture
def blkio(tmp_path):
    root = tmp_path / "blkio"
    root.mkdir()
    (root / "tasks").write_text("")
    (root / "blkio.throttle.write_iops_device").write_text("")
    return root


def cap_in(root, iops=800):
    cap = lag_check.IoCap(iops, str(root), root=str(root), name="g", device="254:0")
    cap.create()
    return cap


def test_the_cap_is_written_for_the_disk_and_the_server_joins(blkio):
    cap = cap_in(blkio)
    assert (blkio / "g" / "blkio.throttle.write_iops_device").read_text() == "254:0 800"
    cap.add(4242)
    assert (blkio / "g" / "cgroup.procs").read_text() == "4242"


def test_calibrate_starts_inside_the_cap(blkio):
    """The command runs in a shell that joins the cgroup first: its own pid is written, then it
    becomes the command (same pid)."""
    cap = cap_in(blkio)
    cmd = cap.command_inside(["sh", "-c", "echo $$"])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    assert (blkio / "g" / "cgroup.procs").read_text().strip() == out


def test_a_probe_thread_goes_in_and_comes_back_out(blkio):
    cap = cap_in(blkio)
    tid = str(threading.get_native_id())
    with cap.thread_inside():
        assert (blkio / "g" / "tasks").read_text() == tid
        assert (blkio / "tasks").read_text() == ""
    assert (blkio / "tasks").read_text() == tid
    with pytest.raises(RuntimeError):                  # out again whatever happens inside
        with cap.thread_inside():
            raise RuntimeError("probe failed")
    assert (blkio / "tasks").read_text() == tid


def test_the_ios_are_read_for_the_capped_disk_only(blkio):
    cap = cap_in(blkio)
    (blkio / "g" / "blkio.throttle.io_serviced").write_text(
        "253:0 Write 99\n254:0 Read 7\n254:0 Write 1234\n254:0 Sync 1000\n254:0 Total 1241\n"
        "Total 1340\n")
    assert cap.serviced() == {"Read": 7, "Write": 1234}
    os.remove(blkio / "g" / "blkio.throttle.io_serviced")
    assert cap.serviced() == {"Read": 0, "Write": 0}


def test_release_moves_what_is_left_out_and_removes_the_group(blkio, monkeypatch):
    cap = cap_in(blkio)
    (blkio / "g" / "tasks").write_text("11\n12\n")
    removed = []
    monkeypatch.setattr(lag_check.os, "rmdir", removed.append)
    cap.release()
    assert (blkio / "tasks").read_text() == "12"      # each written in turn (the last stays)
    assert removed == [str(blkio / "g")]
    gone = lag_check.IoCap(800, str(blkio), root=str(blkio), name="never", device="254:0")
    gone.release()                                     # nothing created: nothing to do


def test_the_disk_of_a_partition_is_its_whole_disk(tmp_path):
    st = os.stat(tmp_path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysfs = tmp_path / "sys"
    disk = sysfs / "devices" / "vdb"
    part = disk / "vdb1"
    part.mkdir(parents=True)
    (disk / "dev").write_text("252:16\n")
    (part / "partition").write_text("1\n")
    (sysfs / "block").mkdir()
    os.symlink(part, sysfs / "block" / dev)
    assert lag_check.block_device(str(tmp_path), str(sysfs / "block")) == "252:16"
    os.remove(part / "partition")
    assert lag_check.block_device(str(tmp_path), str(sysfs / "block")) == dev


def test_a_cap_the_machine_cannot_give_is_refused_in_one_line(tmp_path, blkio):
    lag_check.check_io_cap(None, str(tmp_path))                  # no cap: nothing checked
    with pytest.raises(SystemExit, match="at least 1"):
        lag_check.check_io_cap(0, str(blkio))
    with pytest.raises(SystemExit, match="cgroup v1 blkio throttling"):
        lag_check.check_io_cap(500, str(tmp_path / "none"))
    lag_check.check_io_cap(500, str(blkio))


def test_the_secondary_verdict_and_the_disk_table():
    """The keeps-up verdict read at the load's end is counted over runs without a stop; the
    disk table gives writes per transaction and per group commit."""
    def row(name, measured, model_end, line_end, stop=None, ios=None):
        return {"run": name, "calibrating": False, "config": "durable serial W=1",
                "stop_s": stop,
                "measured": {"keeps_up": measured, "max_lag_s": 0.0, "drain_s": None,
                             "disk_ios": ios, "group_commits": 100, "commits": 400,
                             "disk_in_drain": None},
                "model": {"keeps_up": True, "keeps_up_at_end": model_end, "max_lag_s": 0.0,
                          "drain_s": None},
                "line": {"keeps_up": True, "keeps_up_at_end": line_end, "max_lag_s": 0.0,
                         "drain_s": None}}
    rows = [row("a", False, False, True, ios={"Write": 1200, "Read": 3}),
            row("b", True, True, True), row("c", True, None, None, stop=5.0)]
    s = lag_check.summarize(rows, 0.5)
    assert s["model_at_end"] == {"right": 2, "runs": 2}
    assert s["line_at_end"] == {"right": 1, "runs": 2}
    table = lag_check.disk_table({"rows": rows})
    assert "| a | 3.00 | 4.00 | 12.00 | - | - | - |" in table
    assert lag_check.disk_table({"rows": rows[1:]}) == ""


def test_a_drain_said_never_that_drained_counts_as_the_largest_miss():
    """Three drains measured 10 s: the model says 11 s, 13 s and never; its median error is
    the middle of 10%, 30% and the never (30%), not the median of the two it put a number on
    (20%), and the table says how many it said never. All never: the median is never."""
    def row(name, model_drain, line_drain):
        return {"run": name, "calibrating": False, "config": "durable serial W=1",
                "stop_s": 5.0,
                "measured": {"keeps_up": True, "max_lag_s": 0.0, "drain_s": 10.0},
                "model": {"keeps_up": True, "max_lag_s": 0.0, "drain_s": model_drain},
                "line": {"keeps_up": True, "max_lag_s": 0.0, "drain_s": line_drain}}
    rows = [row("a", 11.0, None), row("b", 13.0, None), row("c", None, 12.0)]
    s = lag_check.summarize(rows, 0.5)
    assert s["model"]["drain_median_error"] == pytest.approx(0.3)
    assert (s["model"]["drain_runs"], s["model"]["drain_never_but_drained"]) == (3, 1)
    assert s["line"]["drain_median_error"] == "never"
    assert lag_check._error_cell(s["model"], "drain_median_error") == "30% (3 runs, 1 said never)"
    assert lag_check._error_cell(s["line"], "drain_median_error") == "never (3 runs, 2 said never)"
    json.dumps(s, allow_nan=False)                       # no Infinity in results.json


def test_rescore_reads_a_stored_campaign_both_ways(tmp_path, capsys):
    """An older results.json (drains said never left out, 2 runs) rescored: 30% over 3 runs,
    one said never; a folder without results.json is refused in one line."""
    def row(name, model_drain):
        return {"run": name, "calibrating": False, "config": "durable serial W=1",
                "stop_s": 5.0,
                "measured": {"keeps_up": True, "max_lag_s": 0.0, "drain_s": 10.0},
                "model": {"keeps_up": True, "max_lag_s": 0.0, "drain_s": model_drain},
                "line": {"keeps_up": True, "max_lag_s": 0.0, "drain_s": 12.0}}
    rows = [row("a", 11.0), row("b", 13.0), row("c", None)]
    old = lag_check.summarize(rows, 0.5)
    for who in ("model", "line"):                 # as the scorer before the fix stored it
        old[who].pop("drains_never_counted")
    old["model"].update(drain_median_error=0.2, drain_runs=2)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "results.json").write_text(json.dumps({"rows": rows, "summary": old}))
    assert lag_check.main(["rescore", str(tmp_path / "x")]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("| x | 20% (2 runs) / 30% (3 runs, 1 said never) | 20% (3 runs) / "
                           "20% (3 runs) |")
    with pytest.raises(SystemExit) as e:
        lag_check.main(["rescore", str(tmp_path)])
    assert "not a report's results" in str(e.value) and "\n" not in str(e.value)
