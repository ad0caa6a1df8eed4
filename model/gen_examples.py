"""The bundled example traces (traces/examples): which generator calls make them, the hand-made
worked examples of semantics.md, and the README table of counts a person can check.
`python -m commitsched.generate --examples traces/examples` rewrites them."""
from __future__ import annotations

import json
import os

from .generate import generate, generate_source_header
from .trace import iter_trace, write_trace


EXAMPLES: list[tuple[str, int, dict]] = [
    ("oltp_rw_1client", 500, dict(workload="oltp_read_write", clients=1)),
    ("oltp_rw_8clients", 2000, dict(workload="oltp_read_write", clients=8)),
    ("oltp_rw_64clients", 3000, dict(workload="oltp_read_write", clients=64)),
    ("update_index_48clients", 3000, dict(workload="oltp_update_index", clients=48, skew=0.9)),
    ("insert_25tables_100clients", 3000, dict(workload="oltp_insert", clients=100, tables=25)),
    ("mixed_ddl_fk", 2000, dict(workload="mixed", clients=16, table_size=1000, skew=0.5,
                                rotate_every=600, ddl_every=250, fk=True, source="mariadb")),
    ("bulk_updates_16clients", 2000, dict(workload="oltp_update_index", clients=16,
                                          bulk_every=50, bulk_rows=100, source="mariadb")),
]

HAND_MADE = [
    ("semantics_1_4_logical_clock.jsonl",
     "semantics.md §1.4 worked example: T1(L0,s1) T2(L1,s2) T3(L1,s3) T4(L1,s4) T5(L3,s5) "
     "right after a rotation, with `exec` costs. With 4 workers: T1 is a barrier; T2 waits for "
     "T1; T3, T4 dispatch right after T2; T5 waits until T1..T3 are done (lwm >= 3) while the "
     "long T4 still runs."),
    ("semantics_2_2_writeset.jsonl",
     "semantics.md §2.2 worked example: T1..T6 written by one session (commit-order parents "
     "0,1,2,3,4,5; A, B, C are rows 1, 2, 3 of sbtest1; T5 is DDL). WRITESET must recompute "
     "last_committed 0,1,1,3,4,5."),
    ("semantics_3_5_commit_id.jsonl",
     "semantics.md §3.5 example: MariaDB groups {T1,T2,T3} commit_id 100, {T4,T5} commit_id "
     "200, T6 a singleton (no commit_id). Conservative: T1..T3 start at once, T4,T5 when T1..T3 "
     "reached commit, T6 when T1..T5 did. T4 rewrites T1's row and T6 T5's."),
]


def trace_stats(path: str) -> dict:
    """Counts a person can check: transactions, source groups, waits, DDL, binlog files."""
    _, txns = iter_trace(path)
    n = groups = waited = ddl = 0
    window = 0
    files = set()
    prev_cid = None
    has_cid = False
    for t in txns:
        n += 1
        files.add(t.file)
        if t.commit_id is None or t.commit_id != prev_cid:
            groups += 1
        has_cid = has_cid or t.commit_id is not None
        prev_cid = t.commit_id
        waited += "waited" in t.flags
        ddl += t.ddl
        if t.sequence_number is not None:
            window += t.sequence_number - t.last_committed - 1
    return {"transactions": n, "groups": groups, "mean_group": n / groups if groups else 0.0,
            "has_commit_id": has_cid, "waited": waited, "ddl": ddl, "files": len(files),
            "mean_window": window / n if n else 0.0}


def _call_text(n: int, kw: dict) -> str:
    return "generate(" + ", ".join([str(n)] + [f"{k}={v!r}" for k, v in kw.items()]) + ")"


def regenerate(directory: str, gzip_over: int = 200_000) -> list[str]:
    """Rewrite the generated examples and the README in `directory`, deterministically."""
    written = []
    rows = []
    for name, n, kw in EXAMPLES:
        txns = list(generate(n, **kw))
        size = sum(len(json.dumps(t.to_json(), separators=(",", ":"))) + 1 for t in txns)
        ext = ".jsonl.gz" if size > gzip_over else ".jsonl"
        path = os.path.join(directory, name + ext)
        stale = os.path.join(directory, name + (".jsonl" if ext.endswith(".gz") else ".jsonl.gz"))
        if os.path.exists(stale):
            os.unlink(stale)
        write_trace(path, txns, generate_source_header(n, **kw))
        written.append(path)
        rows.append((name + ext, _call_text(n, kw), trace_stats(path)))
    hand = []
    for fname, what in HAND_MADE:
        path = os.path.join(directory, fname)
        if os.path.exists(path):
            hand.append((fname, what, trace_stats(path)))
    readme = os.path.join(directory, "README.md")
    with open(readme, "w", encoding="utf-8") as fh:
        fh.write(_readme(rows, hand))
    written.append(readme)
    return written


def _group_text(st: dict, generated: bool = False) -> str:
    # A generated trace writes a commit_id for every multi-member group, so none means all
    # singletons; a hand-made MySQL-style trace simply does not record groups.
    if st["has_commit_id"] or generated:
        return f"{st['mean_group']:.2f}"
    return "n/a (no commit_id)"


def _readme(rows: list, hand: list) -> str:
    out = [
        "# Example traces",
        "",
        "Trace format v1 (design §3). Generated files come from `commitsched.generate`, a",
        "simulated source server (2PL row locks, binlog group commit; see the module docstring),",
        "so their `last_committed`/`sequence_number`, `commit_id` and `waited` flags are",
        "consequences of the simulated run. Times are in µs. Rewrite them (deterministically) with",
        "",
        "    python -m commitsched.generate --examples traces/examples",
        "",
        "Defaults of the simulated source (all recorded in each trace's header): execution cost",
        "log-normal with median 1500 µs (oltp_read_write, mixed) or 150 µs (single-statement",
        "workloads), sigma 0.5; one binlog sync per group commit 500 µs; engine commit 20 µs per",
        "transaction; COMMIT sent 50 µs after the last statement of an explicit transaction;",
        "10000 rows per table, keys uniform unless `skew` (Zipf-like) is given; GTIDs MySQL style",
        "(`uuid:N`) unless `source='mariadb'` (`0-1-N`). Every trace carries both the MySQL",
        "(`last_committed`, `sequence_number`) and the MariaDB (`commit_id`, `flags`) annotations.",
        "`mixed` adds a table with a UNIQUE key whose value UPDATEs change (`before_images`), a",
        "table without primary key (`no_pk`), and with `fk=True` a parent table (`fk_parent`",
        "writes) and child inserts that carry the referenced parent key.",
        "",
        "This README is rewritten by the same command: the counts below are measured from the files.",
        "Mean group size = transactions / source binlog group commits (consecutive equal `commit_id`;",
        "a transaction without one is its own group). Mean window = mean of `sequence_number -",
        "last_committed - 1`: how many earlier transactions the source marks as able to overlap.",
        "`waited`, `DDL`: how many transactions carry that flag.",
        "",
        "## Generated",
        "",
        "| file | generator call | transactions | mean group size | mean window | waited | DDL "
        "| binlog files |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fname, call, st in rows:
        out.append(f"| `{fname}` | `{call}` | {st['transactions']} | {_group_text(st, True)} | "
                   f"{st['mean_window']:.2f} | {st['waited']} | {st['ddl']} | {st['files']} |")
    out += ["", "## Hand-made (checkable by hand)", "",
            "| file | what | transactions | mean group size |", "|---|---|---|---|"]
    for fname, what, st in hand:
        out.append(f"| `{fname}` | {what} | {st['transactions']} | {_group_text(st)} |")
    out.append("")
    return "\n".join(out)
