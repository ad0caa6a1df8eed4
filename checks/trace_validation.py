"""Trace validation: is a schedule of the Python simulator a behaviour of the applier spec?

The simulator runs with its `log=` observer (simcore.EventLog); its events become a TLA+ module
of literals (TLC 2.18 has no Json module), and TLC explores specs/Trace<Applier>.tla, whose
next-state relation is the applier's action named by the next logged event (TLA+ trace
validation: a variable `i` indexes the log). Timing is abstracted away: only the order of the
events and so what runs at the same time must be a spec behaviour.

Two ways to ask TLC:
- `validate_one`: the canonical form. Invariant `NotFullyMatched == i < Len(Log)` with deadlock
  checking on: a violation of the invariant means the whole log matched (accepted); a deadlock
  with `i < Len(Log)` is the first event the spec could not take (rejected), and TLC's trace
  ends in the spec state before it.
- `validate`: many schedules in one TLC run (the JVM start dominates a small check). TLC picks
  the schedule at Init; an always-true invariant `Verdict` prints `accepted` or the stuck state
  per schedule (deadlock checking off).

Covered schedulers: the `mysql` applier with a clock tracker (MySQLApplier.tla) and the
`mariadb_conservative` / `mariadb_optimistic` appliers (MariaDBApplier.tla). Not covered:
`serial`, the `database` tracker (MySQL 5.6 DATABASE submode) and `mariadb_aggressive`, which
no spec models.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .tla_values import TLAValueError, format_value, parse_value, show_value
from .tlc import SetupError, run_generated
from .tlc_output import interpret

SPECS_DIR = Path(__file__).resolve().parents[1] / "specs"
SPEC_OF_APPLIER = {"mysql": "MySQLApplier", "mariadb_conservative": "MariaDBApplier",
                   "mariadb_optimistic": "MariaDBApplier"}
SPEC_BUG_FLAGS = {
    "MySQLApplier": ("lwm_off_by_one", "lwm_not_prefix", "rotation_ignored",
                     "commit_order_unenforced", "victim_wakeup_lost", "ticket_overflow"),
    "MariaDBApplier": ("gco_start_on_exec", "optimistic_no_kill"),
    # certification-based clusters: runs recorded by checks/trace_validation_cert.py
    "Certification": ("cert_purge_past_safe", "failed_ws_commits_early"),
}
DEFAULT_TIMEOUT = 170.0


class TraceValidationError(Exception):
    """The schedule cannot be validated at all (no spec covers it, TLC failed to run)."""


@dataclass
class Event:
    action: str                 # dispatch | start | exec_end | commit | kill | retry | end | stuck
    t: int                      # transaction index 1..N in source order (0 for end / stuck)
    w: int = 0                  # dispatch: the worker (from 1)
    seq: int | None = None      # the trace's seq
    time: float | None = None
    by: int | None = None       # kill: the seq whose lock request killed it

    def describe(self) -> str:
        if self.action in ("end", "stuck"):
            return {"end": "end (the simulator committed every transaction)",
                    "stuck": "stuck (the simulator deadlocked: nothing can fire)"}[self.action]
        what = f"{self.action} t={self.t} (seq {self.seq}"
        if self.action == "dispatch":
            what += f", worker {self.w}"
        if self.action == "kill" and self.by is not None:
            what += f", killed by seq {self.by}"
        return what + f", time {self.time:g})"

    def to_tla(self) -> dict:
        return {"a": self.action, "t": self.t, "w": self.w}


@dataclass
class Schedule:
    """One simulated schedule, ready to be written as a TLA+ trace record."""
    scheduler: str
    workers: int
    spec: str                   # MySQLApplier | MariaDBApplier
    record: dict                # the trace record of Trace<spec>.tla, minus the log
    events: list[Event]
    seqs: list[int]             # t -> seq (t from 1)

    def to_tla(self) -> dict:
        return {**self.record, "log": [e.to_tla() for e in self.events]}


@dataclass
class Verdict:
    schedule: Schedule
    accepted: bool
    matched: int = 0                    # events the spec took
    event: Event | None = None          # rejected: the first event the spec could not take
    state: dict | None = None           # rejected: the spec state before it
    why: dict | None = None             # rejected: the guards of its action in that state
    seconds: float = 0.0

    def describe(self) -> str:
        s = self.schedule
        head = f"{s.scheduler} W={s.workers}: {len(s.events)} events"
        if self.accepted:
            return f"{head}: accepted by {s.spec}"
        lines = [f"{head}: REJECTED by {s.spec} after {self.matched} matched events",
                 f"  first event the spec cannot take: #{self.matched + 1} "
                 f"{self.event.describe() if self.event else '?'}"]
        if self.state is None:
            lines.append("  (every earlier event matched, but no spec behaviour from there "
                         "reaches a state where nothing is enabled)")
            return "\n".join(lines)
        lines.append("  spec state before it:")
        for name, value in self.state.items():
            lines.append(f"    {name} = {show_value(value)}")
        if self.why:
            lines.append("  what the action's guards see there:")
            for name, value in self.why.items():
                lines.append(f"    {name} = {show_value(value)}")
        return "\n".join(lines)


# ------------------------------------------------------------ recording a schedule

def covered(scheduler: str) -> str | None:
    """The spec that models `scheduler`'s applier, or None."""
    from commitsched.schedulers import parse_scheduler
    from commitsched.trackers import TRACKERS
    s = parse_scheduler(scheduler)
    if s.is_serial or TRACKERS[s.tracker].kind == "database":
        return None
    return SPEC_OF_APPLIER.get(s.applier)


