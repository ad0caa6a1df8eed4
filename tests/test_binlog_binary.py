"""The binary binlog reader (model/importers/binlog_binary.py + the commitsched_binlog extension):
the same traces as the text importer, real MySQL 8 files as they are, clear refusals."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zlib

import pytest
from shared_data import shared_file

from commitsched.importers import binlog_binary, import_binlog
from commitsched.trace import TraceError, load_trace

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
MDB = os.path.join(FIX, "mariadb_tiny.binlog.000002")
MDB_SCHEMA = os.path.join(FIX, "mariadb_tiny.schema.sql")
# Real MySQL binlogs are third-party data, kept out of commits: read from shared/ beside the
# repository (tests/shared_data.py) and checked against their manifest
# (tests/fixtures/binlog/mysql_binlogs.json); a missing one fails its test.
MY_MANIFEST = {f["name"]: f for f in json.load(open(os.path.join(FIX, "mysql_binlogs.json"),
                                                    encoding="utf-8"))["files"]}


def mysql_binlog(name: str) -> str:
    """The path of a real MySQL binlog of the manifest (it must be there)."""
    return shared_file("mysql_binlogs", "COMMITSCHED_MYSQL_BINLOGS", name,
                       MY_MANIFEST[name]["sha256"])


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
    # three files in GTID order (the same file twice is refused): the compressed one
    # (0-1-1..7), the tiny one (0-1-10..21), then the tiny one's text with its GTIDs moved on
    # by 12, as the next file would have them
    text = tmp_path / "tiny.txt"
    decoded = subprocess.run(
        ["mariadb-binlog", "--no-defaults", "-vv", "--base64-output=decode-rows", MDB],
        capture_output=True, text=True, check=True).stdout
    text.write_text(re.sub(r"(GTID \d+-\d+-|gtid_seq_no=)(\d+)",
                           lambda m: m.group(1) + str(int(m.group(2)) + 12), decoded))
    compressed = os.path.join(FIX, "mariadb_compressed.binlog.000002")
    out = str(tmp_path / "o.jsonl")
    import_binlog([compressed, MDB, str(text)], out, schema=MDB_SCHEMA)
    files = [t.file for t in load_trace(out)]
    assert files == [1] * 7 + [2] * 12 + [3] * 12


# Real MySQL binlogs (MySQL's own test data, as shipped by rust_mysql_common's test-data/):
# (file, server, [(last_committed, sequence_number, transaction_length)]) as the files say, read
# independently with go-mysql v1.9.1's parser (GTIDEvent.LastCommitted/SequenceNumber/
# TransactionLength), not with the library under test; `_gtid_events` below reads them again
# from the bytes, for these and the two files go-mysql was not run on.
MYSQL_FILES = [
    ("mysql-enum-string-set.000001", "8.0.28",
     [(0, 1, 336), (1, 2, 298), (2, 3, 769), (3, 4, 1099), (4, 5, 672)]),
    ("binlog-invisible-columns.000001", "8.0.26",
     [(0, 1, 335), (1, 2, 296), (2, 3, 333), (3, 4, 318), (4, 5, 349)]),
    ("mysql_type_bit.000001", "8.0.26", [(0, 1, 335), (1, 2, 211), (2, 3, 299)]),
    ("json-opaque.binlog", "9.0.1", [(0, 1, 182), (1, 2, 189), (2, 3, 1106)]),
]
ALL_MYSQL = sorted(n for n in MY_MANIFEST)


def _events(data: bytes):
    """(offset, type, size) of each event of a binary binlog (after its 4-byte magic)."""
    at = 4
    while at + 19 <= len(data):
        size = int.from_bytes(data[at + 9:at + 13], "little")
        yield at, data[at + 4], size
        at += size


def _packed(b: bytes, at: int) -> tuple[int, int]:
    """A packed integer (net_field_length) at b[at:]: (value, bytes it takes)."""
    first = b[at]
    if first < 251:
        return first, 1
    n = {252: 2, 253: 3, 254: 8}[first]
    return int.from_bytes(b[at + 1:at + 1 + n], "little"), 1 + n


def _gtid_events(path: str) -> list[dict]:
    """Each (anonymous) GTID event's fields, read from the bytes by MySQL 8's layout
    (Gtid_event::write_data_body, libbinlogevents control_events.cpp): flags 1, sid 16, gno 8,
    logical timestamp type 1, last_committed 8, sequence_number 8, immediate commit timestamp 7
    (bit 55: the original one follows, 7), transaction_length packed. An oracle that shares no
    code with the reader."""
    data = open(path, "rb").read()
    out = []
    for at, typ, size in _events(data):
        if typ not in (33, 34):
            continue
        b = data[at + 19:at + size - 4]
        g = {"last_committed": int.from_bytes(b[26:34], "little"),
             "sequence_number": int.from_bytes(b[34:42], "little")}
        immediate = int.from_bytes(b[42:49], "little")
        i = 49
        if immediate & (1 << 55):
            immediate &= ~(1 << 55)
            g["original"] = int.from_bytes(b[49:56], "little")
            i = 56
        else:
            g["original"] = immediate
        g["immediate"] = immediate
        g["transaction_length"], _ = _packed(b, i)
        out.append(g)
    return out


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


@pytest.mark.parametrize("name", ALL_MYSQL)
def test_every_real_mysql_binlog_imports_with_no_schema_as_its_gtid_events_say(tmp_path, name):
    """No --schema: every transaction keeps the clock, length and commit time its GTID event
    states (the compressed transaction and the partial JSON update included); the commit time
    to the microsecond (original_commit_timestamp), which the lag replay reads as the trace's
    `timestamp`."""
    path = mysql_binlog(name)
    out = str(tmp_path / "o.jsonl")
    stats = import_binlog([path], out)
    tr = load_trace(out)
    want = _gtid_events(path)
    assert not stats.skipped and len(tr) == len(want) > 0
    assert [(t.last_committed, t.sequence_number, t.bytes) for t in tr] == \
        [(g["last_committed"], g["sequence_number"], g["transaction_length"]) for g in want]
    assert [t.timestamp for t in tr] == [g["original"] / 1e6 for g in want]
    assert any(t.timestamp != int(t.timestamp) for t in tr)         # not whole seconds
    assert tr.source["server"] == MY_MANIFEST[name]["server"].split(",")[0]


def test_mysql_gtids_and_anonymous_gtids(tmp_path):
    out = str(tmp_path / "o.jsonl")
    import_binlog([mysql_binlog("mysql_type_bit.000001")], out)
    assert [t.gtid for t in load_trace(out)] == [
        f"fbda2ad0-7c46-11ec-ae30-4ef7efc81a2a:{i}" for i in (1, 2, 3)]
    import_binlog([mysql_binlog("json-opaque.binlog")], out)      # gtid_mode=OFF
    assert [t.gtid for t in load_trace(out)] == [None, None, None]


COMPRESSED_SCHEMA = "CREATE TABLE test.tb1 (id INT NOT NULL, PRIMARY KEY (id));\n"


def test_mysql_compressed_transaction_is_read(tmp_path):
    """MySQL 8.0.32's Transaction_payload (zstd): its events (Query BEGIN, Table_map test.tb1,
    Write_rows of one INT column, value 1, Xid 462: read with the `zstd` command from the
    event's payload) are read as plain ones. Without a schema the table's keys are unknown
    and named; with one, the row's key is there. Events: GTID, the payload and its four."""
    path = mysql_binlog("transaction_compression.000001")
    out = str(tmp_path / "o.jsonl")
    stats = import_binlog([path], out)
    (t,) = load_trace(out).txns
    assert (t.last_committed, t.sequence_number, t.bytes, t.events, t.rows) == (0, 1, 234, 6, 1)
    assert t.writes == () and t.keys_unknown == ("test.tb1",)
    assert load_trace(out).version == 2 and set(stats.keys_unknown) == {"test.tb1"}
    schema = tmp_path / "s.sql"
    schema.write_text(COMPRESSED_SCHEMA)
    import_binlog([path], out, schema=str(schema))
    (t,) = load_trace(out).txns
    assert t.writes == ("test.tb1/PRIMARY=1",) and t.keys_unknown == ()
    assert load_trace(out).version == 1


