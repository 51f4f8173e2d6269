"""The statement audit's search on real PutnamBench templates (issue 20): each bug it had, shown failing first.

Every test states a goal in a real template's preamble (PutnamBench at ``PUTNAMBENCH_ROOT``), or a derived task of a real
template, and checks that the search's scripts close what they must (or, for the pty, that a long line
arrives). What a closed goal proves is still judged by the verifier (tests/test_audit.py).
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_audit_mutants import audit_mutants, run_store

from conftest import PUTNAM, require_tool
from pytest_forall.lang.rocq.coqtop import Goal, TacticProbe, process_tree
from pytest_forall.lang.rocq.problem import parse_coq


def template(name: str) -> str:
    path = PUTNAM / "coq" / "src" / f"{name}.v"
    if not path.is_file():
        pytest.fail(f"{path} is missing: the PutnamBench checkout is not at {PUTNAM}; set PUTNAMBENCH_ROOT")
    return path.read_text()


def probe(tmp_path: Path, cache: Path) -> TacticProbe:
    from pytest_forall.lang.rocq.backend import RocqProver

    require_tool("coqtop")
    return RocqProver({"cache_dir": str(cache)}).tactic_probe(tmp_path)


def test_a_tactic_line_longer_than_the_pty_line_buffer_reaches_coqtop(tmp_path: Path,
                                                                      shared_prover_cache: Path) -> None:
    """A canonical-mode pty drops what exceeds 4095 bytes of a line: a 9 KB script got no answer at all."""
    script = "idtac; " * 1300 + "exact I"
    assert len(script) > 8192
    winners, _, log = probe(tmp_path, shared_prover_cache).run_goals(
        "", [Goal("Lemma long : True.\nProof.\n", "long", [(script, 5.0)])], tmp_path)
    assert winners == {"long": script}, log[-500:]


def _pause_coqtop(seconds: float, after: float) -> threading.Thread:
    """Stop this test's coqtop for ``seconds`` once it has run ``after`` seconds: a machine too loaded to run it."""
    def pause() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            mine = [pid for pid in process_tree(os.getpid()) if Path(f"/proc/{pid}/comm").read_text().strip()
                    .startswith("coqtop")]
            if mine:
                time.sleep(after)
                for pid in mine:
                    os.kill(pid, signal.SIGSTOP)
                time.sleep(seconds)
                for pid in mine:
                    os.kill(pid, signal.SIGCONT)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=pause, daemon=True)
    thread.start()
    return thread


