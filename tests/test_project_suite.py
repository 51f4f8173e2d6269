"""The any-project suite (`pytest --forall-project PATH`) on a small Rocq project, with real coqc.

The fixture project (tests/fixtures/project_rocq, `-Q theories Demo`) has three admitted lemmas in
three files; tests/fixtures/project_rocq_proofs holds a stored proof of each.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import copy_project_cache, require_tool
from pytest_forall.core.model import Task
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.lean.project import is_sorry_proof, lean_decls
from pytest_forall.lang.rocq.project.layout import read_coqproject
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import NOT_ITEMS, lean_tasks, load_project

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROJECT = FIXTURES / "project_rocq"
PROOFS = FIXTURES / "project_rocq_proofs"
IDS = ["Demo__Base__double_zero", "Demo__Lemmas__double_twice", "Demo__More__double_step"]
ALL_IDS = sorted([*IDS, "Demo__Base__double_S", "Demo__Lemmas__add_zero_r"])
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]

def results(pytester: pytest.Pytester, run_id: str) -> dict[str, dict]:
    lines = (pytester.path / "reports" / run_id / "results.jsonl").read_text().splitlines()
    return {json.loads(line)["task_id"]: json.loads(line) for line in lines}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "proj"
    shutil.copytree(PROJECT, target)
    return target


def test_every_proof_is_an_item_with_its_own_file_as_template(project: Path) -> None:
    """Library mode: every proof is an item (admitted ones marked); the template is the target's own file up to
    its statement, the proof the hole, the blocks around it closed; the project's own proof is kept for replay."""
    tasks = {t.task_id: t for t in load_project(project, {})}
    assert sorted(tasks) == ALL_IDS
    assert sorted(k for k, t in tasks.items() if t.meta["admitted"]) == IDS
    assert all(t.meta["markers"] == (["admitted"] if t.meta["admitted"] else []) for t in tasks.values())
    twice = tasks["Demo__Lemmas__double_twice"]
    assert twice.prover == "rocq-project" and twice.track == "coq" and twice.candidate_name == f"{twice.task_id}.v"
    assert twice.theorem_name == "double_twice" and twice.meta["qualified_name"] == "Demo.Lemmas.double_twice"
    assert twice.meta["retrieval_exclude"] == ["Demo.Lemmas.double_twice"]
    text = (project / "theories" / "Lemmas.v").read_text()
    head = text[:text.index("Lemma double_twice")]
    assert twice.template == head + "Lemma double_twice : forall n, double n = 2 * n.\nProof.\nAdmitted.\n"
    assert "intros n.\nAdmitted" not in twice.template and twice.meta["own_candidate"] == ""  # the admitted attempt is not kept
    add = tasks["Demo__Lemmas__add_zero_r"]
    assert add.meta["own_candidate"] == ("From Demo Require Import Base.\nRequire Import Lia.\n\n"
                                         "Lemma add_zero_r : forall n, n + 0 = n.\nProof.\nintros n. lia. Qed.\n")  # opener kept
    assert all(not t.problem for t in tasks.values())
    assert read_coqproject(project).mappings == [("-Q", "theories", "Demo")]


def test_proofs_that_are_not_items_are_listed_with_the_reason(tmp_path: Path) -> None:
    """A functor's body, a section `Let` with a proof, an obligation and an unnamed instance are not items: each
    is listed once with why; a `Proof term.` and the admitted `Example` next to it both are."""
    (tmp_path / "_CoqProject").write_text("-R . Fun\nA.v\n")
    (tmp_path / "A.v").write_text(
        "Module Type T.\nParameter p : nat.\nEnd T.\nModule F (X : T).\nLemma l : X.p = X.p.\nProof. Admitted.\n"
        "End F.\nSection S.\nLet k : nat.\nProof. exact 0. Qed.\nEnd S.\nClass C := { c : nat }.\n"
        "Instance : C.\nProof. exact {| c := 0 |}. Defined.\nLemma byterm : 0 = 0.\nProof eq_refl.\n"
        "Example ex : 1 = 1.\nAdmitted.\nDefinition d : nat.\nProof. exact 1. Defined.\n")
    tasks = {t.task_id: t for t in load_project(tmp_path, {})}
    assert sorted(tasks) == ["Fun__A__byterm", "Fun__A__d", "Fun__A__ex"]
    assert tasks["Fun__A__ex"].meta["admitted"] and not tasks["Fun__A__byterm"].meta["admitted"]
    assert tasks["Fun__A__byterm"].meta["own_candidate"].endswith("Proof.\nexact (eq_refl).\nQed.\n")
    skipped = dict(NOT_ITEMS[str(tmp_path)])
    assert "inside the functor `F`" in skipped["Fun.A.F.l"] and "`Let`" in skipped["A.v:9 Let"]
    assert any("no name" in reason for reason in skipped.values())


