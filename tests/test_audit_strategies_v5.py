"""The statement audit's session-13 round-2 strategies (issue 34): a value definition unfolded and computed, a
parameter set so that a constant function witness is a ring identity, and the variables at the statement's own
closed terms.

Each template is a miss of the search before, in kind: a changed answer constant over Coq's reals (the answer is a
definition, which neither ``lra`` nor Interval unfolds: ``answer-unfolded``), ``putnam_1967_a4`` without ``hlambda``
in small (over a mathcomp ``realType``: false at ``lambda := 0``, ``u := fun _ => 1``, where the witness's property
``1 = 1 + 0 * sqrt 3`` is an identity of rings that no closer of the grid proves there: ``parameter-witness``), and a
strict bound made non-strict at a value off the grid (``x <= 7/3``, two variables: ``boundary``), and a lower bound
made strict, contradicted at the witness that attains it (``witness-instance``, vacuity). One search per
template runs the former strategies that try the same instances, then the new one: the log must show the new one
closing the goal (the search stops at the first success, so the former ones did not), and the certificate must pass
the full verifier. The new strategies never flag the sound PutnamBench statements they apply to.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import (
    MATHCOMP_REALS,
    REALS,
    Searched,
    assert_the_new_strategy_certifies,
    closed,
    search_case,
)

from conftest import PUTNAM, require_path
from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_VACUOUS

#: name: (template, the former strategies that try the refuting instance before the new one, the new strategy, a
#: text the log's counterexample line must show or None)
CASES = {
    # answer_constant: the true answer is 4 (sqrt 9 + exp 0); the definition hides it from lra and Interval
    "answer": ((f"{REALS}Definition answer_solution := 5.\n"
                "Theorem answer : sqrt 9 + exp 0 = answer_solution.\nProof. Admitted.\n"),
               ("refute-direct", "same-value", "backtracking"), "answer-unfolded", None),
    # putnam_1967_a4 without hlambda, in small: lambda := 0 and u := fun _ => 1 (a square root for its integral)
    "parameter": ((f"{MATHCOMP_REALS}Theorem parameter (lambda : R)\n"
                   "    : ~ exists u : R -> R, forall x : R, 0 <= x <= 1 -> u x = 1 + lambda * Num.sqrt (u x + 2).\n"
                   "Proof. Admitted.\n"),
                  ("refute-direct", "same-value", "backtracking", "backtracking-deep"), "parameter-witness",
                  "lambda := 0"),
    # flip_strict: x < 7/3 made x <= 7/3 (and y's likewise): false at x = y = 7/3 only, off the grid's values
    "boundary": ((f"{REALS}Theorem boundary : forall x y : R, x <= 7 / 3 -> y <= 7 / 3 -> x + y < 14 / 3.\n"
                  "Proof. Admitted.\n"),
                 ("same-value", "backtracking", "staircase", "diagonal", "mirrored"), "boundary", "x := 7 / 3"),
    # flip_strict of a lower bound (``>=`` made ``>``): vacuous at hm's own witness, three variables deep (the context's
    # instances stop at two, the literal ones miss x = sqrt 2); in kind seed 38's flip_strict of putnam_2010_b2
    "witnessed": ((f"{REALS}Theorem witnessed (p : R -> R -> R -> Prop := fun x y z => x * x = 2 /\\ y = x + 1 /\\ "
                   "z = y + 1) (m : R)\n    (hm : exists x y z : R, p x y z /\\ x = m)\n"
                   "    (hlb : forall x y z : R, p x y z -> x > m) : m = 1.\nProof. Admitted.\n"),
                  ("context-instances", "literal-instances", "specialise-2", "saturation", "specialise-3"),
                  "witness-instance", None),
}
#: Sound PutnamBench templates the new strategies apply to (a value answer, a negated existential with a parameter,
#: closed bounds, a lower bound attained at an existential witness): never flagged
SOUND = ("putnam_1984_a2", "putnam_1967_a4", "putnam_2013_a3", "putnam_2010_b2")
NEW = frozenset({"answer-unfolded", "parameter-witness", "boundary", "witness-instance"})
#: The finding each case's certificate is for
FINDING = {"witnessed": AUDIT_VACUOUS}


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each case's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_new_strategy_certifies_a_counterexample_the_former_ones_missed(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    template, former, new, shown = CASES[name]
    found = search_case(searched, tmp_path_factory.mktemp("v5"), name, template, frozenset({*former, new}),
                        shared_prover_cache)
    assert_the_new_strategy_certifies(found, former, new, FINDING.get(name, AUDIT_FALSE), shown)


@pytest.mark.slow
@pytest.mark.parametrize("name", SOUND)
def test_the_new_strategies_do_not_flag_sound_statements_they_apply_to(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    text = require_path(PUTNAM / "coq" / "src" / f"{name}.v", "PutnamBench").read_text()
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("v5-sound"), name, text, NEW, shared_prover_cache)
    assert search.certificates == {}, search.log[-2000:]
    ran = closed(search.log)
    assert NEW & set(ran), "no new strategy ran: the test shows nothing"
