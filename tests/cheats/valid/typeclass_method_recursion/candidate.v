Require Import Ensembles RelationClasses.
Class Alter (K A M : Type) := alter : (A -> A) -> K -> M -> M.
Class Delete (K M : Type) := delete : K -> M -> M.
#[export] Instance list_alter {B} : Alter nat B (list B) := fix go f i l {struct l} :=
  match l with nil => nil | cons x t => match i with 0 => cons (f x) t | S j => cons x (@alter _ _ _ go f j t) end end.
#[export] Instance list_delete {B} : Delete nat (list B) := fix go i l {struct l} :=
  match l with nil => nil | cons x t => match i with 0 => t | S j => cons x (@delete _ _ go j t) end end.
Fixpoint bump (l : list nat) : list nat := match l with nil => nil | cons x t => cons x (alter S 0 (bump t)) end.
Lemma uses : alter S 1 (cons 0 (cons 0 nil)) = cons 0 (cons 1 nil) /\ delete 0 (cons 1 nil) = @nil nat /\ bump (cons 0 nil) = cons 0 nil.
Proof. repeat split. Qed.
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
