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
    from .calibrate_replica import (CalibrateError, described_many, fit_many, read_windows,
                                    windows_json)
    from .cli import UsageError, _emit, check_output
    from .progress import Progress
    from .profiles import get_profile
    from .replay import ReplayError
    from .replica_live import LiveError, parse_url
    if (args.replica is None) == (args.samples is None):
        raise UsageError("calibrate: give --replica URL (sample a live replica) or --samples "
                         "FILE... (windows recorded with --record), not both")
    if args.samples is not None and args.record:
        raise UsageError("calibrate: --record keeps a window sampled from --replica; with "
                         "--samples the window is already a file")
    if args.samples is not None and args.repeat != 1:
        raise UsageError("calibrate: --repeat samples a live replica several times; with "
                         "--samples give the recorded windows' files")
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
    if args.every is not None and args.repeat == 1:
        raise UsageError("calibrate: --every spaces the windows of --repeat N (N of 2 or more)")
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
            windows = _record_windows(args, parse_url(args.replica), progress)
            labels = ([f"window 1 ({windows[0].started_utc})"] if len(windows) == 1 else
                      [f"window {i + 1} ({w.started_utc})" for i, w in enumerate(windows)])
            if args.record:
                _emit(json.dumps(windows_json(windows)) + "\n", args.record)
        else:
            windows, labels = [], []
            for path in args.samples:
                got = read_windows(path)
                windows += got
                labels += ([path] if len(got) == 1 else
                           [f"{path} #{i + 1}" for i in range(len(got))])
        if not args.output:
            progress.done()
            print(f"recorded {len(windows)} window{'s' if len(windows) > 1 else ''} "
                  f"({sum(len(w.samples) for w in windows)} samples) of {windows[0].replica} "
                  f"in {args.record}", file=sys.stderr)
            return 0
        from .calibrate_replica import nearest_base
        base = get_profile(args.base or nearest_base(args.cores or windows[0].cores))
        progress("reading the binlog of the window" + ("s" if len(windows) > 1 else ""))
        txns_of = _windows_txns(args, windows)
        result = fit_many(windows, txns_of, base, labels=labels, cores=args.cores,
                          fsync=args.fsync_ms, progress=progress)
    except (LiveError, CalibrateError, ReplayError) as e:
        raise UsageError(f"calibrate: {e}") from None
    progress.done()
    name = args.name or args.output.rsplit("/", 1)[-1].removesuffix(".json")
    profile = described_many(result, base, name)
    _emit(json.dumps({"profiles": [profile.to_json()]}, indent=1) + "\n", args.output)
    if len(windows) == 1:
        _emit(summary(result.fits[0], windows[0], profile, args.output), None)
    else:
        _emit(summary_many(result, profile, args.output), None)
    return 0


def _record_windows(args, address, progress) -> list:
    """--repeat N windows of the live replica, each starting --every apart (default: one
    after the other)."""
    from .calibrate_replica import record
    windows = []
    for i in range(args.repeat):
        begun = time.monotonic()
        said = progress if args.repeat == 1 else (
            lambda text, i=i: progress(f"window {i + 1} of {args.repeat}: {text}"))
        windows.append(record(address, window=args.window, interval=args.interval,
                              probe=args.probe, probe_at=args.probe_at, fsync=args.fsync_ms,
                              cores=args.cores, progress=said))
        if args.every and i + 1 < args.repeat:
            wait = args.every - (time.monotonic() - begun)
            while wait > 0:
                progress(f"next window in {wait:.0f} s ({i + 2} of {args.repeat})")
                time.sleep(min(wait, 1.0))
                wait = args.every - (time.monotonic() - begun)
    return windows


def _windows_txns(args, windows) -> list:
    """Each window's transactions: the binlog files given (one window: all of them; several:
    each window's part), or each window's read from the source."""
    from .calibrate_replica import window_txns
    if args.source:
        return [_window_txns(args, w) for w in windows]
    txns = _window_txns(args, windows[0])
    if len(windows) == 1:
        return [txns]
    return [window_txns(w, txns) for w in windows]


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
    import numpy as np
    from .calibrate_replica import probes_at_words, share_words, shares
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
    for what, rounds in (("fsync", window.fsync_ms_rounds),
                         ("O_DIRECT write", window.log_write_ms_rounds)):
        if rounds and len(rounds) > 1:
            lines.append(f"  the {what} probe: {len(rounds)} rounds, {min(rounds):.3f} to "
                         f"{max(rounds):.3f} ms, median {float(np.median(rounds)):.3f} ms")
    where = probes_at_words(window.probes_at)
    if where:
        lines.append(f"  the disk probes: {where}"
                     + (f", on CPU {', '.join(map(str, window.probe_cpus))} (the replica's)"
                        if window.probe_cpus else ""))
    if result.overlap:
        share, slowed, whole = result.overlap
        lines.append(f"  the disk's serial part: the two logs' syncs at once slowed each other "
                     f"{slowed:.0f} µs (whole syncs taking turns: {whole:.0f}), over "
                     f"{len(window.overlap_rounds)} rounds: disk_hold_share "
                     f"{share_words(share)}")
    elif window.overlap_error:
        lines.append(f"  the disk's serial part was not probed: {window.overlap_error}")
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
    lines += pace_lines(profile, window)
    lines.append(ONE_WINDOW)
    lines.append(f"use it: commitsched lag BINLOG --profile {path} (or score, report)")
    return "\n".join(lines) + "\n"


