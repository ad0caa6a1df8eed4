"""Binlogs imported with no schema at hand (trace format version 2: `keys_unknown`, and MINIMAL
images' `keys_partial`): what runs as usual (the source's own clock and commit ids, the
durability what-if, `database`), and what says in one line that it needs the keys (the
write-set trackers, slave_group_commit, the optimistic appliers, the blame; model/keys.py)."""
from __future__ import annotations

import json
import os

import pytest

from commitsched.cli import main
from commitsched.importers import binlog_binary, import_binlog
from commitsched.keys import missing_keys, needs_keys
from commitsched.trace import Txn, load_trace, trace_from_dicts, write_trace

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "binlog")
MDB_TEXT = os.path.join(FIX, "mariadb_no_metadata.txt")        # the tiny binlog, no definitions
MDB_SCHEMA = os.path.join(FIX, "mariadb_tiny.schema.sql")
MY1, MY2 = (os.path.join(FIX, f"mysql80_binlog.00000{i}.txt") for i in (1, 2))
KEYTYPES = os.path.join(FIX, "mariadb_keytypes.binlog.000001")
HOW = "give --schema FILE (mysqldump --no-data) or --schema-from URL"


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def bare(tmp_path) -> str:
    """The tiny MariaDB binlog's text imported without its schema."""
    out = str(tmp_path / "bare.jsonl")
    import_binlog([MDB_TEXT], out)
    return out


@pytest.fixture
def keyed(tmp_path) -> str:
    out = str(tmp_path / "keyed.jsonl")
    import_binlog([MDB_TEXT], out, schema=MDB_SCHEMA)
    return out


def test_which_schedulers_need_keys():
    assert [n for n in ("commit_order+mysql", "writeset+mysql", "writeset_session+mysql",
                        "database+mysql", "commit_id+mariadb_conservative",
                        "commit_id+mariadb_optimistic", "commit_id+mariadb_aggressive",
                        "slave_group_commit+mariadb_conservative", "serial")
            if needs_keys(n)] == ["writeset+mysql", "writeset_session+mysql",
                                  "commit_id+mariadb_optimistic", "commit_id+mariadb_aggressive",
                                  "slave_group_commit+mariadb_conservative"]


def test_source_dependencies_run_without_the_keys_and_say_what_they_miss(capsys, bare, keyed):
    """commit_id and database run on the trace without keys. database gives the very results it
    gives with the schema on this binlog; commit_id's
    conservative applier lets the next commit group start while the previous one commits, and
    the row-lock waits that follow are made from the keys: without them it is faster, and the
    note says so."""
    runs, notes = {}, {}
    for name, path in (("bare", bare), ("keyed", keyed)):
        rc, out, err = run(capsys, "score", path, "--json", "--workers", "2,4", "--z3-bound",
                           "off", "--jobs", "1", "--profile", "durable-mariadb", "--scheduler",
                           "commit_id+mariadb_conservative", "--scheduler", "database+mysql")
        assert rc == 0, err
        runs[name] = {(r["scheduler"], r["workers"]): r["makespan"] for r in json.loads(out)}
        notes[name] = err
    assert runs["bare"].keys() == runs["keyed"].keys() and len(runs["bare"]) == 4
    for w in (2, 4):
        assert runs["bare"]["database+mysql", w] == runs["keyed"]["database+mysql", w]
        assert runs["bare"]["commit_id+mariadb_conservative", w] < \
            runs["keyed"]["commit_id+mariadb_conservative", w]
    assert "row-lock waits on them are not simulated" in notes["bare"]
    assert "not simulated" not in notes["keyed"]


def test_score_skips_what_needs_keys_naming_the_tables(capsys, bare):
    rc, out, err = run(capsys, "score", bare, "--json", "--workers", "2", "--z3-bound", "off",
                       "--jobs", "1")
    assert rc == 0
    ran = {r["scheduler"] for r in json.loads(out)}
    assert ran == {"serial", "database+mysql", "commit_id+mariadb_conservative"}
    for name in ("writeset+mysql", "commit_id+mariadb_optimistic",
                 "slave_group_commit+mariadb_conservative"):
        assert (f"commitsched: skipped {name}: keys unknown for tables sbtest.sbtest1, "
                f"sbtest.sbtest2; {HOW}") in err


@pytest.mark.parametrize("scheduler", ["writeset+mysql", "commit_id+mariadb_optimistic"])
def test_a_scheduler_named_that_needs_keys_is_one_line(capsys, bare, scheduler):
    rc, out, err = run(capsys, "score", bare, "--scheduler", scheduler, "--workers", "2")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err == (f"commitsched: error: keys unknown for tables sbtest.sbtest1, sbtest.sbtest2; "
                   f"{HOW} when importing the binlog\n")


