"""The statement audit's session-15 round-3 witnesses (issue 34): the two gaps the held-out seed 61 showed.

``putnam_1984_b2``'s mutants (``answer_constant``: false at ``x := 1, y := 3``) were missed because the refutation
scripts walk a ``forall`` at the head of the negated statement, and there it is a conjunction; the unmutated
``putnam_1998_b4`` is false at ``m := 1, n := 2`` because Coq's ``ln`` is ``0`` on the non-positive reals (``Rpower
(-1) y = exp (y * 0) = 1``), which no strategy evaluated. One small template per gap: the former strategies that try
the same instances close nothing, ``evaluated-halves`` closes it, and its certificate passes the full verifier; and a
sound control each (a true conjunction, ``Rpower`` of a positive base) is not flagged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import Searched, assert_the_new_strategy_certifies, closed, search_case

from pytest_forall.core.audit import AUDIT_FALSE

REALS = "From Coq Require Import Reals.\nOpen Scope R_scope.\n"
#: the former refutations that instantiate the statement (the search stops at the first success and runs them first)
FORMER = ("refute-direct", "same-value", "backtracking", "backtracking-deep", "generated-backtracking",
          "evaluated-grid")
NEW = "evaluated-halves"
#: name: (template, the text the log's counterexample line shows, if any)
CASES = {
    # putnam_1984_b2's shape: a conjunction at the head, its first half false at x := 1 (sqrt 4 = 2 < 3: Interval)
    "half": ((f"{REALS}Theorem half : (forall x : R, 0 < x < 2 -> sqrt (x * x + 3) >= 3) /\\ "
              "(exists x : R, x = 1).\nProof. Admitted.\n"), "1 (by evaluated-halves)"),
    # putnam_1998_b4's shape: Rpower of a negative base is 1 (ln is 0 there), so it is never -2 ^ n's value
    "rpower": (f"{REALS}Theorem rpower (n : nat) (h : (n > 0)%nat) : Rpower (-2) (INR n) <> 1.\nProof. Admitted.\n",
               "n := 1%nat (by evaluated-halves)"),
    # an answer set's membership that unfolds to a conjunction (no reals loaded: the script must read without them),
    # its first half universal and false at k := 2
    "membership": (("Definition good (n : nat) := (forall k : nat, k * n <> 4) /\\ n < 10.\n"
                   "Theorem membership : good 2.\nProof. Admitted.\n"), None),
}
#: sound controls of the same shapes: a true conjunction (sqrt 3 > 1), Rpower of a positive base (2 ^ x > 1 for x > 0)
SOUND = {
    "half_sound": f"{REALS}Theorem half_sound : (forall x : R, 0 < x < 2 -> sqrt (x * x + 3) >= 1) /\\ "
                  "(exists x : R, x = 1).\nProof. Admitted.\n",
    "rpower_sound": f"{REALS}Theorem rpower_sound (x : R) (h : 0 < x) : Rpower 2 x > 1.\nProof. Admitted.\n",
}


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_one_half_refuted_or_a_nonpositive_power_evaluated_is_certified(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    template, shown = CASES[name]
    found = search_case(searched, tmp_path_factory.mktemp("v8"), name, template, frozenset({*FORMER, NEW}),
                        shared_prover_cache)
    assert_the_new_strategy_certifies(found, FORMER, NEW, AUDIT_FALSE, shown)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SOUND))
def test_the_halves_do_not_flag_a_sound_statement_of_the_same_shape(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path, name: str) -> None:
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("v8-sound"), name, SOUND[name], frozenset({NEW}),
                               shared_prover_cache)
    assert search.certificates == {}, search.log[-2000:]
    assert NEW in closed(search.log), "the strategy did not run"
