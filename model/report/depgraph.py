"""The dependency graph of a window, drawn by graphviz `dot`.

Solid edges are true conflicts (the nearest earlier writer of a shared row key; DDL/admin
conflict with their neighbours); dotted grey edges are what the tracker declared (a clock
tracker's `last_committed` parent); a commit group (commit_id, slave group commit) is a box.
Long transactions that stall the pipeline are red: executing at least twice the window's median
and committing after later transactions had already finished their own work."""
from __future__ import annotations

import re
import statistics
from typing import Sequence

from . import safe_text
from .figures import fmt

STALL_FACTOR = 2.0
COLUMN = 8


class GraphvizMissing(RuntimeError):
    pass


def stallers(runs: Sequence, sync: float) -> dict[int, int]:
    """seq -> how many later transactions of the window were done executing (ready) before it
    committed, for the long ones (exec >= STALL_FACTOR x median)."""
    if not runs:
        return {}
    med = statistics.median(r.exec for r in runs)
    out = {}
    for r in runs:
        if r.exec < STALL_FACTOR * med or r.exec <= 0:
            continue
        behind = sum(1 for o in runs if o.seq > r.seq and o.ready < r.commit - sync - 1e-9)
        if behind:
            out[r.seq] = behind
    return out


def conflict_edges(runs: Sequence) -> list[tuple[int, int, str]]:
    edges: dict[tuple[int, int], str] = {}
    last: dict[str, int] = {}
    prev = None
    for r in sorted(runs, key=lambda r: r.seq):
        t = r.txn
        if (t.ddl or t.admin) and prev is not None:
            edges.setdefault((prev.seq, r.seq), "DDL" if t.ddl else "admin")
        elif prev is not None and (prev.txn.ddl or prev.txn.admin):
            edges.setdefault((prev.seq, r.seq), "after DDL" if prev.txn.ddl else "after admin")
        for k in t.writes:
            if k in last:
                edges.setdefault((last[k], r.seq), k)
            last[k] = r.seq
        prev = r
    return [(a, b, k) for (a, b), k in edges.items()]


def declared_edges(runs: Sequence) -> list[tuple[int, int]]:
    """A clock tracker's parent: the transaction whose sequence_number is last_committed."""
    by_sn = {}
    for r in runs:
        if isinstance(r.dep, tuple) and len(r.dep) == 3:
            by_sn[(r.dep[2], r.dep[1])] = r.seq
    out = []
    for r in runs:
        if isinstance(r.dep, tuple) and len(r.dep) == 3 and r.dep[0]:
            p = by_sn.get((r.dep[2], r.dep[0]))
            if p is not None and p != r.seq:
                out.append((p, r.seq))
    return out


def groups(runs: Sequence) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for r in runs:
        if isinstance(r.dep, tuple) and len(r.dep) == 2 and r.dep[0]:
            out.setdefault(r.dep[0], []).append(r.seq)
    return {g: m for g, m in out.items() if len(m) > 1}


def dot_source(runs: Sequence, *, sync: float, title: str) -> str:
    runs = sorted(runs, key=lambda r: r.seq)
    stall = stallers(runs, sync)

    def q(s) -> str:
        return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = ["digraph deps {", f"  label={q(title)}; labelloc=t; fontsize=14; rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fontname="DejaVu Sans", fontsize=10, '
             'fillcolor="#e8f1fa", color="#0072B2"];',
             '  edge [fontname="DejaVu Sans", fontsize=8, color="#555555"];']
    grouped = groups(runs)
    in_group = {s: g for g, members in grouped.items() for s in members}

    def node(r) -> str:
        label = f"{r.seq}\\nexec {fmt(r.exec)}"
        attrs = [f"label={q(label)}".replace("\\\\n", "\\n")]
        tip = f"seq {r.seq}" + (f" GTID {r.txn.gtid}" if r.txn.gtid else "") + \
              f"; exec {fmt(r.exec)}; writes {len(r.txn.writes)} keys"
        if r.seq in stall:
            tip += f"; stalls {stall[r.seq]} later transactions"
            attrs += ['fillcolor="#fbd5d5"', 'color="#d00000"', "penwidth=2.5"]
        if r.txn.ddl or r.txn.admin:
            attrs += ['shape=octagon']
        attrs.append(f"tooltip={q(tip)}")
        return f"  t{r.seq} [{', '.join(attrs)}];"

    for g, members in grouped.items():
        lines.append(f"  subgraph cluster_g{g} {{ label={q(f'group {g}')}; style=dashed; "
                     f"color=\"#999999\"; fontsize=9;")
        lines += ["  " + node(r) for r in runs if in_group.get(r.seq) == g]
        lines.append("  }")
    lines += [node(r) for r in runs if r.seq not in in_group]
    for a, b, key in conflict_edges(runs):
        short = key.rsplit(".", 1)[-1] if "/" in key else key
        lines.append(f"  t{a} -> t{b} [tooltip={q('conflict: ' + key)}, label={q(short)}];")
    for a, b in declared_edges(runs):
        lines.append(f"  t{a} -> t{b} [style=dotted, color=\"#999999\", constraint=false, "
                     f"tooltip=\"declared by the tracker (last_committed)\"];")
    # Independent transactions would all share one rank (one very long column): invisible
    # edges seq -> seq+COLUMN wrap them into columns of about COLUMN nodes, in seq order.
    for a, b in zip(runs, runs[COLUMN:]):
        lines.append(f"  t{a.seq} -> t{b.seq} [style=invis, weight=0];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(source: str) -> str:
    """dot → SVG text without the XML prolog, ready to inline in HTML or save as a file."""
    try:
        import graphviz
    except ImportError as e:
        raise GraphvizMissing("the Python package `graphviz` is not installed "
                              "(pip install 'commitsched[docs]')") from e
    try:
        svg = graphviz.Source(safe_text(source)).pipe(format="svg").decode("utf-8")
    except graphviz.ExecutableNotFound as e:
        raise GraphvizMissing("graphviz `dot` is not installed (apt-get install graphviz)") from e
    svg = re.sub(r"^.*?(<svg\b)", r"\1", svg, count=1, flags=re.S)
    return re.sub(r"<!--.*?-->", "", svg, flags=re.S)
