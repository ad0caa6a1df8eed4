"""The properties of design §6, checked on a simulated schedule (same names as in the specs).

Each check takes the committed runs of one simulation (`schedulers.collect`, seq order) and
returns a list of violations, each a short sentence naming the transactions; empty means the
property holds. `applicable` names the properties a scheduler promises; `check` runs one.
"""
from __future__ import annotations

import bisect
from typing import Iterable, Sequence

from .simcore import TxnRun
from .trackers import (TRACKERS, ClockOrder, conflicts, group_conflicts, session_order_violations,
                       soundness_violations)

__all__ = ["conflicts", "applicable", "check"]


def _isolated(txn) -> bool:
    return txn.ddl or txn.admin


def no_conflicting_overlap(runs: Sequence[TxnRun]) -> list[str]:
    """The active intervals [start, commit) of conflicting transactions are disjoint."""
    bad: list[str] = []
    by_key: dict[str, list[TxnRun]] = {}
    for r in runs:
        for key in r.txn.writes:
            by_key.setdefault(key, []).append(r)
    for key, writers in by_key.items():
        writers = sorted(writers, key=lambda r: (r.start, r.commit))
        latest = None
        for r in writers:
            if latest is not None and r.start < latest.commit:
                bad.append(f"seq {latest.seq} and seq {r.seq} both write {key} and are active "
                           f"together ([{latest.start}, {latest.commit}) and "
                           f"[{r.start}, {r.commit}))")
            if latest is None or r.commit > latest.commit:
                latest = r
    ordered = sorted(runs, key=lambda r: (r.start, r.commit))
    latest = None
    isolated_until = None
    for r in ordered:
        if isolated_until is not None and r.start < isolated_until.commit:
            bad.append(f"seq {r.seq} starts while DDL/admin seq {isolated_until.seq} is active")
        if _isolated(r.txn) and latest is not None and r.start < latest.commit:
            bad.append(f"DDL/admin seq {r.seq} starts while seq {latest.seq} is active")
        if latest is None or r.commit > latest.commit:
            latest = r
        if _isolated(r.txn) and (isolated_until is None or r.commit > isolated_until.commit):
            isolated_until = r
    return bad


def commit_order_preserved(runs: Sequence[TxnRun]) -> list[str]:
    """The replica commits in source order (a group may commit several at one instant)."""
    return [f"seq {b.seq} committed at {b.commit}, before seq {a.seq} at {a.commit}"
            for a, b in zip(runs, runs[1:]) if b.commit < a.commit]


def dependency_cuts(deps: Iterable[tuple]) -> list[int]:
    """For clock annotations `(last_committed, sequence_number, file)` in binlog order: j's
    direct dependencies (as the spec's `DependenciesRespected` reads them) are every
    transaction before position cut[j] (0-based, exclusive): all earlier ones when j is a
    barrier (first transaction, new file, lc = 0, a gap, inconsistent timestamps), else the
    transactions of its file with sn <= lc_j, a prefix of the file whose earlier files all
    committed before the file's first transaction (a barrier) started."""
    order = ClockOrder()
    cuts: list[int] = []
    file_start, file_sns, prev_file = 0, [], None
    for dep in deps:
        point = order.push(dep)
        if point.file != prev_file:
            file_start, file_sns, prev_file = point.index, [], point.file
        if point.barrier_from == point.index:
            cuts.append(point.index)
        else:
            cuts.append(file_start + bisect.bisect_right(file_sns, point.lc))
        file_sns.append(point.sn)
    return cuts


def dependencies_respected(runs: Sequence[TxnRun]) -> list[str]:
    """A transaction starts only after every transaction it depends on committed."""
    cuts = dependency_cuts(r.dep for r in runs)
    bad = []
    prefix_commit = 0.0      # latest commit among runs[:i]
    latest = []
    for r in runs:
        latest.append(prefix_commit)
        prefix_commit = max(prefix_commit, r.commit)
    for j, r in enumerate(runs):
        cut = cuts[j]
        if cut and r.start < latest[cut]:
            culprit = max(runs[:cut], key=lambda x: x.commit)
            bad.append(f"seq {r.seq} started at {r.start} before seq {culprit.seq} (a dependency) "
                       f"committed at {culprit.commit}")
    return bad


def tracker_soundness(runs: Sequence[TxnRun], *, sessions: bool = False) -> list[str]:
    """For i < j that conflict (or share a session when `sessions`), j depends on i directly or
    transitively (clock annotations; `trackers.soundness_violations`)."""
    return [f"seq {j} must follow seq {i} ({why}) but its annotation lets it run alongside"
            for i, j, why in soundness_violations(((r.txn, r.dep) for r in runs),
                                                 sessions=sessions)]


