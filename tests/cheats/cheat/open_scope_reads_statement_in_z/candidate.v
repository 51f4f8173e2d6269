Require Import ZArith.
Open Scope Z_scope.
Theorem no_negatives : 0 - 1 < 0.
Proof.
  reflexivity.
Qed.
