"""The bug catalogue (model/bugs.py, design §7) caught on both sides.

For every entry, independently:
- `tlc`: TLC on each specs/models.json entry with that `bug` (its *_bug.cfg); caught when it
  violates the property the entry expects. Applies to every entry (names.md: each has a cfg);
  an entry without a manifest entry counts as not caught.
- `properties`: a hypothesis search (`find`, derandomized, shrunk) for a small trace and worker
  count on which the Python model with the flag on violates one of the entry's properties
  (a deadlock for `NoDeadlock`) while the same case without the flag violates none, so the
  flag is the cause. Applies to every entry. An entry the scheduler simulator cannot inject
  (`bugs.NOT_IN_SIMULATOR`) is searched in its own Python state machine instead (EXPLORERS):
  every reachable state, smallest model first, with and without the flag.
- `trace_validation`: the flagged simulator's schedule on the shrunk counterexample, plus a
  batch of further drawn cases, checked against the *correct* applier spec; caught when one
  is rejected. Applies to applier bugs only: a tracker bug changes the annotation, which the
  applier spec takes as input, so the correct applier replays it faithfully (null otherwise).
- `z3`: `commitsched.checks.z3_soundness.z3_catches(bug)` when that module exists: caught when
  it returns a counterexample; applies to the bugs of its BUG_TARGET (the WRITESET trackers),
  null for the others and when the module is absent.
An entry *escapes* a column that applies to it and did not catch it.
"""
from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
DEFAULT_EXAMPLES = 3000           # property search budget (find stops at the first hit)
TV_EXTRA = 30                     # further drawn cases validated per applier bug
TLC_OUT = REPO / "build" / "mutants"

# How each entry is searched for on the Python side: the scheduler that exercises the flagged
# component, the shape of the traces (tests/strategies.py `traces` arguments), tracker
# options, the worker range, and whether some transactions are admin statements.
# Sessions: tests/strategies.py gives every transaction a session and orders each after the
# same session's earlier ones; with sessions=0 they all share "no session" (None == None) and
# every last_committed is sn - 1, which leaves no parallelism. Eight sessions rarely repeat.
PLAIN_DML = dict(ddl=False, fk=False, sessions=8, rotations=False, keys=2, min_size=4)


@dataclass(frozen=True)
class Search:
    scheduler: str
    shape: dict = field(default_factory=dict)
    tracker_options: dict = field(default_factory=dict)
    applier_options: dict = field(default_factory=dict)
    workers: tuple[int, int] = (2, 4)
    admin: bool = False
    replica_locks: bool = False


SEARCHES: dict[str, Search] = {
    "lwm_off_by_one": Search("commit_order+mysql", PLAIN_DML),
    # With commits in source order the highest committed is the prefix's end: the bug needs
    # replica_preserve_commit_order off (as its TLC model has it).
    "lwm_not_prefix": Search("commit_order+mysql", PLAIN_DML,
                             applier_options={"preserve_commit_order": False}),
    "rotation_ignored": Search("commit_order+mysql", {**PLAIN_DML, "rotations": True}),
    "commit_order_unenforced": Search("commit_order+mysql", PLAIN_DML),
    "history_evict_no_floor": Search("writeset+mysql", {}, {"history_size": 2}),
    "ddl_not_isolated": Search("writeset+mysql"),
    "unique_keys_ignored": Search("writeset+mysql"),
    "before_image_ignored": Search("writeset+mysql"),
    "session_order_dropped": Search("writeset_session+mysql"),
    "group_not_split_on_wait": Search("slave_group_commit+mariadb_conservative", {},
                                      {"commit_wait_count": 4, "commit_wait_usec": 1000.0}),
    "gco_start_on_exec": Search("commit_id+mariadb_conservative"),
    "optimistic_no_kill": Search("commit_id+mariadb_optimistic"),
    "admin_barrier_missing": Search("writeset+mysql", admin=True),
    "victim_wakeup_lost": Search("commit_order+mysql", PLAIN_DML, replica_locks=True),
    # the ticket wraps after 2^31 transactions in the server: every second one here
    "ticket_overflow": Search("commit_order+mysql", PLAIN_DML,
                              applier_options={"ticket_wrap": 2}),
}


# Entries of bugs.NOT_IN_SIMULATOR: the Python state machine that carries the flag, a module
# with `find_violation(bug, props)` -> (transactions, property, behaviour) or None.
EXPLORERS: dict[str, str] = {
    "retry_ignores_prior_error": "commitsched.stop_mariadb",
    # certification-based clusters (docs/certification.md)
    "cert_purge_past_safe": "commitsched.steps_certification",
    "failed_ws_commits_early": "commitsched.steps_certification",
    "fc_stop_mark_late": "commitsched.flow_control",
}

