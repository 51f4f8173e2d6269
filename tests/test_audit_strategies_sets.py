"""The statement audit's set witnesses (issue 34, session 15 round 3, lang/rocq/audit/sets.py): a mathcomp set variable
at ``set0``, the sets the instance empties rewritten to ``set0`` and ``supremum``/``infimum``'s defaults evaluated.

One small template in the shape of the held-out seed-61 miss (``drop_hypothesis`` of ``putnam_1964_a1``: the ratio of
the largest to the smallest distance between points of ``A``, with ``A``'s cardinality dropped): the former
strategies that instantiate variables close nothing, ``set-witness`` alone closes the refutation at ``A := set0`` and
the full verifier accepts its certificate. A sound control of the same shape (the ratio at least 1, or two distinct
points) is not flagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import Searched, assert_the_new_strategy_certifies, closed, search_case

from pytest_forall.core.audit import AUDIT_FALSE

MATHCOMP_SETS = ("From mathcomp Require Import all_algebra all_ssreflect.\nFrom mathcomp Require Import reals.\n"
                 "From mathcomp Require Import classical_sets.\nLocal Open Scope ring_scope.\n"
                 "Local Open Scope classical_set_scope.\nVariable R : realType.\n")
#: the miss's shape, smaller: the distances between two distinct points of A (none when A is empty, so both extrema
#: are their default 1 and the ratio is 1 < sqrt 3)
MISS = (f"{MATHCOMP_SETS}Theorem set_extrema (A : set (R * R))\n"
        "    (dists : set R := [set d : R | exists a b : R * R, a \\in A /\\ b \\in A /\\ a != b /\\ "
        "d = Num.sqrt ((a.1 - b.1) ^+ 2 + (a.2 - b.2) ^+ 2)])\n"
        "    : supremum 1 dists / infimum 1 dists >= Num.sqrt 3.\nProof. Admitted.\n")
#: true, and the search reaches its leaf: at ``A := set0`` the distances are emptied and both defaults evaluated as for
#: the miss, leaving ``1 <= 1 / 1`` (or two distinct points of ``set0``), which nothing refutes
CONTROL = (f"{MATHCOMP_SETS}Theorem set_extrema_ok (A : set (R * R))\n"
           "    (dists : set R := [set d : R | exists a b : R * R, a \\in A /\\ b \\in A /\\ a != b /\\ "
           "d = Num.sqrt ((a.1 - b.1) ^+ 2 + (a.2 - b.2) ^+ 2)])\n"
           "    : supremum 1 dists / infimum 1 dists >= 1 \\/ exists a b : R * R, a \\in A /\\ b \\in A /\\ a != b.\n"
           "Proof. Admitted.\n")
FORMER = ("realtype-witness", "same-value", "backtracking")


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
def test_a_set_witness_certifies_what_the_former_strategies_missed(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    before, _, _ = search_case({}, tmp_path_factory.mktemp("sets-former"), "set_extrema", MISS, frozenset(FORMER),
                               shared_prover_cache)
    assert set(closed(before.log)) == set(FORMER) and not any(closed(before.log).values()), before.log[-2000:]
    assert before.certificates == {}, before.log[-2000:]
    found = search_case(searched, tmp_path_factory.mktemp("sets"), "set_extrema", MISS, frozenset({"set-witness"}),
                        shared_prover_cache)
    assert_the_new_strategy_certifies(found, (), "set-witness", AUDIT_FALSE, "A := set0")


@pytest.mark.slow
def test_a_set_witness_never_flags_a_true_statement_of_the_same_shape(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("sets-ok"), "set_extrema_ok", CONTROL,
                               frozenset({"set-witness"}), shared_prover_cache)
    assert "set-witness " in search.log.rsplit("audit strategies: ", 1)[-1], search.log[-2000:]  # it ran
    assert search.certificates == {}, search.log[-2000:]
