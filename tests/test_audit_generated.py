"""The statement audit's generated candidates and their certificates (issue 34).

Each miss of the grid search, in kind, as a small template: the new strategy alone finds a certificate the full
verifier accepts, and every strategy the search had before finds nothing on it (so the test fails without the
strategy). A certificate that uses Interval is accepted rules-only: ``interval`` proves its bounds by reflection
over Coq's primitive integers and floats, whose specifications are axioms off the strict list. The mutation
generator (``scripts/audit_generated.py``) is checked on text: each kind makes the change it names.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import PUTNAM, REPO, require_path, require_tool
from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_VACUOUS, audit_pack, derived_tasks
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.audit import EARLY, GENERATED, STRATEGIES, strategy_spend
from pytest_forall.lang.rocq.problem import parse_coq

sys.path.insert(0, str(REPO / "scripts"))
import audit_generated

REALS = "Require Import Reals.\nOpen Scope R_scope.\n"
#: (template, finding, the new strategy that alone finds it, whether its certificate is strict)
MISSES = {
    # a negated existential whose witness is all zeros (four variables: the grid's witnesses go two deep)
    "zeros": ((f"{REALS}Theorem zeros (f : R -> R) (h : ~ exists x y z w : R, x * y + z * w = x + y + z + w) :\n"
              "    f 0 = 1.\nProof. Admitted.\n"), AUDIT_VACUOUS, "zero-witness", True),
    # a strict inequality that fails at a small rational point (x = 2/3; 1/2 is excluded, 1/3 satisfies it)
    "strict": ((f"{REALS}Theorem strict (x : R) (h : 0 < x < 1) (h2 : x <> 1/2) : 3 * x * x < 2 * x.\n"
               "Proof. Admitted.\n"), AUDIT_FALSE, "generated-backtracking", True),
    # a function witness: the indicator of 0 (constants and the identity fail a premise or satisfy the claim)
    "indicator": (("Require Import Arith.\nTheorem indicator (f : nat -> nat) (h : forall n, f n <= 1) (h0 : f 0 = 1) :\n"
                  "    f 1 = 1.\nProof. Admitted.\n"), AUDIT_FALSE, "generated-backtracking", True),
    # a bound that fails at the third term of a sequence (s 2 = sqrt (sqrt 3 + 2) > 1.9), bounded by Interval
    "third": ((f"{REALS}Fixpoint s (n : nat) : R := match n with O => 1 | S m => sqrt (s m + 2) end.\n"
              "Theorem third : forall n : nat, s n < 19/10.\nProof. Admitted.\n"), AUDIT_FALSE,
              "generated-backtracking", False),
    # a product of a sequence's terms at computed indices against their values (nonlinear, after ``simpl``)
    "products": ((f"{REALS}Theorem products (u : nat -> R) (hu : u O = 1 /\\ u (S O) = 1 /\\ u (S (S O)) = 1)\n"
                 "    (hd : forall n : nat, u n * u (Nat.add n 2) - u (Nat.add n 1) * u (Nat.add n 2) = INR (fact n)) :\n"
                 "    u 3%nat = 2.\nProof. Admitted.\n"), AUDIT_VACUOUS, "generated-specialise", True),
    # a trigonometric value at a rational multiple of pi
    "trig": (f"{REALS}Theorem trig (f : R -> R) (h : cos (2 * PI / 3) = - 1/3) : f 0 = 0.\nProof. Admitted.\n",
             AUDIT_VACUOUS, "interval", False),
}
#: The counterexample each certificate is described by (``audit.log``, ``forall report``)
DESCRIBED = {"zeros": "by zero-witness", "strict": "x := 2 / 3 (by generated-backtracking)",
             "indicator": "f := fun x : nat => if x =? 0 then 1 else 0 (by generated-backtracking)",
             "third": "n := 2%nat (by generated-backtracking)", "trig": "by interval",
             "products": "by generated-specialise"}
NEW = GENERATED


def strategy_names() -> frozenset[str]:
    """Every strategy's name (the scripts built with every feature, so each is registered)."""
    from pytest_forall.lang.rocq.audit import FEATURES, SCOPES, refutation_scripts, vacuity_scripts

    cheap, heavy = vacuity_scripts(SCOPES, True, tuple(FEATURES))
    names = {STRATEGIES[script] for script, _ in [*cheap, *heavy, *refutation_scripts(SCOPES, tuple(FEATURES))]}
    return frozenset(names | {f"inner-{name}" for name in names})


