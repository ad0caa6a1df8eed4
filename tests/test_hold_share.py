"""traces/record/hold_share.py: every stored overlap probe read as µs and as a share, on a
small tree of its own (a probe file and a campaign window), and a tree without one refused in
one line."""
from __future__ import annotations

import gzip
import json
import os
import sys

import pytest

from commitsched import disk_overlap
from test_disk_hold import fake_round

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "traces", "record"))
import hold_share  # noqa: E402


def tree(root):
    probe = root / "traces/calibration/ktrace/disk-hold-probe"
    probe.mkdir(parents=True)
    slow = fake_round((200.0, 400.0), (320.0, 480.0), (4.0, 4.0))
    (probe / "calibrate-1.json").write_text(json.dumps({"rounds": [slow]}))
    run = root / "traces/calibration/lag_check_z/runs/durable-serial-1"
    run.mkdir(parents=True)
    quick = fake_round((100.0, 200.0), (160.0, 240.0))
    with gzip.open(run / "window.json.gz", "wt") as f:
        json.dump({"overlap_rounds": [quick, quick, quick]}, f)
    (root / "traces/calibration/lag_check_z/runs/no-window").mkdir()
    return slow, quick


def test_each_probe_is_one_row_with_its_hold_and_share(tmp_path, capsys):
    slow, quick = tree(tmp_path)
    assert hold_share.main([str(tmp_path)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and not line.startswith("| probe")]
    assert [r.split(" | ")[0] for r in rows] == [
        "| disk-hold-probe 1 (free)", "| lag_check_z durable-serial-1"]
    for line, r in zip(rows, (slow, quick)):
        cells = line.strip("| ").split(" | ")
        assert cells[4] == f"{disk_overlap.hold_from(r)[0]:.0f}"
        assert cells[6] == f"{disk_overlap.share_from(r)[0]:.2f}"
    # twice the syncs: twice the µs, the same share
    hold_slow, hold_quick = (float(line.split(" | ")[4]) for line in rows)
    assert hold_slow == pytest.approx(2 * hold_quick, abs=1)
    assert rows[0].split(" | ")[6] == rows[1].split(" | ")[6]


def test_a_tree_without_a_probe_is_refused_in_one_line(tmp_path):
    with pytest.raises(SystemExit) as e:
        hold_share.main([str(tmp_path)])
    assert "no stored overlap probe" in str(e.value) and "\n" not in str(e.value)
