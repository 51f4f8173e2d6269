"""Issue 34, session 15: real-valued witnesses the former search could not certify — function and sequence witnesses
over a mathcomp ``realType`` (their side conditions proved by mathcomp-analysis's lemmas), sequences over Coq's reals
(constant, linear, geometric, the indicator of ``n = 0``) whose bound fails at an early term, and Coq reals at rational
multiples of π refuted by Interval's bounds. Each is a refutation script: what it finds is flagged only once the
verifier accepts the certificate it closes."""

from __future__ import annotations

from pytest_forall.lang.rocq.audit.generated import INTERVAL_REFUTE
from pytest_forall.lang.rocq.audit.tactics import (
    BREAK,
    INTERVAL,
    MC_DERIVE,
    MC_TOPOLOGY,
    NUM,
    NUMERALS,
    REALS,
    SSR,
    prove,
    rational,
)

H = "forall_audit_H"


def instantiate(functions: list[str], numbers: list[str], side: str, leaf: str, guard: str) -> str:
    """The refuted statement's variables at the candidates in turn (backtracking): a function variable at
    ``functions``, any other at ``numbers`` (each candidate typed where it is used: an ill-typed one fails at once),
    each premise proved by ``side``, the instance then refuted by ``leaf``. A type is unfolded before it is read
    (``R ^nat`` is ``sequence R``, a function type). ``guard``: a ``lazymatch`` on the statement
    that fails at once where the strategy does not apply."""
    def tries(values: list[str]) -> str:
        return f"first [ {' | '.join(f'forall_try uconstr:({v})' for v in values)} ]" if values else "fail"

    return (f"intro {H}; try cbv zeta in {H}; {guard}; "
            f"let rec go u := lazymatch type of {H} with forall _ : ?T, _ => lazymatch type of T with "
            f"Prop => let p := fresh in assert (p : T) by {side}; specialize ({H} p); go () "
            f"| _ => let forall_try v := specialize ({H} v); go () in let T' := eval hnf in T in lazymatch T' with "
            f"| forall _ : _, _ => {tries(functions)} | _ => {tries(numbers)} end end "
            f"| _ => {leaf} end in go ()")


#: A function variable somewhere in the refuted statement (a function or a sequence; its type a product once unfolded:
#: mathcomp's ``R ^nat`` is ``sequence R``)
HAS_FUNCTION = (f"match type of {H} with context [forall _ : ?T, _] => let T' := eval hnf in T in "
                "lazymatch T' with forall _ : _, _ => idtac end end")

# --- over a mathcomp ``realType`` ------------------------------------------------------------------------------------

#: Function and sequence candidates over a mathcomp ring (typed where used: ``n%:R`` only for a sequence): constants,
#: the identity, a linear function, and the sequences ``n``, ``2 ^ n`` and the indicator of ``n = 0``
MC_FUNCTIONS = ("fun _ => 0%R", "fun _ => 1%R", "fun _ => 2%R", "fun x => x", "fun x => (2 * x)%R",
                "fun n => (n%:R)%R", "fun n => (2 ^+ n)%R", "fun n => ((n == 0)%:R)%R")
#: ... and the number candidates: ring zero and one, then the naturals up to the third term of a sequence
MC_NUMBERS = ("0%R", "1%R", "0%N", "1%N", "2%N")
TOP, DER = "mathcomp.analysis.topology", "mathcomp.analysis.derive"
#: Guards on the goal's function (``continuous`` is a notation: the goal is its unfolding, which has constant functions
#: of its own): a linear one, a constant one that is neither linear nor the identity, the identity. Unguarded, the
#: constants' lemmas unified filters for 2.4 s of CPU before failing on ``continuous (fun x => 2 * x)``.
LINEAR = "match goal with |- context [fun x => _ * x] => idtac end"
CONSTANT, IDENTITY = (("lazymatch goal with |- context [fun x => _ * x] => fail | |- context [fun x => x] => fail "
                       "| _ => idtac end; match goal with |- context [fun _ => ?c] => idtac end"),
                      ("lazymatch goal with |- context [fun x => _ * x] => fail | _ => idtac end; "
                       "match goal with |- context [fun x => x] => idtac end"))
