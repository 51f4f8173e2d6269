"""Issue 34, session 16 round 2 (read from PutnamBench's ``putnam_1991_b4``, not from a mutant): **a remainder out of
its range**. A statement that equates a remainder ``x mod m`` (``Z.modulo``, ``Nat.modulo``) with, or compares it to,
an expression that at some small instance is at least ``m`` or negative is false there whatever ``x`` is:
``putnam_1991_b4`` equates ``S mod p ^ 2`` with ``2 ^ p + 1``, ``9`` at ``p := 3``. The variables are given the grid's
small values (:func:`tactics.witnesses`, backtracking), each premise decided when reached (the usual deciders, and a
primality premise at a literal by its definition: every smaller positive number's gcd with it computed), and the
instance refuted by each remainder's bound lemma (``Z.mod_pos_bound``, ``Z.mod_neg_bound``, ``Nat.mod_upper_bound``)
with the remainder made an opaque variable, then ``lia``. ``x`` itself is never evaluated (a floor of a finite sum of
binomials: computing it overflowed the stack), so the instance is cheap to refute or to give up on. A refutation script
like the others: what it closes is flagged only once the verifier accepts the certificate."""

from __future__ import annotations

from pytest_forall.lang.rocq.audit.tactics import BREAK, DIVISORS, prove, witnesses

H = "forall_audit_H"
ZB, NB, ZN = "Coq.ZArith.BinInt.Z", "Coq.Init.Nat", "Coq.ZArith.Znumtheory"
#: A positive divisor: by ``lia`` or computed (``Z.pow (Z.of_nat 3) 2``, ``3 * 3`` on naturals)
POSITIVE = "first [ lia | (vm_compute; reflexivity) | (vm_compute; intro; discriminate) ]"
#: Each remainder of the context given its bound and then made an opaque variable (so ``repeat`` ends, and ``lia``
#: reads it as an unknown within its bounds); a remainder whose divisor is not shown non-zero is only made opaque
BOUNDS = (
    "repeat match goal with "
    f"| _ : context [{ZB}.modulo ?x ?m] |- _ => "
    f"try first [ pose proof ({ZB}.mod_pos_bound x m ltac:({POSITIVE})) "
    f"| pose proof ({ZB}.mod_neg_bound x m ltac:(lia)) ]; "
    f"let r := fresh \"forall_r\" in set (r := {ZB}.modulo x m) in *; clearbody r "
    f"| _ : context [{NB}.modulo ?x ?m] |- _ => "
    f"try pose proof (Coq.Arith.PeanoNat.Nat.mod_upper_bound x m ltac:({POSITIVE})); "
    f"let r := fresh \"forall_r\" in set (r := {NB}.modulo x m) in *; clearbody r end")
#: ``prime p`` at a literal, proved from its definition (``prime_intro``): each ``n`` with ``1 <= n < p`` split into its
#: binary digits down to a literal, whose gcd with ``p`` is computed (``Zgcd_1_rel_prime``)
PRIME = (f"(apply {ZN}.prime_intro; [ lia | ]; let n := fresh in let hn := fresh in intros n hn; "
         f"apply {ZN}.Zgcd_1_rel_prime; destruct n as [|n|n]; try lia; "
         "repeat match goal with n : Coq.Numbers.BinNums.positive |- _ => destruct n; try lia end; "
         "vm_compute; reflexivity)")
#: A conjunction split into its pieces (not ``split``, which would apply ``prime_intro`` to ``prime 3`` too)
CONJUNCTS = "repeat match goal with |- _ /\\ _ => split end"
#: The gate: the negated statement names a remainder
GATE = (f"lazymatch type of {H} with context [{ZB}.modulo _ _] => idtac "
        f"| context [{NB}.modulo _ _] => idtac end; ")


def remainder_bound(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """The refuted statement's variables at the grid's values (backtracking), its premises decided (:func:`prove`, and
    with Znumtheory :data:`PRIME` piece by piece), each full instance refuted by its remainders' bounds (:data:`BOUNDS`) and ``lia``.
    Gated (:data:`GATE`): fails at once on a statement without a remainder."""
    # ``prime`` only with Znumtheory loaded (an unknown name in a script fails the whole script)
    prime = f" | {PRIME}" if DIVISORS in features else ""
    decide = f"solve [ {prove(features)} | ({CONJUNCTS}; first [ easy | reflexivity | lia{prime} ]) ]"
    values = witnesses(scopes, "T", f"specialize ({H} v); go ()")
    leaf = f"solve [ {BREAK}; {BOUNDS}; lia ]"
    return (f"intro {H}; try cbv zeta in {H}; {GATE}let rec go u := first [ match type of {H} with "
            "forall _ : ?T, _ => lazymatch type of T with Prop => "
            f"let p := fresh in assert (p : T) by {decide}; specialize ({H} p); go () "
            f"| _ => {values} end end | {leaf} ] in go ()")


def remainder_scripts(scopes: tuple[str, ...], features: tuple[str, ...], seconds: float) -> list[tuple[str, str, float]]:
    """This module's refutation script (``remainder-bound``)."""
    return [("remainder-bound", remainder_bound(scopes, features), seconds)]


#: The strategies of :func:`remainder_scripts`
REMAINDER_STRATEGIES = frozenset({"remainder-bound"})
