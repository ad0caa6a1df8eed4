"""What-if: split the transactions that hold the replica back (docs/blame.md).

`split_txns` rewrites a trace with chosen transactions cut into chunks, as a DBA would cut a big
`UPDATE ... WHERE` into batches run one after the other by the same session:
- the rows (write keys) are spread over the chunks in order, in near-equal parts;
- execution costs are proportional to the chunk's share of the rows (of the trace's `exec`, or
  of the profile's default for a line without one); each chunk pays its own commit step
  (`commit`) and sync: that is the price of splitting;
- the optional size fields (`rows`, `events`, `bytes`, where the trace has them) are shared
  out the same way, and so are a `write_set_size`'s hashes beyond one per key (each chunk's is
  its own keys plus its share of those);
- a session commits one chunk before it starts the next, so the source cannot put two chunks in
  one commit group: the first chunk stays where the transaction was; the others follow the end
  of its commit group (the run of transactions with its `last_committed`, or its `commit_id`),
  each depending on the one before (`last_committed` = the previous chunk's
  `sequence_number`; no `commit_id`: a group of its own). Sequence numbers are renumbered, and
  a `last_committed` that named a split transaction names its last chunk.
Trackers that recompute dependencies (writeset, writeset_session, database, slave_group_commit)
then recompute them from the new write sets; commit_order and commit_id read the rewritten
clocks. DDL, admin statements and single-row transactions are not split.
"""
from __future__ import annotations

import bisect
import copy
from typing import Iterable, Sequence

from .trace import Txn

SIZE_FIELDS = ("rows", "events", "bytes")


def _parts(n_items: int, n: int) -> list[int]:
    """n near-equal part sizes summing to n_items, larger parts first."""
    q, r = divmod(n_items, n)
    return [q + (1 if i < r else 0) for i in range(n)]


def splittable(txn: Txn) -> bool:
    return not (txn.ddl or txn.admin) and len(txn.writes) >= 2


def chunks_of(txn: Txn, n: int, profile) -> list[Txn]:
    """`txn` cut into min(n, rows) chunks (seq and clocks set later by `split_txns`)."""
    writes = list(txn.writes)
    n = max(1, min(n, len(writes)))
    sizes = _parts(len(writes), n)
    exec_total = profile.exec_cost(txn)
    commit = profile.commit_cost(txn)
    before = set(txn.before_images)
    out, i = [], 0
    for j, size in enumerate(sizes):
        part = writes[i:i + size]
        i += size
        c = Txn(txn.seq, part, before_images=[k for k in part if k in before],
                gtid=(txn.gtid if j == 0 or txn.gtid is None else f"{txn.gtid}#{j + 1}"),
                file=txn.file, commit_id=txn.commit_id if j == 0 else None, flags=txn.flags,
                session=txn.session, db=txn.db, no_pk=txn.no_pk, fk_parent=txn.fk_parent,
                exec=exec_total * size / len(writes), commit=commit, timestamp=txn.timestamp)
        for name in SIZE_FIELDS:             # optional size fields, where the trace has them
            total = getattr(txn, name)
            if total is not None:
                setattr(c, name, _parts(total, n)[j] if isinstance(total, int)
                        else total * size / len(writes))
        if txn.write_set_size is not None:   # the vector's repeated hashes, shared out too
            c.write_set_size = size + _parts(max(0, txn.write_set_size - len(writes)), n)[j]
        out.append(c)
    return out


def _group_ends(txns: Sequence[Txn]) -> list[int]:
    """For each index, the index of the last transaction of its commit group as seen from it:
    the run of following transactions with the same non-zero commit_id, or the same file and
    last_committed."""
    ends = [0] * len(txns)
    for i in range(len(txns) - 1, -1, -1):
        t = txns[i]
        if i + 1 < len(txns) and _same_group(t, txns[i + 1]):
            ends[i] = ends[i + 1]
        else:
            ends[i] = i
    return ends


def _same_group(a: Txn, b: Txn) -> bool:
    if a.commit_id and b.commit_id:
        return a.commit_id == b.commit_id
    if a.last_committed is not None and b.last_committed is not None:
        return a.file == b.file and a.last_committed == b.last_committed
    return False


def split_txns(txns: Iterable[Txn], targets: dict[int, int], profile) -> tuple[list[Txn], dict]:
    """The trace with each `targets` seq cut into that many chunks; returns the new transactions
    (seq 1..N) and, per original seq split, the new seqs of its chunks."""
    txns = list(txns)
    ends = _group_ends(txns)
    tails: dict[int, list[tuple[int, list[Txn]]]] = {}
    order: list[tuple[Txn, Txn | None, int]] = []   # (new txn, original, chunk index)
    for i, t in enumerate(txns):
        n = targets.get(t.seq, 1)
        if n > 1 and splittable(t):
            cs = chunks_of(t, n, profile)
            order.append((cs[0], t, 0))
            if len(cs) > 1:
                tails.setdefault(ends[i], []).append((t.seq, [(c, t, j) for j, c in
                                                              enumerate(cs[1:], 1)]))
        else:
            order.append((t, t, -1))
        for _, items in sorted(tails.pop(i, [])):
            order.extend(items)
    clocks = any(t.sequence_number is not None for t in txns)
    out: list[Txn] = []
    new_seqs: dict[int, list[int]] = {}
    sn_map: dict[int, dict[int, int]] = {}          # file -> old sequence_number -> new
    sn_keys: dict[int, list[int]] = {}
    prev_old: dict[int, int] = {}
    counter: dict[int, int] = {}
    last_chunk_sn: dict[int, int] = {}
    for seq, (t, orig, j) in enumerate(order, 1):
        if j <= 0:
            t = _copy(t)
        t.seq = seq
        if j >= 0:
            new_seqs.setdefault(orig.seq, []).append(seq)
        if clocks and orig.sequence_number is not None:
            f = orig.file
            if j <= 0:                                # the original or its first chunk
                gap = orig.sequence_number - prev_old.get(f, 0)
                counter[f] = counter.get(f, 0) + max(1, gap)
                prev_old[f] = orig.sequence_number
                t.last_committed = _map_lc(orig.last_committed, sn_map.get(f, {}),
                                           sn_keys.get(f, []))
            else:
                counter[f] += 1
                t.last_committed = last_chunk_sn[orig.seq]
            t.sequence_number = counter[f]
            last_chunk_sn[orig.seq] = counter[f]
            m = sn_map.setdefault(f, {})
            if orig.sequence_number not in m:
                bisect.insort(sn_keys.setdefault(f, []), orig.sequence_number)
            m[orig.sequence_number] = counter[f]     # its last chunk so far
        out.append(t)
    return out, {s: v for s, v in new_seqs.items() if len(v) > 1}


