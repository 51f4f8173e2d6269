Require Import Basics Reals Ensembles Finite_sets. From mathcomp Require Import fintype.
Theorem putnam_2013_b5_is_false :
    ~ (forall (n : nat)
    (composen := fix compose_n (f : 'I_n -> 'I_n) (n : nat) :=
        match n with
        | O => fun x => x
        | S n' => compose f (compose_n f n')
    end)
    (k : 'I_n)
    (npos: ge n 1)
    (E : Ensemble ('I_n -> 'I_n) := fun f => forall (x : 'I_n), exists (j : nat), (composen f j) x <= k), cardinal ('I_n -> 'I_n) E (k * n^(n-1))).
Proof. Admitted.
Definition putnam_2013_b5_audit_refutation_tie (forall_audit_H : forall (n : nat)
    (composen := fix compose_n (f : 'I_n -> 'I_n) (n : nat) :=
        match n with
        | O => fun x => x
        | S n' => compose f (compose_n f n')
    end)
    (k : 'I_n)
    (npos: ge n 1)
    (E : Ensemble ('I_n -> 'I_n) := fun f => forall (x : 'I_n), exists (j : nat), (composen f j) x <= k), cardinal ('I_n -> 'I_n) E (k * n^(n-1))) (n : nat)
    (composen := fix compose_n (f : 'I_n -> 'I_n) (n : nat) :=
        match n with
        | O => fun x => x
        | S n' => compose f (compose_n f n')
    end)
    (k : 'I_n)
    (npos: ge n 1)
    (E : Ensemble ('I_n -> 'I_n) := fun f => forall (x : 'I_n), exists (j : nat), (composen f j) x <= k) :
    cardinal ('I_n -> 'I_n) E (k * n^(n-1))
    := let _ := @putnam_2013_b5_is_false forall_audit_H in forall_audit_H n k npos.
Definition putnam_2013_b5_audit_refutation_same
    := ltac:(lazymatch type of putnam_2013_b5_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
