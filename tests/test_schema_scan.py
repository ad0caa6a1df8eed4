"""The schema reader's two scanners (model/importers/schema.py) jump between the characters they
act on with a regex; they must agree with the plain character loop they replaced, kept here as
the reference, on any text: quotes of three kinds, backslash escapes (not inside backticks),
nested parentheses, commas."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched.importers import schema


def reference_split_top(body: str) -> list[str]:
    parts, depth, cur, quote = [], 0, [], None
    i = 0
    while i < len(body):
        ch = body[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and quote != "`" and i + 1 < len(body):
                cur.append(body[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
            cur.append(ch)
        elif ch == "(":
            depth += 1
            cur.append(ch)
        elif ch == ")":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def reference_matching_paren(text: str, start: int):
    depth, quote, i = 0, None, start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


TEXT = st.text(alphabet="ab ,()'\"`\\x", max_size=24)


@settings(max_examples=2000, deadline=None)
@given(TEXT)
def test_split_top_agrees_with_the_character_loop(body):
    assert schema._split_top(body) == reference_split_top(body)


@settings(max_examples=2000, deadline=None)
@given(TEXT, st.integers(min_value=0, max_value=24))
def test_matching_paren_agrees_with_the_character_loop(text, start):
    expected = reference_matching_paren(text, start)
    try:
        got = schema._matching_paren(text, start)
    except schema.SchemaError:
        got = None
    assert got == expected


def test_split_top_by_hand():
    assert schema._split_top("a INT, b VARCHAR(10), KEY k (a, b), c ENUM('x,y','z\\',')") == [
        "a INT", "b VARCHAR(10)", "KEY k (a, b)", "c ENUM('x,y','z\\',')"]
