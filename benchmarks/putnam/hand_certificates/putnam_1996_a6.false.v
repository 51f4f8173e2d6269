From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Reals Coquelicot.Coquelicot.
Open Scope R.
Definition putnam_1996_a6_solution (c: R) (f: R -> R) :=  if Rle_dec c (1/4) then (exists (d: R), f = (fun _ => d)) else ((forall (x: R), 0 <= x <= c -> continuity_pt f x) /\ f 0 = f c /\ (forall (x: R), x > 0 -> f x = f (pow x 2 + c)) /\ (forall (x: R), x < 0 -> f x = f (-x))).
Theorem putnam_1996_a6_is_false :
    ~ (forall (c: R)
    (hc : c > 0), forall (f: R -> R), (continuity f /\ (forall (x: R), f x = pow x 2 + c)) <-> putnam_1996_a6_solution c f).
Proof.
intro H. destruct (H 1 Rlt_0_1 (fun x => pow x 2 + 1)) as [H1 _].
assert (A : continuity (fun x => pow x 2 + 1) /\ (forall x, (fun x => pow x 2 + 1) x = pow x 2 + 1)).
{ split; [ reg | reflexivity ]. }
specialize (H1 A). unfold putnam_1996_a6_solution in H1.
destruct (Rle_dec 1 (1/4)) as [h|h]; [lra|].
destruct H1 as [_ [H0 _]]. simpl in H0. lra.
Qed.
Definition putnam_1996_a6_audit_refutation_tie (forall_audit_H : forall (c: R)
    (hc : c > 0), forall (f: R -> R), (continuity f /\ (forall (x: R), f x = pow x 2 + c)) <-> putnam_1996_a6_solution c f) (c: R)
    (hc : c > 0) :
    forall (f: R -> R), (continuity f /\ (forall (x: R), f x = pow x 2 + c)) <-> putnam_1996_a6_solution c f
    := let _ := @putnam_1996_a6_is_false forall_audit_H in forall_audit_H c hc.
Definition putnam_1996_a6_audit_refutation_same
    := ltac:(lazymatch type of putnam_1996_a6_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
