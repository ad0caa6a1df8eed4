"""specs/Certification.tla as an untimed step function over its own state, built from the
certifiers' rule functions (model/certification.py: `galera_conflicts`, `gr_conflicts`, the
same ones the timed simulator and the scoring tracker call), so that a change to a rule changes
both.

`enabled(model, state)` is the set of actions `(name, args)` the rules allow, `apply` the state
after one; the state is the spec's, variable for variable, so that checks/state_graph_cert.py
compares the two in every state TLC reaches, and `explore` walks every reachable state (the
mutants' properties column for the catalogue's certification bugs). Members are 1..M, keys
1..K, write-sets 1..N.

What the spec (and so this) abstracts: the group communication protocol (the total order is
write-set order), time and costs, the applier's threads beyond their number, InnoDB's locks
beyond "a remote write-set waits for a local one of its member that shares a key" (Group
Replication), and a DDL's empty write-set (every write-set here has keys).
"""
from __future__ import annotations

import itertools
from .explore import breadth_first
from typing import NamedTuple

from .certification import Snapshot, galera_conflicts, gr_conflicts

ACTIONS = ("Send", "Certify", "Start", "Commit", "Purge")
BUGS = ("cert_purge_past_safe", "failed_ws_commits_early")
PROPERTIES = ("Agreement", "NoLostUpdate", "SameCommitOrder", "CommitOrderPreserved",
              "NoConflictingOverlap", "NoDeadlock")


class Model(NamedTuple):
    members: int
    n: int
    keys: int
    workers: int
    flavor: str                   # "galera" | "gr"
    bugs: frozenset = frozenset()


class State(NamedTuple):
    origin: tuple                 # per write-set (index w - 1): its member
    ws: tuple                     # per write-set: frozenset of key ids
    sent: int
    snap: tuple                   # per write-set: frozenset of write-set ids
    cert: tuple                   # per member (index m - 1)
    dec: tuple                    # per member: per write-set "none" | "ok" | "fail"
    dep: tuple                    # per member: per write-set
    idx: tuple                    # per member: per key the last writer (0: none)
    pb: tuple                     # per member: purge bound
    floor: tuple                  # per member: GR's global last_committed (as an index)
    st: tuple                     # per member: per write-set "wait" | "run" | "done"


def initial(m: Model, origin: tuple, ws: tuple) -> State:
    M, N = m.members, m.n
    return State(tuple(origin), tuple(frozenset(x) for x in ws), 0,
                 tuple(frozenset() for _ in range(N)), (0,) * M,
                 tuple(("none",) * N for _ in range(M)), tuple((0,) * N for _ in range(M)),
                 tuple((0,) * m.keys for _ in range(M)), (0,) * M, (0,) * M,
                 tuple(("wait",) * N for _ in range(M)))


def initial_states(m: Model):
    """Every shape: each write-set's origin and non-empty key set (the spec's Init)."""
    key_sets = [frozenset(c) for r in range(1, m.keys + 1)
                for c in itertools.combinations(range(1, m.keys + 1), r)]
    for origin in itertools.product(range(1, m.members + 1), repeat=m.n):
        for ws in itertools.product(key_sets, repeat=m.n):
            yield initial(m, origin, ws)


# ---------------------------------------------------------------- derived

def _done(s: State, mem: int, w: int) -> bool:
    return s.st[mem - 1][w - 1] == "done"


def last_left(m: Model, s: State, mem: int) -> int:
    x = 0
    while x < m.n and _done(s, mem, x + 1):
        x += 1
    return x


def committed(m: Model, s: State, mem: int) -> frozenset:
    d, st = s.dec[mem - 1], s.st[mem - 1]
    return frozenset(w for w in range(1, m.n + 1) if d[w - 1] == "ok" and st[w - 1] == "done")


def conflict(s: State, v: int, w: int) -> bool:
    return not s.ws[v - 1].isdisjoint(s.ws[w - 1])


def remote(s: State, mem: int, w: int) -> bool:
    return s.origin[w - 1] != mem


def _snapshot(ids: frozenset) -> Snapshot:
    return Snapshot.normal(0, ids)


def fails(m: Model, s: State, mem: int, w: int) -> bool:
    """Certification: a key's last writer that w's snapshot does not cover (the rules of
    model/certification.py)."""
    snap = s.snap[w - 1]
    for k in s.ws[w - 1]:
        v = s.idx[mem - 1][k - 1]
        if not v:
            continue
        if m.flavor == "galera":
            last_seen = max(snap) if snap else 0
            if galera_conflicts(v, s.origin[v - 1], False, last_seen, s.origin[w - 1]):
                return True
        elif gr_conflicts(_snapshot(s.snap[v - 1] | {v}), _snapshot(snap)):
            return True
    return False


def depends(m: Model, s: State, mem: int, w: int) -> int:
    idx = s.idx[mem - 1]
    writers = [idx[k - 1] for k in s.ws[w - 1] if idx[k - 1]]
    if m.flavor == "galera":
        return max(writers + [s.pb[mem - 1]])
    return max([v for v in writers if remote(s, mem, v)] + [s.floor[mem - 1]])


