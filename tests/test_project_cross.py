"""Project mode and the judge's detectors across the project's files (docs/verifier.md, "The project's own detector
findings"): an unsafe fixpoint, a cofixpoint outside the criterion, a constructor with a let-in, a cumulative or
universe-polymorphic declaration defined in *another* project file than the item's, and reached by its proof, keeps
the item from strict with the advisories of that construct NOT covered, as in the item's own file; a VM conversion of
another project file that the proof reaches makes coqchk of that file part of the item's independent check. Items
that do not reach them stay strict, the advisories covered."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_project_modules import PROJECTS, _coverage, assert_rules_only_with_fix_not_covered, own_verdicts

from pytest_forall.core.model import Verdict
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import load_project

CHEATS = Path(__file__).parent / "cheats" / "cheat"


def _exploit(entry: str, end: str = "Theorem putnam_2001_a1") -> str:
    """The lines of a corpus exploit before its benchmark theorem (one copy of each exploit: the corpus's)."""
    return (CHEATS / entry / "candidate.v").read_text(encoding="utf-8").split("RelationClasses.\n", 1)[1] \
        .split(end, 1)[0]


#: file A: rocq#20413's fixpoint (8.16.1's guard checker accepts it; the judge's `fix` detector does not) and an
#: honest structural one
FIX = _exploit("advisory_20413_unchecked_argument").split("Lemma zero_is_one", 1)[0] + (
    "Fixpoint double (n : nat) : nat := match n with 0 => 0 | S p => S (S (double p)) end.\n"
    "Lemma double_two : double 2 = 4.\nProof. reflexivity. Qed.\n")
#: file A': rocq#22386's cofixpoint typed by a let-bound variable; a constructor with a let-in (rocq#22378's
#: construct); a universe-polymorphic transparent constant; a cumulative universe-polymorphic inductive
FEATS = _exploit("advisory_22386_cofix_let_type") + (
    "Inductive L : Type := mkL : let x := nat in x -> L.\nDefinition lval : L := mkL 0.\n"
    "Polymorphic Definition pid@{u} (A : Type@{u}) (a : A) : A := a.\n"
    "Polymorphic Cumulative Inductive box@{u} (A : Type@{u}) : Type@{u} := Box : A -> box A.\n")
#: file A'': rocq#19402, the 8.16 VM's wrong addmuldiv (coqchk, which has no VM, rejects the file), and a lemma of
#: the same file that uses it
VM = _exploit("advisory_19402_vm_addmuldiv") + (
    "Lemma uses_vm : (addmuldiv 64 42 42 =? 42)%uint63 = true.\nProof. exact vm_says. Qed.\n")
#: file B: the items; each reaches one construct of the other files, or none
USE = """From Cross Require Import Fix Feats Vm.

Lemma zero_is_one : 0 = 1.
Proof. destruct (f 1 tt). Qed.

Lemma by_double : double 3 = 6.
Proof. reflexivity. Qed.

Lemma unrelated : 2 + 2 = 4.
Proof. reflexivity. Qed.

Lemma by_cofix : 0 = 1.
Proof. destruct (ab cyc). Qed.

Lemma by_letin : exists l : L, l = l.
Proof. exists lval. reflexivity. Qed.

Lemma by_upoly : pid nat 0 = 0.
Proof. reflexivity. Qed.

Lemma by_variance : exists b : box nat, b = b.
Proof. exists (Box nat 0). reflexivity. Qed.

Lemma by_vm : 0 = 1.
Proof. pose proof (eq_trans (eq_sym vm_says) cbv_says) as H. discriminate H. Qed.
"""
@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Verdict]:
    """Every item's own proof of Use.v and Fix.v (and Vm.v's `uses_vm`) judged once (one build, one judge session per file)."""
    return own_verdicts(tmp_path_factory.mktemp("cross") / "proj", "Cross",
                        {"Fix.v": FIX, "Feats.v": FEATS, "Vm.v": VM, "Use.v": USE}, ("Cross__Use__", "Cross__Fix__", "Cross__Vm__uses_vm"))


def test_a_proof_of_0_eq_1_through_another_files_unsafe_fixpoint_is_not_strict(verdicts: dict[str, Verdict]) -> None:
    """The attack: `zero_is_one` in Use.v proves `0 = 1` through rocq#20413's fixpoint of Fix.v. While the detectors
    walked only the item's own file it was accepted strict, with the `fix` advisories "covered" by the detector."""
    assert_rules_only_with_fix_not_covered(verdicts["Cross__Use__zero_is_one"], "Cross.Fix.f")


@pytest.mark.parametrize("item", ["Cross__Use__by_double", "Cross__Use__unrelated", "Cross__Fix__double_two"])
def test_items_that_reach_no_unsafe_construct_of_another_file_stay_strict(verdicts: dict[str, Verdict],
                                                                          item: str) -> None:
    """The honest controls: an honest structural fixpoint of Fix.v reached from Use.v, an item of Use.v that reaches
    nothing of the other files (which it imports), and Fix.v's own honest item beside the unsafe fixpoint."""
    verdict = verdicts[item]
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason
    assert not any(how.startswith("NOT") for how in _coverage(verdict).values()), _coverage(verdict)
    advice = next(layer for layer in verdict.layers if layer.name == "kernel_advisories")
    assert not advice.evidence.get("requires_independent_check"), advice.evidence


