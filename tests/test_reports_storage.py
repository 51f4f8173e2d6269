"""Issue 32: a candidate is stored once per reports directory (content-addressed blobs, each record's file a hard
link), ``forall report --prune`` keeps the newest runs and drops the candidates no run links, and the runs kept in a
project's default reports directory are never walked by its collection."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, require_tool
from pytest_forall.cli import main as forall

FAKE = ["-p", "no:cacheprovider", "--forall-sandbox=none"]
SUITE = 'adapter = "fake"\n[tasks]\nt_a = "STRICT"\nt_b = "STRICT"\n'


@pytest.fixture
def replayed(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest((EXAMPLES / "fake_conftest.py").read_text())
    pytester.makefile(".forall.toml", suite=SUITE)
    store = pytester.path / "store"
    store.mkdir()
    for task in ("t_a", "t_b"):
        (store / f"{task}.txt").write_text(f"a proof of {task}\n" * 200)
    return pytester


def _run(pytester: pytest.Pytester, run_id: str) -> None:
    result = pytester.runpytest(*FAKE, "--forall-frontend=replay", f"--forall-proofs={pytester.path / 'store'}",
                                f"--forall-run-id={run_id}")
    assert result.ret == 0, result.stdout.str()


def _candidates(run: Path) -> dict[str, os.stat_result]:
    return {p.relative_to(run).as_posix(): p.stat() for p in (run / "items").rglob("*.txt")}


def test_a_candidate_is_stored_once_over_runs_and_prune_keeps_what_is_asked(replayed: pytest.Pytester,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    for run_id in ("main", "r1", "r2", "r3"):
        _run(replayed, run_id)
    reports = replayed.path / "reports"
    runs = {run_id: _candidates(reports / run_id) for run_id in ("main", "r1", "r2", "r3")}
    assert len(runs["r1"]) == 4  # per item: the submission and the accepted file
    inodes = {(s.st_dev, s.st_ino) for files in runs.values() for s in files.values()}
    assert len(inodes) == 2  # one file per distinct candidate, for the four runs
    blobs = [p for p in (reports / ".blobs").rglob("*") if p.is_file()]
    assert len(blobs) == 2 and all(p.stat().st_nlink == 1 + 4 * 2 for p in blobs)
    # retention: the newest run and the baseline kept, the rest deleted; the blobs stay while a run links them
    assert forall(["report", "--prune", str(reports), "--keep", "1", "--keep-run", "main"]) == 0
    out = capsys.readouterr().out
    assert "deleted r1" in out and "deleted r2" in out and "kept main (protected)" in out
    assert sorted(p.name for p in reports.iterdir() if not p.name.startswith(".")) == ["main", "r3"]
    assert all(p.stat().st_nlink == 1 + 2 * 2 for p in blobs)
    kept = sorted((reports / "r3" / "items").rglob("*.txt"))
    assert len(kept) == 4 and {p.read_text() for p in kept} == {f"a proof of {t}\n" * 200 for t in ("t_a", "t_b")}
    assert forall(["report", "--prune", str(reports), "--keep", "0"]) == 0
    assert not [p for p in (reports / ".blobs").rglob("*") if p.is_file()]  # no run links them: removed
    assert forall(["report", "--prune", str(reports)]) == 2  # how many to keep must be said


def test_runs_in_a_projects_reports_directory_are_never_walked(pytester: pytest.Pytester) -> None:
    """After runs kept in the project's default ``reports/``, the collection visits nothing under it (pytest's walk
    does not enter it), so a collection costs what the first one did whatever the number of runs."""
    require_tool("coqc")
    shutil.copytree(Path(__file__).resolve().parent / "fixtures" / "project_rocq", pytester.path / "lib")
    pytester.makeini("[pytest]\n")
    pytester.makeconftest("""
        import os

        def pytest_collect_directory(path, parent):
            with open(os.environ["WALKED"], "a") as handle:
                handle.write(str(path) + "\\n")
        """)
    args = ["-p", "no:cacheprovider", "--forall-project", "lib", "--forall-frontend", "replay",
            "--forall-reports", "lib/reports"]
    walked = pytester.path / "walked.txt"
    os.environ["WALKED"] = str(walked)
    try:
        for run_id in ("a", "b"):
            pytester.runpytest(*args, "--forall-run-id", run_id)
        walked.unlink()
        assert pytester.runpytest(*args, "--collect-only", "-q").ret == 0
    finally:
        del os.environ["WALKED"]
    visited = walked.read_text().split()
    assert str(pytester.path / "lib" / "theories") in visited and (pytester.path / "lib" / "reports" / "a").is_dir()
    assert not [p for p in visited if "reports" in Path(p).parts], visited
