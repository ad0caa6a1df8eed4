"""The report's certification-based cluster section (docs/certification.md): the sustained
throughput of the trace's workload on a Galera and a Group Replication cluster, by member count
and durability, from the cluster simulator with the measured cluster profile. A short search
(a sample of the trace, short simulated runs, a coarse bisection): the section says so, and
`commitsched cluster` gives the full one."""
from __future__ import annotations

from itertools import islice

MEMBERS = (3, 9)
MEMBER_TEXT = ("A member of a Galera or Group Replication cluster applying every other member's "
               "write-sets of this trace, with the report's machine profile (speedup over the "
               "one-thread replay; schedulers certification+galera and "
               "certification+group_replication, docs/certification.md):")
FLAVORS = ("galera", "group_replication")
DURABILITIES = ("durable", "relaxed")
SAMPLE, SECONDS, WARMUP, STEPS, WORKERS = 500, 1.5, 0.5, 5, 4


def member_scores(trace, profile, workers) -> list[dict]:
    """The two cluster schedulers on the whole trace with the report's machine profile: a
    member applying every other member's write-sets, as an async replica applies its relay log
    (speedup over the one-thread replay)."""
    from ..schedulers import CLUSTER_SCHEDULERS
    from ..scoring import score_trace
    rows = score_trace(trace, list(CLUSTER_SCHEDULERS), workers, profile, z3_bound="off")
    return [{"scheduler": r["scheduler"], "workers": r["workers"], "speedup": r.get("speedup")}
            for r in rows if r["scheduler"] != "serial" and "error" not in r]


def cluster_section(trace, profile=None, workers=(), profile_name: str = "galera-2core-unthrottled") -> dict:
    from ..certification_throughput import ClusterConfig, ClusterError, get_profile, sustained
    scores = member_scores(trace, profile, list(workers)) if profile is not None else []
    try:
        prof = get_profile(profile_name)
    except ClusterError as e:
        return {"skipped": str(e), "member_scores": scores}
    from ..keys import missing_keys, unknown_message
    unknown = missing_keys(trace).unknown
    if unknown:             # certification is made from the row keys
        return {"skipped": unknown_message(unknown, "certification clusters"),
                "member_scores": scores}
    txns = list(islice(trace.txns(), SAMPLE))
    if not txns:
        return {"skipped": "the trace has no transaction", "member_scores": scores}
    rows = []
    for flavor in FLAVORS:
        for durability in DURABILITIES:
            for members in MEMBERS:
                cfg = ClusterConfig(flavor=flavor, members=members, workers=WORKERS,
                                    durable=durability == "durable")
                s = sustained(txns, cfg, prof, seconds=SECONDS, warmup=WARMUP, steps=STEPS)
                rows.append({"flavor": flavor, "durability": durability, "members": members,
                             "sustained": round(s.sustained), "next_rate": round(s.next_rate)})
    return {"profile": prof.name, "machine": prof.machine, "cores": prof.cores,
            "transactions_used": len(txns), "workers": WORKERS, "rows": rows,
            "member_scores": scores,
            "text": (f"Sustained throughput (write-sets/s every member keeps up with, flow "
                     f"control included) of this trace's first {len(txns)} transactions from one "
                     f"writer with 32 clients, {WORKERS} applier threads, default flow control, "
                     f"on the cluster profile {prof.name} ({prof.cores} cores shared by every "
                     f"member; {prof.machine}). A short search (1.5 simulated seconds a run, "
                     f"a 5-step bisection): each figure is the highest rate kept up, the next "
                     f"rate tried the upper end; `commitsched cluster TRACE "
                     f"--members 3,5,9 --durability durable,relaxed --workers {WORKERS}` runs "
                     f"the full one (docs/certification.md).")}


def member_table(section: dict) -> tuple[list[str], list[list[str]]]:
    rows = section.get("member_scores") or []
    ws = sorted({r["workers"] for r in rows})
    head = ["scheduler"] + [f"W={w}" for w in ws]
    body = []
    for name in dict.fromkeys(r["scheduler"] for r in rows):
        got = {r["workers"]: r["speedup"] for r in rows if r["scheduler"] == name}
        body.append([name] + [f"{got[w]:.2f}" if got.get(w) is not None else "-" for w in ws])
    return head, body


def cluster_table(section: dict) -> tuple[list[str], list[list[str]]]:
    head = ["cluster", "durability"] + [f"{m} members" for m in MEMBERS]
    rows = []
    for flavor in FLAVORS:
        for durability in DURABILITIES:
            cells = {r["members"]: r for r in section["rows"]
                     if r["flavor"] == flavor and r["durability"] == durability}
            rows.append([flavor, durability] + [
                f"{cells[m]['sustained']}–{cells[m]['next_rate']}" if m in cells else "-"
                for m in MEMBERS])
    return head, rows
