"""`commitsched lag` (picked up by commitsched.cli.PLUGIN_COMMANDS): the open replay of a trace
or binlogs as they arrived: keeps up, headroom, lag, drain time (docs/lag.md)."""
from __future__ import annotations

import argparse
import datetime
import json
import re
import time
from dataclasses import dataclass, replace


def _duration(text: str) -> float:
    from .lag import parse_duration
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$")


def zone_note(zone: str | None) -> str:
    """How a clock time given without an offset is read."""
    if zone is None or zone == "UTC":
        return ("read as UTC, the zone of the binlog's timestamps and of every time lag prints "
                "(--tz to choose another), unless an ISO date-time carries its own offset")
    return (f"read in {zone} (--tz), the zone of every time lag prints, unless an ISO "
            f"date-time carries its own offset")


ZONE_NOTE = zone_note(None)


@dataclass(frozen=True)
class ClockTime:
    """A `--backlog-at` given as a time of day (HH:MM[:SS]) or an ISO date-time, read in
    `--tz` (UTC by default) unless it carries an offset: turned into seconds from the trace's
    first commit once the trace's times are known (`backlog_offset`)."""
    text: str
    time_of_day: datetime.time | None = None
    moment: datetime.datetime | None = None      # naive unless `zoned`
    zoned: bool = False              # the ISO date-time carried its own offset


def _when(text: str) -> float | ClockTime:
    """`--backlog-at`: a duration from the trace's start, a time of day, or an ISO date-time."""
    t = text.strip()
    m = _CLOCK.match(t)
    if m:
        h, mi, sec = int(m.group(1)), int(m.group(2)), float(m.group(3) or 0)
        if h > 23 or mi > 59 or sec >= 60:
            raise argparse.ArgumentTypeError(f"{text!r} is not a time of day (HH:MM[:SS])")
        whole = int(sec)
        return ClockTime(t, time_of_day=datetime.time(h, mi, whole,
                                                      round((sec - whole) * 1e6)))
    if re.match(r"^\d{4}-\d{2}-\d{2}", t):
        try:
            moment = datetime.datetime.fromisoformat(t)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not an ISO date-time (e.g. 2026-11-27T02:10 or "
                f"2026-11-27 02:10:30+01:00)") from None
        return ClockTime(t, moment=moment, zoned=moment.tzinfo is not None)
    try:
        return _duration(t)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected an offset from the trace's first commit (90s, 2h30m), a time of day "
            f"(02:10, 02:10:30; in --tz, UTC by default) or an ISO date-time "
            f"(2026-11-27T02:10), got {text!r}") from None


def _wall_to_utc(wall: datetime.datetime, tz, text: str) -> datetime.datetime:
    """A wall-clock time (naive) in zone `tz` as a UTC instant; UsageError for a time the
    zone skips (clocks going forward) or holds twice (going back: give the offset)."""
    from .cli import UsageError
    utc = datetime.timezone.utc
    first, second = (wall.replace(tzinfo=tz, fold=f).astimezone(utc) for f in (0, 1))
    if first.astimezone(tz).replace(tzinfo=None) != wall:
        raise UsageError(f"lag: --backlog-at {text}: {wall:%Y-%m-%d %H:%M:%S} does not exist "
                         f"in {tz} (the clocks skip it)")
    if first != second:
        a, b = (x.astimezone(tz) for x in (first, second))
        raise UsageError(f"lag: --backlog-at {text}: {wall:%Y-%m-%d %H:%M:%S} happens twice in "
                         f"{tz} (the clocks go back): give its offset, "
                         f"{a.isoformat(timespec='minutes')} or "
                         f"{b.isoformat(timespec='minutes')}")
    return first