def record_schedule(scheduler: str, txns: Sequence, workers: int, profile, *,
                    bugs: frozenset[str] = frozenset(), tracker_options: dict | None = None,
                    applier_options: dict | None = None) -> Schedule:
    """Simulate `scheduler` on `txns` and keep its events in the order the spec must take them."""
    from commitsched.schedulers import APPLIER_BUGS, SchedulerError, parse_scheduler, run_scheduler
    from commitsched.simcore import Deadlock
    from commitsched.trackers import TrackerError, get_tracker
    spec = covered(scheduler)
    if spec is None:
        raise TraceValidationError(
            f"{scheduler}: no spec models this scheduler (trace validation covers the mysql "
            f"applier with a clock tracker and mariadb_conservative/optimistic)")
    txns = list(txns)
    sched = parse_scheduler(scheduler)
    # The annotation every transaction gets, committed or not (the tracker is deterministic).
    try:
        tracker = get_tracker(sched.tracker, bugs=frozenset(bugs) - APPLIER_BUGS,
                              **(tracker_options or {}))
        deps = [dep for _, dep in tracker.annotate(iter(txns))]
    except TrackerError as e:
        raise SchedulerError(str(e)) from None
    seqs = [t.seq for t in txns]
    index = {seq: i + 1 for i, seq in enumerate(seqs)}
    raw: list[tuple[str, int, float, int | None]] = []
    opts = dict(applier_options or {})
    opts["log"] = lambda ev, seq, when, arg: raw.append((ev, seq, when, arg))
    outcome = "end"
    try:
        run_scheduler(sched, iter(txns), workers, profile, lambda run: None, bugs=bugs,
                      tracker_options=tracker_options, applier_options=opts)
    except Deadlock:
        outcome = "stuck"
    if spec == "MySQLApplier":
        # MySQL logs start/exec_end with their own times: time order, ties in call order.
        ordered = [e for _, e in sorted(enumerate(raw), key=lambda p: (p[1][2], p[0]))]
    else:
        ordered = _kills_after_killer(raw)
    events = [Event(ev, index[seq], arg if ev == "dispatch" else 0, seq, when,
                    arg if ev == "kill" else None) for ev, seq, when, arg in ordered]
    events.append(Event(outcome, 0))
    keys = sorted({k for t in txns for k in (*t.writes, *t.replica_locks)})
    key_id = {k: i + 1 for i, k in enumerate(keys)}
    ws = [{"$set": sorted(key_id[k] for k in set(t.writes))} for t in txns]
    xl = [{"$set": sorted(key_id[k] for k in set(t.replica_locks))} for t in txns]
    record: dict[str, Any] = {"n": len(txns), "workers": workers,
                              "keys": {"$set": list(range(1, len(keys) + 1))}}
    if spec == "MySQLApplier":
        record["cg"] = opts.get("checkpoint_group", 512)
        record["pco"] = bool(opts.get("preserve_commit_order", True))
        record["lc"] = [d[0] for d in deps]
        record["sn"] = [d[1] for d in deps]
        record["file"] = [d[2] for d in deps]
        record["ws"] = ws
        record["xl"] = xl
        # TicketWrap: 0 (never) unless the run chose one (it only matters with ticket_overflow)
        record["tw"] = opts.get("ticket_wrap", 0)
    else:
        record["mode"] = sched.applier.removeprefix("mariadb_")
        record["txn"] = [{"ddl": "ddl" in d[1], "ws": w} for d, w in zip(deps, ws)]
        record["cid"] = [d[0] or 0 for d in deps]
        record["waited"] = ["waited" in d[1] for d in deps]
    return Schedule(scheduler, workers, spec, record, events, seqs)