# A single window's profile is that window's minute: on the project's 2-core VM a window whose
# disk was slow (fsync 3.8 ms where it read 0.16 ms seconds before) made every prediction miss
# by 100-900%, three windows' medians by 14-15% (docs/lag-check/lent-machine.md, Q16-vm).
ONE_WINDOW = ("  one window: the profile is this window's minute; --repeat 3 --every 20min (or "
              "--samples of several recorded windows) keeps each term's median and gives lag "
              "a range")


def pace_lines(profile, window=None) -> list[str]:
    """What the summary says of the host's pace the profile holds at (model/host_speed.py)."""
    rec = (profile.fitted_from or {}).get("host_pace")
    if not rec:
        return ["  the host's pace: not read (a window recorded before it was, or the server "
                "refused SELECT BENCHMARK): `lag --host-now` cannot scale this profile"]
    where = ("in the probe's stop (the replica idle)"
             if window is not None and "stop" in (window.host_loop or {}) else
             "before and after the window (the replica applying: its load read with it)"
             if window is not None else "")
    return [f"  the host's pace: the {rec['loop']} loop {rec['us']:.1f} µs an iteration"
            + (f" {where}" if where else f" (the median of the windows' "
               f"{', '.join(f'{v:.1f}' for v in rec['windows_us'])}; each window's CPU terms "
               f"brought to it)")
            + f"; at another hour, `lag --host-now URL` reads it again and scales the CPU "
            f"terms by (now / then) ** {rec['elasticity']}"]


def summary_many(result, profile, path: str) -> str:
    """A calibration from several windows: each window's fit, the median the profile keeps,
    the spread `lag` gives its ranges from."""
    from .calibrate_replica import settings_words
    first = result.windows[0]
    records = profile.fitted_from["windows"]
    lines = [f"calibrated {path} on {first.replica} ({first.settings.get('version')}): "
             f"{settings_words(first)}, {profile.cores} cores, from {len(records)} windows "
             f"fitted each on its own",
             f"  {'window':<40} {'CPU scale':>9} {'flush':>7} {'redo write µs':>13} "
             f"{'CPU µs/txn':>10} {'drain s':>8} {'replayed':>8}"]
    f = lambda v, p=3: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
    for rec in records:
        lines.append(f"  {rec['window'][-40:]:<40} {f(rec['cpu_scale']):>9} "
                     f"{f(rec['flush_scale']):>7} {f(rec['log_write_us'], 1):>13} "
                     f"{f(rec['cpu_measured_us'], 0):>10} "
                     f"{f(rec['probe_drain_measured_s'], 2):>8} "
                     f"{f(rec['probe_drain_replayed_s'], 2):>8}")
    slow, fast = result.slowest, result.fastest
    lines += [f"  the profile: each term the median of the windows' fits (exec_default "
              f"{profile.exec_default:.1f} µs, slowest {slow['exec_default']:.1f}, fastest "
              f"{fast['exec_default']:.1f}; the redo log's write {profile.log_write:.1f} µs, "
              f"{slow['log_write']:.1f} to {fast['log_write']:.1f})",
              "  `lag` with this profile gives each answer's range: replayed at the slowest and "
              "the fastest calibrated pace (each term at its slowest / fastest window's)"]
    for f_, label in zip(result.fits, result.labels):
        lines += [f"  note ({label}): {n}" for n in f_.notes
                  if not n.startswith("CPU scale from") and not n.startswith("the commit's")]
    lines += pace_lines(profile)
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
                    "window to fit later with --samples. Several windows (--repeat N, or "
                    "--samples FILE...) are fitted each on its own; the profile keeps each "
                    "term's median and the spread, and lag then gives each answer's range "
                    "(docs/lag.md). On a replica on this machine its datadir's disk is "
                    "probed too: the fsync and O_DIRECT write latencies, the commit's CPU, and "
                    "how much of a sync holds the disk while the redo log and the binlog sync "
                    "at once (disk_hold_share, docs/calibration.md): without --probe before and "
                    "after the window (read-only, the replica's own I/O on top); with --probe during "
                    "its stop, the SQL thread stopped (rounds that do not fit are taken after "
                    "the window; the window's probes_at says where each ran).")
    p.add_argument("--replica", metavar="URL",
                   help="mysql://USER[:PASSWORD]@HOST[:PORT] (or ?socket=PATH; password from "
                        "MYSQL_PWD if not in the URL); needs REPLICA MONITOR / REPLICATION "
                        "CLIENT, and for --probe the right to stop and start replication")
    p.add_argument("--samples", nargs="+", metavar="FILE",
                   help="windows recorded earlier with --record (one file each, or a file of "
                        "--repeat's windows); several windows of one replica at one "
                        "configuration are fitted each on its own: the profile keeps each "
                        "term's median and the spread, from which lag gives ranges")
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
                        "checked before the window starts. The disk probes (a datadir on this "
                        "machine) then run during the stop, never lengthening it")
    p.add_argument("--probe-at", type=_seconds, default=5.0, metavar="DURATION",
                   help="when the probe starts, into the window (default 5s)")
    p.add_argument("--repeat", type=_positive_int, default=1, metavar="N",
                   help="sample N windows (each with its own probes and --probe), fitted each "
                        "on its own: a machine whose speed drifts is calibrated on the median, "
                        "and lag gives the spread as ranges (default 1)")
    p.add_argument("--every", type=_seconds, default=None, metavar="DURATION",
                   help="with --repeat: start a window every DURATION (e.g. 10min; default: "
                        "one after the other), to spread them over the host's drift")
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
