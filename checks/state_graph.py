"""Spec-derived tests (design §8.3): in every state TLC reaches, the Python step function must
enable exactly the actions the applier spec enables, and lead to the same successors.

For each small fixed trace (a *model*: trace, scheduler, W), the generated module SGRun.tla
instantiates the applier spec (MySQLApplier.tla or MariaDBApplier.tla) with the trace's
annotation as literals, so that TLC's reachable states are applier states only. Several models
share one TLC run (the JVM start dominates a small model): a variable `k` picks the model at
Init and never changes. Every action instance gets its own name (`Dispatch_3_2` is
Dispatch(3, 2), `Commit_4` is Commit(4)), so TLC's `-dump dot,actionlabels` labels each edge
with the action and its arguments: nothing is inferred from the state difference.

The dot file is read back (nodes: `/\\ var = value` conjunctions parsed with tla_values; edges:
the action names) and compared state by state with `commitsched.steps_mysql` /
`commitsched.steps_mariadb`, which are built from the simulators' own rule functions
(`commitsched.rules`):
- an action the spec enables and the Python rules do not, or the reverse;
- an action both enable whose successor differs;
- the initial state.
A mismatch names the model, the state (its variables) and the action.

Covered: the clock trackers with the `mysql` applier, `commit_id`/`slave_group_commit` with
`mariadb_conservative`/`mariadb_optimistic` (as for trace validation).
"""
from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .tla_values import format_value, show_value
from .tlc import SetupError, run_generated
from .tlc_output import interpret, parse_state_vars

SPECS_DIR = Path(__file__).resolve().parents[1] / "specs"
DEFAULT_TIMEOUT = 300.0


class StateGraphError(Exception):
    """The comparison cannot run (no spec covers the scheduler, TLC failed, bad input)."""


# ------------------------------------------------------------------ models

@dataclass
class Case:
    """One model: a fixed trace under one scheduler with W workers."""
    label: str
    scheduler: str
    workers: int
    spec: str                       # MySQLApplier | MariaDBApplier
    model: Any                      # steps_mysql.Model | steps_mariadb.Model
    record: dict                    # the same constants as TLA+ values
    seqs: list[int]


def make_case(scheduler: str, txns: Sequence, workers: int, *, label: str = "",
              bugs: frozenset[str] = frozenset(), tracker_options: dict | None = None,
              checkpoint_group: int = 512, preserve_commit_order: bool = True,
              ticket_wrap: int = 0) -> Case:
    """The model of `txns` under `scheduler` (its tracker annotates them) with `workers`.
    `bugs`: applier bug flags of the Python side (the spec's are given to `compare`)."""
    from commitsched import steps_mariadb, steps_mysql
    from commitsched.schedulers import SchedulerError, parse_scheduler
    from commitsched.trackers import TRACKERS, TrackerError, get_tracker

    from .trace_validation import covered
    try:
        spec = covered(scheduler)
    except SchedulerError as e:
        raise StateGraphError(str(e)) from None
    if spec is None:
        raise StateGraphError(f"{scheduler}: no spec models this scheduler (covered: the mysql "
                              f"applier with a clock tracker, mariadb_conservative/optimistic)")
    if workers < 1:
        raise StateGraphError("workers must be at least 1")
    txns = list(txns)
    if not txns:
        raise StateGraphError("the trace has no transaction")
    sched = parse_scheduler(scheduler)
    try:
        tracker = get_tracker(sched.tracker, bugs=frozenset(bugs) & TRACKERS[sched.tracker].uses_bugs,
                              **(tracker_options or {}))
        deps = [dep for _, dep in tracker.annotate(iter(txns))]
    except TrackerError as e:
        raise StateGraphError(str(e)) from None
    keys = sorted({k for t in txns for k in (*t.writes, *t.replica_locks)})
    key_id = {k: i + 1 for i, k in enumerate(keys)}
    ws = tuple(frozenset(key_id[k] for k in t.writes) for t in txns)
    record: dict[str, Any] = {"n": len(txns), "workers": workers,
                              "keys": {"$set": list(range(1, len(keys) + 1))}}
    ws_tla = [{"$set": sorted(w)} for w in ws]
    if spec == "MySQLApplier":
        model = steps_mysql.Model(len(txns), workers, len(keys), tuple(d[0] for d in deps),
                                  tuple(d[1] for d in deps), tuple(d[2] for d in deps), ws,
                                  checkpoint_group, preserve_commit_order,
                                  frozenset(bugs) & set(steps_mysql.BUGS),
                                  tuple(frozenset(key_id[k] for k in t.replica_locks)
                                        for t in txns), ticket_wrap)
        record.update(cg=checkpoint_group, pco=preserve_commit_order, lc=list(model.lc),
                      sn=list(model.sn), file=list(model.file), ws=ws_tla,
                      xl=[{"$set": sorted(x)} for x in model.xl], tw=ticket_wrap)
    else:
        flags = tuple(frozenset(d[1]) for d in deps)
        for t, f in zip(txns, flags):
            dml = "ddl" not in f
            if dml and not {"transactional", "allow_parallel"} <= f:
                raise StateGraphError(
                    f"seq {t.seq}: MariaDBApplier.tla models transactional DML with "
                    f"FL_ALLOW_PARALLEL only (flags here: {', '.join(sorted(f)) or 'none'})")
        model = steps_mariadb.Model(len(txns), workers, len(keys),
                                    sched.applier.removeprefix("mariadb_"), ws,
                                    tuple(d[0] or 0 for d in deps), flags,
                                    frozenset(bugs) & set(steps_mariadb.BUGS))
        record.update(mode=model.mode,
                      txn=[{"ddl": "ddl" in f, "ws": w} for f, w in zip(flags, ws_tla)],
                      cid=list(model.cid), waited=["waited" in f for f in flags])
    return Case(label or f"{scheduler} W={workers}", scheduler, workers, spec, model, record,
                [t.seq for t in txns])


