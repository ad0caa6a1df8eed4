"""traces/record/lag_groups.py: the replica's group commit, measured (status counters) and
modelled (groups read from the schedule)."""
from __future__ import annotations

import os

import pytest

from record_scripts import import_record_scripts

(lag_groups,) = import_record_scripts("lag_groups")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAMPAIGN_F = os.path.join(ROOT, "traces", "calibration", "lag_check_f")


def test_groups_are_runs_of_equal_instants():
    assert lag_groups.group_sizes([3.0, 1.0, 1.0, 2.0, 3.0, 3.0]) == 2.0
    assert lag_groups.group_sizes([1.0, 1.0 + 1e-12, 5.0]) == 1.5     # one instant, rounding
    assert lag_groups.group_sizes([]) == 0.0


def test_measured_groups_from_the_counters():
    meta = {"counters": {"replica": {"binlog_commits": 300, "binlog_group_commits": 200,
                                     "innodb_data_fsyncs": 210}}}
    assert lag_groups.measured_groups(meta) == {"binlog": 1.5, "fsyncs_per_txn": 0.7,
                                                "drain": None}
    # the window: 200 commits in 110 groups, 40 of them steady seconds after the drain; outside
    # it 100 commits in 90 groups (1.11 a group), so the steady 40 took 36 groups and the
    # drain's 160 the other 74
    meta["counters_in_drain"] = {"binlog_commits": 200, "binlog_group_commits": 110,
                                 "innodb_data_fsyncs": 110}
    drain = lag_groups.measured_groups(meta, drained=160)["drain"]
    assert drain["binlog"] == pytest.approx(160 / 74)
    assert drain["fsyncs_per_txn"] == pytest.approx((110 - 40 * 1.0) / 160)
    assert lag_groups.measured_groups(meta)["drain"] is None     # no samples: not estimated
    assert lag_groups.measured_groups({"counters": {}}) is None


def test_the_model_groups_only_what_commits_together():
    from commitsched.profiles import load_profile_file
    from commitsched.trace import load_trace
    profile = load_profile_file(os.path.join(CAMPAIGN_F, "profile.json"))
    txns = load_trace(os.path.join(CAMPAIGN_F, "runs", "durable-serial-1_800x40_stop5_15",
                                   "trace.jsonl.gz")).txns[:1500]
    # optimistic W=4 on the relaxed one-core replica: commits pile up behind the redo write
    opt = lag_groups.model_groups(profile.with_durability("relaxed"), txns, "optimistic", 4)
    assert opt["binlog"] > 1.2 and opt["redo"] > 1.1
    # conservative W=1: one transaction at a time, never a group
    one = lag_groups.model_groups(profile, txns, "conservative", 1)
    assert one == {"binlog": 1.0, "redo": 1.0}


def test_a_folder_without_runs_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="no runs"):
        lag_groups.report(str(tmp_path), 1000)
