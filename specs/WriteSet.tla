------------------------------ MODULE WriteSet ------------------------------
(***************************************************************************)
(* MySQL 8.0 WRITESET / WRITESET_SESSION dependency tracking on the source *)
(* (semantics.md §2; Writeset_trx_dependency_tracker::get_dependency and   *)
(* Writeset_session_trx_dependency_tracker::get_dependency, MySQL 8.0.39   *)
(* sql/rpl_trx_tracking.cc).                                               *)
(*                                                                         *)
(* WHAT IT MODELS.  The source flushes transactions 1..N to the binlog in  *)
(* flush order.  Flush chooses, nondeterministically, what the next        *)
(* transaction did and the commit-order parent the commit-order tracker    *)
(* gave it, then runs the WRITESET tracker on it.  Rotate starts a new     *)
(* binlog file between two flushes.  The tracker's output is lc[t]         *)
(* (last_committed), sn[t] (sequence_number), file[t] (binlog file); lc   *)
(* and sn are file-relative, exactly as written in the binlog (§1.1, §1.3).*)
(*                                                                         *)
(* The data.  One table with a PRIMARY KEY over Pks and one UNIQUE column  *)
(* over Uks: a row image is <<pk, uk>> and yields two index entries,       *)
(* <<"PRIMARY", pk>> and <<"UNIQUE", uk>> (§2.1: one hash per PRIMARY and  *)
(* UNIQUE index entry).  A row operation has a before and an after image   *)
(* (NoImg when absent): INSERT has only an after image, DELETE only a      *)
(* before image, UPDATE both (§2.1: the before and the after image are     *)
(* hashed).  "update_uk" changes the unique value of a row, "update_pk"    *)
(* its primary key.  INSERT and DELETE of the same image touch the same    *)
(* entries, so a model may draw only one of them without losing a case.    *)
(* Transaction kinds (TxnKinds):                                           *)
(*   "dml"      1..MaxRows row operations on the table;                    *)
(*   "ddl"      no row events, empty write set (§2.2 DDL);                 *)
(*   "fkparent" writes a row of a table referenced by a foreign key        *)
(*              (has_related_foreign_keys, §2.1): its cascades are not     *)
(*              in any write set, so it conflicts with everything;         *)
(*   "nopk"     0..MaxRows row operations plus a write to a table without  *)
(*              a primary key (has_missing_keys, §2.1): the no-PK rows are *)
(*              not hashed, so two such transactions are taken to conflict *)
(*              (worst case: the conflict is invisible to the tracker);    *)
(*   "empty"    nothing in the binlog cache (§2.2 "empty transaction").    *)
(* The true write set W(t) (TrueWS) is the set of index entries t touches. *)
(*                                                                         *)
(* Conflict(i, j), the ground truth: W(i) and W(j) intersect, or either is *)
(* "ddl" or "fkparent", or (WRITESET_SESSION only) they share a session.   *)
(*                                                                         *)
(* The commit-order parent (§1.1) is chosen nondeterministically but       *)
(* validly: any absolute value c with lo <= c <= t-1, where lo is the      *)
(* last earlier transaction that conflicts with t or belongs to t's        *)
(* session (on the source t's last statement waited for those locks, or    *)
(* the session ran them before t: they had committed, so the commit clock  *)
(* had passed them).  Taking "DDL / FK parent conflicts with everything"   *)
(* as part of that validity is the design's definition of Conflict; with   *)
(* it, any loss of a dependency found here is WRITESET's own, since        *)
(* WRITESET only lowers the commit-order parent.  It is written            *)
(* file-relative: 0 when c lies in an earlier file (§1.1).                 *)
(*                                                                         *)
(* §2.2, line by line, in Track(y, c) below:                               *)
(*   can_use := (writeset non-empty OR has_missing_keys OR empty trx)      *)
(*              AND NOT has_related_foreign_keys AND NOT limit reached     *)
(*                                      -> canUse (same extraction         *)
(*              algorithm on session and global: assumed, not modelled;    *)
(*              limit reached <=> more than HistorySize hashes, §2.1)      *)
(*   overflow := |history| + |writeset| > history_size  -> overflow       *)
(*     (|writeset|: the vector's length, repeats included: WriteSetSize)  *)
(*   p := m_writeset_history_start                      -> p (start)      *)
(*   for h in writeset: if h in history: p := max(p, history[h]) when     *)
(*     history[h] < seq; history[h] := seq; elif not overflow:            *)
(*     history[h] := seq                                -> hits, updated  *)
(*   if not has_missing_keys: commit_parent := min(p, commit_parent)      *)
(*                                                      -> wsParent       *)
(*   if overflow or not can_use: start := seq; clear history -> clear     *)
(* §2.3 (WRITESET_SESSION, Session = TRUE): with ps the session's last     *)
(* sequence number, if 0 < ps < seq then parent := max(parent, ps); the    *)
(* session's last := seq.  ps is file-relative and, as in the server, not  *)
(* reset at rotation (a stale larger ps is discarded by ps < seq, a stale  *)
(* smaller one adds a harmless dependency).                                *)
(* §1.3 rotation: numbering restarts at 1, history cleared, start := 1.    *)
(* The first file is opened with rotate too, so start is 1 initially.      *)
(*                                                                         *)
(* ABSTRACTIONS.  Hashes are the index entries themselves (no collisions;  *)
(* a collision only adds dependencies).  Lookups use the set of hashes;    *)
(* the capacity check and the per-transaction limit count the server's     *)
(* vector, repeats included (WriteSetSize: MySQL 8.0/8.4; 5.7 counts the   *)
(* set: the Python option write_set="set" only).  NULL unique values,      *)
(* multi-valued and prefix keys, child-side FK hashes, the 8.0.38          *)
(* blocking-transaction floor (§1.2, the LogicalClock spec's business) and *)
(* tracking-mode changes (Bug#25616372, docs/mysql-tests.md) are not       *)
(* modelled.  Sessions only order transactions; which                    *)
(* session ran which transaction is free.  Write sets are drawn freely,    *)
(* not checked against a table state (two rows may hold one unique value): *)
(* a superset of the binlogs a real table allows, so green results cover   *)
(* every real one; the bugs also have realizable counterexamples.          *)
(*                                                                         *)
(* DEPENDENCY AS THE MYSQL APPLIER READS IT (§1.4).  Direct(i, j), i < j:  *)
(* same file and sn[i] <= lc[j]; or a barrier k with i < k <= j (lc = 0,   *)
(* first of its file, or inconsistent sn <= lc): the coordinator drains    *)
(* every earlier transaction before dispatching k and dispatches in order, *)
(* so nothing after k starts before i commits.  Deps[j] is the transitive  *)
(* closure.  MCWriteSetMySQL.tla checks this reading end to end against    *)
(* MySQLApplier.tla.                                                       *)
(*                                                                         *)
(* PROPERTIES                                                              *)
(*   TypeOK: variables well typed; 0 <= lc[t] < sn[t].                     *)
(*   TrackerSoundness: for flushed i < j with Conflict(i, j), j depends    *)
(*     on i (i \in Deps[j]).                                               *)
(*   SessionOrder: under WRITESET_SESSION, for flushed i < j of one        *)
(*     session, j depends on i.                                            *)
(*   ParallelismReachable (checked through its negation NeverParallel):   *)
(*     two transactions of one session that do not depend on each other   *)
(*     exist, i.e. WRITESET lowers last_committed below the commit-order   *)
(*     parent, which always covers the session's earlier transactions.     *)
(*   OverflowReachable (negation NeverOverflow): the history overflows.    *)
(*                                                                         *)
(* BUG FLAGS (design §7):                                                  *)
(*   history_evict_no_floor  on overflow, make room LRU-style instead of   *)
(*                           clearing: evict the entries with the oldest   *)
(*                           last writer (any of them on a tie) until the  *)
(*                           history fits, and keep the old start;         *)
(*   ddl_not_isolated        an empty write set (DDL) counts as usable:    *)
(*                           parent min(start, co), no clear;              *)
(*   unique_keys_ignored     only PRIMARY entries are hashed;              *)
(*   before_image_ignored    an UPDATE hashes only its after image;        *)
(*   session_order_dropped   WRITESET_SESSION without the §2.3 rule.       *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    N,              \* transactions 1..N in flush order
    Pks, Uks,       \* PRIMARY KEY values, UNIQUE column values (model values)
    Sessions,       \* source client sessions (model values)
    HistorySize,    \* binlog_transaction_dependency_history_size
    MaxFiles,       \* binlog files a run may span (1: no rotation)
    MaxRows,        \* row operations per transaction, 1 or 2
    OpKinds,        \* SUBSET {"insert", "delete", "update_uk", "update_pk"}
    TxnKinds,       \* SUBSET {"dml", "ddl", "fkparent", "nopk", "empty"}
    Session,        \* TRUE: WRITESET_SESSION; FALSE: WRITESET
    history_evict_no_floor, ddl_not_isolated, unique_keys_ignored,
    before_image_ignored, session_order_dropped

ASSUME /\ N \in Nat \ {0} /\ HistorySize \in Nat \ {0}
       /\ MaxFiles \in Nat \ {0} /\ MaxRows \in {1, 2}
       /\ OpKinds \subseteq {"insert", "delete", "update_uk", "update_pk"}
       /\ TxnKinds \subseteq {"dml", "ddl", "fkparent", "nopk", "empty"}

VARIABLES
    next,       \* next transaction to flush; N + 1 once the binlog is complete
    txn,        \* txn[t] (a sequence): kind, row operations, session of t
    co,         \* co[t]: the commit-order parent (file-relative) of t
    lc, sn, file,   \* the tracker's output, total on 1..N (0 until flushed)
    cause,      \* cause[t]: "none", "overflow", "fallback" (t cleared), "evict" (bug)
    history,    \* m_writeset_history: index entry -> seq of its last writer
    hstart,     \* m_writeset_history_start
    offset,     \* absolute number of the last transaction of earlier files
    curFile,    \* current binlog file, 1..MaxFiles
    sessLast    \* session -> its last sequence number (file-relative)

tvars == <<next, txn, co, lc, sn, file, cause, history, hstart, offset,
           curFile, sessLast>>

Txns == 1..N
Max(S) == IF S = {} THEN 0 ELSE CHOOSE m \in S : \A x \in S : x <= m
Min(a, b) == IF a <= b THEN a ELSE b

-----------------------------------------------------------------------------
(* Transactions and their write sets *)

NoImg == <<>>
Images == Pks \X Uks
Ops ==
  UNION {
    IF "insert" \in OpKinds THEN {[b |-> NoImg, a |-> i] : i \in Images} ELSE {},
    IF "delete" \in OpKinds THEN {[b |-> i, a |-> NoImg] : i \in Images} ELSE {},
    IF "update_uk" \in OpKinds
      THEN {o \in {[b |-> <<p, u>>, a |-> <<p, v>>] : p \in Pks, u \in Uks, v \in Uks} :
              o.b # o.a}
      ELSE {},
    IF "update_pk" \in OpKinds
      THEN {o \in {[b |-> <<p, u>>, a |-> <<q, u>>] : p \in Pks, q \in Pks, u \in Uks} :
              o.b # o.a}
      ELSE {}}
\* 1..MaxRows operations (MaxRows <= 2 keeps this small: SUBSET Ops would not be)
OpSets == {{o} : o \in Ops} \cup
          (IF MaxRows >= 2 THEN {{o1, o2} : o1, o2 \in Ops} ELSE {})

Shapes ==
  UNION {
    IF "dml" \in TxnKinds THEN {[kind |-> "dml", ops |-> S] : S \in OpSets} ELSE {},
    IF "nopk" \in TxnKinds
      THEN {[kind |-> "nopk", ops |-> S] : S \in OpSets \cup {{}}} ELSE {},
    {[kind |-> k, ops |-> {}] : k \in TxnKinds \cap {"ddl", "fkparent", "empty"}}}

TxnRecs == {[kind |-> x.kind, ops |-> x.ops, ses |-> s] : x \in Shapes, s \in Sessions}

ImagesOf(o) == {o.b, o.a} \ {NoImg}
IsUpdate(o) == o.b # NoImg /\ o.a # NoImg
EntriesOf(img) == {<<"PRIMARY", img[1]>>, <<"UNIQUE", img[2]>>}
ParentEntry == <<"PARENT">>     \* the referenced parent row an "fkparent" writes
NoPkEntry == <<"NOPK">>         \* the table without primary key

\* Ground truth: every index entry t touches.
TrueWS(x) == UNION {EntriesOf(i) : i \in UNION {ImagesOf(o) : o \in x.ops}}
             \cup (IF x.kind = "nopk" THEN {NoPkEntry} ELSE {})
             \cup (IF x.kind = "fkparent" THEN {ParentEntry} ELSE {})
AllEntries == UNION {EntriesOf(i) : i \in Images} \cup {ParentEntry, NoPkEntry}

\* What add_pke hashes (§2.1), with the two hashing bugs.
HashedImages(o) == IF before_image_ignored /\ IsUpdate(o) THEN {o.a} ELSE ImagesOf(o)
HashedEntries(img) == IF unique_keys_ignored THEN {<<"PRIMARY", img[1]>>}
                                             ELSE EntriesOf(img)
Hashed(x) == IF x.kind = "fkparent" THEN {ParentEntry}
             ELSE UNION {HashedEntries(i) : i \in UNION {HashedImages(o) : o \in x.ops}}

\* How many hashes the server's write set holds (§2.1): MySQL 8.0/8.4 keep a vector and push
\* every hashed entry of every image, so an UPDATE counts a key it keeps twice (MySQL's test
\* rpl_binlog_transaction_dependency_tracking, step 1.4, needs this count; docs/mysql-tests.md).
\* The images of one operation differ (o.b # o.a), and each hashes the same number of entries.
RECURSIVE VectorSize(_)
VectorSize(ops) ==
  IF ops = {} THEN 0
  ELSE LET o == CHOOSE o \in ops : TRUE
       IN Cardinality(HashedImages(o)) * (IF unique_keys_ignored THEN 1 ELSE 2)
          + VectorSize(ops \ {o})
WriteSetSize(x) == IF x.kind = "fkparent" THEN 1 ELSE VectorSize(x.ops)

Isolating(x) == x.kind \in {"ddl", "fkparent"}
Conflict(x, y) == \/ TrueWS(x) \cap TrueWS(y) # {}
                  \/ Isolating(x) \/ Isolating(y)
                  \/ Session /\ x.ses = y.ses
\* What the commit-order parent covers on the source (session order always).
SourceOrdered(x, y) == Conflict(x, y) \/ x.ses = y.ses

-----------------------------------------------------------------------------
(* The tracker *)

EmptyHistory == [h \in {} |-> 0]

Init ==
  /\ next = 1
  /\ txn = << >>
  /\ co = [t \in Txns |-> 0]
  /\ lc = [t \in Txns |-> 0]
  /\ sn = [t \in Txns |-> 0]
  /\ file = [t \in Txns |-> 0]
  /\ cause = [t \in Txns |-> "none"]
  /\ history = EmptyHistory
  /\ hstart = 1                       \* the first file is opened by rotate(1)
  /\ offset = 0
  /\ curFile = 1
  /\ sessLast = [s \in Sessions |-> 0]

\* Transaction next, which did y, with absolute commit-order parent c.
Track(y, c) ==
  LET seq      == next - offset
      coRel    == IF c <= offset THEN 0 ELSE c - offset
      ws       == Hashed(y)
      missing  == y.kind = "nopk"
      canUse   == /\ \/ ws # {}
                     \/ missing
                     \/ y.kind = "empty"
                     \/ ddl_not_isolated /\ y.kind = "ddl"
                  /\ y.kind # "fkparent"
                  /\ WriteSetSize(y) <= HistorySize
      overflow == canUse /\ Cardinality(DOMAIN history) + WriteSetSize(y) > HistorySize
      hits     == {h \in ws \cap DOMAIN history : history[h] < seq}
      p        == Max({hstart} \cup {history[h] : h \in hits})
      kept     == IF overflow THEN DOMAIN history ELSE DOMAIN history \cup ws
      updated  == [h \in kept |-> IF h \in ws THEN seq ELSE history[h]]
      wsParent == IF canUse /\ ~missing THEN Min(p, coRel) ELSE coRel
      ps       == sessLast[y.ses]
      parent   == IF Session /\ ~session_order_dropped /\ 0 < ps /\ ps < seq
                    THEN Max({wsParent, ps}) ELSE wsParent
      clear    == overflow \/ ~canUse
      evict    == overflow /\ history_evict_no_floor
  IN
  /\ txn' = Append(txn, y)
  /\ co' = [co EXCEPT ![next] = coRel]
  /\ lc' = [lc EXCEPT ![next] = parent]
  /\ sn' = [sn EXCEPT ![next] = seq]
  /\ file' = [file EXCEPT ![next] = curFile]
  /\ cause' = [cause EXCEPT ![next] = IF evict THEN "evict"
                                     ELSE IF overflow THEN "overflow"
                                     ELSE IF ~canUse THEN "fallback" ELSE "none"]
  \* Bug history_evict_no_floor: LRU eviction of the oldest entries, no floor raise.
  /\ LET full   == [h \in DOMAIN history \cup ws |-> IF h \in ws THEN seq ELSE history[h]]
         olds   == DOMAIN history \ ws
         excess == Cardinality(DOMAIN full) - HistorySize
         victims == {E \in SUBSET olds :
                       /\ Cardinality(E) = Max({0, excess})
                       /\ \A e \in E, k \in olds \ E : history[e] <= history[k]}
     IN IF evict THEN \E E \in victims : history' = [h \in DOMAIN full \ E |-> full[h]]
        ELSE history' = IF clear THEN EmptyHistory ELSE updated
  /\ hstart' = IF clear /\ ~evict THEN seq ELSE hstart
  /\ sessLast' = [sessLast EXCEPT ![y.ses] = seq]
  /\ next' = next + 1
  /\ UNCHANGED <<offset, curFile>>

\* The next transaction is of kind k, run by session s.  Split by kind and
\* session so that TLC's -simulate, which picks a random action and then a
\* random successor of it, draws kinds evenly and enumerates fewer successors.
FlushAs(k, s) ==
  /\ next <= N
  /\ \E x \in Shapes :
       /\ x.kind = k
       /\ LET y  == [kind |-> k, ops |-> x.ops, ses |-> s]
              lo == Max({i \in 1..(next - 1) : SourceOrdered(txn[i], y)})
          IN \E c \in lo..(next - 1) : Track(y, c)

Flush == \E k \in TxnKinds, s \in Sessions : FlushAs(k, s)

\* §1.3: a new binlog file; only between transactions of a non-empty file.
Rotate ==
  /\ next <= N
  /\ curFile < MaxFiles
  /\ next - 1 > offset
  /\ offset' = next - 1
  /\ curFile' = curFile + 1
  /\ history' = EmptyHistory
  /\ hstart' = 1
  /\ UNCHANGED <<next, txn, co, lc, sn, file, cause, sessLast>>

TNext == Flush \/ Rotate

TSpec == Init /\ [][TNext]_tvars

Done == next = N + 1

-----------------------------------------------------------------------------
(* Dependencies as the MySQL applier reads lc/sn/file (§1.4) *)

Flushed == 1..(next - 1)
Barrier(k) == lc[k] = 0 \/ sn[k] = 1 \/ lc[k] >= sn[k]
Direct(i, j) == \/ file[i] = file[j] /\ sn[i] <= lc[j]
                \/ \E k \in (i + 1)..j : Barrier(k)
\* Deps[j]: every i < j that j waits for, directly or transitively.
Deps == LET D[j \in Flushed] ==
              LET dir == {i \in 1..(j - 1) : Direct(i, j)}
              IN dir \cup UNION {D[k] : k \in dir}
        IN D

-----------------------------------------------------------------------------
(* Properties *)

TypeOK ==
  /\ next \in 1..(N + 1)
  /\ txn \in Seq(TxnRecs) /\ Len(txn) = next - 1
  /\ co \in [Txns -> Nat] /\ lc \in [Txns -> Nat]
  /\ sn \in [Txns -> Nat] /\ file \in [Txns -> 0..MaxFiles]
  /\ cause \in [Txns -> {"none", "overflow", "fallback", "evict"}]
  /\ \A t \in Flushed : sn[t] >= 1 /\ lc[t] < sn[t] /\ file[t] >= 1
  /\ DOMAIN history \subseteq AllEntries
  /\ Cardinality(DOMAIN history) <= HistorySize
  /\ \A h \in DOMAIN history : history[h] \in 1..(next - 1 - offset)
  /\ hstart \in 1..N
  /\ offset \in 0..N /\ curFile \in 1..MaxFiles
  /\ sessLast \in [Sessions -> 0..N]

TrackerSoundness ==
  LET D == Deps IN
  \A i, j \in Flushed : i < j /\ Conflict(txn[i], txn[j]) => i \in D[j]

SessionOrder ==
  Session =>
    LET D == Deps IN
    \A i, j \in Flushed : i < j /\ txn[i].ses = txn[j].ses => i \in D[j]

ParallelismReachable ==
  LET D == Deps IN
  \E i, j \in Flushed : i < j /\ txn[i].ses = txn[j].ses /\ i \notin D[j]
NeverParallel == ~ParallelismReachable

OverflowReachable == \E t \in Flushed : cause[t] = "overflow"
NeverOverflow == ~OverflowReachable
=============================================================================
