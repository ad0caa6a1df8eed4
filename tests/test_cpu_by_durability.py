"""What durability changes in a one-core replica's CPU (traces/record/cpu_by_durability.py) and
what a relaxed redo write costs the appliers (traces/record/redo_write_cpu.py), on
hand-checkable folders and on the stored campaigns."""
from __future__ import annotations

import json
import os

import pytest

from record_scripts import import_record_scripts

cbd, rwc = import_record_scripts("cpu_by_durability", "redo_write_cpu")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def drain(run, appliers, switches, process=None, io=0.0):
    return {"run": run, "measured": {
        "cpu_us_per_txn_in_drain": appliers + 20.0 if process is None else process,
        "threads_in_drain": {"applier_cpu_us_per_txn": appliers, "io_cpu_us_per_txn": io,
                             "applier_switches_per_txn": switches}}}


def campaign(tmp_path, rows, **profile):
    terms = {"cores": 1, "commit_cpu": 40.0, "sync_cpu": 60.0, "log_write_cpu": 20.0}
    terms.update(profile)
    (tmp_path / "results.json").write_text(json.dumps({"rows": rows}))
    (tmp_path / "profile.json").write_text(json.dumps({"profiles": [terms]}))
    return str(tmp_path)


def test_the_drop_by_hand(tmp_path):
    rows = [drain("durable-serial-1_800x20_stop5_15", 300.0, 6.0),
            drain("durable-serial-1_800x20_stop5_15_r2", 280.0, 6.0),
            drain("relaxed-serial-1_800x20_stop5_15", 200.0, 2.0, process=225.0, io=5.0),
            drain("relaxed-optimistic-4_800x20_stop5_15", 190.0, 3.3)]
    folder = campaign(tmp_path, rows)
    c = cbd.campaign_cpu(folder)
    # the model sheds 40 + 60 - 2 x 20 = 60 µs; the appliers shed median(300, 280) - 200 = 90
    assert cbd.model_drop(c["profile"]) == 60.0
    text = cbd.table([folder])
    assert "| 290 / 200 (2 / 1) | 90 | 60 (40 + 60 - 2 x 20) | +30 |" in text
    # other threads: the process less the appliers less the IO thread (225 - 200 - 5)
    assert "| 20 / 20 |" in text and "| 190 (1) |" in text
    assert "median +30 µs a transaction, above 0 in 1 of 1" in text


def test_campaigns_the_table_cannot_read_are_left_out(tmp_path):
    for name in "abc":
        (tmp_path / name).mkdir()
    rows = [drain("durable-serial-1_800x20_stop5_15", 300.0, 6.0)]
    assert cbd.campaign_cpu(campaign(tmp_path / "a", rows)) is None   # no relaxed serial drain
    two = [rows[0], drain("relaxed-serial-1_800x20_stop5_15", 200.0, 2.0)]
    assert cbd.campaign_cpu(campaign(tmp_path / "b", two, cores=2)) is None   # not one core
    old = campaign(tmp_path / "c", two)
    terms = json.loads((tmp_path / "c" / "profile.json").read_text())
    del terms["profiles"][0]["log_write_cpu"]           # a profile from before the IO probes
    (tmp_path / "c" / "profile.json").write_text(json.dumps(terms))
    assert cbd.campaign_cpu(old) is None


def test_a_sleep_is_the_slope_by_hand(tmp_path):
    # appliers = 60 + 30 x switches exactly: the line's start 60, 30 a sleep, R² 1
    rows = [drain(f"relaxed-serial-1_800x20_stop5_15_r{k}", 60.0 + 30.0 * s, s)
            for k, s in enumerate((0.0, 1.0, 2.0, 3.0, 4.0, 6.0), start=1)]
    text = cbd.switch_table([campaign(tmp_path, rows)])
    assert f"| {tmp_path.name} | 6 | 60 | 30.0 | 1.00 | 0.0-6.0 |" in text


def test_one_write_and_the_durabilities_by_hand():
    fig = lambda writes, appliers, switches, wall: {  # noqa: E731
        "writes": writes, "appliers": appliers, "others": 10.0, "wall": wall,
        "switches": switches}
    found = {("relaxed", "serial", 1, 1): fig(2.0, 160.0, 2.0, 220.0),
             ("lazy", "serial", 1, 1): fig(0.0, 60.0, 0.0, 60.0),
             ("durable", "serial", 1, 1): fig(1.0, 250.0, 6.0, 470.0),
             ("lazy", "serial", 1, 2): fig(0.0, 56.0, 0.0, 64.0)}
    text = rwc.table(found, None)
    # one write: (160 - 60) / 2 CPU, (220 - 60) / 2 wall; the durable run has no lazy pair
    assert "| serial W=1 | 1 | 2.00 / 0.00 | 160 / 60 | 10 / 10 | 220 / 60 | 2.0 / 0.0 | " \
           "50.0 / 80.0 |" in text
    probes = {"started_utc": "t", "medians": {"idle": {
        "direct_write": {"cpu_us": 20.0}, "direct_write_sync": {"cpu_us": 40.0},
        "append_sync": {"cpu_us": 60.0}}, "busy": {"direct_write": {"cpu_us": 16.0}}}}
    by = rwc.by_durability(found, probes)
    # lazy: the median of 60 and 56; relaxed 160 - 58 = 102 above it, its probe 2 x 20
    assert "| lazy | 2 | 58 | - | - | - | 0.0 | - | 62 |" in by
    assert "| relaxed | 1 | 160 | 102 | 40 | 2.55 | 2.0 | 51 | 220 |" in by
    assert "| durable | 1 | 250 | 192 | 100 | 1.92 | 6.0 | 32 | 470 |" in by


@pytest.mark.parametrize("folder", ["redo_write_cpu"])
def test_the_stored_measurement(folder):
    path = os.path.join(REPO, "traces", "calibration", folder)
    found = rwc.drains(path)
    assert {k[0] for k in found} == {"relaxed", "lazy", "durable"}
    # lazy drains write the redo log at no commit, relaxed ones at every commit (twice serially)
    assert all(v["writes"] < 0.05 for k, v in found.items() if k[0] == "lazy")
    assert all(v["writes"] > 1.9 for k, v in found.items() if k[:2] == ("relaxed", "serial"))
    with open(os.path.join(path, "probes.json")) as f:
        probes = json.load(f)
    assert "| relaxed | 3 |" in rwc.by_durability(found, probes)
