Require Import Ensembles RelationClasses.
Section Lists.
Variable T : Type.
Inductive seq := nil' | cons' (t : T) (s : seq).
Fixpoint size (s : seq) : nat := match s with nil' => 0 | cons' _ s => S (size s) end.
Lemma size_cons (t : T) (s : seq) : size (cons' t s) = S (size s).
Proof. reflexivity. Qed.
End Lists.
(* After `End Lists`: the discharged declarations keep their short names, so these name the candidate's own. *)
Arguments nil' {T}.
Arguments cons' {T} t s.
Arguments size {T} s.
Definition two : seq nat := cons' 1 (cons' 2 nil').
Lemma size_two : size two = 2.
Proof. reflexivity. Qed.
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
