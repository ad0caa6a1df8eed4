-------------------------- MODULE TraceMySQLApplier --------------------------
(***************************************************************************)
(* Trace validation of the Python MySQL applier (model/applier_mysql.py)   *)
(* against MySQLApplier.tla: is a simulated schedule a behaviour of the   *)
(* spec?  Written by checks/trace_validation.py, which generates a module  *)
(* that EXTENDS this one and defines the constant Traces as literals.     *)
(*                                                                         *)
(* Traces is a tuple of schedules; TLC picks one (k) at Init, so one run   *)
(* validates many.  Each is a record: n, workers, keys (a set), cg         *)
(* (CheckpointGroup), pco (PreserveCommitOrder), the annotation lc, sn,    *)
(* file, ws, xl (tuples indexed by transaction), tw (TicketWrap), and     *)
(* log: the simulator's                                                   *)
(* events in order, [a |-> action, t |-> transaction, w |-> worker or 0].  *)
(* The last event may be "end" (the simulator finished: every transaction *)
(* committed) or "stuck" (the simulator deadlocked: the spec must have no *)
(* step either).                                                           *)
(*                                                                         *)
(* TraceNext is the spec's action named by the next logged event, with    *)
(* exactly its arguments; i counts matched events.  Acceptance: a state    *)
(* with i = Len(log) is reachable, i.e. the invariant NotFullyMatched is   *)
(* violated (TLC 2.18 has no POSTCONDITION).  Rejection: TLC, checking     *)
(* deadlock, stops in a state with i < Len(log) where the logged event is  *)
(* not a spec step; that state is the spec state before the event.         *)
(* When a final "stuck" cannot be matched, no state is stuck (FreeStep    *)
(* stutters): TLC reports neither; the schedule is rejected at that event  *)
(* (the spec cannot deadlock from there).                                  *)
(* Verdict is the batch form: an always-true invariant that prints, per   *)
(* schedule, "accepted" or the stuck state (run with -deadlock).           *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC

CONSTANTS Traces,
          lwm_off_by_one, lwm_not_prefix, rotation_ignored, commit_order_unenforced,
          victim_wakeup_lost, ticket_overflow

VARIABLES k, i, tstate, worker, db, rd

avars == <<tstate, worker, db, rd>>
vars == <<k, i, avars>>

A(j) == INSTANCE MySQLApplier WITH
          N <- Traces[j].n, Workers <- Traces[j].workers, Keys <- Traces[j].keys,
          CheckpointGroup <- Traces[j].cg, PreserveCommitOrder <- Traces[j].pco,
          lc <- Traces[j].lc, sn <- Traces[j].sn, file <- Traces[j].file,
          ws <- Traces[j].ws, xl <- Traces[j].xl,
          TicketWrap <- Traces[j].tw

Log == Traces[k].log

Init == /\ k \in 1..Len(Traces)
        /\ i = 0
        /\ \E j \in {k} : A(j)!AInit

\* The spec step that the logged event e names (j is k, as a constant).
Step(j, e) ==
  \/ e.a = "dispatch" /\ A(j)!Dispatch(e.t, e.w)
  \/ e.a = "start"    /\ A(j)!Start(e.t)
  \/ e.a = "exec_end" /\ A(j)!ExecEnd(e.t)
  \/ e.a = "commit"   /\ A(j)!Commit(e.t)
  \* the simulator logs a commit-order victim after its killer's step, which rolled it back
  \/ e.a = "kill"     /\ tstate[e.t] = "dispatched" /\ UNCHANGED avars
  \* an InnoDB deadlock victim (a cycle of lock waits) is a step of its own
  \/ e.a = "kill"     /\ A(j)!DeadlockVictim(e.t)
  \/ e.a = "end"      /\ A(j)!AllCommitted /\ UNCHANGED avars
  \/ e.a = "stuck"    /\ ~A(j)!AllCommitted /\ ~ENABLED A(j)!ANext
                      /\ UNCHANGED avars

\* Before a final "stuck" the spec may move on its own: a transaction the simulator
\* keeps waiting for its locks before it starts is already executing in the spec (its lock
\* waits are inside Start..ExecEnd).  "stuck" then matches iff the spec can reach a state
\* with no step either.  Free states also stutter, so that TLC's deadlock check only ever
\* stops at an unmatched event before it.
FreeStep(j) ==
  /\ i + 1 = Len(Traces[j].log)
  /\ Traces[j].log[i + 1].a = "stuck"
  /\ A(j)!ANext \/ UNCHANGED avars
  /\ UNCHANGED <<i, k>>

TraceNext ==
  \E j \in {k} :
    \/ /\ i < Len(Traces[j].log)
       /\ Step(j, Traces[j].log[i + 1])
       /\ i' = i + 1
       /\ k' = k
    \/ FreeStep(j)

NotFullyMatched == i < Len(Log)

State == [tstate |-> tstate, worker |-> worker, db |-> db]

\* What the guards of the event's action say in the current state (for the report).
Why(j, e) ==
  LET t == e.t
  IN IF t = 0 THEN [all_committed |-> A(j)!AllCommitted, some_step |-> ENABLED A(j)!ANext]
     ELSE IF e.a = "dispatch"
     THEN [tstate |-> tstate[t], in_order |-> \A u \in 1..(t - 1) : tstate[u] # "queued",
           lowest_idle_worker |-> \* 0: none idle
             IF \E w \in 1..Traces[j].workers : A(j)!LowestIdle(w)
             THEN CHOOSE w \in 1..Traces[j].workers : A(j)!LowestIdle(w) ELSE 0,
           within_window |-> t <= A(j)!Prefix + Traces[j].cg, committed_prefix |-> A(j)!Prefix,
           barrier |-> A(j)!Barrier(t), last_committed |-> Traces[j].lc[t], lwm |-> A(j)!Lwm(t)]
     ELSE IF e.a = "commit"
     THEN [tstate |-> tstate[t], committed_prefix |-> A(j)!Prefix,
           commit_order_enforced |-> A(j)!EnforceOrder]
     ELSE [tstate |-> tstate[t]]

Verdict ==
  IF i = Len(Log) THEN PrintT(<<"accepted", k>>)
  ELSE IF ENABLED TraceNext THEN TRUE
  ELSE \E j \in {k} : PrintT(<<"stuck", k, i, State, Why(j, Log[i + 1])>>)
=============================================================================
