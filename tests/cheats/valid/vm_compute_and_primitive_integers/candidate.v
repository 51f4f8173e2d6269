Require Import Ensembles RelationClasses.
From Coq Require Import Uint63.
Lemma vm_nat : 2 + 3 = 5. Proof. vm_compute. reflexivity. Qed.
Lemma vm_int : (addmuldiv 3 1 0 =? 8)%uint63 = true. Proof. vm_compute. reflexivity. Qed.
Theorem putnam_2001_a1
    (A : Type)
    (op : A->A->A)
    (hop : forall (a b: A), op (op a b) a = b)
    : forall (a b: A), op a (op b a) = b.
Proof.
  pose proof (vm_nat, vm_int) as _.
  intros a b.
  pose proof (hop (op b a) b) as H.
  rewrite (hop b a) in H.
  exact H.
Qed.
