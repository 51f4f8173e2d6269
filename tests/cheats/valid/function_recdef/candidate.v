Require Import Ensembles RelationClasses.
Require Import Recdef Coq.Arith.PeanoNat Lia.
Function halve (n : nat) {measure (fun k => k) n} : nat :=
  match n with 0 => 0 | S 0 => 0 | S (S k) => S (halve k) end.
Proof. intros; lia. Defined.
Function len (l : list nat) {struct l} : nat := match l with nil => 0 | cons _ t => S (len t) end.
Lemma uses : halve 6 = 3 /\ len (cons 1 nil) = 1 /\ forall n, halve n <= n.
Proof.
  split; [|split]; [reflexivity | reflexivity |].
  intros n; functional induction (halve n); lia.
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
