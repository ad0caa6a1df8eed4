#!/usr/bin/env python3
"""Print the table of traces/recorded/README.md from the traces themselves.

    python traces/record/summarize.py traces/recorded/*.jsonl.gz
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record import _import_importers  # noqa: E402  (makes `commitsched` importable from a checkout)

_import_importers()
from commitsched.importers import group_stats  # noqa: E402
from commitsched.trace import load_trace  # noqa: E402


def row(path: str) -> str:
    tr = load_trace(path)
    s = tr.source
    n, groups = group_stats(tr)
    ddl = sum(1 for t in tr if t.ddl)
    server = s["binlog_commits"] / s["binlog_group_commits"] if s.get("binlog_group_commits") else None
    trace_mean = (n - ddl) / (groups - ddl) if groups > ddl else None
    wait = s["settings"].get("binlog_commit_wait_count", "0")
    wl = s["workload"].replace(".lua", "") + f", {s['client_threads']} threads"
    if wait != "0":
        wl += f", commit_wait {wait}/{s['settings']['binlog_commit_wait_usec']} µs"
    agree = "yes" if (n - ddl, groups - ddl) == (s["binlog_commits"], s["binlog_group_commits"]) else "NO"
    return (f"| `{os.path.basename(path)}` | {wl} | {n}" + (f" ({ddl} DDL)" if ddl else "") +
            f" | {os.path.getsize(path) / 1024:.0f} KiB | {s['sysbench_tps']:.0f} | "
            f"{s['binlog_commits']} / {s['binlog_group_commits']} = {server:.3f} | "
            f"{n - ddl} / {groups - ddl} = {trace_mean:.3f} | {agree} |")


print("| file | workload | transactions | size (gz) | source TPS | server: binlog_commits / "
      "binlog_group_commits | trace: transactions / commit groups (DDL excluded) | agree |")
print("|---|---|---|---|---|---|---|---|")
for p in sys.argv[1:]:
    print(row(p))
