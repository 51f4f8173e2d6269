Require Import Ensembles RelationClasses.
Fixpoint down (n : nat) : nat := match n with 0 => 0 | S m => S (down (match m with 0 => m | S k => k end)) end.
Fixpoint pick (l : list nat) : nat := match l with nil => 0 | cons x t => x + pick (match t with nil => t | cons _ u => if Nat.even x then u else t end) end.
Lemma uses : down 4 = 2 /\ pick (cons 1 (cons 2 nil)) = 3.
Proof. split; reflexivity. Qed.
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
