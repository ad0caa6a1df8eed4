"""`commitsched explain CEX.json`: a TLC counterexample (checks/counterexample.py format) drawn
as a sequence chart: one row per transaction (from the spec's `tstate`), one column per state of
the behaviour, each cell coloured by the transaction's state (docs/names.md) and labelled with
its worker when the spec has a `worker` variable. The violated property is the title; the
offending state (where an invariant fails, or the last state of a deadlock) is outlined in red;
a liveness lasso's loop is drawn back to its target state. Steps that move no transaction (the
source side of a spec: clients, binlog) get a row "other steps" naming the variables changed."""
from __future__ import annotations

import json
from typing import Any

from ..checks.counterexample import LIFECYCLE
from ..checks.tla_values import format_value, value_key
from .figures import esc, svg_open

STATE_COLOURS = {"queued": "#ffffff", "dispatched": "#d9d9d9", "executing": "#0072B2",
                 "ready": "#E69F00", "committed": "#009E73",
                 # MCMariaDBStop.tla: worker_error set / finished with an error
                 "failing": "#D55E00", "failed": "#8B0000"}
OTHER_COLOUR = "#CC79A7"
KIND_TEXT = {"invariant": "invariant", "action_property": "action property",
             "temporal": "temporal property", "deadlock": "deadlock"}


class ExplainError(ValueError):
    pass


