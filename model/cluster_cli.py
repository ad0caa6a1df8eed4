"""`commitsched cluster` (picked up by commitsched.cli.PLUGIN_COMMANDS): the sustained throughput
of a certification-based cluster (Galera or Group Replication) for a workload, by member count,
durability, applier threads and flow-control settings (docs/certification.md)."""
from __future__ import annotations

import argparse
import itertools
import json
import sys

DEFAULT_PROFILE = "galera-2core-unthrottled"


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,2,4, got {text!r}")
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _durabilities(text: str) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in ("durable", "relaxed")]
    if not values or bad:
        raise argparse.ArgumentTypeError(f"expected durable,relaxed, got {text!r}")
    return values


def configurations(args) -> list:
    from .certification_throughput import ClusterConfig
    out = []
    for members, durability, workers, fc in itertools.product(
            args.members, args.durability, args.workers, args.fc_limit):
        writers = tuple(range(min(args.writers, members)))
        out.append(ClusterConfig(flavor=args.flavor, members=members, writers=writers,
                                 clients=args.clients, workers=workers,
                                 durable=durability == "durable", fc_limit=fc,
                                 fc_factor=args.fc_factor, bugs=frozenset(args.inject_bug or ())))
    return out


def _need_keys(txns, what: str) -> None:
    """Certification is made from the row keys: a trace imported without them is refused in
    one line naming the tables (model/keys.py)."""
    from .cli import UsageError
    from .keys import scan, unknown_message
    unknown = scan(txns).unknown
    if unknown:
        raise UsageError(unknown_message(unknown, what))


def cmd_cluster(args) -> int:
    from .certification_throughput import ClusterError, get_profile, sustained
    from .cli import UsageError, _emit
    from .progress import Progress
    from .trace import load_trace
    progress = Progress(args.quiet)
    try:
        prof = get_profile(args.profile)
    except ClusterError as e:
        raise UsageError(str(e)) from None
    progress(f"reading {args.trace}")
    txns = load_trace(args.trace).txns
    _need_keys(txns, "cluster")
    if not txns:
        raise UsageError(f"{args.trace}: the trace has no transaction")
    rows = []
    cfgs = configurations(args)
    for n, cfg in enumerate(cfgs, 1):
        label = (f"{cfg.flavor} members={cfg.members} workers={cfg.workers} "
                 f"{'durable' if cfg.durable else 'relaxed'} fc_limit={cfg.fc_limit:g}")
        try:
            if args.rate:
                from .certification_throughput import Cluster, kept_up
                r = Cluster(txns, cfg, prof, seed=args.seed).run(args.rate, args.seconds,
                                                                 args.warmup)
                r["kept_up"] = kept_up(r, args.seconds)
                result = {"rate": r}
            else:
                s = sustained(txns, cfg, prof, seconds=args.seconds, warmup=args.warmup,
                              seed=args.seed,
                              progress=lambda msg: progress(f"[{n}/{len(cfgs)}] {label}: {msg}"))
                result = s.to_json()
        except ClusterError as e:
            raise UsageError(str(e)) from None
        rows.append({"flavor": cfg.flavor, "members": cfg.members, "workers": cfg.workers,
                     "durability": "durable" if cfg.durable else "relaxed",
                     "fc_limit": cfg.fc_limit, "fc_factor": cfg.fc_factor,
                     "writers": len(cfg.writers), "clients": cfg.clients, **result})
    progress.done()
    out = {"trace": args.trace, "profile": prof.to_json(), "results": rows}
    if args.json:
        _emit(json.dumps(out, indent=1) + "\n", args.output)
    else:
        _emit(format_table(out, rate=bool(args.rate)), args.output)
    return 0


