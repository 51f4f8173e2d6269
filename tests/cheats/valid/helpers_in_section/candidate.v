Require Import Ensembles RelationClasses.
Section Helpers.
Variable B : Type.
Variable f : B -> B -> B.
Hypothesis hf : forall a b, f (f a b) a = b.
Lemma key : forall a b, f a (f b a) = b.
Proof. intros a b. pose proof (hf (f b a) b) as H. rewrite (hf b a) in H. exact H. Qed.
End Helpers.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. exact (key A op hop). Qed.