# ------------------------------------------------------------------ the generated module

_INSTANCE = {
    "MySQLApplier": ("tstate, worker, db, rd",
                     "N <- M[j].n, Workers <- M[j].workers, Keys <- M[j].keys, "
                     "CheckpointGroup <- M[j].cg, PreserveCommitOrder <- M[j].pco, "
                     "lc <- M[j].lc, sn <- M[j].sn, file <- M[j].file, ws <- M[j].ws, "
                     "xl <- M[j].xl, TicketWrap <- M[j].tw"),
    "MariaDBApplier": ("tstate, gco, specwait, drv, marked, retry, lk, rd, db, early",
                       "N <- M[j].n, Workers <- M[j].workers, Keys <- M[j].keys, "
                       "Mode <- M[j].mode, txn <- M[j].txn, cid <- M[j].cid, "
                       "waited <- M[j].waited, avail <- M[j].n"),
}
SPEC_BUG_FLAGS = {
    "MySQLApplier": ("lwm_off_by_one", "lwm_not_prefix", "rotation_ignored",
                     "commit_order_unenforced", "victim_wakeup_lost", "ticket_overflow"),
    "MariaDBApplier": ("gco_start_on_exec", "optimistic_no_kill"),
}
_ACTION_ARGS = {"Dispatch": 2, "Start": 1, "ExecEnd": 1, "Commit": 1, "Kill": 1, "Retry": 1,
                "DeadlockVictim": 1}


def module_text(name: str, cases: Sequence[Case], spec_bugs: frozenset[str] = frozenset()) -> str:
    spec = cases[0].spec
    variables, subst = _INSTANCE[spec]
    flags = ", ".join(f"{f} <- {'TRUE' if f in spec_bugs else 'FALSE'}"
                      for f in SPEC_BUG_FLAGS[spec])
    defs = []
    for n, c in enumerate(cases, 1):
        fields = ",\n   ".join(f"{k} |-> {format_value(v)}" for k, v in c.record.items())
        defs.append(f"\\* {c.label}\nModel{n} ==\n  [{fields}]\n")
    names = ", ".join(f"Model{n}" for n in range(1, len(cases) + 1))
    max_n = max(c.model.n for c in cases)
    max_w = max(c.workers for c in cases)
    actions = []
    for t in range(1, max_n + 1):
        for w in range(1, max_w + 1):
            actions.append((f"Dispatch_{t}_{w}", f"{t} <= M[j].n /\\ {w} <= M[j].workers",
                            f"Dispatch({t}, {w})"))
        for a in ("Start", "ExecEnd", "Commit") + (("Kill", "Retry") if spec == "MariaDBApplier"
                                                   else ("DeadlockVictim",)):
            actions.append((f"{a}_{t}", f"{t} <= M[j].n", f"{a}({t})"))
    body = "\n".join(f"{n} == \\E j \\in {{k}} : {guard} /\\ A(j)!{call} /\\ UNCHANGED k"
                     for n, guard, call in actions)
    nxt = "\n".join(f"  \\/ {n}" for n, _, _ in actions)
    return (f"---- MODULE {name} ----\n"
            f"\\* Generated by commitsched.checks.state_graph: fixed-trace models of {spec}.\n"
            f"EXTENDS Naturals, Sequences\n\nVARIABLES k, {variables}\n\n"
            + "\n".join(defs) + f"\nM == <<{names}>>\n\n"
            f"A(j) == INSTANCE {spec} WITH {subst},\n    {flags}\n\n"
            f"Init == /\\ k \\in 1..Len(M)\n        /\\ \\E j \\in {{k}} : A(j)!AInit\n\n"
            f"{body}\n\nNext ==\n{nxt}\n====\n")


