Require Import Ensembles RelationClasses.
(* The shapes of rocq#21688 (a universe-polymorphic inductive with a let-in in its indices, matched in a return
   clause) and rocq#22380 (a stuck match inside a universe-polymorphic definition, unfolded at an instance). *)
Definition flag : bool. Proof. exact true. Qed.
#[universes(polymorphic)] Definition X@{u} : Type@{u} := nat.
#[universes(polymorphic)] Inductive bla@{u} : let x := X@{u} in x -> Prop := mk : bla 0.
#[universes(polymorphic)] Definition choice@{u} : Type@{u} := if flag then unit else unit.
#[universes(polymorphic)] Definition pick@{u} : choice@{u} :=
  match flag as b return (if b then unit else unit) with true => tt | false => tt end.
Definition get@{u} (b : bla@{u} 0) : 0 = 0 := match b in bla y return y = y with mk => eq_refl end.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  pose proof pick as _. pose proof get as _.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