def _search(tmp_path: Path, name: str, strategies: frozenset[str] | None,
            cache: Path) -> tuple[Any, dict[str, Any], Any]:
    from pytest_forall.lang.rocq.backend import RocqProver

    require_tool("coqtop")
    text = MISSES[name][0]
    path = tmp_path / f"{name}.v"
    path.write_text(text)
    task = parse_coq(name, path, text)
    prover = RocqProver({"cache_dir": str(cache)})
    derived = derived_tasks(task)
    pack = audit_pack("rocq")
    assert pack is not None
    workspace = tmp_path / ("ws-new" if strategies and strategies <= NEW else "ws-old")
    workspace.mkdir()
    search = pack.search(task, derived, prover, workspace, time.monotonic() + 300, cpu_seconds=20.0,
                         strategies=strategies)  # type: ignore[call-arg]
    return search, derived, prover


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MISSES))
def test_a_generated_strategy_alone_finds_a_certified_counterexample_the_grid_missed(
        tmp_path: Path, name: str, shared_prover_cache: Path) -> None:
    _, finding, strategy, strict = MISSES[name]
    old = strategy_names() - NEW - {f"inner-{s}" for s in NEW}
    assert {"closers", "backtracking", "saturation", "inner-closers", "automation-nia"} <= old
    before, _, _ = _search(tmp_path, name, old, shared_prover_cache)
    assert before.certificates == {}, before.log[-2000:]
    search, derived, prover = _search(tmp_path, name, frozenset({strategy}), shared_prover_cache)
    assert set(search.certificates) == {finding}, search.log[-2000:]
    verdict = verify_candidate(derived[finding], prover, search.certificates[finding].encode())
    assert verdict.accepted, verdict.reason
    assert verdict.strict is strict, verdict.axioms
    if not strict:  # Interval's reflection: the specifications of Coq's primitive numbers, nothing else
        assert verdict.axioms and all(a.startswith(("Coq.Floats.", "Coq.Numbers.Cyclic.Int63.", "Coq.Reals.", "Coq.Logic."))
                                      for a in verdict.axioms), verdict.axioms
    spend = next(line for line in search.log.splitlines() if line.startswith("audit strategies: "))
    assert f"{strategy} " in spend and "closed" in spend, spend
    # the one-line description forall report shows: the values a refutation's certificate instantiated
    assert f"audit counterexample: {finding}: {DESCRIBED[name]}" in search.log, search.log[-600:]


#: The order of the strategies before issue 34 (main's): putnam_1962_b5's refutation is found by ``backtracking`` at
#: 3.4-3.7 s of its 4 s, after the scripts before it in the same coqtop session; with the generated strategies
#: interleaved it ran past its 4 s (4.0 s alone, under load in the known-flags run) and the flag was lost.
FORMER_ORDER = ["closers", "negated-existential", "specialise-2", "context-instances", "literal-instances",
                "rational-saturation", "saturation", "saturation-modus-ponens", "polynomial-saturation",
                "specialise-3", "refute-direct", "same-value", "backtracking", "backtracking-deep",
                "inner-closers", "inner-negated-existential", "inner-specialise-2"]


def test_every_former_strategy_runs_in_its_former_order_before_any_generated_one() -> None:
    from pytest_forall.lang.rocq.audit import (
        FEATURES,
        SCOPES,
        inner_scripts,
        refutation_scripts,
        search_order,
        vacuity_scripts,
    )

    cheap, heavy = vacuity_scripts(SCOPES, True, tuple(FEATURES))
    order = search_order(cheap, refutation_scripts(SCOPES, tuple(FEATURES)), inner_scripts(["left"], cheap), heavy)
    names = [STRATEGIES[script] for _, scripts in order for script, _ in scripts]
    # the generated refutations that fail in milliseconds where they do not apply come first (EARLY, session 14)
    assert set(names[:len(EARLY)]) == EARLY, names
    names = names[len(EARLY):]
    generated = [name.removeprefix("inner-") in GENERATED for name in names]
    first = generated.index(True)
    assert all(generated[first:]), names
    former, automation = names[:len(FORMER_ORDER)], names[len(FORMER_ORDER):first]
    assert former == FORMER_ORDER, names
    assert automation and all(name.startswith("automation-") for name in automation), names
    assert set(names[first:]) == (GENERATED - EARLY) | {"inner-zero-witness", "inner-interval"}, names


def test_the_log_says_what_each_strategy_spent() -> None:
    assert NEW < strategy_names()
    scripts = {script: name for script, name in list(STRATEGIES.items())[:2]}
    assert len(scripts) == 2, "no strategy is registered"
    (first, a), (second, b) = scripts.items()
    log = (f"{first}: Error: no (0.50 s, CPU 0.25 s)\n{second}: closed the goal (0.10 s, CPU 0.05 s)\n"
           f"{first}: Error: no (0.50 s, CPU 0.25 s)\nunrelated line (1.00 s, CPU 1.00 s)")
    assert strategy_spend(log) == (f"{a} 0.50 s (2), {b} 0.05 s (1, closed)" if a != b
                                   else f"{a} 0.55 s (3, closed)")
    assert strategy_spend("") == "none"


