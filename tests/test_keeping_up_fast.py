"""The report's "Keeping up" section made cheap (issue 29) gives the same answers as the plain
path: the keeps-up test reads only two commit times from the compiled core (`watch`) instead of
the whole schedule, the lapped trace is made once per search, and the report's headroom row of
a pick is the pick's own search rather than a second one. Same verdicts, same headroom, bit for
bit, on small traces."""
import os
from types import SimpleNamespace

import pytest

from commitsched.columnar import ColumnarTxns, from_txns
from commitsched.profiles import get_profile
from commitsched.replay import Replayer, source_times
from commitsched.trace import load_trace

ROOT = os.path.join(os.path.dirname(__file__), "..")


@pytest.fixture(autouse=True)
def compiled(monkeypatch):
    """The compiled engine, whatever an earlier test left as the default."""
    from commitsched import engine
    monkeypatch.setattr(engine, "_default", "compiled")
TRACES = ("recorded/oltp_read_write_t8.jsonl.gz", "examples/oltp_rw_8clients.jsonl.gz")


class PlainReplayer(Replayer):
    """The path before: every keeps-up test replays both laps whole, and every replay laps
    the trace afresh."""

    def keeps_up(self, pace=1.0, lap=None):
        return super().keeps_up(pace, lap if lap is not None else self.replay(pace, laps=2))

    def _compiled(self, laps, arrive, watch=(), schedule=False, keep=None):
        assert not watch and keep is None
        self._lapped = None
        return super()._compiled(laps, arrive, schedule=schedule)


def _trace(path: str, limit: int = 400):
    txns = load_trace(os.path.join(ROOT, "traces", *path.split("/"))).txns[:limit]
    return txns, from_txns(txns)


def _pair(txns, columns, scheduler, workers, profile):
    times = source_times(txns)
    make = lambda cls: cls(lambda: ColumnarTxns(columns, lambda: iter(txns)), times,  # noqa
                           scheduler, workers, get_profile(profile))
    return make(Replayer), make(PlainReplayer)


@pytest.mark.parametrize("path", TRACES)
@pytest.mark.parametrize("scheduler,workers,profile", [
    ("commit_id+mariadb_conservative", 4, "replica16"),
    ("commit_id+mariadb_optimistic", 8, "durable"),
    ("writeset+mysql", 2, "replica16"),
    ("database+mysql", 4, "durable"),
    ("serial", 1, "replica16"),
])
def test_fast_keeps_up_and_headroom_are_the_plain_ones(path, scheduler, workers, profile):
    txns, columns = _trace(path)
    fast, plain = _pair(txns, columns, scheduler, workers, profile)
    assert fast._compiled(1, None) is not None          # the compiled core runs it
    for pace in (0.05, 0.3, 0.9, 1.0, 1.7, 4.0, 25.0):
        assert fast.keeps_up(pace) == plain.keeps_up(pace), pace
        n = len(txns)
        lap = plain.replay(pace, laps=2)
        assert fast._lap_end_lags(pace) == (lap.lag[n - 1], lap.lag[2 * n - 1])
    fast, plain = _pair(txns, columns, scheduler, workers, profile)
    assert fast.headroom() == plain.headroom()
    assert fast.runs == plain.runs


@pytest.mark.parametrize("engine_name", ["compiled", "reference"])
@pytest.mark.parametrize("scheduler,workers", [("commit_id+mariadb_optimistic", 4),
                                               ("writeset+mysql", 2), ("serial", 1)])
