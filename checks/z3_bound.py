"""The optimal schedule of a trace, with z3: the bound every scheduler is scored against.

Two regimes, the same two as `metrics.heuristic_bounds`. Both share (times exact rationals of the
trace's float costs, `c_i = profile.exec_cost + profile.commit_cost`, `s = profile.group_sync`):

- a transaction i holds a worker on [S_i, C_i), S_i >= 0, C_i >= S_i + c_i + s;
- conflicting transactions (`properties.conflicts`: write sets intersect, DDL/admin conflict with
  everything) keep source order and never overlap: C_i <= S_j for i < j (the replica must end
  in the source's state, `SerialEquivalence`; every simulator orders them so);
- group sync, "a sync per commit instant": transactions committing at the same instant share one
  sync; two distinct commit instants are at least `s` apart (one sync runs at a time). This is
  what `simcore.CommitStage` does: a group commits at the end of its sync, which starts no
  earlier than its members' ready time and the previous group's end.

`in_order` adds: commits in source order (C_i <= C_{i+1}) and source-order dispatch to a worker
ring: transaction j gets a worker only once j - W committed (S_j >= C_{j-W}). Both servers do
this: MariaDB queues j on thread j mod W, which runs its queue in order and is held to commit;
the MySQL coordinator dispatches in order, and with commits in order the W transactions before
j all hold their workers until j - W commits. With it, worker capacity W holds by itself (all
active transactions lie within W consecutive ones), so the model is difference constraints plus
one "same instant or a sync later" choice per consecutive pair: it solves exactly for hundreds
of transactions.

`free` (commit when ready, any order, as `database+mysql` and `preserve_commit_order=off`):
at most W intervals overlap at any instant, no order on starts or commits. Encoded as "no W + 1
transactions pairwise overlap" (intervals that pairwise overlap share an instant) while there
are at most 20000 such subsets, else as a count of the active transactions at every start.
This is a multiprocessor scheduling problem with precedences, NP-hard, and it shows: see the
sizes below.

Measured on this machine (2 shared cores), prefixes of traces/examples/oltp_rw_8clients,
60 s cap:
  in_order, W=8: durable (sync 1000) 100 transactions 0.4 s, 200 in 3.5-7 s, 300 not closed
  (gap 0.1 %); ideal (no sync: a pure longest path) 400 in 0.6 s, 1000 in 5 s. W=4: durable
  100 in 0.7 s; W=2: 100 in 2 s, 200 not closed; W=1: 60 in 0.1 s.
  free, W=8: ideal 12 in 0.4 s, 14 in 1.7 s; durable 10 in 0.8 s, 12 in 5 s, 14 in 30 s, 16
  not closed. W=4: durable 8 in 1 s, 12 not closed (gap 3 %). W=2: durable 8 not closed
  (gap 0.005 %: the last step, proving nothing shorter exists, is what takes the time).
Hence the default windows: 200 (in_order) and 12 (free). On timeout the bound z3 proved so far
(bisection: every unsat answer is a proved lower bound) is kept.

Dispatch costs, retries and lock waits are left out: every schedule a simulator produces that
satisfies `NoConflictingOverlap` (and `CommitOrderPreserved` for in_order) is a feasible point of
its regime's model, so the optimum is a lower bound of its makespan; a bug-injected schedule that
overlaps conflicting transactions can beat it.

Long traces: consecutive windows of N transactions are solved separately. Restricting a
schedule of the whole trace to a window of consecutive transactions gives a feasible schedule of
the window (every constraint above is between transactions of the window or vanishes, worker
ring and commit order included, and times stay >= 0), whose makespan is at most the whole
makespan. So every window's optimum, and their maximum, is a valid lower bound of the whole
trace's optimum. With it comes `relaxed_bound_stream`, the whole trace's longest path in the
model with one sync per transaction and the distinct-instant spacing dropped (a relaxation, so
also a lower bound; for in_order it includes the commit order and the worker ring, and is about
twice work/W on the bundled 2000-transaction trace). The maximum of all these is reported as
`lower_bound`, with `optimal` null and `exact` false, next to work/W and the span.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Callable, Iterable, Sequence

import z3

from commitsched.metrics import heuristic_bounds
from commitsched.properties import conflicts

REGIMES = ("in_order", "free")
# Measured (see the module report / tests): whole traces up to these sizes are solved exactly
# within the default time cap on this machine; beyond, windows of this size are used.
DEFAULT_WINDOW = {"in_order": 200, "free": 12}
DEFAULT_TIMEOUT = 60.0
WINDOW_BUDGET = 5            # windows of a long trace: at most this many timeouts' worth in all


class BoundError(ValueError):
    """A bound that cannot be computed as asked (bad workers, window, regime)."""


@dataclass
class Problem:
    """One trace reduced to what the optimum depends on."""
    seqs: list[int]
    cost: list[Fraction]                  # exec + commit
    sync: Fraction
    conflict: list[list[bool]]            # symmetric; conflict[i][j] for i != j

    @property
    def n(self) -> int:
        return len(self.cost)

    def window(self, lo: int, hi: int) -> "Problem":
        return Problem(self.seqs[lo:hi], self.cost[lo:hi], self.sync,
                       [row[lo:hi] for row in self.conflict[lo:hi]])


def make_problem(txns: Iterable, profile) -> Problem:
    txns = list(txns)
    n = len(txns)
    conflict = [[False] * n for _ in range(n)]
    for j in range(n):
        for i in range(j):
            if conflicts(txns[i], txns[j]):
                conflict[i][j] = conflict[j][i] = True
    return Problem([t.seq for t in txns],
                   [Fraction(profile.exec_cost(t)) + Fraction(profile.commit_cost(t)) for t in txns],
                   Fraction(profile.group_sync), conflict)


def _q(x: Fraction) -> z3.ArithRef:
    return z3.Q(x.numerator, x.denominator)


def _value(m: z3.ModelRef, v) -> Fraction:
    val = m.eval(v, model_completion=True)
    return Fraction(val.as_fraction())


@dataclass
class Solution:
    status: str                        # "optimal" | "timeout"
    makespan: Fraction | None = None   # the best schedule found (the optimum when "optimal")
    lower: Fraction = Fraction(0)      # proved: no schedule has a smaller makespan
    start: list[Fraction] = field(default_factory=list)
    commit: list[Fraction] = field(default_factory=list)
    seconds: float = 0.0


def _predecessors(p: Problem) -> list[list[int]]:
    """For each j, the conflicting i < j it must follow, transitively reduced against the chain
    through its latest conflicting predecessors (an edge i -> j implied by i -> k -> j is
    dropped): precedence is transitive, so the reduced set says the same."""
    reach: list[set[int]] = []          # everything j must follow, transitively
    preds: list[list[int]] = []
    for j in range(p.n):
        direct = [i for i in range(j - 1, -1, -1) if p.conflict[i][j]]
        covered: set[int] = set()
        keep = []
        for i in direct:                # latest first: later ones cover earlier ones
            if i not in covered:
                keep.append(i)
                covered |= reach[i]
                covered.add(i)
        preds.append(keep)
        reach.append(covered)
    return preds


def _encode(p: Problem, workers: int, regime: str, capacity: str = "auto"):
    """Variables and constraints of one regime's model; returns (constraints, S, C, makespan).

    Conflicting transactions keep source order in both regimes (C_i <= S_j for i < j): the
    replica must end in the source's state (`SerialEquivalence`), and every simulator orders
    them so. That is also what makes their intervals disjoint."""
    n, s = p.n, p.sync
    S = [z3.Real(f"S{i}") for i in range(n)]
    C = [z3.Real(f"C{i}") for i in range(n)]
    M = z3.Real("makespan")
    cs = []
    length = [c + s for c in p.cost]            # least time a transaction holds its worker
    for i in range(n):
        cs += [S[i] >= 0, C[i] >= S[i] + _q(length[i]), M >= C[i]]
    for j, preds in enumerate(_predecessors(p)):
        cs += [S[j] >= C[i] for i in preds]
    if regime == "in_order":
        for i in range(1, n):
            cs.append(C[i] >= C[i - 1])
            if s > 0:
                cs.append(z3.Or(C[i] == C[i - 1], C[i] >= C[i - 1] + _q(s)))
        for j in range(workers, n):
            cs.append(S[j] >= C[j - workers])
        return cs, S, C, M
    # free
    before = _closure(p)
    if s > 0:
        for j in range(n):
            for i in range(j):
                if i in before[j]:
                    cs.append(C[j] >= C[i] + _q(s))     # j starts after i commits: a later sync
                else:
                    cs.append(z3.Or(C[i] == C[j], C[j] >= C[i] + _q(s), C[i] >= C[j] + _q(s)))
    if workers < n:
        cs.append(M * workers >= _q(sum(length, Fraction(0))))   # redundant: occupancy >= work
        free_pairs = [(i, j) for j in range(n) for i in range(j)
                      if i not in before[j]]
        if capacity == "cliques" or (capacity == "auto"
                                     and math.comb(n, workers + 1) <= _CLIQUE_LIMIT):
            # Few subsets of W + 1: intervals that pairwise overlap share an instant (Helly),
            # so "no W + 1 of them pairwise overlap" is the capacity, and propagates better.
            ov = {}
            for i, j in free_pairs:
                ov[i, j] = z3.Bool(f"ov{i}_{j}")
                cs.append(ov[i, j] == z3.And(S[i] < C[j], S[j] < C[i]))
            for sub in itertools.combinations(range(n), workers + 1):
                pairs = [ov.get((a, b)) for a, b in itertools.combinations(sub, 2)]
                if all(x is not None for x in pairs):
                    cs.append(z3.Not(z3.And(pairs)))
            return cs, S, C, M
        for j in range(n):
            # Transactions that may be active at S_j: j itself and those not ordered with it.
            terms = [z3.If(z3.And(S[i] <= S[j], S[j] < C[i]), 1, 0) for i in range(n)
                     if i == j or (i not in before[j] and j not in before[i])]
            if len(terms) > workers:
                cs.append(z3.Sum(terms) <= workers)
    return cs, S, C, M


def _closure(p: Problem) -> list[set[int]]:
    """before[j]: the transactions j follows, directly or transitively."""
    before: list[set[int]] = []
    for j in range(p.n):
        b: set[int] = set()
        for i in range(j):
            if p.conflict[i][j] and i not in b:
                b |= before[i]
                b.add(i)
        before.append(b)
    return before


def relaxed_bound_stream(txns: Iterable, profile, workers: int, regime: str) -> Fraction:
    """`relaxed_bound` of a whole trace in one pass, memory one entry per key (and the last W
    commits): the lower bound of long traces. Conflicting predecessors are found through the
    keys' last writers (DDL/admin: everything before); in order, commits are monotone, so the
    latest conflicting predecessor's commit is the largest."""
    from collections import deque
    s = Fraction(profile.group_sync)
    key_commit: dict = {}            # key -> latest (in_order) / largest (free) commit of a writer
    prefix_max = Fraction(0)         # largest commit so far
    last_special = Fraction(0)       # commit of the latest DDL/admin (everything after follows)
    ring: deque = deque(maxlen=workers)
    prev = Fraction(0)
    work = Fraction(0)
    for txn in txns:
        length = Fraction(profile.exec_cost(txn)) + Fraction(profile.commit_cost(txn)) + s
        work += length
        if txn.ddl or txn.admin:
            start = prefix_max
        else:
            start = last_special
            for k in txn.writes:
                c = key_commit.get(k)
                if c is not None and c > start:
                    start = c
        if regime == "in_order" and len(ring) == workers:
            start = max(start, ring[0])
        c = start + length
        if regime == "in_order":
            c = max(c, prev)
        for k in txn.writes:
            if regime == "in_order" or c > key_commit.get(k, c - 1):
                key_commit[k] = c
        if txn.ddl or txn.admin:
            last_special = c
        ring.append(c)
        prev = c
        prefix_max = max(prefix_max, c)
    return max(work / workers, prefix_max)


