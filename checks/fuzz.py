"""`make fuzz`: a bounded property-based campaign against the promise of `commitsched.cli`.

    python -m commitsched.checks.fuzz [--seconds 150] [--out build/fuzz] [--seed N]

Every input is a bundled trace or binlog (the corpus: traces/examples, traces/recorded,
tests/fixtures/binlog) mutated by hypothesis strategies: a field set to a hostile JSON value
(huge or deep or of the wrong type, a lone surrogate, HTML), a table's keys made unknown as an
import with no schema leaves them (trace format version 2), lines deleted, duplicated, swapped
or cut, bytes flipped, gzip streams corrupted, numbers and dates in binlog text replaced,
CREATE TABLE text cut short, and command lines drawn from the CLI's own options. Each input goes
through a command in-process (`cli.main`), and the campaign asserts, per run:

  - exit status 0 or 2 (1 too for `check`, which reports violated properties that way),
  - no traceback, and no "internal error" line (the CLI's last net, which names a bug),
  - at most `--per-run` seconds (a SIGALRM ends a run that hangs),
  - every output file complete (it loads, parses, ends as it must) or absent, and no temporary
    file left behind;

and, in child processes, that SIGINT or SIGTERM mid-write leaves outputs complete or absent,
and that /dev/zero as input ends in one line. Hypothesis rather than atheris: the properties
are about a whole command (exit status, files, signals), which atheris's in-process byte
fuzzing does not see; hypothesis is already a test dependency, its runs are reproducible from a
seed, and its structured strategies reach past the JSON and binlog parsers into the schedulers
(docs/robustness.md has the measurements behind the choice).

Findings go to OUT/findings/ (the input and what happened) and OUT/summary.json; the exit
status is 1 when there is any.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import gzip
import io
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings
from hypothesis import strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isdir(os.path.join(ROOT, "traces")):        # installed, not run from a checkout
    ROOT = os.getcwd()

SCHEDULERS = ["serial", "commit_order+mysql", "writeset+mysql", "writeset_session+mysql",
              "database+mysql", "commit_id+mariadb_conservative", "commit_id+mariadb_optimistic",
              "slave_group_commit+mariadb_aggressive"]
TRACKERS = ["serial", "database", "commit_order", "commit_id", "writeset", "writeset_session",
            "slave_group_commit"]
MARKER = "<script>x&'\"</script>"       # must never reach a page unescaped


class Hang(BaseException):
    """Raised by SIGALRM in a run that took too long."""


# ------------------------------------------------------------------ the corpus

def _trace_seeds(limit: int = 30) -> list[tuple[str, list[str]]]:
    """(name, lines) of each bundled trace: the header and its first `limit` transactions."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "traces", "examples", "*.jsonl*")) +
                       glob.glob(os.path.join(ROOT, "traces", "recorded", "*.jsonl*"))):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            lines = [line for _, line in zip(range(limit + 1), f)]
        out.append((os.path.basename(path), lines))
    return out