def cmd_cluster_lag(args) -> int:
    """`lag --system galera|group_replication`: the trace replayed as it arrived on a cluster of
    --members (model/certification_throughput.py cluster_keeps_up / cluster_headroom)."""
    from .certification_throughput import (ClusterConfig, ClusterError, cluster_headroom,
                                           cluster_keeps_up, get_profile)
    from .cli import UsageError, _emit
    from .progress import Progress
    from .replay import ReplayError, source_times
    from .trace import TraceError, load_trace
    if len(args.trace) != 1:
        raise UsageError("lag --system galera|group_replication takes one trace")
    progress = Progress(args.quiet)
    try:
        prof = get_profile(args.cluster_profile)
    except ClusterError as e:
        raise UsageError(str(e)) from None
    path = args.trace[0]
    label = getattr(args, "trace_label", path)      # the binlogs `lag` imported it from
    progress(f"reading {label}")
    txns = load_trace(path).txns
    _need_keys(txns, f"lag --system {args.system}")
    try:
        stamps = source_times(txns)
        stamps.check_pace()
        times = stamps.times.tolist()      # the cluster simulation reads them one by one
    except ReplayError as e:
        raise TraceError(label, None, str(e)) from None
    durable = (args.durability or "durable") == "durable"
    rows = []
    for w in args.workers:
        cfg = ClusterConfig(flavor=args.system, members=args.members, workers=w, durable=durable)
        progress(f"{args.system} members={args.members} workers={w}")
        r = cluster_keeps_up(txns, times, cfg, prof)
        r["headroom"] = round(cluster_headroom(txns, times, cfg, prof), 3)
        rows.append({"system": args.system, "members": args.members, "workers": w,
                     "durability": "durable" if durable else "relaxed", **r})
    progress.done()
    if args.json:
        _emit(json.dumps(rows, indent=1) + "\n", args.output)
        return 0
    lines = [f"trace {label}: {len(txns)} transactions; {args.system} cluster of {args.members} "
             f"members, cluster profile {prof.name} ({prof.machine})", "",
             f"{'workers':>7} {'keeps up':>8} {'headroom':>8} {'p99 lag':>9} {'max lag':>9} "
             f"{'fc paused':>9}"]
    for r in rows:
        p99 = f"{r['p99_lag_s']:.3f} s" if r.get("p99_lag_s") is not None else "-"
        mx = f"{r['max_lag_s']:.3f} s" if r.get("max_lag_s") is not None else "-"
        lines.append(f"{r['workers']:>7} {'yes' if r['keeps_up'] else 'no':>8} "
                     f"{r['headroom']:>8.2f} {p99:>9} {mx:>9} {r['fc_paused']:>9.0%}")
    lines += ["", "keeps up: the trace replayed twice in a row at its source's pace ends no more "
              "behind the second time; headroom: the largest factor the pace can be multiplied "
              "by and still keep up; lag: the last member's commit minus the source commit "
              "(flow control holds the writer rather than let a member fall behind, so it is "
              "the writer's delay and the members' together); fc paused: the share of the time "
              "flow control held the writer (docs/certification.md)."]
    _emit("\n".join(lines) + "\n", args.output)
    return 0


def format_table(out: dict, rate: bool = False) -> str:
    p = out["profile"]
    lines = [f"trace {out['trace']}; cluster profile {p['name']}: {p['machine'] or 'no machine'}, "
             f"{p['cores'] or 'unlimited'} cores shared by every member and client",
             f"  ({p['provenance']})", ""]
    if rate:
        head = (f"{'flavor':<18} {'members':>7} {'workers':>7} {'durability':<10} {'fc_limit':>8} "
                f"{'offered':>8} {'achieved':>9} {'kept up':>7} {'fc paused':>9} queues at end")
        lines += [head, "-" * len(head)]
        for r in out["results"]:
            x = r["rate"]
            lines.append(f"{r['flavor']:<18} {r['members']:>7} {r['workers']:>7} "
                         f"{r['durability']:<10} {r['fc_limit']:>8g} {x['rate']:>8.0f} "
                         f"{x['tps']:>9.0f} {'yes' if x['kept_up'] else 'no':>7} "
                         f"{x['fc_paused']:>9.0%} {x['queues_end']}")
        return "\n".join(lines) + "\n"
    head = (f"{'flavor':<18} {'members':>7} {'workers':>7} {'durability':<10} {'fc_limit':>8} "
            f"{'sustained':>10} {'next rate':>10} {'unthrottled':>11} {'fc paused':>9}")
    lines += [head, "-" * len(head)]
    for r in out["results"]:
        kept = [s for s in r["steps"] if s.get("kept_up")]
        paused = f"{kept[-1]['fc_paused']:.0%}" if kept else "-"
        lines.append(f"{r['flavor']:<18} {r['members']:>7} {r['workers']:>7} "
                     f"{r['durability']:<10} {r['fc_limit']:>8g} {r['sustained']:>10.0f} "
                     f"{r['next_rate']:>10.0f} {r['unthrottled']:>11.0f} {paused:>9}")
    lines += ["", "sustained: the highest offered rate (write-sets/s from the writers) that every "
              "member keeps up with, flow control included: the writers achieve 97% of it and no "
              "member's receive queue ends above max(30, 2% of the offered write-sets); next "
              "rate: the lowest rate tried above it (the search's resolution); unthrottled: the "
              "writers as fast as their clients go; fc paused: the share of time flow control "
              "held the writers at the sustained rate."]
    return "\n".join(lines) + "\n"


