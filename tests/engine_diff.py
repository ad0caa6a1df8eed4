"""The differential comparison of the two engines (tests/test_engine_*.py): one run in the
reference model and in the compiled core, and where they differ.

Tolerance: none. Both engines do the same IEEE-754 double operations in the same order (the
core's cost functions and event handlers are the Python ones line by line, and ties in time
break by push order in both heaps), so every time, sum and count must be equal bit for bit. A
tolerance would hide the very thing the suite is for: a handler that adds in another order is
a handler that does something else somewhere.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from commitsched import columnar, engine
from commitsched.metrics import RunMetrics
from commitsched.profiles import PROFILES, Profile, get_profile
from commitsched.schedulers import SchedulerError, parse_scheduler, run_scheduler
from commitsched.simcore import Deadlock

# Every scheduler the compiled core has (engine.COMPILED_TRACKERS x COMPILED_APPLIERS that fit).
SCHEDULERS = ("serial", "serial+mysql", "commit_order+mysql", "writeset+mysql",
              "writeset_session+mysql", "commit_id+mariadb_conservative",
              "commit_id+mariadb_optimistic", "commit_id+mariadb_aggressive",
              "slave_group_commit+mariadb_conservative", "slave_group_commit+mariadb_optimistic",
              "slave_group_commit+mariadb_aggressive", "database+mysql")
WORKERS = (1, 2, 3, 4, 8, 16)
SCHEDULE_FIELDS = ("dispatch", "start", "exec_end", "commit", "worker", "retries")


def every_term(base: Profile, **kw) -> Profile:
    """`base` with every numeric term of the profile non-zero (distinct values, so that two terms
    read in each other's place show), cores limited, per-core queues: a profile that exercises
    every path a term switches on."""
    values = {}
    for i, f in enumerate(dataclasses.fields(Profile)):
        if f.name in engine.DESCRIPTIVE_PROFILE_FIELDS or f.name == "cores":
            continue
        v = getattr(base, f.name)
        if isinstance(v, bool):
            values[f.name] = True
        elif isinstance(v, (int, float)) and v == 0:
            values[f.name] = 0.25 + 0.125 * (i % 7)
    values.update(kw)
    return dataclasses.replace(base, name=f"{base.name}+every-term", **values)


def profiles() -> list[Profile]:
    """Every named profile, and variants that switch the paths the named ones leave off: each
    replica binlog setting, cores shared or per core, every term at once."""
    out = [get_profile(name) for name in PROFILES]
    out.append(get_profile("replica16", log_replica_updates=True))
    out.append(get_profile("durable-mariadb", log_replica_updates=False)
               if "durable-mariadb" in PROFILES else get_profile("durable", cores=2))
    out.append(dataclasses.replace(get_profile("replica16", cores=2), per_core_queues=False,
                                   name="replica16-2cores-shared-queue"))
    out.append(every_term(get_profile("durable"), cores=3, per_core_queues=True,
                          log_replica_updates=False))
    # one core: no contention CPU (Profile.contention_cpu), every thread queued on the one core
    out.append(every_term(get_profile("durable"), cores=1, per_core_queues=True,
                          log_replica_updates=False))
    # the shared device held for part of each flush (disk_hold): flushes overlap past it
    out.append(every_term(get_profile("durable"), cores=2, disk_hold=0.3))
    out.append(every_term(get_profile("durable"), disk_hold=0.3))
    # ... or for a share of each flush (disk_hold_share, what calibrate fits)
    out.append(every_term(get_profile("durable"), cores=2, disk_hold_share=0.6))
    out.append(every_term(get_profile("durable"), cores=2, per_core_queues=False,
                          commit_grouped=False, shared_disk=False))
    # relaxed with an unbuffered redo log: the commit step is the log write alone, grouped
    out.append(every_term(get_profile("durable"), cores=2, log_write=30.0)
               .with_durability("relaxed"))
    # ... and without cores (the group's write requested by an event, not after the leader's CPU)
    out.append(every_term(get_profile("durable"), log_write=30.0).with_durability("relaxed"))
    return out


def reference_run(sched: str, txns, workers: int, profile, **kw) -> tuple:
    """("ok", metrics, blocked, schedule) | ("unfit" | "deadlock", message)."""
    m = RunMetrics(workers)
    runs = []

    def sink(run):
        m(run)
        runs.append(run)

    try:
        blocked = run_scheduler(sched, iter(txns), workers, profile, sink, engine="reference",
                                **kw)
    except SchedulerError as e:
        return "unfit", str(e)
    except Deadlock as e:
        return "deadlock", str(e)
    runs.sort(key=lambda r: r.seq)
    schedule = {k: np.array([getattr(r, k) for r in runs], np.float64)
                for k in ("dispatch", "start", "exec_end", "commit")}
    schedule["worker"] = np.array([r.worker + 1 for r in runs], np.int64)
    schedule["retries"] = np.array([r.retries for r in runs], np.int64)
    return "ok", _metrics(m), dict(blocked), schedule


def compiled_run(sched: str, columns, workers: int, profile, *, inject=frozenset(), **kw) -> tuple:
    """The same from the core. `inject`: catalogue bugs given to the core alone (the
    demonstration that the suite catches a bug in one engine)."""
    bugs = frozenset(kw.pop("bugs", ())) | frozenset(inject)
    try:
        out = engine.simulate(parse_scheduler(sched), columns, workers, profile, bugs=bugs,
                              schedule=True, **kw)
    except SchedulerError as e:
        return "unfit", str(e)
    except Deadlock as e:
        return "deadlock", str(e)
    m = RunMetrics(workers)
    engine.fill_metrics(m, out)
    schedule = {k: out[k] for k in ("dispatch", "start", "exec_end", "commit")}
    schedule["worker"] = out["worker"].astype(np.int64)
    schedule["retries"] = out["retries_each"].astype(np.int64)
    return "ok", _metrics(m), dict(out["blocked"]), schedule


def _metrics(m: RunMetrics) -> dict:
    return {"count": list(m.count), "busy": list(m.busy), "held": list(m.held),
            "transactions": m.transactions, "makespan": m.makespan, "retries": m.retries,
            "wasted": m.wasted}


def difference(ref: tuple, got: tuple) -> str | None:
    """Where two outcomes differ, in words, or None when they are equal bit for bit."""
    if ref[0] != got[0] or ref[0] != "ok":
        return None if ref == got else f"outcome {ref[:2]} != {got[:2]}"
    _, m1, b1, s1 = ref
    _, m2, b2, s2 = got
    for k in m1:
        if m1[k] != m2[k]:
            return f"metrics {k}: {m1[k]} != {m2[k]}"
    for k in b1:
        if b1[k] != b2.get(k):
            return f"blocked {k}: {b1[k]!r} != {b2.get(k)!r}"
    for k in SCHEDULE_FIELDS:
        x, y = s1[k], s2[k]
        if x.shape != y.shape:
            return f"{k}: {x.shape} != {y.shape} transactions"
        same = (x == y) | (np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else x == y
        if not same.all():
            i = int(np.argmin(same))
            return f"{k} of the transaction at position {i}: {x[i]!r} != {y[i]!r}"
    return None


def compare(sched: str, txns: list, columns, workers: int, profile, *, inject=frozenset(),
            **kw) -> str | None:
    """The two engines on one run: None when equal, else where they differ."""
    ref = reference_run(sched, txns, workers, profile, **kw)
    got = compiled_run(sched, columns, workers, profile, inject=inject, **kw)
    d = difference(ref, got)
    return None if d is None else f"{sched} W={workers} {profile.name}: {d}"


def columns_of(txns) -> columnar.Columns:
    return columnar.from_txns(txns)
