From Coq Require Import Lia Psatz Lra.
From mathcomp Require Import zify ring.
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
Proof.
intro H. cbv zeta in H.
specialize (H 1%nat (@Ordinal 1 0 (eq_refl true)) (le_n 1)).
simpl in H. apply cardinal_invert in H.
pose proof (f_equal (fun S => S (fun x : 'I_1 => x)) H) as X. simpl in X.
assert (P : Empty_set ('I_1 -> 'I_1) (fun x : 'I_1 => x)).
{ rewrite <- X. intro x. exists 0%nat. destruct x as [m Hm]. simpl. destruct m; [apply le_n | discriminate Hm]. }
destruct P.
Qed.
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
