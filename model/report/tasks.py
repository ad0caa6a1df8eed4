"""The report's work after its sweep, as independent tasks: each a function of nothing, run
`jobs` at a time in forked processes (scoring.fork_map), so that two processes share the
windows, the blame, the what-ifs and the split what-if run by run instead of piece by piece
(one piece, the what-ifs, was most of the work on MariaDB traces and ran in one process)."""
from __future__ import annotations

from typing import Callable

from ..metrics import RunMetrics
from ..schedulers import run_scheduler
from ..scoring import fork_map
from ..simcore import SimulationError
from .gantt import WindowSink


class Tasks:
    """Labelled tasks by key, run in the order added (add the longest first, so that the
    processes finish together); the parent names each as it is done."""

    def __init__(self) -> None:
        self.items: list[tuple[object, str, Callable[[], object]]] = []
        self.replays = None          # progress.SharedCount while `run` runs

    def add(self, key, label: str, fn: Callable[[], object]) -> None:
        self.items.append((key, label, fn))

    def bump(self) -> None:
        """A task's replay ended (the keeping-up tasks make dozens each): the line moves."""
        if self.replays is not None:
            self.replays.bump()

    def run(self, jobs: int, progress: Callable[[str], None], title: str) -> dict:
        from ..progress import SharedCount
        done = {}
        n = len(self.items)
        finished = [0]
        self.replays = SharedCount(progress, lambda count: (
            f"{title}: {finished[0]}/{n} done" + (f", {count:,} replays so far" if count else "")))
        values = fork_map(lambda item: item[2](), self.items, jobs, self.replays.show)
        for i, ((key, label, _), value) in enumerate(zip(self.items, values), 1):
            finished[0] = i
            progress(f"{title}: {i}/{n} done ({label})")
            done[key] = value
        for _ in values:        # none left: this ends the pool now rather than when collected
            pass
        return done


def run_point(trace, name: str, workers: int, profile, tracker_options: dict | None,
              applier_options: dict | None, bugs) -> tuple:
    """One run: ((RunMetrics, blocked), None), or (None, the SimulationError's text): a deadlock
    is a what-if's answer, not the report's failure."""
    m = RunMetrics(workers)
    try:
        blocked = run_scheduler(name, trace.txns(), workers, profile, m, bugs=bugs,
                                tracker_options=tracker_options, applier_options=applier_options)
    except SimulationError as e:
        return None, str(e)
    return (m, blocked), None


def point_result(point: tuple, name: str, workers: int, profile, serial_ms: float | None) -> dict:
    """A `run_point` as a result row (RunMetrics.result) against a serial makespan, or its
    error."""
    kept, error = point
    if kept is None:
        return {"scheduler": name, "workers": workers, "error": error}
    m, blocked = kept
    return m.result(scheduler=name, profile=profile.name, blocked=blocked,
                    serial_makespan=serial_ms, bound=None)


def stall_window(trace, name: str, workers: int, profile, opts: dict, size: int,
                 start: int | None, first_seq: int) -> list:
    """The run records of the window where workers wait most (or from `start`), one run."""
    sink = WindowSink(size, start, first_seq)
    run_scheduler(name, trace.txns(), workers, profile, sink, **opts)
    return sink.window()


def seq_window(trace, name: str, workers: int, profile, opts: dict, lo: int, hi: int) -> list:
    """The run records of seq lo..hi (only those are kept: a long trace's schedule is never
    held in memory)."""
    sink = _SeqRange(lo, hi)
    run_scheduler(name, trace.txns(), workers, profile, sink, **opts)
    sink.sel.sort(key=lambda r: r.seq)
    return sink.sel


class _SeqRange:
    """Keeps the run records of seq lo..hi; the order they come in does not matter (sorted
    after), so the compiled engine may feed it (`seq_order`)."""
    seq_order = True

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi, self.sel = lo, hi, []
        self.seq_range = (lo, hi)       # the compiled engine feeds only these (engine.feed)

    def __call__(self, run) -> None:
        if self.lo <= run.seq <= self.hi:
            self.sel.append(run)


def windows_task(trace, picks: list, profile, run_opts, size: int, start: int | None,
                 first_seq: int) -> list:
    """The report's schedule windows, one run each: the first pick's where workers wait most
    (or from `start`: `stall_window`), then each other pick's at the same seqs (`seq_window`)."""
    name, w, _ = picks[0]
    out = [stall_window(trace, name, w, profile, run_opts(name), size, start, first_seq)]
    lo, hi = (out[0][0].seq, out[0][-1].seq) if out[0] else (1, 0)
    for name, w, _ in picks[1:]:
        out.append(seq_window(trace, name, w, profile, run_opts(name), lo, hi))
    return out