def test_damaged_compressed_transaction_is_one_clear_error(tmp_path):
    """A payload whose zstd stream is damaged (its CRC32 made right, so that the payload's own
    checks are what is reached) is one line at the payload's position."""
    data = bytearray(open(mysql_binlog("transaction_compression.000001"), "rb").read())
    at, _, size = next(e for e in _events(bytes(data)) if e[1] == 40)
    data[at + size - 12] ^= 0xFF                       # inside the zstd frame
    _fix_crc(data, at, size)
    bad = tmp_path / "bad.000001"
    bad.write_bytes(bytes(data))
    with pytest.raises(TraceError) as e:
        import_binlog([str(bad)], str(tmp_path / "o.jsonl"))
    assert e.value.reason.startswith("compressed transaction: ")
    assert e.value.reason.endswith(f"(binlog position {at})")


def test_partial_json_update_takes_its_primary_key_from_the_before_image(tmp_path):
    """json.binlog ends with a partial JSON update (binlog_row_value_options=PARTIAL_JSON): its
    after images hold the changed JSON column only, the primary key is the before image's."""
    out = str(tmp_path / "o.jsonl")
    stats = import_binlog([mysql_binlog("json.binlog.000001")], out)
    last = load_trace(out).txns[-1]
    assert stats.transactions == 8 and not stats.skipped
    assert last.writes == tuple(f"mysql.t/PRIMARY={i}" for i in range(1, 7))
    assert last.write_set_size == 12 and last.keys_partial == ()