def _binlog_seeds(limit: int = 400) -> list[tuple[str, list[str], str | None]]:
    """(name, lines, schema text or None) of each text binlog fixture, cut at `limit` lines."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "binlog", "*.txt"))):
        with open(path, encoding="utf-8") as f:
            lines = [line for _, line in zip(range(limit), f)]
        schema = path.replace(".txt", ".schema.sql")
        if not os.path.exists(schema):
            schema = os.path.join(ROOT, "tests", "fixtures", "binlog", "mariadb_tiny.schema.sql")
        with open(schema, encoding="utf-8") as f:
            out.append((os.path.basename(path), lines, f.read()))
    return out


def _binary_seeds() -> list[tuple[str, bytes]]:
    return [(os.path.basename(p), open(p, "rb").read()) for p in
            sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "binlog", "*.binlog.*")))]


# ------------------------------------------------------------------ hostile values

HUGE_INT = "9" * 5000                     # beyond Python's 4300-digit int conversion limit
DEEP = "[" * 100000 + "]" * 100000
RAW_TOKENS = {"@HUGE@": HUGE_INT, "@DEEP@": DEEP, "@NAN@": "NaN", "@INF@": "Infinity",
              "@BIGF@": "1e400"}

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([0, -1, 2**63, 2**64]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e308, 5e-324, -0.0]),
    st.text(max_size=12), st.sampled_from(["\ud800", MARKER, "", "0-1-x", "d.t/PRIMARY=1"]),
    st.sampled_from(list(RAW_TOKENS)))
json_value = st.recursive(json_leaf, lambda c: st.one_of(st.lists(c, max_size=3),
                                                          st.dictionaries(st.text(max_size=6), c,
                                                                          max_size=3)),
                          max_leaves=6)
TRACE_FIELDS = ["seq", "writes", "before_images", "gtid", "file", "last_committed",
                "sequence_number", "commit_id", "flags", "session", "db", "ddl", "admin", "no_pk",
                "fk_parent", "exec", "commit", "timestamp", "format", "version", "source",
                "keys_unknown", "keys_partial"]


def _dump(obj) -> str:
    text = json.dumps(obj, ensure_ascii=True)
    for token, raw in RAW_TOKENS.items():
        text = text.replace(json.dumps(token), raw)
    return text


@st.composite
def line_edits(draw, lines: list[str], protect_first: bool = False) -> list[str]:
    """Delete, duplicate, swap, cut or insert lines."""
    lines = list(lines)
    for _ in range(draw(st.integers(0, 3))):
        if not lines:
            break
        lo = 1 if protect_first and len(lines) > 1 else 0
        i = draw(st.integers(lo, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "cut", "insert"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(lo, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "cut":
            lines[i] = lines[i][:draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        else:
            lines.insert(i, draw(st.text(max_size=40)) + "\n")
    return lines


def _flip_bytes(draw, data: bytes, start: int = 0) -> bytes:
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        if len(b) <= start:
            break
        i = draw(st.integers(start, len(b) - 1))
        b[i] = draw(st.integers(0, 255))
    return bytes(b)


def _fix_checksums(data: bytes) -> bytes:
    """Every event's CRC32 made right again after `_flip_bytes` (but the format description's,
    which the reader does not check): the reader refuses a checksum mismatch first, so without
    this the damage would never reach the event decoders behind that check."""
    import zlib
    b = bytearray(data)
    at = 4
    while at + 19 <= len(b):
        size = int.from_bytes(b[at + 9:at + 13], "little")
        if size < 23 or at + size > len(b):
            break
        if b[at + 4] != 15:
            b[at + size - 4:at + size] = zlib.crc32(b[at:at + size - 4]).to_bytes(4, "little")
        at += size
    return bytes(b)


# Well-typed but extreme values, so that a mutated trace gets past validation into the
# schedulers, the bounds and the report (half the trace inputs are mutated only this way).
PLAUSIBLE = {
    "exec": st.sampled_from([0, 0.0, 1e-300, 1e-9, 0.5, 1e12, 1e300, 1.7e308]),
    "commit": st.sampled_from([0, 1e-9, 1e12, 1e308]),
    "timestamp": st.sampled_from([0, -1e18, 1e18, 1.5]),
    "commit_id": st.sampled_from([0, 1, 7, 2**63, 2**64 + 5]),
    "gtid": st.sampled_from(["\ud800", MARKER, "", "0-1-1", "a" * 300, "x:y:z"]),
    "session": st.sampled_from([MARKER, 2**70, 0, "\udfff"]),
    "writes": st.lists(st.sampled_from([f"d.t/PRIMARY={MARKER}", "d.t/PRIMARY=1",
                                        "\ud800.t/U=1", "a.b/PRIMARY=" + "9" * 200]),
                       max_size=4),
    "flags": st.sets(st.sampled_from(["transactional", "allow_parallel", "waited", "ddl"]))
                .map(sorted),
    "ddl": st.booleans(), "admin": st.booleans(), "no_pk": st.booleans(),
    "db": st.lists(st.sampled_from([MARKER, "sbtest", "\ud800"]), max_size=2),
    "keys_unknown": st.lists(st.sampled_from([f"{MARKER}.t", "d.t", "sbtest.sbtest1",
                                              "\ud800.x", "a.b.c"]), max_size=3),
    "keys_partial": st.lists(st.sampled_from([f"d.{MARKER}", "sbtest.sbtest2"]), max_size=2),
}


@st.composite
def plausible_trace(draw, lines: list[str]) -> list[str]:
    out = [lines[0]]
    everywhere = draw(st.sampled_from([None, "zero_costs", "drop_commit_id", "drop_clock",
                                       "no_keys"]))
    if everywhere == "no_keys" or draw(st.booleans()):      # version 2 (keys_unknown/partial)
        out[0] = lines[0].replace('"version":1', '"version":2').replace('"version": 1',
                                                                        '"version": 2')
    edits = {draw(st.integers(1, max(1, len(lines) - 1))): draw(st.sampled_from(sorted(PLAUSIBLE)))
             for _ in range(draw(st.integers(0, 3)))}
    for i, line in enumerate(lines[1:], 1):
        obj = json.loads(line)
        if everywhere == "zero_costs":
            obj["exec"], obj["commit"] = 0, 0
        elif everywhere == "drop_commit_id":
            obj.pop("commit_id", None)
        elif everywhere == "drop_clock":
            obj.pop("last_committed", None), obj.pop("sequence_number", None)
        elif everywhere == "no_keys" and obj.get("writes"):
            # as a binlog imported with no schema has them: a table's rows without keys
            table = obj["writes"][0].partition("/")[0]
            obj["writes"] = [k for k in obj["writes"] if not k.startswith(table + "/")]
            obj.pop("before_images", None), obj.pop("write_set_size", None)
            obj["keys_unknown"] = [table]
        if i in edits:
            obj[edits[i]] = draw(PLAUSIBLE[edits[i]])
        out.append(_dump(obj) + "\n")
    return out


@st.composite
def trace_inputs(draw, seeds) -> tuple[str, bytes]:
    """(file name, bytes) of a mutated trace."""
    name, lines = draw(st.sampled_from(seeds))
    lines = list(lines)
    if draw(st.booleans()):
        data = "".join(draw(plausible_trace(lines))).encode("utf-8", "surrogatepass")
        return "t.jsonl", data
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        try:
            obj = json.loads(lines[i])
        except (ValueError, RecursionError):      # a line an earlier edit made hostile
            continue
        if isinstance(obj, dict):
            obj[draw(st.sampled_from(TRACE_FIELDS))] = draw(json_value)
        lines[i] = _dump(obj) + "\n"
    lines = draw(line_edits(lines, protect_first=draw(st.booleans())))
    data = "".join(lines).encode("utf-8", "surrogatepass")
    gz = draw(st.booleans())
    if gz:
        data = gzip.compress(data, mtime=0)
    if draw(st.integers(0, 4)) == 0:
        data = _flip_bytes(draw, data, start=10 if gz else 0)
    if draw(st.integers(0, 6)) == 0:
        data = data[:draw(st.integers(0, len(data)))]
    return ("t.jsonl.gz" if gz else "t.jsonl"), data


NUMBER = re.compile(r"\d+")


@st.composite
def binlog_inputs(draw, seeds) -> tuple[bytes, bytes | None, list[str]]:
    """(binlog text, schema text or None, extra import options)."""
    name, lines, schema = draw(st.sampled_from(seeds))
    lines = list(lines)
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        nums = list(NUMBER.finditer(lines[i]))
        if nums and draw(st.booleans()):
            m = draw(st.sampled_from(nums))
            new = draw(st.sampled_from(["000000", "9" * 25, HUGE_INT, "", "-1", "99", "0", "x"]))
            lines[i] = lines[i][:m.start()] + new + lines[i][m.end():]
        else:
            lines[i] = draw(st.sampled_from([
                lines[i].replace("`", ""), lines[i].upper(), lines[i][::-1], "### @1=1\n",
                "#" + lines[i], lines[i].replace(" ", "", 1), "BINLOG '\n", "COMMIT/*!*/;\n",
                lines[i].replace("=", "", 1)]))
    lines = draw(line_edits(lines))
    if schema is not None and draw(st.booleans()):
        cut = draw(st.integers(0, len(schema)))
        schema = draw(st.sampled_from([schema[:cut], schema[:cut] + schema[cut + 1:],
                                       schema.replace("(", "", 1), schema.replace(")", "", 2),
                                       schema.replace("KEY", "KEY (", 1),
                                       schema + "\nCREATE TABLE x.y (a INT, FOREIGN KEY);\n",
                                       schema + "\nCREATE TABLE x.z (a INT, UNIQUE KEY ());\n"]))
    opts = ["--skip-bad"] if draw(st.booleans()) else []
    with_schema = draw(st.booleans())
    return ("".join(lines).encode("utf-8", "surrogatepass"),
            schema.encode() if with_schema and schema is not None else None, opts)


# ------------------------------------------------------------------ one run

@dataclass
class Outcome:
    rc: int | None
    seconds: float
    stderr: str
    problem: str | None = None      # what broke the promise, None when nothing did


@contextlib.contextmanager
def _alarm(seconds: float):
    def fire(signum, frame):
        raise Hang()
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv: list[str], per_run: float, allowed=(0, 2)) -> Outcome:
    """`commitsched ARGV` in this process, stdout/stderr as strict UTF-8 like a terminal's."""
    from commitsched import cli
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    started = time.perf_counter()
    rc, problem = None, None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _alarm(per_run):
            try:
                rc = cli.main(argv)
            except SystemExit as e:          # argparse
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except Hang:
        problem = f"hang: still running after {per_run:g} s"
    except BaseException as e:              # noqa: BLE001 - a traceback is what we look for
        problem = (f"traceback at {_place(e)}: {type(e).__name__}: {str(e)[:200]}\n" +
                   "".join(traceback.format_exception(e))[-1500:])
    seconds = time.perf_counter() - started
    try:
        err.flush()
        text = err.buffer.getvalue().decode("utf-8", "replace")
    except Exception:                        # noqa: BLE001
        text = ""
    if problem is None:
        if "internal error" in text:
            problem = "internal error: " + text[-600:]
        elif "Traceback (most recent call last)" in text:
            problem = "traceback on stderr: " + text[-1500:]
        elif rc not in allowed:
            problem = f"exit status {rc} (expected one of {allowed})"
        elif rc == 2 and not any(line.startswith(("commitsched: error:", "usage:",
                                                  "commitsched: skipped"))
                                 for line in text.splitlines()):
            problem = "exit 2 without a 'commitsched: error:' line: " + text[-300:]
    return Outcome(rc, seconds, text, problem)


