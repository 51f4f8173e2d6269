Require Import Ensembles RelationClasses.
(* An opaque universe-polymorphic helper lemma: never unfolded by conversion, so the universe-substitution
   advisories (rocq#21688, rocq#22380 …) do not need it refused; only polymorphic inductives and transparent
   constants are. *)
#[universes(polymorphic)] Lemma flip_eq : forall (T : Type) (x y : T), x = y -> y = x.
Proof. intros T x y H. symmetry. exact H. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact (flip_eq _ _ _ (flip_eq _ _ _ H)).
Qed.
