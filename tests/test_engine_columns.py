"""The columnar trace (model/columnar.py): the compiled core's JSON-lines loader gives the
columns the Python builder gives from the Txn objects, and refuses (to the Python loader, whose
errors are the reference) whatever it is not sure of."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings

from commitsched import columnar
from commitsched.trace import TraceError, load_trace, write_trace

from test_engine_diff import BUNDLED, wild_traces


def _same(a: columnar.Columns, b: columnar.Columns) -> None:
    assert (a.n, a.seq0, a.replica_locks, a.keys_unknown) == (b.n, b.seq0, b.replica_locks,
                                                               b.keys_unknown)
    for name, x in a.arrays.items():
        y = b.arrays[name]
        if name in ("s_ids", "s_off"):
            continue
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), name
    assert a.keys == b.keys
    # schemas: the same names for each transaction (their ids may differ)
    for c in (a, b):
        assert len(c.arrays["s_off"]) == c.n + 1
    def names(c, i):
        off = c.arrays["s_off"]
        return sorted(c.schemas[j] for j in c.arrays["s_ids"][off[i]:off[i + 1]])

    for i in range(a.n):
        assert names(a, i) == names(b, i), i


@pytest.mark.parametrize("path", BUNDLED, ids=os.path.basename)
def test_the_core_loader_gives_the_builders_columns(path):
    fast = columnar._load_compiled(path)
    assert fast is not None, "the core's loader refused a bundled trace"
    _same(fast[1], columnar.from_txns(load_trace(path).txns))
    assert fast[0] == load_trace(path).source


@settings(max_examples=40)
@given(wild_traces())
def test_generated_traces_load_alike(tmp_path_factory, trace):
    path = str(tmp_path_factory.mktemp("cols") / "t.jsonl")
    write_trace(path, trace.txns, {"generator": "test"})
    fast = columnar._load_compiled(path)
    assert fast is not None
    _same(fast[1], columnar.from_txns(load_trace(path).txns))


def _write_lines(path, lines):
    with open(path, "w") as fh:
        fh.write(json.dumps({"format": "commitsched-trace", "version": 1, "source": {}}) + "\n")
        for line in lines:
            fh.write(line + "\n")


@pytest.mark.parametrize("lines", [
    ['{"seq":1,"writes":["a.t/PRIMARY=1"]}', '', '{"seq":2,"writes":[]}'],      # blank line
    ['{"seq":1,"writes":["a.t/PRIMARY=1","a.t/PRIMARY=1"]}'],                     # a repeat
    ['{"seq":1,"writes":[],"flags":null}'],                                      # null flags
    ['{"seq":1,"writes":[],"session":1.5}'],
    ['{"seq":1,"writes":[],"last_committed":3,"sequence_number":2}'],
    ['{"seq":1,"writes":["nodot/PRIMARY=1"]}'],
    ['{"seq":2,"writes":[]}'],
    ['{"seq":1,"writes":[],"exec":-1}'],
    ['{"seq":1,"writes":[],"events":99999999999999999999999}'],
    ['{"seq":1,"writes":[],"color":"red"}'],
])
def test_what_the_core_loader_refuses_the_python_loader_decides(tmp_path, lines):
    """Refused by the core's loader, each file gets what the Python loader makes of it: its
    columns, or its one-line error."""
    path = str(tmp_path / "t.jsonl")
    _write_lines(path, lines)
    assert columnar._load_compiled(path) is None or lines[0].count("PRIMARY=1") == 2
    try:
        expected = columnar.from_txns(load_trace(path).txns)
    except TraceError as e:
        with pytest.raises(TraceError) as got:
            columnar.load_columns(path)
        assert str(got.value) == str(e)
        return
    _same(columnar.load_columns(path)[1], expected)
