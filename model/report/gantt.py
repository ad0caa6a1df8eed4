"""The schedule of a window as a Gantt chart: one row per worker, time to the right.

Each transaction's life on its worker (docs/names.md) is drawn as segments:
  dispatched → start      thin grey line (waiting for its dependencies / its group's turn)
  start → exec_end        executing (blue, labelled with its seq)
  exec_end → ready        its own commit step (prepare, engine commit)
  ready → commit − sync   waiting for the commit order (or for the group sync in progress)
  commit − sync → commit  the group's durable sync (committing)
Barriers (DDL/admin, `last_committed = 0`) are dashed vertical lines at their dispatch, retries
a red ↻ at the final start, and hovering any segment shows seq, GTID and times."""
from __future__ import annotations

from collections import deque
from typing import Iterable, Sequence

from .figures import esc, fmt, nice_ticks, svg_open

SEGMENTS = (
    ("wait_start", "waiting to start (dependencies, group turn)", "#bdbdbd"),
    ("executing", "executing", "#0072B2"),
    ("commit_step", "own commit step", "#56B4E9"),
    ("commit_wait", "waiting for commit order / sync in progress", "#E69F00"),
    ("sync", "group sync (committing)", "#009E73"),
)
COLOURS = {k: c for k, _, c in SEGMENTS}


def is_barrier(run) -> bool:
    """DDL/admin run alone; a clock tracker's `last_committed = 0` drains every worker."""
    txn = run.txn
    if txn.ddl or txn.admin:
        return True
    dep = run.dep
    return isinstance(dep, tuple) and len(dep) == 3 and dep[0] == 0 and run.seq > 1


def segments(run, sync: float) -> list[tuple[str, float, float]]:
    out = []
    if run.dispatch is not None and run.start - run.dispatch > 1e-9:
        out.append(("wait_start", run.dispatch, run.start))
    out.append(("executing", run.start, run.exec_end))
    if run.ready - run.exec_end > 1e-9:
        out.append(("commit_step", run.exec_end, run.ready))
    sync_start = max(run.ready, run.commit - sync)
    if sync_start - run.ready > 1e-9:
        out.append(("commit_wait", run.ready, sync_start))
    if run.commit - sync_start > 1e-9:
        out.append(("sync", sync_start, run.commit))
    return out


def window_bounds(idle: dict[int, float], size: int = 40,
                  start_seq: int | None = None) -> tuple[int, int] | None:
    """First and last seq of `size` consecutive transactions: from `start_seq` if given, else
    the stretch where the pipeline stalls most (largest summed `idle`: time a worker held the
    transaction without executing it, commit - start - exec)."""
    seqs = sorted(idle)
    if not seqs:
        return None
    size = max(1, min(size, len(seqs)))
    if start_seq is not None:
        i = next((k for k, q in enumerate(seqs) if q >= start_seq), len(seqs) - size)
        i = min(i, len(seqs) - size)
        return seqs[i], seqs[i + size - 1]
    acc = sum(idle[q] for q in seqs[:size])
    best, best_i = acc, 0
    for i in range(1, len(seqs) - size + 1):
        acc += idle[seqs[i + size - 1]] - idle[seqs[i - 1]]
        if acc > best + 1e-9:
            best, best_i = acc, i
    return seqs[best_i], seqs[best_i + size - 1]


def idle_time(run) -> float:
    return max(0.0, (run.commit - run.start) - run.exec)


