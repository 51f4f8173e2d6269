"""The Rocq verifier's guarantee (docs/verifier.md), clause by clause, on the real coqc/coqchk.

Each clause test shows a cheat its check rejects and that the same cheat is *accepted* once that one
check is replaced by a no-op, i.e. nothing else in the pipeline would have caught it. Then: prover
processes never outlive ``forall verify`` (a real SIGTERM/SIGKILL), coqchk is killed at its budget and the
acceptance says "not judged", and the harness's caches are validated on read.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from shared_builds import COUNTS, SharedBuilds

from conftest import PUTNAM, require_path, require_tool
from pytest_forall.core.model import Layer
from pytest_forall.core.prover import AxiomAudit, CompileResult
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.rocq import judge as judge_module
from pytest_forall.lang.rocq.backend import RocqProver

SRC = PUTNAM / "coq" / "src"
CORPUS = Path(__file__).resolve().parent / "cheats"
A1 = (CORPUS / "valid" / "putnam_2001_a1" / "candidate.v").read_text()
A1_PROOF = A1[A1.index("Proof."):]
VERIFY = [sys.executable, "-m", "pytest_forall.core.verify"]


@pytest.fixture(autouse=True)
def _coq() -> None:
    require_tool("coqc")
    require_tool("coqchk")


class Screenless(SharedBuilds):
    """The screen off (static layers and the sentence check): the kernel-side clauses judge alone. A candidate
    verified again (the same cheat without one check) reuses its compile and judge run (:mod:`shared_builds`)."""

    def static_layers(self, task: Any, text: str) -> list[Layer]:
        return []

    def sentence_check(self, task: Any, data: bytes, compiled: CompileResult) -> Layer:
        return Layer("sentence_structure", True, "off")


class NoStatementCheck(Screenless):
    def statement_check(self, task: Any, workspace: Path, timeout: float) -> Layer:
        return Layer("elaborated_statement", True, "removed")


class NoAssumptionCheck(Screenless):
    def audit_axioms(self, task: Any, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        return AxiomAudit(ok=True, strict_ok=True, rules_ok=True)


class NoIndependentCheck(Screenless):
    def independent_check(self, task: Any, workspace: Path, candidate: Path, timeout: float) -> Layer:
        return Layer("independent_check", True, "removed")


def task(problem: str) -> Any:
    return task_from_template("rocq", SRC / f"{problem}.v")


def verdict_of(prover: RocqProver, problem: str, text: str, tmp_path: Path, name: str) -> Any:
    """The verdict, its layers run one after another: the same verdict and layers as concurrently
    (:func:`pytest_forall.core.verify._alongside`; tests/test_verifier_concurrency.py tests that path), without a
    coqchk run in vain beside a candidate an earlier layer rejects."""
    build = tmp_path / name
    build.mkdir()
    prover.concurrent_layers = False
    return verify_candidate(task(problem), prover, text.encode(), builddir=build, timeout=300)


def first_failure(verdict: Any) -> str:
    return next((layer.name for layer in verdict.layers if layer.ok is False or layer.infra), "")


class CountingRuns(SharedBuilds):
    """Records the argv of every prover process it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.argvs: list[list[str]] = []

    def _run(self, argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None,
             **kw: Any) -> Any:
        self.argvs.append(argv)
        return super()._run(argv, cwd, timeout, env, **kw)


def test_a_shared_build_gives_the_verdict_of_a_fresh_one(tmp_path: Path) -> None:
    """What lets the tests below verify a cheat twice for one compile and one judge run: a candidate verified again
    by a :class:`~shared_builds.SharedBuilds` backend runs neither its coqc nor the judge's (only coqchk), and its
    verdict and every layer are those of a backend that compiled and judged it afresh."""
    text = A1 + f"\n(* {tmp_path.name} {time.monotonic_ns()} *)\n"  # bytes no other test compiled
    fresh = verdict_of(RocqProver(), "putnam_2001_a1", text, tmp_path, "fresh")
    compiled = COUNTS["compiled"]
    first = verdict_of(SharedBuilds(), "putnam_2001_a1", text, tmp_path, "first")
    assert COUNTS["compiled"] == compiled + 1
    again = CountingRuns()
    second = verdict_of(again, "putnam_2001_a1", text, tmp_path, "second")
    assert [argv[0] for argv in again.argvs] == [again.coqchk], again.argvs

    def seen(verdict: Any) -> tuple[Any, ...]:
        return (verdict.verdict, verdict.strict, verdict.axioms, verdict.digest,
                [(layer.name, layer.ok, layer.reason, layer.infra) for layer in verdict.layers])

    assert fresh.verdict == "accept" and fresh.strict, fresh.reason
    assert seen(first) == seen(second) == seen(fresh)


def template_with(problem: str, old: str, new: str, proof: str) -> str:
    text = (SRC / f"{problem}.v").read_text()
    assert old in text
    return text.replace(old, new).replace("Proof. Admitted.", proof)


# --- clause 1: the statement, as kernel terms --------------------------------------------------------------

STATEMENT_CHEATS = {
    # the answer replaced by the left-hand side: provable by reflexivity, a different problem
    "answer_tampered": ("putnam_2005_a5", template_with(
        "putnam_2005_a5", "Definition putnam_2005_a5_solution := PI * ln 2 / 8.",
        "Definition putnam_2005_a5_solution := RInt (fun x => ln (x + 1) / (x ^ 2 + 1)) 0 1.",
        "Proof. reflexivity. Qed.")),
    # a library name shadowed before the statement: the statement now says something else
    "definition_shadows_library": ("putnam_2000_b4", template_with(
        "putnam_2000_b4", "Theorem putnam_2000_b4", "Definition continuity (f : R -> R) := False.\nTheorem putnam_2000_b4",
        "Proof. intros. exfalso. exact f_cont. Qed.")),
    # the theorem's text kept, but a notation changes what `=` means in it
    "notation_override": ("putnam_2001_a1", template_with(
        "putnam_2001_a1", "Theorem putnam_2001_a1", 'Notation "x = y" := (True) : type_scope.\nTheorem putnam_2001_a1',
        "Proof. intros. exact I. Qed.")),
}


@pytest.mark.parametrize("case", sorted(STATEMENT_CHEATS))
def test_clause_1_statement_check_is_what_rejects(case: str, tmp_path: Path) -> None:
    problem, text = STATEMENT_CHEATS[case]
    with_check = verdict_of(Screenless(), problem, text, tmp_path, "with")
    assert with_check.verdict == "reject" and first_failure(with_check) == "elaborated_statement", with_check.reason
    without = verdict_of(NoStatementCheck(), problem, text, tmp_path, "without")
    assert without.verdict == "accept", without.reason


