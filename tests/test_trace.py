"""The trace loader refuses bad input with file, line and reason, and writes atomically."""
import gzip
import json
import os

import pytest
from hypothesis import given, strategies as st

from commitsched.trace import TraceError, Txn, load_trace, trace_from_dicts, write_trace

HEADER = '{"format": "commitsched-trace", "version": 1, "source": {}}'


def write(tmp_path, *lines, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def refused(path) -> TraceError:
    with pytest.raises(TraceError) as e:
        load_trace(path)
    return e.value


def test_valid_trace_round_trips(tmp_path):
    rows = [{"seq": 1, "writes": ["d.t/PRIMARY=1"], "last_committed": 0, "sequence_number": 1,
             "exec": 3.5, "flags": ["transactional"], "session": 2, "gtid": "0-1-1"},
            {"seq": 2, "writes": [], "ddl": True, "file": 2}]
    trace = trace_from_dicts(rows, {"k": "v"})
    for name in ("a.jsonl", "a.jsonl.gz"):
        path = str(tmp_path / name)
        write_trace(path, trace.txns, trace.source)
        again = load_trace(path)
        assert again.txns == trace.txns and again.source == {"k": "v"}
    with gzip.open(str(tmp_path / "a.jsonl.gz"), "rt") as fh:
        assert json.loads(fh.readline())["format"] == "commitsched-trace"


@pytest.mark.parametrize("line,reason", [
    ('{"seq": 1, "writes": [}', "bad JSON"),
    ('{"writes": []}', 'missing "seq"'),
    ('{"seq": 1}', 'missing "writes"'),
    ('{"seq": 0, "writes": []}', "positive integer"),
    ('{"seq": 1, "writes": ["nokey"]}', "db.table/INDEX"),
    ('{"seq": 1, "writes": [], "last_committed": 3, "sequence_number": 3}', "must be below"),
    ('{"seq": 1, "writes": [], "last_committed": 0}', "come together"),
    ('{"seq": 1, "writes": [], "exec": -1}', "negative cost"),
    ('{"seq": 1, "writes": [], "exec": "fast"}', "must be a number"),
    ('{"seq": 1, "writes": [], "flags": ["sometimes"]}', '"flags"'),
    ('{"seq": 1, "writes": [], "colour": "red"}', "unknown field"),
    ('{"seq": 1, "writes": [], "ddl": "yes"}', "true or false"),
    ('[1, 2]', "JSON object"),
])
def test_bad_line_is_refused_with_line_and_reason(tmp_path, line, reason):
    # The bad transaction is the second one, on line 3 (the header is line 1).
    path = write(tmp_path, HEADER, '{"seq": 1, "writes": []}', line.replace('"seq": 1', '"seq": 2'))
    err = refused(path)
    assert err.line == 3 and reason in err.reason and err.path == path
    assert str(err).startswith(f"{path}:3: ")


@pytest.mark.parametrize("seqs,reason,line", [
    ((1, 1), "duplicate seq 1", 3),
    ((1, 3), "where 2 was expected", 3),
    ((2, 1), "where 1 was expected", 2),
    ((1, 2, 1), "must increase", 4),
])
def test_seq_numbering(tmp_path, seqs, reason, line):
    lines = [HEADER] + [json.dumps({"seq": s, "writes": []}) for s in seqs]
    err = refused(write(tmp_path, *lines))
    assert reason in err.reason and err.line == line


def test_sequence_number_must_increase_within_a_file(tmp_path):
    a = {"seq": 1, "writes": [], "last_committed": 0, "sequence_number": 2}
    b = {"seq": 2, "writes": [], "last_committed": 0, "sequence_number": 2}
    err = refused(write(tmp_path, HEADER, json.dumps(a), json.dumps(b)))
    assert err.line == 3 and "sequence_number 2" in err.reason
    b["file"] = 2          # a new binlog file restarts the numbering
    b["sequence_number"] = 1
    assert len(load_trace(write(tmp_path, HEADER, json.dumps(a), json.dumps(b)))) == 2


@pytest.mark.parametrize("first,reason", [
    ("", "empty file"),
    ('{"seq": 1, "writes": []}', "first line must be the header"),
    ('{"format": "commitsched-trace", "version": 3, "source": {}}', "unknown trace format version 3"),
    ('{"format": "commitsched-trace", "version": 1, "source": []}', '"source" must be an object'),
    ("not json", "bad JSON"),
])
def test_header(tmp_path, first, reason):
    p = tmp_path / "h.jsonl"
    p.write_text(first + ("\n" if first else ""))
    err = refused(str(p))
    assert reason in err.reason


def test_missing_file_and_directory(tmp_path):
    assert "no such file" in refused(str(tmp_path / "nope.jsonl")).reason
    assert "directory" in refused(str(tmp_path)).reason


def test_truncated_gzip_is_an_error_not_a_traceback(tmp_path):
    good = str(tmp_path / "g.jsonl.gz")
    write_trace(good, [Txn(i, [f"d.t/PRIMARY={i}"]) for i in range(1, 2000)], {})
    data = open(good, "rb").read()
    bad = tmp_path / "b.jsonl.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError):
        load_trace(str(bad))


def test_failed_write_leaves_nothing(tmp_path):
    path = str(tmp_path / "out.jsonl")

    def boom():
        yield Txn(1, [])
        raise RuntimeError("generator failed")
    with pytest.raises(RuntimeError):
        write_trace(path, boom(), {})
    assert os.listdir(tmp_path) == []


def test_duplicate_keys_count_once():
    t = trace_from_dicts([{"seq": 1, "writes": ["d.t/PRIMARY=1", "d.t/PRIMARY=1"]}])
    assert t.txns[0].writes == ("d.t/PRIMARY=1",)


@given(st.lists(st.sampled_from(['{', '}', '"seq"', ':', '1', ',', '"writes"', '[', ']', 'x', '"']),
                max_size=12))
def test_any_garbage_line_gives_a_trace_error(tmp_path_factory, parts):
    p = tmp_path_factory.mktemp("g") / "g.jsonl"
    p.write_text(HEADER + "\n" + "".join(parts) + "\n")
    try:
        load_trace(str(p))
    except TraceError as e:
        assert e.line == 2          # never any other exception, and the right line
