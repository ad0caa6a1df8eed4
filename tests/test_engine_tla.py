"""A sample of the compiled core's schedules goes through trace validation against the TLA+
specs (issue 29; checks/trace_validation.py): each schedule's events, as the core timed them,
must be a behaviour of MySQLApplier.tla or MariaDBApplier.tla. The core keeps no event log, so
the log is rebuilt from its per-transaction times: events in time order, and at one instant
exec_end, commit, dispatch, start (what enables what: a transaction ends executing before its
group commits, a commit frees the worker or the turn that a dispatch or a start waits for, a
transaction is dispatched before it starts). Runs without kills (a kill's moment is not in the
schedule)."""
from __future__ import annotations

import os
import shutil

import pytest

from commitsched import engine
from commitsched.checks import trace_validation as tv
from commitsched.columnar import from_txns
from commitsched.profiles import get_profile
from commitsched.schedulers import parse_scheduler
from commitsched.trace import load_trace

ROOT = os.path.join(os.path.dirname(__file__), "..")
RANK = {"exec_end": 0, "commit": 1, "dispatch": 2, "start": 3}
CASES = [  # (scheduler, trace, first transactions, W, profile)
    ("commit_order+mysql", "examples/oltp_rw_8clients.jsonl.gz", 14, 3, "ideal"),
    ("writeset+mysql", "examples/oltp_rw_64clients.jsonl.gz", 14, 4, "durable"),
    ("writeset_session+mysql", "recorded/fk_parent_t8.jsonl.gz", 12, 2, "replica16"),
    ("commit_id+mariadb_conservative", "recorded/oltp_read_write_t64.jsonl.gz", 12, 3, "ideal"),
    ("commit_id+mariadb_conservative", "examples/mixed_ddl_fk.jsonl.gz", 12, 4, "replica16"),
    ("commit_id+mariadb_optimistic", "examples/update_index_48clients.jsonl.gz", 12, 3,
     "durable"),
]


def compiled_schedule(sched: str, txns: list, workers: int, profile) -> tv.Schedule:
    """The spec's trace record of this run (the reference's recorder gives its inputs), its
    events rebuilt from the compiled core's times."""
    schedule = tv.record_schedule(sched, txns, workers, profile)
    out = engine.simulate(parse_scheduler(sched), from_txns(txns), workers, profile,
                          schedule=True)
    assert not out["retries_each"].any(), "a run with kills: its log cannot be rebuilt"
    events = []
    for i, txn in enumerate(txns):
        t = i + 1
        events.append((out["dispatch"][i], RANK["dispatch"], t,
                       tv.Event("dispatch", t, int(out["worker"][i]), txn.seq)))
        for name in ("start", "exec_end", "commit"):
            events.append((out[name][i], RANK[name], t, tv.Event(name, t, 0, txn.seq)))
    events.sort(key=lambda e: e[:3])
    schedule.events = [e[3] for e in events] + [tv.Event("end", 0)]
    return schedule


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.skipif(shutil.which("java") is None, reason="needs Java (make setup)")
def test_a_sample_of_compiled_schedules_are_spec_behaviours():
    schedules = []
    for sched, path, count, workers, profile in CASES:
        txns = load_trace(os.path.join(ROOT, "traces", *path.split("/"))).txns[:count]
        schedules.append(compiled_schedule(sched, txns, workers, get_profile(profile)))
    verdicts = tv.validate(schedules)
    bad = [v.describe() for v in verdicts if not v.accepted]
    assert not bad, "\n".join(bad)
