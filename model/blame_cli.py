"""`commitsched blame` (picked up by commitsched.cli.PLUGIN_COMMANDS): which transactions hold
the replica back, and what splitting them would buy (docs/blame.md)."""
from __future__ import annotations

import argparse
import json


def _counts(text: str) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected counts like 1,5,10, got {text!r}")
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"counts must be positive integers, got {text!r}")
    return values


def cmd_blame(args) -> int:
    from .blame import blame_trace, format_table, summary
    from .cli import _applier_options, _bugs, _emit, _profile, _tracker_options
    from .schedulers import parse_scheduler
    from .trace import load_trace, write_text_atomic
    profile = _profile(args)
    sched = parse_scheduler(args.scheduler)
    trace = load_trace(args.trace)
    topts = _tracker_options(args, sched.tracker)
    aopts = _applier_options(args)
    bugs = _bugs(args)
    from .columnar import ColumnarTxns, from_txns
    # the trace's columns go with it: the compiled engine (the default) makes the run
    txns = ColumnarTxns(lambda: from_txns(trace.txns), lambda: iter(trace.txns))
    res = blame_trace(txns, sched.name, args.workers, profile, bugs=bugs,
                      tracker_options=topts, applier_options=aopts)
    out = summary(res, top=args.top)
    out["profile"] = profile.name
    out["trace"] = args.trace
    if args.split_top:
        from .split import split_whatif
        order = [s for s, _ in res.top(len(res.by_culprit))]   # splittable ones are picked
        out["split"] = split_whatif(trace.txns, sched.name, args.workers, profile, order,
                                    args.split_top, args.chunks, bugs=bugs,
                                    tracker_options=topts, applier_options=aopts)
    from .report.stall import stall_data, stall_svg
    out["stall"] = stall_data(res, sync=profile.group_sync)
    svg = stall_svg(out["stall"]) if args.svg else None
    if args.json:
        text = json.dumps(out, indent=1) + "\n"
    else:
        text = format_table(out)
        if "split" in out:
            text += "\n" + format_split(out["split"], sched.name, args.workers)
    if svg is not None:
        write_text_atomic(args.svg, '<?xml version="1.0" encoding="UTF-8"?>\n' + svg + "\n")
    _emit(text, args.output)
    return 0


def format_split(rows: list[dict], scheduler: str, workers: int) -> str:
    lines = [f"what if the top-k blamed transactions were split into {rows[0]['chunks']} chunks "
             f"({scheduler}, {workers} workers; speedup over the serial replay of the same "
             f"rewritten trace):",
             f"{'k':>4} {'txns':>7} {'makespan':>12} {'change':>8} {'speedup':>8} {'change':>8}"
             f"  split"]
    for r in rows:
        speedup = "-" if r["speedup"] is None else f"{r['speedup']:.3f}"   # makespan 0
        lines.append(f"{r['k']:>4} {r['transactions']:>7} {r['makespan']:>12.6g} "
                     f"{_change(r['makespan_change']):>8} {speedup:>8} "
                     f"{_change(r['speedup_change']):>8}  "
                     f"{' '.join(map(str, r['split'][:12]))}{' …' if len(r['split']) > 12 else ''}"
                     f"{'  (' + r['note'] + ')' if r.get('note') else ''}")
    return "\n".join(lines) + "\n"


def _change(x) -> str:
    return "" if x is None else f"{100 * x:+.1f}%"


def add_subcommands(sub, add_model_options) -> None:
    from .cli import SCHEDULER_HELP, _positive_int, add_engine_option
    b = sub.add_parser(
        "blame", help="which transactions hold the replica back, and what splitting them buys",
        description="Simulate one scheduler with W workers and attribute every wait (commit "
                    "order, GCO, prior commit, lock, retry, and idle workers while the "
                    "coordinator waits for a dependency or a barrier) to the transaction that "
                    "caused it, following the chain of waits back to the transaction whose own "
                    "work it was waiting for. Prints the most blamed transactions with their "
                    "share of the replica's worker time (W x makespan) and of the critical path, "
                    "and the blame by table and by write shape. With --split-top, re-scores the "
                    "trace with the top-k transactions cut into chunks (docs/blame.md).")
    b.add_argument("trace")
    b.add_argument("--scheduler", required=True, metavar="S", help=SCHEDULER_HELP)
    b.add_argument("--workers", type=_positive_int, required=True, metavar="W")
    b.add_argument("--top", type=_positive_int, default=10, metavar="N",
                   help="transactions, tables and shapes listed (default 10)")
    b.add_argument("--split-top", type=_counts, metavar="K,K,...",
                   help="what-if: split the K most blamed transactions (each K of the list) and "
                        "show the predicted speedup change")
    b.add_argument("--chunks", type=_positive_int, default=4, metavar="C",
                   help="chunks per split transaction (default 4; at most its row count)")
    b.add_argument("--svg", metavar="FILE",
                   help="also draw the worst stall as a timeline (one row per transaction)")
    b.add_argument("--json", action="store_true", help="the numbers as JSON")
    b.add_argument("-o", "--output", help="write to this file instead of standard output")
    add_model_options(b)
    add_engine_option(b)
    b.set_defaults(func=cmd_blame)
