"""The audit's strategy table: each script with its CPU budget under a strategy's name (the log's per-strategy
spend), the vacuity, refutation and inner-premise scripts, and the order the search states its goals in."""

from __future__ import annotations

from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_INNER, AUDIT_VACUOUS
from pytest_forall.lang.rocq.audit.answers import ANSWER_STRATEGIES, answer_scripts
from pytest_forall.lang.rocq.audit.evaluation import evaluated_grid, evaluated_leaf, halves_grid
from pytest_forall.lang.rocq.audit.finite import FINITE_EARLY, FINITE_STRATEGIES, finite_scripts
from pytest_forall.lang.rocq.audit.generated import (
    INTERVAL_REFUTE,
    STAIRCASE_STARTS,
    answer_unfolded,
    boundary,
    diagonal,
    divisible_instance,
    evaluated_closer,
    fine_search,
    fine_specialise,
    function_witness,
    mirrored,
    parameter_witness,
    saturated_refutation,
    staircase,
    witness_instance,
    zero_witness,
)
from pytest_forall.lang.rocq.audit.iffwitness import IFF_WITNESS_STRATEGIES, iff_witness_scripts
from pytest_forall.lang.rocq.audit.real import REAL_STRATEGIES, real_scripts
from pytest_forall.lang.rocq.audit.remainders import REMAINDER_STRATEGIES, remainder_scripts
from pytest_forall.lang.rocq.audit.sets import SET_STRATEGIES, set_scripts
from pytest_forall.lang.rocq.audit.tactics import (
    BREAK,
    DESTRUCT,
    DIVISORS,
    EXPENSIVE,
    HAMMER,
    INTERVAL,
    MODUS_PONENS,
    POLY,
    POLY_EVAL,
    RAT,
    RATIONAL_VALUES,
    REALS,
    SATURATION_VALUES,
    closer,
    context_instances,
    literal_instances,
    negated_existentials,
    prove,
    rational_hypotheses,
    rational_premises,
    saturate,
    specialise,
    witnesses,
)

#: Seconds of CPU per script: a search or cheap closer (which fails in milliseconds unless it succeeds),
#: and heavy automation (which usually runs to its limit).
SEARCH_SECONDS, AUTOMATION_SECONDS = 2.0, 1.0
#: The cheap vacuity strategies tried on each inner premise (the closers, negated existentials, specialisation,
#: and the all-zeros witness and Interval's bounds, which fail in milliseconds when they do not apply).
INNER_STRATEGIES = ("closers", "negated-existential", "specialise-2", "zero-witness", "interval")


#: The strategy each script belongs to (by its text), for the audit log's per-strategy spend (issue 34).
STRATEGIES: dict[str, str] = {}


def named(strategy: str, script: str, seconds: float) -> tuple[str, float]:
    """A script and its CPU seconds, recorded under ``strategy`` (:func:`strategy_spend`)."""
    STRATEGIES.setdefault(script, strategy)
    return script, seconds


