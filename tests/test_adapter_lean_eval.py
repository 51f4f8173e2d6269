"""Lean Eval adapter on the five real workspaces in ../shared/benchmarks/lean-eval/generated.

No Lean, comparator, landrun, lean4export or nanoda here: scoring must end as `infra` with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import SHARED
from pytest_forall.core import workspace as ws
from pytest_forall.core.model import Task, sha256_bytes
from pytest_forall.core.workspace import bundle_bytes, parse_bundle, protected_changes, read_task_candidate
from pytest_forall.suites.lean_eval import LeanEvalProver, load_tasks

REPO = Path(__file__).resolve().parents[1]
LEAN_EVAL = SHARED / "benchmarks" / "lean-eval"
PROBLEMS = ["coc_strong_normalization", "list_append_singleton_length", "permute_to_unimodal",
            "rcf_quantifier_elimination", "two_plus_two"]
MANIFEST = REPO / "benchmarks" / "lean-eval" / "lean-eval.forall.toml"
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--forall-sandbox", "none"]


@pytest.fixture(scope="module")
def tasks() -> dict[str, object]:
    if not (LEAN_EVAL / "generated").is_dir():
        pytest.fail(f"Lean Eval data not found at {LEAN_EVAL}")
    return {t.task_id: t for t in load_tasks(LEAN_EVAL)}


@pytest.mark.parametrize("problem", PROBLEMS)
def test_sanitized_workspace_of_each_real_problem(problem: str, tasks: dict, tmp_path: Path) -> None:
    task = tasks[problem]
    source = LEAN_EVAL / "generated" / problem
    assert not task.problem and task.prover == "lean-eval" and task.candidate_name == "Submission.lean"
    workspace = ws.prepare(tmp_path, "w", task, reset=True)
    present = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*") if p.is_file())
    expected = {"Challenge.lean", "Submission.lean", "Submission/Helpers.lean", "config.json", "holes.json",
                "lakefile.toml", "lean-toolchain", "README.md", "TASK.md"}
    if (source / "ChallengeDeps.lean").is_file():
        expected.add("ChallengeDeps.lean")
    assert set(present) == expected
    assert (source / "Solution.lean").is_file() and not (workspace / "Solution.lean").exists()  # the reference stays out
    assert not (workspace / "WorkspaceTest.lean").exists() and not (workspace / ".git").exists()
    assert not (workspace / ".lake").exists()
    for name in expected - {"TASK.md"}:  # everything else is byte-identical to the benchmark's
        assert (workspace / name).read_bytes() == (source / name).read_bytes(), name
    holes = json.loads((source / "holes.json").read_text())["holes"]
    brief = (workspace / "TASK.md").read_text()
    assert all(f"`{h['kind']} {h['basename']}`" in brief for h in holes)
    config = json.loads((source / "config.json").read_text())
    assert task.meta["theorem_names"] == config["theorem_names"]
    assert task.meta["retrieval_exclude"] == [h["name"] for h in holes]
    assert protected_changes(workspace, task) == []


def test_digest_is_the_canonical_bundle_of_submission_files(tasks: dict, tmp_path: Path) -> None:
    task = tasks["two_plus_two"]
    workspace = ws.prepare(tmp_path, "w", task, reset=True)
    data = read_task_candidate(workspace, task)
    source = LEAN_EVAL / "generated" / "two_plus_two"
    files = {"Submission.lean": (source / "Submission.lean").read_bytes(),
             "Submission/Helpers.lean": (source / "Submission" / "Helpers.lean").read_bytes()}
    assert data == bundle_bytes(files) and parse_bundle(data) == files
    # sorted relative paths, each with its length and bytes: order-independent, sensitive to every byte
    assert data == (b"Submission.lean\0" + str(len(files["Submission.lean"])).encode() + b"\0"
                    + files["Submission.lean"] + b"Submission/Helpers.lean\0"
                    + str(len(files["Submission/Helpers.lean"])).encode() + b"\0" + files["Submission/Helpers.lean"])
    before = sha256_bytes(data)
    (workspace / "Submission" / "Extra.lean").write_text("theorem extra : True := trivial\n")
    assert sha256_bytes(read_task_candidate(workspace, task)) != before
    (workspace / "Submission" / "Extra.lean").unlink()
    (workspace / "Submission.lean").write_text((workspace / "Submission.lean").read_text() + " ")
    assert sha256_bytes(read_task_candidate(workspace, task)) != before
    for broken in (data[:-1], data + b"x", bundle_bytes({"b": b""})[::-1],
                   b"b\x000\x00" + b"a\x000\x00"):  # truncated, trailing junk, garbage, unsorted
        with pytest.raises(ValueError):
            parse_bundle(broken)


def test_changes_outside_the_submission_are_detected(tasks: dict, tmp_path: Path) -> None:
    task = tasks["permute_to_unimodal"]
    workspace = ws.prepare(tmp_path, "w", task, reset=True)
    (workspace / "Submission.lean").write_text("-- edited\n")
    (workspace / "Submission" / "More.lean").write_text("-- new helper\n")
    (workspace / ".lake" / "build").mkdir(parents=True)  # build output of the agent's own `lake build`
    (workspace / "TASK.md").write_text("notes\n")
    assert protected_changes(workspace, task) == []  # submission edits, .lake and our TASK.md are fine
    (workspace / "NOTES.md").write_text("scratch\n")
    assert protected_changes(workspace, task) == ["added NOTES.md"]  # nothing else may be added
    (workspace / "Challenge.lean").write_text((workspace / "Challenge.lean").read_text().replace("theorem", "axiom"))
    (workspace / "holes.json").unlink()
    (workspace / "Solution.lean").write_text("-- planted\n")
    os.symlink("/etc/passwd", workspace / "config2.json")
    changes = protected_changes(workspace, task)
    assert "modified Challenge.lean" in changes and "removed holes.json" in changes
    assert "added Solution.lean" in changes and "added config2.json" in changes


def test_static_layer_on_bundles(tasks: dict) -> None:
    task = tasks["two_plus_two"]
    prover = LeanEvalProver({})
    good = bundle_bytes({"Submission.lean": b"theorem two_plus_two_eq_four : 2 + 2 = 4 := by decide\n"})
    assert [layer.ok for layer in prover.static_layers(task, good.decode())] == [True]
    bad = bundle_bytes({"Submission.lean": b"theorem t : 2 + 2 = 4 := by sorry\n", "Challenge.lean": b"--\n"})
    (layer,) = prover.static_layers(task, bad.decode())
    assert not layer.ok and "not a submission file: Challenge.lean" in layer.reason and "sorry" in layer.reason


def test_scoring_is_infra_without_comparator(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    for name in ("FORALL_LEAN_BIN", "COMPARATOR_BIN", "LEAN_EVAL_ROOT"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\n")
    pytester.makefile(".forall.toml", **{"lean-eval": MANIFEST.read_text()})
    run = pytester.runpytest(*BASE)
    run.stdout.fnmatch_lines(["*Lean Eval location not set: pass --forall-lean-eval-root*"])
    proofs = pytester.path / "proofs"
    proofs.mkdir()
    run = pytester.runpytest(*BASE, f"--forall-lean-eval-root={LEAN_EVAL}", "--forall-frontend", "replay",
                             f"--forall-proofs={proofs}", "--forall-run-id", "r")
    rows = [json.loads(line) for line in (pytester.path / "reports" / "r" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == PROBLEMS
    assert {r["outcome"] for r in rows} == {"infra"}
    assert all("Lean toolchain not found" in r["reason"] for r in rows)
    assert run.ret == 75
    # with a (fake) Lean toolchain but no comparator, the reason names comparator and its companions
    fake = pytester.path / "bin"
    fake.mkdir()
    for tool in ("lake", "lean"):
        (fake / tool).write_text("#!/bin/sh\nexit 0\n")
        (fake / tool).chmod(0o755)
    prover = LeanEvalProver({"lean_bin": str(fake)})
    problem = prover.probe(pytester.path)
    assert problem.startswith("comparator is not installed: missing comparator") and "lean4export" in problem
    assert "landrun" in problem and "SECURITY.md" in problem
    shutil.rmtree(fake)


TAMPER_CONFTEST = '''
import pytest
from pytest_forall.core.actor import TurnResult
from pytest_forall.core.model import Layer
from pytest_forall.core.prover import AxiomAudit, CompileResult


class Tamper:
    """Round 1 edits Challenge.lean (and the submission); round 2 restores it."""
    session_id = "tamper"

    def __init__(self, ctx):
        self.ctx, self.turns = ctx, 0

    def turn(self, prompt, *, timeout):
        self.turns += 1
        challenge = self.ctx.workspace / "Challenge.lean"
        (self.ctx.workspace / "Submission.lean").write_text("-- proved\\n")
        if self.turns == 1:
            self.original = challenge.read_text()
            challenge.write_text(self.original.replace("= 4", "= 5"))
        else:
            assert "Challenge.lean" in prompt  # the rejection was fed back
            challenge.write_text(self.original)
        return TurnResult(session_id="tamper")

    def close(self):
        pass


class Frontend:
    name, is_agent = "tamper", False
    def probe(self): return ""
    def start(self, ctx): return Tamper(ctx)


class Prover:
    """Accepts any bundle (this test is about the workspace rule, not about Lean)."""
    name, ext = "fake-lean-eval", "lean"
    def probe(self, workspace): return ""
    def check_template(self, task, workspace, timeout): return CompileResult(ok=True)
    def compile(self, task, workspace, candidate, timeout):
        from pytest_forall.core.model import sha256_bytes
        return CompileResult(ok=True, digest=sha256_bytes(candidate.read_bytes()))
    def audit_axioms(self, task, workspace, candidate, timeout):
        return AxiomAudit(ok=True, strict_ok=True, rules_ok=True)
    def independent_check(self, task, workspace, candidate, timeout): return Layer("independent_check", None)
    def static_layers(self, task, text): return []


@pytest.hookimpl(tryfirst=True)
def pytest_forall_make_frontend(name, options):
    return Frontend() if name == "tamper" else None


@pytest.hookimpl(tryfirst=True)
def pytest_forall_make_prover(name, options):
    return Prover() if name == "lean-eval" else None
'''


def test_a_change_outside_the_submission_rejects_the_round(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makeconftest(TAMPER_CONFTEST)
    pytester.makefile(".forall.toml", **{"lean-eval": 'problems = ["two_plus_two"]\n' + MANIFEST.read_text()})
    run = pytester.runpytest(*BASE, f"--forall-lean-eval-root={LEAN_EVAL}", "--forall-frontend", "tamper",
                             "--forall-run-id", "r")
    (row,) = [json.loads(line) for line in (pytester.path / "reports" / "r" / "results.jsonl").read_text().splitlines()]
    assert row["outcome"] == "strict" and row["rounds"] == 2, row
    events = [json.loads(line) for line in (Path(row["audit_dir"]) / "events.jsonl").read_text().splitlines()]
    rejected = [e for e in events if e.get("kind") == "submission" and e["verdict"] == "reject"]
    assert rejected and rejected[0]["reason"] == "files outside the submission changed: modified Challenge.lean"
    accepted = (Path(row["audit_dir"]) / "accepted" / "Submission.lean").read_bytes()
    assert parse_bundle(accepted)["Submission.lean"] == b"-- proved\n" and row["digest"] == sha256_bytes(accepted)
    assert run.ret == 0


def test_scoring_forces_nanoda_like_lean_evals_lake_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lean Eval's WorkspaceTest sets enable_nanoda := true whatever config.json says (lean-facts N1)."""
    score = tmp_path / "score"
    score.mkdir()
    (score / "config.json").write_text(json.dumps({"theorem_names": ["t"], "enable_nanoda": False}))
    fake = tmp_path / "bin"
    fake.mkdir()
    seen = tmp_path / "seen.json"
    for tool in ("comparator", "landrun", "lean4export", "lean"):
        (fake / tool).write_text("#!/bin/sh\nexit 0\n")
        (fake / tool).chmod(0o755)
    (fake / "lake").write_text(f"#!/bin/sh\ncp \"$3\" {seen}\nexit 0\n")
    (fake / "lake").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    for name in ("COMPARATOR_BIN", "COMPARATOR_NANODA", "FORALL_LEAN_BIN"):
        monkeypatch.delenv(name, raising=False)
    prover = LeanEvalProver({})
    result = prover._comparator(Task("t", "lean-eval", "lean4", "lean-eval", "", ""), score, 30)
    assert "nanoda_bin is not installed" in result["infra"] and not seen.exists()
    (fake / "nanoda_bin").write_text("#!/bin/sh\nexit 0\n")
    (fake / "nanoda_bin").chmod(0o755)
    result = prover._comparator(Task("t", "lean-eval", "lean4", "lean-eval", "", ""), score, 30)
    assert result["returncode"] == 0 and result["nanoda"] is True
    assert json.loads(seen.read_text())["enable_nanoda"] is True