def backlog_offset(at: float | ClockTime, times) -> tuple[float, str | None]:
    """(seconds from the trace's first commit, a note saying which instant a clock time was
    read as) for `--backlog-at`, read in `times.zone` (UTC by default); UsageError for a clock
    time the binlog does not hold, one that falls on several of its days, one the zone skips or
    holds twice, or a trace whose times are not clock times."""
    from .cli import UsageError
    from .metrics import PER_SECOND
    from .replay import zone_info
    if not isinstance(at, ClockTime):
        return at, None
    if times.epoch is None:
        raise UsageError(f"lag: --backlog-at {at.text}: this trace's commit times count from "
                         f"its start, not clock times; give an offset from its first commit "
                         f"(e.g. 2h)")
    tz = zone_info(times.zone)
    start = datetime.datetime.fromtimestamp(times.epoch, tz)
    end = datetime.datetime.fromtimestamp(times.epoch + times.period / PER_SECOND, tz)
    note = zone_note(times.zone)
    span = (f"its commits run from {start:%Y-%m-%d %H:%M:%S} to {end:%Y-%m-%d %H:%M:%S %Z}"
            f" ({note})")
    if at.moment is not None:
        moment = at.moment if at.zoned else _wall_to_utc(at.moment, tz, at.text)
        candidates = [moment] if start <= moment <= end else []
    else:
        candidates = []
        day = start.date()
        while day <= end.date():
            wall = datetime.datetime.combine(day, at.time_of_day)
            try:
                moment = _wall_to_utc(wall, tz, at.text)
            except UsageError:
                if start <= wall.replace(tzinfo=tz) <= end:
                    raise
                moment = None           # a day of the binlog's span the time is not in
            if moment is not None and start <= moment <= end:
                candidates.append(moment)
            day += datetime.timedelta(days=1)
    if not candidates:
        raise UsageError(f"lag: --backlog-at {at.text} is not in the binlog: {span}")
    if len(candidates) > 1:
        local = [c.astimezone(tz) for c in candidates]
        days = ", ".join(f"{c:%Y-%m-%d}" for c in local)
        raise UsageError(f"lag: --backlog-at {at.text} falls on {len(candidates)} days of the "
                         f"binlog ({days}): give the date too, e.g. "
                         f"{local[-1]:%Y-%m-%dT%H:%M}")
    moment = candidates[0]
    offset = (moment - start).total_seconds()
    from .lag import human_seconds
    how = (f"its offset turned into {times.zone or 'UTC'}" if at.zoned else note)
    return offset, (f"the SQL thread stops at {moment.astimezone(tz):%Y-%m-%d %H:%M:%S %Z} "
                    f"(--backlog-at {at.text}, {how}), "
                    f"{human_seconds(offset)} after the trace's first commit")


def parse_tz(command: str, name: str | None) -> str | None:
    """`--tz`: the IANA zone name to show clock times in (None for UTC); UsageError in one
    line if the machine's zone database does not know it."""
    from .cli import UsageError
    from .replay import zone_info
    if name is None or name.upper() == "UTC":
        return None
    try:
        zone_info(name)
    except ValueError as e:
        raise UsageError(f"{command}: --tz {e}") from None
    return name


TZ_HELP = ("show clock times in this IANA time zone (e.g. Europe/Paris, America/New_York; "
           "default UTC); JSON keeps them in UTC, ISO 8601 with the offset")


def cmd_lag(args) -> int:
    from .cli import check_output
    args.tz = parse_tz("lag", getattr(args, "tz", None))
    check_output(args.output)             # before the replays, not after
    from .inputs import opened
    if args.system != "async":
        from .cluster_cli import cmd_cluster_lag
        _refuse_async_only(args)
        # binlogs too, as for a replica: imported first
        with opened("lag", args.trace, schema=args.schema, skip_bad=args.skip_bad,
                    quiet=args.quiet, schema_from=args.schema_from) as inp:
            args.trace, args.trace_label = [inp.trace], inp.label
            return cmd_cluster_lag(args)
    from .scoring import default_jobs
    from .cli import _bugs, _profile
    args.jobs = default_jobs(args.jobs)
    profile = _profile(args)
    bugs = _bugs(args)
    started = time.monotonic()
    with opened("lag", args.trace, schema=args.schema, skip_bad=args.skip_bad,
                quiet=args.quiet, schema_from=args.schema_from) as inp:
        return _lag(args, inp, profile, bugs, started)


