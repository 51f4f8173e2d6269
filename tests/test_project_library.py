"""Issue 18 on real Rocq libraries Debian ships with their sources, copied at test time under a new logical name:
library mode re-checks every proof of the library against its own build (strict, none failed), a proof of a
differently scoped statement is refused by the kernel judge, and the gate names what changed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_project_blocks import kernel_statement

from conftest import require_path, require_tool
from pytest_forall.core.model import Verdict
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import NOT_ITEMS, load_project

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCOPES = FIXTURES / "project_rocq_scopes"
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]

#: (installed directory under `coqc -where`/user-contrib, files (glob patterns, in that directory), logical name of
#: the copy) — a bounded set of files: plain Ltac with sections and `Context` (Coquelicot), ssreflect (mathcomp),
#: universe polymorphism, type classes and instances proved in proof mode (Equations), and HoTT's `Basics` and
#: `Types` (its own prelude under `-noinit -indices-matter`, universe polymorphism everywhere, type classes,
#: `Global Instance`, `Local Open Scope`, a `Fixpoint` built in proof mode; 454 proofs, one admitted). Never
#: std++ or Iris (kept for independent evaluation).
LIBRARIES = {
    "coquelicot": ("Coquelicot", ["Equiv.v"], "CQ"),
    "mathcomp": ("mathcomp/ssreflect", ["div.v"], "MC"),
    "equations": ("Equations/Type", ["Relation.v", "EqDec.v"], "EQT"),
    "hott": ("HoTT", ["Basics.v", "Basics/*.v", "Types/*.v"], "HT"),
}
#: the library's own build flags (HoTT's _CoqProject: no standard library, its own prelude, indices matter)
ARGS = {"hott": ["-noinit", "-indices-matter"]}
#: the axioms a library declares itself (an `Axiom`, or a lemma it leaves `Admitted`): a proof through them is
#: `rules_only` by the rules (the project's own axioms and admitted lemmas), unless the maintainer declares them the
#: library's foundations with `--forall-project-axioms` (docs/ci.md), as the test does: then `strict`.
#: HoTT states function extensionality and univalence so (`Funext`/`isequiv_apD10` in Basics/Overture.v,
#: `Univalence`/`isequiv_equiv_path` and the admitted `Univalence_implies_Funext` in Types/Universe.v).
DECLARED_AXIOMS = {"hott": {"HT.Basics.Overture.Funext", "HT.Basics.Overture.isequiv_apD10",
                            "HT.Types.Universe.Univalence", "HT.Types.Universe.isequiv_equiv_path",
                            "HT.Types.Universe.Univalence_implies_Funext"}}
#: what the listing says is not an item (file:line kind, or the name), for the libraries where it was read
#: the detectors' features of each library's own terms outside the judge's conservative criteria (docs/verifier.md,
#: "The project's own detector findings"): a proof reaching one is rules-only with those advisories NOT covered
#: (HoTT and Equations: universe-polymorphic transparent constants, and HoTT's cumulative inductives), every other
#: proof strict. mathcomp's div, rules-only until session 15 (`edivn_rec`, `gcdn_rec`, `modn_rec` recurse on a pattern
#: variable of a match on `m - d`), is strict: rule 5 of the criterion (a match on a fixpoint's result).
OWN_FINDINGS = {"hott": {"upoly", "variance"}, "equations": {"upoly"}}
LISTED = {"hott": {"Basics/Equivalences.v:97 Let"}, "equations": {"EqDec.v:142 Let"}}


def user_contrib() -> Path:
    require_tool("coqc")
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True).stdout.strip()
    return Path(where) / "user-contrib"


def copy_library(name: str, root: Path, only: list[str] | None = None) -> list[str]:
    """The library's files copied to ``root`` as a project of its own (``-R . <new name>``); a short-name
    ``Require`` of the library's own siblings is qualified with the installed library's name (the copy is not
    where the short name would resolve)."""
    directory, patterns, logical = LIBRARIES[name]
    patterns = only or patterns
    source = require_path(user_contrib() / directory, f"the {name} sources (scripts/setup.sh installs them)")
    root.mkdir(parents=True)
    files = [str(p.relative_to(source)) for pattern in patterns
             for p in sorted(source.glob(pattern)) or [require_path(source / pattern, f"{name}'s {pattern}")]]
    for file in files:
        text = (source / file).read_text(encoding="utf-8")
        if name == "coquelicot":
            text = text.replace("\nRequire Import Rbar Rcomplements Hierarchy.",
                                "\nFrom Coquelicot Require Import Rbar Rcomplements Hierarchy.")
        if name == "hott":  # the fully qualified prelude; `Require Import Basics.Overture` finds the copy itself
            text = text.replace("\nRequire Import HoTT.Basics.", f"\nRequire Import {logical}.Basics.")
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        (root / file).write_text(text, encoding="utf-8")
    (root / "_CoqProject").write_text(f"-R . {logical}\n" + "".join(f"-arg {a}\n" for a in ARGS.get(name, []))
                                      + "".join(f"{f}\n" for f in files))
    return files


def results(root: Path, run_id: str) -> dict[str, dict]:
    lines = (root / "reports" / run_id / "results.jsonl").read_text().splitlines()
    return {json.loads(line)["task_id"]: json.loads(line) for line in lines}


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_library_mode_rechecks_every_own_proof_strict(pytester: pytest.Pytester, library: str) -> None:
    """`--forall-project` + replay without `--forall-proofs`: every proof of the library is an item and passes
    `strict` (its uses of the library's other proved lemmas too) unless it reaches the library's own terms outside the
    detectors' criteria (:data:`OWN_FINDINGS`: rules-only); none fails; what is not an item is listed."""
    project = pytester.path / "proj"
    copy_library(library, project)
    tasks = load_project(project, {})
    pytester.makeini("[pytest]\n")
    declared = DECLARED_AXIOMS.get(library, set())
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay",
                             "--forall-run-id", "own", "-m", "not admitted",
                             "--forall-require", "any" if library in OWN_FINDINGS else "strict",
                             *[arg for name in sorted(declared) for arg in ("--forall-project-axioms", name)])
    rows = results(pytester.path, "own")
    proved = [t.task_id for t in tasks if not t.meta["admitted"]]
    assert len(proved) >= 20 and sorted(rows) == sorted(proved), run.stdout.str()[-3000:]
    if library in LISTED:
        assert {name for name, _ in NOT_ITEMS[str(project)]} == LISTED[library], NOT_ITEMS[str(project)]
    # every proof strict but one reaching the library's own terms outside the detectors' criteria (rules-only, only
    # the advisories of those features NOT covered); one through the declared foundations names them (and only them)
    def uncovered(row: dict[str, Any]) -> set[str]:
        return {how.rpartition("(")[2].rstrip(")") for how in row["advisory_coverage"] if " NOT covered (" in how}
    unexpected = {k: (r["outcome"], r["reason"][:300], r["axioms"], sorted(uncovered(r))) for k, r in rows.items()
                  if r["outcome"] != ("rules_only" if uncovered(r) else "strict")
                  or not uncovered(r) <= OWN_FINDINGS.get(library, set())
                  or set(r["project_axioms"]) != set(r["axioms"]) & declared}
    assert not unexpected, unexpected
    assert {feature for r in rows.values() for feature in uncovered(r)} == OWN_FINDINGS.get(library, set())
    assert all(r["independent"] is True for r in rows.values())
    if declared:
        assert any(r["project_axioms"] for r in rows.values())
    assert run.ret == 0, run.stdout.str()[-3000:]


