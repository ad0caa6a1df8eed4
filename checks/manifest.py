"""The model manifest `specs/models.json` (format: /tmp/manifest.md, design §2).

Read, select and validate entries; write back measured `last_run` figures with a
read-modify-write that keeps key order and everyone else's edits.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

REQUIRED = ("name", "spec", "cfg", "mode", "expect")


class ManifestError(Exception):
    """The manifest cannot be used at all (missing, not JSON, no model list)."""


def load(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"manifest {path} does not exist") from None
    except json.JSONDecodeError as e:
        raise ManifestError(f"manifest {path} is not valid JSON: {e}") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list):
        raise ManifestError(f'manifest {path} has no "models" list')
    return models


def problems(entry: dict[str, Any]) -> list[str]:
    """Why an entry cannot be run (empty if it can)."""
    out = [f"missing key {k!r}" for k in REQUIRED if k not in entry]
    mode = entry.get("mode")
    if mode not in (None, "exhaustive", "simulate"):
        out.append(f"mode must be 'exhaustive' or 'simulate', not {mode!r}")
    if mode == "simulate":
        sim = entry.get("simulate")
        if not (isinstance(sim, dict) and isinstance(sim.get("depth"), int)
                and isinstance(sim.get("num"), int)):
            out.append('simulate mode needs "simulate": {"depth": int, "num": int}')
    exp = entry.get("expect")
    if "expect" in entry and exp != "pass" and not (
            isinstance(exp, dict) and isinstance(exp.get("violates"), str)):
        out.append('expect must be "pass" or {"violates": NAME}')
    return out


def expect_text(expect: Any) -> str:
    if expect == "pass":
        return "pass"
    if isinstance(expect, dict) and "violates" in expect:
        return f"violates {expect['violates']}"
    return repr(expect)


def select(models: list[dict[str, Any]], only: list[str] | None, demo: bool,
           skip_bugs: bool = False, exhaustive_only: bool = False) -> list[dict[str, Any]]:
    chosen = [m for m in models if (not demo or m.get("demo") is True)
              and not (skip_bugs and m.get("bug"))
              and not (exhaustive_only and m.get("mode") == "simulate")]
    if only:
        names = {m.get("name") for m in models}
        unknown = [n for n in only if n not in names]
        if unknown:
            raise ManifestError(f"no model named {', '.join(unknown)} in the manifest")
        chosen = [m for m in chosen if m.get("name") in only]
    return chosen


def write_last_runs(path: Path, last_runs: dict[str, dict[str, Any]]) -> int:
    """Set `last_run` of the named entries. Re-reads the file right before
    writing so entries other engineers added meanwhile are kept; writes
    atomically with 2-space indent and a trailing newline. Returns how many
    entries were updated."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    updated = 0
    for entry in data.get("models", []):
        if entry.get("name") in last_runs:
            entry["last_run"] = last_runs[entry["name"]]
            updated += 1
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".models.", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return updated
