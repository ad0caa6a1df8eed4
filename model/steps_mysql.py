"""The MySQL LOGICAL_CLOCK applier as an untimed step function over MySQLApplier.tla's state.

`enabled(model, state)` is the set of actions `(name, args)` the simulator's rules allow in a
state, `apply(model, state, action)` the state after one. The state is the spec's, variable for
variable (`tstate`, `worker`, `db`, `rd`), so that checks/state_graph.py can compare the two in
every state TLC reaches. The rules are the simulator's own (applier_mysql.py calls the same
functions): `rules.coordinator_wait` (GAQ window, barrier drain, `last_committed <= lwm`, an
idle worker), `trackers.ClockOrder` (which transactions are barriers), `rules.LowWaterMark`
(the lwm and its bugs), `rules.lowest_idle_worker`, `rules.replica_lock_conflict` (commit-order
deadlocks: wait for an earlier lock holder, roll a later one back), and `simcore.CommitStage`
(which ready transactions may commit, in order or not).

What is abstracted (the simulator is timed, the spec is not):
- Time and costs. The simulator dispatches as soon as the rules allow and starts the
  transaction after the dispatch cost; here Dispatch and Start are separate steps and every
  step the rules allow in a state is enabled, in any order.
- Group commit: CommitStage makes a group of ready transactions durable together; here its
  members commit one at a time. With commit order preserved the group is consecutive from the
  first uncommitted transaction and its members commit in source order, so only the first is
  enabled; without it any member may commit first.
- The lwm is not a spec variable: it is replayed from the state with LowWaterMark's own updates
  in the order the simulator makes them (a barrier is dispatched only once every earlier
  transaction is released, so transaction order is that order).
- `db`/`rd` (what each transaction read and wrote) are the spec's record of the data, kept here
  the spec's way: the simulator has no data.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import NamedTuple

from .rules import LowWaterMark, coordinator_wait, lowest_idle_worker, replica_lock_conflict
from .simcore import CommitStage
from .trackers import ClockOrder

ACTIONS = ("Dispatch", "Start", "ExecEnd", "Commit", "DeadlockVictim")
BUGS = ("lwm_off_by_one", "lwm_not_prefix", "rotation_ignored", "commit_order_unenforced",
        "victim_wakeup_lost", "ticket_overflow")
WAITING = ("ready", "asleep")        # asleep: its commit turn never granted (ticket_overflow)
ACTIVE = ("executing",) + WAITING


@dataclass(frozen=True)
class Model:
    """One fixed trace under the mysql applier (the constants of MySQLApplier.tla)."""
    n: int
    workers: int
    keys: int                         # key ids 1..keys
    lc: tuple[int, ...]               # per transaction (index t - 1)
    sn: tuple[int, ...]
    file: tuple[int, ...]
    ws: tuple[frozenset[int], ...]
    checkpoint_group: int = 512
    preserve_commit_order: bool = True
    bugs: frozenset[str] = frozenset()
    xl: tuple[frozenset[int], ...] = ()     # replica_locks per transaction (() : none)
    ticket_wrap: int = 0                    # TicketWrap (0: tickets never wrap)

    def __post_init__(self):
        if not self.xl:
            object.__setattr__(self, "xl", (frozenset(),) * self.n)

    @property
    def ordered(self) -> bool:
        return self.preserve_commit_order and "commit_order_unenforced" not in self.bugs

    def barriers(self) -> tuple[bool, ...]:
        clock = ClockOrder(rotation_ignored="rotation_ignored" in self.bugs)
        out = []
        for dep in zip(self.lc, self.sn, self.file):
            p = clock.push(dep)
            out.append(p.barrier_from == p.index)
        return tuple(out)


class State(NamedTuple):
    tstate: tuple[str, ...]
    worker: tuple[int, ...]                          # 0: none, else 1..workers
    db: tuple[tuple[int, ...], ...]                  # per key: its writers, in order
    rd: tuple[tuple[tuple[int, ...], ...], ...]      # per txn, per key: the value read


def initial(m: Model) -> State:
    no_read = ((),) * m.keys
    return State(("queued",) * m.n, (0,) * m.n, ((),) * m.keys, (no_read,) * m.n)


def _prefix(s: State) -> int:
    p = 0
    while p < len(s.tstate) and s.tstate[p] == "committed":
        p += 1
    return p


def _lwm(m: Model, s: State, barriers: tuple[bool, ...]) -> int:
    """The simulator's lwm in state `s`: LowWaterMark replayed over what happened."""
    lwm = LowWaterMark(not_prefix="lwm_not_prefix" in m.bugs,
                       rotation_ignored="rotation_ignored" in m.bugs)
    p = _prefix(s)
    for t, st in enumerate(s.tstate):
        if st == "queued":
            break
        if barriers[t]:
            lwm.barrier_dispatched()
        if st == "committed":
            lwm.committed(m.sn[t])
        if t < p:
            lwm.released(m.sn[t])
    return lwm.value


def _lock_step(m: Model, s: State, t: int) -> frozenset[int] | None:
    """The victims (0-based) of t's next step (Start takes its writes against replica locks,
    ExecEnd its replica locks against every lock), or None while it must wait."""
    held_x = [m.xl[u] if st in WAITING else frozenset() for u, st in enumerate(s.tstate)]
    if s.tstate[t] == "dispatched":
        need, against = m.ws[t], held_x
    else:
        need = m.xl[t]
        against = [x | m.ws[u] if st in ACTIVE else x
                   for u, (st, x) in enumerate(zip(s.tstate, held_x))]
    victims = set()
    for u, held in enumerate(against):
        if u != t and need & held:
            if replica_lock_conflict(u, t, m.ordered, s.tstate[u] in WAITING,
                                     wakeup_lost="victim_wakeup_lost" in m.bugs) == "wait":
                return None
            victims.add(u)
    return frozenset(victims)


