"""CLI commands of the z3 checks (picked up by `commitsched.cli.PLUGIN_COMMANDS`):

  commitsched bound TRACE --workers W [--profile P] [--window N] [--timeout S] [--json]
  commitsched soundness [--transactions N] [--history-size H ...] [--bug NAME] [--json]
"""
from __future__ import annotations

import json

from commitsched.cli import _positive_float, _positive_int
from commitsched.profiles import PROFILES, get_profile


def _fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if v == 0 or abs(v) >= 1 else f"{v:.3g}"   # tiny costs stay visible


# Default seconds for the whole `bound` command: the tiny-cost recordings of issue 14 ran for
# minutes; past this the best lower bound proved so far is reported, labelled as such.
DEFAULT_TIME_LIMIT = 60.0


def cmd_bound(args) -> int:
    from commitsched.cli import Progress, _emit
    from commitsched.trace import load_trace
    from . import z3_bound
    profile = get_profile(args.profile)
    trace = load_trace(args.trace)
    regimes = [args.regime] if args.regime else list(z3_bound.REGIMES)
    progress = Progress(args.quiet)
    try:
        results = z3_bound.bounds(trace.txns, profile, args.workers, regimes=regimes,
                                  window=args.window, timeout=args.timeout,
                                  budget=args.budget, time_limit=args.time_limit,
                                  progress=progress)
    except z3_bound.BoundError as e:
        from commitsched.cli import UsageError
        raise UsageError(str(e)) from None
    finally:
        progress.done()
    # Said by the solver, not guessed from the clock: a regime whose windows all solved within
    # the limit is a windowed lower bound, not a bound cut short.
    cut_short = any(r.time_limit_reached for r in results)
    if args.json:
        out = [dict(r.to_json(), workers=args.workers, profile=profile.name,
                    transactions=len(trace), time_limit=args.time_limit)
                for r in results]
        _emit(json.dumps(out, indent=2) + "\n", args.output)
        return 0
    lines = [f"trace {args.trace}: {len(trace)} transactions, W={args.workers}, profile "
             f"{profile.name}", "",
             f"{'regime':<9} {'optimal':>12} {'lower bound':>12} {'work/W':>12} {'span':>12} "
             f"{'exact':>5} {'seconds':>8}  what"]
    for r in results:
        lines.append(f"{r.regime:<9} {_fmt(r.optimal):>12} {_fmt(r.lower_bound):>12} "
                     f"{_fmt(r.work_bound):>12} {_fmt(r.span_bound):>12} "
                     f"{'yes' if r.exact else 'no':>5} {r.solver_seconds:>8.2f}  {r.kind}")
    if cut_short:
        lines += ["", f"time ran out (--time-limit {args.time_limit:g} s in all, --timeout per "
                      f"solve): where exact is no, the lower bound is the best proved so far"]
    lines += ["", "in_order: commits in source order, a worker held until its transaction "
                  "commits, dispatch in source order; free: commit when ready, any order. "
                  "Both: conflicting transactions in source order, never overlapping; one sync "
                  "per distinct commit instant. Dispatch costs are left out: a lower bound of "
                  "every correct scheduler's makespan in its regime."]
    _emit("\n".join(lines) + "\n", args.output)
    return 0