# Cluster bugs the cluster simulator takes: their trace-validation column records its runs
# and checks them against specs/Certification.tla (checks/trace_validation_cert.py).
CLUSTER_TRACE_VALIDATION = frozenset({"cert_purge_past_safe", "failed_ws_commits_early"})


class MutantsError(Exception):
    """The run cannot happen (hypothesis or the test strategies missing, unknown entry)."""


@dataclass
class Row:
    name: str
    where: str
    tlc: bool | None = None
    tlc_detail: str = ""
    properties: bool | None = None
    properties_detail: str = ""
    trace_validation: bool | None = None
    trace_validation_detail: str = ""
    z3: bool | None = None
    z3_detail: str = ""
    counterexample_txns: int | None = None
    counterexample_workers: int | None = None
    seconds: float = 0.0
    applies: tuple[str, ...] = ()

    def escapes(self) -> list[str]:
        return [c for c in self.applies if getattr(self, c) is not True]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "where": self.where, "tlc": self.tlc,
                "properties": self.properties, "trace_validation": self.trace_validation,
                "z3": self.z3, "counterexample_txns": self.counterexample_txns,
                "counterexample_workers": self.counterexample_workers,
                "applies": list(self.applies), "escapes": self.escapes(),
                "details": {"tlc": self.tlc_detail, "properties": self.properties_detail,
                            "trace_validation": self.trace_validation_detail,
                            "z3": self.z3_detail},
                "seconds": round(self.seconds, 1)}


def z3_hook() -> Callable[[str], tuple[bool | None, str]] | None:
    """The z3 column from `commitsched.checks.z3_soundness.z3_catches(bug)` (a counterexample
    or None) if that module exists: (caught, detail), caught None where the bug is outside
    its check (not in its BUG_TARGET)."""
    try:
        from . import z3_soundness
        catches = z3_soundness.z3_catches
    except (ImportError, AttributeError):
        return None
    targets = getattr(z3_soundness, "BUG_TARGET", None)

    def column(bug: str) -> tuple[bool | None, str]:
        if targets is not None and bug not in targets:
            return None, "outside the z3 check"
        got = catches(bug)
        if isinstance(got, bool) or got is None:
            return got, "" if got else "no counterexample within z3's bounds"
        rows = getattr(got, "rows", None)
        return True, f"{len(rows)} transactions" if rows is not None else "counterexample"
    return column


# ------------------------------------------------------------------ TLC

def tlc_column(bug: str, *, timeout: float | None = None) -> tuple[bool, str]:
    from . import manifest
    from .tlc import SetupError, find_jar, find_java, run_model
    path = REPO / "specs" / "models.json"
    entries = [e for e in manifest.load(path) if e.get("bug") == bug]
    if not entries:
        return False, "no models.json entry with this bug"
    try:
        java, jar = find_java(), find_jar(None, path)
    except SetupError as e:
        return False, str(e)
    TLC_OUT.mkdir(parents=True, exist_ok=True)
    notes, caught = [], False
    for e in entries:
        run = run_model(e, specs_dir=path.parent, java=java, jar=jar, out_dir=TLC_OUT,
                        timeout_cap=timeout)
        ok = run.verdict == "OK"
        caught = caught or ok
        notes.append(f"{e['name']}: {run.result.got()} ({run.seconds:.1f}s)"
                     + ("" if ok else f" {run.verdict}: {run.reason}"))
    return caught, "; ".join(notes)


# ------------------------------------------------------------------ Python properties

def _strategies():
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        raise MutantsError("needs hypothesis (pip install -e '.[test]')") from None
    tests = REPO / "tests"
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    try:
        import strategies
    except ImportError:
        raise MutantsError(f"needs the trace strategies of {tests}/strategies.py") from None
    return strategies


def case_strategy(search: Search):
    """(trace, workers) cases for one entry."""
    from hypothesis import strategies as st
    strategies = _strategies()
    shape = {"min_size": 2, "max_size": 8, **search.shape}
    traces = strategies.traces(**shape)
    if search.admin:
        # Admin statements (ANALYZE, OPTIMIZE, ...) log no rows and release their locks at
        # flush (semantics §1.2); the strategies do not draw them, so mark some here.
        def with_admin(args):
            trace, marks = args
            for txn, mark in zip(trace.txns, marks):
                if mark and not txn.ddl:
                    txn.admin, txn.writes, txn.before_images = True, (), ()
            return trace
        traces = st.tuples(traces, st.lists(st.booleans(), min_size=8, max_size=8)).map(with_admin)
    if search.replica_locks:
        traces = st.tuples(traces, st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)),
                                            max_size=4)).map(with_replica_locks)
    return st.tuples(traces, st.integers(*search.workers))


