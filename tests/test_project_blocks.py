"""Any project as real projects are written: theorems inside sections and modules, the portfolio with the
project's load path, a copy of a real library (one of Coquelicot's files, as Debian ships it), and --lf."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import admit_lemmas, require_tool
from pytest_forall.core.audit import derived_tasks
from pytest_forall.core.verify import verify_candidate
from pytest_forall.suites.project import ProjectRocqProver, load_project

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BLOCKS = FIXTURES / "project_rocq_sections"
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
#: Debian's libcoq-coquelicot installs the library's sources next to the compiled files.
COQUELICOT = Path("/usr/lib/ocaml/coq/user-contrib/Coquelicot")
#: Five lemmas of Coquelicot's Equiv.v, each inside a `Section … Context {…}` of its own.
EQUIV_LEMMAS = ["equiv_refl", "equiv_carac_1", "is_domin_le", "equiv_scal", "domin_comp"]


def results(root: Path, run_id: str) -> dict[str, dict]:
    lines = (root / "reports" / run_id / "results.jsonl").read_text().splitlines()
    return {json.loads(line)["task_id"]: json.loads(line) for line in lines}


def test_theorems_in_sections_and_modules_are_items(tmp_path: Path) -> None:
    tasks = {t.task_id: t for t in load_project(BLOCKS, {})}
    assert sorted(tasks) == ["Sec__Blocks__Doubled__twice_pos", "Sec__Blocks__Geometry__Inner__same",
                             "Sec__Blocks__Geometry__sq_0", "Sec__Blocks__n_le_m", "Sec__Blocks__pred_lt",
                             "Sec__Blocks__top"]
    n_le_m = tasks["Sec__Blocks__n_le_m"]
    # the section is reopened with its context, verbatim; the proved lemma before it comes from the prefix,
    # abbreviated as it reads inside the section (tests/test_project_section_locals.py)
    assert ("Section Counting.\nVariable n : nat.\nHypothesis Hn : 0 < n.\nVariable unused : bool.\n"
            "Let m := n + 1.\nNotation m_pos := (ForallPrefix.Section_Sec__Blocks__n_le_m.m_pos n Hn unused).\n"
            "Set Default Proof Using \"All\".\n\nLemma n_le_m : n <= m.\nProof.\nAdmitted.\n"
            "End Counting.\n") in n_le_m.template
    assert "Lemma m_pos" not in n_le_m.template and "Lemma m_pos" in n_le_m.meta["prefix"]
    assert n_le_m.meta["prefix"].rstrip().endswith("End Counting.")  # the prefix closes what it opened
    same = tasks["Sec__Blocks__Geometry__Inner__same"]
    assert same.meta["qualified_name"] == "Sec.Blocks.Geometry.Inner.same"  # modules name it, sections do not
    assert "Import ForallPrefix.Prefix_Sec__Blocks__Geometry__Inner__same.Geometry.Inner." in same.template
    assert same.meta["prefix"].rstrip().endswith("End WithContext.\nEnd Inner.\nEnd Geometry.")
    assert "functor" in tasks["Sec__Blocks__Doubled__twice_pos"].meta["unsupported"]
    assert all(not t.meta["unsupported"] for k, t in tasks.items() if "Doubled" not in k)


def coq_type(tmp: Path, load: list[str], requires: str, name: str) -> str:
    probe = tmp / "probe.v"
    probe.write_text(f"{requires}\nSet Printing All.\nSet Printing Width 100000.\nCheck @{name}.\n")
    run = subprocess.run(["coqc", "-q", *load, str(probe)], capture_output=True, text=True, timeout=300, check=False,
                         cwd=tmp)
    assert run.returncode == 0, run.stdout + run.stderr
    return " ".join(run.stdout.split(":", 1)[1].split())


def test_section_items_are_generalised_as_coq_generalises_them(tmp_path: Path) -> None:
    """The candidate's theorem after `End` has exactly the type the project's own lemma has after `End`
    (Coq generalises an admitted lemma over every section variable); a proof that uses fewer passes."""
    require_tool("coqc")
    project = tmp_path / "proj"
    shutil.copytree(BLOCKS, project)
    tasks = {t.task_id: t for t in load_project(project, {})}
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    proofs = {"Sec__Blocks__n_le_m": "unfold m. lia.", "Sec__Blocks__pred_lt": "lia.",
              "Sec__Blocks__Geometry__sq_0": "reflexivity.", "Sec__Blocks__Geometry__Inner__same": "reflexivity.",
              "Sec__Blocks__top": "reflexivity."}
    for task_id, proof in proofs.items():
        task = tasks[task_id]
        candidate = prover.candidate_with_proof(task, f"{proof}\nQed.")
        verdict = verify_candidate(task, prover, candidate.encode(), timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (task_id, verdict.reason)
    # what Coq itself makes of the project's lemma, and of the item's compiled template
    subprocess.run(["coqc", "-q", "-Q", "theories", "Sec", "theories/Blocks.v"], cwd=project, check=True,
                   capture_output=True, timeout=300)
    original = coq_type(tmp_path, ["-Q", str(project / "theories"), "Sec"], "Require Sec.Blocks.",
                        "Sec.Blocks.n_le_m")
    assert original == "forall (n : nat) (_ : lt O n) (_ : bool), le n (Nat.add n (S O))"
    task = tasks["Sec__Blocks__n_le_m"]
    candidate = prover.candidate_with_proof(task, "unfold m. lia.\nQed.")
    (tmp_path / "cand").mkdir()
    (tmp_path / "cand" / "Sec__Blocks__n_le_m.v").write_text(candidate)
    prover._bind(task, 300)
    subprocess.run(["coqc", "-q", *prover.load, "-Q", str(tmp_path / "cand"), "C",
                    str(tmp_path / "cand" / "Sec__Blocks__n_le_m.v")], check=True, capture_output=True, timeout=300)
    assert coq_type(tmp_path, [*prover.load, "-Q", str(tmp_path / "cand"), "C"], "Require C.Sec__Blocks__n_le_m.",
                    "C.Sec__Blocks__n_le_m.n_le_m") == original


@pytest.mark.parametrize("cheat, caught", [
    ("drop", "frozen_statement"),           # a hypothesis removed from the section's context
    ("unset", "syntax_screen"),             # the pinned generalisation switched off
    ("hypothesis", "syntax_screen"),        # an extra hypothesis added to the section
])
def test_section_context_cannot_be_changed(tmp_path: Path, cheat: str, caught: str) -> None:
    require_tool("coqc")
    task = {t.task_id: t for t in load_project(BLOCKS, {})}["Sec__Blocks__pred_lt"]
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    candidate = prover.candidate_with_proof(task, "lia.\nQed.")
    candidate = {"drop": candidate.replace("Hypothesis Hn : 0 < n.\n", ""),
                 "unset": candidate.replace("Lemma pred_lt", "Unset Default Proof Using.\nLemma pred_lt"),
                 "hypothesis": candidate.replace("Lemma pred_lt", "Hypothesis H2 : 1 < n.\nLemma pred_lt")}[cheat]
    verdict = verify_candidate(task, prover, candidate.encode(), timeout=300)
    assert verdict.verdict == "reject" and verdict.reason.startswith(caught), verdict.reason


def coquelicot_project(root: Path) -> dict[str, str]:
    """A project holding a copy of Coquelicot's Equiv.v with five proofs replaced by ``Admitted.``;
    returns the original proofs. The one edit besides: its ``Require`` names the installed library."""
    source = COQUELICOT / "Equiv.v"
    if not source.is_file():
        pytest.fail(f"{source} not found: install Debian's libcoq-coquelicot (scripts/setup.sh)")
    text = source.read_text(encoding="utf-8").replace(
        "\nRequire Import Rbar Rcomplements Hierarchy.", "\nFrom Coquelicot Require Import Rbar Rcomplements Hierarchy.")
    text, originals = admit_lemmas(text, EQUIV_LEMMAS)
    (root / "theories").mkdir(parents=True)
    (root / "_CoqProject").write_text("-Q theories CQ\ntheories/Equiv.v\n")
    (root / "theories" / "Equiv.v").write_text(text)
    return originals


def test_a_copy_of_coquelicot_is_gated_by_its_own_proofs(pytester: pytest.Pytester) -> None:
    """Replay of the library's own proofs: strict for all five; one broken: exactly that one fails;
    the portfolio runs on every item with the project's load path (it compiles, it is not infra)."""
    require_tool("coqc")
    project = pytester.path / "proj"
    originals = coquelicot_project(project)
    tasks = {t.theorem_name: t for t in load_project(project, {})}
    assert sorted(tasks) == sorted(EQUIV_LEMMAS)
    assert all(t.meta["sections"] for t in tasks.values())  # every one inside a section
    store = pytester.path / "store"
    store.mkdir()
    prover = ProjectRocqProver({"cache_dir": str(pytester.path / "c"), "timeout": 300})
    for name, task in tasks.items():
        (store / task.candidate_name).write_text(prover.candidate_with_proof(task, f"{originals[name]}\nQed."))
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay",
                             "--forall-proofs", str(store), "--forall-run-id", "replay")
    rows = results(pytester.path, "replay")
    assert {r["outcome"] for r in rows.values()} == {"strict"} and len(rows) == 5, run.stdout.str()[-3000:]
    assert run.ret == 0

    broken = tasks["equiv_scal"]
    stored = store / broken.candidate_name
    stored.write_text(stored.read_text().replace("\nQed.", "\nreflexivity.\nQed.", 1))
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay",
                             "--forall-proofs", str(store), "--forall-run-id", "broken", "-k", "equiv_scal")
    assert {k: r["outcome"] for k, r in results(pytester.path, "broken").items()} == {broken.task_id: "failed"}
    assert run.ret == 1

    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "portfolio",
                             "--forall-compiles", "2", "--forall-run-id", "portfolio")
    rows = results(pytester.path, "portfolio")
    assert len(rows) == 5 and all(r["outcome"] != "infra" and r["compiles"] >= 1 for r in rows.values()), rows


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