class Runner:
    """`run_cli` in a forked worker process that runs one input after another, so that a native
    extension that aborts the process (a failed allocation in Rust is no exception: the binary
    reader asked for exabytes once) is a finding with its input saved, not the end of the
    campaign; the next run gets a fresh worker. One worker for many runs keeps the in-process
    pace (a fork a run took twice as long: its pages copied as the run touched them). The
    worker's own stderr, where such an abort writes, goes to a file read when it dies."""

    def __init__(self, grace: float = 10.0):
        self.pid = None
        self.grace = grace      # past twice a run's limit, a worker that does not answer is killed

    def _start(self) -> None:
        import pickle
        self.native = tempfile.TemporaryFile()
        to_r, to_w = os.pipe()
        back_r, back_w = os.pipe()
        pid = os.fork()
        if pid == 0:                                  # pragma: no cover - the worker
            try:
                os.close(to_w)
                os.close(back_r)
                os.dup2(self.native.fileno(), 2)
                import faulthandler     # its dump of an abort would go to the parent's stderr
                faulthandler.disable()
                with os.fdopen(to_r, "rb") as jobs, os.fdopen(back_w, "wb") as answers:
                    while True:
                        try:
                            argv, per_run, allowed = pickle.load(jobs)
                        except EOFError:
                            break
                        pickle.dump(run_cli(argv, per_run, allowed), answers)
                        answers.flush()
            finally:
                os._exit(0)
        os.close(to_r)
        os.close(back_w)
        self.pid, self.jobs, self.answers = pid, os.fdopen(to_w, "wb"), os.fdopen(back_r, "rb")

    def __call__(self, argv: list[str], per_run: float, allowed=(0, 2)) -> Outcome:
        import pickle
        if self.pid is None:
            self._start()
        self.native.seek(0)
        self.native.truncate()
        try:
            pickle.dump((argv, per_run, allowed), self.jobs)
            self.jobs.flush()
            # the run's own alarm ends a slow run in Python; native code that never returns
            # to Python would never answer: the worker is killed past twice the limit
            wait = 2 * per_run + self.grace
            ready, _, _ = select.select([self.answers], [], [], wait)
            if not ready:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                self._drop()
                return Outcome(None, wait, "", f"hang: no answer after {wait:g} s, not even "
                                               f"to the run's alarm (native code?): the worker "
                                               f"was killed")
            return pickle.load(self.answers)
        except (EOFError, BrokenPipeError, pickle.UnpicklingError):
            pass
        _, status = os.waitpid(self.pid, 0)
        self.native.seek(0)
        said = self.native.read().decode("utf-8", "replace")[-1500:]
        self._drop()
        how = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exit {os.WEXITSTATUS(status)} before it reported")
        return Outcome(None, 0.0, said, f"process died ({how}), no one-line error: {said[:600]}")

    def _drop(self) -> None:
        for f in (self.jobs, self.answers, self.native):
            f.close()
        self.pid = None

    def close(self) -> None:
        if self.pid is not None:
            self.jobs.close()             # the worker sees EOF and exits
            os.waitpid(self.pid, 0)
            self.answers.close()
            self.native.close()
            self.pid = None


