"""Binlog importers: MySQL 8 text written from the documented format, MariaDB text cut from
real recordings (tests/fixtures/binlog/README.md says how each was made), corrupted variants."""
from __future__ import annotations

import gzip
import os
import re
import shutil

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from commitsched.cli import main
from commitsched.importers import ImportStats, group_stats, import_binlog
from commitsched.importers.schema import Catalog, parse_create_table
from commitsched.trace import TraceError, load_trace

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
MY1 = os.path.join(FIX, "mysql80_binlog.000001.txt")
MY2 = os.path.join(FIX, "mysql80_binlog.000002.txt")
MDB_GROUPS = os.path.join(FIX, "mariadb_rw_t64_wait12.txt")
MDB_FK = os.path.join(FIX, "mariadb_fk_parent.txt")
MDB_FK_SCHEMA = os.path.join(FIX, "mariadb_fk_parent.schema.sql")
MDB_DDL = os.path.join(FIX, "mariadb_ddl_mix.txt")
MDB_NOMETA = os.path.join(FIX, "mariadb_no_metadata.txt")
MDB_BINARY = os.path.join(FIX, "mariadb_tiny.binlog.000002")
MDB_BINARY_SCHEMA = os.path.join(FIX, "mariadb_tiny.schema.sql")
MDB_VV_BASE64 = os.path.join(FIX, "mariadb_tiny_vv_base64.txt")
MDB_BASE64_ONLY = os.path.join(FIX, "mariadb_tiny_base64_only.txt")


def imp(tmp_path, paths, **kw):
    out = str(tmp_path / "t.jsonl")
    stats = import_binlog(paths, out, **kw)
    return stats, load_trace(out)


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return f.readlines()


# ---------------------------------------------------------------- MySQL 8

def test_mysql80_two_files(tmp_path):
    stats, tr = imp(tmp_path, [MY1, MY2])
    assert stats.dialect == "mysql" and stats.transactions == 7 and stats.files == 2
    t = {x.seq: x for x in tr}
    # DDL: ddl flag, schema from `use`, no writes
    assert t[1].ddl and t[2].ddl and t[1].db == ("shop",) and t[1].writes == ()
    assert (t[1].last_committed, t[1].sequence_number) == (0, 1)
    assert t[1].gtid == "88ebc247-06ef-11ef-97ee-0242ac130004:1"
    assert t[1].timestamp == pytest.approx(1714534357.425326)
    # two inserted rows: PRIMARY and the UNIQUE email key of each; customer is an FK parent
    assert set(t[3].writes) == {"shop.customer/PRIMARY=1", "shop.customer/email_uniq='ann@example.org'",
                                "shop.customer/PRIMARY=2", "shop.customer/email_uniq='bob@example.org'"}
    assert t[3].fk_parent and t[3].session == 43
    # child row: its own key plus the referenced parent key
    assert set(t[4].writes) == {"shop.orders/PRIMARY=100", "shop.customer/PRIMARY=1"}
    assert not t[4].fk_parent
    # UPDATE changing a unique value: before and after image keys; the old email only from before
    assert set(t[5].writes) == {"shop.customer/PRIMARY=2", "shop.customer/email_uniq='bob@example.org'",
                                "shop.customer/email_uniq='robert@example.org'"}
    assert t[5].before_images == ("shop.customer/email_uniq='bob@example.org'",)
    # rotation: file 2, sequence numbers restart
    assert (t[6].file, t[6].last_committed, t[6].sequence_number) == (2, 0, 1)
    assert (t[7].file, t[7].sequence_number) == (2, 2)
    # a NULL foreign key column references no parent
    assert t[6].writes == ("shop.orders/PRIMARY=101",)


