"""The worst stall as a timeline (in the style of Booking.com's parallel-replication posts):
one row per transaction, from dispatch to commit; execution and the commit step are bars, waits
are dotted lines, the group sync a short green bar. The rows are the most blamed transaction
(red) and the transactions that waited for it longest (commitsched.blame)."""
from __future__ import annotations

from .figures import esc, fmt, nice_ticks, svg_open

WORK = "#0072B2"
CULPRIT = "#D55E00"
STEP = "#56B4E9"
WAIT = "#E69F00"
SYNC = "#009E73"


def stall_data(res, *, sync: float, max_rows: int = 24) -> dict:
    """The numbers behind the picture: the most blamed transaction (the culprit) and the
    transactions that waited for it longest, by seq, each with its schedule and the part of
    its waits blamed on the culprit."""
    top = res.top(1)
    if not top:
        return {"culprit": None, "rows": []}
    culprit = top[0][0]
    victims = res.victims.get(culprit, {})
    waiters = sorted((w for w in victims if isinstance(w, int) and w != culprit),
                     key=lambda w: (-victims[w], w))[:max_rows - 1]
    rows = []
    for seq in sorted([culprit, *waiters]):
        r = res.runs[seq]
        rows.append({"seq": seq, "gtid": r.txn.gtid, "worker": r.worker + 1,
                     "dispatch": r.dispatch if r.dispatch is not None else r.start,
                     "start": r.start, "exec_end": r.exec_end, "ready": r.ready,
                     "commit": r.commit, "blamed_on_culprit": round(victims.get(seq, 0.0), 6)})
    blamed = res.by_culprit.get(culprit, 0.0)
    return {"culprit": culprit, "gtid": res.runs[culprit].txn.gtid, "blame": round(blamed, 6),
            "share": round(blamed / res.worker_time, 6) if res.worker_time else None,
            "workers": res.workers, "sync": sync,
            "idle_workers_blamed": round(sum(v for w, v in victims.items()
                                             if not isinstance(w, int)), 6),
            "rows": rows}


def stall_svg(d: dict, *, width: int = 1000) -> str:
    """Draw `stall_data`."""
    culprit, runs, sync = d["culprit"], d["rows"], d.get("sync", 0.0)
    title = "Worst stall"
    if culprit is None:
        return (svg_open(width, 60, title) + f'<text x="10" y="30">{esc(title)}: no transaction '
                f'holds the replica back in this run</text></svg>')
    title = (f"Worst stall: seq {culprit}" + (f" ({d['gtid']})" if d.get("gtid") else "") +
             f" is blamed for {fmt(d['blame'])} worker-µs ({d['share']:.1%} of {d['workers']} "
             f"x makespan)")
    left, right, top, row_h = 96, 90, 40, 20
    ph = len(runs) * row_h
    height = top + ph + 70
    t0 = min(r["start"] for r in runs)
    t1 = max(r["commit"] for r in runs)
    if t1 <= t0:
        t1 = t0 + 1
    pw = width - left - right

    def X(t):
        return left + (max(t, t0) - t0) / (t1 - t0) * pw

    out = [svg_open(width, height, title),
           f'<text x="{left}" y="20" font-size="13" font-weight="bold">{esc(title)}</text>']
    for t in (t for t in nice_ticks(0, t1 - t0, 8) if t <= t1 - t0 + 1e-9):
        x = X(t0 + t)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + ph}" stroke="#e4e4e4"/>'
                   f'<text x="{x:.1f}" y="{top + ph + 14}" text-anchor="middle" font-size="10">'
                   f'+{esc(fmt(t))}</text>')
    out.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph + 28}" text-anchor="middle" '
               f'font-size="11">µs since the first start drawn</text>')
    for i, r in enumerate(runs):
        y = top + i * row_h
        mid = y + row_h / 2
        is_c = r["seq"] == culprit
        tip = (f"seq {r['seq']}" + (f" {r['gtid']}" if r.get("gtid") else "") +
               f" worker {r['worker']}: dispatch {fmt(r['dispatch'])}, start {fmt(r['start'])}, "
               f"exec end {fmt(r['exec_end'])}, ready {fmt(r['ready'])}, commit "
               f"{fmt(r['commit'])}" +
               ("" if is_c else f"; {fmt(r['blamed_on_culprit'])} µs of its waits blamed on "
                                f"seq {culprit}"))
        emphasis = f' fill="{CULPRIT}" font-weight="bold"' if is_c else ""
        g = [f'<g data-seq="{r["seq"]}"><title>{esc(tip)}</title>',
             f'<text x="{left - 6}" y="{mid + 4:.1f}" text-anchor="end" font-size="11"'
             f'{emphasis}>seq {r["seq"]}</text>']
        if r["start"] > max(r["dispatch"], t0):        # waiting to start
            g.append(_dotted(X(r["dispatch"]), X(r["start"]), mid))
        g.append(_bar(X(r["start"]), X(r["exec_end"]), y, row_h, CULPRIT if is_c else WORK))
        if r["ready"] > r["exec_end"]:
            g.append(_bar(X(r["exec_end"]), X(r["ready"]), y, row_h, STEP))
        sync_start = max(r["ready"], r["commit"] - sync)
        if sync_start > r["ready"]:                    # waiting to commit
            g.append(_dotted(X(r["ready"]), X(sync_start), mid))
        if r["commit"] > sync_start:
            g.append(_bar(X(sync_start), X(r["commit"]), y, row_h, SYNC))
        label = "culprit" if is_c else f"{fmt(r['blamed_on_culprit'])} µs"
        g.append(f'<text x="{width - right + 6}" y="{mid + 4:.1f}" font-size="10" '
                 f'fill="{CULPRIT if is_c else "#555"}">{esc(label)}</text></g>')
        out.append("".join(g))
    ly = top + ph + 48
    lx = 10
    for label, colour, dotted in (("executing", WORK, False), ("the culprit executing", CULPRIT,
                                  False), ("own commit step", STEP, False),
                                  ("waiting (dotted)", WAIT, True), ("group sync", SYNC, False)):
        if dotted:
            out.append(_dotted(lx, lx + 18, ly - 4))
        else:
            out.append(f'<rect x="{lx}" y="{ly - 10}" width="14" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 22}" y="{ly}" font-size="11">{esc(label)}</text>')
        lx += 40 + 6.5 * len(label)
    if d.get("idle_workers_blamed", 0) > 0:
        out.append(f'<text x="{lx}" y="{ly}" font-size="11" fill="#555">+ '
                   f'{esc(fmt(d["idle_workers_blamed"]))} worker-µs of idle workers not drawn'
                   f'</text>')
    out.append("</svg>")
    return "".join(out)


def _bar(xa: float, xb: float, y: float, h: float, colour: str) -> str:
    return (f'<rect x="{xa:.1f}" y="{y + 4:.1f}" width="{max(xb - xa, 0.8):.1f}" '
            f'height="{h - 8:.1f}" fill="{colour}"/>')


def _dotted(xa: float, xb: float, y: float) -> str:
    return (f'<line x1="{xa:.1f}" x2="{xb:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{WAIT}" '
            f'stroke-width="2" stroke-dasharray="2 3"/>')
