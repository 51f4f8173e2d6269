"""Running a tool as a subprocess with a wall-clock limit that takes the whole process group down.

Every prover and agent call goes through :func:`run_command` (directly, or wrapped by the sandbox),
so there is one place that enforces time limits and records what ran.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ProcResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def accident(self) -> str:
        """Why this run of the tool says nothing lasting about its input ("" if nothing): it timed out, or was
        killed (a signal, reported by a sandbox's PID 1 as 128 + N, or the memory watch); a load-dependent end."""
        if self.timed_out:
            return "timed out"
        if self.extra.get("rss_exceeded"):
            return "killed by the memory watch"
        code = self.returncode
        if code < 0 or 128 < code < 128 + 65:
            return f"killed by signal {-code if code < 0 else code - 128}"
        return ""

    def to_wire(self) -> dict[str, Any]:
        return {"argv": self.argv, "returncode": self.returncode, "duration": round(self.duration, 3),
                "timed_out": self.timed_out, "stdout": self.stdout[-20000:], "stderr": self.stderr[-20000:],
                **self.extra}


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the process group of ``proc`` (it was started in a new session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class CancelScope:
    """The processes started (by :func:`run_command` or the sandbox) by code running in this scope.

    :meth:`cancel` kills each of them, and every one started afterwards, so a step the caller no longer needs
    (the verifier's concurrent layer after an earlier layer rejected) ends at once instead of at its time limit;
    the step then returns whatever a killed process gives, which the caller discards. Each process registers
    how it is killed: its process group, or for a sandbox its PID 1 (so bwrap reaps the whole namespace).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kills: dict[int, Callable[[], None]] = {}
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            kills = list(self._kills.values())
        for kill in kills:
            kill()

    @contextlib.contextmanager
    def tracking(self, kill: Callable[[], None]) -> Iterator[None]:
        with self._lock:
            self._kills[id(kill)] = kill
            cancelled = self.cancelled
        if cancelled:
            kill()
        try:
            yield
        finally:
            with self._lock:
                self._kills.pop(id(kill), None)


_SCOPE: contextvars.ContextVar[CancelScope | None] = contextvars.ContextVar("forall_cancel_scope", default=None)


@contextlib.contextmanager
def tracked(kill: Callable[[], None]) -> Iterator[None]:
    """While the block runs, ``kill()`` stops the process it started if the current :class:`CancelScope` is
    cancelled (no scope: nothing to do)."""
    scope = _SCOPE.get()
    if scope is None:
        yield
        return
    with scope.tracking(kill):
        yield


def scoped(scope: CancelScope, step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` to run (in a thread of its own) with ``scope`` as its current :class:`CancelScope`: ``scope.cancel()``
    then kills every process it starts, as :func:`in_background` does for its step."""
    context = contextvars.copy_context()
    context.run(_SCOPE.set, scope)
    return lambda *args: context.run(step, *args)


@contextlib.contextmanager
def in_background(step: Callable[..., Any], *args: Any) -> Iterator[Future[Any]]:
    """Run ``step(*args)`` in a thread for the ``with`` block; its processes die when the block ends unfinished.

    The block reads the result with ``future.result()``. Leaving the block any other way (an earlier layer
    rejected, an exception, ``Terminated`` from a signal) cancels the step's processes and waits for its
    thread, so no prover process outlives the verification.
    """
    scope = CancelScope()
    context = contextvars.copy_context()
    context.run(_SCOPE.set, scope)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="forall-layer") as pool:
        future = pool.submit(context.run, step, *args)
        try:
            yield future
        finally:
            if not future.done():
                scope.cancel()
            with contextlib.suppress(BaseException):
                future.result()


#: Caps the address space before exec, in a shell rather than ``preexec_fn`` (unsafe once threads run, and
#: the MCP tool server runs in a thread of this process).
_ULIMIT_SHIM = 'ulimit -v "$1" || exit 125; shift; exec "$@"'


def _anon_rss_kb(pgid: int) -> int:
    """Anonymous resident memory (kB) of every process in group ``pgid``; mapped files do not count."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            if int(stat[stat.rindex(")") + 2:].split()[2]) != pgid:
                continue
            for line in Path(entry.path, "status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total


class _RssWatch(threading.Thread):
    """Kills the group once its anonymous resident memory passes the limit (``ulimit -v`` would count the
    mmapped ``.olean`` files of Mathlib, which are file-backed and shared)."""

    def __init__(self, proc: subprocess.Popen[Any], limit_mb: int, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.proc, self.limit_kb, self.interval = proc, limit_mb * 1024, interval
        self.exceeded = False
        self.peak_kb = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.interval):
            used = _anon_rss_kb(self.proc.pid)
            self.peak_kb = max(self.peak_kb, used)
            if used > self.limit_kb:
                self.exceeded = True
                kill_group(self.proc)
                return


def run_command(argv: Sequence[str], *, cwd: Path | str, timeout: float | None,
                env: dict[str, str] | None = None, stdin: str | None = None,
                mem_mb: int | None = None, rss_mb: int | None = None) -> ProcResult:
    """Run ``argv`` in a new session; on timeout kill the whole group. Never raises for the tool's own failure.

    ``mem_mb`` caps the address space (RLIMIT_AS) so a runaway evaluation fails instead of taking the machine;
    ``rss_mb`` instead bounds the group's anonymous resident memory (killed past it, ``extra["rss_exceeded"]``).
    """
    start = time.monotonic()
    command = ["/bin/sh", "-c", _ULIMIT_SHIM, "forall-limit", str(mem_mb * 1024), *argv] if mem_mb else list(argv)
    try:
        proc = subprocess.Popen(command, cwd=str(cwd), env=env, text=True, encoding="utf-8", errors="replace",
                                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError as exc:
        return ProcResult(list(argv), 127, "", f"{exc}", time.monotonic() - start)
    watch = _RssWatch(proc, rss_mb) if rss_mb else None
    if watch is not None:
        watch.start()
    with tracked(lambda: kill_group(proc)):  # a cancelled scope kills the group; communicate() then returns
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(proc)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a setsid grandchild still holds the pipes: stop reading
                for stream in (proc.stdout, proc.stderr):
                    if stream is not None:
                        stream.close()
                proc.wait()
                out, err = "", ""
            timed_out = True
        finally:
            if watch is not None:
                watch.done.set()
            kill_group(proc)  # stragglers that stayed in the group after the leader exited
    rc = proc.returncode if not timed_out else 124
    result = ProcResult(list(argv), rc, out or "", err or "", time.monotonic() - start, timed_out)
    if watch is not None:
        result.extra.update(rss_limit_mb=rss_mb, rss_peak_mb=watch.peak_kb // 1024, rss_exceeded=watch.exceeded)
    return result
