---------------------------- MODULE MCMariaDBStop ----------------------------
(***************************************************************************)
(* How a MariaDB parallel replica stops on an error (semantics.md §3.4,    *)
(* §3.6; MDEV-12746), with the deadlock kill and retry of MariaDBApplier.  *)
(*                                                                         *)
(* Transactions 1..N of one source group commit, each queued by the driver *)
(* to its own worker thread (conservative mode: one GCO, no speculation,  *)
(* so an error is a real error, not one converted to a deadlock).  The     *)
(* inputs are chosen at Init, once per behaviour: each transaction's row   *)
(* locks ws[t] (exclusive, held until commit; extra replica-only locks    *)
(* included, which is how transactions of one source group conflict on   *)
(* the replica) and err[t]: its execution ends in a non-temporary error   *)
(* (a duplicate key, a row not found: the replica's data differ).         *)
(*                                                                         *)
(* The server (MariaDB sql/rpl_parallel.cc):                               *)
(*  - A failing worker calls signal_error_to_sql_driver_thread            *)
(*    (worker_error, roll back), then finish_event_group: it waits for its *)
(*    predecessor (wait_for_prior_commit), records itself as finished      *)
(*    (last_committed_sub_id), sets stop_on_error_sub_id if unset, and     *)
(*    wakes its successor with the error (wakeup_subsequent_commits).      *)
(*  - A transaction waiting to commit behind it gets ER_PRIOR_COMMIT_FAILED *)
(*    and fails too; a transaction not yet started when stop_on_error_sub_id*)
(*    is at or before its predecessor skips its group (worker_error = 1).  *)
(*  - A transaction killed for retry (thd_rpl_deadlock_check) runs         *)
(*    retry_event_group: it waits for its predecessor to finish            *)
(*    (MDEV-7882), but only registers that wait if the predecessor has not *)
(*    finished yet (register_wait_for_prior_event_group_commit compares    *)
(*    with last_committed_sub_id).  A predecessor that already FAILED      *)
(*    counts as finished, so the wait alone does not see the error: the    *)
(*    retry must check stop_on_error_sub_id itself and fail with           *)
(*    ER_PRIOR_COMMIT_FAILED.  Bug flag retry_ignores_prior_error          *)
(*    (MDEV-12746, the server's DBUG point simulate_mdev_12746) drops that *)
(*    check: the retried transaction executes again, registers no wait,   *)
(*    and commits after a failed predecessor.                              *)
(*                                                                         *)
(* STATE (docs/names.md): tstate[t] "dispatched" (queued to its thread, or *)
(* killed and waiting to Retry), "executing", "ready", "committed",        *)
(* "failing" (worker_error set, rolled back, waiting in                    *)
(* finish_event_group for its predecessor), "failed" (finished with an    *)
(* error).  retry[t]: killed, waiting to Retry.  reg[t]: t registered to  *)
(* wait for t-1's commit (t-1 had not finished when t started or retried). *)
(* lk[k]: the holder of row lock k (0 = free).  stop:                      *)
(* stop_on_error_sub_id (0 = none; the server's ULONGLONG_MAX).            *)
(*                                                                         *)
(* PROPERTIES.  NoCommitAfterFailure: no transaction commits after an      *)
(* earlier one failed (the replica must stop at the failed one, its        *)
(* position before it); CommitOrderPreserved restricted to committed      *)
(* transactions; NoDeadlock: every transaction finishes (the applier      *)
(* stops or completes).  KilledAfterFailureUnreachable (negated           *)
(* reachability) is violated by a state where a killed transaction waits   *)
(* to retry behind one that already failed: the case MDEV-12746 needs      *)
(* does happen in the correct model.                                       *)
(*                                                                         *)
(* ABSTRACTIONS.  No time or costs; one GTID domain, one source group      *)
(* (GCOs, mark_start_commit and speculation are MariaDBApplier.tla's       *)
(* subject); a transaction's locks are taken as in MariaDBApplier (the     *)
(* free ones at Start, the rest at ExecEnd); the error is raised at        *)
(* ExecEnd, once every lock is held; retry limits (slave_transaction_      *)
(* retries) and the driver's own stop (abort_slave: nothing more is        *)
(* queued; here everything is queued already) are not modelled.           *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS N, Keys, retry_ignores_prior_error

VARIABLES ws, err, tstate, retry, reg, lk, stop

inputs == <<ws, err>>
vars == <<ws, err, tstate, retry, reg, lk, stop>>

Txns == 1..N
States == {"dispatched", "executing", "ready", "committed", "failing", "failed"}

Finished(t) == tstate[t] \in {"committed", "failed"}
\* (IF rather than \/: TLC's ENABLED evaluates both disjuncts, and tstate[0].)
PrevFinished(t) == IF t = 1 THEN TRUE ELSE Finished(t - 1)
PrevFailed(t) == IF t = 1 THEN FALSE ELSE tstate[t - 1] = "failed"
\* stop_on_error_sub_id at or before t's predecessor
Stopped(t) == stop # 0 /\ stop < t
Failed(t) == tstate[t] \in {"failing", "failed"}

Release(t) == [k \in Keys |-> IF lk[k] = t THEN 0 ELSE lk[k]]

Init == /\ ws \in [Txns -> SUBSET Keys]
        /\ err \in [Txns -> BOOLEAN]
        /\ tstate = [t \in Txns |-> "dispatched"]
        /\ retry = [t \in Txns |-> FALSE]
        /\ reg = [t \in Txns |-> FALSE]
        /\ lk = [k \in Keys |-> 0]
        /\ stop = 0

\* t begins an execution: registers its wait for t-1 unless t-1 finished, and
\* takes the free locks among its own.
BeginExec(t) ==
    /\ tstate' = [tstate EXCEPT ![t] = "executing"]
    /\ reg' = [reg EXCEPT ![t] = ~PrevFinished(t)]
    /\ lk' = [k \in Keys |-> IF k \in ws[t] /\ lk[k] = 0 THEN t ELSE lk[k]]

\* The worker picks t up (handle_rpl_parallel_thread): it skips the group if an
\* earlier transaction failed and finished (stop_on_error_sub_id <= t - 1).
Start(t) ==
    /\ tstate[t] = "dispatched"
    /\ ~retry[t]
    /\ IF Stopped(t)
       THEN /\ tstate' = [tstate EXCEPT ![t] = "failing"]
            /\ UNCHANGED <<reg, lk>>
       ELSE BeginExec(t)
    /\ UNCHANGED <<inputs, retry, stop>>

\* t reaches its XID: takes the remaining locks; an erroring t fails here
\* (signal_error_to_sql_driver_thread: worker_error, roll back).
ExecEnd(t) ==
    /\ tstate[t] = "executing"
    /\ \A k \in ws[t] : lk[k] \in {0, t}
    /\ IF err[t]
       THEN /\ tstate' = [tstate EXCEPT ![t] = "failing"]
            /\ lk' = Release(t)
       ELSE /\ tstate' = [tstate EXCEPT ![t] = "ready"]
            /\ lk' = [k \in Keys |-> IF k \in ws[t] THEN t ELSE lk[k]]
    /\ UNCHANGED <<inputs, retry, reg, stop>>

\* wait_for_prior_commit inside the commit: a registered wait ends when t-1
\* finishes, with ER_PRIOR_COMMIT_FAILED if t-1 failed (t then fails and,
\* its predecessor finished, finishes at once).  Without a registered wait
\* (t-1 had finished when t started) t commits.
Commit(t) ==
    /\ tstate[t] = "ready"
    /\ PrevFinished(t)
    /\ tstate' = [tstate EXCEPT ![t] =
                     IF reg[t] /\ PrevFailed(t) THEN "failed" ELSE "committed"]
    /\ reg' = [reg EXCEPT ![t] = FALSE]    \* the wait is consumed
    /\ lk' = Release(t)
    /\ UNCHANGED <<inputs, retry, stop>>

\* finish_event_group of a failing t: after its predecessor finished, t is
\* finished and the first failure sets stop_on_error_sub_id.
Finish(t) ==
    /\ tstate[t] = "failing"
    /\ PrevFinished(t)
    /\ tstate' = [tstate EXCEPT ![t] = "failed"]
    /\ stop' = IF stop = 0 THEN t ELSE stop
    /\ reg' = [reg EXCEPT ![t] = FALSE]    \* the wait is consumed
    /\ UNCHANGED <<inputs, retry, lk>>

\* thd_rpl_deadlock_check: an earlier executing t waits for a lock held by u.
Kill(u) ==
    /\ tstate[u] \in {"executing", "ready"}
    /\ \E t \in 1..(u - 1) : tstate[t] = "executing" /\ \E k \in ws[t] : lk[k] = u
    /\ tstate' = [tstate EXCEPT ![u] = "dispatched"]
    /\ retry' = [retry EXCEPT ![u] = TRUE]
    /\ reg' = [reg EXCEPT ![u] = FALSE]    \* unregister_wait_for_prior_commit
    /\ lk' = Release(u)
    /\ UNCHANGED <<inputs, stop>>

\* retry_event_group: after its predecessor finished (MDEV-7882) u executes
\* again, unless an earlier transaction failed: then ER_PRIOR_COMMIT_FAILED.
\* Bug retry_ignores_prior_error: that check is missing.
Retry(u) ==
    /\ tstate[u] = "dispatched"
    /\ retry[u]
    /\ PrevFinished(u)
    /\ retry' = [retry EXCEPT ![u] = FALSE]
    /\ IF Stopped(u) /\ ~retry_ignores_prior_error
       THEN /\ tstate' = [tstate EXCEPT ![u] = "failed"]
            /\ UNCHANGED <<reg, lk>>
       ELSE BeginExec(u)
    /\ UNCHANGED <<inputs, stop>>

Next == \E t \in Txns :
          Start(t) \/ ExecEnd(t) \/ Commit(t) \/ Finish(t) \/ Kill(t) \/ Retry(t)

Spec == Init /\ [][Next]_vars

AllFinished == \A t \in Txns : Finished(t)

-----------------------------------------------------------------------------
(* Properties *)

TypeOK ==
    /\ ws \in [Txns -> SUBSET Keys]
    /\ err \in [Txns -> BOOLEAN]
    /\ tstate \in [Txns -> States]
    /\ retry \in [Txns -> BOOLEAN]
    /\ reg \in [Txns -> BOOLEAN]
    /\ lk \in [Keys -> 0..N]
    /\ stop \in 0..N

NoCommitAfterFailure ==
    \A i, j \in Txns : i < j /\ Failed(i) => tstate[j] # "committed"

CommitOrderPreserved ==
    \A t \in Txns : tstate[t] = "committed" => \A u \in 1..(t - 1) : tstate[u] = "committed"

NoDeadlock == ~AllFinished => ENABLED Next

\* Reachability (negated): a killed transaction never waits to retry behind
\* one that already failed.
KilledAfterFailureUnreachable ==
    ~\E i, j \in Txns : i < j /\ tstate[i] = "failed" /\ retry[j]
=============================================================================
