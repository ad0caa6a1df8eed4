#!/usr/bin/env python3
"""Why the relaxed parallel drains are slow in the model (docs/lag-check/relaxed-drains-model.md):
each stored campaign's relaxed drains through its stored profile, one term changed at a time,
and the model's time per transaction beside what the rig measured in the drain.

    python traces/record/relaxed_drains.py [CAMPAIGN_DIR ...] [--jobs N]

CAMPAIGN_DIR: a `lag_check.py measure` folder with its `profile.json` (default: campaigns J and
I). A drain is predicted as `lag_check.py report` predicts it (`lag_check.predict`: `lag` from
the run's own binlog, its stop as the backlog); the measured figures are `lag_check.measured`'s.
The time split replays each drain's transactions as a closed backlog in the reference engine
and reads the model's own schedule. Markdown on stdout; development data, not a fair test.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

CAMPAIGNS = ("traces/calibration/lag_check_j", "traces/calibration/lag_check_i")
# The applier's own O_DIRECT redo pwrites in the quiet perf drains (traces/calibration/
# redo_writes, m2 and m3: relaxed serial 70 and 65 µs, W=1 62 µs medians): their median, the
# write's price where the probe under the replica's load read 96-114.
QUIET_LOG_WRITE = 65.0
# The same drains' block-layer device write (issue to completion), relaxed serial: 57 µs median
# (m2); the pwrite's on-core part is the rest, 70 - 57 = 13 µs, where the probe priced 22-32.
QUIET_LOG_WRITE_CPU = 13.0


def relaxed(p):
    """The profile as `predict` will use it for a relaxed run (with_durability is idempotent)."""
    return p.with_durability("relaxed")


# Each variation: one term of the (relaxed) profile changed; the pre-registered one first.
VARIATIONS = [
    ("pre-registered", lambda p: p),
    (f"log_write {QUIET_LOG_WRITE:g} (quiet perf pwrite)",
     lambda p: relaxed(replace(p, log_write=QUIET_LOG_WRITE))),
    (f"log_write_cpu {QUIET_LOG_WRITE_CPU:g} (perf: pwrite - device)",
     lambda p: relaxed(replace(p, log_write_cpu=QUIET_LOG_WRITE_CPU))),
    ("redo_write_shared off (2 writes a txn)",
     lambda p: replace(relaxed(p), redo_write_shared=False)),
    ("worker's parallel CPU off (coordination*, shared_lock_thread)",
     lambda p: relaxed(replace(p, coordination=0.0, coordination_event=0.0,
                               coordination_thread=0.0, shared_lock_thread=0.0))),
    ("coordination_thread off", lambda p: relaxed(replace(p, coordination_thread=0.0))),
    ("wakeup off", lambda p: relaxed(replace(p, wakeup=0.0))),
    ("handoff_event off", lambda p: relaxed(replace(p, handoff_event=0.0))),
    ("dispatch_thread off", lambda p: relaxed(replace(p, dispatch_thread=0.0))),
    ("dispatch off (dispatch*, the driver's CPU)",
     lambda p: relaxed(replace(p, dispatch=0.0, dispatch_event=0.0, dispatch_thread=0.0))),
    ("background_cpu off", lambda p: relaxed(replace(p, background_cpu=0.0))),
    ("commit_serial off", lambda p: relaxed(replace(p, commit_serial=0.0))),
    ("per_core_queues off", lambda p: relaxed(replace(p, per_core_queues=False))),
    # two together (what is left once the write is priced quiet): not one term at a time
    (f"log_write {QUIET_LOG_WRITE:g} + worker's parallel CPU off",
     lambda p: relaxed(replace(p, log_write=QUIET_LOG_WRITE, coordination=0.0,
                               coordination_event=0.0, coordination_thread=0.0,
                               shared_lock_thread=0.0))),
    (f"log_write {QUIET_LOG_WRITE:g} + worker's parallel CPU off + background_cpu off",
     lambda p: relaxed(replace(p, log_write=QUIET_LOG_WRITE, coordination=0.0,
                               coordination_event=0.0, coordination_thread=0.0,
                               shared_lock_thread=0.0, background_cpu=0.0))),
]
# the variations whose time split is printed beside the measured one
SPLITS = (0, 1, len(VARIATIONS) - 1)


def drains(campaign: str) -> list[tuple[str, str]]:
    """(run name, run folder) of a campaign's relaxed runs with a stop (its drains)."""
    import json
    folder = os.path.join(campaign, "runs")
    out = []
    for d in sorted(os.listdir(folder)):
        meta = json.load(open(os.path.join(folder, d, "meta.json")))
        run = meta["run"]
        if run["durability"] == "relaxed" and run.get("stop_for"):
            out.append((d, os.path.join(folder, d)))
    return out