def test_a_false_section_lemma_is_refuted_in_the_project_context(tmp_path: Path) -> None:
    """The refutation of a project item keeps the project's context: its section (with `End`), the prefix
    library and the project's load path, so the negation is checked where the statement lives."""
    require_tool("coqc")
    (tmp_path / "_CoqProject").write_text("-R . Ref\nA.v\n")
    (tmp_path / "A.v").write_text("Require Import Lia.\nSection S.\n  Variable n : nat.\n"
                                  "  Lemma bad : n = n + 1.\n  Proof.\n  Admitted.\nEnd S.\n")
    task = load_project(tmp_path, {})[0]
    refutation = derived_tasks(task).get("false")
    assert refutation is not None and refutation.prover == task.prover
    assert refutation.template.endswith("Theorem bad_is_false :\n    ~ (n = n + 1).\nProof. Admitted.\nEnd S.\n")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    verdict = verify_candidate(refutation, prover, prover.candidate_with_proof(refutation, "lia.\nQed.").encode(),
                               timeout=300)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason


def test_a_statement_over_a_section_definition_is_a_real_item(tmp_path: Path) -> None:
    """(Once the documented limit, infra.) The reopened section abbreviates `f` as the prefix's `f n`, so the
    template compiles and an honest proof is strict; tests/test_project_section_locals.py has the rest."""
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