def add_subcommands(sub, add_model_options) -> None:
    from .cli import _positive_float, _positive_int
    from .flow_control import GALERA_FC_FACTOR, GALERA_FC_LIMIT
    c = sub.add_parser(
        "cluster", help="sustained throughput of a Galera / Group Replication cluster",
        description="Simulate a certification-based cluster running the trace's transactions "
                    "(cycled) from writers on some members: group communication rounds, every "
                    "member's certification, parallel applier and commits, flow control, the "
                    "machine's shared cores and disk (docs/certification.md). Prints, for each "
                    "combination of the options' values, the sustained throughput: the highest "
                    "writer rate every member keeps up with, found by bisection as "
                    "traces/record/galera_measure.py measures it on a real cluster. With "
                    "--rate, one run at that rate instead.")
    c.add_argument("trace", help="the workload: a commitsched trace (.jsonl[.gz])")
    c.add_argument("--flavor", choices=("galera", "group_replication"), default="galera")
    c.add_argument("--members", type=_ints, default=[3], metavar="N[,N...]",
                   help="cluster sizes (default 3)")
    c.add_argument("--workers", type=_ints, default=[1], metavar="W[,W...]",
                   help="wsrep_slave_threads / replica_parallel_workers (default 1)")
    c.add_argument("--durability", type=_durabilities, default=["durable"],
                   metavar="durable,relaxed",
                   help="durable: sync_binlog=1, innodb_flush_log_at_trx_commit=1 on every "
                        "member; relaxed: 0 and 2 (default durable)")
    c.add_argument("--fc-limit", type=_ints, default=[GALERA_FC_LIMIT], metavar="N[,N...]",
                   help=f"Galera gcs.fc_limit (default {GALERA_FC_LIMIT})")
    c.add_argument("--fc-factor", type=float, default=GALERA_FC_FACTOR, metavar="F",
                   help=f"Galera gcs.fc_factor (default {GALERA_FC_FACTOR})")
    c.add_argument("--writers", type=_positive_int, default=1, metavar="N",
                   help="members that run clients (default 1: a single writer)")
    c.add_argument("--clients", type=_positive_int, default=32, metavar="N",
                   help="client threads in all (default 32)")
    c.add_argument("--profile", default=DEFAULT_PROFILE, metavar="NAME",
                   help=f"cluster profile (model/cluster_profiles.json; default {DEFAULT_PROFILE}, "
                        f"measured on this project's 2-core VM)")
    c.add_argument("--rate", type=_positive_float, metavar="TPS",
                   help="one run at this offered rate instead of the search")
    c.add_argument("--seconds", type=_positive_float, default=10.0,
                   help="simulated seconds measured per run (default 10)")
    c.add_argument("--warmup", type=float, default=2.0, help="simulated seconds before (default 2)")
    c.add_argument("--seed", type=int, default=1, help="arrivals' random seed (default 1)")
    c.add_argument("--inject-bug", action="append", metavar="NAME",
                   choices=("cert_purge_past_safe", "failed_ws_commits_early", "fc_stop_mark_late"),
                   help="a catalogue bug of the cluster (docs/certification.md)")
    c.add_argument("--json", action="store_true", help="the numbers as JSON")
    c.add_argument("-o", "--output", help="write to this file instead of standard output")
    c.add_argument("--quiet", action="store_true", help="no progress lines")
    c.set_defaults(func=cmd_cluster)