def test_blame_and_schedule_say_it_in_one_line(capsys, bare):
    rc, _, err = run(capsys, "blame", bare, "--scheduler", "commit_id+mariadb_conservative",
                     "--workers", "2")
    assert rc == 2 and err.startswith("commitsched: error: blame: keys unknown for tables "
                                      "sbtest.sbtest1, sbtest.sbtest2;") and err.count("\n") == 1
    rc, _, err = run(capsys, "schedule", bare, "--scheduler", "writeset+mysql", "--workers", "2")
    assert rc == 2 and "keys unknown for tables sbtest.sbtest" in err and "(first met at seq" in err
    rc, _, err = run(capsys, "check", bare, "--scheduler", "commit_id+mariadb_conservative",
                     "--workers", "2")
    assert rc == 2 and err.startswith("commitsched: error: check: keys unknown for tables")


def test_report_shows_what_it_can_and_names_what_it_could_not(capsys, bare, tmp_path):
    out = tmp_path / "rep"
    rc, _, err = run(capsys, "report", bare, "-o", out, "--workers", "1,2", "--quiet",
                     "--jobs", "1")
    assert rc == 0, err
    data = json.loads((out / "report.json").read_text())
    assert data["keys"]["unknown"] == ["sbtest.sbtest1", "sbtest.sbtest2"]
    assert set(data["skipped"]) == {"writeset+mysql", "writeset_session+mysql",
                                    "commit_id+mariadb_optimistic", "commit_id+mariadb_aggressive",
                                    "slave_group_commit+mariadb_conservative",
                                    "commit_order+mysql"}      # (no MySQL clock in a MariaDB log)
    assert {r["scheduler"] for r in data["results"]} == {"serial", "database+mysql",
                                                         "commit_id+mariadb_conservative"}
    assert data["blame"]["skipped"].startswith("blame: keys unknown for tables sbtest.sbtest1")
    assert data["whatif"]["commit_wait"]["skipped"].startswith("commit wait what-if: keys unknown")
    assert data["whatif"]["durability"]                               # needs no keys: there
    assert not any(s["tracker"] in ("writeset", "slave_group_commit")
                   for s in data["tracker_shapes"])
    page = (out / "index.html").read_text()
    assert "keys unknown for tables sbtest.sbtest1, sbtest.sbtest2" in page and HOW in page


def test_minimal_images_run_and_say_they_see_fewer_conflicts(capsys, tmp_path):
    """binlog_row_image=MINIMAL: the write-set schedulers run on the primary keys there are,
    and a note says that they find fewer conflicts than the server did."""
    if not binlog_binary.available():
        pytest.skip("commitsched_binlog not built (make setup builds it)")
    trace = str(tmp_path / "mini.jsonl")
    import_binlog([KEYTYPES], trace)
    assert missing_keys(load_trace(trace)).partial == ("shop.child", "shop.parent")
    rc, out, err = run(capsys, "score", trace, "--scheduler", "writeset+mysql", "--workers", "2",
                       "--json", "--z3-bound", "off")
    assert rc == 0 and json.loads(out)
    assert "note: keys partial for tables shop.child, shop.parent (binlog_row_image=MINIMAL" in err
    assert "fewer conflicts than the server did" in err


def test_database_tracker_sees_the_schemas_of_unknown_tables():
    t = Txn(1, [], keys_unknown=["shop.a", "crm.b"])
    assert t.schemas == ("shop", "crm")
    assert Txn(2, ["x.t/PRIMARY=1"], keys_unknown=["shop.a"]).schemas == ("x", "shop")


def test_version_2_is_written_only_with_its_fields_and_both_are_read(tmp_path, capsys, bare):
    assert load_trace(bare).version == 2
    first = open(bare, encoding="utf-8").readline()
    assert json.loads(first)["version"] == 2
    v1 = tmp_path / "v1.jsonl"
    write_trace(str(v1), [Txn(1, ["d.t/PRIMARY=1"])], {})
    assert load_trace(str(v1)).version == 1
    with pytest.raises(ValueError):            # a mark under a version 1 header: not written
        write_trace(str(tmp_path / "bad.jsonl"), [Txn(1, [], keys_unknown=["d.t"])], {})
    assert not (tmp_path / "bad.jsonl").exists()
    out = tmp_path / "annotated.jsonl"              # annotate keeps what the input had
    assert main(["annotate", bare, "--tracker", "commit_id", "-o", str(out)]) == 0
    assert load_trace(str(out)).version == 2
    assert [t.keys_unknown for t in load_trace(str(out))] == \
        [t.keys_unknown for t in load_trace(bare)]
    rc, text, _ = run(capsys, "validate", bare)
    assert rc == 0 and "valid commitsched trace v2" in text