def relaxed_bound(p: Problem, workers: int, regime: str) -> Fraction:
    """An exact lower bound of the model's optimum, without z3: the occupancy sum(c + s) / W and
    the longest path of earliest times with the syncs of distinct instants not spaced (for
    in_order with commit order and the worker ring). The solver starts from it."""
    n = p.n
    length = [c + p.sync for c in p.cost]
    if n == 0:
        return Fraction(0)
    work = sum(length, Fraction(0)) / workers
    commit: list[Fraction] = []
    for j, preds in enumerate(_predecessors(p)):
        start = max((commit[i] for i in preds), default=Fraction(0))
        if regime == "in_order" and j >= workers:
            start = max(start, commit[j - workers])
        c = start + length[j]
        if regime == "in_order" and j:
            c = max(c, commit[j - 1])
        commit.append(c)
    return max(work, max(commit))


def solve(p: Problem, workers: int, regime: str, *, timeout: float = DEFAULT_TIMEOUT,
          lower: Fraction = Fraction(0), capacity: str = "auto") -> Solution:
    """The minimum makespan of `p` on `workers` under `regime`: status "optimal" with the exact
    value, or "timeout" (z3 did not finish within `timeout` seconds in all) with `lower`, a
    lower bound z3 proved, and `makespan` the best schedule found.

    Bisection on the makespan with one incremental solver: "is there a schedule with makespan
    < m?"; unsat proves m a lower bound, sat gives a schedule. It ends when a schedule's makespan
    equals the proved bound. `lower` must be a valid lower bound (e.g. the heuristic one); the
    serial schedule, feasible in both regimes, is the first upper bound. `capacity` (free
    regime): how "at most W at once" is encoded: "cliques" (no W + 1 pairwise overlapping,
    fast while C(n, W + 1) is small), "cumulative" (a count at every start), "auto"."""
    if regime not in REGIMES:
        raise BoundError(f"unknown regime {regime!r}; regimes: {', '.join(REGIMES)}")
    if workers < 1:
        raise BoundError("workers must be at least 1")
    started = time.perf_counter()
    deadline = started + timeout
    if p.n == 0:
        return Solution("optimal", Fraction(0), Fraction(0))
    if capacity not in ("auto", "cliques", "cumulative"):
        raise BoundError(f"unknown capacity encoding {capacity!r}")
    cs, S, C, M = _encode(p, workers, regime, capacity)
    solver = z3.Solver()
    solver.add(*cs)
    lo = max(Fraction(lower), relaxed_bound(p, workers, regime))
    hi = sum((c + p.sync for c in p.cost), Fraction(0))
    best = None
    while True:
        if best is not None and lo >= hi:
            return Solution("optimal", hi, hi, *best, time.perf_counter() - started)
        left = deadline - time.perf_counter()
        if left <= 0:
            return Solution("timeout", hi if best else None, lo, seconds=time.perf_counter() - started)
        # Halve the gap while it is wide; then ask for anything better than the best found.
        mid = (lo + hi) / 2 if best is None or hi - lo > hi * _CLOSE else hi
        if best is None:
            mid = hi + 1          # first: any schedule at all (serial is one)
        solver.set("timeout", max(1, int(left * 1000)))
        solver.push()
        solver.add(M < _q(mid))
        res = solver.check()
        if res == z3.sat:
            m = solver.model()
            best = _tighten(p, workers, regime, [_value(m, v) for v in S],
                            [_value(m, v) for v in C])
            hi = max(best[1])
        solver.pop()
        if res == z3.unsat:
            lo = max(lo, mid)
        elif res != z3.sat:
            return Solution("timeout", hi if best else None, lo,
                            seconds=time.perf_counter() - started)


