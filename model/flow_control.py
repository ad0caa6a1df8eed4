"""Flow control of certification-based clusters (docs/certification.md; specs/FlowControl.tla).

Two halves, one set of rules:
- the rule functions (`galera_stop`, `galera_cont`, `galera_limits`, `gr_quota`), used by the
  timed cluster simulator (`certification_throughput.py`) and by
- `FlowModel` / `enabled` / `apply`: the untimed step function of FlowControl.tla, state for
  state, which `explore` searches exhaustively (the mutants' properties column for bug
  `fc_stop_mark_late`, and tests against the spec's own verdicts).

Galera (gcs/src/gcs.cpp, Galera 4): upper = gcs.fc_limit x sqrt(members) (+ .5, truncated;
x 1 with gcs.fc_single_primary), lower = upper x gcs.fc_factor (+ .5) (`_set_fc_limits`). On
delivering a foreign write-set a member sends FC_STOP when nobody has stopped the group, it
has no STOP out, and its receive queue is above upper (`gcs_fc_stop_begin`); on every dequeue
it sends FC_CONT when it has a STOP out and the queue is at most lower (`gcs_fc_cont_begin`).
Every member counts STOPs minus CONTs in delivery order; the senders are paused while the count
is positive (`gcs_handle_flow_control`, `gcs_sm_pause`).

Group Replication (plugin/group_replication/src/pipeline_stats.cc,
`Flow_control_module::flow_control_step`, `do_wait`): every `flow_control_period` (1 s) each
member's stats are compared with the applier and certifier thresholds (25,000 each); if some
member is above, the next period's quota is 90% (hold_percent 10) of the smallest number of
write-sets a lagging member applied (or certified) in the period (members that applied none
are not counted), at least 5% of the thresholds (lim_throttle), divided among the writing
members, less what was used beyond the last quota, at least 1; otherwise an existing quota
grows by 50% (release_percent). A writer past the quota waits until the next period (a timed
wait of 1 s).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from .explore import breadth_first

FC_BUGS = frozenset({"fc_stop_mark_late"})

# Galera defaults (gcs/src/gcs_params.cpp): gcs.fc_limit 16, gcs.fc_factor 1.0.
GALERA_FC_LIMIT, GALERA_FC_FACTOR = 16, 1.0
# Group Replication defaults (MySQL 8.0): group_replication_flow_control_*.
GR_THRESHOLD, GR_PERIOD_S, GR_HOLD, GR_RELEASE = 25000, 1.0, 0.10, 0.50


def galera_limits(fc_limit: float, fc_factor: float, members: int,
                  single_primary: bool = False) -> tuple[int, int]:
    """`_set_fc_limits`: (lower, upper)."""
    fn = 1.0 if single_primary else math.sqrt(members)
    upper = int(fc_limit * fn + 0.5)
    lower = int(upper * fc_factor + 0.5)
    return lower, upper


def galera_stop(stop_count: int, stop_sent: bool, queue_len: int, upper: int) -> bool:
    """`gcs_fc_stop_begin`, on delivering a foreign write-set (queue_len counts it)."""
    return stop_count <= 0 and not stop_sent and queue_len > upper


def galera_cont(stop_sent: bool, queue_len: int, lower: int) -> bool:
    """`gcs_fc_cont_begin`, on a dequeue (queue_len after it)."""
    return stop_sent and lower >= queue_len


def gr_quota(quota: int, lagging_applied: list[int], writers: int, extra: int = 0,
             threshold: int = GR_THRESHOLD) -> int:
    """`flow_control_step` (FCM_QUOTA): the next period's quota (0: unlimited) from the current
    one and what each lagging member applied in the period (one value per member above a
    threshold; an empty list when none is)."""
    if lagging_applied:
        caps = [a for a in lagging_applied if a > 0]
        if not caps:
            return 0
        lim_throttle = int(0.05 * threshold)
        size = int(max(min(caps), lim_throttle) * (1 - GR_HOLD))
        if writers > 1:
            size //= writers
        return size - extra if size - extra > 1 else 1
    if quota > 0:
        nxt = int(quota * (1 + GR_RELEASE))
        return nxt if nxt > quota else quota + 1
    return 0


# ---------------------------------------------------------------- FlowControl.tla, untimed

class FlowModel(NamedTuple):
    """The constants of FlowControl.tla."""
    members: int                     # members 1..members
    writers: frozenset               # members with a writer
    n: int                           # write-sets sent in all
    flavor: str                      # "galera" | "gr"
    upper: int
    lower: int
    threshold: int
    applied_cap: int
    bugs: frozenset = frozenset()


class FlowState(NamedTuple):
    """The spec's variables (tuples indexed by member - 1; chan of (type, from))."""
    sent: int
    out: tuple
    chan: tuple
    q: tuple
    stop_sent: tuple
    pending: tuple
    stop_count: int
    quota: int
    used: int
    applied: tuple


def initial(m: FlowModel) -> FlowState:
    z = (0,) * m.members
    return FlowState(0, tuple(False for _ in range(m.members)), (), z, z,
                     tuple(False for _ in range(m.members)), 0, 0, 0, z)


def paused(m: FlowModel, s: FlowState) -> bool:
    if m.flavor == "galera":
        return s.stop_count > 0
    return s.quota != 0 and s.used >= s.quota


def all_done(m: FlowModel, s: FlowState) -> bool:
    return s.sent == m.n and not s.chan and not any(s.q) and not any(s.pending)


