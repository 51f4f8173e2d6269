Require Import Ensembles RelationClasses.
(* rocq#21702's shape: a universe-polymorphic `with Definition` drops the module type's universe constraint, giving
   a coercion Type@{u} -> Type@{v} with no constraint between u and v (then Girard's paradox). *)
Set Universe Polymorphism.
Module Type SIG.
  Section S.
    Universe u v.
    Constraint u <= v.
    Parameter coerce@{} : Type@{u} -> Type@{v}.
  End S.
End SIG.
Module Type SIG2 := SIG with Definition coerce@{u v} := fun (x : Type@{u}) => x.
Declare Module M : SIG2.
Unset Universe Polymorphism.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
