"""device16_w3, a reading of the first run (not part of any registered rule): where replica16's
model misses, by replaying the registered profile with one term changed at a time.

    python traces/record/new_workloads16_reading.py   # reading.md and its part of the doc

(a) update_non_index_8 durable conservative: the model is slower at W=16 than at W=8; each
    pipeline term zeroed in turn, and the concurrency in the model's own schedule.
(b) relaxed from start-up: the model's serial replay against the measured serial apply, and a
    what-if (not fair: it uses the measured serial applies) with the execution re-solved from them.
Every figure is simulated here or read from the run's files.
"""
from __future__ import annotations

import os
import statistics
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import new_workloads16 as w3  # noqa: E402

d16, fm = w3.d16, w3.fm
BEGIN = "<!-- device16_w3 reading: begin (make device16-w3-reading) -->"
END = "<!-- device16_w3 reading: end -->"
HEADING = "### Reading of the first run (not part of the rule)\n\n"
TERMS = ("shared_lock_thread", "wakeup", "coordination_event", "handoff_event", "commit_serial",
         "dispatch_thread", "coordination_thread")
UNI = "update_non_index_8"


def _workloads(folder: str, data: dict) -> dict[str, fm.Workload]:
    names = w3.workload_names(data)
    ser = {d: w3.serial_seconds(data[d], names) for d in w3.DURABILITIES}
    return {w: fm.Workload(w, os.path.join(folder, w, "trace.jsonl.gz"),
                           {d: ser[d][w] for d in ser}) for w in names}


def concurrency(wl: fm.Workload, prof, mode: str, n: int) -> dict:
    """The model's own schedule: µs per transaction, mean execution path, and the mean number of
    transactions executing when one starts (itself included)."""
    import numpy as np
    from commitsched import engine
    from commitsched.schedulers import parse_scheduler
    r = engine.simulate(parse_scheduler(f"commit_id+mariadb_{mode}"), wl.columns, n, prof,
                        schedule=True)
    s, e = np.asarray(r["start"]), np.asarray(r["exec_end"])
    running = (np.searchsorted(np.sort(s), s, side="right")
               - np.searchsorted(np.sort(e), s, side="right"))
    return {"us_per_txn": float(np.asarray(r["commit"]).max()) / len(s),
            "exec_us": float((e - s).mean()), "running": float(running.mean())}


def reading(folder: str = w3.FOLDER) -> dict:
    data = w3.load(folder)
    meas = {d: d16.measured(data[d]) for d in w3.DURABILITIES}
    wls = _workloads(folder, data)
    prof = w3.registered_profile(folder)
    durable = prof.with_durability("durable")
    uni = wls[UNI]
    a = {"measured": {n: meas["durable"][(UNI, "conservative", n)]["median"] for n in (8, 16)},
         "ablation": {}, "schedule": {}}
    for term in ("none",) + TERMS:
        p = durable if term == "none" else replace(durable, **{term: 0.0})
        a["ablation"][term] = {n: fm.predict(uni, p, "conservative", n) for n in (8, 16)}
    for n in (8, 16):
        a["schedule"][n] = concurrency(uni, durable, "conservative", n)
    import replica16 as r16
    a["replica16_running_w16"] = {w: concurrency(fm.Workload(w, r16.trace_path(w), 1.0), durable,
                                                 "conservative", 16)["running"]
                                  for w in r16.WORKLOADS}
    a["shared_lock_thread"] = durable.shared_lock_thread
    a["lock_charge_us"] = {n: durable.shared_lock_thread * (durable.running_workers(n) - 1)
                           for n in (8, 16)}
    a["groups"] = {"primary": uni.full_count / _group_commits(folder, UNI),
                   "trace_commit_ids": uni.full_count / len({t.commit_id for t in uni.txns})}
    b = {}
    for w, wl in wls.items():
        relaxed = prof.with_durability("relaxed")
        redone = fm.with_exec(relaxed, [wl.only("relaxed")])
        model_us = fm.makespan(wl.txns, "serial", 1, relaxed, wl.columns) / len(wl.txns)
        rows = {}
        for mode in ("conservative", "optimistic"):
            for n in (2, 4, 8, 16):
                m = meas["relaxed"][(w, mode, n)]
                rows[f"{mode}/{n}"] = {
                    "measured": m["median"],
                    "measured_us": statistics.median(m["seconds"]) * 1e6 / wl.full_count,
                    "model": fm.predict(wl, relaxed, mode, n),
                    "what_if": fm.predict(wl, redone, mode, n),
                    "what_if_no_lock": fm.predict(wl, replace(redone, shared_lock_thread=0.0),
                                                  mode, n)}
        b[w] = {"serial_model_us": model_us, "serial_measured_us": wl.serial_us_by["relaxed"],
                "driver_us": relaxed.dispatch_event * wl.mean_events,
                "exec_model_us": relaxed.exec_default + relaxed.exec_row * wl.mean_rows,
                "exec_left_us": redone.exec_default, "configs": rows,
                "durable_serial_measured_us": wl.serial_us_by["durable"],
                "durable_driver_and_flush_us": durable.dispatch_event * wl.mean_events
                + durable.commit_default}
    return {"a": a, "b": b}