def test_stored_proofs_gate_the_project(pytester: pytest.Pytester, project: Path, project_rocq_cache: Path) -> None:
    """Replay passes every stored proof; a changed lemma turns the items whose proofs it breaks `failed`."""
    require_tool("coqc")
    target = pytester.path / "proj"
    shutil.copytree(project, target)
    cache = copy_project_cache(project_rocq_cache, pytester.path / "cache")  # the project as built before the run
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay", "--forall-cache-dir",
                             str(cache), "--forall-proofs", str(PROOFS), "--forall-run-id", "replay", "-v", "-m",
                             "admitted")
    rows = results(pytester, "replay")
    assert {k: r["outcome"] for k, r in rows.items()} == dict.fromkeys(IDS, "strict"), run.stdout.str()[-3000:]
    assert all(r["independent"] is True and r["axioms"] == [] for r in rows.values())  # coqc + coqchk
    run.stdout.fnmatch_lines(["proj/project.forall.toml::Demo__Base__double_zero?coq? STRICT*"])
    assert run.ret == 0

    # the project moves: a dependency's statement changes (double_S, which double_step's proof rewrites
    # with) and a target's own statement changes (double_zero)
    base = target / "theories" / "Base.v"
    text = base.read_text()
    text = text.replace("Lemma double_S : forall n, double (S n) = S (S (double n)).",
                        "Lemma double_S : forall n, S (S (double n)) = double (S n).")
    text = text.replace("Lemma double_zero : double 0 = 0.", "Lemma double_zero : double 0 = 0 + 0.")
    base.write_text(text)
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay", "--forall-cache-dir",
                             str(cache), "--forall-proofs", str(PROOFS), "--forall-run-id", "moved",
                             "-k", "double_step or double_zero")
    rows = results(pytester, "moved")
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "Demo__Base__double_zero": "failed", "Demo__More__double_step": "failed"}
    assert rows["Demo__More__double_step"]["reason"].startswith(  # the candidate's file:line, as coqc gave it
        "elaboration: Demo__More__double_step.v:12: Found no subterm matching"), rows  # line 12: the rewrite
    assert rows["Demo__Base__double_zero"]["reason"].startswith("frozen_statement"), rows
    assert run.ret == 1


def test_a_verdict_from_the_cache_still_names_the_proof_for_the_gate(pytester: pytest.Pytester,
                                                                     project: Path, project_rocq_cache: Path) -> None:
    """A warm run serves every verdict from the cache (no compile in that process): its rows still carry the
    proof's digest, equal to the cold run's, so the gate can tell "proof changed" from the other causes."""
    require_tool("coqc")
    shutil.copytree(project, pytester.path / "proj")
    cache = copy_project_cache(project_rocq_cache, pytester.path / "cache")  # the project built, no verdict yet
    pytester.makeini("[pytest]\n")
    args = [*BASE, "--forall-project", "proj", "--forall-frontend", "replay", "--forall-proofs", str(PROOFS),
            "-m", "admitted", "--forall-cache-dir", str(cache)]
    assert pytester.runpytest(*args, "--forall-run-id", "cold").ret == 0
    warm = pytester.runpytest(*args, "--forall-run-id", "warm", "--forall-baseline", "reports/cold")
    cold_rows, warm_rows = results(pytester, "cold"), results(pytester, "warm")
    assert all(row["cached"] for row in warm_rows.values()), warm_rows
    for task_id, row in warm_rows.items():
        assert row.get("proof_digest") and row["proof_digest"] == cold_rows[task_id]["proof_digest"], row
        assert row["change"] == "same", row
    assert warm.ret == 0


