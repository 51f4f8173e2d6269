(* A no-break space in code, as in Coquelicot's Lub.v (`case => [x | | ]`): Coq reads it as an identifier
   character, so the pattern below names the predecessor ` `; the screen's lexer reads it the same way. *)
Lemma pred_le_aux (n : nat) : Nat.pred n <= n.
Proof.
  destruct n as [| ].
  - apply le_n.
  - simpl. apply le_S, le_n.
Qed.
Theorem pred_le (n : nat) : Nat.pred n <= n.
Proof.
  exact (pred_le_aux n).
Qed.
