"""The open replay: a binlog replayed as it arrived (docs/lag.md).

`score` applies a closed backlog: every transaction is in the relay log at 0. Here each
transaction reaches the replica at its source commit time (`SourceTimes`), and the replica
applies what has arrived (`run_scheduler(arrival=...)`). A transaction's lag is its replica
commit time minus its source commit time. From the replay of one (scheduler, W):

- lag percentiles, the maximum and lag over time, on the trace as it arrived;
- `keeps_up`: the lag stays bounded at the source's pace. A finite trace is read as one period
  of a pace that repeats (a day of binlog, then the next): the trace is replayed twice in a row
  (two *laps*), and the replica keeps up when the second lap ends no more behind than the first.
  For a work-conserving queue that is exact: whatever backlog the first lap leaves is absorbed
  by the second whenever one lap's work takes less than one lap's time, and grows by the
  difference otherwise;
- `headroom`: the largest factor the source's pace can be multiplied by (the arrivals
  time-compressed) with the replica still keeping up, found by bisection;
- `drain`: the replica's SQL thread stopped for a span of source time, then restarted while
  writes keep arriving: how long until every transaction's lag is back to what it would have been
  without the stop (the laps go on as long as that takes).

Times are the profile's unit (µs) inside, seconds in what is returned to users.
"""
from __future__ import annotations

import array
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import msgspec
import numpy as np

from .metrics import PER_SECOND
from .schedulers import run_scheduler

# Bisection of the headroom: stop when the bracket is this narrow (hi / lo).
HEADROOM_PRECISION = 1.01
# Headroom is not searched beyond this factor of the source's pace, nor below its inverse.
HEADROOM_LIMIT = 1000.0
# At most this many transactions simulated in one drain replay (all its laps); a backlog that
# needs more is reported as not drained within the simulated horizon.
DRAIN_MAX_TRANSACTIONS = 20_000_000
# A source commit time beyond this many seconds (year 33658) is not one: refused, so that the
# replay's µs arithmetic stays finite.
MAX_TIMESTAMP = 1e12
# Points of the lag-over-time series (the maximum lag in each slice of the source's time).
LAG_POINTS = 200


class ReplayError(ValueError):
    """A trace the open replay cannot use (no source commit times); the message says why."""


