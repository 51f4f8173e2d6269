Require Import Reals.
Require Import ZArith.
(* `Export` of a library module, hidden in a helper module the candidate then imports: `sqrt` now names `Z.sqrt`,
   and the false `sqrt 3 = sqrt 1` over the reals reads as the true `Z.sqrt 3 = Z.sqrt 1`. *)
Module Helpers.
Export Z.
Lemma helper : 1 + 1 = 2.
Proof. reflexivity. Qed.
End Helpers.
Import Helpers.
Theorem sqrt_three_is_sqrt_one : sqrt 3 = sqrt 1.
Proof.
  reflexivity.
Qed.