def test_a_tactics_budget_is_cpu_time_so_a_stalled_machine_finds_what_an_idle_one_finds(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    """Stopped for 4 s in the middle of a script that needs well under a second of CPU, coqtop still gets its
    3 s of CPU: a wall-clock ``Timeout 3`` ended the script instead."""
    busy = "do 30 (assert (Nat.pow 2 12 = 4096) by (cbv; reflexivity); clear); exact I"
    session = probe(tmp_path, shared_prover_cache)
    pause = _pause_coqtop(4.0, after=0.8)
    winners, _, log = session.run_goals("", [Goal("Lemma busy : True.\nProof.\n", "busy", [(busy, 3.0)])], tmp_path)
    pause.join()
    assert winners == {"busy": busy}, log
    assert session.wall_used > 4.0 and session.cpu_used < 3.0, (session.wall_used, session.cpu_used)


def test_a_script_past_its_cpu_budget_is_interrupted_and_the_session_goes_on(tmp_path: Path,
                                                                             shared_prover_cache: Path) -> None:
    loop = "let rec f n := f (S n) in f 0"
    session = probe(tmp_path, shared_prover_cache)
    winners, _, log = session.run_goals("", [Goal("Lemma loop : True.\nProof.\n", "loop",
                                                  [(loop, 1.0), ("exact I", 1.0)])], tmp_path)
    assert winners == {"loop": "exact I"}, log
    assert "User interrupt" in log and session.cpu_used < 3.0, log


def test_a_running_script_s_cpu_is_read_when_its_budget_could_be_spent_not_every_poll(
        tmp_path: Path, shared_prover_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe read /proc every 50 ms (``POLL``) while a script ran: about 1 s of the Python process's CPU per 20 s
    search on a loaded machine, where a search takes several times its CPU in wall time. A process tree cannot spend
    the budget left faster than the machine has cores, so the probe waits that long before it reads again; the
    script is still interrupted at its budget."""
    from pytest_forall.lang.rocq import coqtop

    reads = 0
    real = coqtop.cpu_seconds

    def counted(pid: int) -> float | None:
        nonlocal reads
        reads += 1
        return real(pid)

    loop = "let rec f n := f (S n) in f 0"
    session = probe(tmp_path, shared_prover_cache)
    monkeypatch.setattr(coqtop, "cpu_seconds", counted)
    began = time.monotonic()
    winners, _, log = session.run_goals("", [Goal("Lemma loop : True.\nProof.\n", "loop", [(loop, 2.0)])], tmp_path)
    took = time.monotonic() - began
    assert winners == {} and "User interrupt" in log, log
    spent = float(re.search(r"CPU ([0-9.]+) s\)$", log, re.MULTILINE).group(1))  # type: ignore[union-attr]
    assert 2.0 <= spent < 2.5, log
    # every 50 ms would be ``took / POLL`` reads (40 on an idle machine, hundreds on a loaded one)
    assert reads <= took / coqtop.POLL / 3 + 10, (reads, took)


def audit_of(tmp_path: Path, name: str, find: str, replace: str, cpu: float = 20.0,
             store: Path | None = None, *, cache: Path) -> tuple[list[str], str]:
    """The verified findings of the audit on a real template with one replacement, and the search's log;
    ``store``: this run's store of the mutation corpus's audits, for a mutant of the corpus (:func:`run_store`)."""
    text = template(name)
    assert text.count(find) == 1, find
    return audit_text(tmp_path, name, text.replace(find, replace), cpu, store, cache=cache)


def audit_text(tmp_path: Path, name: str, text: str, cpu: float = 20.0,
               store: Path | None = None, *, cache: Path) -> tuple[list[str], str]:
    """The verified findings of the audit on the template ``text`` (``audit_mutants.audit``: the search, then each
    certificate judged by the verifier), and the search's log."""
    from pytest_forall.lang.rocq.backend import RocqProver

    require_tool("coqtop")
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.v"
    path.write_text(text)
    return audit_mutants.audit(parse_coq(name, path, text), RocqProver({"cache_dir": str(cache)}),
                               tmp_path / "ws", cpu, store)


def _after_closing(log: str, theorem_scripts: list[str]) -> list[str]:
    """The attempts the log shows after the last of ``theorem_scripts`` closed its goal."""
    lines = log.splitlines()
    closed = max(i for i, line in enumerate(lines) if any(line.startswith(f"{s}: closed the goal")
                                                          for s in theorem_scripts))
    return [line for line in lines[closed + 1:] if line.endswith(" s)")]


def spend(log: str) -> str:
    """The log's per-strategy spend line."""
    return next(line for line in log.splitlines() if line.startswith("audit strategies: "))


@pytest.mark.slow
def test_the_search_ends_once_the_statement_is_refuted_or_its_hypotheses_contradict(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    """A refutation proves the statement's negation and contradictory hypotheses prove the statement (both ties
    checked), so after either no other finding can close: the scripts that ran on (the refutation search after a
    vacuity, the heavy automation after a refutation: seconds each) only spent the item's budget."""
    from pytest_forall.lang.rocq.audit import STRATEGIES

    found, log = audit_text(tmp_path / "v", "empty", "Require Import Arith.\nTheorem empty (n : nat) (h : n < 0) :\n"
                            "    n * n = n + 7.\nProof. Admitted.\n", cache=shared_prover_cache)
    assert found == ["vacuous"], log[-3000:]
    assert _after_closing(log, list(STRATEGIES)) == [], log[-3000:]
    assert "refute-" not in spend(log), log[-3000:]
    found, log = audit_text(tmp_path / "f", "wrong", "Require Import Arith.\nTheorem wrong (n : nat) (h : n > 0) :\n"
                            "    n * n > n.\nProof. Admitted.\n", cache=shared_prover_cache)
    assert found == ["false"], log[-3000:]
    assert _after_closing(log, list(STRATEGIES)) == [], log[-3000:]
    assert "automation-" not in spend(log), log[-3000:]


@pytest.mark.slow
def test_real_literals_are_tried_in_a_mathcomp_real_template(tmp_path: Path, shared_prover_cache: Path) -> None:
    """mathcomp's ``0%R`` has no ring until it is used: the old scope probe (``constr:``) failed on it, so no real
    literal was ever tried and ``g 2`` never met ``forall x, g x = x``; nor could ``(2 : R) = 3`` be refuted."""
    found, log = audit_of(tmp_path, "putnam_1962_b5", "(n : nat)",
                          "(n : nat) (g : R -> R) (hg : forall x : R, g x = x) (hg2 : g 2 = 3)",
                          cache=shared_prover_cache)
    assert "uconstr:(0%R) in exact Coq.Init.Logic.I: closed the goal" in log
    assert found == ["vacuous"], log[-3000:]


@pytest.mark.slow
def test_locked_big_operators_are_evaluated(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                                            shared_prover_cache: Path) -> None:
    """An off-by-one summation range is refuted at ``n = 2`` only once ``\\sum`` is unlocked for ``vm_compute``
    (the corpus's ``sum-range-off-by-one``: its audit is run once per test run, :func:`run_store`)."""
    found, log = audit_of(tmp_path, "putnam_1962_a5", "\\sum_(1 <= k < n.+1)", "\\sum_(1 <= k < n)",
                          store=run_store(tmp_path_factory), cache=shared_prover_cache)
    assert found == ["false"], log[-3000:]


@pytest.mark.slow
def test_the_refutation_search_descends_through_the_theorems_let_binders(tmp_path: Path,
                                                                         shared_prover_cache: Path) -> None:
    """``(f : nat -> int := …)`` makes the negated statement a ``let``: the old search never instantiated it. Here
    it refutes putnam_1966_a1 as it is: ``(m%:Z)/2`` is ``m * 2^-1`` in ``int``, whose ``2^-1`` is 2 (2 is not a
    unit), so ``f`` is not the intended sum of halves."""
    found, log = audit_of(tmp_path, "putnam_1966_a1", "(0 <= m < n + 1)", "(0 <= m < n + 1)",
                          cache=shared_prover_cache)
    assert found == ["false"], log[-3000:]


@pytest.mark.slow
def test_an_order_premise_failing_at_i_equal_j_is_found_by_one_instance_and_its_premises(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> None:
    """``0 < i -> i <= j -> f i < f j`` fails at ``i = j = 1``: one hypothesis, two literals, both premises decided
    (the corpus's ``monotonicity-made-non-strict``: its audit is run once per test run, :func:`run_store`)."""
    found, log = audit_of(tmp_path, "putnam_1963_a2", "0 < i -> i < j -> f i < f j", "0 < i -> i <= j -> f i < f j",
                          store=run_store(tmp_path_factory), cache=shared_prover_cache)
    assert found == ["vacuous"], log[-3000:]


@pytest.mark.slow
def test_literal_instances_are_one_level_so_they_end_quickly(tmp_path: Path, shared_prover_cache: Path) -> None:
    """Instantiating every hypothesis of putnam_1963_a2's vacuity task at the literals used to instantiate the
    partial instances it created too (a multiplying context that ran until the time limit); marked instances
    are not instantiated again, so the script ends (here failing: nothing contradicts) well within its budget."""
    from pytest_forall.core.audit import derived_tasks
    from pytest_forall.lang.rocq.audit import DESTRUCT, literal_instances, search_prelude

    path = tmp_path / "putnam_1963_a2.v"
    path.write_text(template("putnam_1963_a2"))
    task = parse_coq("putnam_1963_a2", path, path.read_text())
    vacuity = derived_tasks(task)["vacuous"]
    script = f"{DESTRUCT}; {literal_instances(('nat', 'Z', 'R', 'Q'))}; fail"
    session = probe(tmp_path, shared_prover_cache)
    winners, _, log = session.run_goals(search_prelude(task.template, hammer=False),
                                        [Goal(vacuity.frozen, vacuity.theorem_name, [(script, 10.0)])], tmp_path)
    assert winners == {} and "load failed" not in log, log[-2000:]
    assert "User interrupt" not in log and session.cpu_used < 8.0, (session.cpu_used, log[-500:])


@pytest.mark.slow
def test_fraction_comparisons_over_an_abstract_real_type_are_decided(tmp_path: Path,
                                                                     shared_prover_cache: Path) -> None:
    """``lambda := 1 / 3`` against ``lambda > 1 / 2`` over an abstract ``realType``: ``lia``/``lra`` see nothing
    there and ``eqr_nat`` only numerals; the constants are taken to ``rat`` (``ratr``, an order embedding) and
    compared there by computation."""
    found, log = audit_of(tmp_path, "putnam_1967_a4", "(lambda : R)\n", "(lambda : R := 1 / 3)\n",
                          cache=shared_prover_cache)
    assert found == ["vacuous"], log[-3000:]


def _mutant_goal(tmp_path: Path, name: str, find: str, replace: str, kind: str) -> tuple[str, Goal, str]:
    """(what the search loads, the derived task's goal with no script yet, its theorem) of a template with one
    replacement."""
    from pytest_forall.core.audit import derived_tasks
    from pytest_forall.lang.rocq.audit import search_prelude

    text = template(name)
    assert text.count(find) == 1, find
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.v"
    path.write_text(text.replace(find, replace))
    task = parse_coq(name, path, path.read_text())
    derived = derived_tasks(task)[kind]
    return search_prelude(task.template, hammer=False), Goal(derived.frozen, derived.theorem_name, []), \
        derived.theorem_name


def _closing(tmp_path: Path, loaded: str, goal: Goal, scripts: list[tuple[str, float]], first: bool = False, *,
             cache: Path) -> list[str]:
    """The scripts that close the goal within their own CPU budgets (each script a goal of its own, aborted before
    the next is stated, as the search runs them), or with ``first`` only the first that does (one goal: the search
    stops it at its first win). One coqtop for them all: the definitions before the theorem are loaded once, with
    what the search loads, so a session restarted after a hung script has them too."""
    statement = goal.statement.rindex(f"Theorem {goal.theorem}")
    preamble, theorem = loaded + goal.statement[:statement], goal.statement[statement:]
    closed: list[str] = []
    winners: dict[str, str] = {}

    def goals() -> Iterator[Goal]:
        for tries in [scripts] if first else [[script] for script in scripts]:
            yield Goal(theorem, goal.theorem, tries)
            won = winners.pop(goal.theorem, None)  # filled in as the goal closed; read before the next is stated
            closed.extend([won] if won is not None else [])

    _, _, log = probe(tmp_path, cache).run_goals(preamble, goals(), tmp_path, winners=winners)
    assert "load failed" not in log, log[-2000:]
    return closed


def _closed(tmp_path: Path, loaded: str, goal: Goal, scripts: list[str], seconds: float = 10.0, *,
            cache: Path) -> list[str]:
    """The scripts that close the goal, each given ``seconds`` of CPU (:func:`_closing`)."""
    return _closing(tmp_path, loaded, goal, [(script, seconds) for script in scripts], cache=cache)


@pytest.mark.slow
def test_depth_counters_are_peano_terms_so_the_files_open_scope_cannot_stop_the_search(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    """The specialisation's depth was a bare numeral matched against ``S ?m``: under ``Open Scope Z`` (or R,
    or mathcomp's ring_scope: most of PutnamBench) ``2`` is an integer, so no hypothesis was ever instantiated.
    ``forall x y : Z, x = y`` needs two literals; the script with the old counter fails, the new one closes."""
    from pytest_forall.lang.rocq.audit import DESTRUCT, peano, specialise

    loaded, goal, _ = _mutant_goal(tmp_path, "putnam_1988_b1", "forall (n: Z),",
                                   "forall (n: Z) (hz : forall x y : Z, x = y),", "vacuous")
    script = f"{DESTRUCT}; {specialise(('nat', 'Z'), (), 2)}"
    assert f"({peano(2)})" in script
    old = script.replace(f"({peano(2)})", "2")
    assert _closed(tmp_path, loaded, goal, [old, script], cache=shared_prover_cache) == [script]


@pytest.mark.slow
def test_two_disagreeing_instances_of_an_equivalence_with_a_quantifier_moved_out_are_combined(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    """``forall n a b c, A n <-> a >= 0 /\\ … /\\ a ^ 3 + … = n`` (the ``exists`` of putnam_2019_a1 moved out of
    the equivalence): ``A 0`` holds at ``a = 0`` and fails at ``a = 1``. Four variables deep at 0 and 1, then the
    implications with decided premises applied; without that step the closers fail on the 32 instances."""
    from pytest_forall.lang.rocq.audit import (
        BREAK,
        DESTRUCT,
        MODUS_PONENS,
        SATURATION_VALUES,
        closer,
        saturate,
    )

    loaded, goal, _ = _mutant_goal(
        tmp_path, "putnam_2019_a1",
        "(hA : forall (n: Z), A n <-> exists (A B C: Z), A >= 0 /\\ B >= 0 /\\ C >= 0 /\\ A ^ 3 + B ^ 3 + C ^ 3 - 3 * A * B * C = n)",
        "(hA : forall (n a b c: Z), A n <-> a >= 0 /\\ b >= 0 /\\ c >= 0 /\\ a ^ 3 + b ^ 3 + c ^ 3 - 3 * a * b * c = n)",
        "vacuous")
    scopes = ("nat", "Z")
    base = f"{DESTRUCT}; {saturate(scopes, 4, SATURATION_VALUES[:2])}; {BREAK}"
    without, with_mp = f"{base}; {closer(scopes)}", f"{base}; {MODUS_PONENS}; {closer(scopes)}"
    assert _closed(tmp_path, loaded, goal, [without, with_mp], cache=shared_prover_cache) == [with_mp]


@pytest.mark.slow
def test_constant_polynomials_witness_a_forall_moved_outside_an_equivalence(tmp_path: Path,
                                                                            shared_prover_cache: Path) -> None:
    """``forall P n, Pcoeff P <-> P`_n = 0 \\/ P`_n = 1`` (putnam_2021_a6's ``forall n`` moved out): ``2%:P`` has
    coefficient 2 at 0 and 0 at 1. No value of the grid was a polynomial; constant ones are, with ``coefC``."""
    from pytest_forall.lang.rocq.audit import BREAK, DESTRUCT, POLY, POLY_EVAL, SATURATION_VALUES, saturate

    loaded, goal, _ = _mutant_goal(
        tmp_path, "putnam_2021_a6", "(hPcoeff : forall P, Pcoeff P <-> forall n : nat, (P`_n = 0) \\/ (P`_n = 1))",
        "(hPcoeff : forall P (n : nat), Pcoeff P <-> (P`_n = 0) \\/ (P`_n = 1))", "vacuous")
    scopes = ("nat", "Z", "R")
    scripts = [f"{DESTRUCT}; {saturate(scopes, 2, SATURATION_VALUES[:3], features)}; {BREAK}; {POLY_EVAL}"
               for features in ((), (POLY,))]
    assert _closed(tmp_path, loaded, goal, scripts, seconds=15.0, cache=shared_prover_cache) == scripts[1:]


@pytest.mark.slow
def test_a_refuted_instance_is_searched_again_and_two_argument_constant_functions_are_witnesses(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    """putnam_2008_a1 without its functional equation is false at ``f := fun _ _ => 1`` (``1 = g 0 - g 0``): the
    last refutation script (the refuted instance searched again) closes it, the others do not; putnam_1988_b1
    without ``n > 3`` is false at a small ``n``, whose premise ``~ prime n`` is decided by inverting ``prime n``
    (before: by nothing)."""
    from pytest_forall.lang.rocq.audit import GENERATED, STRATEGIES, refutation_scripts

    def former(scopes: tuple[str, ...]) -> list[str]:
        """The strategies the search had before issue 34's generated ones (which may close these goals too)."""
        return [script for script, _ in refutation_scripts(scopes) if STRATEGIES[script] not in GENERATED]

    loaded, goal, _ = _mutant_goal(tmp_path / "a", "putnam_2008_a1",
                                   "(hf : forall (x y z: R), f x y + f y z + f z x = 0)\n", "", "false")
    scripts = former(("nat", "Z", "R"))
    assert STRATEGIES[scripts[-1]] == "backtracking-deep"
    assert _closed(tmp_path / "a", loaded, goal, scripts, cache=shared_prover_cache) == scripts[-1:]
    loaded, goal, _ = _mutant_goal(tmp_path / "b", "putnam_1988_b1", "n > 3 /\\ ", "", "false")
    scripts = former(("nat", "Z"))
    inversion = "| (let h := fresh in intro h; inversion h; first [ lia | easy ]) "
    assert all(inversion in script for script in scripts[1:])
    closed = _closed(tmp_path / "b", loaded, goal, scripts + [s.replace(inversion, "") for s in scripts[1:]],
                     cache=shared_prover_cache)
    assert closed == scripts[1:], [scripts.index(s) if s in scripts else "without inversion" for s in closed]


@pytest.mark.slow
def test_saturated_instances_are_combined_nonlinearly(tmp_path: Path, shared_prover_cache: Path) -> None:
    """putnam_1993_a2 with ``x n <> 0`` negated: every ``x n`` is zero, against ``x 1 ^ 2 - x 0 * x 2 = 1``.
    The saturated instances hold it; the linear closers do not see it, ``nra`` does."""
    from pytest_forall.lang.rocq.audit import vacuity_scripts

    loaded, goal, _ = _mutant_goal(tmp_path, "putnam_1993_a2", "(xnonzero : forall n : nat, x n <> 0)",
                                   "(xnonzero : forall n : nat, ~ (x n <> 0))", "vacuous")
    scopes = ("nat", "Z", "R")
    script = next(s for s, _ in vacuity_scripts(scopes, False)[0] if "| nra | nia ]" in s)
    linear = script.replace(" | nra | nia ]", " ]")
    assert _closed(tmp_path, loaded, goal, [linear, script], cache=shared_prover_cache) == [script]


def _tie_goal(tmp_path: Path, text: str, theorem: str, finding: str) -> tuple[str, Goal]:
    """(what the search loads, the tie check of ``finding``'s derived task) of a template written here."""
    from pytest_forall.core.audit import derived_tasks
    from pytest_forall.lang.rocq.audit import TIES, search_prelude, split_theorem, tie_check

    path = tmp_path / f"{theorem}.v"
    path.write_text(text)
    task = parse_coq(theorem, path, text)
    sub = derived_tasks(task)[finding]
    check = tie_check(sub.template, sub.theorem_name, tuple(theorem + tie for tie in TIES[finding]))
    assert check is not None
    split = split_theorem(task.template, theorem)
    assert split is not None
    return search_prelude(split.preamble, hammer=False) + split.preamble, check


@pytest.mark.slow
def test_a_template_that_declares_its_own_I_is_still_searched(tmp_path: Path, shared_prover_cache: Path) -> None:
    """putnam_2021_a5 declares ``Variables (I : finType)``: every probe ended ``exact I``, which then named the
    finType, so no feature was found, no tie checked and nothing searched (the item was infra, "never ran")."""
    # the budget leaves room after the vacuity tie's load (about 3 CPU s idle, more under CI's load)
    _, log = audit_of(tmp_path, "putnam_2021_a5", "Theorem", "Theorem", cpu=8.0, cache=shared_prover_cache)
    from pytest_forall.lang.rocq.audit import TRIVIAL

    assert f"uconstr:(0%nat) in {TRIVIAL}: closed the goal" in log, log[-2000:]
    assert "\nintros; " in log, log[-2000:]  # a vacuity script was tried: the search went past its ties


def test_the_vacuity_tie_of_a_statement_with_only_let_binders_is_checked(tmp_path: Path,
                                                                         shared_prover_cache: Path) -> None:
    """With only let-binders the tie applies the vacuity theorem to nothing, ``(@t_vacuous)``: the check renamed
    ``@t_vacuous `` (with a space) only, so it named a theorem not yet stated and never loaded."""
    require_tool("coqtop")
    loaded, check = _tie_goal(tmp_path, "Theorem t (x := 3) : x = 4.\nProof. Admitted.\n", "t", "vacuous")
    winners, _, log = probe(tmp_path, shared_prover_cache).run_goals(loaded, [check], tmp_path)
    assert winners == {check.theorem: check.tactics[0][0]}, log[-2000:]


@pytest.mark.slow
def test_a_tie_that_unfolds_a_recursive_let_without_end_fails_within_its_time(tmp_path: Path,
                                                                              shared_prover_cache: Path) -> None:
    """A ``let`` of a recursive function at a big numeral (putnam_2007_b3's shape) made the tie's conversion run
    until coqtop's memory limit or the 120 s load limit, far past the item's CPU budget. A tie that does not
    load within ``TIE_SECONDS`` of CPU is interrupted and not accepted (no flag can rest on it) and the session goes
    on; the CPU budget, not a wall-clock backstop, ended it."""
    from pytest_forall.lang.rocq.audit import TIE_SECONDS

    require_tool("coqtop")
    text = ("Require Import Reals. Open Scope R_scope.\nTheorem t (X := fix x (n : nat) := match n with O => 1 | "
            "S m => 3 * x m + IZR (Int_part (x m * sqrt 5)) end) : X 2007%nat = 0.\nProof. Admitted.\n")
    loaded, check = _tie_goal(tmp_path, text, "t", "false")
    session = probe(tmp_path, shared_prover_cache)
    began = time.monotonic()
    winners, _, log = session.run_goals(loaded, [check, Goal("Lemma after : True.\nProof.\n", "after",
                                                             [("exact Coq.Init.Logic.I", 5.0)])], tmp_path)
    assert winners == {"after": "exact Coq.Init.Logic.I"}, log[-2000:]
    assert "User interrupt" in log and session.cpu_used < TIE_SECONDS + 10, (session.cpu_used, log[-2000:])
    assert not session.timed_out and time.monotonic() - began < TIE_SECONDS + 60, (session.timed_out, log[-2000:])


#: What the search finds in a mathcomp ``realType`` file (the scopes and features it asks Coq about).
REAL_SCOPES, REAL_FEATURES = ("nat", "R"), ("nat", "R", "ssr", "num", "rat", "poly")


@pytest.mark.slow
def test_rational_constants_of_an_abstract_real_type_are_decided_and_false_ones_are_not(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    """Over an abstract ``realType`` ``lia``/``lra`` see nothing: ``1 <> 0``, ``0 < 1 / 2 < 1``, ``1 / 2 <> 1 / 3``,
    ``(1 + 1 + 1 = 1) -> False``, ``(7 / 4 < 1) -> False`` (with natural numerals ``1%:R``) are decided by taking
    the constants to ``rat``; the false ones (``0 <> 0``, ``1 < 1 / 2``) and one with a variable are not."""
    from pytest_forall.lang.rocq.audit import rational, search_prelude

    text = template("putnam_1977_a2")
    loaded = search_prelude(text, hammer=False) + text[:text.index("Definition putnam_1977_a2_solution")]
    true = ["(1 : R) <> 0", "0 < (1 / 2 : R) < 1", "1 / 2 <> 1 / 3 :> R", "(1 + 1 + 1 : R) = 1 -> False",
            "(3 * (1%N%:R + 1) + 1) / (2 * 1%N%:R + 2) < ((1%N%:R / 1%N%:R) ^+ 1 + 0 : R) -> False", "1 / 2 = 2 / 4 :> R"]
    false = ["(0 : R) <> 0", "(1 : R) < 1 / 2", "forall x : R, x < 1 / 2 -> False"]
    # one coqtop: each lemma is aborted before the next is stated (as the search's goals are)
    winners, _, log = probe(tmp_path, shared_prover_cache).run_goals(
        loaded, [Goal(f"Lemma rational_{index} : {statement}.\nProof.\n", f"rational_{index}",
                      [(rational(REAL_FEATURES), 5.0)]) for index, statement in enumerate(true + false)], tmp_path)
    assert "load failed" not in log, log[-2000:]
    assert [statement for index, statement in enumerate(true + false) if f"rational_{index}" in winners] == true, log


@pytest.mark.slow
def test_a_rational_premise_and_an_equation_inside_an_implication_refute_an_answer_over_a_real_type(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    """putnam_1977_a2 with its answer ``c = -a`` changed to ``c = a`` is false at ``a = b = c = d = 1``: the
    premises ``1 <> 0`` decided, the answer's definition proved at the literals (``hnf``, a disjunct, reflexivity)
    so the equivalence yields ``1 + 1 + 1 = 1``, refuted in ``rat``. Every variable at the same value is a
    handful of instances; the search over all values never reached ``1`` for all four within its budget."""
    from pytest_forall.lang.rocq.audit import refutation_scripts

    loaded, goal, _ = _mutant_goal(tmp_path, "putnam_1977_a2", "(c = -a /\\ d = b)", "(c = a /\\ d = b)", "false")
    scripts = refutation_scripts(REAL_SCOPES, REAL_FEATURES)
    assert _closing(tmp_path, loaded, goal, scripts, first=True, cache=shared_prover_cache) != []


@pytest.mark.slow
def test_a_one_term_real_sum_is_expanded_and_compared_over_a_real_type(tmp_path: Path,
                                                                       shared_prover_cache: Path) -> None:
    """putnam_1962_b5 with ``n > 1`` made ``n >= 1`` is false at ``n = 1``: ``\\sum_(1 <= i < 2) (i%:R / 1%:R) ^+ 1``
    unlocked and expanded (``F 1 + 0``), then ``7 / 4 < 1 + 0`` decided false in ``rat``."""
    from pytest_forall.lang.rocq.audit import refutation_scripts

    loaded, goal, _ = _mutant_goal(tmp_path, "putnam_1962_b5", "(ng1 : gt n 1)", "(ng1 : ge n 1)", "false")
    scripts = refutation_scripts(REAL_SCOPES, REAL_FEATURES)
    assert _closing(tmp_path, loaded, goal, scripts, first=True, cache=shared_prover_cache) != []


@pytest.mark.slow
def test_two_distinct_rationals_in_the_unit_interval_witness_an_existential_moved_outside_an_iff(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    """putnam_1967_a3 with ``exists z1 z2`` moved outside the equivalence: at ``p = 0``, ``z1 = 1/2``, ``z2 = 1/3``
    the right side holds (``0 < 1/2 < 1``, ``1/2 <> 1/3``, ``0.[z] = 0``), so ``pzeros 0``; at ``z1 = z2 = 0`` it
    gives ``0 < 0``. The saturation at 0, 1/2 and 1/3 with the rational premises decided closes it."""
    from pytest_forall.lang.rocq.audit import STRATEGIES, vacuity_scripts

    loaded, goal, _ = _mutant_goal(tmp_path, "putnam_1967_a3",
                                   "(hpzeros : forall p, pzeros p <-> exists z1 z2 : R, 0 < z1 < 1",
                                   "(hpzeros : forall p (z1 z2 : R), pzeros p <-> 0 < z1 < 1", "vacuous")
    cheap, _ = vacuity_scripts(REAL_SCOPES, False, REAL_FEATURES)
    thirds = [(script, seconds) for script, seconds in cheap if STRATEGIES[script] == "rational-saturation"]
    assert thirds and _closing(tmp_path, loaded, goal, thirds,
                               cache=shared_prover_cache) == [script for script, _ in thirds]
