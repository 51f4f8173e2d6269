Require Import Ensembles RelationClasses.
Fixpoint sum (n : nat) : nat := match n with 0 => 0 | S k => n + sum k end.
Lemma sum_0 : sum 0 = 0. Proof. reflexivity. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