def test_clause_1_template_parameter_must_stay_a_parameter(tmp_path: Path) -> None:
    """``Variable R : realType`` made a concrete real type: the closure differs (a definition, not an axiom)."""
    text = template_with("putnam_1962_a4", "Variable R : realType.",
                         "From mathcomp Require Import Rstruct.\nDefinition R : realType := real_realType.",
                         "Proof. Admitted.")
    verdict = verdict_of(Screenless(), "putnam_1962_a4", text, tmp_path, "def")
    layer = next(layer for layer in verdict.layers if layer.name == "elaborated_statement")
    assert layer.ok is False and "ForallProblem.putnam_1962_a4.R" in layer.reason, layer.reason


# --- clause 2: the assumptions, from the kernel ------------------------------------------------------------

def test_clause_2_assumption_check_is_what_classifies(tmp_path: Path) -> None:
    """A library axiom off the strict list (Epsilon) is rules-only, a disabled guard check is a reject — and
    without the assumption check the first would pass as strict and the second be caught by coqchk at best."""
    epsilon = (CORPUS / "valid" / "epsilon_is_rules_only" / "candidate.v").read_text()
    problem = (CORPUS / "valid" / "epsilon_is_rules_only" / "template").read_text().strip().rsplit("/", 1)[1][:-2]
    with_check = verdict_of(Screenless(), problem, epsilon, tmp_path, "eps")
    assert with_check.verdict == "accept" and with_check.strict is False
    assert "Coq.Logic.Epsilon.epsilon_statement" in with_check.axioms
    without = verdict_of(NoAssumptionCheck(), problem, epsilon, tmp_path, "eps-off")
    assert without.verdict == "accept" and without.strict is True
    guard = template_with("putnam_2001_a1", "Theorem putnam_2001_a1",
                          "#[bypass_check(guard)] Fixpoint loop (n : nat) : False := loop n.\nTheorem putnam_2001_a1",
                          "Proof. intros. destruct (loop 0). Qed.")
    rejected = verdict_of(Screenless(), "putnam_2001_a1", guard, tmp_path, "guard")
    assert first_failure(rejected) == "axiom_audit" and "unsafe guarded" in rejected.reason


def test_clause_2_only_the_template_parameter_of_the_same_type_is_allowed(tmp_path: Path) -> None:
    """The kept ``Variable T`` is allowed; a second parameter the candidate adds is not, by kernel name."""
    good = (CORPUS / "valid" / "putnam_1997_a4" / "candidate.v").read_text()
    ok = verdict_of(Screenless(), "putnam_1997_a4", good, tmp_path, "kept")
    assert ok.verdict == "accept" and ok.axioms == ("ForallProblem.putnam_1997_a4.T",)
    extra = good.replace("Variable T : finGroupType.", "Variable T : finGroupType.\nVariable cheat : False.")
    bad = verdict_of(Screenless(), "putnam_1997_a4", extra[:extra.index("\nProof.\n")] + "\nProof. case: cheat. Qed.\n",
                     tmp_path, "extra")
    assert first_failure(bad) == "axiom_audit" and "ForallProblem.putnam_1997_a4.cheat" in bad.reason


# --- clause 3: the independent check --------------------------------------------------------------------

class CoqchkSaysNo(Screenless):
    def _run(self, argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None,
             **kw: Any) -> Any:
        result = super()._run(argv, cwd, timeout, env, **kw)
        if argv[0] == self.coqchk:
            result.returncode, result.stderr = 1, "Error: simulated kernel disagreement"
        return result


class CoqchkSaysNoButRemoved(CoqchkSaysNo, NoIndependentCheck):
    pass


def test_clause_3_independent_check_is_what_rejects_a_kernel_disagreement(tmp_path: Path) -> None:
    with_check = verdict_of(CoqchkSaysNo(), "putnam_2001_a1", A1, tmp_path, "with")
    assert first_failure(with_check) == "independent_check"
    assert verdict_of(CoqchkSaysNoButRemoved(), "putnam_2001_a1", A1, tmp_path, "without").verdict == "accept"


VM_HELPER = ("Fixpoint fib (n : nat) : nat := match n with 0 => 0 | S m => match m with 0 => 1 | S k => fib m + fib k "
             "end end.\nLemma fib_30 : Nat.eqb (fib 30) 832040 = true.\nProof. vm_compute. reflexivity. Qed.\n")


def _over_budget(tmp_path: Path, used: bool) -> tuple[int, dict[str, Any], str, float]:
    template = _unique_template(tmp_path)
    candidate = tmp_path / "c.v"
    proof = A1_PROOF.replace("Proof.", "Proof.\n  pose proof fib_30 as _.", 1) if used else A1_PROOF
    candidate.write_text(A1[:A1.index("Theorem putnam_2001_a1")] + VM_HELPER + A1[A1.index("Theorem putnam_2001_a1"):
                                                                              A1.index("Proof.")] + proof)
    started = time.monotonic()
    proc = subprocess.run([*VERIFY, "--prover", "rocq", "--template", str(template), "--candidate", str(candidate),
                           "--json", "--checker-timeout", "3"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)}, check=False)
    return proc.returncode, json.loads(proc.stdout), template.stem, time.monotonic() - started


def test_coqchk_over_budget_is_killed_and_not_judged(tmp_path: Path) -> None:
    """A vm_compute proof coqc checks in well under a second; coqchk (no VM) needs minutes. At its budget it is
    killed (no coqchk of this run left running). The theorem does not depend on the VM lemma, so the acceptance
    says "independent check: not judged" (counted apart in the run summary)."""
    rc, verdict, marker, took = _over_budget(tmp_path, used=False)
    assert rc == 0 and verdict["verdict"] == "accept", verdict["reason"]
    check = verdict["layers"][-1]
    assert check["name"] == "independent_check" and check["ok"] is None and "not judged" in check["reason"]
    assert check["budget_s"] == 3
    assert any(g.startswith("independent check: not judged") for g in verdict["guarantee"])
    assert took < 300
    assert not _running(marker), "coqchk outlived its budget"


def test_a_vm_proof_whose_independent_check_did_not_finish_is_infra(tmp_path: Path) -> None:
    """Issue 22: the theorem depends on the vm_compute lemma, and the 8.16 VM has known bugs (rocq#19402). A proof
    that used the VM is accepted only when coqchk (no VM) finished and accepted it; here coqchk is killed at the
    budget the candidate exhausts on purpose, and the verdict is infra (resumable with a larger budget), naming
    the VM conversion that required the check, never an acceptance "not judged"."""
    rc, verdict, marker, _ = _over_budget(tmp_path, used=True)
    assert rc == 2 and verdict["verdict"] == "infra", verdict["reason"]
    check = verdict["layers"][-1]
    assert check["name"] == "independent_check" and check["ok"] is False and check["infra"] is True
    assert "independent check required (VM conversion in `" in check["reason"] and ".fib_30`" in check["reason"]
    assert "did not finish" in check["reason"] and "rocq#19402" in check["reason"]
    assert check["budget_s"] == 3 and verdict["guarantee"] == []
    assert not _running(marker), "coqchk outlived its budget"


# --- issue 22: the known bugs of the installed kernel ------------------------------------------------------

