"""Blame: which transactions hold the replica back (docs/blame.md).

Works on the schedule a simulator already produced (the `TxnRun` records of one run), not on a
new simulation. Every stretch of time a worker spends not working before the last dispatch is a
*wait*: a transaction holding its worker while it waits to start (MariaDB GCO, prior commit,
lock, retry) or to commit (commit order, sync in progress), or an idle worker while the
coordinator / driver could not hand out the next transaction (dependency, barrier, window,
dispatch). Each wait ends because of some event of another transaction (its commit, its
`mark_start_commit`, its group's sync). That transaction was itself working or waiting over the
wait's interval; the interval is cut along what it was doing, working parts are blamed on it and
waiting parts are followed further, to the transaction it waited for, and so on. Every instant
of every wait thus ends on exactly one *culprit*: a transaction doing its own work (executing,
its commit step), or one of the replica's shared stages (`(group commit)`: a group's sync,
`(dispatch)`: the coordinator handing out, `(retry)`: a killed transaction's re-read,
`(cores)`: with CPU cores modelled, waiting for a core, which the schedule's times do not show,
`(wakeup)`: a signalled thread's wake-up latency (the profile's `wakeup`),
`(coordinator)`/`(other)`: a wait this reading cannot explain). The sum of blame is the sum of
waits, exactly. Following the last commit back to time 0 the same way gives the critical path:
what the makespan consists of.

The release of a wait is read back from the schedule's times (see `_Schedule`): which group
committed, whose exec end or commit coincides with the start. Where two explanations coincide
at one instant the first rule wins: lock holder, predecessor's commit, GCO mark.
"""
from __future__ import annotations

import bisect
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Sequence

EPS = 1e-6

# Leaves of the attribution: a transaction's own work, or a shared stage.
PSEUDO_DISPATCH = "(dispatch)"
PSEUDO_COMMIT = "(group commit)"
PSEUDO_RETRY = "(retry)"
PSEUDO_COORD = "(coordinator)"
PSEUDO_CORES = "(cores)"
PSEUDO_WAKEUP = "(wakeup)"
PSEUDO_OTHER = "(other)"
PSEUDO = (PSEUDO_DISPATCH, PSEUDO_COMMIT, PSEUDO_RETRY, PSEUDO_CORES, PSEUDO_WAKEUP, PSEUDO_COORD,
          PSEUDO_OTHER)

# Causes of a wait, the names of simcore.CAUSES where they mean the same; `dispatch`: idle
# workers while the coordinator was busy handing out transactions.
WAIT_CAUSES = ("commit_order", "sync_wait", "gco_wait", "prior_commit_wait", "lock_wait",
               "retry", "dependency", "barrier", "window_full", "no_free_worker", "dispatch",
               "cpu_wait", "other")

_COORD = ("c",)


def _key(t: float) -> int:
    return round(t / EPS)


def tables_of(txn) -> tuple[str, ...]:
    """`db.table` of every write key (`db.table/INDEX=...`), in first-seen order."""
    return tuple(dict.fromkeys(k.partition("/")[0] for k in txn.writes)) or (
        ("(DDL)",) if txn.ddl else ("(admin)",) if txn.admin else ("(no rows)",))


def shape_of(txn) -> str:
    """A transaction's statement shape. Traces carry no statement text, so the shape is what it
    wrote: each table/index with its row-key count, e.g. `sbtest.sbtest1/PRIMARY x2`."""
    if txn.ddl:
        return "DDL"
    if txn.admin:
        return "admin"
    counts: dict[str, int] = {}
    for k in txn.writes:
        idx = k.partition("=")[0]
        counts[idx] = counts.get(idx, 0) + 1
    if not counts:
        return "(no rows)"
    return ", ".join(f"{i} x{n}" for i, n in sorted(counts.items()))


