"""Lean verdicts in the verdict cache, against the stand-in `lean`/`lake`/`leanchecker` (tests/standin, not Lean).

Replay runs are separate pytest processes (``runpytest_subprocess``), as two CI runs are: the fingerprint is
computed once per process, so only a new process sees a changed toolchain, library, manifest or checker.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_verifier_lean import A1, A1_PROOF, A2, BASE_PATH, STANDIN, candidate, project, standin_path, task  # noqa: F401 - ``project`` and ``standin_path`` are fixtures

from conftest import REPO
from pytest_forall.core import cache as vcache
from pytest_forall.lang.lean import backend
from pytest_forall.lang.lean.backend import LeanProver

FAILING = "putnam_1988_b1"
#: what a replayed item's verdict is, compared between runs
VERDICT = ("outcome", "stop", "reason", "digest", "axioms", "independent")


@pytest.fixture
def toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``<toolchain>/bin`` with the stand-in lean and lake and a copy of the stand-in checker (so it can change)."""
    bin_dir = tmp_path / "toolchain" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("lean", "lake"):
        (bin_dir / name).symlink_to(STANDIN / name)
    shutil.copy(STANDIN / "checker" / "leanchecker", bin_dir / "leanchecker")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{BASE_PATH}")
    return bin_dir


@pytest.fixture
def lean_suite(pytester: pytest.Pytester, putnam_root: Path, project: Path,  # noqa: F811
               toolchain: Path) -> pytest.Pytester:
    """PutnamBench's Lean track with stored proofs: two accepted, one rejected by Lean (a stand-in control)."""
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {putnam_root}\nforall_lean_project = {project}\n")
    proofs = pytester.path / "proofs"
    proofs.mkdir()
    (proofs / f"{A1}.lean").write_text(candidate(A1, A1_PROOF), encoding="utf-8")
    (proofs / f"{A2}.lean").write_text(candidate(A2, "by rfl"), encoding="utf-8")
    (proofs / f"{FAILING}.lean").write_text(candidate(FAILING, "by\n  exact rfl -- STANDIN_ERROR: type mismatch"),
                                            encoding="utf-8")
    return pytester


def replay(suite: pytest.Pytester, run_id: str) -> dict[str, dict[str, Any]]:
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                                        "--forall-frontend=replay", f"--forall-proofs={suite.path / 'proofs'}",
                                        "--forall-sandbox=none", "-k", f"({A1} or {A2} or {FAILING}) and lean4", f"--forall-run-id={run_id}")
    path = suite.path / "reports" / run_id / "results.jsonl"
    assert path.is_file(), result.stdout.str()[-3000:]
    rows = {row["task_id"]: row for row in map(json.loads, path.read_text().splitlines())}
    assert len(rows) == 3 and result.ret == 1, (result.ret, result.stdout.str()[-3000:])
    return rows