@dataclass(frozen=True)
class SourceTimes:
    """Each transaction's source commit time, µs from the first one's, by position, never
    decreasing (a transaction is in the binlog no earlier than the one before it).

    MySQL 8 stamps commits in µs (`immediate_commit_timestamp`); MariaDB's events carry whole
    seconds only, so a trace whose every timestamp is a whole number of seconds is read as
    one-second stamps, and each second's transactions are spread evenly over it, in order
    (`whole_seconds`): a burst inside one second is not seen."""
    times: np.ndarray        # float64, µs
    first_seq: int
    whole_seconds: bool
    epoch: float | None        # the first commit as Unix time (s), when the stamps are that
    # stamps lower than their predecessor's (held at it): how many, the largest step back (s);
    # binlog files that end before the file given before them ends (out of order), and by how
    # much at most (s)
    held_back: int = 0
    held_back_most: float = 0.0
    held_back_files: int = 0
    held_back_files_most: float = 0.0
    # the IANA zone clock times are shown in (`--tz`; None: UTC); JSON keeps UTC (`iso`)
    zone: str | None = None

    @property
    def count(self) -> int:
        return len(self.times)

    @property
    def span(self) -> float:
        return float(self.times[-1] - self.times[0])      # a Python float: it goes to JSON

    @property
    def period(self) -> float:
        """One lap: the span plus one mean gap, so that a repeated trace keeps its pace."""
        n = self.count
        if n < 2 or self.span <= 0:
            return PER_SECOND if self.whole_seconds or n < 2 else max(self.span, 1.0)
        return self.span * n / (n - 1)

    def check_pace(self) -> None:
        """ReplayError unless the stamps say a pace: at least two transactions, not all
        committed at the same instant (one-second stamps are spread over their second)."""
        if self.count < 2:
            raise ReplayError("the trace has one transaction: the source's pace (and so lag, "
                              "keeps up, headroom, drain) needs the commit times of several; "
                              "give a longer binlog")
        if self.span <= 0:
            said = (f"no source commit time is later than the first ({self.held_back_note()})"
                    if self.held_back else
                    f"all {self.count:,} transactions have the same source commit time")
            raise ReplayError(f"{said}: the source's pace cannot be read from them; give a "
                              f"binlog that spans some time")

    def held_back_note(self) -> str | None:
        """What the holding of stamps that went back changed, in words (None: nothing)."""
        said = []
        if self.held_back_files:
            k = self.held_back_files
            said.append(f"the binlog files look out of order: {k} end{'s' if k == 1 else ''} "
                        f"up to {self.held_back_files_most:g} s before the file given before "
                        f"{'it ends' if k == 1 else 'them ends'} (give them in order)")
        n = self.held_back
        if n:
            some = (f"{n:,} transaction{'s carry' if n > 1 else ' carries'} a source time "
                    f"earlier than the one before (by up to {self.held_back_most:g} s")
            said.append(some + ("; MariaDB, and MySQL before 8.0, stamp a transaction when its "
                                "statement began, not when it committed"
                                if self.whole_seconds else "; the source's clock set back?")
                        + "), taken as arriving with the one before")
        return "; ".join(said) or None

    def write_rate(self) -> float:
        """Transactions per second over the trace."""
        return self.count / self.period * PER_SECOND

    def busiest(self, window: float = 60 * PER_SECOND) -> tuple[float, float]:
        """(rate in txn/s, start in µs) of the busiest `window` of source time (the whole trace
        when it is shorter)."""
        t = self.times
        if self.period <= window:
            return self.write_rate(), 0.0
        # each transaction's window holds those before the first at or past its end
        counts = np.searchsorted(t, t + window, side="left") - np.arange(len(t))
        i = int(np.argmax(counts))
        return int(counts[i]) / window * PER_SECOND, float(t[i])

    def clock(self, at: float) -> str:
        """A source time (µs from the first commit) as users read it: wall time in `zone`
        (UTC by default) when the stamps are Unix time, else seconds from the trace's start."""
        if self.epoch is None:
            return f"{at / PER_SECOND:.1f} s into the trace"
        return shown_clock(self.iso(at), self.zone)

    def iso(self, at: float) -> str:
        """A source time for JSON: UTC, ISO 8601 with its offset (2026-11-27T02:10:00+00:00),
        whatever zone the text shows; seconds into the trace when not Unix time."""
        if self.epoch is None:
            return f"{at / PER_SECOND:.1f} s into the trace"
        import datetime
        when = datetime.datetime.fromtimestamp(self.epoch + at / PER_SECOND,
                                               datetime.timezone.utc)
        return when.isoformat(timespec="seconds")


def zone_info(name: str | None):
    """The tzinfo of an IANA zone name (None or "UTC": UTC); ValueError in one line if the
    system's zone database (or the tzdata package) has no such zone."""
    import datetime
    if name is None or name.upper() == "UTC":
        return datetime.timezone.utc
    import zoneinfo
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        said = repr(name) if len(name) <= 60 else repr(name[:60]) + "..."
        raise ValueError(f"{said} is not a time zone this machine knows (an IANA name such "
                         f"as UTC, Europe/Paris or America/New_York)") from None


def shown_clock(value: str, zone: str | None = None) -> str:
    """A clock time as the text shows it, in `zone` (UTC by default): '2026-11-27 03:10:00
    CET' from a JSON time ('2026-11-27T02:10:00+00:00'); anything else (seconds into the
    trace) as it is."""
    import datetime
    try:
        when = datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return value
    if when.tzinfo is None:
        return value
    return when.astimezone(zone_info(zone)).strftime("%Y-%m-%d %H:%M:%S %Z")


# a transaction without a binlog file, among the file numbers source_times groups by
NO_FILE = -(1 << 63)


