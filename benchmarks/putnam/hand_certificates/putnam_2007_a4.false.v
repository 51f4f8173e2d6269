From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Reals Zpower Coquelicot.Coquelicot.
Definition putnam_2007_a4_solution (f: R -> R) := exists (c d: Z), Z.ge d 0 /\ Z.ge c (1 - d) /\ f = (fun n => (Rpower 10 (IZR c) * Rpower (9 * n + 1) (IZR d) - 1) / 9).
Theorem putnam_2007_a4_is_false :
    ~ (forall (repunit : R -> Prop := fun n => n = IZR (floor n) /\ n > 0 /\ exists (m: nat), n = sum_n (fun i => 10 ^ i) m)
    (c: nat -> R)
    (n: nat)
    (f : R -> R := fun x => sum_n (fun i => c i * x ^ i) n), (forall (n: nat), repunit (INR n) -> repunit (f (INR n))) <-> putnam_2007_a4_solution f).
Proof.
intro H. cbv zeta in H.
specialize (H (fun i => if Nat.eqb i 1 then 1 else 0) 1%nat).
destruct H as [H _].
assert (E : forall x, sum_n (fun i => (if Nat.eqb i 1 then 1 else 0) * x ^ i) 1 = x).
{ intro x. rewrite sum_Sn, sum_O. simpl. unfold plus. simpl. ring. }
assert (L : forall m : nat,
  (INR m = IZR (floor (INR m)) /\ INR m > 0 /\ (exists m0 : nat, INR m = sum_n (fun i => 10 ^ i) m0)) ->
  (sum_n (fun i => (if Nat.eqb i 1 then 1 else 0) * INR m ^ i) 1 = IZR (floor (sum_n (fun i => (if Nat.eqb i 1 then 1 else 0) * INR m ^ i) 1)) /\
   sum_n (fun i => (if Nat.eqb i 1 then 1 else 0) * INR m ^ i) 1 > 0 /\
   (exists m0 : nat, sum_n (fun i => (if Nat.eqb i 1 then 1 else 0) * INR m ^ i) 1 = sum_n (fun i => 10 ^ i) m0))).
{ intros m Hm. rewrite !E. exact Hm. }
destruct (H L) as [c' [d [_ [_ Hf]]]].
pose proof (f_equal (fun g => g (-1)) Hf) as X. cbv beta in X. rewrite E in X.
unfold Rpower at 2 in X. unfold ln in X.
destruct (Rlt_dec 0 (9 * -1 + 1)) as [h|h]; [lra|].
rewrite Rmult_0_r, exp_0 in X.
unfold Rpower in X. pose proof (exp_pos (IZR c' * ln 10)). lra.
Qed.
Definition putnam_2007_a4_audit_refutation_tie (forall_audit_H : forall (repunit : R -> Prop := fun n => n = IZR (floor n) /\ n > 0 /\ exists (m: nat), n = sum_n (fun i => 10 ^ i) m)
    (c: nat -> R)
    (n: nat)
    (f : R -> R := fun x => sum_n (fun i => c i * x ^ i) n), (forall (n: nat), repunit (INR n) -> repunit (f (INR n))) <-> putnam_2007_a4_solution f) (repunit : R -> Prop := fun n => n = IZR (floor n) /\ n > 0 /\ exists (m: nat), n = sum_n (fun i => 10 ^ i) m)
    (c: nat -> R)
    (n: nat)
    (f : R -> R := fun x => sum_n (fun i => c i * x ^ i) n) :
    (forall (n: nat), repunit (INR n) -> repunit (f (INR n))) <-> putnam_2007_a4_solution f
    := let _ := @putnam_2007_a4_is_false forall_audit_H in forall_audit_H c n.
Definition putnam_2007_a4_audit_refutation_same
    := ltac:(lazymatch type of putnam_2007_a4_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
