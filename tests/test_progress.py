"""The progress line of import, score and report: on a terminal it says what is being done and
how far; anywhere else (a pipe, CI, --json to a file) there is nothing extra. The terminal is
forced by replacing `commitsched.progress.is_terminal`."""
import io
import multiprocessing as mp
import os
import re
import subprocess
import sys

import pytest

from commitsched import progress as progress_mod
from commitsched.cli import main
from commitsched.progress import Progress
from commitsched.scoring import fork_map

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
TEXT_BINLOG = os.path.join(FIX, "mysql80_binlog.000001.txt")
BINARY_BINLOG = os.path.join(FIX, "mariadb_tiny.binlog.000002")
BINARY_SCHEMA = os.path.join(FIX, "mariadb_tiny.schema.sql")
MARIADB_TRACE = "traces/examples/semantics_3_5_commit_id.jsonl"
CLEAR = "\r\033[K"


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setattr(progress_mod, "is_terminal", lambda stream: True)


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_line_says_what_and_how_long_and_redraws_in_place(terminal):
    out, clock = io.StringIO(), Clock()
    p = Progress(stream=out, clock=clock)
    p("bounds")
    assert out.getvalue() == CLEAR + "bounds [0s]"
    p.tick()                                    # within a second: not redrawn
    assert out.getvalue().count(CLEAR) == 1
    clock.t += 75
    p.sub("scaling").tick()
    assert out.getvalue().endswith(CLEAR + "bounds [1m15s]")
    p.sub("scaling")("3/9 runs done (serial W=1)")
    assert out.getvalue().endswith(CLEAR + "scaling: 3/9 runs done (serial W=1) [1m15s]")
    p.note("commitsched: skipped x: why")       # a note stays; the line comes back
    assert out.getvalue().endswith(CLEAR + "commitsched: skipped x: why\n" + CLEAR +
                                   "scaling: 3/9 runs done (serial W=1) [1m15s]")
    p.done()
    assert out.getvalue().endswith(CLEAR) and out.getvalue().count("\n") == 1



def test_the_time_goes_on_from_when_the_command_began(terminal):
    """score and report pass when they began (before importing binlogs): the time on their
    line goes on from there instead of starting again at 0."""
    out, clock = io.StringIO(), Clock()
    Progress(stream=out, clock=clock, started=clock.t - 60)("scaling")
    assert out.getvalue() == CLEAR + "scaling [1m00s]"

def test_nothing_when_quiet_or_not_a_terminal(monkeypatch):
    for quiet, tty in ((True, True), (False, False)):
        monkeypatch.setattr(progress_mod, "is_terminal", lambda stream, tty=tty: tty)
        out = io.StringIO()
        p = Progress(quiet, stream=out)
        p("bounds")
        p.tick()
        p.done()
        assert out.getvalue() == ""


@pytest.mark.timeout(120)        # a hang fails the test, not CI
def test_fork_map_ticks_while_its_workers_are_busy():
    """The worker waits until the parent has ticked (an event, not a clock): it can only
    finish by the tick, and says whether it was released by it."""
    released = mp.get_context("fork").Event()

    def slow(x):
        return released.wait(60)
    assert list(fork_map(slow, [1, 2], 2, tick=released.set)) == [True, True]


# A worker that starts late: the sweep is over (the other worker did both items) and the pool
# ends it before its initializer ran, with SIGTERM raising as `commitsched.cli.main` makes it.
_LATE_WORKER = """
import os, signal, sys, time
from commitsched import cli
from commitsched.scoring import fork_map
signal.signal(signal.SIGTERM, cli._on_sigterm)
forks = [0]
os.register_at_fork(before=lambda: forks.__setitem__(0, forks[0] + 1),
                    after_in_child=lambda: forks[0] == 2 and time.sleep(1.5))
print(list(fork_map(lambda x: x * x, [1, 2, 3], 2)))
"""


def test_a_worker_ended_before_it_started_dies_quietly():
    """A loaded machine may start a pool worker late; the pool then ends it as it begins. It
    used to inherit the raising SIGTERM handler: a traceback, or a child running on as a copy of
    the parent, waited for forever (a hang)."""
    r = subprocess.run([sys.executable, "-c", _LATE_WORKER], capture_output=True, text=True,
                       timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "[1, 4, 9]\n", "")


def _no_solver_time(text: str) -> str:
    """z3's own time (a tiny trace's bound is z3's) differs from run to run."""
    return re.sub(r'"solver_seconds": [0-9.e+-]+', '"solver_seconds": 0', text)


def _run(capsys, argv):
    assert main(argv) == 0
    return capsys.readouterr()


@pytest.mark.parametrize("command", [
    ["score", MARIADB_TRACE, "--workers", "1,2", "--jobs", "2", "--z3-bound", "off"],
    ["report", MARIADB_TRACE, "--workers", "1,2", "--jobs", "2", "--json"],
])
def test_score_and_report_show_progress_on_a_terminal_only(capsys, monkeypatch, command):
    plain = _run(capsys, command)
    assert "\r" not in plain.err
    monkeypatch.setattr(progress_mod, "is_terminal", lambda stream: True)
    shown = _run(capsys, command)
    assert _no_solver_time(shown.out) == _no_solver_time(plain.out)
    lines = shown.err.split(CLEAR)
    assert "runs done (" in shown.err and f"reading {MARIADB_TRACE}" in shown.err
    if command[0] == "report":
        assert any(x.startswith("scaling: ") for x in lines)
        assert any(x.startswith("windows, blame, what-ifs, keeping up: ") for x in lines)
    assert shown.err.endswith(CLEAR)                        # cleared at the end
    monkeypatch.setattr(progress_mod, "is_terminal", lambda stream: True)
    assert _run(capsys, command + ["--quiet"]).err == plain.err     # notes only, if any
    notes = [x for x in plain.err.splitlines()]
    assert all(n + "\n" in shown.err for n in notes)        # each on a line of its own


@pytest.mark.parametrize("inputs", [[TEXT_BINLOG], [BINARY_BINLOG, "--schema", BINARY_SCHEMA]])
def test_import_shows_progress_on_a_terminal_only(tmp_path, capsys, monkeypatch, inputs):
    # a terminal wide enough for the whole line: it names tmp_path, whose length varies (a
    # pytest-xdist worker's is longer), and a line wider than the terminal is cut short
    monkeypatch.setenv("COLUMNS", "1000")
    plain = _run(capsys, ["import", *inputs, "-o", str(tmp_path / "a.jsonl")])
    assert "\r" not in plain.err
    monkeypatch.setattr(progress_mod, "is_terminal", lambda stream: True)
    shown = _run(capsys, ["import", *inputs, "-o", str(tmp_path / "b.jsonl")])
    name = os.path.basename(inputs[0])
    assert f"{CLEAR}importing {name}: " in shown.err and " transactions [" in shown.err
    assert f"{CLEAR}writing {tmp_path / 'b.jsonl'}" in shown.err
    assert shown.err.split(CLEAR)[-1] == plain.err          # the notes, after the line
    assert shown.out == plain.out.replace("a.jsonl", "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    quiet = _run(capsys, ["import", *inputs, "-o", str(tmp_path / "c.jsonl"), "--quiet"])
    assert quiet.err == "" and quiet.out == ""