#: The side conditions of those candidates, per mathcomp-analysis library (fully qualified), each behind its guard:
#: continuity of a constant, the identity and a linear function (also within a set), derivability (``is_derive``
#: instances), differentiability and the derivative of a constant
MC_FACTS = {MC_TOPOLOGY: (f"{CONSTANT}; exact: {TOP}.cst_continuous",
                          f"{IDENTITY}; move=> ?; exact: {TOP}.cvg_id",
                          f"{CONSTANT}; apply: {TOP}.continuous_subspaceT; exact: {TOP}.cst_continuous",
                          f"{IDENTITY}; apply: {TOP}.continuous_subspaceT; move=> ?; exact: {TOP}.cvg_id",
                          f"{LINEAR}; exact: mathcomp.analysis.normedtype.mulrl_continuous",
                          f"{LINEAR}; apply: {TOP}.continuous_subspaceT; exact: mathcomp.analysis.normedtype.mulrl_continuous"),
            MC_DERIVE: (f"lazymatch goal with |- derivable _ _ _ => idtac end; exact: {DER}.ex_derive",
                        (f"lazymatch goal with |- differentiable _ _ => idtac end; {CONSTANT}; "
                        f"exact: {DER}.differentiable_cst"),
                        (f"lazymatch goal with |- context [{DER}.derive1 _] => idtac end; {CONSTANT}; "
                        f"exact: {DER}.derive1_cst"))}
#: A set's membership read as its predicate, the set's definition unfolded first (``a \\in sol`` with
#: ``sol := [set x | x >= 3]`` is ``3 <= a``), everything reverted so that the rewrite reaches each hypothesis
MEMBERSHIP = ("repeat match goal with H : context [?c] |- _ => is_const c; lazymatch type of c with "
              "mathcomp.classical.classical_sets.set _ => unfold c in H end end; "
              "repeat match goal with H : _ |- _ => revert H end; "
              "rewrite ?mathcomp.classical.classical_sets.inE /=; intros")
#: A comparison of constants of an abstract numeric field, taken to the goal and decided (powers ``2 ^+ 2`` included:
#: the rational decider folds them through ``ratr``), one comparison at a time (only those: the decider's rewrites
#: on any other hypothesis spent the budget)
MC_COMPARE = ("match goal with H : is_true (Order.le _ _) |- _ => move: H; {rational} "
              "| H : is_true (Order.lt _ _) |- _ => move: H; {rational} "
              "| H : @Coq.Init.Logic.eq _ _ _ |- _ => move: H; {rational} end")
#: The implications of the context whose premise ``{side}`` proves, applied (an equivalence's two directions, once
#: the instance is broken up: ``(forall n, 0 < 1) -> 0 \in sol``)
MC_APPLY = ("repeat match goal with H : ?B -> _ |- _ => lazymatch type of B with Prop => "
            "let b := fresh in assert (b : B) by {side}; specialize (H b) end end")


def mc_prove(features: tuple[str, ...]) -> str:
    """A side condition of a mathcomp witness: the library lemma for a constant, the identity or a linear function
    (:data:`MC_FACTS`), or a comparison: a recurrence of ``2 ^+ n`` (``exprS``), positivity of a power, the rational
    decider."""
    facts = [f"({fact})" for key, names in MC_FACTS.items() if key in features for fact in names]
    lemma = f"solve [ intros; first [ {' | '.join(facts)} ] ] | " if facts else ""
    # not :func:`prove`: its ``vm_compute`` on a comparison of an abstract real type ran past the script's ``Timeout``
    # (coqtop did not answer; the wall-clock backstop ended the search); the arithmetic only on a comparison
    algebra = ("solve [ intros; lazymatch goal with |- is_true _ => idtac | |- @Coq.Init.Logic.eq _ _ _ => idtac end; "
               "rewrite ?GRing.exprS; first [ done | lia | (rewrite Num.Theory.exprn_gt0 // Num.Theory.ltr0n) "
               f"| {rational(features)} ] ]")
    return f"first [ {lemma}{algebra} ]"


