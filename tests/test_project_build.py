"""The project's own build (issue 18, part 1 and 6): `--forall-project-build` (a command run in the project's copy),
a dune project built by `dune build` with the mapping read from its `(coq.theory …)`, and what happens when either
fails. Whatever builds, the judge reads the compiled files that build produced."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import require_tool
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.project import layout as project_layout
from pytest_forall.lang.rocq.project.layout import read_coqproject
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import build_command_problem, load_project

BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]

A_V = "Definition two := 2.\nLemma two_eq : two = 2.\nProof. reflexivity. Qed.\n"
B_V = ("From {name} Require Import A.\nLemma two_plus : two + 0 = 2.\nProof. rewrite <- plus_n_O. apply two_eq. "
       "Qed.\n")

#: A user's own Makefile: coqc called directly (no coq_makefile), in its own order, under the mapping `_CoqProject`
#: declares, and a stamp that shows it ran.
MAKEFILE = """COQC ?= coqc
all: theories/B.vo
\ttouch user-make-ran
theories/A.vo: theories/A.v
\t$(COQC) -q -R theories Mk theories/A.v
theories/B.vo: theories/B.v theories/A.vo
\t$(COQC) -q -R theories Mk theories/B.v
"""


def make_project(root: Path) -> Path:
    (root / "theories").mkdir(parents=True)
    (root / "_CoqProject").write_text("-R theories Mk\n")
    (root / "Makefile").write_text(MAKEFILE)
    (root / "theories" / "A.v").write_text(A_V)
    (root / "theories" / "B.v").write_text(B_V.format(name="Mk"))
    return root


def dune_project(root: Path) -> Path:
    (root / "theories").mkdir(parents=True)
    (root / "dune-project").write_text("(lang dune 2.9)\n(using coq 0.3)\n")
    (root / "theories" / "dune").write_text(
        "; the theory: a dotted logical name, and flags for coqc\n"
        "(coq.theory\n (name Du.Sub) ; (name Wrong)\n (flags :standard -w -notation-overridden))\n")
    (root / "theories" / "A.v").write_text(A_V)
    (root / "theories" / "B.v").write_text(B_V.format(name="Du.Sub"))
    return root


def own_and_other(prover: ProjectRocqProver, root: Path, command: str = "") -> dict[str, tuple[str, bool, str]]:
    """Each item's verdict on the project's own proof and on a different honest proof (compiled in the tree of
    the build's compiled files), and the artifact the own proof was judged from."""
    out = {}
    for task in load_project(root, {"project_build": command}):
        own = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
        other = prover.candidate_with_proof(task, "simpl. reflexivity.\nQed.")
        verdict = verify_candidate(task, prover, other.encode(), timeout=300)
        out[task.task_id] = (own.verdict, own.strict and verdict.strict, verdict.verdict)
    return out


def test_a_users_own_makefile_builds_the_project_and_its_files_are_judged(tmp_path: Path) -> None:
    require_tool("coqc")
    require_tool("make")
    root = make_project(tmp_path / "mk")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300, "project_build": "make"})
    assert own_and_other(prover, root, "make") == {"Mk__A__two_eq": ("accept", True, "accept"),
                                                   "Mk__B__two_plus": ("accept", True, "accept")}
    (build,) = [p for p in prover.builds.iterdir() if (p / "built.json").is_file()]
    assert (build / "src" / "user-make-ran").is_file()  # the user's command ran, in the copy
    assert "$ sh -c make" in (build / "build.log").read_text()
    assert not (build / "src" / "Makefile.forall").exists()  # and not the default coq_makefile build
    assert not (root / "user-make-ran").exists()  # never in the project itself

    # the build command is part of the build's key: another command is another build
    other = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300, "project_build": "make all"})
    task = load_project(root, {})[0]
    assert other._build(task, 300)[1] != prover._build(task, 300)[1]


