"""MySQL's own Group Replication tests as the oracle of the GR certifier's parallel-applier
indexes (model/certification.py `GRCertifier`; docs/certification.md).

Each case of tests/fixtures/gr_tests/cases.py is one `assert_logical_timestamps.inc` of a GR
test: the transactions of the test in the group's order, and the `last_committed
sequence_number` pairs asserted on one member's relay log file. Every member's certifier is
replayed; the checked member's remote transactions are its relay log. Every pair must come
out exactly, except the documented differences, which must come out exactly as documented (so
that a change in either direction shows up here).
"""
from __future__ import annotations

import os
import sys

import pytest

from commitsched.certification import GRCertifier, Snapshot

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures"))
from gr_tests.cases import CASES  # noqa: E402

# (case, index of the pair in the file) -> (what the certifier gives, why)
DIFFERENCES = {
    ("indexes_step2_member2", 1): ((1, 3), "view change"),
    ("indexes_step2_member2", 2): ((3, 4), "view change"),
    ("indexes_step3_member2", 1): ((1, 3), "view change"),
    ("indexes_step3_member2", 2): ((3, 4), "view change"),
    ("indexes_step3_member2", 3): ((5, 6), "view change"),
}
WHY = {"view change": (
    "member 2's certifier gave one sequence number fewer: in the test, after member 2 "
    "restarted, member 1 joined the group, and member 2's relay log shows one sequence number "
    "used before member 1's INSERT; certifier.cc touches no parallel-applier index on a view "
    "change (generate_view_change_group_gno assigns a GNO only), so what does it is outside the "
    "certifier (the certification handler's view-change path, not read). "
    "gr_parallel_applier_indexes_commit_order, where a third member joins after the second, "
    "shows no such sequence number, so no simple rule covers both")}


def replay(case: dict) -> dict[int, list[list[tuple[int, int]]]]:
    """Every member's relay log files: lists of (last_committed, sequence_number)."""
    certs = {m: GRCertifier() for m in case["members"]}
    files = {m: [[]] for m in case["members"]}
    gid = 0
    for ev in case["events"]:
        if "restart" in ev:
            certs[ev["restart"]] = GRCertifier()
            files[ev["restart"]].append([])
        elif "gc" in ev:
            for c in certs.values():
                c.garbage_collect(Snapshot(gid))
        elif "txn" in ev:
            gid += 1
            keys = ev["txn"]["writes"]
            for m, c in certs.items():
                local = ev["origin"] == m
                r = c.certify(gid, keys, Snapshot(gid - 1), local=local)
                assert r.ok
                if not local:
                    files[m][-1].append((r.last_committed, r.sequence_number))
    return files


def relay_log(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A relay log file shows its first transaction as 0 0 (every asserted file does: the
    certifier's values are in the test files' comments), the rest as certified."""
    return [(0, 0)] + pairs[1:] if pairs else []


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_gr_suite_case(case):
    got = relay_log(replay(case)[case["check"]][-1])
    assert len(got) == len(case["expect"]), got
    for i, (g, want) in enumerate(zip(got, case["expect"])):
        known = DIFFERENCES.get((case["name"], i))
        if known is None:
            assert g == tuple(want), f"pair {i}: got {g}, MySQL asserts {want}"
        else:
            assert g == known[0] and g != tuple(want), f"pair {i}: documented difference moved"


def test_gr_suite_summary():
    """The figures docs/certification.md reports."""
    pairs = sum(len(c["expect"]) for c in CASES)
    files = {c["file"] for c in CASES}
    assert (len(CASES), pairs, len(files)) == (8, 60, 3)
    assert len(DIFFERENCES) == 5
