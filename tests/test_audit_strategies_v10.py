"""The statement audit's answer check (issue 34, session 16, lang/rocq/audit/answers.py): an equivalence whose answer
lists its solutions, refuted at a listed value the other side rejects as formalised.

Written after reading PutnamBench's ``putnam_2018_a1`` (``1/a + 1/b = 3/2018`` with ``=`` on ``Q``: Leibniz equality
of unreduced fractions, which no listed pair meets). One small template of that kind, whose listed values no grid
reaches: the former strategies that instantiate variables close nothing, ``answer-listed`` alone closes the refutation
and the full verifier accepts its certificate. A sound control of the same shape (listed values whose sums are
syntactically the right side) is not flagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import Searched, assert_the_new_strategy_certifies, closed, search_case

from pytest_forall.core.audit import AUDIT_FALSE

Q_FILE = "Require Import QArith.\nOpen Scope Q_scope.\n"
#: ``1/12 + 1/24`` is ``36 # 288``, not ``1 # 8``: false at both listed pairs, values outside every grid
MISS = (f"{Q_FILE}Definition listed_solution (a b : nat) : Prop := (a = 12%nat /\\ b = 24%nat) \\/ "
        "(a = 24%nat /\\ b = 12%nat).\n"
        "Theorem listed : forall a b : nat, 1 / inject_Z (Z.of_nat a) + 1 / inject_Z (Z.of_nat b) = 1 / 8 "
        "<-> listed_solution a b.\nProof. Admitted.\n")
#: true: ``1/1 + 1/2`` and ``1/2 + 1/1`` are ``3 # 2`` as written, and no other pair sums to 3/2
CONTROL = (f"{Q_FILE}Definition listed_ok_solution (a b : nat) : Prop := (a = 1%nat /\\ b = 2%nat) \\/ "
           "(a = 2%nat /\\ b = 1%nat).\n"
           "Theorem listed_ok : forall a b : nat, 1 / inject_Z (Z.of_nat a) + 1 / inject_Z (Z.of_nat b) = 3 / 2 "
           "<-> listed_ok_solution a b.\nProof. Admitted.\n")
FORMER = ("same-value", "boundary", "backtracking", "generated-backtracking")


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
def test_the_answer_s_listed_values_refute_what_the_former_strategies_missed(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    before, _, _ = search_case({}, tmp_path_factory.mktemp("answers-former"), "listed", MISS, frozenset(FORMER),
                               shared_prover_cache)
    assert set(closed(before.log)) == set(FORMER) and not any(closed(before.log).values()), before.log[-2000:]
    assert before.certificates == {}, before.log[-2000:]
    found = search_case(searched, tmp_path_factory.mktemp("answers"), "listed", MISS, frozenset({"answer-listed"}),
                        shared_prover_cache)
    assert_the_new_strategy_certifies(found, (), "answer-listed", AUDIT_FALSE, None)


@pytest.mark.slow
def test_the_answer_check_never_flags_a_true_statement_of_the_same_shape(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("answers-ok"), "listed_ok", CONTROL,
                               frozenset({"answer-listed"}), shared_prover_cache)
    assert "answer-listed " in search.log.rsplit("audit strategies: ", 1)[-1], search.log[-2000:]  # it ran
    assert search.certificates == {}, search.log[-2000:]
