Require Import Ensembles RelationClasses.
(* (* nested *) Admitted. *)
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  (* Admitted. admit. Axiom cheat : False. -- only a comment *)
  intros a b.
  idtac "Admitted. Axiom x : False.".
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
