"""The statement audit's session-15 witnesses (issue 34): counterexamples found by evaluation.

The misses of the held-out seeds called for them, in kind: the seed-38 ``drop_hypothesis`` of PutnamBench's
``putnam_1996_a5`` (``hp`` dropped) is false at ``p = 2`` — ``k = floor (4/3) = 1``, the sum ``C 2 1 = 2`` and
``2 = INR m * 4`` has no natural ``m`` — but no former strategy evaluates Coquelicot's ``floor``, expands ``sum_n_m`` at
the bound that floor gives, or splits an unknown natural into cases; and a counterexample whose variables differ, the
first one not minimal, is reached late by the grid's backtracking (it varies the last variables first). One small
template per witness kind: the former strategies that try the same instances find nothing (in their own search for an
early strategy, which runs before them; else in the same search, which stops at the first success), the new one
closes the goal, and its certificate passes the full verifier. The new strategies never flag the sound PutnamBench
template they were written from (``putnam_1996_a5`` with ``hp``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_cases import Searched, assert_the_new_strategy_certifies, closed, search_case

from conftest import PUTNAM, require_path
from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_VACUOUS
from pytest_forall.lang.rocq.audit import EARLY
from pytest_forall.lang.rocq.audit.evaluation import _z, evaluable

COQUELICOT = "Require Import Binomial Reals Coquelicot.Coquelicot.\nOpen Scope R.\n"
#: name: (template, the former strategies that try the refuting instance, the new strategy, the finding, a text the
#: log's counterexample line must show, whether the full verifier re-checks the certificate here)
CASES = {
    # putnam_1996_a5 without hp, in kind: a floor found between integers, a finite sum over the range it gives
    # expanded, binomial coefficients unfolded to factorials, and the existential's natural split into cases
    "floor": ((f"{COQUELICOT}Theorem floor (p : nat) : exists m : nat, "
               "sum_n_m (fun i => Binomial.C p i) 1 (Z.to_nat (floor (2 * INR p / 3))) = INR m * INR p ^ 2.\n"
               "Proof. Admitted.\n"),
              ("same-value", "backtracking", "evaluated-same-value", "evaluated-backtracking"), "evaluated-grid-early",
              AUDIT_FALSE, "p := 2%nat (by evaluated-grid-early)", True),
    # an unknown natural under INR: 1 = 2 * INR m has no natural solution (0, 1, 2, then m + 3 >= 3)
    "integral": (("Require Import Reals.\nOpen Scope R.\n"
                  "Theorem integral (n : nat) (h : (n <= 3)%nat) : exists m : nat, INR n = 2 * INR m.\n"
                  "Proof. Admitted.\n"),
                 ("same-value", "staircase", "evaluated-same-value"), "evaluated-grid", AUDIT_FALSE,
                 "n := 1%nat (by evaluated-grid)", False),
    # six variables, false only where the first is 2 and the others 0 (the statement names neither): by total cost
    # it is a level-2 instance; the grid's backtracking visits every value of the last five at a = 0 and 1 first
    "grid": (("Theorem grid (a b c d e f : nat) : a * 3 <> 6 \\/ a + b + c + d + e + f <> 2.\nProof. Admitted.\n"),
             ("same-value", "staircase", "boundary"), "evaluated-grid", AUDIT_FALSE,
             "a := 2, b := 0, c := 0, d := 0, e := 0, f := 0 (by evaluated-grid)", True),
    # vacuity: a hypothesis about a floor false at n = 1 (floor (1/2) = 0, and 0 * 2 = 1 fails)
    "vacuous-floor": ((f"{COQUELICOT}Theorem vacuous_floor (x : R) "
                       "(h : forall n : nat, IZR (floor (INR n / 2)) * 2 = INR n) : x = 1.\nProof. Admitted.\n"),
                      ("specialise-2", "generated-specialise"), "evaluated-specialise", AUDIT_VACUOUS,
                      None, False),
}
NEW = frozenset({"evaluated-grid-early", "evaluated-grid", "evaluated-specialise"})


@pytest.fixture(scope="module")
def searched() -> Searched:
    """Each template's search, run once for the module (each is one coqtop session)."""
    return {}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_counterexample_found_by_evaluation_is_certified(searched: Searched, tmp_path_factory: pytest.TempPathFactory,
                                                           shared_prover_cache: Path, name: str) -> None:
    template, former, new, finding, shown, verify = CASES[name]
    theorem = template.split("Theorem ", 1)[1].split()[0]
    if new in EARLY:  # it runs before every other strategy: the former ones are shown failing in their own search
        before, _, _ = search_case(searched, tmp_path_factory.mktemp("v7"), theorem + "_former", template.replace(
            f"Theorem {theorem} ", f"Theorem {theorem}_former "), frozenset(former), shared_prover_cache)
        assert set(closed(before.log)) == set(former) and not any(closed(before.log).values()), before.log[-2000:]
        assert before.certificates == {}, before.log[-2000:]
        former = ()
    found = search_case(searched, tmp_path_factory.mktemp("v7"), theorem, template, frozenset({*former, new}),
                        shared_prover_cache)
    if verify:
        assert_the_new_strategy_certifies(found, former, new, finding, shown)
        return
    search = found[0]  # the certificate's kind is verified in the cases above; here the search and its description
    ran = closed(search.log)
    assert {strategy: ran.get(strategy) for strategy in (*former, new)} == {
        **{strategy: False for strategy in former}, new: True}, search.log[-2000:]
    assert set(search.certificates) == {finding}, search.log[-2000:]
    assert shown is None or f"audit counterexample: {finding}: {shown}" in search.log, search.log[-1000:]


@pytest.mark.slow
def test_the_evaluation_does_not_flag_the_sound_template_it_was_written_from(
        searched: Searched, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    """putnam_1996_a5 with its hypothesis ``hp`` (``p`` prime and greater than 3, which no small value is shown to
    meet by computation): every branch is pruned, nothing is certified."""
    text = require_path(PUTNAM / "coq" / "src" / "putnam_1996_a5.v", "PutnamBench").read_text()
    search, _, _ = search_case(searched, tmp_path_factory.mktemp("v7-sound"), "putnam_1996_a5", text, NEW,
                               shared_prover_cache)
    assert search.certificates == {}, search.log[-2000:]
    assert {"evaluated-grid-early", "evaluated-grid"} <= set(closed(search.log)), "the strategies did not run"


def test_the_gate_names_only_what_the_loaded_libraries_define() -> None:
    """A name the file does not have fails the whole script when it is read: Coquelicot's floor and sums, the standard
    library's sums and binomials are in the gate only with their feature; integer constants are built from
    constructors (a file without ZArith has no ``%Z``)."""
    bare = evaluable(())
    assert "Coquelicot" not in bare and "Coq.Reals" not in bare and "Z.div" in bare
    assert "Coquelicot.Rcomplements.floor" in evaluable(("reals", "sums", "binomial"))
    assert _z(1) == "(Coq.Numbers.BinNums.Zpos Coq.Numbers.BinNums.xH)"
    assert _z(6) == ("(Coq.Numbers.BinNums.Zpos (Coq.Numbers.BinNums.xO (Coq.Numbers.BinNums.xI "
                     "Coq.Numbers.BinNums.xH)))")