def _place(e: BaseException) -> str:
    """The innermost commitsched frame of a traceback: file:function, to group findings."""
    place = "?"
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename.startswith(ROOT + os.sep) and not frame.filename.endswith("fuzz.py"):
            place = f"{os.path.relpath(frame.filename, ROOT)}:{frame.name}"
    return place


def check_outputs(workdir: str, outputs: list[str], rc: int) -> str | None:
    """Every declared output complete or absent, nothing else left behind."""
    from commitsched.trace import load_trace
    for name in os.listdir(workdir):
        if name.startswith(".tmp-") or name.startswith(".import-"):
            return f"temporary file left behind: {name}"
    for path in outputs:
        if not os.path.exists(path):
            continue
        if os.path.isdir(path):
            files = [os.path.join(path, f) for f in os.listdir(path)]
            if any(os.path.basename(f).startswith(".tmp-") for f in files):
                return f"temporary file left behind in {path}"
        else:
            files = [path]
        for f in files:
            why = _incomplete(f, load_trace)
            if why:
                return f"half-written output {os.path.basename(f)}: {why}"
    return None


def _incomplete(path: str, load_trace) -> str | None:
    name = os.path.basename(path)
    try:
        if ".jsonl" in name:
            load_trace(path)
        elif name.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                json.load(f)
        elif name.endswith(".html"):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if not text.rstrip().endswith("</html>"):
                return "no closing </html>"
            if MARKER in text or "<script>x" in text:
                return "a trace string reached the page unescaped"
        elif name.endswith(".svg"):
            with open(path, encoding="utf-8") as f:
                if not f.read().rstrip().endswith("</svg>"):
                    return "no closing </svg>"
    except Exception as e:                   # noqa: BLE001
        return f"{type(e).__name__}: {str(e)[:200]}"
    return None


