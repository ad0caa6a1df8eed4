"""The `commitsched` command line.

Every failure a user can cause (a bad trace, an unknown scheduler, an impossible option) ends in
one line `commitsched: error: ...` and exit status 2, never a traceback; outputs are written
atomically, so a failed command leaves nothing half-written.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import threading
import time
from typing import Sequence

from . import __version__
from .profiles import DEFAULT_PROFILE, PROFILES, ProfileError, get_profile
from .progress import Progress
from .scoring import Z3_AUTO_LIMIT
from .trace import TraceError, iter_trace, load_trace, open_trace, write_trace

# Modules that add subcommands: each has `add_subcommands(subparsers, add_model_options)` and
# sets `func` on its parsers; a command raising one of the errors caught in `main` (or
# `UsageError`) gets the one-line error treatment.
PLUGIN_COMMANDS = ("commitsched.checks.bound_cli", "commitsched.report.cli",
                   "commitsched.checks.conformance_cli", "commitsched.blame_cli",
                   "commitsched.lag_cli", "commitsched.calibrate_cli",
                   "commitsched.cluster_cli")

# Traces bigger than this are re-read for each run instead of held in memory.
STREAM_ABOVE_BYTES = 64 * 1024 * 1024


class UsageError(Exception):
    pass


# ------------------------------------------------------------------ helpers

# The most worker threads a server takes (MariaDB's slave_parallel_threads; MySQL's
# replica_parallel_workers stops at 1024): more is a typo, and would only exhaust memory.
MAX_WORKERS = 16383


def _workers(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected worker counts like 1,2,4,8, got {text!r}")
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"worker counts must be positive integers, got {text!r}")
    if max(values) > MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_WORKERS} workers (MariaDB's slave_parallel_threads maximum; MySQL's "
            f"replica_parallel_workers stops at 1024), got {max(values)}")
    return values


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def _profile_name(text: str) -> str:
    """A profile's name, or a profile file (checked when the profile is loaded)."""
    if text in PROFILES or os.sep in text or text.endswith(".json") or os.path.isfile(text):
        return text
    raise argparse.ArgumentTypeError(f"unknown profile {text!r}; known: "
                                     f"{', '.join(sorted(PROFILES))}, or a profile file")


def _on_off(text: str) -> bool:
    if text.lower() in ("on", "1", "true", "yes"):
        return True
    if text.lower() in ("off", "0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")


class TraceSource:
    """A trace to run several times: held in memory, or re-read per run when it is large. Its
    columns (model/columnar.py), which the compiled engine runs on, come with every `txns()`:
    a large trace's are built while it is validated (its Txn objects are never all held), a
    small one's from its Txn objects the first time a run needs them."""

    def __init__(self, path: str, stream: bool | None = None):
        """`stream`: load straight into columns whatever the size (True), hold the Txn
        objects (False); None: stream above STREAM_ABOVE_BYTES on disk."""
        self.path = path
        try:
            size = os.path.getsize(path)
        except OSError:
            size = 0
        self.streaming = size > STREAM_ABOVE_BYTES if stream is None else stream
        self._columns = None
        if self.streaming:
            from .columnar import load_columns
            self.source, self._columns = load_columns(path)   # validates the whole file first
            self.count = self._columns.n
            self._txns = None
        else:
            trace = load_trace(path)
            self.source, self._txns, self.count = trace.source, trace.txns, len(trace.txns)

    def hold(self) -> None:
        """Keep a streamed trace's Txn objects too (one more read of the file), for a command
        whose passes read them several times; its columns stay."""
        if self._txns is None:
            self._txns = list(iter_trace(self.path)[1])

    def columns(self):
        if self._columns is None:
            # the core's loader reads the file again into the same columns (a file it refuses
            # goes to the Python loader), about four times as fast as building them from the
            # Txn objects held (2.3 against about 8 s on a 1M-transaction trace), and a file
            # loaded before comes from the column cache
            from .columnar import load_columns
            self._columns = load_columns(self.path)[1]
        return self._columns

    def _iter(self):
        if self._txns is not None:
            return iter(self._txns)
        return iter_trace(self.path)[1]

    def txns(self):
        from .columnar import ColumnarTxns
        return ColumnarTxns(self.columns, self._iter)

    def stamps(self):
        """Each transaction's seq, source commit time and file (`replay.source_times`): a
        streamed trace's read from the file without its Txn objects."""
        if self._txns is not None:
            return iter(self._txns)
        from .trace import iter_stamps
        return iter_stamps(self.path)