def verdicts(rows: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    return {t: tuple(json.dumps(row[k]) for k in VERDICT) for t, row in rows.items()}


def test_a_lean_replay_is_cached_and_every_environment_change_is_a_miss(
        lean_suite: pytest.Pytester, project: Path, toolchain: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    cold = replay(lean_suite, "cold")
    assert {t: r["outcome"] for t, r in cold.items()} == {A1: "strict", A2: "strict", FAILING: "failed"}
    assert cold[A1]["independent"] is True  # the checker ran: its verdict is part of what is cached
    assert "elaboration" in cold[FAILING]["reason"]
    assert not any(r["cached"] for r in cold.values()) and {r["uncacheable"] for r in cold.values()} == {""}
    warm = replay(lean_suite, "warm")
    assert all(r["cached"] for r in warm.values()) and verdicts(warm) == verdicts(cold)
    environments = {cold[A1]["environment"]}

    def olean_touched() -> None:
        olean = project / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean" / "Mathlib.olean"
        info = olean.stat()
        os.utime(olean, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))  # same bytes, a rebuild's mtime

    def manifest_moved() -> None:
        manifest = project / "lake-manifest.json"
        manifest.write_text(manifest.read_text().replace("0" * 40, "1" * 40))  # `lake update` to another commit

    def checker_rebuilt() -> None:
        with (toolchain / "leanchecker").open("a") as handle:
            handle.write("# rebuilt\n")

    changes = {
        "version": lambda: monkeypatch.setenv("STANDIN_LEAN_VERSION", "4.27.1"),  # `lean --version` differs
        "olean": olean_touched, "manifest": manifest_moved, "checker": checker_rebuilt,
    }
    for name, change in changes.items():
        change()
        rows = replay(lean_suite, name)
        assert not any(r["cached"] for r in rows.values()), name
        assert verdicts(rows) == verdicts(cold), name
        environments.add(rows[A1]["environment"])
    again = replay(lean_suite, "again")
    assert len(environments) == 1 + len(changes)  # the result rows name each environment apart (the gate's view)
    assert all(r["cached"] for r in again.values()) and verdicts(again) == verdicts(cold)


def test_an_environment_that_cannot_be_read_is_never_cached_and_the_row_says_why(lean_suite: pytest.Pytester,
                                                                                  toolchain: Path) -> None:
    """A `lean` whose `--version` fails still elaborates: the verdicts stand, none is stored or served."""
    (toolchain / "lean").unlink()
    (toolchain / "lean").write_text(f'#!/bin/sh\n[ "$1" = --version ] && exit 3\nexec {STANDIN / "lean"} "$@"\n')
    (toolchain / "lean").chmod(0o755)
    first, second = replay(lean_suite, "one"), replay(lean_suite, "two")
    assert first[A1]["outcome"] == "strict" and verdicts(first) == verdicts(second)
    assert not any(r["cached"] for r in [*first.values(), *second.values()])
    rows = [*first.values(), *second.values()]
    assert all(f"`{toolchain / 'lean'} --version` printed no version (exit 3)" in r["uncacheable"] for r in rows), \
        second[A1]["uncacheable"]
    assert {r["environment"] for r in rows} == {""}


def test_an_unreadable_library_file_fails_closed(project: Path, toolchain: Path) -> None:  # noqa: F811
    lib = project / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean"
    (lib / "Mathlib" / "Broken.olean").parent.mkdir()
    (lib / "Mathlib" / "Broken.olean").symlink_to(lib / "nowhere.olean")
    prover = LeanProver({"lean_project": str(project)})
    env, why = vcache.describe_environment(task(A1), prover)
    assert env is None and "FileNotFoundError" in why and "Broken.olean" in why
    assert vcache.cache_key(task(A1), prover, b"x", {}) is None


def test_the_fingerprint_is_computed_once_per_process(project: Path, toolchain: Path, tmp_path: Path,  # noqa: F811
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Every item gets a new backend; `lean --version` and the library walk run once for all of them."""
    backend.toolchain_fingerprint.cache_clear()
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    walks: list[tuple[str, ...]] = []
    real = backend.library_stats
    monkeypatch.setattr(backend, "library_stats", lambda roots: walks.append(roots) or real(roots))
    found = [LeanProver({"lean_project": str(project)}).fingerprint(task(p)) for p in (A1, A2, A1)]
    assert found[0] == found[1] == found[2]
    versions = [c for c in map(json.loads, log.read_text().splitlines()) if c["argv"][1:] == ["--version"]]
    assert len(versions) == 1 and len(walks) == 1
    assert set(found[0]) == {"version", "libraries", "manifest", "checker", "options", "axioms"}
    assert found[0]["version"].startswith("Lean (version 4.27.0, x86_64-unknown-linux-gnu, commit ")
    assert found[0]["libraries"].endswith("(1 files)") and found[0]["options"] == "-DautoImplicit=false"
    assert found[0]["checker"].startswith(str(toolchain / "leanchecker") + ":")


def test_settings_that_change_a_verdict_change_the_key_and_resources_do_not(project: Path,  # noqa: F811
                                                                            toolchain: Path) -> None:
    def key(**options: Any) -> dict[str, str] | None:
        return vcache.cache_key(task(A1), LeanProver({"lean_project": str(project), **options}), b"proof", {})

    base = key()
    assert base is not None
    assert key(lean_threads=1) == key(lean_threads=7) == base  # threads follow the xdist worker count
    assert key(lean_rules_axioms=["propext"]) != base  # strict vs rules-only turns on the axiom rule
    assert key(lean_options={"autoImplicit": True}) != base  # a different elaboration
    assert key(lean_checker_fresh=True) != base and key(lean_mem_mb=1024) != base
