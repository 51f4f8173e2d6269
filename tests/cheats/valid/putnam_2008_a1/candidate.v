Require Import Reals Coquelicot.Coquelicot.
Require Import Lra.
Theorem putnam_2008_a1
    (f : R -> R -> R)
    (hf : forall (x y z: R), f x y + f y z + f z x = 0)
    : exists (g: R -> R), forall (x y: R), f x y = g x - g y.
Proof.
  exists (fun x => f x 0).
  intros x y.
  pose proof (hf x y 0) as H1.
  pose proof (hf x 0 0) as H2.
  pose proof (hf 0 0 0) as H3.
  lra.
Qed.