@pytest.mark.parametrize(("item", "feature", "constant"), [
    ("Cross__Use__by_cofix", "cofix", "Cross.Feats.cyc"),
    ("Cross__Use__by_letin", "letin", "Cross.Feats.L"),
    ("Cross__Use__by_upoly", "upoly", "Cross.Feats.pid"),
    ("Cross__Use__by_variance", "variance", "Cross.Feats.box"),
])
def test_each_detector_finding_of_another_file_keeps_the_item_from_strict(verdicts: dict[str, Verdict], item: str,
                                                                          feature: str, constant: str) -> None:
    verdict = verdicts[item]
    assert verdict.verdict == "accept" and not verdict.strict, verdict.reason
    rows = {a: how for a, how in _coverage(verdict).items() if how.startswith(f"NOT covered ({feature})")}
    assert rows and all(constant in how for how in rows.values()), _coverage(verdict)


def test_a_vm_conversion_of_another_file_requires_the_independent_check_of_that_file(
        verdicts: dict[str, Verdict]) -> None:
    """rocq#19402: Vm.v's `vm_says` is false, computed by the 8.16 VM; `by_vm` in Use.v proves `0 = 1` from it
    without a VM conversion of its own. Excused as the build's, the VM finding did not require the independent
    check, and coqchk of Use.v alone (-norec: the files it requires are loaded, not checked) accepted it; the check of
    the item now covers Vm.v, whose coqchk rejects the VM's conversion."""
    verdict = verdicts["Cross__Use__by_vm"]
    advice = next(layer for layer in verdict.layers if layer.name == "kernel_advisories")
    assert "VM conversion in `Cross.Vm.vm_says`" in advice.evidence.get("requires_independent_check", ""), \
        advice.evidence
    assert verdict.verdict == "reject", verdict.reason
    check = next(layer for layer in verdict.layers if layer.name == "independent_check")
    assert check.ok is False and not check.infra and "Cross.Vm" in check.reason, check.reason


def test_a_candidates_proof_through_another_files_vm_conversion_is_rejected_by_coqchk_of_that_file(
        verdicts: dict[str, Verdict]) -> None:
    """The same through a candidate's own proof (compiled, its independent check beside the judge's layers): coqchk
    of the candidate's file passes, that of the file whose VM conversion it reaches does not."""
    task = next(t for t in load_project(PROJECTS["Cross"], {}) if t.task_id == "Cross__Use__by_vm")
    prover = ProjectRocqProver({"cache_dir": str(PROJECTS["Cross"].parent / "cache"), "timeout": 300})
    text = prover.candidate_with_prelude(task, "", "exfalso. pose proof (eq_trans (eq_sym vm_says) cbv_says) as H.\n"
                                                   "discriminate H.\nQed.")
    verdict = verify_candidate(task, prover, text.encode(), timeout=300)
    check = next(layer for layer in verdict.layers if layer.name == "independent_check")
    assert verdict.verdict == "reject" and check.ok is False and not check.infra, verdict.reason
    assert "coqchk of `Cross.Vm`" in check.reason, check.reason


def test_a_candidate_reaching_another_files_construct_its_original_proof_does_not_is_not_refused(
        verdicts: dict[str, Verdict]) -> None:
    """Another file's terms are the build's whatever the candidate's proof reaches (a candidate compiles its own file
    only; a kernel name of its file starts with the file's name): a new proof of `unrelated` through Fix.v's unsafe
    fixpoint, which the project's own proof does not reach, is accepted rules-only with the `fix` rows NOT covered,
    not refused as a construct the candidate brought (and not strict)."""
    task = next(t for t in load_project(PROJECTS["Cross"], {}) if t.task_id == "Cross__Use__unrelated")
    prover = ProjectRocqProver({"cache_dir": str(PROJECTS["Cross"].parent / "cache"), "timeout": 300})
    text = prover.candidate_with_prelude(task, "", "destruct (f 1 tt).\nQed.")
    assert_rules_only_with_fix_not_covered(verify_candidate(task, prover, text.encode(), timeout=300), "Cross.Fix.f")


def test_a_vm_conversion_of_the_items_own_file_requires_the_independent_check(verdicts: dict[str, Verdict]) -> None:
    """The same file: `uses_vm` reaches `vm_says` before it (excused as the build's, it required no check before);
    coqchk of the file, the item's own check, rejects it."""
    verdict = verdicts["Cross__Vm__uses_vm"]
    advice = next(layer for layer in verdict.layers if layer.name == "kernel_advisories")
    assert "VM conversion in `Cross.Vm.vm_says`" in advice.evidence.get("requires_independent_check", ""), \
        advice.evidence
    check = next(layer for layer in verdict.layers if layer.name == "independent_check")
    assert verdict.verdict == "reject" and check.ok is False and not check.infra, verdict.reason