def source_times(txns: Iterable) -> SourceTimes:
    """The trace's source commit times (`SourceTimes`); ReplayError if any is missing. Held as
    arrays, 8 bytes a transaction, not Python floats (32): a day of binlog is tens of millions."""
    stamps = array.array("d")
    files = array.array("q")
    first_seq = None
    for txn in txns:
        if first_seq is None:
            first_seq = txn.seq
        if txn.timestamp is None:
            raise ReplayError(f"seq {txn.seq} has no timestamp: replaying a binlog as it arrived "
                              f"needs every transaction's source commit time (import the binlog "
                              f"itself, whose events carry them)")
        stamp = float(txn.timestamp)
        if not math.isfinite(stamp) or abs(stamp) > MAX_TIMESTAMP:
            raise ReplayError(f"seq {txn.seq} has timestamp {txn.timestamp!r}: a source commit "
                              f"time is seconds of Unix time (or from the trace's start), "
                              f"below {MAX_TIMESTAMP:.0e}")
        stamps.append(stamp)
        files.append(NO_FILE if txn.file is None else txn.file)
    if not stamps:
        raise ReplayError("the trace has no transactions")
    stamp = np.frombuffer(stamps, dtype=np.float64).copy()
    del stamps
    whole = bool(np.all(stamp == np.trunc(stamp)))
    # Timestamps in s (Unix time from a server, or from 0 in a generated trace).
    # files out of order: one that ends before the one given before it ends (within a file,
    # a stamp may go back: MariaDB's is when the transaction's statement began)
    file = np.frombuffer(files, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], file[1:] != file[:-1])))
    del file, files
    ends = np.maximum.reduceat(stamp, starts)
    back = ends[:-1] - ends[1:]
    at_files = int(np.count_nonzero(back > 0))
    files_most = float(back.max()) if at_files else 0.0
    # a stamp lower than the one before it is held at it: the running maximum
    held_at = np.maximum.accumulate(stamp)
    behind = held_at[:-1] - stamp[1:]
    held = int(np.count_nonzero(behind > 0))
    most = float(behind.max()) if held else 0.0
    stamp = held_at
    first = float(stamp[0])
    epoch = first if first > 1e8 else None
    times = (stamp - first) * PER_SECOND
    if whole:
        # each second's transactions spread evenly over it, in order: the k-th of a second's n
        # at k / n of it
        run = np.flatnonzero(np.concatenate(([True], stamp[1:] != stamp[:-1])))
        length = np.diff(np.append(run, stamp.size))
        k = np.arange(stamp.size) - np.repeat(run, length)
        times = times + k * PER_SECOND / np.repeat(length, length)
    return SourceTimes(times, first_seq, whole, epoch, held, most, at_files, files_most)


def lapped(txns: Callable[[], Iterator], count: int, laps: int) -> Iterator:
    """The trace `laps` times in a row, as one longer binlog: each lap's seqs follow on, its
    files come after the previous lap's (a rotation: MySQL's logical clock restarts) and its
    commit ids after theirs (no group spans two laps)."""
    yield from txns()
    if laps <= 1:
        return
    max_file = max_cid = 0
    for txn in txns():
        max_file = max(max_file, txn.file or 1)
        if txn.commit_id is not None:
            max_cid = max(max_cid, txn.commit_id)
    replace = msgspec.structs.replace
    for lap in range(1, laps):
        for txn in txns():
            yield replace(txn, seq=txn.seq + lap * count, file=(txn.file or 1) + lap * max_file,
                          commit_id=(None if txn.commit_id is None
                                     else txn.commit_id + lap * (max_cid + 1)),
                          gtid=None)


@dataclass
class Lap:
    """What one replay gives, by position over all its laps (µs), or over the first `keep`
    positions only (`replay(keep=)`), with the lags of the positions asked past them."""
    source: np.ndarray       # source commit time at this pace
    dispatch: np.ndarray
    commit: np.ndarray
    exec: np.ndarray | None = None   # each one's execution time (`replay(detail=True)`)
    far_lags: dict = field(default_factory=dict)    # position past the arrays -> its lag

    @property
    def lag(self) -> np.ndarray:
        return self.commit - self.source

    def lag_of(self, start: int, stop: int) -> np.ndarray:
        """The lags of positions start .. stop - 1 (`lag` is every lap's: on a day of binlog,
        hundreds of MB made for one read)."""
        return self.commit[start:stop] - self.source[start:stop]

    def lag_at(self, i: int) -> float:
        if i >= len(self.commit):
            return self.far_lags[i]
        return float(self.commit[i] - self.source[i])