def workers_of(run: dict) -> int:
    return 1 if run["mode"] == "serial" else run["threads"]


def split(txns, run: dict, profile) -> dict:
    """The model's closed backlog of `txns` (reference engine) per transaction, µs: the wall
    time, CPU by thread and the redo writes. CPU is the profile's terms over the schedule's own
    counts (binlog groups: distinct commit times; prepare writes: distinct ready times, one
    grouped write covering every request waiting); a serial replica has no core modelled, so
    its write CPU is on its path like the rest."""
    from lag_check import SCHEDULERS
    from commitsched.schedulers import run_scheduler
    p = relaxed(profile)
    w = workers_of(run)
    runs = []
    run_scheduler(SCHEDULERS[run["mode"]], txns, w, p, runs.append, engine="reference")
    n = len(runs)
    wall = max(r.commit for r in runs) / n
    groups = len({r.commit for r in runs})
    prepares = len({r.ready for r in runs})
    write_cpu = min(p.log_write_cpu, p.log_write)
    driver = sum(p.dispatch_cost(r.txn, w) for r in runs) / n
    worker = sum(r.exec for r in runs) / n
    if run["mode"] == "serial":
        # simulate_serial: dispatch, exec, the prepare's write, the group's write, one by one
        writes_issued = 2.0
        member = background = 0.0
    else:
        rides = p.redo_write_shared and w > 1
        writes_issued = (prepares + (0 if rides else groups)) / n
        member = sum(p.member_cost(r.txn) for r in runs) / n
        background = p.background_cpu + sum(p.contention_cpu(r.txn, w) for r in runs) / n
    writes_cpu = write_cpu * writes_issued
    appliers = driver + worker + member + writes_cpu

    def mean(f):
        return sum(f(r) for r in runs) / n
    # a transaction's path (latencies, overlapping between workers): the execution's wait for
    # the core, its prepare (the redo write, its CPU's wait for the core) and ready to commit
    # (the group commit: the leader's work, the group's write, the wake-up). Its wait to start
    # is left out: in a closed backlog it is mostly the time queued behind its thread's others.
    waits = {"core": (0.0 if run["mode"] == "serial" else
                      mean(lambda r: r.exec_end - r.start - r.exec - p.event_handoff(r.txn))),
             "prepare": mean(lambda r: r.ready - r.exec_end),
             "to_commit": mean(lambda r: r.commit - r.ready)}
    return {"wall": wall, "rate": 1e6 / wall, "driver": driver, "worker": worker,
            "member": member, "writes_cpu": writes_cpu, "appliers": appliers,
            "background": background, "cpu": appliers + background,
            "writes": writes_issued, "write_us": p.log_write,
            "group": n / groups, "idle": wall - appliers - background, "waits": waits}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaigns", nargs="*", default=list(CAMPAIGNS))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--split-only", action="store_true",
                    help="only the time split (a minute; the ablation takes ~15)")
    a = ap.parse_args(argv)
    from lag_check import SCHEDULERS, measured, predict
    from commitsched.profiles import ProfileError, load_profile_file
    from commitsched.scoring import fork_map
    rows = []                                   # (campaign, run name, measured, run, profile)
    for c in a.campaigns:
        try:
            prof = load_profile_file(os.path.join(c, "profile.json"))
            found = [(name, measured(d)) for name, d in drains(c)]
        except (OSError, ValueError, KeyError, IndexError, ProfileError) as e:
            raise SystemExit(f"relaxed_drains: {c}: {e}") from None
        rows += [(os.path.basename(c.rstrip("/")), name, m, m["meta"]["run"], prof)
                 for name, m in found if m.get("drain_s") is not None]
    if not rows:
        raise SystemExit("relaxed_drains: no relaxed drain in " + ", ".join(a.campaigns))
    tasks = ([] if a.split_only else
             [(i, v) for i in range(len(rows)) for v in range(len(VARIATIONS))])

    def work(task):
        i, v = task
        _, _, m, run, prof = rows[i]
        p = VARIATIONS[v][1](prof)
        return predict(m, run, SCHEDULERS[run["mode"]], workers_of(run), p).get("drain_s")
    pred = {}
    for task, drain in zip(tasks, fork_map(work, tasks, a.jobs)):
        pred[task] = drain
        print(f"relaxed_drains: {rows[task[0]][0]} {rows[task[0]][1]}: "
              f"{VARIATIONS[task[1]][0]}", file=sys.stderr, flush=True)
    splits = list(fork_map(lambda i: {v: split(rows[i][2]["txns"], rows[i][3],
                                                VARIATIONS[v][1](rows[i][4]))
                                      for v in SPLITS}, range(len(rows)), a.jobs))
    if not a.split_only:
        print(ablation(rows, pred))
        print()
        print(per_drain(rows, pred))
        print()
    print(split_table(rows, splits))
    return 0


