"""The statement audit's session-15 witnesses (issue 34, lang/rocq/audit/real.py): function and sequence witnesses over a
mathcomp ``realType`` whose side conditions mathcomp-analysis's lemmas prove, sequences over Coq's reals whose bound
fails at the third term, and Coq's reals at a rational multiple of π refuted by Interval's bounds.

One small template per kind: the former strategies that try the same kind of instance run alone (in their own search:
the new ones run early, before them) and close nothing; the new one alone closes the refutation, and the full verifier
accepts its certificate. Each kind also
has a sound control of the same shape (a true statement), which the new strategy must not flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import REALS, Searched, assert_the_new_strategy_certifies, closed, search_case

from pytest_forall.core.audit import AUDIT_FALSE

MATHCOMP_ANALYSIS = ("From mathcomp Require Import all_algebra all_ssreflect.\n"
                     "From mathcomp Require Import reals sequences classical_sets topology normedtype derive.\n"
                     "Import numFieldNormedType.Exports.\nLocal Open Scope classical_set_scope.\n"
                     "Local Open Scope ring_scope.\nVariable R : realType.\n")

#: name: (template, the former strategies that try such instances, the new strategy, a text the counterexample shows)
CASES = {
    # a function witness over a realType: the constant 1 is continuous (cst_continuous) and has no zero; the
    # session-14 function-witness tries the same constant but proves no side condition over mathcomp's reals
    "rt_function": ((f"{MATHCOMP_ANALYSIS}Theorem rt_function (f : R -> R) (hf : continuous f)\n"
                     "    : exists x : R, f x = 0.\nProof. Admitted.\n"),
                    ("function-witness", "same-value", "backtracking"), "realtype-witness",
                    "f := fun=> 1"),
    # a sequence over a realType with a set as the answer (the held-out seed-41 miss's shape, putnam_1980_b3 without
    # ``hu``): u := 1 is positive, and 0 is not in [set x | x >= 3]
    "rt_sequence": ((f"{MATHCOMP_ANALYSIS}Definition rt_sequence_solution : set R := [set x : R | x >= 3].\n"
                     "Theorem rt_sequence (a : R) (u : R ^nat)\n"
                     "    : (forall n : nat, u n > 0) <-> a \\in rt_sequence_solution.\nProof. Admitted.\n"),
                    ("function-witness", "same-value", "backtracking"), "realtype-witness", "a := 0, u := fun=> 1"),
    # a sequence over Coq's reals whose bound fails at the third term: u := 2 ^ n, n := 2 (4 > 3)
    "sequence": ((f"{REALS}Theorem sequence (u : nat -> R) (h0 : u 0%nat = 1) (hu : forall n : nat, u (S n) = 2 * u n)\n"
                  "    : forall n : nat, u n <= 3.\nProof. Admitted.\n"),
                 ("function-witness", "same-value", "backtracking", "generated-backtracking"), "sequence-witness",
                 "u := fun n : nat => 2 ^ n, n := 2%nat"),
    # a real at a rational multiple of pi: |sin x + cos x| vanishes at 3 pi / 4 only, a point no former grid has
    "trig": (("Require Import Reals.\nOpen Scope R_scope.\n"
              "Theorem trig (x : R) (hx : 0 <= x <= 4) : Rabs (sin x + cos x) > 1 / 100.\nProof. Admitted.\n"),
             ("same-value", "backtracking", "generated-backtracking"), "pi-points", "x := 3 * PI / 4"),
}
#: Sound controls, one per kind, the same shapes made true: never flagged by the new strategy
CONTROLS = {
    "rt_function_ok": ((f"{MATHCOMP_ANALYSIS}Theorem rt_function_ok (f : R -> R) (hf : continuous f) (h0 : f 0 = 0)\n"
                       "    : exists x : R, f x = 0.\nProof. Admitted.\n"), "realtype-witness"),
    "rt_sequence_ok": ((f"{MATHCOMP_ANALYSIS}Definition rt_sequence_ok_solution : set R := [set x : R | x > 0].\n"
                       "Theorem rt_sequence_ok (a : R) (u : R ^nat) (hu : forall n : nat, u n = a)\n"
                       "    : (forall n : nat, u n > 0) <-> a \\in rt_sequence_ok_solution.\nProof. Admitted.\n"),
                       "realtype-witness"),
    "sequence_ok": ((f"{REALS}Theorem sequence_ok (u : nat -> R) (h0 : u 0%nat = 1)\n"
                    "    (hu : forall n : nat, u (S n) = 2 * u n) : forall n : nat, u n > 0.\nProof. Admitted.\n"),
                    "sequence-witness"),
    "trig_ok": (("Require Import Reals.\nOpen Scope R_scope.\n"
                "Theorem trig_ok (x : R) (hx : 0 <= x <= 4) : sin x + cos x > -2.\nProof. Admitted.\n"), "pi-points"),
}


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_real_witness_certifies_what_the_former_strategies_missed(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    template, former, new, shown = CASES[name]
    before, _, _ = search_case({}, tmp_path_factory.mktemp("real-former"), name, template, frozenset(former),
                               shared_prover_cache)
    assert set(closed(before.log)) == set(former) and not any(closed(before.log).values()), before.log[-2000:]
    assert before.certificates == {}, before.log[-2000:]
    found = search_case(searched, tmp_path_factory.mktemp("real"), name, template, frozenset({new}),
                        shared_prover_cache)
    assert_the_new_strategy_certifies(found, (), new, AUDIT_FALSE, shown)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_a_real_witness_never_flags_a_true_statement_of_the_same_shape(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    template, new = CONTROLS[name]
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("real-ok"), name, template, frozenset({new}),
                               shared_prover_cache)
    assert f"{new} " in search.log.rsplit("audit strategies: ", 1)[-1], search.log[-2000:]  # it ran
    assert search.certificates == {}, search.log[-2000:]
