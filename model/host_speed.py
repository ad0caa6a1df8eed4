"""How fast the replica's host runs a fixed piece of CPU work, now (docs/lag.md, "The host's
pace").

A shared machine (a cloud VM, this project's own) runs the same work at a pace that drifts by
tens of percent over an hour: neighbours share its caches and memory, its clock moves. A
profile's CPU terms hold for the host's pace while its windows were read; a prediction for
another hour holds for that hour's pace. `host_loop` times a fixed loop inside the replica
server itself (`SELECT BENCHMARK(...)`, MySQL and MariaDB alike, read-only, no privilege), so it
measures the CPU the server's threads get, wherever the server runs: the ratio of two readings is
how much slower (> 1) or faster the host is at the second.

Two loops, because a host can slow one kind of work and not the other:
- `compute`: SHA-256 of a random number (RAND() keeps the server from computing it once), in
  the core's registers and first-level cache;
- `rows`: a scan of `mysql.help_topic` (about a thousand rows that every MySQL and MariaDB
  server has and nothing writes) through the storage engine's row and handler code, as a replica's
  own work does; RAND() in its condition makes the subquery run at every iteration.

How much of the loop's drift the replica's own work sees is `PACE_ELASTICITY`: the CPU terms
move by (reading now / reading at calibration) ** PACE_ELASTICITY (`at_pace`). The loop swings
more than the appliers' CPU does (its own noise, and work that leans on other parts of the
core), so the power is below 1; it is fitted on runs that no prediction of it is checked on
(traces/record/host_pace.py, `make host-pace`).

A reading is timed on the client (the round trip, well under a millisecond, is a few per cent of
the ~50 ms a round takes). It is meant to be taken while the replica is idle (its SQL thread
stopped, or caught up): on a busy replica the loop shares the cores with the appliers and reads
their load as well.
"""
from __future__ import annotations

import statistics
import time

from .replica_live import query

LOOPS = {
    # iterations a round, and the expression; ~30-60 ms a round on a 2020s x86 core
    "compute": (60_000, "SHA2(RAND(), 256)"),
    "rows": (150, "(SELECT MAX(help_topic_id) FROM mysql.help_topic "
                  "WHERE help_category_id > RAND())"),
}


# the loop a prediction scales by, and how far the CPU terms follow it: the least-squares slope
# of log(applier CPU per transaction) on log(the `rows` loop read just before the run), each
# durability about its own mean, over the 12 serial runs of traces/calibration/host_pace_dev
# (lag-check rig, this project's 2-core VM, 2026-11-27 21:41-21:50 UTC; `make host-pace`
# computes it again from them and tests/test_host_speed.py checks that it is this)
PACE_LOOP = "rows"
PACE_ELASTICITY = 0.21


def host_loop(conn, rounds: int = 5, clock=time.perf_counter) -> dict:
    """Each loop's µs an iteration: the median of `rounds` rounds back to back, and the rounds.
    (Rounds spread over seconds followed the appliers' CPU worse: host_pace_dev2.)"""
    out = {}
    for kind, (n, expr) in LOOPS.items():
        times = []
        for _ in range(rounds):
            t0 = clock()
            query(conn, f"SELECT BENCHMARK({n}, {expr})")
            times.append((clock() - t0) * 1e6 / n)
        out[kind] = {"us": round(statistics.median(times), 4),
                     "rounds_us": [round(t, 4) for t in times]}
    return out


def pace_us(reading: dict | None, kind: str = PACE_LOOP) -> float | None:
    """The loop's µs an iteration in one `host_loop` reading (None: no such reading)."""
    try:
        v = float(reading[kind]["us"])
    except (KeyError, TypeError, ValueError):
        return None
    return v if v > 0 else None


def pace_factor(now_us: float, then_us: float, elasticity: float = PACE_ELASTICITY) -> float:
    """What the CPU terms fitted at `then_us` are multiplied by at `now_us`."""
    return (now_us / then_us) ** elasticity
