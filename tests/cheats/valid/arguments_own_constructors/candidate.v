Require Import Ensembles RelationClasses.
Inductive vec (A : Type) : nat -> Type :=
  | vnil : vec A 0
  | vcons : forall n, A -> vec A n -> vec A (S n).
Arguments vnil {A}.
Arguments vcons {A n} _ _.
Variant tag (A : Type) := Tagged (a : A) | Untagged.
Arguments Tagged {A} a.
Arguments Untagged {A}.
Record box (A : Type) := { unbox : A; spare : nat }.
Arguments Build_box {A} _ _.
Arguments unbox {A} _.
Record pair' (A : Type) := mkpair { fst' : A; snd' : A }.
Arguments mkpair {A} _ _ : rename.
Arguments fst' {A} p : assert.
Inductive tree (A : Type) := leaf | node (f : forest A)
with forest (A : Type) := fnil | fcons (t : tree A) (f : forest A).
Arguments leaf {A}.
Arguments fcons {A} t f.
Definition two_ones : vec nat 2 := vcons 1 (vcons 1 vnil).
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
