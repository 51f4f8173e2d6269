From Coq Require Import Lia Psatz Lra.
From mathcomp Require Import zify ring.
Require Import Reals QArith Coquelicot.Coquelicot. From mathcomp Require Import div.
Open Scope R.
Definition putnam_2008_b5_solution (f : R -> R) := exists n : Z, f = (fun x => x + IZR n) \/ f = (fun x => -x + IZR n).
Theorem putnam_2008_b5_is_false :
    ~ (forall (f: R -> R)
    (hf : (forall x: R, ex_derive f x) /\ continuity (Derive f)), (forall (q: Q), exists (n1 n2 d: nat), Q2R q = INR n1 / INR d /\ f (Q2R q) = INR n2 / INR d /\ coprime n1 d = true /\ coprime n2 d = true) <-> putnam_2008_b5_solution f).
Proof.
intro H.
assert (D : forall y, Derive (fun x => x + IZR 0) y = 1).
{ intro y. apply is_derive_unique. auto_derive; [exact I | ring]. }
assert (hf : (forall x : R, ex_derive (fun x => x + IZR 0) x) /\ continuity (Derive (fun x => x + IZR 0))).
{ split.
  - intro x. auto_derive. exact I.
  - intro y. apply continuity_pt_ext with (f := fun _ => 1).
    + intro z. rewrite D. reflexivity.
    + apply continuity_pt_const. intros a b. reflexivity. }
destruct (H (fun x => x + IZR 0) hf) as [_ H2].
assert (S : putnam_2008_b5_solution (fun x => x + IZR 0)) by (exists 0%Z; left; reflexivity).
destruct (H2 S (-1 # 1)%Q) as [n1 [n2 [d [E1 _]]]].
unfold Q2R in E1. simpl in E1.
assert (P : 0 <= INR n1 / INR d).
{ unfold Rdiv. apply Rmult_le_pos; [apply pos_INR|].
  destruct d as [|d].
  - simpl. rewrite Rinv_0. lra.
  - left. apply Rinv_0_lt_compat. apply lt_0_INR. lia. }
lra.
Qed.
Definition putnam_2008_b5_audit_refutation_tie (forall_audit_H : forall (f: R -> R)
    (hf : (forall x: R, ex_derive f x) /\ continuity (Derive f)), (forall (q: Q), exists (n1 n2 d: nat), Q2R q = INR n1 / INR d /\ f (Q2R q) = INR n2 / INR d /\ coprime n1 d = true /\ coprime n2 d = true) <-> putnam_2008_b5_solution f) (f: R -> R)
    (hf : (forall x: R, ex_derive f x) /\ continuity (Derive f)) :
    (forall (q: Q), exists (n1 n2 d: nat), Q2R q = INR n1 / INR d /\ f (Q2R q) = INR n2 / INR d /\ coprime n1 d = true /\ coprime n2 d = true) <-> putnam_2008_b5_solution f
    := let _ := @putnam_2008_b5_is_false forall_audit_H in forall_audit_H f hf.
Definition putnam_2008_b5_audit_refutation_same
    := ltac:(lazymatch type of putnam_2008_b5_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
