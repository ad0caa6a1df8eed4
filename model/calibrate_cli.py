"""`commitsched calibrate` (picked up by commitsched.cli.PLUGIN_COMMANDS): a machine profile from
the user's own replica (model/calibrate_replica.py, docs/lag.md)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _seconds(text: str) -> float:
    from .lag_cli import _duration
    return _duration(text)


def cmd_calibrate(args) -> int:
    from .calibrate_replica import CalibrateError, Window, described, fit, record
    from .cli import UsageError, _emit, check_output
    from .progress import Progress
    from .profiles import get_profile
    from .replay import ReplayError
    from .replica_live import LiveError, parse_url
    if (args.replica is None) == (args.samples is None):
        raise UsageError("calibrate: give --replica URL (sample a live replica) or --samples "
                         "FILE (a window recorded with --record), not both")
    if args.samples is not None and args.record:
        raise UsageError("calibrate: --record keeps a window sampled from --replica; with "
                         "--samples the window is already a file")
    if args.output and not (args.binlog or args.source):
        raise UsageError("calibrate: fitting a profile needs the binlog of the window: "
                         "--binlog FILES (or --source URL to read it from the source)")
    if args.binlog and args.source:
        raise UsageError("calibrate: give the window's binlog as --binlog FILES or --source URL, "
                         "not both")
    if not args.output and not args.record:
        raise UsageError("calibrate: say what to write: -o PROFILE.json, --record WINDOW.json, "
                         "or both")
    if args.replica is not None and not args.window > 0:
        raise UsageError(f"calibrate: --window must be longer than 0, got {args.window:g} s")
    if args.replica is not None and args.probe and args.probe_at >= args.window:
        raise UsageError(f"calibrate: the probe would start after the window ends (--probe-at "
                         f"{args.probe_at:g} s, --window {args.window:g} s): make the window "
                         f"longer or the probe earlier")
    # what can be checked before the replica is sampled (a minute or more, its SQL thread
    # perhaps stopped) is checked first: the outputs can be written, the binlog files exist
    check_output(args.output)
    check_output(args.record, "--record")
    if args.base:
        get_profile(args.base)              # a typo said now, not after the window
    for path in args.binlog or ():
        if not os.path.isfile(path):
            raise UsageError(f"calibrate: --binlog {path}: "
                             + ("is a folder" if os.path.isdir(path) else "no such file"))
    progress = Progress(args.quiet, started=time.monotonic())
    try:
        if args.replica is not None:
            if args.probe:
                _check_probe_privileges(parse_url(args.replica))
            window = record(parse_url(args.replica), window=args.window, interval=args.interval,
                            probe=args.probe, probe_at=args.probe_at, fsync=args.fsync_ms,
                            cores=args.cores, progress=progress)
            if args.record:
                _emit(json.dumps(window.to_json()) + "\n", args.record)
        else:
            window = Window.from_file(args.samples)
        if not args.output:
            progress.done()
            print(f"recorded {len(window.samples)} samples of {window.replica} in "
                  f"{args.record}", file=sys.stderr)
            return 0
        from .calibrate_replica import nearest_base
        base = get_profile(args.base or nearest_base(args.cores or window.cores))
        progress("reading the binlog of the window")
        txns = _window_txns(args, window)
        result = fit(window, txns, base, cores=args.cores, fsync=args.fsync_ms,
                     progress=progress)
    except (LiveError, CalibrateError, ReplayError) as e:
        raise UsageError(f"calibrate: {e}") from None
    progress.done()
    name = args.name or args.output.rsplit("/", 1)[-1].removesuffix(".json")
    profile = described(result, window, base, name)
    _emit(json.dumps({"profiles": [profile.to_json()]}, indent=1) + "\n", args.output)
    _emit(summary(result, window, profile, args.output), None)
    return 0


def _check_probe_privileges(address) -> None:
    """Refuse a --probe the user's privileges cannot make before the window is recorded (the
    server would refuse STOP SLAVE only at --probe-at, after that much sampling)."""
    from .replica_live import check_probe_privileges, connect
    conn = connect(address)
    try:
        check_probe_privileges(conn)
    finally:
        conn.close()


def _window_txns(args, window) -> list:
    """The binlog of the window as transactions: the files given, or read from the source."""
    from .inputs import opened
    from .trace import load_trace
    paths = list(args.binlog or [])
    if args.source:
        from .binlog_fetch import fetch_binlogs
        with fetch_binlogs(args.source, window) as fetched:
            with opened("calibrate", fetched, schema=args.schema, quiet=args.quiet) as inp:
                return list(load_trace(inp.trace).txns)
    with opened("calibrate", paths, schema=args.schema, quiet=args.quiet) as inp:
        return list(load_trace(inp.trace).txns)


def summary(result, window, profile, path: str) -> str:
    from .calibrate_replica import shares
    s = window.settings
    lines = [f"calibrated {path} on {window.replica} ({s.get('version')}): "
             f"{s.get('scheduler')} W={s.get('workers')}, {s.get('durability')}, "
             f"log_replica_updates {'on' if s.get('log_replica_updates') else 'off'}, "
             f"{profile.cores} cores",
             ]
    fitted = (f"fitted on {result.samples_used} samples with a backlog; mean squared error "
              f"{result.loss:.1f} transactions^2")
    if result.cpu_measured is not None:
        lines += [f"  CPU terms: {result.cpu_scale:.3f} x the base profile's (the replica's "
                  f"CPU time: {result.cpu_measured:.0f} µs a transaction applied)",
                  f"  flush latencies: {result.flush_scale:.3f} x the base profile's ({fitted}; "
                  f"the fsync probe, {window.fsync_ms} ms, said {result.prior_flush:.3f})"]
    else:
        lines += [f"  CPU terms: {result.cpu_scale:.3f} x the base profile's ({fitted})",
                  f"  flush latencies: {result.flush_scale:.3f} x the base profile's "
                  f"(fsync {window.fsync_ms} ms)"]
    if profile.log_write:
        lines.append(f"  the redo log's unbuffered write: {profile.log_write:.1f} µs a group "
                     f"commit, relaxed too (innodb_log_file_buffering=OFF)")
    if window.io_cpu:
        lines.append(f"  the commit's CPU, probed on its disk: the redo log's write and sync "
                     f"{profile.commit_cpu:.1f} µs, the binlog's sync {profile.sync_cpu:.1f} µs "
                     f"(a durable replica's), the redo log's write alone "
                     f"{profile.log_write_cpu:.1f} µs (what a relaxed one keeps)")
    if result.measured_drain is not None:
        fitted = ("never" if result.fitted_drain is None else f"{result.fitted_drain:.2f} s")
        lines.append(f"  the probe's drain: measured {result.measured_drain:.2f} s, replayed "
                     f"{fitted}")
    if window.workers_after:
        before = window.workers_before or {}
        measured = shares({w: c - before.get(w, 0) for w, c in window.workers_after.items()})
        lines.append("  share of the transactions per worker, largest first: measured "
                     + " ".join(f"{x:.0%}" for x in measured) + "; replayed "
                     + " ".join(f"{x:.0%}" for x in result.predicted_share))
    elif (s.get("workers") or 1) > 1:
        lines.append("  share of the transactions per worker: not measured (performance_schema "
                     "is off, or its `transaction` instrument is: "
                     "performance-schema-instrument='transaction=ON' in the replica's my.cnf)")
    lines += [f"  note: {n}" for n in result.notes]
    lines.append(f"use it: commitsched lag BINLOG --profile {path} (or score, report)")
    return "\n".join(lines) + "\n"


def add_subcommands(sub, add_model_options) -> None:
    from .cli import _positive_float, _positive_int
    p = sub.add_parser(
        "calibrate", help="fit a machine profile on your own replica (read-only unless "
                          "--probe)",
        description="Sample a live replica's applied position over a window (read-only: the "
                    "version, its parallel settings, durability and binlog setting, its "
                    "applied and received GTIDs), then, with the binlog of that window, fit "
                    "the machine's speed so that replaying the window reproduces the measured "
                    "pace: a profile for score, lag and report (--profile FILE). The fit needs "
                    "a stretch where the replica had a backlog: --probe SECONDS stops its SQL "
                    "thread that long, starts it again and times the catch-up (never the "
                    "default; the SQL thread is restarted on every path). --record keeps the "
                    "window to fit later with --samples (docs/lag.md).")
    p.add_argument("--replica", metavar="URL",
                   help="mysql://USER[:PASSWORD]@HOST[:PORT] (or ?socket=PATH; password from "
                        "MYSQL_PWD if not in the URL); needs REPLICA MONITOR / REPLICATION "
                        "CLIENT, and for --probe the right to stop and start replication")
    p.add_argument("--samples", metavar="FILE", help="a window recorded earlier with --record")
    p.add_argument("--binlog", nargs="+", metavar="FILE",
                   help="the source's binlog files covering the window (binary, or -vv text)")
    p.add_argument("--source", metavar="URL",
                   help="read the window's binlog from the source over the replication "
                        "protocol instead (read-only; mariadb-binlog/mysqlbinlog "
                        "--read-from-remote-server)")
    p.add_argument("--schema", action="append", metavar="SQL",
                   help="table definitions for the binlog (mysqldump --no-data); repeatable")
    p.add_argument("-o", "--output", metavar="PROFILE.json", help="write the fitted profile here")
    p.add_argument("--record", metavar="WINDOW.json", help="also keep the recorded window here")
    p.add_argument("--name", help="the profile's name (default: the output file's)")
    p.add_argument("--window", type=_seconds, default=60.0, metavar="DURATION",
                   help="how long to sample (default 60s); with --probe, then until caught up")
    p.add_argument("--interval", type=_positive_float, default=0.05, metavar="S",
                   help="seconds between samples (default 0.05)")
    p.add_argument("--probe", type=_seconds, metavar="DURATION",
                   help="stop the SQL thread this long, then time the catch-up (explicit; "
                        "never the default). Needs REPLICATION SLAVE ADMIN (MariaDB 10.5.2 on; "
                        "SUPER too before 11.0.1) or REPLICATION_SLAVE_ADMIN / SUPER (MySQL): "
                        "checked before the window starts")
    p.add_argument("--probe-at", type=_seconds, default=5.0, metavar="DURATION",
                   help="when the probe starts, into the window (default 5s)")
    p.add_argument("--base", metavar="PROFILE",
                   help="the fitted profile whose mechanism terms are scaled (default: the one "
                        "whose machine's core count is nearest the replica's: replica16, 16 "
                        "cores, or durable-mariadb, 2)")
    p.add_argument("--cores", type=_positive_int, metavar="N",
                   help="the replica's cores (default: those its server may run on, when it "
                        "runs on this machine; else the base profile's)")
    p.add_argument("--fsync-ms", type=_positive_float, metavar="MS",
                   help="the replica's fsync latency, when it is not on this machine "
                        "(default: probed in its datadir when it is)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=cmd_calibrate)