def _kills_after_killer(raw: list) -> list:
    """The simulator kills a later lock holder just before the killer starts (its lock loop);
    the spec's Kill(u) needs the killer already executing. Move each kill right after the
    killer's start/retry when that comes next; otherwise leave it where it is (the spec may
    then reject it: the killer waits without executing)."""
    out: list = []
    pending: list = []
    for ev in raw:
        if ev[0] == "kill":
            if pending and pending[-1][3] != ev[3]:
                out.extend(pending)
                pending = []
            pending.append(ev)
            continue
        if pending and ev[0] in ("start", "retry") and ev[1] == pending[0][3]:
            out.append(ev)
            out.extend(pending)
            pending = []
            continue
        out.extend(pending)
        pending = []
        out.append(ev)
    out.extend(pending)
    return out


# ------------------------------------------------------------ running TLC

def _module_text(name: str, spec: str, schedules: Sequence[Schedule]) -> str:
    # One definition per schedule: TLC computes each once, whereas a single literal tuple behind
    # the `Traces <- TracesVal` override is rebuilt at every access (quadratic in the batch).
    defs = []
    for n, s in enumerate(schedules, 1):
        rec = s.to_tla()
        fields = [f"{k} |-> {format_value(v)}" for k, v in rec.items() if k != "log"]
        log = ",\n      ".join(format_value(e) for e in rec["log"])
        fields.append(f"log |-> <<\n      {log}>>")
        defs.append(f"\\* {s.scheduler} W={s.workers}\nSchedule{n} ==\n  ["
                    + ",\n   ".join(fields) + "]\n")
    names = ", ".join(f"Schedule{n}" for n in range(1, len(schedules) + 1))
    return (f"---- MODULE {name} ----\n"
            f"\\* Generated by commitsched.checks.trace_validation: simulated schedules as "
            f"literals.\nEXTENDS Trace{spec}\n\n" + "\n".join(defs)
            + f"\nTracesVal == <<{names}>>\n====\n")


def _cfg_text(spec: str, invariants: str, spec_bugs: frozenset[str]) -> str:
    flags = "\n".join(f"  {f} = {'TRUE' if f in spec_bugs else 'FALSE'}"
                      for f in SPEC_BUG_FLAGS[spec])
    return (f"CONSTANTS\n  Traces <- TracesVal\n{flags}\nINIT Init\nNEXT TraceNext\n"
            f"INVARIANTS {invariants}\n")


def write_modules(folder: Path, schedules: Sequence[Schedule], *, name: str = "TVRun",
                  invariant: str = "NotFullyMatched Verdict",
                  spec_bugs: frozenset[str] = frozenset()) -> Path:
    """Write the generated module, its cfg and the spec modules it needs into `folder`."""
    spec = schedules[0].spec
    folder.mkdir(parents=True, exist_ok=True)
    for module in (spec, f"Trace{spec}"):
        src = SPECS_DIR / f"{module}.tla"
        if not src.is_file():
            raise TraceValidationError(f"spec module {src} not found")
        shutil.copy(src, folder / src.name)
    (folder / f"{name}.tla").write_text(_module_text(name, spec, schedules), encoding="utf-8")
    (folder / f"{name}.cfg").write_text(_cfg_text(spec, invariant, spec_bugs), encoding="utf-8")
    return folder / f"{name}.tla"


def _run_tlc(folder: Path, name: str, *, deadlock: bool, timeout: float,
             jar: str | None = None) -> tuple[str, int | None]:
    try:
        return run_generated(folder, name, [] if deadlock else ["-deadlock"], timeout=timeout,
                             jar=jar, manifest_path=SPECS_DIR / "models.json")
    except SetupError as e:
        raise TraceValidationError(str(e)) from None


def _state_vars(state: dict, spec: str) -> dict:
    names = {"MySQLApplier": ("tstate", "worker", "db"),
             "Certification": ("cert", "dec", "dep", "st", "pb")}.get(
                 spec, ("tstate", "gco", "marked", "retry", "lk"))
    return {n: state[n] for n in names if n in state}


