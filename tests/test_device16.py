"""The pre-registered device16 test (traces/record/device16.py, traces/calibration/device16/):
the report's figures are recomputed from the committed CSVs and the stored predictions, the
verdicts follow from them by the registered rule, the calibrated model's serial terms are
recomputed from device16's serial applies by replica16's steps, and bad input is one line."""
from __future__ import annotations

import json
import math
import os
import shutil

import pytest

from record_scripts import import_record_scripts

d16, r16, fm = import_record_scripts("device16", "replica16", "fit_machine")


@pytest.fixture(scope="module")
def stored():
    with open(d16.REPORT_JSON) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def recomputed(stored):
    return d16.tables(stored["predictions"])


def _close(a, b, path="") -> None:
    """Equal structures, floats to 1e-9 relative."""
    if isinstance(a, dict):
        assert set(map(str, a)) == set(map(str, b)), path
        bs = {str(k): v for k, v in b.items()}
        for k, v in a.items():
            _close(v, bs[str(k)], f"{path}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (path, a, b)
    else:
        assert a == b, (path, a, b)


def test_report_figures_are_recomputed_from_the_csvs(stored, recomputed):
    _close(d16._jsonable(recomputed), stored["tables"])
    with open(d16.REPORT_MD) as f:
        assert d16.markdown(recomputed, stored["predictions"]) == f.read()


def test_measured_is_replica16s_arithmetic_on_device16s_files():
    for d in ("durable", "relaxed"):
        mine = d16.measured(d16.load_rows(d))
        theirs = r16.measured(d16.FOLDER, durability=d)
        assert set(mine) == set(theirs) and len(mine) == 16
        for k, m in mine.items():
            assert m["median"] == theirs[k]["median"] and m["min"] == theirs[k]["min"]
            assert len(m["speedups"]) == 8
    for s in ("relaxed_runtime", "relaxed_lease2"):
        assert {len(m["speedups"]) for m in d16.measured(d16.load_rows(s)).values()} == {5}


def test_the_verdicts_follow_from_the_errors(recomputed):
    first = recomputed["first"]
    assert len(first) == 32
    errors = {}
    for k in ("calibrated", "carried", "constant", "replica16"):
        errs = sorted(abs(r[k] / r["median"] - 1) for r in first)
        errors[k] = (errs[15] + errs[16]) / 2
    for k in ("calibrated", "carried", "replica16"):
        rule = recomputed["rule1"][k]
        assert math.isclose(rule["error"], errors[k])
        assert rule["met"] == (errors[k] <= 0.5 * errors["constant"])
    # the rule itself: at most half the constant's error, no more
    assert d16.verdict(0.10, 0.20) and not d16.verdict(0.1001, 0.20)
    second = recomputed["second"]
    assert len(second) == 16
    assert all(r["constant"] == recomputed["constant"]["relaxed"] for r in second)
    for k, rule in recomputed["rule2"].items():
        assert rule["met"] == (rule["error"] <= 0.5 * recomputed["summary2"]["constant"][
            "median_abs_error"])


def test_the_constant_is_replica16s_median_per_durability(recomputed):
    for d in ("durable", "relaxed"):
        meds = sorted(m["median"] for m in r16.measured(durability=d).values())
        assert len(meds) == 16
        assert math.isclose(recomputed["constant"][d], (meds[7] + meds[8]) / 2)


def test_the_flush_wait_is_replica16s_step():
    """device16.serial_flush_wait on replica16's own runs gives replica16.serial_flush_wait."""
    rows = [r for r in r16.load_rows() if r["mode"] == "serial"]
    for r in rows:
        r["cpu_iowait_pct"] = float(r["cpu_iowait_pct"])
    sizes = d16._trace_sizes()
    assert d16.serial_flush_wait(rows, sizes) == r16.serial_flush_wait()


def test_calibrated_serial_terms_come_from_device16s_serial_applies(stored):
    data = {s: d16.load_rows(s) for s in ("durable", "relaxed")}
    serial = {d: d16.serial_seconds(data[d]) for d in data}
    wls = d16.workloads(serial)
    carried = d16.carried_profile()
    prof, terms = d16.calibrate(carried, data, wls)
    for k, v in stored["predictions"]["calibrated_profile"].items():
        assert math.isclose(getattr(prof, k), v), k
    # only the serial terms moved
    for name in fm.TERMS + ("handoff_event", "coordination_thread", "cores"):
        assert getattr(prof, name) == getattr(carried, name)
    # the serial replay at each setting is what the execution was solved for: the mean of what
    # the two settings leave, so each workload's durable and relaxed replays straddle their
    # measurements by the same amount
    for w, wl in wls.items():
        dur = fm.makespan(wl.txns, "serial", 1, prof, wl.columns) / wl.full_count
        rel = fm.makespan(wl.txns, "serial", 1, prof.with_durability("relaxed"),
                          wl.columns) / wl.full_count
        assert math.isclose(dur - wl.serial_us_by["durable"], -(rel - wl.serial_us_by["relaxed"]),
                            abs_tol=0.5)


def test_log_write_is_read_from_the_second_leases_probe():
    assert d16.log_write_us() == 29.9


def test_a_bad_row_is_one_line_naming_file_and_line(tmp_path):
    for name in d16.FILES.values():
        shutil.copy(os.path.join(d16.FOLDER, name), tmp_path / name)
    path = tmp_path / "timings.csv"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace(",", ",x", 4)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(d16.DataError, match=r"timings\.csv:4: "):
        d16.load_rows("durable", str(tmp_path))


def test_the_stored_predictions_are_the_registered_models_replays(stored):
    """The simulated figures in report.json are what the registered models give now (the
    compiled core, every trace in full): regenerate the report if a model change moves them."""
    _close(d16._jsonable(d16.predictions(progress=lambda s: None)), stored["predictions"])
