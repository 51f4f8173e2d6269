"""A new user's first day (issue 19, items 5-8): inputs refused up front, a terminal that says what happened,
commands that work as the README writes them, and reports that lead with the verdict."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, PUTNAM, REPO, require_path

BASE = ["-p", "no:cacheprovider", "--forall-sandbox=none"]


def _out(run: pytest.RunResult) -> str:
    return run.stdout.str() + run.stderr.str()


# -- inputs validated at configure time ------------------------------------------------------------------------

def test_replay_without_proofs_is_one_usage_error(fake_suite: pytest.Pytester) -> None:
    """Was: every item infra, exit 75. Now: exit 4, one line naming the option, no item run."""
    run = fake_suite.runpytest(*BASE, "--forall-frontend=replay")
    assert run.ret == 4, _out(run)
    assert "--forall-frontend=replay needs --forall-proofs DIR" in _out(run)
    assert not (fake_suite.path / "reports").exists()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_replay_proofs_must_be_a_directory(fake_suite: pytest.Pytester, kind: str) -> None:
    target = fake_suite.path / "proofs"
    if kind == "file":
        target.write_text("not a directory\n")
    run = fake_suite.runpytest(*BASE, "--forall-frontend=replay", f"--forall-proofs={target}")
    assert run.ret == 4, _out(run)
    expected = {"missing": "no such directory", "file": "not a directory"}[kind]
    assert f"--forall-proofs: {target}: {expected}" in _out(run)
    assert "Traceback" not in _out(run)


def test_replay_proofs_must_be_readable(fake_suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """(This machine runs tests as root, who reads any directory: the permission answer is faked.)"""
    proofs = fake_suite.path / "proofs"
    proofs.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == proofs
                        else real_access(path, mode, **kw))
    run = fake_suite.runpytest(*BASE, "--forall-frontend=replay", f"--forall-proofs={proofs}")
    assert run.ret == 4 and f"--forall-proofs: {proofs}: not readable" in _out(run), _out(run)


def test_project_replay_without_proofs_is_allowed(pytester: pytest.Pytester) -> None:
    """A project has proofs of its own to re-check: no --forall-proofs is not an error there."""
    project = pytester.path / "proj"
    project.mkdir()
    (project / "_CoqProject").write_text("-R theories Demo\n")
    run = pytester.runpytest(*BASE, "--forall-project=proj", "--forall-frontend=replay", "--co")
    assert run.ret in (0, 5), _out(run)
    assert "needs --forall-proofs" not in _out(run)


def test_stray_proof_files_get_one_warning_with_the_nearest_task(fake_suite: pytest.Pytester) -> None:
    """Was: files matching no task ignored without a word."""
    proofs = fake_suite.path / "proofs"
    proofs.mkdir()
    (proofs / "t_strict.txt").write_text("STRICT\n")
    (proofs / "T_Strict.txt").write_text("STRICT\n")    # case
    (proofs / "t_rules.v").write_text("RULES\n")        # extension
    (proofs / "t_nosuch.txt").write_text("STRICT\n")    # unknown id
    run = fake_suite.runpytest(*BASE, "--forall-frontend=replay", f"--forall-proofs={proofs}", "-k", "t_strict")
    out = _out(run)
    warning = [line for line in out.splitlines() if "match no collected task" in line]
    assert f"--forall-proofs {proofs}" in out
    assert len(warning) == 1, out
    assert "3 file(s)" in warning[0]
    assert "T_Strict.txt (nearest task: t_strict)" in warning[0]
    assert "t_rules.v (nearest task: t_rules)" in warning[0]
    assert "t_nosuch.txt (nearest task: " in warning[0]
    assert "t_strict.txt (" not in warning[0].replace("T_Strict.txt (", "")


def test_coq_and_rocq_markers_select_the_same_items() -> None:
    """Was: ``-m rocq`` silently selected nothing."""
    require_path(PUTNAM / "coq" / "src", "PutnamBench")

    def collected(marker: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
                               "benchmarks/putnam", "-m", marker, "--co", "-q"], cwd=REPO, capture_output=True,
                              text=True, check=False, env={**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)})
        return done.stdout.strip().splitlines()[-1].split(" in ")[0]

    coq = collected("coq")
    assert coq == collected("rocq")
    assert coq.startswith(f"{len(list((PUTNAM / 'coq' / 'src').glob('*.v')))}/")


def test_verify_accepts_coq_as_the_rocq_prover(tmp_path: Path) -> None:
    """Was: ``forall verify --prover coq`` refused (exit 2, no language pack)."""
    template = tmp_path / "t.v"
    template.write_text("Theorem t : True.\nProof.\nAdmitted.\n")
    candidate = tmp_path / "c.v"
    candidate.write_text("Theorem t : True.\nProof.\n  exact I.\nQed.\n")
    for prover in ("coq", "rocq"):
        done = subprocess.run([sys.executable, "-m", "pytest_forall.core.verify", "--prover", prover, "--template",
                               str(template), "--candidate", str(candidate), "--static-only"],
                              capture_output=True, text=True, check=False, cwd=REPO)
        assert done.returncode == 0, (prover, done.stdout + done.stderr)


def test_the_alias_is_defined_once_in_the_rocq_pack() -> None:
    from pytest_forall.core.language import language, marker_names
    from pytest_forall.lang.rocq import LANGUAGE

    assert language("coq") is LANGUAGE
    assert marker_names(LANGUAGE.name) == [LANGUAGE.name, *LANGUAGE.aliases]
    assert EXAMPLES.is_dir()