class NoAdvisoryCheck(Screenless):
    """The detectors removed: the kernel_advisories layer passes whatever the plugin found."""

    def advisory_check(self, task: Any, workspace: Path, timeout: float) -> Layer:
        return Layer("kernel_advisories", True, "removed")


ADVISORY_EXPLOITS = sorted(p.name for p in (CORPUS / "cheat").glob("advisory_*")
                           if json.loads((p / "expect.json").read_text())["layer"] == "kernel_advisories")


@pytest.mark.parametrize("name", ADVISORY_EXPLOITS)
def test_advisory_detector_is_what_rejects(name: str, tmp_path: Path) -> None:
    """Each exploit of a known kernel bug (coqc and coqchk of 8.16.1 both accept it: a proof of False) is rejected
    by the judge's detector, naming the advisory and the candidate's constant; with the detector removed the
    whole pipeline accepts it, strict: nothing else catches it."""
    expect = json.loads((CORPUS / "cheat" / name / "expect.json").read_text())
    text = (CORPUS / "cheat" / name / "candidate.v").read_text()
    with_check = verdict_of(Screenless(), "putnam_2001_a1", text, tmp_path, "with")
    assert first_failure(with_check) == "kernel_advisories", with_check.reason
    assert expect["advisory"] in with_check.reason and "ForallProblem.putnam_2001_a1." in with_check.reason
    without = verdict_of(NoAdvisoryCheck(), "putnam_2001_a1", text, tmp_path, "without")
    assert without.verdict == "accept" and without.strict, without.reason


def test_the_module_walk_is_what_rejects_functor_strengthening(tmp_path: Path) -> None:
    """rocq#21051 (functor strengthening, 8.5-9.0.0): with the static layers off, the kernel, the assumption audit and
    coqchk 8.16.1 all accept this proof of False; the judge's module walk of the compiled library (the functor
    ``MAKE.FUN``) rejects it at kernel_advisories, and with that layer removed the whole pipeline accepts it, strict.
    The screen refuses it first (defence in depth)."""
    text = (CORPUS / "cheat" / "advisory_21051_functor_strengthening" / "candidate.v").read_text()
    from pytest_forall.lang.rocq.advisories import ADVISORIES
    row = next(a for a in ADVISORIES if a.id == "rocq#21051")
    assert row.coverage == "detector" and "module walk" in row.covered_by
    screened = verdict_of(RocqProver(), "putnam_2001_a1", text, tmp_path, "screened")
    assert first_failure(screened) in ("syntax_screen", "shadowing_guard"), screened.reason
    unscreened = verdict_of(Screenless(), "putnam_2001_a1", text, tmp_path, "unscreened")
    assert first_failure(unscreened) == "kernel_advisories", unscreened.reason
    assert "rocq#21051" in unscreened.reason and "ForallProblem.putnam_2001_a1.MAKE.FUN" in unscreened.reason
    without = verdict_of(NoAdvisoryCheck(), "putnam_2001_a1", text, tmp_path, "without")
    assert without.verdict == "accept" and without.strict, without.reason


def test_advisories_depend_on_the_kernel_version(tmp_path: Path) -> None:
    """The same finding rejects only while an advisory needing its construct is in force for the kernel's version:
    under a kernel past every fix the guard exploit is left to the kernel (here 8.16.1's, which accepts it)."""
    text = (CORPUS / "cheat" / "advisory_20455_match_on_match" / "candidate.v").read_text()

    class Fixed(Screenless):
        def kernel(self) -> dict[str, Any]:
            return {**super().kernel(), "version": "9.9.0", "advisories": []}

    from pytest_forall.lang.rocq import backend as backend_module
    original = backend_module.in_force
    backend_module.in_force = lambda version: []  # type: ignore[assignment]
    try:
        fixed = verdict_of(Fixed(), "putnam_2001_a1", text, tmp_path, "fixed")
    finally:
        backend_module.in_force = original  # type: ignore[assignment]
    assert fixed.verdict == "accept" and fixed.kernel["version"] == "9.9.0"
    advisories = next(layer for layer in fixed.layers if layer.name == "kernel_advisories").evidence
    assert any(f.startswith("fix ForallProblem.putnam_2001_a1.g ") for f in advisories["findings"])


@pytest.mark.parametrize("cumulative", [True, False])
def test_a_cumulative_inductive_is_refused_while_the_variance_bugs_are_in_force(cumulative: bool,
                                                                               tmp_path: Path) -> None:
    """rocq#22376 and rocq#22385 live in the kernel's variance inference, which only cumulative universe-polymorphic
    inductives have: the judge refuses any the candidate declares (no exploit reproduced here: the detector is
    what keeps the construct out); the same inductive, not cumulative, is still universe-polymorphic, refused on
    8.16.1 for rocq#21688 (issue 31); monomorphic, it is an ordinary helper and accepted."""
    flag = "Cumulative" if cumulative else "NonCumulative"
    helper = (f"Polymorphic {flag} Inductive box@{{u}} (A : Type@{{u}}) : Type@{{u}} := mk (a : A) (b := a).\n"
              "Definition unbox@{u} (A : Type@{u}) (x : box A) : A := match x with mk _ a _ => a end.\n")
    use = "(fun x : nat => unbox _ (mk _ x))"
    verdict = verdict_of(Screenless(), "putnam_2001_a1", _with_helper(helper, use), tmp_path, flag)
    if cumulative:
        assert first_failure(verdict) == "kernel_advisories", verdict.reason
        assert "rocq#22376" in verdict.reason and "rocq#22385" in verdict.reason
        assert "`ForallProblem.putnam_2001_a1.box`" in verdict.reason and "cumulative" in verdict.reason
    else:  # the let-in in its constructor is refused on its own (rocq#22378), so the control has none
        assert first_failure(verdict) == "kernel_advisories" and "rocq#22378" in verdict.reason
        plain = _with_helper(helper.replace(" (b := a)", "").replace("mk _ a _", "mk _ a"), use)
        poly = verdict_of(Screenless(), "putnam_2001_a1", plain, tmp_path, flag + "-plain")
        assert first_failure(poly) == "kernel_advisories" and "rocq#21688" in poly.reason, poly.reason
        assert "rocq#22378" not in poly.reason and "universe-polymorphic" in poly.reason
        mono = plain.replace("Polymorphic NonCumulative ", "").replace("@{u}", "").replace("Type@{u}", "Type")
        accepted = verdict_of(Screenless(), "putnam_2001_a1", mono, tmp_path, flag + "-mono")
        assert accepted.verdict == "accept" and accepted.strict, accepted.reason


PROGRAM_MEASURE = ("Require Import Coq.Program.Wf Coq.Arith.Wf_nat.\n"
                   "Program Fixpoint hs (n : nat) {measure n} : nat :=\n"
                   "  match n with 0 => 0 | S m => match m with 0 => 1 | S k => S (hs k) end end.\n")
ROSE_TREE = ("Inductive rose := node : list rose -> rose.\n"
             "Fixpoint count (t : rose) : nat := match t with node ts =>\n"
             "  S ((fix all (l : list rose) : nat := match l with nil => 0 | cons x r => count x + all r end) ts) end.\n")


