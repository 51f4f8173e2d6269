From Coq Require Import Lia Psatz Lra.
From Interval Require Import Tactic.
Require Import Binomial Nat Reals Coquelicot.Coquelicot.
Open Scope R.
Definition putnam_1997_a6_solution : nat -> nat -> R := (fun n k : nat => Binomial.C (n - 1) (k - 1)).
Theorem putnam_1997_a6_is_false :
    ~ (forall (n : nat)
    (maxc : R)
    (X := fix x (c: R) (k: nat) : R :=
        match k with
        | O => 0 
        | S O => 1 
        | S ((S k'') as k') => (c * x c k' - INR (n - k) * x c k'') / INR k'
    end)
    (npos : gt n 0)
    (hmaxc : X maxc (add n 1) = 0 /\ (forall c : R, X c (add n 1) = 0 -> c <= maxc)), forall (k: nat), (le 1 k /\ le k n) -> X maxc k = putnam_1997_a6_solution n k).
Proof.
intro H. cbv zeta in H.
pose proof (H 2%nat 0%R ltac:(lia)) as E.
match type of E with ?A -> _ => assert (HA : A) end.
{ simpl. split. { field. } intros c Hc. field_simplify in Hc. nra. }
specialize (E HA 2%nat ltac:(lia)).
unfold putnam_1997_a6_solution, Binomial.C in E. simpl in E. field_simplify in E. lra.
Qed.
Definition putnam_1997_a6_audit_refutation_tie (forall_audit_H : forall (n : nat)
    (maxc : R)
    (X := fix x (c: R) (k: nat) : R :=
        match k with
        | O => 0 
        | S O => 1 
        | S ((S k'') as k') => (c * x c k' - INR (n - k) * x c k'') / INR k'
    end)
    (npos : gt n 0)
    (hmaxc : X maxc (add n 1) = 0 /\ (forall c : R, X c (add n 1) = 0 -> c <= maxc)), forall (k: nat), (le 1 k /\ le k n) -> X maxc k = putnam_1997_a6_solution n k) (n : nat)
    (maxc : R)
    (X := fix x (c: R) (k: nat) : R :=
        match k with
        | O => 0 
        | S O => 1 
        | S ((S k'') as k') => (c * x c k' - INR (n - k) * x c k'') / INR k'
    end)
    (npos : gt n 0)
    (hmaxc : X maxc (add n 1) = 0 /\ (forall c : R, X c (add n 1) = 0 -> c <= maxc)) :
    forall (k: nat), (le 1 k /\ le k n) -> X maxc k = putnam_1997_a6_solution n k
    := let _ := @putnam_1997_a6_is_false forall_audit_H in forall_audit_H n maxc npos hmaxc.
Definition putnam_1997_a6_audit_refutation_same
    := ltac:(lazymatch type of putnam_1997_a6_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B) end).
