"""`commitsched lag` (picked up by commitsched.cli.PLUGIN_COMMANDS): the open replay of a trace
or binlogs as they arrived: keeps up, headroom, lag, drain time (docs/lag.md)."""
from __future__ import annotations

import argparse
import json
import time


def _duration(text: str) -> float:
    from .lag import parse_duration
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_lag(args) -> int:
    if args.system != "async":
        from .cluster_cli import cmd_cluster_lag
        return cmd_cluster_lag(args)
    from .inputs import opened
    from .scoring import default_jobs
    from .cli import _bugs, _profile
    args.jobs = default_jobs(args.jobs)
    profile = _profile(args)
    bugs = _bugs(args)
    started = time.monotonic()
    with opened("lag", args.trace, schema=args.schema, skip_bad=args.skip_bad,
                quiet=args.quiet, schema_from=args.schema_from) as inp:
        return _lag(args, inp, profile, bugs, started)


def _lag(args, inp, profile, bugs, started: float) -> int:
    from .cli import (TraceSource, _applier_options, _emit, _mysql_defaults, _mysql_schedulers,
                      _tracker_options)
    from .lag import format_table, lag_sweep
    from .progress import Progress
    from .replay import ReplayError, source_times
    from .trace import TraceError
    from .schedulers import DEFAULT_SCHEDULERS
    from .scoring import profile_line
    progress = Progress(args.quiet, started=started)
    progress(f"reading {inp.label}")
    trace = TraceSource(inp.trace)
    try:
        times = source_times(trace.txns())
    except ReplayError as e:
        raise TraceError(inp.label, None, str(e)) from None
    _mysql_defaults(args, trace.source)
    schedulers = _mysql_schedulers(args) or list(DEFAULT_SCHEDULERS)
    notes = []
    if times.whole_seconds:
        notes.append("the source's commit times are whole seconds (MariaDB's event timestamps): "
                     "each second's transactions are spread evenly over it, so a burst inside "
                     "one second is not seen and lags under a second are approximate")
    if args.delay:
        notes.append(f"each transaction reaches the replica {args.delay:g} s after its source "
                     f"commit (--delay); lags include it")
    unmeasured = profile.unmeasured()
    results = lag_sweep(trace, times, schedulers, args.workers, profile, jobs=args.jobs,
                        progress=progress, skip_unfit=not args.scheduler,
                        backlog=args.backlog, backlog_at=args.backlog_at, delay=args.delay,
                        bugs=bugs, tracker_options=lambda t: _tracker_options(args, t),
                        applier_options=_applier_options(args))
    progress.done()
    for r in results:
        r["timestamps"] = "spread over each second" if times.whole_seconds else "µs"
        if unmeasured:
            r["unmeasured"] = unmeasured
    if args.json:
        _emit(json.dumps(results, indent=2) + "\n", args.output)
    else:
        _emit(format_table(results, label=inp.label, times=times,
                           profile_text=profile_line(profile), notes=notes), args.output)
    return 0


def add_subcommands(sub, add_model_options) -> None:
    from .cli import SCHEDULER_HELP, _add_input_arguments, _add_mysql_option, _positive_int, \
        _workers, add_engine_option
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
                    "trace is read as one period of a pace that repeats (docs/lag.md).")
    _add_input_arguments(p)
    p.add_argument("--scheduler", action="append", metavar="S",
                   help=SCHEDULER_HELP + " (repeatable; default: every scheduler the trace "
                        "supports)")
    p.add_argument("--workers", type=_workers, default=[1, 2, 4, 8, 16], metavar="LIST",
                   help="worker counts (default 1,2,4,8,16)")
    p.add_argument("--backlog", type=_duration, metavar="DURATION",
                   help="also the drain time after the replica's SQL thread was stopped this "
                        "long (source time, e.g. 90s, 3h, 2h30m), writes going on meanwhile")
    p.add_argument("--backlog-at", type=_duration, default=0.0, metavar="DURATION",
                   help="when the stop begins, from the trace's first commit (default 0)")
    p.add_argument("--delay", type=_duration, default=0.0, metavar="DURATION",
                   help="delivery delay: each transaction reaches the relay log this long after "
                        "its source commit (default 0); lags include it")
    p.add_argument("--system", choices=("async", "galera", "group_replication"),
                   default="async",
                   help="async (default): a replica of the source; galera / group_replication: "
                        "a certification-based cluster of --members members, the source's "
                        "transactions written on one member: does every member keep up, with "
                        "flow control (the cluster simulator, docs/certification.md)")
    p.add_argument("--members", type=_positive_int, default=3, metavar="N",
                   help="with --system galera|group_replication: the cluster's size (default 3)")
    p.add_argument("--cluster-profile", default="galera-2core-unthrottled", metavar="NAME",
                   help="with --system galera|group_replication: the cluster profile (default "
                        "galera-2core-unthrottled, measured on this project's 2-core VM)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per (scheduler, workers): scheduler, workers, "
                        "keeps_up, headroom, max_lag_s, p99_lag_s, drain_s (with --backlog; "
                        "null when it never drains), lag_over_time, straight-line figures")
    p.add_argument("-o", "--output", help="write to this file instead of standard output")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                   help="replays in N processes (default: one per usable core); the results "
                        "do not depend on it")
    add_model_options(p)
    _add_mysql_option(p)
    add_engine_option(p)
    p.set_defaults(func=cmd_lag, profile=DEFAULT_PROFILE)
