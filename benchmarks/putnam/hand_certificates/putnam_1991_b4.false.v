From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Nat Reals ZArith Znumtheory Binomial Coquelicot.Coquelicot.
Theorem putnam_1991_b4_is_false :
    ~ (forall (p: nat)
    (hp : odd p = true /\ prime (Z.of_nat p)) 
    (expr : R := sum_n (fun j => Binomial.C p j * Binomial.C (p + j) j) p), (floor expr) mod (Z.pow (Z.of_nat p) 2) = Z.add (Z.pow 2 (Z.of_nat p)) 1).
Proof.
intro H. cbv zeta in H.
assert (hp : odd 3 = true /\ prime (Z.of_nat 3)) by (split; [reflexivity | exact prime_3]).
specialize (H 3%nat hp).
revert H. generalize (floor (sum_n (fun j => Binomial.C 3 j * Binomial.C (3 + j) j) 3)). intros z H.
change (Z.modulo z 9 = 9)%Z in H.
pose proof (Z.mod_pos_bound z 9 ltac:(lia)). lia.
Qed.
Definition putnam_1991_b4_audit_refutation_tie (forall_audit_H : forall (p: nat)
    (hp : odd p = true /\ prime (Z.of_nat p)) 
    (expr : R := sum_n (fun j => Binomial.C p j * Binomial.C (p + j) j) p), (floor expr) mod (Z.pow (Z.of_nat p) 2) = Z.add (Z.pow 2 (Z.of_nat p)) 1) (p: nat)
    (hp : odd p = true /\ prime (Z.of_nat p)) 
    (expr : R := sum_n (fun j => Binomial.C p j * Binomial.C (p + j) j) p) :
    (floor expr) mod (Z.pow (Z.of_nat p) 2) = Z.add (Z.pow 2 (Z.of_nat p)) 1
    := let _ := @putnam_1991_b4_is_false forall_audit_H in forall_audit_H p hp.
Definition putnam_1991_b4_audit_refutation_same
    := ltac:(lazymatch type of putnam_1991_b4_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
