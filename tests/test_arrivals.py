"""Arrivals (model/replay.py's open replay): a transaction cannot be dispatched before it
reaches the relay log; with every arrival at 0 the schedule is the closed backlog's."""
import pytest

from commitsched.profiles import get_profile
from commitsched.schedulers import collect
from commitsched.trace import trace_from_dicts

IDEAL = get_profile("ideal")
SCHEDULERS = ("serial", "commit_order+mysql", "writeset+mysql", "database+mysql",
              "commit_id+mariadb_conservative", "commit_id+mariadb_optimistic")


def independent(n, exec_us=10.0):
    """n transactions on distinct rows and schemas, each its own group on the source."""
    return trace_from_dicts([
        {"seq": i, "writes": [f"d{i}.t/PRIMARY={i}"], "last_committed": i - 1,
         "sequence_number": i, "commit_id": i, "exec": exec_us} for i in range(1, n + 1)]).txns


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_each_transaction_starts_when_it_arrives(scheduler):
    """Arrivals every 20 µs, 10 µs of work each: the replica is idle between them, so each
    starts at its arrival and commits 10 µs later, whatever the scheduler."""
    txns = independent(6)
    runs, _ = collect(scheduler, txns, 2, IDEAL, arrival=lambda seq: 20.0 * (seq - 1))
    assert [r.dispatch for r in runs] == [0, 20, 40, 60, 80, 100]
    assert [r.start for r in runs] == [0, 20, 40, 60, 80, 100]
    assert [r.commit for r in runs] == [10, 30, 50, 70, 90, 110]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_arrivals_at_zero_are_the_closed_backlog(scheduler):
    txns = independent(8, exec_us=7.0)
    closed, blocked = collect(scheduler, txns, 3, IDEAL)
    opened, blocked_open = collect(scheduler, txns, 3, IDEAL, arrival=lambda seq: 0.0)
    assert [(r.worker, r.start, r.commit) for r in opened] == \
        [(r.worker, r.start, r.commit) for r in closed]
    assert blocked_open == blocked


def test_a_late_arrival_waits_but_earlier_ones_go_on():
    """Two workers, 10 µs each: seq 1 and 2 at 0 (seq 1, the first after the start, is a
    barrier: seq 2 follows its commit), seq 3 only at 100: it starts then, on an idle replica."""
    txns = independent(3)
    runs, _ = collect("commit_order+mysql", txns, 2, IDEAL,
                      arrival=lambda seq: 100.0 if seq == 3 else 0.0)
    assert [r.start for r in runs] == [0, 10, 100]
    assert [r.commit for r in runs] == [10, 20, 110]