def with_replica_locks(args):
    """Give some transactions replica_locks (rows the replica locks that the source never
    did, semantics §1.8; the strategies do not draw them): (transaction, key) index pairs
    into the trace, each key one that another transaction writes."""
    trace, picks = args
    keys = sorted({k for t in trace.txns for k in t.writes})
    if not keys:
        return trace
    extra: dict[int, list] = {}
    for i, j in picks:
        txn = trace.txns[i % len(trace.txns)]
        key = keys[j % len(keys)]
        if key not in txn.writes and key not in extra.get(txn.seq, ()):
            extra.setdefault(txn.seq, []).append(key)
    for txn in trace.txns:
        if txn.seq in extra:
            txn.replica_locks = tuple(extra[txn.seq])
    return trace


def violations(bug: str | None, search: Search, trace, workers: int, props) -> list[str]:
    """The entry's properties that the run violates (`NoDeadlock` when it deadlocks)."""
    from commitsched import properties
    from commitsched.profiles import get_profile
    from commitsched.schedulers import SchedulerError, collect
    from commitsched.simcore import Deadlock
    try:
        runs, _ = collect(search.scheduler, trace.txns, workers, get_profile("ideal"),
                          bugs=frozenset({bug}) if bug else frozenset(),
                          tracker_options=dict(search.tracker_options),
                          applier_options=dict(search.applier_options))
    except Deadlock:
        return ["NoDeadlock"] if "NoDeadlock" in props else []
    except SchedulerError:          # e.g. commit_id on a trace without commit ids
        return []
    return [p for p in props if p != "NoDeadlock" and properties.check(p, runs, len(trace))]


def explorer_column(bug: str, props):
    """The properties column of an EXPLORERS entry: (caught, detail, (transactions, threads)
    of the smallest counterexample, or None)."""
    import importlib
    module = importlib.import_module(EXPLORERS[bug])
    found = module.find_violation(bug, tuple(props))
    if found is None:
        return False, f"{EXPLORERS[bug]}: no reachable violation", None
    n, prop, steps = found
    return (True, f"{EXPLORERS[bug]} N={n}: {prop} after {len(steps) - 1} steps",
            (list(range(1, n + 1)), n))