def test_a_changed_build_declaration_rebuilds_everything(tmp_path: Path) -> None:
    """An edited source starts from the last build (make recompiles what changed); a changed `-arg` or build command
    does not (make would not see a flag change, and the compiled files would be the old flags')."""
    require_tool("coqc")
    root = make_project(tmp_path / "mk")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})

    def build(with_prover: ProjectRocqProver) -> dict:
        task = load_project(root, {})[0]
        _, where, problem = with_prover._build(task, 300)
        assert not problem, problem
        return json.loads((where / "built.json").read_text())

    assert not build(prover)["incremental"]
    (root / "theories" / "B.v").write_text(B_V.format(name="Mk") + "Lemma extra : 0 = 0.\nProof. reflexivity. Qed.\n")
    assert build(prover)["incremental"]
    (root / "_CoqProject").write_text("-R theories Mk\n-arg -w -arg -notation-overridden\n")
    assert not build(prover)["incremental"]
    assert build(prover)["incremental"] is False  # (the same build, kept)
    other = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300, "project_build": "make"})
    assert not build(other)["incremental"]


def test_compiled_files_in_the_users_tree_are_not_copied(tmp_path: Path) -> None:
    """A maintainer who built in place and then edited a file leaves a stale `.vo` in the tree: the copy is built
    from the sources alone (a stale `.vo` newer than its copied source would pass for up to date with make)."""
    require_tool("coqc")
    require_tool("make")
    import subprocess

    root = make_project(tmp_path / "mk")
    subprocess.run(["make"], cwd=root, check=True, capture_output=True)
    assert (root / "theories" / "A.vo").is_file()
    source = root / "theories" / "A.v"
    source.write_text(source.read_text().replace("Lemma two_eq : two = 2.", "Lemma two_eq : two = 1 + 1."))
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300, "project_build": "make"})
    task = load_project(root, {})[0]
    # another honest proof is compiled from the text as it is now and compared with the build's compiled file
    other = prover.candidate_with_proof(task, "simpl. reflexivity.\nQed.")
    verdict = verify_candidate(task, prover, other.encode(), timeout=300)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason


def test_a_failing_or_misplaced_user_build_is_infra_with_the_reason(tmp_path: Path) -> None:
    """A build command that fails, or that compiles nowhere the project's mapping says, makes every item infra
    with the reason (never `failed`, never judged without the project's build)."""
    require_tool("coqc")
    require_tool("make")
    root = make_project(tmp_path / "mk")
    (root / "Makefile").write_text("all:\n\t@echo the build broke >&2; exit 3\n")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300, "project_build": "make"})
    for task in load_project(root, {}):
        verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
        assert verdict.verdict == "infra", verdict.reason
        assert "the project does not build here (`make` exited 2" in verdict.reason, verdict.reason
        assert "the build broke" in verdict.reason

    root = make_project(tmp_path / "elsewhere")
    (root / "Makefile").write_text("all:\n\tmkdir -p out && cd theories && $(COQC) -q -R . Mk A.v -o ../out/A.vo\n")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache2"), "timeout": 300, "project_build": "make"})
    task = load_project(root, {})[0]
    verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "infra" and "left no compiled file where its mapping puts them" in verdict.reason, \
        verdict.reason


def test_a_dune_project_is_read_and_built_by_dune(tmp_path: Path) -> None:
    """The mapping and flags come from the `(coq.theory …)` stanza (dune's `-R dir Name`); `dune build` builds the
    copy and the judge reads dune's compiled files under `_build/default`."""
    require_tool("coqc")
    require_tool("dune")
    root = dune_project(tmp_path / "du")
    project = read_coqproject(root)
    assert (project.tool, project.mappings, project.args, project.files) == (
        "dune", [("-R", "theories", "Du.Sub")], ["-w", "-notation-overridden"], ["theories/A.v", "theories/B.v"])
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    assert own_and_other(prover, root) == {"Du__Sub__A__two_eq": ("accept", True, "accept"),
                                           "Du__Sub__B__two_plus": ("accept", True, "accept")}
    (build,) = [p for p in prover.builds.iterdir() if (p / "built.json").is_file()]
    assert "$ dune build" in (build / "build.log").read_text()
    assert (build / "src" / "_build" / "default" / "theories" / "B.vo").is_file()
    assert not (build / "src" / "theories" / "B.vo").exists()  # nothing compiled beside the sources
    task = load_project(root, {})[1]
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "own.v").write_text(task.meta["own_candidate"])
    compiled = prover.compile(task, tmp_path / "w", tmp_path / "w" / "own.v", 300)
    assert compiled.ok and compiled.artifact == str(build / "src" / "_build" / "default" / "theories" / "B.vo")

    # a statement changed under the same text elsewhere is still the kernel judge's business: a candidate proving
    # another statement is refused
    wrong = prover.candidate_with_proof(task, "reflexivity.\nQed.").replace("two + 0 = 2", "two = 2")
    assert verify_candidate(task, prover, wrong.encode(), timeout=300).verdict == "reject"


