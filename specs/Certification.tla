---------------------------- MODULE Certification ----------------------------
(***************************************************************************)
(* Certification-based replication (docs/certification.md): Galera and     *)
(* MySQL Group Replication (multi-primary).  Members receive the same      *)
(* write-sets in one total order, certify each one deterministically       *)
(* against their certification index, and apply the others' write-sets in *)
(* parallel.                                                               *)
(*                                                                         *)
(* DELIVERY.  The group communication protocol is out of scope: the total  *)
(* order is write-set order 1..N, and Send(w) appends w to the shared      *)
(* sequence (gcs_repl / XCom's total order, delivered to every member).   *)
(* Every member certifies the sequence in order (Certify), at its own pace.*)
(*                                                                         *)
(* INPUTS, chosen at Init and then constant (every shape is explored):     *)
(*   origin[w]  the member that executed w;  ws[w]  its keys (non-empty).  *)
(* A write-set's SNAPSHOT snap[w] is what its origin had committed when w  *)
(* was sent: Galera's last_seen_seqno (a prefix, commits are in order),   *)
(* GR's snapshot_version (gtid_executed: a set).  Send(w) needs every      *)
(* earlier write-set of the same origin that shares a key finished there   *)
(* (InnoDB row locks: the later one cannot run until the earlier one       *)
(* committed or rolled back).                                              *)
(*                                                                         *)
(* CERTIFICATION (Certify(m)), on member m, for the next write-set w:      *)
(*   idx[m][k] is the last write-set certified OK on m that wrote key k    *)
(*   (0: none, or garbage-collected).  w fails iff a key k of ws[w] has a  *)
(*   writer v = idx[m][k] that w's snapshot does not cover:               *)
(*   - Galera (galera/src/certification.cpp, check_against): v's seqno >   *)
(*     w's last_seen_seqno, from another origin;                           *)
(*   - GR (plugin/group_replication/src/certifier.cc, Certifier::certify): *)
(*     v's certified snapshot version (snap[v] + v) is not a subset of     *)
(*     w's snapshot.                                                       *)
(*   On success the keys point to w.  Galera gives w depends_seqno =       *)
(*   the largest writer of its keys, at least the index's floor (the       *)
(*   lowest write-set still in trx_map_ minus 1: do_test).  GR gives a     *)
(*   remote w last_committed = the largest writer of its keys that was     *)
(*   remote on m (local writers are stored with sequence number -1),       *)
(*   at least parallel_applier_last_committed_global; here both are kept  *)
(*   as write-set indexes (dep[m][w]), which is what the applier's lwm     *)
(*   compares.                                                             *)
(*                                                                         *)
(* GARBAGE COLLECTION (Purge(m, b)).  Entries of write-sets up to b are   *)
(* dropped.  b is at most the safe bound: every member has finished them (Galera's   *)
(* commit cut, GR's stable set), and every write-set not yet certified on  *)
(* m has them in its snapshot (Galera: deps_set_ / safe-to-discard, GR:    *)
(* per-sender FIFO delivery of the stable-set messages).  GR then raises   *)
(* parallel_applier_last_committed_global to what it certified so far     *)
(* (Certifier::garbage_collect).  Bug cert_purge_past_safe (Galera #733,   *)
(* codership/galera commit 85a48720): purge up to m's own committed prefix *)
(* (apply_monitor_.last_left()) instead.                                   *)
(*                                                                         *)
(* APPLYING (per member).  Galera (galera/src/replicator_smm.cpp,          *)
(* monitor.hpp): a remote write-set is certified by the slave thread that  *)
(* took it from the receive queue (wsrep_slave_threads = Workers; it       *)
(* holds that thread until it committed), starts once depends_seqno <=     *)
(* the apply monitor's last_left (ApplyOrder::condition), and commits in   *)
(* seqno order (CommitOrder NO_OOOC); a local one enters the apply monitor *)
(* at once and commits in seqno order too; a write-set that failed         *)
(* certification finishes in seqno order as well (its seqno is cancelled  *)
(* in order).  Bug failed_ws_commits_early (MDEV-24327): a failed write-set*)
(* finishes (checkpoints its XID) without waiting for its turn.  GR: the   *)
(* applier is MySQL's LOGICAL_CLOCK coordinator with preserve-commit-order *)
(* (in-order dispatch to Workers, start when last_committed is committed,  *)
(* commit in relay-log order); a failed remote write-set is discarded; a   *)
(* local one commits once certified, in no order with the remote ones;     *)
(* a remote write-set waits for the row locks a local one still holds.     *)
(*                                                                         *)
(* PROPERTIES (docs/names.md): Agreement, NoLostUpdate, SameCommitOrder,   *)
(* CommitOrderPreserved (Galera: every member commits in seqno order),     *)
(* NoConflictingOverlap, NoDeadlock, EventuallyAllCommitted (liveness),    *)
(* NeverParallel (reachability, must be violated).                         *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS Members, N, Keys, Workers, Flavor,
          cert_purge_past_safe, failed_ws_commits_early

ASSUME Flavor \in {"galera", "gr"} /\ N \in Nat /\ Workers \in Nat \ {0}

WS == 1..N
Decisions == {"none", "ok", "fail"}

VARIABLES origin, ws,          \* inputs (Init), then constant
          sent, snap,          \* the total order: 1..sent delivered; snapshots
          cert, dec, dep,      \* per member: certified prefix, decisions, dependencies
          idx, pb, floor,      \* per member: certification index, purge bound, GR floor
          st                   \* per member, per write-set: "wait" | "run" | "done"

vars == <<origin, ws, sent, snap, cert, dec, dep, idx, pb, floor, st>>

Max(S) == IF S = {} THEN 0 ELSE CHOOSE x \in S : \A y \in S : y <= x
Min2(a, b) == IF a < b THEN a ELSE b

Conflict(v, w) == ws[v] \cap ws[w] # {}
Remote(m, w) == origin[w] # m
Done(m, w) == st[m][w] = "done"
\* The commit monitor's last_left: every write-set up to it is done on m.
LastLeft(m) == Max({s \in 0..N : \A v \in 1..s : Done(m, v)})
\* What m has committed (write-sets certified OK and done there).
Committed(m) == {v \in WS : dec[m][v] = "ok" /\ Done(m, v)}

Init ==
  /\ origin \in [WS -> Members]
  /\ ws \in [WS -> (SUBSET Keys) \ {{}}]
  /\ sent = 0
  /\ snap = [w \in WS |-> {}]
  /\ cert = [m \in Members |-> 0]
  /\ dec = [m \in Members |-> [w \in WS |-> "none"]]
  /\ dep = [m \in Members |-> [w \in WS |-> 0]]
  /\ idx = [m \in Members |-> [k \in Keys |-> 0]]
  /\ pb = [m \in Members |-> 0]
  /\ floor = [m \in Members |-> 0]
  /\ st = [m \in Members |-> [w \in WS |-> "wait"]]

-----------------------------------------------------------------------------
(* Sending: the origin replicates w with its snapshot. *)

Send(w) ==
  /\ w = sent + 1 /\ w <= N
  /\ \A v \in 1..(w - 1) : (origin[v] = origin[w] /\ Conflict(v, w))
                             => (cert[origin[w]] >= v /\ Done(origin[w], v))
  /\ sent' = w
  /\ snap' = [snap EXCEPT ![w] = IF Flavor = "galera" THEN 1..LastLeft(origin[w])
                                                     ELSE Committed(origin[w])]
  /\ UNCHANGED <<origin, ws, cert, dec, dep, idx, pb, floor, st>>

-----------------------------------------------------------------------------
(* Certification, in delivery order, on each member. *)

\* Galera: a slave thread per remote write-set until it is done.
BusyThreads(m) == Cardinality({v \in 1..cert[m] : Remote(m, v) /\ ~Done(m, v)})

Covers(m, v, w) ==
  IF Flavor = "galera" THEN v \in snap[w] \/ origin[v] = origin[w]
  ELSE snap[v] \cup {v} \subseteq snap[w]

Fails(m, w) == \E k \in ws[w] : idx[m][k] # 0 /\ ~Covers(m, idx[m][k], w)

Depends(m, w) ==
  IF Flavor = "galera"
  THEN Max({idx[m][k] : k \in ws[w]} \cup {pb[m]})
  ELSE Max({idx[m][k] : k \in {j \in ws[w] : idx[m][j] # 0 /\ Remote(m, idx[m][j])}}
           \cup {floor[m]})

Certify(m) ==
  LET w == cert[m] + 1 IN
  /\ w <= sent
  /\ Flavor = "galera" /\ Remote(m, w) => BusyThreads(m) < Workers
  /\ cert' = [cert EXCEPT ![m] = w]
  /\ IF Fails(m, w)
     THEN /\ dec' = [dec EXCEPT ![m][w] = "fail"]
          \* GR drops a failed write-set; Galera cancels its seqno in order
          \* (bug failed_ws_commits_early: at once)
          /\ st' = [st EXCEPT ![m][w] = IF Flavor = "gr" THEN "done" ELSE "wait"]
          /\ UNCHANGED <<dep, idx>>
     ELSE /\ dec' = [dec EXCEPT ![m][w] = "ok"]
          /\ dep' = [dep EXCEPT ![m][w] = Depends(m, w)]
          /\ idx' = [idx EXCEPT ![m] = [k \in Keys |-> IF k \in ws[w] THEN w ELSE idx[m][k]]]
          /\ UNCHANGED st
  /\ UNCHANGED <<origin, ws, sent, snap, pb, floor>>

-----------------------------------------------------------------------------
(* Applying and committing. *)

\* GR's applier holds a worker from dispatch to commit.
GRRunning(m) == Cardinality({v \in WS : st[m][v] = "run"})

Start(m, w) ==
  /\ w <= cert[m] /\ Remote(m, w) /\ dec[m][w] = "ok" /\ st[m][w] = "wait"
  /\ IF Flavor = "galera"
     THEN dep[m][w] <= LastLeft(m)                       \* apply monitor
     ELSE /\ GRRunning(m) < Workers
          /\ \A v \in 1..(w - 1) : (Remote(m, v) /\ dec[m][v] = "ok") => st[m][v] # "wait"
          /\ \A v \in 1..dep[m][w] : (Remote(m, v) /\ dec[m][v] = "ok") => Done(m, v)
          \* row locks a local transaction of m still holds
          /\ \A v \in 1..(w - 1) : (~Remote(m, v) /\ dec[m][v] = "ok" /\ Conflict(v, w))
                                     => Done(m, v)
  /\ st' = [st EXCEPT ![m][w] = "run"]
  /\ UNCHANGED <<origin, ws, sent, snap, cert, dec, dep, idx, pb, floor>>

Commit(m, w) ==
  /\ w <= cert[m] /\ ~Done(m, w)
  /\ \/ /\ dec[m][w] = "ok"
        /\ IF Remote(m, w) THEN st[m][w] = "run" ELSE st[m][w] = "wait"
        /\ IF Flavor = "galera" THEN w = LastLeft(m) + 1            \* commit monitor
           ELSE Remote(m, w) => \A v \in 1..(w - 1) :                \* preserve order
                                  (Remote(m, v) /\ dec[m][v] = "ok") => Done(m, v)
     \/ /\ dec[m][w] = "fail"                                        \* Galera only
        /\ failed_ws_commits_early \/ w = LastLeft(m) + 1
  /\ st' = [st EXCEPT ![m][w] = "done"]
  /\ UNCHANGED <<origin, ws, sent, snap, cert, dec, dep, idx, pb, floor>>

-----------------------------------------------------------------------------
(* Garbage collection of the certification index. *)

SafeBound(m) ==
  Max({s \in 0..cert[m] :
         /\ \A v \in 1..s : \A x \in Members : cert[x] >= v /\ Done(x, v)
         /\ \A u \in (cert[m] + 1)..sent : 1..s \subseteq snap[u] \cup
              {v \in 1..s : dec[m][v] = "fail"}})

PurgeBound(m) == IF cert_purge_past_safe THEN Min2(LastLeft(m), cert[m]) ELSE SafeBound(m)

\* A purge up to b, any bound up to the safe one (the commit cut the group
\* reports lags behind it).
Purge(m, b) ==
  /\ pb[m] < b /\ b <= PurgeBound(m)
  /\ pb' = [pb EXCEPT ![m] = b]
  /\ idx' = [idx EXCEPT ![m] = [k \in Keys |-> IF idx[m][k] <= b THEN 0 ELSE idx[m][k]]]
  /\ floor' = IF Flavor = "gr" THEN [floor EXCEPT ![m] = cert[m]] ELSE floor
  /\ UNCHANGED <<origin, ws, sent, snap, cert, dec, dep, st>>

-----------------------------------------------------------------------------

AllDone == sent = N /\ \A m \in Members : cert[m] = N /\ \A w \in WS : Done(m, w)

Next ==
  \/ \E w \in WS : Send(w)
  \/ \E m \in Members : \/ Certify(m)
                        \/ \E w \in WS : Start(m, w) \/ Commit(m, w) \/ Purge(m, w)

Spec == Init /\ [][Next]_vars
LiveSpec == Spec /\ WF_vars(Next)

-----------------------------------------------------------------------------
(* Properties *)

TypeOK ==
  /\ sent \in 0..N /\ cert \in [Members -> 0..N]
  /\ dec \in [Members -> [WS -> Decisions]]
  /\ st \in [Members -> [WS -> {"wait", "run", "done"}]]
  /\ \A m \in Members : cert[m] <= sent

\* Every member makes the same decision for every write-set.
Agreement ==
  \A w \in WS, m1, m2 \in Members :
    (dec[m1][w] # "none" /\ dec[m2][w] # "none") => dec[m1][w] = dec[m2][w]

\* Of two conflicting write-sets that both pass, the later one saw the earlier:
\* a concurrent conflicting pair never both commits (the later one fails).
NoLostUpdate ==
  \A m \in Members, v, w \in WS :
    (v < w /\ Conflict(v, w) /\ dec[m][v] = "ok" /\ dec[m][w] = "ok") => v \in snap[w]

\* Every member commits conflicting write-sets in the total order.
SameCommitOrder ==
  \A m \in Members, v, w \in WS :
    (v < w /\ Conflict(v, w) /\ dec[m][v] = "ok" /\ dec[m][w] = "ok" /\ Done(m, w))
      => Done(m, v)

\* Galera: every member commits (and cancels failed seqnos) in seqno order.
CommitOrderPreserved ==
  Flavor = "galera" => \A m \in Members, w \in WS : Done(m, w) => \A v \in 1..w : Done(m, v)

\* Two conflicting write-sets never hold their row locks on a member at once:
\* a remote one while it is applied, a local one from its certification to
\* its commit.
Active(m, w) == dec[m][w] = "ok" /\ IF Remote(m, w) THEN st[m][w] = "run" ELSE st[m][w] = "wait"
NoConflictingOverlap ==
  \A m \in Members, v, w \in WS : (v < w /\ Conflict(v, w)) => ~(Active(m, v) /\ Active(m, w))

NoDeadlock == ~AllDone => ENABLED Next
EventuallyAllCommitted == <>AllDone

\* Members and keys are interchangeable (model values; no property names one).  Safety only.
Symmetry == Permutations(Members) \cup Permutations(Keys)

\* Reachability (negated): two remote write-sets are never applied at once.
NeverParallel ==
  \A m \in Members, v, w \in WS :
    v # w => ~(Remote(m, v) /\ Remote(m, w) /\ st[m][v] = "run" /\ st[m][w] = "run")
=============================================================================