@pytest.mark.parametrize("value,reason", [
    ("\"d.t\"", '"keys_unknown" must be a list of table names db.table'),
    ("[\"nodot\"]", '"keys_unknown" must be a list of table names db.table'),
    ("[1]", '"keys_unknown" must be a list of table names db.table'),
])
def test_bad_table_lists_are_refused_at_their_line(tmp_path, value, reason):
    p = tmp_path / "t.jsonl"
    p.write_text('{"format":"commitsched-trace","version":2,"source":{}}\n'
                 f'{{"seq":1,"writes":[],"keys_unknown":{value}}}\n')
    from commitsched.trace import TraceError
    with pytest.raises(TraceError) as e:
        load_trace(str(p))
    assert e.value.line == 2 and e.value.reason == reason


def test_mysql_text_imports_with_microsecond_commit_times(tmp_path):
    """MySQL 8's GTID lines give the commit time in µs: the trace keeps it to the microsecond
    (the integrator's lag replay reads a trace of whole seconds as MariaDB's stamps)."""
    out = str(tmp_path / "my.jsonl")
    import_binlog([MY1, MY2], out)
    stated = [int(f.partition("=")[2]) for path in (MY1, MY2) for line in open(path)
              if "\tlast_committed=" in line for f in line.split()
              if f.startswith("original_committed_timestamp=")]
    stamps = [t.timestamp for t in load_trace(out)]
    assert stamps == [us / 1e6 for us in stated] and len(stamps) > 5
    assert sum(s != int(s) for s in stamps) >= len(stamps) - 1
    tr = trace_from_dicts([t.to_json() for t in load_trace(out)])   # and read back alike
    assert [t.timestamp for t in tr] == stamps


# The two engines on traces that lack some keys: the compiled core runs what needs no keys and
# hands what needs them to the reference, whose guard names the tables (model/engine.py).

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "traces", "examples",
                       "oltp_rw_8clients.jsonl.gz")


def _without_sbtest1_keys(path: str, n: int = 500) -> None:
    """The first `n` transactions of a bundled MySQL trace, every third one's sbtest1 rows
    as a binlog imported with no schema has them: no keys, the table named in keys_unknown;
    and one MINIMAL-image transaction (keys_partial)."""
    from commitsched.trace import load_trace as load
    src = load(EXAMPLE)
    out = []
    for t in src.txns[:n]:
        d = t.to_json()
        if t.seq % 3 == 0 and any(k.startswith("sbtest.sbtest1/") for k in t.writes):
            d["writes"] = [k for k in t.writes if not k.startswith("sbtest.sbtest1/")]
            d.pop("before_images", None)
            d.pop("write_set_size", None)
            d["keys_unknown"] = ["sbtest.sbtest1"]
        elif t.seq == 5:
            d["keys_partial"] = ["sbtest.sbtest2"]
        out.append(d)
    write_trace(path, trace_from_dicts(out), src.source, 2)


@pytest.fixture
def marked(tmp_path) -> str:
    path = str(tmp_path / "marked.jsonl")
    _without_sbtest1_keys(path)
    return path


def test_the_core_loader_reads_the_marks(tmp_path, marked):
    """The compiled core's JSON loader reads keys_unknown / keys_partial into the columns the
    Python builder makes (the schemas of unknown tables included), and says that keys are
    unknown; partial or empty marks leave the flag off."""
    from commitsched import columnar
    from test_engine_columns import _same
    fast = columnar._load_compiled(marked)
    assert fast is not None, "the core's loader refused a version 2 trace"
    _same(fast[1], columnar.from_txns(load_trace(marked).txns))
    assert fast[1].keys_unknown and fast[1].slice(0, 2).keys_unknown
    unknown_too = [Txn(1, ["a.t/PRIMARY=1"], keys_unknown=["b.u", "a.v"]),
                   Txn(2, [], keys_unknown=["c.w"], db=["d"]),
                   Txn(3, [], keys_partial=["a.t"]), Txn(4, ["e.x/PRIMARY=2"])]
    partial_only = [Txn(1, [], keys_partial=["a.t"]), Txn(2, ["e.x/PRIMARY=2"])]
    for txns, unknown in ((unknown_too, True), (partial_only, False)):
        path = str(tmp_path / f"t{len(txns)}.jsonl")
        write_trace(path, txns, {}, 2)
        fast = columnar._load_compiled(path)
        assert fast is not None and fast[1].keys_unknown is unknown
        _same(fast[1], columnar.from_txns(load_trace(path).txns))
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"format":"commitsched-trace","version":2,"source":{}}\n'
                     '{"seq":1,"writes":[],"keys_unknown":[],"keys_partial":null}\n')
    fast = columnar._load_compiled(str(empty))
    assert fast is not None and not fast[1].keys_unknown


