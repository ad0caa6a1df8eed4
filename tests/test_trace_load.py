"""The fast trace loader (msgspec, chunked) behaves exactly as the careful one, and every way
of breaking the loader found by fuzzing (issue 14) ends in one `TraceError`, not a traceback."""
import gzip
import json

import pytest
from hypothesis import given, settings, strategies as st

from commitsched import trace as T
from commitsched.trace import TraceError, load_trace

HEADER = '{"format": "commitsched-trace", "version": 1, "source": {}}'


def write_bytes(tmp_path, data: bytes, name="t.jsonl"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def refusal(path) -> TraceError:
    with pytest.raises(TraceError) as e:
        load_trace(path)
    return e.value


def careful(lines: list[str]):
    """The reference: every line through json + _parse_txn + the order check."""
    check = T._OrderCheck("t")
    out = []
    for i, text in enumerate(lines, start=2):
        txn = T._parse_txn(T._decode_json(text, "t", i), "t", i)
        check(txn, i)
        out.append(txn)
    return out


# Values of every field, valid and not (wrong types, negatives, nulls, unknown flags).
_field_values = {
    "writes": st.lists(st.sampled_from(["d.t/PRIMARY=1", "d.t/PRIMARY=2", "bad", "d/t.x=1",
                                        "d.t/K", "e.u/UK=a,b"]), max_size=4),
    "before_images": st.lists(st.sampled_from(["d.t/PRIMARY=1", "x.y/P=9"]), max_size=2),
    "gtid": st.one_of(st.none(), st.text(max_size=5), st.integers()),
    "file": st.one_of(st.none(), st.integers(-1, 3), st.just("2")),
    "last_committed": st.one_of(st.none(), st.integers(-1, 5)),
    "sequence_number": st.one_of(st.none(), st.integers(-1, 8)),
    "commit_id": st.one_of(st.none(), st.integers(-1, 5), st.floats(0, 2)),
    "flags": st.one_of(st.none(), st.lists(st.sampled_from(["ddl", "waited", "transactional",
                                                            "allow_parallel", "x"]), max_size=3),
                       st.just([["ddl"]])),
    "session": st.one_of(st.none(), st.integers(-2, 9), st.text(max_size=3), st.booleans()),
    "db": st.one_of(st.none(), st.lists(st.text(max_size=3), max_size=2), st.just([1])),
    "ddl": st.one_of(st.booleans(), st.none(), st.integers(0, 1)),
    "exec": st.one_of(st.none(), st.floats(-1, 1e6, allow_nan=False), st.integers(-1, 10),
                      st.just("1")),
    "timestamp": st.one_of(st.none(), st.floats(0, 1e9), st.integers(0, 10**6), st.just([1])),
    "events": st.one_of(st.none(), st.integers(-1, 9)),
    "unknown": st.integers(),
}


def assert_loads_as_the_careful_path(path, lines):
    """The loader accepts what the careful line-by-line path accepts, with the same
    transactions, and refuses the rest at the same line for the same reason."""
    try:
        expected = careful(lines)
    except TraceError as e:
        got = refusal(path)
        assert (got.line, got.reason) == (e.line, e.reason)
    else:
        got = load_trace(path).txns
        assert [t.to_json() for t in got] == [t.to_json() for t in expected]
        assert [type(t.exec) for t in got] == [type(t.exec) for t in expected]
        # normalised alike: tuples, and the very same shared flag sets
        assert all(type(t.writes) is tuple and type(t.before_images) is tuple
                   and type(t.flags) is frozenset and type(t.file) is int for t in got)
        assert all(t.flags is e.flags for t, e in zip(got, expected))


@st.composite
def txn_lines(draw):
    n = draw(st.integers(1, 6))
    lines = []
    for i in range(n):
        obj = {"seq": draw(st.sampled_from([i + 1] * 6 + [i, i + 2, 0]))}
        if draw(st.integers(0, 9)):
            obj["writes"] = draw(_field_values["writes"])
        for name in draw(st.sets(st.sampled_from(sorted(set(_field_values) - {"writes"})),
                                 max_size=4)):
            obj[name] = draw(_field_values[name])
        lines.append(json.dumps(obj))
    return lines


@settings(max_examples=400, deadline=None)
@given(txn_lines(), st.booleans())
def test_fast_loader_accepts_and_refuses_as_the_careful_one(tmp_path_factory, lines, gz):
    tmp = tmp_path_factory.mktemp("t")
    body = (HEADER + "\n" + "\n".join(lines) + "\n").encode()
    path = str(tmp / "t.jsonl")
    if gz:
        path += ".gz"
        with gzip.open(path, "wb") as fh:
            fh.write(body)
    else:
        with open(path, "wb") as fh:
            fh.write(body)
    assert_loads_as_the_careful_path(path, lines)


def test_chunks_keep_line_numbers_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "_BLOCK", 64)          # many blocks, lines spanning them
    rows = [json.dumps({"seq": i, "writes": [f"d.t/PRIMARY={i}"]}) for i in range(1, 40)]
    rows[30] = json.dumps({"seq": 31, "writes": ["oops"]})
    e = refusal(write_bytes(tmp_path, (HEADER + "\n" + "\n".join(rows) + "\n").encode()))
    assert (e.line, e.reason) == (32, "row key 'oops' is not of the form db.table/INDEX=v1,v2")