def _err(p, m):
    return None if p is None else (p - m) / m


def ablation(rows, pred) -> str:
    """Each variation's median |error| over the drains (all, serial, parallel)."""
    out = ["| variation | median \\|error\\|, all drains | serial | parallel | mean signed error,"
           " parallel |", "|---|---|---|---|---|"]
    for v, (label, _) in enumerate(VARIATIONS):
        errs = {"all": [], "serial": [], "parallel": []}
        for i, (_, _, m, run, _) in enumerate(rows):
            e = _err(pred[(i, v)], m["drain_s"])
            if e is None:
                e = float("inf")                # never drains: as wrong as it gets
            errs["all"].append(e)
            errs["serial" if run["mode"] == "serial" else "parallel"].append(e)

        def med(xs):
            return f"{statistics.median(abs(x) for x in xs):.0%} ({len(xs)})" if xs else "-"
        par = [x for x in errs["parallel"] if x != float("inf")]
        mean = f"{sum(par) / len(par):+.0%}" if par else "-"
        out.append(f"| {label} | {med(errs['all'])} | {med(errs['serial'])} | "
                   f"{med(errs['parallel'])} | {mean} |")
    return "\n".join(out)


def per_drain(rows, pred) -> str:
    heads = [label.split(" (")[0] for label, _ in VARIATIONS]
    out = ["| campaign | drain | measured s | " + " | ".join(heads) + " |",
           "|---|---|---|" + "---|" * len(heads)]
    for i, (c, name, m, _, _) in enumerate(rows):
        cells = []
        for v in range(len(VARIATIONS)):
            p = pred[(i, v)]
            cells.append("never" if p is None else f"{_err(p, m['drain_s']):+.0%}")
        out.append(f"| {c} | {name} | {m['drain_s']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def split_table(rows, splits) -> str:
    """The model's µs a transaction (closed backlog) beside the rig's, in the drain."""
    out = ["| campaign | drain | profile | apply/s | wall µs/txn | appliers' CPU: driver + "
           "worker + leader + redo writes' = total | other threads' CPU | core idle | redo "
           "writes/txn x µs | binlog group | a txn's path: core wait in execution / "
           "prepare / ready to commit |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, (c, name, m, _, _) in enumerate(rows):
        th = m.get("threads_in_drain") or {}
        cpu = m.get("cpu_us_per_txn_in_drain")
        wall = th.get("wall_us_per_txn")
        if th and cpu is not None:
            # the process's CPU less the appliers' and the IO thread's (which the rig moves to
            # the other core): the server's other threads, on the replica's core
            io = th["io_cpu_us_per_txn"]
            other = cpu - th["applier_cpu_us_per_txn"] - io
            meas_cpu = (f"{th['applier_cpu_us_per_txn']:.0f} (run-queue wait "
                        f"{th['applier_runq_us_per_txn']:.0f})")
            out.append(f"| {c} | {name} | measured | {m['apply_rate_in_drain']:.0f} | "
                       f"{wall:.0f} | {meas_cpu} | {other:.0f} (+ IO thread {io:.0f}, other "
                       f"core) | {wall - (cpu - io):.0f} | - | - | - |")
        for v, s in splits[i].items():
            label = "model" if v == 0 else "model, " + VARIATIONS[v][0]
            out.append(f"| | | {label} | {s['rate']:.0f} | {s['wall']:.0f} | "
                       f"{s['driver']:.0f} + {s['worker']:.0f} + {s['member']:.0f} + "
                       f"{s['writes_cpu']:.0f} = {s['appliers']:.0f} | {s['background']:.0f} | "
                       f"{s['idle']:.0f} | {s['writes']:.2f} x {s['write_us']:.0f} | "
                       f"{s['group']:.2f} | " + " / ".join(f"{x:.0f}" for x in s["waits"].values())
                       + " |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