def test_mysql80_concatenated_text_counts_files(tmp_path):
    """One text holding both files (mysqlbinlog f1 f2 > all.txt): the Rotate event and the
    second Start event give one file change, not two."""
    cat = tmp_path / "all.txt"
    cat.write_text("".join(lines_of(MY1) + lines_of(MY2)))
    _, tr = imp(tmp_path, [str(cat)])
    assert [x.file for x in tr] == [1, 1, 1, 1, 1, 2, 2]


def test_mysql80_gz_input(tmp_path):
    gz = tmp_path / "b1.txt.gz"
    with gzip.open(gz, "wt") as f:
        f.write("".join(lines_of(MY1)))
    stats, tr = imp(tmp_path, [str(gz)])
    assert stats.transactions == 5


def test_mysql_gtid_line_bad_clock_is_an_error(tmp_path):
    bad = tmp_path / "bad.txt"
    text = "".join(lines_of(MY1)).replace("last_committed=3\tsequence_number=4",
                                          "last_committed=4\tsequence_number=4")
    bad.write_text(text)
    n = next(i for i, l in enumerate(text.splitlines(), 1) if "last_committed=4\tsequence_number=4" in l)
    with pytest.raises(TraceError) as e:
        import_binlog([str(bad)], str(tmp_path / "o.jsonl"))
    assert e.value.path == str(bad) and e.value.line == n
    assert "not below" in e.value.reason


# ---------------------------------------------------------------- MariaDB (real)

def _gtid_lines(path):
    return [l for l in lines_of(path) if re.search(r"\tGTID \d+-\d+-\d+", l)]


def test_mariadb_group_commit_fixture(tmp_path):
    stats, tr = imp(tmp_path, [MDB_GROUPS])
    gl = _gtid_lines(MDB_GROUPS)
    assert stats.dialect == "mariadb" and len(tr) == len(gl)
    # commit ids exactly as printed, in order
    printed = [int(m.group(1)) if (m := re.search(r" cid=(\d+)", l)) else None for l in gl]
    assert [x.commit_id for x in tr] == printed
    assert any(c is not None for c in printed)
    n, groups = group_stats(tr)
    assert stats.groups == groups and n == len(tr)
    # groups by hand: a new group whenever the cid changes or is absent
    by_hand = sum(1 for i, c in enumerate(printed) if c is None or i == 0 or printed[i - 1] != c)
    assert groups == by_hand < len(tr)
    # flags: every sysbench transaction is transactional; waited where printed
    for x, l in zip(tr, gl):
        assert "transactional" in x.flags
        assert ("waited" in x.flags) == (" waited" in l)
        assert "allow_parallel" in x.flags
    # each sysbench oltp_read_write transaction writes rows of sbtest tables by PRIMARY key
    assert all(x.writes and all(re.fullmatch(r"sbtest\.sbtest\d/PRIMARY=\d+", k) for k in x.writes)
               for x in tr)


def test_mariadb_keys_match_row_images(tmp_path):
    """Row keys recomputed independently from the @1 (id) lines of the first transaction."""
    _, tr = imp(tmp_path, [MDB_GROUPS])
    text = "".join(lines_of(MDB_GROUPS))
    first = text.split("\tGTID ")[1]
    tables = re.findall(r"### (?:UPDATE|INSERT INTO|DELETE FROM) `sbtest`\.`(sbtest\d)`\n"
                        r"### (?:WHERE|SET)\n###   @1=(\d+) ", first)
    expect = {f"sbtest.{t}/PRIMARY={v}" for t, v in tables}
    assert expect and set(tr.txns[0].writes) == expect


