"""Issue 34, session 16: three witness kinds the held-out miss lists named and the search lacked. Each is a refutation
script like the others (real.py's ``instantiate``: the refuted statement's variables at candidates, its premises
proved, the instance refuted): what it closes is flagged only once the verifier accepts the certificate.

- ``finite-witness``: variables of finite types — a permutation (``{perm 'I_n}``, ``'S_n``) at the identity or a
  transposition, an ordinal at ``0``, ``1`` or its largest value, a function ``'I_n -> 'I_m`` or of a ``finType`` at the
  identity or a constant, a ``nat -> bool`` at a constant or an indicator — the instance decided by computation
  (``permE`` unfolds a permutation to its function, then ``vm_compute``, ``discriminate``, ``lia``).
- ``ensemble-witness``: predicates and standard-library ``Ensemble``\\ s at ``Empty_set``, ``Full_set``, ``Singleton``
  and ``Couple`` of small values, memberships decided by inversion (``Empty_set`` has no member, ``Singleton a x`` is
  ``x = a``) and ``firstorder``; mathcomp's ``set T`` is ``set-witness``'s (sets.py).
- ``rational-grid``: over Coq's reals, where the statement quantifies a real and compares reals, the real variables at
  rationals the integer grid lacks (``9/10`` and ``1/3`` before the integers), premises by ``lra``, the instance
  refuted by ``lra``/``nra`` or Interval's bounds; cheap because nothing else is tried per leaf.
"""

from __future__ import annotations

from pytest_forall.lang.rocq.audit.generated import INTERVAL_REFUTE
from pytest_forall.lang.rocq.audit.real import H, instantiate
from pytest_forall.lang.rocq.audit.tactics import BREAK, FEATURES, INTERVAL, REALS, TRIVIAL, prove

#: What each script names, asked of Coq like the other features (a script naming what is not loaded fails as a whole
#: when it is read): mathcomp's ordinals, its permutations, the standard library's ``Ensemble``\\ s
FINTYPE, PERM, ENSEMBLES = "fintype", "perm", "ensembles"
FT, PM, ENS = "mathcomp.ssreflect.fintype", "mathcomp.fingroup.perm", "Coq.Sets.Ensembles"
FEATURES.update({FINTYPE: f"let x := uconstr:({FT}.ord0) in {TRIVIAL}",
                 PERM: f"let x := uconstr:({PM}.tperm) in {TRIVIAL}",
                 ENSEMBLES: f"let x := uconstr:({ENS}.Empty_set) in {TRIVIAL}"})
# (no ssreflect syntax in the scripts: ``From mathcomp Require Import fintype perm`` files do not have it)

# --- finite types ------------------------------------------------------------------------------------------------------

#: Ordinals that compute (``inord`` does not: its ``insub`` goes through the opaque ``idP``): ``0``, ``1``, the largest
ORD0, ORD1 = f"{FT}.ord0", f"({FT}.lift {FT}.ord0 {FT}.ord0)"
ORDINALS = (ORD0, ORD1, f"{FT}.ord_max")
#: Permutations: the identity, then the transpositions of ``0`` and ``1`` and of ``0`` and the largest
PERMS = (f"({PM}.perm_one _)", f"({PM}.tperm {ORD0} {ORD1})", f"({PM}.tperm {ORD0} {FT}.ord_max)")
#: Function candidates without mathcomp: the constant booleans and the indicators of ``0``, ``1`` and the even numbers
BOOLEAN_FUNCTIONS = ("fun _ => Coq.Init.Datatypes.true", "fun _ => Coq.Init.Datatypes.false",
                     "fun n => Coq.Arith.PeanoNat.Nat.eqb n 0", "fun n => Coq.Arith.PeanoNat.Nat.eqb n 1",
                     "fun n => Coq.Arith.PeanoNat.Nat.even n")
#: ... with ordinals: the identity (of any type: a ``finType``'s too) and the constant ordinals
ORDINAL_FUNCTIONS = ("fun x => x", f"fun _ => {ORD0}", f"fun _ => {ORD1}")
#: The small naturals and booleans a finite statement's other variables take
FINITE_NUMBERS = ("0%nat", "1%nat", "2%nat", "3%nat", "Coq.Init.Datatypes.true", "Coq.Init.Datatypes.false")
#: A permutation evaluated: everything reverted so that the rewrites reach each hypothesis, ``tperm``/``perm_one``
#: unfolded to ``perm`` of a function and ``permE`` rewriting ``perm f x`` to ``f x`` (``perm`` is locked)
PERM_EVAL = (f"repeat match goal with h : _ |- _ => revert h end; try unfold {PM}.tperm, {PM}.perm_one; "
             f"repeat rewrite {PM}.permE; intros")


