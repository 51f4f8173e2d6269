"""scripts/tree_cpu.py: the CPU of a command's whole process tree, orphans included (docs/measurements.md)."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO

#: starts a child that burns 0.5 s of CPU and exits without waiting for it (as a test that kills a coqtop it never
#: reaps): whoever waits only for the command's own children does not count that CPU
ORPHAN = ("import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time\\nt = time.process_time()\\n"
          "while time.process_time() - t < 0.5: pass'])\n")


def test_the_cpu_of_a_child_left_unreaped_is_counted_and_the_exit_code_kept() -> None:
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "tree_cpu.py"), sys.executable, "-c", ORPHAN],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    total = re.search(r"tree CPU: user [0-9.]+ s \+ system [0-9.]+ s = ([0-9.]+) s", out.stderr)
    assert total and float(total.group(1)) >= 0.5, out.stderr
    failed = subprocess.run([sys.executable, str(REPO / "scripts" / "tree_cpu.py"), sys.executable, "-c",
                             "raise SystemExit(3)"], capture_output=True, text=True, timeout=300, check=False)
    assert failed.returncode == 3, failed.stderr