def busy_threads(m: Model, s: State, mem: int) -> int:
    return sum(1 for v in range(1, s.cert[mem - 1] + 1)
               if remote(s, mem, v) and not _done(s, mem, v))


def safe_bound(m: Model, s: State, mem: int) -> int:
    best = 0
    c = s.cert[mem - 1]
    for b in range(0, c + 1):
        everywhere = all(s.cert[x] >= v and s.st[x][v - 1] == "done"
                         for v in range(1, b + 1) for x in range(m.members))
        failed = {v for v in range(1, b + 1) if s.dec[mem - 1][v - 1] == "fail"}
        covered = all(set(range(1, b + 1)) <= (s.snap[u - 1] | failed)
                      for u in range(c + 1, s.sent + 1))
        if everywhere and covered:
            best = b
    return best


def purge_bound(m: Model, s: State, mem: int) -> int:
    if "cert_purge_past_safe" in m.bugs:
        return min(last_left(m, s, mem), s.cert[mem - 1])
    return safe_bound(m, s, mem)


# ---------------------------------------------------------------- actions

def enabled(m: Model, s: State) -> set:
    acts = set()
    w = s.sent + 1
    if w <= m.n:
        o = s.origin[w - 1]
        if all(s.cert[o - 1] >= v and _done(s, o, v) for v in range(1, w)
               if s.origin[v - 1] == o and conflict(s, v, w)):
            acts.add(("Send", (w,)))
    for mem in range(1, m.members + 1):
        i = mem - 1
        c = s.cert[i]
        if c + 1 <= s.sent and not (m.flavor == "galera" and remote(s, mem, c + 1)
                                    and busy_threads(m, s, mem) >= m.workers):
            acts.add(("Certify", (mem,)))
        ll = last_left(m, s, mem)
        running = sum(1 for x in s.st[i] if x == "run")
        for w in range(1, c + 1):
            d, st = s.dec[i][w - 1], s.st[i][w - 1]
            if st == "done":
                continue
            if d == "ok" and remote(s, mem, w) and st == "wait" and _may_start(m, s, mem, w, ll,
                                                                               running):
                acts.add(("Start", (mem, w)))
            if _may_commit(m, s, mem, w, ll):
                acts.add(("Commit", (mem, w)))
        bound = purge_bound(m, s, mem)
        for b in range(s.pb[i] + 1, bound + 1):
            acts.add(("Purge", (mem, b)))
    return acts


def _may_start(m: Model, s: State, mem: int, w: int, ll: int, running: int) -> bool:
    i = mem - 1
    if m.flavor == "galera":
        return s.dep[i][w - 1] <= ll                                  # apply monitor
    if running >= m.workers:
        return False
    for v in range(1, w):
        rv, dv = remote(s, mem, v), s.dec[i][v - 1]
        if rv and dv == "ok" and s.st[i][v - 1] == "wait":            # in-order dispatch
            return False
        if not rv and dv == "ok" and conflict(s, v, w) and not _done(s, mem, v):   # row locks
            return False
    return all(_done(s, mem, v) for v in range(1, s.dep[i][w - 1] + 1)
               if remote(s, mem, v) and s.dec[i][v - 1] == "ok")


def _may_commit(m: Model, s: State, mem: int, w: int, ll: int) -> bool:
    i = mem - 1
    d, st = s.dec[i][w - 1], s.st[i][w - 1]
    if d == "ok":
        if st != ("run" if remote(s, mem, w) else "wait"):
            return False
        if m.flavor == "galera":
            return w == ll + 1                                        # commit monitor
        return not remote(s, mem, w) or all(
            _done(s, mem, v) for v in range(1, w) if remote(s, mem, v) and s.dec[i][v - 1] == "ok")
    if d == "fail":
        return "failed_ws_commits_early" in m.bugs or w == ll + 1
    return False


def _set(t: tuple, i: int, v) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def apply(m: Model, s: State, action) -> State:
    name, args = action
    if name == "Send":
        w = args[0]
        o = s.origin[w - 1]
        snap = (frozenset(range(1, last_left(m, s, o) + 1)) if m.flavor == "galera"
                else committed(m, s, o))
        return s._replace(sent=w, snap=_set(s.snap, w - 1, snap))
    mem = args[0]
    i = mem - 1
    if name == "Certify":
        w = s.cert[i] + 1
        s2 = s._replace(cert=_set(s.cert, i, w))
        if fails(m, s, mem, w):
            st = "done" if m.flavor == "gr" else "wait"
            return s2._replace(dec=_set(s.dec, i, _set(s.dec[i], w - 1, "fail")),
                               st=_set(s.st, i, _set(s.st[i], w - 1, st)))
        idx = tuple(w if k in s.ws[w - 1] else v for k, v in enumerate(s.idx[i], 1))
        return s2._replace(dec=_set(s.dec, i, _set(s.dec[i], w - 1, "ok")),
                           dep=_set(s.dep, i, _set(s.dep[i], w - 1, depends(m, s, mem, w))),
                           idx=_set(s.idx, i, idx))
    if name in ("Start", "Commit"):
        w = args[1]
        return s._replace(st=_set(s.st, i, _set(s.st[i], w - 1,
                                                "run" if name == "Start" else "done")))
    if name == "Purge":
        b = args[1]
        idx = tuple(0 if v <= b else v for v in s.idx[i])
        floor = _set(s.floor, i, s.cert[i]) if m.flavor == "gr" else s.floor
        return s._replace(pb=_set(s.pb, i, b), idx=_set(s.idx, i, idx), floor=floor)
    raise ValueError(f"unknown action {name}")


