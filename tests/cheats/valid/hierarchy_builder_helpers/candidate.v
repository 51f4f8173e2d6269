From HB Require Import structures.
(* Hierarchy Builder, as mathcomp 2 and mathcomp-analysis write it: a mixin, a structure, an
   instance (`#[local]` too), a factory with its builders, queries. What it generates (records, definitions,
   canonical instances, coercions) are the candidate's own kernel terms and elaboration settings. *)
HB.mixin Record HasPoint (T : Type) := { pt : T }.
HB.structure Definition Pointed := { T of HasPoint T }.
HB.factory Record HasZero (T : Type) := { zero : T }.
HB.builders Context T of HasZero T.
HB.instance Definition _ := HasPoint.Build T zero.
HB.end.
HB.instance Definition _ := HasZero.Build nat 0.
#[local] HB.instance Definition _ := HasPoint.Build bool true.
HB.about Pointed.
Lemma pt_nat : pt = 0 :> nat.
Proof. reflexivity. Qed.
Lemma pt_bool : pt = true.
Proof. reflexivity. Qed.
Theorem pt_le (n : nat) : 0 <= n.
Proof.
  rewrite <- pt_nat.
  induction n as [|n IH]; [apply le_n | apply le_S, IH].
Qed.
