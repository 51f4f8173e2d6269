Require Import Basics ZArith Zpower Reals Coquelicot.Coquelicot.
Open Scope Z_scope.
Theorem putnam_1994_b5_is_false :
    ~ (forall (composen := fix compose_n {A: Type} (f : A -> A) (n : nat) :=
        match n with
        | O => fun x => x
        | S n' => compose f (compose_n f n')
    end)
    (fa : R -> Z -> Z := fun a x => floor (a * IZR x)), forall (n: Z), n > 0 -> exists (a: R), forall (k: Z), 1 <= k <= n -> (composen (fa a) (Z.to_nat k)) n^2 = n^2 - k /\ n^2 - k = fa (Rpower a (IZR k)) n^2).
Proof. Admitted.
Definition putnam_1994_b5_audit_refutation_tie (forall_audit_H : forall (composen := fix compose_n {A: Type} (f : A -> A) (n : nat) :=
        match n with
        | O => fun x => x
        | S n' => compose f (compose_n f n')
    end)
    (fa : R -> Z -> Z := fun a x => floor (a * IZR x)), forall (n: Z), n > 0 -> exists (a: R), forall (k: Z), 1 <= k <= n -> (composen (fa a) (Z.to_nat k)) n^2 = n^2 - k /\ n^2 - k = fa (Rpower a (IZR k)) n^2) (composen := fix compose_n {A: Type} (f : A -> A) (n : nat) :=
        match n with
        | O => fun x => x
        | S n' => compose f (compose_n f n')
    end)
    (fa : R -> Z -> Z := fun a x => floor (a * IZR x)) :
    forall (n: Z), n > 0 -> exists (a: R), forall (k: Z), 1 <= k <= n -> (composen (fa a) (Z.to_nat k)) n^2 = n^2 - k /\ n^2 - k = fa (Rpower a (IZR k)) n^2
    := let _ := @putnam_1994_b5_is_false forall_audit_H in forall_audit_H.
Definition putnam_1994_b5_audit_refutation_same
    := ltac:(lazymatch type of putnam_1994_b5_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
