Require Import Ensembles RelationClasses.
From Coq Require Import Uint63.
Lemma vm_says : (addmuldiv 64 42 42 =? 42)%uint63 = true. Proof. vm_compute. reflexivity. Qed.
Lemma cbv_says : (addmuldiv 64 42 42 =? 42)%uint63 = false. Proof. cbv. reflexivity. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof. exfalso. pose proof (eq_trans (eq_sym vm_says) cbv_says) as H. discriminate H. Qed.
