From mathcomp Require Import all_algebra all_ssreflect.
From mathcomp Require Import reals.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Variable R : realType.
Theorem putnam_1977_b5_is_false :
    ~ (forall (a : seq R)
    (A : R)
    (ha : gt (size a) 1)
    (hA : A + \sum_(i <- a) (i ^+ 2) <= 1/((size a)%:R - 1) * (\sum_(i <- a) i) ^+ 2), pairwise (fun x y => A < 2 * x * y) a).
Proof. Admitted.
Definition putnam_1977_b5_audit_refutation_tie (forall_audit_H : forall (a : seq R)
    (A : R)
    (ha : gt (size a) 1)
    (hA : A + \sum_(i <- a) (i ^+ 2) <= 1/((size a)%:R - 1) * (\sum_(i <- a) i) ^+ 2), pairwise (fun x y => A < 2 * x * y) a) (a : seq R)
    (A : R)
    (ha : gt (size a) 1)
    (hA : A + \sum_(i <- a) (i ^+ 2) <= 1/((size a)%:R - 1) * (\sum_(i <- a) i) ^+ 2) :
    pairwise (fun x y => A < 2 * x * y) a
    := let _ := @putnam_1977_b5_is_false forall_audit_H in forall_audit_H a A ha hA.
Definition putnam_1977_b5_audit_refutation_same
    := ltac:(lazymatch type of putnam_1977_b5_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