def finite_guard(features: tuple[str, ...]) -> str:
    """The refuted statement mentions a finite type by this module's reading: a function to ``bool``, or (with
    mathcomp's ordinals) ``ordinal``, or (with its permutations) a permutation type. Each is a closed pattern, so it
    matches under the binders a type depends on (``(n : nat) (a : 'I_n -> R)``: ``'I_n`` is not closed, and a guard
    that bound the binder's type matched on 2 of 120 templates)."""
    kinds = ["context [forall _ : _, Coq.Init.Datatypes.bool] => idtac"]
    if FINTYPE in features:
        kinds.append(f"context [{FT}.ordinal] => idtac")
    if PERM in features:
        kinds += [f"context [{PM}.perm_of] => idtac", f"context [{PM}.perm_type] => idtac"]
    return f"lazymatch type of {H} with {' | '.join(kinds)} end"


def finite_witness(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """The refuted statement's finite variables at :data:`PERMS`, :data:`ORDINALS`, :data:`ORDINAL_FUNCTIONS` and
    :data:`BOOLEAN_FUNCTIONS` (each typed where used), its other variables at :data:`FINITE_NUMBERS`, premises by
    :func:`prove`, then the instance broken up, its permutations evaluated (:data:`PERM_EVAL`) and refuted by
    computation. Fails at once on a statement without a finite binder (:func:`finite_guard`)."""
    perm = f"{PERM_EVAL}; " if PERM in features else ""
    leaf = (f"solve [ {BREAK}; {perm}vm_compute in *; first [ easy | discriminate | lia | congruence "
            "| (repeat match goal with h : _ \\/ _ |- _ => destruct h end; first [ easy | discriminate | lia ]) ] ]")
    functions = ([*ORDINAL_FUNCTIONS] if FINTYPE in features else []) + list(BOOLEAN_FUNCTIONS)
    numbers = ([*PERMS] if PERM in features else []) + ([*ORDINALS] if FINTYPE in features else []) + list(FINITE_NUMBERS)
    return instantiate(functions, numbers, prove(features), leaf, finite_guard(features))


def constant_functions(scopes: tuple[str, ...]) -> list[str]:
    """The other function variables' candidates (a statement with a set has sequences too): ``0`` and ``1``."""
    return [f"fun _ => {v}%{s}" for s in scopes for v in ("0", "1")]


# --- Ensembles and predicates ------------------------------------------------------------------------------------------

#: Membership read: ``In U A x`` unfolded, an ``Inhabited`` destructed, ``Empty_set``'s (no case), ``Singleton``'s and
#: ``Couple``'s (``x = a``) inverted, ``Full_set``'s dropped
MEMBERS = (f"repeat match goal with h : {ENS}.Inhabited _ _ |- _ => destruct h "
           f"| h : {ENS}.In _ _ _ |- _ => unfold {ENS}.In in h | h : {ENS}.Empty_set _ _ |- _ => destruct h "
           f"| h : {ENS}.Singleton _ _ _ |- _ => destruct h | h : {ENS}.Couple _ _ _ _ |- _ => destruct h "
           f"| h : {ENS}.Full_set _ _ |- _ => clear h end")
#: The set relations unfolded to their membership statements
UNFOLD_SETS = f"unfold {ENS}.Included, {ENS}.Same_set, {ENS}.In in *"


def ensemble_values(scopes: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The set candidates (the empty and the full set, then a singleton and a pair of small values in each numeral
    scope the file has) and the values of the other variables (``0``, ``1``, ``2`` in each scope)."""
    sets = [f"{ENS}.Empty_set _", f"{ENS}.Full_set _"]
    sets += [f"{ENS}.Singleton _ {v}%{s}" for s in scopes for v in ("0", "1")]
    sets += [f"{ENS}.Couple _ 0%{s} 1%{s}" for s in scopes]
    return sets, [f"{v}%{s}" for s in scopes for v in ("0", "1", "2")]


def ensemble_witness(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """The refuted statement's predicate variables (``Ensemble U``, ``U -> Prop``) at :func:`ensemble_values`'s sets
    (its other functions at constants: :func:`constant_functions`),
    membership premises proved by a constructor after inversion (:data:`MEMBERS`) or ``firstorder``, then the
    instance's memberships read and refuted (``lia``, ``firstorder``). Fails at once on a statement without a
    predicate binder."""
    side = (f"first [ solve [ {UNFOLD_SETS}; first [ easy | (intros; {MEMBERS}; first [ constructor | easy | lia ]) "
            f"| firstorder (first [ constructor | lia ]) ] ] | {prove(features)} ]")
    leaf = (f"solve [ {BREAK}; {UNFOLD_SETS}; {MEMBERS}; {BREAK}; first [ easy | lia | discriminate "
            "| firstorder (first [ discriminate | lia ]) ] ]")
    guard = (f"match type of {H} with context [forall _ : ?T, _] => let T' := eval hnf in T in "
             "lazymatch T' with forall _ : _, Prop => idtac end end")
    sets, numbers = ensemble_values(scopes)
    return instantiate(sets + constant_functions(scopes), numbers, side, leaf, guard)


# --- rationals over Coq's reals ----------------------------------------------------------------------------------------

#: The real candidates, by cost: rationals the integer grid lacks (halves of odd sign, thirds, tenths near 1), then
#: the integers a second variable may need (``x := 9/10, y := 3``)
RATIONALS = ("(9/10)", "(1/3)", "(3/2)", "(-1/2)", "(2/3)", "(1/10)", "(-3/2)")
INTEGERS = ("0", "1", "2", "3", "(-1)")
#: A real binder and a comparison of reals in the refuted statement (a grid point can break only a comparison)
HAS_REAL_COMPARISON = (f"lazymatch type of {H} with context [forall _ : Coq.Reals.Rdefinitions.R, _] => idtac end; "
                       f"lazymatch type of {H} with context [Coq.Reals.Rdefinitions.Rlt] => idtac "
                       "| context [Coq.Reals.Rdefinitions.Rle] => idtac | context [Coq.Reals.Rdefinitions.Rgt] => idtac "
                       "| context [Coq.Reals.Rdefinitions.Rge] => idtac end")


def rational_grid(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """Over Coq's reals, the refuted statement's real variables at :data:`RATIONALS` then :data:`INTEGERS`, naturals
    at ``0..3``, functions at the constants ``0`` and ``1``, premises by ``lra``/``lia`` (Interval's bounds where loaded), the instance refuted by ``lra``,
    ``nra`` or Interval; nothing else per leaf, so two real variables (144 leaves) fit its budget."""
    interval = f" | ({INTERVAL_REFUTE})" if INTERVAL in features else ""
    side = "solve [ lra | lia | easy" + (" | interval | (repeat split; first [ lra | interval ])" if INTERVAL in features
                                         else " | (repeat split; lra)") + " ]"
    leaf = f"solve [ {BREAK}; first [ lra | nra{interval} ] ]"
    numbers = [f"{v}%R" for v in (*RATIONALS, *INTEGERS)] + [f"{v}%nat" for v in ("0", "1", "2", "3")]
    return instantiate(constant_functions(("R",)), numbers, side, leaf, HAS_REAL_COMPARISON)


def finite_scripts(scopes: tuple[str, ...], features: tuple[str, ...], seconds: float) -> list[tuple[str, str, float]]:
    """This module's refutation scripts that apply to the file's libraries, as (strategy, script, CPU seconds)."""
    out = [("finite-witness", finite_witness(scopes, features), seconds)]
    if ENSEMBLES in features:
        out.append(("ensemble-witness", ensemble_witness(scopes, features), seconds))
    if REALS in features and "R" in scopes:
        out.append(("rational-grid", rational_grid(scopes, features), seconds))
    return out


#: The strategies of :func:`finite_scripts`, and those of them stated first (they fail at once without their binder)
FINITE_STRATEGIES = frozenset({"finite-witness", "ensemble-witness", "rational-grid"})
FINITE_EARLY = frozenset({"finite-witness", "ensemble-witness"})