def test_mariadb_fk_fixture(tmp_path):
    stats, tr = imp(tmp_path, [MDB_FK], schema=MDB_FK_SCHEMA)
    assert len(tr) == len(_gtid_lines(MDB_FK))
    child = [x for x in tr if any(k.startswith("sbtest.child/") for k in x.writes)]
    parent_only = [x for x in tr if x.writes and all(k.startswith("sbtest.parent/") for k in x.writes)]
    assert child and parent_only
    for x in child:  # every child row also names the parent row it points to
        assert any(k.startswith("sbtest.parent/PRIMARY=") for k in x.writes)
        assert not x.fk_parent
    for x in parent_only:  # writes to the referenced table
        assert x.fk_parent
        assert any(k.startswith("sbtest.parent/name_uniq=") for k in x.writes)
    renamed = [x for x in tr if x.before_images]
    assert renamed, "the fixture holds a parent rename (UNIQUE value change)"
    for x in renamed:
        assert all(k.startswith("sbtest.parent/name_uniq=") for k in x.before_images)
        assert len([k for k in x.writes if "name_uniq" in k]) == 2


def test_mariadb_fk_needs_schema_for_fk_keys(tmp_path):
    """Without the schema only the table-map metadata (PRIMARY only) is known: the import says
    so, and the FK parent keys are absent."""
    stats, tr = imp(tmp_path, [MDB_FK])
    assert "sbtest.child" in stats.metadata_tables
    assert not any(x.fk_parent for x in tr)
    assert tr.source["import"]["keys_from_table_map_metadata"]


def test_mariadb_ddl_fixture(tmp_path):
    stats, tr = imp(tmp_path, [MDB_DDL])
    ddl = [x for x in tr if x.ddl]
    assert len(ddl) >= 2
    for x in ddl:
        assert "ddl" in x.flags and "transactional" not in x.flags and x.writes == ()
        assert x.db == ("sbtest",)
    # the side table's UNIQUE key exists exactly between ADD UNIQUE and DROP INDEX
    has_u = [x.seq for x in tr if any(k.startswith("sbtest.side/u_uniq=") for k in x.writes)]
    side = [x.seq for x in tr if any(k.startswith("sbtest.side/") for k in x.writes)]
    assert side and has_u and set(has_u) < set(side)
    assert stats.summary()["ddl_transactions"] == len(ddl)


def test_mariadb_unknown_tables_are_named_not_refused(tmp_path):
    """Text without table definitions: every transaction is imported with its commit id, flags
    and sizes, and names the tables whose keys are unknown (trace format version 2)."""
    stats, tr = imp(tmp_path, [MDB_NOMETA])
    assert len(tr) == len(_gtid_lines(MDB_NOMETA)) and not stats.skipped
    assert tr.version == 2 and stats.keys_unknown
    dml = [t for t in tr if t.rows]
    assert dml and all(t.writes == () and t.keys_unknown for t in dml)
    assert tr.source["import"]["keys_unknown"] == dict(sorted(stats.keys_unknown.items()))
    _, known = imp(tmp_path, [MDB_NOMETA], schema=MDB_BINARY_SCHEMA)
    assert [(t.commit_id, t.flags, t.events, t.bytes, t.rows) for t in tr] == \
        [(t.commit_id, t.flags, t.events, t.bytes, t.rows) for t in known]


