From mathcomp Require Import ssreflect ssrfun.
(* Note: This formalization is only a statement finite groups (due to mathcomp), but the idea of the problem does not rely on the cardinal of the group, so we include it*)
Require Import Basics. From mathcomp Require Import fingroup.
Open Scope group_scope.
Variable T : finGroupType.
Theorem putnam_1997_a4
    (G : {group T})
    (f : T -> T)
    (hf : forall g1 g2 g3 h1 h2 h3 : T, ((g1 * g2 * g3) = 1 /\ (h1 * h2 * h3) = 1) -> (f g1 * f g2 * f g3 = f h1 * f h2 * f h3))
    : exists a : T, let psi := fun g => a * f g in (forall x y : T, psi (x * y) = psi x * psi y).
Proof.
  have mul_f : forall x y : T, f x * f y = f (x * y) * f 1.
    move=> x y.
    have := hf x y (x * y)^-1 (x * y) 1 (x * y)^-1.
    rewrite mulg1 !mulgV => /(_ (conj erefl erefl)) H.
    by apply: (mulIg (f (x * y)^-1)).
  have comm1 : forall y : T, f 1 * f y = f y * f 1.
    move=> y.
    by rewrite mul_f mul1g.
  exists (f 1)^-1 => psi x y.
  rewrite /psi -!mulgA; congr (_ * _).
  have E : f (x * y) = f x * f y * (f 1)^-1 by rewrite mul_f mulgK.
  by rewrite E -mulgA; congr (_ * _); apply: (canRL (mulKg (f 1))); rewrite mulgA comm1 mulgK.
Qed.
Check putnam_1997_a4.

