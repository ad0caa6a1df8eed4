--------------------------- MODULE MariaDBApplier ---------------------------
(***************************************************************************)
(* The MariaDB parallel replica applier (semantics.md §3.3-§3.6, §3.8) in  *)
(* slave_parallel_mode = conservative or optimistic, one GTID domain.      *)
(*                                                                         *)
(* A reusable module, not a stand-alone spec: the relay log (each          *)
(* transaction's kind, its commit_id and its FL_WAITED flag, and how many  *)
(* transactions have arrived) comes from the module that INSTANCEs it      *)
(* (SlaveGroupCommit.tla feeds it the binlog of an intermediate replica).  *)
(*                                                                         *)
(* INTERFACE (substitute with INSTANCE ... WITH):                          *)
(*   CONSTANTS N        transactions 1..N in relay-log order               *)
(*             Workers  slave_parallel_threads (slots 1..Workers)          *)
(*             Keys     row keys                                           *)
(*             Mode     "conservative" or "optimistic"                     *)
(*             gco_start_on_exec, optimistic_no_kill   bug flags           *)
(*   VARIABLES txn    1..N -> [ddl: BOOLEAN, ws: SUBSET Keys] (read-only)  *)
(*             cid    1..N -> 0..N, commit_id (0 = none: singleton group)  *)
(*             waited 1..N -> BOOLEAN, FL_WAITED                           *)
(*             avail  transactions 1..avail are in the relay log; cid and  *)
(*                    waited must not change for t <= avail.               *)
(*   The applier's actions prime only its own variables (avars); the       *)
(*   instantiating module adds UNCHANGED for the others.                   *)
(*                                                                         *)
(* ACTIONS (docs/names.md)                                                 *)
(*   Dispatch(t, w)  rpl_parallel::do_event (§3.5): the driver queues the  *)
(*     next relay-log transaction t to thread slot w = round robin         *)
(*     (choose_thread, §3.3) and decides its group_commit_orderer (GCO):   *)
(*     MULTI_BATCH when t has no commit_id or a different one from its    *)
(*     predecessor, FORCE_SWITCH for FL_DDL; same batch -> same GCO;       *)
(*     optimistic and no FORCE_SWITCH -> same GCO (speculation WAIT when  *)
(*     FL_WAITED, i.e. start only after the predecessor committed);        *)
(*     otherwise a new GCO whose wait_count = t - 1.  The first            *)
(*     transaction finds the domain's initial GCO (wait_count 0, flags 0): *)
(*     under optimistic it joins it and sets MULTI_BATCH there (§3.5).     *)
(*   Start(t)  t's thread has finished every earlier event group queued    *)
(*     to it (a thread runs its queue in order, commit included),          *)
(*     do_gco_wait passed (every transaction before t's GCO did            *)
(*     mark_start_commit; bug gco_start_on_exec: merely started), a WAIT  *)
(*     speculation saw its predecessor commit, and a DDL got its MDL:     *)
(*     every earlier transaction committed (rules.waits_for_mdl).  t      *)
(*     takes the row locks of its keys that are free and reads those      *)
(*     rows; a DDL takes no row lock and reads every row.                  *)
(*   ExecEnd(t)  t reaches its XID: every remaining lock it needs is free; *)
(*     it takes and reads them.  A DML then does mark_start_commit         *)
(*     (handle_rpl_parallel_thread, §3.4); a standalone DDL does it only   *)
(*     after its commit (finish_event_group).                              *)
(*   Commit(t)  wait_for_prior_commit: t-1 committed (§3.4, §3.8).  Writes *)
(*     its keys, releases its locks.                                       *)
(*   Kill(u)  thd_rpl_deadlock_check (§3.6): an earlier executing t waits  *)
(*     for a row lock held by the later u, so u is killed: rolled back,    *)
(*     locks released, unmark_start_commit, its reads discarded.  Any      *)
(*     mode (the kill dates from 10.0 conservative, MDEV-5914); bug        *)
(*     optimistic_no_kill removes it.                                      *)
(*   Retry(u)  retry_event_group: after the predecessor committed          *)
(*     (MDEV-7882), u executes again on the same thread.                   *)
(*                                                                         *)
(* ABSTRACTIONS.  No time or costs.  Row locks are exclusive, one per key, *)
(* held until commit; a transaction takes at Start the free ones among its *)
(* keys and the rest when they become free (folded into ExecEnd), so it    *)
(* reads a row exactly when it holds its lock.  A DDL conflicts with      *)
(* everything and writes every key, but takes no row lock: its MDL waits  *)
(* for every earlier commit and the GCO after it for its own commit, so   *)
(* nothing runs beside it unless a bug lets it.  The thread pool's         *)
(* LIFO free list and the queued-bytes back-pressure are abstracted by     *)
(* round-robin slots with unbounded FIFO queues.  GCO wait counts are      *)
(* modelled as "every transaction before the GCO's first one marked":      *)
(* equivalent to count_committing_event_groups >= wait_count because no    *)
(* transaction at or after a GCO's first one can mark before that GCO     *)
(* is released.  Transactional DML has FL_TRANSACTIONAL and               *)
(* FL_ALLOW_PARALLEL; FL_DDL transactions are non-transactional.           *)
(* db[k] is the sequence of the transactions that wrote k, in the order    *)
(* their writes landed; a transaction writes Append(value read, t) at      *)
(* Commit, so a stale read or lost update differs from serial replay.      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS N, Workers, Keys, Mode, gco_start_on_exec, optimistic_no_kill

VARIABLES txn, cid, waited, avail,            \* the relay log (inputs)
          tstate,   \* 1..N -> life-cycle state (docs/names.md)
          gco,      \* 1..N -> first transaction of t's GCO (0 = not dispatched)
          specwait, \* 1..N -> speculation WAIT (start after predecessor commits)
          drv,      \* driver: current GCO's first txn, its flags, last commit_id
          marked,   \* 1..N -> mark_start_commit done (and not unmarked)
          retry,    \* 1..N -> killed, waiting to Retry
          lk,       \* Keys -> holder of the row lock (0 = free)
          rd,       \* 1..N -> Keys -> value read under the current execution
          db,       \* Keys -> replica row value (sequence of writers)
          early     \* pairs <<i, j>>, i < j conflicting: j's current execution
                    \* locked a key of i before i committed

avars == <<tstate, gco, specwait, drv, marked, retry, lk, rd, db, early>>

Txns == 1..N
States == {"queued", "dispatched", "executing", "ready", "committed"}
Modes == {"conservative", "optimistic"}
Kinds == [ddl : BOOLEAN, ws : SUBSET Keys]

WS(t) == IF txn[t].ddl THEN Keys ELSE txn[t].ws
LockSet(t) == IF txn[t].ddl THEN {} ELSE txn[t].ws   \* row locks t takes
Conflict(i, j) == txn[i].ddl \/ txn[j].ddl \/ WS(i) \cap WS(j) # {}
Slot(t) == ((t - 1) % Workers) + 1           \* choose_thread round robin
Committed(t) == tstate[t] = "committed"
\* (IF rather than \/: TLC's ENABLED evaluates both disjuncts, and tstate[0].)
PrevCommitted(t) == IF t = 1 THEN TRUE ELSE Committed(t - 1)
Holds(t) == {k \in Keys : lk[k] = t}
NoRead == [k \in Keys |-> <<>>]

\* The new lock holder t of the keys K: pairs it creates in `early`.
EarlyPairs(t, K) ==
    {<<i, t>> : i \in {i \in 1..(t - 1) : WS(i) \cap K # {} /\ ~Committed(i)}}

\* t's thread is free: a thread runs the event groups queued to it in order.
ThreadFree(t) == \A u \in 1..(t - 1) : Slot(u) = Slot(t) => Committed(u)

Started(u) == tstate[u] \in {"executing", "ready", "committed"} \/ retry[u]

GcoReleased(t) ==
    \A u \in 1..(gco[t] - 1) : IF gco_start_on_exec THEN Started(u) ELSE marked[u]

\* t (executing) waits for a row lock held by u.
WaitsFor(t, u) == tstate[t] = "executing" /\ \E k \in LockSet(t) : lk[k] = u

-----------------------------------------------------------------------------
AInit ==
    /\ tstate = [t \in Txns |-> "queued"]
    /\ gco = [t \in Txns |-> 0]
    /\ specwait = [t \in Txns |-> FALSE]
    \* the initial GCO (wait_count 0, flags 0) exists before the first transaction
    /\ drv = [first |-> 1, multi |-> FALSE, force |-> FALSE, lastcid |-> 0]
    /\ marked = [t \in Txns |-> FALSE]
    /\ retry = [t \in Txns |-> FALSE]
    /\ lk = [k \in Keys |-> 0]
    /\ rd = [t \in Txns |-> NoRead]
    /\ db = [k \in Keys |-> <<>>]
    /\ early = {}

\* rpl_parallel::do_event's GCO decision (semantics.md §3.5).
Dispatch(t, w) ==
    /\ t <= avail
    /\ tstate[t] = "queued"
    /\ IF t = 1 THEN TRUE ELSE tstate[t - 1] # "queued"   \* relay-log order
    /\ w = Slot(t)
    /\ LET multi == drv.multi \/ cid[t] = 0 \/ cid[t] # drv.lastcid
           force == drv.force \/ txn[t].ddl
           join  == ~multi \/ (Mode = "optimistic" /\ ~force)
       IN /\ gco' = [gco EXCEPT ![t] = IF join THEN drv.first ELSE t]
          /\ drv' = IF join
                    THEN [first |-> drv.first, multi |-> multi, force |-> force,
                          lastcid |-> cid[t]]
                    ELSE [first |-> t, multi |-> FALSE, force |-> txn[t].ddl,
                          lastcid |-> cid[t]]
          \* only transactional DML joins speculatively; FL_WAITED -> WAIT
          /\ specwait' = [specwait EXCEPT ![t] = join /\ multi /\ waited[t]]
    /\ tstate' = [tstate EXCEPT ![t] = "dispatched"]
    /\ UNCHANGED <<marked, retry, lk, rd, db, early>>

\* t begins an execution: it locks and reads the free keys among its own (a DDL
\* reads every key and locks none).
BeginExec(t) ==
    LET K == {k \in LockSet(t) : lk[k] = 0}
        R == IF txn[t].ddl THEN Keys ELSE K
    IN /\ tstate' = [tstate EXCEPT ![t] = "executing"]
       /\ lk' = [k \in Keys |-> IF k \in K THEN t ELSE lk[k]]
       /\ rd' = [rd EXCEPT ![t] = [k \in Keys |-> IF k \in R THEN db[k] ELSE <<>>]]
       /\ early' = early \cup EarlyPairs(t, K)

Start(t) ==
    /\ tstate[t] = "dispatched"
    /\ ~retry[t]
    /\ ThreadFree(t)
    /\ GcoReleased(t)
    /\ IF specwait[t] THEN PrevCommitted(t) ELSE TRUE
    /\ IF txn[t].ddl THEN \A u \in 1..(t - 1) : Committed(u) ELSE TRUE   \* MDL
    /\ BeginExec(t)
    /\ UNCHANGED <<gco, specwait, drv, marked, retry, db>>

ExecEnd(t) ==
    /\ tstate[t] = "executing"
    /\ \A k \in LockSet(t) : lk[k] \in {0, t}
    /\ LET K == {k \in LockSet(t) : lk[k] = 0}
       IN /\ lk' = [k \in Keys |-> IF k \in K THEN t ELSE lk[k]]
          /\ rd' = [rd EXCEPT ![t] = [k \in Keys |-> IF k \in K THEN db[k] ELSE rd[t][k]]]
          /\ early' = early \cup EarlyPairs(t, K)
    /\ tstate' = [tstate EXCEPT ![t] = "ready"]
    /\ marked' = [marked EXCEPT ![t] = ~txn[t].ddl]
    /\ UNCHANGED <<gco, specwait, drv, retry, db>>

Commit(t) ==
    /\ tstate[t] = "ready"
    /\ PrevCommitted(t)
    /\ tstate' = [tstate EXCEPT ![t] = "committed"]
    /\ db' = [k \in Keys |-> IF k \in WS(t) THEN Append(rd[t][k], t) ELSE db[k]]
    /\ lk' = [k \in Keys |-> IF lk[k] = t THEN 0 ELSE lk[k]]
    /\ rd' = [rd EXCEPT ![t] = NoRead]
    /\ marked' = [marked EXCEPT ![t] = TRUE]    \* standalone DDL marks here
    /\ UNCHANGED <<gco, specwait, drv, retry, early>>

Kill(u) ==
    /\ ~optimistic_no_kill
    /\ tstate[u] \in {"executing", "ready"}
    /\ \E t \in 1..(u - 1) : WaitsFor(t, u)
    /\ tstate' = [tstate EXCEPT ![u] = "dispatched"]
    /\ retry' = [retry EXCEPT ![u] = TRUE]
    /\ marked' = [marked EXCEPT ![u] = FALSE]   \* unmark_start_commit
    /\ lk' = [k \in Keys |-> IF lk[k] = u THEN 0 ELSE lk[k]]
    /\ rd' = [rd EXCEPT ![u] = NoRead]
    /\ early' = {p \in early : p[2] # u}
    /\ UNCHANGED <<gco, specwait, drv, db>>

Retry(u) ==
    /\ tstate[u] = "dispatched"
    /\ retry[u]
    /\ PrevCommitted(u)
    /\ retry' = [retry EXCEPT ![u] = FALSE]
    /\ BeginExec(u)
    /\ UNCHANGED <<gco, specwait, drv, marked, db>>

ANext ==
    \/ \E t \in Txns, w \in 1..Workers : Dispatch(t, w)
    \/ \E t \in Txns : Start(t) \/ ExecEnd(t) \/ Commit(t) \/ Kill(t) \/ Retry(t)

AllCommitted == \A t \in Txns : Committed(t)

-----------------------------------------------------------------------------
(* Properties *)

ATypeOK ==
    /\ Mode \in Modes
    /\ tstate \in [Txns -> States]
    /\ gco \in [Txns -> 0..N]
    /\ specwait \in [Txns -> BOOLEAN]
    /\ drv \in [first : 0..N, multi : BOOLEAN, force : BOOLEAN, lastcid : 0..N]
    /\ marked \in [Txns -> BOOLEAN]
    /\ retry \in [Txns -> BOOLEAN]
    /\ lk \in [Keys -> 0..N]
    /\ \A t \in Txns : DOMAIN rd[t] = Keys
    /\ DOMAIN db = Keys
    /\ early \subseteq Txns \X Txns

(* Conservative: the GCO rule promises that conflicting transactions never  *)
(* execute (Start..ExecEnd, lock waits included) at the same time.          *)
(* Optimistic runs them speculatively; it promises that two conflicting     *)
(* transactions never both commit unless the later one's final execution    *)
(* touched the shared rows only after the earlier committed.                *)
NoConflictingOverlap ==
    IF Mode = "conservative"
    THEN \A i, j \in Txns :
            (i < j /\ Conflict(i, j)) =>
                ~(tstate[i] = "executing" /\ tstate[j] = "executing")
    ELSE \A p \in early : ~(Committed(p[1]) /\ Committed(p[2]))

CommitOrderPreserved ==
    \A t \in Txns : Committed(t) => \A u \in 1..(t - 1) : Committed(u)

\* Serial replay of 1..m: each key holds its writers in source order.
SerialDb(m) ==
    [k \in Keys |-> SelectSeq([i \in 1..m |-> i], LAMBDA i : k \in WS(i))]

SerialEquivalence ==
    LET m == Cardinality({t \in Txns : Committed(t)})
    IN (\A t \in 1..m : Committed(t)) => db = SerialDb(m)

\* Reachability (negated): two transactions never execute at the same time.
NeverParallel ==
    ~\E i, j \in Txns : i < j /\ tstate[i] = "executing" /\ tstate[j] = "executing"

\* Reachability (negated): the optimistic kill never fires.
NeverKilled == \A t \in Txns : ~retry[t]
=============================================================================
