"""Any project as real projects are written: proofs inside sections and modules, judged against the project's own
build (the item's context is the project itself, issue 18), the portfolio with the project's load path, and --lf."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import copy_project_cache, require_tool
from pytest_forall.core.model import Layer, Task
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import NOT_ITEMS, load_project

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BLOCKS = FIXTURES / "project_rocq_sections"


def compiled_candidate(prover: ProjectRocqProver, task: Task, candidate: str, build: Path) -> Path:
    """``candidate`` compiled as the target's file in ``build`` (the project's template checked first): its source."""
    build.mkdir(parents=True, exist_ok=True)
    assert prover.check_template(task, build, 300).ok
    (build / "cand").mkdir(exist_ok=True)
    source = build / "cand" / task.candidate_name
    source.write_text(candidate)
    compiled = prover.compile(task, build, source, 300)
    assert compiled.ok, compiled.first_error
    return source


def kernel_statement(prover: ProjectRocqProver, task: Task, candidate: str, build: Path) -> Layer:
    """The kernel judge alone on ``candidate`` (no text screen): compile it as the target's file, compare."""
    compiled_candidate(prover, task, candidate, build)
    return prover.statement_check(task, build, 300)


def test_proofs_in_sections_and_modules_are_items(tmp_path: Path) -> None:
    tasks = {t.task_id: t for t in load_project(BLOCKS, {})}
    assert sorted(tasks) == ["Sec__Blocks__Geometry__Inner__same", "Sec__Blocks__Geometry__sq_0",
                             "Sec__Blocks__m_pos", "Sec__Blocks__n_le_m", "Sec__Blocks__pred_lt", "Sec__Blocks__top"]
    n_le_m = tasks["Sec__Blocks__n_le_m"]
    text = (BLOCKS / "theories" / "Blocks.v").read_text()
    # the file itself up to the statement; an admitted section lemma's hole says what the project states
    # (Coq generalises an admitted lemma over every section variable)
    assert n_le_m.template == (text[:text.index("Lemma n_le_m")] + "Lemma n_le_m : n <= m.\nProof using All.\n"
                               "Admitted.\nEnd Counting.\n")
    same = tasks["Sec__Blocks__Geometry__Inner__same"]
    assert same.meta["qualified_name"] == "Sec.Blocks.Geometry.Inner.same"  # modules name it, sections do not
    assert same.template.endswith("Admitted.\nEnd WithContext.\nEnd Inner.\nEnd Geometry.\n")
    listed = dict(NOT_ITEMS[str(BLOCKS)])
    assert list(listed) == ["Sec.Blocks.Doubled.twice_pos"]
    assert listed["Sec.Blocks.Doubled.twice_pos"].startswith(
        "inside the functor `Doubled` (`Module Doubled (…)`): its proofs are fields of the functor's body")


def test_section_items_are_stated_as_the_project_states_them(tmp_path: Path,
                                                            built_project_cache: Callable[[Path], Path]) -> None:
    """Honest proofs are strict (rules-only after the file's functor); the candidate's lemma after `End` must have the project's type as a kernel term,
    so a proof generalised over fewer section variables than the project's lemma is not that lemma."""
    require_tool("coqc")
    project = tmp_path / "proj"
    shutil.copytree(BLOCKS, project)
    tasks = {t.task_id: t for t in load_project(project, {})}
    copy_project_cache(built_project_cache(BLOCKS), tmp_path / "cache")  # built as ever: the claims are the proofs'
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    proofs = {"Sec__Blocks__n_le_m": "unfold m. lia.", "Sec__Blocks__pred_lt": "lia.",
              "Sec__Blocks__Geometry__sq_0": "reflexivity.", "Sec__Blocks__Geometry__Inner__same": "reflexivity.",
              "Sec__Blocks__top": "reflexivity.", "Sec__Blocks__m_pos": "unfold m. lia."}
    for task_id, proof in proofs.items():
        task = tasks[task_id]
        candidate = prover.candidate_with_proof(task, f"{proof}\nQed.")
        verdict = verify_candidate(task, prover, candidate.encode(), timeout=300)
        # `top` follows the module type `Shape` and the functor `Doubled`: the module advisories are not covered for
        # it (docs/verifier.md, "The module walk"), rules-only; the others come before them, strict
        after = task_id == "Sec__Blocks__top"
        assert verdict.verdict == "accept" and verdict.strict is not after, (task_id, verdict.reason)
        assert after is any(how.startswith("NOT covered (functor)") for how in verdict.kernel["coverage"].values())
    task = tasks["Sec__Blocks__n_le_m"]
    fewer = prover.candidate_with_proof(task, "unfold m. lia.\nQed.").replace("Proof using All.", "Proof.")
    verdict = verify_candidate(task, prover, fewer.encode(), timeout=300)
    assert verdict.verdict == "reject" and verdict.reason.startswith("elaborated_statement: the type of `n_le_m` "
                                                                     "differs from the project's"), verdict.reason