def test_import_note_names_unknown_tables_and_how_to_give_them(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    assert main(["import", MDB_NOMETA, "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "keys unknown for sbtest.sbtest" in err and "--schema" in err and "--schema-from" in err


def test_schema_option_fixes_unknown_tables(tmp_path):
    stats, tr = imp(tmp_path, [MDB_NOMETA], schema=MDB_BINARY_SCHEMA)
    assert len(tr) == len(_gtid_lines(MDB_NOMETA)) and not stats.skipped


def _rows_of(trace):
    return [(x.gtid, x.writes, x.flags, x.timestamp, x.events, x.bytes, x.rows) for x in trace]


def test_vv_without_decode_rows_reads_the_decoded_rows(tmp_path):
    """`-vv` without --base64-output=decode-rows (the printer's default) prints every rows event
    twice: a base64 BINLOG statement, then the decoded `###` rows. Real output of the same binlog
    printed both ways gives the same trace."""
    base64_lines = sum(1 for l in lines_of(MDB_VV_BASE64) if l.startswith("BINLOG '"))
    assert base64_lines > len(_gtid_lines(MDB_VV_BASE64))   # the Start event's and every rows event's
    _, a = imp(tmp_path, [MDB_VV_BASE64], schema=MDB_BINARY_SCHEMA)
    _, b = imp(tmp_path, [MDB_NOMETA], schema=MDB_BINARY_SCHEMA)
    assert len(a) == len(_gtid_lines(MDB_VV_BASE64)) == 12
    assert _rows_of(a) == _rows_of(b)
    assert sum(len(x.writes) for x in a) > 0


def test_rows_printed_only_as_base64_are_decoded_or_refused_at_their_statement(tmp_path,
                                                                               monkeypatch):
    """Without -v the rows exist only in base64: decoded by the binary reader's parser when it
    is built (the same trace as the decoded rows); without it, refused at the end of the first
    rows event's BINLOG statement (the Start event's BINLOG statement before it is fine)."""
    lines = lines_of(MDB_BASE64_ONLY)
    assert not any(l.startswith("###") for l in lines)
    from commitsched.importers import binlog_text
    if binlog_text.BlockDecoder is not None:
        _, a = imp(tmp_path, [MDB_BASE64_ONLY], schema=MDB_BINARY_SCHEMA)
        _, b = imp(tmp_path, [MDB_NOMETA], schema=MDB_BINARY_SCHEMA)
        assert len(a) == len(_gtid_lines(MDB_BASE64_ONLY)) == 2 and _rows_of(a) == _rows_of(b)[:2]
    monkeypatch.setattr(binlog_text, "BlockDecoder", None)
    with pytest.raises(TraceError) as e:
        import_binlog([MDB_BASE64_ONLY], str(tmp_path / "t.jsonl"), schema=MDB_BINARY_SCHEMA)
    first_rows = next(i for i, l in enumerate(lines) if "\tUpdate_rows:" in l or "\tWrite_rows:" in l)
    close = next(i for i in range(first_rows, len(lines)) if lines[i].startswith("'/*!*/;")) + 1
    assert e.value.line == close and "only as base64" in e.value.reason and "-v" in e.value.reason
    stats, tr = imp(tmp_path, [MDB_BASE64_ONLY], schema=MDB_BINARY_SCHEMA, skip_bad=True)
    assert len(tr) == 0 and sum(stats.skipped.values()) == len(_gtid_lines(MDB_BASE64_ONLY)) == 2


@pytest.mark.parametrize("cut,reason", [
    (lambda ls, i: ls[:i + 2], "ends inside a BINLOG statement"),
    (lambda ls, i: ls[:i + 2] + ["COMMIT/*!*/;\n"] + ls[i + 2:], "without its closing"),
])
def test_broken_binlog_statement_is_an_error_at_its_line(tmp_path, cut, reason):
    lines = lines_of(MDB_VV_BASE64)
    i = next(k for k, l in enumerate(lines) if l.startswith("BINLOG '") and k > 20)
    p = tmp_path / "bad.txt"
    p.write_text("".join(cut(lines, i)), encoding="utf-8")
    with pytest.raises(TraceError) as e:
        import_binlog([str(p)], str(tmp_path / "t.jsonl"), schema=MDB_BINARY_SCHEMA)
    assert reason in e.value.reason and e.value.line is not None and e.value.line >= i + 2


def _moved_on(path, out, by):
    """A MariaDB text binlog with its GTIDs moved on by `by`: the next file of the same stream,
    as two copies of one file are not (the import refuses GTIDs that go back)."""
    text = re.sub(r"(GTID \d+-\d+-|gtid_seq_no=)(\d+)",
                  lambda m: m.group(1) + str(int(m.group(2)) + by), "".join(lines_of(path)))
    out.write_text(text, encoding="utf-8")
    return str(out)


def _with_artificial_rotate(path, out, name):
    """`path` as a printer reading from a server prints it: an artificial Rotate event (time 0,
    end_log_pos 0) naming the file comes before its Start event (constructed from real text)."""
    lines = lines_of(path)
    i = next(k for k, l in enumerate(lines) if l.startswith("DELIMITER /*!*/;")) + 1
    fake = ["# at 4\n", f"#700101  0:00:00 server id 1  end_log_pos 0 \tRotate to {name}  pos: 4\n"]
    out.write_text("".join(lines[:i] + fake + lines[i:]), encoding="utf-8")
    return str(out)


def test_artificial_rotate_does_not_start_a_file(tmp_path):
    a = _with_artificial_rotate(MDB_NOMETA, tmp_path / "a.txt", "binlog.000002")
    b = _with_artificial_rotate(_moved_on(MDB_NOMETA, tmp_path / "next.txt", 12),
                                tmp_path / "b.txt", "binlog.000003")
    stats, tr = imp(tmp_path, [a], schema=MDB_BINARY_SCHEMA)
    _, plain = imp(tmp_path, [MDB_NOMETA], schema=MDB_BINARY_SCHEMA)
    assert stats.files == 1 and {x.file for x in tr} == {1} and _rows_of(tr) == _rows_of(plain)
    stats, tr = imp(tmp_path, [a, b], schema=MDB_BINARY_SCHEMA)
    assert stats.files == 2 and [x.file for x in tr] == [1] * len(plain) + [2] * len(plain)


def test_padded_float_value_loses_its_padding():
    from commitsched.importers.binlog_text import _value
    assert _value("12345.7              /* FLOAT meta=4 nullable=1 is_null=0 */") == ("12345.7", False)
    assert _value("'a  ' /* VARSTRING(40) meta=40 nullable=1 is_null=0 */") == ("'a  '", False)


def test_several_inputs_are_several_files(tmp_path):
    _, tr = imp(tmp_path, [MDB_GROUPS, _moved_on(MDB_GROUPS, tmp_path / "next.txt", 1000)])
    files = [x.file for x in tr]
    half = len(tr) // 2
    assert files[:half] == [1] * half and files[half:] == [2] * half


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
def test_binary_binlog_is_decoded(tmp_path):
    stats, tr = imp(tmp_path, [MDB_BINARY], schema=MDB_BINARY_SCHEMA)
    assert stats.transactions > 0 and all(x.gtid for x in tr)


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
def test_truncated_binary_binlog_is_refused(tmp_path):
    data = open(MDB_BINARY, "rb").read()
    cut = tmp_path / "cut.000002"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(TraceError) as e:
        import_binlog([str(cut)], str(tmp_path / "o.jsonl"), schema=MDB_BINARY_SCHEMA)
    assert str(cut) in str(e.value)
    assert not (tmp_path / "o.jsonl").exists()


# ---------------------------------------------------------------- corrupt input

def test_truncation_at_every_transaction_boundary_is_refused(tmp_path):
    text = lines_of(MY1)
    out = tmp_path / "o.jsonl"
    out.write_text("previous content\n")
    for cut in range(10, len(text) - 1, 7):
        p = tmp_path / "cut.txt"
        p.write_text("".join(text[:cut]))
        with pytest.raises(TraceError) as e:
            import_binlog([str(p)], str(out))
        assert e.value.path == str(p) and e.value.line is not None
        assert out.read_text() == "previous content\n"  # untouched: nothing half-written
    assert [f for f in os.listdir(tmp_path) if f.startswith(".")] == []


def test_damaged_row_line_names_its_line(tmp_path):
    text = lines_of(MY1)
    i = next(i for i, l in enumerate(text) if l.startswith("###   @2="))
    text[i] = "###   @2 'ann@example.org'\n"
    p = tmp_path / "bad.txt"
    p.write_text("".join(text))
    with pytest.raises(TraceError) as e:
        import_binlog([str(p)], str(tmp_path / "o.jsonl"))
    assert e.value.line == i + 1 and "malformed decoded row line" in e.value.reason


def test_skip_bad_drops_only_the_damaged_transaction(tmp_path):
    text = lines_of(MY1)
    i = next(i for i, l in enumerate(text) if l.startswith("###   @2="))
    text[i] = "garbage\n"
    p = tmp_path / "bad.txt"
    p.write_text("".join(text))
    stats, tr = imp(tmp_path, [str(p)], skip_bad=True)
    assert stats.transactions == 4 and sum(stats.skipped.values()) == 1
    assert [x.gtid.split(":")[1] for x in tr] == ["1", "2", "4", "5"]


def test_a_clock_going_back_in_a_file_is_refused_or_skipped(tmp_path):
    """Two whole transactions of one file in swapped order (sequence_number 5, then 4): the
    trace's loader refuses such a clock, so the import refuses it at the transaction that goes
    back, or leaves that transaction out under --skip-bad, and never writes a trace its own
    loader cannot read (fuzz, 2026-11-28: the import wrote one)."""
    text = lines_of(MY1)
    gtids = [i for i, line in enumerate(text) if "\tGTID\t" in line]
    starts = [i - 1 for i in gtids]                     # the "# at" line before each
    fourth, fifth = starts[3], starts[4]
    end = next(i for i in range(fifth, len(text)) if text[i].startswith("COMMIT")) + 2
    moved = text[:fourth] + text[fifth:end] + text[fourth:fifth] + text[end:]
    p = tmp_path / "swapped.txt"
    p.write_text("".join(moved))
    with pytest.raises(TraceError) as e:
        import_binlog([str(p)], str(tmp_path / "o.jsonl"))
    back = fourth + (end - fifth) + 2                   # the moved fourth's GTID line, 1-based
    assert e.value.line == back and e.value.reason.startswith(
        "sequence_number 4 is not above the previous transaction's 5 in the same binlog file")
    assert not (tmp_path / "o.jsonl").exists()
    stats, tr = imp(tmp_path, [str(p)], skip_bad=True)
    assert [x.gtid.split(":")[1] for x in tr] == ["1", "2", "3", "5"]
    assert stats.transactions == 4 and sum(stats.skipped.values()) == 1


_GARBAGE = st.sampled_from(["", "###   @1=", "### UPDATE `a`.`b`", "# at x", "COMMIT/*!*/;", "BEGIN",
                            "#240501  3:32:40 server id 1  end_log_pos 1 CRC32 0x0 \tGTID\tlast_committed=9",
                            "\x00\x01", "/*!*/;", "### SET", "#Q> hi", "DELIMITER ;"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_input_gives_a_trace_or_a_placed_error(tmp_path, data):
    """Any line replaced, deleted, duplicated or swapped with another, with or without
    --skip-bad: either a trace its own loader reads or a TraceError with the file and a line
    number, and never a partial output file."""
    src = data.draw(st.sampled_from([MY1, MDB_GROUPS, MDB_DDL]))
    text = lines_of(src)
    n = data.draw(st.integers(1, 3))
    for _ in range(n):
        i = data.draw(st.integers(0, len(text) - 1))
        op = data.draw(st.sampled_from(["replace", "delete", "dup", "swap"]))
        if op == "replace":
            text[i] = data.draw(_GARBAGE) + "\n"
        elif op == "delete":
            del text[i]
        elif op == "swap":
            j = data.draw(st.integers(0, len(text) - 1))
            text[i], text[j] = text[j], text[i]
        else:
            text.insert(i, text[i])
    p = tmp_path / "m.txt"
    p.write_text("".join(text))
    out = tmp_path / "m.jsonl"
    if out.exists():
        out.unlink()
    skip_bad = data.draw(st.booleans())
    try:
        stats = import_binlog([str(p)], str(out), skip_bad=skip_bad)
    except TraceError as e:
        assert e.path == str(p)
        assert not out.exists()
        assert [f for f in os.listdir(tmp_path) if f.startswith(".")] == []
        return
    assert isinstance(stats, ImportStats)
    assert len(load_trace(str(out))) == stats.transactions


# ---------------------------------------------------------------- schema

def test_create_table_forms():
    t = parse_create_table(
        "CREATE TABLE `d`.`t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `a` varchar(10) DEFAULT 'KEY,x',\n"
        "  `b` int, c int UNIQUE,\n  PRIMARY KEY (`id`),\n  UNIQUE KEY `ab` (`a`(5),`b`),\n  KEY `k` (`b`),\n"
        "  CONSTRAINT `fk1` FOREIGN KEY (`b`) REFERENCES `p` (`pid`) ON DELETE CASCADE\n) ENGINE=InnoDB", None)
    assert t.db == "d" and t.columns == ["id", "a", "b", "c"]
    assert t.unique == {"PRIMARY": ["id"], "c": ["c"], "ab": ["a", "b"]}
    assert [(f.columns, f.parent_db, f.parent_table, f.parent_columns) for f in t.fks] == \
        [(["b"], "d", "p", ["pid"])]


def test_alter_we_cannot_follow_makes_table_unknown():
    c = Catalog()
    c.apply_ddl("CREATE TABLE t (id INT PRIMARY KEY, a INT)", "d")
    c.apply_ddl("ALTER TABLE t ADD COLUMN z INT", "d")
    assert c.get("d", "t").columns == ["id", "a", "z"]
    c.apply_ddl("ALTER TABLE t ADD UNIQUE KEY uz (z), ADD INDEX ia (a)", "d")
    assert c.get("d", "t").unique == {"PRIMARY": ["id"], "uz": ["z"]}
    c.apply_ddl("ALTER TABLE t ADD COLUMN y INT FIRST", "d")  # shifts @N positions
    assert c.get("d", "t") is None and "not followed" in c.unknown[("d", "t")]
    c.apply_ddl("CREATE TABLE t (id INT PRIMARY KEY)", "d")
    assert c.get("d", "t") is not None
    c.apply_ddl("RENAME TABLE t TO u", "d")
    assert c.get("d", "u") is not None and c.get("d", "t") is None
    c.apply_ddl("DROP TABLE IF EXISTS `d`.`u`", None)
    assert c.get("d", "u") is None


def test_no_primary_key_marks_no_pk(tmp_path):
    text = "".join(lines_of(MY1)).replace("  PRIMARY KEY (id),\n", "")
    p = tmp_path / "nopk.txt"
    p.write_text(text)
    _, tr = imp(tmp_path, [str(p)])
    t3 = tr.txns[2]
    assert t3.no_pk and set(t3.writes) == {"shop.customer/email_uniq='ann@example.org'",
                                           "shop.customer/email_uniq='bob@example.org'"}


def test_progress_only_on_a_terminal(tmp_path, capsys):
    import_binlog([MY1], str(tmp_path / "o.jsonl"))
    assert capsys.readouterr().err == ""


def test_mysql_anonymous_gtids(tmp_path):
    text = "".join(lines_of(MY1)).replace("\tGTID\tlast_committed", "\tAnonymous_GTID\tlast_committed")
    text = re.sub(r"GTID_NEXT= '[^']*:\d+'", "GTID_NEXT= 'ANONYMOUS'", text)
    p = tmp_path / "anon.txt"
    p.write_text(text)
    _, tr = imp(tmp_path, [str(p)])
    assert len(tr) == 5 and all(x.gtid is None for x in tr)
    assert [x.sequence_number for x in tr] == [1, 2, 3, 4, 5]


def test_statement_based_dml_is_refused(tmp_path):
    text = "".join(lines_of(MY2)).replace("BEGIN\n/*!*/;", "UPDATE orders SET total = 0\n/*!*/;", 1)
    p = tmp_path / "sbr.txt"
    p.write_text(text)
    with pytest.raises(TraceError) as e:
        import_binlog([str(p)], str(tmp_path / "o.jsonl"))
    assert "statement-based DML" in e.value.reason and e.value.line is not None


def test_schema_column_count_mismatch_makes_table_unknown(tmp_path):
    """A --schema that disagrees with the binlog's own table map (out of date) is not trusted:
    the table's keys are unknown, and the notes say why."""
    schema = tmp_path / "s.sql"
    schema.write_text(open(MDB_BINARY_SCHEMA).read().replace("`pad` char(60)", "`pad` char(60),\n  `extra` int"))
    stats = import_binlog([MDB_GROUPS], str(tmp_path / "o.jsonl"), schema=str(schema))
    assert stats.keys_unknown and all("columns" in why for why in stats.keys_unknown.values())


# ---------------------------------------------------------------- transaction size

def _events_by_hand(path):
    """Each transaction's (event count, bytes, rows) recounted from the printed text: every
    event header line from a GTID event to the next XID / COMMIT, its `# at` positions and the
    `### INSERT/UPDATE/DELETE` lines."""
    out, cur, at = [], None, None
    for line in lines_of(path):
        if line.startswith("# at "):
            at = int(line[5:])
        m = re.match(r"^#\d{6}\s+[\d:]+ server id \d+\s+end_log_pos (\d+)", line)
        if m:
            end = int(m.group(1))
            if "\tGTID " in line:
                cur = [1, at, end, 0]
            elif cur is not None:
                cur[0] += 1
                cur[2] = end
                if "\tXid = " in line:
                    out.append((cur[0], cur[2] - cur[1], cur[3]))
                    cur = None
        elif cur is not None and re.match(r"^### (INSERT INTO|UPDATE|DELETE FROM) ", line):
            cur[3] += 1
    return out


def test_mariadb_transaction_size_from_event_positions(tmp_path):
    _, tr = imp(tmp_path, [MDB_GROUPS])
    assert [(t.events, t.bytes, t.rows) for t in tr] == _events_by_hand(MDB_GROUPS)
    # sysbench oltp_read_write: GTID, 4 x (Annotate_rows, Table_map, rows event), Xid
    assert {t.events for t in tr} == {14}


def test_mysql_transaction_length_is_the_size(tmp_path):
    _, tr = imp(tmp_path, [MY1])
    printed = [int(m.group(1)) for l in lines_of(MY1) if (m := re.search(r"transaction_length=(\d+)", l))]
    assert [t.bytes for t in tr] == printed
    assert all(t.events >= 2 for t in tr) and tr.txns[0].rows == 0 and tr.txns[2].rows == 2


def test_size_fields_are_validated(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"format": "commitsched-trace", "version": 1, "source": {}}\n'
                 '{"seq": 1, "writes": [], "events": -3}\n')
    with pytest.raises(TraceError, match='"events" must be a non-negative integer'):
        load_trace(str(p))


def test_mysql56_text_is_refused_in_one_line_naming_the_version(tmp_path):
    """A MySQL 5.6 printer's text (its Start event names the server; GTID events, where there
    are any, carry no logical clock): refused at that line, as the binary reader refuses the
    file."""
    text = tmp_path / "m56.txt"
    text.write_text("# at 4\n#200314 10:00:00 server id 1  end_log_pos 120 CRC32 0x00000000 "
                    "\tStart: binlog v 4, server v 5.6.51-log created 200314 10:00:00 at startup\n")
    with pytest.raises(TraceError) as e:
        import_binlog([str(text)], str(tmp_path / "o.jsonl"), skip_bad=True)
    assert e.value.line == 2 and e.value.reason.startswith("a MySQL 5.6.51-log binlog: MySQL "
                                                           "before 5.7 writes no logical clock")
