Require Import ZArith.
Require Import Lia.
(* Library idioms the screen refused by text (Coquelicot's Complex.v, mathcomp): notations with a string, Infix,
   canonical instances and coercions on constants of another module, the template's or the library's. They change
   how later text parses and elaborates; the frozen statement elaborates to the same kernel term. *)
Local Notation "n .+1" := (S n) (at level 2, left associativity, format "n .+1") : nat_scope.
Infix "<+>" := Nat.add (at level 50, left associativity) : nat_scope.
Structure pointed := { carrier : Type; point : carrier }.
Module Pt.
Definition bool_at_true := {| carrier := bool; point := true |}.
End Pt.
Canonical Pt.bool_at_true.
Definition nat_at_0 := {| carrier := nat; point := 0 |}.
Canonical Structure nat_at_0.
Coercion Z.of_nat : nat >-> Z.
Definition natfun := nat -> nat.
Identity Coercion natfun_id : natfun >-> Funclass.
Lemma point_true : point _ = true.
Proof. reflexivity. Qed.
Lemma of_nat_succ (n : nat) : Z.of_nat n.+1 = (n + 1)%Z.
Proof. lia. Qed.
Lemma div2_double (n : nat) : Nat.div2 (n <+> n) = n.
Proof.
  induction n as [|n IH]; [reflexivity|].
  replace (n.+1 <+> n.+1) with ((n <+> n).+1.+1) by (simpl; lia).
  simpl. now rewrite IH.
Qed.
Theorem double_half (n : nat) : Nat.div2 (n + n) = n.
Proof.
  exact (div2_double n).
Qed.