def _with_helper(helper: str, use: str) -> str:
    head = A1[:A1.index("Theorem putnam_2001_a1")]
    return head + helper + A1[A1.index("Theorem putnam_2001_a1"):].replace("Proof.", f"Proof.\n  pose proof {use} as _.", 1)


def test_program_fixpoint_with_a_measure_passes_the_kernel_side(tmp_path: Path) -> None:
    """Well-founded recursion (`Program Fixpoint {measure}` elaborates to the library's `Fix_sub`) is no candidate
    fixpoint: accepted, strict (screen off: the sentence check's handling of `Program` is issue 22's item 5)."""
    verdict = verdict_of(Screenless(), "putnam_2001_a1", _with_helper(PROGRAM_MEASURE, "(hs 5)"), tmp_path, "p")
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason


def test_recursion_through_a_nested_inductive_is_accepted(tmp_path: Path) -> None:
    """Issue 31: the subterm `x` comes from a match on a `list rose` (a nested inductive) inside an inner fixpoint
    applied to the strict subterm `ts`: structural, accepted strict (issue 22 refused it by design)."""
    verdict = verdict_of(Screenless(), "putnam_2001_a1", _with_helper(ROSE_TREE, "(count (node nil))"), tmp_path, "r")
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason


MANIFEST_RECORD = ("Record bounded := { lo : nat; width : nat; hi := lo + width; hi_ge : lo <= hi }.\n"
                   "Definition unit_interval : bounded := {| lo := 0; width := 1; hi_ge := le_S _ _ (le_n 0) |}.\n")


def test_a_manifest_record_field_is_refused_only_while_rocq_22378_is_in_force(tmp_path: Path) -> None:
    """A manifest field (`hi := lo + width`) is a local definition in the constructor's type: the shape rocq#22378's
    exploit needs (conversion under a constructor context with let-ins; tests/cheats/cheat/advisory_22378_*), so
    while that advisory is in force the refusal names it and nothing else; under a kernel without it, accepted."""
    text = _with_helper(MANIFEST_RECORD, "(hi unit_interval)")
    verdict = verdict_of(Screenless(), "putnam_2001_a1", text, tmp_path, "m")
    assert first_failure(verdict) == "kernel_advisories" and "rocq#22378" in verdict.reason, verdict.reason
    assert "`ForallProblem.putnam_2001_a1.bounded`" in verdict.reason and "rocq#20413" not in verdict.reason
    from pytest_forall.lang.rocq import backend as backend_module
    from pytest_forall.lang.rocq.advisories import ADVISORIES
    original = backend_module.in_force
    backend_module.in_force = lambda version: [a for a in ADVISORIES if a.id != "rocq#22378"]  # type: ignore[assignment]
    try:
        without = verdict_of(Screenless(), "putnam_2001_a1", text, tmp_path, "m-fixed")
    finally:
        backend_module.in_force = original  # type: ignore[assignment]
    assert without.verdict == "accept" and without.strict, without.reason


