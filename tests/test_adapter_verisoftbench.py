"""VeriSoftBench adapter on a synthetic dataset + repository in the exact record schema.

Lean scoring runs against the stand-in `lean`/`lake` (tests/standin, not Lean) or, without it, must
report `infra`. The subset ids are the real ones from ../shared/benchmarks/VeriSoftBench.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import REPO
from conftest import SHARED as SHARED_ROOT
from pytest_forall.core import workspace as ws
from pytest_forall.core.verify import verify_candidate
from pytest_forall.suites.verisoftbench import (
    VeriSoftBenchProver,
    load_tasks,
    sanitize_lean,
    splice,
)

SHARED = SHARED_ROOT / "benchmarks" / "VeriSoftBench"
STANDIN = REPO / "tests" / "standin"
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--forall-sandbox", "none"]

BASIC = """namespace Demo

def double (n : Nat) : Nat := n + n

theorem double_zero : double 0 = 0 := by
  simp [double]

/-- A repository lemma the authors left unproved. -/
theorem helper_sorry (n : Nat) : double n = 2 * n := by
  sorry

end Demo
"""

TARGET = """import Demo.Basic

namespace Demo

theorem before_target (n : Nat) : n + 0 = n := by
  rfl

/-- doc for target -/
theorem target_thm (n : Nat) : double n = n + n := by
  unfold double
  rfl

theorem later_sorry : double 2 = 4 := by
  sorry

lemma pattern_lemma : ∀ n : Nat, n = n
  | 0 => rfl
  | _ + 1 => rfl

theorem term_proof : double 1 = 2 := rfl

