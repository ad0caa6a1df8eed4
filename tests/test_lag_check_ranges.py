"""traces/record/lag_check.py's calibration from several runs (campaign I): the runs it fits on,
a window made from the rig's samples of a run calibrate did not sample, and how the model's
ranges are scored (coverage), without a server."""
from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import pytest
from record_scripts import import_record_scripts

from commitsched.calibrate_replica import Window

(lag_check,) = import_record_scripts("lag_check")


def test_several_cal_runs_calibrate_and_repeats_are_named():
    assert lag_check.parse_run("durable-serial-1@800x40+stop5:15+cal#2") == {
        "name": "durable-serial-1_800x40_stop5_15_r2", "durability": "durable",
        "mode": "serial", "threads": 1, "rate": 800, "seconds": 40, "clients": 16,
        "stop_at": 5.0, "stop_for": 15.0, "calibrate": True}
    runs = {d: {"meta": {"run": {"calibrate": d.startswith("c")}}} for d in ("c1", "x", "c2")}
    a = SimpleNamespace(calibrate_on=None, out="o")
    assert lag_check.calibrating_runs(a, sorted(runs), runs) == ["c1", "c2"]
    a.calibrate_on = "x,c1"
    assert lag_check.calibrating_runs(a, sorted(runs), runs) == ["x", "c1"]
    a.calibrate_on = "nope"
    with pytest.raises(SystemExit, match="no run nope"):
        lag_check.calibrating_runs(a, sorted(runs), runs)


def test_a_window_from_the_rigs_samples(tmp_path):
    with open(tmp_path / "samples.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t", "primary_seq", "replica_seq", "replica_cpu_s", "applier_cpu_s",
                    "applier_runq_s", "applier_vcsw", "io_cpu_s"])
        w.writerows([[100.0 + i / 20, 500 + 10 * i, 500 + 5 * i, 1.0, 0.01 * i, 0.0, i, 0.0]
                     for i in range(10)])
    (tmp_path / "meta.json").write_text(json.dumps({
        "events": {"stop": 100.1, "start": 100.2}, "fsync_probe_ms": {"median_ms": 0.3}}))
    template = Window("r", {"flavor": "mariadb"}, "t", 0.05, [(1.0, "0-1-7", "0-1-9")] * 2,
                      None, 0.2, 1, log_write_ms=0.07, fsync_ms_rounds=[0.2, 0.21])
    w = lag_check.rig_window(str(tmp_path), template, {"stop_for": 15.0})
    assert w.samples[3] == (100.15, "0-1-515", "0-1-530")
    assert w.cpu[3] == (0.03, 0.0, 3) and w.cpu_source == "threads"
    assert w.probe == {"stop": 100.1, "start": 100.2, "seconds": 15.0}
    assert w.fsync_ms == 0.3 and w.fsync_ms_rounds is None and w.log_write_ms == 0.07


def row(measured_drain, drain_range, lag, lag_range, keeps, ends):
    return {"stop_s": 15 if measured_drain is not None else None,
            "measured": {"drain_s": measured_drain, "max_lag_s": lag, "keeps_up": keeps},
            "model": {"drain_s_range": drain_range, "max_lag_s_range": lag_range,
                      "keeps_up": ends[0], "keeps_up_slowest": ends[1],
                      "keeps_up_fastest": ends[2]}}


def test_coverage_counts_the_measured_answers_inside_the_models_range():
    held = [row(8.0, [7.0, 9.0], 0.1, [0.0, 0.0], True, (True, True, True)),
            row(8.0, [9.0, None], 0.1, [0.0, 0.0], True, (True, False, True)),  # above: out
            row(30.0, [9.0, None], 0.1, [0.0, 0.0], True, (True, False, True)),  # never: in
            row(None, None, 3.0, [1.0, 2.5], False, (True, False, True)),        # lag out
            row(None, None, 2.0, [1.0, 2.5], False, (True, True, True))]         # verdict out
    cov = lag_check.coverage(held, 0.5)
    assert cov == {"drain": [2, 3], "max_lag": [1, 2], "keeps_up": [4, 5],
                   "keeps_up_flips": 3}
