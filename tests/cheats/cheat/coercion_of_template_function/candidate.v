Definition as_zero (b : bool) : nat := 0.
Definition as_one (b : bool) : nat := 1.
(* A coercion on the template's other function, declared first: the template's own `Coercion as_zero` is then an
   ambiguous path Coq does not use, and the frozen `(true : nat)` elaborates to `as_one true`. *)
Coercion as_one : bool >-> nat.
Coercion as_zero : bool >-> nat.
Theorem true_is_one : (true : nat) = 1.
Proof.
  reflexivity.
Qed.
