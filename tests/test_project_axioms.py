"""Issue 18: a maintainer declares the project's own foundation axioms (``--forall-project-axioms``); a proof resting
only on them (and the strict list) is ``strict``, a candidate can never widen the declaration, and a declared name the
project's build does not have as an axiom is an error on every item, never a silent pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_project_blocks import compiled_candidate

from conftest import require_tool
from pytest_forall.core.cache import cache_key
from pytest_forall.core.gating import cause
from pytest_forall.core.model import Task
from pytest_forall.core.prover import AxiomAudit
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import load_project

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "project_rocq_axioms"
DECLARED = ["PA.Found.ext", "PA.Found.half"]
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
EXT = "forall (A B : Type) (f g : A -> B), (forall x, f x = g x) -> f = g"


def _setup(tmp_path: Path, declared: list[str]) -> tuple[dict[str, Task], ProjectRocqProver]:
    require_tool("coqc")
    project = tmp_path / "proj"
    if not project.exists():
        shutil.copytree(FIXTURE, project)
    tasks = {t.theorem_name: t for t in load_project(project, {})}
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300, "project_axioms": declared})
    return tasks, prover


def _kernel_audit(prover: ProjectRocqProver, task: Task, candidate: str, build: Path) -> AxiomAudit:
    """The kernel judge's axiom audit alone on ``candidate`` (no text screen)."""
    source = compiled_candidate(prover, task, candidate, build)
    audit: AxiomAudit = prover.audit_axioms(task, build, source, 300)
    return audit


def test_a_candidate_cannot_widen_the_declared_axioms(tmp_path: Path) -> None:
    """With `PA.Found.ext` declared, an axiom the candidate brings is still outside the rule: a new `Axiom` of the same
    short name, an `Admitted` helper, the same short name in a module of its own, and — before the real axiom in its
    own file — an `Axiom` with the declared axiom's very kernel name. Each refused by the verifier and by the kernel
    judge alone."""
    tasks, prover = _setup(tmp_path, DECLARED)
    fun_eq, early = tasks["fun_eq"], tasks["early"]
    honest = prover.candidate_with_proof(fun_eq, "apply ext. intros n. symmetry. apply plus_n_O. Qed.")
    verdict = verify_candidate(fun_eq, prover, honest.encode(), timeout=300)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason
    attacks = {
        "same short name": (fun_eq, f"Axiom ext : {EXT}.\n", "apply ext. intros n. symmetry. apply plus_n_O. Qed."),
        "admitted helper": (fun_eq, f"Lemma ext2 : {EXT}.\nAdmitted.\n",
                            "apply ext2. intros n. symmetry. apply plus_n_O. Qed."),
        "in a module": (fun_eq, f"Module Found.\nAxiom ext : {EXT}.\nEnd Found.\n",
                        "apply Found.ext. intros n. symmetry. apply plus_n_O. Qed."),
        "the declared kernel name": (early, "Axiom ext : forall n : nat, n = n.\n", "exact ext. Qed."),
    }
    for what, (task, helper, proof) in attacks.items():
        text = prover.candidate_with_proof(task, proof)
        cut = int(task.meta["statement_offset"])
        attack = text[:cut] + helper + text[cut:]
        verdict = verify_candidate(task, prover, attack.encode(), timeout=300)
        assert verdict.verdict == "reject" and not verdict.strict, (what, verdict.reason)
        audit = _kernel_audit(prover, task, attack, tmp_path / f"kernel-{what.replace(' ', '-')}")
        assert audit.ok and not audit.rules_ok and not audit.strict_ok and not audit.project_axioms, (what, audit)
    # the helper really has the declared axiom's kernel name, and only the baseline's axiom counts
    assert audit.axioms == ["PA.Found.ext"], audit.axioms


def test_declared_project_axioms_make_a_proof_strict(tmp_path: Path) -> None:
    """Without the option a proof through the project's own axiom (another file's, this file's before the target, an
    admitted lemma) is rules-only; declared, it is strict and the audit names the declared axioms it rests on."""
    tasks, plain = _setup(tmp_path, [])
    _, declared = _setup(tmp_path, DECLARED)
    for name, rests_on in {"fun_eq": ["PA.Found.ext"], "after_ext": ["PA.Found.ext"],
                           "twice": ["PA.Found.half"], "plain": []}.items():
        task = tasks[name]
        own = str(task.meta["own_candidate"]).encode()
        before = verify_candidate(task, plain, own, timeout=300)
        after = verify_candidate(task, declared, own, timeout=300)
        assert before.verdict == after.verdict == "accept", (name, before.reason, after.reason)
        assert before.strict == (not rests_on) and after.strict, name
        audit = next(layer for layer in after.layers if layer.name == "axiom_audit")
        assert audit.evidence.get("project_axioms", []) == rests_on, (name, audit.evidence)
    # a verdict judged under another declaration is never served from the cache (the declaration is in its key)
    task, data = tasks["fun_eq"], b"x"
    assert cache_key(task, plain, data, {}) != cache_key(task, declared, data, {})


