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
  assert (forall_h : forall (forall_p : Datatypes.nat) (forall_g : forall forall_n,
      (match forall_n return Type with Datatypes.O => Datatypes.unit -> Logic.False | Datatypes.S _ => Datatypes.unit
       end) -> Logic.False),
      match forall_p return Type with Datatypes.O => Datatypes.unit -> Logic.False | Datatypes.S _ => Datatypes.unit
      end)
    by (intros [|forall_q] forall_g; [exact (fun _ => forall_g (Datatypes.S Datatypes.O) Datatypes.tt)
                                    | exact Datatypes.tt]);
  exact ((fix forall_f (forall_n : Datatypes.nat) (forall_y : match forall_n return Type with
      Datatypes.O => Datatypes.unit -> Logic.False | Datatypes.S _ => Datatypes.unit end) {struct forall_n}
      : Logic.False :=
    (match forall_n as forall_k return (match forall_k return Type with
        Datatypes.O => Datatypes.unit -> Logic.False | Datatypes.S _ => Datatypes.unit end) -> Logic.False with
     | Datatypes.O => fun forall_z => forall_z Datatypes.tt
     | Datatypes.S forall_p => fun _ => forall_f forall_p (forall_h forall_p (fun forall_m forall_w =>
                                                                               forall_f forall_m forall_w)) end)
    forall_y) (Datatypes.S Datatypes.O) Datatypes.tt).
Qed.
