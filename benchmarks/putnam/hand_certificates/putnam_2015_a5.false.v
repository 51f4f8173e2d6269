From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Nat Reals Arith Znumtheory Ensembles Finite_sets.
Open Scope nat_scope.
Theorem putnam_2015_a5_is_false :
    ~ (forall (q : nat)
    (Nq : nat)
    (qodd : odd q = true )
    (qpos : q > 0)
    (hNq : cardinal nat (fun a : nat =>  and (Rle R0 (INR a)) (Rle (INR a) (Rdiv (INR q) (INR 4))) /\ gcd a q = 1) Nq), odd Nq = true <-> (exists (p k : nat), q = p^k /\ k > 0 /\ prime (Z.of_nat p) /\ (p mod 8 = 5 \/ p mod 8 = 7))).
Proof.
intro H.
assert (E : (fun a : nat => and (Rle R0 (INR a)) (Rle (INR a) (Rdiv (INR 1) (INR 4))) /\ gcd a 1 = 1) = Add nat (Empty_set nat) 0).
{ apply Extensionality_Ensembles. split; intros a Ha.
  - destruct Ha as [[_ Ha] _]. destruct a as [|a].
    + right. constructor.
    + exfalso. rewrite S_INR in Ha. pose proof (pos_INR a). simpl in Ha. lra.
  - destruct Ha as [a Ha|a Ha]; [destruct Ha|]. destruct Ha. split; [simpl; split; lra | reflexivity]. }
assert (C : cardinal nat (fun a : nat => and (Rle R0 (INR a)) (Rle (INR a) (Rdiv (INR 1) (INR 4))) /\ gcd a 1 = 1) 1).
{ rewrite E. apply card_add; [apply card_empty | intro h; destruct h]. }
destruct (H 1 1 eq_refl (le_n 1) C) as [H1 _].
destruct (H1 eq_refl) as [p [k [Hp [Hk [Hprime _]]]]].
destruct p as [|[|p]].
- rewrite Nat.pow_0_l in Hp; lia.
- apply not_prime_1. exact Hprime.
- assert (2 ^ 1 <= 2 ^ k) by (apply Nat.pow_le_mono_r; lia).
  assert (2 ^ k <= S (S p) ^ k) by (apply Nat.pow_le_mono_l; lia). simpl in *. lia.
Qed.
Definition putnam_2015_a5_audit_refutation_tie (forall_audit_H : forall (q : nat)
    (Nq : nat)
    (qodd : odd q = true )
    (qpos : q > 0)
    (hNq : cardinal nat (fun a : nat =>  and (Rle R0 (INR a)) (Rle (INR a) (Rdiv (INR q) (INR 4))) /\ gcd a q = 1) Nq), odd Nq = true <-> (exists (p k : nat), q = p^k /\ k > 0 /\ prime (Z.of_nat p) /\ (p mod 8 = 5 \/ p mod 8 = 7))) (q : nat)
    (Nq : nat)
    (qodd : odd q = true )
    (qpos : q > 0)
    (hNq : cardinal nat (fun a : nat =>  and (Rle R0 (INR a)) (Rle (INR a) (Rdiv (INR q) (INR 4))) /\ gcd a q = 1) Nq) :
    odd Nq = true <-> (exists (p k : nat), q = p^k /\ k > 0 /\ prime (Z.of_nat p) /\ (p mod 8 = 5 \/ p mod 8 = 7))
    := let _ := @putnam_2015_a5_is_false forall_audit_H in forall_audit_H q Nq qodd qpos hNq.
Definition putnam_2015_a5_audit_refutation_same
    := ltac:(lazymatch type of putnam_2015_a5_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
