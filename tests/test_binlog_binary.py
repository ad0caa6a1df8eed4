"""The binary binlog reader (model/importers/binlog_binary.py + the commitsched_binlog extension):
the same traces as the text importer, real MySQL 8 files as they are, clear refusals."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from commitsched.importers import binlog_binary, import_binlog
from commitsched.trace import TraceError, load_trace

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
MDB = os.path.join(FIX, "mariadb_tiny.binlog.000002")
MDB_SCHEMA = os.path.join(FIX, "mariadb_tiny.schema.sql")
# Real MySQL binlogs are third-party data, kept out of commits: read from outside the repository
# and checked against their manifest (tests/fixtures/binlog/mysql_binlogs.json), skipped with the
# file's name where absent.
MY = os.environ.get("COMMITSCHED_MYSQL_BINLOGS",
                    os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                  "mysql_binlogs")))
MY_MANIFEST = {f["name"]: f for f in json.load(open(os.path.join(FIX, "mysql_binlogs.json"),
                                                    encoding="utf-8"))["files"]}


def mysql_binlog(name: str) -> str:
    """The path of a real MySQL binlog of the manifest, or skip the test naming it."""
    path = os.path.join(MY, name)
    if not os.path.exists(path):
        pytest.skip(f"{name} not in {MY} (real MySQL binlog, third-party data not vendored: "
                    "tests/fixtures/binlog/mysql_binlogs.json says where it comes from)")
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == MY_MANIFEST[name]["sha256"], \
            f"{path} is not the file the manifest describes"
    return path

pytestmark = pytest.mark.skipif(not binlog_binary.available(),
                                reason="commitsched_binlog not built (make setup builds it)")


def both(tmp_path, path, **kw):
    """(binary reader's trace, printer + text importer's trace) of one binary binlog."""
    a, b = str(tmp_path / "native.jsonl"), str(tmp_path / "printer.jsonl")
    sa = import_binlog([path], a, **kw)
    sb = import_binlog([path], b, binlog_tool=shutil.which("mariadb-binlog"), **kw)
    return (sa, load_trace(a)), (sb, load_trace(b))


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
def test_binary_and_text_readers_give_identical_traces(tmp_path):
    (sa, ta), (sb, tb) = both(tmp_path, MDB, schema=MDB_SCHEMA)
    assert len(ta) == 12
    assert [t.to_json() for t in ta] == [t.to_json() for t in tb]    # keys, flags, sizes, clocks
    assert ta.source == tb.source and sa.summary() == sb.summary()
    assert all(t.events and t.bytes and t.rows for t in ta)


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
def test_two_binary_files_then_text_count_files_alike(tmp_path):
    text = tmp_path / "tiny.txt"
    text.write_text(subprocess.run(
        ["mariadb-binlog", "--no-defaults", "-vv", "--base64-output=decode-rows", MDB],
        capture_output=True, text=True, check=True).stdout)
    out = str(tmp_path / "o.jsonl")
    import_binlog([MDB, MDB, str(text)], out, schema=MDB_SCHEMA)
    files = [t.file for t in load_trace(out)]
    assert files == [1] * 12 + [2] * 12 + [3] * 12


# Real MySQL binlogs (MySQL's own test data, as shipped by rust_mysql_common's test-data/):
# (file, server, [(last_committed, sequence_number, transaction_length)]) as the files say, read
# independently with go-mysql v1.9.1's parser (GTIDEvent.LastCommitted/SequenceNumber/
# TransactionLength), not with the library under test.
MYSQL_FILES = [
    ("mysql-enum-string-set.000001", "8.0.28",
     [(0, 1, 336), (1, 2, 298), (2, 3, 769), (3, 4, 1099), (4, 5, 672)]),
    ("binlog-invisible-columns.000001", "8.0.26",
     [(0, 1, 335), (1, 2, 296), (2, 3, 333), (3, 4, 318), (4, 5, 349)]),
    ("mysql_type_bit.000001", "8.0.26", [(0, 1, 335), (1, 2, 211), (2, 3, 299)]),
    ("json-opaque.binlog", "9.0.1", [(0, 1, 182), (1, 2, 189), (2, 3, 1106)]),
]


@pytest.mark.parametrize("name,server,expected", MYSQL_FILES)
def test_real_mysql8_binlogs(tmp_path, name, server, expected):
    out = str(tmp_path / "o.jsonl")
    stats = import_binlog([mysql_binlog(name)], out)
    tr = load_trace(out)
    assert stats.dialect == "mysql"
    assert tr.source["server"] == f"MySQL {server}"                  # what --mysql reads
    assert [(t.last_committed, t.sequence_number, t.bytes) for t in tr] == expected
    assert all(t.timestamp and t.timestamp > 1.5e9 for t in tr)      # commit clocks, in seconds
    assert tr.txns[0].ddl                                            # each starts with CREATE


def test_mysql_gtids_and_anonymous_gtids(tmp_path):
    out = str(tmp_path / "o.jsonl")
    import_binlog([mysql_binlog("mysql_type_bit.000001")], out)
    assert [t.gtid for t in load_trace(out)] == [
        f"fbda2ad0-7c46-11ec-ae30-4ef7efc81a2a:{i}" for i in (1, 2, 3)]
    import_binlog([mysql_binlog("json-opaque.binlog")], out)      # gtid_mode=OFF
    assert [t.gtid for t in load_trace(out)] == [None, None, None]


def test_mysql_compressed_transaction_is_refused_clearly(tmp_path):
    with pytest.raises(TraceError) as e:
        import_binlog([mysql_binlog("transaction_compression.000001")],
                      str(tmp_path / "o.jsonl"))
    assert "event type 40" in e.value.reason and "binlog position 274" in e.value.reason
    assert not (tmp_path / "o.jsonl").exists()


def test_minimal_row_image_is_refused_and_skippable(tmp_path):
    path = mysql_binlog("json.binlog.000001")      # ends with a partial JSON update
    with pytest.raises(TraceError) as e:
        import_binlog([path], str(tmp_path / "o.jsonl"))
    assert "record with binlog_row_image=FULL" in e.value.reason
    stats = import_binlog([path], str(tmp_path / "o.jsonl"), skip_bad=True)
    assert stats.transactions == 7 and sum(stats.skipped.values()) == 1


@pytest.mark.parametrize("keep", [0.3, 0.5, 0.9])
def test_truncated_or_damaged_binary_is_one_clear_error(tmp_path, keep):
    data = open(MDB, "rb").read()
    cut = tmp_path / "cut.000002"
    cut.write_bytes(data[: int(len(data) * keep)])
    bad = tmp_path / "bad.000002"
    damaged = bytearray(data)
    for i in range(300, len(damaged), 97):
        damaged[i] ^= 0x5A
    bad.write_bytes(bytes(damaged))
    for p in (cut, bad):
        r = subprocess.run([sys.executable, "-m", "commitsched", "import", str(p), "-o",
                            str(tmp_path / "o.jsonl"), "--schema", MDB_SCHEMA],
                           capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith(f"commitsched: error: {p}") and r.stderr.count("\n") == 1
        assert "Traceback" not in r.stderr and not (tmp_path / "o.jsonl").exists()


def test_rows_event_whose_rows_take_no_bytes_ends(tmp_path):
    """A damaged MySQL file (found by mutation) whose table map declares no columns: the rows
    iterator would yield empty rows forever."""
    with pytest.raises(TraceError) as e:
        import_binlog([mysql_binlog("damaged_zero_width_rows.bin")], str(tmp_path / "o.jsonl"))
    assert e.value.reason == "corrupt rows event (rows of no bytes) (binlog position 1409)"


def _printed(*args: str) -> str:
    return subprocess.run(["mariadb-binlog", "--no-defaults", *args, MDB], capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
@pytest.mark.parametrize("options", [(), ("-v",), ("-vv",)])
def test_base64_binlog_statements_are_decoded_like_the_binary_file(tmp_path, options):
    """Text printed without --base64-output=decode-rows (rows only as BINLOG '...' blocks, or
    blocks followed by -v's ### rows) gives the binary reader's transactions."""
    text = tmp_path / "tiny.txt"
    text.write_text(_printed(*options))
    assert "BINLOG '" in text.read_text()
    a, b = str(tmp_path / "native.jsonl"), str(tmp_path / "text.jsonl")
    import_binlog([MDB], a, schema=MDB_SCHEMA)
    import_binlog([str(text)], b, schema=MDB_SCHEMA)
    assert [t.to_json() for t in load_trace(a)] == [t.to_json() for t in load_trace(b)]


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
def test_bad_base64_statement_is_one_problem_at_its_line(tmp_path, monkeypatch):
    lines = _printed().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("BINLOG '") and i > 20)
    lines[at + 1] = "!!!!" + lines[at + 1][4:]
    text = tmp_path / "bad.txt"
    text.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as e:
        import_binlog([str(text)], str(tmp_path / "o.jsonl"), schema=MDB_SCHEMA)
    assert e.value.line == at + 2 and "without its closing" in e.value.reason
    stats = import_binlog([str(text)], str(tmp_path / "o.jsonl"), schema=MDB_SCHEMA,
                          skip_bad=True)
    assert stats.transactions == 11 and sum(stats.skipped.values()) == 1
    # without the extension the statement is refused, naming what decodes it
    from commitsched.importers import binlog_text
    monkeypatch.setattr(binlog_text, "BlockDecoder", None)
    text.write_text(_printed())
    with pytest.raises(TraceError) as e:
        import_binlog([str(text)], str(tmp_path / "o.jsonl"), schema=MDB_SCHEMA)
    assert "only as base64" in e.value.reason and "make setup" in e.value.reason


def test_damage_mid_file_keeps_the_transactions_before_it_when_skipping(tmp_path):
    """--skip-bad: a file that cannot be read past some event keeps every transaction that
    ended before it (and only those), and counts the one it cut."""
    whole = import_binlog([MDB], str(tmp_path / "whole.jsonl"), schema=MDB_SCHEMA)
    data = open(MDB, "rb").read()
    cut = tmp_path / "cut.000002"
    cut.write_bytes(data[: len(data) * 6 // 10])
    stats = import_binlog([str(cut)], str(tmp_path / "cut.jsonl"), schema=MDB_SCHEMA,
                          skip_bad=True)
    assert 0 < stats.transactions < whole.transactions
    assert sum(stats.skipped.values()) == 1
    head = [t.to_json() for t in load_trace(str(tmp_path / "whole.jsonl"))][:stats.transactions]
    assert [t.to_json() for t in load_trace(str(tmp_path / "cut.jsonl"))] == head


COMPRESSED = os.path.join(FIX, "mariadb_compressed.binlog.000002")


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
def test_mariadb_compressed_events_read_alike_by_every_path(tmp_path):
    """log_bin_compress=ON: compressed Query and rows events, read by the binary reader, by
    the text importer from the printer's decoded rows and from its BINLOG statements."""
    decoded = subprocess.run(["mariadb-binlog", "--no-defaults", "-vv",
                              "--base64-output=decode-rows", COMPRESSED],
                             capture_output=True, text=True, check=True).stdout
    assert "Query_compressed" in decoded and "Update_compressed_rows" in decoded
    texts = {"decoded": decoded, "base64": subprocess.run(
        ["mariadb-binlog", "--no-defaults", COMPRESSED], capture_output=True, text=True,
        check=True).stdout}
    out = str(tmp_path / "native.jsonl")
    import_binlog([COMPRESSED], out)
    native = [t.to_json() for t in load_trace(out)]
    assert len(native) == 7 and sum(t.get("ddl", False) for t in native) == 3
    assert native[3]["writes"] == ["shop.item/PRIMARY=2", "shop.item/code='a-2'",
                                   "shop.item/code='b-2'", "shop.item/PRIMARY=3",
                                   "shop.item/code='a-3'"]
    for name, text in texts.items():
        path = tmp_path / f"{name}.txt"
        path.write_text(text)
        import_binlog([str(path)], str(tmp_path / "t.jsonl"))
        assert [t.to_json() for t in load_trace(str(tmp_path / "t.jsonl"))] == native, name


def _events(data: bytes):
    """(offset, type, size) of each event of a binary binlog (after its 4-byte magic)."""
    at = 4
    while at + 19 <= len(data):
        size = int.from_bytes(data[at + 9:at + 13], "little")
        yield at, data[at + 4], size
        at += size


def test_a_damaged_byte_is_caught_by_the_event_checksum(tmp_path):
    """One byte of a row image changed, nothing else: the rows event still parses (into a wrong
    key) but its CRC32 no longer matches, and the import says so, at that event, as the
    replica's SQL thread would refuse it; --skip-bad keeps the transactions before it."""
    data = bytearray(open(MDB, "rb").read())
    rows = [(at, size) for at, typ, size in _events(bytes(data)) if typ in (23, 24, 25, 30, 31, 32)]
    at, size = rows[len(rows) // 2]
    data[at + size - 6] ^= 0x01          # the last byte of its last row image, before the CRC
    bad = tmp_path / "bad.000002"
    bad.write_bytes(bytes(data))
    with pytest.raises(TraceError) as e:
        import_binlog([str(bad)], str(tmp_path / "o.jsonl"), schema=MDB_SCHEMA)
    assert e.value.reason.startswith("event checksum mismatch (CRC32 in the file 0x")
    assert e.value.reason.endswith(f"the file is damaged at this event (binlog position {at})")
    whole = import_binlog([MDB], str(tmp_path / "whole.jsonl"), schema=MDB_SCHEMA)
    kept = import_binlog([str(bad)], str(tmp_path / "kept.jsonl"), schema=MDB_SCHEMA,
                         skip_bad=True)
    assert 0 < kept.transactions < whole.transactions and sum(kept.skipped.values()) == 1
    head = [t.to_json() for t in load_trace(str(tmp_path / "whole.jsonl"))][:kept.transactions]
    assert [t.to_json() for t in load_trace(str(tmp_path / "kept.jsonl"))] == head