TEMPLATE = ("Require Import Reals.\nDefinition t_solution : R := 2.\n"
            "Theorem t (x : R) (hx : 0 < x) (hy : x <= 3) :\n"
            "    forall n : nat, exists m : nat, x * t_solution < INR (m + n) + 4.\nProof. Admitted.\n")


@pytest.mark.parametrize(("kind", "changed"), [
    ("flip_strict", {"(hx : 0 <= x)", "(hy : x < 3)", "x * t_solution <= INR"}),
    ("drop_hypothesis", {"Theorem t (x : R)  (hy", "Theorem t (x : R) (hx : 0 < x)  :"}),
    ("shift_bound", {"(hx : 1 < x)", "x <= 4)", "x <= 2)", "+ 5.", "+ 3."}),
    ("swap_quantifiers", {"exists m : nat, forall n : nat, x"}),
    ("answer_constant", {"t_solution : R := 3."}),
])
def test_each_mutation_kind_makes_the_change_it_names(kind: str, changed: set[str]) -> None:
    for seed in range(6):
        mutant = audit_generated.mutate(TEMPLATE, "t", kind, random.Random(seed))
        assert mutant is not None and mutant != TEMPLATE
        assert any(piece in mutant for piece in changed), mutant
    assert audit_generated.mutate(TEMPLATE.replace("exists m : nat, ", ""), "t", "swap_quantifiers",
                                  random.Random(0)) is None


def test_a_statement_whose_preparation_spent_its_budget_is_not_counted_as_not_loading(tmp_path: Path) -> None:
    """The corpus's rows tell a template whose statement preparation (an audit tie's conversion, ``Goal.load_cpu``)
    spent its CPU budget from one that does not load. Before, both were "does not load" (``load failed`` anywhere in
    the log), mixing the budget's end with templates that do not compile."""
    require_tool("coqtop")
    from pytest_forall.lang.rocq.coqtop import Goal, TacticProbe

    burning = "Definition burn : nat := ltac:(do 1000000 (do 1000000 idtac); exact 0).\nLemma g : True.\nProof.\n"
    broken = "Definition bad := no_such_name_anywhere.\nLemma g : True.\nProof.\n"
    fine = "Lemma g : True.\nProof.\n"
    logs = {}
    for name, statement in (("burning", burning), ("broken", broken), ("fine", fine)):
        _, _, logs[name] = TacticProbe("coqtop", 2048).run_goals(
            "", [Goal(statement, "g", [("exact I", 5.0)], load_cpu=0.5)], tmp_path)
    statuses = {name: audit_generated.load_status(log) for name, log in logs.items()}
    assert statuses == {"burning": "preparation budget spent", "broken": "does not load", "fine": "loads"}, logs
    assert audit_generated.load_status("load failed: TIMEOUT") == "not searched: load timed out"


@pytest.mark.parametrize("guarded", [True, False])
def test_a_stack_overflow_cuts_the_strategy_short_never_the_item(tmp_path: Path, shared_prover_cache: Path,
                                                                 monkeypatch: pytest.MonkeyPatch, guarded: bool) -> None:
    """putnam_1991_b4 (Coquelicot's ``sum_n`` of ``Binomial.C``): ``generated-backtracking`` at ``p := 5`` ran the
    closers' ``vm_compute in *``, which unfolds ``Binomial.C 10 5`` into ``fact 10``, a unary natural 3 628 800 deep:
    "Error: Stack overflow." ended the whole script (no tactic catches it), its later candidates untried, and the log
    said nothing. The closers' evaluation now skips a context naming a factorial or binomial (``unary_guard``): the
    strategy searches to its end. Without the guard (the former shape), the overflow is reported as the strategy's own:
    "cut short by a stack overflow" on the ``audit strategies`` line, never the item's timeout or infra."""
    require_tool("coqtop")
    from pytest_forall.lang.rocq.audit import tactics
    from pytest_forall.lang.rocq.backend import RocqProver

    source = require_path(PUTNAM / "coq" / "src" / "putnam_1991_b4.v", "PutnamBench")
    if not guarded:
        monkeypatch.setattr(tactics, "unary_guard", lambda features: "")
    task = parse_coq(source.stem, source, source.read_text(encoding="utf-8"))
    pack = audit_pack("rocq")
    assert pack is not None
    search = pack.search(task, derived_tasks(task), RocqProver({"cache_dir": str(shared_prover_cache)}), tmp_path,
                         time.monotonic() + 600, cpu_seconds=20.0,
                         strategies=frozenset({"generated-backtracking"}))  # type: ignore[call-arg]
    spend = next(line for line in search.log.splitlines() if line.startswith("audit strategies: "))
    assert "generated-backtracking " in spend and not search.timed_out, search.log[-1500:]
    if guarded:
        assert "Stack overflow" not in search.log and "cut short" not in spend, search.log[-1500:]
    else:
        assert spend.endswith("(cut short by a stack overflow: generated-backtracking)"), spend