def _map_lc(lc, sn_map: dict, keys: list) -> int | None:
    if lc is None or lc == 0:
        return lc
    if lc in sn_map:
        return sn_map[lc]
    i = bisect.bisect_right(keys, lc) - 1       # a gap: the nearest earlier transaction
    return sn_map[keys[i]] if i >= 0 else 0


def _copy(t: Txn) -> Txn:
    return copy.copy(t)          # a shallow copy (Txn is a msgspec Struct)


def split_choices(txns: Sequence[Txn], order: Sequence[int], ks: Sequence[int],
                  chunks: int) -> list[tuple[int, dict[int, int]]]:
    """(k, {seq: chunks}) for each k of `ks` and k = 0 (as recorded), in increasing k: the first
    k splittable transactions of `order` (seqs, most blamed first)."""
    splittable_order = [s for s in order if splittable(txns[s - 1])]
    return [(k, {s: chunks for s in splittable_order[:k]}) for k in sorted(set([0, *ks]))]


def split_point(txns: Sequence[Txn], chosen: dict[int, int], scheduler: str, workers: int,
                profile, *, bugs=frozenset(), tracker_options: dict | None = None,
                applier_options: dict | None = None) -> tuple[int, float, float]:
    """One k of the what-if: (transactions, serial makespan, the scheduler's makespan) of the
    trace with `chosen` split (split_txns)."""
    from .metrics import RunMetrics
    from .schedulers import run_scheduler
    from . import engine
    from .columnar import ColumnarTxns, from_txns
    new, _ = split_txns(txns, chosen, profile) if chosen else (list(txns), {})
    # the rewritten trace's columns, for the compiled engine (`engine.default()`)
    source = (ColumnarTxns(lambda: from_txns(new), lambda: iter(new))
              if engine.default() == "compiled" and engine.available() else new)
    ms = {}
    for name, w in (("serial", 1), (scheduler, workers)):
        m = RunMetrics(w)
        run_scheduler(name, source, w, profile, m, bugs=bugs,
                      tracker_options=tracker_options if name != "serial" else None,
                      applier_options=applier_options if name != "serial" else None)
        ms[name] = m.makespan
    return len(new), ms["serial"], ms[scheduler]


def split_rows(choices: list[tuple[int, dict]], points: Sequence[tuple[int, float, float]],
               chunks: int, n_splittable: int) -> list[dict]:
    """The what-if's rows from `split_choices` and a `split_point` for each: speedups over the
    serial replay of the same rewritten trace, changes against k = 0."""
    rows = []
    base = None
    for (k, chosen), (n, serial_ms, ms) in zip(choices, points):
        row = {"k": k, "split": sorted(chosen), "chunks": chunks,
               "transactions": n, "makespan": round(ms, 6),
               "serial_makespan": round(serial_ms, 6),
               "speedup": round(serial_ms / ms, 6) if ms else None}
        if base is None:
            base = row
        row["makespan_change"] = round(row["makespan"] / base["makespan"] - 1, 6) \
            if base["makespan"] else None
        row["speedup_change"] = round(row["speedup"] / base["speedup"] - 1, 6) \
            if base["speedup"] and row["speedup"] else None
        rows.append(row)
        if k > n_splittable:
            row["note"] = (f"only {n_splittable} blamed transactions can be split "
                           f"(DDL, admin and single-row ones cannot)")
    return rows


def split_whatif(txns: Sequence[Txn], scheduler: str, workers: int, profile, order: Sequence[int],
                 ks: Sequence[int], chunks: int, *, bugs=frozenset(),
                 tracker_options: dict | None = None,
                 applier_options: dict | None = None) -> list[dict]:
    """Re-score with the first k splittable transactions of `order` (seqs, most blamed first)
    split into `chunks`, for each k in `ks` (0: as recorded). Speedups are over the serial
    replay of the same rewritten trace; changes are against k = 0."""
    choices = split_choices(txns, order, ks, chunks)
    points = [split_point(txns, chosen, scheduler, workers, profile, bugs=bugs,
                          tracker_options=tracker_options, applier_options=applier_options)
              for _, chosen in choices]
    return split_rows(choices, points, chunks, n_splittable(txns, order))


def n_splittable(txns: Sequence[Txn], order: Sequence[int]) -> int:
    return sum(1 for s in order if splittable(txns[s - 1]))
