"""How a MariaDB parallel replica stops on an error, with deadlock kills and retries: the state
machine of specs/MCMariaDBStop.tla, variable for variable and action for action, explored
exhaustively (catalogue entry `retry_ignores_prior_error`, MDEV-12746).

The scheduler simulator (applier_mariadb.py) applies transactions that always succeed, so it
has no error path and cannot carry this bug; this module is the Python side of the entry. A
state is the spec's: the inputs `ws` (each transaction's row locks) and `err` (its execution
ends in a non-temporary error), chosen at Init, and `tstate`, `retry`, `reg`, `lk`, `stop`
(see the spec's header for what they stand for in sql/rpl_parallel.cc). `explore` visits every
reachable state breadth first from every initial one, as TLC does, so its count of distinct
states equals TLC's on the same constants (tests/test_applier_stop.py compares them).

    python -m commitsched.stop_mariadb --transactions 3 --keys 2 [--inject-bug retry_ignores_prior_error]
"""
from __future__ import annotations

import argparse
import itertools
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator, NamedTuple

BUG = "retry_ignores_prior_error"
STATES = ("dispatched", "executing", "ready", "committed", "failing", "failed")
ACTIONS = ("Start", "ExecEnd", "Commit", "Finish", "Kill", "Retry")
# invariants checked by `explore` (KilledAfterFailureUnreachable is negated reachability)
PROPERTIES = ("NoCommitAfterFailure", "CommitOrderPreserved", "NoDeadlock",
              "KilledAfterFailureUnreachable")


class State(NamedTuple):
    ws: tuple[frozenset, ...]     # transaction t (1-based) at index t - 1
    err: tuple[bool, ...]
    tstate: tuple[str, ...]
    retry: tuple[bool, ...]
    reg: tuple[bool, ...]
    lk: tuple[int, ...]           # key k (1-based) at index k - 1; 0 = free
    stop: int                     # stop_on_error_sub_id, 0 = none

    def describe(self) -> str:
        ws = ", ".join("{" + ",".join(map(str, sorted(s))) + "}" for s in self.ws)
        return (f"tstate={list(self.tstate)} ws=[{ws}] err={list(self.err)} "
                f"retry={list(self.retry)} reg={list(self.reg)} lk={list(self.lk)} "
                f"stop={self.stop}")


def _set(seq: tuple, t: int, value) -> tuple:
    return seq[:t - 1] + (value,) + seq[t:]


def finished(s: State, t: int) -> bool:
    return s.tstate[t - 1] in ("committed", "failed")


def prev_finished(s: State, t: int) -> bool:
    return t == 1 or finished(s, t - 1)


def prev_failed(s: State, t: int) -> bool:
    return t > 1 and s.tstate[t - 2] == "failed"


def stopped(s: State, t: int) -> bool:
    """stop_on_error_sub_id at or before t's predecessor."""
    return s.stop != 0 and s.stop < t


def failed(s: State, t: int) -> bool:
    return s.tstate[t - 1] in ("failing", "failed")


def _release(lk: tuple, t: int) -> tuple:
    return tuple(0 if h == t else h for h in lk)


def initial_states(n: int, keys: int) -> Iterator[State]:
    subsets = [frozenset(c) for r in range(keys + 1)
               for c in itertools.combinations(range(1, keys + 1), r)]
    for ws in itertools.product(subsets, repeat=n):
        for err in itertools.product((False, True), repeat=n):
            yield State(ws, err, ("dispatched",) * n, (False,) * n, (False,) * n,
                        (0,) * keys, 0)


def _begin_exec(s: State, t: int, **changes) -> State:
    lk = tuple(t if k in s.ws[t - 1] and h == 0 else h for k, h in enumerate(s.lk, 1))
    return s._replace(tstate=_set(s.tstate, t, "executing"),
                      reg=_set(s.reg, t, not prev_finished(s, t)), lk=lk, **changes)