def test_blank_lines_are_skipped_and_counted(tmp_path):
    body = f'{HEADER}\n\n{{"seq": 1, "writes": []}}\n   \n{{"seq": 3, "writes": []}}\n'
    e = refusal(write_bytes(tmp_path, body.encode()))
    assert e.line == 5 and "seq 3 where 2 was expected" in e.reason


# ---- issue 14: each of these ended in a Python traceback or a hang


def test_corrupt_gzip_stream(tmp_path):
    rows = "".join(json.dumps({"seq": i, "writes": []}) + "\n" for i in range(1, 5000))
    data = bytearray(gzip.compress((HEADER + "\n" + rows).encode()))
    data[len(data) // 2: len(data) // 2 + 8] = b"\xff" * 8      # damage the deflate stream
    e = refusal(write_bytes(tmp_path, bytes(data), "t.jsonl.gz"))
    assert e.reason.startswith("cannot read:")


def test_truncated_gzip(tmp_path):
    data = gzip.compress((HEADER + "\n" + '{"seq": 1, "writes": []}\n').encode())
    e = refusal(write_bytes(tmp_path, data[:-12], "t.jsonl.gz"))
    assert e.reason.startswith("cannot read:")


def test_deeply_nested_json(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    e = refusal(write_bytes(tmp_path, f'{HEADER}\n{{"seq": 1, "writes": {deep}}}\n'.encode()))
    assert e.line == 2 and e.reason == f"bad JSON: nested deeper than {T.MAX_JSON_DEPTH} levels"
    e = refusal(write_bytes(tmp_path, (deep + "\n").encode()))
    assert e.line == 1 and "nested deeper" in e.reason


def test_integer_literal_over_digit_limit(tmp_path):
    e = refusal(write_bytes(tmp_path, f'{HEADER}\n{{"seq": {"9" * 5000}, "writes": []}}\n'.encode()))
    assert e.line == 2 and e.reason.startswith("bad JSON:") and "4300" in e.reason


def test_integer_too_large_for_a_float(tmp_path):
    big = "9" * 400
    e = refusal(write_bytes(tmp_path, f'{HEADER}\n{{"seq": 1, "writes": [], "exec": {big}}}\n'.encode()))
    assert e.line == 2 and e.reason.startswith('cost "exec" must be a number, got 999')
    assert len(e.reason) < 200
    e = refusal(write_bytes(tmp_path, f'{HEADER}\n{{"seq": 1, "writes": [], "timestamp": {big}}}\n'.encode()))
    assert e.reason.startswith('"timestamp" must be a number')


@pytest.mark.parametrize("field,value,reason", [
    ("flags", [["ddl"]], '"flags" must be a list of'),
    ("flags", [{"a": 1}], '"flags" must be a list of'),
    ("before_images", [["d.t/PRIMARY=1"]], '"before_images" must be a list of keys'),
    ("file", None, None),                       # null is absent: accepted, file 1
    ("file", [1], '"file" must be a non-negative integer'),
    ("last_committed", [0], '"last_committed" must be a non-negative integer'),
])
def test_list_where_a_scalar_is_expected(tmp_path, field, value, reason):
    obj = {"seq": 1, "writes": ["d.t/PRIMARY=1"], field: value}
    path = write_bytes(tmp_path, f"{HEADER}\n{json.dumps(obj)}\n".encode())
    if reason is None:
        assert load_trace(path).txns[0].file == 1
    else:
        e = refusal(path)
        assert e.line == 2 and e.reason.startswith(reason)


def test_line_longer_than_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "MAX_LINE_BYTES", 1 << 20)
    monkeypatch.setattr(T, "_BLOCK", 1 << 16)
    keys = json.dumps([f"d.t/PRIMARY={i}" for i in range(100_000)])     # ~1.8 MB
    body = f'{HEADER}\n{{"seq": 1, "writes": []}}\n{{"seq": 2, "writes": {keys}}}\n'
    e = refusal(write_bytes(tmp_path, body.encode()))
    assert e.line == 3 and e.reason.startswith("line longer than 1 MiB")


def test_dev_zero_ends_with_an_error(monkeypatch):
    monkeypatch.setattr(T, "MAX_LINE_BYTES", 4 << 20)
    e = refusal("/dev/zero")
    assert e.line == 1 and e.reason.startswith("line longer than 4 MiB")


def test_invalid_utf8_names_its_line(tmp_path):
    body = f'{HEADER}\n{{"seq": 1, "writes": []}}\n'.encode() + b'{"seq": 2, "gtid": "\xff"}\n'
    e = refusal(write_bytes(tmp_path, body))
    assert e.line == 3 and e.reason.startswith("cannot read:")


def test_fast_path_shares_flag_sets(tmp_path):
    rows = [json.dumps({"seq": i, "writes": [], "flags": ["transactional", "allow_parallel"]})
            for i in range(1, 4)]
    txns = load_trace(write_bytes(tmp_path, (HEADER + "\n" + "\n".join(rows) + "\n").encode())).txns
    assert txns[0].flags is txns[2].flags == frozenset({"transactional", "allow_parallel"})


def _row(seq, **kw):
    return json.dumps({"seq": seq, "writes": [f"d.t/PRIMARY={seq}"], **kw})


# The fast path's checks across lines (`_settle`, the row-key form's quick comparison) against
# the careful path, on batches a line at a time cannot show: rotations inside a batch, clocks
# that reset or go back, mixed clocks, keys whose values hold the form characters.
_BATCHES = {
    "clock": [_row(i, last_committed=i - 1, sequence_number=i) for i in range(1, 9)],
    "rotation resets the clock": [_row(1, last_committed=0, sequence_number=5),
                                  _row(2, last_committed=5, sequence_number=6),
                                  _row(3, file=2, last_committed=0, sequence_number=1),
                                  _row(4, file=2, last_committed=1, sequence_number=2)],
    "clock goes back in a file": [_row(1, last_committed=0, sequence_number=5),
                                  _row(2, last_committed=0, sequence_number=5)],
    "clock goes back after a rotation": [_row(1, last_committed=0, sequence_number=5),
                                         _row(2, file=2, last_committed=0, sequence_number=3),
                                         _row(3, file=2, last_committed=0, sequence_number=3)],
    "file goes back": [_row(1, file=2), _row(2, file=3), _row(3, file=2)],
    "lc not below sn": [_row(1, last_committed=0, sequence_number=1),
                        _row(2, last_committed=2, sequence_number=2)],
    "lc without sn": [_row(1), _row(2, last_committed=1)],
    "sn without lc": [_row(1, last_committed=0, sequence_number=1), _row(2, sequence_number=2)],
    "mixed clocks": [_row(1, last_committed=0, sequence_number=1), _row(2),
                     _row(3, last_committed=1, sequence_number=3)],
    "swapped halves": [_row(1, last_committed=0), _row(2, sequence_number=2)],
    "seq gap": [_row(1), _row(2), _row(4)],
    "seq repeat": [_row(1), _row(2), _row(2)],
    "before image outside writes": [_row(1), _row(2, before_images=["d.t/UK=9"])],
    "before image inside writes": [_row(1), _row(2, before_images=["d.t/PRIMARY=2"])],
    "write_set_size too small": [_row(1, write_set_size=1), _row(2, write_set_size=0)],
    "write_set_size": [_row(1, write_set_size=2), _row(2)],
    "keys with . / = in values": [json.dumps({"seq": 1, "writes": ["d.t/UK=a.b", "d.t/K=x/y=z",
                                                                   "d.t/UK==", "e.f.g/P=1"]})],
    "key without =": [_row(1), json.dumps({"seq": 2, "writes": ["d.t/PRIMARY=1", "d.t/K"]})],
    "key without .": [_row(1), json.dumps({"seq": 2, "writes": ["dt/PRIMARY=1"]})],
    "key with NUL": [json.dumps({"seq": 1, "writes": ["d.t/P=1\u0000x.y/P=2", "d.t/P\u0000=1"]})],
    "empty key": [json.dumps({"seq": 1, "writes": ["d.t/P=1", ""]})],
    "the only key empty": [json.dumps({"seq": 1, "writes": [""]}), _row(2)],
    "only empty keys": [json.dumps({"seq": 1, "writes": [""]})],
    "no writes": [json.dumps({"seq": 1, "writes": []}), _row(2)],
    # normalised on the fast path as Txn(...) normalises: a key listed twice counts once (and
    # write_set_size is held against the keys left), a null file is 1, flags share their set
    "keys repeated": [json.dumps({"seq": 1, "writes": ["d.t/P=1", "d.t/P=1"], "write_set_size": 1}),
                      json.dumps({"seq": 2, "writes": ["d.t/P=1", "d.t/P=2", "d.t/P=1"]}),
                      json.dumps({"seq": 3, "writes": ["d.t/P=1", "d.t/P=2", "d.t/P=2"]}),
                      json.dumps({"seq": 4, "writes": ["d.t/P=3", "d.t/P=1", "d.t/P=1"],
                                  "before_images": ["d.t/P=1"], "write_set_size": 2}),
                      json.dumps({"seq": 5, "writes": ["d.t/P=1", "d.t/P=2", "d.t/P=3", "d.t/P=1"]}),
                      json.dumps({"seq": 6, "writes": ["d.t/P=1", "d.t/P=2", "d.t/P=3"]})],
    "keys repeated, write_set_size below the keys left": [
        json.dumps({"seq": 1, "writes": ["d.t/P=1", "d.t/P=2", "d.t/P=1"], "write_set_size": 1})],
    "file null": [_row(1, file=None), _row(2, file=None), _row(3, file=2), _row(4, file=2)],
    "file null after file 2": [_row(1, file=2), _row(2, file=None)],
    "flags mixed": [_row(1), _row(2, flags=[]), _row(3, flags=["ddl"]),
                    _row(4, flags=["allow_parallel", "transactional"]),
                    _row(5, flags=["transactional", "allow_parallel"]),
                    _row(6, flags=["ddl"] * 6), _row(7, flags=["waited"])],
    "flags null": [_row(1, flags=["ddl"]), _row(2, flags=None), _row(3, flags=["ddl"])],
    "clock back across a clockless line": [_row(1, last_committed=0, sequence_number=5), _row(2),
                                           _row(3, last_committed=0, sequence_number=3)],
}


@pytest.mark.parametrize("name", sorted(_BATCHES))
def test_whole_batch_checks_agree_with_the_careful_path(tmp_path, name):
    lines = _BATCHES[name]
    path = write_bytes(tmp_path, (HEADER + "\n" + "\n".join(lines) + "\n").encode())
    assert_loads_as_the_careful_path(path, lines)


def test_fast_path_takes_a_good_batch_whole(tmp_path, monkeypatch):
    """A good trace never needs the careful path (it would only cost time)."""
    monkeypatch.setattr(T, "_careful_batch", lambda *a: pytest.fail("careful path used"))
    lines = ([_row(i, last_committed=i - 1, sequence_number=i, flags=["ddl"])
              for i in range(1, 50)]
             + [_row(i, file=2, last_committed=0, sequence_number=i - 48) for i in range(50, 60)])
    path = write_bytes(tmp_path, (HEADER + "\n" + "\n".join(lines) + "\n").encode())
    assert len(load_trace(path).txns) == 59


@pytest.mark.parametrize("name", ["keys repeated", "file null", "flags mixed", "mixed clocks",
                                  "clock back across a clockless line"])
def test_fast_path_takes_what_it_normalises_whole(tmp_path, monkeypatch, name):
    """Repeated keys, null files, flag sets of every kind and clocks that come and go are the
    fast path's own work, not a reason to decode the chunk again line by line."""
    lines = _BATCHES[name]
    expected = careful(lines)
    monkeypatch.setattr(T, "_careful_batch", lambda *a: pytest.fail("careful path used"))
    got = load_trace(write_bytes(tmp_path, (HEADER + "\n" + "\n".join(lines) + "\n").encode())).txns
    assert [t.to_json() for t in got] == [t.to_json() for t in expected]
    assert all(t.flags is e.flags for t, e in zip(got, expected))


def test_decoded_repeated_keys_count_once_in_order(tmp_path):
    txns = load_trace(write_bytes(tmp_path, (HEADER + "\n" + "\n".join(_BATCHES["keys repeated"])
                                             + "\n").encode())).txns
    assert [t.writes for t in txns] == [
        ("d.t/P=1",), ("d.t/P=1", "d.t/P=2"), ("d.t/P=1", "d.t/P=2"), ("d.t/P=3", "d.t/P=1"),
        ("d.t/P=1", "d.t/P=2", "d.t/P=3"), ("d.t/P=1", "d.t/P=2", "d.t/P=3")]
    assert [t.file for t in load_trace(write_bytes(
        tmp_path, (HEADER + "\n" + "\n".join(_BATCHES["file null"]) + "\n").encode(),
        "f.jsonl")).txns] == [1, 1, 2, 2]


def test_txn_built_in_code_is_normalised(tmp_path):
    """Txn(...) with lists, sets and None is what a decoded line is: tuples, a key once, the
    shared flag set, file 1."""
    t = T.Txn(1, ["d.t/P=1", "d.t/P=2", "d.t/P=1"], before_images=["d.t/P=2"],
              replica_locks=["d.t/P=9"], db=["d"], flags=["transactional", "allow_parallel"],
              file=None)
    assert t.writes == ("d.t/P=1", "d.t/P=2") and t.before_images == ("d.t/P=2",)
    assert t.replica_locks == ("d.t/P=9",) and t.db == ("d",) and t.file == 1
    assert type(t.flags) is frozenset
    assert T.Txn(2, ("d.t/P=1",), flags={"allow_parallel", "transactional"}).flags is t.flags
    assert T.Txn(3, ("d.t/P=1",), flags=[]).flags is T.Txn(4, ()).flags == frozenset()
    assert T.Txn(5, ("d.t/P=1", "d.t/P=1")).writes == ("d.t/P=1",)
    decoded = load_trace(write_bytes(tmp_path, (HEADER + "\n" + _row(1, flags=[
        "allow_parallel", "transactional"]) + "\n").encode())).txns[0]
    assert decoded.flags is t.flags
