Require Import Ensembles RelationClasses.
Inductive vec (A : Type) : nat -> Type := vnil : vec A 0 | vcons : forall n, A -> vec A n -> vec A (S n).
(* the convoy pattern on the index: the decreasing vector goes through a match on its length whose return clause
   names the length only as vec's index *)
Fixpoint vsum (n : nat) (v : vec nat n) {struct v} : nat :=
  (match n as m return vec nat m -> nat with
   | 0 => fun _ => 0
   | S k => fun w => match w in vec _ j return (match j with 0 => unit | S i => vec nat i end) -> nat with
                     | vnil _ => fun _ => 0
                     | vcons _ _ x t => fun _ => x + vsum _ t end (match w with vnil _ => tt | vcons _ _ _ t => t end)
   end) v.
Lemma uses : vsum 2 (vcons nat 1 1 (vcons nat 0 2 (vnil nat))) = 3.
Proof. reflexivity. Qed.
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
