Require Import Ensembles RelationClasses.
Require Import ZArith.
(* Settings a library file starts with; they reach the frozen statement, which elaborates to the same term. *)
Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.
Open Scope Z_scope.
Implicit Types a b : Z.
Reserved Notation "x <<= y" (at level 70, no associativity).
Inductive le2 : nat -> nat -> Prop := le2_n n : n <<= n
where "x <<= y" := (le2 x y).
Declare Scope pk_scope.
Delimit Scope pk_scope with pk.
(* A packed structure: its Exports module names the enclosing module's own declarations. *)
Module Packed.
Record type := Pack { sort : Type; pt : sort }.
Bind Scope pk_scope with type.
Module Import Exports.
Coercion sort : type >-> Sortclass.
End Exports.
End Packed.
Export Packed.Exports.
Section Zs.
Local Open Scope nat_scope.
Lemma add0 (n : nat) : n + 0 = n.
Proof. apply Nat.add_0_r. Qed.
End Zs.
Lemma zadd0 a : a + 0 = a.
Proof. apply Z.add_0_r. Qed.
Close Scope Z_scope.
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