def test_accepted_project_proofs_are_stored(pytester: pytest.Pytester, project: Path) -> None:
    from pytest_forall.plugin.project import ProofStore

    store = pytester.path / "store"
    config = pytester.parseconfigure("--forall-project", str(project), "--forall-proofs", str(store))
    audit = pytester.path / "audit"
    (audit / "accepted").mkdir(parents=True)
    (audit / "accepted" / "Demo__Base__double_zero.v").write_text("proof\n")
    plugin = ProofStore(config)
    row = {"suite": "project", "outcome": "strict", "frontend": "claude-code", "task_id": "Demo__Base__double_zero",
           "audit_dir": str(audit)}
    for skipped in ({"outcome": "failed"}, {"frontend": "replay"}, {"suite": "putnam"}):
        plugin.pytest_forall_item_finished(nodeid="x", result={**row, **skipped})
        assert not store.exists()
    plugin.pytest_forall_item_finished(nodeid="x", result=row)
    assert (store / "Demo__Base__double_zero.v").read_text() == "proof\n"
    assert config.pluginmanager.get_plugin("forall-proof-store") is not None


def test_other_admitted_lemmas_are_rules_only_and_the_target_itself_is_refused(project: Path, tmp_path: Path,
                                                                             project_rocq_cache: Path) -> None:
    require_tool("coqc")
    tasks = {t.task_id: t for t in load_project(project, {})}
    step = tasks["Demo__More__double_step"]
    copy_project_cache(project_rocq_cache, tmp_path / "cache")  # built as ever: the claims are the candidates'
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 120})
    via_admitted = step.template.replace("Theorem double_step", "Require Import Lia.\n\nTheorem double_step").replace(
        "Proof.\nAdmitted.", "Proof.\n  intros n. rewrite !double_twice. lia.\nQed.")
    verdict = verify_candidate(step, prover, via_admitted.encode(), timeout=120)
    assert verdict.verdict == "accept" and not verdict.strict, verdict.reason
    assert list(verdict.axioms) == ["Demo.Lemmas.double_twice"]
    # loading the project's own (admitted) copy of the target and using it is not a proof
    cheat = step.template.replace("Theorem double_step", "Require Demo.More.\n\nTheorem double_step").replace(
        "Proof.\nAdmitted.", "Proof.\n  exact Demo.More.double_step.\nQed.")
    verdict = verify_candidate(step, prover, cheat.encode(), timeout=120)
    # (the candidate *is* Demo.More: the build's own More.vo is not on its load path)
    assert verdict.verdict == "reject" and "logical path Demo.More" in verdict.reason, verdict.reason


def test_collection_without_a_manifest_and_usage_errors(pytester: pytest.Pytester, project: Path) -> None:
    shutil.copytree(project, pytester.path / "proj")
    more = pytester.path / "proj" / "theories" / "More.v"
    more.write_text(more.read_text() + "\nGoal True.\nProof. exact I. Qed.\n")
    pytester.makepyfile(test_other="def test_x():\n    pass\n")
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--collect-only", "-q")
    assert sorted(line for line in run.outlines if "::" in line) == [
        f"proj/project.forall.toml::{i}[coq]" for i in ALL_IDS]  # only the project, not test_other.py
    # what is not an item is listed once, with the reason
    assert [line for line in run.outlines if "are not items" in line or "declares no name" in line] == [
        f"forall project: 1 proof(s) of {pytester.path / 'proj'} are not items:",
        "  theories/More.v:11 Goal: a `Goal` declares no name"]
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "-m", "admitted", "--collect-only", "-q")
    assert sorted(line for line in run.outlines if "::" in line) == [
        f"proj/project.forall.toml::{i}[coq]" for i in IDS]  # the admitted ones, by their marker
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "test_other.py", "--collect-only", "-q")
    assert len([line for line in run.outlines if "::" in line]) == 6  # explicit paths: the project is added
    run = pytester.runpytest(*BASE, "--forall-project", "test_other.py", "--collect-only", "-q")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert "--forall-project test_other.py" in run.stderr.str() and "is not a directory" in run.stderr.str()
    (pytester.path / "empty").mkdir()
    run = pytester.runpytest(*BASE, "--forall-project", "empty", "--collect-only", "-q")
    assert run.ret == pytest.ExitCode.USAGE_ERROR and "neither a Lake project" in run.stderr.str()


