"""The report's what-ifs: the tracking mode (from the sweep's own results), the replica's
durability (the machine profile durable and relaxed, for the best and the default scheduler)
and, on MariaDB traces, the commit wait count of an intermediate replica; then the advice on
delaying commits. Planned as single runs (`Tasks`) and put together once they are done; a run
the sweep has made already (the commit wait count the sweep's slave_group_commit uses) is
taken from it, not made again, and so is the one-thread run of every MariaDB scheduler
(scoring.same_one_thread_run).

On a trace longer than `whatif_sample` transactions (`report --whatif-sample N`, default
SAMPLE_DEFAULT) the durability and commit wait what-ifs simulate a window of that many
consecutive transactions, the middle ones (`sample_window`), instead of the whole trace: every
run they show or compare with is made on that window (their serial baseline and the durable
runs too), and the report says so (`sample_json`). The tracking what-if is the sweep's, on the
whole trace."""
from __future__ import annotations

from itertools import islice

from ..schedulers import parse_scheduler
from ..scoring import same_one_thread_run
from ..trackers import TrackerError, get_tracker
from ..keys import missing_keys, unknown_message
from .tasks import Tasks, point_result, run_point

CLOCK_TRACKERS = ("commit_order", "writeset", "writeset_session")
WAIT_COUNTS = (1, 2, 4, 8, 16, 32)
REGROUPED = "slave_group_commit+mariadb_conservative"
# Above this many transactions the durability and commit wait what-ifs run on a window of
# this many (the blame section's limit, blame_section.MAX_TRANSACTIONS, is the same number).
SAMPLE_DEFAULT = 200_000


class TraceWindow:
    """`count` consecutive transactions of `trace` from index `start` (0-based), a trace of
    its own for the what-if runs (`.txns()`, `.count`, `.source`): each run takes its slice of
    the trace's transactions, so a trace re-read per run is re-read for it too."""

    def __init__(self, trace, start: int, count: int):
        self.trace, self.start, self.count, self.source = trace, start, count, trace.source
        self.first_seq = self.last_seq = None
        for txn in self.txns():
            if self.first_seq is None:
                self.first_seq = txn.seq
            self.last_seq = txn.seq

    def txns(self):
        txns = self.trace.txns()
        if hasattr(txns, "slice"):          # columnar.ColumnarTxns: the slice keeps its columns
            return txns.slice(self.start, self.count)
        return islice(txns, self.start, self.start + self.count)


