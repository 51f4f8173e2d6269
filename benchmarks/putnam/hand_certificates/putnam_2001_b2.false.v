From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Reals Coquelicot.Coquelicot.
Definition putnam_2001_b2_solution : R -> R -> Prop := (fun x y : R => x = (3 ^ (1 / 5) + 1) / 2 /\ y = (3 ^ (1 / 5) - 1) / 2).
Theorem putnam_2001_b2_is_false :
    ~ (forall (x y : R)
    (hx : x <> 0)
    (hy : y <> 0), (1 / x + 1 / (2 * y) = (x ^ 2 + 3 * y ^ 2) * (3 * x ^ 2 + y ^ 2) /\
    1 / x - 1 / (2 * y) = 2 * (y ^ 4 - x ^ 4)) <-> putnam_2001_b2_solution x y).
Proof.
intro H.
set (r := Rpower 3 (1/5)).
assert (r0 : 0 < r) by (unfold r, Rpower; apply exp_pos).
assert (r5 : r ^ 5 = 3).
{ unfold r. rewrite <- Rpower_pow by (unfold Rpower; apply exp_pos).
  rewrite Rpower_mult. replace (1 / 5 * INR 5) with 1 by (simpl; field). apply Rpower_1. lra. }
assert (r1 : 1 < r).
{ destruct (Rle_lt_dec r 1) as [h|h]; [|exact h].
  assert (r ^ 5 <= 1 ^ 5) by (apply pow_incr; lra). simpl in H0. lra. }
set (x := (r + 1) / 2). set (y := (r - 1) / 2).
assert (hx : x <> 0) by (unfold x; lra).
assert (hy : y <> 0) by (unfold y; lra).
destruct (H x y hx hy) as [H1 _].
set (P := (x ^ 2 + 3 * y ^ 2) * (3 * x ^ 2 + y ^ 2)).
set (Q := 2 * (y ^ 4 - x ^ 4)).
assert (Sxy : x + y = r) by (unfold x, y; field).
assert (Dxy : x - y = 1) by (unfold x, y; field).
assert (S1 : x * (P + Q) = 2).
{ unfold P, Q. replace (x * ((x ^ 2 + 3 * y ^ 2) * (3 * x ^ 2 + y ^ 2) + 2 * (y ^ 4 - x ^ 4))) with (((x + y) ^ 5 + (x - y) ^ 5) / 2) by field. rewrite Sxy, Dxy, r5. field. }
assert (S2 : y * (P - Q) = 1).
{ unfold P, Q. replace (y * ((x ^ 2 + 3 * y ^ 2) * (3 * x ^ 2 + y ^ 2) - 2 * (y ^ 4 - x ^ 4))) with (((x + y) ^ 5 - (x - y) ^ 5) / 2) by field. rewrite Sxy, Dxy, r5. field. }
assert (PQ : P + Q = 2 / x) by (rewrite <- S1; field; exact hx).
assert (PmQ : P - Q = 1 / y) by (rewrite <- S2; field; exact hy).
assert (A1 : 1 / x = (P + Q) / 2) by (rewrite PQ; field; exact hx).
assert (A2 : 1 / (2 * y) = (P - Q) / 2) by (rewrite PmQ; field; exact hy).
assert (Eq : 1 / x + 1 / (2 * y) = P /\ 1 / x - 1 / (2 * y) = Q) by (split; lra).
destruct (H1 Eq) as [_ Hy]. simpl in Hy. unfold y in Hy. lra.
Qed.
Definition putnam_2001_b2_audit_refutation_tie (forall_audit_H : forall (x y : R)
    (hx : x <> 0)
    (hy : y <> 0), (1 / x + 1 / (2 * y) = (x ^ 2 + 3 * y ^ 2) * (3 * x ^ 2 + y ^ 2) /\
    1 / x - 1 / (2 * y) = 2 * (y ^ 4 - x ^ 4)) <-> putnam_2001_b2_solution x y) (x y : R)
    (hx : x <> 0)
    (hy : y <> 0) :
    (1 / x + 1 / (2 * y) = (x ^ 2 + 3 * y ^ 2) * (3 * x ^ 2 + y ^ 2) /\
    1 / x - 1 / (2 * y) = 2 * (y ^ 4 - x ^ 4)) <-> putnam_2001_b2_solution x y
    := let _ := @putnam_2001_b2_is_false forall_audit_H in forall_audit_H x y hx hy.
Definition putnam_2001_b2_audit_refutation_same
    := ltac:(lazymatch type of putnam_2001_b2_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