LEAN_FILE = """import Demo.Basic

namespace Demo

theorem proven (n : Nat) : n = n := by
  rfl

/-- a doc comment that says sorry -/
theorem open_one (n : Nat) : n + 0 = n := by
  sorry

theorem open_term : 1 = 1 := sorry

lemma pattern : ∀ n : Nat, n = n
  | 0 => rfl
  | _ + 1 => rfl

namespace Inner
theorem deep : True := by sorry
end Inner

end Demo
"""


def test_lean_project_items_and_infra_without_a_toolchain(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    root = pytester.path / "leanproj"
    (root / "Demo").mkdir(parents=True)
    (root / "lakefile.toml").write_text('name = "demo"\n')
    (root / "Demo" / "Target.lean").write_text(LEAN_FILE)
    decls = {d.qualified: d for d in lean_decls(LEAN_FILE)}
    assert sorted(decls) == ["Demo.Inner.deep", "Demo.open_one", "Demo.open_term", "Demo.pattern", "Demo.proven"]
    assert is_sorry_proof(decls["Demo.open_one"].proof_text(LEAN_FILE))
    assert not is_sorry_proof(decls["Demo.proven"].proof_text(LEAN_FILE))
    tasks = {t.task_id: t for t in lean_tasks(root)}
    assert sorted(tasks) == ["Demo__Inner__deep", "Demo__open_one", "Demo__open_term"]
    assert tasks["Demo__open_one"].template.endswith(":= by\n  sorry\n")
    assert "open_term" not in tasks["Demo__open_one"].template  # the file is cut after the target
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("FORALL_LEAN_BIN", raising=False)
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*BASE, "--forall-project", "leanproj", "--forall-frontend", "replay",
                             "--forall-proofs", str(pytester.path), "--forall-sandbox", "none", "-rs")
    rows = results(pytester, next(p.name for p in (pytester.path / "reports").iterdir() if not p.name.startswith(".")))
    assert {r["outcome"] for r in rows.values()} == {"infra"}
    assert all("Lean toolchain not found" in r["reason"] for r in rows.values())
    assert run.ret == 75