@pytest.mark.parametrize("cheat, caught", [
    ("strengthen", "frozen_statement"),     # a hypothesis of the section's context made stronger
    ("hypothesis", "syntax_screen"),        # an extra hypothesis added to the section
])
def test_section_context_cannot_be_changed(tmp_path: Path, cheat: str, caught: str,
                                          built_project_cache: Callable[[Path], Path]) -> None:
    """The screen refuses both; the kernel judge alone refuses both too (the guarantee does not rest on text)."""
    require_tool("coqc")
    task = {t.task_id: t for t in load_project(BLOCKS, {})}["Sec__Blocks__pred_lt"]
    copy_project_cache(built_project_cache(BLOCKS), tmp_path / "cache")  # built as ever: the claims are the cheats'
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    candidate = prover.candidate_with_proof(task, "lia.\nQed.")
    candidate = {"strengthen": candidate.replace("Hypothesis Hn : 0 < n.", "Hypothesis Hn : 1 < n."),
                 "hypothesis": candidate.replace("Lemma pred_lt", "Hypothesis H2 : 1 < n.\nLemma pred_lt")}[cheat]
    verdict = verify_candidate(task, prover, candidate.encode(), timeout=300)
    assert verdict.verdict == "reject" and verdict.reason.startswith(caught), verdict.reason
    layer = kernel_statement(prover, task, candidate, tmp_path / "kernel")
    assert layer.ok is False and "differ" in layer.reason, layer.reason


def test_last_failed_selects_project_items(pytester: pytest.Pytester) -> None:
    """``--lf`` re-runs exactly the failed project item, also when the project is the rootdir itself
    (its items' node ids then start with ``./project.forall.toml``)."""
    require_tool("coqc")
    shutil.copytree(BLOCKS, pytester.path, dirs_exist_ok=True)
    tasks = {t.task_id: t for t in load_project(pytester.path, {})}
    store = pytester.path / "store"
    store.mkdir()
    sq_0 = tasks["Sec__Blocks__Geometry__sq_0"]
    prover = ProjectRocqProver({"cache_dir": str(pytester.path / "c")})
    (store / sq_0.candidate_name).write_text(prover.candidate_with_proof(sq_0, "reflexivity.\nQed."))
    (store / "Sec__Blocks__top.v").write_text("not a proof\n")
    pytester.makeini("[pytest]\n")
    args = ["-p", "no:hypothesispytest", "--forall-project", ".", "--forall-frontend", "replay",
            "--forall-proofs", "store", "-k", "top or sq_0"]
    pytester.runpytest(*args).assert_outcomes(failed=1, passed=1)
    again = pytester.runpytest(*args, "--lf", "--collect-only", "-q")
    assert [line for line in again.outlines if "::" in line] == ["./project.forall.toml::Sec__Blocks__top[coq]"]


def test_a_statement_over_a_section_definition_is_a_real_item(tmp_path: Path) -> None:
    """A lemma over a section-local definition is stated by Coq in the file itself: nothing to abbreviate."""
    require_tool("coqc")
    (tmp_path / "_CoqProject").write_text("-R . Defs\nA.v\n")
    (tmp_path / "A.v").write_text("Section S.\n  Variable n : nat.\n  Definition f := n + 1.\n"
                                  "  Lemma l : f = n + 1.\n  Proof.\n  Admitted.\nEnd S.\n")
    task = load_project(tmp_path, {})[0]
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    assert prover.check_template(task, tmp_path / "b", 300).ok
    verdict = verify_candidate(task, prover, prover.candidate_with_proof(task, "reflexivity.\nQed.").encode(),
                               timeout=300)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason


def test_the_portfolio_proves_project_items_with_its_requires_where_helpers_go(pytester: pytest.Pytester) -> None:
    """The portfolio's `Require` prelude goes right before the statement (never before the project's text), inside
    the item's section or module; its proofs are strict."""
    require_tool("coqc")
    shutil.copytree(BLOCKS, pytester.path / "proj")
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--forall-project=proj",
                             "--forall-frontend=portfolio", "--forall-run-id=p", "-k", "sq_0 or n_le_m")
    rows = [json.loads(line) for line in (pytester.path / "reports" / "p" / "results.jsonl").read_text().splitlines()]
    assert {r["task_id"]: r["outcome"] for r in rows} == {"Sec__Blocks__Geometry__sq_0": "strict",
                                                         "Sec__Blocks__n_le_m": "strict"}, run.stdout.str()[-2000:]
