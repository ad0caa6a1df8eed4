"""Real `mysqlbinlog` text from MySQL 5.7, 8.0, 8.2 and 8.4 servers through the text importer.

tests/fixtures/binlog/mysql_real_text.json lists each file: where it was found, the server,
how it was printed, what was cut, its sha256, and the values it states (each GTID event's
last_committed / sequence_number / transaction_length, the GTID) with the row keys its row images
give. The texts are third-party material and are not vendored; each test reads its file from
shared/mysql_text/ beside the repository ($COMMITSCHED_MYSQL_TEXT, tests/shared_data.py), and
fails where it is absent.
"""
from __future__ import annotations

import json
import os

import msgspec
import pytest
from shared_data import shared_file

from commitsched.importers import import_binlog
from commitsched.trace import TraceError, load_trace
from commitsched.trackers import get_tracker

HERE = os.path.dirname(__file__)
MANIFEST = os.path.join(HERE, "fixtures", "binlog", "mysql_real_text.json")
FILES = json.load(open(MANIFEST, encoding="utf-8"))["files"]


def _text(entry: dict) -> str:
    return shared_file("mysql_text", "COMMITSCHED_MYSQL_TEXT", entry["name"], entry["sha256"])


def _import(entry: dict, tmp_path, **kw):
    path = _text(entry)
    schema = None
    if entry.get("schema"):
        schema = str(tmp_path / "schema.sql")
        with open(schema, "w", encoding="utf-8") as f:
            f.write(entry["schema"])
    out = str(tmp_path / "t.jsonl")
    stats = import_binlog([path], out, schema=schema, **kw)
    return stats, load_trace(out)


def _check(trace, want: list[dict]) -> None:
    assert len(trace) == len(want)
    for txn, w in zip(trace, want):
        assert (txn.last_committed, txn.sequence_number) == (w["last_committed"], w["sequence_number"])
        assert txn.gtid == w["gtid"]
        assert sorted(txn.writes) == sorted(w["writes"])
        if "bytes" in w:          # the GTID event's transaction_length (MySQL 8)
            assert txn.bytes == w["bytes"]
        assert txn.ddl == w.get("ddl", False)
        assert txn.no_pk == w.get("no_pk", False)
        assert list(txn.keys_unknown) == w.get("keys_unknown", [])
        if "write_set_size" in w:
            assert txn.write_set_size == w["write_set_size"]


def test_manifest_names_a_source_and_version_for_every_file():
    assert len(FILES) == 8
    for e in FILES:
        src = e["source"]
        assert src.get("commit") and src.get("path") or src.get("index_file_id")
        assert e["server"] and e["printed_with"] and e["cut"] and len(e["sha256"]) == 64
        assert ("transactions" in e) != ("refused" in e)
    versions = {e["server"].split()[1][:3] for e in FILES if e["server"].startswith("MySQL")}
    assert versions == {"5.7", "8.0", "8.2", "8.4"}


@pytest.mark.parametrize("entry", [e for e in FILES if "transactions" in e], ids=lambda e: e["name"])
def test_real_text_imports_with_the_values_it_states(entry, tmp_path):
    stats, trace = _import(entry, tmp_path)
    assert stats.dialect == "mysql" and not stats.skipped and stats.files == 1
    assert trace.source["server"] == entry["server"]
    _check(list(trace), entry["transactions"])


def _committed_timestamps(path: str) -> list[int | None]:
    """Each GTID line's original_committed_timestamp (µs), as the text says it."""
    out = []
    for line in open(path, encoding="utf-8", errors="replace"):
        if "\tlast_committed=" in line:
            stamp = [f for f in line.split() if f.startswith("original_committed_timestamp=")]
            out.append(int(stamp[0].partition("=")[2]) if stamp else None)
    return out


@pytest.mark.parametrize("entry", [e for e in FILES if "transactions" in e], ids=lambda e: e["name"])
def test_real_text_commit_times_to_the_microsecond(entry, tmp_path):
    """MySQL 8's GTID lines carry the commit time in µs: the trace's `timestamp` is it, to the
    microsecond (the lag replay reads whole-second stamps as MariaDB's one-second ones); 5.7's
    lines have none, and the event header's second stands in."""
    _, trace = _import(entry, tmp_path)
    stamps = _committed_timestamps(_text(entry))
    assert len(stamps) == len(trace)
    for txn, us in zip(trace, stamps):
        if us is None:
            assert txn.timestamp == int(txn.timestamp)
        else:
            assert txn.timestamp == us / 1e6


@pytest.mark.parametrize("entry", [e for e in FILES if "refused" in e], ids=lambda e: e["name"])
def test_real_text_the_importer_cannot_read_is_refused_at_its_line(entry, tmp_path):
    want = entry["refused"]
    with pytest.raises(TraceError) as e:
        _import(entry, tmp_path)
    assert e.value.line == want["line"] and want["reason"] in e.value.reason
    stats, trace = _import(entry, tmp_path, skip_bad=True)
    assert len(trace) == want["skip_bad_transactions"] and sum(stats.skipped.values()) > 0
    _check(list(trace), entry.get("skip_bad_transactions", []))


@pytest.mark.parametrize("entry", [e for e in FILES if e.get("writeset_from_commit_order")],
                         ids=lambda e: e["name"])
def test_writeset_tracker_reproduces_the_real_84_clock(entry, tmp_path):
    """One session committed these one by one, so the commit-order clock is sequence_number - 1;
    the writeset tracker must lower it to what MySQL 8.4 wrote."""
    _, trace = _import(entry, tmp_path)
    serial = [msgspec.structs.replace(t, last_committed=t.sequence_number - 1) for t in trace]
    assert len({t.session for t in trace}) == 1
    got = [(lc, sn) for _t, (lc, sn, _f) in get_tracker("writeset").annotate(serial)]
    want = [(w["last_committed"], w["sequence_number"]) for w in entry["transactions"]]
    assert got == want and got != [(t.last_committed, t.sequence_number) for t in serial]