#: Recursion the kernel refuses (or accepts only through a guard bug) in the shapes issue 31's widening touches, each
#: compiled with the guard switched off: the criterion itself must refuse every one. A cast through a dependent
#: match (rocq#21053's and the propositional-extensionality shape), a functional argument at a non-recursive
#: position applied (impredicative Prop: loops), a typeclass method or an instance whose reduct does not descend,
#: an inner fixpoint on something that is not a subterm or that does not descend itself, an `Acc_inv` look-alike
#: that returns the accessibility proof itself, a function passed eta-expanded through a transparent helper
#: (rocq#20413's shape), an unguarded cofixpoint whose type is an alias of a coinductive, rocq#20455's match on a
#: match inside a transparent helper, a match returning a subterm in one branch only, and
#: rocq#21053's cast made by a commutative cut (a match with a dependent return clause applied to the subterm, whose
#: branch binds it at the other type; the kernels refuse it, the criterion accepted it before), the same cast along
#: an equality of propositions that reaches only an index and a domain (`J T`, `T -> J T`: an index that is a type),
#: and rocq#21682's
#: reproducer (a cross call of a nested mutual fixpoint computing a "uniform" argument; 8.20.1's kernel accepts it).
UNSAFE_RECURSION = """\
Inductive True2 : Prop := I2 : (False -> True2) -> True2.
#[bypass_check(guard)] Fixpoint cast_sub (H : (False -> True2) = True2) (x : True2) {struct x} : False :=
  match x with I2 f => cast_sub H (match H in _ = T return T with eq_refl => f end) end.
Inductive PP : Prop := pp : (forall P : Prop, P -> P) -> PP.
#[bypass_check(guard)] Fixpoint norec_applied (r : PP) : False := match r with pp h => norec_applied (h PP r) end.
Class Idm (A : Type) := idm : A -> A.
#[export] Instance idm_nat : Idm nat := fun n => n.
#[bypass_check(guard)] Fixpoint method_no_descent (n : nat) : False := method_no_descent (idm n).
Class Apply (A : Type) := apply1 : (A -> False) -> A -> False.
#[export] Instance apply_nat : Apply nat := fun g a => g (S a).
#[bypass_check(guard)] Fixpoint instance_grows (n : nat) : False := apply1 instance_grows n.
Inductive rose := node : list rose -> rose.
#[bypass_check(guard)] Fixpoint nested_not_subterm (t : rose) : nat := match t with node ts =>
  (fix all (l : list rose) : nat := match l with nil => 0 | cons x r => nested_not_subterm x + all r end) (cons t nil)
  end.
#[bypass_check(guard)] Fixpoint nested_inner_loops (t : rose) : False := match t with node ts =>
  (fix all (l : list rose) : False := match l with nil => all l | cons x r => nested_inner_loops x end) ts end.
Definition fake_inv (n : nat) (H : Acc lt n) : Acc lt n := H.
#[bypass_check(guard)] Fixpoint acc_no_descent (n : nat) (H : Acc lt n) {struct H} : False :=
  acc_no_descent n (fake_inv n H).
Definition h2 (p : nat) (g : nat -> False) : False := g (S p).
#[bypass_check(guard)] Fixpoint eta_passed (n : nat) (z : False) {struct n} : False :=
  match n with 0 => z | S p => h2 p (fun k => eta_passed k z) end.
CoInductive stream := SCons : nat -> stream -> stream.
Definition Stream := stream.
Unset Guard Checking.
CoFixpoint unguarded_alias : Stream := unguarded_alias.
Set Guard Checking.
Definition sub2 (b : bool) (x m : nat) : nat := match (if b then x else m) with 0 => m | S mm => mm end.
#[bypass_check(guard)] Fixpoint match_on_match_in_helper (n : nat) (b : bool) (x : nat) {struct n} : nat :=
  match n with 0 => 0 | S m => match_on_match_in_helper (sub2 b x m) b x end.
#[bypass_check(guard)] Fixpoint one_branch_not_smaller (n : nat) : nat :=
  match n with 0 => 0 | S m => one_branch_not_smaller (match m with 0 => n | S k => k end) end.
#[bypass_check(guard)] Fixpoint cut_cast (H : True2 = (False -> True2)) (x : True2) {struct x} : False :=
  match x with I2 f => (match H in _ = T return T -> False with eq_refl => fun y : True2 => cut_cast H y end) f end.
Inductive J : Prop -> Prop := jc : forall P : Prop, (P -> J P) -> J P.
#[bypass_check(guard)] Fixpoint type_index_cast (R : Prop) (H : forall P : Prop, R = P) (r : R) (P : Prop) (x : J P)
  {struct x} : False := match x with jc Q f =>
    (match H Q in _ = T return (T -> J T) -> False with eq_refl => fun g => type_index_cast R H r R (g r) end) f end.
#[bypass_check(guard)] Fixpoint cross_call (n : nat) : nat := match n with O => O | S k =>
  (fix f (p m : nat) {struct m} := match m with O => p | S m' => g (S p) m' end
   with g (q m : nat) {struct m} := match m with O => cross_call q | S m' => f q m' end for f) k k end.
Fixpoint minus_grows (n m : nat) {struct n} : nat :=
  match n with 0 => S n | S k => match m with 0 => S n | S l => minus_grows k l end end.
#[bypass_check(guard)] Fixpoint via_constructor (n : nat) : nat :=
  match minus_grows n 0 with 0 => 0 | S k => via_constructor k end.
#[bypass_check(guard)] Fixpoint via_outer_variable (n x : nat) {struct n} : nat :=
  match (fix f (a : nat) : nat := match a with 0 => x | S k => f k end) n with
  0 => 0 | S k => via_outer_variable k (S k) end.
Fixpoint keep_other (a b : nat) {struct a} : nat := match a with 0 => b | S k => keep_other k b end.
#[bypass_check(guard)] Fixpoint via_other_argument (n : nat) : nat :=
  match keep_other n (S n) with 0 => 0 | S k => via_other_argument k end.
Fixpoint cast_ret (H : (False -> True2) = True2) (x : True2) {struct x} : True2 :=
  match x with I2 f => match H in _ = T return T with eq_refl => f end end.
#[bypass_check(guard)] Fixpoint via_cast (H : (False -> True2) = True2) (x : True2) (z : False) {struct x} : False :=
  match cast_ret H x with I2 g => via_cast H (g z) z end.
Fixpoint minus_mom (a : nat) (b : bool) (x : nat) {struct a} : nat :=
  match (if b then x else a) with 0 => a | S j => j end.
#[bypass_check(guard)] Fixpoint via_match_on_match (n : nat) : nat :=
  match minus_mom n true (S (S n)) with 0 => 0 | S k => via_match_on_match k end.
#[bypass_check(guard)] Fixpoint via_match_argument (n : nat) : nat :=
  match n with 0 => 0 | S m =>
    match minus_grows (match m with 0 => S n | S k => k end) 0 with 0 => 0 | S j => via_match_argument j end end.
#[bypass_check(guard)] Fixpoint minus_bigger (n : nat) (b : bool) {struct n} : nat :=
  match n with 0 => n | S k => if b then minus_bigger (S n) false else n end.
#[bypass_check(guard)] Fixpoint via_unsafe_inner (n : nat) : nat :=
  match minus_bigger n true with 0 => 0 | S k => via_unsafe_inner k end.
Fixpoint minus_same (n m : nat) {struct n} : nat :=
  match n with 0 => n | S k => match m with 0 => n | S l => minus_same k l end end.
#[bypass_check(guard)] Fixpoint via_equal (n : nat) : nat := match n with 0 => 0 | S _ => via_equal (minus_same n 0) end.
"""
#: the unsafe shapes; the `via_*` ones recurse on a pattern variable of a match on a fixpoint's result (rule 5 of
#: docs/verifier.md's criterion, the shape of mathcomp's `edivn_rec`) where that fixpoint returns something that is no
#: subterm of its decreasing argument in one branch: a constructor application, a variable of the context, its other
#: argument, a cast along an equality (rocq#21053), a pattern variable of a match on a match (rocq#20455); or is
#: applied to a match that is not smaller; or is itself unsafe (`minus_bigger` recurses on a bigger term); and
#: `via_equal` recurses on the honest `minus_same n 0` itself, which is `n` (subterm *or equal*: only a pattern
#: variable of a match on it is strictly smaller)
UNSAFE_NAMES = ("cast_sub", "norec_applied", "method_no_descent", "instance_grows", "nested_not_subterm",
                "nested_inner_loops", "acc_no_descent", "eta_passed", "unguarded_alias", "match_on_match_in_helper",
                "one_branch_not_smaller", "cut_cast", "type_index_cast", "cross_call", "via_constructor",
                "via_outer_variable", "via_other_argument", "via_cast", "via_match_on_match", "via_match_argument",
                "via_unsafe_inner", "via_equal")


def test_the_widened_criterion_refuses_unsafe_recursion_of_the_same_shapes(tmp_path: Path) -> None:
    """With the assumption check off (the guard was switched off for these definitions), the kernel_advisories layer
    is what rejects, and its findings name every one of the unsafe definitions."""
    use = "(" + ", ".join(UNSAFE_NAMES) + ")"
    verdict = verdict_of(NoAssumptionCheck(), "putnam_2001_a1", _with_helper(UNSAFE_RECURSION, use), tmp_path, "u")
    assert first_failure(verdict) == "kernel_advisories", verdict.reason
    findings = next(layer for layer in verdict.layers if layer.name == "kernel_advisories").evidence["findings"]
    missed = [name for name in UNSAFE_NAMES
              if not any(f.split()[0] in ("fix", "cofix") and f"ForallProblem.putnam_2001_a1.{name}" in f
                         for f in findings)]
    assert not missed, (missed, findings)


TWO_UNIVERSES = ("Theorem forall_two_universes (A B : Type) (f : A -> B) : forall x : A, f x = f x.\n"
                 "Proof. Admitted.\n")
SAME_LEVEL = "pose (same := (fun (X : Type) (Y Z : X) => Y) _ A B). "


def test_universe_constraints_between_statement_universes_are_compared(tmp_path: Path) -> None:
    """Issue 22: a proof that makes the graph entail a relation between two of the statement's universes (here
    `B`'s level <= `A`'s) that the template's does not is rejected by the statement check; an honest proof is
    accepted; with the statement check removed the constrained proof is accepted."""
    template = tmp_path / "forall_two_universes.v"
    template.write_text(TWO_UNIVERSES)
    the_task = task_from_template("rocq", template)
    honest = TWO_UNIVERSES.replace("Proof. Admitted.", "Proof. intros. reflexivity. Qed.")
    constrained = TWO_UNIVERSES.replace("Proof. Admitted.", f"Proof. intros. {SAME_LEVEL}reflexivity. Qed.")

    def run(prover: RocqProver, text: str, name: str) -> Any:
        (tmp_path / name).mkdir()
        return verify_candidate(the_task, prover, text.encode(), builddir=tmp_path / name, timeout=300)

    assert run(Screenless(), honest, "honest").verdict == "accept"
    rejected = run(Screenless(), constrained, "with")
    assert first_failure(rejected) == "elaborated_statement", rejected.reason
    assert "adds universe constraints" in rejected.reason and "2 <= 1" in rejected.reason
    assert run(NoStatementCheck(), constrained, "without").verdict == "accept"


