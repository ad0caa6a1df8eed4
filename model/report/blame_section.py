"""The report's "Which transactions hold the replica back?" section: the blame of one run
(commitsched.blame), the worst stall as a timeline, and the split what-if (commitsched.split),
whose runs the report makes as tasks of their own (`plan_split`)."""
from __future__ import annotations

from ..blame import blame_trace, headline_text, summary
from ..keys import missing_keys, unknown_message
from ..split import n_splittable, split_choices, split_point, split_rows
from .stall import stall_data

# Above this many transactions the section is left out: the blame keeps every run record.
MAX_TRANSACTIONS = 200_000
SPLIT_KS = (1, 5, 10, 20)
SPLIT_CHUNKS = 4


def blame_section(trace, profile, scheduler: str, workers: int, *, tracker_options: dict,
                  applier_options: dict, bugs=frozenset(), top: int = 10) -> tuple[dict, list]:
    """The section without its split what-if, and the blamed seqs, most blamed first (the
    order the split what-if takes them in)."""
    missing = missing_keys(trace)
    if missing.unknown:
        return {"skipped": unknown_message(missing.unknown, "blame")}, []
    if trace.count > MAX_TRANSACTIONS:
        return {"skipped": f"the trace has {trace.count:,} transactions, more than the "
                           f"{MAX_TRANSACTIONS:,} this section takes (it keeps every run's "
                           f"record); `commitsched blame` answers it for a trace of that size "
                           f"or a part of this one"}, []
    res = blame_trace(trace.txns(), scheduler, workers, profile, bugs=bugs,
                      tracker_options=tracker_options, applier_options=applier_options)
    out = summary(res, top=top)
    out["headline_text"] = headline_text(out)
    out["stall"] = stall_data(res, sync=profile.group_sync)
    return out, [s for s, _ in res.top(len(res.by_culprit))]


def plan_split(tasks, trace, profile, scheduler: str, workers: int, order: list, *,
               tracker_options: dict, applier_options: dict, bugs=frozenset()) -> list:
    """Add the split what-if's runs to `tasks`: one task (two runs) per distinct set of split
    transactions (k past what can be split repeats the set before it); the trace as it is,
    k = 0, is not among them (`split_section` takes it from runs already made). Returns the
    choices, for `split_section`."""
    choices = split_choices(list(trace.txns()), order, SPLIT_KS, SPLIT_CHUNKS)
    for k, chosen in choices:
        key = ("split", tuple(sorted(chosen)))
        if chosen and key not in {item[0] for item in tasks.items}:
            tasks.add(key, f"split the top {k}",
                      lambda chosen=chosen: split_point(
                          list(trace.txns()), chosen, scheduler, workers, profile, bugs=bugs,
                          tracker_options=tracker_options, applier_options=applier_options))
    return choices


def split_section(trace, choices: list, order: list, base: tuple, done: dict) -> list[dict]:
    """The split what-if's rows; `base`: (transactions, serial makespan, the scheduler's
    makespan) of the trace as it is."""
    points = [done["split", tuple(sorted(chosen))] if chosen else base for _, chosen in choices]
    return split_rows(choices, points, SPLIT_CHUNKS, n_splittable(list(trace.txns()), order))


def blame_tables(b: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """(caption, head, rows) of the section's tables."""
    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"
    out = []
    rows = [[str(t["seq"]), t.get("gtid", "-"), f"{t['blame']:.0f}", pct(t["share"]),
             pct(t["critical_share"]), f"{t['exec']:.0f}", str(t["rows"]), str(t["victims"]),
             t["shape"]] for t in b["transactions"]]
    out.append(("The most blamed transactions", ["seq", "GTID", "blame (worker-µs)",
                "of worker time", "of critical path", "exec µs", "rows", "victims",
                "shape (what it wrote)"], rows))
    if b["tables"]:
        out.append(("Blame by table (a transaction's blame shared by its tables)",
                    ["table", "blame (worker-µs)", "of worker time"],
                    [[t["table"], f"{t['blame']:.0f}", pct(t["share"])] for t in b["tables"]]))
    split = [r for i, r in enumerate(b.get("split") or [])      # k past what can be split
             if i == 0 or r["split"] != b["split"][i - 1]["split"]]
    if split:
        out.append((f"What if the top-k were split into up to {split[0]['chunks']} chunks "
                    f"(predicted by the model, not measured)",
                    ["k", "transactions", "makespan µs", "makespan change", "speedup",
                     "speedup change"],
                    [[str(r["k"]), str(r["transactions"]), f"{r['makespan']:.0f}",
                      pct(r["makespan_change"]), f"{r['speedup']:.3f}",
                      pct(r["speedup_change"])] for r in split]))
    return out