def _fix_crc(data: bytearray, at: int, size: int) -> None:
    """Make an event's stored CRC32 that of its bytes again (after a deliberate change)."""
    data[at + size - 4:at + size] = zlib.crc32(bytes(data[at:at + size - 4])).to_bytes(4, "little")


def test_rows_event_whose_rows_take_no_bytes_ends(tmp_path):
    """A damaged rows event whose width says no columns, made from a real 8.0.28 file with its
    checksum made right, so that the CRC32 check passes and the rows decoder's own guard is
    what stops it: each row of no columns takes no bytes, and the rows would never end."""
    data = bytearray(open(mysql_binlog("mysql-enum-string-set.000001"), "rb").read())
    at, typ, size = next(e for e in _events(bytes(data)) if e[1] == 30)
    extra = int.from_bytes(data[at + 19 + 8:at + 19 + 10], "little")   # v2: its own 2 bytes too
    width = at + 19 + 10 + extra - 2
    assert data[width] == 5                                          # the table's 5 columns
    data[width] = 0
    _fix_crc(data, at, size)
    bad = tmp_path / "zero_width.000001"
    bad.write_bytes(bytes(data))
    with pytest.raises(TraceError) as e:
        import_binlog([str(bad)], str(tmp_path / "o.jsonl"))
    assert e.value.reason == f"corrupt rows event (rows of no bytes) (binlog position {at})"


def _as_mysql57(data: bytes, checksums: bool = True) -> bytes:
    """A MySQL 5.7-layout binlog made from a real 8.0 one: the format description says server
    5.7.44-log, each GTID event ends after sequence_number (5.7 writes no commit timestamps or
    transaction_length), end positions follow the new sizes, CRC32s are recomputed, or, with
    `checksums` False, dropped (binlog_checksum=NONE: the format description keeps its own, with
    algorithm 0). Not a file a 5.7 server wrote: the layout only (docs/import.md)."""
    out = bytearray(data[:4])
    for at, typ, size in _events(data):
        head, body = bytearray(data[at:at + 19]), bytearray(data[at + 19:at + size - 4])
        if typ == 15:
            body[2:52] = b"5.7.44-log".ljust(50, b"\0")
            if not checksums:
                body[-1] = 0                                # the checksum algorithm: OFF
        elif typ in (33, 34):
            body = body[:42]
        tail = 4 if (checksums or typ == 15) else 0
        head[9:13] = (19 + len(body) + tail).to_bytes(4, "little")
        head[13:17] = (len(out) + 19 + len(body) + tail).to_bytes(4, "little")
        event = bytes(head + body)
        if tail:
            event += zlib.crc32(event).to_bytes(4, "little")
        out += event
    return bytes(out)