_CLOSE = Fraction(1, 10**4)
_CLIQUE_LIMIT = 20000


def _tighten(p: Problem, workers: int, regime: str, start: list[Fraction],
             commit: list[Fraction]) -> tuple[list[Fraction], list[Fraction]]:
    """The earliest schedule that keeps the order of every start and commit instant of a z3
    model (equal ones equal) and satisfies the model's difference constraints. Every atom of the
    encoding compares two of these instants (or their distance with the sync), so it keeps its
    truth value, in closed form: the result is feasible (the feasible sets are closed) and no
    later than the model. Its makespan is a vertex value, so the bisection ends exactly instead
    of creeping down by ever smaller steps."""
    n, s = p.n, p.sync
    vals = start + commit                        # variable v: S_v for v < n, C_{v-n} otherwise
    order = sorted(range(2 * n), key=vals.__getitem__)
    group = [0] * (2 * n)
    g = -1
    for k, v in enumerate(order):
        if k == 0 or vals[v] != vals[order[k - 1]]:
            g += 1
        group[v] = g
    incoming: list[list[tuple[int, Fraction]]] = [[] for _ in range(2 * n)]
    for i in range(n):
        incoming[n + i].append((i, p.cost[i] + s))
    for j, preds in enumerate(_predecessors(p)):
        incoming[j] += [(n + i, Fraction(0)) for i in preds]
    if regime == "in_order":
        for j in range(workers, n):
            incoming[j].append((n + j - workers, Fraction(0)))
    members: list[list[int]] = [[] for _ in range(g + 1)]
    for v in range(2 * n):
        members[group[v]].append(v)
    new = [Fraction(0)] * (g + 1)
    last_commit_group = None
    for k in range(g + 1):
        t = new[k - 1] if k else Fraction(0)
        for v in members[k]:
            for u, c in incoming[v]:
                if group[u] < k:
                    t = max(t, new[group[u]] + c)
        has_commit = any(v >= n for v in members[k])
        if has_commit and last_commit_group is not None:
            t = max(t, new[last_commit_group] + s)
        new[k] = t
        if has_commit:
            last_commit_group = k
    return [new[group[v]] for v in range(n)], [new[group[n + i]] for i in range(n)]     # below this relative gap, stop halving and close it exactly


