Require Import Ensembles RelationClasses.
Require Import Coq.Lists.List.
Inductive rose := node : list rose -> rose.
Fixpoint count (t : rose) : nat := match t with node ts =>
  S ((fix all (l : list rose) : nat := match l with nil => 0 | cons x r => count x + all r end) ts) end.
Fixpoint depth (t : rose) : nat := match t with node ts => S (fold_right (fun x m => max (depth x) m) 0 ts) end.
Inductive ntree := nleaf : nat -> ntree | nnode : (nat * ntree) -> option ntree -> ntree.
Fixpoint nsum (t : ntree) : nat := match t with
  | nleaf n => n
  | nnode (k, l) o => k + nsum l + match o with Some r => nsum r | None => 0 end end.
Lemma uses : count (node (cons (node nil) nil)) = 2 /\ depth (node nil) = 1 /\ nsum (nleaf 3) = 3.
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
