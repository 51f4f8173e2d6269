Require Import Reals.
Require Import Lia.
Open Scope Z.
Theorem putnam_2000_a2
    : forall (m: Z), exists (n: Z), n >= m /\ 
    exists (a1 a2 b1 b2 c1 c2: Z), n = a1*a1 + a2*a2 /\ n+1 = b1*b1 + b2*b2 /\ n+2 = c1*c1 + c2*c2. 
Proof.
  intros m.
  set (k := Z.abs m).
  exists (4 * k * k * k * k + 4 * k * k).
  split.
  - assert (0 <= k) by lia. assert (m <= k) by lia. nia.
  - exists (2 * k * k), (2 * k), (2 * k * k + 1), 0, (2 * k * k + 1), 1.
    repeat split; ring.
Qed.
