Require Import Ensembles RelationClasses.
Conjecture cheat : forall (A : Type) (op : A -> A -> A), (forall a b, op (op a b) a = b) -> forall a b, op a (op b a) = b.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. exact cheat. Qed.
