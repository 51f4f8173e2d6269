"""Issue 32: a candidate is stored once per reports directory (content-addressed blobs, each record's file a hard
link), ``forall report --prune`` keeps the newest runs and drops the candidates no run links, and the runs kept in a
project's default reports directory are never walked by its collection."""

from __future__ import annotations

import json
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


def _records(run: Path) -> dict[str, os.stat_result]:
    """The JSON files of a run's item records (events.jsonl, appended, is not one of them)."""
    return {p.relative_to(run).as_posix(): p.stat() for p in (run / "items").rglob("*.json")}


def _records_stored_once(reports: Path, run_ids: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    """A later run's item writes the task, the verdict, the acceptance (and, served from the verdict cache, the result)
    the run before wrote (11 MB per warm run of 200 items, issue 32): each JSON file of a record is a link to its
    content-addressed blob, so the same bytes are one file over the runs; every file still reads as the JSON it is,
    and ``forall report`` reads a run so stored as it reads one of plain files (an older run's)."""
    runs = {run_id: _records(reports / run_id) for run_id in run_ids}
    names = set(runs[run_ids[0]])
    assert {n.split("/", 2)[2] for n in names} >= {
        "task.json", "result.json", "audit.json", "accepted/acceptance.json", "s0/r1/candidate-verdict.json"}, names
    shared = set()
    for name in names:
        for run_id in run_ids[1:]:
            earlier, later = reports / run_ids[0] / name, reports / run_id / name
            same = earlier.read_bytes() == later.read_bytes()
            assert same == (runs[run_ids[0]][name].st_ino == runs[run_id][name].st_ino), (name, run_id)
            json.loads(later.read_text())
            shared |= {name} if same else set()
    # (the fake prover's verdicts are never cached: its result's wall time differs run to run, the rest does not)
    assert {n.split("/", 2)[2] for n in shared} >= {"task.json", "accepted/acceptance.json",
                                                    "s0/r1/candidate-verdict.json"}, shared
    last = run_ids[-1]
    shutil.copytree(reports / last, reports / "plain", copy_function=shutil.copyfile)  # as an older run stored it
    assert all(s.st_nlink == 1 for s in _records(reports / "plain").values())
    capsys.readouterr()
    assert forall(["report", str(reports / last)]) == 0
    linked = capsys.readouterr().out
    assert forall(["report", str(reports / "plain")]) == 0
    plain = capsys.readouterr().out
    assert "2 strict" in linked and linked.replace(last, "plain") == plain
    shutil.rmtree(reports / "plain")


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
    blobs = [p for p in (reports / ".blobs").rglob("*") if p.is_file() and p.read_bytes().startswith(b"a proof")]
    assert len(blobs) == 2 and all(p.stat().st_nlink == 1 + 4 * 2 for p in blobs)
    _records_stored_once(reports, ("main", "r1", "r2", "r3"), capsys)
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


def test_a_record_file_written_again_leaves_another_runs_linked_file_as_recorded(tmp_path: Path) -> None:
    """Two records that wrote the same JSON share one file; one written again (an item run again, resumed) gets a new
    file, never the shared one rewritten in place: the other run's record keeps what it recorded."""
    from pytest_forall.core.accept import AuditRecord
    from pytest_forall.core.model import Task

    task = Task(task_id="t", suite="fake", track="fake", prover="fakeprover", source_path="t.txt", template="x\n")
    blobs = tmp_path / ".blobs"
    first, second = AuditRecord(tmp_path / "a" / "t", task, blobs), AuditRecord(tmp_path / "b" / "t", task, blobs)
    one, two = first.write_json("result.json", {"outcome": "strict"}), second.write_json("result.json",
                                                                                          {"outcome": "strict"})
    assert one.stat().st_ino == two.stat().st_ino
    assert (tmp_path / "a/t/task.json").stat().st_ino == (tmp_path / "b/t/task.json").stat().st_ino
    first.write_json("result.json", {"outcome": "failed"})
    first.write_encoded("task.json", '{"changed": true}')
    assert json.loads(two.read_text()) == {"outcome": "strict"}
    assert json.loads((tmp_path / "b/t/task.json").read_text())["task_id"] == "t"
    assert json.loads(one.read_text()) == {"outcome": "failed"}


def test_an_acceptance_is_read_whole_whether_it_holds_or_names_its_verdict(tmp_path: Path) -> None:
    """An acceptance names its submission's verdict file (issue 32: the same verdict was kept twice per accepted item);
    ``read_acceptance`` gives the same record as one written before, which holds the verdict itself."""
    from pytest_forall.core.accept import read_acceptance

    verdict = {"verdict": "accept", "strict": True, "layers": [{"name": "axiom_audit", "ok": True}]}
    fields = {"digest": "d", "strict": True, "axioms": [], "review": None, "round": "s0/r1", "sessions": []}
    old, new = tmp_path / "old", tmp_path / "new"
    for record in (old, new):
        (record / "accepted").mkdir(parents=True)
    (old / "accepted" / "acceptance.json").write_text(json.dumps({**fields, "verdict": verdict}))
    (new / "s0" / "r1").mkdir(parents=True)
    (new / "s0" / "r1" / "candidate-verdict.json").write_text(json.dumps(verdict))
    (new / "accepted" / "acceptance.json").write_text(json.dumps({**fields,
                                                                  "verdict_file": "s0/r1/candidate-verdict.json"}))
    assert read_acceptance(old) == {**fields, "verdict": verdict} == {
        k: v for k, v in read_acceptance(new).items() if k != "verdict_file"}