class _Schedule:
    """The run records of one schedule with the wait structure read back from their times.

    Entities with a timeline over [0, their end): a transaction ("t", seq), a commit group
    ("g", index) and the coordinator ("c",). A timeline is a list of segments (start, end,
    target, cause); a target is another entity (the interval is explained by what it did) or a
    leaf ("own", seq) / ("p", name)."""

    def __init__(self, runs: Sequence, workers: int, dispatch_cost, ordered: bool,
                 mariadb: bool, retry_cost: float = 0.0, cores: bool = False,
                 wakeup: float = 0.0):
        self.runs = sorted(runs, key=lambda r: r.seq)
        self.by_seq = {r.seq: r for r in self.runs}
        self.workers = workers
        # the coordinator's time to hand out a run: a constant, or per run (a profile with a
        # per-event driver cost, Profile.dispatch_cost)
        self.dc = dispatch_cost if callable(dispatch_cost) else (lambda r, c=dispatch_cost: c)
        self.ordered = ordered
        self.mariadb = mariadb
        self.retry_cost = retry_cost
        # With CPU cores modelled, the driver's dispatch and a hand-off can wait for a core,
        # which the schedule's times do not show: what no commit or mark explains is that.
        self.cores = cores
        # A waiting thread runs `wakeup` after it is signalled (MariaDB's GCO, prior-commit and
        # lock waiters): its start then lies that long after the event that released it.
        self.wakeup = wakeup
        self._timelines: dict = {}
        self.commits_at: dict[int, list] = defaultdict(list)
        self.exec_ends_at: dict[int, list] = defaultdict(list)
        for r in self.runs:
            self.commits_at[_key(r.commit)].append(r)
            self.exec_ends_at[_key(r.exec_end)].append(r)
        self._groups()
        self._held()
        self._coordinator()

    # ---- commit groups: the runs committing at one instant, in time order
    def _groups(self):
        self.groups = []                    # (formed, end, trigger seq or None, members)
        self.group_of: dict[int, int] = {}
        prev_end = 0.0
        for k in sorted(self.commits_at):
            members = sorted(self.commits_at[k], key=lambda r: r.seq)
            end = members[0].commit
            # In-order commit: the group forms when its first member is ready and the stage is
            # free; any order: when the first to be ready arrives and the stage is free.
            trigger = members[0] if self.ordered else min(members, key=lambda r: (r.ready, r.seq))
            formed = min(end, max(prev_end, trigger.ready))
            by_trigger = trigger.ready >= prev_end - EPS
            gi = len(self.groups)
            self.groups.append((formed, end, trigger.seq if by_trigger else None, members))
            for r in members:
                self.group_of[r.seq] = gi
            prev_end = end
        self.group_at = {_key(g[1]): i for i, g in enumerate(self.groups)}

    # ---- workers: when each run began to hold its worker, which run it queued behind
    def _held(self):
        self.held_from: dict[int, float] = {}
        self.queued_behind: dict[int, int] = {}
        self.on_worker: dict[int, list] = defaultdict(list)
        for r in sorted(self.runs, key=lambda r: (r.dispatch if r.dispatch is not None
                                                  else r.start, r.seq)):
            self.on_worker[r.worker].append(r)
        for w, rs in self.on_worker.items():
            prev = None
            for r in rs:
                d_end = self._dispatch_end(r)
                h = d_end
                if prev is not None and prev.commit > h:
                    h = prev.commit
                    self.queued_behind[r.seq] = prev.seq
                self.held_from[r.seq] = min(h, r.start)
                prev = r

    def _dispatch_end(self, r) -> float:
        d = r.dispatch if r.dispatch is not None else r.start
        return min(d + self.dc(r), r.start)

    # ---- the coordinator / driver: dispatching, or blocked until a commit released it
    def _coordinator(self):
        order = sorted(self.runs, key=lambda r: (r.dispatch if r.dispatch is not None
                                                 else r.start, r.seq))
        self.dispatch_order = order
        dispatches = sorted(r.dispatch for r in self.runs if r.dispatch is not None)
        commits = sorted(r.commit for r in self.runs)
        segs = []
        t = 0.0
        for r in order:
            d = r.dispatch if r.dispatch is not None else r.start
            if d > t + EPS:
                gi = self.group_at.get(_key(d))
                if gi is not None:
                    segs.append((t, d, ("g", gi), self._gap_cause(r, d, dispatches, commits)))
                elif self.cores:
                    segs.append((t, d, ("p", PSEUDO_CORES), "cpu_wait"))
                else:
                    segs.append((t, d, ("p", PSEUDO_COORD), "other"))
            end = max(t, d + self.dc(r))
            if end > max(t, d):
                segs.append((max(t, d), end, ("p", PSEUDO_DISPATCH), "dispatch"))
            t = max(t, end)
        self.dispatch_end = t
        self._timelines[_COORD] = segs

    def _gap_cause(self, nxt, d: float, dispatches, commits) -> str:
        if self.mariadb:
            return "no_free_worker"         # the driver blocks only on a full thread queue
        from .report.gantt import is_barrier
        if is_barrier(nxt):
            return "barrier"
        x = d - EPS                          # just before the release
        held = bisect.bisect_right(dispatches, x) - bisect.bisect_right(commits, x)
        return "no_free_worker" if held >= self.workers else "dependency"

    # ---- timelines
    def timeline(self, entity) -> list:
        tl = self._timelines.get(entity)
        if tl is None:
            if entity[0] == "t":
                tl = self._txn_timeline(self.by_seq[entity[1]])
            else:
                tl = self._group_timeline(entity[1])
            self._timelines[entity] = tl
        return tl

    def _group_timeline(self, gi: int) -> list:
        formed, end, trigger, _ = self.groups[gi]
        segs = []
        if formed > EPS:
            target = ("t", trigger) if trigger is not None else ("g", gi - 1)
            segs.append((0.0, formed, target, "commit_order"))
        if end > formed:
            segs.append((formed, end, ("p", PSEUDO_COMMIT), "commit"))
        return segs

    def _txn_timeline(self, r) -> list:
        segs = []

        def add(a, b, target, cause):
            if b - a > EPS:
                segs.append((a, b, target, cause))
        d = r.dispatch if r.dispatch is not None else r.start
        add(0.0, d, _COORD, "undispatched")
        d_end = self._dispatch_end(r)
        add(d, d_end, ("p", PSEUDO_DISPATCH), "dispatch")
        h = self.held_from[r.seq]
        if r.seq in self.queued_behind:
            add(d_end, h, ("t", self.queued_behind[r.seq]), "queued")
        for seg in self.start_wait(r):
            add(*seg)
        add(r.start, r.ready, ("own", r.seq), "work")
        formed = max(r.ready, self.groups[self.group_of[r.seq]][0])
        add(r.ready, formed, ("g", self.group_of[r.seq]), self.commit_cause)
        add(formed, r.commit, ("p", PSEUDO_COMMIT), "commit")
        return segs

    @property
    def commit_cause(self) -> str:
        return "commit_order" if self.ordered else "sync_wait"

    def start_wait(self, r) -> list:
        """The wait between taking the worker and starting (MariaDB's GCO, prior-commit, lock
        and retry waits), with what released it."""
        h, s = self.held_from[r.seq], r.start
        if s - h <= EPS:
            return []
        pred = self.by_seq.get(r.seq - 1)
        if r.retries and pred is not None and pred.commit <= s + EPS:
            c = min(max(pred.commit, h), s)
            return [(h, c, ("t", pred.seq), "retry"), (c, s, ("p", PSEUDO_RETRY), "retry")]
        found = self._released_at(r, pred, h, s)
        if found is None and self.wakeup > 0 and s - self.wakeup > h - EPS:
            c = max(h, s - self.wakeup)          # released then, running `wakeup` later
            found = self._released_at(r, pred, h, c)
            if found is not None:
                return [found, (c, s, ("p", PSEUDO_WAKEUP), found[3])]
        if found is not None:
            return [found]
        if self.cores:
            return [(h, s, ("p", PSEUDO_CORES), "cpu_wait")]
        return [(h, s, ("p", PSEUDO_OTHER), "other")]

    def _released_at(self, r, pred, h: float, s: float):
        """The segment (h, s, releaser, cause) when an event at instant `s` released `r`'s
        start wait: a lock holder's or the predecessor's commit, an earlier exec end (GCO)."""
        k = _key(s)
        writes = None
        for u in self.commits_at.get(k, ()):
            if u.seq >= r.seq:
                continue
            if writes is None:
                writes = set(r.txn.writes)
            if u.txn.ddl or r.txn.ddl or not writes.isdisjoint(u.txn.writes):
                return (h, s, ("t", u.seq), "lock_wait")
        prior = pred is not None and _key(pred.commit) == k
        if prior and (r.spec_wait or r.txn.ddl):
            return (h, s, ("t", pred.seq), "prior_commit_wait")
        marks = [u for u in self.exec_ends_at.get(k, ()) if u.seq < r.seq]
        if marks:
            return (h, s, ("t", max(u.seq for u in marks)), "gco_wait")
        if prior:
            return (h, s, ("t", pred.seq), "prior_commit_wait")
        return None

    # ---- attribution
    def explain(self, entity, a: float, b: float, out: dict) -> None:
        """Add to `out` (culprit -> time) who is to blame for `entity`'s interval [a, b), walking
        back from b: a working segment is blamed on its worker and the walk goes on before it;
        a waiting segment hands the rest of the interval to what it waited for (the awaited
        event happened at the wait's end, so what the waiter did earlier was slack)."""
        hops = 0
        limit = 8 * len(self.runs) + 64
        while b - a > EPS * 1e-3:
            if entity[0] in ("own", "p"):           # a leaf: it takes the whole rest
                out[entity[1]] = out.get(entity[1], 0.0) + (b - a)
                return
            hops += 1
            seg = self._segment_before(entity, b) if hops <= limit else None
            if seg is None:
                out[PSEUDO_OTHER] = out.get(PSEUDO_OTHER, 0.0) + (b - a)
                return
            s, e, target, _ = seg
            if target[0] in ("own", "p"):
                lo = max(s, a)
                out[target[1]] = out.get(target[1], 0.0) + (b - lo)
                b = lo
            else:
                entity = target
                b = min(b, e)

    def _segment_before(self, entity, b: float):
        """The segment of `entity`'s timeline that holds the instant just before `b`."""
        tl = self.timeline(entity)
        starts = self._starts(entity, tl)
        i = bisect.bisect_left(starts, b - EPS * 1e-3) - 1
        if i < 0:
            return None
        seg = tl[i]
        if seg[1] < b - EPS:          # a hole in the timeline just before b
            return None
        return seg

    def _starts(self, entity, tl):
        key = ("starts",) + entity
        starts = self._timelines.get(key)
        if starts is None:
            starts = [seg[0] for seg in tl]
            self._timelines[key] = starts
        return starts

    def _overlapping(self, entity, a: float, b: float) -> list:
        tl = self.timeline(entity)
        i = max(0, bisect.bisect_right(self._starts(entity, tl), a) - 1)
        out = []
        while i < len(tl) and tl[i][0] < b:
            if tl[i][1] > a:
                out.append(tl[i])
            i += 1
        return out

    def waits(self):
        """Every wait: (waiter, start, end, cause, entity whose timeline explains it).
        `waiter` is a seq, or "worker N" for an idle worker."""
        out = []
        for r in self.runs:
            for s, e, target, cause in self.start_wait(r):
                out.append((r.seq, s, e, cause, target))
            formed = max(r.ready, self.groups[self.group_of[r.seq]][0])
            if formed - r.ready > EPS:
                out.append((r.seq, r.ready, formed, self.commit_cause, ("g", self.group_of[r.seq])))
        end = self.dispatch_end
        for w in range(self.workers):
            rs = self.on_worker.get(w, [])
            t = 0.0
            for r in rs + [None]:
                stop = min(end, self.held_from[r.seq]) if r is not None else end
                if stop - t > EPS:
                    out.extend(self._idle(w, t, stop))
                if r is not None:
                    t = max(t, r.commit)
        return out

    def _idle(self, w: int, a: float, b: float) -> list:
        """Worker `w` idle over [a, b): explained by the coordinator, cut along its segments so
        each piece keeps the coordinator's cause."""
        out = []
        covered = a
        for s, e, target, cause in self._overlapping(_COORD, a, b):
            s, e = max(s, a), min(e, b)
            if s > covered + EPS:
                out.append((f"worker {w + 1}", covered, s, "other", ("p", PSEUDO_OTHER)))
            if e - s > EPS:
                out.append((f"worker {w + 1}", s, e, cause, target))
            covered = max(covered, e)
        if b - covered > EPS:
            out.append((f"worker {w + 1}", covered, b, "other", ("p", PSEUDO_OTHER)))
        return out


