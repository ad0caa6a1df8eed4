"""A counterexample for a catalogue bug from the Python model, for bugs without a TLC one:
search small generated traces (the simulated source of `commitsched.generate`, tiny tables so
transactions conflict) for one on which the bug, injected, violates the property the catalogue
names. Deterministic: same seeds, same order, same answer."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..bugs import CATALOGUE
from ..generate import generate
from ..profiles import get_profile
from ..properties import check
from ..schedulers import SchedulerError, run_scheduler
from ..simcore import Deadlock, SimulationError
from ..trace import Txn

# Applier options a bug needs to show (with commits in order, lwm = highest committed IS the
# committed prefix).
APPLIER_OPTIONS = {"lwm_not_prefix": {"preserve_commit_order": False},
                   # the commit-order ticket wraps after 2^31 transactions: every 2nd here
                   "ticket_overflow": {"ticket_wrap": 2}}

# bug -> (scheduler, tracker options, generator options)
SETUP = {
    "lwm_off_by_one": ("commit_order+mysql", {}, {}),
    "lwm_not_prefix": ("commit_order+mysql", {}, {}),
    "rotation_ignored": ("commit_order+mysql", {}, {"rotate_every": 3}),
    "commit_order_unenforced": ("commit_order+mysql", {}, {}),
    "history_evict_no_floor": ("writeset+mysql", {"history_size": 2}, {}),
    "ddl_not_isolated": ("writeset+mysql", {}, {"ddl_every": 3}),
    "unique_keys_ignored": ("writeset+mysql", {}, {}),
    "before_image_ignored": ("writeset+mysql", {}, {}),
    "session_order_dropped": ("writeset_session+mysql", {}, {}),
    "group_not_split_on_wait": ("slave_group_commit+mariadb_conservative",
                                {"commit_wait_count": 4}, {}),
    "gco_start_on_exec": ("commit_id+mariadb_conservative", {}, {}),
    "optimistic_no_kill": ("commit_id+mariadb_optimistic", {}, {}),
    "admin_barrier_missing": ("writeset+mysql", {}, {"admin": True}),
    "victim_wakeup_lost": ("commit_order+mysql", {}, {"replica_locks": True}),
    "ticket_overflow": ("commit_order+mysql", {}, {}),
    # retry_ignores_prior_error: not here, the simulator has no error path (bugs.NOT_IN_SIMULATOR)
}


@dataclass
class BugDemo:
    bug: str
    scheduler: str
    prop: str
    workers: int
    txns: list
    runs: list
    violations: list[str]
    deadlock: str | None
    tracker_options: dict
    generator: dict

    @property
    def seqs(self) -> list[int]:
        text = " ".join(self.violations[:1]) + (self.deadlock or "")
        found = re.findall(r"seq (\d+)", text)
        for group in re.findall(r"seq \[([\d, ]+)\]", text):
            found += group.split(",")
        return sorted({int(s) for s in found})


def _candidates(gen: dict):
    gen = dict(gen)
    admin = gen.pop("admin", False)
    replica_locks = gen.pop("replica_locks", False)
    for seed in range(1, 61):
        for n, workload, clients, size in ((5, "mixed", 3, 3), (8, "mixed", 3, 3),
                                           (12, "mixed", 3, 3), (10, "oltp_update_index", 4, 4),
                                           (16, "oltp_read_write", 6, 6)):
            params = dict(workload=workload, clients=clients, table_size=size, seed=seed,
                          fk=False, source="mysql", **gen)
            txns = list(generate(n, **params))
            if admin:  # an admin statement (e.g. ANALYZE) with no rows in the middle
                k = len(txns) // 2
                t = txns[k]
                txns[k] = Txn(t.seq, [], gtid=t.gtid, file=t.file, last_committed=t.last_committed,
                              sequence_number=t.sequence_number, session=t.session, admin=True,
                              exec=t.exec, commit=t.commit)
            if replica_locks:  # each locks, on the replica only, a row its successor writes
                for t, nxt in zip(txns, txns[1:]):
                    extra = [k for k in nxt.writes if k not in t.writes][:1]
                    if extra:
                        t.replica_locks = tuple(extra)
            yield {**params, "n": n, "admin": admin, "replica_locks": replica_locks}, txns


def find(bug: str, budget: int = 1800) -> BugDemo | None:
    """None also for an entry the simulator cannot inject (bugs.NOT_IN_SIMULATOR: not in
    SETUP); its picture is TLC's counterexample."""
    if bug not in SETUP:
        return None
    scheduler, topts, gen = SETUP[bug]
    prop = CATALOGUE[bug][2][0]
    profile = get_profile("ideal")
    tried = 0
    for params, txns in _candidates(gen):
        for w in (2, 3, 4):
            tried += 1
            if tried > budget:
                return None
            runs: list = []
            try:
                run_scheduler(scheduler, txns, w, profile, runs.append, bugs=frozenset({bug}),
                              tracker_options=topts, applier_options=APPLIER_OPTIONS.get(bug))
            except Deadlock as e:
                if prop == "NoDeadlock":
                    return BugDemo(bug, scheduler, prop, w, txns, sorted(runs, key=lambda r: r.seq),
                                   [], str(e), topts, params)
                continue
            except (SchedulerError, SimulationError):
                continue
            if prop == "NoDeadlock":
                continue
            runs.sort(key=lambda r: r.seq)
            bad = check(prop, runs, len(txns))
            if bad:
                return BugDemo(bug, scheduler, prop, w, txns, runs, bad, None, topts, params)
    return None