def _limit_memory() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _sigint_default() -> None:
    """In a signal target's child: SIGINT back to its default, so Python raises
    KeyboardInterrupt. A shell without job control starts background jobs with SIGINT ignored,
    and a child inheriting that would run to its end, never interrupted."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _numbered_copies(binlog: str, files: int, per_file: int, folder: str) -> list[str]:
    """`files` text binlogs in `folder`, each `per_file` copies of a MariaDB text binlog one
    after another, every copy going on from the one before as one server's next transactions
    would (its GTIDs moved on): import refuses a file given twice, or out of order."""
    text = open(binlog, encoding="utf-8").read()
    gtid = re.compile(r"(GTID \d+-\d+-|gtid_seq_no=)(\d+)")
    numbers = [int(m.group(2)) for m in gtid.finditer(text)]
    span = max(numbers) - min(numbers) + 1            # the next copy goes on without a gap
    paths = []
    for i in range(files):
        path = os.path.join(folder, f"mariadb-bin.{i + 1:06d}.txt")
        with open(path, "w", encoding="utf-8") as f:
            for copy in range(i * per_file, (i + 1) * per_file):
                f.write(gtid.sub(lambda m: m.group(1) + str(int(m.group(2)) + span * copy),
                                 text))
        paths.append(path)
    return paths


def _child_env() -> dict:
    env = dict(os.environ)
    env.pop("COMMITSCHED_DEBUG", None)
    return env


# ------------------------------------------------------------------ the campaign

@dataclass
class Tally:
    inputs: int = 0
    runs: int = 0
    exit_codes: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)
    slowest: float = 0.0


class Campaign:
    def __init__(self, out: str, per_run: float, seed: int):
        self.out, self.per_run, self.seed = out, per_run, seed
        self.tallies: dict[str, Tally] = {}
        self.traces = _trace_seeds()
        self.binlogs = _binlog_seeds()
        self.binaries = _binary_seeds()
        self.runner = Runner()
        os.makedirs(os.path.join(out, "findings"), exist_ok=True)

    def record(self, target: str, argv: list[str], o: Outcome, inputs: dict[str, bytes]) -> None:
        t = self.tallies.setdefault(target, Tally())
        t.runs += 1
        t.exit_codes[str(o.rc)] = t.exit_codes.get(str(o.rc), 0) + 1
        t.slowest = max(t.slowest, o.seconds)
        if o.problem:
            n = len(t.findings) + 1
            d = os.path.join(self.out, "findings", f"{target}-{n}")
            os.makedirs(d, exist_ok=True)
            for name, data in inputs.items():
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data)
            with open(os.path.join(d, "what.txt"), "w", encoding="utf-8",
                      errors="backslashreplace") as f:
                f.write("commitsched " + " ".join(argv) + "\n\n" + o.problem + "\n")
            t.findings.append({"argv": argv, "problem": o.problem.splitlines()[0][:200],
                               "dir": os.path.relpath(d, self.out)})

    def run(self, target: str, argv_of, inputs: dict[str, bytes], outputs: list[str] = (),
            allowed=(0, 2)) -> None:
        """Write `inputs` into a fresh folder, run `argv_of(folder)`, check outputs."""
        self.tallies.setdefault(target, Tally()).inputs += 1
        with tempfile.TemporaryDirectory(prefix="fuzz-") as wd:
            for name, data in inputs.items():
                with open(os.path.join(wd, name), "wb") as f:
                    f.write(data)
            argv = argv_of(wd)
            o = self.runner(argv, self.per_run, allowed)
            if o.problem is None:
                why = check_outputs(wd, [os.path.join(wd, p) for p in outputs], o.rc)
                if why is None and o.rc != 0:
                    made = [p for p in outputs if os.path.isfile(os.path.join(wd, p))]
                    if made:
                        why = f"exit {o.rc} but output {made[0]} was written"
                if why:
                    o.problem = why
            self.record(target, [a.replace(wd, "DIR") for a in argv], o, inputs)

    # -------------------------------------------------------------- targets
    def target_trace(self, data) -> None:
        name, blob = data.draw(trace_inputs(self.traces))
        cmd = data.draw(st.sampled_from(["validate", "score", "schedule", "check", "annotate",
                                         "bound", "report", "blame", "lag"]))
        at = data.draw(st.sampled_from(["0", "1s", "00:00", "2026-11-27T02:10+01:00"]))
        sched = data.draw(st.sampled_from(SCHEDULERS))
        argv_of, outputs, allowed = {
            "validate": (lambda d: ["validate", f"{d}/{name}"], [], (0, 2)),
            "score": (lambda d: ["score", f"{d}/{name}", "--workers", "1,2", "--quiet",
                                 "--z3-timeout", "1", "-o", f"{d}/score.txt"], ["score.txt"],
                      (0, 2)),
            "schedule": (lambda d: ["schedule", f"{d}/{name}", "--scheduler", sched,
                                    "--workers", "2"], [], (0, 2)),
            "check": (lambda d: ["check", f"{d}/{name}", "--scheduler", sched, "--workers",
                                 "1,3"], [], (0, 1, 2)),
            "annotate": (lambda d: ["annotate", f"{d}/{name}", "--tracker",
                                    sched.split("+")[0], "-o", f"{d}/out.jsonl.gz"],
                         ["out.jsonl.gz"], (0, 2)),
            "bound": (lambda d: ["bound", f"{d}/{name}", "--workers", "2", "--time-limit", "1",
                                 "--quiet"], [], (0, 2)),
            "report": (lambda d: ["report", f"{d}/{name}", "-o", f"{d}/rep", "--workers", "1,2",
                                  "--quiet", "--scheduler", sched], ["rep"], (0, 2)),
            "blame": (lambda d: ["blame", f"{d}/{name}", "--scheduler", sched, "--workers", "2",
                                 "--split-top", "1,2", "-o", f"{d}/blame.txt"], ["blame.txt"],
                      (0, 2)),
            "lag": (lambda d: ["lag", f"{d}/{name}", "--scheduler", sched, "--workers", "1,2",
                               "--backlog", "2s", "--backlog-at", at, "--tz", "Asia/Kolkata",
                               "--quiet", "--json", "-o", f"{d}/lag.json"], ["lag.json"],
                    (0, 2)),
        }[cmd]
        self.run(f"trace:{cmd}", argv_of, {name: blob}, outputs, allowed)

    def target_import(self, data) -> None:
        blob, schema, opts = data.draw(binlog_inputs(self.binlogs))
        inputs = {"binlog.txt": blob}
        if schema is not None:
            inputs["schema.sql"] = schema

        def argv_of(d):
            a = ["import", f"{d}/binlog.txt", "-o", f"{d}/out.jsonl", "--quiet", *opts]
            return a + (["--schema", f"{d}/schema.sql"] if schema is not None else [])
        self.run("import:text", argv_of, inputs, ["out.jsonl"])

    def target_binary(self, data) -> None:
        name, blob = data.draw(st.sampled_from(self.binaries))
        blob = _flip_bytes(data.draw, blob, start=4)
        if data.draw(st.booleans()):        # damage the checksums do not catch (half the time)
            blob = _fix_checksums(blob)
        if data.draw(st.booleans()):
            blob = blob[:data.draw(st.integers(4, len(blob)))]
        self.run("import:binary", lambda d: ["import", f"{d}/{name}", "-o", f"{d}/out.jsonl",
                                             "--quiet", "--skip-bad"], {name: blob}, ["out.jsonl"])

    def target_args(self, data) -> None:
        """Command lines drawn from the CLI's own vocabulary, with hostile option values."""
        valid = os.path.join(ROOT, "traces", "examples", "semantics_1_4_logical_clock.jsonl")
        cmd = data.draw(st.sampled_from(["validate", "score", "schedule", "check", "annotate",
                                         "generate", "bound", "report", "import", "soundness",
                                         "blame", "lag", "nonsense", ""]))
        words = ["--workers", "--scheduler", "--profile", "--cores", "--preserve-commit-order",
                 "--checkpoint-group", "--max-queued", "--history-size", "--commit-wait-count",
                 "--commit-wait-usec", "--inject-bug", "--transactions", "--clients", "--skew",
                 "--seed", "--tables", "--z3-timeout", "--z3-bound", "--time-limit", "--window",
                 "--json", "--quiet", "-o", "--tracker", "--regime", "--workload", "--help",
                 "--split-top", "--chunks", "--top", "--bulk-every", "--bulk-rows",
                 "--backlog", "--backlog-at", "--tz", "--delay", "--system", "--members"]
        values = st.one_of(st.sampled_from(["0", "-1", "1", "2", "1,2", "0,1", "nan", "inf",
                                            "1e400", "9" * 30, "", ",", "on", "maybe",
                                            "durable", "commit_order+mysql", "x+y", "\ud800",
                                            "lwm_not_prefix", "0.5", "1.0", "90s", "3h",
                                            "02:10", "25:99", "2026-03-29T02:30",
                                            "Europe/Paris", "Mars/Base", "../../etc/passwd",
                                            "galera", "group_replication"]),
                           st.text(max_size=6))
        argv = [cmd] if cmd else []
        if data.draw(st.booleans()):
            argv.append(valid)
        for _ in range(data.draw(st.integers(0, 4))):
            argv.append(data.draw(st.sampled_from(words)))
            if data.draw(st.integers(0, 3)):
                argv.append(data.draw(values))
        if cmd == "generate" and "--transactions" in argv:
            argv += ["--transactions", "50"]            # keep a drawn huge N from taking minutes
        if cmd == "soundness":
            argv += ["--transactions", "2", "--history-size", "1", "--timeout", "5"]

        def argv_of(d):
            out = list(argv)
            if "-o" in out and out.index("-o") + 1 < len(out):
                out[out.index("-o") + 1] = f"{d}/out"      # outputs only in the run's folder
            return out
        self.run("args", argv_of, {}, ["out"], (0, 1, 2))

    # -------------------------------------------------------------- child processes
    def signals(self, budget: float, rng: random.Random) -> None:
        """SIGINT/SIGTERM mid-write: the output complete or absent, no temporary file left."""
        with tempfile.TemporaryDirectory(prefix="fuzz-binlogs-") as folder:
            self._signals(budget, rng, _numbered_copies(
                os.path.join(ROOT, "tests", "fixtures", "binlog", "mariadb_rw_t64_wait12.txt"),
                40, 15, folder))

    def _signals(self, budget: float, rng: random.Random, binlogs: list[str]) -> None:
        cli = [sys.executable, "-m", "commitsched"]
        big = os.path.join(ROOT, "traces", "recorded", "oltp_read_write_t64.jsonl.gz")
        jobs = [("generate", lambda d: ["generate", "--transactions", "300000", "-o",
                                        f"{d}/out.jsonl.gz", "--quiet"], "out.jsonl.gz"),
                ("annotate", lambda d: ["annotate", big, "--tracker", "writeset", "-o",
                                        f"{d}/out.jsonl"], "out.jsonl"),
                ("import", lambda d: ["import", *binlogs, "-o", f"{d}/out.jsonl",
                                      "--quiet"], "out.jsonl"),
                ("report", lambda d: ["report", big, "-o", f"{d}/rep", "--workers", "1,2",
                                      "--quiet"], "rep")]
        end = time.monotonic() + budget
        i = 0
        while time.monotonic() < end:
            name, argv_of, output = jobs[i % len(jobs)]
            sig = (signal.SIGINT, signal.SIGTERM)[(i // len(jobs)) % 2]
            i += 1
            target = f"signal:{name}"
            self.tallies.setdefault(target, Tally()).inputs += 1
            with tempfile.TemporaryDirectory(prefix="fuzz-sig-") as d:
                argv = argv_of(d)
                started = time.perf_counter()
                p = subprocess.Popen(cli + argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_child_env(),
                                     preexec_fn=_sigint_default)
                time.sleep(rng.uniform(0.3, 4.0))
                p.send_signal(sig)
                try:
                    _, err = p.communicate(timeout=self.per_run)
                    rc = p.returncode
                    problem = None
                    if rc not in (0, 130, 143, -sig, 128 + sig):
                        problem = f"exit {rc} after {sig.name}"
                    elif "Traceback" in err:
                        problem = "traceback after " + sig.name + ": " + err[-800:]
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.communicate()
                    rc, err, problem = None, "", f"still running {self.per_run:g} s after {sig.name}"
                if problem is None:
                    problem = check_outputs(d, [os.path.join(d, output)], rc or 0)
                self.record(target, [a.replace(d, "DIR") for a in argv] + [f"({sig.name})"],
                            Outcome(rc, time.perf_counter() - started, err, problem), {})

    def unbounded_inputs(self) -> None:
        """/dev/zero never ends and has no newline: a bounded read must refuse it. The child
        gets at most 4 GiB of address space (an unbounded read would take the machine's
        memory); running out of it is a finding too."""
        cli = [sys.executable, "-m", "commitsched"]
        for argv in (["validate", "/dev/zero"], ["import", "/dev/zero", "-o", "OUT"]):
            target = f"unbounded:{argv[0]}"
            self.tallies.setdefault(target, Tally()).inputs += 1
            with tempfile.TemporaryDirectory(prefix="fuzz-zero-") as d:
                a = [x.replace("OUT", f"{d}/out.jsonl") for x in argv]
                started = time.perf_counter()
                try:
                    r = subprocess.run(cli + a, capture_output=True, text=True, cwd=ROOT,
                                       timeout=self.per_run, errors="replace", env=_child_env(),
                                       preexec_fn=_limit_memory)
                    rc, err = r.returncode, r.stderr
                    problem = None if rc == 2 and err.startswith("commitsched: error:") and \
                        "Traceback" not in err and "MemoryError" not in err else \
                        f"unbounded read: exit {rc}: {err[-300:]}"
                except subprocess.TimeoutExpired:
                    rc, err, problem = None, "", f"hang: still reading after {self.per_run:g} s"
                self.record(target, argv, Outcome(rc, time.perf_counter() - started, err,
                                                  problem), {})

    # -------------------------------------------------------------- driver
    def warm(self) -> None:
        """Each command once in this process, on bundled input it reads: the modules its runs
        import lazily (the core, z3, the report's) are then loaded when the worker forks, and
        when a fresh one replaces a worker that died (a run in a worker forked cold took 0.25 s
        where a warm one took 0.06). Outcomes are not findings."""
        trace = os.path.join(ROOT, "traces", "examples", "oltp_rw_8clients.jsonl.gz")
        text = os.path.join(ROOT, "tests", "fixtures", "binlog", "mysql80_binlog.000001.txt")
        binary = os.path.join(ROOT, "tests", "fixtures", "binlog", "mariadb_tiny.binlog.000002")
        with tempfile.TemporaryDirectory(prefix="fuzz-warm-") as d:
            for argv in (["validate", trace],
                         ["score", trace, "--workers", "1,2", "--quiet", "-o", f"{d}/s.txt"],
                         ["check", trace, "--scheduler", "writeset+mysql", "--workers", "2"],
                         ["annotate", trace, "--tracker", "writeset", "-o", f"{d}/a.jsonl"],
                         ["bound", trace, "--workers", "2", "--time-limit", "1", "--quiet"],
                         ["report", trace, "-o", f"{d}/rep", "--workers", "1,2", "--quiet"],
                         ["blame", trace, "--scheduler", "writeset+mysql", "--workers", "2",
                          "-o", f"{d}/b.txt"],
                         ["lag", trace, "--scheduler", "writeset+mysql", "--workers", "2",
                          "--backlog", "1s", "--quiet", "--json", "-o", f"{d}/l.json"],
                         ["import", text, "-o", f"{d}/t.jsonl", "--quiet"],
                         ["import", binary, "-o", f"{d}/b.jsonl", "--quiet", "--skip-bad"]):
                run_cli(argv, self.per_run)

    def campaign(self, seconds: float) -> None:
        """Share `seconds` between the targets: hypothesis batches until each share is spent."""
        shares = [("trace", self.target_trace, 0.35), ("import", self.target_import, 0.25),
                  ("binary", self.target_binary, 0.05), ("args", self.target_args, 0.15)]
        rng = random.Random(self.seed)
        start = time.monotonic()
        self.warm()
        self.unbounded_inputs()
        for name, fn, share in shares:
            if name == "binary" and not (self.binaries and (shutil.which("mariadb-binlog") or
                                                            shutil.which("mysqlbinlog"))):
                continue
            end = time.monotonic() + seconds * share
            batch = 0
            while time.monotonic() < end:
                batch += 1
                self._batch(fn, self.seed * 1000 + batch)
        self.runner.close()
        left = seconds - (time.monotonic() - start)
        self.signals(max(left, min(30.0, seconds * 0.2)), rng)

    def _batch(self, fn, seed: int) -> None:
        # Small batches, each a fresh seeded hypothesis run, so the campaign stops close to
        # its time; hypothesis must not see the clock (its draws have to be replayable).
        @hseed(seed)
        @settings(max_examples=8, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(st.data())
        def one(data):
            fn(data)
        one()

    def summary(self, seconds: float) -> dict:
        total_inputs = sum(t.inputs for t in self.tallies.values())
        kinds = {"traceback": 0, "hang": 0, "half-written": 0, "other": 0}
        for t in self.tallies.values():
            for f in t.findings:
                p = f["problem"]
                k = ("hang" if "hang" in p or "still running" in p else
                     "half-written" if "half-written" in p or "temporary file" in p
                     or "was written" in p else
                     "traceback" if "traceback" in p or "internal error" in p else "other")
                kinds[k] += 1
        places = sorted({re.sub(r"^traceback at (\S+): .*", r"\1", f["problem"])[:80]
                         for t in self.tallies.values() for f in t.findings})
        return {"seconds": round(seconds, 1), "seed": self.seed, "inputs": total_inputs,
                "findings": kinds, "distinct_places": places,
                "targets": {k: {"inputs": t.inputs, "runs": t.runs, "exit_codes": t.exit_codes,
                                "slowest_run_s": round(t.slowest, 2), "findings": t.findings}
                            for k, t in sorted(self.tallies.items())}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m commitsched.checks.fuzz",
                                 description="A bounded fuzzing campaign over the trace loader, "
                                             "the binlog importers, report and the command line "
                                             "(docs/robustness.md).")
    ap.add_argument("--seconds", type=float, default=150.0,
                    help="length of the campaign (default 150; the signal runs come last)")
    ap.add_argument("--per-run", type=float, default=20.0,
                    help="seconds one command may take before it counts as a hang (default 20)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", "1")),
                    help="campaign seed (default 1, or $FUZZ_SEED): the same seed draws the "
                         "same inputs")
    ap.add_argument("--out", default="build/fuzz", help="where findings and summary.json go")
    args = ap.parse_args(argv)
    # In-process runs: let the CLI's last net re-raise, so a finding names its place.
    os.environ["COMMITSCHED_DEBUG"] = "1"
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    c = Campaign(args.out, args.per_run, args.seed)
    started = time.monotonic()
    c.campaign(args.seconds)
    s = c.summary(time.monotonic() - started)
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(s, f, indent=1)
    print(f"fuzz: {s['inputs']} inputs in {s['seconds']} s (seed {s['seed']}); findings: " +
          ", ".join(f"{v} {k}" for k, v in s["findings"].items()))
    for name, t in s["targets"].items():
        codes = " ".join(f"{k}:{v}" for k, v in sorted(t["exit_codes"].items()))
        print(f"  {name:<20} {t['inputs']:>6} inputs  exit {codes:<22} slowest "
              f"{t['slowest_run_s']:>6.2f} s  findings {len(t['findings'])}")
        for f_ in t["findings"][:5]:
            print(f"      {f_['dir']}: {f_['problem'][:150]}")
    if s["distinct_places"]:
        print(f"  {len(s['distinct_places'])} distinct places: " + "; ".join(s["distinct_places"]))
    print(f"details: {os.path.join(args.out, 'summary.json')}")
    return 1 if any(s["findings"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