@dataclass
class BlameResult:
    scheduler: str
    workers: int
    makespan: float
    worker_time: float                       # workers x makespan
    waiting: float                           # the sum of every wait
    by_culprit: dict                         # seq or pseudo name -> blamed time
    by_cause: dict                           # wait cause -> time
    victims: dict                            # culprit -> {waiter -> time}
    critical: dict                           # culprit -> time on the critical path
    runs: dict = field(repr=False, default_factory=dict)   # seq -> TxnRun

    def top(self, n: int) -> list[tuple[int, float]]:
        """The n transactions with the most blame (ties: lower seq first)."""
        txns = [(c, v) for c, v in self.by_culprit.items() if isinstance(c, int) and v > EPS]
        txns.sort(key=lambda cv: (-cv[1], cv[0]))
        return txns[:n]


def blame_runs(runs: Sequence, *, scheduler: str, workers: int, dispatch_cost,
               ordered: bool, mariadb: bool, retry_cost: float = 0.0,
               cores: bool = False, wakeup: float = 0.0) -> BlameResult:
    """The blame of one schedule (`runs`: every committed TxnRun of one run; `dispatch_cost`:
    the coordinator's time per run, a number or a function of the run; `cores`: the profile
    models CPU cores; `wakeup`: a signalled thread's latency)."""
    sched = _Schedule(runs, workers, dispatch_cost, ordered, mariadb, retry_cost, cores, wakeup)
    # Summed exactly (fsum): the blame adds up to the waits to the last bit that rounding of
    # the walk's pieces allows, however many waits and pieces there are.
    parts_of: dict = defaultdict(list)
    cause_parts: dict = defaultdict(list)
    victims: dict = defaultdict(dict)
    waits: list[float] = []
    for waiter, a, b, cause, target in sched.waits():
        part: dict = {}
        sched.explain(target, a, b, part)
        waits.append(b - a)
        cause_parts[cause].append(b - a)
        for culprit, v in part.items():
            parts_of[culprit].append(v)
            vic = victims[culprit]
            vic[waiter] = vic.get(waiter, 0.0) + v
    waiting = math.fsum(waits)
    by_culprit = {c: math.fsum(vs) for c, vs in parts_of.items()}
    by_cause = {c: math.fsum(cause_parts.get(c, ())) for c in WAIT_CAUSES}
    by_cause.update((c, math.fsum(vs)) for c, vs in cause_parts.items() if c not in by_cause)
    makespan = max((r.commit for r in sched.runs), default=0.0)
    critical: dict = {}
    if sched.runs:
        last = max(sched.runs, key=lambda r: (r.commit, r.ready, r.seq))
        sched.explain(("t", last.seq), 0.0, last.commit, critical)
    return BlameResult(scheduler, workers, makespan, workers * makespan, waiting, by_culprit,
                       {c: v for c, v in by_cause.items() if v > 0 or c in WAIT_CAUSES},
                       dict(victims), critical, sched.by_seq)


