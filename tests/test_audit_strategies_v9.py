"""The statement audit's session-16 witnesses (issue 34, lang/rocq/audit/finite.py): permutations and finite functions,
standard-library ``Ensemble``\\ s, and rationals over Coq's reals that the integer grid lacks.

One small template per kind: the former strategies that instantiate the statement close nothing (in a search of their
own: ``finite-witness`` and ``ensemble-witness`` are stated first, so the same search would not run the former ones),
the new one closes the refutation, and the full verifier accepts its certificate; a sound control of the same shape
each, which the new strategy reaches and does not flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import Searched, closed, search_case

from pytest_forall.core.audit import AUDIT_FALSE
from pytest_forall.core.verify import verify_candidate

PERM = "From mathcomp Require Import fintype perm ssrbool.\n"
ENSEMBLES = "Require Import Ensembles.\n"
REALS = "Require Import Reals.\nOpen Scope R_scope.\n"
#: the former refutations that instantiate variables (each ran on every template below)
FORMER = ("refute-direct", "same-value", "backtracking", "generated-backtracking")
#: name: (template, the new strategy, the text the log's counterexample line shows)
CASES = {
    # a permutation of 'I_3 that moves a point: the identity fixes every k, the transposition of 0 and 1 does not
    "perm_fixes": ((f"{PERM}Theorem perm_fixes : forall (p : {{perm 'I_3}}) (k : 'I_3), nat_of_ord (p k) = nat_of_ord k."
                   "\nProof. Admitted.\n"), "finite-witness", "tperm"),
    # a boolean function true at 0 need not be true at 1: the constants satisfy it, the indicator of 0 does not
    "indicator": ("Theorem indicator (b : nat -> bool) (h : b 0 = true) : b 1 = true.\nProof. Admitted.\n",
                  "finite-witness", "Nat.eqb"),
    # a set inside {0} need not be inhabited: false at the empty set
    "ensemble": ((f"{ENSEMBLES}Theorem ensemble (A : Ensemble nat) (h : Included nat A (Singleton nat 0)) : "
                 "Inhabited nat A.\nProof. Admitted.\n"), "ensemble-witness", "Empty_set"),
    # x * x < 4/5 on (0, 1) fails only above 0.894: at 9/10, no point of the former grids
    "tenth": (f"{REALS}Theorem tenth (x : R) (h : 0 < x < 1) : x * x < 4/5.\nProof. Admitted.\n", "rational-grid",
              "9 / 10"),
}
#: true statements of the same shapes
SOUND = {
    "perm_bounded": ((f"{PERM}Theorem perm_bounded : forall (p : {{perm 'I_3}}) (k : 'I_3), nat_of_ord (p k) < 3."
                     "\nProof. Admitted.\n"), "finite-witness"),
    "indicator_ok": (("Theorem indicator_ok (b : nat -> bool) (h : forall n, b n = true) : b 1 = true.\n"
                     "Proof. Admitted.\n"), "finite-witness"),
    "ensemble_ok": ((f"{ENSEMBLES}Theorem ensemble_ok (A : Ensemble nat) (h : Included nat (Singleton nat 0) A) : "
                    "Inhabited nat A.\nProof. Admitted.\n"), "ensemble-witness"),
    "tenth_ok": (f"{REALS}Theorem tenth_ok (x : R) (h : 0 < x < 1) : x * x < 1.\nProof. Admitted.\n", "rational-grid"),
}


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_finite_ensemble_or_rational_witness_certifies_what_the_former_strategies_missed(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    template, new, shown = CASES[name]
    before, _, _ = search_case({}, tmp_path_factory.mktemp("v9-former"), name, template, frozenset(FORMER),
                               shared_prover_cache)
    assert {s: closed(before.log).get(s) for s in FORMER} == dict.fromkeys(FORMER, False), before.log[-2000:]
    assert before.certificates == {}, before.log[-2000:]
    found = search_case(searched, tmp_path_factory.mktemp("v9"), name, template, frozenset({new}), shared_prover_cache)
    # audit_cases.assert_the_new_strategy_certifies, with the verdict strict too (one verification, not two)
    search, derived, prover = found
    assert closed(search.log) == {new: True}, search.log[-2000:]
    assert set(search.certificates) == {AUDIT_FALSE}, search.log[-2000:]
    assert shown in search.log.rsplit("audit counterexample: ", 1)[-1], search.log[-1000:]
    verdict = verify_candidate(derived[AUDIT_FALSE], prover, search.certificates[AUDIT_FALSE].encode())
    assert verdict.accepted and verdict.strict, verdict.reason  # as ``forall verify`` re-accepts it


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SOUND))
def test_the_finite_witnesses_do_not_flag_a_sound_statement_of_the_same_shape(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    template, new = SOUND[name]
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("v9-sound"), name, template, frozenset({new}),
                               shared_prover_cache)
    assert new in closed(search.log), "the strategy did not run"
    assert search.certificates == {}, search.log[-2000:]