def _group_commits(folder: str, w: str) -> int:
    import json
    with open(os.path.join(folder, w, "meta.json")) as f:
        return json.load(f)["status_delta"]["Binlog_group_commits"]


def _pct(pred: float, meas: float) -> str:
    return f"{100 * (pred / meas - 1):+.0f}%"


def text(r: dict) -> str:
    a, b = r["a"], r["b"]
    ab, sch, lock = a["ablation"], a["schedule"], a["lock_charge_us"]
    others = ", ".join(f"`{t}` {ab[t][8]:.2f} / {ab[t][16]:.2f}" for t in TERMS[1:])
    uni, wo = b[UNI], b["write_only_32"]
    opt = [uni["configs"][f"optimistic/{n}"] for n in (2, 4, 8, 16)]
    wo4 = [wo["configs"][f"{m}/{n}"] for m in ("conservative", "optimistic") for n in (4, 8, 16)]
    cons = [uni["configs"][f"conservative/{n}"] for n in (8, 16)]

    def span(rows, key):
        errs = [100 * (x[key] / x["measured"] - 1) for x in rows]
        return f"{min(errs):+.0f}% to {max(errs):+.0f}%"
    return (
        f"(a) **{UNI} durable conservative, W=16 below W=8 in the model ({ab['none'][8]:.2f} at "
        f"W=8, {ab['none'][16]:.2f} at W=16; measured {a['measured'][8]:.2f} and "
        f"{a['measured'][16]:.2f}): `shared_lock_thread`.** Zeroed, the model gives "
        f"{ab['shared_lock_thread'][8]:.2f} / {ab['shared_lock_thread'][16]:.2f} (W=8 / W=16); "
        f"every other term zeroed in turn leaves W=16 below W=8 ({others}). The term charges "
        f"every transaction {lock[8]:.0f} µs at W=8 and {lock[16]:.0f} µs at W=16 (its "
        f"{a['shared_lock_thread']:.2f} µs x (threads - 1)), so the mean execution path grows from "
        f"{sch[8]['exec_us']:.0f} to {sch[16]['exec_us']:.0f} µs, while in the model's own "
        f"schedule only {sch[8]['running']:.2f} (W=8) and {sch[16]['running']:.2f} (W=16) "
        f"transactions execute when one starts: the groups are small "
        f"({a['groups']['primary']:.2f} transactions per primary group commit, "
        f"{a['groups']['trace_commit_ids']:.2f} per commit id in the trace), so conservative "
        f"mode cannot hide the longer path, and the charge is per configured thread, not per "
        f"thread contending. What it does not explain: without the term the model is too fast "
        f"at both ({_pct(ab['shared_lock_thread'][8], a['measured'][8])}, "
        f"{_pct(ab['shared_lock_thread'][16], a['measured'][16])}), so the level is not the "
        f"term alone, and the fit's own workloads, with larger groups, have more transactions "
        f"executing at W=16 in the same model (" + ", ".join(
            f"{w} {v:.2f}" for w, v in a["replica16_running_w16"].items())
        + ") but still far fewer than the 16 threads the term counts.\n\n"
        f"(b) **relaxed from start-up, over-predicted on {UNI} optimistic "
        f"({span(opt, 'model')}) and write_only_32 at W>=4 ({span(wo4, 'model')}): the model's "
        f"serial replay is too slow, not its parallel one.** Its relaxed serial replay takes "
        f"{uni['serial_model_us']:.1f} µs a transaction on {UNI} against "
        f"{uni['serial_measured_us']:.1f} measured, {wo['serial_model_us']:.1f} against "
        f"{wo['serial_measured_us']:.1f} on write_only_32: replica16's execution line "
        f"(`exec_default` + `exec_row` x rows: {uni['exec_model_us']:.1f} and "
        f"{wo['exec_model_us']:.1f} µs) where the measured serial applies leave "
        f"{uni['exec_left_us']:.1f} and {wo['exec_left_us']:.1f} µs above the driver's "
        f"{uni['driver_us']:.1f} and {wo['driver_us']:.1f} µs per transaction "
        f"(`dispatch_event` x events). The fastest measured configurations run at or below "
        f"that driver time ({min(x['measured_us'] for x in opt):.1f} µs on {UNI}, "
        f"{min(x['measured_us'] for x in wo4):.1f} on write_only_32), so the speedup is about "
        f"serial / floor, and a serial replay "
        f"{uni['serial_model_us'] / uni['serial_measured_us']:.2f}x and "
        f"{wo['serial_model_us'] / wo['serial_measured_us']:.2f}x too slow inflates it. A "
        f"what-if (not fair: the execution re-solved from these very serial applies, per "
        f"workload): {UNI} optimistic {span(opt, 'what_if')}, write_only_32 W>=4 "
        f"{span(wo4, 'what_if')}. What it does not explain: why these workloads execute below "
        f"replica16's line; {UNI} conservative, where the what-if falls to "
        f"{cons[0]['what_if']:.2f} / {cons[1]['what_if']:.2f} at W=8 / 16 against "
        f"{cons[0]['measured']:.2f} / {cons[1]['measured']:.2f} measured, and with (a)'s lock "
        f"term zeroed too stays at {cons[0]['what_if_no_lock']:.2f} / "
        f"{cons[1]['what_if_no_lock']:.2f} (the term drops it too far, its absence not at all); "
        f"the durable side, which cannot be re-solved at all: its measured serial "
        f"apply ({uni['durable_serial_measured_us']:.1f} µs a transaction on {UNI}) is below "
        f"the model's driver and redo flush alone ({uni['durable_driver_and_flush_us']:.1f} µs), "
        f"which is why the registered report has no secondary model.\n")


def update_doc(path: str, body: str) -> None:
    """This part right after device16_w3's tables, replaced when present."""
    d16.put_section(path, f"{HEADING}{BEGIN}\n{body}{END}\n", HEADING + BEGIN, END,
                    after=w3.END, missing="no device16_w3 section")


def main(argv=None) -> int:
    try:
        body = text(reading())
        d16._write(os.path.join(w3.FOLDER, "reading.md"),
                   "# device16_w3: a reading of the first run (not part of the rule)\n\n"
                   "`traces/record/new_workloads16_reading.py` (make device16-w3-reading).\n\n"
                   + body)
        update_doc(w3.DOC, body)
    except (w3.DataError, OSError, KeyError) as e:
        print(f"new_workloads16_reading: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