def vacuity_scripts(scopes: tuple[str, ...], hammer: bool,
                    features: tuple[str, ...] = ()) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Scripts that close ``False`` from the hypotheses, each with its CPU time limit: (the cheap ones and the
    searches, and the automation that usually runs to its limit)."""
    close = closer(features)
    heavy = (HAMMER[::-1] if hammer else ()) + EXPENSIVE
    cheap = [named("closers", f"{DESTRUCT}; {close}", SEARCH_SECONDS),
             named("negated-existential", f"{DESTRUCT}; {negated_existentials(scopes, features)}", SEARCH_SECONDS),
             named("specialise-2", f"{DESTRUCT}; {specialise(scopes, features, 2)}", SEARCH_SECONDS),
             # issue 34: one value for all of a negated existential's variables (all zeros first), and over Coq's
             # reals a comparison of closed terms refuted by Interval's bounds (both fail in milliseconds)
             named("zero-witness", f"{DESTRUCT}; {zero_witness(scopes, features)}", SEARCH_SECONDS),
             *([named("interval", f"{DESTRUCT}; {INTERVAL_REFUTE}", SEARCH_SECONDS)] if INTERVAL in features else []),
             # issue 34, round 2: a universal hypothesis at an existential hypothesis's own witness (a bound made strict;
             # 1 s, first among the generated vacuity scripts after the two that fail in milliseconds)
             named("witness-instance", witness_instance(features), SEARCH_SECONDS / 2),
             named("context-instances", f"{DESTRUCT}; {context_instances()}; {close}", SEARCH_SECONDS),
             named("literal-instances", f"{DESTRUCT}; {literal_instances(scopes)}; {close}", SEARCH_SECONDS),
             # with mathcomp's rationals: three variables deep at 0, 1/2 and 1/3 (in any ring, polynomials too),
             # the implications whose premises are rational comparisons applied (before the saturations that run to
             # their limit in most files, or an item's budget ended before it; 6 s: deciding the premises of the
             # 66 implications among the instances of a file with three predicates on polynomials took 2.5 to 4 s)
             *([named("rational-saturation", (f"{DESTRUCT}; {saturate(scopes, 3, RATIONAL_VALUES)}; {BREAK}; "
                                             f"{rational_premises(features)}; {BREAK}; {close}"), 3 * SEARCH_SECONDS)]
               if RAT in features else []),
             # the instances combined nonlinearly too (``x 1 ^ 2 - x 0 * x 2 = 1`` with every ``x n`` zero)
             named("saturation", f"{DESTRUCT}; {saturate(scopes)}; {BREAK}; first [ {close} | nra | nia ]",
                   SEARCH_SECONDS),
             # four variables deep at two values: two instances of one hypothesis with several variables
             named("saturation-modus-ponens",
                   f"{DESTRUCT}; {saturate(scopes, 4, SATURATION_VALUES[:2])}; {BREAK}; {MODUS_PONENS}; {close}",
                   SEARCH_SECONDS),
             *([named("polynomial-saturation",
                      f"{DESTRUCT}; {saturate(scopes, 2, SATURATION_VALUES[:3], features)}; {BREAK}; {POLY_EVAL}",
                      2 * SEARCH_SECONDS)] if POLY in features else []),
             named("specialise-3", f"{DESTRUCT}; {specialise(scopes, features, 3)}", 2 * SEARCH_SECONDS),
             # issue 34: one hypothesis at a time at the generated candidates (rationals, functions, sequences,
             # Interval's values), two deep, each instance refuted by lia/lra/nra/field/interval
             named("generated-specialise", f"{DESTRUCT}; {fine_specialise(scopes, features, 2)}", SEARCH_SECONDS),
             # issue 34, session 13: with Znumtheory, an instance's gcd and divisibility facts unfolded into equations
             *([named("divisibility", f"{DESTRUCT}; {fine_specialise(scopes, features, 1, divisible_instance(features))}",
                      SEARCH_SECONDS)] if DIVISORS in features else []),
             # issue 34, session 15: one hypothesis at literals, the instance evaluated (floors, sums, integer division)
             named("evaluated-specialise", f"{DESTRUCT}; {fine_specialise(scopes, features, 2, evaluated_leaf(features))}",
                   SEARCH_SECONDS / 2)]
    return cheap, ([named(f"automation-{tactic}", f"{DESTRUCT}; {context_instances()}; {tactic}", AUTOMATION_SECONDS)
                    for tactic in heavy]
                   + [named(f"automation-{tactic}-literals", f"{DESTRUCT}; {literal_instances(scopes)}; {tactic}",
                            AUTOMATION_SECONDS) for tactic in heavy])


def _definitional(h: str) -> str:
    """A function variable instantiated at the definition its next premise states (``g := fun x => RHS``)."""
    return " | ".join(
        f"match type of {h} with forall g : _, (forall {xs}, g {xs} = @?R {xs}) -> _ => specialize ({h} R); "
        f"match type of {h} with ?A -> _ => let p := fresh in assert (p : A) by (intros; reflexivity); "
        f"specialize ({h} p); go () end end"
        for xs in ("x", "x y", "x y z"))


def backtracking(scopes: tuple[str, ...], features: tuple[str, ...], leaf: str) -> str:
    """The negated statement's variables instantiated at the grid's values one after the other (a function also at
    its definition, :func:`_definitional`), its premises decided, each instance tried by ``leaf``; backtracking."""
    h = "forall_audit_H"
    values = witnesses(scopes, "T", f"specialize ({h} v); go ()")
    return (f"intro {h}; try cbv zeta in {h}; let rec go u := first [ match type of {h} with "
            "forall _ : ?T, _ => lazymatch type of T with Prop => "
            f"let p := fresh in assert (p : T) by {prove(features)}; specialize ({h} p); go () "
            f"| _ => first [ {_definitional(h)} | {values} ] end end | {leaf} ] in go ()")


def same_value(scopes: tuple[str, ...], features: tuple[str, ...], leaf: str) -> str:
    """Every variable of the negated statement at the same value, one value at a time (``a = b = c = d = 1``),
    each instance tried by ``leaf``: a handful of instances, where :func:`backtracking` visits the values of the
    last variables first (thousands for four variables)."""
    h = "forall_audit_H"
    same = witnesses(scopes, "T", f"let rec go u := lazymatch type of {h} with forall _ : ?T, _ => "
                     "lazymatch type of T with Prop => "
                     f"let p := fresh in assert (p : T) by {prove(features)}; specialize ({h} p); go () "
                     f"| _ => specialize ({h} v); go () end | _ => {leaf} end in go ()")
    return (f"intro {h}; try cbv zeta in {h}; match type of {h} with forall _ : ?T, _ => "
            f"lazymatch type of T with Prop => fail | _ => {same} end end")


def refutation_scripts(scopes: tuple[str, ...], features: tuple[str, ...] = ()) -> list[tuple[str, float]]:
    """A bounded search: instantiate the negated statement's variables at small values, decide its premises,
    refute the instance; backtracking over the values. The statement's ``let``s are reduced first."""
    h = "forall_audit_H"
    refute = (f"solve [ {BREAK}; {closer(features)} | "
              f"{negated_existentials(scopes, features)} ]")
    # the instance's negated conclusion may itself be universal (``forall x y, f x y = g x - g y``: the same
    # search with that hypothesis specialised at literals) or nonlinear (``0 = a * b + b * c + c * a + 1``)
    deep = f"solve [ {BREAK}; {specialise(scopes, features, 2)} | {BREAK}; nia ]"
    # issue 34: distinct successive values (cheap: three instances), then the generated candidates' search
    stairs = " | ".join(f"({staircase(scopes, features, start)})" for start in STAIRCASE_STARTS)
    # ... the instance evaluated (finite sums, binomial coefficients) and refuted by the certifying closers, or its
    # negated conclusion's universal hypotheses instantiated together (a swapped quantifier order)
    saturated = saturated_refutation(scopes, features)
    evaluated = f"solve [ {BREAK}; {evaluated_closer(features)} | {zero_witness(scopes, features)} ]"
    rational = f"solve [ {BREAK}; {rational_premises(features)}; {BREAK}; {rational_hypotheses(features)} ]"
    return [named("refute-direct", f"intro {h}; try cbv zeta in {h}; {refute}", SEARCH_SECONDS),
            named("same-value", same_value(scopes, features, refute), SEARCH_SECONDS),
            # issue 34, session 13 round 2: a parameter set so that a functional equation's constant witness is a ring
            # identity, and over Coq's reals a value definition unfolded and computed (a changed answer constant);
            # both fail at once where they do not apply, before the generated searches that run to their limit
            named("parameter-witness", parameter_witness(scopes, features), SEARCH_SECONDS / 2),
            *([named("answer-unfolded", answer_unfolded(scopes, features), SEARCH_SECONDS / 2)]
              if REALS in features else []),
            # issue 34, session 14: function variables at constants, their calculus side conditions proved by the
            # libraries' lemmas and their derivatives evaluated, a list the conclusion asks for taken to its head
            named("function-witness", function_witness(scopes, features), SEARCH_SECONDS / 2),
            # issue 34, session 15: function and sequence witnesses over a mathcomp realType, sequences over Coq's
            # reals, Coq's reals at rational multiples of pi (lang/rocq/audit/real.py)
            *(named(name, script, seconds) for name, script, seconds in real_scripts(scopes, features, SEARCH_SECONDS / 2)),
            # issue 34, session 15 round 3: set variables at set0, setT, singletons; sup/inf defaults (audit/sets.py)
            *(named(name, script, seconds) for name, script, seconds in set_scripts(scopes, features, SEARCH_SECONDS / 2)),
            # issue 34, session 16: permutations, ordinals, finite functions, Ensembles, rationals over R (audit/finite.py)
            *(named(name, script, seconds) for name, script, seconds in finite_scripts(scopes, features, SEARCH_SECONDS / 2)),
            # issue 34, session 16 round 2: a remainder equated with or compared to a value out of its range at a small
            # instance, refuted by its bound lemma (audit/remainders.py; gated: fails at once without a remainder)
            *(named(name, script, seconds) for name, script, seconds in remainder_scripts(scopes, features, SEARCH_SECONDS / 2)),
            named("staircase", f"first [ {stairs} ]", SEARCH_SECONDS),
            # issue 34, session 13: a universal hypothesis of the negated statement at a term of its own body
            # (``exists a, forall N, a > N`` at ``N := a``), and paired variables (``a b c A B C`` at ``1 3 1 1 3 1``);
            # early among the generated ones: they fail in milliseconds (0.1 s each over the 10 held-out entries
            # they reached at the end of the list, seed 37), where an item's budget ran out before them (the seed-34
            # shift_bound of putnam_2003_a4: 19 s of 20 spent, mirrored never ran)
            named("diagonal", f"intro {h}; try cbv zeta in {h}; {BREAK}; {diagonal(features)}", SEARCH_SECONDS / 2),
            named("mirrored", mirrored(scopes, features), SEARCH_SECONDS),
            # issue 34, session 13 round 2: the variables at the statement's own closed terms (a bound made non-strict)
            named("boundary", boundary(features), SEARCH_SECONDS / 2),
            named("backtracking", backtracking(scopes, features, refute), 2 * SEARCH_SECONDS),
            # with mathcomp's rationals: each instance decided by the rational decider alone (the closers before it
            # fail slowly on an abstract field: putnam_1962_b5's refutation at n = 2 took 3.4-3.8 s of
            # ``backtracking``'s 4 s, most of it in them)
            *([named("rational-same-value", same_value(scopes, features, rational), SEARCH_SECONDS)]
              if RAT in features else []),
            named("evaluated-same-value", same_value(scopes, features, f"first [ {evaluated} | {saturated} ]"),
                  SEARCH_SECONDS),
            named("refute-saturation", f"intro {h}; try cbv zeta in {h}; {saturated}", SEARCH_SECONDS),
            named("evaluated-backtracking", backtracking(scopes, features, evaluated), 2 * SEARCH_SECONDS),
            named("generated-backtracking", fine_search(scopes, features), 2 * SEARCH_SECONDS),
            # issue 34, session 15: the variables by total cost, premises decided and the instance refuted once evaluated
            # (floors, finite sums, binomials, integer division); early only on a statement that names one (1 s)
            named("evaluated-grid-early", evaluated_grid(scopes, features, True), SEARCH_SECONDS / 2),
            named("evaluated-grid", evaluated_grid(scopes, features, False), SEARCH_SECONDS),
            # issue 34, session 15 round 3: one half of a conjunction or an equivalence refuted, ``Rpower``/``ln`` at
            # non-positive arguments evaluated (gated: fails at once on a statement with neither)
            named("evaluated-halves", halves_grid(scopes, features), SEARCH_SECONDS),
            named("backtracking-deep", backtracking(scopes, features, deep), SEARCH_SECONDS),
            # issue 34, session 16: an answer's listed values checked against the other side (audit/answers.py)
            *(named(name, script, seconds) for name, script, seconds in answer_scripts(scopes, features, SEARCH_SECONDS)),
            # issue 34, session 16 round 2: a predicate defined by a premise, vacuous at a small natural (audit/iffwitness.py)
            *(named(name, script, seconds) for name, script, seconds in iff_witness_scripts(scopes, features, SEARCH_SECONDS))]