# ---------------------------------------------------------------- properties

def all_done(m: Model, s: State) -> bool:
    return s.sent == m.n and all(c == m.n for c in s.cert) and all(
        x == "done" for row in s.st for x in row)


def violations(m: Model, s: State, acts: set | None = None) -> list[str]:
    bad = []
    N = m.n
    mems = range(1, m.members + 1)
    for w in range(N):
        ds = {s.dec[i][w] for i in range(m.members)} - {"none"}
        if len(ds) > 1:
            bad.append("Agreement")
            break
    pairs = [(v, w) for v in range(1, N + 1) for w in range(v + 1, N + 1) if conflict(s, v, w)]
    for mem in mems:
        d, st = s.dec[mem - 1], s.st[mem - 1]
        for v, w in pairs:
            both = d[v - 1] == "ok" and d[w - 1] == "ok"
            if both and v not in s.snap[w - 1] and "NoLostUpdate" not in bad:
                bad.append("NoLostUpdate")
            if both and st[w - 1] == "done" and st[v - 1] != "done" and "SameCommitOrder" not in bad:
                bad.append("SameCommitOrder")
            if _active(s, mem, v) and _active(s, mem, w) and "NoConflictingOverlap" not in bad:
                bad.append("NoConflictingOverlap")
        if m.flavor == "galera" and "CommitOrderPreserved" not in bad:
            if any(st[w] == "done" and any(st[v] != "done" for v in range(w)) for w in range(N)):
                bad.append("CommitOrderPreserved")
    if acts is not None and not acts and not all_done(m, s):
        bad.append("NoDeadlock")
    return bad


def _active(s: State, mem: int, w: int) -> bool:
    i = mem - 1
    if s.dec[i][w - 1] != "ok":
        return False
    return s.st[i][w - 1] == ("run" if remote(s, mem, w) else "wait")


def explore(m: Model, props=PROPERTIES, starts=None, limit: int = 3_000_000):
    """Every state reachable from `starts` (default: every shape); returns (states, first
    violation of `props` as (property, path) or None)."""
    n, found = breadth_first(starts if starts is not None else initial_states(m),
                             lambda s: enabled(m, s), lambda s, a: apply(m, s, a),
                             lambda s, acts: violations(m, s, acts), props, limit)
    if found is None:
        return n, None
    prop, s0, path = found
    return n, (prop, [("Init", (s0.origin, s0.ws))] + path)


def replay(m: Model, origin: tuple, ws: tuple, events) -> tuple[list, list]:
    """A run of the cluster simulator (its events `(action, member, w)`, members and write-sets
    from 1, as checks/trace_validation_cert.py records them) through this step function: the
    Python side of trace validation. Returns (the events the rules did not allow, with their
    index: empty when the run is a behaviour; the properties violated in some state)."""
    s = initial(m, origin, ws)
    rejected, bad = [], set(violations(m, s))
    names = {"send": "Send", "certify": "Certify", "start": "Start", "commit": "Commit",
             "purge": "Purge"}
    for i, (a, mem, w) in enumerate(events):
        if a == "end":
            if not all_done(m, s):
                rejected.append((i, (a, mem, w)))
            break
        args = {"Send": (w,), "Certify": (mem,)}.get(names[a], (mem, w))
        action = (names[a], args)
        if action not in enabled(m, s) or (a == "certify" and s.cert[mem - 1] + 1 != w):
            rejected.append((i, (a, mem, w)))
            break
        s = apply(m, s, action)
        bad.update(violations(m, s))
    return rejected, sorted(bad)


SPEC_MODEL = Model(2, 3, 2, 2, "galera")      # specs/Certification_galera.cfg's constants


def find_violation(bug: str, props: tuple[str, ...]):
    """checks/mutants.py EXPLORERS: the smallest number of write-sets for which the model with
    `bug` breaks one of `props` while the correct one breaks none; (N, property, path)."""
    for n in range(2, SPEC_MODEL.n + 1):
        m = SPEC_MODEL._replace(n=n)
        if explore(m, props)[1] is not None:
            continue
        found = explore(m._replace(bugs=frozenset({bug})), props)[1]
        if found is not None:
            return n, found[0], found[1]
    return None


__all__ = ["Model", "State", "initial", "initial_states", "enabled", "apply", "violations",
           "explore", "find_violation", "replay", "SPEC_MODEL", "BUGS", "ACTIONS", "PROPERTIES"]
