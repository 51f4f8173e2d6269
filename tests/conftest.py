"""Shared test setup: pytester, the real PutnamBench checkout, and a fast fake suite."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# pytester runs pytest inside this process and afterwards drops every module first imported during that
# run; the cryptography bindings under the MCP server cannot be imported twice in one process, so they
# are imported here, before any pytester run, and stay.
import mcp.server.mcpserver  # noqa: F401
import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
#: The shared data folder (benchmarks, reference samples) beside the clone, wherever the clone is.
SHARED = Path(os.environ.get("FORALL_SHARED_ROOT", REPO.parent / "shared")).resolve()
PUTNAM = Path(os.environ.get("PUTNAMBENCH_ROOT", SHARED / "benchmarks" / "PutnamBench")).resolve()
EXAMPLES = Path(__file__).resolve().parent / "example_suites"


def require_path(path: Path, what: str) -> Path:
    """A missing input fails under CI (it is part of the job) and skips elsewhere, naming where it looked."""
    if not path.exists():
        message = f"{what} not found at {path} (set PUTNAMBENCH_ROOT / FORALL_SHARED_ROOT)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def require_tool(name: str) -> None:
    """A missing tool fails under CI (it must have been installed) and skips elsewhere, saying why."""
    if shutil.which(name) is None:
        message = f"{name} is not installed"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must install it: see .ci/run)")
        pytest.skip(message)


def standin_lean_project(root: Path) -> Path:
    """A Lake project at ``root`` shaped like lean_env/putnam, with a stand-in Mathlib build (tests/standin)."""
    import json

    lib = root / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean"
    lib.mkdir(parents=True)
    (lib / "Mathlib.olean").write_text(json.dumps({"standin": "olean", "module": "Mathlib", "imports": [],
                                                   "decls": {}}))
    for name in ("lakefile.toml", "lean-toolchain"):
        (root / name).write_text((REPO / "lean_env" / "putnam" / name).read_text())
    (root / "lake-manifest.json").write_text(json.dumps({
        "version": "1.1.0", "packagesDir": ".lake/packages", "name": "putnam", "lakeDir": ".lake",
        "packages": [{"name": "mathlib", "type": "git", "rev": "0" * 40, "inputRev": "v4.27.0"}]}))
    return root


@pytest.fixture
def putnam_root() -> Path:
    if not (PUTNAM / "coq" / "src").is_dir():
        pytest.fail(f"PutnamBench checkout not found at {PUTNAM}; set PUTNAMBENCH_ROOT")
    return PUTNAM


@pytest.fixture
def fake_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester dir with the fake adapter/prover/frontend conftest and a manifest of one task per outcome."""
    pytester.makeconftest((EXAMPLES / "fake_conftest.py").read_text())
    pytester.makefile(".forall.toml", suite=(EXAMPLES / "fake_suite.toml").read_text())
    return pytester