def test_a_replay_that_keeps_the_first_lap_is_the_whole_replays_first_lap(
        scheduler, workers, engine_name, monkeypatch):
    """`replay(keep=n)` (what `lag` asks of its two laps: the second is as long as the trace
    and only its last lag is read) gives the whole replay's first n positions and its last
    lag, bit for bit, in both engines; without `keep` the arrays are every lap's."""
    from commitsched import engine
    monkeypatch.setattr(engine, "_default", engine_name)
    txns, columns = _trace(TRACES[0])
    n = len(txns)
    rep, _ = _pair(txns, columns, scheduler, workers, "replica16")
    assert (rep._compiled(1, None) is not None) == (engine_name == "compiled")
    for pace in (0.5, 3.0):
        whole = rep.replay(pace, laps=2, detail=True)
        first = rep.replay(pace, laps=2, detail=True, keep=n)
        assert len(whole.commit) == 2 * n and len(first.commit) == n == len(first.source)
        for name in ("source", "dispatch", "commit", "exec"):
            assert getattr(first, name).tolist() == getattr(whole, name)[:n].tolist(), name
        for i in (0, n - 1, 2 * n - 1):
            assert first.lag_at(i) == whole.lag_at(i) == float(whole.lag[i])
        assert rep.keeps_up(pace, first) == rep.keeps_up(pace, whole)


def test_the_report_takes_a_picks_headroom_from_its_lag_search():
    """The section's headroom table, with the picks' rows taken from their lag tasks and the
    closed backlog's makespan from the sweep, is the table of a plain search per row."""
    from commitsched.report import keeping_up
    from commitsched.report.tasks import Tasks
    from commitsched.scoring import score_trace

    txns, columns = _trace(TRACES[0])

    trace = SimpleNamespace(count=len(txns),
                            txns=lambda: ColumnarTxns(columns, lambda: iter(txns)))

    profile = get_profile("replica16")
    picks = [("commit_id+mariadb_conservative", 4), ("writeset+mysql", 4)]
    kept: dict = {}             # the sweep's closed runs, as the report hands them over
    score_trace(trace, [n for n, _ in picks], [1, 2, 4, 8], profile, keep=kept)
    assert all((n, w) in kept for n, _ in picks for w in (1, 2, 4, 8))
    tasks = Tasks()
    planned = keeping_up.plan(tasks, trace, profile, picks, [1, 2, 4, 8],
                              tracker_options=lambda t: {}, applier_options={},
                              bugs=frozenset(), sample=None,
                              closed={k: m.makespan for k, (m, _) in kept.items()})
    assert not any(key[0] == "headroom" and key[1:] in picks for key, _, _ in tasks.items)
    got = keeping_up.assemble(planned, tasks.run(1, lambda s: None, "keeping up"))
    times = source_times(txns)
    for name in ("commit_id+mariadb_conservative", "writeset+mysql"):
        want = []
        for w in (1, 2, 4, 8):
            h, bound = PlainReplayer(trace.txns, times, name, w, profile).headroom()
            want.append({"workers": w, "headroom": round(h, 3), "is_bound": bound})
        assert got["headroom"][name] == want


@pytest.mark.parametrize("lo,hi", [(150, 189), (1, 40), (380, 460), (500, 600)])
def test_a_seq_window_fed_only_its_range_gets_the_records_of_the_reference(lo, hi, monkeypatch):
    """The report's second schedule window (`seq_window`) is handed only its seqs by the
    compiled engine: the same records as the reference's whole run gives it."""
    from commitsched import engine
    from commitsched.report.tasks import seq_window
    txns, columns = _trace(TRACES[0])
    trace = SimpleNamespace(count=len(txns),
                            txns=lambda: ColumnarTxns(columns, lambda: iter(txns)))
    got = {}
    for name in ("reference", "compiled"):
        monkeypatch.setattr(engine, "_default", name)
        got[name] = [(r.seq, r.worker, r.dispatch, r.start, r.exec_end, r.ready, r.commit,
                      r.retries, r.wasted, r.spec_wait, r.dep) for r in seq_window(
            trace, "commit_id+mariadb_optimistic", 4, get_profile("replica16"), {}, lo, hi)]
    assert got["compiled"] == got["reference"]
    assert len(got["compiled"]) == max(0, min(hi, 400) - lo + 1)
