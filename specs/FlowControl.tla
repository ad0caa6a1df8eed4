----------------------------- MODULE FlowControl -----------------------------
(***************************************************************************)
(* Flow control of certification-based replication (docs/certification.md)*)
(* : a member whose receive queue grows holds back the group's writers.   *)
(*                                                                         *)
(* The group channel is a sequence `chan` delivered to every member in one *)
(* order (the group communication protocol itself is out of scope).  A     *)
(* writer (one per member of Writers) has at most one write-set in flight: *)
(* it waits until its own write-set is delivered (gcs_repl).  N write-sets *)
(* are sent in all.  A member puts every write-set from another member in  *)
(* its receive queue q[m] (its own bypass it: the replicating thread takes *)
(* them); an applier takes them off (Dequeue, at any pace).                *)
(*                                                                         *)
(* GALERA (gcs/src/gcs.cpp).  upper = Upper (gcs.fc_limit x sqrt(members)),*)
(* lower = Lower (upper x gcs.fc_factor).                                  *)
(*   gcs_fc_stop_begin, on delivering a foreign write-set: if nobody has   *)
(*   stopped the group (stop_count <= 0), m has no STOP out (stop_sent =   *)
(*   0) and q[m] > upper, m sends FC_STOP (gcs_fc_stop_end).               *)
(*   gcs_fc_cont_begin, on every dequeue: if m has a STOP out and q[m] <=  *)
(*   lower, m sends FC_CONT.                                               *)
(*   gcs_handle_flow_control: every member counts STOPs minus CONTs in the *)
(*   delivered order (stop_count); writers are paused while it is > 0.    *)
(* The STOP decision marks stop_sent at once, under the receive queue's    *)
(* lock.  Bug fc_stop_mark_late (PXC-4453, percona/galera pull request     *)
(* #283): the decision is taken under the queue's lock, but stop_sent is   *)
(* marked only when the STOP is sent, after the lock is released; an       *)
(* applier that drains the queue in between sees no STOP out and sends no  *)
(* CONT, the STOP then stops the group with nothing left to dequeue: every *)
(* writer waits forever.                                                   *)
(*                                                                         *)
(* GROUP REPLICATION (plugin/group_replication/src/pipeline_stats.cc,      *)
(* Flow_control_module::flow_control_step, do_wait).  Every period (Tick)  *)
(* the members' stats are compared with the applier threshold: if some     *)
(* member's queue exceeds Threshold, the writers' quota for the next       *)
(* period is 90% of the smallest number of write-sets a lagging member     *)
(* applied in this one (members that applied none are not counted; with   *)
(* none left the quota is unlimited), at least 1; otherwise a quota grows  *)
(* by half (release).  A writer over its quota waits until the next period *)
(* (do_wait's timed wait).  quota = 0 means unlimited.                     *)
(*                                                                         *)
(* OUT OF SCOPE: time.  A STOP or CONT goes through `chan` as any message  *)
(* does, so the spec has the writers going on while a STOP travels and    *)
(* staying paused while a CONT travels, but not how long either takes nor *)
(* what the pause costs in throughput: the cluster simulator models that  *)
(* (model/certification_throughput.py, fc_rtt: the measured trip of a     *)
(* flow-control message; docs/certification.md).                          *)
(*                                                                         *)
(* PROPERTIES: QueueBounded (q[m] <= upper + what was in flight when the   *)
(* group stopped: 4 x |Writers|, see QueueBound), NoDeadlock,              *)
(* WritersNeverStoppedForever (liveness: the writers always get going      *)
(* again).  GR's quota bounds a rate, not the queue: QueueBounded fails    *)
(* there (FlowControl_gr_queue_reach.cfg shows how).                       *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS Members, Writers, N, Flavor, Upper, Lower, Threshold, AppliedCap,
          fc_stop_mark_late

ASSUME Writers \subseteq Members /\ Flavor \in {"galera", "gr"} /\ Lower <= Upper

VARIABLES sent,        \* write-sets sent so far
          out,         \* out[w]: writer w has a write-set in flight
          chan,        \* the group channel: messages in delivery order
          q,           \* receive queue lengths
          stopSent,    \* Galera: m's STOP is out (conn->stop_sent_)
          pending,     \* Galera, bug only: m decided to STOP, not yet marked
          stopCount,   \* Galera: STOPs minus CONTs delivered (conn->stop_count)
          quota, used, applied   \* GR: this period's quota (0 = unlimited), its use,
                                 \* what each member applied in the period

vars == <<sent, out, chan, q, stopSent, pending, stopCount, quota, used, applied>>

Paused == IF Flavor = "galera" THEN stopCount > 0 ELSE quota # 0 /\ used >= quota

Init ==
  /\ sent = 0
  /\ out = [w \in Writers |-> FALSE]
  /\ chan = <<>>
  /\ q = [m \in Members |-> 0]
  /\ stopSent = [m \in Members |-> 0]
  /\ pending = [m \in Members |-> FALSE]
  /\ stopCount = 0
  /\ quota = 0 /\ used = 0
  /\ applied = [m \in Members |-> 0]

Send(w) ==
  /\ sent < N /\ ~out[w] /\ ~Paused
  /\ sent' = sent + 1
  /\ out' = [out EXCEPT ![w] = TRUE]
  /\ chan' = Append(chan, [t |-> "ws", from |-> w])
  /\ used' = IF Flavor = "gr" THEN used + 1 ELSE used
  /\ UNCHANGED <<q, stopSent, pending, stopCount, quota, applied>>

\* Galera's STOP decision of member m on a queue of length len (gcs_fc_stop_begin).
StopDecision(m, len) ==
  Flavor = "galera" /\ stopCount <= 0 /\ stopSent[m] <= 0 /\ ~pending[m] /\ len > Upper

Deliver ==
  /\ chan # <<>>
  /\ LET h == Head(chan) IN
     IF h.t = "ws"
     THEN LET q2 == [m \in Members |-> IF m = h.from THEN q[m] ELSE q[m] + 1]
              stoppers == {m \in Members \ {h.from} : StopDecision(m, q2[m])}
          IN /\ q' = q2
             /\ out' = IF h.from \in Writers THEN [out EXCEPT ![h.from] = FALSE] ELSE out
             /\ IF fc_stop_mark_late
                THEN /\ pending' = [m \in Members |-> pending[m] \/ m \in stoppers]
                     /\ chan' = Tail(chan)
                     /\ UNCHANGED stopSent
                ELSE /\ stopSent' = [m \in Members |-> IF m \in stoppers THEN 1 ELSE stopSent[m]]
                     \* one STOP per member that stops here
                     /\ chan' = Tail(chan) \o [i \in 1..Cardinality(stoppers) |->
                                                 [t |-> "stop", from |-> 0]]
                     /\ UNCHANGED pending
             /\ UNCHANGED <<stopCount>>
     ELSE /\ stopCount' = stopCount + (IF h.t = "stop" THEN 1 ELSE -1)
          /\ chan' = Tail(chan)
          /\ UNCHANGED <<q, out, stopSent, pending>>
  /\ UNCHANGED <<sent, quota, used, applied>>

\* Bug fc_stop_mark_late: the recv thread marks stop_sent and sends its STOP
\* only now (gcs_fc_stop_end), after the queue's lock was released.
StopSend(m) ==
  /\ pending[m]
  /\ pending' = [pending EXCEPT ![m] = FALSE]
  /\ stopSent' = [stopSent EXCEPT ![m] = 1]
  /\ chan' = Append(chan, [t |-> "stop", from |-> 0])
  /\ UNCHANGED <<sent, out, q, stopCount, quota, used, applied>>

Dequeue(m) ==
  /\ q[m] > 0
  /\ q' = [q EXCEPT ![m] = q[m] - 1]
  /\ applied' = [applied EXCEPT ![m] = IF applied[m] < AppliedCap THEN applied[m] + 1
                                                                   ELSE applied[m]]
  /\ IF Flavor = "galera" /\ stopSent[m] > 0 /\ Lower >= q[m] - 1     \* gcs_fc_cont_begin
     THEN /\ stopSent' = [stopSent EXCEPT ![m] = 0]
          /\ chan' = Append(chan, [t |-> "cont", from |-> 0])
     ELSE UNCHANGED <<stopSent, chan>>
  /\ UNCHANGED <<sent, out, pending, stopCount, quota, used>>

\* GR's flow_control_step, once a period.
Tick ==
  /\ Flavor = "gr"
  /\ LET lagging == {m \in Members : q[m] > Threshold}
         caps == {applied[m] : m \in {x \in lagging : applied[x] > 0}}
         minCap == CHOOSE c \in caps : \A d \in caps : c <= d
     IN quota' = IF lagging = {}
                 THEN IF quota = 0 \/ quota >= AppliedCap THEN 0
                      ELSE quota + (IF quota \div 2 > 0 THEN quota \div 2 ELSE 1)
                 ELSE IF caps = {} THEN 0
                      ELSE IF (minCap * 9) \div 10 > 1 THEN (minCap * 9) \div 10 ELSE 1
  /\ used' = 0
  /\ applied' = [m \in Members |-> 0]
  /\ UNCHANGED <<sent, out, chan, q, stopSent, pending, stopCount>>

AllDone == sent = N /\ chan = <<>> /\ \A m \in Members : q[m] = 0 /\ ~pending[m]

Next ==
  \/ \E w \in Writers : Send(w)
  \/ Deliver
  \/ \E m \in Members : StopSend(m) \/ Dequeue(m)
  \/ Tick /\ ~AllDone

Spec == Init /\ [][Next]_vars
LiveSpec == Spec /\ WF_vars(Next)

-----------------------------------------------------------------------------
(* Properties *)

TypeOK ==
  /\ sent \in 0..N /\ q \in [Members -> Nat] /\ stopSent \in [Members -> 0..1]
  /\ stopCount \in Int

\* The queue stays within the upper limit plus what is in flight.  A member's
\* STOP decision waits while another member has the group stopped
\* (stop_count > 0), so its queue can pass the limit by what arrives during
\* that member's stop (the write-sets already in the channel, one per writer,
\* and one more each from writers freed before the STOP arrived: 2 per
\* writer), and again by as much during its own stop.  TLC reaches upper + 3
\* with one writer and upper + 4 with two in these models (docs/certification.md).
QueueBound == (IF Flavor = "galera" THEN Upper ELSE Threshold) + 4 * Cardinality(Writers)
QueueBounded == \A m \in Members : q[m] <= QueueBound

NoDeadlock == ~AllDone => ENABLED Next

\* Liveness: the writers are never stopped forever.
WritersNeverStoppedForever == []<>(~Paused \/ sent = N)
=============================================================================