def cmd_soundness(args) -> int:
    from commitsched.cli import UsageError, _emit
    from . import z3_soundness as zs
    sizes = args.history_size or [1, 2, 3]
    if args.bug:
        from commitsched.bugs import CATALOGUE
        unknown = [b for b in args.bug if b not in CATALOGUE]
        if unknown:
            raise UsageError(f"unknown bug {', '.join(unknown)}; the catalogue: "
                             f"{', '.join(CATALOGUE)}")
        rows = []
        for bug in args.bug:
            cex = zs.z3_catches(bug, n=args.transactions, history_sizes=sizes,
                                timeout=args.timeout)
            rows.append({"bug": bug, "in_scope": bug in zs.BUG_TARGET,
                         "counterexample": cex.to_json() if cex else None})
        if args.json:
            _emit(json.dumps(rows, indent=2) + "\n", args.output)
        else:
            out = []
            for r in rows:
                c = r["counterexample"]
                status = ("not in scope of this check" if not r["in_scope"] else
                          "NOT caught within the bounds" if c is None else
                          f"caught: {c['property']} of {c['tracker']} (history_size "
                          f"{c['history_size']}) fails on {len(c['trace'])} transactions, "
                          f"{c['violations'][0]}")
                out.append(f"{r['bug']}: {status}")
                if c:
                    out += [f"    {json.dumps(t)}  -> {a}" for t, a in
                            zip(c["trace"], c["annotation"])]
            _emit("\n".join(out) + "\n", args.output)
        return 0
    results = zs.prove_all(n=args.transactions, history_sizes=sizes, timeout=args.timeout)
    failed = [r for r in results if not r.proved]
    if args.json:
        _emit(json.dumps([{"tracker": r.tracker, "property": r.prop, "history_size":
                           r.history_size, "transactions": r.n, "clock": r.mode,
                           "proved": r.proved, "seconds": round(r.seconds, 3),
                           "counterexample": r.counterexample.to_json()
                           if r.counterexample else None} for r in results], indent=2) + "\n",
              args.output)
    else:
        out = [f"{r.tracker:<17} {r.prop:<17} H={r.history_size} n<={r.n} clock={r.mode:<5} "
               f"{'PROVED' if r.proved else 'COUNTEREXAMPLE'} ({r.seconds:.2f} s)"
               for r in results]
        for r in failed:
            out.append(json.dumps(r.counterexample.to_json()))
        _emit("\n".join(out) + "\n", args.output)
    return 1 if failed else 0


def add_subcommands(sub, add_model_options) -> None:
    b = sub.add_parser("bound", help="the optimal makespan of a trace (z3), the bound every "
                                     "scheduler is scored against",
                       description="With z3, the minimum makespan of TRACE on W workers given "
                                   "the true conflict graph, under the in_order and free commit "
                                   "regimes; for traces above the window size, a valid lower "
                                   "bound from consecutive windows, with work/W and span.")
    b.add_argument("trace")
    b.add_argument("--workers", type=_positive_int, required=True, metavar="W")
    b.add_argument("--profile", default="ideal", choices=sorted(PROFILES),
                   help="cost profile for costs the trace lacks (default: ideal)")
    b.add_argument("--regime", choices=["in_order", "free"], help="one regime (default: both)")
    b.add_argument("--window", type=_positive_int, metavar="N",
                   help="solve exactly up to N transactions, windows of N beyond (default: 200 "
                        "in_order, 12 free: what solves within a minute here)")
    b.add_argument("--timeout", type=_positive_float, default=60.0, metavar="S",
                   help="seconds z3 may take per solve (default 60)")
    b.add_argument("--budget", type=_positive_float, metavar="S",
                   help="long traces: seconds for all windows of a regime (default 5 x timeout); "
                        "windows not reached count by the heuristic bound")
    b.add_argument("--time-limit", type=_positive_float, default=DEFAULT_TIME_LIMIT,
                   metavar="S", help=f"seconds for the whole command (default "
                                     f"{DEFAULT_TIME_LIMIT:g}); then the best lower bound "
                                     f"proved so far is reported, labelled as such")
    b.add_argument("--json", action="store_true", help="one object per regime")
    b.add_argument("--quiet", action="store_true", help="no progress line")
    b.add_argument("-o", "--output")
    b.set_defaults(func=cmd_bound)

    s = sub.add_parser("soundness", help="z3: prove the writeset trackers sound for bounded "
                                         "traces, or show a catalogue bug's counterexample",
                       description="Prove TrackerSoundness (writeset, writeset_session) and "
                                   "SessionOrder (writeset_session) for every trace of up to N "
                                   "transactions over 4 keys, or with --bug find a trace that "
                                   "the bug makes violate its property. Exit 1 if a proof fails.")
    s.add_argument("--transactions", type=_positive_int, default=6, metavar="N")
    s.add_argument("--history-size", type=_positive_int, action="append", metavar="H",
                   help="binlog_transaction_dependency_history_size (repeatable; default 1,2,3)")
    s.add_argument("--bug", action="append", metavar="NAME",
                   help="a catalogue bug to find a counterexample for (repeatable)")
    s.add_argument("--timeout", type=_positive_float, default=120.0, metavar="S")
    s.add_argument("--json", action="store_true")
    s.add_argument("-o", "--output")
    s.set_defaults(func=cmd_soundness)