def sample_window(trace, size: int | None) -> TraceWindow | None:
    """The window the what-ifs simulate, or None for the whole trace (`size` 0 or None, or a
    trace of at most `size` transactions): the middle `size` transactions, as many left out
    before as after (one more after when they do not split evenly). The middle, because a
    recording's first and last transactions are its least typical: the workload starting up
    (caches cold, clients connecting) and winding down (clients finishing one by one, groups
    thinning out); and a window placed by its position alone is chosen the same way on any
    trace, whatever the what-ifs would find in it."""
    if not size or trace.count <= size:
        return None
    return TraceWindow(trace, (trace.count - size) // 2, size)


def sample_json(window: TraceWindow) -> dict:
    """What the report says about the window: which transactions, how many of how many."""
    n, total = window.count, window.trace.count
    text = (f"The durability and commit wait what-ifs simulate a sample, not the whole trace: "
            f"the middle {n:,} of its {total:,} transactions (positions "
            f"{window.start + 1:,}-{window.start + n:,}, seq {window.first_seq}.."
            f"{window.last_seq}), every run of theirs on that window, serial baseline "
            f"included. The scaling sweep, the recommendation, the diagnosis and the tracking "
            f"what-if used the whole trace. (Above {n:,} transactions the what-ifs run on "
            f"the middle {n:,}: `--whatif-sample N` to change it, 0 for the whole trace.)")
    return {"rule": "middle", "transactions": n, "of": total,
            "first_position": window.start + 1, "last_position": window.start + n,
            "first_seq": window.first_seq, "last_seq": window.last_seq,
            "whole_trace": ["scaling", "recommendation", "diagnosis", "tracking"],
            "text": text}


def _same_tracker(name: str, a: dict, b: dict) -> bool:
    """Whether two option sets make the same tracker (defaults filled in)."""
    try:
        return get_tracker(name, **a).opts == get_tracker(name, **b).opts
    except TrackerError:
        return False


class WhatIfs:
    """`plan` adds the runs to a `Tasks`; `assemble` makes the report's `whatif` from them."""

    def __init__(self, trace, *, profile, workers, rec, default, mariadb,
                 tracker_options, applier_options, bugs, threshold, wait_counts, results,
                 kept, shape, sample: TraceWindow | None = None):
        """`sample`: the window to simulate instead of `trace` (`sample_window`); then no run
        is taken from the sweep (`results`, `kept`: the whole trace's), and `shape` is not
        used (the wait counts' group sizes are the window's)."""
        self.sample = sample
        missing = missing_keys(trace)         # the whole trace's (worked out once per trace)
        if sample is not None:
            from .analysis import TrackerPasses
            trace, kept, shape = sample, {}, TrackerPasses(sample)
        self.trace, self.profile, self.workers = trace, profile, workers
        self.rec, self.default, self.mariadb = rec, default, mariadb
        self.tracker_options, self.applier_options, self.bugs = (tracker_options,
                                                                 applier_options, bugs)
        self.threshold, self.wait_counts = threshold, wait_counts
        self.results, self.kept, self.shape = results, kept, shape
        # Durability: the same schedulers on the same machine, durable and relaxed, each
        # against serial under the same settings (a relaxed-only profile has no durable variant).
        self.focus = list(dict.fromkeys(n for n in (rec.get("best", {}).get("scheduler"),
                                                    default) if n))
        self.own = f"{profile.name} ({profile.durability})"
        self.chosen = {self.own: profile}
        if profile.durability == "durable":
            self.chosen[f"{profile.name} (relaxed)"] = profile.with_durability("relaxed")
        self.base = tracker_options("slave_group_commit")
        # the commit wait what-if regroups by lock conflicts: not without the keys
        self.keys_unknown = (unknown_message(missing.unknown, "commit wait what-if")
                             if missing.unknown else None)

    def _wait_options(self, count: int) -> dict:
        return {**self.base, "commit_wait_count": count}

    def _swept(self, count: int) -> bool:
        """The sweep ran slave_group_commit with this count's options already."""
        return _same_tracker("slave_group_commit", self.base, self._wait_options(count)) and \
            all((REGROUPED, w) in self.kept for w in self.workers)

    def _one_thread(self, name: str, w: int) -> bool:
        """This run is the sweep's one-thread run of the regrouped scheduler (on a sample: the
        durability what-if's, on the window): the one-thread MariaDB run does not depend on
        the groups (scoring.same_one_thread_run)."""
        if not same_one_thread_run(parse_scheduler(name), w, self.bugs):
            return False
        if self.sample is not None:
            return any(same_one_thread_run(parse_scheduler(n), w, self.bugs) for n in self.focus)
        return (REGROUPED, 1) in self.kept

    def _wait_point(self, count: int, w: int, done: dict) -> tuple:
        if self.sample is not None:
            if self._one_thread(REGROUPED, w):
                return done[self._durability_key(self.own, REGROUPED, w)]
            return done["wait", count, w]
        if self._swept(count) or self._one_thread(REGROUPED, w):
            return self.kept[REGROUPED, w], None
        return done["wait", count, w]

    def _advice_extra(self) -> list[str]:
        """On a sample: the MariaDB schedulers the advice compares with, at the largest W,
        that the durability what-if does not run on the window already."""
        if self.sample is None or not self.mariadb:
            return []
        ran = {r["scheduler"] for r in self.results}
        return [n for n in ("commit_id+mariadb_conservative", "commit_id+mariadb_optimistic")
                if n in ran and n not in self.focus]

    def _durability_key(self, pname: str, name: str, w: int) -> tuple:
        """The task that makes this durability run: for a one-thread MariaDB run, the first
        focus scheduler's that is one (they are the same run)."""
        def same(n: str) -> bool:
            return same_one_thread_run(parse_scheduler(n), w, self.bugs)
        if same(name):
            name = next(n for n in self.focus if same(n))
        return ("durability", pname, name, w)

    def plan(self, tasks: Tasks) -> None:
        t, aopts, bugs = self.trace, self.applier_options, self.bugs
        if self.mariadb and not self.keys_unknown:
            for count in self.wait_counts:
                if self._swept(count):
                    continue
                opts = self._wait_options(count)
                for w in self.workers:
                    if self._one_thread(REGROUPED, w):
                        continue
                    tasks.add(("wait", count, w), f"commit wait count {count} W={w}",
                              lambda w=w, opts=opts: run_point(t, REGROUPED, w, self.profile,
                                                               opts, aopts, bugs))
        for pname, prof in self.chosen.items():
            if pname == self.own and self.sample is None:
                continue        # the sweep's runs
            for name in self.focus:
                topts = self.tracker_options(parse_scheduler(name).tracker)
                for w in self.workers:
                    if self._durability_key(pname, name, w)[2] != name:
                        continue
                    tasks.add(("durability", pname, name, w), f"{prof.durability}: {name} W={w}",
                              lambda name=name, w=w, prof=prof, topts=topts:
                              run_point(t, name, w, prof, topts, aopts, bugs))
            tasks.add(("durability", pname, "serial", 1), f"{prof.durability}: serial",
                      lambda prof=prof: run_point(t, "serial", 1, prof, {}, {}, bugs))
        wmax = self.workers[-1]
        for name in self._advice_extra():
            topts = self.tracker_options(parse_scheduler(name).tracker)
            tasks.add(("advice", name, wmax), f"{name} W={wmax}",
                      lambda name=name, topts=topts: run_point(t, name, wmax, self.profile,
                                                               topts, aopts, bugs))
        if self.mariadb and not self.keys_unknown:
            for count in self.wait_counts:
                self.shape.plan(tasks, "slave_group_commit", self._wait_options(count))

    def assemble(self, done: dict) -> dict:
        results = self.results
        if self.sample is None:
            serial_ms = next(r["makespan"] for r in results if r["scheduler"] == "serial")
        else:
            serial_ms = point_result(done["durability", self.own, "serial", 1], "serial", 1,
                                     self.profile, None)["makespan"]
        out: dict = {}
        if self.sample is not None:
            out["sample"] = sample_json(self.sample)
        # Tracking mode, recomputed from the write sets, on the MySQL applier.
        out["tracking"] = [
            {"scheduler": r["scheduler"], "tracker": r["scheduler"].split("+")[0],
             "workers": r["workers"], "speedup": r["speedup"], "throughput": r["throughput"]}
            for r in results if "error" not in r and r["scheduler"] in
            {f"{t}+mysql" for t in CLOCK_TRACKERS}]
        dur = []
        near = results     # what the advice on commit waits compares with: the same transactions
        for pname, prof in self.chosen.items():
            if pname == self.own and self.sample is None:
                rs = [r for r in results if r["scheduler"] in self.focus and "error" not in r]
                base_ms = serial_ms
            else:
                base_ms = point_result(done["durability", pname, "serial", 1], "serial", 1,
                                       prof, None)["makespan"]
                rs = [point_result(done[self._durability_key(pname, name, w)], name, w, prof,
                                   base_ms)
                      for name in self.focus for w in self.workers]
                if pname == self.own:
                    wmax = self.workers[-1]
                    near = rs + [point_result(done["advice", name, wmax], name, wmax, prof,
                                              base_ms) for name in self._advice_extra()]
            for r in rs:
                if "error" in r:
                    continue
                dur.append({"profile": pname, "scheduler": r["scheduler"], "workers": r["workers"],
                            "speedup": r["speedup"], "throughput": r["throughput"],
                            "makespan": r["makespan"], "serial_makespan": base_ms})
        out["durability"] = dur
        # MariaDB: regroup as an intermediate replica with binlog_commit_wait_count would.
        if self.mariadb and self.keys_unknown:
            out["commit_wait"] = {"skipped": self.keys_unknown, "rows": []}
        elif self.mariadb:
            rows = []
            for count in self.wait_counts:
                shape = self.shape.get("slave_group_commit", self._wait_options(count), done)
                for w in self.workers:
                    r = point_result(self._wait_point(count, w, done), REGROUPED, w,
                                     self.profile, serial_ms)
                    if "error" in r:
                        continue
                    rows.append({"commit_wait_count": count, "workers": r["workers"],
                                 "speedup": r["speedup"], "throughput": r["throughput"],
                                 "mean_group_size": shape and shape["mean_group_size"]})
            out["commit_wait"] = {"commit_wait_usec": self.base.get("commit_wait_usec", 100000.0),
                                  "rows": rows}
        out["delay_advice"] = _delay_advice(results, out, self.workers[-1], self.threshold,
                                            self.mariadb, near=near, sample=out.get("sample"))
        if self.mariadb and self.keys_unknown:
            out["delay_advice"].append(f"Not answered: {self.keys_unknown}.")
        return out


def _speedup(results, name, w):
    r = next((r for r in results if r["scheduler"] == name and r["workers"] == w
              and "error" not in r), None)
    return r and r["speedup"]


def _delay_advice(results, whatif, wmax, threshold, mariadb, *, near=None,
                  sample: dict | None = None) -> list[str]:
    """Should the source delay its commits (bigger groups, wider windows)? Sentences built from
    the numbers; a delay always costs the source commit latency, which the model does not see.
    `results`: the sweep's (the tracking sentence); `near`: the runs on the transactions the
    commit wait what-if ran on (the sweep's, or on a sample the window's)."""
    near = results if near is None else near
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
        cons = _speedup(near, "commit_id+mariadb_conservative", wmax)
        opt = _speedup(near, "commit_id+mariadb_optimistic", wmax)
        if at:
            best_c = max(at, key=lambda c: (at[c]["speedup"] or 0, -c))
            b = at[best_c]
            msg = (f"On the sample (the middle {sample['transactions']:,} of "
                   f"{sample['of']:,} transactions, seq {sample['first_seq']}.."
                   f"{sample['last_seq']}), MariaDB conservative: " if sample
                   else "MariaDB conservative: ")
            msg += (f"the source's own groups give {cons:.2f}x at {wmax} workers; "
                    if cons else "")
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
