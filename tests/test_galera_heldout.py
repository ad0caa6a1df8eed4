"""The held-out Galera campaign's plumbing (traces/record/galera_measure.py's configuration
names, galera_heldout.py's table folding and verdict): pure functions, milliseconds."""
from __future__ import annotations

import os
import sys

import pytest

from commitsched.trace import Txn

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "traces", "record"))

from galera_heldout import config_of, fidelity_md, fold_tables  # noqa: E402
from galera_measure import parse_config  # noqa: E402


def test_configuration_names_carry_fc_factor_and_tables():
    assert parse_config("t2-fc16-durable") == {
        "name": "t2-fc16-durable", "slave_threads": 2, "fc_limit": 16, "durability": "durable",
        "fc_factor": 1.0, "tables": 4}
    c = parse_config("t8-fc64-relaxed-ff0.5-tab1")
    assert (c["slave_threads"], c["fc_limit"], c["fc_factor"], c["tables"]) == (8, 64, 0.5, 1)
    cfg = config_of("t3-fc16-durable-ff0.5")
    assert (cfg.workers, cfg.fc_limit, cfg.fc_factor, cfg.durable) == (3, 16, 0.5, True)


@pytest.mark.parametrize("bad", ["t2-fc16", "t2-fc16-durable-tab1-ff0.5", "t2-fc16-fast",
                                 "t2-fc16-durable-ff1.5", "t2-fc16-durable-tab0", "x"])
def test_a_bad_configuration_name_is_one_line(bad, capsys):
    with pytest.raises(SystemExit) as e:
        parse_config(bad)
    assert str(e.value).startswith("galera_measure: bad configuration")
    assert "\n" not in str(e.value)


def test_folding_four_tables_onto_one_merges_their_keys():
    txns = [Txn(1, ["sbtest.sbtest2/PRIMARY=5", "sbtest.sbtest1/PRIMARY=5",
                    "sbtest.sbtest3/PRIMARY=7"]),
            Txn(2, ["sbtest.sbtest4/PRIMARY=9"])]
    assert fold_tables(txns, 4) is txns
    one = fold_tables(txns, 1)
    assert one[0].writes == ("sbtest.sbtest1/PRIMARY=5", "sbtest.sbtest1/PRIMARY=7")
    assert one[1].writes == ("sbtest.sbtest1/PRIMARY=9",)
    assert fold_tables(txns, 2)[1].writes == ("sbtest.sbtest2/PRIMARY=9",)


def _row(name, model_err, const_err, calib=False):
    return {"config": name, "measured": 100.0, "rounds": [100.0], "unthrottled_measured": 120.0,
            "calibration": calib, "constant": 90.0, "constant_error": const_err,
            "model": 100.0, "model_error": model_err, "model_unthrottled": 120.0,
            "old_model": 80.0, "old_model_error": -0.2, "old_model_unthrottled": 90.0}


def test_the_verdict_follows_the_preregistered_rule():
    pre = {"preregistered_utc": "x", "rule": "r", "constant_guess": 90.0,
           "calibration": {"config": "c"}, "model": {"name": "m", "fitted_from": {"cpu_scale": 1}},
           "old_model": {"name": "o", "fitted_from": {"cpu_scale": 1}}}
    # the calibration row's error is not counted
    met = [_row("a", 0.10, 0.30), _row("b", -0.12, -0.40), _row("c", 0.9, 0.0, calib=True)]
    assert "): met." in fidelity_md(pre, met)
    half = [_row("a", 0.20, 0.30), _row("b", -0.20, -0.35)]     # under 25%, not half
    assert "): not met." in fidelity_md(pre, half)