@pytest.mark.parametrize("checksums", [True, False])
def test_mysql57_layout_is_read_with_its_clock(tmp_path, checksums):
    """5.7's GTID events: the logical clock, no commit timestamps (the event time, whole
    seconds) and no transaction_length (the span of positions), with and without checksums."""
    real = mysql_binlog("mysql-enum-string-set.000001")
    f57 = tmp_path / "mysql57.000001"
    f57.write_bytes(_as_mysql57(open(real, "rb").read(), checksums))
    out = str(tmp_path / "o.jsonl")
    import_binlog([str(f57)], out)
    tr = load_trace(out)
    assert tr.source["server"] == "MySQL 5.7.44-log"
    assert [(t.last_committed, t.sequence_number) for t in tr] == \
        [(g["last_committed"], g["sequence_number"]) for g in _gtid_events(real)]
    assert all(t.timestamp == int(t.timestamp) and t.bytes for t in tr)
    gtids = [at for at, typ, _ in _events(f57.read_bytes()) if typ == 33]
    assert tr.txns[0].bytes == gtids[1] - gtids[0]                   # GTID to the next GTID


def test_mysql56_is_refused_in_one_line_naming_the_version(tmp_path):
    real = open(mysql_binlog("mysql_type_bit.000001"), "rb").read()
    old = bytearray(_as_mysql57(real))
    fde = next(e for e in _events(bytes(old)) if e[1] == 15)
    old[fde[0] + 19 + 2:fde[0] + 19 + 52] = b"5.6.51-log".ljust(50, b"\0")
    _fix_crc(old, fde[0], fde[2])
    f56 = tmp_path / "mysql56.000001"
    f56.write_bytes(bytes(old))
    r = subprocess.run([sys.executable, "-m", "commitsched", "import", str(f56), "-o",
                        str(tmp_path / "o.jsonl")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "a MySQL 5.6.51-log binlog" in r.stderr and "binlog position 4" in r.stderr


def _with_event(data: bytes, after_type: int, typ: int, flags: int, body: bytes) -> tuple[bytes, int]:
    """`data` with one event of type `typ` put after the first event of `after_type` (end
    positions and CRC32s made right): (new bytes, where it is)."""
    out, inserted, where = bytearray(data[:4]), False, None
    for at, t, size in _events(data):
        chunks = [bytes(data[at:at + size - 4])]
        if t == after_type and not inserted:
            inserted = True
            head = bytearray(19)
            head[4] = typ
            head[17:19] = flags.to_bytes(2, "little")
            chunks.append(bytes(head) + body)
        for ev in chunks:
            ev = bytearray(ev)
            if ev[4] == typ and where is None and inserted:
                where = len(out)
            ev[9:13] = (len(ev) + 4).to_bytes(4, "little")
            ev[13:17] = (len(out) + len(ev) + 4).to_bytes(4, "little")
            out += ev + zlib.crc32(bytes(ev)).to_bytes(4, "little")
    return bytes(out), where


def test_unknown_event_marked_ignorable_is_skipped_and_counted(tmp_path):
    """An event of a type neither MySQL nor MariaDB writes, inside a transaction, with
    LOG_EVENT_IGNORABLE_F: skipped by its length, as the server skips it, and counted."""
    real = open(mysql_binlog("mysql_type_bit.000001"), "rb").read()
    data, _ = _with_event(real, 19, 200, 0x80, b"managed service data")
    f = tmp_path / "ignorable.000001"
    f.write_bytes(data)
    out = str(tmp_path / "o.jsonl")
    stats = import_binlog([str(f)], out)
    plain = import_binlog([mysql_binlog("mysql_type_bit.000001")], str(tmp_path / "p.jsonl"))
    assert stats.ignorable_skipped == 1 and stats.transactions == plain.transactions
    assert stats.summary()["ignorable_events_skipped"] == 1
    assert [t.events for t in load_trace(out)][-1] == \
        [t.events for t in load_trace(str(tmp_path / "p.jsonl"))][-1] + 1


def test_unknown_event_not_ignorable_is_one_line_naming_it(tmp_path):
    real = open(mysql_binlog("mysql_type_bit.000001"), "rb").read()
    data, where = _with_event(real, 19, 200, 0, b"something")
    f = tmp_path / "unknown.000001"
    f.write_bytes(data)
    r = subprocess.run([sys.executable, "-m", "commitsched", "import", str(f), "-o",
                        str(tmp_path / "o.jsonl")], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "unknown event type 200" in r.stderr and f"(binlog position {where})" in r.stderr
    assert "truncated" not in r.stderr
    stats = import_binlog([str(f)], str(tmp_path / "o.jsonl"), skip_bad=True)
    assert stats.transactions == 2 and sum(stats.skipped.values()) == 1


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


# ---------------------------------------------------------------- every key type

KEYTYPES = os.path.join(FIX, "mariadb_keytypes.binlog.000001")


def test_every_key_type_reads_as_the_printer_prints_it(tmp_path):
    """A real MariaDB 10.11 binlog (tests/fixtures/binlog/mariadb_keytypes.sql) whose table has
    a UNIQUE key on each type MySQL and MariaDB allow in an index: the first row's keys are
    what `mariadb-binlog -vv` prints for each value (DATE with colons, TIMESTAMP as seconds,
    FLOAT as %g, DOUBLE as %.20g, ENUM as its index, SET and BIT as bits, binary strings with
    \\x escapes, a prefix index over the whole value: MySQL's write set hashes the whole
    column too)."""
    out = str(tmp_path / "o.jsonl")
    stats = import_binlog([KEYTYPES], out)
    first = load_trace(out).txns[2]
    k = "shop.keytypes/"
    assert first.writes == (
        k + "PRIMARY=1,'2024:05:10'", k + "u_dt='2024-05-10 15:30:00'",
        k + "u_dt6='2024-05-10 15:30:00.123456'", k + "u_ts=1715355001",
        k + "u_ts3=1715355001.250", k + "u_t='15:30:00'", k + "u_t2='-838:59:58.99'",
        k + "u_y=2024", k + "u_f=12345.7", k + "u_db=12345678.910110000521",
        k + "u_dec=-120.50", k + "u_e=2,1", k + "u_s=b'00000101'", k + "u_b5=b'10101'",
        k + "u_b12=b'100000000001'", k + "u_bin='ab'", k + "u_vb='\\x00\\x01ab'",
        k + "u_name='alpha'")
    more = {key for t in load_trace(out).txns[3:8] for key in t.writes}
    assert {k + "u_f=1e+06", k + "u_db=1e+21", k + "u_f=1.234e-05", k + "u_db=-2.4999999999999998869e-07",
            k + "u_t2='-00:00:01.50'", k + "u_t2='-01:00:00.25'", k + "u_ts3=981173106.007",
            k + "u_dt6='2001-02-03 04:05:06.500000'", k + "u_f=-0.1",
            k + "u_db=0.10000000000000000555", k + "u_s=b'00000000'", k + "u_b5=b'00000'",
            k + "u_vb='x'y\\z'", k + "u_dec=0.00"} <= more
    assert not stats.skipped and not stats.keys_unknown


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
def test_every_key_type_alike_from_the_binary_file_and_the_printers_text(tmp_path):
    (sa, ta), (sb, tb) = both(tmp_path, KEYTYPES)
    assert [t.to_json() for t in ta] == [t.to_json() for t in tb]
    assert sa.summary() == sb.summary() and len(ta) == 18


def _printed_rows(path: str) -> list[tuple[dict, dict]]:
    """Each BINLOG statement of `mysqlbinlog -vv` text (base64 kept) with the rows the printer
    decoded after it: (the statement's images as the binary reader prints them, the printer's
    own values), one pair per row image."""
    import base64
    from commitsched_binlog import BlockDecoder
    from commitsched.importers.binlog_text import _B64_PARTS, COL_RE, _value
    lines = open(path, encoding="utf-8").read().splitlines()
    decoder, ours, printed, i = BlockDecoder(), [], [], 0
    while i < len(lines):
        if lines[i].startswith("BINLOG '"):
            text = lines[i][len("BINLOG '"):]
            while not text.endswith("'/*!*/;"):
                i += 1
                text += lines[i]
            data = b"".join(base64.b64decode(p) for p in _B64_PARTS.findall(text[:-7]) if p)
            for _kind, _db, _table, rows in decoder.feed(data):
                ours += [{p: v[0] for p, v in img.items()} for b, a in rows for img in (b, a) if img]
        m = COL_RE.match(lines[i])
        if m:
            if m.group(1) == "1":
                printed.append({})
            printed[-1][int(m.group(1))] = _value(m.group(2))[0]
        i += 1
    return list(zip(ours, printed, strict=True))


def test_values_print_as_real_mysql_printed_them():
    """Real MySQL 8.0.36 / 8.0.12 `mysqlbinlog -vv` output keeps each rows event in base64 too:
    decoded by the binary reader's parser, every column (DATE, DATETIME, TIMESTAMP, TIME, YEAR,
    FLOAT, DOUBLE, DECIMAL, ENUM, SET, integers, strings, BLOB) prints as that printer did."""
    texts = {e["name"]: e for e in json.load(open(os.path.join(FIX, "mysql_real_text.json"),
                                                  encoding="utf-8"))["files"]}
    pairs = []
    for name in ("mysql80_vv_metadata_remote_cut.txt", "mysql80_vv_base64_blog.txt"):
        pairs += _printed_rows(shared_file("mysql_text", "COMMITSCHED_MYSQL_TEXT", name,
                                           texts[name]["sha256"]))
    assert len(pairs) == 2 and sum(len(p) for _, p in pairs) == 22
    for ours, theirs in pairs:
        assert ours == theirs


def _rows_of_real_file(name: str) -> list[dict]:
    """Every row image of a real MySQL binary file, as the binary reader's parser prints it
    (the format description, table maps and rows events fed to it)."""
    from commitsched_binlog import BlockDecoder
    data = open(mysql_binlog(name), "rb").read()
    decoder, images = BlockDecoder(), []
    for at, typ, size in _events(data):
        if typ in (15, 19, 30, 31, 32):
            for _k, _d, _t, rows in decoder.feed(data[at:at + size]):
                images += [{p: v[0] for p, v in img.items()} for b, a in rows for img in (b, a)
                           if img]
    return images


def test_real_mysql_enum_set_and_bit_values():
    """The ENUM / SET / BIT rows MySQL 8.0.28 / 8.0.26 wrote (values as rust_mysql_common's
    own test states them: ENUM 1 then 2, SET 0b101 then 0b1010, BIT(3) 0b100, BIT(8)
    0b100000), printed as mysqlbinlog prints them: the index, and my_b_write_bit's bits."""
    enum_set = _rows_of_real_file("mysql-enum-string-set.000001")
    assert [(r[3], r[4]) for r in enum_set] == [
        ("1", "b'00000101'"), ("1", "b'00000101'"), ("2", "b'00001010'"), ("2", "b'00001010'")]
    (bits,) = _rows_of_real_file("mysql_type_bit.000001")
    assert (bits[1], bits[2], bits[3]) == ("b'100'", "'foo'", "b'00100000'")


# ---------------------------------------------------------------- MINIMAL row images

def test_minimal_images_keep_the_primary_key_and_say_what_is_missing(tmp_path):
    """binlog_row_image=MINIMAL (the fixture's last six transactions): the before image holds
    the primary key only, the after image the changed columns. Keys whose columns are there are
    made, the primary key of an UPDATE's after image from its before image; a UNIQUE or foreign
    key whose columns are not is missing, and the transaction names its table in keys_partial."""
    out = str(tmp_path / "o.jsonl")
    stats = import_binlog([KEYTYPES], out)
    mini = [(t.writes, t.keys_partial, t.write_set_size) for t in load_trace(out).txns[12:]]
    p = ("shop.child",)
    assert mini == [
        (("shop.child/PRIMARY=10",), p, 2),                          # qty changed
        (("shop.child/PRIMARY=11", "shop.child/u_sku='b11'"), p, 3),  # sku changed
        (("shop.child/PRIMARY=10", "shop.parent/PRIMARY=2"), p, 3),   # parent changed
        (("shop.child/PRIMARY=11",), p, None),                       # DELETE: PK only
        (("shop.child/PRIMARY=12", "shop.child/u_sku='a12'", "shop.parent/PRIMARY=2"), (), None),
        (("shop.parent/PRIMARY=2", "shop.parent/u_code='p2x'"), ("shop.parent",), 3),
    ]
    assert stats.keys_partial == ["shop.child", "shop.parent"]
    assert load_trace(out).version == 2


def test_no_schema_names_the_tables_whose_keys_are_unknown(tmp_path):
    """A MariaDB binlog without its schema: every transaction with its clock and sizes, its
    tables named in keys_unknown, as with the schema but for the keys."""
    a, b = str(tmp_path / "bare.jsonl"), str(tmp_path / "schema.jsonl")
    bare = import_binlog([MDB], a)
    import_binlog([MDB], b, schema=MDB_SCHEMA)
    ta, tb = load_trace(a), load_trace(b)
    assert ta.version == 2 and tb.version == 1 and not bare.skipped
    strip = ("writes", "before_images", "keys_unknown", "write_set_size")
    assert [{k: v for k, v in t.to_json().items() if k not in strip} for t in ta] == \
        [{k: v for k, v in t.to_json().items() if k not in strip} for t in tb]
    assert all(t.writes == () for t in ta)
    assert {x for t in ta for x in t.keys_unknown} == {"sbtest.sbtest1", "sbtest.sbtest2"}
    assert set(bare.keys_unknown) == {"sbtest.sbtest1", "sbtest.sbtest2"}
    assert ta.source["import"]["keys_unknown"]["sbtest.sbtest1"].startswith("no CREATE TABLE")


# ---------------------------------------------------------------- compressed transactions

@pytest.mark.parametrize("name", [n for n in ALL_MYSQL if n != "transaction_compression.000001"])
def test_real_files_compressed_read_as_they_read_plain(tmp_path, name):
    """Each real MySQL 8 file with its DML transactions compressed as a server with
    binlog_transaction_compression=ON writes them (importers/mysql_writer.py: the events after
    the GTID event in one zstd Transaction_payload, positions and transaction_length made
    right): the same trace but for each compressed transaction's events (the payload event
    counts too) and bytes (its transaction_length, smaller)."""
    from commitsched.importers.mysql_writer import compress_file
    plain = mysql_binlog(name)
    packed = tmp_path / name
    packed.write_bytes(compress_file(open(plain, "rb").read()))
    assert any(typ == 40 for _, typ, _ in _events(packed.read_bytes()))
    a, b = str(tmp_path / "plain.jsonl"), str(tmp_path / "packed.jsonl")
    import_binlog([plain], a)
    import_binlog([str(packed)], b)
    ta, tb = load_trace(a).txns, load_trace(b).txns
    strip = ("events", "bytes")
    assert [{k: v for k, v in t.to_json().items() if k not in strip} for t in ta] == \
        [{k: v for k, v in t.to_json().items() if k not in strip} for t in tb]
    assert [g["transaction_length"] for g in _gtid_events(str(packed))] == [t.bytes for t in tb]
    assert all(y.events in (x.events, x.events + 1) for x, y in zip(ta, tb))


def test_writer_lays_out_a_payload_as_mysql_does():
    """The writer's Transaction_payload fields come in the order and form of the real 8.0.32
    event's (compression type, uncompressed size, payload size, end mark: type, length,
    value each), so the benchmark's compressed files are what the server writes."""
    from commitsched.importers.mysql_writer import payload_body
    data = open(mysql_binlog("transaction_compression.000001"), "rb").read()
    at, _, size = next(e for e in _events(data) if e[1] == 40)
    real = data[at + 19:at + size - 4]
    ours = payload_body(b"x" * 179)
    assert real[:5] == ours[:5] == bytes([2, 1, 0, 3, 1])            # ZSTD, then the size
    assert real[5] == 179 and real[6:8] == ours[6:8] == bytes([1, 1])
    assert real[real.index(b"\x28\xb5\x2f\xfd") - 1] == 0            # end mark, then zstd


# ---------------------------------------------------------------- damage found by the fuzzer

def _import_in_child(path: str, *args: str) -> tuple[int, str]:
    """`commitsched import PATH -o PATH.jsonl ARGS` in a child process whose address space is
    capped at 2 GiB: a damaged field that makes the reader allocate what it says aborts the
    process (an allocation failure is no exception), which must not take the test run with it."""
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
            "from commitsched.cli import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "import", path, "-o", path + ".jsonl",
                        "--quiet", *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stderr


def _with_crc(data: bytearray, at: int) -> None:
    size = int.from_bytes(data[at + 9:at + 13], "little")
    data[at + size - 4:at + size] = zlib.crc32(bytes(data[at:at + size - 4])).to_bytes(4, "little")


def test_an_event_longer_than_the_file_is_refused_not_allocated(tmp_path):
    """An event header whose size field says 4 GB (fuzz, 2026-11-28): the reader asked for a
    buffer of that size before reading it, which aborts a process with less memory to give; now
    an event that ends past the file's end is refused at its position, and --skip-bad keeps the
    transactions before it."""
    data = bytearray(open(MDB, "rb").read())
    at = [a for a, typ, _ in _events(bytes(data))][len(list(_events(bytes(data)))) // 2]
    data[at + 9:at + 13] = (0xF0000000).to_bytes(4, "little")
    bad = tmp_path / "long.000002"
    bad.write_bytes(bytes(data))
    rc, err = _import_in_child(str(bad), "--schema", MDB_SCHEMA)
    assert rc == 2 and err.count("\n") == 1, err
    assert (f"truncated or corrupt event: its header says {0xF0000000} bytes, past the file's "
            f"end at {len(data)} (binlog position {at})") in err
    rc, err = _import_in_child(str(bad), "--schema", MDB_SCHEMA, "--skip-bad")
    assert rc == 0, err
    assert 0 < len(load_trace(str(bad) + ".jsonl").txns) < 11


def test_a_decimal_whose_scale_is_above_its_precision_is_refused_not_allocated(tmp_path):
    """A table map's DECIMAL(10,5) damaged into DECIMAL(10,65), its checksum made right again
    (fuzz, 2026-11-28): mysql_common sized the value from precision - scale, wrapped around,
    and asked for 8 EB, aborting the process; now the row is refused in one line."""
    data = bytearray(open(KEYTYPES, "rb").read())
    maps = [(a, size) for a, typ, size in _events(bytes(data)) if typ == 19]
    damaged = 0
    for at, size in maps:
        body = at + 19
        p = body + 8
        p += data[p] + 2                                    # the database's name, then NUL
        p += data[p] + 2                                    # the table's
        n, k = _packed(data, p)
        types = list(data[p + k:p + k + n])
        if 246 not in types:
            continue
        _, k2 = _packed(data, p + k + n)
        meta = p + k + n + k2
        sizes = {3: 0, 10: 0, 13: 0, 18: 1, 17: 1, 19: 1, 4: 1, 5: 1}
        offset = sum(sizes[t] for t in types[:types.index(246)])
        assert data[meta + offset] >= data[meta + offset + 1]     # precision, scale
        data[meta + offset + 1] = 65
        _with_crc(data, at)
        damaged += 1
    assert damaged
    bad = tmp_path / "decimal.000001"
    bad.write_bytes(bytes(data))
    rc, err = _import_in_child(str(bad))
    assert rc == 2 and err.count("\n") == 1, err
    assert "in the table map: no server writes that column type" in err and "DECIMAL(" in err
    rc, err = _import_in_child(str(bad), "--skip-bad")
    assert rc == 0, err
    load_trace(str(bad) + ".jsonl")


def test_a_clock_going_back_in_a_binary_file_is_refused_or_skipped(tmp_path):
    """A MySQL 8 file whose third transaction's sequence_number is not above the second's: the
    trace's loader refuses that clock, so the reader refuses it at that GTID event, or leaves
    the transaction out under --skip-bad, and never writes a trace that cannot be read."""
    from commitsched.importers import mysql_writer as mw
    w = mw.Writer()
    clocks = [(0, 1), (1, 2), (1, 2), (2, 3)]
    for i, (lc, sn) in enumerate(clocks):
        w.transaction(lc, sn, 1_700_000_000_000_000 + i,
                      [(mw.QUERY, mw.query_body("BEGIN", "d")), (mw.XID, i.to_bytes(8, "little"))])
    path = tmp_path / "clock.000001"
    path.write_bytes(bytes(w.data))
    third = [a for a, typ, _ in _events(bytes(w.data)) if typ == mw.ANONYMOUS_GTID][2]
    with pytest.raises(TraceError) as e:
        import_binlog([str(path)], str(tmp_path / "o.jsonl"))
    assert e.value.reason == ("sequence_number 2 is not above the previous transaction's 2 in "
                              f"the same binlog file (binlog position {third})")
    assert not (tmp_path / "o.jsonl").exists()
    stats = import_binlog([str(path)], str(tmp_path / "o.jsonl"), skip_bad=True)
    tr = load_trace(str(tmp_path / "o.jsonl")).txns
    assert [(t.last_committed, t.sequence_number) for t in tr] == [(0, 1), (1, 2), (2, 3)]
    assert stats.transactions == 3 and sum(stats.skipped.values()) == 1