# ------------------------------------------------------------------ reading TLC's dot dump

_NODE = re.compile(r'^(-?\d+) \[label="(.*)"(,style = filled)?\];?$')
_EDGE = re.compile(r'^(-?\d+) -> (-?\d+) \[label="([^"]*)"')
_LABEL_ESC = {"n": "\n", '"': '"', "\\": "\\"}


def _unescape_label(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in _LABEL_ESC:
            out.append(_LABEL_ESC[text[i + 1]])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@dataclass
class Graph:
    states: dict[str, dict]                      # node id -> variables
    initial: set[str]
    edges: dict[str, set[tuple[tuple, str]]]     # node id -> {((action, args), successor id)}


def parse_action_label(label: str, arities: dict | None = None) -> tuple[str, tuple[int, ...]]:
    """`Dispatch_3_2` -> ("Dispatch", (3, 2)). `arities`: action name -> argument count
    (default: the applier specs' actions)."""
    arities = _ACTION_ARGS if arities is None else arities
    name, *args = label.split("_")
    if name not in arities or len(args) != arities[name]:
        raise StateGraphError(f"unexpected action label {label!r} in TLC's state graph")
    return name, tuple(int(a) for a in args)


def parse_dot(text: str, arities: dict | None = None) -> Graph:
    """TLC 2.18's `-dump dot,actionlabels` output: one line per node (`id [label="/\\ v = e
    ..."]`, initial states `style = filled`), one per edge (`a -> b [label="Action"]`; an edge
    may be printed twice when two disjuncts of an action give the same successor)."""
    g = Graph({}, set(), {})
    for line in text.splitlines():
        m = _EDGE.match(line)
        if m:
            g.edges.setdefault(m.group(1), set()).add(
                (parse_action_label(m.group(3), arities), m.group(2)))
            continue
        m = _NODE.match(line)
        if m:
            node = m.group(1)
            g.states[node] = parse_state_vars(_unescape_label(m.group(2)).splitlines())
            if m.group(3):
                g.initial.add(node)
    return g


# ------------------------------------------------------------------ comparing

def show_action(a: tuple) -> str:
    return f"{a[0]}({', '.join(map(str, a[1]))})"


@dataclass
class Mismatch:
    case: Case
    state: dict                     # the spec state's variables
    action: tuple | None            # (name, args); None for the initial state
    kind: str                       # spec_only | python_only | successor | initial
    detail: str = ""

    def describe(self) -> str:
        c = self.case
        what = {"spec_only": "enabled by the spec, not by the Python rules",
                "python_only": "enabled by the Python rules, not by the spec",
                "successor": "leads to different states",
                "initial": "initial states differ"}[self.kind]
        head = f"{c.label}: " + (f"{show_action(self.action)} {what}" if self.action else what)
        lines = [head, "  in the spec state:"]
        lines += [f"    {n} = {show_value(v)}" for n, v in self.state.items() if n != "k"]
        if self.detail:
            lines.append("  " + self.detail)
        return "\n".join(lines)


@dataclass
class Result:
    cases: list[Case]
    states: int = 0                 # states compared
    transitions: int = 0            # spec transitions compared (distinct (state, action))
    per_case: dict[int, tuple[int, int]] = field(default_factory=dict)   # k -> (states, edges)
    mismatches: list[Mismatch] = field(default_factory=list)
    tlc_distinct: int | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def describe(self, limit: int = 3) -> str:
        head = (f"{len(self.cases)} model(s), {self.states} states, {self.transitions} "
                f"transitions compared in {self.seconds:.1f}s: ")
        if self.ok:
            return head + "the Python rules enable exactly the spec's actions"
        out = [head + f"{len(self.mismatches)} MISMATCH(ES)"]
        out += [m.describe() for m in self.mismatches[:limit]]
        if len(self.mismatches) > limit:
            out.append(f"... and {len(self.mismatches) - limit} more")
        return "\n".join(out)


def _steps(spec: str):
    from commitsched import steps_mariadb, steps_mysql
    return steps_mysql if spec == "MySQLApplier" else steps_mariadb


def compare_graph(cases: Sequence[Case], g: Graph) -> Result:
    res = Result(list(cases))
    steps = _steps(cases[0].spec)
    aux = {}
    for n, c in enumerate(cases, 1):
        aux[n] = c.model.barriers() if steps.__name__.endswith("mysql") else c.model.slots()
    seen_initial: dict[int, list] = {}
    for node, v in g.states.items():
        n = v["k"]
        c = cases[n - 1]
        s = steps.from_spec(c.model, v)
        if node in g.initial:
            seen_initial.setdefault(n, []).append((s, v))
        spec_out = {a: succ for a, succ in g.edges.get(node, ())}
        py_out = steps.enabled(c.model, s, aux[n])
        st, ed = res.per_case.get(n, (0, 0))
        res.per_case[n] = (st + 1, ed + len(spec_out))
        res.states += 1
        res.transitions += len(spec_out)
        for a in sorted(spec_out.keys() - py_out):
            res.mismatches.append(Mismatch(c, v, a, "spec_only"))
        for a in sorted(py_out - spec_out.keys()):
            res.mismatches.append(Mismatch(c, v, a, "python_only"))
        for a in sorted(spec_out.keys() & py_out):
            want = steps.from_spec(c.model, g.states[spec_out[a]])
            got = steps.apply(c.model, s, a)
            if got != want:
                diff = [f"{f}: spec {getattr(want, f)!r}, Python {getattr(got, f)!r}"
                        for f in want._fields if getattr(want, f) != getattr(got, f)]
                res.mismatches.append(Mismatch(c, v, a, "successor", "; ".join(diff)))
    for n, c in enumerate(cases, 1):
        got = [s for s, _ in seen_initial.get(n, [])]
        if got != [steps.initial(c.model)]:
            v = seen_initial[n][0][1] if seen_initial.get(n) else {}
            res.mismatches.append(Mismatch(c, v, None, "initial",
                                           f"Python: {steps.initial(c.model)!r}"))
    return res


def _run_tlc(folder: Path, name: str, timeout: float, jar: str | None) -> tuple[str, int | None]:
    try:
        return run_generated(folder, name, ["-deadlock", "-dump", "dot,actionlabels",
                                            str(folder / f"{name}.dot")],
                             timeout=timeout, jar=jar, manifest_path=SPECS_DIR / "models.json")
    except SetupError as e:
        raise StateGraphError(str(e)) from None


def write_modules(folder: Path, cases: Sequence[Case], *, name: str = "SGRun",
                  spec_bugs: frozenset[str] = frozenset()) -> Path:
    spec = cases[0].spec
    if any(c.spec != spec for c in cases):
        raise StateGraphError("one TLC run compares models of one spec")
    wrong = frozenset(spec_bugs) - set(SPEC_BUG_FLAGS[spec])
    if wrong:
        raise StateGraphError(f"{', '.join(sorted(wrong))}: not a flag of {spec}")
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SPECS_DIR / f"{spec}.tla", folder / f"{spec}.tla")
    (folder / f"{name}.tla").write_text(module_text(name, cases, frozenset(spec_bugs)),
                                        encoding="utf-8")
    (folder / f"{name}.cfg").write_text("INIT Init\nNEXT Next\n", encoding="utf-8")
    return folder / f"{name}.tla"


