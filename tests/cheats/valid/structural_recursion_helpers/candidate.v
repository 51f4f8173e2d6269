Require Import Ensembles RelationClasses.
Fixpoint sum (n : nat) : nat := match n with 0 => 0 | S k => n + sum k end.
Fixpoint len {B : Type} (l : list B) : nat := match l with nil => 0 | cons _ t => S (len t) end.
Fixpoint half (n : nat) : nat := match n with 0 => 0 | S m => match m with 0 => 0 | S k => S (half k) end end.
Fixpoint even (n : nat) : bool := match n with 0 => true | S m => odd m end
with odd (n : nat) : bool := match n with 0 => false | S m => even m end.
Inductive tree := Leaf | Node (l r : tree).
Fixpoint size (t : tree) : nat := match t with Leaf => 1 | Node l r => size l + size r end.
Section Sec.
Variable B : Type.
Fixpoint rev_app (l acc : list B) : list B := match l with nil => acc | cons x t => rev_app t (cons x acc) end.
End Sec.
Lemma plus_zero : forall n : nat, n + 0 = n.
Proof. fix IH 1. intros [|n]. - reflexivity. - simpl. f_equal. apply IH. Qed.
Lemma facts : sum 2 = 3 /\ len (cons 1 nil) = 1 /\ half 5 = 2 /\ even 4 = true /\ size (Node Leaf Leaf) = 2
  /\ rev_app nat (cons 1 nil) nil = cons 1 nil /\ (forall n, n + 0 = n).
Proof. repeat split; try reflexivity. apply plus_zero. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  pose proof facts as _.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