def properties_column(bug: str, search: Search | None, props, examples: int):
    """(caught, detail, counterexample (trace, workers) or None)."""
    if bug in EXPLORERS:
        return explorer_column(bug, props)
    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import NoSuchExample

    def caused_by_bug(case):
        trace, workers = case
        return (bool(violations(bug, search, trace, workers, props))
                and not violations(None, search, trace, workers, props))
    try:
        trace, workers = find(case_strategy(search), caused_by_bug, settings=settings(
            max_examples=examples, database=None, derandomize=True, deadline=None,
            suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return False, f"{search.scheduler}: no case in {examples} examples", None
    got = violations(bug, search, trace, workers, props)
    return True, f"{search.scheduler} W={workers}: {', '.join(got)}", (trace, workers)


def draw_cases(search: Search, count: int) -> list:
    """`count` cases of the entry's strategy, reproducibly (hypothesis `find` as a generator)."""
    from hypothesis import HealthCheck, find, settings
    from hypothesis.errors import NoSuchExample
    seen: list = []

    def keep(case):
        seen.append(case)
        return False
    try:
        find(case_strategy(search), keep, settings=settings(
            max_examples=count, database=None, derandomize=True, deadline=None,
            suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        pass
    return seen[:count]


# ------------------------------------------------------------------ trace validation

def trace_validation_column(bug: str, search: Search, cex) -> tuple[bool, str]:
    from commitsched.profiles import get_profile
    from commitsched.schedulers import SchedulerError

    from . import trace_validation as tv
    cases = ([cex] if cex else []) + draw_cases(search, TV_EXTRA)
    schedules = []
    for trace, workers in cases:
        try:
            schedules.append(tv.record_schedule(
                search.scheduler, trace.txns, workers, get_profile("ideal"),
                bugs=frozenset({bug}), tracker_options=dict(search.tracker_options),
                applier_options=dict(search.applier_options)))
        except SchedulerError:
            continue
    if not schedules:
        return False, "no schedule to validate"
    try:
        verdicts = tv.validate(schedules)
    except tv.TraceValidationError as e:
        return False, f"trace validation failed to run: {e}"
    rejected = [v for v in verdicts if not v.accepted]
    if not rejected:
        return False, f"all {len(verdicts)} schedules accepted by the correct spec"
    first = rejected[0]
    where = "the counterexample" if cex and first is verdicts[0] else "a drawn case"
    return True, (f"{len(rejected)}/{len(verdicts)} rejected; {where}: event "
                  f"#{first.matched + 1} {first.event.describe() if first.event else '?'}")


# ------------------------------------------------------------------ all together

def run(*, only: list[str] | None = None, examples: int | None = None,
        tlc_timeout: float | None = None,
        progress: Callable[[str], None] = lambda msg: None) -> list[Row]:
    from commitsched.bugs import CATALOGUE
    names = list(only or CATALOGUE)
    unknown = [n for n in names if n not in CATALOGUE]
    if unknown:
        raise MutantsError(f"unknown entry {', '.join(unknown)}; the catalogue: "
                           f"{', '.join(CATALOGUE)}")
    missing = [n for n in names if n not in SEARCHES and n not in EXPLORERS]
    if missing:
        raise MutantsError(f"no property search defined for {', '.join(missing)} "
                           f"(checks/mutants.py SEARCHES)")
    _strategies()
    z3 = z3_hook()
    # TLC (a JVM per model, one at a time, in the manifest's order) runs beside the Python
    # columns, which hold the other core: a row's time runs until its last column is done.
    tlc_runs = ThreadPoolExecutor(max_workers=1)
    tlc_results = [tlc_runs.submit(tlc_column, name, timeout=tlc_timeout) for name in names]
    tlc_runs.shutdown(wait=False)
    try:
        return _rows(names, tlc_results, examples, z3, progress)
    finally:
        for pending in tlc_results:          # an error or ^C: no TLC left to start
            pending.cancel()


def _rows(names, tlc_results, examples, z3, progress) -> list[Row]:
    """The Python columns of each entry, in order, then its TLC column's result."""
    from commitsched.bugs import CATALOGUE
    from commitsched.schedulers import APPLIER_BUGS
    rows = []
    for n, name in enumerate(names, 1):
        where, _, props = CATALOGUE[name]
        search = SEARCHES.get(name)
        started = time.monotonic()
        tv = name in APPLIER_BUGS or name in CLUSTER_TRACE_VALIDATION
        applies = ["tlc", "properties"] + (["trace_validation"] if tv else [])
        row = Row(name, where, applies=tuple(applies))
        progress(f"[{n}/{len(names)}] {name}: properties")
        row.properties, row.properties_detail, cex = properties_column(
            name, search, props, examples or DEFAULT_EXAMPLES)
        if cex:
            row.counterexample_txns, row.counterexample_workers = len(cex[0]), cex[1]
        if name in CLUSTER_TRACE_VALIDATION:
            progress(f"[{n}/{len(names)}] {name}: trace validation")
            from . import trace_validation_cert
            try:
                row.trace_validation, row.trace_validation_detail = (
                    trace_validation_cert.catches(name))
            except trace_validation_cert.TraceValidationError as e:
                row.trace_validation, row.trace_validation_detail = False, f"failed: {e}"
        elif name in APPLIER_BUGS:
            progress(f"[{n}/{len(names)}] {name}: trace validation")
            row.trace_validation, row.trace_validation_detail = trace_validation_column(
                name, search, cex)
        if z3 is not None:
            progress(f"[{n}/{len(names)}] {name}: z3")
            row.z3, row.z3_detail = z3(name)
            if row.z3 is not None:
                row.applies += ("z3",)
        progress(f"[{n}/{len(names)}] {name}: TLC")
        row.tlc, row.tlc_detail = tlc_results[n - 1].result()
        row.seconds = time.monotonic() - started
        rows.append(row)
    return rows


def table(rows: list[Row]) -> str:
    def mark(row: Row, col: str) -> str:
        v = getattr(row, col)
        if col not in row.applies and v is None:
            return "n/a"
        return {True: "caught", False: "MISSED", None: "MISSED"}[v]
    z3_shown = any(r.z3 is not None for r in rows)
    head = ["entry", "where", "TLC", "properties", "trace valid.", *(["z3"] if z3_shown else []),
            "cex txns", "time"]
    out = [head]
    for r in rows:
        out.append([r.name, r.where, mark(r, "tlc"), mark(r, "properties"),
                    mark(r, "trace_validation"), *([mark(r, "z3")] if z3_shown else []),
                    "-" if r.counterexample_txns is None
                    else f"{r.counterexample_txns} (W={r.counterexample_workers})",
                    f"{r.seconds:.0f}s"])
    widths = [max(len(row[i]) for row in out) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in out]
    cols = ("tlc", "properties", "trace_validation") + (("z3",) if z3_shown else ())
    caught = {c: sum(1 for r in rows if getattr(r, c) is True) for c in cols}
    applies = {c: sum(1 for r in rows if c in r.applies) for c in cols}
    lines.append("caught: " + ", ".join(f"{c} {caught[c]}/{applies[c]}" for c in caught)
                 + f"; {sum(r.seconds for r in rows):.0f}s in all")
    for r in rows:
        for c in r.escapes():
            detail = getattr(r, f"{c}_detail", "")
            lines.append(f"  {r.name} escapes {c}: {detail}")
    return "\n".join(lines)


__all__ = ["SEARCHES", "EXPLORERS", "Search", "Row", "MutantsError", "run", "table", "z3_hook"]