def compare(cases: Sequence[Case], *, spec_bugs: frozenset[str] = frozenset(),
            timeout: float = DEFAULT_TIMEOUT, jar: str | None = None,
            keep: Path | None = None) -> Result:
    """Compare every case (all of one spec) with TLC's reachable state graph, one TLC run."""
    if not cases:
        raise StateGraphError("no model to compare")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="commitsched-sg-") as tmp:
        folder = keep or Path(tmp)
        write_modules(folder, cases, spec_bugs=spec_bugs)
        out, code = _run_tlc(folder, "SGRun", timeout, jar)
        shutil.rmtree(folder / "states", ignore_errors=True)
        if keep:
            (folder / "SGRun.out").write_text(out, encoding="utf-8")
        if code is None:
            raise StateGraphError(f"TLC gave no verdict within {timeout:g}s")
        res = interpret(out, code)
        if res.outcome != "pass":
            raise StateGraphError(f"TLC: {res.got()}: {res.message or out[-2000:]}")
        graph = parse_dot((folder / "SGRun.dot").read_text(encoding="utf-8"))
    result = compare_graph(cases, graph)
    result.tlc_distinct = res.distinct_states
    if res.distinct_states is not None and res.distinct_states != len(graph.states):
        raise StateGraphError(f"TLC found {res.distinct_states} distinct states, its dot dump "
                              f"holds {len(graph.states)}")
    result.seconds = time.monotonic() - started
    return result


def compare_many(cases: Sequence[Case], **kw) -> Result:
    """`compare` with cases of both specs: one TLC run per spec, results merged."""
    by_spec: dict[str, list[Case]] = {}
    for c in cases:
        by_spec.setdefault(c.spec, []).append(c)
    total = Result(list(cases))
    for group in by_spec.values():
        r = compare(group, **kw)
        total.states += r.states
        total.transitions += r.transitions
        total.mismatches += r.mismatches
        total.seconds += r.seconds
    return total


__all__ = ["Case", "Graph", "Mismatch", "Result", "StateGraphError", "compare", "compare_graph",
           "compare_many", "make_case", "module_text", "parse_dot", "write_modules"]
