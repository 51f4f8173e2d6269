Require Import Reals.
(* `Export` of a library module, hidden in a helper module the candidate then imports: `sqrt` now names `Nat.sqrt`,
   and the false `sqrt 3 = sqrt 1` over the reals reads as the true `Nat.sqrt 3 = Nat.sqrt 1`. *)
Module Helpers.
Export Nat.
Lemma helper : 1 + 1 = 2.
Proof. reflexivity. Qed.
End Helpers.
Import Helpers.
Theorem sqrt_three_is_sqrt_one : sqrt 3 = sqrt 1.
Proof.
  reflexivity.
Qed.
