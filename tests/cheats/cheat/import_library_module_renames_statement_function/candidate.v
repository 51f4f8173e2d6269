Require Import Reals.
(* `Import` of a library module inserted before the frozen statement: `sqrt` now names `Nat.sqrt`, and the false
   `sqrt 3 = sqrt 1` over the reals reads as the true `Nat.sqrt 3 = Nat.sqrt 1`. *)
Import Nat.
Theorem sqrt_three_is_sqrt_one : sqrt 3 = sqrt 1.
Proof.
  reflexivity.
Qed.
