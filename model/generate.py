"""`commitsched generate`: synthetic traces from a simulated source server.

    from commitsched.generate import generate
    for txn in generate(1000, workload="oltp_read_write", clients=8): ...

The simulated server and what it models: `gen_source`; the workloads it runs: `gen_workloads`;
the bundled examples: `gen_examples` (`python -m commitsched.generate --examples DIR`)."""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Iterator

from .gen_source import SOURCES, GenParams, Observer, _Source
from .gen_workloads import WORKLOADS
from .trace import Txn, write_trace

GENERATOR_VERSION = 1


def generate(n: int, *, workload: str = "oltp_read_write", clients: int = 8, tables: int = 1,
             table_size: int = 10000, skew: float = 0.0, seed: int = 1,
             rotate_every: int | None = None, ddl_every: int | None = None, fk: bool = False,
             source: str = "mysql", exec_us: float | None = None, exec_sigma: float = 0.5,
             commit_us: float = 20.0, sync_us: float = 500.0, rtt_us: float = 50.0,
             ddl_exec_us: float = 20000.0, parent_rows: int = 100,
             commit_wait_count: int = 0, commit_wait_usec: float = 100000.0,
             bulk_every: int | None = None, bulk_rows: int = 100,
             observer: Observer | None = None) -> Iterator[Txn]:
    """Stream `n` transactions of a simulated source, in binlog order, deterministic for `seed`.

    `observer(event, time, attempt_id, *args)`, if given, sees the simulation's lock and commit
    events ("start", "lock", "wait", "grant", "release", "rollback", "flush", "commit"): tests
    use it to check the flags against what happened.
    """
    if n < 0:
        raise ValueError("n must not be negative")
    p = GenParams(workload, clients, tables, table_size, skew, seed, rotate_every, ddl_every, fk,
                  source, exec_us, exec_sigma, commit_us, sync_us, rtt_us, ddl_exec_us,
                  parent_rows, commit_wait_count, commit_wait_usec, bulk_every, bulk_rows)
    return _Source(p, n, observer).run()


def generate_source_header(n: int | None = None, **params) -> dict:
    """The trace header's `source` object for `generate(n, **params)`: provenance."""
    params.pop("observer", None)
    p = GenParams(**params)
    skew = ("uniform" if p.skew == 0 else
            f"Zipf-like: continuous power law, density ∝ rank^-{p.skew}, rank 1 hottest, id = rank")
    head = {
        "server": f"simulated {p.source} source (commitsched.generate)",
        "synthetic": True,
        "generator": "commitsched.generate",
        "generator_version": GENERATOR_VERSION,
        "workload": p.workload,
        "seed": p.seed,
        "parameters": {k: v for k, v in asdict(p).items()
                       if v is not None and not (k == "bulk_rows" and p.bulk_every is None)},
        "time_unit": "us",
        "gtid_style": "mariadb domain-server-seq" if p.source == "mariadb" else "mysql uuid:N",
        "key_choice": skew,
        "exec_distribution": f"lognormal, median {p.exec_median} us, sigma {p.exec_sigma}",
        "model": ("2PL exclusive row locks held to engine commit; deadlock victim = requester, "
                  "retried; DDL runs alone; binlog group commit with one sync per group"),
    }
    if n is not None:
        head["transactions"] = n
    return head


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m commitsched.generate",
                                 description="Synthetic traces from a simulated source server.")
    ap.add_argument("--examples", metavar="DIR", help="rewrite the bundled examples in DIR")
    ap.add_argument("-n", type=int, default=1000, help="transactions (default 1000)")
    ap.add_argument("-o", "--output", help="trace file to write (.jsonl or .jsonl.gz)")
    ap.add_argument("--workload", default="oltp_read_write", choices=WORKLOADS)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--tables", type=int, default=1)
    ap.add_argument("--table-size", type=int, default=10000)
    ap.add_argument("--skew", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rotate-every", type=int)
    ap.add_argument("--ddl-every", type=int)
    ap.add_argument("--fk", action="store_true")
    ap.add_argument("--source", default="mysql", choices=SOURCES)
    ap.add_argument("--sync-us", type=float, default=500.0)
    ap.add_argument("--commit-wait-count", type=int, default=0)
    ap.add_argument("--commit-wait-usec", type=float, default=100000.0)
    ap.add_argument("--bulk-every", type=int)
    ap.add_argument("--bulk-rows", type=int, default=100)
    args = ap.parse_args(argv)
    if args.examples:
        from .gen_examples import regenerate
        for path in regenerate(args.examples):
            print(path)
        return 0
    if not args.output:
        ap.error("give -o FILE (or --examples DIR)")
    kw = dict(workload=args.workload, clients=args.clients, tables=args.tables,
              table_size=args.table_size, skew=args.skew, seed=args.seed,
              rotate_every=args.rotate_every, ddl_every=args.ddl_every, fk=args.fk,
              source=args.source, sync_us=args.sync_us,
              commit_wait_count=args.commit_wait_count, commit_wait_usec=args.commit_wait_usec,
              bulk_every=args.bulk_every, bulk_rows=args.bulk_rows)
    try:
        write_trace(args.output, generate(args.n, **kw), generate_source_header(args.n, **kw))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
