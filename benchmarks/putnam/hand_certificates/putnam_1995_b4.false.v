From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Reals ZArith Coquelicot.Coquelicot.
Open Scope R.
Definition putnam_1995_b4_solution : Z * Z * Z * Z := (3%Z,1%Z,5%Z,2%Z).
Theorem putnam_1995_b4_is_false :
    ~ (forall (contfrac : R)
    (hcontfrac : contfrac = 2207 - 1/contfrac)
    (hcontfrac' : 1 < contfrac), let (abc, d) := putnam_1995_b4_solution in let (ab, c) := abc in let (a, b) := ab in 
    pow contfrac (1 / 8) = (IZR a + IZR b * sqrt (IZR c))/IZR d).
Proof.
intro H.
assert (s5 : sqrt 5 * sqrt 5 = 5) by (apply sqrt_sqrt; lra).
assert (s5p : 0 < sqrt 5) by (apply sqrt_lt_R0; lra).
set (r := (2207 + 987 * sqrt 5) / 2).
assert (r1 : 1 < r) by (unfold r; lra).
assert (E : r * r = 2207 * r - 1) by (unfold r; nra).
assert (hr : r = 2207 - 1 / r).
{ apply (Rmult_eq_reg_r r); [|lra]. field_simplify; [|lra]. nra. }
specialize (H r hr r1). simpl in H. lra.
Qed.
Definition putnam_1995_b4_audit_refutation_tie (forall_audit_H : forall (contfrac : R)
    (hcontfrac : contfrac = 2207 - 1/contfrac)
    (hcontfrac' : 1 < contfrac), let (abc, d) := putnam_1995_b4_solution in let (ab, c) := abc in let (a, b) := ab in 
    pow contfrac (1 / 8) = (IZR a + IZR b * sqrt (IZR c))/IZR d) (contfrac : R)
    (hcontfrac : contfrac = 2207 - 1/contfrac)
    (hcontfrac' : 1 < contfrac) :
    let (abc, d) := putnam_1995_b4_solution in let (ab, c) := abc in let (a, b) := ab in 
    pow contfrac (1 / 8) = (IZR a + IZR b * sqrt (IZR c))/IZR d
    := let _ := @putnam_1995_b4_is_false forall_audit_H in forall_audit_H contfrac hcontfrac hcontfrac'.
Definition putnam_1995_b4_audit_refutation_same
    := ltac:(lazymatch type of putnam_1995_b4_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
