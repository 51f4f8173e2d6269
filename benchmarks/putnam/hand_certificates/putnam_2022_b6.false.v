From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Reals.
Open Scope R.
Definition putnam_2022_b6_solution := fun (f : R -> R) =>
    exists (c : R), c >= 0 /\ forall (x : R), x >= 0 /\ f x >= 0 -> f x = 1 / (1 + c * x).
Theorem putnam_2022_b6_is_false :
    ~ (forall (p : (R -> R) -> Prop := fun f : R -> R => forall (x y: R), (x > 0 /\ y > 0 /\ f x > 0 /\ f y > 0) ->
        (continuity_pt f x /\ f (x * f y) + f (y * f x) = 1 + f (x + y))), forall f : R -> R, p f <-> putnam_2022_b6_solution f).
Proof.
intro H. cbv zeta in H. destruct (H (fun _ => 0)) as [H1 _].
specialize (H1 ltac:(intros x y [? [? [? ?]]]; lra)).
destruct H1 as [c [Hc Hf]]. specialize (Hf 0 ltac:(lra)).
rewrite Rmult_0_r, Rplus_0_r in Hf. lra.
Qed.
Definition putnam_2022_b6_audit_refutation_tie (forall_audit_H : forall (p : (R -> R) -> Prop := fun f : R -> R => forall (x y: R), (x > 0 /\ y > 0 /\ f x > 0 /\ f y > 0) ->
        (continuity_pt f x /\ f (x * f y) + f (y * f x) = 1 + f (x + y))), forall f : R -> R, p f <-> putnam_2022_b6_solution f) (p : (R -> R) -> Prop := fun f : R -> R => forall (x y: R), (x > 0 /\ y > 0 /\ f x > 0 /\ f y > 0) ->
        (continuity_pt f x /\ f (x * f y) + f (y * f x) = 1 + f (x + y))) :
    forall f : R -> R, p f <-> putnam_2022_b6_solution f
    := let _ := @putnam_2022_b6_is_false forall_audit_H in forall_audit_H.
Definition putnam_2022_b6_audit_refutation_same
    := ltac:(lazymatch type of putnam_2022_b6_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
 
