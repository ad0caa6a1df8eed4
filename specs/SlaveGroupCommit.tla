-------------------------- MODULE SlaveGroupCommit --------------------------
(***************************************************************************)
(* "Slave group commit" (semantics.md §3.8, §3.2): an intermediate MariaDB *)
(* replica of a source without parallelism information applies            *)
(* transactions 1..N serially and delays each binlog group commit          *)
(* (binlog_commit_wait_count / _usec), so its own binlog carries commit    *)
(* groups (commit_id) that a downstream MariaDB replica applies in         *)
(* parallel, in conservative or optimistic mode (MariaDBApplier.tla).      *)
(*                                                                         *)
(* INTERMEDIATE REPLICA                                                    *)
(*   Each transaction's kind is chosen when the intermediate executes it   *)
(*   (lazily, so the initial state is unique): a non-empty write set over  *)
(*   Keys, or (AllowDDL) a DDL, which conflicts with everything.           *)
(*   IExec(t)  MDB103 log.cc queue_for_group_commit /                      *)
(*     wait_for_sufficient_commits: with no commit ids upstream every      *)
(*     transaction is its own GCO, so t = iNext starts once t-1 reached    *)
(*     its commit step, i.e. execution is serial; t-1 (and the rest of the *)
(*     open group iOpen..iNext-1) sits in the commit delay.  If t needs a  *)
(*     lock held by a member of the open group (write sets intersect, or   *)
(*     DDL), the has_waiter trigger (binlog_report_wait_for, MDEV-7249)    *)
(*     commits the open group at once; t gets the lock, is flagged         *)
(*     FL_WAITED (trans_did_wait, §3.1) and opens the next group.          *)
(*     Otherwise t joins the open group.  Enabled only while the group     *)
(*     holds fewer than CommitWaitCount transactions: at the count the     *)
(*     leader stops waiting (trigger_count), so the group must commit      *)
(*     before the next transaction can join a group.                       *)
(*     Bug group_not_split_on_wait: t joins the open group even when it    *)
(*     waited (the tracker forgets the MDEV-7249 split and the FL_WAITED  *)
(*     flag, as the Python tracker's mutation does).                       *)
(*   IFlush  the open group commits: the count trigger, or the             *)
(*     binlog_commit_wait_usec timeout, abstracted as "may happen at any   *)
(*     time" (no clocks).  Its members get commit_id = the leader's id     *)
(*     (here the leader's index, standing for its query_id), or 0 for a    *)
(*     singleton group (trx_group_commit_leader writes no commit id then). *)
(*   A transaction enters the downstream relay log once its group has      *)
(*   committed on the intermediate (avail = iOpen - 1), so both replicas   *)
(*   run interleaved.                                                      *)
(*                                                                         *)
(* DOWNSTREAM REPLICA: MariaDBApplier (Dispatch, Start, ExecEnd, Commit,   *)
(*   Kill, Retry; see that module's header: GCO start rule, round-robin    *)
(*   threads, wait_for_prior_commit, row locks, deadlock kill + retry).    *)
(*                                                                         *)
(* ABSTRACTIONS.  No time: the usec timeout is a nondeterministic flush,   *)
(* executions and commits take one step each.  Conflicts are row-lock     *)
(* conflicts on written keys only (reads and gap locks are not modelled). *)
(* A DDL is modelled as taking every key, so on the intermediate it always *)
(* sits in a group of its own (in MariaDB it is written directly, outside  *)
(* the group-commit queue).  Non-transactional DML, FL_ALLOW_PARALLEL      *)
(* off, several domains, FTWRL, retry limits and errors are not modelled. *)
(*                                                                         *)
(* PROPERTIES                                                              *)
(*   TypeOK.                                                               *)
(*   GroupConflictFree: no two transactions of one committed commit group  *)
(*     of the intermediate conflict.                                       *)
(*   TrackerSoundness (group sense): for conflicting i < j (DDL conflicts  *)
(*     with everything), j depends on i, i.e. j is in a later batch        *)
(*     (different commit_id, or none), which the conservative GCO rule     *)
(*     orders after i's commit step.                                       *)
(*   NoConflictingOverlap, CommitOrderPreserved, SerialEquivalence: of the *)
(*     downstream replica, see MariaDBApplier.                             *)
(*   NoDeadlock: while work remains (on either replica) some step is       *)
(*     enabled; checked as an invariant, TLC runs with -deadlock.          *)
(*   EventuallyAllCommitted: under weak fairness of Next, every            *)
(*     transaction commits downstream.  Every step moves some transaction  *)
(*     forward and each transaction is killed at most once (a retried one  *)
(*     has every predecessor committed), so WF of Next suffices.           *)
(*   NeverParallel: negation of ParallelismReachable (two transactions     *)
(*     execute at the same time downstream); must be violated.             *)
(*   NeverKilled: negation of "the optimistic kill happens".               *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS N,                 \* transactions 1..N
          Workers,           \* downstream slave_parallel_threads
          Keys,              \* row keys
          Mode,              \* downstream slave_parallel_mode
          CommitWaitCount,   \* intermediate binlog_commit_wait_count (>= 1)
          AllowDDL,          \* may a transaction be a DDL?
          group_not_split_on_wait, gco_start_on_exec, optimistic_no_kill

ASSUME N \in Nat /\ N >= 1 /\ Workers \in Nat \ {0} /\ CommitWaitCount \in Nat \ {0}
ASSUME Mode \in {"conservative", "optimistic"}

VARIABLES txn,      \* 1..N -> [ddl, ws], chosen by IExec (Unknown before)
          iNext,    \* next transaction the intermediate executes
          iOpen,    \* first transaction of the open group iOpen..iNext-1
          cid,      \* 1..N -> commit_id in the intermediate's binlog
          waited,   \* 1..N -> FL_WAITED in the intermediate's binlog
          tstate, gco, specwait, drv, marked, retry, lk, rd, db, early

ivars == <<txn, iNext, iOpen, cid, waited>>

A == INSTANCE MariaDBApplier WITH avail <- iOpen - 1

\* The applier's variables, spelled out here: TLC 2.18 cannot evaluate
\* UNCHANGED A!avars through the INSTANCE substitution.
avars == <<tstate, gco, specwait, drv, marked, retry, lk, rd, db, early>>
vars == <<ivars, avars>>

Txns == 1..N
Conflict(i, j) == A!Conflict(i, j)

TxnKinds ==
    {[ddl |-> FALSE, ws |-> s] : s \in (SUBSET Keys) \ {{}}}
    \cup (IF AllowDDL THEN {[ddl |-> TRUE, ws |-> Keys]} ELSE {})

\* Kind of a transaction the intermediate has not executed yet.
Unknown == [ddl |-> FALSE, ws |-> {}]

Init ==
    /\ txn = [t \in Txns |-> Unknown]
    /\ iNext = 1
    /\ iOpen = 1
    /\ cid = [t \in Txns |-> 0]
    /\ waited = [t \in Txns |-> FALSE]
    /\ A!AInit

\* The open group iOpen..iNext-1 commits.
CloseGroup ==
    cid' = [u \in Txns |->
              IF iOpen <= u /\ u < iNext
              THEN IF iNext - iOpen = 1 THEN 0 ELSE iOpen
              ELSE cid[u]]

IExec(t) ==
    /\ t = iNext
    /\ t <= N
    /\ iNext - iOpen < CommitWaitCount
    /\ \E kind \in TxnKinds :
          LET wait == \E u \in iOpen..(iNext - 1) :
                         kind.ddl \/ txn[u].ddl \/ kind.ws \cap txn[u].ws # {}
          IN /\ txn' = [txn EXCEPT ![t] = kind]
             /\ IF wait /\ ~group_not_split_on_wait
                THEN /\ CloseGroup /\ iOpen' = t   \* has_waiter: commit now
                     /\ waited' = [waited EXCEPT ![t] = TRUE]
                ELSE UNCHANGED <<cid, iOpen, waited>>
    /\ iNext' = t + 1

IFlush ==
    /\ iOpen < iNext
    /\ CloseGroup
    /\ iOpen' = iNext
    /\ UNCHANGED <<txn, iNext, waited>>

INext == (\E t \in Txns : IExec(t)) \/ IFlush

Next ==
    \/ INext /\ UNCHANGED avars
    \/ A!ANext /\ UNCHANGED ivars

Spec == Init /\ [][Next]_vars /\ WF_vars(Next)

Done == iNext = N + 1 /\ iOpen = iNext /\ A!AllCommitted

-----------------------------------------------------------------------------
(* Properties *)

TypeOK ==
    /\ txn \in [Txns -> TxnKinds \cup {Unknown}]
    /\ \A t \in Txns : (txn[t] = Unknown) <=> t >= iNext
    /\ iNext \in 1..(N + 1)
    /\ iOpen \in 1..iNext
    /\ cid \in [Txns -> 0..N]
    /\ waited \in [Txns -> BOOLEAN]
    /\ A!ATypeOK

\* Transactions whose group committed on the intermediate.
Out == 1..(iOpen - 1)
SameGroup(i, j) == cid[i] # 0 /\ cid[i] = cid[j]

GroupConflictFree ==
    \A i, j \in Out : (i < j /\ SameGroup(i, j)) => ~Conflict(i, j)

DependsOn(j, i) == i < j /\ ~SameGroup(i, j)

TrackerSoundness ==
    \A i, j \in Out : (i < j /\ Conflict(i, j)) => DependsOn(j, i)

NoConflictingOverlap == A!NoConflictingOverlap
CommitOrderPreserved == A!CommitOrderPreserved
SerialEquivalence == A!SerialEquivalence

NoDeadlock == ~Done => ENABLED Next

EventuallyAllCommitted == <>A!AllCommitted

NeverParallel == A!NeverParallel
NeverKilled == A!NeverKilled

\* Symmetry of the keys (sound for the safety properties: nothing names a key).
KeySymmetry == Permutations(Keys)
=============================================================================