@dataclass
class RegimeBound:
    """The bound of one regime, labelled as what it is."""
    regime: str
    optimal: float | None          # the exact optimum of the whole trace, or None
    lower_bound: float             # the best valid lower bound known (the optimum when exact)
    work_bound: float
    span_bound: float
    exact: bool
    solver_seconds: float
    windows: int                   # 1 when the whole trace was solved at once
    windows_solved: int            # windows z3 finished; the others count by their heuristic
    kind: str
    time_limit_reached: bool = False  # a solve hit its timeout or windows were left untried

    def to_json(self) -> dict:
        return asdict(self)


def regime_bound(txns: Sequence, profile, workers: int, regime: str, *,
                 window: int | None = None, timeout: float = DEFAULT_TIMEOUT,
                 problem: Problem | None = None, heuristic: dict | None = None,
                 budget: float | None = None,
                 progress: Callable[[str], None] = lambda s: None) -> RegimeBound:
    """The optimum of the whole trace when it fits one window (`window`, default
    DEFAULT_WINDOW[regime]) and z3 finishes within `timeout`; else the best valid lower bound:
    max(work/W, span, every window's optimum). `timeout` caps each solve; a window that times out
    contributes what z3 proved for it; windows are tried until `budget` seconds (default
    WINDOW_BUDGET solves' worth) are spent."""
    if regime not in REGIMES:
        raise BoundError(f"unknown regime {regime!r}; regimes: {', '.join(REGIMES)}")
    if workers < 1:
        raise BoundError("workers must be at least 1")
    txns = list(txns)
    window = DEFAULT_WINDOW[regime] if window is None else window
    if window < 1:
        raise BoundError("window must be at least 1 transaction")
    h = heuristic or heuristic_bounds(txns, profile, workers)
    work, span = h["work_bound"], h["span_" + regime]
    heur = max(work, span)
    if not math.isfinite(heur):
        raise BoundError(f"the trace's costs add up to {heur} µs, beyond what a float holds: "
                         f"no bound to compute")
    started = time.perf_counter()
    budget = timeout * WINDOW_BUDGET if budget is None else budget
    if len(txns) <= window:
        p = problem if problem is not None and problem.n == len(txns) else make_problem(txns,
                                                                                      profile)
        timeout = min(timeout, budget)
        progress(f"{regime}: z3 on {len(txns)} transactions, at most {timeout:.0f} s")
        sol = solve(p, workers, regime, timeout=timeout)
        seconds = time.perf_counter() - started
        if sol.status == "optimal":
            v = float(sol.makespan)
            return RegimeBound(regime, v, v, work, span, True, round(seconds, 3), 1, 1,
                               "exact optimum (z3)")
        lb = max(heur, float(sol.lower))
        return RegimeBound(regime, None, lb, work, span, False, round(seconds, 3), 1, 0,
                           f"lower bound: max(work/W, span, what z3 proved in {timeout:g} s)",
                           time_limit_reached=True)
    best = Fraction(0)
    solved = count = 0
    total = -(-len(txns) // window)
    for lo in range(0, len(txns), window):
        left = budget - (time.perf_counter() - started)
        if left <= 0:
            break                       # the windows not tried count by the heuristic
        count += 1
        progress(f"{regime}: window {count}/{total}, {time.perf_counter() - started:.0f} of "
                 f"{budget:.0f} s; best bound so far {float(max(best, Fraction(heur))):.1f}")
        # One window's conflict matrix at a time: memory stays O(window^2).
        sol = solve(make_problem(txns[lo:lo + window], profile), workers, regime,
                    timeout=min(timeout, left))
        if sol.status == "optimal":
            solved += 1
            best = max(best, sol.makespan)
        else:
            best = max(best, sol.lower)       # what z3 proved before its time ran out
    seconds = time.perf_counter() - started
    relaxed = relaxed_bound_stream(txns, profile, workers, regime)
    lb = max(float(best), float(relaxed), heur)
    return RegimeBound(regime, None, lb, work, span, False, round(seconds, 3), count, solved,
                       f"lower bound: max(work/W, span, the model's longest path with a sync per "
                       f"transaction, optimum of each window of {window} consecutive "
                       f"transactions; {solved} of {total} windows solved"
                       + (f", {total - count} not tried within the time budget)"
                          if count < total else ")"),
                       time_limit_reached=solved < total)


def bounds(txns: Sequence, profile, workers: int, *, regimes: Sequence[str] = REGIMES,
           window: int | None = None, timeout: float = DEFAULT_TIMEOUT,
           budget: float | None = None, time_limit: float | None = None,
           progress: Callable[[str], None] = lambda s: None) -> list[RegimeBound]:
    """One RegimeBound per regime. `time_limit`: seconds for all regimes together (each gets
    an equal share of what is left, which also caps its `budget` and every solve's `timeout`);
    a regime cut short reports the best lower bound proved so far (`exact` False)."""
    txns = list(txns)
    started = time.perf_counter()
    largest = max(DEFAULT_WINDOW[r] if window is None else window for r in regimes)
    p = make_problem(txns, profile) if len(txns) <= largest else None
    h = heuristic_bounds(txns, profile, workers)
    out = []
    for i, r in enumerate(regimes):
        b = budget
        if time_limit is not None:
            share = max(0.001, (time_limit - (time.perf_counter() - started)) / (len(regimes) - i))
            b = share if b is None else min(b, share)
        out.append(regime_bound(txns, profile, workers, r, window=window, timeout=timeout,
                                problem=p, heuristic=h, budget=b, progress=progress))
    return out


__all__ = ["REGIMES", "DEFAULT_WINDOW", "DEFAULT_TIMEOUT", "BoundError", "Problem",
           "make_problem", "solve", "Solution", "RegimeBound", "regime_bound", "bounds"]
