"""Section-local definitions in the any-project suite, with real coqc: a statement that uses a `Definition`
(`Inductive`, `Record`, a lemma …) made earlier in its own open section states what the original states.

The template re-declares each such name as an abbreviation of the prefix library's generalised constant
applied to the section variables Coq generalised it over (Coq's answer, read from the prefix compile).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from test_project_blocks import coq_type

from conftest import admit_lemmas, require_tool
from pytest_forall.core.model import Task
from pytest_forall.core.verify import verify_candidate
from pytest_forall.suites.project import ProjectRocqProver, load_project

#: Debian's coq package installs the standard library's sources next to the compiled files.
MULTISET = Path("/usr/lib/ocaml/coq/theories/Sets/Multiset.v")
#: Lemmas of the stdlib's Multiset.v (one `Section` with `Variable`s, `Hypothesis`es, an `Inductive` and
#: definitions, under `Set Implicit Arguments`) whose statements use the section's definitions.
MULTISET_LEMMAS = ["munion_empty_left", "munion_rotate", "meq_congr", "multiset_twist2", "meq_singleton"]

FILES = {
    # the brief's example
    "Example.v": "Section S.\nVariable x : nat.\nDefinition f := x + 1.\n"
                 "Theorem t : f = x + 1.\nProof.\nAdmitted.\nEnd S.\n",
    # definitions by tactics, one of which uses a hypothesis only a tactic names (`assumption`)
    "Tactics.v": "Require Import Lia.\nSection D.\nVariable n : nat.\nVariable unused : bool.\nHypothesis Hn : 0 < n.\n"
                 "Definition pred_n : nat.\nProof. exact (pred n). Defined.\n"
                 "Definition witness : {k : nat | k < n}.\nProof. exists 0. assumption. Defined.\n"
                 "Lemma pred_n_lt : pred_n < n.\nProof.\nAdmitted.\n"
                 "Lemma witness_lt : proj1_sig witness < n.\nProof.\nAdmitted.\nEnd D.\n",
    # nested sections: a definition of the closed inner section used by the outer one, generalised over b
    "Nested.v": "Require Import Lia.\nSection Outer.\nVariable a : nat.\nDefinition base := a * 2.\n"
                "Section Inner.\nVariable b : nat.\nDefinition both := base + b.\n"
                "Lemma both_ge : a <= both.\nProof.\nAdmitted.\nEnd Inner.\n"
                "Lemma both_unfold : forall b, both b = base + b.\nProof.\nAdmitted.\nEnd Outer.\n",
    # mathcomp style: implicit arguments on, a proved section lemma used by a later proof, `rewrite /occ`
    "Seqs.v": "From mathcomp Require Import ssreflect ssrfun ssrbool eqtype ssrnat seq.\n"
              "Set Implicit Arguments.\nUnset Strict Implicit.\nUnset Printing Implicit Defensive.\n"
              "Section Occurrences.\nVariable T : eqType.\nVariable s : seq T.\n"
              "Definition occ (x : T) := count (pred1 x) s.\n"
              "Lemma occ_le x : occ x <= size s.\nProof. by rewrite /occ count_size. Qed.\n"
              "Lemma occ_lt x : occ x < (size s).+1.\nProof.\nAdmitted.\n"
              "Lemma occ_count x : occ x = count (pred1 x) s.\nProof.\nAdmitted.\nEnd Occurrences.\n",
    # what cannot be reproduced: a definition over an anonymous instance, a Let with a proof
    "Limits.v": "Class C := { c : nat }.\nSection Anon.\nContext `{C}.\nDefinition u := c + 1.\n"
                "Lemma u_pos : 0 < u.\nProof.\nAdmitted.\nEnd Anon.\n"
                "Section Lets.\nVariable n : nat.\nLet two : nat.\nProof. exact 2. Defined.\n"
                "Lemma two_le : two <= two + n.\nProof.\nAdmitted.\nEnd Lets.\n",
}
PROOFS = {
    "Loc__Example__t": "unfold f. reflexivity.",
    "Loc__Tactics__pred_n_lt": "unfold pred_n. lia.",
    "Loc__Tactics__witness_lt": "exact (proj2_sig witness).",
    "Loc__Nested__both_ge": "unfold both, base. lia.",
    "Loc__Nested__both_unfold": "reflexivity.",
    "Loc__Seqs__occ_lt": "by rewrite ltnS occ_le.",
    "Loc__Seqs__occ_count": "by rewrite /occ.",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("locals")
    (root / "_CoqProject").write_text("-R . Loc\n" + "".join(f"{name}\n" for name in FILES))
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def prover(tmp_path_factory: pytest.TempPathFactory) -> ProjectRocqProver:
    return ProjectRocqProver({"cache_dir": str(tmp_path_factory.mktemp("cache")), "timeout": 300})


def tasks_of(root: Path) -> dict[str, Task]:
    return {t.task_id: t for t in load_project(root, {})}


def compiled_candidate_type(tmp: Path, prover: ProjectRocqProver, task: Task, proof: str) -> str:
    """The candidate's theorem after ``End``, compiled in the item's context, as Coq prints it."""
    directory = tmp / f"cand_{task.task_id}"
    directory.mkdir()
    source = directory / task.candidate_name
    source.write_text(prover.candidate_with_proof(task, f"{proof}\nQed."))
    assert not prover._bind(task, 300)
    subprocess.run(["coqc", "-q", *prover.load, "-Q", str(directory), "C", str(source)], check=True,
                   capture_output=True, timeout=300, cwd=directory)  # lia writes .lia.cache into the cwd
    return coq_type(directory, [*prover.load, "-Q", str(directory), "C"],
                    f"Require Import ForallPrefix.Prefix_{task.task_id}.\nRequire C.{task.task_id}.",
                    f"C.{task.task_id}.{task.theorem_name}")


def test_section_locals_are_abbreviated_in_the_template(project: Path) -> None:
    tasks = tasks_of(project)
    t = tasks["Loc__Example__t"]
    assert "Require ForallPrefix.Section_Loc__Example__t." in t.template
    assert ("Section S.\nVariable x : nat.\nNotation f := (ForallPrefix.Section_Loc__Example__t.f x).\n"
            in t.template)
    assert "Definition f" not in t.template  # the definition itself lives (generalised) in the prefix library
    both = tasks["Loc__Nested__both_unfold"].template
    # inside Outer, the closed Inner's `both` is generalised over b: abbreviated over Outer's variable only
    assert "Notation both := (ForallPrefix.Section_Loc__Nested__both_unfold.both a).\n" in both
    assert not any(t.meta["unsupported"] for k, t in tasks.items() if "Limits" not in k)


def test_honest_proofs_over_section_definitions_are_strict(project: Path, prover: ProjectRocqProver) -> None:
    """The brief's example, definitions by tactics (one over a hypothesis only `assumption` names) and a
    nested section: each replayed proof is strict, judged by coqc and coqchk."""
    require_tool("coqc")
    tasks = tasks_of(project)
    for task_id, proof in PROOFS.items():
        task = tasks[task_id]
        assert prover.check_template(task, project / "build", 300).ok, task_id
        verdict = verify_candidate(task, prover, prover.candidate_with_proof(task, f"{proof}\nQed.").encode(),
                                   timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (task_id, verdict.reason)
        assert "independent_check" in {layer.name for layer in verdict.layers if layer.ok}, (task_id, verdict.layers)


def test_the_item_states_what_the_original_states(project: Path, prover: ProjectRocqProver,
                                                  tmp_path: Path) -> None:
    """Compile the original file and the item's candidate; the theorem's type after `End`, printed by Coq
    with every implicit argument, is the same text (the prefix library's constants print by their short
    names, as the original's do)."""
    require_tool("coqc")
    copy = tmp_path / "orig"
    shutil.copytree(project, copy)
    subprocess.run(["coq_makefile", "-f", "_CoqProject", "-o", "Makefile"], cwd=copy, check=True, capture_output=True)
    subprocess.run(["make", "-f", "Makefile"], cwd=copy, check=True, capture_output=True, timeout=600)
    tasks = tasks_of(project)
    expected = {"Loc__Example__t": "forall x : nat, @eq nat (f x) (Nat.add x (S O))",
                "Loc__Tactics__witness_lt": "forall (n : nat) (_ : bool) (Hn : lt O n), "
                                            "lt (@proj1_sig nat (fun k : nat => lt k n) (witness n Hn)) n"}
    for task_id, proof in PROOFS.items():
        task = tasks[task_id]
        module = task.meta["qualified_name"].rsplit(".", 1)[0]
        original = coq_type(tmp_path, ["-R", str(copy), "Loc"], f"Require Import {module}.",
                            task.meta["qualified_name"])
        assert compiled_candidate_type(tmp_path, prover, task, proof) == original, task_id
        if task_id in expected:  # the statement over the section's constants, not a weaker one
            assert original == expected[task_id], original


@pytest.mark.parametrize("cheat, caught", [
    ("redefine", "frozen_statement"),   # the abbreviation changed to another meaning of f
    ("shadow", "shadowing_guard"),      # a new f declared before the theorem
    ("hypothesis", "syntax_screen"),    # an extra hypothesis about f
])
def test_a_candidate_cannot_change_what_f_means(project: Path, prover: ProjectRocqProver, cheat: str,
                                                caught: str) -> None:
    require_tool("coqc")
    task = tasks_of(project)["Loc__Example__t"]
    honest = prover.candidate_with_proof(task, "unfold f. reflexivity.\nQed.")
    abbreviation = "Notation f := (ForallPrefix.Section_Loc__Example__t.f x).\n"
    candidate = {"redefine": honest.replace(abbreviation, "Notation f := (x + 1).\n"),
                 "shadow": honest.replace("Theorem t", "Definition f := x + 2.\nTheorem t"),
                 "hypothesis": honest.replace("Theorem t", "Hypothesis Hf : f = x + 1.\nTheorem t")}[cheat]
    assert candidate != honest
    verdict = verify_candidate(task, prover, candidate.encode(), timeout=300)
    assert verdict.verdict == "reject" and verdict.reason.startswith(caught), verdict.reason


def test_what_cannot_be_reproduced_is_infra_with_the_reason(project: Path, prover: ProjectRocqProver) -> None:
    require_tool("coqc")
    tasks = tasks_of(project)
    anon = prover.check_template(tasks["Loc__Limits__u_pos"], project / "build", 300)
    assert not anon.ok and "`u` depends on the section variable `H`" in anon.infra, anon.infra
    lets = tasks["Loc__Limits__two_le"]
    assert "`two` is a section `Let` with a proof" in lets.meta["unsupported"]
    result = prover.check_template(lets, project / "build", 300)
    assert not result.ok and "`two` is a section `Let` with a proof" in result.infra


def multiset_project(root: Path) -> dict[str, str]:
    """A project holding a copy of the stdlib's Multiset.v with five proofs replaced by ``Admitted.``;
    returns the original proofs (each ends before ``Qed.``)."""
    if not MULTISET.is_file():
        pytest.fail(f"{MULTISET} not found: install Debian's coq (scripts/setup.sh)")
    text = MULTISET.read_text(encoding="utf-8")
    text, originals = admit_lemmas(text, MULTISET_LEMMAS, indent="  ")
    root.mkdir(parents=True)
    (root / "_CoqProject").write_text("-Q . MS\nMultiset.v\n")
    (root / "Multiset.v").write_text(text)
    return originals


def test_a_copy_of_the_stdlib_multiset_is_gated_by_its_own_proofs(tmp_path: Path) -> None:
    """Five lemmas over the section's `multiset`, `meq`, `munion`, `SingletonBag` (itself defined over the
    `Hypothesis` `Aeq_dec`): the library's own proofs, replayed, are strict; the statements are the
    original's, as Coq prints them."""
    require_tool("coqc")
    project = tmp_path / "ms"
    originals = multiset_project(project)
    tasks = {t.theorem_name: t for t in load_project(project, {})}
    assert sorted(tasks) == sorted(MULTISET_LEMMAS)
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    for name, task in tasks.items():
        assert "Notation meq := (ForallPrefix.Section_" in task.template, name
        verdict = verify_candidate(task, prover, prover.candidate_with_proof(task, f"{originals[name]}\nQed.").encode(),
                                   timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (name, verdict.reason)
    subprocess.run(["coqc", "-q", "-Q", ".", "MS", "Multiset.v"], cwd=project, check=True, capture_output=True,
                   timeout=300)
    singleton = tasks["meq_singleton"]
    original = coq_type(tmp_path, ["-Q", str(project), "MS"], "Require Import MS.Multiset.", "MS.Multiset.meq_singleton")
    assert "SingletonBag" in original and "Aeq_dec" in original
    assert compiled_candidate_type(tmp_path, prover, singleton, originals["meq_singleton"]) == original
