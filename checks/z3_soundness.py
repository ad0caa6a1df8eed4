"""Symbolic soundness of the WRITESET trackers, with z3, for bounded sizes.

For every trace of up to `n` transactions (default 6) over 4 row keys (two PRIMARY, two UNIQUE),
with symbolic write sets, before images, sessions (up to 3, or none), DDL, admin, FK-parent and
no-PK flags, binlog rotations, and (mode "sound") a symbolic source clock `last_committed` that
is sound (at least the sequence number of the latest earlier conflicting or same-session
transaction of its file), z3 proves that the annotation of `writeset` / `writeset_session`
with `history_size` H satisfies `TrackerSoundness` and (`writeset_session`) `SessionOrder`,
or gives a trace that violates it. A shorter trace is a prefix of a longer one with the same
annotation (trackers stream), so n = 6 covers every n <= 6.

Design (one source of truth): the Python tracker (`trackers.WritesetTracker.annotate`) is the
definition. The z3 encoding below is a line-by-line transcription of it (same rule order, same
dict-order eviction, the same `clock_depends_on` / `conflicts` for the properties), and it is
held to the Python code, not trusted beside it: every model z3 produces is replayed through the
Python tracker and the Python property checks (`trackers.soundness_violations`,
`session_order_violations`), and any disagreement, in an annotation or in a verdict, raises
`EncodingMismatch`. `differential(...)` enumerates further models (no property asked) for the
same comparison; the tests run it. A proof (unsat) is therefore a proof about the encoding,
which agrees with the Python tracker on every model compared.

Not covered: commit-id ceilings (MariaDB sources), trace `sequence_number` gaps, `ceiling =
error`, repeated keys within a transaction, more keys or transactions than the bounds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import z3

from commitsched import trackers as T
from commitsched.trace import trace_from_dicts

KEYS = ("db.t/PRIMARY=0", "db.t/PRIMARY=1", "db.t/uk=2", "db.t/uk=3")
PRIMARY = (True, True, False, False)
SESSIONS = 3
MODES = ("none", "sound")   # the trace's last_committed: absent, or symbolic and sound
PROPERTIES = ("TrackerSoundness", "SessionOrder")
TRACKERS = ("writeset", "writeset_session")

# The catalogue bugs this check covers: which tracker and property show each one.
BUG_TARGET = {
    "history_evict_no_floor": ("writeset", "TrackerSoundness"),
    "ddl_not_isolated": ("writeset", "TrackerSoundness"),
    "unique_keys_ignored": ("writeset", "TrackerSoundness"),
    "before_image_ignored": ("writeset", "TrackerSoundness"),
    "session_order_dropped": ("writeset_session", "SessionOrder"),
}


class EncodingMismatch(AssertionError):
    """The z3 encoding and the Python tracker disagree on a concrete trace."""


@dataclass
class Counterexample:
    tracker: str
    prop: str
    history_size: int
    bugs: tuple
    rows: list            # the trace, as transaction objects (trace format v1)
    annotation: list      # (last_committed, sequence_number, file) per transaction
    violations: list      # what the Python property check reports on it

    def to_json(self) -> dict:
        return {"tracker": self.tracker, "property": self.prop,
                "history_size": self.history_size, "bugs": list(self.bugs),
                "trace": self.rows, "annotation": [list(a) for a in self.annotation],
                "violations": [list(v) for v in self.violations]}


@dataclass
class Result:
    tracker: str
    prop: str
    history_size: int
    n: int
    mode: str
    bugs: tuple
    proved: bool
    seconds: float
    counterexample: Counterexample | None = None


class _Vars:
    """The symbolic trace: inputs of the tracker."""

    def __init__(self, n: int, mode: str):
        self.n, self.mode = n, mode
        r = range(n)
        self.w = [[z3.Bool(f"w{i}_{k}") for k in range(len(KEYS))] for i in r]
        self.bi = [[z3.Bool(f"bi{i}_{k}") for k in range(len(KEYS))] for i in r]
        self.ddl = [z3.Bool(f"ddl{i}") for i in r]
        self.admin = [z3.Bool(f"admin{i}") for i in r]
        self.fk = [z3.Bool(f"fk{i}") for i in r]
        self.nopk = [z3.Bool(f"nopk{i}") for i in r]
        self.sess = [z3.Int(f"sess{i}") for i in r]     # 0: no session
        self.rot = [z3.Bool(f"rot{i}") for i in r]      # a new binlog file starts here
        self.lc = [z3.Int(f"lc{i}") for i in r]         # the trace's last_committed (mode sound)

    def inputs(self):
        out = []
        for i in range(self.n):
            out += self.w[i] + self.bi[i] + [self.ddl[i], self.admin[i], self.fk[i],
                                             self.nopk[i], self.sess[i], self.rot[i]]
            if self.mode == "sound":
                out.append(self.lc[i])
        return out


def _conflict(v: _Vars, i: int, j: int):
    """`trackers.conflicts`: write sets intersect, or either is DDL or admin."""
    return z3.Or(v.ddl[i], v.admin[i], v.ddl[j], v.admin[j],
                 *[z3.And(v.w[i][k], v.w[j][k]) for k in range(len(KEYS))])


def _same_session(v: _Vars, i: int, j: int):
    return z3.And(v.sess[i] != 0, v.sess[i] == v.sess[j])


def _encode(v: _Vars, tracker: str, history_size: int, bugs: frozenset):
    """Constraints on the inputs, and the annotation (lc, sn, file) of each transaction:
    `WritesetTracker.annotate` transcribed (comments name its lines)."""
    n, K, H = v.n, len(KEYS), history_size
    cs = []
    keys_of_uk = "unique_keys_ignored" in bugs
    keys_of_bi = "before_image_ignored" in bugs
    evict = "history_evict_no_floor" in bugs
    ddl_free = "ddl_not_isolated" in bugs
    admin_floor = "admin_barrier_missing" not in bugs
    session_rule = tracker == "writeset_session" and "session_order_dropped" not in bugs

    for i in range(n):
        cs += [z3.And(v.sess[i] >= 0, v.sess[i] <= SESSIONS)]
        cs += [z3.Implies(v.bi[i][k], v.w[i][k]) for k in range(K)]   # before images ⊆ writes
    cs.append(z3.Not(v.rot[0]))

    present = [z3.BoolVal(False)] * K
    val = [z3.IntVal(0)] * K
    stamp = [z3.IntVal(0)] * K
    start = z3.IntVal(1)
    prev_sn = z3.IntVal(0)
    blocking = z3.IntVal(0)
    last = [z3.IntVal(0)] * (SESSIONS + 1)      # sessions: last sequence number, 0 = absent
    file_no = z3.IntVal(1)
    out = []
    for i in range(n):
        # rotate(): a new file clears the history (the sessions map is kept, as in the code)
        newfile = v.rot[i]
        file_no = file_no + z3.If(newfile, 1, 0) if i else file_no
        present = [z3.And(z3.Not(newfile), x) for x in present]
        start = z3.If(newfile, 1, start)
        prev_sn = z3.If(newfile, 0, prev_sn)
        blocking = z3.If(newfile, 0, blocking)
        sn = prev_sn + 1
        # the commit-order parent (ceiling)
        if v.mode == "sound":
            co = v.lc[i]
        else:
            co = prev_sn
        if admin_floor:
            co = z3.If(z3.And(co != 0, blocking > co), blocking, co)
        blocking = z3.If(v.admin[i], sn, blocking)
        # WRITESET: the keys hashed
        h = []
        for k in range(K):
            x = v.w[i][k]
            if keys_of_bi:
                x = z3.And(x, z3.Not(v.bi[i][k]))
            if keys_of_uk and not PRIMARY[k]:
                x = z3.BoolVal(False)
            h.append(x)
        nk = z3.Sum([z3.If(x, 1, 0) for x in h])
        if ddl_free:
            can_use = z3.And(z3.Not(v.fk[i]), nk <= H)
        else:
            can_use = z3.And(z3.Or(nk > 0, v.nopk[i]), z3.Not(v.ddl[i]), z3.Not(v.admin[i]),
                             z3.Not(v.fk[i]), nk <= H)
        hist_len = z3.Sum([z3.If(x, 1, 0) for x in present])
        overflow = z3.And(can_use, hist_len + nk > H)
        p = start
        for k in range(K):                         # for h in keys: if p < v < sn: p = v
            p = z3.If(z3.And(h[k], present[k], p < val[k], val[k] < sn), val[k], p)
        co = z3.If(z3.And(can_use, z3.Not(v.nopk[i]), p < co), p, co)
        # the history after this transaction
        new_stamp = [z3.IntVal(i * K + k + 1) for k in range(K)]
        upd_present = [z3.Or(present[k], h[k]) for k in range(K)]
        upd_val = [z3.If(h[k], sn, val[k]) for k in range(K)]
        keep_stamp = [z3.If(z3.And(h[k], z3.Not(present[k])), new_stamp[k], stamp[k])
                      for k in range(K)]
        if evict:
            # bug path: pop and re-insert the keys (new dict position), then drop the oldest
            ev_stamp = [z3.If(h[k], new_stamp[k], stamp[k]) for k in range(K)]
            excess = z3.Sum([z3.If(x, 1, 0) for x in upd_present]) - H
            ev_present = []
            for k in range(K):
                rank = z3.Sum([z3.If(z3.And(upd_present[m], ev_stamp[m] < ev_stamp[k]), 1, 0)
                               for m in range(K) if m != k])
                ev_present.append(z3.And(upd_present[k], rank >= excess))
            take_evict = overflow
            clear = z3.Not(can_use)
            present = [z3.If(clear, False, z3.If(take_evict, ev_present[k], upd_present[k]))
                       for k in range(K)]
            stamp = [z3.If(take_evict, ev_stamp[k], keep_stamp[k]) for k in range(K)]
        else:
            clear = z3.Or(overflow, z3.Not(can_use))
            present = [z3.If(clear, False, upd_present[k]) for k in range(K)]
            stamp = keep_stamp
        val = upd_val
        start = z3.If(clear, sn, start)
        # WRITESET_SESSION
        if session_rule:
            for s in range(1, SESSIONS + 1):
                ps = last[s]
                co = z3.If(z3.And(v.sess[i] == s, ps != 0, ps < sn, ps > co), ps, co)
            last = [last[0]] + [z3.If(v.sess[i] == s, sn, last[s])
                                for s in range(1, SESSIONS + 1)]
        out.append((co, sn, file_no))
        prev_sn = sn

    if v.mode == "sound":
        # The source's clock is sound: 0 <= lc < sn, lc >= sn of the latest earlier conflicting
        # or same-session transaction of the same file.
        for j in range(n):
            sn_j, f_j = out[j][1], out[j][2]
            cs += [v.lc[j] >= 0, v.lc[j] < sn_j]
            for i in range(j):
                cs.append(z3.Implies(
                    z3.And(out[i][2] == f_j, z3.Or(_conflict(v, i, j), _same_session(v, i, j))),
                    v.lc[j] >= out[i][1]))
    return cs, out


def _depends(ann, i: int, j: int, barrier_from):
    """`trackers.clock_depends_on`."""
    lc_j, _, f_j = ann[j]
    _, sn_i, f_i = ann[i]
    return z3.Or(i < barrier_from[j], z3.And(f_i == f_j, sn_i <= lc_j))


def _barriers(ann):
    """`trackers.ClockOrder.push`: the index of the latest barrier at or before each point."""
    out = []
    prev = None
    for j, (lc, sn, f) in enumerate(ann):
        if prev is None:
            out.append(z3.IntVal(0))
        else:
            plc, psn, pf = prev
            barrier = z3.Or(f != pf, lc == 0, sn == 0, sn <= lc, sn <= psn, sn > psn + 1)
            out.append(z3.If(barrier, j, out[-1]))
        prev = (lc, sn, f)
    return out


def _violated(v: _Vars, ann, prop: str, sessions: bool):
    bf = _barriers(ann)
    bad = []
    for j in range(v.n):
        for i in range(j):
            if prop == "SessionOrder":
                must = _same_session(v, i, j)
            else:
                must = _conflict(v, i, j)
                if sessions:
                    must = z3.Or(must, _same_session(v, i, j))
            bad.append(z3.And(must, z3.Not(_depends(ann, i, j, bf))))
    return z3.Or(*bad)


# ---------------------------------------------------------------- models -> concrete traces

def _rows(m: z3.ModelRef, v: _Vars, ann) -> list[dict]:
    rows = []
    file_no = 1
    for i in range(v.n):
        tv = lambda e: z3.is_true(m.eval(e, model_completion=True))
        iv = lambda e: m.eval(e, model_completion=True).as_long()
        if i and tv(v.rot[i]):
            file_no += 1
        writes = [KEYS[k] for k in range(len(KEYS)) if tv(v.w[i][k])]
        row = {"seq": i + 1, "writes": writes, "file": file_no}
        before = [KEYS[k] for k in range(len(KEYS)) if tv(v.bi[i][k])]
        if before:
            row["before_images"] = before
        for name, arr in (("ddl", v.ddl), ("admin", v.admin), ("fk_parent", v.fk),
                          ("no_pk", v.nopk)):
            if tv(arr[i]):
                row[name] = True
        s = iv(v.sess[i])
        if s:
            row["session"] = s
        if v.mode == "sound":
            row["last_committed"] = iv(v.lc[i])
            row["sequence_number"] = iv(ann[i][1])
        rows.append(row)
    return rows


def _python_annotation(rows, tracker: str, history_size: int, bugs: frozenset):
    trace = trace_from_dicts(rows, {"generator": "z3_soundness"})
    tr = T.get_tracker(tracker, bugs=bugs, history_size=history_size)
    return list(tr.annotate(trace.txns))


def _python_violations(pairs, prop: str, sessions: bool) -> list:
    if prop == "SessionOrder":
        return list(T.session_order_violations(pairs))
    return list(T.soundness_violations(pairs, sessions=sessions))


def _replay(m, v, ann, tracker, history_size, bugs):
    """The model's trace through the Python tracker; the annotations must agree."""
    rows = _rows(m, v, ann)
    pairs = _python_annotation(rows, tracker, history_size, bugs)
    ours = [tuple(m.eval(x, model_completion=True).as_long() for x in a) for a in ann]
    theirs = [tuple(dep) for _, dep in pairs]
    if ours != theirs:
        raise EncodingMismatch(f"{tracker} H={history_size} bugs={sorted(bugs)}: z3 annotates "
                               f"{ours}, the Python tracker {theirs}, on {rows}")
    return rows, pairs, theirs


