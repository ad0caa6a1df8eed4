"""Just enough of TLC's .cfg syntax to list the PROPERTY entries and to write a
copy that checks a single one of them.

TLC 2.18 reports a liveness failure as "Temporal properties were violated."
without naming the property, so when a cfg lists several, the runner re-checks
them one at a time to name the one that fails.
"""
from __future__ import annotations

import re

KEYWORDS = {
    "CONSTANT", "CONSTANTS", "INIT", "NEXT", "SPECIFICATION", "INVARIANT", "INVARIANTS",
    "PROPERTY", "PROPERTIES", "CONSTRAINT", "CONSTRAINTS", "ACTION_CONSTRAINT",
    "ACTION_CONSTRAINTS", "SYMMETRY", "VIEW", "CHECK_DEADLOCK", "POSTCONDITION", "ALIAS",
}
_PROPERTY = {"PROPERTY", "PROPERTIES"}


def strip_comments(text: str) -> str:
    text = re.sub(r"\(\*.*?\*\)", " ", text, flags=re.DOTALL)
    return re.sub(r"\\\*[^\n]*", "", text)


def _sections(text: str) -> list[tuple[str, int, int]]:
    """(keyword, start, end) of each section of a comment-free cfg."""
    hits = [(m.group(), m.start()) for m in re.finditer(r"\b[A-Z_]+\b", text)
            if m.group() in KEYWORDS]
    out = []
    for i, (kw, start) in enumerate(hits):
        end = hits[i + 1][1] if i + 1 < len(hits) else len(text)
        out.append((kw, start, end))
    return out


def properties(cfg_text: str) -> list[str]:
    """Names listed under PROPERTY / PROPERTIES, in order."""
    text = strip_comments(cfg_text)
    names: list[str] = []
    for kw, start, end in _sections(text):
        if kw in _PROPERTY:
            names += text[start + len(kw):end].split()
    return names


def with_single_property(cfg_text: str, name: str) -> str:
    """The cfg with every PROPERTY section replaced by `PROPERTY name`."""
    text = strip_comments(cfg_text)
    kept, pos = [], 0
    for kw, start, end in _sections(text):
        if kw in _PROPERTY:
            kept.append(text[pos:start])
            pos = end
    kept.append(text[pos:])
    return "".join(kept).rstrip() + f"\nPROPERTY {name}\n"
