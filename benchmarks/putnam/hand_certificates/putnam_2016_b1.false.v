From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Reals Coquelicot.Coquelicot.
Definition putnam_2016_b1_solution := 1.
Theorem putnam_2016_b1_is_false :
    ~ (forall (x : nat -> R := fix x (n: nat) :=
        match n with
        | O => 1
        | S n' => ln (exp (x n') - x n')
    end), Series x = putnam_2016_b1_solution).
Proof.
intro H. cbv zeta in H.
set (x := fix x (n : nat) : R := match n with O => 1 | S n' => ln (exp (x n') - x n') end) in H.
assert (XS : forall n, x (S n) = ln (exp (x n) - x n)) by reflexivity.
assert (Pos : forall n, 0 < x n).
{ induction n as [|n IH]. - simpl; lra.
  - rewrite XS. rewrite <- ln_1. apply ln_increasing; [lra|]. pose proof (exp_ineq1 (x n) (Rgt_not_eq _ _ IH)). lra. }
assert (ES : forall n, exp (x (S n)) = exp (x n) - x n).
{ intro n. rewrite XS. apply exp_ln. pose proof (exp_ineq1 (x n) (Rgt_not_eq _ _ (Pos n))). lra. }
assert (Tel : forall n, sum_n x n + exp (x (S n)) = exp 1).
{ induction n as [|n IH].
  - rewrite sum_O, ES. change (x 0%nat) with 1. ring.
  - rewrite sum_Sn, ES. change (plus (sum_n x n) (x (S n))) with (sum_n x n + x (S n)). lra. }
assert (Inc : forall n, sum_n x n <= sum_n x (S n)).
{ intro n. rewrite sum_Sn. change (plus (sum_n x n) (x (S n))) with (sum_n x n + x (S n)). pose proof (Pos (S n)). lra. }
assert (Bd : forall n, sum_n x n <= exp 1).
{ intro n. pose proof (Tel n). pose proof (exp_pos (x (S n))). lra. }
assert (Fin : ex_finite_lim_seq (sum_n x)) by (apply ex_finite_lim_seq_incr with (M := exp 1); assumption).
pose proof (is_lim_seq_incr_compare _ _ (Lim_seq_correct' _ Fin) Inc 1%nat) as C.
change (Series x = 1) in H. unfold Series in H. rewrite H in C.
rewrite sum_Sn, sum_O in C. change (plus (x 0%nat) (x 1%nat)) with (x 0%nat + x 1%nat) in C.
change (x 0%nat) with 1 in C. pose proof (Pos 1%nat). lra.
Qed.
Definition putnam_2016_b1_audit_refutation_tie (forall_audit_H : forall (x : nat -> R := fix x (n: nat) :=
        match n with
        | O => 1
        | S n' => ln (exp (x n') - x n')
    end), Series x = putnam_2016_b1_solution) (x : nat -> R := fix x (n: nat) :=
        match n with
        | O => 1
        | S n' => ln (exp (x n') - x n')
    end) :
    Series x = putnam_2016_b1_solution
    := let _ := @putnam_2016_b1_is_false forall_audit_H in forall_audit_H.
Definition putnam_2016_b1_audit_refutation_same
    := ltac:(lazymatch type of putnam_2016_b1_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