# ---------------------------------------------------------------- the checks

def check(tracker: str, prop: str, *, history_size: int = 2, n: int = 6, mode: str = "none",
          bugs=frozenset(), timeout: float = 120.0, minimal: bool = True) -> Result:
    """Prove `prop` of `tracker` for every trace within the bounds, or find a counterexample
    (replayed through the Python tracker and property check, which must agree). `minimal`:
    the counterexample has as few flags, keys, sessions and rotations as z3 can make it (soft
    constraints), to be readable."""
    if tracker not in TRACKERS:
        raise ValueError(f"unknown tracker {tracker!r}; this check covers {', '.join(TRACKERS)}")
    if prop not in PROPERTIES:
        raise ValueError(f"unknown property {prop!r}; properties: {', '.join(PROPERTIES)}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
    bugs = frozenset(bugs)
    started = time.perf_counter()
    v = _Vars(n, mode)
    cs, ann = _encode(v, tracker, history_size, bugs)
    sessions = tracker == "writeset_session"     # design §6: TrackerSoundness with sessions
    s = z3.Optimize() if minimal else z3.Solver()
    s.set("timeout", int(timeout * 1000))
    s.add(*cs)
    s.add(_violated(v, ann, prop, sessions))
    if minimal:
        for x in v.inputs():
            if z3.is_bool(x):
                s.add_soft(z3.Not(x))
            elif x.decl().name().startswith("sess"):
                s.add_soft(x == 0)
    res = s.check()
    seconds = time.perf_counter() - started
    if res == z3.unknown:
        raise TimeoutError(f"z3 gave no answer within {timeout:g} s ({s.reason_unknown()})")
    # (Optimize answers unsat exactly when the hard constraints are: the soft ones only rank
    # models.)
    if res == z3.unsat:
        return Result(tracker, prop, history_size, n, mode, tuple(sorted(bugs)), True, seconds)
    m = s.model()
    rows, pairs, theirs = _replay(m, v, ann, tracker, history_size, bugs)
    found = _python_violations(pairs, prop, sessions)
    if not found:
        raise EncodingMismatch(f"z3 says {prop} fails for {tracker} on {rows} (annotation "
                               f"{theirs}) but the Python check finds no violation")
    cex = Counterexample(tracker, prop, history_size, tuple(sorted(bugs)), rows, theirs, found)
    return Result(tracker, prop, history_size, n, mode, tuple(sorted(bugs)), False, seconds, cex)


def prove_all(*, n: int = 6, history_sizes=(1, 2, 3), modes=MODES,
              timeout: float = 120.0) -> list[Result]:
    """The bug-free claims: TrackerSoundness of both trackers, SessionOrder of
    writeset_session, for each history size and clock mode."""
    out = []
    for mode in modes:
        for h in history_sizes:
            for tracker, prop in (("writeset", "TrackerSoundness"),
                                  ("writeset_session", "TrackerSoundness"),
                                  ("writeset_session", "SessionOrder")):
                out.append(check(tracker, prop, history_size=h, n=n, mode=mode, timeout=timeout))
    return out


def z3_catches(bug: str, *, n: int = 6, history_sizes=(1, 2, 3),
               timeout: float = 120.0) -> Counterexample | None:
    """A counterexample trace for a catalogue bug that concerns a WRITESET tracker (the
    property it must violate, `bugs.CATALOGUE`), or None when z3 finds none within the bounds or
    the bug lies outside this check (`BUG_TARGET`)."""
    from commitsched.bugs import CATALOGUE
    if bug not in CATALOGUE:
        raise ValueError(f"unknown bug {bug!r}; the catalogue: {', '.join(CATALOGUE)}")
    target = BUG_TARGET.get(bug)
    if target is None:
        return None
    tracker, prop = target
    # The shortest trace first: a violation among the first k transactions is one of every
    # longer trace with that prefix.
    for size in range(2, n + 1):
        for mode in MODES:
            for h in history_sizes:
                r = check(tracker, prop, history_size=h, n=size, mode=mode, bugs={bug},
                          timeout=timeout)
                if r.counterexample is not None:
                    return r.counterexample
    return None


def differential(tracker: str, *, history_size: int = 2, n: int = 6, mode: str = "none",
                 bugs=frozenset(), count: int = 50, seed: int = 1) -> int:
    """Enumerate `count` distinct traces z3 finds for the encoding (no property asked; varied
    by random seeds and blocking each one) and compare each annotation with the Python
    tracker's (EncodingMismatch if any differs). Returns how many were compared."""
    bugs = frozenset(bugs)
    v = _Vars(n, mode)
    cs, ann = _encode(v, tracker, history_size, bugs)
    s = z3.Solver()
    s.set("random_seed", seed)
    s.set("phase_selection", 5)       # random phases: varied models, not all-false ones
    s.add(*cs)
    inputs = v.inputs()
    done = 0
    while done < count and s.check() == z3.sat:
        m = s.model()
        _replay(m, v, ann, tracker, history_size, bugs)
        done += 1
        s.add(z3.Or([x != m.eval(x, model_completion=True) for x in inputs]))
    return done


def encoding_annotation(rows: list[dict], tracker: str, *, history_size: int = 2,
                        mode: str = "none", bugs=frozenset()) -> list[tuple]:
    """What the z3 encoding annotates for one concrete trace of the fragment (keys among KEYS,
    sessions 1..3, files counting up by one): the inputs are fixed to `rows` and z3 evaluates
    the rest. For comparing with the Python tracker on traces not drawn from z3."""
    v = _Vars(len(rows), mode)
    cs, ann = _encode(v, tracker, history_size, frozenset(bugs))
    fix = []
    prev_file = None
    for i, row in enumerate(rows):
        writes, before = set(row.get("writes", ())), set(row.get("before_images", ()))
        if not writes <= set(KEYS):
            raise ValueError(f"row {row} writes keys outside {KEYS}")
        fix += [v.w[i][k] == (KEYS[k] in writes) for k in range(len(KEYS))]
        fix += [v.bi[i][k] == (KEYS[k] in before) for k in range(len(KEYS))]
        for name, arr in (("ddl", v.ddl), ("admin", v.admin), ("fk_parent", v.fk),
                          ("no_pk", v.nopk)):
            fix.append(arr[i] == bool(row.get(name, False)))
        fix.append(v.sess[i] == (row.get("session") or 0))
        f = row.get("file", 1)
        fix.append(v.rot[i] == (prev_file is not None and f != prev_file))
        prev_file = f
        if mode == "sound":
            fix.append(v.lc[i] == row["last_committed"])
    s = z3.Solver()
    s.add(*cs, *fix)
    if s.check() != z3.sat:
        raise ValueError("the trace lies outside the encoded fragment (e.g. an unsound "
                         "last_committed in mode 'sound')")
    m = s.model()
    return [tuple(m.eval(x, model_completion=True).as_long() for x in a) for a in ann]


__all__ = ["encoding_annotation", "check", "prove_all", "z3_catches", "differential", "Counterexample", "Result",
           "EncodingMismatch", "BUG_TARGET", "KEYS", "MODES"]