def blame_trace(txns, scheduler: str, workers: int, profile, *, bugs=frozenset(),
                tracker_options: dict | None = None,
                applier_options: dict | None = None) -> BlameResult:
    """Simulate `scheduler` with `workers` on `txns` and blame its waits."""
    from .keys import scan, unknown_message
    from .schedulers import SchedulerError, collect, parse_scheduler
    sched = parse_scheduler(scheduler)
    txns = txns if isinstance(txns, list) else list(txns)
    unknown = scan(txns).unknown
    if unknown:     # a wait's culprit is found through the keys both transactions write
        raise SchedulerError(unknown_message(unknown, "blame"))
    if sched.is_serial:
        workers = 1                          # the serial replay has one thread
    runs, _ = collect(sched, txns, workers, profile, bugs=bugs,
                      tracker_options=tracker_options, applier_options=applier_options)
    # a NaN (inf - inf) compares false with everything, so max() alone can miss it
    end = max((r.commit for r in runs), default=0.0)
    bad = next((t for r in runs for t in (r.dispatch, r.start, r.exec_end, r.ready, r.commit)
                if t is not None and not math.isfinite(t)), None)
    if bad is not None or not math.isfinite(end / EPS):   # blame keys times at EPS resolution
        end = bad if bad is not None else end
        from .simcore import SimulationError
        raise SimulationError(f"the trace's costs add up to {end} µs under profile "
                              f"{profile.name}, beyond what a float holds: nothing to blame")
    mariadb = bool(sched.applier and sched.applier.startswith("mariadb"))
    return blame_runs(runs, scheduler=sched.name, workers=workers,
                      dispatch_cost=lambda r: profile.dispatch_cost(r.txn, workers),
                      ordered=commits_in_order(sched, applier_options or {}, bugs),
                      mariadb=mariadb, retry_cost=profile.retry, cores=bool(profile.cores),
                      wakeup=profile.wakeup if mariadb else 0.0)