# --- prover processes never outlive forall verify -------------------------------------------------------

def _unique_template(tmp_path: Path) -> Path:
    """putnam_2001_a1 under a name of its own: its module name marks this test's coqc/coqchk command lines."""
    template = tmp_path / f"forall_test_{os.getpid()}_{time.monotonic_ns()}.v"
    shutil.copyfile(SRC / "putnam_2001_a1.v", template)
    return template


def _running(marker: str) -> list[int]:
    """Live processes whose command line mentions ``marker`` (zombies count as gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace") and state != "Z":
                    found.append(int(entry.name))
            except (OSError, IndexError):
                continue
    return found


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_killing_forall_verify_kills_its_coqc(how: str, tmp_path: Path) -> None:
    """A real coqc, busy in a proof, is gone within seconds of ``forall verify`` being terminated or killed
    (SIGTERM unwinds and kills each process group; SIGKILL: bwrap's --die-with-parent takes the sandbox down).
    The candidate's compile runs in the verifier's background thread, beside the template check, so this is also
    the case of a background step when the command is stopped."""
    template = _unique_template(tmp_path)
    candidate = tmp_path / "spin.v"
    candidate.write_text(A1.replace("intros a b.", "do 1000000000 idtac.\n  intros a b."))
    proc = subprocess.Popen([*VERIFY, "--prover", "rocq", "--template", str(template), "--candidate",
                             str(candidate), "--json", "--timeout", "600"],
                            env={**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240

        def compiling() -> bool:  # the candidate's compile: the one coqc of this run with -time
            return any(b"-time" in _cmdline(pid) for pid in _running(template.stem))

        while not compiling():
            assert time.monotonic() < deadline and proc.poll() is None, "the candidate's coqc never started"
            time.sleep(0.3)
        time.sleep(1)
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while _running(template.stem) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _running(template.stem), f"prover processes still running after {how}"
    finally:
        if proc.poll() is None:
            proc.kill()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# --- caches: written by the harness, validated on read ---------------------------------------------------

def test_corrupt_or_foreign_template_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    prover = RocqProver({"cache_dir": str(tmp_path / "cache")})
    assert verdict_of(prover, "putnam_2001_a1", A1, tmp_path, "first").verdict == "accept"
    entries = [p for p in (tmp_path / "cache" / "rocq-templates").iterdir() if p.is_dir()]
    assert len(entries) == 1 and (entries[0] / "manifest.json").is_file()
    entry = entries[0]
    for damage in ("truncate_vo", "forge_dump", "drop_manifest", "foreign_manifest"):
        if damage == "truncate_vo":
            (entry / "template.vo").write_bytes(b"\0" * 10)
        elif damage == "forge_dump":  # e.g. written by a candidate that escaped: a dump that would accept anything
            (entry / "dump.txt").write_text("forall-judge stored\nend stored\n")
        elif damage == "drop_manifest":
            (entry / "manifest.json").unlink()
        else:
            manifest = json.loads((entry / "manifest.json").read_text())
            (entry / "manifest.json").write_text(json.dumps({**manifest, "key": "someone-else"}))
        fresh = RocqProver({"cache_dir": str(tmp_path / "cache")})
        verdict = verdict_of(fresh, "putnam_2001_a1", A1, tmp_path, damage)
        assert verdict.verdict == "accept", (damage, verdict.reason)
        assert judge_module.manifest_ok(entry, entry.name), damage  # rebuilt, and valid again
        wrong = A1.replace("exact H.", "exact I.")
        assert verdict_of(fresh, "putnam_2001_a1", wrong, tmp_path, damage + "-wrong").verdict == "reject"


def test_corrupt_plugin_cache_is_rebuilt(tmp_path: Path) -> None:
    RocqProver({"cache_dir": str(tmp_path)})
    plugin = next((tmp_path / "rocq-judge").glob("judge-*/forall-judge/forall_judge.cmxs"))
    plugin.write_bytes(b"not a plugin")
    prover = RocqProver({"cache_dir": str(tmp_path)})
    assert prover.plugin is not None and plugin.read_bytes() != b"not a plugin"
    assert verdict_of(prover, "putnam_2001_a1", A1, tmp_path, "after").verdict == "accept"


def _plugin_at(where: Path, cmxs: bytes) -> Path:
    """A judge plugin's cache entry at ``where`` (its findlib package: the .cmxs and META), for the key tests."""
    (where / "forall-judge").mkdir(parents=True)
    (where / "forall-judge" / "forall_judge.cmxs").write_bytes(cmxs)
    (where / "forall-judge" / "META").write_text('package "plugin" ()\n')
    return where


def test_the_template_key_changes_with_everything_the_compiled_template_depends_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The template cache's key (``RocqProver._template_key``) names the judge plugin by its bytes, not its path: the
    same plugin in another cache gives the same key; and changing any one thing the compiled template or its judge
    dump depends on — the toolchain and libraries, the compile flags, the load path, the plugin's bytes, the library
    name, the template, the theorem, the roots — gives another key (a miss: the template is compiled again)."""
    from dataclasses import replace

    prover = RocqProver({"check_only": True, "cache_dir": str(tmp_path / "cache")})
    prover.plugin = _plugin_at(tmp_path / "one" / "judge-a", b"plugin")
    monkeypatch.setattr(prover, "version", lambda: "The Coq Proof Assistant, version 8.16.1 [0123]")
    task = task_from_template("rocq", SRC / "putnam_2001_a1.v")
    key = prover._template_key(task)
    prover.plugin = _plugin_at(tmp_path / "two" / "judge-b", b"plugin")  # the same bytes elsewhere: the same key
    assert prover._template_key(task) == key
    missed = {}
    with monkeypatch.context() as changed:
        changed.setattr(prover, "version", lambda: "The Coq Proof Assistant, version 8.20.1 [0123]")
        missed["toolchain"] = prover._template_key(task)
    with monkeypatch.context() as changed:
        changed.setattr(prover, "version", lambda: "The Coq Proof Assistant, version 8.16.1 [4567]")
        missed["libraries"] = prover._template_key(task)
    with monkeypatch.context() as changed:
        changed.setattr(prover, "info", replace(prover.info, compile_flags=("-w", "-notation-overridden")))
        missed["flags"] = prover._template_key(task)
    with monkeypatch.context() as changed:
        changed.setattr(prover, "load", ["-Q", str(tmp_path), "Lib"])
        missed["load path"] = prover._template_key(task)
    with monkeypatch.context() as changed:
        changed.setattr(prover, "plugin", _plugin_at(tmp_path / "three" / "judge-a", b"plugin, rebuilt otherwise"))
        missed["plugin bytes"] = prover._template_key(task)
    with monkeypatch.context() as changed:
        meta = prover.plugin / "forall-judge" / "META"
        changed.setattr(prover, "plugin", _plugin_at(tmp_path / "four" / "judge-b", b"plugin"))
        (prover.plugin / "forall-judge" / "META").write_text(meta.read_text() + "# another\n")
        missed["plugin META"] = prover._template_key(task)
    missed["library name"] = prover._template_key(replace(task, task_id="putnam_2001_a2"))
    missed["template"] = prover._template_key(replace(task, template=task.template + "\n(* another *)\n"))
    missed["theorem"] = prover._template_key(replace(task, theorem_name="putnam_other"))
    with monkeypatch.context() as changed:
        changed.setattr(prover, "_roots", lambda _task: ["another_root"])
        missed["roots"] = prover._template_key(task)
    assert prover._template_key(task) == key  # every change undone: the same key again
    assert key not in missed.values() and len(set(missed.values())) == len(missed), missed


def test_a_copied_template_cache_is_found_again_without_a_compile(shared_prover_cache: Path, tmp_path: Path) -> None:
    """A copy of a warm cache (its judge plugin and a compiled template, elsewhere) serves the template with no coqc
    run: the entry's key names the plugin by its bytes. Before, it named the plugin's path, and every copy or other
    cache compiled and judged each template again."""
    from pytest_forall.core.proc import run_command

    task = task_from_template("rocq", SRC / "putnam_2001_a1.v")
    warm = RocqProver({"cache_dir": str(shared_prover_cache)})
    assert warm.check_template(task, tmp_path, 300).ok
    key = warm._template_key(task)
    copy = tmp_path / "copy"
    assert warm.plugin is not None
    shutil.copytree(warm.plugin, copy / "rocq-judge" / warm.plugin.name)
    shutil.copytree(warm.cache_dir / key, copy / "rocq-templates" / key)
    runs: list[list[str]] = []

    def counting(argv: list[str], **kwargs: Any) -> Any:
        runs.append(argv)
        return run_command(argv, **kwargs)

    prover = RocqProver({"cache_dir": str(copy)}, runner=counting)
    assert prover.plugin is not None and prover.plugin != warm.plugin and prover._template_key(task) == key
    checked = prover.check_template(task, tmp_path, 300)
    assert checked.ok and runs == [], runs


def test_candidate_cannot_write_outside_its_scratch_directory(tmp_path: Path) -> None:
    """Under the default sandbox, a candidate whose compilation writes files (extraction, Redirect) leaves them
    in its own throwaway directory: nothing appears next to the template cache or in the working directory."""
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is required (scripts/setup.sh installs it)")
    from pytest_forall.isolation.sandbox import probe_sandbox

    assert probe_sandbox() == "", probe_sandbox()
    prover = Screenless({"sandbox": "bwrap", "sandbox_audit_dir": str(tmp_path / "log"),
                         "cache_dir": str(tmp_path / "cache")})
    assert prover.sandboxed
    target = tmp_path / "cache" / "rocq-templates" / "planted"
    text = A1.replace("Theorem putnam_2001_a1", f'Redirect "{target}" Print nat.\nRequire Extraction.\n'
                                                f'Extraction "{tmp_path}/extracted.ml" nat.\nTheorem putnam_2001_a1')
    verdict = verdict_of(prover, "putnam_2001_a1", text, tmp_path, "build")
    assert not target.with_suffix(".out").exists() and not (tmp_path / "extracted.ml").exists()
    assert verdict.verdict in ("accept", "reject")


def test_a_judge_that_cannot_load_its_plugin_is_infra_never_a_proof_failure(tmp_path: Path) -> None:
    """The harness's own fault (here: the candidate's audit runs coqc with the judge plugin missing from its
    findlib path, a real coqc failing to load it) is infra at ``elaborated_statement``; before, the honest
    candidate was rejected there, a proof failure that was none."""
    prover = RocqProver({"cache_dir": str(tmp_path / "cache"), "sandbox": "none"})
    real = prover._judge_run
    empty = tmp_path / "no-plugin"
    empty.mkdir()

    def without_plugin(timeout: float) -> Any:
        def run(args: list[str], cwd: Path) -> Any:
            if (tmp_path / "cache") in cwd.parents:  # the template's audit: as usual
                return real(timeout)(args, cwd)
            return prover._run([prover.coqc, *args], cwd, timeout, env={"OCAMLPATH": str(empty)})
        return run

    prover._judge_run = without_plugin  # type: ignore[method-assign]
    verdict = verdict_of(prover, "putnam_2001_a1", A1, tmp_path, "broken")
    layer = next(layer for layer in verdict.layers if layer.name == "elaborated_statement")
    assert verdict.verdict == "infra" and layer.infra and layer.ok is False, verdict.reason
    assert judge_module.JUDGE_COULD_NOT_RUN in layer.reason, layer.reason


# --- project mode: one shared closure walk per file (issue 18, part 4) -------------------------------------

SHARED_WALK_FILES = {
    "Deep.v": "Axiom deep_ax : 1 = 1 -> True.\nLemma l0 : True. Proof. apply deep_ax; reflexivity. Qed.\n"
              "Axiom ty_ax : Type.\nAxiom el_ax : ty_ax.\n",
    "Mid.v": "Require P.Deep.\nLemma l1 : True. Proof. exact P.Deep.l0. Qed.\nDefinition d1 : True := P.Deep.l0.\n",
    "Top.v": """Require P.Mid.
