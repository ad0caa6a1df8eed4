-------------------------- MODULE TraceMariaDBApplier ------------------------
(***************************************************************************)
(* Trace validation of the Python MariaDB applier (applier_mariadb.py)     *)
(* against MariaDBApplier.tla: is a simulated schedule a behaviour of it? *)
(* spec?  Written by checks/trace_validation.py, which generates a module  *)
(* that EXTENDS this one and defines the constant Traces as literals.     *)
(*                                                                         *)
(* Traces is a tuple of schedules; TLC picks one (k) at Init, so one run   *)
(* validates many.  Each is a record: n, workers, keys (a set), mode, the  *)
(* relay log txn ([ddl, ws] per transaction), cid (commit_id, 0 = none),   *)
(* waited (FL_WAITED), all of it arrived (avail = n), and log: the         *)
(* simulator's events in order, [a |-> action, t |-> transaction,          *)
(* w |-> worker or 0].  A kill is logged right after the Start/Retry of   *)
(* the transaction whose lock request caused it.                          *)
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

CONSTANTS Traces, gco_start_on_exec, optimistic_no_kill

VARIABLES k, i, tstate, gco, specwait, drv, marked, retry, lk, rd, db, early

avars == <<tstate, gco, specwait, drv, marked, retry, lk, rd, db, early>>
vars == <<k, i, avars>>

A(j) == INSTANCE MariaDBApplier WITH
          N <- Traces[j].n, Workers <- Traces[j].workers, Keys <- Traces[j].keys,
          Mode <- Traces[j].mode, txn <- Traces[j].txn, cid <- Traces[j].cid,
          waited <- Traces[j].waited, avail <- Traces[j].n

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
  \/ e.a = "kill"     /\ A(j)!Kill(e.t)
  \/ e.a = "retry"    /\ A(j)!Retry(e.t)
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

State == [tstate |-> tstate, gco |-> gco, marked |-> marked, retry |-> retry, lk |-> lk]

\* What the guards of the event's action say in the current state (for the report).
Why(j, e) ==
  LET t == e.t
  IN IF t = 0 THEN [all_committed |-> A(j)!AllCommitted, some_step |-> ENABLED A(j)!ANext]
     ELSE IF e.a = "dispatch"
     THEN [tstate |-> tstate[t], slot |-> A(j)!Slot(t),
           previous_dispatched |-> t = 1 \/ tstate[t - 1] # "queued"]
     ELSE IF e.a \in {"start", "retry"}
     THEN [tstate |-> tstate[t], killed |-> retry[t], thread_free |-> A(j)!ThreadFree(t),
           gco |-> gco[t], gco_released |-> A(j)!GcoReleased(t), speculation_wait |-> specwait[t],
           previous_committed |-> A(j)!PrevCommitted(t)]
     ELSE IF e.a = "exec_end"
     THEN [tstate |-> tstate[t], locks_held_by_others |-> {x \in A(j)!WS(t) : lk[x] \notin {0, t}}]
     ELSE IF e.a = "commit"
     THEN [tstate |-> tstate[t], previous_committed |-> A(j)!PrevCommitted(t)]
     ELSE [tstate |-> tstate[t], waiting_for_it |-> {u \in 1..(t - 1) : A(j)!WaitsFor(u, t)}]

Verdict ==
  IF i = Len(Log) THEN PrintT(<<"accepted", k>>)
  ELSE IF ENABLED TraceNext THEN TRUE
  ELSE \E j \in {k} : PrintT(<<"stuck", k, i, State, Why(j, Log[i + 1])>>)
=============================================================================
