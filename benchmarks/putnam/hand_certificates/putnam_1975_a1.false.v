From Coq Require Import Lia Psatz Lra.
From mathcomp Require Import zify ring.
From mathcomp Require Import all_algebra all_ssreflect.
From mathcomp Require Import reals.
From mathcomp Require Import classical_sets.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.
Local Open Scope classical_set_scope.

Variable R : realType.
Definition putnam_1975_a1_solution : ((int * int) -> int) * ((int * int) -> int) := (fun '(a, b) => a + b + 1, fun '(a, b) => a - b).
Theorem putnam_1975_a1_is_false :
    ~ (forall (nab : set (int * int * int) := [set nab | let '(n, a, b) := nab in n = (a%:~R ^+ 2 + a%:~R)/2 + (b%:~R ^+ 2 + b%:~R)/2])
    (nxy : set (int * int * int) := [set nxy | let '(n, x, y) := nxy in 4 * n + 1 = x ^+ 2 + y ^+ 2]), (forall n a b : int, nab (n, a, b) <-> nxy (n, putnam_1975_a1_solution.1 (a, b), putnam_1975_a1_solution.2 (a, b))) /\
      forall n : int, (exists x y : int, nxy (n, x, y)) -> exists a b : int, nab (n, a, b)).
Proof.
intro H. cbv zeta in H. destruct H as [H _].
destruct (H (Posz 1) (Posz 1) (Posz 0)) as [_ H2].
match type of H2 with ?A -> _ => assert (HA : A) by (vm_compute; reflexivity) end.
specialize (H2 HA). vm_compute in H2. discriminate H2.
Qed.
Definition putnam_1975_a1_audit_refutation_tie (forall_audit_H : forall (nab : set (int * int * int) := [set nab | let '(n, a, b) := nab in n = (a%:~R ^+ 2 + a%:~R)/2 + (b%:~R ^+ 2 + b%:~R)/2])
    (nxy : set (int * int * int) := [set nxy | let '(n, x, y) := nxy in 4 * n + 1 = x ^+ 2 + y ^+ 2]), (forall n a b : int, nab (n, a, b) <-> nxy (n, putnam_1975_a1_solution.1 (a, b), putnam_1975_a1_solution.2 (a, b))) /\
      forall n : int, (exists x y : int, nxy (n, x, y)) -> exists a b : int, nab (n, a, b)) (nab : set (int * int * int) := [set nab | let '(n, a, b) := nab in n = (a%:~R ^+ 2 + a%:~R)/2 + (b%:~R ^+ 2 + b%:~R)/2])
    (nxy : set (int * int * int) := [set nxy | let '(n, x, y) := nxy in 4 * n + 1 = x ^+ 2 + y ^+ 2]) :
    (forall n a b : int, nab (n, a, b) <-> nxy (n, putnam_1975_a1_solution.1 (a, b), putnam_1975_a1_solution.2 (a, b))) /\
      forall n : int, (exists x y : int, nxy (n, x, y)) -> exists a b : int, nab (n, a, b)
    := let _ := @putnam_1975_a1_is_false forall_audit_H in forall_audit_H.
Definition putnam_1975_a1_audit_refutation_same
    := ltac:(lazymatch type of putnam_1975_a1_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
