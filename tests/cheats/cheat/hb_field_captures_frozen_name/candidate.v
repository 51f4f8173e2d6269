From HB Require Import structures.
(* A Hierarchy Builder mixin whose field is named like the frozen `pred` (the screen does not read HB's
   declarations), with an instance at nat where it is the identity: the false `pred 5 = 5` (4 = 5) now reads as the
   field's, 5 = 5. *)
HB.mixin Record HasPred (T : Type) := { pred : T -> T }.
HB.structure Definition WithPred := { T of HasPred T }.
HB.instance Definition _ := HasPred.Build nat (fun n => n).
Theorem pred_five : pred 5 = 5.
Proof.
  reflexivity.
Qed.
