"""The progress line of long commands (`import`, `score`, `report`): what is being done and how
far, with the time taken so far, redrawn in place on stderr, and only when stderr is a terminal:
piped or CI output, and the `--json` outputs, carry nothing extra."""
from __future__ import annotations

import shutil
import sys
import time
from typing import Callable

CLEAR = "\r\033[K"       # back to the line's start, erase it
TICK_SECONDS = 1.0       # a waiting parent redraws the line this often (the clock moves)


def is_terminal(stream) -> bool:
    """Whether `stream` is a terminal (a function of its own, so that a test can say yes)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):     # no isatty, or closed
        return False


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    """One self-overwriting status line: `progress(text)` says what is being done; `tick()`
    redraws it with the time taken so far (for a caller waiting on work done elsewhere);
    `done()` clears it. Nothing at all when `quiet` or stderr is not a terminal."""

    def __init__(self, quiet: bool = False, *, stream=None, clock: Callable[[], float] =
                 time.monotonic, started: float | None = None):
        # `started`: when the command began (on `clock`), so that the time shown goes on
        # from the import of binlogs before it instead of starting again at 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and is_terminal(self.stream)
        self.clock = clock
        self.started = clock() if started is None else started
        self.text = ""
        self.drawn_at: float | None = None

    def __call__(self, text: str) -> None:
        self.text = text
        self._draw()

    def tick(self) -> None:
        if self.text and (self.drawn_at is None or
                          self.clock() - self.drawn_at >= TICK_SECONDS):
            self._draw()

    def update(self, text: str) -> None:
        """Say `text`, drawn at the next tick's pace (about once a second), not at once: for
        counts that move many times a second."""
        self.text = text
        self.tick()

    def note(self, text: str) -> None:
        """A line that stays (a warning), printed whether or not the progress line is shown;
        the progress line, if shown, is cleared first and drawn again after it."""
        shown = self.enabled and self.drawn_at is not None
        self.stream.write((CLEAR if shown else "") + text + "\n")
        self.stream.flush()
        if shown:
            self._draw()

    def sub(self, prefix: str) -> "SubProgress":
        return SubProgress(self, prefix)

    def _draw(self) -> None:
        if not self.enabled:
            return
        now = self.clock()
        self.drawn_at = now
        line = f"{self.text} [{_clock(now - self.started)}]"
        width = shutil.get_terminal_size((100, 24)).columns - 1   # a wrapped line stays
        if len(line) > width > 3:
            line = line[:width - 3] + "..."
        self.stream.write(CLEAR + line)
        self.stream.flush()

    def done(self) -> None:
        if self.enabled and self.drawn_at is not None:
            self.stream.write(CLEAR)
            self.stream.flush()
            self.drawn_at = None


class SubProgress:
    """A part of a command's work: its lines are prefixed, its ticks are the command's."""

    def __init__(self, parent, prefix: str):
        self.parent, self.prefix = parent, prefix

    def __call__(self, text: str) -> None:
        self.parent(f"{self.prefix}: {text}")

    def tick(self) -> None:
        tick_of(self.parent)()

    def note(self, text: str) -> None:
        note_of(self.parent)(text)


def note_of(progress) -> Callable[[str], None]:
    """`progress.note`, or a plain line on stderr."""
    return getattr(progress, "note", None) or (lambda text: print(text, file=sys.stderr))


def tick_of(progress) -> Callable[[], None]:
    """`progress.tick`, or nothing to do for a plain callable (a test's, a library caller's)."""
    return getattr(progress, "tick", None) or (lambda: None)


class SharedCount:
    """A count of work done inside a long step (the replays of a `lag` configuration: its
    laps, headroom bisection and drain), kept in shared memory made before the work is forked
    (scoring.fork_map), so that the parent's progress line moves while a configuration runs,
    not only when it ends. `bump()` in any process; `show()` (the parent's tick) redraws the
    line with `text_of(count)`, at most about once a second."""

    def __init__(self, progress, text_of: Callable[[int], str]):
        import multiprocessing as mp
        import os
        self.value = mp.get_context("fork").Value("q", 0) if "fork" in \
            mp.get_all_start_methods() else mp.Value("q", 0)
        self.progress, self.text_of, self.pid = progress, text_of, os.getpid()

    @property
    def count(self) -> int:
        return self.value.value

    def bump(self) -> None:
        import os
        with self.value.get_lock():
            self.value.value += 1
        if os.getpid() == self.pid:          # in a forked worker the parent's tick shows it
            self.show()

    def show(self) -> None:
        text = self.text_of(self.count)
        update = getattr(self.progress, "update", None)
        if update is not None:
            update(text)
        else:
            self.progress(text)
