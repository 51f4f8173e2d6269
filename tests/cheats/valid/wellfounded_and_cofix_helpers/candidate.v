Require Import Ensembles RelationClasses.
Require Import Coq.Arith.Wf_nat.
Definition hs : nat -> nat :=
  Fix lt_wf (fun _ => nat) (fun n =>
    match n as k return (forall m, m < k -> nat) -> nat with
    | 0 => fun _ => 0
    | S m => fun rec => S (rec m (le_n _))
    end).
CoInductive stream := SCons : nat -> stream -> stream.
CoFixpoint from (n : nat) : stream := SCons n (from (S n)).
CoFixpoint alt (b : bool) : stream := if b then SCons 1 (alt false) else SCons 0 (alt true).
Definition hd (s : stream) : nat := match s with SCons x _ => x end.
Lemma uses : hd (from 3) = 3 /\ hd (alt true) = 1. Proof. split; reflexivity. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  pose proof uses as _. pose proof (hs 4) as _.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
