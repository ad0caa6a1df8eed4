"""Breadth-first search over a small model's reachable states, shared by the explorers of the
certification and flow-control step functions (the Python twins of their TLC models)."""
from __future__ import annotations

from collections import deque


def breadth_first(starts, enabled, apply, violations, props, limit: int):
    """Every state reachable from `starts` by `apply(s, a)` for a in `enabled(s)`; returns
    (states, None) or, at the first state violating one of `props` (`violations(s, acts)`),
    (states, (property, start state, actions from it))."""
    parent: dict = {}
    frontier = deque()
    for s0 in starts:
        if s0 not in parent:
            parent[s0] = None
            frontier.append(s0)
    while frontier:
        s = frontier.popleft()
        acts = enabled(s)
        bad = [p for p in violations(s, acts) if p in props]
        if bad:
            path, cur = [], s
            while parent[cur] is not None:
                cur, a = parent[cur]
                path.append(a)
            return len(parent), (bad[0], cur, path[::-1])
        for a in acts:
            t = apply(s, a)
            if t not in parent:
                parent[t] = (s, a)
                frontier.append(t)
        if len(parent) > limit:
            raise RuntimeError(f"more than {limit} states")
    return len(parent), None