def test_project_tool_faults_are_infra_with_the_reason(tmp_path: Path) -> None:
    """`-arg`s go to coqc only (coqchk refuses `-w`); a project that does not build, an option coqc refuses and a
    derived statement the project's build does not have are infra with the reason, never `failed`."""
    require_tool("coqc")
    root = tmp_path / "args"
    root.mkdir()
    (root / "_CoqProject").write_text("-R . Args\n-arg -w -arg -notation-overridden\nA.v\n")
    (root / "A.v").write_text("Lemma l : 1 + 1 = 2.\nProof. reflexivity. Qed.\n")
    task = load_project(root, {})[0]
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason
    checker = next(layer for layer in verdict.layers if layer.name == "independent_check")
    assert checker.ok and "-w" not in checker.evidence["argv"]

    # a file that does not build: the lemma before the error is judged against the file up to it; the one after
    # the error is infra (nothing was judged); so is every item when coqc refuses the project's options
    root = tmp_path / "broken"
    root.mkdir()
    (root / "_CoqProject").write_text("-R . Broken\nA.v\n")
    (root / "A.v").write_text("Lemma l : 1 + 1 = 2.\nProof. reflexivity. Qed.\nFail Check 0.\n"
                              "Lemma m : 0 = 0.\nProof. reflexivity. Qed.\n")
    before, after = load_project(root, {})
    verdict = verify_candidate(before, prover, before.meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason
    verdict = verify_candidate(after, prover, after.meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "infra" and "A.v does not build in the project" in verdict.reason, verdict.reason
    root = tmp_path / "option"
    root.mkdir()
    (root / "_CoqProject").write_text("-R . Opt\n-arg -no-such-option\nA.v\n")
    (root / "A.v").write_text("Lemma l : 1 + 1 = 2.\nProof. reflexivity. Qed.\n")
    task = load_project(root, {})[0]
    verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "infra" and "coqc refused the project's options" in verdict.reason, verdict.reason

    from pytest_forall.core.audit import audit_pack, derived_tasks

    # project mode offers no statement audit (deriving one re-read the whole file per item, for a claim it could
    # only call infra); a derived statement that reaches the prover anyway is infra with the reason
    task = load_project(tmp_path / "args", {})[0]
    assert derived_tasks(task) == {}
    pack = audit_pack(task.prover)
    assert pack is not None
    refutation = pack.derive(task)["false"]
    result = prover.check_template(refutation, tmp_path / "b", 300)
    assert not result.ok and "not in the project's build" in result.infra, result.infra


def test_an_edit_rebuilds_its_cone_only_and_never_keeps_a_stale_file(project: Path, tmp_path: Path) -> None:
    """The build after an edit starts from the last one: a leaf file is compiled again alone; an edit that breaks
    a file its dependents rest on leaves no stale compiled file behind (they are infra, not judged on old code)."""
    require_tool("coqc")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})

    def build() -> tuple[Path, dict[str, Task]]:
        tasks = {t.task_id: t for t in load_project(project, {})}
        _, where, problem = prover._build(tasks["Demo__More__double_step"], 300)
        assert not problem, problem
        return where, tasks

    first, _ = build()
    more = project / "theories" / "More.v"
    more.write_text(more.read_text() + "\nLemma extra : 0 = 0.\nProof. reflexivity. Qed.\n")
    second, tasks = build()
    assert second != first and json.loads((second / "built.json").read_text())["incremental"]
    log = (second / "build.log").read_text()
    assert "COQC theories/More.v" in log and "COQC theories/Base.v" not in log and "COQC theories/Lemmas.v" not in log
    verdict = verify_candidate(tasks["Demo__More__extra"], prover,
                               tasks["Demo__More__extra"].meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason

    base = project / "theories" / "Base.v"
    base.write_text(base.read_text().replace("Definition double (n : nat) : nat := n + n.",
                                             "Definition double (n : nat) : nat := undefined_name."))
    third, tasks = build()
    assert not (third / "src" / "theories" / "Base.vo").exists() and not (third / "src" / "theories" / "More.vo").exists()
    verdict = verify_candidate(tasks["Demo__More__extra"], prover,
                               tasks["Demo__More__extra"].meta["own_candidate"].encode(), timeout=300)
    assert verdict.verdict == "infra" and "does not build in the project" in verdict.reason, verdict.reason


def test_the_projects_own_odd_text_is_not_refused_by_the_screen(tmp_path: Path) -> None:
    """Real libraries write `Proof. Proof.` and no-break spaces (Coquelicot does): the project's own proof is
    judged by the kernel, not refused by the screen for untrusted text; the same text from elsewhere still is."""
    require_tool("coqc")
    (tmp_path / "_CoqProject").write_text("-R . Odd\nA.v\n")
    (tmp_path / "A.v").write_text("Lemma l : 1 + 1 = 2.\nProof.\nProof.\n  reflexivity.\nQed.\n"
                                  "Lemma m : 2 = 2.\nProof.\n  reflexivity.\u00a0\nQed.\n")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    for task in load_project(tmp_path, {}):
        verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (task.task_id, verdict.reason)
        agent = task.meta["own_candidate"].replace("reflexivity.", "reflexivity. ")
        assert verify_candidate(task, prover, agent.encode(), timeout=300).verdict == "reject"


def test_after_the_first_item_every_files_judge_session_and_coqchk_run_ahead(project: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the build is done, the first item starts the judge session and coqchk of every file with items side by
    side (#18 part 4): their records appear without any other item asking; each file is judged once, in one session
    whatever the number of cores (a second session only took a core from the coqchk, for its start's CPU), and every
    verdict is the one the one-file-at-a-time path gives."""
    import time

    require_tool("coqc")
    require_tool("coqchk")
    tasks = {t.task_id: t for t in load_project(project, {})}
    judged: list[str] = []
    sessions: list[list[str]] = []
    checks: list[list[str]] = []

    def counting(prover: ProjectRocqProver) -> None:
        original, shared, run = prover._judge_file, prover._judge_files, prover._run

        def judge_file(load: list[str], parent: Path, module: str, *rest: object, **kw: object) -> object:
            if parent.name == "judge":  # the build's own file (a candidate is judged in its workspace's tree)
                judged.append(module)
            return original(load, parent, module, *rest, **kw)  # type: ignore[arg-type]

        def judge_files(load: list[str], parent: Path, files: list[tuple[str, list[str]]], *rest: object) -> object:
            sessions.append(sorted(module for module, _ in files))
            return shared(load, parent, files, *rest)  # type: ignore[arg-type]

        def running(argv: list[str], cwd: Path, *rest: object, **kw: object) -> object:
            if argv[0] == prover.coqchk and "tree" not in cwd.parts:  # the build's own files, not a candidate's
                checks.append([argv[i + 1] for i, word in enumerate(argv) if word == "-norec"])
            return run(argv, cwd, *rest, **kw)  # type: ignore[arg-type]
        prover._judge_file = judge_file  # type: ignore[method-assign]
        prover._judge_files = judge_files  # type: ignore[method-assign]
        prover._run = running  # type: ignore[method-assign]

    def candidate(task: Task) -> bytes:  # the stored proof of an admitted lemma, else the project's own
        stored = PROOFS / f"{task.task_id}.v"
        return stored.read_bytes() if stored.is_file() else task.meta["own_candidate"].encode()

    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "ahead"), "timeout": 300})
    counting(prover)
    first = tasks["Demo__Base__double_zero"]
    ahead = {"first": verify_candidate(first, prover, candidate(first), timeout=300)}
    records = tmp_path / "ahead" / "project-rocq" / "by-vo"
    modules = ("Demo.Base", "Demo.Lemmas", "Demo.More")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not all(
            list(records.glob(f"{m}.*.dump")) and list(records.glob(f"{m}.*.coqchk.json")) for m in modules):
        time.sleep(0.5)
    for module in modules:
        assert list(records.glob(f"{module}.*.dump")), f"no judge dump of {module} ahead of its items"
        assert list(records.glob(f"{module}.*.coqchk.json")), f"no coqchk record of {module} ahead of its items"
    verdicts = {tid: verify_candidate(t, prover, candidate(t), timeout=300)
                for tid, t in tasks.items()}
    # one session and one coqchk over every file (the libraries they share loaded once), no file again alone
    assert sessions == [sorted(modules)] and judged == [], (sessions, judged)
    assert [sorted(c) for c in checks] == [sorted(modules)], checks

    # the same items one file at a time (nothing ahead), in a fresh cache: the same verdicts and the same dumps
    monkeypatch.setattr(ProjectRocqProver, "_prefetch_workers", lambda self: 0)
    monkeypatch.setattr(ProjectRocqProver, "_shared_dumps", {})
    lazy = ProjectRocqProver({"cache_dir": str(tmp_path / "lazy"), "timeout": 300})
    for tid, t in tasks.items():
        one = verify_candidate(t, lazy, candidate(t), timeout=300)
        assert (one.verdict, one.strict, list(one.axioms)) == \
            (verdicts[tid].verdict, verdicts[tid].strict, list(verdicts[tid].axioms)), tid
    assert ahead["first"].verdict == verdicts["Demo__Base__double_zero"].verdict == "accept"
    assert sorted(verdicts) == ALL_IDS and all(v.verdict == "accept" for v in verdicts.values()), \
        {tid: v.reason for tid, v in verdicts.items()}
    for module in modules:
        (mine,), (theirs,) = records.glob(f"{module}.*.dump"), (tmp_path / "lazy" / "project-rocq" / "by-vo").glob(
            f"{module}.*.dump")
        assert mine.read_text() == theirs.read_text(), module


def test_a_files_failed_session_ahead_stays_that_files_infra(project: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge session that fails while running ahead records nothing: that file's items are infra with that file's
    reason (from their own call), the other files' items are judged as ever (a shared session that fails is run
    again one file at a time)."""
    require_tool("coqc")
    monkeypatch.setattr(ProjectRocqProver, "_prefetch_workers", lambda self: 1)  # one session over every file
    tasks = {t.task_id: t for t in load_project(project, {})}
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    original = prover._judge_file

    def judge_file(load: list[str], parent: Path, module: str, *rest: object, **kw: object) -> object:
        if module == "Demo.Lemmas" and parent.name == "judge":
            return None, "the session was killed"
        return original(load, parent, module, *rest, **kw)  # type: ignore[arg-type]
    prover._judge_file = judge_file  # type: ignore[method-assign]

    def candidate(task: Task) -> bytes:
        stored = PROOFS / f"{task.task_id}.v"
        return stored.read_bytes() if stored.is_file() else task.meta["own_candidate"].encode()

    shared = prover._judge_files
    sessions: list[list[str]] = []

    def judge_files(load: list[str], parent: Path, files: list[tuple[str, list[str]]], *rest: object) -> object:
        sessions.append([module for module, _ in files])
        if "Demo.Lemmas" in sessions[-1]:  # the shared session dies on that file: none of its files has a dump
            return {}, "the session was killed"
        return shared(load, parent, files, *rest)  # type: ignore[arg-type]
    prover._judge_files = judge_files  # type: ignore[method-assign]

    verdicts = {tid: verify_candidate(t, prover, candidate(t), timeout=300) for tid, t in sorted(tasks.items())}
    assert any(len(s) > 1 and "Demo.Lemmas" in s for s in sessions), sessions
    for tid, verdict in verdicts.items():
        if tid.startswith("Demo__Lemmas__"):
            assert verdict.verdict == "infra" and "own build of Demo.Lemmas: the session was killed" in verdict.reason, \
                (tid, verdict.reason)
        else:
            assert verdict.verdict == "accept", (tid, verdict.reason)


def test_a_file_coqchk_rejects_in_the_shared_check_is_that_files_verdict_only(project: Path, tmp_path: Path) -> None:
    """The build's files are checked by one coqchk; when it fails, each file is checked alone, so the file coqchk
    rejects gets that rejection and the others pass (#18: one process for the standard library's loading, never one
    file's verdict for another)."""
    from pytest_forall.core.proc import ProcResult

    require_tool("coqc")
    require_tool("coqchk")
    tasks = {t.task_id: t for t in load_project(project, {})}
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    run = prover._run
    checks: list[list[str]] = []

    def running(argv: list[str], cwd: Path, *rest: object, **kw: object) -> ProcResult:
        if argv[0] == prover.coqchk and "tree" not in cwd.parts:
            checks.append([argv[i + 1] for i, word in enumerate(argv) if word == "-norec"])
            if "Demo.Lemmas" in checks[-1]:  # coqchk rejects that file's compiled proofs
                return ProcResult(argv, 1, "", "Error: Anomaly: simulated rejection of Demo.Lemmas", 0.1)
        return run(argv, cwd, *rest, **kw)  # type: ignore[arg-type]
    prover._run = running  # type: ignore[method-assign]
    own = {tid: t for tid, t in tasks.items() if not t.meta["admitted"]}
    verdicts = {tid: verify_candidate(t, prover, t.meta["own_candidate"].encode(), timeout=300)
                for tid, t in sorted(own.items())}
    assert any(len(c) > 1 for c in checks) and ["Demo.Lemmas"] in checks, checks
    for tid, verdict in verdicts.items():
        if tid.startswith("Demo__Lemmas__"):
            assert verdict.verdict != "accept" and "simulated rejection" in verdict.reason, (tid, verdict.reason)
        else:
            assert verdict.verdict == "accept", (tid, verdict.reason)


def test_an_items_task_record_names_the_files_text_by_digest(tmp_path: Path) -> None:
    """``task.json`` of a project item records the file up to the target and the project's own proof file by their
    SHA-256, not in full (#18: one copy per item made a library's audit grow with the square of a file's length);
    a short text (a benchmark's frozen statement) stays as it is."""
    import hashlib

    from pytest_forall.core.accept import AuditRecord
    from pytest_forall.core.model import LONG_TEXT

    root = tmp_path / "proj"
    shutil.copytree(PROJECT, root)
    lemmas = root / "theories" / "Lemmas.v"
    padding = "".join(f"Definition pad{i} := {i}.\n" for i in range(2 * LONG_TEXT // 20))
    text = lemmas.read_text()
    lemmas.write_text(text.replace("Lemma add_zero_r", padding + "Lemma add_zero_r", 1))
    task = {t.task_id: t for t in load_project(root, {})}["Demo__Lemmas__add_zero_r"]
    assert len(task.frozen) > LONG_TEXT and len(task.meta["own_candidate"]) > LONG_TEXT
    record = json.loads((AuditRecord(tmp_path / "audit", task).directory / "task.json").read_text())
    written = json.dumps(record)
    assert "pad1 :=" not in written and len(written) < LONG_TEXT + len(json.dumps(task.meta["deps"])) + 2000
    assert record["frozen_sha256"] == hashlib.sha256(task.frozen.encode()).hexdigest()
    assert record["meta"]["own_candidate_sha256"] == hashlib.sha256(task.meta["own_candidate"].encode()).hexdigest()
    assert record["statement"] == task.statement and record["meta"]["qualified_name"] == task.meta["qualified_name"]
    short = Task(task_id="t", suite="s", track="coq", prover="rocq", source_path="x.v", template="T.",
                 frozen="Theorem t : True.", theorem_name="t", statement="Theorem t : True.")
    assert json.loads((AuditRecord(tmp_path / "short", short).directory / "task.json").read_text())["frozen"] == \
        "Theorem t : True."


def test_the_gates_kernel_digests_of_every_item_equal_a_walk_per_item(tmp_path: Path) -> None:
    """``kernel_context``/``kernel_lemmas`` of each item come from one pass over its file's dump (#18: a walk of every
    declaration before the item, per item, was quadratic in a file's length); each equals the digest of the lines
    that walk gives: the files it rests on and every non-opaque declaration before it, the opaque ones before it."""
    import hashlib

    from pytest_forall.lang.rocq.judge import FileDump
    from pytest_forall.lang.rocq.project.records import context_digests

    fields = (("D", "const D def : nat := 0"), ("a", "const a opaque : True"), ("M.b", "const M.b def : nat := 1"),
              ("c", "const c opaque : D = D"), ("a", "const a def : again"), ("e", "const e opaque : False"))
    dump = FileDump(fields, (), frozenset({"a", "c", "e", "D"}), {}, frozenset())

    def walk(target: str, deps_key: str) -> tuple[str, str, str] | None:  # the walk per item, as the gate needs it
        definitions, lemmas = [deps_key], []
        for path, found in fields:
            if path == target:
                def digest(lines: list[str]) -> str:
                    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:24]
                return found, digest(definitions), digest(lemmas)
            (lemmas if found.split(" ")[2:3] == ["opaque"] else definitions).append(f"{path} {found}")
        return None

    for deps_key in ("k1", "k2"):
        table = context_digests(dump, deps_key)
        for target in ("D", "a", "M.b", "c", "e"):
            assert table[target] == walk(target, deps_key), (target, deps_key)
    assert context_digests(dump, "k1")["c"] != context_digests(dump, "k2")["c"]  # the files it rests on count