def test_a_dune_project_without_dune_is_infra_or_built_from_its_coqproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_tool("coqc")
    root = dune_project(tmp_path / "du")
    real = shutil.which
    monkeypatch.setattr(project_layout.shutil, "which", lambda name, *a, **k: None if name == "dune" else real(name))
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    task = load_project(root, {})[0]
    verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "infra" and "`dune` is not installed here" in verdict.reason, verdict.reason
    record = json.loads(next(prover.builds.glob("*/built.json")).read_text())
    assert not record["ok"]
    # with a `_CoqProject` beside the dune files, that declaration builds the project where dune is missing
    (root / "_CoqProject").write_text("-R theories Du.Sub\n")
    assert read_coqproject(root).tool == "coq_makefile"
    task = load_project(root, {})[1]
    verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason


def test_the_build_option_is_checked_at_configure_time(pytester: pytest.Pytester, tmp_path: Path) -> None:
    root = make_project(pytester.path / "mk")
    assert build_command_problem("make -j2", root) == ""
    assert build_command_problem("COQC=coqc ./build.sh", root).startswith("./build.sh (the build command's program)")
    pytester.makeini("[pytest]\n")
    missing = "'no-such-builder-xyz' (the build command's program) is not on PATH"
    for value, message in [("no-such-builder-xyz", missing), ("make 'unclosed", "cannot read the build command"),
                           ("  ", "is empty")]:
        run = pytester.runpytest(*BASE, "--forall-project", "mk", "--forall-project-build", value, "--collect-only")
        assert run.ret == pytest.ExitCode.USAGE_ERROR, run.stdout.str()
        assert "--forall-project-build: " in run.stderr.str() and message in run.stderr.str(), run.stderr.str()
    run = pytester.runpytest(*BASE, "--forall-project-build", "make", "--collect-only")
    assert run.ret == pytest.ExitCode.USAGE_ERROR and "needs --forall-project PATH" in run.stderr.str()
    pytester.makeini("[pytest]\nforall_project_build = no-such-builder-xyz\n")
    run = pytester.runpytest(*BASE, "--forall-project", "mk", "--collect-only")
    assert run.ret == pytest.ExitCode.USAGE_ERROR and "ini option forall_project_build: " in run.stderr.str()


def test_the_build_option_reaches_the_prover(pytester: pytest.Pytester) -> None:
    """End to end: `--forall-project-build make` in a replay of the project's own proofs (every item strict)."""
    require_tool("coqc")
    require_tool("make")
    make_project(pytester.path / "mk")
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*BASE, "--forall-project", "mk", "--forall-project-build", "make",
                             "--forall-frontend", "replay", "--forall-run-id", "own", "--forall-require", "strict")
    rows = [json.loads(line) for line in (pytester.path / "reports" / "own" / "results.jsonl").read_text().splitlines()]
    assert {r["task_id"]: r["outcome"] for r in rows} == {"Mk__A__two_eq": "strict", "Mk__B__two_plus": "strict"}
    logs = list((pytester.path / "reports").rglob("project-rocq/*/build.log"))
    assert logs and all("$ sh -c make" in log.read_text() for log in logs), logs
    assert run.ret == 0