def realtype_witness(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """A mathcomp statement's function and sequence variables at :data:`MC_FUNCTIONS`, its numbers at
    :data:`MC_NUMBERS`, the side conditions proved by :func:`mc_prove`, then the instance broken up, a set membership
    read (:data:`MEMBERSHIP`) and refuted by ``NUMERALS`` or the rational decider (:data:`MC_COMPARE`): ``u := fun _ =>
    1``, ``a := 0`` against ``(forall n, u n > 0) <-> a \\in [set x | x >= 3]``, where ``function-witness``'s
    ``lra``/``nra`` do not read mathcomp's reals and Coquelicot's lemmas do not apply. Needs ssreflect's syntax and
    mathcomp's ordered rings (``num``); fails at once on a statement without a function variable."""
    side = mc_prove(features)
    leaf = (f"solve [ {BREAK}; cbv beta in *; {MC_APPLY.format(side=side)}; try ({MEMBERSHIP}); {BREAK}; "
            f"first [ easy | lia | ({NUMERALS}) | {MC_COMPARE.format(rational=rational(features))} ] ]")
    return instantiate(list(MC_FUNCTIONS), list(MC_NUMBERS), side, leaf, HAS_FUNCTION)


# --- sequences over Coq's reals ---------------------------------------------------------------------------------------

#: Sequence candidates ``nat -> R``: constants, ``n``, ``2 ^ n``, the indicator of ``n = 0``, ``-n``
SEQUENCES = ("fun _ => 0%R", "fun _ => 1%R", "fun _ => 2%R", "fun n => INR n", "fun n => (2 ^ n)%R",
             "fun n => if Nat.eqb n 0 then 1%R else 0%R", "fun n => (- INR n)%R")
#: ... and the indices up to the fourth term, then real zero and one
SEQUENCE_NUMBERS = ("0%nat", "1%nat", "2%nat", "3%nat", "0%R", "1%R")
#: A sequence variable of Coq's reals in the refuted statement
HAS_SEQUENCE = f"lazymatch type of {H} with context [forall _ : nat -> R, _] => idtac end"
#: A universal premise of a sequence candidate: by cases on the index (the indicator), by the recurrence of a power or
#: of ``INR`` (``2 ^ S n = 2 * 2 ^ n``, ``INR (S n) = INR n + 1``), by positivity (``2 ^ n > 0``, ``INR n >= 0``)
SEQUENCE_FACTS = ("solve [ intros; simpl; first [ lra | ring ] ]",
                  "solve [ intros; rewrite ?Coq.Reals.RIneq.S_INR; simpl; first [ ring | lra ] ]",
                  "solve [ let n := fresh in intro n; destruct n; simpl; lra ]",
                  "solve [ intros; apply Coq.Reals.Rfunctions.pow_lt; lra ]",
                  "solve [ intros; pose proof (Coq.Reals.RIneq.pos_INR _); lra ]")


def sequence_witness(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """Over Coq's reals, the refuted statement's sequences at :data:`SEQUENCES`, its indices at ``0..3`` (the bound
    that fails at the third term: ``u 0 = 1``, ``u (S n) = 2 * u n`` and ``u n <= 3`` at ``u := 2 ^ n``, ``n := 2``),
    the premises proved by :data:`SEQUENCE_FACTS` or :func:`prove`, the instance computed (``simpl``: ``2 ^ 2``,
    ``INR 2``) and refuted by arithmetic (or Interval's bounds). Fails at once on a statement without a sequence."""
    interval = f" | ({INTERVAL_REFUTE})" if INTERVAL in features else ""
    leaf = f"solve [ {BREAK}; cbv beta in *; simpl in *; first [ lra | nra | lia{interval} ] ]"
    side = f"first [ {' | '.join(SEQUENCE_FACTS)} | {prove(features)} ]"
    return instantiate(list(SEQUENCES), list(SEQUENCE_NUMBERS), side, leaf, HAS_SEQUENCE)


# --- Coq's reals at rational multiples of π ---------------------------------------------------------------------------

#: Points whose sines, cosines and tangents Interval bounds: the rational multiples of π with denominator up to 6 in
#: ``[-π, 2π]`` that the generated grid lacks (it has π/6, π/4, π/3, π/2, 2π/3, π, 2π), then those
PI_POINTS = ("(3*PI/4)", "(5*PI/6)", "(3*PI/2)", "(-PI/2)", "(-PI/4)", "(4*PI/3)", "(5*PI/4)", "(5*PI/3)",
             "(7*PI/4)", "(PI/6)", "(PI/4)", "(PI/3)", "(PI/2)", "(2*PI/3)", "PI", "(2*PI)")


def pi_points(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """Over Coq's reals with Interval, the refuted statement's real variables at :data:`PI_POINTS` (backtracking;
    a statement with a variable of another type is left to the other strategies), each premise proved by
    ``lra``/``interval``, the instance refuted by Interval's bounds (:data:`INTERVAL_REFUTE`): ``forall x, 0 <= x <=
    4 -> |sin x + cos x| > 1/100`` is false at ``3π/4`` only, a point no grid has."""
    side = "first [ solve [ lra ] | interval | (split; interval) | solve [ repeat split; interval ] ]"
    leaf = f"solve [ {BREAK}; first [ lra | ({INTERVAL_REFUTE}) ] ]"
    guard = f"lazymatch type of {H} with forall _ : R, _ => idtac end"
    return instantiate([], [f"{v}%R" for v in PI_POINTS], side, leaf, guard)


def real_scripts(scopes: tuple[str, ...], features: tuple[str, ...], seconds: float) -> list[tuple[str, str, float]]:
    """This module's refutation scripts that apply to the file's libraries, as (strategy, script, CPU seconds)."""
    out = []
    if SSR in features and NUM in features:
        out.append(("realtype-witness", realtype_witness(scopes, features), seconds))
    if REALS in features and "R" in scopes:
        out.append(("sequence-witness", sequence_witness(scopes, features), seconds))
        if INTERVAL in features:
            out.append(("pi-points", pi_points(scopes, features), seconds))
    return out


#: The strategies of :func:`real_scripts`
REAL_STRATEGIES = frozenset({"realtype-witness", "sequence-witness", "pi-points"})
