"""Lean cheats through the verifier: the static layers (now wired into the Lean backend) and the stand-in
`lean`/`lake` (tests/standin) for the prover layers. Real Lean was not available; see docs/lean.md.

Every candidate is built from a real PutnamBench Lean template (the answer-given rewrite for `abbrev`
problems). Each class names the layer that must reject it; where the static layers reject first, a second
check with them switched off shows the prover layer that still holds, or the test says that none does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import PUTNAM, standin_lean_project
from pytest_forall.core.model import Layer
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.lean.backend import LeanProver

STANDIN = Path(__file__).resolve().parent / "standin"
BASE_PATH = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
SRC = PUTNAM / "lean4" / "src"


@pytest.fixture(autouse=True)
def standin_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{STANDIN}{os.pathsep}{BASE_PATH}")
    for name in ("FORALL_LEAN_BIN", "LEAN_PATH", "STANDIN_LEAN_VERSION", "STANDIN_LOG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A Lake project shaped like lean_env/putnam with a stand-in Mathlib build."""
    return standin_lean_project(tmp_path / "project")


class NoStatic(LeanProver):
    def static_layers(self, task: Any, text: str) -> list[Layer]:
        return []


def task(problem: str) -> Any:
    return task_from_template("lean", SRC / f"{problem}.lean")


def candidate(problem: str, proof: str, before: str = "", replace: tuple[str, str] = ("", "")) -> str:
    text = task(problem).template
    if replace[0]:
        assert replace[0] in text, replace[0]
        text = text.replace(*replace)
    hole = text.rindex("sorry")
    theorem = text.index("theorem ")
    doc = text.rfind("/--", 0, theorem)
    insert_at = doc if doc != -1 and "-/" in text[doc:theorem] else theorem
    return text[:insert_at] + before + text[insert_at:hole] + proof + text[hole + len("sorry"):]


A1 = "putnam_2001_a1"
A1_PROOF = "by\n  intro a b\n  simpa using hS (b * a) b"
A2 = "putnam_1986_a2"

CHEATS = {
    # name: (problem, text, first layer, prover layer that holds with the static layers off or None)
    "sorry": (A1, candidate(A1, "sorry"), "syntax_screen", "elaboration"),
    "sorry_in_helper": (A1, candidate(A1, "by exact helper S hS", "theorem helper (S : Type*) [Mul S] "
                                          "(hS : ∀ a b : S, (a * b) * a = b) : ∀ a b : S, a * (b * a) = b := sorry\n\n"),
                        "syntax_screen", "elaboration"),
    "axiom": (A1, candidate(A1, "by exact cheat S hS", "axiom cheat (S : Type*) [Mul S] "
                                "(hS : ∀ a b : S, (a * b) * a = b) : ∀ a b : S, a * (b * a) = b\n\n"),
              "syntax_screen", "axiom_audit"),
    "native_decide": (A2, candidate(A2, "by native_decide"), "syntax_screen", "axiom_audit"),
    "axiom_inside_tactic_block": (A1, candidate(A1, "by\n  intro a b\n  exact cheat\naxiom cheat : False"),
                                  "syntax_screen", None),
    "set_option_unsafe": (A1, candidate(A1, A1_PROOF, "set_option debug.skipKernelTC true\n\n"),
                          "syntax_screen", None),
    "answer_tampered": (A2, candidate(A2, "by rfl", replace=("putnam_1986_a2_solution : ℕ := 3",
                                                             "putnam_1986_a2_solution : ℕ := 4")),
                        "frozen_statement", "elaborated_statement"),
    "theorem_renamed": (A1, candidate(A1, A1_PROOF, replace=("theorem putnam_2001_a1", "theorem putnam_2001_a1'")),
                        "frozen_statement", "elaborated_statement"),
    "hypothesis_added": (A1, candidate(A1, "by exact h", replace=(": ∀ a b : S, a * (b * a) = b :=",
                                                                  "(h : ∀ a b : S, a * (b * a) = b)\n: ∀ a b : S, a * (b * a) = b :=")),
                         "frozen_statement", "elaborated_statement"),
    "shadowing_def": (A1, candidate(A1, "by intro a b; trivial", "def _root_.Mul (α : Type) : Type := α\n\n"),
                      "shadowing_guard", "elaborated_statement"),
    # `/--` is a token: the doc comment runs to the `-/` in the `--` comment; Lean sees `theorem … : True`
    "doc_comment_token_slash": (A1, candidate(A1, "by simp -- -/ theorem putnam_2001_a1 : True := trivial",
                                              "/--/\n"), "frozen_statement", "elaborated_statement"),
    "local_notation": (A1, candidate(A1, A1_PROOF, "local notation a \" * \" b => a\n\n"), "shadowing_guard", None),
    "instance_inserted": (A1, candidate(A1, A1_PROOF, "instance : Mul ℕ := ⟨fun a _ => a⟩\n\n"), "shadowing_guard",
                          None),
    "open_inserted": (A1, candidate(A1, A1_PROOF, "open Classical\n\n"), "shadowing_guard", None),
    "zero_width": (A1, candidate(A1, A1_PROOF.replace("intro a b", "intro a\u200b b")), "syntax_screen", None),
    "elab_rules": (A1, candidate(A1, A1_PROOF, "elab \"cheat\" : tactic => Lean.Elab.admitGoal\n\n"),
                   "syntax_screen", None),
    "empty": (A1, "", "frozen_statement", None),
}


