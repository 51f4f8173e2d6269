Require Import Ensembles RelationClasses.
CoInductive stream := SCons : nat -> stream -> stream.
Definition Stream := stream.
Class Forever (T : Type) := forever : T.
CoFixpoint zeros : Stream := SCons 0 zeros.
#[export] Instance forever_stream : Forever Stream := cofix z := SCons 1 z.
Definition hd (s : stream) : nat := match s with SCons x _ => x end.
Lemma uses : hd zeros = 0 /\ hd forever = 1. Proof. split; reflexivity. Qed.
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
