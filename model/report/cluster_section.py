"""The report's certification-based cluster section (docs/certification.md): the sustained
throughput of the trace's workload on a Galera and a Group Replication cluster, by member count
and durability, from the cluster simulator with the measured cluster profile. A short search
(a sample of the trace, short simulated runs, a coarse bisection): the section says so, and
`commitsched cluster` gives the full one."""
from __future__ import annotations

from itertools import islice

MEMBERS = (3, 9)
FLAVORS = ("galera", "group_replication")
DURABILITIES = ("durable", "relaxed")
SAMPLE, SECONDS, WARMUP, STEPS, WORKERS = 500, 0.5, 0.2, 4, 4


def cluster_section(trace, profile_name: str = "galera-2core") -> dict:
    from ..certification_throughput import ClusterConfig, ClusterError, get_profile, sustained
    try:
        prof = get_profile(profile_name)
    except ClusterError as e:
        return {"skipped": str(e)}
    txns = list(islice(trace.txns(), SAMPLE))
    if not txns:
        return {"skipped": "the trace has no transaction"}
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
            "sample": len(txns), "workers": WORKERS, "rows": rows,
            "text": (f"Sustained throughput (write-sets/s every member keeps up with, flow "
                     f"control included) of this trace's first {len(txns)} transactions from one "
                     f"writer with 32 clients, {WORKERS} applier threads, default flow control, "
                     f"on the cluster profile {prof.name} ({prof.cores} cores shared by every "
                     f"member; {prof.machine}). A short search (half a simulated second a run, "
                     f"a 4-step bisection): each figure is the highest rate kept up, the next "
                     f"rate tried the upper end; `commitsched cluster TRACE "
                     f"--members 3,5,9 --durability durable,relaxed --workers {WORKERS}` runs "
                     f"the full one (docs/certification.md).")}


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
