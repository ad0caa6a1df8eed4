"""`replay.source_times` works on arrays (a day of binlog is tens of millions of transactions):
the same times, held-back counts, file order and busiest window as the plain loop it replaced,
kept here as the oracle, on generated stamps (whole seconds and µs, stamps going back, files
out of order, transactions without a file)."""
import glob
import gzip
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched.metrics import PER_SECOND
from commitsched.replay import ReplayError, source_times
from commitsched.trace import iter_stamps, iter_trace

ROOT = os.path.join(os.path.dirname(__file__), "..")


class Txn:
    def __init__(self, seq, timestamp, file):
        self.seq, self.timestamp, self.file = seq, timestamp, file


def oracle(txns):
    """The loop source_times was (model/replay.py before 2026-11-28 session 17): (times,
    held_back, held_back_most, held_back_files, held_back_files_most, whole)."""
    stamps = [float(t.timestamp) for t in txns]
    files = [t.file for t in txns]
    whole = all(s == int(s) for s in stamps)
    at_files, files_most, ends = 0, 0.0, []
    for stamp, file in zip(stamps, files):
        if ends and ends[-1][0] == file:
            ends[-1][1] = max(ends[-1][1], stamp)
        else:
            ends.append([file, stamp])
    for (_, a), (_, b) in zip(ends, ends[1:]):
        if b < a:
            at_files, files_most = at_files + 1, max(files_most, a - b)
    held, most = 0, 0.0
    for i in range(1, len(stamps)):
        if stamps[i] < stamps[i - 1]:
            held, most = held + 1, max(most, stamps[i - 1] - stamps[i])
            stamps[i] = stamps[i - 1]
    first = stamps[0]
    if not whole:
        return [(s - first) * PER_SECOND for s in stamps], held, most, at_files, files_most, whole
    times, i = [], 0
    while i < len(stamps):
        j = i
        while j < len(stamps) and stamps[j] == stamps[i]:
            j += 1
        base, n = (stamps[i] - first) * PER_SECOND, j - i
        times.extend(base + k * PER_SECOND / n for k in range(n))
        i = j
    return times, held, most, at_files, files_most, whole


def oracle_busiest(times, period, window):
    if period <= window:
        return None
    best, best_at, j = 0, 0.0, 0
    for i, start in enumerate(times):
        while j < len(times) and times[j] < start + window:
            j += 1
        if j - i > best:
            best, best_at = j - i, start
    return best / window * PER_SECOND, best_at


steps = st.lists(st.tuples(st.sampled_from([0, 0, 1, 2, -1, 5, 0.25, 0.001, -0.3]),
                           st.sampled_from([0, 0, 0, 0, 1, -1, None])), min_size=1, max_size=80)


@settings(max_examples=300, deadline=None)
@given(steps, st.booleans(), st.sampled_from([0.0, 1.7e9]))
def test_source_times_is_the_loop_it_replaced(moves, whole, start):
    t, f, txns = start, 1, []
    for i, (dt, df) in enumerate(moves):
        t += dt
        if whole:
            t = float(int(t))
        file = None if df is None else f
        if df is not None:
            f = max(1, f + df)
        txns.append(Txn(10 + i, t, file))
    got = source_times(txns)
    times, held, most, at_files, files_most, was_whole = oracle(txns)
    assert got.times.dtype == np.float64
    assert got.times.tolist() == times
    assert (got.held_back, got.held_back_most) == (held, most)
    assert (got.held_back_files, got.held_back_files_most) == (at_files, files_most)
    assert got.whole_seconds == was_whole and got.first_seq == 10
    # what goes to JSON stays Python's (numpy's scalars are not JSON)
    assert type(got.span) is float and type(got.period) is float
    for window in (1e3, PER_SECOND, 60 * PER_SECOND):
        said = oracle_busiest(times, got.period, window)
        if said is not None:
            assert got.busiest(window) == said


def _fields(items):
    return [(t.seq, t.timestamp, t.file) for t in items]


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "traces", "recorded", "*.jsonl.gz")))[:3]
                         + sorted(glob.glob(os.path.join(ROOT, "traces", "examples", "*.jsonl.gz")))[:2])
def test_the_stamps_reader_reads_what_the_loader_does(path):
    """`iter_stamps` (three fields a line, what `lag` reads of a streamed trace) gives each
    transaction's seq, timestamp and file as the Txn objects have them."""
    assert _fields(iter_stamps(path)) == _fields(iter_trace(path)[1])


@pytest.mark.parametrize("blank", ["", "\n"])
@pytest.mark.parametrize("big", ["", ', "events": 99999999999999999999'])
@pytest.mark.parametrize("stamp", ["100.5", "99999999999999999999"])
def test_the_stamps_reader_reads_null_files_blank_lines_and_what_it_cannot_decode(
        tmp_path, blank, big, stamp):
    """A null file (1, as the loader sets it), a blank line, integers past 64 bits (a timestamp
    the fast decoder refuses: the careful path reads the chunk; source_times then refuses it
    in one line): the same stamps, and times or error, as the Txn objects'."""
    path = tmp_path / "t.jsonl.gz"
    lines = ['{"format": "commitsched-trace", "version": 1}',
             '{"seq": 1, "writes": [], "timestamp": 100, "file": null}' + blank,
             '{"seq": 2, "writes": [], "timestamp": %s%s}' % (stamp, big),
             '{"seq": 3, "writes": [], "timestamp": 101, "file": 2}']
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    got = _fields(iter_stamps(str(path)))
    assert got == _fields(iter_trace(str(path))[1])
    assert [f for _, _, f in got] == [1, 1, 2]
    if stamp == "100.5":
        assert source_times(iter_stamps(str(path))).times.tolist() == \
            source_times(iter_trace(str(path))[1]).times.tolist()
        return
    with pytest.raises(ReplayError) as fast:
        source_times(iter_stamps(str(path)))
    with pytest.raises(ReplayError) as careful:
        source_times(iter_trace(str(path))[1])
    assert str(fast.value) == str(careful.value) and "seq 2 has timestamp" in str(fast.value)
