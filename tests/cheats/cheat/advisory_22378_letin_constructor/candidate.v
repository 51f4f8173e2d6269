Require Import Ensembles RelationClasses.
Definition sUnit : SProp := forall P : SProp, P -> P.
Definition stt : sUnit := fun P p => p.
Inductive pair_with_lets : Type :=
| pack (x y : nat) (ghost1 : sUnit := stt) (ghost2 : sUnit := stt).
Definition left (p : pair_with_lets) : nat := match p with pack x y ghost1 ghost2 => x end.
Definition right (p : pair_with_lets) : nat := match p with pack x y ghost1 ghost2 => y end.
Definition collision (p : pair_with_lets) : left p = right p := eq_refl.
Definition contradiction : False :=
  match collision (pack O (S O)) in (_ = n) return (match n with O => True | S _ => False end) with eq_refl => I end.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct contradiction. Qed.
