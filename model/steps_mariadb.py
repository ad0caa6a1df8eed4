"""The MariaDB parallel applier (conservative, optimistic) as an untimed step function over
MariaDBApplier.tla's state.

`enabled(model, state)` is the set of actions `(name, args)` the simulator's rules allow in a
state, `apply(model, state, action)` the state after one. The state is the spec's, variable for
variable (`tstate`, `gco`, `specwait`, `drv`, `marked`, `retry`, `lk`, `rd`, `db`, `early`), so
that checks/state_graph.py can compare the two in every state TLC reaches. The rules are the
simulator's own (applier_mariadb.py calls the same functions of rules.py): `next_thread`
(round-robin slots), `gco_decision` (do_event: new GCO or join, speculation WAIT),
`gco_released` (do_gco_wait), `waits_for_prior_commit` (speculation WAIT, retry after a kill),
`waits_for_mdl` (a DDL waits for every earlier commit), `lock_conflict` (wait for an earlier
holder, kill a later one), `marks_at_exec_end` (mark_start_commit), and `simcore.CommitStage`
(in-order group commit).

What is abstracted (the simulator is timed, the spec is not):
- Time and costs; every step the rules allow in a state is enabled, in any order.
- Lock granularity. The simulator takes all its row locks at once when it starts, waiting
  (dispatched, not started) while one is held, and kills a later holder right away. The spec,
  and so this step function, takes the free ones at Start and the rest by ExecEnd; waiting
  for a lock is inside Start..ExecEnd, and the kill of a later holder is its own step (Kill)
  once the earlier transaction executes. The same rule (`lock_conflict`) decides wait or kill
  and the same keys are locked (the transaction's writes). A DDL takes no row lock: its MDL
  (`waits_for_mdl`) is a guard of Start, as in the simulator; it reads and writes every key.
  Trace validation checks that the simulator's order is one of these interleavings.
- The driver's back-pressure (`max_queued`) is not modelled (unbounded thread queues, as in the
  spec); with the small traces compared here it never binds.
- Group commit: the group CommitStage forms commits one member at a time, in source order.
- `db`/`rd`/`early` (what each transaction read and wrote, and which pairs touched a row
  before the earlier one committed) are the spec's record of the data, kept here the spec's way.

The spec's driver record `drv` maps to the simulator's driver variables: `first` = the current
GCO's wait_count + 1 (initially 1: the domain's first GCO, wait_count 0, exists before the first
transaction), `multi`/`force` = its MULTI_BATCH/FORCE_SWITCH flags, `lastcid` = the last commit
id (0 = none).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NamedTuple

from .rules import (FORCE_SWITCH, MARIADB_LEVELS, MULTI_BATCH, gco_decision, gco_released,
                    lock_conflict, marks_at_exec_end, next_thread, waits_for_mdl,
                    waits_for_prior_commit)
from .simcore import CommitStage

ACTIONS = ("Dispatch", "Start", "ExecEnd", "Commit", "Kill", "Retry")
BUGS = ("gco_start_on_exec", "optimistic_no_kill")


@dataclass(frozen=True)
class Model:
    """One fixed relay log under the MariaDB applier (the constants of MariaDBApplier.tla)."""
    n: int
    workers: int
    keys: int                                   # key ids 1..keys
    mode: str                                   # conservative | optimistic
    ws: tuple[frozenset[int], ...]              # per transaction (index t - 1): its writes
    cid: tuple[int, ...]                        # commit id, 0 = none
    flags: tuple[frozenset[str], ...]           # GTID flags (ddl, waited, transactional, ...)
    bugs: frozenset[str] = frozenset()

    def ddl(self, t: int) -> bool:
        return "ddl" in self.flags[t]

    def slots(self) -> tuple[int, ...]:
        """Each transaction's thread slot (0-based), as the driver assigns them."""
        out, slot = [], 0
        for _ in range(self.n):
            out.append(slot)
            slot = next_thread(slot, self.workers)
        return tuple(out)


class State(NamedTuple):
    tstate: tuple[str, ...]
    gco: tuple[int, ...]                        # first transaction of t's GCO, 0: none yet
    specwait: tuple[bool, ...]
    drv: tuple[int, bool, bool, int]            # first, multi, force, lastcid
    marked: tuple[bool, ...]
    retry: tuple[bool, ...]
    lk: tuple[int, ...]                         # per key: holder, 0 = free
    rd: tuple[tuple[tuple[int, ...], ...], ...]
    db: tuple[tuple[int, ...], ...]
    early: frozenset[tuple[int, int]]


def initial(m: Model) -> State:
    n, k = m.n, m.keys
    return State(("queued",) * n, (0,) * n, (False,) * n, (1, False, False, 0), (False,) * n,
                 (False,) * n, (0,) * k, (((),) * k,) * n, ((),) * k, frozenset())


def _writes(m: Model, t: int) -> frozenset[int]:
    """The keys t writes (the spec's WS): a DDL every key."""
    return frozenset(range(1, m.keys + 1)) if m.ddl(t) else m.ws[t]


def _locks(m: Model, t: int) -> frozenset[int]:
    """The row locks t takes (the spec's LockSet): a DDL none, its MDL orders it instead."""
    return frozenset() if m.ddl(t) else m.ws[t]


def _committed_upto(s: State) -> int:
    p = 0
    while p < len(s.tstate) and s.tstate[p] == "committed":
        p += 1
    return p


def _started(s: State, t: int) -> bool:
    return s.tstate[t] in ("executing", "ready", "committed") or s.retry[t]