def _mysql_defaults(args, source: dict):
    """The MySQL version's defaults for this run (`--mysql`, else the trace header's MySQL
    server, else None), kept on `args` for the option helpers below."""
    from .mysql_versions import MySQLVersionError, get_defaults, version_of_server
    version, origin = getattr(args, "mysql", None), "--mysql"
    if version is None:
        version, origin = version_of_server(source.get("server")), "the trace's server"
    try:
        args.mysql_defaults = get_defaults(version) if version else None
    except MySQLVersionError as e:
        raise UsageError(str(e)) from None
    args.mysql_origin = origin
    return args.mysql_defaults


def _mysql_schedulers(args) -> list[str] | None:
    """The schedulers to run under the MySQL version (None: the command's own default)."""
    from .mysql_versions import MySQLVersionError, check_schedulers, default_schedulers
    d = getattr(args, "mysql_defaults", None)
    if d is None:
        return args.scheduler
    if not args.scheduler:
        return default_schedulers(d)
    try:
        check_schedulers(d, args.scheduler)
    except MySQLVersionError as e:
        raise UsageError(str(e)) from None
    return args.scheduler


def _applier_options(args) -> dict:
    opts = {}
    if getattr(args, "preserve_commit_order", None) is not None:
        opts["preserve_commit_order"] = args.preserve_commit_order
    elif getattr(args, "mysql_defaults", None) is not None:
        opts["preserve_commit_order"] = args.mysql_defaults.preserve_commit_order
    if getattr(args, "checkpoint_group", None) is not None:
        opts["checkpoint_group"] = args.checkpoint_group
    if getattr(args, "max_queued", None) is not None:
        opts["max_queued"] = args.max_queued
    return opts


def _tracker_options(args, tracker: str | None) -> dict:
    opts = {}
    if tracker in ("writeset", "writeset_session") and args.history_size is not None:
        opts["history_size"] = args.history_size
    if tracker in ("writeset", "writeset_session") and getattr(args, "mysql_defaults", None):
        opts["write_set"] = args.mysql_defaults.write_set
    if tracker == "slave_group_commit":
        if args.commit_wait_count is not None:
            opts["commit_wait_count"] = args.commit_wait_count
        if args.commit_wait_usec is not None:
            opts["commit_wait_usec"] = args.commit_wait_usec
    return opts


def _bugs(args) -> frozenset[str]:
    from .bugs import UnknownBug, check_bugs
    try:
        return check_bugs(args.inject_bug)
    except UnknownBug as e:
        raise UsageError(str(e)) from None


def _profile(args):
    return _host_paced(args, get_profile(
        args.profile, cores=getattr(args, "cores", None),
        durability=getattr(args, "durability", None),
        log_replica_updates=getattr(args, "log_replica_updates", None)))


