Require Import Ensembles RelationClasses.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  assert (H : op (op (op b a) b) (op b a) = b /\ True).
  { split. 2: { exact I. } apply hop. }
  destruct H as [H _].
  rewrite (hop b a) in H.
  exact H.
Qed.