def commits_in_order(sched, applier_options: dict, bugs=frozenset()) -> bool:
    """Whether the scheduler's commit stage is ordered (simcore.CommitStage `ordered`)."""
    if sched.is_serial:
        return True
    if sched.applier == "mysql":
        if sched.tracker == "database":
            return False
        return (applier_options.get("preserve_commit_order", True)
                and "commit_order_unenforced" not in bugs)
    return True


# ------------------------------------------------------------------ aggregation / output

def summary(res: BlameResult, *, top: int = 10) -> dict:
    """The JSON of a blame: headline, per-transaction, per-table, per-shape, per-cause."""
    def share(v):
        return round(v / res.worker_time, 6) if res.worker_time > 0 else None

    def cp_share(v):
        return round(v / res.makespan, 6) if res.makespan > 0 else None

    txn_rows = []
    for seq, v in res.top(top):
        run = res.runs[seq]
        vic = res.victims.get(seq, {})
        row = {"seq": seq, "blame": round(v, 6), "share": share(v),
               "critical_path": round(res.critical.get(seq, 0.0), 6),
               "critical_share": cp_share(res.critical.get(seq, 0.0)),
               "exec": run.exec, "rows": len(run.txn.writes),
               "tables": list(tables_of(run.txn)), "shape": shape_of(run.txn),
               "victims": sum(1 for w, x in vic.items() if x > EPS),
               "worst_victims": [{"waiter": w, "time": round(x, 6)} for w, x in sorted(
                   vic.items(), key=lambda wx: (-wx[1], str(wx[0])))[:5]]}
        if run.txn.gtid:
            row["gtid"] = run.txn.gtid
        txn_rows.append(row)
    tables: dict[str, float] = {}
    shapes: dict[str, list] = {}
    for c, v in res.by_culprit.items():
        if not isinstance(c, int):
            continue
        txn = res.runs[c].txn
        ts = tables_of(txn)
        for t in ts:                         # a transaction's blame is shared by its tables
            tables[t] = tables.get(t, 0.0) + v / len(ts)
        s = shapes.setdefault(shape_of(txn), [0.0, 0])
        s[0] += v
        s[1] += 1
    top_sum = sum(v for _, v in res.top(top))
    top_cp = sum(res.critical.get(s, 0.0) for s, _ in res.top(top))
    return {
        "scheduler": res.scheduler, "workers": res.workers,
        "makespan": round(res.makespan, 6), "worker_time": round(res.worker_time, 6),
        "waiting": round(res.waiting, 6), "waiting_share": share(res.waiting),
        "headline": {"transactions": len(txn_rows), "blame": round(top_sum, 6),
                     "share": share(top_sum), "critical_path": round(top_cp, 6),
                     "critical_share": cp_share(top_cp)},
        "by_cause": {c: round(v, 6) for c, v in res.by_cause.items() if v > EPS},
        "stages": {p: round(res.by_culprit.get(p, 0.0), 6) for p in PSEUDO
                   if res.by_culprit.get(p, 0.0) > EPS},
        "transactions": txn_rows,
        "tables": [{"table": t, "blame": round(v, 6), "share": share(v)}
                   for t, v in sorted(tables.items(), key=lambda tv: (-tv[1], tv[0]))[:top]
                   if v > EPS],
        "shapes": [{"shape": s, "blame": round(v[0], 6), "share": share(v[0]),
                    "transactions": v[1]}
                   for s, v in sorted(shapes.items(), key=lambda sv: (-sv[1][0], sv[0]))[:top]
                   if v[0] > EPS],
        "critical_path": {str(c): round(v, 6) for c, v in sorted(
            res.critical.items(), key=lambda cv: (-cv[1], str(cv[0])))[:top]},
    }


