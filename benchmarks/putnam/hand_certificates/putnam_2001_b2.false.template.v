Require Import Reals Coquelicot.Coquelicot.
Definition putnam_2001_b2_solution : R -> R -> Prop := (fun x y : R => x = (3 ^ (1 / 5) + 1) / 2 /\ y = (3 ^ (1 / 5) - 1) / 2).
Theorem putnam_2001_b2_is_false :
    ~ (forall (x y : R)
    (hx : x <> 0)
    (hy : y <> 0), (1 / x + 1 / (2 * y) = (x ^ 2 + 3 * y ^ 2) * (3 * x ^ 2 + y ^ 2) /\
    1 / x - 1 / (2 * y) = 2 * (y ^ 4 - x ^ 4)) <-> putnam_2001_b2_solution x y).
Proof. Admitted.
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
