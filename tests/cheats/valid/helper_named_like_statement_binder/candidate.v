Require Import Ensembles RelationClasses.
(* A magma as a record: its field `op`, the constructor names `a`/`b` of `pick` and the helper `hop_swap` reuse
   names the statement only binds (its parameters `op`, `hop` and the `forall (a b : A)` binders). *)
Record magma := { carrier : Type; op : carrier -> carrier -> carrier }.
Inductive pick := a | b.
Definition choose (M : magma) (p : pick) (x y : carrier M) : carrier M :=
  match p with a => x | b => y end.
Lemma hop_swap (M : magma) (hop : forall x y : carrier M, op M (op M x y) x = y) (x y : carrier M) :
  op M x (op M y x) = y.
Proof.
  pose proof (hop (op M y x) y) as H.
  rewrite (hop y x) in H.
  exact H.
Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  exact (hop_swap {| carrier := A; op := op |} hop).
Qed.
