Require Import Ensembles RelationClasses.
(* rocq#22382: the nested fixpoint's first binder is a let-in; the guard checker's uniform-argument count (8.20 to
   9.2.0) starts at it, so `knot`'s call on `n` (not smaller) through `relay` is taken for a uniform argument. *)
Definition relay (back : nat -> Type) (s : nat) : nat -> nat -> Type :=
  fix walk (kept : nat := s) (p m : nat) {struct m} : Type :=
    match m with
    | O => back p -> False
    | S m' => walk kept m'
    end.
Fixpoint knot (n : nat) : Type :=
  match n with
  | O => True
  | S k => relay knot n k k
  end.
Definition liar (x : knot 2) : False := x x.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct (liar liar). Qed.
