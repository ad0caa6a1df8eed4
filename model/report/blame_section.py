"""The report's "Which transactions hold the replica back?" section: the blame of one run
(commitsched.blame), the worst stall as a timeline, and the split what-if (commitsched.split)."""
from __future__ import annotations

from ..blame import blame_trace, headline_text, summary
from ..split import split_whatif
from .stall import stall_data

# Above this many transactions the section is left out: the blame keeps every run record.
MAX_TRANSACTIONS = 200_000
SPLIT_KS = (1, 5, 10, 20)
SPLIT_CHUNKS = 4


def blame_section(trace, profile, scheduler: str, workers: int, *, tracker_options: dict,
                  applier_options: dict, bugs=frozenset(), whatif: bool = True,
                  top: int = 10) -> dict:
    if trace.count > MAX_TRANSACTIONS:
        return {"skipped": f"{trace.count} transactions (the section keeps every run record; "
                           f"above {MAX_TRANSACTIONS} run `commitsched blame` on a slice)"}
    txns = list(trace.txns())
    res = blame_trace(txns, scheduler, workers, profile, bugs=bugs,
                      tracker_options=tracker_options, applier_options=applier_options)
    out = summary(res, top=top)
    out["headline_text"] = headline_text(out)
    out["stall"] = stall_data(res, sync=profile.group_sync)
    if whatif:
        order = [s for s, _ in res.top(len(res.by_culprit))]
        out["split"] = split_whatif(txns, scheduler, workers, profile, order, SPLIT_KS,
                                    SPLIT_CHUNKS, bugs=bugs, tracker_options=tracker_options,
                                    applier_options=applier_options)
    return out


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
