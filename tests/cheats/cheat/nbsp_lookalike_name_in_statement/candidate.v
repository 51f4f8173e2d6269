Definition answer : nat := 3.
(* `answer` followed by a no-break space: another name (Coq reads U+00A0 as an identifier character) that looks
   like the frozen one. *)
Definition answer : nat := 4.
Theorem answer_is_four : answer = 4.
Proof.
  reflexivity.
Qed.
