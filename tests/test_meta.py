"""Import-light: the pytest11 entry point and a plain pytest session load no heavy dependencies."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pexpect", "junitparser", "mcp", "asyncio")


def test_plugin_entry_point_imports_nothing_heavy() -> None:
    code = ("import sys, pytest_forall.plugin; "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unrelated_pytest_session_imports_nothing_heavy(pytester) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_x="import sys\ndef test_x():\n"
                               f"    print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\n")
    result = pytester.runpytest_subprocess("-s", "-p", "no:hypothesispytest", "-p", "no:anyio")
    result.stdout.fnmatch_lines(["*HEAVY ?]"])


def test_package_is_strictly_typed_and_lint_clean() -> None:
    """mypy --strict (configured in pyproject.toml) and ruff over the package: the code stays typed."""
    from conftest import REPO

    mypy = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, check=False)
    assert mypy.returncode == 0, mypy.stdout[-3000:]
    ruff = subprocess.run([sys.executable, "-m", "ruff", "check", "pytest_forall"], cwd=REPO, capture_output=True,
                          text=True, check=False)
    assert ruff.returncode == 0, ruff.stdout[-3000:]