def step(s: State, action: str, t: int, bugs: frozenset[str] = frozenset()) -> State | None:
    """The state after `action(t)`, or None when it is not enabled (MCMariaDBStop.tla)."""
    st = s.tstate[t - 1]
    if action == "Start":
        if st != "dispatched" or s.retry[t - 1]:
            return None
        if stopped(s, t):    # skip the group: worker_error = 1
            return s._replace(tstate=_set(s.tstate, t, "failing"))
        return _begin_exec(s, t)
    if action == "ExecEnd":
        if st != "executing" or any(s.lk[k - 1] not in (0, t) for k in s.ws[t - 1]):
            return None
        if s.err[t - 1]:     # signal_error_to_sql_driver_thread: roll back
            return s._replace(tstate=_set(s.tstate, t, "failing"), lk=_release(s.lk, t))
        lk = tuple(t if k in s.ws[t - 1] else h for k, h in enumerate(s.lk, 1))
        return s._replace(tstate=_set(s.tstate, t, "ready"), lk=lk)
    if action == "Commit":
        if st != "ready" or not prev_finished(s, t):
            return None
        to = "failed" if s.reg[t - 1] and prev_failed(s, t) else "committed"
        return s._replace(tstate=_set(s.tstate, t, to), reg=_set(s.reg, t, False),
                          lk=_release(s.lk, t))
    if action == "Finish":
        if st != "failing" or not prev_finished(s, t):
            return None
        return s._replace(tstate=_set(s.tstate, t, "failed"), reg=_set(s.reg, t, False),
                          stop=s.stop or t)
    if action == "Kill":
        if st not in ("executing", "ready"):
            return None
        if not any(s.tstate[u - 1] == "executing" and any(s.lk[k - 1] == t for k in s.ws[u - 1])
                   for u in range(1, t)):
            return None
        return s._replace(tstate=_set(s.tstate, t, "dispatched"), retry=_set(s.retry, t, True),
                          reg=_set(s.reg, t, False), lk=_release(s.lk, t))
    if action == "Retry":
        if st != "dispatched" or not s.retry[t - 1] or not prev_finished(s, t):
            return None
        s2 = s._replace(retry=_set(s.retry, t, False))
        if stopped(s, t) and BUG not in bugs:     # ER_PRIOR_COMMIT_FAILED
            return s2._replace(tstate=_set(s.tstate, t, "failed"))
        return _begin_exec(s2, t)
    raise ValueError(f"unknown action {action!r}; the actions: {', '.join(ACTIONS)}")


def successors(s: State, bugs: frozenset[str] = frozenset()) -> Iterator[tuple[str, int, State]]:
    for t in range(1, len(s.tstate) + 1):
        for a in ACTIONS:
            nxt = step(s, a, t, bugs)
            if nxt is not None:
                yield a, t, nxt


# ------------------------------------------------------------------ properties

def no_commit_after_failure(s: State) -> bool:
    n = len(s.tstate)
    return not any(failed(s, i) and s.tstate[j - 1] == "committed"
                   for i in range(1, n + 1) for j in range(i + 1, n + 1))


def commit_order_preserved(s: State) -> bool:
    n = len(s.tstate)
    return all(s.tstate[u - 1] == "committed" for t in range(1, n + 1)
               if s.tstate[t - 1] == "committed" for u in range(1, t))


def killed_after_failure_unreachable(s: State) -> bool:
    n = len(s.tstate)
    return not any(s.tstate[i - 1] == "failed" and s.retry[j - 1]
                   for i in range(1, n + 1) for j in range(i + 1, n + 1))


STATE_PROPERTIES: dict[str, Callable[[State], bool]] = {
    "NoCommitAfterFailure": no_commit_after_failure,
    "CommitOrderPreserved": commit_order_preserved,
    "KilledAfterFailureUnreachable": killed_after_failure_unreachable,
}