def _waits(m: Model, s: State) -> dict[int, set[int]]:
    """t -> the transactions its next step waits for (a lock, not a victim)."""
    out = {}
    for t, st in enumerate(s.tstate):
        if st in ("dispatched", "executing"):
            held_x = [m.xl[u] if x in WAITING else frozenset() for u, x in enumerate(s.tstate)]
            need = m.ws[t] if st == "dispatched" else m.xl[t]
            out[t] = {u for u, x in enumerate(s.tstate) if u != t and need & (
                held_x[u] if st == "dispatched"
                else held_x[u] | (m.ws[u] if x in ACTIVE else frozenset()))
                and replica_lock_conflict(u, t, m.ordered, x in WAITING,
                                          wakeup_lost="victim_wakeup_lost" in m.bugs) == "wait"}
    return out


def _latest_in_cycle(m: Model, s: State) -> set[int]:
    """InnoDB's deadlock victims: v active and the latest member of a cycle of lock waits."""
    waits = _waits(m, s)
    out = set()
    for v, st in enumerate(s.tstate):
        if st not in ACTIVE:
            continue
        reach = {x for x in waits.get(v, ()) if x <= v}
        frontier = set(reach)
        while frontier:
            frontier = {x for u in frontier for x in waits.get(u, ()) if x <= v} - reach
            reach |= frontier
        if v in reach:
            out.add(v)
    return out


def _commit_group(m: Model, s: State) -> list[int]:
    """The transactions (0-based) CommitStage would make durable now."""
    ordered = m.ordered
    heap: list = []
    stage = CommitStage(0.0, ordered, heap, itertools.count())
    stage.next_seq = _prefix(s)
    stage.waiting = {t: t for t, st in enumerate(s.tstate) if st == "ready"}
    stage.group_start(0.0)
    if not heap:
        return []
    batch = heap[0][3]
    return batch[:1] if ordered else batch


def enabled(m: Model, s: State, barriers: tuple[bool, ...] | None = None) -> set[tuple]:
    barriers = m.barriers() if barriers is None else barriers
    out: set[tuple] = set()
    nxt = next((t for t, st in enumerate(s.tstate) if st == "queued"), None)
    if nxt is not None:
        busy = set(s.worker)
        idle = [w for w in range(m.workers) if w + 1 not in busy]
        heapq.heapify(idle)
        cause = coordinator_wait(nxt - _prefix(s), m.checkpoint_group, barriers[nxt],
                                 m.lc[nxt], _lwm(m, s, barriers), bool(idle),
                                 off_by_one="lwm_off_by_one" in m.bugs)
        if cause is None:
            out.add(("Dispatch", (nxt + 1, lowest_idle_worker(idle) + 1)))
    for t, st in enumerate(s.tstate):
        if st in ("dispatched", "executing") and _lock_step(m, s, t) is not None:
            out.add(("Start" if st == "dispatched" else "ExecEnd", (t + 1,)))
    for t in _commit_group(m, s):
        out.add(("Commit", (t + 1,)))
    for v in _latest_in_cycle(m, s):
        out.add(("DeadlockVictim", (v + 1,)))
    return out


def _set(tup: tuple, i: int, v) -> tuple:
    return tup[:i] + (v,) + tup[i + 1:]


def apply(m: Model, s: State, action: tuple) -> State:
    name, args = action
    t = args[0] - 1
    if name in ("Start", "ExecEnd"):
        victims = _lock_step(m, s, t)
        if victims:          # rolled back: to "dispatched", on their worker, nothing read
            s = s._replace(tstate=tuple("dispatched" if u in victims else st
                                        for u, st in enumerate(s.tstate)),
                           rd=tuple(((),) * m.keys if u in victims else r
                                    for u, r in enumerate(s.rd)))
    if name == "DeadlockVictim":
        return s._replace(tstate=_set(s.tstate, t, "dispatched"), rd=_set(s.rd, t, ((),) * m.keys))
    if name == "Dispatch":
        return s._replace(tstate=_set(s.tstate, t, "dispatched"), worker=_set(s.worker, t, args[1]))
    if name == "Start":
        read = tuple(s.db[k] if k + 1 in m.ws[t] else () for k in range(m.keys))
        return s._replace(tstate=_set(s.tstate, t, "executing"), rd=_set(s.rd, t, read))
    if name == "ExecEnd":
        return s._replace(tstate=_set(s.tstate, t, "ready"))
    if name == "Commit":
        db = tuple(s.rd[t][k] + (t + 1,) if k + 1 in m.ws[t] else s.db[k]
                   for k in range(m.keys))
        tstate = _set(s.tstate, t, "committed")
        nxt = t + 1          # 0-based: transaction t + 2, whose turn finish_one grants
        if ("ticket_overflow" in m.bugs and m.ordered and m.ticket_wrap and nxt < m.n
                and s.tstate[nxt] == "ready" and (nxt + 1) % m.ticket_wrap == 0):
            tstate = _set(tstate, nxt, "asleep")
        return State(tstate, _set(s.worker, t, 0), db, _set(s.rd, t, ((),) * m.keys))
    raise ValueError(f"unknown action {name}")


def from_spec(m: Model, v: dict) -> State:
    """The state TLC printed (parsed by checks/tla_values.py) as a State."""
    def tup(x):
        return tuple(tup(y) for y in x) if isinstance(x, list) else x
    return State(tup(v["tstate"]), tup(v["worker"]), tup(v["db"]) if m.keys else (),
                 tup(v["rd"]) if m.keys else ((),) * m.n)


__all__ = ["Model", "State", "ACTIONS", "BUGS", "initial", "enabled", "apply", "from_spec"]
