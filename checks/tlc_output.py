"""Parse the message stream TLC 2.18 writes with `-tool` into a structured result.

With `-tool`, TLC wraps each message as

    @!@!@STARTMSG <code>:<severity> @!@!@
    <text>
    @!@!@ENDMSG <code> @!@!@

(messages can nest: an exception message may carry a config-file message).
Text outside any message is SANY's parser output, where parse and semantic
errors are described. The codes below were read off real runs of TLC 2.18 on
the fixtures in tests/fixtures/tlc/ (see tests/test_tlc_runner.py); they are
tlc2.output.EC constants.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .tla_values import parse_value

# --- message codes (tlc2.output.EC), as observed ---------------------------
GENERAL = 1000                      # "TLC threw an unexpected exception" (eval errors, bad cfg path)
TLC_ASSUMPTION_FALSE = 2104
TLC_STATE_PRINT2 = 2217             # one state of a trace: "N: <Action ...>\n/\\ v = e ..."
TLC_STATE_PRINT3 = 2218             # "N: Stuttering"
TLC_BACK_TO_STATE = 2122            # "N: Back to state: <Action ...>" (lasso loop-back)
TLC_INVARIANT_VIOLATED_INITIAL = 2107
TLC_INVARIANT_VIOLATED_BEHAVIOR = 2110
TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR = 2112
TLC_DEADLOCK_REACHED = 2114
TLC_TEMPORAL_PROPERTY_VIOLATED = 2116
TLC_ASSERTION_FAILED = 2132         # TLC!Assert evaluated to FALSE
TLC_NESTED_EXPRESSION = 2103        # where an evaluation error happened
TLC_SUCCESS = 2193                  # "Model checking completed. No error has been found."
TLC_STATS = 2199                    # "G states generated, D distinct states found, Q states left on queue."
TLC_SEARCH_DEPTH = 2194             # "The depth of the complete state graph search is N."
TLC_PROGRESS_STATS = 2200           # "Progress(D) at ...: G states generated ..., D distinct states found ..."
TLC_PROGRESS_SIMU = 2209            # simulation progress (distinct = -1)
TLC_STATS_SIMU = 2210               # "The number of states generated: G"
TLC_FINISHED = 2186
TLC_VERSION = 2262
SANY_PARSE_FAILED = 3002            # "Parsing or semantic analysis failed."
CFG_ERROR_READING_FILE = 5001

# Severity 1 messages that are not violations are errors; these are informative.
_VIOLATIONS = {
    TLC_INVARIANT_VIOLATED_INITIAL, TLC_INVARIANT_VIOLATED_BEHAVIOR,
    TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR, TLC_DEADLOCK_REACHED,
    TLC_TEMPORAL_PROPERTY_VIOLATED,
}
_TRACE_HEADERS = {2121, 2264}       # "The behavior up to this point is:" / "...constitutes a counter-example:"

_ACTION = re.compile(
    r"^<(?P<name>.+?) line (?P<l1>\d+), col (?P<c1>\d+) to line (?P<l2>\d+), "
    r"col (?P<c2>\d+) of module (?P<module>\S+)>$")
_STATE_HEAD = re.compile(r"^(?P<num>\d+): (?P<label>.*)$")


@dataclass
class Message:
    code: int
    severity: int
    text: str


@dataclass
class TLCResult:
    """What one TLC run established. `outcome` is one of
    pass | invariant | action_property | temporal | deadlock | error | timeout."""
    outcome: str
    violated: str | None = None          # invariant / property name ("Deadlock" for deadlock)
    error_kind: str | None = None         # parse | semantic | config | runtime | assert | tlc
    message: str | None = None            # TLC's own words for a violation or error
    distinct_states: int | None = None
    states_generated: int | None = None
    depth: int | None = None
    left_on_queue: int | None = None
    trace: list[dict[str, Any]] = field(default_factory=list)
    loop_back: dict[str, Any] | None = None  # liveness lasso: the last step returns to this state
    stuttering: bool = False                  # liveness: the behaviour ends stuttering forever
    tlc_version: str | None = None

    def got(self) -> str:
        """One short phrase for the results table."""
        if self.outcome == "pass":
            return "pass"
        if self.outcome == "deadlock":
            return "deadlock"
        if self.outcome in ("invariant", "action_property", "temporal"):
            return f"violates {self.violated or '(unnamed temporal property)'}"
        if self.outcome == "error":
            return f"{self.error_kind} error"
        return self.outcome


_MARKER = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@\n?|@!@!@ENDMSG (\d+) @!@!@\n?")


def split_messages(output: str) -> tuple[list[Message], str]:
    """Split `-tool` output into messages (in start order) and the loose text
    outside any message (SANY's report). Markers are matched anywhere, not only
    at line starts: a nested message can start in the middle of a line."""
    messages: list[tuple[int, Message]] = []
    stack: list[tuple[int, int, int, list[str]]] = []  # (order, code, severity, text parts)
    loose: list[str] = []
    order, pos = 0, 0

    def emit(text: str) -> None:
        (stack[-1][3] if stack else loose).append(text)

    for m in _MARKER.finditer(output):
        emit(output[pos:m.start()])
        pos = m.end()
        if m.group(1) is not None:
            stack.append((order, int(m.group(1)), int(m.group(2)), []))
            order += 1
        elif stack:
            o, code, sev, parts = stack.pop()
            text = "".join(parts).rstrip("\n")
            messages.append((o, Message(code, sev, text)))
            if stack:  # a nested message is also part of its parent's text
                stack[-1][3].append(text)
    emit(output[pos:])
    # A run killed mid-message (timeout) leaves messages open: keep them.
    while stack:
        o, code, sev, parts = stack.pop()
        messages.append((o, Message(code, sev, "".join(parts).rstrip("\n"))))
    messages.sort(key=lambda p: p[0])
    return [m for _, m in messages], "".join(loose)


def parse_action(label: str) -> tuple[str, dict[str, Any] | None]:
    """`<Incr line 22, col 5 to line 28, col 50 of module ToyValues>` ->
    ("Incr", {module, line, col, end_line, end_col}); `<Initial predicate>` -> ("Initial predicate", None)."""
    m = _ACTION.match(label.strip())
    if m:
        return m.group("name"), {
            "module": m.group("module"), "line": int(m.group("l1")), "col": int(m.group("c1")),
            "end_line": int(m.group("l2")), "end_col": int(m.group("c2"))}
    label = label.strip()
    if label.startswith("<") and label.endswith(">"):
        label = label[1:-1]
    return label, None


def parse_state_vars(lines: list[str]) -> dict[str, Any]:
    """Parse a state as TLC prints it: `/\\ v = e` conjuncts (values may wrap onto
    indented lines), or a single `v = e` when the spec has one variable."""
    chunks: list[str] = []
    for line in lines:
        if line.startswith("/\\ "):
            chunks.append(line[3:])
        elif chunks and line.strip():
            chunks[-1] += "\n" + line
        elif line.strip():
            chunks.append(line)
    state: dict[str, Any] = {}
    for chunk in chunks:
        name, sep, value = chunk.partition(" = ")
        if not sep:
            raise ValueError(f"cannot read state line {chunk!r}")
        state[name.strip()] = parse_value(value)
    return state


def parse_trace_state(text: str) -> dict[str, Any]:
    """One TLC_STATE_PRINT2 message -> {index, action, location, vars}."""
    lines = text.splitlines()
    head = _STATE_HEAD.match(lines[0]) if lines else None
    if not head:
        raise ValueError(f"unexpected state header {lines[:1]!r}")
    action, location = parse_action(head.group("label"))
    return {"index": int(head.group("num")), "action": action, "location": location,
            "vars": parse_state_vars(lines[1:])}


_STATS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue")
_PROGRESS = re.compile(r"Progress\((-?\d+)\).*?: ([\d,]+) states generated.*?, (-?[\d,]+) distinct states found"
                       r"(?:.*?, (-?[\d,]+) states left on queue)?", re.DOTALL)
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_SIM_STATS = re.compile(r"number of states generated: ([\d,]+)")


def _int(s: str) -> int:
    return int(s.replace(",", ""))


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _sany_error(loose: str) -> tuple[str, str]:
    """Classify a SANY failure from its loose text and pick a one-line reason."""
    lines = [l.strip() for l in loose.splitlines() if l.strip()]
    if "***Parse Error***" in loose:
        i = lines.index("***Parse Error***")
        return "parse", lines[i + 1] if i + 1 < len(lines) else "parse error"
    if "Semantic errors:" in loose:
        i = lines.index("Semantic errors:")
        rest = [l for l in lines[i + 1:] if not l.startswith("*** Errors")]
        # SANY gives the location then the reason; report both.
        return "semantic", " ".join(rest[:2]) if rest else "semantic error"
    for l in lines:
        if l.startswith("Cannot find source file") or l.startswith("File does not exist"):
            return "parse", l
    return "parse", "parsing or semantic analysis failed"


def interpret(output: str, exit_code: int | None = None) -> TLCResult:
    """Turn the full `-tool` output of one finished run into a TLCResult.

    `exit_code` is TLC's process status. Simulation prints no success message
    (2193); a simulation that finished with status 0 and no violation passed."""
    messages, loose = split_messages(output)
    res = TLCResult(outcome="error", error_kind="tlc", message="TLC ended without a verdict")
    verdict: Message | None = None
    error: Message | None = None
    nested: list[str] = []
    for msg in messages:
        code = msg.code
        if code == TLC_VERSION:
            res.tlc_version = _first_line(msg.text)
        elif code in _VIOLATIONS and verdict is None:
            verdict = msg
        elif code == TLC_SUCCESS and verdict is None:
            verdict = msg
        elif code == TLC_STATE_PRINT2:
            res.trace.append(parse_trace_state(msg.text))
        elif code == TLC_STATE_PRINT3:
            res.stuttering = True
        elif code == TLC_BACK_TO_STATE:
            head = _STATE_HEAD.match(_first_line(msg.text))
            if head:
                label = head.group("label")
                label = label.split("Back to state:", 1)[-1]
                action, location = parse_action(label)
                res.loop_back = {"to_state": int(head.group("num")), "action": action, "location": location}
        elif code == TLC_STATS:
            m = _STATS.search(msg.text)
            if m:
                res.states_generated, res.distinct_states, res.left_on_queue = map(_int, m.groups())
        elif code == TLC_SEARCH_DEPTH:
            m = _DEPTH.search(msg.text)
            if m:
                res.depth = int(m.group(1))
        elif code in (TLC_PROGRESS_STATS, TLC_PROGRESS_SIMU):
            _progress(res, msg.text)
        elif code == TLC_STATS_SIMU:
            m = _SIM_STATS.search(msg.text)
            if m:
                res.states_generated = _int(m.group(1))
        elif code == TLC_NESTED_EXPRESSION:
            nested.append(msg.text)
        elif msg.severity in (1, 2) and code not in _TRACE_HEADERS and error is None:
            error = msg  # MP.ERROR (1) or MP.TLCBUG (2); warnings are 3, states 4

    if error is not None and (verdict is None or verdict.code == TLC_SUCCESS):
        _set_error(res, error, loose, nested)
    elif verdict is None:
        finished = any(m.code == TLC_FINISHED for m in messages)
        if finished and exit_code == 0:
            res.outcome, res.error_kind, res.message = "pass", None, None
        else:
            # e.g. the JVM died (out of memory): say how, with TLC's last words.
            last = [l.strip() for l in output.splitlines() if l.strip() and "@!@!@" not in l]
            status = "killed" if exit_code is None else f"exit status {exit_code}"
            res.message = f"TLC ended without a verdict ({status})" + (f": {last[-1]}" if last else "")
    elif verdict.code == TLC_SUCCESS:
        res.outcome, res.error_kind, res.message = "pass", None, None
    else:
        _set_violation(res, verdict)
    if res.outcome == "pass" and exit_code not in (None, 0):
        res.outcome, res.error_kind = "error", "tlc"
        res.message = f"TLC reported success but exited with status {exit_code}"
    return res


def _progress(res: TLCResult, text: str) -> None:
    """Progress lines are the only statistics of a run cut short (timeout) and
    the only depth figure after a liveness check; use them as a fallback."""
    m = _PROGRESS.search(text)
    if not m:
        return
    depth, generated, distinct, queue = m.groups()
    if res.depth is None or _int(depth) >= 0:
        res.depth = _int(depth) if _int(depth) >= 0 else None
    res.states_generated = _int(generated)
    res.distinct_states = _int(distinct) if _int(distinct) >= 0 else None
    if queue is not None and _int(queue) >= 0:
        res.left_on_queue = _int(queue)


def _set_violation(res: TLCResult, msg: Message) -> None:
    first = _first_line(msg.text)
    res.error_kind, res.message = None, first
    if msg.code == TLC_DEADLOCK_REACHED:
        res.outcome, res.violated = "deadlock", "Deadlock"
    elif msg.code == TLC_TEMPORAL_PROPERTY_VIOLATED:
        res.outcome = "temporal"  # TLC 2.18 does not say which property; the runner narrows it
    elif msg.code == TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR:
        res.outcome = "action_property"
        res.violated = re.sub(r"^Action property (.*) is violated\.?$", r"\1", first)
    else:
        res.outcome = "invariant"
        res.violated = re.sub(r"^Invariant (.*?) is violated.*$", r"\1", first)
        if msg.code == TLC_INVARIANT_VIOLATED_INITIAL and not res.trace:
            # The initial state is printed inside the message, not as a trace.
            body = msg.text.splitlines()[1:]
            res.trace.append({"index": 1, "action": "Initial predicate", "location": None,
                              "vars": parse_state_vars(body)})


def _set_error(res: TLCResult, msg: Message, loose: str, nested: list[str]) -> None:
    res.outcome = "error"
    text = " ".join(msg.text.split())
    if msg.code == SANY_PARSE_FAILED:
        res.error_kind, res.message = _sany_error(loose)
    elif msg.code == TLC_ASSERTION_FAILED:
        res.error_kind, res.message = "assert", text
    elif msg.code == GENERAL and "ConfigFileException" in msg.text:
        res.error_kind = "config"
        res.message = " ".join(msg.text.split("ConfigFileException", 1)[1].lstrip(": \n").split())
    elif msg.code == GENERAL:
        res.error_kind = "runtime"
        body = msg.text.split("The exception was a", 1)[-1]
        res.message = " ".join(body.split())
    elif 2200 <= msg.code < 2300 and ("configuration file" in msg.text or "config" in msg.text):
        res.error_kind, res.message = "config", text
    else:
        res.error_kind, res.message = ("runtime" if nested else "tlc"), text
    if nested:
        where = [l.strip() for l in nested[0].splitlines() if re.match(r"\s*\d+\. Line", l)]
        if where:
            res.message += f" [at {where[-1].split('. ', 1)[1]}]"