def headline_text(s: dict) -> str:
    h = s["headline"]
    if not h["transactions"]:
        return (f"{s['scheduler']}, {s['workers']} workers: no transaction holds the replica "
                f"back (waits: {_pct(s['waiting_share'])} of worker time).")
    n = h["transactions"]
    who, cost, them, lie = (("This transaction", "costs", "it", "it lies") if n == 1 else
                            (f"These {n} transactions", "cost", "them", "they lie"))
    return (f"{who} {cost} your replica {_pct(h['share'])} of its worker time "
            f"({s['scheduler']}, {s['workers']} workers: {h['blame']:.6g} of "
            f"{s['worker_time']:.6g} worker-µs waiting for {them}); {lie} on the critical path "
            f"for {_pct(h['critical_share'])} of the makespan.")


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_table(s: dict) -> str:
    lines = [headline_text(s), "",
             f"makespan {s['makespan']:.6g} µs; waiting {s['waiting']:.6g} worker-µs "
             f"({_pct(s['waiting_share'])} of {s['workers']} x makespan)", ""]
    lines.append(f"{'seq':>6} {'gtid':<16} {'blame':>12} {'share':>7} {'crit.path':>10} "
                 f"{'exec':>9} {'rows':>5} {'victims':>7}  shape")
    for r in s["transactions"]:
        lines.append(f"{r['seq']:>6} {r.get('gtid', '-'):<16} {r['blame']:>12.6g} "
                     f"{_pct(r['share']):>7} {_pct(r['critical_share']):>10} {r['exec']:>9.6g} "
                     f"{r['rows']:>5} {r['victims']:>7}  {r['shape']}")
    if s["stages"]:
        lines += ["", "shared stages: " + ", ".join(f"{p} {v:.6g}" for p, v in s["stages"].items())]
    if s["by_cause"]:
        lines += ["by cause: " + ", ".join(f"{c} {v:.6g}" for c, v in s["by_cause"].items())]
    if s["tables"]:
        lines += ["", "by table:"] + [f"  {t['table']:<40} {t['blame']:>12.6g} "
                                      f"{_pct(t['share']):>7}" for t in s["tables"]]
    if s["shapes"]:
        lines += ["", "by shape (what was written; traces carry no statement text):"] + [
            f"  {x['shape']:<60} {x['blame']:>12.6g} {_pct(x['share']):>7} "
            f"({x['transactions']} txn)" for x in s["shapes"]]
    return "\n".join(lines) + "\n"
