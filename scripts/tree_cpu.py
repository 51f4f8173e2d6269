"""Run a command and print the CPU time of its whole process tree.

``/usr/bin/time`` and ``FORALL_TEST_COSTS`` (``tests/conftest.py``) count only the children that were waited for: a
coqtop session a test killed without reaping it is left out, so a file whose cost is mostly coqtop (the audit's
search) looks cheap. Here the command runs under a child subreaper: every descendant that outlives its parent is
reaped by this process, so its CPU is counted too.

    python scripts/tree_cpu.py python -m pytest tests/test_audit_search.py -p no:hypothesispytest -q
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("tree_cpu: cannot become a child subreaper (Linux only)", file=sys.stderr)
        return 2
    began = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    code = 0
    while True:  # until every descendant, the command's orphans included, has ended
        try:
            ended, status = os.wait()
        except ChildProcessError:
            break
        if ended == pid:
            code = os.waitstatus_to_exitcode(status)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"tree CPU: user {usage.ru_utime:.1f} s + system {usage.ru_stime:.1f} s = "
          f"{usage.ru_utime + usage.ru_stime:.1f} s; wall {time.monotonic() - began:.1f} s; exit {code}",
          file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
