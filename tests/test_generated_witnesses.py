"""The statement audit's evaluated and saturated refutations (issue 34, the generated corpus's misses).

Each template is a miss of the former search, in kind: a finite sum or a binomial coefficient at literal arguments
that no closer computed, and a swapped quantifier order (``exists k, forall n``) whose refutation needs two
instances of the same hypothesis together; and putnam_1962_b5, whose refutation the former search finds only just
within its budget. One search per template runs the former strategy that tries that
instance and then the new one, in the search's order: the log must show the new one closing the goal (the search
stops at the first success, so the former one did not), and the certificate must pass the full verifier.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import (
    Searched,
    assert_the_new_strategy_certifies,
    closed,  # noqa: F401 - re-exported: strategy files import it from here
    search_case,
)

from conftest import PUTNAM, require_path
from pytest_forall.core.audit import AUDIT_FALSE

COQUELICOT = "Require Import Reals Coquelicot.Coquelicot.\nOpen Scope R_scope.\n"
#: (template, or None for PutnamBench's, the former strategies that try the refuting instance, the new strategy
#: that refutes it)
CASES = {
    # a function witness (a := fun _ => 1) and a sum at a literal bound (n := 0), refuted once the sum is computed
    "sums": (f"{COQUELICOT}Theorem sums (a : nat -> R) (n : nat) (h : a O = 1) : sum_n a n < 1.\nProof. Admitted.\n",
             ("backtracking",), "evaluated-backtracking"),
    # the binomial coefficient at n = k = 0: C 0 0 = 1, not INR 0
    "binomial": (("Require Import Reals Binomial.\nOpen Scope R_scope.\n"
                 "Theorem binomial : forall n k : nat, le k n -> Binomial.C n k = INR n.\nProof. Admitted.\n"),
                 ("same-value", "backtracking"), "evaluated-same-value"),
    # exists k, forall n: n = 1 gives k = 1 and n = 2 gives 4 = 2 * k (one instance alone is satisfiable)
    "swapped": (("Require Import Reals.\nOpen Scope R_scope.\n"
                "Theorem swapped (A : nat -> R := fun n => INR (n * n)) :\n"
                "    exists k : R, forall n : nat, A n = INR n * k.\nProof. Admitted.\n"),
                ("refute-direct", "backtracking-deep"), "refute-saturation"),
    # PutnamBench's own statement, false at n = 2 (10/6 < 5/4 fails): the rational decider alone on each same-value
    # instance, where ``backtracking``'s closers spend 3.4-3.8 s of its 4 s before the decider (a fragile flag)
    "putnam_1962_b5": (None, ("same-value",), "rational-same-value"),
}


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each case's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_evaluated_or_saturated_refutation_is_found_where_the_former_search_was_not(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    template, former, new = CASES[name]
    text = template or require_path(PUTNAM / "coq" / "src" / f"{name}.v", "PutnamBench").read_text()
    found = search_case(searched, tmp_path_factory.mktemp("witnesses"), name, text, frozenset({*former, new}),
                        shared_prover_cache)
    assert_the_new_strategy_certifies(found, former, new, AUDIT_FALSE, None)