# what only a replica's replay answers: a cluster's (`--system galera|group_replication`) has no
# stop, no delivery delay, no scheduler choice and prints no clock time, so these are refused
# there rather than silently ignored
ASYNC_ONLY = (("scheduler", None, "--scheduler"), ("backlog", None, "--backlog"),
              ("backlog_at", 0.0, "--backlog-at"), ("tz", None, "--tz"),
              ("delay", 0.0, "--delay"))


def _refuse_async_only(args) -> None:
    from .cli import UsageError
    given = [flag for name, default, flag in ASYNC_ONLY
             if getattr(args, name, default) not in (default, None)]
    if given:
        raise UsageError(f"lag --system {args.system}: {', '.join(given)} "
                         f"{'applies' if len(given) == 1 else 'apply'} to a replica "
                         "(--system async) only")


def _lag(args, inp, profile, bugs, started: float) -> int:
    from . import engine
    from .cli import (TraceSource, _applier_options, _emit, _mysql_defaults, _mysql_schedulers,
                      _tracker_options)
    from .lag import file_gaps, format_table, gaps_words, lag_sweep
    from .progress import Progress
    from .replay import ReplayError, source_times
    from .trace import TraceError
    from .schedulers import DEFAULT_SCHEDULERS
    from .scoring import profile_line
    from .metrics import PER_SECOND
    progress = Progress(args.quiet, started=started)
    progress(f"reading {inp.label}")
    # the compiled core replays from the columns: the Txn objects (about 850 bytes a
    # transaction, against the columns' 100) are read again from the file for the few passes
    # that need them (the source times, the worst lag's big transaction), not held; the
    # reference engine replays from them, so it holds them as `score` does
    trace = TraceSource(inp.trace, stream=True if engine.default() == "compiled" else None)
    try:
        times = replace(source_times(trace.stamps()), zone=args.tz)
        times.check_pace()
    except ReplayError as e:
        raise TraceError(inp.label, None, str(e)) from None
    _mysql_defaults(args, trace.source)
    schedulers = _mysql_schedulers(args) or list(DEFAULT_SCHEDULERS)
    notes = []
    if times.whole_seconds:
        notes.append("the source's commit times are whole seconds (the event "
                     "timestamps of MariaDB, or of MySQL before 8.0): "
                     "each second's transactions are spread evenly over it, so a burst inside "
                     "one second is not seen and lags under a second are approximate")
    held = times.held_back_note()
    if held:
        notes.append(held)
    from .lag import short_trace_note
    short = short_trace_note(times.count, args.workers)
    if short:
        notes.append(short)
    # transactions missing between the binlog files given (import's warning, continuity.py,
    # kept in the trace's header: binlogs imported now, or a trace imported before)
    gaps = file_gaps(trace.source) or list(getattr(inp.stats, "file_gaps", None) or ())
    if gaps:
        notes += [gaps_words(gaps, drain=args.backlog is not None)] + gaps
    if args.tz:
        notes.append(f"clock times are shown in {args.tz} (--tz); JSON keeps them in UTC")
    backlog_at = 0.0
    if args.backlog is not None:
        backlog_at, said = backlog_offset(args.backlog_at, times)
        if said:
            notes.append(said)
    if args.backlog is not None and backlog_at + args.backlog > times.period / PER_SECOND:
        notes.append(f"the stop (--backlog-at {backlog_at:g} s + --backlog "
                     f"{args.backlog:g} s) goes past the trace's end "
                     f"({times.period / PER_SECOND:g} s): the trace's pace is taken to repeat "
                     f"through it")
    if args.delay:
        notes.append(f"each transaction reaches the replica {args.delay:g} s after its source "
                     f"commit (--delay); lags include it")
    unmeasured = profile.unmeasured()
    ends, windows = _spread(profile)
    sweep = dict(jobs=args.jobs, backlog=args.backlog, backlog_at=backlog_at,
                 delay=args.delay, bugs=bugs,
                 tracker_options=lambda t: _tracker_options(args, t),
                 applier_options=_applier_options(args))
    results = lag_sweep(trace, times, schedulers, args.workers, profile, progress=progress,
                        skip_unfit=not args.scheduler, **sweep)
    if ends:
        # the same sweep at each end of the calibration's spread: each answer's range
        from .lag import with_ranges
        fed = list(dict.fromkeys(r["scheduler"] for r in results))
        at_ends = {end: lag_sweep(trace, times, fed, args.workers, p, skip_unfit=False,
                                  progress=lambda text, end=end: progress(
                                      f"at the {end} calibrated pace: {text}"), **sweep)
                   for end, p in ends.items()}
        with_ranges(results, at_ends)
        notes.append(f"the profile was calibrated from {windows} windows: each answer's range "
                     f"is its replay at the slowest and the fastest calibrated pace")
    progress.done()
    for r in results:
        if args.backlog is not None and "error" not in r:
            # the stop's start, as an offset and as the instant it is (UTC, ISO 8601)
            r["backlog_at_s"] = round(backlog_at, 6)
            r["backlog_at"] = times.iso(backlog_at * PER_SECOND)
        r["timestamps"] = "spread over each second" if times.whole_seconds else "µs"
        r["notes"] = notes
        if unmeasured:
            r["unmeasured"] = unmeasured
    if args.json:
        _emit(json.dumps(results, indent=2) + "\n", args.output)
    else:
        _emit(format_table(results, label=inp.label, times=times,
                           profile_text=profile_line(profile), notes=notes, windows=windows),
              args.output)
    return 0


