"""Nothing a run makes outlives it in the temporary directory: every scratch directory is removed, and what is
kept (sandbox logs, builds, verdicts) is kept under the run's audit record or cache directory, where the user looks
for it and cleans it. A leak here grew /tmp by a directory per prover built (about 2 000 per CI run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PUTNAM, require_tool

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]
A1_TEMPLATE = PUTNAM / "coq" / "src" / "putnam_2001_a1.v"


def _fresh_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    return temp


def _left(temp: Path) -> list[str]:
    return sorted(str(p.relative_to(temp)) for p in temp.iterdir())


def test_forall_doctor_and_verify_leave_nothing_in_the_temporary_directory(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``forall doctor`` (its sandboxed checks) and a sandboxed ``forall verify`` of a real PutnamBench candidate."""
    require_tool("coqc")
    require_tool("bwrap")
    temp = _fresh_temp(tmp_path, monkeypatch)
    doctor = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "doctor", "--track", "rocq"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600, check=False)
    assert "verifier accepts a proof (sandbox bwrap)" in doctor.stdout, doctor.stdout + doctor.stderr
    assert _left(temp) == []
    candidate = tmp_path / "candidate.v"
    candidate.write_text(A1_TEMPLATE.read_text(encoding="utf-8").replace("Admitted.", "Proof. Admitted."))
    verify = subprocess.run([sys.executable, "-m", "pytest_forall.core.verify", "--prover", "rocq", "--template",
                             str(A1_TEMPLATE), "--candidate", str(candidate), "--json", "--sandbox", "bwrap",
                             "--cache-dir", str(tmp_path / "cache")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert '"verdict": "reject"' in verify.stdout, verify.stdout + verify.stderr
    assert _left(temp) == []


def test_a_sandboxed_project_run_leaves_nothing_in_the_temporary_directory(pytester: pytest.Pytester,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A pytest run of a Rocq project under ``--forall-sandbox=bwrap``, collection, build, judge and items."""
    require_tool("coqc")
    require_tool("bwrap")
    temp = _fresh_temp(pytester.path, monkeypatch)
    shutil.copytree(FIXTURES / "project_rocq", pytester.path / "proj")
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--forall-project",
                                           "proj", "--forall-sandbox", "bwrap", "--forall-cache-dir", "cache",
                                           "--basetemp", str(pytester.path / "basetemp"))
    # the portfolio proves three of the five; the others fail, their audit records kept too
    assert "3 strict, 0 rules_only, 2 failed, 0 infra" in result.stdout.str(), result.stdout.str()[-3000:]
    assert _left(temp) == []
    assert os.listdir(pytester.path / "cache")