@dataclass
class Replayer:
    """Replays of one trace under one (scheduler, W, profile) at various paces and stops."""
    txns: Callable[[], Iterator]
    times: SourceTimes
    scheduler: str
    workers: int
    profile: object
    delay: float = 0.0               # delivery delay (µs): source commit to relay log
    bugs: frozenset = frozenset()
    tracker_options: dict = field(default_factory=dict)
    applier_options: dict = field(default_factory=dict)
    runs: int = 0                    # simulations made (for progress and tests)
    on_run: Callable[[], None] | None = None     # told of each simulation (a progress line)
    _closed: float | None = None
    _times: np.ndarray | None = None     # times.times as an array, made once
    _lapped: tuple | None = None         # (laps, columns) of the last lapped trace the core ran

    def _ran(self) -> None:
        self.runs += 1
        if self.on_run is not None:
            self.on_run()

    def _source(self, pace: float, laps: int) -> np.ndarray:
        """Each position's source commit time over `laps` laps at `pace` (µs)."""
        if self._times is None:
            self._times = np.asarray(self.times.times)
        n, period = self.times.count, self.times.period
        # lap by lap into one array (tile + repeat made three of its size at once)
        out = np.empty(n * laps)
        for k in range(laps):
            np.add(self._times, k * period, out=out[k * n:(k + 1) * n])
        out /= pace
        return out

    def replay(self, pace: float = 1.0, laps: int = 1,
               hold: tuple[int, float] | None = None, detail: bool = False,
               keep: int | None = None) -> Lap:
        """One replay of `laps` laps with the source's pace multiplied by `pace`. `hold`
        (position, time): the transactions from that position on are dispatched no earlier than
        that time (a stopped SQL thread restarted then). `detail`: keep each transaction's
        execution time too (what the worst lag's cause reads, model/lag.py). `keep`: the
        positions below it only, and the last one's lag (`Lap.lag_at`): on a day of binlog
        the second of two laps is hundreds of MB of which model/lag.py reads one lag."""
        n, first = self.times.count, self.times.first_seq
        total = n * laps
        source = self._source(pace, laps)
        # the arrivals are the source times when nothing moves them (no copy)
        arrive = source + self.delay if self.delay or hold is not None else source
        if hold is not None:
            at, restart = hold
            np.maximum(arrive[at:], restart, out=arrive[at:])
        last = total - 1
        keep = None if keep is None or keep >= total else keep
        out = self._compiled(laps, arrive, schedule=True, keep=keep,
                             watch=() if keep is None else (last,))
        if out is not None:
            self._ran()
            lap = Lap(source, out["dispatch"], out["commit"], out["exec"] if detail else None)
            if keep is not None:
                lap.far_lags[last] = float(out["watched"][0] - source[last])
                lap.source = source[:keep].copy()      # the whole array goes
            return lap
        arrive = arrive.tolist()         # plain floats: the simulators' arithmetic stays fast
        dispatch = [0.0] * total
        commit = [0.0] * total
        execs = [0.0] * total if detail else None

        def sink(run) -> None:
            i = run.seq - first
            dispatch[i] = run.dispatch
            commit[i] = run.commit
            if execs is not None:
                execs[i] = run.exec

        run_scheduler(self.scheduler, lapped(self.txns, n, laps), self.workers, self.profile,
                      sink, bugs=self.bugs, tracker_options=self.tracker_options,
                      applier_options=self.applier_options,
                      arrival=lambda seq: arrive[seq - first])
        self._ran()
        lap = Lap(source, np.asarray(dispatch), np.asarray(commit),
                  None if execs is None else np.asarray(execs))
        if keep is None:
            return lap
        return Lap(source[:keep], lap.dispatch[:keep], lap.commit[:keep],
                   None if execs is None else lap.exec[:keep], {last: lap.lag_at(last)})

    def _compiled(self, laps: int, arrive: np.ndarray | None, watch=(),
                  schedule: bool = False, keep: int | None = None) -> dict | None:
        """The replay in the compiled core (model/engine.py) when the engine is "compiled", the
        transactions carry their columns and the core has this run; else None (the
        reference's). With `schedule`, the times that a Lap holds come back (dispatch, exec,
        commit; of the positions below `keep` only, with it); with `watch`, the commit times of
        those positions (`watched`).
        The lapped trace is a view of the trace's columns that the core reads lap by lap, not
        a copy of them (a drain replays up to DRAIN_MAX_TRANSACTIONS)."""
        from . import engine
        from .schedulers import parse_scheduler
        if engine.default() != "compiled":
            return None
        get_columns = getattr(self.txns(), "get_columns", None)
        columns = get_columns() if get_columns is not None else None
        sched = parse_scheduler(self.scheduler)
        if engine.unsupported(sched, columns, self.bugs, self.tracker_options,
                              self.applier_options) is not None:
            return None
        if self._lapped is None or self._lapped[0] != laps:
            self._lapped = (laps, columns.lapped(laps))
        return engine.simulate(sched, self._lapped[1], self.workers, self.profile,
                               bugs=self.bugs, tracker_options=self.tracker_options,
                               applier_options=self.applier_options, arrival=arrive,
                               schedule=schedule, watch=watch, times_only=True, keep=keep)

    def closed_makespan(self) -> float:
        """The time to apply the whole trace when it is all there at once (score's makespan);
        made once."""
        if self._closed is None:
            out = self._compiled(1, None)
            if out is not None:
                self._ran()
                self._closed = out["makespan"]
                return self._closed
            finish = 0.0

            def sink(run) -> None:
                nonlocal finish
                finish = max(finish, run.commit)

            run_scheduler(self.scheduler, self.txns(), self.workers, self.profile, sink,
                          bugs=self.bugs, tracker_options=self.tracker_options,
                          applier_options=self.applier_options)
            self._ran()
            self._closed = finish
        return self._closed

    def jitter(self) -> float:
        """How far two replays that differ only in how a backlog formed may still differ once
        it is gone: the appliers are not fluid (a thread assignment shifts by a lap, a group
        forms otherwise), by about a transaction's time on each worker; twice that."""
        return 2.0 * self.workers * self.closed_makespan() / self.times.count

    def keeps_up(self, pace: float = 1.0, lap: Lap | None = None) -> bool:
        """Two laps at `pace` (or `lap`, their replay): the second ends no more behind than
        the first, within a thousandth of a lap or the appliers' jitter (module doc)."""
        n = self.times.count
        first, second = self._lap_end_lags(pace) if lap is None else (lap.lag_at(n - 1),
                                                                        lap.lag_at(2 * n - 1))
        return bool(second - first <= max(1e-3 * self.times.period / pace, self.jitter()))

    def _lap_end_lags(self, pace: float) -> tuple[float, float]:
        """The lags of each lap's last transaction in two laps at `pace`: what `keeps_up`
        reads of the replay, the same numbers as the whole replay's (`Lap.lag`), without the
        whole schedule when the compiled core runs it."""
        n = self.times.count
        source = self._source(pace, 2)
        out = self._compiled(2, source + self.delay if self.delay else source,
                             watch=[n - 1, 2 * n - 1])
        if out is None:
            lag = self.replay(pace, laps=2).lag
            return lag[n - 1], lag[2 * n - 1]
        self._ran()
        first, second = out["watched"]
        return first - source[n - 1], second - source[2 * n - 1]

    def headroom(self, at_one: bool | None = None) -> tuple[float, bool]:
        """(the largest pace factor that keeps up, to HEADROOM_PRECISION; whether the search
        reached HEADROOM_LIMIT, so that the figure is a bound). `at_one`: whether it keeps up
        at the source's pace, if known. The closed backlog's makespan brackets the search: no
        pace at which a lap arrives faster than a closed backlog applies it can keep up."""
        closed = self.closed_makespan()
        if at_one is None:
            at_one = self.keeps_up(1.0)
        line = self.times.period / closed if closed > 0 else HEADROOM_LIMIT
        if at_one:
            lo, hi = 1.0, min(max(1.05 * line, 1.0 + 1e-9), HEADROOM_LIMIT)
            while self.keeps_up(hi):
                lo = hi
                if hi >= HEADROOM_LIMIT:
                    return HEADROOM_LIMIT, True
                hi = min(2 * hi, HEADROOM_LIMIT)
        else:
            lo, hi = max(min(1.05 * line, 1.0) / 2, 1 / HEADROOM_LIMIT), 1.0
            while not self.keeps_up(lo):
                hi = lo
                if lo <= 1 / HEADROOM_LIMIT:
                    return 1 / HEADROOM_LIMIT, True
                lo = max(lo / 2, 1 / HEADROOM_LIMIT)
        while hi / lo > HEADROOM_PRECISION:
            mid = math.sqrt(lo * hi)
            if self.keeps_up(mid):
                lo = mid
            else:
                hi = mid
        return lo, False

    def drain(self, backlog: float, at: float = 0.0, headroom: float | None = None,
              closed: bool = False) -> tuple[float | None, str | None]:
        """The SQL thread stopped from source time `at` for `backlog` (µs), then restarted:
        (µs from the restart until every later transaction's lag is back to within a
        tolerance of its lag without the stop, or None; why None). The laps replayed cover the
        straight line's estimate twice over, and more while it is not reached. `closed`: the
        source wrote the trace's last transaction by the restart and nothing after it (its
        load ended): one lap, drained when the last transaction commits, at any pace."""
        n, period = self.times.count, self.times.period
        restart = at + backlog
        if closed:
            # everything has arrived by the restart: drained when the last commit is made
            base = self.replay(1.0, 1)
            stop_at = int(np.searchsorted(base.dispatch, at, side="left"))
            held = self.replay(1.0, 1, hold=(stop_at, restart))
            return max(0.0, float(np.max(held.commit)) - restart), None
        if headroom is None:
            headroom, _ = self.headroom()
        if headroom <= 1.0:
            return None, "the replica does not keep up with the source's pace: it never drains"
        laps, most = drain_laps(self.times, backlog, at, headroom)
        tol = max(self.jitter(), 1e-3 * backlog)
        while True:
            base = self.replay(1.0, laps)
            total = n * laps
            # the transactions not yet dispatched when the SQL thread stops wait for its restart
            stop_at = int(np.searchsorted(base.dispatch, at, side="left"))
            held = self.replay(1.0, laps, hold=(stop_at, restart))
            excess = held.commit[stop_at:] - base.commit[stop_at:]
            behind = np.flatnonzero(excess > tol)
            if not behind.size:
                return 0.0, None         # nothing was held back beyond the tolerance
            last = stop_at + int(behind[-1])
            # drained only at the very end may only look so (the replay ends): go on
            if last + 1 < total - 1:
                # caught up when the last transaction the stop held back commits (not when the
                # next one does: on a quiet source that is minutes later)
                return max(0.0, float(held.commit[last]) - restart), None
            if laps >= most:
                return None, (f"not drained within {laps:,} laps of the trace "
                              f"({total:,} transactions simulated, the most a drain replays)")
            if excess[-1] >= float(excess.max()) - tol:
                # no smaller at the end of twice the straight line's estimate than at its
                # largest: the replica applies no faster than the source writes (a headroom
                # above 1 that is within the keeps-up test's jitter, on a short trace), so no
                # horizon drains it; doubling the laps to the most a drain replays (20 M
                # transactions, twice) would only take a minute to say so
                return None, (f"the backlog the stop left did not shrink over {laps:,} laps "
                              f"of the trace ({total:,} transactions simulated): the replica "
                              f"applies no faster than the source writes, so it never drains")
            laps = min(2 * laps, most)


