Require Import Ensembles RelationClasses.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  pose proof (hop b a) as H1.
  pose proof (hop (op b a) b) as H2.
  rewrite H1 in H2.
  exact H2.
Qed.