def _spread(profile, command: str = "lag") -> tuple[dict | None, int]:
    """The profile at its calibration spread's ends, and how many windows it was calibrated
    from (None, 0: one window, or not calibrated by `calibrate`); a malformed spread is one
    line (UsageError)."""
    from .cli import UsageError
    from .spread import calibrated_windows, spread_ends
    try:
        ends = spread_ends(profile)
    except ValueError as e:
        raise UsageError(f"{command}: {e}") from None
    return ends, calibrated_windows(profile)


def add_subcommands(sub, add_model_options) -> None:
    from .cli import SCHEDULER_HELP, _add_input_arguments, _add_mysql_option, _positive_int, \
        _workers, add_engine_option
    from .lag import DRAIN_LEGEND, LEGEND
    from .profiles import DEFAULT_PROFILE
    p = sub.add_parser(
        "lag", help="replay a binlog as it arrived: does the replica keep up, headroom, lag, "
                    "drain time",
        description="Replay INPUT (a trace, or binlog files imported on the fly) as it arrived: "
                    "each transaction reaches the replica at its source commit time (MySQL 8: "
                    "µs commit timestamps; MariaDB: one-second stamps, spread over their "
                    "second). For each scheduler and worker count: whether the replica keeps up "
                    "with the source's pace, its headroom (the largest factor the pace could be "
                    "multiplied by and still keep up), lag percentiles and the maximum with when "
                    "it happens, and with --backlog how long it takes to catch up after its SQL "
                    "thread was stopped that long while writes went on; each beside the "
                    "straight-line extrapolation (backlog / (apply rate - write rate)). The "
                    "trace is read as one period of a pace that repeats. With a profile that "
                    "`calibrate` fitted from several windows, every answer is also replayed at "
                    "the slowest and the fastest calibrated pace and given as a range, and the "
                    "keeps-up verdict says when it flips inside it (docs/lag.md).",
        epilog=LEGEND + DRAIN_LEGEND + " Durations: 90, 90s, 500ms, 3h, 2h30m, 1d. Example: "
               "commitsched lag binlog.000042 binlog.000043 --scheduler "
               "commit_id+mariadb_optimistic --workers 4,8,16 --backlog 3h --backlog-at 2h.")
    _add_input_arguments(p)
    p.add_argument("--scheduler", action="append", metavar="S",
                   help=SCHEDULER_HELP + " (repeatable; default: every scheduler the trace "
                        "supports)")
    p.add_argument("--workers", type=_workers, default=[1, 2, 4, 8, 16], metavar="LIST",
                   help="worker counts (default 1,2,4,8,16)")
    p.add_argument("--backlog", type=_duration, metavar="DURATION",
                   help="also the drain time after the replica's SQL thread was stopped this "
                        "long (source time, e.g. 90s, 3h, 2h30m), writes going on meanwhile")
    p.add_argument("--backlog-at", type=_when, default=0.0, metavar="WHEN",
                   help="when the stop begins: an offset from the trace's first commit (2h, "
                        "90s; default 0), a time of day (02:10, 02:10:30) or an ISO date-time "
                        "(2026-11-27T02:10, or with its offset: ...T03:10+01:00). Clock times "
                        "are read in --tz (UTC by default), the zone every time lag prints is "
                        "shown in; one the binlog does not hold, a time of day on several of "
                        "its days, or a wall time the zone skips or holds twice (a DST "
                        "change: give the offset), is refused")
    p.add_argument("--tz", metavar="ZONE", help=TZ_HELP + "; --backlog-at's clock times are "
                   "read in it too. A name the machine's zone database does not know is "
                   "refused")
    p.add_argument("--delay", type=_duration, default=0.0, metavar="DURATION",
                   help="delivery delay: each transaction reaches the relay log this long after "
                        "its source commit (default 0); lags include it")
    p.add_argument("--system", choices=("async", "galera", "group_replication"),
                   default="async",
                   help="async (default): a replica of the source; galera / group_replication: "
                        "a certification-based cluster of --members members, the source's "
                        "transactions written on one member: does every member keep up, with "
                        "flow control (the cluster simulator, docs/certification.md); "
                        "--scheduler, --backlog, --backlog-at, --tz and --delay are a "
                        "replica's and refused there")
    p.add_argument("--members", type=_positive_int, default=3, metavar="N",
                   help="with --system galera|group_replication: the cluster's size (default 3)")
    p.add_argument("--cluster-profile", default="galera-2core-unthrottled", metavar="NAME",
                   help="with --system galera|group_replication: the cluster profile (default "
                        "galera-2core-unthrottled, measured on this project's 2-core VM)")
    p.add_argument("--json", action="store_true",
                   help="a JSON list, one object per (scheduler, workers): scheduler, "
                        "workers, keeps_up, headroom (headroom_is_bound: the search's limit), "
                        "max_lag_s, max_lag_at (UTC, ISO 8601: 2026-11-27T02:10:00+00:00, "
                        "whatever --tz), max_lag_cause (kind: delivery_delay, "
                        "big_transaction, own_apply, burst, low_parallelism or heavy_stretch; text; "
                        "the "
                        "figures read), p50/p99/mean_lag_s, lag_growth_per_lap_s, "
                        "lap_s, apply_rate and write_rate (txn/s), straight_line_headroom, "
                        "lag_over_time ([source s, lag s] pairs), notes; with --backlog also "
                        "backlog_s, backlog_at_s and backlog_at (when the stop begins, UTC, "
                        "ISO 8601 with its offset, as max_lag_at), "
                        "drain_s (null when it never drains), drain_note, "
                        "straight_line_drain_s. With a profile calibrated from several "
                        "windows also each answer's range, replayed at the slowest and the "
                        "fastest calibrated pace: keeps_up_slowest, keeps_up_fastest, "
                        "keeps_up_words ('keeps up (but not at the slowest calibrated pace)'), "
                        "headroom_range, max_lag_s_range, drain_s_range ([low, high]; high "
                        "null: at some calibrated pace it never drains). Times in seconds")
    p.add_argument("-o", "--output", help="write to this file instead of standard output")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                   help="replays in N processes (default: one per usable core); the results "
                        "do not depend on it")
    add_model_options(p)
    _add_mysql_option(p)
    add_engine_option(p)
    p.set_defaults(func=cmd_lag, profile=DEFAULT_PROFILE)
