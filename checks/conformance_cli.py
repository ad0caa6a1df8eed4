"""Subcommands `validate-schedule` and `mutants` (model/cli.py PLUGIN_COMMANDS).

    commitsched validate-schedule TRACE --scheduler S --workers W [--keep DIR] [--spec-bug B]
    commitsched mutants [--json] [--only ID ...] [--examples N]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def add_subcommands(sub, add_model_options) -> None:
    v = sub.add_parser(
        "validate-schedule",
        help="ask TLC whether the simulated schedule is a behaviour of the applier spec",
        description="Simulate TRACE under one scheduler, write its events (dispatch, start, "
                    "exec end, commit, kill, retry) as a TLA+ module and let TLC replay them "
                    "with the applier spec (specs/Trace<Applier>.tla). Exit 0 when the spec "
                    "accepts the schedule, 1 when it rejects it (the first event it cannot "
                    "take and the spec state before it are printed).")
    v.add_argument("trace")
    v.add_argument("--scheduler", required=True, metavar="S",
                   help="TRACKER+APPLIER with a clock tracker and the mysql applier, or "
                        "mariadb_conservative / mariadb_optimistic")
    v.add_argument("--workers", type=int, required=True, metavar="W")
    v.add_argument("--first", type=int, metavar="N",
                   help="validate only the first N transactions (TLC's time grows fast with "
                        "the schedule: the spec state holds every transaction's reads of every "
                        "key; about a minute for 60 transactions of oltp_rw)")
    v.add_argument("--spec-bug", action="append", metavar="NAME", default=[],
                   help="turn a bug flag on in the spec (default: the correct spec)")
    v.add_argument("--keep", metavar="DIR",
                   help="leave the generated module, its cfg and TLC's output in DIR")
    v.add_argument("--json", action="store_true")
    v.add_argument("--timeout", type=float, default=170.0, help="TLC time limit in seconds")
    add_model_options(v)
    v.set_defaults(func=cmd_validate_schedule)

    m = sub.add_parser(
        "mutants",
        help="run the bug catalogue against TLC, the properties and trace validation",
        description="For every bug of the catalogue: TLC on its *_bug.cfg (specs/models.json), "
                    "a hypothesis search for a trace on which the flagged simulator violates "
                    "the bug's property, and trace validation of the flagged simulator against "
                    "the correct spec. Exit 1 if some bug escapes a column that should catch it.")
    m.add_argument("--json", action="store_true", help="one JSON object per catalogue entry")
    m.add_argument("--only", nargs="+", metavar="ID", help="only these catalogue entries")
    m.add_argument("--examples", type=int, default=None, metavar="N",
                   help="hypothesis example budget per property search")
    m.add_argument("--timeout", type=float, default=None,
                   help="cap on each TLC model's time in seconds")
    m.set_defaults(func=cmd_mutants)


def cmd_validate_schedule(args) -> int:
    from commitsched import cli
    from commitsched.bugs import UnknownBug, check_bugs
    from commitsched.schedulers import parse_scheduler
    from commitsched.trace import load_trace

    from . import trace_validation as tv
    if args.workers < 1:
        raise cli.UsageError("--workers must be at least 1")
    try:
        spec_bugs = check_bugs(args.spec_bug)
    except UnknownBug as e:
        raise cli.UsageError(str(e)) from None
    sched = parse_scheduler(args.scheduler)
    spec = tv.covered(args.scheduler)
    if spec is None:
        raise cli.UsageError(f"{args.scheduler}: no spec models this scheduler; trace validation "
                             f"covers the mysql applier with a clock tracker "
                             f"(commit_order, writeset, writeset_session) and "
                             f"mariadb_conservative / mariadb_optimistic")
    wrong = spec_bugs - set(tv.SPEC_BUG_FLAGS[spec])
    if wrong:
        raise cli.UsageError(f"--spec-bug {', '.join(sorted(wrong))}: not a flag of {spec} "
                             f"(its flags: {', '.join(tv.SPEC_BUG_FLAGS[spec])})")
    if args.first is not None and args.first < 1:
        raise cli.UsageError("--first must be at least 1")
    trace = load_trace(args.trace)
    txns = trace.txns[:args.first] if args.first else trace.txns
    schedule = tv.record_schedule(
        args.scheduler, txns, args.workers, cli._profile(args), bugs=cli._bugs(args),
        tracker_options=cli._tracker_options(args, sched.tracker),
        applier_options=cli._applier_options(args))
    keep = Path(args.keep) if args.keep else None
    try:
        verdict = tv.validate_one(schedule, spec_bugs=spec_bugs, timeout=args.timeout, keep=keep)
    except tv.TraceValidationError as e:
        raise cli.UsageError(f"validate-schedule: {e}") from None
    if args.json:
        out = {"trace": args.trace, "scheduler": args.scheduler, "workers": args.workers,
               "spec": spec, "spec_bugs": sorted(spec_bugs), "events": len(schedule.events),
               "accepted": verdict.accepted, "matched": verdict.matched,
               "seconds": round(verdict.seconds, 2)}
        if not verdict.accepted:
            e = verdict.event
            out["rejected_event"] = None if e is None else {
                "index": verdict.matched + 1, "action": e.action, "t": e.t, "seq": e.seq,
                "worker": e.w or None, "time": e.time}
            out["spec_state"] = verdict.state
        print(json.dumps(out))
    else:
        print(f"{args.trace}: {verdict.describe()}")
        if keep:
            print(f"(module, cfg and TLC output in {keep})")
    return 0 if verdict.accepted else 1


def cmd_mutants(args) -> int:
    from commitsched import cli

    from . import mutants
    try:
        rows = mutants.run(only=args.only, examples=args.examples, tlc_timeout=args.timeout,
                           progress=_progress)
    except mutants.MutantsError as e:
        raise cli.UsageError(f"mutants: {e}") from None
    if args.json:
        for r in rows:
            print(json.dumps(r.to_json()))
    else:
        print(mutants.table(rows))
    escaped = [r for r in rows if r.escapes()]
    for r in escaped:
        print(f"ESCAPED {r.name}: {', '.join(r.escapes())}", file=sys.stderr)
    return 1 if escaped else 0


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        print(msg, file=sys.stderr, flush=True)
