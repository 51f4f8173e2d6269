"""The statement audit's session-14 witnesses (issue 34): function witnesses whose properties are calculus facts, a
list the conclusion asks for taken to its first element, and the one-line description naming the witnesses a
certificate gives an existential.

The misses of the held-out seeds 37 and 38 called for them, in kind: PutnamBench's ``putnam_2015_b1`` (a seed-38
control, and its ``shift_bound`` mutant) declares its hypothesis ``hf`` with ``:=``, so it is defined, never assumed,
and the statement is false at ``f := fun _ => 1`` (``g x = 1`` has no zero) — but the grid's constant function never
passed the side condition ``forall x, ex_derive_n f 3 x``, and no strategy took apart the list of zeros the
conclusion asks for. One search per template runs the former strategies that try the same instances, then the new
one: the log must show the new one closing the goal (the search stops at the first success, so the former ones did
not), and the certificate must pass the full verifier. The new strategy never flags the sound PutnamBench templates
it applies to (function variables with derivative and continuity side conditions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_audit_strategies_v4 import REALS
from test_audit_strategies_v4 import _search as _search_v4
from test_generated_witnesses import closed

from conftest import PUTNAM, require_path
from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_VACUOUS
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.audit import EARLY
from pytest_forall.lang.rocq.audit.derive import split_theorem
from pytest_forall.lang.rocq.audit.search import describe

#: name: (template, the former strategies that try the refuting instance before the new one, the new strategy, the
#: finding, a text the log's counterexample line must show)
CASES = {
    # a set witness: the empty set meets the premise, and the conclusion asks for a member
    "empty": ((f"{REALS}Theorem empty (S : R -> Prop) (h : forall x : R, S x -> x > 0) : exists x : R, S x.\n"
               "Proof. Admitted.\n"), ("same-value",), "function-witness", AUDIT_FALSE,
              "S := fun _ : R => False (by function-witness)"),
    # the description: a parameter and the function witness of a negated existential (parameter-witness's
    # certificate; the function was left out of the line before)
    "parameter": ((f"{REALS}Theorem parameter (lambda : R)\n"
                   "    : ~ exists u : R -> R, forall x : R, 0 <= x <= 1 -> u x = 1 + lambda * sqrt (u x + 2).\n"
                   "Proof. Admitted.\n"),
                  (), "parameter-witness", AUDIT_FALSE,
                  "lambda := 0, then exists u := fun _ : R => 1 (by parameter-witness)"),
    # the description of a vacuity: the all-zeros function witness of a negated existential
    "zeros": ((f"{REALS}Theorem zeros (h : ~ exists (f : nat -> R) (c : R), forall n : nat, f n = c) : 1 = 2.\n"
               "Proof. Admitted.\n"),
              (), "zero-witness", AUDIT_VACUOUS, "by zero-witness, witnesses f := fun _ : nat => 0, c := 0"),
    # mathcomp's constants without ssreflect's syntax (``From mathcomp Require Import div``, 27 PutnamBench templates):
    # every script with the mathcomp closers was a syntax error there, so even n := 0 was never tried
    "unimported": (("Require Import Reals.\nFrom mathcomp Require Import div.\n"
                    "Theorem unimported (n : nat) : n + 1 = n * 1.\nProof. Admitted.\n"),
                   (), "same-value", AUDIT_FALSE, "n := 0 (by same-value)"),
}
#: Sound PutnamBench templates the new strategy applies to (function variables whose derivative and continuity side
#: conditions a constant meets): never flagged
SOUND = ("putnam_1998_a3", "putnam_1997_b2")
NEW = frozenset({"function-witness"})


def _search(cache: dict[str, tuple[Any, dict[str, Any], Any]], root: Path, name: str, text: str,
            strategies: frozenset[str], key: str = "") -> tuple[Any, dict[str, Any], Any]:
    """test_audit_strategies_v4's search of template ``name``, cached under ``name`` and ``key`` (one template searched
    with two sets of strategies)."""
    if name + key not in cache:
        part: dict[str, tuple[Any, dict[str, Any], Any]] = {}
        cache[name + key] = _search_v4(part, root, name, text, strategies)
    return cache[name + key]


@pytest.fixture(scope="module")
def searched() -> dict[str, tuple[Any, dict[str, Any], Any]]:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_new_witness_certifies_a_counterexample_and_is_described(
        searched: dict[str, tuple[Any, dict[str, Any], Any]], tmp_path_factory: pytest.TempPathFactory,
        name: str) -> None:
    template, former, new, finding, shown = CASES[name]
    if new in EARLY and former:  # it runs before every other strategy: the former ones are shown failing alone
        before, _, _ = _search(searched, tmp_path_factory.mktemp("v6"), name, template, frozenset(former), "former")
        assert set(closed(before.log)) == set(former) and before.certificates == {}, before.log[-2000:]
        former = ()
    search, derived, prover = _search(searched, tmp_path_factory.mktemp("v6"), name, template,
                                      frozenset({*former, new}))
    ran = closed(search.log)
    assert {strategy: ran.get(strategy) for strategy in (*former, new)} == {
        **{strategy: False for strategy in former}, new: True}, search.log[-2000:]
    assert set(search.certificates) == {finding}, search.log[-2000:]
    assert f"audit counterexample: {finding}: {shown}" in search.log, search.log[-1000:]
    assert shown.split(" (by ")[0] in search.certificates[finding].splitlines()[0]
    if name == "empty":  # the other cases show the search or its description; their kinds are verified elsewhere
        verdict = verify_candidate(derived[finding], prover, search.certificates[finding].encode())
        assert verdict.accepted and verdict.strict, verdict.reason


@pytest.mark.slow
def test_putnambench_2015_b1_whose_hypothesis_is_a_let_is_flagged_false_by_a_constant_function(
        searched: dict[str, tuple[Any, dict[str, Any], Any]], tmp_path_factory: pytest.TempPathFactory) -> None:
    """The unmutated PutnamBench template (putnam_2015_b1's defect: ``hf`` is a ``let``; its side condition is a
    derivative's existence, its conclusion a list of zeros of ``g``, taken to its first element): the grid's constant
    function, tried by ``same-value``, never passed the side condition, and no seed-38 run nor the full run flagged it."""
    text = require_path(PUTNAM / "coq" / "src" / "putnam_2015_b1.v", "PutnamBench").read_text()
    before, _, _ = _search(searched, tmp_path_factory.mktemp("v6-b1"), "putnam_2015_b1", text,
                           frozenset({"same-value"}), "former")
    assert set(closed(before.log)) == {"same-value"} and before.certificates == {}, before.log[-2000:]
    search, derived, prover = _search(searched, tmp_path_factory.mktemp("v6-b1"), "putnam_2015_b1", text,
                                      frozenset({"function-witness"}))
    assert closed(search.log).get("function-witness") is True, search.log[-2000:]
    assert "audit counterexample: false: f := fun _ : R => 1 (by function-witness)" in search.log
    verdict = verify_candidate(derived[AUDIT_FALSE], prover, search.certificates[AUDIT_FALSE].encode())
    assert verdict.accepted and verdict.strict, verdict.reason


@pytest.mark.slow
@pytest.mark.parametrize("name", SOUND)
def test_the_function_witness_does_not_flag_sound_statements_it_applies_to(
        searched: dict[str, tuple[Any, dict[str, Any], Any]], tmp_path_factory: pytest.TempPathFactory,
        name: str) -> None:
    text = require_path(PUTNAM / "coq" / "src" / f"{name}.v", "PutnamBench").read_text()
    search, _, _ = _search(searched, tmp_path_factory.mktemp("v6-sound"), name, text, NEW)
    assert search.certificates == {}, search.log[-2000:]
    assert "function-witness" in closed(search.log), "the strategy did not run: the test shows nothing"


def test_the_description_names_function_and_sequence_witnesses_of_an_existential() -> None:
    """A proof term's existential witnesses (``ex_intro``), named by their predicate's binder, after the instances of
    the refuted statement's variables; a vacuity's too (it had only the strategy's name)."""
    split = split_theorem("Theorem t (lambda : R) : ~ exists u : nat -> R, u 0%nat = lambda.\nProof. Admitted.\n",
                          "t")
    assert split is not None
    proof = ("(fun forall_audit_H : _ => let forall_audit_H0 := forall_audit_H 0%R in forall_audit_H0 "
             "(ex_intro (fun u : nat -> R => u 0%nat = 0%R) (fun n : nat => INR n * INR n) eq_refl))")
    assert describe(AUDIT_FALSE, proof, split, "s") == (
        "lambda := 0%R, then exists u := fun n : nat => INR n * INR n (by s)")
    assert describe(AUDIT_VACUOUS, "(ex_intro (fun c : R => c = 0) 0%R eq_refl)", split, "s") == (
        "by s, witnesses c := 0%R")
