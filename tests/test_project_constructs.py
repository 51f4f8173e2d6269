"""Library mode on Rocq constructs beyond plain lemmas (issue 18, part 2): proof-mode instances, modules checked
against a signature (`<:`), lemmas about a functor's application and about `Program` definitions are items whose
honest proofs are accepted (rules-only: the file's module type and functor before them leave the module advisories
uncovered, docs/verifier.md); proofs in a `Module Type`, a functor, a sealed module and `Program` obligations
are listed once each with the reason. Under pytest-xdist the listing appears once and the items are the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import require_tool
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import NOT_ITEMS, load_project

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CONSTRUCTS = FIXTURES / "project_rocq_constructs"
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]

ITEMS = ["Cons__Kinds__Three__p_refl", "Cons__Kinds__comm_zero_c", "Cons__Kinds__pick_comm", "Cons__Kinds__size_unit",
         "Cons__Kinds__size_unit_one", "Cons__Kinds__three_twice"]
#: what is not an item, and a phrase of its reason
LISTED = {
    "Cons.Kinds.T.p_refl": "inside the `Module Type` `T`: Coq keeps only the statement",
    "Cons.Kinds.F.p_twice": "inside the functor `F` (`Module F (…)`): its proofs are fields of the functor's body",
    "Cons.Kinds.Sealed.p_refl": "inside the module `Sealed` sealed by a signature (`Module Sealed : T`)",
    "Cons.Kinds.Sealed.hidden": "inside the module `Sealed` sealed by a signature (`Module Sealed : T`)",
    "theories/Kinds.v:38 Next": "an obligation of `pick`: `Program` generates its statement",
    "theories/Kinds.v:41 Obligation": "an obligation of `shift`: `Program` generates its statement",
    "theories/Kinds.v:46 Next": "an obligation of `comm_zero`: `Program` generates its statement",
}
SEALED = "\nModule Sealed : T.\n  Definition p := 4.\n  Lemma p_refl : p = p.\n  Proof. reflexivity. Qed.\n" \
         "  Lemma hidden : p = 4.\n  Proof. reflexivity. Qed.\nEnd Sealed.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "cons"
    shutil.copytree(CONSTRUCTS, root)
    kinds = root / "theories" / "Kinds.v"
    kinds.write_text(kinds.read_text() + SEALED)
    return root


def test_constructs_are_items_or_listed_once_with_the_reason(project: Path) -> None:
    tasks = {t.task_id: t for t in load_project(project, {})}
    assert sorted(tasks) == ITEMS
    assert tasks["Cons__Kinds__size_unit"].meta["keyword"] == "Instance"  # a proof-mode instance
    assert "size_bool" not in " ".join(tasks)  # `Instance … := {| … |}` is a term, not a proof
    listed = NOT_ITEMS[str(project)]
    assert len(listed) == len(LISTED) and len({name for name, _ in listed}) == len(listed)  # each once
    for name, reason in listed:
        assert LISTED[name] in reason, (name, reason)
    obligation = dict(listed)["theories/Kinds.v:38 Next"]
    assert "numbers its constant `…_obligation_<n>`" in obligation  # why a `Next Obligation` has no known name
    assert "numbers its constant" not in dict(listed)["theories/Kinds.v:41 Obligation"]  # `Obligation 1 of shift`


def test_honest_proofs_of_these_kinds_are_accepted(project: Path, tmp_path: Path) -> None:
    """The judge compares kernel terms of the project's own build: every item's own proof is accepted; an admitted
    obligation, which is not an item, still counts for the items that use it (rules-only, not strict)."""
    require_tool("coqc")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    for task in load_project(project, {}):
        verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
        # every item of Kinds.v follows its module type `T` and functor `F`: the module advisories are not covered
        # for them (docs/verifier.md, "The module walk"), so they are rules-only, the verdict naming them so
        assert verdict.verdict == "accept" and not verdict.strict, (task.task_id, verdict.reason)
        assert any(how.startswith("NOT covered (functor)") for how in verdict.kernel["coverage"].values())
        audit = next(layer for layer in verdict.layers if layer.name == "axiom_audit")
        assert "Cons.Kinds.F" in audit.reason, (task.task_id, audit.reason)
    kinds = project / "theories" / "Kinds.v"
    kinds.write_text(kinds.read_text().replace(
        "Next Obligation. intros; rewrite <- plus_n_O; apply Nat.add_comm. Qed.", "Next Obligation. Admitted."))
    task = {t.task_id: t for t in load_project(project, {})}["Cons__Kinds__pick_comm"]
    verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "accept" and not verdict.strict, verdict.reason
    assert any("pick_obligation_1" in axiom for axiom in verdict.axioms), verdict.axioms


def test_under_xdist_the_listing_appears_once_and_the_items_are_the_same(pytester: pytest.Pytester,
                                                                       project: Path) -> None:
    pytest.importorskip("xdist")
    shutil.copytree(project, pytester.path / "cons")
    pytester.makeini("[pytest]\n")
    plain = pytester.runpytest(*BASE, "--forall-project", "cons", "--collect-only", "-q")
    items = sorted(line for line in plain.outlines if "::" in line)
    assert items == [f"cons/project.forall.toml::{i}[coq]" for i in ITEMS]
    header = f"forall project: {len(LISTED)} proof(s) of {pytester.path / 'cons'} are not items:"
    assert plain.outlines.count(header) == 1
    # three obligations listed, the long explanation once per kind (`Next Obligation`, `Obligation N of`)
    assert sum("an obligation of" in line for line in plain.outlines) == 3
    assert sum("`Program` generates its statement" in line for line in plain.outlines) == 2, plain.outlines

    run = pytester.runpytest(*BASE, "-n", "2", "--forall-project", "cons", "--forall-frontend", "replay",
                             "--forall-run-id", "xd", "-v")
    out = run.outlines
    assert out.count(header) == 1, "\n".join(out)  # the controller's report, not one per worker
    for name in LISTED:
        assert sum(line.startswith(f"  {name}: ") for line in out) == 1, name
    rows = [json.loads(line) for line in (pytester.path / "reports" / "xd" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == ITEMS  # the same items, each run once
    # rules-only: Kinds.v's module type and functor come before its items (the module advisories are not covered)
    assert {r["outcome"] for r in rows} == {"rules_only"}, [(r["task_id"], r["reason"][:200]) for r in rows]
    assert run.ret == 0
