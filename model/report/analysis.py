"""The numbers behind a report: every figure and sentence of `commitsched report` is computed
here into one JSON-able dict (`--json` prints it as is), plus the run records of the schedule
window the Gantt chart and the dependency graph draw."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..keys import KEY_TRACKERS, missing_keys, needs_keys, partial_message, unknown_message
from ..profiles import Profile
from ..progress import SubProgress, tick_of
from ..schedulers import DEFAULT_SCHEDULERS, SchedulerError, parse_scheduler
from ..scoring import fork_map, heuristic_bounds_by_w, score_trace
from ..simcore import COORDINATOR_CAUSES
from ..trackers import TrackerError, get_tracker
from . import keeping_up
from .blame_section import blame_section, plan_split, split_section
from .gantt import is_barrier, segments
from .depgraph import stallers
from .tasks import Tasks, windows_task
from .whatif import SAMPLE_DEFAULT, WAIT_COUNTS, WhatIfs, sample_window

SHAPE_TRACKERS = ("commit_order", "writeset", "writeset_session", "commit_id",
                  "slave_group_commit")

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


def tracker_pass(trace, name: str, options: dict) -> tuple[str | None, dict | None]:
    """One annotation pass of a tracker: (why it cannot feed the trace, or None; how much
    parallelism it declares: the mean window (clock: sequence_number - last_committed - 1) or
    the mean commit-group size (groups), or None)."""
    if name in KEY_TRACKERS:
        missing = missing_keys(trace)
        if missing.unknown:
            return unknown_message(missing.unknown), None
    fast = _compiled_pass(trace, name, options)
    if fast is not None:
        return fast
    try:
        tracker = get_tracker(name, **options)
        deps = [dep for _, dep in tracker.annotate(trace.txns())]
    except (TrackerError, SchedulerError) as e:
        return str(e), None
    if not deps:
        return None, None
    if tracker.kind == "clock":
        return None, {"tracker": name, "kind": "clock", "mean_window": round(
            statistics.fmean(max(0, sn - lc - 1) for lc, sn, _ in deps), 4)}
    if tracker.kind == "groups":
        n_groups, prev = 0, None
        for gid, _ in deps:
            if gid == 0 or gid != prev:
                n_groups += 1
            prev = gid
        return None, {"tracker": name, "kind": "groups",
                      "mean_group_size": round(len(deps) / n_groups, 4)}
    return None, None


def _compiled_pass(trace, name: str, options: dict):
    """`tracker_pass` from the compiled core's annotation (model/engine.py), the same figures
    from the same integers; None when the engine is the reference or the core lacks it."""
    import numpy as np
    from .. import engine
    columns = engine.columns_of(trace.txns())
    if columns is None or name not in engine.COMPILED_TRACKERS or columns.seq0 is None:
        return None
    try:
        ann = engine.annotation(columns, name, options)
    except SchedulerError as e:
        return str(e), None
    n = columns.n
    if n == 0:
        return None, None
    kind = get_tracker(name, **options).kind
    if kind == "clock":        # statistics.fmean of integers: their exact sum as a float / n
        total = int(np.maximum(0, ann["b"] - ann["a"] - 1).sum())
        return None, {"tracker": name, "kind": "clock", "mean_window": round(float(total) / n, 4)}
    if kind == "groups":
        gid = ann["a"]
        new = np.ones(n, bool)
        new[1:] = (gid[1:] == 0) | (gid[1:] != gid[:-1])
        return None, {"tracker": name, "kind": "groups",
                      "mean_group_size": round(n / int(new.sum()), 4)}
    return None, None


def tracker_shape(trace, name: str, options: dict) -> dict | None:
    """How much parallelism a tracker declares (`tracker_pass`)."""
    return tracker_pass(trace, name, options)[1]


class TrackerPasses:
    """`tracker_pass` once per tracker and options (defaults filled in), for all that ask: the
    fitting, the tracker shapes and the commit wait what-if (commit_id feeds three schedulers;
    the what-if's wait count that is the tracker's default is the shape shown already)."""

    def __init__(self, trace):
        self.trace = trace
        self.done: dict = {}

    @staticmethod
    def key(name: str, options: dict) -> tuple:
        try:
            opts = get_tracker(name, **options).opts
        except TrackerError:
            opts = options
        return name, repr(sorted(opts.items()))

    def prefetch(self, wanted, jobs: int, tick=None) -> None:
        """Make the passes of `wanted` ((name, options)...) not made yet, `jobs` at a time."""
        todo = {self.key(n, o): (n, o) for n, o in wanted}
        todo = [v for k, v in todo.items() if k not in self.done]
        for (n, o), value in zip(todo, fork_map(lambda no: tracker_pass(self.trace, *no),
                                                todo, jobs, tick)):
            self.done[self.key(n, o)] = value

    def __call__(self, name: str, options: dict) -> tuple[str | None, dict | None]:
        k = self.key(name, options)
        if k not in self.done:
            self.done[k] = tracker_pass(self.trace, name, options)
        return self.done[k]

    def plan(self, tasks: Tasks, name: str, options: dict) -> None:
        """A task for a pass not made yet (once per key)."""
        k = self.key(name, options)
        if k not in self.done and ("pass", k) not in {item[0] for item in tasks.items}:
            tasks.add(("pass", k), f"{name} shape",
                      lambda: tracker_pass(self.trace, name, options))

    def get(self, name: str, options: dict, done: dict) -> dict | None:
        """The shape, from a pass made or from the task `plan` added."""
        k = self.key(name, options)
        return (self.done[k] if k in self.done else done["pass", k])[1]


def fitting(trace, names, tracker_options, passes: TrackerPasses | None = None
            ) -> tuple[list[str], dict[str, str]]:
    """The schedulers whose tracker can annotate this trace (e.g. commit_order needs the
    source's logical clock), and why the others cannot."""
    passes = passes or TrackerPasses(trace)
    keep, skipped = [], {}
    for n in names:
        s = parse_scheduler(n)
        if s.is_serial:
            keep.append(n)
            continue
        error, _ = passes(s.tracker, tracker_options(s.tracker))
        if error is not None:
            skipped[n] = error
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
                 wait_counts: Sequence[int] = WAIT_COUNTS, jobs: int = 1,
                 whatif_sample: int | None = SAMPLE_DEFAULT, cluster: bool = False,
                 schedulers_given: bool | None = None, zone: str | None = None) -> Report:
    """`trace` has `.txns()`, `.count`, `.source` (commitsched.cli.TraceSource). `jobs` > 1:
    the independent work (the tracker passes, the scaling sweep's (scheduler, W) runs, then
    the runs of the schedule windows, the blame section and the what-ifs) runs in that many
    forked processes (scoring.fork_map); the report is the same, byte for byte. No run is made
    twice: what a later section needs of a run the sweep made is taken from the sweep.
    `whatif_sample`: above this many transactions the durability and commit wait what-ifs
    simulate the middle this many (whatif.sample_window); 0 or None: the whole trace.
    `schedulers_given`: whether the user named `schedulers` (default: whether there are any);
    a list a MySQL version chose leaves out, and names, those the trace's keys cannot feed.
    `cluster`: also the sustained throughput on certification-based clusters
    (cluster_section.py; a few seconds of simulation)."""
    workers = sorted(set(workers))
    applier_options = dict(applier_options or {})
    names = list(dict.fromkeys(["serial", *(schedulers or DEFAULT_SCHEDULERS)]))
    first = next(iter(trace.txns()), None)
    mariadb = is_mariadb(trace.source, [first] if first else [])
    passes = TrackerPasses(trace)

    skipped = {}
    progress("tracker passes")
    wanted = [(t, tracker_options(t)) for t in SHAPE_TRACKERS]
    if not schedulers:   # leave out what the trace cannot feed, and say so in the report
        wanted = [(s.tracker, tracker_options(s.tracker)) for s in map(parse_scheduler, names)
                  if not s.is_serial] + wanted
    passes.prefetch(wanted, jobs, tick_of(progress))
    if not schedulers:
        names, skipped = fitting(trace, names, tracker_options, passes)
    missing = missing_keys(trace)
    given = bool(schedulers) if schedulers_given is None else schedulers_given
    if missing.unknown and not given:     # the optimistic appliers' conflicts too
        for n in names:
            if n != "serial" and needs_keys(n):
                skipped[n] = unknown_message(missing.unknown)
        names = [n for n in names if n not in skipped]
    progress("bounds")
    bounds = heuristic_bounds_by_w(trace, profile, workers)   # once, for both uses
    kept: dict = {}
    results = score_trace(trace, names, workers, profile, bugs=bugs,
                          tracker_options=tracker_options, applier_options=applier_options,
                          progress=SubProgress(progress, "scaling"), skip_unfit=not schedulers,
                          jobs=jobs, bounds=bounds, keep=kept)
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
    shapes = [s for s in (passes(t, tracker_options(t))[1] for t in SHAPE_TRACKERS) if s]

    data = {
        "report": "commitsched report", "version": 1,
        "trace": {"path": path, "transactions": trace.count, "source": _source_summary(trace.source),
                  "mariadb": mariadb},
        "profile": dict(profile.to_json(), unmeasured=profile.unmeasured()),
        "workers": workers, "serial_makespan": serial["makespan"],
        "results": results, "bounds": {str(w): b for w, b in bounds.items()},
        "bound_speedup": {str(w): v for w, v in bound_speedup.items()},
        "recommendation": rec, "server_default": default, "diagnosis": diagnosis,
        "tracker_shapes": shapes, "skipped": skipped,
    }
    if missing:
        data["keys"] = {"unknown": list(missing.unknown), "partial": list(missing.partial),
                        "text": (unknown_message(missing.unknown) if missing.unknown
                                 else partial_message(missing.partial))}

    picks = []
    if rec.get("best"):
        b = rec["best"]
        picks.append((b["scheduler"], b["recommended_workers"], "best scheduler at its "
                      "recommended worker count"))
        if default and default != b["scheduler"]:
            picks.append((default, b["recommended_workers"], "server default, same workers"))

    def run_opts(name):
        return dict(bugs=bugs, tracker_options=tracker_options(parse_scheduler(name).tracker),
                    applier_options=applier_options)

    # What is left is single runs, independent of each other: the schedule window of the best
    # pick, the blame, the what-ifs; then what needs their answers (the other window, at the
    # first one's seqs; the split what-if, of the blamed transactions). The longest first.
    tasks = Tasks()
    # Keeping up first: the recommended configuration and the server default at the same
    # workers (the schedule windows' picks), replayed as the trace arrived; its tasks are the
    # longest (about ten replays each): added first, the what-ifs' single runs come last and
    # even out the processes' ends, where a search left last could keep one process busy
    # alone for its whole length
    lag_picks = [(name, w) for name, w, _ in picks]
    planned_lag = keeping_up.plan(tasks, trace, profile, lag_picks, workers,
                                  tracker_options=tracker_options,
                                  applier_options=applier_options, bugs=bugs,
                                  sample=whatif_sample, zone=zone,
                                  closed={key: m.makespan for key, (m, _) in kept.items()
                                          if key[0] != "serial"}) if lag_picks else None
    blamed = picks[-1] if picks else None   # the server default when it differs from the best
    if blamed:
        name, w, _ = blamed
        tasks.add("blame", f"blame {name} W={w}", lambda name=name, w=w: blame_section(
            trace, profile, name, w, tracker_options=tracker_options(
                parse_scheduler(name).tracker), applier_options=applier_options, bugs=bugs))
    if picks:
        # Both windows in one task: the second (the server default at the first one's seqs)
        # follows at once instead of alone in the second round, with a core idle beside it.
        tasks.add("window", "schedule windows", lambda: windows_task(
            trace, picks, profile, run_opts, window, window_start, first.seq if first else 1))
    whatifs = None
    if whatif:
        whatifs = WhatIfs(trace, profile=profile, workers=workers, rec=rec,
                          default=default, mariadb=mariadb, tracker_options=tracker_options,
                          applier_options=applier_options, bugs=bugs, threshold=threshold,
                          wait_counts=wait_counts, results=results, kept=kept, shape=passes,
                          sample=sample_window(trace, whatif_sample))
        whatifs.plan(tasks)
    if cluster:
        from .cluster_section import cluster_section
        tasks.add("cluster", "certification clusters",
                  lambda: cluster_section(trace, profile, workers))
    done = tasks.run(jobs, progress, "windows, blame, what-ifs, keeping up")
    if cluster:
        data["cluster"] = done["cluster"]

    later = Tasks()
    runs = done["window"] if picks else []
    section = order = choices = None
    if blamed:
        section, order = done["blame"]
        if whatif and "skipped" not in section:
            name, w, _ = blamed
            choices = plan_split(later, trace, profile, name, w, order,
                                 tracker_options=tracker_options(parse_scheduler(name).tracker),
                                 applier_options=applier_options, bugs=bugs)
    done_later = later.run(jobs, progress, "split what-if")
    windows = [Window(name, w, r, profile.group_sync, role) for (name, w, role), r in
               zip(picks, runs)]
    data["windows"] = [window_json(w) for w in windows]
    if section is not None:
        if choices is not None:
            name, w, _ = blamed
            base = (trace.count, kept["serial", 1][0].makespan, kept[name, w][0].makespan)
            section["split"] = split_section(trace, choices, order, base, done_later)
        data["blame"] = section
    if whatifs is not None:
        data["whatif"] = whatifs.assemble(done)
    if planned_lag is not None:
        data["keeping_up"] = keeping_up.assemble(planned_lag, done)
    return Report(data, windows)


def _source_summary(source: dict) -> dict:
    keep = ("server", "version", "workload", "generator", "synthetic", "hand_made", "from",
            "recorded_by", "client_threads", "sysbench_tps", "time_unit", "transactions")
    return {k: source[k] for k in keep if k in source}
