"""Metrics of one run (design §5) and the heuristic lower bounds every run is held against.

`RunMetrics` is a sink: it sees each committed transaction once and keeps only sums, so scoring
a long trace needs no memory beyond the simulation's own.
"""
from __future__ import annotations

from typing import Iterable

from .profiles import Profile
from .simcore import TxnRun

# Times are microseconds; throughput is per second of that clock.
PER_SECOND = 1_000_000.0


class RunMetrics:
    """Accumulates one run's figures from its committed transactions."""

    def __init__(self, workers: int):
        self.workers = workers
        self.count = [0] * workers
        self.busy = [0.0] * workers        # executing (the work itself)
        self.held = [0.0] * workers        # from start to commit: the worker is not free
        self.transactions = 0
        self.makespan = 0.0
        self.retries = 0
        self.wasted = 0.0

    def __call__(self, run: TxnRun) -> None:
        w = run.worker
        self.count[w] += 1
        self.busy[w] += run.exec
        self.held[w] += run.commit - run.start
        self.transactions += 1
        if run.commit > self.makespan:
            self.makespan = run.commit
        if run.retries:
            self.retries += run.retries
            self.wasted += run.wasted

    def result(self, *, scheduler: str, profile: str, blocked: dict, serial_makespan: float | None,
               bound: dict | None) -> dict:
        n, ms, w = self.transactions, self.makespan, self.workers
        speedup = (serial_makespan / ms) if serial_makespan and ms > 0 else None
        out = {
            "scheduler": scheduler,
            "workers": w,
            "profile": profile,
            "transactions": n,
            "makespan": round(ms, 6),
            "throughput": round(n / ms * PER_SECOND, 3) if ms > 0 else None,
            "speedup": round(speedup, 6) if speedup is not None else None,
            "efficiency": round(speedup / w, 6) if speedup is not None else None,
            "per_worker": list(self.count),
            "per_worker_busy": [round(b, 6) for b in self.busy],
            "per_worker_held": [round(h, 6) for h in self.held],
            "blocked": {k: round(v, 6) for k, v in blocked.items()},
            "retries": self.retries,
            "retry_wasted": round(self.wasted, 6),
        }
        if bound is not None:
            out["bound"] = bound
            out["efficiency_vs_bound"] = round(bound["bound"] / ms, 6) if ms > 0 else None
        return out


def heuristic_bounds(txns: Iterable, profile: Profile, workers: int) -> dict:
    """Lower bounds on the makespan of any schedule of `txns` on `workers` workers, for the two
    commit regimes (the z3 optimum uses the same two): `heuristic_bounds_for`, for one W."""
    return heuristic_bounds_for(txns, profile, [workers])[workers]


def heuristic_bounds_for(txns: Iterable, profile: Profile,
                         workers: Iterable[int]) -> dict[int, dict]:
    """`heuristic_bounds` for each worker count of `workers`, keyed by W in increasing order, from
    one pass over `txns`: only the work bound depends on W. Lower bounds on the makespan of any
    schedule, for the two commit regimes (the z3 optimum uses the same two):

    Every applier holds a worker from a transaction's start to its commit, and a commit comes
    at the end of a sync that began once the transaction was ready, so each transaction holds
    its worker for at least exec + commit + sync (its "hold"):

    - `work_bound`: sum(hold) / W;
    - `span_in_order`: the critical path of the true conflict graph (write sets intersect; DDL
      and admin statements conflict with everything) when commits are in source order: a
      transaction starts after its conflicting predecessors committed, commits at least its
      hold later, and no earlier than its predecessor;
    - `span_free`: the same path when commits may happen in any order.
    Dispatch costs and the waits between syncs are left out, so these are valid lower bounds,
    not estimates (the z3 optimum uses the same constraints). `bound_in_order` / `bound_free`
    are the maxima.
    """
    work = 0.0
    ordered_prev = 0.0             # earliest commit of the previous transaction, in order
    free_all = 0.0                 # latest earliest-commit so far, any order
    ordered_key: dict[str, float] = {}
    free_key: dict[str, float] = {}
    biggest = 0.0
    exec_cost, commit_cost, sync = profile.exec_cost, profile.commit_cost, profile.group_sync
    for i, txn in enumerate(txns, 1):
        cost = exec_cost(txn) + commit_cost(txn) + sync
        work += cost
        biggest = max(biggest, cost)
        writes = txn.writes
        if txn.ddl or txn.admin:
            o_start, f_start = ordered_prev, free_all
        else:
            o_start = f_start = 0.0
            for key in writes:
                c = ordered_key.get(key)
                if c is not None and c > o_start:
                    o_start = c
                c = free_key.get(key)
                if c is not None and c > f_start:
                    f_start = c
        o_commit = max(o_start + cost, ordered_prev)
        f_commit = f_start + cost
        for key in writes:
            ordered_key[key] = o_commit
            free_key[key] = f_commit
        ordered_prev = o_commit
        if f_commit > free_all:
            free_all = f_commit
        if i % 65536 == 0:
            # In order, a key last written before `ordered_prev - biggest` can no longer delay
            # anyone (max(start + cost, ordered_prev) ignores it): drop it to bound memory.
            horizon = ordered_prev - biggest
            ordered_key = {k: c for k, c in ordered_key.items() if c > horizon}
    span_in_order = ordered_prev
    span_free = free_all
    return bounds_by_w(work, span_in_order, span_free, workers)


def bounds_by_w(work: float, span_in_order: float, span_free: float, workers) -> dict[int, dict]:
    """The bounds for each W from the pass's three sums (the Python pass above, or the compiled
    core's, engine.heuristic_bounds)."""
    out = {}
    for w in sorted(set(workers)):
        work_bound = work / w
        out[w] = {"work_bound": round(work_bound, 6),
                  "span_in_order": round(span_in_order, 6), "span_free": round(span_free, 6),
                  "bound_in_order": round(max(work_bound, span_in_order), 6),
                  "bound_free": round(max(work_bound, span_free), 6)}
    return out


def bound_for(bounds: dict, in_order: bool) -> dict:
    """The bound that applies to a scheduler, labelled as what it is."""
    regime = "in_order" if in_order else "free"
    return {"regime": regime, "work_bound": bounds["work_bound"],
            "span_bound": bounds["span_" + regime], "bound": bounds["bound_" + regime],
            "exact": False, "kind": "heuristic: max(work/W, conflict span)"}
