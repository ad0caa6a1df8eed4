---------------------------- MODULE LogicalClock ----------------------------
(***************************************************************************)
(* MySQL LOGICAL_CLOCK end to end: the source that writes last_committed / *)
(* sequence_number into the binlog (semantics.md §1.1-§1.3) and the        *)
(* replica applier of MySQLApplier.tla (§1.4-§1.7) that executes that      *)
(* binlog with Workers threads.                                            *)
(*                                                                         *)
(* THE SOURCE.  N client sessions (Clients) each run one transaction.     *)
(* Which keys it writes, whether it is an admin statement and every        *)
(* interleaving are nondeterministic, so every write set (any non-empty    *)
(* subset of Keys) and schedule is explored and the applier is fed every   *)
(* annotation the source can produce.  Actions:                            *)
(*   Stmt(c, k)   §1.1  one DML statement: c row-locks key k (2PL, keys    *)
(*                taken in ascending order; it waits while another client  *)
(*                holds k) and the statement-level prepare snapshots       *)
(*                last_committed := max_committed.  The snapshot of the    *)
(*                last statement is the one that counts.                   *)
(*   Flush(c, admin)  §1.1-§1.2  c (at least one statement done) issues    *)
(*                COMMIT and enters the binlog FLUSH stage: it gets        *)
(*                sequence_number = ++counter (binlog order = flush order) *)
(*                and its annotation is written, file-relative: 0 when its *)
(*                snapshot is <= the file's offset (parent in an earlier   *)
(*                file), else max(last_committed, last_blocking) - offset. *)
(*                An admin statement (at most MaxAdmin of them) raises     *)
(*                last_blocking to its own number and releases its locks   *)
(*                here, before its engine commit.                          *)
(*   SrcCommit(c) §1.1  engine commit: max_committed := max(max_committed, *)
(*                sn) unless sn lies in an earlier file (set_if_greater    *)
(*                ignores late commits), then c releases its row locks.    *)
(*                With BinlogOrderCommits the commits follow flush order   *)
(*                (binlog_order_commits=ON); without, any flushed          *)
(*                transaction may commit (a superset of behaviours).      *)
(*   Rotate       §1.3  a new binlog file: offset := counter, numbering    *)
(*                restarts at 1; at most MaxFiles files.                   *)
(* THE REPLICA.  Once the source has committed everything, the applier     *)
(* runs on the finished binlog (blc, bsn, bfile, bws indexed by binlog     *)
(* position).  Running it only after the source is sound for every         *)
(* property below: a relay log that arrives progressively only adds a     *)
(* guard "t has arrived" to Dispatch, so its applier behaviours are a      *)
(* subset of these.                                                        *)
(*                                                                         *)
(* ABSTRACTIONS.  Binlog group commit is not modelled as groups: any      *)
(* interleaving of Flush and SrcCommit covers every grouping.  Lock order  *)
(* is ascending, so the source never deadlocks; the lock-interval argument *)
(* does not depend on the order in which a transaction takes its locks,    *)
(* only on holding them all from its last snapshot to its commit.  Admin   *)
(* statements (§1.2: ANALYZE, OPTIMIZE, ...DATABASE) are modelled as       *)
(* releasing their locks at flush; the window between that and their       *)
(* commit is what the m_last_blocking_transaction floor closes.            *)
(* Sequence gaps and inconsistent timestamps cannot arise from this        *)
(* source (the applier still treats them as barriers).  The                *)
(* parallelization_barrier flag of incident events is not modelled.       *)
(*                                                                         *)
(* PROPERTIES                                                              *)
(*   TypeOK: types, and row locks are exclusive on the source.            *)
(*   TrackerSoundness: for binlog positions i < j whose write sets         *)
(*     intersect, j depends on i: i is in an earlier file, or same file    *)
(*     and sequence_number(i) <= last_committed(j) or last_committed(j) = 0 *)
(*     (a barrier).  This is the lock-interval theory of §1.1, checked on  *)
(*     the source's output.  The lc = 0 case is needed: a transaction that *)
(*     snapshotted max_committed <= offset gets 0 and no admin floor.      *)
(*   The applier's properties (MySQLApplier.tla), on every such binlog:   *)
(*     NoConflictingOverlap, CommitOrderPreserved, DependenciesRespected, *)
(*     SerialEquivalence, NeverParallel (negation of ParallelismReachable).*)
(*   NoDeadlock: until everything is committed on the replica, some step  *)
(*     (source or applier) is enabled.                                     *)
(*   EventuallyAllCommitted: under WF of Next every transaction commits on *)
(*     the replica.  Every action moves a transaction forward or opens one *)
(*     of at most MaxFiles files, so there are no cycles and WF of the     *)
(*     whole relation suffices; NoDeadlock then rules out stopping early.  *)
(*                                                                         *)
(* BUG FLAG admin_barrier_missing: admin statements get ordinary           *)
(* timestamps (no floor); violates NoConflictingOverlap (and               *)
(* TrackerSoundness).  The applier's four flags pass through.              *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS N, Clients, Keys, Workers, CheckpointGroup, PreserveCommitOrder,
          MaxFiles, MaxAdmin, BinlogOrderCommits,
          lwm_off_by_one, lwm_not_prefix, rotation_ignored,
          commit_order_unenforced, admin_barrier_missing

ASSUME /\ Cardinality(Clients) = N
       /\ Keys \subseteq Nat /\ Keys # {}     \* ordered: locks are taken ascending
       /\ MaxFiles \in Nat \ {0} /\ MaxAdmin \in Nat

VARIABLES
  sst,       \* client -> "running" | "flushed" | "committed"
  held,      \* client -> row locks held = its write set so far
  lcA,       \* client -> absolute last_committed snapshot
  pos,       \* client -> absolute sequence_number (0 until flushed / after commit)
  nAdmin,    \* admin statements flushed so far (at most MaxAdmin)
  counter,   \* m_transaction_counter (absolute)
  maxc,      \* m_max_committed_transaction (absolute)
  offset,    \* clock offset: counter at the last rotation
  fileNo,    \* current binlog file
  blocking,  \* m_last_blocking_transaction (absolute)
  blc, bsn, bfile, bws,   \* the binlog: position -> written annotation, write set
  tstate, worker, db, rd  \* the replica applier (MySQLApplier)

srcVars == <<sst, held, lcA, pos, nAdmin, counter, maxc, offset, fileNo,
             blocking, blc, bsn, bfile, bws>>
appVars == <<tstate, worker, db, rd>>   \* = A!avars (TLC cannot UNCHANGED an instanced tuple)
vars == <<srcVars, appVars>>

\* The replica takes the source's locks (xl empty): no commit-order deadlock here;
\* MCMySQLRetry.tla checks those.
A == INSTANCE MySQLApplier WITH lc <- blc, sn <- bsn, file <- bfile, ws <- bws,
                                xl <- [t \in 1..N |-> {}], victim_wakeup_lost <- FALSE,
                                TicketWrap <- 0, ticket_overflow <- FALSE

Max2(a, b) == IF a >= b THEN a ELSE b
Positions == 1..N

SrcInit ==
  /\ sst = [c \in Clients |-> "running"]
  /\ held = [c \in Clients |-> {}]
  /\ lcA = [c \in Clients |-> 0]
  /\ pos = [c \in Clients |-> 0]
  /\ nAdmin = 0
  /\ counter = 0 /\ maxc = 0 /\ offset = 0 /\ fileNo = 1 /\ blocking = 0
  /\ blc = [t \in Positions |-> 0] /\ bsn = [t \in Positions |-> 0]
  /\ bfile = [t \in Positions |-> 0] /\ bws = [t \in Positions |-> {}]

Init == SrcInit /\ A!AInit

\* One DML statement of c: it row-locks key k (keys ascending, so the write
\* set is any non-empty subset of Keys) and the statement-level prepare
\* snapshots the committed clock.
Stmt(c, k) ==
  /\ sst[c] = "running"
  /\ \A h \in held[c] : h < k
  /\ \A d \in Clients \ {c} : k \notin held[d]             \* row lock free
  /\ held' = [held EXCEPT ![c] = @ \cup {k}]
  /\ lcA' = [lcA EXCEPT ![c] = maxc]
  /\ UNCHANGED <<sst, pos, nAdmin, counter, maxc, offset, fileNo, blocking,
                 blc, bsn, bfile, bws>>

\* c issues COMMIT and is flushed; admin says whether it is an admin
\* statement (decided here: it only changes what happens at flush).
Flush(c, admin) ==
  /\ sst[c] = "running" /\ held[c] # {}
  /\ admin => nAdmin < MaxAdmin
  /\ LET s == counter + 1
         floor == IF admin_barrier_missing THEN 0 ELSE blocking
         parent == IF lcA[c] <= offset THEN 0 ELSE Max2(lcA[c], floor) - offset
     IN /\ counter' = s
        /\ pos' = [pos EXCEPT ![c] = s]
        /\ blc' = [blc EXCEPT ![s] = parent]
        /\ bsn' = [bsn EXCEPT ![s] = s - offset]
        /\ bfile' = [bfile EXCEPT ![s] = fileNo]
        /\ bws' = [bws EXCEPT ![s] = held[c]]
        /\ blocking' = IF admin /\ ~admin_barrier_missing THEN s ELSE blocking
  /\ nAdmin' = IF admin THEN nAdmin + 1 ELSE nAdmin
  \* an admin statement lets its locks go before its engine commit (§1.2)
  /\ held' = IF admin THEN [held EXCEPT ![c] = {}] ELSE held
  /\ sst' = [sst EXCEPT ![c] = "flushed"]
  /\ UNCHANGED <<lcA, maxc, offset, fileNo>>

SrcCommit(c) ==
  /\ sst[c] = "flushed"
  /\ BinlogOrderCommits =>
       \A d \in Clients : sst[d] = "flushed" => pos[c] <= pos[d]
  /\ maxc' = IF pos[c] <= offset THEN maxc ELSE Max2(maxc, pos[c])
  /\ sst' = [sst EXCEPT ![c] = "committed"]
  \* release the locks; the client's private state is dead from here on
  /\ held' = [held EXCEPT ![c] = {}]
  /\ lcA' = [lcA EXCEPT ![c] = 0]
  /\ pos' = [pos EXCEPT ![c] = 0]
  /\ UNCHANGED <<nAdmin, counter, offset, fileNo, blocking, blc, bsn, bfile, bws>>

Rotate ==
  /\ offset < counter /\ counter < N    \* no empty file, none after the last flush
  /\ fileNo < MaxFiles
  /\ offset' = counter
  /\ fileNo' = fileNo + 1
  /\ UNCHANGED <<sst, held, lcA, pos, nAdmin, counter, maxc, blocking,
                 blc, bsn, bfile, bws>>

SrcDone == \A c \in Clients : sst[c] = "committed"

SrcNext == \/ Rotate
           \/ \E c \in Clients : \/ \E k \in Keys : Stmt(c, k)
                                \/ \E admin \in BOOLEAN : Flush(c, admin)
                                \/ SrcCommit(c)

Next == \/ SrcNext /\ UNCHANGED appVars
        \/ SrcDone /\ A!ANext /\ UNCHANGED srcVars

Spec == Init /\ [][Next]_vars
LiveSpec == Spec /\ WF_vars(Next)

AllDone == SrcDone /\ A!AllCommitted

-----------------------------------------------------------------------------
(* Properties *)

TypeOK ==
  /\ sst \in [Clients -> {"running", "flushed", "committed"}]
  /\ held \in [Clients -> SUBSET Keys]
  /\ \A c, d \in Clients : c # d => held[c] \cap held[d] = {}   \* 2PL exclusivity
  /\ lcA \in [Clients -> 0..N] /\ pos \in [Clients -> 0..N]
  /\ nAdmin \in 0..MaxAdmin
  /\ counter \in 0..N /\ maxc \in 0..N /\ offset \in 0..N /\ blocking \in 0..N
  /\ fileNo \in 1..MaxFiles
  /\ blc \in [Positions -> 0..N] /\ bsn \in [Positions -> 0..N]
  /\ bfile \in [Positions -> 0..MaxFiles]
  /\ A!TypeOK

TrackerSoundness ==
  \A i, j \in 1..counter :
    i < j /\ bws[i] \cap bws[j] # {} => A!DependsOn(j, i)

NoConflictingOverlap == A!NoConflictingOverlap
CommitOrderPreserved == A!CommitOrderPreserved
DependenciesRespected == A!DependenciesRespected
SerialEquivalence == A!SerialEquivalence
NeverParallel == A!NeverParallel
NoDeadlock == ~AllDone => ENABLED Next
EventuallyAllCommitted == <>AllDone

\* Clients are interchangeable: no property mentions a client, and every
\* action treats them alike (they are model values).  Safety only.
ClientSymmetry == Permutations(Clients)
=============================================================================