def load_cex(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            cex = json.load(f)
    except OSError as e:
        raise ExplainError(f"{path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ExplainError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(cex, dict) or not isinstance(cex.get("states"), list) or not cex["states"] \
            or "violated" not in cex:
        raise ExplainError(f"{path}: not a counterexample of the TLC runner (expected "
                           f"\"model\", \"violated\", \"states\": see checks/counterexample.py)")
    return cex


def _txn_states(v: Any) -> dict | None:
    if isinstance(v, list):
        return {i: s for i, s in enumerate(v, 1)}
    if isinstance(v, dict) and set(v) == {"$fn"}:
        return {format_value(k): s for k, s in v["$fn"]}
    return None


def title_of(cex: dict) -> str:
    v = cex["violated"]
    if v.get("kind") == "deadlock":
        return f"{cex.get('model', '?')}: deadlock reached"
    return f"{cex.get('model', '?')}: {KIND_TEXT.get(v.get('kind'), v.get('kind'))} " \
           f"{v.get('name') or ''} violated".strip()


def offending_state(cex: dict) -> int:
    """1-based index of the state where the violation shows: the last state of the trace (an
    invariant false there, a deadlock there, an action property broken by the step into it)."""
    return len(cex["states"])


def step_moves(prev: dict, cur: dict) -> list[str]:
    old, new = _txn_states(prev.get("tstate")), _txn_states(cur.get("tstate"))
    if not old or not new:
        return []
    out = []
    for t in new:
        a, b = old.get(t), new[t]
        if a == b:
            continue
        name = LIFECYCLE.get((a, b))
        if name is None:  # a kill sends a transaction back (MariaDB optimistic, MySQL victim)
            name = "Kill" if b in ("dispatched", "queued") else f"{a}→{b}"
        out.append(f"{name}({t})")
    return out


def changed_vars(prev: dict, cur: dict) -> list[str]:
    return [k for k, v in cur.items() if k in prev and value_key(prev[k]) != value_key(v)
            and k not in ("tstate",)]


def _write_sets(cex: dict, n: int) -> dict:
    """Row labels: a transaction's write set when the spec keeps one (`txn[t].ws`, `bws[t]`)."""
    last = cex["states"][-1]["vars"]
    for name in ("txn", "bws", "ws", "writes"):
        v = last.get(name)
        if isinstance(v, list) and len(v) == n:
            out = {}
            for i, x in enumerate(v, 1):
                if isinstance(x, dict) and "ws" in x:
                    out[i] = format_value(x["ws"]) + (" DDL" if x.get("ddl") else "")
                elif isinstance(x, dict) and "$set" in x:
                    out[i] = format_value(x)
            if out:
                return out
    return {}


def _clock_labels(cex: dict, n: int) -> dict:
    """` lc=1 sn=2`: the binlog's logical clock of each transaction when the spec has one."""
    last = cex["states"][-1]["vars"]
    lc, sn = last.get("blc"), last.get("bsn")
    if isinstance(lc, list) and isinstance(sn, list) and len(lc) == len(sn) == n:
        return {i: f" lc={a} sn={b}" for i, (a, b) in enumerate(zip(lc, sn), 1)}
    return {}


def sequence_svg(cex: dict, width_per_step: int = 46) -> str:
    states = cex["states"]
    per_state = [_txn_states(s["vars"].get("tstate")) or {} for s in states]
    txns = list(per_state[-1]) if per_state[-1] else []
    workers = [_txn_states(s["vars"].get("worker")) or {} for s in states]
    ws = _write_sets(cex, len(txns))
    clock = _clock_labels(cex, len(txns))
    bad = offending_state(cex)
    left, top, row_h = 190, 120, 26
    n = len(states)
    rows = len(txns) + 1
    width = left + n * width_per_step + 30
    height = top + rows * row_h + 92
    title = title_of(cex)
    out = [svg_open(max(width, 640), height, title),
           f'<text x="10" y="20" font-size="14" font-weight="bold" fill="#b00">{esc(title)}</text>',
           f'<text x="10" y="38" font-size="11">spec {esc(cex.get("spec", "?"))}, config '
           f'{esc(cex.get("cfg", "?"))}; {n} states; {esc(cex.get("message") or "")}</text>']

    def X(i):  # column of state i (1-based)
        return left + (i - 1) * width_per_step

    for i, st in enumerate(states, 1):
        moves = step_moves(states[i - 2]["vars"], st["vars"]) if i > 1 else []
        label = ", ".join(moves) if moves else ("Init" if i == 1 else "")
        x = X(i) + width_per_step / 2
        out.append(f'<text x="{x:.0f}" y="{top - 8}" font-size="10" text-anchor="start" '
                   f'transform="rotate(-50 {x:.0f} {top - 8})">{esc(i)} {esc(label)}</text>')
    for r, t in enumerate(txns):
        y = top + r * row_h
        lab = f"T{t}" + (f" {ws[t]}" if t in ws else "") + clock.get(t, "")
        out.append(f'<text x="{left - 6}" y="{y + 17}" text-anchor="end" font-size="11">'
                   f'{esc(lab)}</text>')
        for i in range(1, n + 1):
            s = per_state[i - 1].get(t)
            c = STATE_COLOURS.get(s, OTHER_COLOUR)
            w = workers[i - 1].get(t)
            moved = i > 1 and per_state[i - 2].get(t) != s
            tip = f"state {i}: T{t} {s}" + (f" on worker {w}" if w else "")
            out.append(f'<rect x="{X(i) + 1}" y="{y + 2}" width="{width_per_step - 2}" '
                       f'height="{row_h - 4}" fill="{c}" stroke="{"#000" if moved else "#ccc"}" '
                       f'stroke-width="{1.6 if moved else 0.6}"><title>{esc(tip)}</title></rect>')
            if w and s not in ("queued", None):
                out.append(f'<text x="{X(i) + width_per_step / 2:.0f}" y="{y + 17}" '
                           f'text-anchor="middle" font-size="10" '
                           f'fill="{"#fff" if s in ("executing", "committed") else "#000"}">w{w}</text>')
    # The steps that move no transaction: which variables they changed.
    y = top + len(txns) * row_h
    out.append(f'<text x="{left - 6}" y="{y + 17}" text-anchor="end" font-size="11">'
               f'other steps</text>')
    for i in range(2, n + 1):
        prev, cur = states[i - 2]["vars"], states[i - 1]["vars"]
        if step_moves(prev, cur):
            continue
        names = changed_vars(prev, cur)
        out.append(f'<rect x="{X(i) + 1}" y="{y + 2}" width="{width_per_step - 2}" '
                   f'height="{row_h - 4}" fill="#f4eaf7" stroke="#ccc"><title>state {i} '
                   f'({esc(states[i - 1].get("action", ""))}): changed {esc(", ".join(names))}'
                   f'</title></rect><text x="{X(i) + width_per_step / 2:.0f}" y="{y + 16}" '
                   f'text-anchor="middle" font-size="8">{esc(",".join(names)[:9])}</text>')
    # The offending state.
    out.append(f'<rect x="{X(bad) - 1}" y="{top - 2}" width="{width_per_step + 2}" '
               f'height="{rows * row_h + 4}" fill="none" stroke="#d00" stroke-width="3"/>'
               f'<text x="{X(bad) + width_per_step / 2:.0f}" y="{top + rows * row_h + 16}" '
               f'text-anchor="middle" font-size="11" fill="#d00" font-weight="bold">violated '
               f'here</text>')
    lb = cex.get("loop_back")
    if lb and isinstance(lb.get("to_state"), int):
        ya = top + rows * row_h + 30
        xa, xb = X(n) + width_per_step / 2, X(lb["to_state"]) + width_per_step / 2
        out.append(f'<path d="M{xa:.0f},{ya - 8} V{ya} H{xb:.0f} V{ya - 8}" fill="none" '
                   f'stroke="#d00" stroke-width="1.5"/><text x="{(xa + xb) / 2:.0f}" '
                   f'y="{ya + 12}" text-anchor="middle" font-size="10" fill="#d00">loops back '
                   f'to state {lb["to_state"]} forever</text>')
    elif cex.get("stuttering"):
        out.append(f'<text x="{X(n):.0f}" y="{top + rows * row_h + 40}" font-size="10" '
                   f'fill="#d00">stutters here forever</text>')
    ly, lx = height - 14, 10
    for s, c in list(STATE_COLOURS.items()) + [("other (e.g. killed)", OTHER_COLOUR)]:
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{c}" '
                   f'stroke="#888"/><text x="{lx + 16}" y="{ly}" font-size="11">{esc(s)}</text>')
        lx += 40 + 7 * len(s)
    out.append("</svg>")
    return "".join(out)


class _StepRun:
    """A transaction's life read off the states, in steps, shaped like a simulator run so the
    report's Gantt chart can draw it (time = state index)."""

    def __init__(self, seq, worker, first: dict, last_state: int):
        from types import SimpleNamespace
        self.seq, self.worker = seq, worker - 1
        self.txn = SimpleNamespace(gtid=None, ddl=False, admin=False, writes=())
        self.dep = None
        end = last_state + 1      # not there yet: drawn to the edge
        self.dispatch = first.get("dispatched", first.get("executing", end))
        self.start = first.get("executing", end)
        self.exec_end = self.ready = first.get("ready", end)
        self.commit = first.get("committed", end)
        self.exec = self.exec_end - self.start
        self.retries, self.wasted = first.get("retries", 0), 0.0


def worker_gantt_svg(cex: dict) -> str | None:
    """The counterexample as the report's Gantt chart (one row per worker, one unit of time
    per state), when the spec says which worker runs each transaction; else None."""
    states = cex["states"]
    per_state = [_txn_states(s["vars"].get("tstate")) or {} for s in states]
    workers = [_txn_states(s["vars"].get("worker")) or {} for s in states]
    if not per_state[-1] or not any(workers):
        return None
    runs = []
    for t in per_state[-1]:
        first: dict = {}
        worker = 0
        for i, (ts, ws) in enumerate(zip(per_state, workers), 1):
            s = ts.get(t)
            if s in ("dispatched", "queued") and first.get("_prev") in ("executing", "ready"):
                first = {"retries": first.get("retries", 0) + 1}   # killed: the final attempt counts
            if s not in first:
                first[s] = i
            first["_prev"] = s
            worker = ws.get(t) or worker
        if "dispatched" in first or "executing" in first:
            if not worker:
                return None
            runs.append(_StepRun(t, worker, first, len(states)))
    if not runs:
        return None
    from .gantt import gantt_svg
    n_workers = max(r.worker + 1 for r in runs)
    return gantt_svg(runs, n_workers, sync=0.0, title=f"{title_of(cex)}: the schedule by worker",
                     highlight=[r.seq for r in runs if r.start <= len(states) < r.commit],
                     unit="TLC state number", origin=min(r.dispatch for r in runs) - 1)


def steps_table(cex: dict) -> list[tuple[int, str, str]]:
    """(state, action + moves, what changed) for the text part of the page."""
    from ..checks.counterexample import _diff
    rows = []
    prev = None
    for st in cex["states"]:
        if prev is None:
            rows.append((st["index"], "Init", "initial state"))
        else:
            moves = step_moves(prev, st["vars"])
            changes = []
            for k, v in st["vars"].items():
                changes += _diff(k, prev.get(k), v) if k in prev else [(k, v)]
            rows.append((st["index"], st.get("action", "") + (f" [{', '.join(moves)}]" if moves
                                                                 else ""),
                         "; ".join(f"{p} = {format_value(v)}" for p, v in changes)[:400]))
        prev = st["vars"]
    return rows


def explain_markdown(cex: dict, svg_name: str | None) -> str:
    out = [f"# {title_of(cex)}", "", f"Spec `{cex.get('spec')}`, config `{cex.get('cfg')}`. "
           f"{cex.get('message') or ''}", ""]
    if svg_name:
        out += [f"![counterexample]({svg_name})", ""]
    bad = offending_state(cex)
    out += ["| state | step | what changed |", "|---|---|---|"]
    for i, step, what in steps_table(cex):
        mark = " **← violated here**" if i == bad else ""
        out.append(f"| {i} | {step.replace('|', '/')}{mark} | {what.replace('|', '/')} |")
    return "\n".join(out) + "\n"


def explain_html(cex: dict, nav: str = "") -> str:
    from .render import CSS
    bad = offending_state(cex)
    g = worker_gantt_svg(cex)
    gantt_html = (f"<figure>{g}<figcaption>The same behaviour as a Gantt chart: one row per "
                  f"worker, one unit of time per state; red outline: transactions still active "
                  f"in the violating state.</figcaption></figure>" if g else "")
    hot = ' style="background:#fdd"'
    rows = "".join(f"<tr{hot if i == bad else ''}><td>{i}</td>"
                   f"<td style=\"text-align:left\">{esc(step)}</td><td style=\"text-align:left\">{esc(what)}</td></tr>"
                   for i, step, what in steps_table(cex))
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
            f"{esc(title_of(cex))}</title><style>{CSS}</style></head><body>{nav}"
            f"<h1>{esc(title_of(cex))}</h1><p>Spec <code>{esc(cex.get('spec'))}</code>, config "
            f"<code>{esc(cex.get('cfg'))}</code>. {esc(cex.get('message') or '')}</p>"
            f"<figure>{sequence_svg(cex)}<figcaption>One row per transaction, one column per "
            f"state; black outline: the transaction moved in that step; red: where the property "
            f"is violated.</figcaption></figure>{gantt_html}<h2>Steps</h2><table><tr><th>state</th>"
            f"<th>step</th><th>what changed</th></tr>{rows}</table></body></html>\n")
