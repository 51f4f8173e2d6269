Require Import Ensembles RelationClasses.
From Equations Require Import Equations.
Require Import Coq.Arith.PeanoNat Lia.
Inductive tree := leaf | node (l r : tree).
Derive NoConfusion Subterm for tree.
Equations half (n : nat) : nat :=
  half 0 := 0;
  half (S 0) := 0;
  half (S (S k)) := S (half k).
Equations app {B : Type} (l m : list B) : list B :=
  app nil m := m;
  app (cons x t) m := cons x (app t m).
Equations log2 (n : nat) : nat by wf n lt :=
  log2 0 := 0;
  log2 (S k) := S (log2 (Nat.div2 k)).
Next Obligation. apply Nat.lt_succ_r, Nat.div2_decr; lia. Qed.
Equations? log4 (n : nat) : nat by wf n lt :=
  log4 0 := 0;
  log4 (S k) := S (log4 (Nat.div2 (Nat.div2 k))).
Proof. apply Nat.lt_succ_r. transitivity (Nat.div2 k); apply Nat.div2_decr; lia. Defined.
Lemma uses : half 5 = 2 /\ log4 0 = 0 /\ log2 0 = 0 /\ app (cons 1 nil) nil = cons 1 nil /\ forall n, half n <= n.
Proof.
  split; [reflexivity | split; [reflexivity | split; [reflexivity | split; [reflexivity |]]]].
  intros n; funelim (half n); simp half; lia.
Qed.
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
