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
