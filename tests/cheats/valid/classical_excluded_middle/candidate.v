Require Import Ensembles RelationClasses.
Require Import Coq.Logic.Classical.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  destruct (Classical_Prop.classic (op a (op b a) = b)) as [H|H]; [exact H|].
  pose proof (hop (op b a) b) as H'.
  rewrite (hop b a) in H'.
  contradiction.
Qed.
