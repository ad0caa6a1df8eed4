"""The numbers behind a report: every figure and sentence of `commitsched report` is computed
here into one JSON-able dict (`--json` prints it as is), plus the run records of the schedule
window the Gantt chart and the dependency graph draw."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..metrics import RunMetrics
from ..profiles import Profile
from ..schedulers import DEFAULT_SCHEDULERS, SchedulerError, parse_scheduler, run_scheduler
from ..scoring import fork_map, heuristic_bounds_by_w, score_trace
from ..simcore import COORDINATOR_CAUSES, SimulationError
from ..trackers import TrackerError, get_tracker
from .gantt import idle_time, is_barrier, segments, window_bounds
from .depgraph import stallers

CLOCK_TRACKERS = ("commit_order", "writeset", "writeset_session")
WAIT_COUNTS = (1, 2, 4, 8, 16, 32)

# What each cause of waiting means and what to do about it (the "why" of the report).
CAUSE_TEXT = {
    "dependency": ("the coordinator waited for a transaction's dependencies to commit before "
                   "handing it out", "more parallelism must come from the tracker: try writeset "
                   "(MySQL) or optimistic mode (MariaDB)"),
    "barrier": ("the coordinator drained every worker for a barrier (DDL, last_committed = 0, "
                "rotation)", "fewer DDL/admin statements or binlog rotations in the stream"),
    "window_full": ("the coordinator waited because the window of outstanding transactions was "
                    "full (checkpoint group / queue limit), or (database) the schema's one worker "
                    "was busy", "raise replica_checkpoint_group / slave_parallel_max_queued, or "
                    "use a tracker that does not serialise by schema"),
    "no_free_worker": ("every worker was busy", "more workers would help, if the other causes "
                       "are small"),
    "gco_wait": ("transactions waited for the earlier commit group to reach its commit (MariaDB "
                 "GCO rule)", "bigger source groups (binlog_commit_wait_count) or optimistic mode"),
    "prior_commit_wait": ("transactions waited for their predecessor to commit (MariaDB "
                          "wait_for_prior_commit)", "inherent to in-order commit"),
    "lock_wait": ("transactions waited for a row lock held by an earlier one (optimistic "
                  "conflicts)", "conflicting rows: nothing a scheduler can fix"),
    "commit_order": ("finished transactions waited for their turn to commit in source order",
                     "a long transaction holds back the later ones; only commits out of order "
                     "avoid it (MySQL replica_preserve_commit_order=OFF, at a consistency cost)"),
    "sync_wait": ("ready transactions waited for the group sync in progress", "relaxed "
                  "durability (sync_binlog=0, innodb_flush_log_at_trx_commit=2) shortens it"),
    "retry": ("transactions were killed and re-executed (optimistic conflicts)",
              "conservative mode, or fewer hot rows"),
}


@dataclass
class Window:
    scheduler: str
    workers: int
    runs: list
    sync: float
    role: str


@dataclass
class Report:
    data: dict
    windows: list[Window] = field(default_factory=list)


def is_mariadb(source: dict, txns) -> bool:
    text = " ".join(str(source.get(k, "")) for k in ("server", "version", "gtid_style")).lower()
    if "mariadb" in text:
        return True
    for t in txns:
        return bool(t.gtid) and t.gtid.count("-") == 2 and ":" not in t.gtid
    return False


def tracker_shape(trace, name: str, options: dict) -> dict | None:
    """How much parallelism a tracker declares: the mean window (clock: sequence_number -
    last_committed - 1) or the mean commit-group size (groups)."""
    try:
        tracker = get_tracker(name, **options)
        deps = [dep for _, dep in tracker.annotate(trace.txns())]
    except (TrackerError, SchedulerError):
        return None
    if not deps:
        return None
    if tracker.kind == "clock":
        return {"tracker": name, "kind": "clock",
                "mean_window": round(statistics.fmean(max(0, sn - lc - 1) for lc, sn, _ in deps), 4)}
    if tracker.kind == "groups":
        n_groups, prev = 0, None
        for gid, _ in deps:
            if gid == 0 or gid != prev:
                n_groups += 1
            prev = gid
        return {"tracker": name, "kind": "groups", "mean_group_size": round(len(deps) / n_groups, 4)}
    return None


def fitting(trace, names, tracker_options) -> tuple[list[str], dict[str, str]]:
    """The schedulers whose tracker can annotate this trace (e.g. commit_order needs the
    source's logical clock), and why the others cannot."""
    keep, skipped = [], {}
    for n in names:
        s = parse_scheduler(n)
        if s.is_serial:
            keep.append(n)
            continue
        try:
            for _ in get_tracker(s.tracker, **tracker_options(s.tracker)).annotate(trace.txns()):
                pass
        except (TrackerError, SchedulerError) as e:
            skipped[n] = str(e)
            continue
        keep.append(n)
    return keep, skipped


def recommend(results: list[dict], threshold: float) -> dict:
    by: dict[str, list[dict]] = {}
    for r in results:
        if "error" in r or r["scheduler"] == "serial" or r.get("speedup") is None:
            continue
        by.setdefault(r["scheduler"], []).append(r)
    per = {}
    for name, rs in by.items():
        rs.sort(key=lambda r: r["workers"])
        rec, still = rs[-1], True
        for a, b in zip(rs, rs[1:]):
            if b["speedup"] / a["speedup"] - 1 < threshold:
                rec, still = a, False
                break
        # "Try more" only when even the low edge of the calibration band at the largest count
        # gains the threshold over the count before it: a gain inside the band is no evidence.
        band_limited = False
        if still and len(rs) > 1 and rs[-1].get("speedup_band"):
            if rs[-1]["speedup_band"][0] / rs[-2]["speedup"] - 1 < threshold:
                still, band_limited = False, True
        per[name] = {"recommended_workers": rec["workers"], "speedup": rec["speedup"],
                     "speedup_band": rec.get("speedup_band"), "band_limited": band_limited,
                     "throughput": rec["throughput"], "still_gaining": still,
                     "max_speedup": max(r["speedup"] for r in rs),
                     "max_speedup_workers": max(rs, key=lambda r: r["speedup"])["workers"]}
    best = None
    for name, p in per.items():
        key = (p["max_speedup"], -p["max_speedup_workers"])
        if best is None or key > best[0]:
            best = (key, name)
    out = {"threshold": threshold, "per_scheduler": per}
    if best:
        name = best[1]
        out["best"] = {"scheduler": name, "workers": per[name]["max_speedup_workers"],
                       "speedup": per[name]["max_speedup"],
                       "recommended_workers": per[name]["recommended_workers"],
                       "speedup_at_recommended": per[name]["speedup"]}
        families = {}
        for fam, pred in (("mysql", lambda n: n.endswith("+mysql")),
                          ("mariadb", lambda n: "+mariadb_" in n)):
            cands = [(per[n]["max_speedup"], n) for n in per if pred(n)]
            if cands:
                families[fam] = max(cands)[1]
        out["best_per_applier_family"] = families
    return out


def server_default(mariadb: bool, names: Sequence[str]) -> str | None:
    """The scheduler a server runs out of the box (MySQL 8.0.27+ before writeset became the
    default in 8.4 stays comparable as commit_order; MariaDB: conservative)."""
    want = "commit_id+mariadb_conservative" if mariadb else "commit_order+mysql"
    if want in names:
        return want
    return next((n for n in names if n != "serial"), None)


def diagnose(results: list[dict], name: str, workers: int) -> dict | None:
    r = next((r for r in results if r["scheduler"] == name and r["workers"] == workers
              and "error" not in r), None)
    if r is None or not r["makespan"]:
        return None
    n = r["transactions"] or 1
    causes = []
    for c, v in r["blocked"].items():
        if v <= 0:
            continue
        share = v / r["makespan"] if c in COORDINATOR_CAUSES else v / n
        what, fix = CAUSE_TEXT.get(c, (c, ""))
        causes.append({"cause": c, "time": v, "coordinator": c in COORDINATOR_CAUSES,
                       "share_of_makespan" if c in COORDINATOR_CAUSES else "per_transaction":
                       round(share, 6), "meaning": what, "remedy": fix})
    causes.sort(key=lambda c: -c["time"])
    busy = sum(r["per_worker_busy"])
    return {"scheduler": name, "workers": workers, "utilisation": round(busy / (r["makespan"] * workers), 6),
            "idle_workers": sum(1 for c in r["per_worker"] if c == 0),
            "causes": causes}


def _window_bounds(trace, name, w, profile, size, start, opts) -> tuple[int, int]:
    """The window's first and last seq (gantt.window_bounds), from one float per transaction."""
    idle: dict[int, float] = {}
    run_scheduler(name, trace.txns(), w, profile,
                  lambda r: idle.__setitem__(r.seq, idle_time(r)), **opts)
    return window_bounds(idle, size, start)


def window_json(w: Window) -> dict:
    stall = stallers(w.runs, w.sync)
    rows = []
    for r in w.runs:
        j = r.to_json()
        j["ready"] = r.ready
        j["exec"] = r.exec
        j["segments"] = [{"kind": k, "from": a, "to": b} for k, a, b in segments(r, w.sync)]
        j["barrier"] = is_barrier(r)
        if r.seq in stall:
            j["stalls_later"] = stall[r.seq]
        rows.append(j)
    return {"scheduler": w.scheduler, "workers": w.workers, "role": w.role,
            "first_seq": w.runs[0].seq if w.runs else None,
            "last_seq": w.runs[-1].seq if w.runs else None, "sync": w.sync, "runs": rows}


def build_report(trace, *, path: str, profile: Profile, workers: Sequence[int],
                 schedulers: Sequence[str] | None = None, threshold: float = 0.10,
                 window: int = 40, window_start: int | None = None,
                 tracker_options: Callable[[str | None], dict] = lambda t: {},
                 applier_options: dict | None = None, bugs: frozenset = frozenset(),
                 whatif: bool = True, progress: Callable[[str], None] = lambda s: None,
                 wait_counts: Sequence[int] = WAIT_COUNTS, jobs: int = 1) -> Report:
    """`trace` has `.txns()`, `.count`, `.source` (commitsched.cli.TraceSource). `jobs` > 1:
    the independent simulation runs (the scaling sweep's (scheduler, W) runs, the bounds per
    W, then the schedule windows, the blame section and the what-ifs side by side) run in that
    many forked processes (scoring.fork_map); the report is the same, byte for byte."""
    workers = sorted(set(workers))
    applier_options = dict(applier_options or {})
    names = list(dict.fromkeys(["serial", *(schedulers or DEFAULT_SCHEDULERS)]))
    first = next(iter(trace.txns()), None)
    mariadb = is_mariadb(trace.source, [first] if first else [])

    def stage(text):
        progress(text)

    def sub_progress(prefix):
        return lambda s: progress(f"{prefix}: {s}")

    skipped = {}
    if not schedulers:   # leave out what the trace cannot feed, and say so in the report
        names, skipped = fitting(trace, names, tracker_options)
    stage("bounds")
    bounds = heuristic_bounds_by_w(trace, profile, workers, jobs)   # once, for both uses
    results = score_trace(trace, names, workers, profile, bugs=bugs,
                          tracker_options=tracker_options, applier_options=applier_options,
                          progress=sub_progress("scaling"), skip_unfit=not schedulers,
                          jobs=jobs, bounds=bounds)
    serial = next(r for r in results if r["scheduler"] == "serial")
    ran = list(dict.fromkeys(r["scheduler"] for r in results))
    bound_speedup = {w: {"in_order": round(serial["makespan"] / b["bound_in_order"], 6)
                         if b["bound_in_order"] else None,
                         "free": round(serial["makespan"] / b["bound_free"], 6)
                         if b["bound_free"] else None} for w, b in bounds.items()}
    rec = recommend(results, threshold)
    default = server_default(mariadb, ran)
    wmax = workers[-1]
    diagnosis = [d for d in (diagnose(results, n, wmax) for n in dict.fromkeys(
        [default, rec.get("best", {}).get("scheduler")]) if n) if d]

    stage("tracker shapes")
    shapes = [s for s in (tracker_shape(trace, t, tracker_options(t)) for t in
                          ("commit_order", "writeset", "writeset_session", "commit_id",
                           "slave_group_commit")) if s]

    data = {
        "report": "commitsched report", "version": 1,
        "trace": {"path": path, "transactions": trace.count, "source": _source_summary(trace.source),
                  "mariadb": mariadb},
        "profile": profile.to_json(), "workers": workers, "serial_makespan": serial["makespan"],
        "results": results, "bounds": {str(w): b for w, b in bounds.items()},
        "bound_speedup": {str(w): v for w, v in bound_speedup.items()},
        "recommendation": rec, "server_default": default, "diagnosis": diagnosis,
        "tracker_shapes": shapes, "skipped": skipped,
    }

    picks = []
    if rec.get("best"):
        b = rec["best"]
        picks.append((b["scheduler"], b["recommended_workers"], "best scheduler at its "
                      "recommended worker count"))
        if default and default != b["scheduler"]:
            picks.append((default, b["recommended_workers"], "server default, same workers"))

    # The rest is three independent pieces of work, each a few simulation runs: side by side
    # with jobs > 1 (the forked workers report no progress of their own: the parent names each
    # piece as it is done).
    quiet = progress if jobs <= 1 else (lambda s: None)

    def schedule_windows() -> list[Window]:
        windows = []
        lo = hi = None
        for name, w, role in picks:
            quiet(f"schedule window {name} W={w}")
            opts = dict(bugs=bugs, tracker_options=tracker_options(parse_scheduler(name).tracker),
                        applier_options=applier_options)
            if lo is None:
                lo, hi = _window_bounds(trace, name, w, profile, window, window_start, opts)
            # Only the window's runs are kept: a long trace's schedule is never held in memory.
            sel: list = []
            run_scheduler(name, trace.txns(), w, profile,
                          lambda r: sel.append(r) if lo <= r.seq <= hi else None, **opts)
            sel.sort(key=lambda r: r.seq)
            windows.append(Window(name, w, sel, profile.group_sync, role))
        return windows

    def blame() -> dict:
        from .blame_section import blame_section
        name, w, _ = picks[-1]          # the server default when it differs from the best
        quiet(f"blame {name} W={w}")
        return blame_section(trace, profile, name, w,
                             tracker_options=tracker_options(parse_scheduler(name).tracker),
                             applier_options=applier_options, bugs=bugs, whatif=whatif)

    def whatifs() -> dict:
        return _whatif(trace, profile, workers, names, rec, default, mariadb, tracker_options,
                       applier_options, bugs, quiet, threshold, wait_counts, results)

    # the longest first, so that two processes finish together
    pieces = {"blame": blame if picks else None, "what-ifs": whatifs if whatif else None,
              "schedule windows": schedule_windows}
    todo = [(k, f) for k, f in pieces.items() if f is not None]
    done = {}
    for (key, _), value in zip(todo, fork_map(lambda kf: kf[1](), todo, jobs)):
        if jobs > 1:
            progress(f"{key} done")
        done[key] = value
    windows = done["schedule windows"]
    data["windows"] = [window_json(w) for w in windows]
    if "blame" in done:
        data["blame"] = done["blame"]
    if "what-ifs" in done:
        data["whatif"] = done["what-ifs"]
    return Report(data, windows)


def _source_summary(source: dict) -> dict:
    keep = ("server", "version", "workload", "generator", "synthetic", "hand_made", "from",
            "recorded_by", "client_threads", "sysbench_tps", "time_unit", "transactions")
    return {k: source[k] for k in keep if k in source}


def _whatif(trace, profile, workers, names, rec, default, mariadb, tracker_options,
            applier_options, bugs, progress, threshold, wait_counts, results) -> dict:
    out: dict = {}
    # Tracking mode, recomputed from the write sets, on the MySQL applier.
    out["tracking"] = [
        {"scheduler": r["scheduler"], "tracker": r["scheduler"].split("+")[0],
         "workers": r["workers"], "speedup": r["speedup"], "throughput": r["throughput"]}
        for r in results if "error" not in r and r["scheduler"] in
        {f"{t}+mysql" for t in CLOCK_TRACKERS}]
    # Durability: the same schedulers on the same machine, durable and relaxed, each against
    # serial under the same settings (a relaxed-only profile has no durable variant).
    focus = list(dict.fromkeys(n for n in (rec.get("best", {}).get("scheduler"), default) if n))
    dur = []
    chosen = {f"{profile.name} ({profile.durability})": profile}
    if profile.durability == "durable":
        chosen[f"{profile.name} (relaxed)"] = profile.with_durability("relaxed")
    profile_key = f"{profile.name} ({profile.durability})"
    for pname, prof in chosen.items():
        if pname == profile_key:
            rs = [r for r in results if r["scheduler"] in focus and "error" not in r]
            serial_ms = next(r["makespan"] for r in results if r["scheduler"] == "serial")
        else:
            serial_ms = _sweep(trace, "serial", [1], prof, None, {}, {}, bugs)[0]["makespan"]
            rs = []
            for name in focus:
                progress(f"durability {pname}: {name}")
                rs += _sweep(trace, name, workers, prof, serial_ms,
                             tracker_options(parse_scheduler(name).tracker), applier_options, bugs)
        for r in rs:
            if "error" in r:
                continue
            dur.append({"profile": pname, "scheduler": r["scheduler"], "workers": r["workers"],
                        "speedup": r["speedup"], "throughput": r["throughput"],
                        "makespan": r["makespan"], "serial_makespan": serial_ms})
    out["durability"] = dur
    # MariaDB: regroup as an intermediate replica with binlog_commit_wait_count would.
    if mariadb:
        rows = []
        base = tracker_options("slave_group_commit")
        serial_ms = next(r["makespan"] for r in results if r["scheduler"] == "serial")
        for count in wait_counts:
            progress(f"commit wait count {count}")
            opts = {**base, "commit_wait_count": count}
            shape = tracker_shape(trace, "slave_group_commit", opts)
            for r in _sweep(trace, "slave_group_commit+mariadb_conservative", workers, profile,
                            serial_ms, opts, applier_options, bugs):
                if "error" in r:
                    continue
                rows.append({"commit_wait_count": count, "workers": r["workers"],
                             "speedup": r["speedup"], "throughput": r["throughput"],
                             "mean_group_size": shape and shape["mean_group_size"]})
        out["commit_wait"] = {"commit_wait_usec": base.get("commit_wait_usec", 100000.0),
                              "rows": rows}
    out["delay_advice"] = _delay_advice(results, out, workers[-1], threshold, mariadb)
    return out


def _sweep(trace, name, workers, profile, serial_ms, topts, aopts, bugs) -> list[dict]:
    """One scheduler at each worker count, against a serial makespan already known (the
    what-ifs need neither the bounds nor a fresh serial run per point)."""
    out = []
    for w in workers:
        m = RunMetrics(w)
        try:
            blocked = run_scheduler(name, trace.txns(), w, profile, m, bugs=bugs,
                                    tracker_options=topts, applier_options=aopts)
        except SimulationError as e:
            out.append({"scheduler": name, "workers": w, "error": str(e)})
            continue
        out.append(m.result(scheduler=name, profile=profile.name, blocked=blocked,
                            serial_makespan=serial_ms, bound=None))
    return out


def _speedup(results, name, w):
    r = next((r for r in results if r["scheduler"] == name and r["workers"] == w
              and "error" not in r), None)
    return r and r["speedup"]


def _delay_advice(results, whatif, wmax, threshold, mariadb) -> list[str]:
    """Should the source delay its commits (bigger groups, wider windows)? Sentences built from
    the numbers; a delay always costs the source commit latency, which the model does not see."""
    out = []
    co, ws = _speedup(results, "commit_order+mysql", wmax), _speedup(results, "writeset+mysql", wmax)
    if co and ws:
        if ws > co * (1 + threshold):
            out.append(f"MySQL: writeset gets {ws:.2f}x at {wmax} workers where the source's "
                       f"commit order gets {co:.2f}x: switch the source to "
                       f"binlog_transaction_dependency_tracking=WRITESET rather than delaying "
                       f"commits (binlog_group_commit_sync_delay) to widen its groups.")
        else:
            out.append(f"MySQL: the source's commit order already gets {co:.2f}x at {wmax} "
                       f"workers, within {threshold:.0%} of writeset ({ws:.2f}x), which declares "
                       f"the most parallelism these write sets allow: wider groups from a commit "
                       f"delay could not do better; the limit is elsewhere (true conflicts, "
                       f"commit order, workers).")
    cw = whatif.get("commit_wait")
    if mariadb and cw and cw["rows"]:
        at = {r["commit_wait_count"]: r for r in cw["rows"] if r["workers"] == wmax}
        cons = _speedup(results, "commit_id+mariadb_conservative", wmax)
        opt = _speedup(results, "commit_id+mariadb_optimistic", wmax)
        if at:
            best_c = max(at, key=lambda c: (at[c]["speedup"] or 0, -c))
            b = at[best_c]
            msg = (f"MariaDB conservative: the source's own groups give {cons:.2f}x at {wmax} "
                   f"workers; " if cons else "MariaDB conservative: ")
            msg += (f"regrouped with binlog_commit_wait_count={best_c} (mean group "
                    f"{b['mean_group_size']}) it gets {b['speedup']:.2f}x")
            if cons and b["speedup"] > cons * (1 + threshold):
                msg += (": bigger groups would help, at the cost of commit latency where the "
                        "grouping happens (source or an intermediate replica).")
            else:
                msg += ": delaying commits would gain less than the threshold."
            if opt:
                msg += f" Optimistic mode gets {opt:.2f}x with no delay at all."
            out.append(msg)
    return out
