Require Import Ensembles RelationClasses.
(* The shape of rocq#22024 (open): `hop_box` recurses on its argument cast along an equality of types, which the
   guard checker accepts; `count`'s nested call through it then trusts the altered recursive tree. The reproducer's
   proof of False needs a non-trivial `nat = nat` (univalence): here the equality is `eq_refl`, the kernel accepts
   both fixpoints, and the judge refuses them whatever the axioms. *)
Inductive Box (A : Type) := box (x : A) | wrap (y : Box A).
Fixpoint hop_box {A B : Type} (f : A -> B) (e : A = A) (x : Box A) {struct x} : B :=
  match x with
  | box _ a => f a
  | wrap _ y => hop_box f e (match e in _ = T return Box T with eq_refl => y end)
  end.
Fixpoint count (n : nat) : nat :=
  match n with
  | 0 => 1
  | S k => S (hop_box count eq_refl (wrap _ (box _ k)))
  end.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  pose proof count as _.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
