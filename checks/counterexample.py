"""Counterexamples: the JSON saved next to each refuted model, and its text rendering.

`<model>.cex.json`:
    {"model", "spec", "cfg", "violated": {"kind", "name"}, "message",
     "states": [{"index", "action", "location", "vars": {var: value}}],
     "loop_back": {"to_state", "action", "location"} | null, "stuttering": bool}
Values use the JSON form of tla_values (sets {"$set": [...]}, functions
{"$fn": [[k, v], ...]}, model values {"$mv": name}). `loop_back` is set for a
liveness lasso: after the last state, `action` leads back to state `to_state`.
`stuttering` means the behaviour ends by stuttering forever in its last state.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .tla_values import format_value, value_key
from .tlc_output import TLCResult


def to_json(result: TLCResult, *, model: str, spec: str, cfg: str) -> dict[str, Any]:
    return {
        "model": model,
        "spec": spec,
        "cfg": cfg,
        "violated": {"kind": result.outcome, "name": result.violated},
        "message": result.message,
        "states": result.trace,
        "loop_back": result.loop_back,
        "stuttering": result.stuttering,
    }


def _location(loc: dict[str, Any] | None) -> str:
    if not loc:
        return ""
    return f"  ({loc['module']}.tla line {loc['line']}, col {loc['col']})"


def render_text(cex: dict[str, Any]) -> str:
    """One block per step: the action, then only the variables it changed
    (the first state shows every variable)."""
    v = cex["violated"]
    what = {"invariant": "invariant", "action_property": "action property",
            "temporal": "temporal property", "deadlock": "deadlock"}.get(v["kind"], v["kind"])
    title = f"{cex['model']}: {what} {v['name'] or ''}".rstrip()
    lines = [title, f"spec {cex['spec']}, config {cex['cfg']}", ""]
    prev: dict[str, Any] = {}
    for st in cex["states"]:
        lines.append(f"State {st['index']}: {st['action']}{_location(st['location'])}")
        changed = [k for k, val in st["vars"].items()
                   if k not in prev or value_key(prev[k]) != value_key(val)]
        for k in changed:
            lines.append(f"  {k} = {format_value(st['vars'][k])}")
        if prev and not changed:
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