@pytest.mark.parametrize("value", ["\"d.t\"", "[\"nodot\"]", "[1]", "{}"])
def test_bad_table_lists_get_the_python_loaders_error(tmp_path, value):
    from commitsched import columnar
    from commitsched.trace import TraceError
    p = tmp_path / "t.jsonl"
    p.write_text('{"format":"commitsched-trace","version":2,"source":{}}\n'
                 f'{{"seq":1,"writes":[],"keys_partial":{value}}}\n')
    assert columnar._load_compiled(str(p)) is None
    with pytest.raises(TraceError) as e:
        columnar.load_columns(str(p))
    assert e.value.line == 2 and "keys_partial" in e.value.reason


def test_runs_that_need_keys_go_to_the_reference(marked):
    from commitsched import columnar, engine
    from commitsched.schedulers import parse_scheduler
    cols = columnar.load_columns(marked)[1]
    for name in ("commit_order+mysql", "database+mysql", "commit_id+mariadb_conservative",
                 "serial"):
        assert engine.unsupported(parse_scheduler(name), cols) is None, name
    for name in ("writeset+mysql", "writeset_session+mysql", "commit_id+mariadb_optimistic",
                 "slave_group_commit+mariadb_conservative"):
        assert "keys unknown" in engine.unsupported(parse_scheduler(name), cols), name


@pytest.mark.parametrize("streaming", [False, True], ids=["in-memory", "core-loader"])
def test_both_engines_give_the_same_answers(capsys, monkeypatch, tmp_path, marked, streaming):
    """score (every default scheduler), report and lag through `--engine compiled` and
    `--engine reference`: the same output and the same one-line errors, with the trace held
    in memory and read by the core's loader (a large trace's path). Lag runs what it is given
    (no check before): writeset reaches the reference's guard from either engine."""
    from commitsched import cli
    if streaming:
        monkeypatch.setattr(cli, "STREAM_ABOVE_BYTES", 0)
    got = {}
    for e in ("compiled", "reference"):
        got[e] = [run(capsys, "score", marked, "--json", "--workers", "2,4", "--z3-bound", "off",
                      "--jobs", "1", "--engine", e)]
        rc, _, err = run(capsys, "report", marked, "-o", tmp_path / e, "--workers", "1,2",
                         "--quiet", "--jobs", "1", "--engine", e)
        assert rc == 0, err
        got[e].append(json.loads((tmp_path / e / "report.json").read_text()))
        for name in ("commit_order+mysql", "database+mysql", "writeset+mysql"):
            got[e].append(run(capsys, "lag", marked, "--scheduler", name, "--workers", "3",
                              "--json", "--quiet", "--engine", e))
    assert got["compiled"] == got["reference"]
    rc, out, err = got["compiled"][0]
    assert rc == 0 and {r["scheduler"] for r in json.loads(out)} >= {"commit_order+mysql",
                                                                      "database+mysql"}
    assert "skipped writeset+mysql: keys unknown for tables sbtest.sbtest1;" in err
    assert got["compiled"][1]["keys"]["unknown"] == ["sbtest.sbtest1"]
    assert got["compiled"][2][0] == 0 and json.loads(got["compiled"][2][1])
    rc, out, err = got["compiled"][-1]
    assert rc == 2 and out == "" and err.startswith(
        "commitsched: error: writeset+mysql: keys unknown for tables sbtest.sbtest1;")


@pytest.mark.parametrize("field", ["keys_unknown", "keys_partial"])
def test_version_2_fields_under_a_version_1_header_are_refused_by_both_loaders(tmp_path, field):
    """A version 1 trace lacks no keys (model/keys.py takes the header's word for it, with no
    pass over the trace), so a line that says otherwise is refused at its line, by the Python
    loader and through the core's loader alike; an empty list says nothing and is read."""
    from commitsched import columnar
    from commitsched.trace import TraceError
    p = tmp_path / "t.jsonl"
    head = '{"format":"commitsched-trace","version":1,"source":{}}\n'
    p.write_text(head + '{"seq":1,"writes":["d.t/PRIMARY=1"]}\n'
                 f'{{"seq":2,"writes":[],"{field}":["d.u"]}}\n')
    reason = f'"{field}" is a field of trace format version 2, but the header says version 1'
    for load in (load_trace, columnar.load_columns):
        with pytest.raises(TraceError) as e:
            load(str(p))
        assert (e.value.line, e.value.reason) == (2 + 1, reason)
    p.write_text(head + f'{{"seq":1,"writes":[],"{field}":[]}}\n')
    assert load_trace(str(p)).version == 1 and columnar.load_columns(str(p))[1].n == 1
    assert trace_from_dicts([{"seq": 1, "writes": [], field: ["d.u"]}]).version == 2
