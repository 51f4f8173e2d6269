Require Import Reals QArith Coquelicot.Coquelicot. From mathcomp Require Import div.
Open Scope R.
Definition putnam_2008_b5_solution (f : R -> R) := exists n : Z, f = (fun x => x + IZR n) \/ f = (fun x => -x + IZR n).
Theorem putnam_2008_b5_is_false :
    ~ (forall (f: R -> R)
    (hf : (forall x: R, ex_derive f x) /\ continuity (Derive f)), (forall (q: Q), exists (n1 n2 d: nat), Q2R q = INR n1 / INR d /\ f (Q2R q) = INR n2 / INR d /\ coprime n1 d = true /\ coprime n2 d = true) <-> putnam_2008_b5_solution f).
Proof. Admitted.
Definition putnam_2008_b5_audit_refutation_tie (forall_audit_H : forall (f: R -> R)
    (hf : (forall x: R, ex_derive f x) /\ continuity (Derive f)), (forall (q: Q), exists (n1 n2 d: nat), Q2R q = INR n1 / INR d /\ f (Q2R q) = INR n2 / INR d /\ coprime n1 d = true /\ coprime n2 d = true) <-> putnam_2008_b5_solution f) (f: R -> R)
    (hf : (forall x: R, ex_derive f x) /\ continuity (Derive f)) :
    (forall (q: Q), exists (n1 n2 d: nat), Q2R q = INR n1 / INR d /\ f (Q2R q) = INR n2 / INR d /\ coprime n1 d = true /\ coprime n2 d = true) <-> putnam_2008_b5_solution f
    := let _ := @putnam_2008_b5_is_false forall_audit_H in forall_audit_H f hf.
Definition putnam_2008_b5_audit_refutation_same
    := ltac:(lazymatch type of putnam_2008_b5_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
