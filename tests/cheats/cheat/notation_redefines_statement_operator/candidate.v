(* A notation with a string, inserted before the frozen statement: `+` now reads as multiplication. *)
Notation "x + y" := (Nat.mul x y) : nat_scope.
Theorem five_is_six : 2 + 3 = 6.
Proof.
  reflexivity.
Qed.
