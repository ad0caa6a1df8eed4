"""The differential suite catches a bug in one engine (issue 29): three catalogue bugs, each
injected into the compiled core alone (the reference runs correct), make the suite's own
comparison (engine_diff.compare, what test_engine_diff runs) fail on the bundled traces, and
the test says on how many runs. A suite that passed these would be a suite that cannot fail."""
from __future__ import annotations

import os

import pytest

from commitsched.profiles import get_profile

from engine_diff import columns_of, compare
from test_engine_diff import ROOT, _load

CASES = {
    # the coordinator lets a transaction go one sequence number early
    "lwm_off_by_one": ("commit_order+mysql", "examples/oltp_rw_8clients.jsonl.gz"),
    # commits in any order although preserve-commit-order is on
    "commit_order_unenforced": ("writeset+mysql", "examples/oltp_rw_64clients.jsonl.gz"),
    # optimistic waits on a later lock holder instead of killing it (a recording whose groups
    # hold conflicts that only the replica's row locks see)
    "optimistic_no_kill": ("commit_id+mariadb_optimistic", "recorded/oltp_read_write_t8.jsonl.gz"),
}


@pytest.mark.parametrize("bug", sorted(CASES))
def test_a_bug_in_the_compiled_core_alone_fails_the_suite(bug):
    sched, name = CASES[bug]
    txns = _load(os.path.join(ROOT, "traces", *name.split("/")), 300)
    columns = columns_of(txns)
    runs = differing = 0
    for profile in ("ideal", "durable", "replica16"):
        for w in (2, 4, 8, 16):
            runs += 1
            clean = compare(sched, txns, columns, w, get_profile(profile))
            assert clean is None, clean          # without the bug the engines agree
            if compare(sched, txns, columns, w, get_profile(profile), inject={bug}) is not None:
                differing += 1
    print(f"{bug}: {differing} of {runs} runs differ")
    assert differing > 0, f"{bug} injected into the compiled core alone went unnoticed"