def enabled(m: Model, s: State, slots: tuple[int, ...] | None = None) -> set[tuple]:
    slots = m.slots() if slots is None else slots
    no_kill = "optimistic_no_kill" in m.bugs
    out: set[tuple] = set()
    upto = _committed_upto(s)
    nxt = next((t for t, st in enumerate(s.tstate) if st == "queued"), None)
    if nxt is not None:
        out.add(("Dispatch", (nxt + 1, slots[nxt] + 1)))
    count_committing = sum(s.marked)
    count_started = sum(_started(s, t) for t in range(m.n))
    for t, st in enumerate(s.tstate):
        seq = t + 1
        if st == "dispatched" and not s.retry[t]:
            thread_free = all(s.tstate[u] == "committed" for u in range(t) if slots[u] == slots[t])
            if (thread_free
                    and gco_released(s.gco[t] - 1, count_committing, count_started,
                                     "gco_start_on_exec" in m.bugs)
                    and not waits_for_prior_commit(s.specwait[t], False, upto, seq)
                    and not waits_for_mdl(m.ddl(t), upto, seq)):
                out.add(("Start", (seq,)))
        elif st == "dispatched":
            if not waits_for_prior_commit(s.specwait[t], True, upto, seq):
                out.add(("Retry", (seq,)))
        elif st == "executing":
            if all(s.lk[k - 1] in (0, seq) for k in _locks(m, t)):
                out.add(("ExecEnd", (seq,)))
            for k in _locks(m, t):
                holder = s.lk[k - 1]
                if holder not in (0, seq) and lock_conflict(holder, seq, no_kill) == "kill":
                    out.add(("Kill", (holder,)))
    heap: list = []
    stage = CommitStage(0.0, True, heap, itertools.count())
    stage.next_seq = upto
    stage.waiting = {t: t for t, st in enumerate(s.tstate) if st == "ready"}
    stage.group_start(0.0)
    if heap:
        out.add(("Commit", (heap[0][3][0] + 1,)))
    return out


def _set(tup: tuple, i: int, v) -> tuple:
    return tup[:i] + (v,) + tup[i + 1:]


def _take_free(m: Model, s: State, t: int, first: bool) -> State:
    """t locks and reads the free keys among its own (at Start/Retry: `first`, the rest unread;
    at ExecEnd: the earlier reads kept)."""
    seq = t + 1
    free = {k for k in _locks(m, t) if s.lk[k - 1] == 0}
    reads = _writes(m, t) if m.ddl(t) and first else free      # a DDL reads every row
    lk = tuple(seq if k + 1 in free else h for k, h in enumerate(s.lk))
    read = tuple(s.db[k] if k + 1 in reads else (() if first else s.rd[t][k])
                 for k in range(m.keys))
    early = s.early | {(i + 1, seq) for i in range(t)
                       if _writes(m, i) & free and s.tstate[i] != "committed"}
    return s._replace(lk=lk, rd=_set(s.rd, t, read), early=frozenset(early))


def apply(m: Model, s: State, action: tuple) -> State:
    name, args = action
    t = args[0] - 1
    seq = t + 1
    if name == "Dispatch":
        first, multi, force, lastcid = s.drv
        wait_count = first - 1
        gco_flags = (MULTI_BATCH if multi else 0) | (FORCE_SWITCH if force else 0)
        new_gco, f, wait = gco_decision(gco_flags, lastcid, m.cid[t], m.flags[t],
                                        MARIADB_LEVELS[m.mode])
        first = seq if new_gco else wait_count + 1
        return s._replace(tstate=_set(s.tstate, t, "dispatched"), gco=_set(s.gco, t, first),
                          specwait=_set(s.specwait, t, wait),
                          drv=(first, bool(f & MULTI_BATCH), bool(f & FORCE_SWITCH), m.cid[t]))
    if name in ("Start", "Retry"):
        s = _take_free(m, s, t, True)
        return s._replace(tstate=_set(s.tstate, t, "executing"), retry=_set(s.retry, t, False))
    if name == "ExecEnd":
        s = _take_free(m, s, t, False)
        return s._replace(tstate=_set(s.tstate, t, "ready"),
                          marked=_set(s.marked, t, marks_at_exec_end(m.ddl(t))))
    if name == "Commit":
        db = tuple(s.rd[t][k] + (seq,) if k + 1 in _writes(m, t) else s.db[k]
                   for k in range(m.keys))
        return s._replace(tstate=_set(s.tstate, t, "committed"), db=db,
                          lk=tuple(0 if h == seq else h for h in s.lk),
                          rd=_set(s.rd, t, ((),) * m.keys), marked=_set(s.marked, t, True))
    if name == "Kill":
        return s._replace(tstate=_set(s.tstate, t, "dispatched"), retry=_set(s.retry, t, True),
                          marked=_set(s.marked, t, False),
                          lk=tuple(0 if h == seq else h for h in s.lk),
                          rd=_set(s.rd, t, ((),) * m.keys),
                          early=frozenset(p for p in s.early if p[1] != seq))
    raise ValueError(f"unknown action {name}")


def from_spec(m: Model, v: dict) -> State:
    """The state TLC printed (parsed by checks/tla_values.py) as a State."""
    def tup(x):
        return tuple(tup(y) for y in x) if isinstance(x, list) else x
    d = v["drv"]
    return State(tup(v["tstate"]), tup(v["gco"]), tup(v["specwait"]),
                 (d["first"], d["multi"], d["force"], d["lastcid"]), tup(v["marked"]),
                 tup(v["retry"]), tup(v["lk"]), tup(v["rd"]), tup(v["db"]),
                 frozenset(tuple(p) for p in v["early"]["$set"]))


__all__ = ["Model", "State", "ACTIONS", "BUGS", "initial", "enabled", "apply", "from_spec"]