def enabled(m: FlowModel, s: FlowState) -> set:
    acts = set()
    if s.sent < m.n and not paused(m, s):
        acts |= {("Send", (w,)) for w in m.writers if not s.out[w - 1]}
    if s.chan:
        acts.add(("Deliver", ()))
    for i in range(m.members):
        if s.pending[i]:
            acts.add(("StopSend", (i + 1,)))
        if s.q[i] > 0:
            acts.add(("Dequeue", (i + 1,)))
    if m.flavor == "gr" and not all_done(m, s):
        acts.add(("Tick", ()))
    return acts


def apply(m: FlowModel, s: FlowState, action) -> FlowState:
    name, args = action
    if name == "Send":
        w = args[0]
        out = list(s.out)
        out[w - 1] = True
        return s._replace(sent=s.sent + 1, out=tuple(out), chan=s.chan + (("ws", w),),
                          used=s.used + 1 if m.flavor == "gr" else s.used)
    if name == "Deliver":
        t, frm = s.chan[0]
        chan = s.chan[1:]
        if t != "ws":
            return s._replace(chan=chan, stop_count=s.stop_count + (1 if t == "stop" else -1))
        q = tuple(x if i + 1 == frm else x + 1 for i, x in enumerate(s.q))
        out = list(s.out)
        if frm in m.writers:
            out[frm - 1] = False
        stoppers = [i for i in range(m.members) if i + 1 != frm and m.flavor == "galera"
                    and not s.pending[i]
                    and galera_stop(s.stop_count, s.stop_sent[i] > 0, q[i], m.upper)]
        if "fc_stop_mark_late" in m.bugs:
            pending = tuple(p or i in stoppers for i, p in enumerate(s.pending))
            return s._replace(chan=chan, q=q, out=tuple(out), pending=pending)
        stop_sent = tuple(1 if i in stoppers else x for i, x in enumerate(s.stop_sent))
        return s._replace(chan=chan + (("stop", 0),) * len(stoppers), q=q, out=tuple(out),
                          stop_sent=stop_sent)
    if name == "StopSend":
        i = args[0] - 1
        return s._replace(pending=_set(s.pending, i, False), stop_sent=_set(s.stop_sent, i, 1),
                          chan=s.chan + (("stop", 0),))
    if name == "Dequeue":
        i = args[0] - 1
        q = _set(s.q, i, s.q[i] - 1)
        applied = _set(s.applied, i, min(s.applied[i] + 1, m.applied_cap))
        if m.flavor == "galera" and galera_cont(s.stop_sent[i] > 0, q[i], m.lower):
            return s._replace(q=q, applied=applied, stop_sent=_set(s.stop_sent, i, 0),
                              chan=s.chan + (("cont", 0),))
        return s._replace(q=q, applied=applied)
    if name == "Tick":
        lagging = [s.applied[i] for i in range(m.members) if s.q[i] > m.threshold]
        if lagging:
            quota = _spec_quota(lagging)
        elif s.quota == 0 or s.quota >= m.applied_cap:
            quota = 0
        else:
            quota = s.quota + max(s.quota // 2, 1)
        return s._replace(quota=quota, used=0, applied=(0,) * m.members)
    raise ValueError(f"unknown action {name}")


def _spec_quota(lagging: list[int]) -> int:
    """The spec's abstraction of gr_quota: one writer, no lim_throttle (thresholds are small
    in the models), unlimited when no lagging member applied anything."""
    caps = [a for a in lagging if a > 0]
    if not caps:
        return 0
    return max((min(caps) * 9) // 10, 1)


def _set(t: tuple, i: int, v) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def queue_bound(m: FlowModel) -> int:
    return (m.upper if m.flavor == "galera" else m.threshold) + 4 * len(m.writers)


PROPERTIES = ("QueueBounded", "NoDeadlock")


def violations(m: FlowModel, s: FlowState, acts: set) -> list[str]:
    bad = []
    if any(x > queue_bound(m) for x in s.q):
        bad.append("QueueBounded")
    if not acts and not all_done(m, s):
        bad.append("NoDeadlock")
    return bad


def explore(m: FlowModel, props=PROPERTIES, limit: int = 2_000_000):
    """Breadth-first over every reachable state; returns (states, first violation or None)
    where a violation is (property, path of actions from the initial state)."""
    n, found = breadth_first([initial(m)], lambda s: enabled(m, s), lambda s, a: apply(m, s, a),
                             lambda s, acts: violations(m, s, acts), props, limit)
    return n, found and (found[0], found[2])


# The models of specs/FlowControl_*.cfg, for the explorer and the tests.
SPEC_MODEL = FlowModel(3, frozenset({1, 2}), 6, "galera", 2, 2, 2, 3)


def find_violation(bug: str, props: tuple[str, ...]):
    """The mutants' properties column (checks/mutants.py EXPLORERS): the smallest model of
    FlowControl.tla's shape in which `bug` breaks one of `props` while the same model without it
    breaks none; (write-sets, property, actions) or None."""
    for n in range(2, SPEC_MODEL.n + 1):
        m = SPEC_MODEL._replace(n=n)
        if explore(m, props)[1] is not None:
            continue                       # the correct model already breaks it: not the bug
        found = explore(m._replace(bugs=frozenset({bug})), props)[1]
        if found is not None:
            prop, path = found
            return n, prop, [("Init", ())] + path
    return None


__all__ = ["galera_limits", "galera_stop", "galera_cont", "gr_quota", "FlowModel", "FlowState",
           "initial", "enabled", "apply", "explore", "find_violation", "FC_BUGS"]
