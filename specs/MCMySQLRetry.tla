---------------------------- MODULE MCMySQLRetry ----------------------------
(***************************************************************************)
(* Commit-order deadlocks and retries (semantics.md §1.8) in the MySQL     *)
(* applier of MySQLApplier.tla, on every small binlog whose annotation is  *)
(* sound for its write sets but whose transactions lock rows on the        *)
(* replica that the source never locked (xl: gap locks, another plan's     *)
(* index scan).  The source cannot produce xl (LogicalClock.tla takes      *)
(* xl = {}), so here the inputs are chosen at Init, once per behaviour:    *)
(* one binlog file, sequence numbers 1..N, any last_committed below its    *)
(* own, any write sets ws and replica locks xl (disjoint from the         *)
(* transaction's own writes) such that TrackerSoundness holds for ws.      *)
(*                                                                         *)
(* PROPERTIES: the applier's (MySQLApplier.tla): with commit-order         *)
(* deadlocks resolved by rolling the later holder back, the replica still  *)
(* commits everything (NoDeadlock, EventuallyAllCommitted) in order with  *)
(* the serial result.  NoRollback (an action property) is violated by a   *)
(* reachable rollback: the deadlock and its retry really happen.           *)
(* BUG FLAGS victim_wakeup_lost, ticket_overflow: NoDeadlock fails.       *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS N, Workers, Keys, CheckpointGroup, PreserveCommitOrder,
          lwm_off_by_one, lwm_not_prefix, rotation_ignored,
          commit_order_unenforced, victim_wakeup_lost, TicketWrap, ticket_overflow

VARIABLES lc, sn, file, ws, xl, tstate, worker, db, rd

inputs == <<lc, sn, file, ws, xl>>
vars == <<inputs, tstate, worker, db, rd>>

A == INSTANCE MySQLApplier

Txns == 1..N
Sound == \A i, j \in Txns :
           i < j /\ ws[i] \cap ws[j] # {} => lc[j] = 0 \/ i <= lc[j]

Init == /\ sn = [t \in Txns |-> t]
        /\ file = [t \in Txns |-> 1]
        /\ lc \in {f \in [Txns -> 0..(N - 1)] : \A t \in Txns : f[t] < t}
        /\ ws \in [Txns -> SUBSET Keys]
        /\ xl \in [Txns -> SUBSET Keys]
        /\ \A t \in Txns : xl[t] \cap ws[t] = {}
        /\ Sound
        /\ A!AInit

Next == A!ANext /\ UNCHANGED inputs

Spec == Init /\ [][Next]_vars
LiveSpec == Spec /\ WF_vars(Next)

TypeOK == A!TypeOK
NoConflictingOverlap == A!NoConflictingOverlap
CommitOrderPreserved == A!CommitOrderPreserved
DependenciesRespected == A!DependenciesRespected
SerialEquivalence == A!SerialEquivalence
NoDeadlock == A!NoDeadlock
EventuallyAllCommitted == A!EventuallyAllCommitted

\* No started transaction is ever rolled back (its violation: RollbackReachable).
NoRollback == [][\A t \in Txns : A!Active(t) => tstate'[t] # "dispatched"]_vars
=============================================================================
