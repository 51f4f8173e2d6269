"""The statement audit's remainder bound (issue 34, session 16 round 2, lang/rocq/audit/remainders.py): a remainder
equated with a value at least its modulus at a small instance, refuted by the remainder's bound lemma.

Written after reading PutnamBench's ``putnam_1991_b4`` (``S mod p ^ 2 = 2 ^ p + 1``: ``9 mod``-something equal to ``9``
at ``p := 3``). One small template of that kind, with what made the former strategies miss it there: a primality
premise (which their deciders do not prove at a literal) and a remainder of a value no evaluation computes (an ``up``
of a square root). The former strategies that instantiate variables close nothing, ``remainder-bound`` alone closes the
refutation and the full verifier accepts its certificate. A sound control of the same shape (the remainder compared
to its true range) is not flagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import Searched, assert_the_new_strategy_certifies, closed, search_case

from pytest_forall.core.audit import AUDIT_FALSE

Z_FILE = "Require Import Reals ZArith Znumtheory.\nOpen Scope Z_scope.\n"
#: false: at ``p := 3`` (prime, at least 3) the remainder modulo ``9`` is said to be ``2 ^ 3 + 1 = 9``
MISS = (f"{Z_FILE}Theorem rem_out : forall p : Z, prime p -> 3 <= p -> "
        "(up (sqrt (IZR p))) mod (p * p) = 2 ^ p + 1.\nProof. Admitted.\n")
#: true: a remainder modulo a positive number lies in its range
CONTROL = (f"{Z_FILE}Theorem rem_in : forall p : Z, prime p -> 3 <= p -> "
           "(up (sqrt (IZR p))) mod (p * p) < p * p.\nProof. Admitted.\n")
FORMER = ("same-value", "backtracking", "evaluated-grid", "generated-backtracking")


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
def test_the_remainder_s_bound_refutes_what_the_former_strategies_missed(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    before, _, _ = search_case({}, tmp_path_factory.mktemp("remainders-former"), "rem_out", MISS, frozenset(FORMER),
                               shared_prover_cache)
    assert set(closed(before.log)) == set(FORMER) and not any(closed(before.log).values()), before.log[-2000:]
    assert before.certificates == {}, before.log[-2000:]
    found = search_case(searched, tmp_path_factory.mktemp("remainders"), "rem_out", MISS,
                        frozenset({"remainder-bound"}), shared_prover_cache)
    assert_the_new_strategy_certifies(found, (), "remainder-bound", AUDIT_FALSE, None)


@pytest.mark.slow
def test_the_remainder_bound_never_flags_a_remainder_within_its_range(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("remainders-ok"), "rem_in", CONTROL,
                               frozenset({"remainder-bound"}), shared_prover_cache)
    assert "remainder-bound " in search.log.rsplit("audit strategies: ", 1)[-1], search.log[-2000:]  # it ran
    assert search.certificates == {}, search.log[-2000:]
