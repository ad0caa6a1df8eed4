"""Counterexamples: the JSON saved next to each refuted model, and its text rendering.

`<model>.cex.json`:
    {"model", "spec", "cfg", "violated": {"kind", "name"}, "message",
     "states": [{"index", "action", "location", "vars": {var: value}, "moves"}],
     "loop_back": {"to_state", "action", "location"} | null, "stuttering": bool}
Values use the JSON form of tla_values (sets {"$set": [...]}, functions
{"$fn": [[k, v], ...]}, model values {"$mv": name}). `loop_back` is set for a
liveness lasso: after the last state, `action` leads back to state `to_state`.
`stuttering` means the behaviour ends by stuttering forever in its last state.
`moves` names what a step did to transactions in the shared vocabulary
(docs/names.md), read off `tstate`: ["Dispatch(2)"], ["Commit(1)", "Commit(2)"].
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .tla_values import format_value, value_key
from .tlc_output import TLCResult


def to_json(result: TLCResult, *, model: str, spec: str, cfg: str) -> dict[str, Any]:
    states, prev = [], None
    for st in result.trace:
        moves = lifecycle_moves(prev, st["vars"]) if prev is not None else []
        states.append({**st, "moves": moves})
        prev = st["vars"]
    return {
        "model": model,
        "spec": spec,
        "cfg": cfg,
        "violated": {"kind": result.outcome, "name": result.violated},
        "message": result.message,
        "states": states,
        "loop_back": result.loop_back,
        "stuttering": result.stuttering,
    }


# docs/names.md: the life-cycle moves of `tstate[t]` and the action that makes each.
LIFECYCLE = {("queued", "dispatched"): "Dispatch", ("dispatched", "executing"): "Start",
             ("executing", "ready"): "ExecEnd", ("ready", "committed"): "Commit"}


def _txn_states(v: Any) -> dict[Any, Any] | None:
    if isinstance(v, list):
        return {i: s for i, s in enumerate(v, 1)}
    if isinstance(v, dict) and set(v) == {"$fn"}:
        return {format_value(k): s for k, s in v["$fn"]}
    return None


def lifecycle_moves(prev: dict[str, Any], cur: dict[str, Any]) -> list[str]:
    """The shared-vocabulary actions a step performs, read off `tstate`
    (e.g. ["Commit(1)", "Commit(2)"] for a group commit). TLC names a step after
    the spec's operator, which is only `Next` when a spec's actions sit under a
    conjunction; this names the step in the project's terms. Empty when the
    spec has no `tstate` or the step does not move a transaction."""
    old, new = _txn_states(prev.get("tstate")), _txn_states(cur.get("tstate"))
    if not old or not new or set(old) != set(new):
        return []
    return [f"{LIFECYCLE[(old[t], new[t])]}({t})" for t in new
            if (old[t], new[t]) in LIFECYCLE]


def _location(loc: dict[str, Any] | None) -> str:
    if not loc:
        return ""
    return f"  ({loc['module']}.tla line {loc['line']}, col {loc['col']})"


def _diff(path: str, old: Any, new: Any) -> list[tuple[str, Any]]:
    """(path, new value) of what changed, descending into records, functions and
    sequences of the same shape: `tstate[3] = "committed"` reads better than the
    whole of `tstate`. Paths use TLA+ notation (r.f, f[k], s[i])."""
    if value_key(old) == value_key(new):
        return []
    if (isinstance(old, list) and isinstance(new, list) and len(old) < len(new)
            and value_key(new[:len(old)]) == value_key(old)):
        # Append: name only the new elements (`txn[2] = ...`).
        return [(f"{path}[{i}]", new[i - 1]) for i in range(len(old) + 1, len(new) + 1)]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        parts = [(f"{path}[{i}]", o, n) for i, (o, n) in enumerate(zip(old, new), 1)]
    elif (isinstance(old, dict) and isinstance(new, dict) and set(old) == set(new)
          and not any(k.startswith("$") for k in old)):
        parts = [(f"{path}.{k}", old[k], new[k]) for k in new]
    elif (isinstance(old, dict) and isinstance(new, dict) and set(old) == set(new) == {"$fn"}
          and [value_key(k) for k, _ in old["$fn"]] == [value_key(k) for k, _ in new["$fn"]]):
        parts = [(f"{path}[{format_value(k)}]", o, n)
                 for (k, o), (_, n) in zip(old["$fn"], new["$fn"])]
    else:
        return [(path, new)]
    changed = [(p, o, n) for p, o, n in parts if value_key(o) != value_key(n)]
    if len(changed) > max(1, len(parts) // 2):
        return [(path, new)]  # most of it changed: the whole value is clearer
    out: list[tuple[str, Any]] = []
    for p, o, n in changed:
        out += _diff(p, o, n)
    return out


def render_text(cex: dict[str, Any]) -> str:
    """One block per step: the action, then only what it changed (the first
    state shows every variable)."""
    v = cex["violated"]
    what = {"invariant": "invariant", "action_property": "action property",
            "temporal": "temporal property", "deadlock": "deadlock"}.get(v["kind"], v["kind"])
    if v["kind"] == "deadlock":
        title = f"{cex['model']}: deadlock reached"
    else:
        title = f"{cex['model']}: {what} {v['name'] or ''} violated".replace("  ", " ")
    lines = [title,
             f"spec {cex['spec']}, config {cex['cfg']}", ""]
    prev: dict[str, Any] | None = None
    for st in cex["states"]:
        moves = lifecycle_moves(prev, st["vars"]) if prev is not None else []
        lines.append(f"State {st['index']}: {st['action']}{_location(st['location'])}"
                     + (f"  [{', '.join(moves)}]" if moves else ""))
        if prev is None:
            changes = list(st["vars"].items())
        else:
            changes = []
            for k, val in st["vars"].items():
                changes += _diff(k, prev[k], val) if k in prev else [(k, val)]
        for path, val in changes:
            lines.append(f"  {path} = {format_value(val)}")
        if prev is not None and not changes:
            lines.append("  (no variable changed)")
        prev = st["vars"]
        lines.append("")
    if cex.get("loop_back"):
        lb = cex["loop_back"]
        lines.append(f"Loop: {lb['action']}{_location(lb['location'])} leads back to state "
                     f"{lb['to_state']}; the behaviour repeats from there forever.")
    elif cex.get("stuttering"):
        lines.append(f"Stuttering: the behaviour stays in state {len(cex['states'])} forever.")
    elif v["kind"] == "deadlock":
        lines.append(f"Deadlock: no action is enabled in state {len(cex['states'])}.")
    return "\n".join(lines).rstrip() + "\n"


def save(cex: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    jpath = out_dir / f"{cex['model']}.cex.json"
    tpath = out_dir / f"{cex['model']}.cex.txt"
    jpath.write_text(json.dumps(cex, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tpath.write_text(render_text(cex), encoding="utf-8")
    return jpath, tpath


def load(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))