class WindowSink:
    """A run sink that keeps the run records of `window_bounds`' window in one pass over a run:
    the same window, found with the same sums in the same order, without knowing it before the
    run ends (two runs otherwise: one for the idle times, one for the window's records) and
    without keeping every record. Records come in commit order; they are taken in seq order
    (from `first_seq` on, consecutive; a seq that never comes holds the rest until `window()`).
    Since it takes them in seq order, the compiled engine may hand it its records in that order
    (`seq_order`, model/schedulers.run_scheduler)."""

    seq_order = True

    def __init__(self, size: int = 40, start_seq: int | None = None, first_seq: int = 1):
        self.size, self.start = max(1, size), start_seq
        self.next = first_seq
        self.pending: dict = {}             # seq -> (run, idle): came before an earlier seq
        self.recent: deque = deque(maxlen=self.size)    # the last `size` taken, (run, idle)
        self.taken = 0
        self.acc = 0                        # as sum() starts
        self.best = 0.0
        self.best_runs: list = []
        self.chosen: list | None = None     # with start_seq: from the first seq >= it

    def __call__(self, run) -> None:
        if run.seq != self.next:
            self.pending[run.seq] = (run, idle_time(run))
            return
        self._take(run, idle_time(run))
        self.next += 1
        while self.next in self.pending:
            self._take(*self.pending.pop(self.next))
            self.next += 1

    def _take(self, run, idle: float) -> None:
        self.taken += 1
        if self.start is not None:
            if self.chosen is None and run.seq >= self.start:
                self.chosen = []
            if self.chosen is not None and len(self.chosen) < self.size:
                self.chosen.append(run)
            self.recent.append((run, idle))
            return
        if self.taken <= self.size:         # the first window: summed as window_bounds sums it
            self.acc += idle
            self.recent.append((run, idle))
            if self.taken == self.size:
                self.best, self.best_runs = self.acc, [r for r, _ in self.recent]
            return
        self.acc += idle - self.recent[0][1]
        self.recent.append((run, idle))
        if self.acc > self.best + 1e-9:
            self.best, self.best_runs = self.acc, [r for r, _ in self.recent]

    def window(self) -> list:
        """The window's run records in seq order ([] for a run with none)."""
        for seq in sorted(self.pending):
            self._take(*self.pending.pop(seq))
        if self.taken < self.size:          # fewer records than the window: all of them
            return [r for r, _ in self.recent]
        if self.start is not None:
            return self.chosen if self.chosen and len(self.chosen) == self.size else \
                [r for r, _ in self.recent]
        return self.best_runs


def select_window(runs: Sequence, size: int = 40, start_seq: int | None = None) -> list:
    b = window_bounds({r.seq: idle_time(r) for r in runs}, size, start_seq)
    if b is None:
        return []
    return sorted((r for r in runs if b[0] <= r.seq <= b[1]), key=lambda r: r.seq)


def _tip(run, sync: float) -> str:
    g = f" GTID {run.txn.gtid}" if run.txn.gtid else ""
    parts = [f"seq {run.seq}{g} on worker {run.worker + 1}",
             f"dispatch {fmt(run.dispatch)} start {fmt(run.start)} exec_end {fmt(run.exec_end)} "
             f"ready {fmt(run.ready)} commit {fmt(run.commit)}"]
    if run.retries:
        parts.append(f"retries {run.retries} (wasted {fmt(run.wasted)})")
    if is_barrier(run):
        parts.append("barrier")
    return "; ".join(parts)


