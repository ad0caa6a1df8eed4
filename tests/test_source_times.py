"""`replay.source_times` works on arrays (a day of binlog is tens of millions of transactions):
the same times, held-back counts, file order and busiest window as the plain loop it replaced,
kept here as the oracle, on generated stamps (whole seconds and µs, stamps going back, files
out of order, transactions without a file)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched.metrics import PER_SECOND
from commitsched.replay import source_times


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