@dataclass
class Exploration:
    n: int
    keys: int
    bugs: frozenset
    distinct_states: int = 0
    depth: int = 0
    # property -> the shortest behaviour to its first violating state: [(action, t, state)],
    # the first entry's action None (an initial state)
    violations: dict[str, list[tuple[str | None, int, State]]] = field(default_factory=dict)

    def violated(self) -> list[str]:
        return sorted(self.violations)


def explore(n: int = 3, keys: int = 2, bugs=frozenset(), properties=PROPERTIES) -> Exploration:
    """Every state reachable from every initial state (breadth first, as TLC): how many, the
    depth, and for each of `properties` violated a shortest behaviour reaching a violation."""
    bugs = frozenset(bugs)
    unknown = bugs - {BUG}
    if unknown:
        raise ValueError(f"unknown bug {', '.join(sorted(unknown))}; this model has {BUG}")
    out = Exploration(n, keys, bugs)
    parent: dict[State, tuple[State | None, str | None, int]] = {}
    queue: deque[tuple[State, int]] = deque()
    for s in initial_states(n, keys):
        if s not in parent:
            parent[s] = (None, None, 0)
            queue.append((s, 1))

    def path(s: State) -> list:
        steps = []
        while s is not None:
            prev, a, t = parent[s]
            steps.append((a, t, s))
            s = prev
        return steps[::-1]

    while queue:
        s, d = queue.popleft()
        out.depth = max(out.depth, d)
        for name in properties:
            if name in out.violations:
                continue
            check = STATE_PROPERTIES.get(name)
            if check is not None and not check(s):
                out.violations[name] = path(s)
        moved = False
        for a, t, nxt in successors(s, bugs):
            moved = True
            if nxt not in parent:
                parent[nxt] = (s, a, t)
                queue.append((nxt, d + 1))
        if ("NoDeadlock" in properties and "NoDeadlock" not in out.violations and not moved
                and not all(finished(s, t) for t in range(1, n + 1))):
            out.violations["NoDeadlock"] = path(s)
    out.distinct_states = len(parent)
    return out


def reachable(n: int = 3, keys: int = 2, bugs=frozenset()) -> set[State]:
    """The set of reachable states (small models only)."""
    seen: set[State] = set(initial_states(n, keys))
    queue = deque(seen)
    while queue:
        s = queue.popleft()
        for _, _, nxt in successors(s, frozenset(bugs)):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def find_violation(bug: str = BUG, props=("NoCommitAfterFailure",), max_n: int = 3,
                   keys: int = 2):
    """The smallest model (transactions 2..max_n) on which the flagged machine violates one of
    `props` while the correct one violates none of them: (n, property, behaviour) or None."""
    for n in range(2, max_n + 1):
        correct = explore(n, keys, frozenset(), props)
        if correct.violations:
            continue
        flagged = explore(n, keys, frozenset({bug}), props)
        for p in props:
            if p in flagged.violations:
                return n, p, flagged.violations[p]
    return None


def format_behaviour(steps) -> str:
    return "\n".join(f"{i}: {'Init' if a is None else f'{a}({t})'}  {s.describe()}"
                     for i, (a, t, s) in enumerate(steps, 1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m commitsched.stop_mariadb",
                                 description="Explore specs/MCMariaDBStop.tla's state machine.")
    ap.add_argument("--transactions", type=int, default=3)
    ap.add_argument("--keys", type=int, default=2)
    ap.add_argument("--inject-bug", action="append", default=[], metavar="NAME")
    args = ap.parse_args(argv)
    if not (1 <= args.transactions <= 4 and 0 <= args.keys <= 3):
        ap.error("--transactions must be 1..4 and --keys 0..3 (the state space grows fast)")
    try:
        res = explore(args.transactions, args.keys, frozenset(args.inject_bug))
    except ValueError as e:
        ap.error(str(e))
    print(f"{res.distinct_states} distinct states, depth {res.depth}")
    bad = [p for p in res.violated() if p != "KilledAfterFailureUnreachable"]
    for p in res.violated():
        print(f"\n{p} violated:\n{format_behaviour(res.violations[p])}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
