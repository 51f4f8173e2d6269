"""A pytest plugin for scripts/bench_gate.py ``--trace``: every subprocess the run starts (its start, its end, the
thread that started it, its command without options) and when each item starts, written to ``$FORALL_PROC_TRACE``
at exit, in order of start: where a run's wall time goes (the build, the compiles, the judge sessions, coqchk)."""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
import time
from typing import Any

T0 = time.monotonic()
LOG: list[tuple[float, float | None, str, str]] = []
_init, _wait = subprocess.Popen.__init__, subprocess.Popen.wait
CPU: dict[int, float] = {}  # pid -> CPU seconds, as wait4 reported them when the process was reaped


def _summary(argv: Any) -> str:
    words = [str(a) for a in (argv if isinstance(argv, (list, tuple)) else [argv])]
    if "--" in words:  # a sandbox's or a root's prefix: the tool after it
        words = words[words.index("--") + 1:]
    kept = [w for w in words if not w.startswith("-") or w == "-norec"]
    return " ".join(os.path.basename(w) if "/" in w else w for w in kept)[:160]


def _traced_init(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
    self._trace = (time.monotonic() - T0, threading.current_thread().name, _summary(args))
    _init(self, args, *rest, **kwargs)


def _traced_wait(self: Any, *rest: Any, **kwargs: Any) -> Any:
    code = _wait(self, *rest, **kwargs)
    trace = self.__dict__.pop("_trace", None)
    if trace is not None:
        used = CPU.get(self.pid)
        LOG.append((trace[0], time.monotonic() - T0, trace[1],
                    trace[2] if used is None else f"[CPU {used:.2f} s] {trace[2]}"))
    return code


def _try_wait(self: Any, wait_flags: int) -> tuple[int, int]:
    """``Popen._try_wait`` with ``wait4``: the reaped process's CPU is kept by its pid."""
    try:
        pid, sts, usage = os.wait4(self.pid, wait_flags)
    except ChildProcessError:
        pid, sts = self.pid, 0
    else:
        if pid:
            CPU[pid] = usage.ru_utime + usage.ru_stime
    return pid, sts


subprocess.Popen._try_wait = _try_wait  # type: ignore[attr-defined]
subprocess.Popen.__init__ = _traced_init  # type: ignore[method-assign]
subprocess.Popen.wait = _traced_wait  # type: ignore[method-assign]


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    LOG.append((time.monotonic() - T0, None, "item", nodeid))


def pytest_collection_finish(session: Any) -> None:
    LOG.append((time.monotonic() - T0, None, "collected", str(len(session.items))))


@atexit.register
def _write() -> None:
    out = os.environ.get("FORALL_PROC_TRACE")
    if not out:
        return
    lines = []
    for start, end, thread, what in sorted(LOG, key=lambda x: x[0]):
        took = "" if end is None else f"{end:7.2f} ({end - start:5.2f})"
        lines.append(f"{start:7.2f} {took:>17} {thread[:22]:22} {what}\n")
    with open(out, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
