From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Reals Coquelicot.Coquelicot.
Definition putnam_2020_a3_solution := False.
Theorem putnam_2020_a3_is_false :
    ~ (forall (a : nat -> R := fix a (n: nat) := 
        match n with
        | O => PI / 2
        | S n' => sin (a n')
    end), ex_lim_seq (fun n => (a n) ^ 2) <-> putnam_2020_a3_solution).
Proof.
intro H. cbv zeta in H. apply H. apply ex_lim_seq_decr. intro n.
set (a := (fix a (n : nat) : R := match n with O => PI / 2 | S n' => sin (a n') end)).
assert (B : forall m, 0 <= a m <= PI / 2).
{ induction m as [|m IH]; simpl.
  - pose proof PI_RGT_0. lra.
  - change (fix a (n : nat) : R := match n with O => PI / 2 | S n' => sin (a n') end) with a.
    pose proof PI2_1. split.
    + apply sin_ge_0; pose proof PI_RGT_0; lra.
    + pose proof (SIN_bound (a m)). lra. }
change (a (S n) ^ 2 <= a n ^ 2). simpl (a (S n)).
change (fix a (n : nat) : R := match n with O => PI / 2 | S n' => sin (a n') end) with a.
destruct (B n) as [B1 B2].
assert (0 <= sin (a n)) by (apply sin_ge_0; pose proof PI_RGT_0; lra).
assert (sin (a n) <= a n).
{ destruct (Req_dec (a n) 0) as [Z|Z]. - rewrite Z, sin_0. lra. - left. apply sin_lt_x. lra. }
apply pow_incr. lra.
Qed.
Definition putnam_2020_a3_audit_refutation_tie (forall_audit_H : forall (a : nat -> R := fix a (n: nat) := 
        match n with
        | O => PI / 2
        | S n' => sin (a n')
    end), ex_lim_seq (fun n => (a n) ^ 2) <-> putnam_2020_a3_solution) (a : nat -> R := fix a (n: nat) := 
        match n with
        | O => PI / 2
        | S n' => sin (a n')
    end) :
    ex_lim_seq (fun n => (a n) ^ 2) <-> putnam_2020_a3_solution
    := let _ := @putnam_2020_a3_is_false forall_audit_H in forall_audit_H.
Definition putnam_2020_a3_audit_refutation_same
    := ltac:(lazymatch type of putnam_2020_a3_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
