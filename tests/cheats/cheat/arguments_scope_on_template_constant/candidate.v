Require Import ZArith.
Definition g {A : Type} (x : A) : A := x.
Arguments g {A} x%Z.
Theorem arguments_scope : g (1 - 2 + 1) = g 0.
Proof.
  reflexivity.
Qed.
