------------------------- MODULE TraceCertification -------------------------
(***************************************************************************)
(* Trace validation of the cluster simulator (model/certification_        *)
(* throughput.py) against Certification.tla: is a simulated run, every    *)
(* member's certifications, applies, commits and index purges, a behaviour *)
(* of the spec?  checks/trace_validation_cert.py generates a module that   *)
(* EXTENDS this one and defines Traces as literals.                        *)
(*                                                                         *)
(* Traces is a tuple of runs; TLC picks one (k) at Init.  Each is a record:*)
(* members, n, keys, workers, flavor, origin (1..n -> member), ws (1..n -> *)
(* SUBSET keys) and log: the simulator's events in order, [a |-> action,   *)
(* m |-> member, w |-> write-set (purge: the bound)].  Actions: "send"      *)
(* (Send(w): the snapshot is taken here), "certify" (Certify(m), of w),    *)
(* "start", "commit", "purge" and a final "end" (every write-set finished  *)
(* everywhere).  TraceNext takes the spec action the next event names;     *)
(* acceptance: i = Len(log) is reachable (NotFullyMatched is violated);    *)
(* rejection: TLC stops where the event is no spec step.  Verdict is the   *)
(* batch form (see TraceMySQLApplier.tla).                                 *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC

CONSTANTS Traces, cert_purge_past_safe, failed_ws_commits_early

VARIABLES k, i, origin, ws, sent, snap, cert, dec, dep, idx, pb, floor, st

cvars == <<origin, ws, sent, snap, cert, dec, dep, idx, pb, floor, st>>

C(j) == INSTANCE Certification WITH
          Members <- 1..Traces[j].members, N <- Traces[j].n, Keys <- 1..Traces[j].keys,
          Workers <- Traces[j].workers, Flavor <- Traces[j].flavor

Log == Traces[k].log

Init == /\ k \in 1..Len(Traces)
        /\ i = 0
        /\ \E j \in {k} : /\ C(j)!Init
                          /\ origin = Traces[j].origin
                          /\ ws = Traces[j].ws

Step(j, e) ==
  \/ e.a = "send"    /\ C(j)!Send(e.w)
  \/ e.a = "certify" /\ cert[e.m] + 1 = e.w /\ C(j)!Certify(e.m)
  \/ e.a = "start"   /\ C(j)!Start(e.m, e.w)
  \/ e.a = "commit"  /\ C(j)!Commit(e.m, e.w)
  \/ e.a = "purge"   /\ C(j)!Purge(e.m, e.w)
  \/ e.a = "end"     /\ C(j)!AllDone /\ UNCHANGED cvars

TraceNext ==
  \E j \in {k} :
    /\ i < Len(Traces[j].log)
    /\ Step(j, Traces[j].log[i + 1])
    /\ i' = i + 1
    /\ k' = k

NotFullyMatched == i < Len(Log)

State == [cert |-> cert, dec |-> dec, dep |-> dep, st |-> st, pb |-> pb]

\* What the guards of the event's action see (for the report).
Why(j, e) ==
  IF e.a \in {"end"} THEN [all_done |-> C(j)!AllDone]
  ELSE IF e.a = "send" THEN [sent |-> sent]
  ELSE IF e.a = "purge" THEN [purge_bound |-> C(j)!PurgeBound(e.m), pb |-> pb[e.m]]
  ELSE [last_left |-> C(j)!LastLeft(e.m), certified |-> cert[e.m]]

Verdict ==
  IF i = Len(Log) THEN PrintT(<<"accepted", k>>)
  ELSE IF ENABLED TraceNext THEN TRUE
  ELSE \E j \in {k} : PrintT(<<"stuck", k, i, State, Why(j, Log[i + 1])>>)
=============================================================================
