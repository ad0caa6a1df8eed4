--------------------------- MODULE MCWriteSetMySQL ---------------------------
(***************************************************************************)
(* End to end: the WRITESET tracker (WriteSet.tla) feeds the MySQL replica  *)
(* applier (MySQLApplier.tla, reused through INSTANCE, not copied).  First  *)
(* the source flushes all N transactions (WriteSet's Flush / Rotate), then  *)
(* the replica applies the binlog the tracker wrote: lc, sn, file as        *)
(* written, and as the applier's write set                                  *)
(*   - the true index entries of t (WriteSet!TrueWS),                       *)
(*   - every key when t is DDL or an FK-parent write (it conflicts with     *)
(*     everything: on the replica it must not overlap any row writer),      *)
(*   - under WRITESET_SESSION also a per-session key, so that two           *)
(*     transactions of one session count as conflicting, as in the          *)
(*     tracker's Conflict.                                                  *)
(* The annotation is fixed before the applier moves (the phase split), as   *)
(* MySQLApplier's interface requires.                                      *)
(* Checks the applier's properties on every binlog the tracker can write,   *)
(* and the tracker's own properties along the way.                          *)
(***************************************************************************)
EXTENDS Naturals, TLC

CONSTANTS N, Pks, Uks, Sessions, HistorySize, MaxFiles, MaxRows, OpKinds,
          TxnKinds, Session,
          history_evict_no_floor, ddl_not_isolated, unique_keys_ignored,
          before_image_ignored, session_order_dropped,
          Workers, CheckpointGroup, PreserveCommitOrder,
          lwm_off_by_one, lwm_not_prefix, rotation_ignored,
          commit_order_unenforced

VARIABLES next, txn, co, lc, sn, file, cause, history, hstart, offset,
          curFile, sessLast
VARIABLES tstate, worker, db, rd

W == INSTANCE WriteSet

SessionKey(s) == <<"SESSION", s>>
AKeys == W!AllEntries \cup {SessionKey(s) : s \in Sessions}
AWs == [t \in 1..N |->
          IF t >= next THEN {}
          ELSE IF W!Isolating(txn[t]) THEN AKeys
          ELSE W!TrueWS(txn[t]) \cup (IF Session THEN {SessionKey(txn[t].ses)} ELSE {})]

A == INSTANCE MySQLApplier WITH Keys <- AKeys, ws <- AWs, xl <- [t \in 1..N |-> {}],
                                victim_wakeup_lost <- FALSE, TicketWrap <- 0,
                                ticket_overflow <- FALSE

\* Spelled out: TLC cannot evaluate UNCHANGED of an instanced tuple under ENABLED.
tvars == <<next, txn, co, lc, sn, file, cause, history, hstart, offset,
           curFile, sessLast>>
avars == <<tstate, worker, db, rd>>
vars == <<tvars, avars>>

Init == W!Init /\ A!AInit
Next == \/ \E k \in TxnKinds, s \in Sessions : W!FlushAs(k, s) /\ UNCHANGED avars
        \/ W!Rotate /\ UNCHANGED avars
        \/ W!Done /\ A!ANext /\ UNCHANGED tvars
Spec == Init /\ [][Next]_vars

AllDone == W!Done /\ A!AllCommitted

TypeOK == W!TypeOK /\ A!TypeOK
TrackerSoundness == W!TrackerSoundness
SessionOrder == W!SessionOrder
NoConflictingOverlap == A!NoConflictingOverlap
DependenciesRespected == A!DependenciesRespected
SerialEquivalence == A!SerialEquivalence
CommitOrderPreserved == A!CommitOrderPreserved
\* Run TLC with -deadlock: terminal all-committed states are fine.
NoDeadlock == ~AllDone => ENABLED Next
\* Negation of ParallelismReachable end to end: the replica never runs two
\* transactions at once.  Must be violated.
NeverParallel == A!NeverParallel

Symm == Permutations(Pks) \cup Permutations(Uks) \cup Permutations(Sessions)
=============================================================================
