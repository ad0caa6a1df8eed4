"""Subcommands `validate-schedule`, `conform-states` and `mutants` (model/cli.py PLUGIN_COMMANDS).

    commitsched validate-schedule TRACE --scheduler S --workers W [--keep DIR] [--spec-bug B]
    commitsched conform-states TRACE --scheduler S --workers W [--first N] [--inject-bug B]
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

    c = sub.add_parser(
        "conform-states",
        help="compare the Python step rules with the applier spec in every reachable state",
        description="Annotate TRACE (a few transactions: the state space grows fast) under one "
                    "scheduler, let TLC enumerate the reachable states of the applier spec with "
                    "that trace fixed, and check in every state that the simulator's rules "
                    "(commitsched.steps_mysql / steps_mariadb) enable exactly the spec's "
                    "actions, with the same arguments and successors. Exit 0 when they agree, "
                    "1 on a mismatch (each names the action and the state).")
    c.add_argument("trace")
    c.add_argument("--scheduler", required=True, metavar="S",
                   help="TRACKER+APPLIER with a clock tracker and the mysql applier, or "
                        "mariadb_conservative / mariadb_optimistic")
    c.add_argument("--workers", type=int, required=True, metavar="W")
    c.add_argument("--first", type=int, metavar="N", help="only the first N transactions")
    c.add_argument("--inject-bug", action="append", metavar="NAME", default=[],
                   help="turn an applier bug flag on in the Python rules")
    c.add_argument("--spec-bug", action="append", metavar="NAME", default=[],
                   help="turn a bug flag on in the spec")
    c.add_argument("--no-preserve-commit-order", action="store_true",
                   help="mysql: replica_preserve_commit_order off")
    c.add_argument("--checkpoint-group", type=int, default=512, metavar="N",
                   help="mysql: replica_checkpoint_group (default 512)")
    c.add_argument("--keep", metavar="DIR", help="leave the generated module, the dot dump and "
                   "TLC's output in DIR")
    c.add_argument("--limit", type=int, default=5, help="mismatches to print (default 5)")
    c.add_argument("--json", action="store_true")
    c.add_argument("--timeout", type=float, default=300.0, help="TLC time limit in seconds")
    c.set_defaults(func=cmd_conform_states)

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


def cmd_conform_states(args) -> int:
    from commitsched import cli
    from commitsched.bugs import UnknownBug, check_bugs
    from commitsched.trace import TraceError, load_trace

    from . import state_graph as sg
    if args.workers < 1:
        raise cli.UsageError("--workers must be at least 1")
    if args.first is not None and args.first < 1:
        raise cli.UsageError("--first must be at least 1")
    if args.checkpoint_group < 1:
        raise cli.UsageError("--checkpoint-group must be at least 1")
    try:
        bugs, spec_bugs = check_bugs(args.inject_bug), check_bugs(args.spec_bug)
    except UnknownBug as e:
        raise cli.UsageError(str(e)) from None
    try:
        trace = load_trace(args.trace)
    except (OSError, TraceError) as e:
        raise cli.UsageError(f"conform-states: {e}") from None
    txns = trace.txns[:args.first] if args.first else trace.txns
    keep = Path(args.keep) if args.keep else None
    try:
        case = sg.make_case(args.scheduler, txns, args.workers, bugs=bugs,
                            label=f"{Path(args.trace).name} {args.scheduler} W={args.workers}",
                            checkpoint_group=args.checkpoint_group,
                            preserve_commit_order=not args.no_preserve_commit_order)
        res = sg.compare([case], spec_bugs=spec_bugs, timeout=args.timeout, keep=keep)
    except sg.StateGraphError as e:
        raise cli.UsageError(f"conform-states: {e}") from None
    if args.json:
        print(json.dumps({
            "trace": args.trace, "scheduler": args.scheduler, "workers": args.workers,
            "spec": case.spec, "transactions": len(txns), "states": res.states,
            "transitions": res.transitions, "agree": res.ok, "seconds": round(res.seconds, 2),
            "mismatches": [{"kind": m.kind, "action": sg.show_action(m.action) if m.action
                            else None, "state": {k: v for k, v in m.state.items() if k != "k"},
                            "detail": m.detail} for m in res.mismatches[:args.limit]]}))
    else:
        print(res.describe(args.limit))
    return 0 if res.ok else 1


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
