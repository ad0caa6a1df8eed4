"""The bug catalogue (design §7): each entry is a flag of the Python model (`bugs=`, CLI
`--inject-bug NAME`) and a `*_bug.cfg` of the specs, with the property it must violate."""
from __future__ import annotations

# id -> (where it lives, the mutation, the properties it must violate)
CATALOGUE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "lwm_off_by_one": ("mysql applier", "start when last_committed <= lwm + 1",
                       ("DependenciesRespected", "NoConflictingOverlap")),
    "lwm_not_prefix": ("mysql applier", "lwm = highest committed, not the committed prefix",
                       ("NoConflictingOverlap",)),
    "rotation_ignored": ("mysql applier", "compare sequence numbers across binlog files",
                         ("NoConflictingOverlap",)),
    "commit_order_unenforced": ("mysql applier", "preserve-commit-order flag ignored",
                                ("CommitOrderPreserved",)),
    "victim_wakeup_lost": ("mysql applier",
                           "a commit-order deadlock victim already waiting for its turn to commit "
                           "is not woken (lost wake-up: MDEV-7326/7847, MySQL Bug #87796)",
                           ("NoDeadlock",)),
    "ticket_overflow": ("mysql applier",
                        "the commit-order ticket wraps (32 bits) and a transaction already "
                        "waiting for its turn is never granted it (MySQL Bug #103636)",
                        ("NoDeadlock",)),
    "history_evict_no_floor": ("writeset tracker",
                               "writeset history evicts entries without raising the floor",
                               ("TrackerSoundness",)),
    "ddl_not_isolated": ("writeset tracker", "empty-writeset/DDL transaction treated as independent",
                         ("TrackerSoundness",)),
    "unique_keys_ignored": ("writeset tracker", "only PRIMARY hashed (MySQL Bug #86078 family)",
                            ("TrackerSoundness",)),
    "before_image_ignored": ("writeset tracker", "UPDATE hashes only its after image",
                             ("TrackerSoundness",)),
    "session_order_dropped": ("writeset_session tracker", "writeset_session without the session rule",
                              ("SessionOrder",)),
    "group_not_split_on_wait": ("slave_group_commit tracker",
                                "slave group commit keeps a waiting transaction in the group",
                                ("GroupConflictFree",)),
    "gco_start_on_exec": ("mariadb applier",
                          "next group starts when the previous group started executing",
                          ("NoConflictingOverlap",)),
    "optimistic_no_kill": ("mariadb applier", "optimistic mode without killing the later lock holder",
                           ("NoDeadlock",)),
    "admin_barrier_missing": ("source / writeset tracker",
                              "statements that release locks early get ordinary timestamps",
                              ("NoConflictingOverlap",)),
    "retry_ignores_prior_error": ("mariadb applier (stop on error)",
                                  "a transaction retried after a deadlock kill does not check "
                                  "that an earlier one already failed, and commits although "
                                  "the replica must stop (MDEV-12746)",
                                  ("NoCommitAfterFailure",)),
    # certification-based clusters (docs/certification.md)
    "cert_purge_past_safe": ("galera certifier (cluster)",
                             "the certification index is purged up to the member's own "
                             "committed prefix (apply_monitor_.last_left()) instead of the "
                             "safe-to-discard seqno: a write-set that saw less is certified "
                             "against an index that lost its conflict (Galera #733, "
                             "codership/galera commit 85a48720)",
                             ("NoLostUpdate",)),
    "failed_ws_commits_early": ("galera applier (cluster)",
                                "a write-set that failed certification finishes (checkpoints "
                                "its XID) before the write-sets ahead of it committed "
                                "(MDEV-24327)",
                                ("CommitOrderPreserved",)),
    "fc_stop_mark_late": ("galera flow control (cluster)",
                          "the FC_STOP decision is taken under the receive queue's lock but "
                          "stop_sent is marked only when the STOP is sent: an applier that "
                          "drains the queue in between sends no CONT, and the stopped group "
                          "never goes on (PXC-4453, percona/galera pull request 283)",
                          ("NoDeadlock",)),
}

# Entries the scheduler simulator cannot inject (it has no error path: every transaction it
# applies succeeds), with where their Python side lives instead.
NOT_IN_SIMULATOR: dict[str, str] = {
    "retry_ignores_prior_error":
        "it needs a transaction that fails with an error, which the scheduler simulator does "
        "not model; its models are specs/MCMariaDBStop.tla and model/stop_mariadb.py "
        "(python -m commitsched.stop_mariadb --inject-bug retry_ignores_prior_error)",
    **{bug: "it is a bug of a certification-based cluster, which the replica simulator does "
            "not model; its models are specs/Certification.tla or specs/FlowControl.tla and "
            "model/steps_certification.py or model/flow_control.py; the cluster simulator takes "
            f"it: commitsched cluster TRACE --inject-bug {bug}"
       for bug in ("cert_purge_past_safe", "failed_ws_commits_early", "fc_stop_mark_late")},
}


class UnknownBug(ValueError):
    pass


class NotInSimulator(UnknownBug):
    """A catalogue entry that the scheduler simulator cannot inject."""


def check_bugs(names, *, simulator: bool = True) -> frozenset[str]:
    """The named catalogue entries; with `simulator` (flags for the scheduler simulator) an
    entry of NOT_IN_SIMULATOR is refused with where it can be checked."""
    bugs = frozenset(names or ())
    unknown = bugs - CATALOGUE.keys()
    if unknown:
        raise UnknownBug(f"unknown bug {', '.join(sorted(unknown))}; the catalogue: "
                         f"{', '.join(CATALOGUE)}")
    spec_only = sorted(bugs & NOT_IN_SIMULATOR.keys()) if simulator else []
    if spec_only:
        raise NotInSimulator("; ".join(f"bug {b} cannot be injected into the scheduler "
                                       f"simulator: {NOT_IN_SIMULATOR[b]}" for b in spec_only))
    return bugs
