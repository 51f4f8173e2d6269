Require Import Reals Coquelicot.Coquelicot.
(* The field `continuity` captures the library constant the hypothesis `f_cont` names: through the instance, the
   frozen text `continuity f` now elaborates to `False`. *)
Class Cont := { continuity : (R -> R) -> Prop }.
#[local] Instance cont_false : Cont := {| continuity _ := False |}.
Theorem putnam_2000_b4
    (f : R -> R)
    (hf : forall x : R, f (2*x*x-1) = 2*x*(f x))
    (f_cont : continuity f)
    : forall x : R, -1 <= x <= 1 -> f x = 0. 
Proof. intros. exfalso. exact f_cont. Qed.
