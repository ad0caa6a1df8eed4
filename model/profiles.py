"""Cost profiles (design §5): what a transaction costs on a replica when the trace does not say.

Times are in microseconds. A trace's own `exec` / `commit` costs always win over a profile's
defaults. Every profile carries its provenance: where its numbers come from. The `durable` and
`relaxed` defaults are assumptions; `durable-mariadb` and `relaxed-mariadb` are fitted on a real
MariaDB replica and loaded from `profiles_fitted.json` (docs/calibration.md). Each profile's
provenance says which, and `score` prints it, so no figure passes for measured when it is not.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class Profile:
    name: str
    exec_default: float     # execution cost of a transaction whose trace line has no `exec`
    commit_default: float   # its own commit step (prepare, engine commit) when no `commit`
    sync: float             # one durable sync per group of commits made together
    dispatch: float         # coordinator / driver time to read and hand out one transaction
    retry: float            # rollback and re-read cost of one retry (on top of re-executing)
    provenance: str
    cores: int | None = None  # replica CPU cores executing needs; None: one per worker
    # What the calibration found (docs/calibration.md), all inactive at their defaults. With
    # cores modelled: `sync_cpu` of each group sync and `commit_cpu` of each commit step run on
    # a core (the fsync path costs CPU); `dispatch` runs on a core (MariaDB driver).
    # `commit_grouped`: the commit step's sync is InnoDB's redo-log group flush, one at a time
    # covering every waiting request, not a private delay (MariaDB). `coordination`: CPU each
    # transaction costs its worker in parallel mode on top of `exec` (MariaDB: queueing, GCO
    # and wait_for_prior_commit hand-offs), never paid by the serial replay.
    sync_cpu: float = 0.0
    commit_cpu: float = 0.0
    commit_grouped: bool = False
    coordination: float = 0.0
    # CPU the server's other threads (purge, page cleaner, binlog background thread) spend per
    # committed transaction: with cores modelled it occupies a core after each commit (MariaDB).
    background_cpu: float = 0.0
    # Part of `exec` that a parallel MariaDB replica's group-commit leader does for each member
    # one after the other (writing its binlog events, committing it in order): in parallel mode
    # it moves out of the worker's `exec` into the leader's serial work (on a core with cores).
    commit_serial: float = 0.0

    def exec_cost(self, txn) -> float:
        return self.exec_default if txn.exec is None else txn.exec

    def commit_cost(self, txn) -> float:
        return self.commit_default if txn.commit is None else txn.commit

    def to_json(self) -> dict:
        return asdict(self)


PROFILES: dict[str, Profile] = {
    p.name: p for p in (
        Profile("ideal", exec_default=1.0, commit_default=0.0, sync=0.0, dispatch=0.0, retry=0.0,
                provenance="by definition: only the trace's own exec/commit costs count (a "
                           "transaction without `exec` costs 1 unit); no sync, no dispatch cost; "
                           "for hand-checked examples"),
        Profile("durable", exec_default=200.0, commit_default=20.0, sync=1000.0, dispatch=5.0,
                retry=50.0,
                provenance="assumed defaults, NOT calibrated: sync_binlog=1 and "
                           "innodb_flush_log_at_trx_commit=1 modelled as one 1 ms sync per group "
                           "commit; replace by a profile fitted on a real replica"),
        Profile("relaxed", exec_default=200.0, commit_default=20.0, sync=20.0, dispatch=5.0,
                retry=50.0,
                provenance="assumed defaults, NOT calibrated: sync_binlog=0 and "
                           "innodb_flush_log_at_trx_commit=2 modelled as a 20 us group write "
                           "without fsync; replace by a profile fitted on a real replica"),
    )
}


FITTED_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles_fitted.json")


def load_fitted(path: str = FITTED_PATH) -> list[Profile]:
    """Profiles fitted on a real replica (traces/record/calibrate.py fit, docs/calibration.md);
    stored as data with their provenance. No file: none."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return []
    fields = {f.name for f in dataclasses.fields(Profile)}
    return [Profile(**{k: v for k, v in p.items() if k in fields}) for p in data["profiles"]]


PROFILES.update((p.name, p) for p in load_fitted())


class ProfileError(ValueError):
    pass


def get_profile(name: str, *, cores: int | None = None) -> Profile:
    """A named profile, with its `cores` replaced when given."""
    try:
        profile = PROFILES[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}") from None
    if cores is not None:
        if cores < 1:
            raise ProfileError("cores must be at least 1")
        profile = replace(profile, cores=cores)
    return profile
