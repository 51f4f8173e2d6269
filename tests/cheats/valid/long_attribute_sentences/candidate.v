Require Import Ensembles RelationClasses.
Require Import Coq.Program.Tactics.
Local Lemma a_long_local_helper_lemma_whose_sentence_is_longer_than_the_printer_line :
  forall (n m : nat), n + m = m + n -> m + n = n + m.
Proof. intros n m H. symmetry. exact H. Qed.
Global Lemma a_long_global_helper_lemma_whose_sentence_is_longer_than_the_printer_line :
  forall (n m : nat), n * m = m * n -> m * n = n * m.
Proof. intros n m H. symmetry. exact H. Qed.
#[local] Definition a_long_local_definition_proved_in_proof_mode_longer_than_the_line : nat.
Proof. exact (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10). Defined.
Program Definition a_long_program_definition_whose_sentence_is_longer_than_the_line : nat :=
  1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12 + 13 + 14 + 15.
#[universes(polymorphic)] Lemma a_long_polymorphic_helper_lemma_longer_than_the_printer_line :
  forall (A : Type) (x y : A), x = y -> y = x.
Proof. intros A x y H. symmetry. exact H. Qed.
#[local, universes(polymorphic)] Lemma a_long_local_polymorphic_helper_lemma_longer_than_the_line :
  forall (A : Type) (x : A), x = x.
Proof. intros A x. reflexivity. Qed.
Local Ltac a_long_local_tactic_name_whose_definition_is_longer_than_the_printer_line :=
  intros; simpl; try reflexivity; try assumption; try (symmetry; assumption).
#[local] Hint Resolve a_long_local_helper_lemma_whose_sentence_is_longer_than_the_printer_line
  a_long_global_helper_lemma_whose_sentence_is_longer_than_the_printer_line : core.
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
