Require Import Ensembles RelationClasses.
From Equations Require Import Equations.
Require Import Coq.Lists.List.
Inductive rose := node : list rose -> rose.
Equations size (r : rose) : nat :=
  size (node l) := S (sizes l)
  where sizes (l : list rose) : nat :=
    sizes nil := 0;
    sizes (cons x t) := size x + sizes t.
Equations ev (n : nat) : bool :=
  ev 0 := true;
  ev (S k) := od k
with od (n : nat) : bool :=
  od 0 := false;
  od (S k) := ev k.
Inductive vec (A : Type) : nat -> Type := vnil : vec A 0 | vcons : A -> forall n, vec A n -> vec A (S n).
Equations vmap {A B : Type} (f : A -> B) {n} (v : vec A n) : vec B n :=
  vmap f (vnil _) := vnil _;
  vmap f (vcons _ x n v) := vcons _ (f x) n (vmap f v).
Equations vhead {A n} (v : vec A (S n)) : A := vhead (vcons _ x _ _) := x.
Lemma uses : size (node nil) = 1 /\ ev 2 = true /\ vhead (vmap S (vcons _ 0 0 (vnil _))) = 1.
Proof. repeat split. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  pose proof uses as _.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
