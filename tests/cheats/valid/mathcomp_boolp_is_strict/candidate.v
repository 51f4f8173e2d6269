Require Import Ensembles RelationClasses.
From mathcomp Require boolp.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  pose proof boolp.propositional_extensionality as _P.
  pose proof boolp.functional_extensionality_dep as _F.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