end Demo
"""
STATEMENT = "/-- doc for target -/\ntheorem target_thm (n : Nat) : double n = n + n"
STANDIN_OLEAN = {"standin": "olean", "module": "Demo.Basic", "imports": [],
                 "decls": {"Demo.double": [], "Demo.double_zero": ["propext"], "Demo.helper_sorry": ["sorryAx"]}}


def record(task_id: int, **fields: object) -> dict[str, object]:
    """A record with exactly the keys, in the order, of the upstream sample (values synthetic)."""
    sample = json.loads((SHARED / "sample_record_id1_abridged.json").read_text())
    values = {"id": task_id, "thm_name": "Demo.target_thm", "thm_stmt": STATEMENT, "lean_root": "DemoRepo",
              "rel_path": "Demo/Target.lean", "imports": ["import Demo.Basic"],
              "used_lib_defs": [{"name": "Nat", "module": "Init.Prelude"}],
              "used_repo_defs": [{"name": "Demo.double", "content": "def double (n : Nat) : Nat := n + n"}],
              "lib_lemmas": [], "repo_lemmas": [], "used_local_defs": [], "used_local_lemmas": [],
              "local_ctx": "import Demo.Basic\n\nnamespace Demo", "target_theorem": STATEMENT + " :=",
              "ground_truth_proof": ":= by\n  unfold double\n  rfl", "nesting_depth": 1, "transitive_dep_count": 1,
              "subset_aristotle": False, "category": "Synthetic", **fields}
    assert set(values) == set(sample) - {"_note"}
    return {key: values[key] for key in sample if key != "_note"}


def make_root(tmp_path: Path, records: list[dict[str, object]], repo: bool = True) -> Path:
    root = tmp_path / "vsb"
    (root / "repos").mkdir(parents=True)
    (root / "verisoftbench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if repo:
        demo = root / "repos" / "DemoRepo"
        (demo / "Demo").mkdir(parents=True)
        (demo / "Demo" / "Basic.lean").write_text(BASIC)
        (demo / "Demo" / "Target.lean").write_text(TARGET)
        (demo / "lakefile.toml").write_text('name = "demo"\n[[lean_lib]]\nname = "Demo"\n')
        (demo / "lake-manifest.json").write_text(json.dumps({"version": "1.1.0", "packagesDir": ".lake/packages",
                                                              "packages": []}))
        (demo / ".git").mkdir()
        (demo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        lib = demo / ".lake" / "build" / "lib" / "lean" / "Demo"
        lib.mkdir(parents=True)
        (lib / "Basic.olean").write_text(json.dumps(STANDIN_OLEAN))
    return root


def test_the_aristotle_subset_is_the_real_csv(tmp_path: Path) -> None:
    with (SHARED / "aristotle_subset_tasks.csv").open() as handle:
        subset = {int(row["task_id"]) for row in csv.DictReader(handle)}
    assert len(subset) == 100
    records = [record(i, subset_aristotle=i in subset) for i in range(1, 501)]
    root = make_root(tmp_path, records, repo=False)
    shutil.copyfile(SHARED / "aristotle_subset_tasks.csv", root / "aristotle_subset_tasks.csv")
    options = {"cache_dir": str(tmp_path / "cache")}
    assert {t.task_id for t in load_tasks(root, options, "aristotle")} == {f"vsb_{i}" for i in subset}
    assert len(load_tasks(root, options)) == 500
    # the records' own flag is the fallback when the CSV is absent; both must agree
    (root / "aristotle_subset_tasks.csv").unlink()
    (root / "verisoftbench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:60]))
    assert {t.task_id for t in load_tasks(root, options, "aristotle")} == {f"vsb_{i}" for i in subset if i <= 60}


def test_the_workspace_is_a_sanitized_copy(tmp_path: Path) -> None:
    root = make_root(tmp_path, [record(7)])
    (task,) = load_tasks(root, {"cache_dir": str(tmp_path / "cache")})
    assert task.task_id == "vsb_7" and task.candidate_name == "vsb_7.lean" and task.prover == "lean-verisoftbench"
    assert task.template == STATEMENT + " := by\n  sorry\n"
    assert task.meta["retrieval_exclude"] == ["Demo.target_thm"] and task.theorem_name == "Demo.target_thm"
    workspace = ws.prepare(tmp_path / "ws", "w", task, reset=True)
    assert sorted(p.name for p in workspace.iterdir()) == ["TASK.md", "repo", "vsb_7.lean"]
    copied = sorted(p.relative_to(workspace / "repo").as_posix() for p in (workspace / "repo").rglob("*"))
    assert copied == ["Demo", "Demo/Basic.lean", "Demo/Target.lean", "lake-manifest.json", "lakefile.toml"]  # no .git/.lake
    target = (workspace / "repo" / "Demo" / "Target.lean").read_text()
    assert "unfold double" not in target and "rfl" not in target  # every proof elided, the target's included
    assert "theorem before_target (n : Nat) : n + 0 = n := sorry" in target
    assert STATEMENT + " := sorry" in target
    assert "lemma pattern_lemma : ∀ n : Nat, n = n := sorry" in target and "| 0" not in target
    assert "theorem term_proof : double 1 = 2 := sorry" in target
    basic = (workspace / "repo" / "Demo" / "Basic.lean").read_text()
    assert "def double (n : Nat) : Nat := n + n" in basic  # definitions are kept
    assert "simp [double]" not in basic and "/-- A repository lemma the authors left unproved. -/" in basic
    assert not any(".git" in str(p) for p in workspace.rglob("*"))
    # the original repository is untouched
    assert (root / "repos" / "DemoRepo" / "Demo" / "Target.lean").read_text() == TARGET


def test_sanitizer_and_splice_details() -> None:
    text = "theorem a : True := by\n  -- a comment\n  trivial\n\ndef b : Nat := 1\n"
    assert sanitize_lean(text) == "theorem a : True := sorry\n\ndef b : Nat := 1\n"
    candidate = "theorem helper : 1 = 1 := rfl\n\n" + STATEMENT + " := by\n  simp [double]"
    spliced, first, last = splice(TARGET, STATEMENT, candidate)
    assert spliced.count("theorem helper") == 1 and "unfold double" not in spliced
    assert spliced.splitlines()[first - 1] == "theorem helper : 1 = 1 := rfl"
    assert spliced.splitlines()[last - 1] == "  simp [double]"
    assert spliced.splitlines()[last + 1] == "theorem later_sorry : double 2 = 4 := by"
    with pytest.raises(ValueError, match="pinned commit"):
        splice(TARGET.replace("target_thm", "renamed"), STATEMENT, candidate)


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([str(STANDIN), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    for name in ("FORALL_LEAN_BIN", "LEAN_PATH", "STANDIN_LEAN_VERSION", "STANDIN_LOG"):
        monkeypatch.delenv(name, raising=False)


def test_scoring_splices_into_the_original_file_standin(tmp_path: Path, standin: None) -> None:
    """Against the stand-in: strict, benchmark-rule-only (inherited sorryAx) and rejected candidates."""
    root = make_root(tmp_path, [record(1)])
    (task,) = load_tasks(root, {"cache_dir": str(tmp_path / "cache")})
    prover = VeriSoftBenchProver({"cache_dir": str(tmp_path / "cache")})
    assert not prover.check_template(task, tmp_path / "b0", 60).infra

    clean = STATEMENT + " := by\n  unfold double\n  rfl\n"
    verdict = verify_candidate(task, prover, clean.encode(), timeout=60)
    assert verdict.verdict == "accept" and verdict.strict and list(verdict.axioms) == [], verdict.reason
    # later_sorry in the same original file is the repository's, not the candidate's

    inherited = "theorem my_helper : True := trivial\n\n" + STATEMENT + " := by\n  rw [helper_sorry]\n  omega\n"
    verdict = verify_candidate(task, prover, inherited.encode(), timeout=60)
    assert verdict.verdict == "accept" and not verdict.strict, verdict.reason
    assert "sorryAx" in verdict.axioms

    own_sorry = STATEMENT + " := by\n  sorry\n"
    verdict = verify_candidate(task, prover, own_sorry.encode(), timeout=60)
    assert verdict.verdict == "reject" and "sorry" in verdict.reason

    changed = STATEMENT.replace("n + n", "n * 2") + " := by\n  unfold double\n  omega\n"
    verdict = verify_candidate(task, prover, changed.encode(), timeout=60)
    assert verdict.verdict == "reject" and verdict.reason.startswith("frozen_statement")

    broken = STATEMENT + " := by\n  exact foo -- STANDIN_ERROR: unknown identifier 'foo'\n"
    verdict = verify_candidate(task, prover, broken.encode(), timeout=60)
    assert verdict.verdict == "reject" and "unknown identifier" in verdict.reason


MANIFEST = REPO / "benchmarks" / "verisoftbench" / "verisoftbench.forall.toml"


def test_items_report_usage_errors_and_infra(pytester: pytest.Pytester, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("FORALL_LEAN_BIN", raising=False)
    monkeypatch.delenv("VERISOFTBENCH_ROOT", raising=False)
    pytester.makeini("[pytest]\n")
    pytester.makefile(".forall.toml", verisoftbench=MANIFEST.read_text())
    run = pytester.runpytest(*BASE)
    run.stdout.fnmatch_lines(["*VeriSoftBench location not set: pass --forall-verisoftbench-root*"])
    assert run.ret == pytest.ExitCode.INTERRUPTED   # one collection error naming the fix, never an item
    run = pytester.runpytest(*BASE, f"--forall-verisoftbench-root={tmp_path}")
    run.stdout.fnmatch_lines(["*no dataset in*verisoftbench.jsonl*"])

    root = make_root(tmp_path, [record(1), record(2, lean_root="MissingRepo")])
    run = pytester.runpytest(*BASE, f"--forall-verisoftbench-root={root}", "--forall-frontend", "replay",
                             f"--forall-proofs={tmp_path}", "--forall-run-id", "r", "-rs")
    rows = {json.loads(line)["task_id"]: json.loads(line)
            for line in (pytester.path / "reports" / "r" / "results.jsonl").read_text().splitlines()}
    assert rows["vsb_2"]["outcome"] == "infra" and "repository 'MissingRepo' is missing" in rows["vsb_2"]["reason"]
    assert rows["vsb_1"]["outcome"] == "infra" and "Lean toolchain not found" in rows["vsb_1"]["reason"]
    assert run.ret == 75
    run = pytester.runpytest(*BASE, f"--forall-verisoftbench-root={root}", "--forall-subset", "nope")
    assert "--forall-subset 'nope': VeriSoftBench knows ['aristotle']" in run.stdout.str()
    assert run.ret == pytest.ExitCode.INTERRUPTED
