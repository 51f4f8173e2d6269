"""Collection from the real PutnamBench checkout, malformed inputs, and budget precedence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO
from pytest_forall.suites.putnam import load_track


def suite_dir(pytester: pytest.Pytester, root: Path) -> pytest.Pytester:
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {root}\n")
    return pytester


def test_every_putnam_problem_becomes_an_item_with_its_track_marker(pytester: pytest.Pytester,
                                                                     putnam_root: Path) -> None:
    suite_dir(pytester, putnam_root)
    assert "1084 tests collected" in pytester.runpytest("--collect-only", "-q").stdout.str()
    assert "412/1084 tests collected" in pytester.runpytest("--collect-only", "-q", "-m", "coq").stdout.str()
    assert "672/1084 tests collected" in pytester.runpytest("--collect-only", "-q", "-m", "lean4").stdout.str()
    one = pytester.runpytest("--collect-only", "-q", "-k", "putnam_1962_a2")
    one.stdout.fnmatch_lines(["putnam.forall.toml::putnam_1962_a2[coq]", "putnam.forall.toml::putnam_1962_a2[lean4]"])


def test_adapter_splits_lean_answer_and_freezes_its_value(putnam_root: Path) -> None:
    tasks = {t.task_id: t for t in load_track(putnam_root, "lean4")}
    task = tasks["putnam_1962_a2"]
    assert "abbrev putnam_1962_a2_solution : Set (ℝ → ℝ) := {f | (∃ a c : ℝ" in task.template
    assert task.answer.startswith("{f | (∃ a c")
    assert task.frozen.rstrip().endswith(":=") and task.template[len(task.frozen):].startswith("sorry")
    assert task.meta["preamble"].startswith("import Mathlib")
    assert sum(1 for t in tasks.values() if t.answer) == 346
    assert not [t.task_id for t in tasks.values() if t.problem]
    coq = {t.task_id: t for t in load_track(putnam_root, "coq")}
    assert coq["putnam_1968_a1"].theorem_name == "putnam_1968_b1"  # upstream names it differently
    assert all(t.frozen and t.theorem_name for t in coq.values())


def test_malformed_problem_files_become_failing_items_naming_the_file(pytester: pytest.Pytester) -> None:
    root = pytester.path / "bench"
    (root / "coq" / "src").mkdir(parents=True)
    (root / "lean4" / "src").mkdir(parents=True)
    (root / "coq" / "src" / "no_hole.v").write_text("Theorem no_hole : True.\nProof. exact I. Qed.\n")
    (root / "coq" / "src" / "latin1.v").write_bytes(b"Theorem caf\xe9 : True.\nProof. Admitted.\n")
    (root / "lean4" / "src" / "no_theorem.lean").write_text("import Mathlib\n\nlemma other : True := sorry\n")
    (root / "lean4" / "src" / "bad_answer.lean").write_text(
        "import Mathlib\nabbrev bad_answer_solution : ℕ := sorry\n\ntheorem bad_answer : bad_answer_solution = 1 :=\n  sorry\n")
    suite_dir(pytester, root)
    result = pytester.runpytest("-p", "no:cacheprovider", "--forall-run-id=m")
    assert result.ret == 1  # failures, not a collection crash (which would be 2)
    result.stdout.fnmatch_lines([
        "*bad_answer*not followed by a `-- <answer>` comment line*",
        "*no_theorem.lean: no `theorem no_theorem` in the file*",
    ])
    out = result.stdout.str()
    assert "latin1.v: cannot read" in out
    assert "no_hole.v: no `Admitted.` to replace" in out


@pytest.mark.parametrize(("manifest", "message"), [
    ("adapter = [", "cannot read suite manifest"),
    ("tracks = ['coq']", "has no `adapter"),
    ("adapter = 'nonesuch'", "no installed adapter is called 'nonesuch'"),
    ("adapter = 'putnam'\ntracks = ['isabelle']", "unknown PutnamBench track"),
])
def test_bad_manifests_are_one_collection_error_naming_the_manifest(pytester: pytest.Pytester, putnam_root: Path,
                                                                   manifest: str, message: str) -> None:
    pytester.makefile(".forall.toml", broken=manifest)
    pytester.makeini(f"[pytest]\nforall_putnam_root = {putnam_root}\n")
    for marker in ([], ["-m", "coq"]):   # never deselectable: the README's main command selects -m coq
        result = pytester.runpytest("-p", "no:cacheprovider", *marker)
        assert result.ret == pytest.ExitCode.INTERRUPTED, marker   # a collection error, never exit 5 or a "failed proof"
        result.stdout.fnmatch_lines([f"*broken.forall.toml*{message}*", "*1 error*"])
        out = result.stdout.str()
        assert "Traceback" not in out and "deselected" not in out and "unsandboxed" not in out


@pytest.mark.parametrize("layout", ["missing", "empty"])
def test_a_missing_or_empty_benchmark_root_is_one_error(pytester: pytest.Pytester, layout: str) -> None:
    root = pytester.path / "nowhere"
    if layout == "empty":
        (root / "coq" / "src").mkdir(parents=True)
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    result = pytester.runpytest("-p", "no:cacheprovider", "-m", "coq", f"--forall-putnam-root={root}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    expected = "is not a PutnamBench checkout" if layout == "missing" else "found no tasks"
    result.stdout.fnmatch_lines([f"*putnam.forall.toml*{expected}*"])
    assert "Traceback" not in result.stdout.str()


def test_missing_putnam_root_names_every_way_to_set_it(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PUTNAMBENCH_ROOT", raising=False)
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*--forall-putnam-root*forall_putnam_root*PUTNAMBENCH_ROOT*"])
    wrong = pytester.runpytest("-p", "no:cacheprovider", f"--forall-putnam-root={pytester.path}")
    wrong.stdout.fnmatch_lines(["*--forall-putnam-root / forall_putnam_root*is not a PutnamBench checkout*"])


# -- budgets: marker > CLI > ini > suite manifest ------------------------------------------------------

def rounds_suite(pytester: pytest.Pytester, manifest_budget: str = "") -> pytest.Pytester:
    pytester.makeconftest((EXAMPLES / "fake_conftest.py").read_text())
    pytester.makefile(".forall.toml", suite=f'adapter = "fake"\n[tasks]\nt_slow = "ROUNDS:3"\n{manifest_budget}')
    return pytester


def outcome(pytester: pytest.Pytester, run_id: str, *args: str) -> dict:
    pytester.runpytest("-p", "no:cacheprovider", "--forall-frontend=fake", f"--forall-run-id={run_id}", *args)
    lines = (pytester.path / "reports" / run_id / "results.jsonl").read_text().splitlines()
    return json.loads(lines[-1])


def test_budget_precedence_marker_over_cli_over_ini_over_manifest(pytester: pytest.Pytester) -> None:
    suite = rounds_suite(pytester, "[budget]\nrounds = 2\n")
    assert "round budget of 2 exhausted" in outcome(suite, "manifest")["reason"]
    suite.makeini("[pytest]\nforall_rounds = 3\n")
    assert outcome(suite, "ini")["outcome"] == "strict"
    assert "round budget of 1" in outcome(suite, "cli", "--forall-rounds=1")["reason"]
    conftest = suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + (
        "\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.forall_budget(rounds=3))\n"))
    assert outcome(suite, "marker", "--forall-rounds=1")["outcome"] == "strict"


def test_bad_budget_values_name_their_source(pytester: pytest.Pytester) -> None:
    suite = rounds_suite(pytester)
    result = suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=fake", "--forall-rounds=lots")
    result.stderr.fnmatch_lines(["ERROR: --forall-rounds: rounds must be a whole number, got 'lots'"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR   # checked once, at configure time
    suite.makeini("[pytest]\nforall_wall = -4\n")
    result = suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=fake")
    result.stderr.fnmatch_lines(["ERROR: ini option forall_wall: wall must be positive, got '-4'"])
    suite.makeini("[pytest]\nforall_wall = nan\n")
    result = suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=fake")
    result.stderr.fnmatch_lines(["ERROR: ini option forall_wall: wall must be positive, got 'nan'"])
    suite.makeini("[pytest]\n")
    conftest = suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + (
        "\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.forall_budget(roundz=3))\n"))
    result = suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=fake")
    result.stdout.fnmatch_lines(["*forall_budget marker on suite.forall.toml::t_slow?fake?: unknown budget field(s) ?'roundz'?*"])


# -- garbage collection: what the collection made lives to the end of the session -----------------------------------

FREEZE_PROBE = '''
import gc, json, pathlib

SEEN = []


def pytest_configure(config):  # as pytest's own plugins do for their collections at exit (unraisableexception)
    config.add_cleanup(lambda: pathlib.Path("cleanup.json").write_text(json.dumps(gc.get_freeze_count())))


def pytest_runtest_call(item):
    SEEN.append(gc.get_freeze_count())


def pytest_unconfigure(config):
    pathlib.Path("freeze.json").write_text(json.dumps({"items": SEEN, "at_exit": gc.get_freeze_count()}))
'''


@pytest.mark.parametrize("forall", [True, False])
def test_what_the_collection_made_is_frozen_for_the_session_and_released_after(pytester: pytest.Pytester,
                                                                               forall: bool) -> None:
    """With forall items collected, every object alive at the end of the collection is out of the garbage collector's
    walks (``gc.freeze``) while the items run and until pytest's own collections at exit (#18: they walked a project's
    tasks again and again, 0.7-0.8 s of a warm Coquelicot run), and back in them once the session is over (an
    in-process run leaves nothing frozen). A session of plain tests freezes nothing."""
    import gc

    if forall:
        pytester.makeconftest((EXAMPLES / "fake_conftest.py").read_text() + FREEZE_PROBE)
        pytester.makefile(".forall.toml", suite='adapter = "fake"\n[tasks]\nt_one = "STRICT"\nt_two = "STRICT"\n')
    else:
        pytester.makeconftest(FREEZE_PROBE)
        pytester.makepyfile(test_plain="def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    gc.unfreeze()
    result = pytester.runpytest("-p", "no:cacheprovider", *(["--forall-frontend=fake"] if forall else []))
    seen = json.loads((pytester.path / "freeze.json").read_text())
    seen["cleanup"] = json.loads((pytester.path / "cleanup.json").read_text())
    assert len(seen["items"]) == 2, result.stdout.str()[-2000:]
    if forall:
        assert all(count > 1000 for count in seen["items"]) and seen["at_exit"] > 1000 and seen["cleanup"] > 1000, seen
    else:
        assert seen["items"] == [0, 0] and seen["at_exit"] == 0 == seen["cleanup"], seen
    assert gc.get_freeze_count() == 0
