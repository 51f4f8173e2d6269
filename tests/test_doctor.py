"""`forall doctor` in CI: the conformance set against the stand-in (tests/standin) gives 0 divergences, and a
toolchain that behaves differently is reported. It has not yet met real Lean (docs/lean.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import PUTNAM
from pytest_forall.lang.lean.backend import DEFAULT_PROJECT

REPO = Path(__file__).resolve().parents[1]
STANDIN = REPO / "tests" / "standin"
BASE_PATH = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
#: The stand-in's Mathlib: the constants the conformance candidates use, with the axioms Mathlib's have.
MATHLIB = {"standin": "olean", "module": "Mathlib", "imports": [],
           "decls": {"Classical.em": ["Classical.choice", "Quot.sound", "propext"]}}


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    lib = root / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean"
    lib.mkdir(parents=True)
    (lib / "Mathlib.olean").write_text(json.dumps(MATHLIB))
    for name in ("lakefile.toml", "lean-toolchain"):
        (root / name).write_text((DEFAULT_PROJECT / name).read_text())
    (root / "lake-manifest.json").write_text(json.dumps({"version": "1.1.0", "packagesDir": ".lake/packages",
                                                         "packages": [{"name": "mathlib"}]}))
    return root


def doctor(tmp_path: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "PUTNAMBENCH_ROOT": str(PUTNAM), "PYTHONPATH": str(REPO),
           "STANDIN_ELAN_TOOLCHAIN": str(STANDIN)}
    for name in ("FORALL_LEAN_BIN", "LEAN_PATH", "STANDIN_LOG"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "pytest_forall.cli", "doctor", "--track", "lean", "--project",
                           str(project(tmp_path))],
                          capture_output=True, text=True, env=env, timeout=600, check=False, cwd=tmp_path)


def test_doctor_against_the_standin_reports_no_divergence(tmp_path: Path) -> None:
    elan = tmp_path / "elan-bin"
    elan.mkdir()
    (elan / "leanchecker").symlink_to(STANDIN / "elan-proxy")  # elan's proxy for a toolchain without one [E1]
    run = doctor(tmp_path, f"{STANDIN}{os.pathsep}{elan}{os.pathsep}{BASE_PATH}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "9 checks, 0 divergence(s)" in run.stdout and run.stdout.count("\nok  ") == 9


def test_doctor_prints_what_a_different_toolchain_does(tmp_path: Path) -> None:
    """A `lean` that prints no messages at all (as if JSON went elsewhere) is caught case by case."""
    fake = tmp_path / "fake"
    fake.mkdir()
    for name in ("lake",):
        (fake / name).symlink_to(STANDIN / name)
    (fake / "bin").symlink_to(".")
    (fake / "lean").write_text(f"#!/bin/sh\n{STANDIN / 'lean'} \"$@\" > /dev/null\n")
    (fake / "lean").chmod(0o755)
    run = doctor(tmp_path, f"{fake}{os.pathsep}{BASE_PATH}")
    assert run.returncode == 1 and "DIVERGENCE good" in run.stdout and "DIVERGENCE sorry-warning" in run.stdout
    assert "no Lean warning message containing 'declaration uses'" in run.stdout


def test_doctor_without_a_toolchain_says_what_is_missing(tmp_path: Path) -> None:
    run = doctor(tmp_path, BASE_PATH)
    assert run.returncode == 2 and "no usable Lean toolchain: Lean toolchain not found: no lake on PATH" in run.stdout


def _doctor_tracks(tmp_path: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(REPO)}
    env.pop("PUTNAMBENCH_ROOT", None)
    return subprocess.run([sys.executable, "-m", "pytest_forall.cli", "doctor", *args], capture_output=True,
                          text=True, env=env, timeout=900, check=False, cwd=tmp_path)


def test_doctor_checks_the_rocq_track_and_passes_without_lean(tmp_path: Path) -> None:
    """Was: only Lean was checked, and a machine whose Rocq track is fine exited 2 (issue 19)."""
    from conftest import require_tool

    require_tool("coqc")
    run = _doctor_tracks(tmp_path, BASE_PATH)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    for check in ("coqc: The Coq Proof Assistant, version", "coqchk: The Coq Proof Checker, version",
                  "library Stdlib reals: loads", "library mathcomp: loads", "library Coquelicot: loads",
                  "library mathcomp-analysis: loads", "judge plugin build: ", "bwrap: ",
                  "verifier accepts a proof (sandbox bwrap)", "verifier rejects a wrong proof (sandbox bwrap)"):
        assert f"ok   {check}" in out, (check, out)
    assert "== rocq: ready (exit 0)" in out and "== lean: not installed (exit 2)" in out


def test_doctor_track_status_without_the_tools(tmp_path: Path) -> None:
    only_python = str(Path(sys.executable).parent)
    rocq = _doctor_tracks(tmp_path, only_python, "--track", "rocq")
    assert rocq.returncode == 2 and "FAIL coqc: coqc not found on PATH" in rocq.stdout, rocq.stdout + rocq.stderr
    both = _doctor_tracks(tmp_path, only_python)
    assert both.returncode == 2, both.stdout  # no track installed at all