def gantt_svg(runs: Iterable, workers: int, *, sync: float, title: str,
              highlight: Iterable[int] = (), width: int = 1000, unit: str = "µs",
              origin: float | None = None) -> str:
    runs = sorted(runs, key=lambda r: r.seq)
    highlight = set(highlight)
    left, right, top = 70, 16, 36
    row_h = 24
    legend_h = 58
    used_workers = max([workers] + [r.worker + 1 for r in runs])
    ph = used_workers * row_h
    height = top + ph + 34 + legend_h
    if not runs:
        return svg_open(width, 60, title) + f'<text x="10" y="30">{esc(title)}: empty</text></svg>'
    # From the first start: transactions queued long before (MariaDB threads hold up to
    # max_queued) would squeeze the window into a sliver; their wait is clipped at the edge.
    t0 = min(r.start for r in runs) if origin is None else origin
    t1 = max(r.commit for r in runs)
    if t1 <= t0:
        t1 = t0 + 1
    pw = width - left - right
    ticks = [t for t in nice_ticks(0, t1 - t0, 8) if t <= t1 - t0 + 1e-9]

    def X(t):
        return left + (t - t0) / (t1 - t0) * pw

    out = [svg_open(width, height, title),
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">{esc(title)}</text>']
    for w in range(used_workers):
        y = top + w * row_h
        out.append(f'<rect x="{left}" y="{y}" width="{pw}" height="{row_h}" '
                   f'fill="{"#fafafa" if w % 2 else "#f2f2f2"}"/>'
                   f'<text x="{left - 8}" y="{y + 16}" text-anchor="end" font-size="11">'
                   f'worker {w + 1}</text>')
    for t in ticks:
        x = X(t0 + t)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + ph}" stroke="#ddd"/>'
                   f'<text x="{x:.1f}" y="{top + ph + 14}" text-anchor="middle" font-size="10">'
                   f'{esc("+" + fmt(t) if origin is None else fmt(t0 + t))}</text>')
    out.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph + 28}" text-anchor="middle" '
               f'font-size="11">{"time since the first start in the window (" + esc(unit) + ")" if origin is None else esc(unit)}</text>')
    for r in runs:
        y = top + r.worker * row_h
        tip = esc(_tip(r, sync))
        g = [f'<g class="txn" data-seq="{r.seq}"><title>{tip}</title>']
        for kind, a, b in segments(r, sync):
            xa, xb = X(max(a, t0)), X(b)
            if kind == "wait_start":
                g.append(f'<line x1="{xa:.1f}" x2="{xb:.1f}" y1="{y + 12}" y2="{y + 12}" '
                         f'stroke="{COLOURS[kind]}" stroke-width="2"/>')
            else:
                g.append(f'<rect x="{xa:.1f}" y="{y + 3}" width="{max(xb - xa, 0.8):.1f}" '
                         f'height="{row_h - 6}" fill="{COLOURS[kind]}"/>')
        xs, xe = X(r.start), X(r.exec_end)
        if xe - xs >= 8 * len(str(r.seq)) + 2:
            g.append(f'<text x="{(xs + xe) / 2:.1f}" y="{y + 16}" text-anchor="middle" '
                     f'font-size="10" fill="#fff">{r.seq}</text>')
        if r.seq in highlight:
            g.append(f'<rect x="{X(r.start) - 1:.1f}" y="{y + 1}" '
                     f'width="{X(r.commit) - X(r.start) + 2:.1f}" height="{row_h - 2}" '
                     f'fill="none" stroke="#d00" stroke-width="2.5"/>')
        if r.retries:
            g.append(f'<text x="{xs - 2:.1f}" y="{y + 10}" text-anchor="end" font-size="12" '
                     f'fill="#d00" font-weight="bold">↻{r.retries}</text>')
        g.append("</g>")
        out.append("".join(g))
        if is_barrier(r):
            xb = X(max(t0, r.dispatch if r.dispatch is not None else r.start))
            out.append(f'<line x1="{xb:.1f}" x2="{xb:.1f}" y1="{top - 4}" y2="{top + ph}" '
                       f'stroke="#d00" stroke-dasharray="4 3" stroke-width="1.5"><title>barrier: '
                       f'seq {r.seq} waits for every earlier transaction</title></line>'
                       f'<text x="{xb + 2:.1f}" y="{top - 6}" font-size="10" fill="#d00">'
                       f'barrier {r.seq}</text>')
    ly = top + ph + 44
    lx = 10
    items = [(label, c) for _, label, c in SEGMENTS] + [
        ("↻ retried, red outline: highlighted, red dashes: barrier", None)]
    for label, c in items:
        step = 26 + 6.2 * len(label)
        if lx + step > width:
            lx, ly = 10, ly + 18
        if c:
            out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{c}"/>'
                       f'<text x="{lx + 16}" y="{ly}" font-size="11">{esc(label)}</text>')
        else:
            out.append(f'<text x="{lx}" y="{ly}" font-size="11" fill="#d00">{esc(label)}</text>')
        lx += step
    out.append("</svg>")
    return "".join(out)
