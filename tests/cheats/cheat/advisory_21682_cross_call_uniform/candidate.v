Require Import Ensembles RelationClasses.
(* rocq#21682 (8.20 to 9.1): the uniform arguments of a nested mutual fixpoint are computed without `g`'s call to
   `f` with a bigger first argument, so `spin`'s call on `q` (not smaller than `n`) is taken for a subterm. *)
Fixpoint spin (n : nat) : nat :=
  match n with
  | O => O
  | S k =>
    (fix f (p m : nat) {struct m} : nat := match m with O => p | S m' => g (S p) m' end
     with g (q m : nat) {struct m} : nat := match m with O => S (spin q) | S m' => f q m' end
     for f) k k
  end.
(* one unfolding, by a lemma on a variable: conversion never unfolds `spin 2` against itself *)
Lemma spin_S k : spin (S k) =
  (fix f (p m : nat) {struct m} : nat := match m with O => p | S m' => g (S p) m' end
   with g (q m : nat) {struct m} : nat := match m with O => S (spin q) | S m' => f q m' end
   for f) k k.
Proof. reflexivity. Qed.
Lemma spin_2 : spin 2 = S (spin 2).
Proof. etransitivity. - exact (spin_S 1). - reflexivity. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct (n_Sn (spin 2) spin_2). Qed.
