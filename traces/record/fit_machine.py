"""Fit a machine profile's apply-pipeline terms from a machine's measured replica runs.

The simulator's stages (docs/model.md, "The apply pipeline") have a few costs that no serial run
shows: the binlog group sync and the redo flush (amortised over groups in parallel mode), the
driver's time per transaction, per binlog event and per event per extra thread, the group-commit
leader's serial work per member and per byte, the wake-up latency of a waiting thread, and the
worker's coordination work per transaction on its path. They are fitted here by minimising the mean |log(predicted /
measured)| speedup over the given configurations (scipy's Nelder-Mead on log-parameters). The
execution cost is never free: it is solved from the serial applies (per transaction and per
event when two workloads of different sizes are given, per transaction otherwise), so the model's
serial replay equals the measured serial apply.
"""
from __future__ import annotations

import math
import os
import statistics
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from record import _import_importers  # noqa: E402

_import_importers()
from commitsched.profiles import Profile, txn_events  # noqa: E402
from commitsched.schedulers import run_scheduler  # noqa: E402
from commitsched.trace import load_trace  # noqa: E402

# The fitted terms, in the order of the parameter vector; their starting points (µs).
TERMS = ("sync", "commit_default", "dispatch", "dispatch_event", "dispatch_thread",
         "commit_serial", "commit_byte", "wakeup", "coordination")
# Where the search starts. Nelder-Mead over the simulator finds local optima: from the generic
# COLD start a 250-evaluation search on both replica16 workloads stalled at a mean |log error|
# of 0.29, from WARM (an earlier search's optimum, itself from COLD with other settings) at 0.05.
# The full fit starts WARM; the cross-validation folds start COLD, so that nothing fitted on
# the held-out workload reaches them.
COLD = (25.0, 15.0, 3.0, 1.0, 0.1, 5.0, 0.002, 5.0, 10.0)
WARM = (56.3, 6.75, 2.82, 1.0, 0.234, 4.82, 0.0201, 4.48, 0.75)
START = WARM


class Workload:
    """A trace (optionally its first `limit` transactions) with its measured serial time."""

    def __init__(self, name: str, path: str, serial_s: float, limit: int | None = None):
        self.name = name
        txns = load_trace(path).txns
        self.full_count = len(txns)
        self.txns = txns[:limit] if limit else txns
        self.serial_us = serial_s * 1e6 / self.full_count     # per transaction
        self.mean_events = statistics.fmean(txn_events(t) for t in self.txns)


def makespan(txns, scheduler: str, workers: int, profile: Profile) -> float:
    end = 0.0

    def sink(run):
        nonlocal end
        end = max(end, run.commit)
    run_scheduler(scheduler, iter(txns), workers, profile, sink)
    return end


def with_exec(profile: Profile, workloads: list[Workload]) -> Profile | None:
    """`profile` with `exec_default` (and `exec_event` when two workloads differ in size) solved
    so that the serial replay takes each workload's measured serial time; None when that needs
    a negative execution cost (the other terms already exceed the serial time)."""
    def overhead(w):   # the serial replay's per-transaction cost besides execution
        return (profile.dispatch + profile.dispatch_event * w.mean_events
                + profile.commit_default + profile.sync)
    if len(workloads) >= 2:
        a, b = sorted(workloads[:2], key=lambda w: w.mean_events)
        if b.mean_events - a.mean_events > 0.5:
            slope = ((b.serial_us - overhead(b)) - (a.serial_us - overhead(a))) / (
                b.mean_events - a.mean_events)
            base = a.serial_us - overhead(a) - slope * a.mean_events
            if slope < 0 or base < 0:
                return None
            return replace(profile, exec_default=base, exec_event=slope)
    w = workloads[0]
    base = w.serial_us - overhead(w)
    return replace(profile, exec_default=base, exec_event=0.0) if base >= 0 else None


def predict(workload: Workload, profile: Profile, mode: str, workers: int) -> float:
    """The model's speedup of `commit_id+mariadb_<mode>` at W = workers over its serial replay."""
    serial = makespan(workload.txns, "serial", 1, profile)
    return serial / makespan(workload.txns, f"commit_id+mariadb_{mode}", workers, profile)


def profile_from(theta, base: Profile) -> Profile:
    return replace(base, **{name: float(v) for name, v in zip(TERMS, theta)})


def fit(base: Profile, workloads: list[Workload], measured: dict, configs: list[tuple],
        maxiter: int = 200, progress=lambda s: None, start=START) -> tuple[Profile, float]:
    """The fitted profile (exec solved per `with_exec`) and its mean |log error| on `configs`
    ((workload name, mode, threads), measured[...]["median"] the target speedup)."""
    from scipy.optimize import minimize
    by_name = {w.name: w for w in workloads}
    evals = 0

    def loss(x):
        nonlocal evals
        evals += 1
        prof = with_exec(profile_from([math.exp(v) for v in x], base), workloads)
        if prof is None:
            return 10.0
        errs = [abs(math.log(predict(by_name[w], prof, mode, n) / measured[(w, mode, n)]["median"]))
                for w, mode, n in configs]
        value = statistics.fmean(errs)
        if evals % 20 == 0:
            progress(f"  fit: {evals} evaluations, mean |log error| {value:.3f}")
        return value

    x0 = [math.log(v) for v in start]
    res = minimize(loss, x0, method="Nelder-Mead",
                   options={"maxiter": maxiter, "xatol": 0.05, "fatol": 1e-3})
    prof = with_exec(profile_from([math.exp(v) for v in res.x], base), workloads)
    return prof, float(res.fun)
