Require Import Ensembles RelationClasses.
CoInductive S : Type := nx : S -> S.
Inductive E : Type := wr : E -> E.
Definition cyc : E := let a := E in let d := S in cofix r : a := wr r.
Fixpoint ab (x : E) : False := match x with wr y => ab y end.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct (ab cyc). Qed.
