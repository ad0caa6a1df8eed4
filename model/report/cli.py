"""`commitsched report` and `commitsched explain` (picked up by commitsched.cli.PLUGIN_COMMANDS).

All pages are computed in memory first and written file by file atomically, so a failing
command leaves no half-written page."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

# the report holds a trace's Txn objects up to this many transactions (None: as many as the blame
# section takes, blame_section.MAX_TRANSACTIONS) and streams a larger one (`_trace_source`)
HOLD_AT_MOST: int | None = None


def _threshold(text: str) -> float:
    try:
        v = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction like 0.1 or 10%, got {text!r}")
    if not 0 < v < 10:
        raise argparse.ArgumentTypeError(f"the gain threshold must be above 0, got {text!r}")
    return v


def _whatif_sample(text, error) -> int:
    """--whatif-sample: a number of transactions, 0 or more (read here, not by argparse, so
    that a bad value is one line)."""
    from .whatif import SAMPLE_DEFAULT
    if text is None:
        return SAMPLE_DEFAULT
    try:
        v = int(str(text).replace(",", ""))
    except ValueError:
        v = -1
    if v < 0:
        raise error(f"report: --whatif-sample must be a number of transactions, 0 or more "
                    f"(0: the whole trace), got {text!r}")
    return v


def write_report(report, out_dir: str, fmt: str) -> list[str]:
    from ..trace import write_text_atomic as write_raw
    from . import safe_text

    def write_text_atomic(path: str, text: str) -> None:
        write_raw(path, safe_text(text))
    from .render import figures, html_page, markdown_page
    figs = figures(report)
    written = []
    os.makedirs(out_dir, exist_ok=True)
    if fmt == "html":
        path = os.path.join(out_dir, "index.html")
        write_text_atomic(path, html_page(report, figs))
        written.append(path)
    else:
        for name, (_, svg) in figs.items():
            if svg:
                p = os.path.join(out_dir, f"{name}.svg")
                write_text_atomic(p, '<?xml version="1.0" encoding="UTF-8"?>\n' + svg + "\n")
                written.append(p)
        path = os.path.join(out_dir, "report.md")
        write_text_atomic(path, markdown_page(report, figs))
        written.append(path)
    p = os.path.join(out_dir, "report.json")
    write_text_atomic(p, json.dumps(report.data, indent=1) + "\n")
    written.append(p)
    return written


def cmd_report(args) -> int:
    from ..cli import UsageError, _bugs, _profile, check_output
    if not args.output and not args.json:
        raise UsageError("report: give -o DIR (a page) or --json (the numbers on stdout)")
    if args.output:
        # said now, not after the report's minutes of runs
        if os.path.exists(args.output) and not os.path.isdir(args.output):
            raise UsageError(f"report: -o {args.output}: is a file; give a folder for the "
                             f"report's pages")
        check_output(os.path.join(args.output, "report.json"))
    if args.window < 1:
        raise UsageError(f"report: --window must be at least 1, got {args.window}")
    args.whatif_sample = _whatif_sample(args.whatif_sample, UsageError)
    from ..inputs import opened
    from ..lag_cli import _spread, parse_tz
    args.tz = parse_tz("report", args.tz)
    started = time.monotonic()
    profile = _profile(args)
    _spread(profile, "report")            # a malformed calibration spread: one line, now
    bugs = _bugs(args)
    with opened("report", args.trace, schema=args.schema, skip_bad=args.skip_bad,
                quiet=args.quiet, schema_from=args.schema_from) as inp:
        return _report(args, inp, profile, bugs, started)


def _trace_source(path: str):
    """The trace as the report reads it. The compiled core replays from columns, so a trace
    past what the blame section takes is streamed: its Txn objects (about 850 bytes a
    transaction) are read again from the file by the few passes that need them, not held (a
    1M-transaction trace: 0.4 GB at the peak against 1.25). A trace the blame section takes
    is held as well: that section reads it several times over, and holds a copy of it anyway.
    The reference engine replays from Txn objects: held up to STREAM_ABOVE_BYTES, as `score`."""
    from .. import engine
    from ..cli import TraceSource
    if engine.default() != "compiled":
        return TraceSource(path)
    from .blame_section import MAX_TRANSACTIONS
    trace = TraceSource(path, stream=True)
    if trace.count <= (MAX_TRANSACTIONS if HOLD_AT_MOST is None else HOLD_AT_MOST):
        trace.hold()
    return trace


def _report(args, inp, profile, bugs, started: float) -> int:
    from ..cli import (Progress, UsageError, _applier_options, _mysql_defaults,
                       _mysql_schedulers, _tracker_options)
    from ..scoring import default_jobs
    from .analysis import build_report
    progress = Progress(args.quiet, started=started)
    progress(f"reading {inp.label}")
    trace = _trace_source(inp.trace)
    if args.window_start is not None and not 1 <= args.window_start <= trace.count:
        raise UsageError(f"report: --window-start {args.window_start} is not a seq of the trace "
                         f"(1..{trace.count})")
    mysql = _mysql_defaults(args, trace.source)
    report = build_report(trace, path=inp.label, profile=profile, workers=args.workers,
                          schedulers=_mysql_schedulers(args), threshold=args.threshold,
                          window=args.window, window_start=args.window_start,
                          tracker_options=lambda t: _tracker_options(args, t),
                          applier_options=_applier_options(args), bugs=bugs,
                          whatif=not args.no_whatif, progress=progress,
                          jobs=default_jobs(args.jobs), whatif_sample=args.whatif_sample,
                          cluster=args.certification,
                          schedulers_given=bool(args.scheduler), zone=args.tz)
    if mysql is not None:
        report.data["mysql"] = dict(mysql.to_json(), origin=args.mysql_origin,
                                    text=mysql.describe())
    if args.output:
        progress("drawing")
        written = write_report(report, args.output, args.format)
        progress.done()
        if not args.quiet:
            print(f"wrote {written[0]} ({len(written)} files, "
                  f"{time.monotonic() - started:.1f}s)", file=sys.stderr)
    else:
        progress.done()
    if args.json and not args.output:
        sys.stdout.write(json.dumps(report.data, indent=1) + "\n")
    return 0


def cmd_explain(args) -> int:
    from ..cli import UsageError
    from ..trace import write_text_atomic
    from .explain import ExplainError, explain_html, explain_markdown, load_cex, sequence_svg
    try:
        cex = load_cex(args.cex)
    except ExplainError as e:
        raise UsageError(str(e)) from None
    if args.output:
        os.makedirs(args.output, exist_ok=True)
        if args.format == "html":
            path = os.path.join(args.output, "index.html")
            write_text_atomic(path, explain_html(cex))
        else:
            svg_path = os.path.join(args.output, "counterexample.svg")
            write_text_atomic(svg_path, '<?xml version="1.0" encoding="UTF-8"?>\n'
                              + sequence_svg(cex) + "\n")
            path = os.path.join(args.output, "explain.md")
            write_text_atomic(path, explain_markdown(cex, "counterexample.svg"))
        if not args.quiet:
            print(f"wrote {path}", file=sys.stderr)
    else:
        sys.stdout.write(explain_markdown(cex, None))
    return 0


def add_subcommands(sub, add_model_options) -> None:
    from ..cli import (SCHEDULER_HELP, _add_input_arguments, _add_mysql_option, _positive_int,
                       _workers, add_engine_option)
    from ..lag_cli import TZ_HELP
    from ..profiles import DEFAULT_PROFILE
    r = sub.add_parser(
        "report", help="an HTML (or Markdown) report of a trace or binlogs: workers, "
                       "tracking, waits, schedule, dependencies, what-ifs",
        description="Replay INPUT (a trace, or binlog files imported on the fly) under every "
                    "scheduler and worker count and write a "
                    "self-contained page answering: how many workers? which dependency "
                    "tracking? why is my replica not using its workers? should I delay commits "
                    "on the source? Predictions are for the machine profile's replica "
                    "(default `replica16`: a real MariaDB replica measured on 16 cores), with "
                    "the band its calibration residuals give. Will the replica keep up: the "
                    "trace replayed as it arrived, for the recommended configuration and the "
                    "server default; with a profile `calibrate` fitted from several windows, "
                    "each keeping-up answer and the headroom by worker count are also made at "
                    "the slowest and the fastest calibrated pace and given as a range (a band "
                    "in the headroom figure); gaps between the binlog files that import found "
                    "are said there (docs/reports.md).")
    _add_input_arguments(r)
    r.add_argument("-o", "--output", metavar="DIR", help="write the page (and report.json) here")
    r.add_argument("--format", choices=["html", "md"], default="html",
                   help="html: one index.html with the figures inline; md: report.md + SVG files")
    r.add_argument("--json", action="store_true",
                   help="print the numbers behind every figure (JSON) on stdout")
    r.add_argument("--workers", type=_workers, default=[1, 2, 4, 8, 16], metavar="LIST",
                   help="worker counts (default 1,2,4,8,16)")
    r.add_argument("--scheduler", action="append", metavar="S",
                   help=SCHEDULER_HELP + " (repeatable; default: every scheduler the trace "
                        "supports)")
    r.add_argument("--threshold", type=_threshold, default=0.10, metavar="GAIN",
                   help="recommend the smallest worker count past which the next step gains "
                        "less than this speedup (default 0.10 = 10%%)")
    r.add_argument("--window", type=int, default=40, metavar="N",
                   help="transactions in the schedule window (default 40)")
    r.add_argument("--window-start", type=int, metavar="SEQ",
                   help="first seq of the window (default: where the pipeline stalls most)")
    r.add_argument("--certification", action="store_true",
                   help="add the section on certification-based clusters (Galera, Group "
                        "Replication: both schedulers' speedups on the whole trace, and the "
                        "sustained throughput by member count and durability; about 5 s of "
                        "simulation, plus the whole-trace scoring, which grows with the trace: "
                        "docs/certification.md)")
    r.add_argument("--no-whatif", action="store_true",
                   help="skip the what-if sweeps (durability, commit wait count)")
    r.add_argument("--whatif-sample", metavar="N",
                   help="on a trace of more than N transactions, the durability and commit "
                        "wait what-ifs simulate the middle N (a window of consecutive "
                        "transactions, leaving out the start and the end of the recording), "
                        "not the whole trace; the report names the window. The scaling sweep "
                        "always uses the whole trace. 0: the what-ifs use the whole trace too "
                        "(default 200000)")
    r.add_argument("--tz", metavar="ZONE", help=TZ_HELP + " (the keeping-up section's times)")
    r.add_argument("--quiet", action="store_true", help="no progress line")
    r.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                   help="run the independent simulation runs (the (scheduler, W) sweep, then "
                        "the schedule windows, the blame section and the what-ifs) in N "
                        "processes (default: one per usable core); the report does not "
                        "depend on it")
    add_model_options(r)
    _add_mysql_option(r)
    add_engine_option(r)
    r.set_defaults(func=cmd_report, profile=DEFAULT_PROFILE)

    e = sub.add_parser(
        "explain", help="draw a TLC counterexample (build/tlc/<model>.cex.json) as a picture",
        description="Render a counterexample saved by the TLC runner as a sequence chart: one "
                    "row per transaction, one column per step, the violated property and the "
                    "offending step marked. Without -o, prints Markdown text.")
    e.add_argument("cex", help="a <model>.cex.json file")
    e.add_argument("-o", "--output", metavar="DIR")
    e.add_argument("--format", choices=["html", "md"], default="html")
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(func=cmd_explain)
