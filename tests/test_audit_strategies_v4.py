"""The statement audit's session-13 strategies (issue 34): paired variables, a hypothesis at a term of its own body,
divisibility unfolded, and an existential side condition witnessed.

Each template is a miss of the search before, in kind (read from the generated corpus's seed-34 and seed-36 misses):
a premise relating two quadratics that holds when they are equal (``mirrored``), a quantifier moved outward past a
bound (``exists a, forall N, N < a``: ``diagonal``, over Coq's reals and over a mathcomp ``realType``, where the two
sides of ``a%:~R < a%:~R`` differ in their structure arguments), a gcd condition that the list's own bound
contradicts (``divisibility``) and a hypothesis about a series whose premise a small ``epsilon`` empties (the
generated backtracking's side conditions). One search per template runs the former strategies that try the same
instances, then the new one: the log must show the new one closing the goal (the search stops at the first
success, so the former ones did not), and the certificate must pass the full verifier. The new strategies never
flag the sound statements they were written from (the unmutated PutnamBench templates).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audit_cases import MATHCOMP_REALS, REALS, Searched, assert_the_new_strategy_certifies, search_case

from conftest import PUTNAM, require_path
from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_VACUOUS

#: name: (template, the former strategies that try the refuting instance, the new strategy, the finding, a text the
#: log's counterexample line must show or None)
CASES = {
    # false at a = A = 1, b = B = 2, c = C = 0 (the premise holds by reflexivity); the same value everywhere keeps
    # the conclusion true (b^2 - 4ac = -3v^2), and the backtracking search varies C first, past its budget
    "paired": ((f"{REALS}Theorem paired (a b c A B C : R) (ha : a <> 0)\n"
                "    (hp : forall x : R, a * x ^ 2 + b * x + c <= A * x ^ 2 + B * x + C) :\n"
                "    b * b - 4 * a * c <= 0 \\/ B * B - 5 * A * C <= 0.\nProof. Admitted.\n"),
               ("same-value", "backtracking"), "mirrored", AUDIT_FALSE, "A := 1"),
    # a quantifier moved outward: N := a gives a < a
    "unbounded": (f"{REALS}Theorem unbounded : exists a : R, forall N : R, N < a.\nProof. Admitted.\n",
                  ("refute-direct", "backtracking", "staircase"), "diagonal", AUDIT_FALSE, None),
    # the same over a mathcomp realType: N := a%:~R, whose two sides are convertible, not syntactically equal
    "unbounded_int": ((f"{MATHCOMP_REALS}Theorem unbounded_int : exists a : int, forall N : R, N < a%:~R.\n"
                       "Proof. Admitted.\n"), ("refute-direct", "backtracking", "staircase"), "diagonal", AUDIT_FALSE, None),
    # hgcd at n = 1: Zis_gcd s 1 0 (0 divides 1) or s | 1, against s > 1
    "divides": (("Require Import List ZArith Znumtheory.\nOpen Scope Z_scope.\n"
                 "Theorem divides (A : list Z) (Age1 : forall x : Z, In x A -> x > 1)\n"
                 "    (hgcd : forall n : Z, exists s : Z, In s A /\\ (Zis_gcd s n 0 \\/ Zis_gcd s n s)) :\n"
                 "    A = nil.\nProof. Admitted.\n"),
                ("specialise-2", "generated-specialise"), "divisibility", AUDIT_VACUOUS, None),
    # epsilon := 1/2 empties the series hypothesis (1 <= |x| < 1/2), so a := fun _ => 1 refutes the conclusion at n = 0
    "emptied": (("Require Import Reals Coquelicot.Coquelicot.\nOpen Scope R_scope.\n"
                 "Theorem emptied (a : nat -> R)\n"
                 "    (hf : exists e : R, e > 0 /\\ (forall x : R, 1 <= Rabs x < e ->\n"
                 "          filterlim (fun n : nat => sum_n (fun i => a i * x ^ i) n) eventually (locally 1)))\n"
                 "    : forall n : nat, exists m : nat, (a n) ^ 2 + (a (S n)) ^ 2 = a m.\nProof. Admitted.\n"),
                ("backtracking",), "generated-backtracking", AUDIT_FALSE, "a := fun _ : nat => 1"),
}
#: PutnamBench's sound templates the new strategies were written from (unmutated): never flagged
SOUND = ("putnam_2003_a4", "putnam_1999_b6", "putnam_1978_b4")
NEW = frozenset({"mirrored", "diagonal", "divisibility"})


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each case's search, run once for the module (each is one coqtop session)."""
    return {}


def _search(cache: Searched, root: Path, name: str, text: str, strategies: frozenset[str],
            prover_cache: Path | None = None) -> tuple[Any, dict[str, Any], Any]:
    """:func:`audit_cases.search_case` (kept under this name: the later strategy files import it from here)."""
    return search_case(cache, root, name, text, strategies, prover_cache)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_new_strategy_certifies_a_counterexample_the_former_ones_missed(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    template, former, new, finding, shown = CASES[name]
    found = _search(searched, tmp_path_factory.mktemp("v4"), name, template, frozenset({*former, new}),
                    shared_prover_cache)
    assert_the_new_strategy_certifies(found, former, new, finding, shown)


@pytest.mark.slow
@pytest.mark.parametrize("name", SOUND)
def test_the_new_strategies_do_not_flag_the_sound_statements_they_were_written_from(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    text = require_path(PUTNAM / "coq" / "src" / f"{name}.v", "PutnamBench").read_text()
    search, _, _ = _search(searched, tmp_path_factory.mktemp("v4-sound"), name, text, NEW, shared_prover_cache)
    assert search.certificates == {}, search.log[-2000:]
    assert "audit strategies: none" not in search.log, "no new strategy ran: the test shows nothing"