def drain_laps(times: SourceTimes, backlog: float, at: float,
               headroom: float) -> tuple[int, int]:
    """(the laps a drain replays first, the most it may replay) for a stop of `backlog` from
    `at` (µs) at `headroom` > 1: the straight line's estimate twice over, never more laps than
    DRAIN_MAX_TRANSACTIONS hold (a long stop on a short trace at a headroom near 1 asks for
    millions of laps, to be replayed whole: memory, hours)."""
    estimate = backlog / (headroom - 1.0)
    most = max(2, DRAIN_MAX_TRANSACTIONS // times.count)
    return min(max(2, math.ceil((at + backlog + 2 * estimate) / times.period) + 1), most), most


def lag_over_time(lap: Lap, count: int, points: int = LAG_POINTS) -> list[tuple[float, float]]:
    """(source time, the largest lag of the transactions committed on the source in that
    slice), both in µs, over the first `count` positions."""
    source, lag = lap.source[:count], lap.lag_of(0, count)
    if count == 0:
        return []
    start, end = float(source[0]), float(source[-1])
    width = (end - start) / points if end > start else 1.0
    slot = np.minimum(((source - start) / width).astype(np.int64), points - 1)
    worst = np.full(points, -np.inf)
    np.maximum.at(worst, slot, lag)
    return [(start + k * width, float(v)) for k, v in enumerate(worst) if v > -np.inf]