def first_failure(verdict: Any) -> str:
    return next(layer.name for layer in verdict.layers if layer.ok is False or layer.infra)


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_lean_cheat_is_rejected_by_its_layer(name: str, project: Path) -> None:
    problem, text, layer, later = CHEATS[name]
    verdict = verify_candidate(task(problem), LeanProver({"lean_project": str(project)}), text.encode(),
                               timeout=60)
    assert verdict.verdict == "reject" and first_failure(verdict) == layer, verdict.reason
    if later is not None:
        off = verify_candidate(task(problem), NoStatic({"lean_project": str(project)}), text.encode(), timeout=60)
        assert off.verdict == "reject" and first_failure(off) == later, off.reason


def test_lean_valid_proof_is_accepted_end_to_end_through_the_standin(project: Path) -> None:
    for text in (candidate(A1, A1_PROOF), candidate(A1, A1_PROOF).replace("\n", "\r\n"),
                 candidate(A1, A1_PROOF, "theorem my_axiom_free_helper : True := trivial\n\n")):
        verdict = verify_candidate(task(A1), LeanProver({"lean_project": str(project)}), text.encode(), timeout=60)
        assert verdict.verdict == "accept" and verdict.strict, verdict.reason
        assert [layer.name for layer in verdict.layers][:3] == ["syntax_screen", "frozen_statement",
                                                                  "shadowing_guard"]


def test_elaborated_statement_layer_passes_the_real_statement(project: Path) -> None:
    """The dump comparison (stand-in terms, not Lean's) is part of every accepted Lean verdict."""
    verdict = verify_candidate(task(A2), LeanProver({"lean_project": str(project)}), candidate(A2, "by rfl").encode(),
                               timeout=60)
    layer = next(layer for layer in verdict.layers if layer.name == "elaborated_statement")
    assert layer.ok is True and layer.evidence["declarations"] == 2  # the theorem and its `_solution` abbrev


def test_elan_leanchecker_proxy_on_path_does_not_reject_a_valid_candidate(project: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """elan puts a `leanchecker` proxy on PATH for every toolchain; on v4.27 it fails [lean-facts E1-E4, C5]."""
    elan_bin = tmp_path / "elan" / "bin"
    elan_bin.mkdir(parents=True)
    for tool in ("lake", "lean", "leanchecker"):
        (elan_bin / tool).symlink_to(STANDIN / "elan-proxy")
    monkeypatch.setenv("STANDIN_ELAN_TOOLCHAIN", str(STANDIN))
    monkeypatch.setenv("PATH", f"{elan_bin}{os.pathsep}{BASE_PATH}")
    for options in ({}, {"lean_checker": str(elan_bin / "leanchecker")}):
        prover = LeanProver({"lean_project": str(project), **options})
        verdict = verify_candidate(task(A1), prover, candidate(A1, A1_PROOF).encode(), timeout=60)
        assert verdict.verdict == "accept", verdict.reason
        check = verdict.layers[-1]
        assert check.name == "independent_check" and check.ok is None and check.reason.startswith("not judged")


def test_per_candidate_cost_is_three_lean_processes(project: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/lean.md counts processes and module loads per candidate from this log (the stand-in's)."""
    toolchain = tmp_path / "toolchain"
    (toolchain / "bin").mkdir(parents=True)
    for name in ("lean", "lake"):
        (toolchain / "bin" / name).symlink_to(STANDIN / name)
    (toolchain / "bin" / "leanchecker").symlink_to(STANDIN / "checker" / "leanchecker")
    monkeypatch.setenv("PATH", f"{toolchain / 'bin'}{os.pathsep}{BASE_PATH}")
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    prover = LeanProver({"lean_project": str(project), "cache_dir": str(tmp_path / "cache")})
    first = verify_candidate(task(A1), prover, candidate(A1, A1_PROOF).encode(), timeout=60)
    setup = len(log.read_text().splitlines())
    second = verify_candidate(task(A1), prover, candidate(A1, A1_PROOF + "\n").encode(), timeout=60)
    assert first.verdict == second.verdict == "accept" and second.layers[-1].ok is True
    calls = [json.loads(line) for line in log.read_text().splitlines()[setup:]]
    assert [c["tool"] for c in calls] == ["lean", "lean", "leanchecker"]  # elaborate, audit file, checker
    assert [c["loaded"].count("Mathlib") for c in calls] == [1, 1, 1] and calls[2]["replayed"] == [
        calls[2]["argv"][-1]]
    # the first candidate paid the per-process probe and the template (cached on disk for later processes)
    first_calls = [json.loads(line)["tool"] for line in log.read_text().splitlines()[:setup]]
    assert first_calls == ["lake", "lean", "lean", "lean", "lean", "leanchecker"]


def test_lean_static_layers_are_wired() -> None:
    layers = LeanProver().static_layers(task(A1), candidate(A1, "sorry"))
    assert [layer.name for layer in layers] == ["syntax_screen", "frozen_statement", "shadowing_guard"]
    assert layers[0].ok is False and "sorry" in layers[0].reason
