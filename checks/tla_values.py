"""Parse TLA+ values as TLC prints them into plain JSON data, and print them back.

TLC prints values in a small fixed grammar (tlc2.value.impl.*Value.toString):
integers, strings, TRUE/FALSE, model values (bare identifiers), sequences and
tuples `<<a, b>>`, sets `{a, b}`, records `[f |-> v, ...]`, functions whose
domain is neither 1..n nor a set of strings `(k1 :> v1 @@ k2 :> v2)`, and
intervals `1..3`. Long values wrap across lines; whitespace is insignificant.

The result is JSON-ready so a counterexample can be saved and reloaded as is:

    integer, string, boolean   -> int, str, bool
    sequence / tuple           -> list
    record                     -> dict (field -> value)
    set                        -> {"$set": [elements in TLC's order]}
    function (k :> v @@ ...)   -> {"$fn": [[k, v], ...]}
    model value                -> {"$mv": "name"}
    anything else (Nat, Seq(S), lazy `[x \\in S |-> <expression ...>]`)
                               -> {"$tla": "the text as printed"}

The `$` keys cannot clash with record fields: TLA+ identifiers have no `$`.
"""
from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_value", "format_value", "TLAValueError"]

# Intervals wider than this stay unexpanded (as {"$tla": "a..b"}).
_MAX_INTERVAL = 10_000


class TLAValueError(ValueError):
    """The text is not a value in the grammar TLC prints."""


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<int>-?\d+)
  | (?P<punct><<|>>|\|->|:>|@@|\.\.|[{}\[\](),])
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise TLAValueError(f"unknown string escape \\{nxt}")
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise TLAValueError(f"unexpected character {text[pos]!r} at offset {pos}")
        kind = m.lastgroup
        if kind != "ws":
            tokens.append((kind, m.group()))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]):
        self.toks = tokens
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise TLAValueError("value ends too early")
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        kind, got = self.take()
        if got != text:
            raise TLAValueError(f"expected {text!r}, got {got!r}")

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] == text

    def value(self) -> Any:
        first = self.primary()
        if self.at(".."):
            self.take()
            last = self.primary()
            if not (type(first) is int and type(last) is int):
                raise TLAValueError("interval bounds must be integers")
            if last - first > _MAX_INTERVAL:
                return {"$tla": f"{first}..{last}"}
            return {"$set": list(range(first, last + 1))}
        return first

    def items(self, close: str) -> list[Any]:
        out: list[Any] = []
        if self.at(close):
            self.take()
            return out
        while True:
            out.append(self.value())
            if self.at(","):
                self.take()
                continue
            self.expect(close)
            return out

    def primary(self) -> Any:
        kind, text = self.take()
        if kind == "int":
            return int(text)
        if kind == "string":
            return _unescape(text[1:-1])
        if kind == "ident":
            if text == "TRUE":
                return True
            if text == "FALSE":
                return False
            return {"$mv": text}
        if text == "<<":
            return self.items(">>")
        if text == "{":
            return {"$set": self.items("}")}
        if text == "[":
            return self.record()
        if text == "(":
            return self.function()
        raise TLAValueError(f"unexpected {text!r}")

    def record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {}
        while True:
            kind, field = self.take()
            if kind != "ident":
                raise TLAValueError(f"expected a record field, got {field!r}")
            self.expect("|->")
            rec[field] = self.value()
            if self.at(","):
                self.take()
                continue
            self.expect("]")
            return rec

    def function(self) -> Any:
        key = self.value()
        if not self.at(":>"):
            # A parenthesised value, e.g. a lone (k :> v) is handled below.
            self.expect(")")
            return key
        pairs = []
        while True:
            self.expect(":>")
            pairs.append([key, self.value()])
            if self.at("@@"):
                self.take()
                key = self.value()
                continue
            self.expect(")")
            return {"$fn": pairs}


def parse_value(text: str, *, strict: bool = False) -> Any:
    """Parse one value as TLC prints it.

    Text outside the grammar (e.g. `Nat`, `Seq({1})`, a lazy function printed as
    `[n \\in Nat |-> <expression ...>]`) comes back as {"$tla": text} unless
    `strict`, in which case TLAValueError is raised.
    """
    try:
        parser = _Parser(_tokenize(text))
        value = parser.value()
        if parser.peek() is not None:
            raise TLAValueError(f"trailing text after value: {parser.peek()[1]!r}")
        return value
    except TLAValueError:
        if strict:
            raise
        return {"$tla": " ".join(text.split())}


def _format_string(s: str) -> str:
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\f":
            out.append("\\f")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def format_value(v: Any) -> str:
    """Print a parsed value back in TLC's syntax (one line)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _format_string(v)
    if isinstance(v, list):
        return "<<" + ", ".join(format_value(x) for x in v) + ">>"
    if isinstance(v, dict):
        if set(v) == {"$set"}:
            return "{" + ", ".join(format_value(x) for x in v["$set"]) + "}"
        if set(v) == {"$fn"}:
            return "(" + " @@ ".join(
                f"{format_value(k)} :> {format_value(x)}" for k, x in v["$fn"]) + ")"
        if set(v) == {"$mv"}:
            return v["$mv"]
        if set(v) == {"$tla"}:
            return v["$tla"]
        if not v:
            return "<<>>"  # the empty record is the empty function
        return "[" + ", ".join(f"{k} |-> {format_value(x)}" for k, x in v.items()) + "]"
    raise TypeError(f"not a parsed TLA+ value: {v!r}")


def value_key(v: Any) -> str:
    """A canonical string for comparing values (e.g. to find changed variables)."""
    return json.dumps(v, sort_keys=False, ensure_ascii=False)


def show_value(v: Any) -> str:
    """A value for a message: TLA+ syntax when it has one, else Python's repr."""
    try:
        return format_value(v)
    except TypeError:
        return repr(v)
