"""The rig's noise floor (traces/record/lag_noise_floor.py): repeats of one configuration in
one campaign predicted from each other, on a hand-checkable results.json and on the stored
campaigns."""
from __future__ import annotations

import json
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "traces", "record"))
import lag_noise_floor as nf  # noqa: E402


def row(run, drain=None, write_rate=800.0, max_lag=0.0, keeps_up=True):
    return {"run": run, "write_rate": write_rate,
            "measured": {"drain_s": drain, "max_lag_s": max_lag, "keeps_up": keeps_up}}


def test_repeats_predicted_from_each_other_by_hand(tmp_path):
    rows = [row(nf.DRAIN, 10.0), row(nf.DRAIN + "_r2", 12.0), row(nf.DRAIN + "_r3", None),
            row("durable-conservative-2_800x40_stop5_15", 99.0),       # not a repeat
            # 30 s loads: 3000/s with 3 s behind is an apply rate of 3000 / 1.1 = 2727/s;
            # 2400/s with 0 s behind says nothing of the rate above it
            row(nf.TOP, write_rate=3000.0, max_lag=3.0, keeps_up=False),
            row(nf.TOP + "_r2", write_rate=2400.0, max_lag=0.2, keeps_up=True)]
    (tmp_path / "results.json").write_text(json.dumps({"rows": rows}))
    f = nf.floor(str(tmp_path))
    assert f["drains_s"] == [10.0, 12.0]
    assert sorted(f["drain_errors"]) == pytest.approx([1 - 10 / 12, 0.2])
    # only the run measured >= 0.5 s is scored: from r2's rate (2400 / (1 + 0.2 / 30)) the
    # first would lag 30 (3000 / 2384.1 - 1) = 7.75 s against 3 s measured
    rate = 2400.0 / (1 + 0.2 / 30)
    assert f["lag_errors"] == pytest.approx([30 * (3000 / rate - 1) / 3.0 - 1])
    # r2's verdict from the first's rate 2727/s > 2400: keeps up, right; the first's from
    # r2's 2384/s < 3000: falls behind, right
    assert f["verdicts"] == [True, True]


def test_the_stored_campaigns_floor_is_what_the_doc_says():
    text = nf.markdown(nf.CAMPAIGNS)
    with open(os.path.join(REPO, "docs", "lag-check.md")) as f:
        doc = f.read()
    assert text.strip() in doc       # `make lag-noise-floor` prints it; the doc keeps it
