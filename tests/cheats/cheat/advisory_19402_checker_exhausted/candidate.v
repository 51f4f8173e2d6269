Require Import Ensembles RelationClasses.
From Coq Require Import Arith Uint63.
(* fast in coqc's bytecode VM, about a minute in coqchk's lazy machine: exhausts a small checker budget *)
Lemma slow : Nat.eqb (fact 10) 3628800 = true. Proof. vm_compute. reflexivity. Qed.
Lemma vm_says : (addmuldiv 64 42 42 =? 42)%uint63 = true. Proof. vm_compute. reflexivity. Qed.
Lemma cbv_says : (addmuldiv 64 42 42 =? 42)%uint63 = false. Proof. cbv. reflexivity. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. exfalso. pose proof (slow, eq_trans (eq_sym vm_says) cbv_says) as [_ H]. discriminate H. Qed.
