"""The statement audit's vacuous-definition check (issue 34, session 16 round 2, lang/rocq/audit/iffwitness.py): an
equivalence whose predicate, defined by a premise, holds vacuously at the smallest natural parameter while the answer
excludes that value.

Written after reading PutnamBench's ``putnam_2022_b4`` (``forall i, i < n -> …`` at ``n := 0``; ``0`` is not in the
answer). One small template of that kind: the former strategies that instantiate variables close nothing (a predicate
variable is no grid value), ``iff-witness`` alone closes the refutation and the full verifier accepts its certificate.
A sound control of the same shape (an answer that contains the vacuous value) is not flagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import Searched, assert_the_new_strategy_certifies, closed, search_case

from pytest_forall.core.audit import AUDIT_FALSE


def template(name: str, answer: str) -> str:
    """A predicate ``P`` of sequences defined by a premise (increasing below ``n``, cyclically), the conclusion
    ``exists x, P x <-> answer n``."""
    return (f"Definition {name}_solution (n : nat) : Prop := {answer}.\n"
            f"Theorem {name} : forall (n : nat) (P : (nat -> nat) -> Prop)\n"
            "  (hP : forall x, P x <-> forall i, i < n -> x i < x (Nat.modulo (S i) n)),\n"
            f"  exists x, P x <-> {name}_solution n.\nProof. Admitted.\n")


#: false: at ``n = 0`` every ``x`` meets ``P`` vacuously, and ``0 >= 3`` fails
MISS = template("vacuous_iff", "n >= 3")
#: true: at ``n = 0`` the answer holds (any ``x``), at ``n >= 1`` a constant ``x`` fails ``P`` and the answer is false
CONTROL = template("vacuous_iff_ok", "n = 0")
FORMER = ("same-value", "boundary", "backtracking", "generated-backtracking", "parameter-witness",
          "function-witness", "answer-listed")


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
def test_a_vacuous_definition_refutes_what_the_former_strategies_missed(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    before, _, _ = search_case({}, tmp_path_factory.mktemp("iffw-former"), "vacuous_iff", MISS, frozenset(FORMER),
                               shared_prover_cache)
    assert set(closed(before.log)) == set(FORMER) and not any(closed(before.log).values()), before.log[-2000:]
    assert before.certificates == {}, before.log[-2000:]
    found = search_case(searched, tmp_path_factory.mktemp("iffw"), "vacuous_iff", MISS, frozenset({"iff-witness"}),
                        shared_prover_cache)
    assert_the_new_strategy_certifies(found, (), "iff-witness", AUDIT_FALSE, None)


@pytest.mark.slow
def test_the_vacuous_definition_check_never_flags_a_true_statement_of_the_same_shape(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("iffw-ok"), "vacuous_iff_ok", CONTROL,
                               frozenset({"iff-witness"}), shared_prover_cache)
    assert "iff-witness " in search.log.rsplit("audit strategies: ", 1)[-1], search.log[-2000:]  # it ran
    assert search.certificates == {}, search.log[-2000:]