def validate_one(schedule: Schedule, *, spec_bugs: frozenset[str] = frozenset(),
                 timeout: float = DEFAULT_TIMEOUT, jar: str | None = None,
                 keep: Path | None = None) -> Verdict:
    """The canonical check: NotFullyMatched must be violated, and no deadlock before the end.
    (Verdict, always true, rides along to print what the guards see where it gets stuck.)
    `keep`: a folder to leave the generated module and TLC's output in."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="commitsched-tv-") as tmp:
        folder = keep or Path(tmp)
        write_modules(folder, [schedule], spec_bugs=spec_bugs)
        out, code = _run_tlc(folder, "TVRun", deadlock=True, timeout=timeout, jar=jar)
        if keep:
            (folder / "TVRun.out").write_text(out, encoding="utf-8")
            shutil.rmtree(folder / "states", ignore_errors=True)
    if code is None:
        raise TraceValidationError(f"TLC gave no verdict within {timeout:g}s")
    res = interpret(out, code)
    seconds = time.monotonic() - started
    if res.outcome == "invariant" and res.violated == "NotFullyMatched":
        return Verdict(schedule, True, len(schedule.events), seconds=seconds)
    if res.outcome == "pass" and schedule.events[-1].action == "stuck":
        # FreeStep stutters, so no deadlock: the spec cannot get stuck where the simulator did.
        n = len(schedule.events) - 1
        return Verdict(schedule, False, n, schedule.events[n], None, seconds=seconds)
    if res.outcome == "deadlock" and res.trace:
        last = res.trace[-1].get("vars", res.trace[-1])
        matched = int(last.get("i", 0))
        event = schedule.events[matched] if matched < len(schedule.events) else None
        reports = _reports(out)
        why = reports[1][1][2] if 1 in reports[1] else None
        return Verdict(schedule, False, matched, event, _state_vars(last, schedule.spec),
                       why=why, seconds=seconds)
    raise TraceValidationError(f"TLC: {res.got()}: {res.message or out[-2000:]}")


_REPORT = re.compile(r'<<\s*"(accepted|stuck)"')


def _value_at(text: str, start: int) -> str:
    """The TLA+ value printed at `start` (a `<<`), up to its matching `>>`."""
    depth, i = 0, start
    pairs = {"<<": 1, ">>": -1, "[": 1, "]": -1, "{": 1, "}": -1, "(": 1, ")": -1}
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        else:
            two = text[i:i + 2]
            if two in ("<<", ">>"):
                depth += pairs[two]
                i += 1
            elif ch in "[]{}()":
                depth += pairs[ch]
            if depth == 0:
                return text[start:i + 1]
        i += 1
    raise TraceValidationError("unterminated value in TLC's output")


def _reports(out: str) -> tuple[set[int], dict[int, tuple[int, dict, dict | None]]]:
    """Verdict's prints: the schedules accepted, and per stuck schedule the furthest stuck
    state (matched events, state, guards)."""
    accepted: set[int] = set()
    stuck: dict[int, tuple[int, dict, dict | None]] = {}
    for m in _REPORT.finditer(out):
        try:
            value = parse_value(_value_at(out, m.start()))
        except TLAValueError as e:
            raise TraceValidationError(f"cannot read TLC's report: {e}") from None
        if value[0] == "accepted":
            accepted.add(value[1])
        else:
            k, i, state = value[1], value[2], value[3]
            why = value[4] if len(value) > 4 else None
            if k not in stuck or stuck[k][0] < i:
                stuck[k] = (i, state, why)
    return accepted, stuck


def validate(schedules: Sequence[Schedule], *, spec_bugs: frozenset[str] = frozenset(),
             timeout: float = DEFAULT_TIMEOUT, jar: str | None = None) -> list[Verdict]:
    """Validate many schedules, one TLC run per spec; verdicts in the order given."""
    verdicts: list[Verdict | None] = [None] * len(schedules)
    by_spec: dict[str, list[int]] = {}
    for n, s in enumerate(schedules):
        by_spec.setdefault(s.spec, []).append(n)
    for spec, idx in by_spec.items():
        batch = [schedules[n] for n in idx]
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="commitsched-tv-") as tmp:
            folder = Path(tmp)
            write_modules(folder, batch, invariant="Verdict", spec_bugs=spec_bugs)
            out, code = _run_tlc(folder, "TVRun", deadlock=False, timeout=timeout, jar=jar)
        if code is None:
            raise TraceValidationError(f"TLC gave no verdict within {timeout:g}s "
                                       f"({len(batch)} schedules of {spec})")
        res = interpret(out, code)
        if res.outcome != "pass":
            raise TraceValidationError(f"TLC: {res.got()}: {res.message}")
        seconds = (time.monotonic() - started) / len(batch)
        accepted, stuck = _reports(out)
        for k, n in enumerate(idx, 1):
            s = schedules[n]
            if k in accepted:
                verdicts[n] = Verdict(s, True, len(s.events), seconds=seconds)
            elif k in stuck:
                i, state, why = stuck[k]
                verdicts[n] = Verdict(s, False, i, s.events[i], _state_vars(state, spec),
                                      why=why, seconds=seconds)
            elif s.events[-1].action == "stuck":     # see validate_one
                i = len(s.events) - 1
                verdicts[n] = Verdict(s, False, i, s.events[i], None, seconds=seconds)
            else:
                raise TraceValidationError(f"TLC reported nothing for schedule {k} of {spec}")
    return verdicts  # type: ignore[return-value]


__all__ = ["Event", "Schedule", "Verdict", "TraceValidationError", "covered", "record_schedule",
           "validate", "validate_one", "write_modules"]
