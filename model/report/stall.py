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


def stall_rows(res, max_rows: int = 24) -> tuple[int | None, list]:
    """The culprit's seq and the runs to draw (culprit + its longest-waiting victims), by seq."""
    top = res.top(1)
    if not top:
        return None, []
    culprit = top[0][0]
    victims = res.victims.get(culprit, {})
    waiters = sorted((w for w in victims if isinstance(w, int) and w != culprit),
                     key=lambda w: (-victims[w], w))[:max_rows - 1]
    rows = sorted([culprit, *waiters])
    return culprit, [res.runs[s] for s in rows]


def stall_svg(res, *, sync: float, max_rows: int = 24, width: int = 1000) -> str:
    culprit, runs = stall_rows(res, max_rows)
    title = "Worst stall"
    if culprit is None:
        return (svg_open(width, 60, title) + f'<text x="10" y="30">{esc(title)}: no transaction '
                f'holds the replica back in this run</text></svg>')
    c = res.runs[culprit]
    blamed = res.by_culprit.get(culprit, 0.0)
    idle = sum(v for w, v in res.victims.get(culprit, {}).items() if not isinstance(w, int))
    share = blamed / res.worker_time if res.worker_time else 0.0
    title = (f"Worst stall: seq {culprit}" + (f" ({c.txn.gtid})" if c.txn.gtid else "") +
             f" is blamed for {fmt(blamed)} worker-µs ({share:.1%} of {res.workers} x makespan)")
    left, right, top, row_h = 96, 90, 40, 20
    ph = len(runs) * row_h
    height = top + ph + 70
    t0 = min(r.start for r in runs)
    t1 = max(r.commit for r in runs)
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
    victims = res.victims.get(culprit, {})
    for i, r in enumerate(runs):
        y = top + i * row_h
        mid = y + row_h / 2
        is_c = r.seq == culprit
        tip = (f"seq {r.seq}" + (f" {r.txn.gtid}" if r.txn.gtid else "") +
               f" worker {r.worker + 1}: dispatch {fmt(r.dispatch)}, start {fmt(r.start)}, "
               f"exec end {fmt(r.exec_end)}, ready {fmt(r.ready)}, commit {fmt(r.commit)}" +
               ("" if is_c else f"; {fmt(victims.get(r.seq, 0.0))} µs of its waits blamed on "
                                f"seq {culprit}"))
        emphasis = f' fill="{CULPRIT}" font-weight="bold"' if is_c else ""
        g = [f'<g data-seq="{r.seq}"><title>{esc(tip)}</title>',
             f'<text x="{left - 6}" y="{mid + 4:.1f}" text-anchor="end" font-size="11"'
             f'{emphasis}>seq {r.seq}</text>']
        d = r.dispatch if r.dispatch is not None else r.start
        if r.start > max(d, t0):                       # waiting to start
            g.append(_dotted(X(d), X(r.start), mid))
        g.append(_bar(X(r.start), X(r.exec_end), y, row_h, CULPRIT if is_c else WORK))
        if r.ready > r.exec_end:
            g.append(_bar(X(r.exec_end), X(r.ready), y, row_h, STEP))
        sync_start = max(r.ready, r.commit - sync)
        if sync_start > r.ready:                       # waiting to commit
            g.append(_dotted(X(r.ready), X(sync_start), mid))
        if r.commit > sync_start:
            g.append(_bar(X(sync_start), X(r.commit), y, row_h, SYNC))
        if not is_c:
            g.append(f'<text x="{width - right + 6}" y="{mid + 4:.1f}" font-size="10" '
                     f'fill="#555">{esc(fmt(victims.get(r.seq, 0.0)))} µs</text>')
        else:
            g.append(f'<text x="{width - right + 6}" y="{mid + 4:.1f}" font-size="10" '
                     f'fill="{CULPRIT}">culprit</text>')
        g.append("</g>")
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
    if idle > 0:
        out.append(f'<text x="{lx}" y="{ly}" font-size="11" fill="#555">+ {esc(fmt(idle))} '
                   f'worker-µs of idle workers not drawn</text>')
    out.append("</svg>")
    return "".join(out)


def _bar(xa: float, xb: float, y: float, h: float, colour: str) -> str:
    return (f'<rect x="{xa:.1f}" y="{y + 4:.1f}" width="{max(xb - xa, 0.8):.1f}" '
            f'height="{h - 8:.1f}" fill="{colour}"/>')


def _dotted(xa: float, xb: float, y: float) -> str:
    return (f'<line x1="{xa:.1f}" x2="{xb:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{WAIT}" '
            f'stroke-width="2" stroke-dasharray="2 3"/>')
