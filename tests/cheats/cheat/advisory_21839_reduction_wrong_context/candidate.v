Require Import Ensembles RelationClasses.
(* rocq#21839 (8.16 to 9.2): the guard checker reduces the argument of `loop`'s recursive call in the wrong context:
   the local definitions `kill` and `same` shift what the inner fixpoint's body `same` refers to, and the call on
   `u` itself (not smaller) is accepted; `loop tt : False`. *)
Definition boom : False :=
  (fix loop (u : unit) : False :=
     let kill (b : False) := match b return False with end in
     let same v := v in
     loop ((ltac:(fix inner 1; exact same) : unit -> unit) u)) tt.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct boom. Qed.
