Require Import Arith List.
(* What library files write before their lemmas (scripts/screen_survey.py over Debian's mathcomp, Coquelicot, Flocq,
   Equations …): `Import`/`Export` of library modules, record and scheme options, unification and pattern settings,
   warnings, tactic notations. None changes a kernel term of the statement. *)
Import ListNotations.
Module Helpers.
Export Nat.
Lemma add_self (n : nat) : n + n = 2 * n.
Proof. simpl. rewrite add_0_r. reflexivity. Qed.
End Helpers.
Import Helpers.
Set Warnings "-notation-overridden".
Set Keyed Unification.
Unset Keyed Unification.
Set Asymmetric Patterns.
Set Primitive Projections.
Record pair_of := mk_pair { first : nat; second : nat }.
Unset Primitive Projections.
Unset Elimination Schemes.
Inductive color := red | green.
Set Elimination Schemes.
Set Universe Polymorphism.
Definition poly_id (A : Type) (a : A) := a.
Unset Universe Polymorphism.
Lemma length_of_app (a b : list nat) : length (a ++ b) = length a + length b.
Proof. induction a as [|x a IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
Local Tactic Notation "by_length" constr(l) := rewrite (length_of_app l l); apply add_self.
Lemma pair_eta (p : pair_of) : p = mk_pair (first p) (second p).
Proof. reflexivity. Qed.
Lemma single : [1] = 1 :: nil.
Proof. reflexivity. Qed.
Theorem double_length (l : list nat) : length (l ++ l) = 2 * length l.
Proof.
  by_length l.
Qed.
