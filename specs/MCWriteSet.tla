----------------------------- MODULE MCWriteSet -----------------------------
(* Model-checking wrapper for WriteSet.tla: symmetry only.                 *)
(* Symmetry is sound here: the spec never names a particular key value,    *)
(* unique value or session (no CHOOSE over them, no constants of them in   *)
(* the properties), so renaming them maps behaviours to behaviours and     *)
(* preserves every invariant checked (all are safety properties; no        *)
(* liveness is checked under symmetry).                                    *)
EXTENDS WriteSet, TLC

Symm == Permutations(Pks) \cup Permutations(Uks) \cup Permutations(Sessions)
=============================================================================