def assert_accepted_strict_unless_own_upoly(verdict: Verdict, name: str) -> None:
    """An honest proof is accepted; strict unless the project's own universe-polymorphic terms keep the `upoly`
    advisories from being covered for it (docs/verifier.md, the project's own detector findings): then the verdict
    says so, advisory by advisory, and the reason names the finding."""
    assert verdict.verdict == "accept", (name, verdict.reason)
    if not verdict.strict:
        coverage = dict(verdict.kernel.get("coverage") or {})
        assert any(str(why).startswith("NOT covered (upoly)") for why in coverage.values()), (name, coverage)
        audit = " ".join(layer.reason for layer in verdict.layers)
        assert "upoly" in audit, (name, audit)


def test_a_scoping_attack_is_refused_in_a_module_and_in_a_section(tmp_path: Path) -> None:
    """A proof of the statement as it reads with another module's scope open (where `<=` is trivial) is not a
    proof of the lemma: for a lemma inside a `Module`, and one inside a `Section` with `Implicit Types` and a
    `Local Coercion`. The verifier refuses it, and so does the kernel judge alone (no text screen)."""
    require_tool("coqc")
    project = tmp_path / "proj"
    shutil.copytree(SCOPES, project)
    tasks = {t.theorem_name: t for t in load_project(project, {})}
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    honest = {"le_double": "intros n. apply Nat.le_add_r.\nQed.", "one_le": "intros p. exact (val_pos p).\nQed."}
    for name, proof in honest.items():
        task = tasks[name]
        verdict = verify_candidate(task, prover, prover.candidate_with_proof(task, proof).encode(), timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (name, verdict.reason)
        keyword = "Lemma"
        attack = prover.candidate_with_proof(task, "intros. split; reflexivity.\nQed.").replace(
            f"{keyword} {name}", f"Import Weird.\nLocal Open Scope weird_scope.\n{keyword} {name}")
        verdict = verify_candidate(task, prover, attack.encode(), timeout=300)
        assert verdict.verdict == "reject", (name, verdict.reason)
        layer = kernel_statement(prover, task, attack, tmp_path / f"kernel-{name}")
        assert layer.ok is False and f"the type of `{task.meta['target_path']}` differs from the project's" in \
            layer.reason, layer.reason


def test_hott_a_proof_adding_a_universe_constraint_or_read_monomorphic_is_refused(tmp_path: Path) -> None:
    """HoTT's `equiv_inverse {A B : Type} : (A <~> B) -> (B <~> A)` is universe-polymorphic (the library's
    `Global Set Universe Polymorphism`): a proof that puts `A` in `B`'s universe proves it only for `A <= B` (the
    same kernel term; accepted `strict` before the judge compared universes), and the statement read with
    polymorphism off is another constant. Both refused, the second by the kernel judge alone too."""
    project = tmp_path / "proj"
    copy_library("hott", project, only=["Basics.v", "Basics/*.v"])
    tasks = {t.theorem_name: t for t in load_project(project, {})}
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    task = tasks["equiv_inverse"]
    honest = "intro e.\n  exists (e^-1).\n  apply isequiv_inverse.\nDefined."
    verdict = verify_candidate(task, prover, prover.candidate_with_proof(task, honest).encode(), timeout=300)
    assert_accepted_strict_unless_own_upoly(verdict, "equiv_inverse")
    narrower = prover.candidate_with_proof(task, "intro e.\n  let t := type of B in pose (X := (A : t)).\n  clear X.\n"
                                                 "  exists (e^-1).\n  apply isequiv_inverse.\nDefined.")
    verdict = verify_candidate(task, prover, narrower.encode(), timeout=300)
    assert verdict.verdict == "reject" and "adds universe constraints" in verdict.reason, verdict.reason
    monomorphic = prover.candidate_with_proof(task, honest).replace(
        "Theorem equiv_inverse", "Local Unset Universe Polymorphism.\nTheorem equiv_inverse")
    assert verify_candidate(task, prover, monomorphic.encode(), timeout=300).verdict == "reject"
    layer = kernel_statement(prover, task, monomorphic, tmp_path / "kernel-mono")
    assert layer.ok is False and "the type of `equiv_inverse` differs from the project's" in layer.reason, layer.reason


GATE_FILE = """Definition double (n : nat) := n + n.

Lemma le_1 : 1 <= 2.
Proof. auto. Qed.

Lemma double_pos : 0 < double 1.
Proof. unfold double; simpl; repeat constructor. Qed.

Lemma double_2 : double 2 = 4.
Proof. reflexivity. Qed.
"""


def test_the_gate_says_what_changed(pytester: pytest.Pytester) -> None:
    """Against a baseline run of the project's own proofs: a changed definition, a broken proof and a changed
    statement each give the right verdict and cause; a statement that changed while its proof still passes is
    flagged (statement drift)."""
    require_tool("coqc")
    project = pytester.path / "proj"
    project.mkdir()
    (project / "_CoqProject").write_text("-R . Gate\nA.v\n")
    source = project / "A.v"
    source.write_text(GATE_FILE)
    pytester.makeini("[pytest]\n")

    def gate(run_id: str, text: str) -> tuple[dict[str, tuple[str, str]], int]:
        source.write_text(text)
        run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay",
                                 "--forall-run-id", run_id, "--forall-baseline", "reports/base",
                                 "--forall-gate", "regressions")
        return {k: (r["change"], r["change_cause"]) for k, r in results(pytester.path, run_id).items()}, run.ret

    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay",
                             "--forall-run-id", "base")
    assert {r["outcome"] for r in results(pytester.path, "base").values()} == {"strict"} and run.ret == 0

    changes, ret = gate("definition", GATE_FILE.replace("n + n.", "n + n + 1."))
    assert ret == 1 and changes == {"Gate__A__double_2": ("regressed", "a definition it depends on changed"),
                                    "Gate__A__double_pos": ("same", ""), "Gate__A__le_1": ("same", "")}

    changes, ret = gate("proof", GATE_FILE.replace("= 4.\nProof. reflexivity. Qed.", "= 4.\nProof. exact I. Qed."))
    assert ret == 1 and changes["Gate__A__double_2"] == ("regressed", "proof changed"), changes

    changes, ret = gate("statement", GATE_FILE.replace("double 2 = 4.", "double 2 = 5.").replace("1 <= 2.", "1 <= 3."))
    # (le_1, before it, changed too; the proof did not)
    assert ret == 1 and changes["Gate__A__double_2"] == ("regressed", "statement changed, a lemma before it changed")
    # the proof of le_1 still passes, of another statement: the gate says so
    assert changes["Gate__A__le_1"] == ("same", "statement changed (still passes)"), changes


