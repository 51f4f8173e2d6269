Require Import Ensembles RelationClasses.
Module Aux.
Lemma swap {B} (f : B -> B -> B) (h : forall a b, f (f a b) a = b) a b : f a (f b a) = b.
Proof. pose proof (h (f b a) b) as H. rewrite (h b a) in H. exact H. Qed.
End Aux.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. intros a b. apply Aux.swap, hop. Qed.
