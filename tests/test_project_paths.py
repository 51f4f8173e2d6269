"""Issue 32: paths the user types resolve from where they typed them, no option's value moves the rootdir (and with
it the project), and pytest's own walk never enters the reports directory, the cache or a run directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import require_tool

PROJECT = Path(__file__).resolve().parent / "fixtures" / "project_rocq"
ITEMS = 5  # the fixture's proofs (tests/test_project_suite.py)


@pytest.fixture
def library(pytester: pytest.Pytester) -> Path:
    require_tool("coqc")
    root = pytester.path / "lib"
    shutil.copytree(PROJECT, root)
    # a run directory of an earlier run in the default reports directory, and one of another --forall-reports, each
    # holding a test file as a copied workspace would: never collected
    for run in (root / "reports" / "r1", root / "old-runs" / "r2"):
        (run / "ws").mkdir(parents=True)
        (run / ".secret").write_bytes(b"s")
        (run / "run.json").write_text("{}")
        (run / "ws" / "test_copy.py").write_text("def test_copied():\n    assert False\n")
    (pytester.path / "elsewhere" / "cache").mkdir(parents=True)
    return root


@pytest.mark.parametrize("form", ["space", "equals"])
def test_the_project_is_where_the_user_typed_it_whatever_the_cache_options_form(
        pytester: pytest.Pytester, library: Path, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    monkeypatch.chdir(library)
    cache = str(pytester.path / "elsewhere" / "cache")
    option = ["--forall-cache-dir", cache] if form == "space" else [f"--forall-cache-dir={cache}"]
    result = pytester.runpytest("-p", "no:cacheprovider", "--forall-project=.", *option, "--collect-only", "-q")
    out = result.stdout.str()
    assert result.ret == 0, out
    collected = [line for line in out.splitlines() if "::" in line]
    assert len(collected) == ITEMS and all(line.startswith("./project.forall.toml::") for line in collected), out
    assert "test_copied" not in out and "elsewhere" not in "".join(collected)


def test_reports_and_run_directories_are_never_collected(pytester: pytest.Pytester, library: Path) -> None:
    (library / "test_own.py").write_text("def test_own():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--forall-project", "lib", "--collect-only", "-q",
                                "--forall-reports=lib/reports")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "lib/test_own.py::test_own" in out and "test_copied" not in out