def inner_scripts(selectors: list[str], cheap: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """An inner premise's certificate scripts: one disjunct picked (``selectors``), the premises unfolded, then the
    cheap vacuity strategies of :data:`INNER_STRATEGIES`."""
    return [named(f"inner-{STRATEGIES[script]}", f"{selector}; {script}", seconds)
            for selector in selectors for script, seconds in cheap if STRATEGIES[script] in INNER_STRATEGIES]


#: issue 34's strategies (candidates generated by type). They run after every strategy the search had before, in
#: that one's order: a script's budget is CPU time in one coqtop session, so what runs before it can cost it its
#: result (putnam_1962_b5's refutation by ``backtracking`` takes 3.4-3.7 s of its 4 s after the former scripts;
#: with the generated ones interleaved it ran past its 4 s and the known flag was lost).
GENERATED = (frozenset({"zero-witness", "interval", "staircase", "generated-backtracking", "generated-specialise",
                        "refute-saturation", "evaluated-same-value", "evaluated-backtracking", "rational-same-value",
                        "diagonal", "mirrored", "divisibility", "answer-unfolded", "parameter-witness", "boundary",
                        "witness-instance", "function-witness", "evaluated-grid-early", "evaluated-grid",
                        "evaluated-specialise", "evaluated-halves"})
             | REAL_STRATEGIES | SET_STRATEGIES | FINITE_STRATEGIES | ANSWER_STRATEGIES
             | IFF_WITNESS_STRATEGIES | REMAINDER_STRATEGIES)


#: Generated refutations stated before every other script (session 14): they fail in milliseconds on a statement
#: without what they need (``function-witness``: a function variable), and where they apply the former strategies
#: spent an item's whole budget first (the seed-38 ``shift_bound`` of ``putnam_2015_b1``: 20.5 s of 20 in the
#: vacuity searches and the first refutations, so the constant function that refutes it was never tried).
EARLY = (frozenset({"function-witness", "realtype-witness", "sequence-witness", "evaluated-grid-early", "set-witness"})
         | FINITE_EARLY | IFF_WITNESS_STRATEGIES)


def search_order(cheap: list[tuple[str, float]], refutation: list[tuple[str, float]],
                 inner: list[tuple[str, float]],
                 heavy: list[tuple[str, float]]) -> list[tuple[str, list[tuple[str, float]]]]:
    """The goals the search states, in order, each with its scripts: the :data:`EARLY` refutations, the former
    strategies (cheap vacuity scripts, the refutation search, the inner premises, then the heavy automation on
    vacuity again: an item that reaches its deadline has had the scripts most likely to succeed per second spent),
    then the other :data:`GENERATED` ones in the same order of phases."""
    def part(scripts: list[tuple[str, float]], generated: bool) -> list[tuple[str, float]]:
        return [(s, t) for s, t in scripts if (STRATEGIES[s].removeprefix("inner-") in GENERATED) is generated
                and STRATEGIES[s] not in EARLY]

    phases = ((AUDIT_VACUOUS, cheap), (AUDIT_FALSE, refutation), (AUDIT_INNER, inner), (AUDIT_VACUOUS, heavy))
    early = [(AUDIT_FALSE, [(s, t) for s, t in refutation if STRATEGIES[s] in EARLY])]
    return early + [(finding, part(scripts, generated)) for generated in (False, True) for finding, scripts in phases]