@pytest.mark.parametrize(("name", "says"), [
    ("PA.Found.early", "Found.v has it as an opaque declaration, not an axiom"),
    ("PA.Found.nothing", "no file of the project declares it"),
    ("PA.Other.ax", "no file of the project has a logical name it extends"),
])
def test_a_declared_name_the_build_does_not_have_as_an_axiom_is_infra(tmp_path: Path, name: str, says: str) -> None:
    tasks, prover = _setup(tmp_path, ["PA.Found.ext", name])
    task = tasks["plain"]
    verdict = verify_candidate(task, prover, str(task.meta["own_candidate"]).encode(), timeout=300)
    assert verdict.verdict == "infra", verdict.reason
    assert "--forall-project-axioms" in verdict.reason and f"`{name}`: {says}" in verdict.reason, verdict.reason
    with pytest.raises(ValueError, match="forall-project-axioms"):
        prover.fingerprint(task)  # nothing is served from the verdict cache either


def test_the_option_end_to_end(pytester: pytest.Pytester) -> None:
    """Malformed values are one usage error (exit 4) naming the option; declared, every proof is strict and
    `--forall-require strict` passes, each row naming the declared axioms it rests on; the gate names a changed
    declaration; a name the build does not have as an axiom makes every item infra."""
    require_tool("coqc")
    shutil.copytree(FIXTURE, pytester.path / "proj")
    pytester.makeini("[pytest]\n")
    common = [*BASE, "--forall-project", "proj", "--forall-frontend", "replay", "-m", "not admitted"]
    for bad, says in [("ext", "'ext' is not a fully qualified kernel name"),
                      ("Coq.Logic.Classical_Prop.classic", "is not under the project's logical names (PA)")]:
        run = pytester.runpytest(*common, "--forall-project-axioms", bad)
        assert run.ret == 4, run.stdout.str()[-2000:]
        assert "--forall-project-axioms" in run.stderr.str() and says in run.stderr.str(), run.stderr.str()
    run = pytester.runpytest(*BASE, "--forall-project-axioms", "PA.Found.ext")
    assert run.ret == 4 and "declared project axioms need --forall-project" in run.stderr.str(), run.stderr.str()
    pytester.makeini("[pytest]\nforall_project_axioms =\n    PA.Found.ext\n    PA.Found.\n")
    run = pytester.runpytest(*common)
    assert run.ret == 4 and "ini option forall_project_axioms: 'PA.Found.' is not a fully qualified" in \
        run.stderr.str(), run.stderr.str()
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*common, "--forall-run-id", "rules", "--forall-require", "strict")
    assert run.ret == 1
    run = pytester.runpytest(*common, "--forall-run-id", "strict", "--forall-require", "strict",
                             "--forall-project-axioms", "PA.Found.ext,PA.Found.half",
                             "--forall-baseline", "reports/rules")
    assert run.ret == 0, run.stdout.str()[-3000:]
    rows = {r["task_id"]: r for r in map(json.loads, (pytester.path / "reports" / "strict" / "results.jsonl")
                                         .read_text().splitlines())}
    assert {r["outcome"] for r in rows.values()} == {"strict"}, rows
    assert rows["PA__Use__fun_eq"]["project_axioms"] == ["PA.Found.ext"]
    assert rows["PA__Use__twice"]["project_axioms"] == ["PA.Found.half"]
    assert rows["PA__Use__plain"]["project_axioms"] == []
    assert rows["PA__Use__fun_eq"]["declared_axioms"] == "PA.Found.ext PA.Found.half"
    assert "the declared project axioms changed" in rows["PA__Use__fun_eq"]["change_cause"], rows["PA__Use__fun_eq"]
    run = pytester.runpytest(*common, "--forall-run-id", "wrong", "--forall-project-axioms", "PA.Found.early")
    wrong = [json.loads(line) for line in (pytester.path / "reports" / "wrong" / "results.jsonl").read_text()
             .splitlines()]
    assert run.ret != 0 and wrong and all(r["outcome"] == "infra" and "`PA.Found.early`" in r["reason"]
                                          for r in wrong), wrong


def test_the_gate_names_a_changed_declaration() -> None:
    same = {"kernel_statement": "s", "kernel_context": "c", "kernel_lemmas": "l", "proof_digest": "p",
            "environment": "e", "verifier": "v"}
    assert cause(same, {**same, "declared_axioms": "PA.Found.ext"}) == "the declared project axioms changed"
    assert cause(same, same) == "nothing recorded changed"