Lemma t1 : True. Proof. exact P.Mid.l1. Qed.
Lemma t2 : nat. Proof. exact 0. Qed.
Definition t2d : True := P.Mid.d1.
Section S.
Variable x : nat.
Lemma t3 : x = x. Proof. reflexivity. Qed.
End S.
Unset Guard Checking.
Fixpoint loop (n : nat) : False := loop n.
Set Guard Checking.
Lemma t4 : False. Proof. exact (loop 0). Qed.
Unset Positivity Checking.
Inductive bad := C : (bad -> False) -> bad
with bad2 := C2 : bad -> bad2.
Set Positivity Checking.
Lemma t5 : bad2 -> True. Proof. intros; exact I. Qed.
Definition t6 := C2.
Module M.
Lemma t7 : True. Proof. exact P.Mid.l1. Qed.
End M.
Lemma t8 : 2 = 2. Admitted.
Lemma t9 : 2 = 2 /\\ True. Proof. split; [exact t8 | exact I]. Qed.
Lemma t10 : True. Proof. exact (match t4 with end). Qed.
Definition t11 := P.Deep.el_ax.
""",
}


@pytest.fixture(scope="module")
def judge_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tool("coqc")
    plugin, why = judge_module.plugin_dir(tmp_path_factory.mktemp("judge-cache"), "shared-walk")
    assert plugin is not None, why
    return plugin


@pytest.fixture(scope="module")
def shared_walk_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared-walk fixture's files compiled once as the library ``P`` (the tests below only read them)."""
    require_tool("coqc")
    where = tmp_path_factory.mktemp("shared-walk")
    for name, text in SHARED_WALK_FILES.items():
        (where / name).write_text(text, encoding="utf-8")
    for name in SHARED_WALK_FILES:
        done = subprocess.run(["coqc", "-q", "-Q", ".", "P", name], cwd=where, capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    return where


@pytest.fixture(scope="module")
def library_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the real library's files are judged: one directory, so that one file's dumps serve both tests."""
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True).stdout.strip()
    require_path(Path(where) / "user-contrib" / "Coquelicot" / "Equiv.vo", "Coquelicot (scripts/setup.sh installs it)")
    return tmp_path_factory.mktemp("library")


#: (plugin, directory, load path, module, targets, one walk per target) -> the file's dump: each file dumped once
#: per process, whichever test asks first (a dump is a function of these and the compiled files)
_DUMPS: dict[tuple[str, ...], Any] = {}


def _dump(plugin: Path, work: Path, load: list[str], module: str, targets: list[str], each: bool = False) -> Any:
    """:func:`~pytest_forall.lang.rocq.judge.run_file_dump` of ``module`` (every file's session of its own)."""
    key = (str(plugin), str(work), " ".join(load), module, " ".join(targets), str(each))
    if key not in _DUMPS:
        dump, problem = judge_module.run_file_dump(_judge_coqc(plugin), work, load, module, targets, each=each)
        assert dump is not None, problem
        _DUMPS[key] = dump
    return _DUMPS[key]


def _judge_coqc(plugin: Path) -> Any:
    from pytest_forall.core.proc import run_command

    def run(args: list[str], cwd: Path) -> Any:
        return run_command(["coqc", *args], cwd=cwd, timeout=1200,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OCAMLPATH": str(plugin)})
    return run


def _targets(plugin: Path, work: Path, load: list[str], module: str) -> list[str]:
    """Every constant of ``module``: the targets of the dumps below."""
    fields = _dump(plugin, work, load, module, [])
    return [path for path, entry in fields.fields if entry.startswith("const ")]


def _file_dumps(plugin: Path, work: Path, load: list[str], module: str) -> tuple[Any, Any, list[str]]:
    """The file's dump with every constant of it a target, once from the shared walk and once from one Coq
    ``Assumptions.assumptions`` per target."""
    targets = _targets(plugin, work, load, module)
    return _dump(plugin, work, load, module, targets), _dump(plugin, work, load, module, targets, each=True), targets


def test_shared_walk_gives_each_targets_own_assumptions(judge_plugin: Path, shared_walk_dir: Path) -> None:
    """One walk for all targets of a file gives, per target, exactly what one `Assumptions.assumptions` per target
    gives: an axiom reached only through two opaque proofs of other files, an admitted lemma, a section variable
    discharged, a fixpoint without guard checking, a non-positive mutual block reached through a constructor of
    its other type, a lemma inside a module, an axiom whose type is an axiom (Rocq 9 walks axioms' types; the
    same fixture is compared on the 8.20 and 9.2 roots by hand, see docs/measurements.md); and the detectors' findings per target are the same too."""
    shared, each, targets = _file_dumps(judge_plugin, shared_walk_dir, ["-Q", str(shared_walk_dir), "P"], "P.Top")
    assert {"t1", "t3", "t4", "t5", "t6", "M.t7", "t9", "t10"} <= set(targets)
    assert shared.assumptions == each.assumptions
    assert shared.findings == each.findings
    got = shared.assumptions
    assert got["t1"] == ("axiom P.Deep.deep_ax",) and got["M.t7"] == ("axiom P.Deep.deep_ax",)
    assert got["t2d"] == ("axiom P.Deep.deep_ax",) and got["t2"] == ()
    assert got["t9"] == ("axiom P.Top.t8",)
    assert "unsafe guarded P.Top.loop" in got["t4"] and "unsafe guarded P.Top.loop" in got["t10"]
    assert any(line.startswith("unsafe positive P.Top.bad") for line in got["t5"])
    assert got["t6"] == got["t5"]
    assert any("fix P.Top.loop" in f for f in shared.findings["t4"])


def test_shared_walk_equals_one_walk_per_target_on_a_real_library_file(judge_plugin: Path, library_dir: Path) -> None:
    """The same equality on every constant of a real library's compiled file (Coquelicot's Equiv.v, whose closure
    holds the standard library's real numbers and their axioms)."""
    shared, each, targets = _file_dumps(judge_plugin, library_dir, [], "Coquelicot.Equiv")
    assert len(targets) >= 25
    assert shared.assumptions == each.assumptions
    assert shared.findings == each.findings
    assert all(any("ClassicalDedekindReals.sig_forall_dec" in line for line in lines)
               for lines in shared.assumptions.values() if lines) and any(shared.assumptions.values())


def _session_and_alone(plugin: Path, work: Path, load: list[str], modules: list[str]) -> tuple[Any, Any]:
    """Every constant of each module a target: the dumps of one session over all the modules (their assumptions
    from one walk at the end) and of one session per module (the one the shared-walk test judged is not judged
    again)."""
    files = [(module, _targets(plugin, work, load, module)) for module in modules]
    assert "ForallJudgeFlush" in judge_module.files_audit_source([(m, t, f"{m}.txt") for m, t in files], "n")
    together, problem = judge_module.run_files_dump(_judge_coqc(plugin), work, load, files)
    assert not problem, problem
    return together, {module: _dump(plugin, work, load, module, targets) for module, targets in files}


def test_one_session_over_several_files_gives_each_file_its_own_dump(judge_plugin: Path, shared_walk_dir: Path,
                                                                      library_dir: Path) -> None:
    """Several files judged in one session, their targets' assumptions from one walk over all of them at the end
    (after later files are loaded), give each file exactly the dump its own session gives: the fixture's axiom
    reached through other files' opaque proofs, the admitted lemma, the unguarded fixpoint, the non-positive block;
    and on three files of a real library whose closures share the standard library's real numbers."""
    modules = ["P.Deep", "P.Mid", "P.Top"]
    together, alone = _session_and_alone(judge_plugin, shared_walk_dir, ["-Q", str(shared_walk_dir), "P"], modules)
    assert sorted(together) == modules
    for module in modules:
        assert together[module] == alone[module], module
    assert together["P.Top"].assumptions["t9"] == ("axiom P.Top.t8",)
    assert together["P.Mid"].assumptions["l1"] == ("axiom P.Deep.deep_ax",)

    real = ["Coquelicot.Rcomplements", "Coquelicot.Rbar", "Coquelicot.Equiv"]
    together, alone = _session_and_alone(judge_plugin, library_dir, [], real)
    for module in real:
        assert together[module] == alone[module], module
    assert any(together["Coquelicot.Equiv"].assumptions.values())