def _host_paced(args, profile):
    """The profile at the host's pace now (--host-now URL, --host-pace-us US): its CPU terms
    scaled by (now / at calibration) ** host_speed.PACE_ELASTICITY (docs/lag.md, "The host's
    pace"); unchanged without them."""
    url, given = getattr(args, "host_now", None), getattr(args, "host_pace_us", None)
    if url is None and given is None:
        return profile
    if url is not None and given is not None:
        raise UsageError("--host-now and --host-pace-us: give one")
    from .calibrate_replica import at_pace_now
    if url is not None:
        from .host_speed import host_loop, pace_us
        from .replica_live import LiveError, connect, parse_url
        try:
            address = parse_url(url)
            conn = connect(address)
            try:
                now, where = pace_us(host_loop(conn)), f"{address.label()} " + time.strftime(
                    "%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            finally:
                conn.close()
        except LiveError as e:
            raise UsageError(f"--host-now: {e}") from None
    else:
        now, where = given, "--host-pace-us"
    try:
        return at_pace_now(profile, now, where)
    except ValueError as e:
        raise UsageError(f"{'--host-now' if url else '--host-pace-us'}: {e}") from None


def _emit(text: str, path: str | None) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    from .trace import write_text_atomic
    try:
        write_text_atomic(path, text)
    except OSError as e:            # named by the user's path, not the temporary file's
        raise OSError(e.errno, e.strerror, path) from None


def check_output(path: str | None, option: str = "-o") -> None:
    """UsageError now, before minutes of work, if `path` cannot be written: a folder, or a
    place where no file can be made (the nearest folder that exists is tried with a file
    made and removed at once; the missing ones below it are made when the output is)."""
    if path is None:
        return
    import tempfile
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    try:
        if not os.path.isdir(folder):
            raise NotADirectoryError(20, "Not a directory")
        fd, probe = tempfile.mkstemp(prefix=".tmp-check-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there ({folder}: "
                         f"{e.strerror or e})") from None


# ------------------------------------------------------------------ commands

def cmd_validate(args) -> int:
    source, version, txns = open_trace(args.trace)
    n = files = 0
    last_file = None
    for txn in txns:
        n += 1
        if txn.file != last_file:
            files += 1
            last_file = txn.file
    print(f"{args.trace}: valid commitsched trace v{version}, {n} transactions in {files} "
          f"binlog file(s)")
    return 0


def cmd_score(args) -> int:
    from .scoring import default_jobs
    args.jobs = default_jobs(args.jobs)
    profile = _profile(args)
    bugs = _bugs(args)
    from .inputs import opened
    started = time.monotonic()
    with opened("score", args.trace, schema=args.schema, skip_bad=args.skip_bad,
                quiet=args.quiet, schema_from=args.schema_from) as inp:
        return _score(args, inp, profile, bugs, started)


def _score(args, inp, profile, bugs, started: float) -> int:
    from .scoring import score_trace, format_table
    progress = Progress(args.quiet, started=started)
    progress(f"reading {inp.label}")
    trace = TraceSource(inp.trace)
    mysql = _mysql_defaults(args, trace.source)
    schedulers = _mysql_schedulers(args)
    results = score_trace(trace, schedulers, args.workers, profile, bugs=bugs,
                          tracker_options=lambda t: _tracker_options(args, t),
                          applier_options=_applier_options(args), progress=progress,
                          skip_unfit=not args.scheduler_given, z3_bound=args.z3_bound,
                          z3_timeout=args.z3_timeout, jobs=args.jobs,
                          cluster=getattr(args, "cluster", None))
    from .lag_cli import _spread
    ends, windows = _spread(profile, "score")
    if ends:
        # a profile calibrated from several windows: the same sweep at each end of its spread
        from .scoring import with_apply_ranges
        fed = [n for n in dict.fromkeys(r["scheduler"] for r in results if "error" not in r)]
        at_ends = {end: score_trace(trace, fed, args.workers, p, bugs=bugs,
                                    tracker_options=lambda t: _tracker_options(args, t),
                                    applier_options=_applier_options(args), skip_unfit=False,
                                    z3_bound="off", jobs=args.jobs,
                                    cluster=getattr(args, "cluster", None),
                                    progress=lambda text, end=end: progress(
                                        f"at the {end} calibrated pace: {text}"))
                   for end, p in ends.items()}
        with_apply_ranges(results, at_ends)
    progress.done()
    if mysql is not None:
        for r in results:
            r["mysql"] = mysql.version
    if args.json:
        _emit(json.dumps(results, indent=2) + "\n", args.output)
    else:
        table = format_table(results, trace_path=inp.label, profile=profile,
                             transactions=trace.count, windows=windows)
        if mysql is not None:
            table += f"\n{mysql.describe()} (version from {args.mysql_origin})\n"
        _emit(table, args.output)
    return 0


def cmd_schedule(args) -> int:
    from .schedulers import collect, parse_scheduler
    profile = _profile(args)
    sched = parse_scheduler(args.scheduler)
    trace = load_trace(args.trace)
    runs, blocked = collect(sched, trace.txns, args.workers, profile, bugs=_bugs(args),
                            tracker_options=_tracker_options(args, sched.tracker),
                            applier_options=_applier_options(args))
    if args.json:
        _emit(json.dumps([r.to_json() for r in runs], indent=1) + "\n", args.output)
        return 0
    lines = [f"{'seq':>6} {'gtid':<14} {'worker':>6} {'dispatch':>12} {'start':>12} "
             f"{'exec_end':>12} {'commit':>12} {'retries':>7}"]
    for r in runs:
        j = r.to_json()
        lines.append(f"{j['seq']:>6} {j.get('gtid') or '-':<14} {j['worker']:>6} "
                     f"{j['dispatch']:>12.3f} {j['start']:>12.3f} {j['exec_end']:>12.3f} "
                     f"{j['commit']:>12.3f} {j['retries']:>7}")
    _emit("\n".join(lines) + "\n", args.output)
    return 0


def cmd_check(args) -> int:
    from . import properties
    from .schedulers import collect, parse_scheduler
    from .simcore import Deadlock
    profile = _profile(args)
    sched = parse_scheduler(args.scheduler)
    trace = load_trace(args.trace)
    from .keys import missing_keys, unknown_message
    if missing_keys(trace).unknown:     # the properties are about conflicts between keys
        raise UsageError(unknown_message(missing_keys(trace).unknown, "check"))
    failed = 0
    for w in args.workers:
        try:
            runs, _ = collect(sched, trace.txns, w, profile, bugs=_bugs(args),
                              tracker_options=_tracker_options(args, sched.tracker),
                              applier_options=_applier_options(args))
        except Deadlock as e:
            print(f"W={w}: NoDeadlock VIOLATED: {e}")
            failed += 1
            continue
        for name in properties.applicable(sched):
            bad = properties.check(name, runs, len(trace))
            status = "ok" if not bad else f"VIOLATED: {bad[0]}" + (
                f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
            failed += bool(bad)
            print(f"W={w}: {name}: {status}")
    return 1 if failed else 0


def cmd_annotate(args) -> int:
    from .trackers import get_tracker
    source, version, txns = open_trace(args.trace)
    mysql = _mysql_defaults(args, source)
    if mysql is not None and args.tracker not in mysql.trackers and args.tracker in (
            "commit_order", "writeset", "writeset_session", "database"):
        raise UsageError(f"tracker {args.tracker}: MySQL {mysql.version} has no such dependency "
                         f"tracking (it offers {', '.join(mysql.trackers)})")
    tracker = get_tracker(args.tracker, bugs=_bugs(args), **_tracker_options(args, args.tracker))
    out_source = dict(source)
    out_source["annotated_by"] = {"tracker": args.tracker,
                                  "options": _tracker_options(args, args.tracker),
                                  "commitsched": __version__}

    def annotated():
        for txn, dep in tracker.annotate(txns):
            if tracker.kind == "clock":
                txn.last_committed, txn.sequence_number, txn.file = dep
            elif tracker.kind == "groups":
                group_id, flags = dep
                txn.commit_id = group_id or None
                txn.flags = flags
            else:
                txn.db = dep
            yield txn
    write_trace(args.output, annotated(), out_source, version)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_generate(args) -> int:
    from .generate import generate, generate_source_header
    params = dict(workload=args.workload, clients=args.clients, tables=args.tables,
                  skew=args.skew, seed=args.seed, rotate_every=args.rotate_every,
                  ddl_every=args.ddl_every, fk=args.fk, source=args.source,
                  bulk_every=args.bulk_every, bulk_rows=args.bulk_rows)
    if args.table_size is not None:
        params["table_size"] = args.table_size
    progress = Progress(args.quiet)

    def counted():
        for i, txn in enumerate(generate(args.transactions, **params), 1):
            if i % 20000 == 0:
                progress(f"generated {i}/{args.transactions} transactions")
            yield txn
    try:
        head = generate_source_header(args.transactions, **params)
        write_trace(args.output, counted(), head)
    except ValueError as e:          # a parameter the generator refuses (e.g. skew >= 1)
        raise UsageError(f"generate: {e}") from None
    progress.done()
    print(f"wrote {args.output} ({args.transactions} transactions)", file=sys.stderr)
    return 0


def cmd_import(args) -> int:
    from .importers import import_main
    return import_main(args)


# ------------------------------------------------------------------ parser

SCHEDULER_HELP = ("a scheduler: TRACKER+APPLIER or `serial`. Trackers: serial, database, "
                  "commit_order, commit_id, writeset, writeset_session, slave_group_commit, "
                  "certification. Appliers: mysql, mariadb_conservative, mariadb_optimistic, "
                  "mariadb_aggressive, galera, group_replication")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    from .host_speed import PACE_ELASTICITY
    g = p.add_argument_group("model options")
    g.add_argument("--profile", default="ideal", type=_profile_name, metavar="NAME|FILE",
                   help="machine / cost profile for costs the trace lacks: one of "
                        f"{', '.join(sorted(PROFILES))}, or a profile file written by "
                        "`commitsched calibrate` for your own replica (default: "
                        f"{DEFAULT_PROFILE} for score, lag and report, a real MariaDB replica "
                        "measured on 16 cores; ideal, the trace's own costs only, for the "
                        "others)")
    g.add_argument("--host-now", metavar="URL",
                   help="with a profile from `calibrate --replica`: read the host's pace on "
                        "this server now (a fixed loop, SELECT BENCHMARK; read-only, best while "
                        "the replica is idle) and scale the profile's CPU terms by (now / at "
                        f"calibration) ** {PACE_ELASTICITY}: a shared host drifts by tens of percent "
                        "in an hour (docs/lag.md, \"The host's pace\")")
    g.add_argument("--host-pace-us", type=_positive_float, metavar="US",
                   help="as --host-now, with a reading taken before (µs an iteration of the "
                        "`rows` loop, model/host_speed.py)")
    g.add_argument("--cores", type=_positive_int, metavar="N",
                   help="replica CPU cores: executing needs a core, workers beyond it queue "
                        "(default: the profile's machine's)")
    g.add_argument("--durability", choices=("durable", "relaxed"),
                   help="the replica's settings: durable (sync_binlog=1, "
                        "innodb_flush_log_at_trx_commit=1) or relaxed (0 / 2): the machine "
                        "profile's sync costs apply or not (default: the profile's, durable)")
    g.add_argument("--log-replica-updates", type=_on_off, metavar="on|off",
                   help="the replica writes what it applies to its own binlog "
                        "(log_slave_updates / log_replica_updates): on, commits go through the "
                        "binlog's group commit and sync; off, no binlog sync, and MariaDB commits "
                        "one at a time in order, the redo flush only (default: as the profile's "
                        "replica was measured; replica16: off)")
    g.add_argument("--preserve-commit-order", type=_on_off, metavar="on|off",
                   help="mysql applier: replica_preserve_commit_order (default on)")
    g.add_argument("--checkpoint-group", type=_positive_int, metavar="N",
                   help="mysql applier: replica_checkpoint_group window (default 512)")
    g.add_argument("--max-queued", type=_positive_int, metavar="N",
                   help="mariadb appliers: transactions a thread may hold queued (default 64)")
    g.add_argument("--history-size", type=_positive_int, metavar="N",
                   help="writeset trackers: binlog_transaction_dependency_history_size "
                        "(default 25000)")
    g.add_argument("--commit-wait-count", type=_positive_int, metavar="N",
                   help="slave_group_commit: binlog_commit_wait_count of the intermediate replica")
    g.add_argument("--commit-wait-usec", type=float, metavar="US",
                   help="slave_group_commit: binlog_commit_wait_usec of the intermediate replica")
    g.add_argument("--inject-bug", action="append", metavar="NAME",
                   help="turn on a catalogue bug (design §7) to see what it breaks; repeatable")


def add_engine_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", choices=["compiled", "reference"], default=None,
                   help="the simulation engine: compiled (default: the Rust core, "
                        "model/simcore_rs) or reference (the Python model, the specs' twin); "
                        "both give the same schedules (tests/test_engine_*.py). Runs the "
                        "compiled core does not have use the reference whatever this says: "
                        "tracker bugs, victim_wakeup_lost, "
                        "ticket_overflow, replica_locks, and the certification-based "
                        "schedulers")


def _add_mysql_option(p: argparse.ArgumentParser) -> None:
    """--mysql (score, report, annotate): model/mysql_versions.py."""
    p.add_argument("--mysql", choices=("5.7", "8.0", "8.4"), metavar="5.7|8.0|8.4",
                   help="apply this MySQL version's defaults where no option says otherwise "
                        "(replica_preserve_commit_order, the dependency trackings it has, how "
                        "write sets count against the history size) and say which; default: "
                        "the version of a 'MySQL x.y.z' server in the trace header, else none")


BINLOG_ORDER_HELP = ("Several binlog files must be given in the order the server wrote "
                     "them: files whose GTIDs go back (out of order, or one given twice) are "
                     "refused; transactions missing between two files (a GTID gap) are a "
                     "warning, kept in the trace's header. Without GTIDs the file names "
                     "(binlog.000042, .000043) are read instead, as a warning only.")


def _add_input_arguments(p: argparse.ArgumentParser) -> None:
    """score's and report's input: a trace, or binlogs imported on the fly (model/inputs.py)."""
    p.add_argument("trace", nargs="+", metavar="INPUT",
                   help="a trace (.jsonl or .jsonl.gz), or binlog files in order, as `import` "
                        "takes them (binary MySQL 8 / MariaDB binlogs, or mysqlbinlog/"
                        "mariadb-binlog -vv text): imported once into a temporary trace, "
                        "removed at the end; the results are those of import, then this "
                        "command. " + BINLOG_ORDER_HELP)
    g = p.add_argument_group("binlog inputs (as for `commitsched import`)")
    g.add_argument("--schema", action="append", metavar="SQL",
                   help="table definitions (mysqldump --no-data output); repeatable")
    g.add_argument("--skip-bad", action="store_true",
                   help="import what is valid and report what was skipped (on stderr)")
    add_schema_from(g)


def add_schema_from(p) -> None:
    from .importers import SCHEMA_FROM_HELP
    p.add_argument("--schema-from", metavar="URL", help=SCHEMA_FROM_HELP)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="commitsched",
        description="Model and score the commit-ordering schedulers of MySQL/MariaDB parallel "
                    "replicas on a recorded or generated trace.",
        epilog="Traces are JSON Lines (docs/trace-format.md). Times are microseconds.")
    p.add_argument("--version", action="version", version=f"commitsched {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    v = sub.add_parser("validate", help="check a trace file; report file:line of the first problem",
                       description="Validate a trace: header, seq numbering, clocks, costs.")
    v.add_argument("trace")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("score", help="replay a trace (or binlogs) under schedulers and worker "
                                     "counts",
                       description="Replay INPUT (a trace, or binlog files imported on the "
                                   "fly) under each scheduler and worker count and "
                                   "report makespan, throughput, speedup over serial, efficiency, "
                                   "per-worker use, blocked time by cause and the lower bound. "
                                   "With a profile `calibrate` fitted from several windows "
                                   "(--repeat N, --samples), each run is made again at the "
                                   "slowest and the fastest calibrated pace, and the apply "
                                   "time's range is listed under the table.")
    _add_input_arguments(s)
    s.add_argument("--scheduler", action="append", metavar="S",
                   help=SCHEDULER_HELP + " (repeatable; default: every scheduler the trace "
                        "supports)")
    s.add_argument("--workers", type=_workers, default=[1, 2, 4, 8], metavar="LIST",
                   help="worker counts, e.g. 1,2,4,8 (default)")
    s.add_argument("--json", action="store_true",
                   help="one JSON object per (scheduler, workers); with a profile calibrated "
                        "from several windows also makespan_range (µs) and throughput_range "
                        "(txn/s): [low, high] over the run at the median, the slowest and the "
                        "fastest calibrated pace")
    s.add_argument("-o", "--output", help="write to this file instead of standard output")
    s.add_argument("--quiet", action="store_true", help="no progress line")
    s.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                   help="run the independent (scheduler, W) runs in N processes "
                        "(default: one per usable core); the results do not depend on it")
    s.add_argument("--z3-bound", choices=["auto", "on", "off"], default="auto",
                   help=f"score against the exact optimum from z3 (checks/z3_bound.py): auto "
                        f"(default) for traces of at most {Z3_AUTO_LIMIT['in_order']} "
                        f"transactions for schedulers that commit in order, "
                        f"{Z3_AUTO_LIMIT['free']} for the others; on for any size; off for the "
                        f"heuristic bound only")
    s.add_argument("--z3-timeout", type=_positive_float, default=10.0, metavar="S",
                   help="seconds z3 may take per (workers, regime) before the heuristic bound "
                        "is used (default 10)")
    s.add_argument("--cluster", metavar="ADDRESS",
                   help="run the (scheduler, W) runs on a Dask distributed cluster instead of "
                        "the local process pool: its scheduler's address (tcp://host:8786), or "
                        "local:N for N worker processes on this machine; a lost worker's runs "
                        "are run again elsewhere; the results do not depend on it "
                        "(model/distributed.py)")
    _add_model_options(s)
    _add_mysql_option(s)
    add_engine_option(s)
    s.set_defaults(func=cmd_score, profile=DEFAULT_PROFILE)

    sc = sub.add_parser("schedule", help="print the per-transaction schedule of one run",
                        description="Simulate one scheduler with W workers and print, per "
                                    "transaction: worker, dispatch, start, exec end, commit.")
    sc.add_argument("trace")
    sc.add_argument("--scheduler", required=True, metavar="S", help=SCHEDULER_HELP)
    sc.add_argument("--workers", type=_positive_int, required=True, metavar="W")
    sc.add_argument("--json", action="store_true")
    sc.add_argument("-o", "--output")
    _add_model_options(sc)
    sc.set_defaults(func=cmd_schedule)

    c = sub.add_parser("check", help="check the design's properties on simulated schedules",
                       description="Simulate and check every property the scheduler promises "
                                   "(NoConflictingOverlap, CommitOrderPreserved, ...). Exit 1 if "
                                   "any is violated.")
    c.add_argument("trace")
    c.add_argument("--scheduler", required=True, metavar="S", help=SCHEDULER_HELP)
    c.add_argument("--workers", type=_workers, default=[1, 2, 4, 8], metavar="LIST")
    _add_model_options(c)
    c.set_defaults(func=cmd_check)

    a = sub.add_parser("annotate", help="write a trace back with a tracker's dependencies",
                       description="Recompute dependencies with a tracker and write them on every "
                                   "line: last_committed/sequence_number (clock trackers), "
                                   "commit_id and flags (group trackers) or db (database).")
    a.add_argument("trace")
    a.add_argument("--tracker", required=True,
                   choices=["serial", "database", "commit_order", "commit_id", "writeset",
                            "writeset_session", "slave_group_commit"])
    a.add_argument("-o", "--output", required=True)
    _add_model_options(a)
    _add_mysql_option(a)
    a.set_defaults(func=cmd_annotate)

    g = sub.add_parser("generate", help="write a synthetic trace from a simulated source",
                       description="Simulate a source with concurrent clients, row locks and "
                                   "binlog group commit, and write the binlog it produces as a "
                                   "trace (sysbench-like workloads).")
    g.add_argument("--transactions", type=_positive_int, required=True, metavar="N")
    g.add_argument("-o", "--output", required=True)
    g.add_argument("--workload", default="oltp_read_write",
                   choices=["oltp_read_write", "oltp_update_index", "oltp_insert", "mixed"])
    g.add_argument("--clients", type=_positive_int, default=8)
    g.add_argument("--tables", type=_positive_int, default=1)
    g.add_argument("--table-size", type=_positive_int)
    g.add_argument("--skew", type=float, default=0.0, help="key skew in [0, 1) (0: uniform)")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--rotate-every", type=_positive_int, metavar="N",
                   help="rotate the binlog every N transactions")
    g.add_argument("--ddl-every", type=_positive_int, metavar="N")
    g.add_argument("--fk", action="store_true", help="include a foreign-key parent table")
    g.add_argument("--bulk-every", type=_positive_int, metavar="N",
                   help="every N-th transaction is a bulk range UPDATE of --bulk-rows rows (the "
                        "large transactions of `commitsched blame`)")
    g.add_argument("--bulk-rows", type=_positive_int, default=100, metavar="R",
                   help="rows a bulk UPDATE writes (default 100)")
    g.add_argument("--source", choices=["mysql", "mariadb"], default="mysql")
    g.add_argument("--quiet", action="store_true")
    g.set_defaults(func=cmd_generate)

    i = sub.add_parser("import", help="import binary binlogs or their -vv text into a trace",
                       description="Read binary binlog files (MySQL 8, MariaDB 10/11: read "
                                   "directly, docs/import.md) or `mariadb-binlog`/`mysqlbinlog "
                                   "-vv --base64-output=decode-rows` text, in order, and write "
                                   "a trace.")
    i.add_argument("binlog", nargs="+", help="binlog text file(s) (or binary binlogs), in "
                                             "order. " + BINLOG_ORDER_HELP)
    i.add_argument("-o", "--output", required=True)
    i.add_argument("--schema", action="append", metavar="SQL",
                   help="table definitions (mysqldump --no-data output); repeatable")
    i.add_argument("--skip-bad", action="store_true",
                   help="import what is valid and report what was skipped")
    add_schema_from(i)
    i.add_argument("--quiet", action="store_true")
    i.set_defaults(func=cmd_import)

    for module in PLUGIN_COMMANDS:
        try:
            plugin = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if not (e.name and module.startswith(e.name)):
                raise                # a real import error inside the plugin
            continue
        plugin.add_subcommands(sub, _add_model_options)
    return p


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that atomic writers remove their temporary files
    (as on Ctrl-C) instead of the process dying mid-write."""


def _on_sigterm(signum, frame):
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; Ctrl-C or SIGTERM at any point, the parser's start-up included, ends
    in one line (130 / 143), never a traceback."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("commitsched: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("commitsched: terminated", file=sys.stderr)
        return 143


def _main(argv: Sequence[str] | None) -> int:
    # A trace string may hold a lone surrogate (valid JSON, not valid UTF-8): print it escaped
    # rather than fail on it.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_usage(sys.stderr)
        print("commitsched: error: give a COMMAND (`commitsched --help` lists them)",
              file=sys.stderr)
        return 2
    if hasattr(args, "scheduler") and args.command == "score":
        args.scheduler_given = bool(args.scheduler)
    from .schedulers import SchedulerError
    from .simcore import SimulationError
    from .trackers import TrackerError
    from .distributed import ClusterError
    started = time.perf_counter()
    if getattr(args, "engine", None):
        from . import engine
        engine.set_default(args.engine)
    try:
        return args.func(args)
    except (TraceError, SchedulerError, SimulationError, ProfileError, TrackerError,
            UsageError, ClusterError) as e:
        print(f"commitsched: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:
        print(f"commitsched: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except (RecursionError, MemoryError) as e:
        trace = getattr(args, "trace", None)
        if isinstance(trace, list):
            trace = " ".join(trace)
        print(f"commitsched: error: {trace or 'input'}: input too large "
              f"or too deeply nested to process ({type(e).__name__})", file=sys.stderr)
        return 2
    except Exception as e:
        # The last net under the promise of one line and exit 2: a failure no check above
        # names is a bug in commitsched; say so (`make fuzz` counts these lines as findings),
        # COMMITSCHED_DEBUG=1 shows the traceback.
        if os.environ.get("COMMITSCHED_DEBUG"):
            raise
        print(f"commitsched: error: internal error on this input ({type(e).__name__}: "
              f"{str(e)[:200]}); please report it", file=sys.stderr)
        return 2
    finally:
        if os.environ.get("COMMITSCHED_TIMING"):
            print(f"[{time.perf_counter() - started:.3f}s]", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
