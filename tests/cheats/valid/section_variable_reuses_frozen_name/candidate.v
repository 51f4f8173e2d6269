Require Import Ensembles RelationClasses.
Section Helpers.
  Variable A : Type.
  Variable op : A -> A -> A.
  Hypothesis hop : forall (a b : A), op (op a b) a = b.
  Lemma cancel_right (a b : A) : op a (op b a) = b.
  Proof.
    pose proof (hop (op b a) b) as H.
    rewrite (hop b a) in H.
    exact H.
  Qed.
End Helpers.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  exact (cancel_right A op hop a b).
Qed.
