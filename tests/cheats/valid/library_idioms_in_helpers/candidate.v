Require Import Ensembles RelationClasses.
From Coq Require Import ssreflect.
Unset Printing Implicit Defensive.
(* Idioms of real libraries (Coquelicot, mathcomp, Flocq), each refused by the screen before: a packed structure
   with its own coercion and canonical instances, an abbreviation, Prenex Implicits, a hint database, a deprecated
   helper, and `tac...` under `Proof with`. *)
Structure magma := Pack { carrier : Type; mul : carrier -> carrier -> carrier }.
Coercion carrier : magma >-> Sortclass.
Notation law M := (forall a b : carrier M, mul M (mul M a b) a = b).
Definition flip_mul {M : magma} (a b : M) : M := mul M b a.
Prenex Implicits flip_mul.
Definition unit_magma := Pack unit (fun _ _ => tt).
Canonical unit_magma.
Canonical Structure bool_magma := Pack bool xorb.
Create HintDb magma_laws.
Lemma swap (M : magma) (hop : law M) (a b : M) : mul M a (mul M b a) = b.
Proof with auto.
  pose proof (hop (mul M b a) b) as H.
  rewrite (hop b a) in H...
Qed.
#[global] Hint Resolve swap : magma_laws.
#[deprecated(since="1.0", note="use swap")]
Notation old_swap := swap (only parsing).
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  intros a b.
  exact (swap (Pack A op) hop a b).
Qed.
