"""The reports directory: a session that selects no forall item leaves nothing behind (the plugin is installed
next to unrelated projects); a forall session has its run directory, secret and ``run.json`` before its first
item runs, serially, under ``-n 2`` and with remote workers (tests/test_gating.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require_tool
from pytest_forall.core import workspace as ws

#: pytest's cache and pytest-benchmark's ``.benchmarks`` are other plugins' files, kept out of the comparison
NOT_OURS = ["-p", "no:cacheprovider", "-p", "no:benchmark"]
BASE = [*NOT_OURS, "--forall-frontend=fake"]
PLAIN = "def test_one():\n    assert 1\n\n\ndef test_two():\n    assert 2\n"
#: Every forall item's setup writes what it sees of the run directory (the controller made it before).
SEEN = '''

def pytest_runtest_setup(item):
    import json, pathlib
    if ".forall.toml::" not in item.nodeid:
        return
    run = pathlib.Path(str(item.config.rootpath)) / "reports" / "seen"
    meta = json.loads((run / "run.json").read_text())
    with open(pathlib.Path(str(item.config.rootpath)) / "seen.log", "a") as handle:
        handle.write(json.dumps([item.nodeid, (run / ".secret").stat().st_size, meta["selected"]]) + "\\n")
'''


def tree(root: Path) -> set[str]:
    """Every path under ``root`` but pytest's own byte-code caches (assertion rewriting writes those)."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts}


@pytest.mark.parametrize("extra", [[], ["--co"], ["-n", "2"], ["--forall-reports=out/deep"],
                                   ["-n", "2", "--forall-run-id=named"]])
def test_a_session_of_plain_tests_creates_nothing(pytester: pytest.Pytester, extra: list[str]) -> None:
    pytester.makepyfile(test_x=PLAIN)
    before = tree(pytester.path)
    result = pytester.runpytest(*NOT_OURS, *extra)
    assert result.ret == 0, result.stdout.str()[-1500:]
    assert tree(pytester.path) == before


def test_a_plain_test_that_crashes_its_worker_is_no_forall_row(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x=PLAIN + "\n\ndef test_crash():\n    import os\n    os._exit(3)\n")
    before = tree(pytester.path)
    result = pytester.runpytest(*NOT_OURS, "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "forall summary" not in result.stdout.str()
    assert tree(pytester.path) == before


@pytest.mark.parametrize("extra", [["--co"], ["-k", "no_such_item"], ["-n", "2", "-k", "no_such_item"]])
def test_a_forall_suite_whose_items_are_not_run_creates_nothing(fake_suite: pytest.Pytester,
                                                               extra: list[str]) -> None:
    before = tree(fake_suite.path)
    result = fake_suite.runpytest(*BASE, *extra)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout.str()[-1500:]
    assert tree(fake_suite.path) == before


@pytest.mark.parametrize("extra", [[], ["-n", "2"]])
def test_a_forall_session_has_its_run_dir_before_the_first_item(fake_suite: pytest.Pytester,
                                                                extra: list[str]) -> None:
    conftest = fake_suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + SEEN)
    fake_suite.makepyfile(test_plain=PLAIN)
    result = fake_suite.runpytest(*BASE, "--forall-sandbox=none", "--forall-run-id=seen", *extra)
    run = fake_suite.path / "reports" / "seen"
    seen = [json.loads(line) for line in (fake_suite.path / "seen.log").read_text().splitlines()]
    assert sorted(nodeid for nodeid, _, _ in seen) == sorted(
        f"suite.forall.toml::{t}[fake]" for t in ("t_strict", "t_rules", "t_failed", "t_infra", "t_false"))
    assert {(size, selected) for _, size, selected in seen} == {(32, 5)}, seen
    meta = json.loads((run / "run.json").read_text())
    assert meta["selected"] == 5 and meta["finished"] is not None and meta["exitstatus"] == result.ret
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 5
    # each row says when it was recorded and what its item took (issue 33, item 17; through xdist too)
    assert all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", row["recorded_at"]) for row in rows), rows
    assert all(type(row["wall_s"]) is float and row["wall_s"] >= 0 for row in rows), rows
    secret = (run / ".secret").read_bytes()
    # (t_infra ends on its template before a sample starts: the protocol makes no workspace for it)
    names = {ws.opaque_name(secret, nodeid) for nodeid, _, _ in seen if "t_infra" not in nodeid}
    assert names == {p.name for p in (run / "ws").iterdir()}, "every worker names workspaces with the run's secret"