UNIVERSES = FIXTURES / "project_rocq_universes"


def test_a_proof_that_adds_a_universe_constraint_to_the_statement_is_refused(tmp_path: Path) -> None:
    """The kernel type of a universe-polymorphic lemma is compared up to its universe levels, so a proof that adds
    a constraint between the statement's universes (its own polymorphic context, or the global graph for a
    monomorphic lemma) proves a less general statement with the same term: the judge compares the relations the
    kernel entails between the statement's universes (and how the type shares them), as for a benchmark. (The
    honest proof of `attr_any`, polymorphic by an attribute on its own line, was refused by the sentence screen:
    coqc's report cuts that command off, and the project's check did not pass on the `.glob`'s declarations.)"""
    require_tool("coqc")
    project = tmp_path / "proj"
    shutil.copytree(UNIVERSES, project)
    tasks = {t.theorem_name: t for t in load_project(project, {})}
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    cases = {"poly_any": ("intros _. exact unit.\nQed.", "intros A. exact A.\nQed."),
             "mono_any": ("intros _. exact unit.\nQed.", "intros A. exact A.\nQed."),
             "attr_any": ("intros _. exact unit.\nQed.", "intros A. exact A.\nQed."),
             "poly_pair": ("exact A.\nDefined.", "exact (A * B)%type.\nDefined.")}
    for name, (honest, narrower) in cases.items():
        task = tasks[name]
        verdict = verify_candidate(task, prover, prover.candidate_with_proof(task, honest).encode(), timeout=300)
        if name == "poly_pair":  # a transparent polymorphic definition: the project's own `upoly` term
            assert_accepted_strict_unless_own_upoly(verdict, name)
            assert not verdict.strict, "poly_pair is `Defined` and universe-polymorphic: its upoly advisories"
        else:
            assert verdict.verdict == "accept" and verdict.strict, (name, verdict.reason)
        attack = prover.candidate_with_proof(task, narrower)
        verdict = verify_candidate(task, prover, attack.encode(), timeout=300)
        assert verdict.verdict == "reject", (name, verdict.reason)
        layer = kernel_statement(prover, task, attack, tmp_path / f"kernel-{name}")
        assert layer.ok is False and "universe" in layer.reason, (name, layer.reason)
    # the statement with its two levels made one: the same term, levels shared differently
    task = tasks["poly_any"]
    shared = prover.candidate_with_proof(task, "intros A. exact A.\nQed.").replace(
        "Lemma poly_any : Type -> Type.", "Lemma poly_any@{u} : Type@{u} -> Type@{u}.")
    assert verify_candidate(task, prover, shared.encode(), timeout=300).verdict == "reject"
    layer = kernel_statement(prover, task, shared, tmp_path / "kernel-shared")
    assert layer.ok is False and "the universe levels of `poly_any` are not the project's" in layer.reason, layer.reason


