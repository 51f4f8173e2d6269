Require Import Ensembles RelationClasses.
Require Import Coq.Program.Wf Coq.Arith.PeanoNat Lia.
Program Fixpoint hs (n : nat) {measure n} : nat :=
  match n with 0 => 0 | S m => match m with 0 => 1 | S k => S (hs k) end end.
Program Fixpoint interleave (l m : list nat) {measure (length l + length m)} : list nat :=
  match l with nil => m | cons x t => cons x (interleave m t) end.
Next Obligation. simpl; lia. Qed.
Lemma uses : hs 0 = 0 /\ interleave nil nil = nil. Proof. split; reflexivity. Qed.
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
