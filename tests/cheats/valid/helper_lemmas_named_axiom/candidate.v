Require Import Ensembles RelationClasses.
Lemma my_axiom_free_lemma :
  forall (A : Type) (op : A -> A -> A),
    (forall a b : A, op (op a b) a = b) -> forall a b : A, op a (op b a) = b.
Proof.
  intros A op hop a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.

Lemma axiom_of_helpers : Nat.pow 2 10 = 1024.
Proof. vm_compute. reflexivity. Qed.

Ltac finish_with H := exact H.

Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  apply my_axiom_free_lemma.
  exact hop.
Qed.