def test_a_file_where_the_run_directory_must_be_is_one_error_and_nothing_is_created(
        fake_suite: pytest.Pytester) -> None:
    (fake_suite.path / "afile").write_text("not a directory")
    (fake_suite.path / "reports" / "r" / "results.jsonl").mkdir(parents=True)
    before = tree(fake_suite.path)
    for extra in ([], ["-n", "2"]):
        for args in (["--forall-reports=afile/deeper"], ["--forall-run-id=r"]):
            result = fake_suite.runpytest(*BASE, *args, *extra)
            assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-800:]
            out = result.stdout.str() + result.stderr.str()
            assert "Traceback" not in out and "INTERNALERROR" not in out
            assert tree(fake_suite.path) == before, args


def test_a_run_directory_that_cannot_be_made_after_configure_is_one_error(fake_suite: pytest.Pytester) -> None:
    """Something makes ``reports`` a file during collection: the run stops before any item with one message."""
    conftest = fake_suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + (
        "\ndef pytest_collection_modifyitems(items):\n"
        "    import pathlib\n"
        "    pathlib.Path('reports').write_text('in the way')\n"))
    for extra in ([], ["-n", "2"]):
        result = fake_suite.runpytest(*BASE, "--forall-run-id=late", *extra)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-800:]
        result.stderr.fnmatch_lines([("ERROR: default of --forall-reports: cannot write the run directory "
                                      "*/reports/late: *")])
        out = result.stdout.str() + result.stderr.str()
        assert "Traceback" not in out and "INTERNALERROR" not in out and "forall summary" not in out
        # issue 33, item 14: said before pytest's closing line ("… deselected in 1.65s" read like a finished run)
        lines = result.stdout.lines
        said = next(i for i, line in enumerate(lines) if line.startswith(
            "forall: no run was made and no item ran (exit 4): default of --forall-reports: cannot write"))
        assert said < max(i for i, line in enumerate(lines) if line.startswith("=")), lines[-5:]
        assert (fake_suite.path / "reports").read_text() == "in the way"
        (fake_suite.path / "reports").unlink()


def _read_only(path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest argv`` in ``path``, which is mounted read-only (for root too) by bubblewrap."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(path), str(path), sys.executable,
                           "-m", "pytest", "-p", "no:hypothesispytest", *argv], cwd=path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("extra", [[], ["-n", "2"]])
def test_a_read_only_project(fake_suite: pytest.Pytester, extra: list[str]) -> None:
    """Plain tests in a read-only tree pass; the forall items there are one error naming the option, not run."""
    require_tool("bwrap")
    fake_suite.makepyfile(test_plain=PLAIN)
    before = tree(fake_suite.path)
    plain = _read_only(fake_suite.path, *BASE, "test_plain.py", *extra)
    assert plain.returncode == 0, plain.stdout[-1500:] + plain.stderr[-1500:]
    suite = _read_only(fake_suite.path, *BASE, "--forall-run-id=ro", *extra)
    assert suite.returncode == pytest.ExitCode.USAGE_ERROR, suite.stdout[-1500:] + suite.stderr[-1500:]
    assert (f"ERROR: default of --forall-reports: cannot write the run directory {fake_suite.path}/reports/ro: "
            "Read-only file system") in suite.stderr
    assert "Traceback" not in suite.stdout + suite.stderr and "forall summary" not in suite.stdout
    if not extra:  # configure time, before any worker starts
        explicit = _read_only(fake_suite.path, *BASE, "--forall-reports=elsewhere", "test_plain.py")
        assert explicit.returncode == pytest.ExitCode.USAGE_ERROR, explicit.stdout[-1500:]
        assert "ERROR: --forall-reports: cannot write the run directory" in explicit.stderr
        assert "collected" not in explicit.stdout, "an explicit --forall-reports is checked at configure time"
    assert tree(fake_suite.path) == before