FIXPOINT = FIXTURES / "project_rocq_fixpoint"


def test_a_fixpoint_built_in_proof_mode_is_an_item(tmp_path: Path) -> None:
    """`Fixpoint f … : T. Proof. … Defined.` (HoTT's `trunc_index_min`) is a proof of the library like a
    `Definition` proved in proof mode: an item, its own proof `strict`, another guarded one too; a proof that is not
    structurally recursive is refused by the kernel (the guard), not accepted as an axiom."""
    require_tool("coqc")
    project = tmp_path / "proj"
    shutil.copytree(FIXPOINT, project)
    tasks = {t.theorem_name: t for t in load_project(project, {})}
    assert sorted(tasks) == ["min2", "min2_0"] and not [n for n, _ in NOT_ITEMS.get(str(project), [])]
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    task = tasks["min2"]
    assert task.meta["keyword"] == "Fixpoint" and task.template.endswith("Proof.\nAdmitted.\n")
    other = "destruct n as [|n]; [exact 0|].\ndestruct m as [|m]; [exact 0|exact (S (min2 n m))].\nDefined."
    for proof in (task.meta["own_candidate"][len(task.frozen):], other):
        verdict = verify_candidate(task, prover, prover.candidate_with_proof(task, proof).encode(), timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (proof, verdict.reason)
    looping = prover.candidate_with_proof(task, "exact (min2 n m).\nDefined.")
    assert verify_candidate(task, prover, looping.encode(), timeout=300).verdict == "reject"


CLASSES = FIXTURES / "project_rocq_classes"


def test_a_typeclass_heavy_library_is_strict_in_library_mode(pytester: pytest.Pytester) -> None:
    """Issue 31: a library in the style of std++/ext-lib's operational type classes (tests/fixtures/
    project_rocq_classes): instances whose fixpoint recurses through the class method (`@insert _ _ _ go j y t`),
    a nested tree whose size instance recurses through a fold, instances proved by a cofixpoint whose type only
    unfolds to a coinductive. Every proof is honest: every one strict, none failed at `kernel_advisories`."""
    require_tool("coqc")
    shutil.copytree(CLASSES, pytester.path / "proj")
    tasks = load_project(pytester.path / "proj", {})
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay",
                             "--forall-run-id", "own", "--forall-require", "strict")
    rows = results(pytester.path, "own")
    assert len(rows) == len(tasks) >= 10, run.stdout.str()[-3000:]
    unexpected = {k: (r["outcome"], r["reason"][:300]) for k, r in rows.items() if r["outcome"] != "strict"}
    assert not unexpected, unexpected
    assert run.ret == 0, run.stdout.str()[-3000:]
