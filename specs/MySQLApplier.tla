---------------------------- MODULE MySQLApplier ----------------------------
(***************************************************************************)
(* The MySQL multi-threaded replica applier for LOGICAL_CLOCK binlogs      *)
(* (semantics.md §1.4-§1.7): one coordinator dispatches transactions       *)
(* 1..N strictly in relay-log order to a pool of workers.                  *)
(*                                                                         *)
(* This is a reusable module, not a stand-alone spec: the dependency       *)
(* annotation and each transaction's write set come from the module that   *)
(* INSTANCEs it (LogicalClock.tla feeds it every annotation the source can *)
(* produce; WriteSet.tla feeds it the WRITESET tracker's output).          *)
(*                                                                         *)
(* INTERFACE (substitute with INSTANCE ... WITH):                          *)
(*   CONSTANTS N                 transactions 1..N in binlog order         *)
(*             Workers           number of workers, ids 1..Workers         *)
(*             Keys              row keys                                  *)
(*             CheckpointGroup   replica_checkpoint_group (GAQ window)     *)
(*             PreserveCommitOrder   replica_preserve_commit_order         *)
(*             lwm_off_by_one, lwm_not_prefix, rotation_ignored,           *)
(*             TicketWrap    commit-order tickets wrap here (0: never)   *)
(*             commit_order_unenforced, victim_wakeup_lost,              *)
(*             ticket_overflow                                           *)
(*                                       bug flags (FALSE = real server)   *)
(*   VARIABLES lc, sn, file, ws, xl  the annotation, read-only here:       *)
(*             functions 1..N -> Nat (last_committed, sequence_number,     *)
(*             binlog file index), 1..N -> SUBSET Keys (write set) and     *)
(*             1..N -> SUBSET Keys (replica_locks: rows the replica locks  *)
(*             that the source never did, §1.8; {} for all: the replica    *)
(*             takes the source's locks, no commit-order deadlock).        *)
(*             Substitute any state expressions; they must be total on     *)
(*             1..N in every state (use 0 / {} for not-yet-written         *)
(*             entries) and must not change once the applier has moved     *)
(*             (the applier's actions                                      *)
(*             neither prime nor constrain them: the instantiating module  *)
(*             adds UNCHANGED for its own variables).                      *)
(*   VARIABLES tstate, worker, db, rd   the applier's own state            *)
(*   Use: AInit (applier variables only), ANext, avars, the properties.   *)
(*                                                                         *)
(* ACTIONS (docs/names.md):                                                *)
(*   Dispatch(t, w) §1.4-§1.6  t is the next transaction in relay-log      *)
(*       order; w is the lowest-index idle worker (a worker is busy until  *)
(*       its transaction commits, §1.6); t is within CheckpointGroup of    *)
(*       the oldest uncommitted transaction (§1.5); and either t is a      *)
(*       barrier and every earlier transaction committed, or               *)
(*       last_committed <= lwm (or t is the GAQ head).  Barriers (§1.4):   *)
(*       the first transaction, last_committed = 0, a sequence gap, a new  *)
(*       binlog file (rotation), inconsistent timestamps (sn <= lc or sn   *)
(*       not above the previous sn: treated as unknown s = L = 0, so the   *)
(*       next transaction is a barrier too, prev_seq = 0).  The wait for   *)
(*       the lwm happens in the coordinator before dispatch, as in         *)
(*       schedule_next_event, so the start rule is a guard of Dispatch.    *)
(*       lwm = the (effective) sequence_number of the last transaction of  *)
(*       the longest committed prefix, or 0 when that transaction lies in  *)
(*       an earlier binlog file or a barrier dispatched after it is not    *)
(*       yet released (dispatching a barrier resets lwm to 0).             *)
(*   Start(t)    §1.4  t starts (or, after a rollback, retries) applying   *)
(*       on its worker; it reads its keys and locks them.                  *)
(*   ExecEnd(t)  t reached its XID event; its last statement took its      *)
(*       replica_locks xl[t].                                              *)
(*   Row locks (§1.8): only conflicts that involve a replica lock (xl) are *)
(*       modelled; two write sets never meet unless the scheduler broke    *)
(*       its promise (NoConflictingOverlap says).  Start(t) needs ws[t]    *)
(*       free of replica locks, ExecEnd(t) needs xl[t] free of any lock.   *)
(*       An earlier holder is waited for (the step is not enabled).  With  *)
(*       commit order enforced a later holder u would wait for t to commit *)
(*       while t waits for u's lock: Commit_order_manager::                *)
(*       check_and_report_deadlock makes u the victim, so t's step rolls   *)
(*       u back (u returns to "dispatched" on its worker, keeping its      *)
(*       place in the commit order, and retries with Start): the kill and  *)
(*       t's lock grant are one step, as InnoDB grants the released lock   *)
(*       to the waiter.  Without enforced order u commits on its own: t    *)
(*       waits.  replica_transaction_retries (§1.9) is not modelled.      *)
(*   DeadlockVictim(v)  InnoDB's deadlock detector: v is the latest member *)
(*       of a cycle of lock waits (only possible without enforced commit   *)
(*       order); it rolls back to "dispatched" and retries.                *)
(*   Commit(t)   §1.7  t commits and writes its keys; with preserve commit *)
(*       order only once every earlier transaction committed.              *)
(*                                                                         *)
(* ABSTRACTIONS.  Time and costs are absent (every interleaving of the     *)
(* workers is explored).  Per-worker queue and pending-bytes limits (§1.5  *)
(* items 2, 3) are subsumed by "one transaction per worker".  Binlog group *)
(* commit on the replica is not modelled.  Commit-order deadlocks and      *)
(* retries (§1.8) are, for the locks xl the replica takes that the source  *)
(* did not; the retry limit (§1.9) is not.                                 *)
(* The replica data: db[k] is the sequence of transactions that wrote k,   *)
(* in the order their writes landed.  A transaction reads its keys at      *)
(* Start (rd) and at Commit writes Append(value read, t): any lost update  *)
(* or stale read shows up as a value different from serial replay.        *)
(*                                                                         *)
(* PROPERTIES                                                              *)
(*   TypeOK.                                                               *)
(*   NoConflictingOverlap: two transactions whose write sets intersect are *)
(*     never active (started, not committed, i.e. holding row locks) at    *)
(*     the same time.                                                      *)
(*   CommitOrderPreserved: with PreserveCommitOrder, the committed set is  *)
(*     always a prefix of 1..N (commits happen in source order).           *)
(*   DependenciesRespected: a started transaction t has every transaction  *)
(*     of an earlier binlog file, and every transaction of its own file    *)
(*     with sequence_number <= last_committed(t) (all of them when         *)
(*     last_committed(t) = 0), committed.                                  *)
(*   SerialEquivalence: whenever the committed set is a prefix 1..p (in    *)
(*     particular at the end), db equals serial replay of 1..p.            *)
(*   NoDeadlock: while some transaction is uncommitted, some applier step  *)
(*     is enabled.                                                         *)
(*   EventuallyAllCommitted: under weak fairness of ANext every            *)
(*     transaction commits (every step moves a transaction forward, so    *)
(*     WF of the whole relation forces progress until NoDeadlock's        *)
(*     terminal state).                                                    *)
(*   NeverParallel: no two transactions execute at once; its violation is *)
(*     ParallelismReachable (the applier really runs things in parallel). *)
(*                                                                         *)
(* BUG FLAGS (design §7): lwm_off_by_one starts when lc <= lwm + 1;        *)
(* lwm_not_prefix takes lwm = the highest committed sequence_number of the *)
(* file instead of the committed prefix; rotation_ignored compares         *)
(* sequence numbers across files: the lwm is not reset at a rotation, so   *)
(* the sequence_number of the last committed transaction of the previous  *)
(* file satisfies last_committed <= lwm in the new one.  (Dropping only    *)
(* the rotation drain changes nothing: the first transaction of a file has *)
(* lc = 0, itself a barrier.  An applier unaware of files altogether - no  *)
(* drain, consistency checks not skipped after a rotation, lwm across      *)
(* files - is safe as well: the new file's first sequence_number is not    *)
(* above its predecessor's, so it is treated as unknown and the next       *)
(* transaction is a barrier too; TLC found no violation with N = 4 and 2   *)
(* files.  The hazard is the combination modelled here: checks skipped     *)
(* after the rotation but the lwm kept.)  commit_order_unenforced ignores  *)
(* PreserveCommitOrder.  victim_wakeup_lost (MDEV-7326/7847's lost        *)
(* wake-ups on MySQL's side, Bug #87796): a victim waiting for its turn to *)
(* commit (ready) is not woken, so it is waited for: NoDeadlock fails.     *)
(* ticket_overflow (MySQL Bug #103636, fixed 8.0.28): the commit-order     *)
(* sequence number is 32 bits; when it wraps (every TicketWrap-th          *)
(* transaction here, 2^31 in the server), Commit_order_manager::finish_one *)
(* fails to grant the turn to the next transaction if it is already        *)
(* waiting (ready): it sleeps ("asleep") forever; NoDeadlock fails.        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS N, Workers, Keys, CheckpointGroup, PreserveCommitOrder,
          lwm_off_by_one, lwm_not_prefix, rotation_ignored,
          commit_order_unenforced, victim_wakeup_lost, TicketWrap, ticket_overflow

VARIABLES lc, sn, file, ws, xl      \* annotation (input, read-only)
VARIABLES tstate, worker, db, rd    \* applier state

avars == <<tstate, worker, db, rd>>

Txns == 1..N
WorkerIds == 1..Workers
States == {"queued", "dispatched", "executing", "ready", "asleep", "committed"}
\* ready, or (bug ticket_overflow) waiting for a turn that was never granted
Waiting(t) == tstate[t] \in {"ready", "asleep"}
Active(t) == tstate[t] = "executing" \/ Waiting(t)      \* holds its row locks
Committed(t) == tstate[t] = "committed"
NoRead == [k \in Keys |-> <<>>]

Max(S) == IF S = {} THEN 0 ELSE CHOOSE m \in S : \A x \in S : x <= m

\* End of the longest committed prefix (0 if transaction 1 is uncommitted).
Prefix == CHOOSE p \in 0..N : (\A u \in 1..p : Committed(u))
                              /\ (p = N \/ ~Committed(p + 1))

\* The coordinator's view of the annotation (schedule_next_event).
FirstInFile(t) == t = 1 \/ file[t] # file[t - 1]
\* Inconsistent timestamps: treated as unknown (s = L = 0); the checks are
\* skipped for the first transaction after start or rotation.
Unknown(t) == /\ ~FirstInFile(t)
              /\ sn[t] <= lc[t] \/ sn[t] <= sn[t - 1]
EffSeq(t) == IF Unknown(t) THEN 0 ELSE sn[t]
Barrier(t) == \/ FirstInFile(t)
              \/ lc[t] = 0
              \/ Unknown(t)
              \/ EffSeq(t - 1) = 0                 \* prev_seq = 0
              \/ sn[t] > sn[t - 1] + 1             \* sequence gap

SameFileLwm(u, t) == rotation_ignored \/ file[u] = file[t]
\* Dispatching a barrier resets the lwm to 0 (§1.4 "reset lwm := 0"): until it is released
\* the lwm counts nothing before it.  (rotation_ignored: never reset.)
AfterReset(u, t) == rotation_ignored \/ ~\E b \in (u + 1)..(t - 1) : Barrier(b)
Lwm(t) ==
  IF lwm_not_prefix
  THEN Max({EffSeq(u) : u \in {v \in Txns : Committed(v) /\ SameFileLwm(v, t)
                                             /\ AfterReset(v, t)}})
  ELSE IF Prefix > 0 /\ SameFileLwm(Prefix, t) /\ AfterReset(Prefix, t)
       THEN EffSeq(Prefix) ELSE 0

Idle(w) == \A u \in Txns : worker[u] # w
LowestIdle(w) == Idle(w) /\ \A v \in 1..(w - 1) : ~Idle(v)

EnforceOrder == PreserveCommitOrder /\ ~commit_order_unenforced

AInit == /\ tstate = [t \in Txns |-> "queued"]
         /\ worker = [t \in Txns |-> 0]
         /\ db = [k \in Keys |-> <<>>]
         /\ rd = [t \in Txns |-> NoRead]

\* Row locks (§1.8): those of u that t's next step needs.
WLocks(u) == IF Active(u) THEN ws[u] ELSE {}
XLocks(u) == IF Waiting(u) THEN xl[u] ELSE {}
Blocks(u, t) == /\ u # t
                /\ IF tstate[t] = "dispatched" THEN ws[t] \cap XLocks(u) # {}
                   ELSE xl[t] \cap (WLocks(u) \cup XLocks(u)) # {}
\* rules.replica_lock_conflict: a later holder is the victim (commit order enforced).
Victim(u, t) == /\ t < u /\ EnforceOrder
                /\ ~(victim_wakeup_lost /\ Waiting(u))
CanLock(t) == \A u \in Txns : Blocks(u, t) => Victim(u, t)
Victims(t) == {u \in Txns : Blocks(u, t)}
\* InnoDB's own deadlock detection: t's next step waits for u; a cycle of such waits
\* (possible only without enforced commit order, where a later holder is waited for)
\* rolls back its latest member, which retries (a temporary error, §1.9).
Waits(t, u) == tstate[t] \in {"dispatched", "executing"} /\ Blocks(u, t) /\ ~Victim(u, t)
RECURSIVE Reach(_, _, _)
Reach(S, v, n) == IF n = 0 THEN S
                  ELSE Reach(S \cup {x \in 1..v : \E u \in S : Waits(u, x)}, v, n - 1)
LatestInCycle(v) == v \in Reach({x \in 1..v : Waits(v, x)}, v, N)
\* t takes state s; its victims roll back to "dispatched" (they keep their worker).
MoveTo(t, s, V) == tstate' = [u \in Txns |-> IF u = t THEN s
                                          ELSE IF u \in V THEN "dispatched" ELSE tstate[u]]

Dispatch(t, w) ==
  /\ tstate[t] = "queued"
  /\ \A u \in 1..(t - 1) : tstate[u] # "queued"           \* in order
  /\ LowestIdle(w)                                         \* §1.6
  /\ t <= Prefix + CheckpointGroup                         \* §1.5 GAQ window
  /\ IF Barrier(t)
       THEN Prefix = t - 1                                 \* full drain
       ELSE \/ Prefix = t - 1                              \* GAQ head
            \/ lc[t] <= Lwm(t) + (IF lwm_off_by_one THEN 1 ELSE 0)
  /\ tstate' = [tstate EXCEPT ![t] = "dispatched"]
  /\ worker' = [worker EXCEPT ![t] = w]
  /\ UNCHANGED <<db, rd>>

Start(t) ==
  /\ tstate[t] = "dispatched"
  /\ CanLock(t)
  /\ LET V == Victims(t)
     IN /\ MoveTo(t, "executing", V)
        /\ rd' = [u \in Txns |->
                   IF u = t THEN [k \in Keys |-> IF k \in ws[t] THEN db[k] ELSE <<>>]
                   ELSE IF u \in V THEN NoRead ELSE rd[u]]
  /\ UNCHANGED <<worker, db>>

ExecEnd(t) ==
  /\ tstate[t] = "executing"
  /\ CanLock(t)
  /\ LET V == Victims(t)
     IN /\ MoveTo(t, "ready", V)
        /\ rd' = [u \in Txns |-> IF u \in V THEN NoRead ELSE rd[u]]
  /\ UNCHANGED <<worker, db>>

Commit(t) ==
  /\ tstate[t] = "ready"
  /\ EnforceOrder => Prefix = t - 1                        \* §1.7
  \* finish_one grants the next transaction its turn; ticket_overflow loses that grant
  \* when its ticket wrapped and it is already waiting.
  /\ tstate' = [u \in Txns |->
                 IF u = t THEN "committed"
                 ELSE IF /\ u = t + 1 /\ tstate[u] = "ready" /\ ticket_overflow
                         /\ EnforceOrder /\ TicketWrap > 0 /\ u % TicketWrap = 0
                      THEN "asleep" ELSE tstate[u]]
  /\ db' = [k \in Keys |-> IF k \in ws[t] THEN Append(rd[t][k], t) ELSE db[k]]
  \* A committed transaction frees its worker; its read values are dead.
  /\ worker' = [worker EXCEPT ![t] = 0]
  /\ rd' = [rd EXCEPT ![t] = NoRead]

DeadlockVictim(v) ==
  /\ Active(v) /\ LatestInCycle(v)
  /\ tstate' = [tstate EXCEPT ![v] = "dispatched"]
  /\ rd' = [rd EXCEPT ![v] = NoRead]
  /\ UNCHANGED <<worker, db>>

ANext == \/ \E t \in Txns, w \in WorkerIds : Dispatch(t, w)
         \/ \E t \in Txns : Start(t) \/ ExecEnd(t) \/ Commit(t) \/ DeadlockVictim(t)

AllCommitted == \A t \in Txns : Committed(t)

-----------------------------------------------------------------------------
(* Properties *)

TypeOK ==
  /\ tstate \in [Txns -> States]
  /\ worker \in [Txns -> 0..Workers]
  /\ \A t \in Txns : (worker[t] = 0) <=> (tstate[t] \in {"queued", "committed"})
  /\ db \in [Keys -> Seq(Txns)]
  /\ rd \in [Txns -> [Keys -> Seq(Txns)]]
  /\ lc \in [Txns -> Nat] /\ sn \in [Txns -> Nat] /\ file \in [Txns -> Nat]
  /\ ws \in [Txns -> SUBSET Keys] /\ xl \in [Txns -> SUBSET Keys]

NoConflictingOverlap ==
  \A t, u \in Txns : t < u /\ Active(t) /\ Active(u) => ws[t] \cap ws[u] = {}

CommitOrderPreserved ==
  PreserveCommitOrder =>
    \A t \in Txns : Committed(t) => \A u \in 1..(t - 1) : Committed(u)

\* u must commit before t starts (the annotation's promise, §1.1, §1.3):
\* earlier files, same-file sn <= lc, and everything when lc = 0 ("parent
\* unknown / in an earlier file", a full barrier on the replica, §1.4).  The
\* source relies on the last case: its admin floor is dropped when the parent
\* lies before the file's offset, and 0 is written instead.
DependsOn(t, u) ==
  /\ u < t
  /\ \/ file[u] < file[t]
     \/ file[u] = file[t] /\ (lc[t] = 0 \/ sn[u] <= lc[t])

DependenciesRespected ==
  \A t \in Txns : tstate[t] \in {"executing", "ready", "asleep", "committed"} =>
    \A u \in Txns : DependsOn(t, u) => Committed(u)

RECURSIVE ReplaySeq(_, _)
ReplaySeq(k, p) == IF p = 0 THEN <<>>
                   ELSE IF k \in ws[p] THEN Append(ReplaySeq(k, p - 1), p)
                                       ELSE ReplaySeq(k, p - 1)
SerialState(p) == [k \in Keys |-> ReplaySeq(k, p)]

SerialEquivalence ==
  (\A t \in Txns : Committed(t) => t <= Prefix) => db = SerialState(Prefix)

NoDeadlock == ~AllCommitted => ENABLED ANext

EventuallyAllCommitted == <>AllCommitted

NeverParallel ==
  \A t, u \in Txns : t < u => ~(tstate[t] = "executing" /\ tstate[u] = "executing")
=============================================================================
