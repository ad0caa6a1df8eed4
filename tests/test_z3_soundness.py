"""Symbolic soundness of the writeset trackers (checks/z3_soundness.py): the bug-free trackers are
proved sound within the bounds; every tracker bug of the catalogue yields a counterexample that
the Python tracker and property check confirm; the z3 encoding agrees with the Python tracker on
z3's models and on random traces. Fast tier: about 25 s here."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched import trackers as T
from commitsched.bugs import CATALOGUE
from commitsched.checks import z3_soundness as zs
from commitsched.cli import main
from commitsched.trace import trace_from_dicts


def test_bug_free_trackers_are_proved_sound():
    results = zs.prove_all()
    assert len(results) == 2 * 3 * 3          # clock modes x history sizes x claims
    assert all(r.proved for r in results), [r.counterexample for r in results if not r.proved]


def test_plain_writeset_breaks_session_order():
    """The check can fail: `writeset` makes no session promise, and z3 shows it."""
    r = zs.check("writeset", "SessionOrder", history_size=2)
    assert not r.proved and r.counterexample.violations


@pytest.mark.parametrize("bug", sorted(zs.BUG_TARGET))
def test_every_tracker_bug_is_caught(bug):
    cex = zs.z3_catches(bug)
    assert cex is not None
    tracker, prop = zs.BUG_TARGET[bug]
    assert prop in CATALOGUE[bug][2]
    assert (cex.tracker, cex.prop, cex.bugs) == (tracker, prop, (bug,))
    # Confirmed independently of the encoding: the Python tracker with the bug violates the
    # property on this trace, and without the bug it does not.
    txns = trace_from_dicts(cex.rows).txns
    sessions = tracker == "writeset_session"

    def violations(bugs):
        pairs = list(T.get_tracker(tracker, bugs=bugs, history_size=cex.history_size)
                     .annotate(txns))
        if prop == "SessionOrder":
            return list(T.session_order_violations(pairs))
        return list(T.soundness_violations(pairs, sessions=sessions))
    assert violations({bug}) and not violations(set())


def test_catches_outside_scope_and_unknown():
    assert zs.z3_catches("lwm_off_by_one") is None
    with pytest.raises(ValueError):
        zs.z3_catches("no_such_bug")


@pytest.mark.parametrize("tracker,bugs,mode", [
    ("writeset", (), "none"), ("writeset_session", (), "sound"),
    ("writeset", ("history_evict_no_floor",), "none"),
    ("writeset", ("unique_keys_ignored", "before_image_ignored"), "sound"),
    ("writeset", ("ddl_not_isolated",), "none"),
    ("writeset_session", ("session_order_dropped", "admin_barrier_missing"), "sound"),
])
def test_encoding_agrees_with_python_on_z3_models(tracker, bugs, mode):
    for h in (1, 2, 3):
        assert zs.differential(tracker, history_size=h, mode=mode, bugs=bugs, count=25) == 25


KEYS = zs.KEYS


@st.composite
def fragment_rows(draw, sound: bool):
    """Concrete traces of the encoded fragment (up to 6 transactions, the 4 keys)."""
    n = draw(st.integers(1, 6))
    rows, file_no = [], 1
    for seq in range(1, n + 1):
        if seq > 1 and draw(st.integers(0, 7)) == 0:
            file_no += 1
        writes = [k for k in KEYS if draw(st.booleans())]
        row = {"seq": seq, "writes": writes, "file": file_no}
        before = [k for k in writes if draw(st.integers(0, 3)) == 0]
        if before:
            row["before_images"] = before
        for name in ("ddl", "admin", "fk_parent", "no_pk"):
            if draw(st.integers(0, 7)) == 0:
                row[name] = True
        s = draw(st.integers(0, 3))
        if s:
            row["session"] = s
        rows.append(row)
    if sound:
        sn, prev_file, same_file = 0, None, []
        for row in rows:
            if row["file"] != prev_file:
                sn, same_file, prev_file = 0, [], row["file"]
            sn += 1
            txn = trace_from_dicts([dict(row, seq=1)]).txns[0]
            floor = 0
            for other, osn in same_file:
                if T.conflicts(other, txn) or (txn.session and other.session == txn.session):
                    floor = osn
            row["last_committed"] = draw(st.integers(floor, sn - 1))
            row["sequence_number"] = sn
            same_file.append((txn, sn))
    return rows


@settings(max_examples=60)
@given(st.data(), st.sampled_from(zs.TRACKERS), st.integers(1, 3), st.sampled_from(zs.MODES),
       st.sets(st.sampled_from(sorted(T.TRACKER_BUGS - {"group_not_split_on_wait"}))))
def test_encoding_agrees_with_python_on_random_traces(data, tracker, h, mode, bugs):
    rows = data.draw(fragment_rows(mode == "sound"))
    python = [tuple(dep) for _, dep in T.get_tracker(tracker, bugs=bugs, history_size=h)
              .annotate(trace_from_dicts(rows).txns)]
    assert zs.encoding_annotation(rows, tracker, history_size=h, mode=mode, bugs=bugs) == python


def test_cli_soundness(capsys):
    code = main(["soundness", "--history-size", "2", "--transactions", "4"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("PROVED") == 6
    code = main(["soundness", "--bug", "unique_keys_ignored", "--bug", "lwm_off_by_one"])
    out = capsys.readouterr().out
    assert code == 0 and "unique_keys_ignored: caught" in out and "not in scope" in out
    code = main(["soundness", "--bug", "nope"])
    assert code == 2 and capsys.readouterr().err.startswith("commitsched: error: unknown bug")


@pytest.mark.slow
def test_bug_free_trackers_are_proved_sound_for_10_transactions():
    """About a minute here."""
    results = zs.prove_all(n=10, history_sizes=(1, 2, 3, 4))
    assert all(r.proved for r in results)