def session_order(runs: Sequence[TxnRun]) -> list[str]:
    """Per-session order is kept: a session's transaction depends on its previous one."""
    return [f"seq {j} may run alongside seq {i} of the same session"
            for i, j in session_order_violations((r.txn, r.dep) for r in runs)]


def group_conflict_free(runs: Sequence[TxnRun]) -> list[str]:
    """No two transactions of one commit group conflict (group annotations)."""
    return [f"seq {i} and seq {j} conflict but share a commit group"
            for i, j in group_conflicts((r.txn, r.dep) for r in runs)]


def serial_equivalence(runs: Sequence[TxnRun]) -> list[str]:
    """The replica state (key -> value; a transaction reads its keys at its start and writes
    f(value read, seq) at its commit) equals serial replay: at the end, and whenever the
    committed set is a prefix of the source order."""
    # Replica replay in time order; at equal times commits come first (a transaction started
    # by a commit sees it).
    events = sorted([(r.commit, 0, i) for i, r in enumerate(runs)]
                    + [(r.start, 1, i) for i, r in enumerate(runs)])
    replica: dict[str, int] = {}
    serial_prefix: dict[str, int] = {}   # serial replay of runs[:prefix]
    read: dict[int, dict] = {}
    committed = [False] * len(runs)
    done = prefix = 0
    dirty: set[str] = set()              # keys written since the last prefix point
    for _, kind, i in events:
        writes = runs[i].txn.writes
        if kind == 1:
            read[i] = {k: replica.get(k) for k in writes}
            continue
        seen = read.pop(i, None)
        if seen is None:
            # zero length (start == commit): its start sorts after the commits at that time
            # but still comes before its own commit
            seen = {k: replica.get(k) for k in writes}
        for k in writes:
            replica[k] = _value(seen[k], runs[i].seq)
        dirty.update(writes)
        committed[i] = True
        done += 1
        while prefix < len(runs) and committed[prefix]:
            r = runs[prefix]
            for k in r.txn.writes:
                serial_prefix[k] = _value(serial_prefix.get(k), r.seq)
            prefix += 1
        if prefix == done:
            wrong = sorted(k for k in dirty if replica[k] != serial_prefix.get(k))
            if wrong:
                return [f"after seq {runs[prefix - 1].seq} committed (a prefix), key {wrong[0]} "
                        f"differs from serial replay: a transaction read a value that was "
                        f"not yet, or no longer, the serial one"]
            dirty.clear()
    return []


def _value(prev, seq: int) -> int:
    return hash((prev, seq))


def all_committed(runs: Sequence[TxnRun], n: int) -> list[str]:
    """`EventuallyAllCommitted` on one finished simulation: every transaction committed once."""
    seqs = [r.seq for r in runs]
    if len(seqs) != n or len(set(seqs)) != n:
        return [f"{len(set(seqs))} of {n} transactions committed"]
    return []


def applicable(scheduler) -> list[str]:
    """The property names that a scheduler promises."""
    names = ["NoConflictingOverlap", "SerialEquivalence", "EventuallyAllCommitted"]
    if scheduler.is_serial:
        return names + ["CommitOrderPreserved"]
    kind = TRACKERS[scheduler.tracker].kind
    if scheduler.applier != "mysql" or (kind == "clock"
                                        and scheduler.options.get("preserve_commit_order", True)):
        names.append("CommitOrderPreserved")
    if kind == "clock":
        names += ["DependenciesRespected", "TrackerSoundness"]
        if scheduler.tracker == "writeset_session":
            names.append("SessionOrder")
    if kind == "groups":
        names.append("GroupConflictFree")
    return names


def check(name: str, runs: Sequence[TxnRun], n: int) -> list[str]:
    if name == "NoConflictingOverlap":
        return no_conflicting_overlap(runs)
    if name == "CommitOrderPreserved":
        return commit_order_preserved(runs)
    if name == "DependenciesRespected":
        return dependencies_respected(runs)
    if name == "SerialEquivalence":
        return serial_equivalence(runs)
    if name == "TrackerSoundness":
        return tracker_soundness(runs)
    if name == "SessionOrder":
        return session_order(runs)
    if name == "GroupConflictFree":
        return group_conflict_free(runs)
    if name == "EventuallyAllCommitted":
        return all_committed(runs, n)
    raise KeyError(name)
