Require Import Ensembles RelationClasses.
Require Import Coq.Arith.Wf_nat Coq.Arith.PeanoNat.
Fixpoint log2_acc (n : nat) (H : Acc lt n) {struct H} : nat :=
  match n as m return n = m -> nat with
  | 0 | 1 => fun _ => 0
  | S (S k) => fun e => S (log2_acc (Nat.div2 n) (Acc_inv H (Nat.lt_div2 n ltac:(rewrite e; apply Nat.lt_0_succ))))
  end eq_refl.
Definition log2 (n : nat) : nat := log2_acc n (lt_wf n).
Fixpoint acc_size (n : nat) (H : Acc lt n) {struct H} : nat :=
  match H with Acc_intro _ h => match n as m return (forall y, y < m -> Acc lt y) -> nat with
    | 0 => fun _ => 0 | S k => fun h => S (acc_size k (h k (le_n _))) end h end.
Inductive found (p : nat -> bool) (i : nat) : Prop :=
  | found_here : p i = true -> found p i
  | found_later : found p (S i) -> found p i.
Definition search (p : nat -> bool) : forall i, found p i -> nat.
Proof.
  fix go 2. intros i w. destruct (p i) eqn:E.
  - exact i.
  - apply (go (S i)). case w.
    + rewrite E. discriminate.
    + exact (fun w' => w').
Defined.
Lemma uses : log2 8 = 3 /\ acc_size 2 (lt_wf 2) = 2
  /\ search (Nat.eqb 2) 0 (found_later _ 0 (found_later _ 1 (found_here _ 2 eq_refl))) = 2.
Proof. split; [|split]; reflexivity. Qed.
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
