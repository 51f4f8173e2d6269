Require Import Ensembles RelationClasses.
(* recursion on a pattern variable of a match on the result of a fixpoint that returns its decreasing argument or a
   subterm of it (Nat.sub; mathcomp's edivn_rec, modn_rec, gcdn_rec) *)
Definition divmod_rec (d : nat) := fix loop (m q : nat) {struct m} : nat * nat :=
  match m - d with 0 => (q, m) | S m' => loop m' (S q) end.
Definition mod_rec (d : nat) := fix loop (m : nat) {struct m} : nat := match m - d with 0 => m | S m' => loop m' end.
Definition md (m d : nat) : nat := match d with 0 => m | S d' => mod_rec d' m end.
Fixpoint gcd_rec (m n : nat) {struct m} : nat :=
  let n' := md n m in match n' with 0 => m | S p =>
  match m - p with S m' => gcd_rec (md m' n') n' | 0 => n' end end.
Fixpoint drop_zeros (l : list nat) : list nat :=
  match l with nil => l | cons 0 t => drop_zeros t | cons _ _ => l end.
Fixpoint blocks (l : list nat) : nat := match drop_zeros l with nil => 0 | cons _ t => S (blocks t) end.
Lemma uses : divmod_rec 2 17 0 = (5, 2) /\ md 17 3 = 2 /\ gcd_rec 12 18 = 6
             /\ blocks (cons 0 (cons 1 (cons 0 (cons 0 (cons 2 nil))))) = 2.
Proof. repeat split; reflexivity. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  pose proof uses as _.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
