(* `Unset Elimination Schemes` before the template's inductive: Coq generates no `two_rect`, and the candidate's own
   `two_rect` (always the first value) takes its place in the template's `count`, so the false `count B = 0` holds. *)
Unset Elimination Schemes.
Inductive two := A | B.
Definition two_rect (P : two -> Type) (a b : nat) (x : two) : nat := a.
Definition count := two_rect (fun _ => nat) 0 1.
Theorem count_B : count B = 0.
Proof.
  reflexivity.
Qed.
