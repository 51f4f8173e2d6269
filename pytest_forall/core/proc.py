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

    @property
    def starved(self) -> str:
        """Why a run with a CPU budget (``cpu_s``) that the wall-clock backstop ended, its budget unspent, says
        nothing about its input ("" otherwise): the machine's load or a stopped process took the time, not the
        input's computation, so the caller's outcome is infra, never the input's failure."""
        budget = self.extra.get("cpu_budget_s")
        if not self.timed_out or budget is None or self.extra.get("cpu_spent"):
            return ""
        used = self.extra.get("cpu_used_s")
        spent = "an unknown part" if used is None else f"{used:.1f} s"
        if self.extra.get("cpu_stalled_s"):
            return (f"stopped after {self.duration:.0f} s: its process tree used no CPU for "
                    f"{self.extra['cpu_stalled_s']:g} s of wall time, with {spent} of its {budget:g} s CPU budget used "
                    "(a stopped or stalled process, not the input)")
        return (f"stopped by its wall-clock backstop after {self.duration:.0f} s with {spent} of its {budget:g} s "
                "CPU budget used (a loaded machine or a stalled process, not the input)")

    def to_wire(self) -> dict[str, Any]:
        return {"argv": self.argv, "returncode": self.returncode, "duration": round(self.duration, 3),
                "timed_out": self.timed_out, "stdout": self.stdout[-20000:], "stderr": self.stderr[-20000:],
                **self.extra}


#: How often (seconds) the CPU time of a running process tree is read at most: near its budget's end, or once stopped.
POLL = 0.05
#: CPU seconds a process tree can use per second of wall at most (its cores): a tree with ``r`` seconds of budget
#: left cannot spend them in less than ``r / CORES`` seconds, so a watcher waits that long before it reads ``/proc``
#: again (reading it every ``POLL`` cost the Python process about 1 s of CPU per 20 s search on a loaded machine,
#: where a search takes several times its CPU in wall time).
CORES = os.cpu_count() or 1
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: A run with a CPU budget (``cpu_s``) is killed by the wall clock only this many times its budget later: on a loaded
#: machine (load 20 on 2 cores gives a process about 1/10 of a core) it still gets the computation an idle one gives
#: it; one the backstop ends anyway, its budget unspent, was starved or stalled (:attr:`ProcResult.starved`): the
#: machine's, never its input's (the audit's ties and tactics measure their budgets the same way).
CPU_WALL_FACTOR = 10
#: A run with a CPU budget whose process tree used no CPU at all for this many seconds of wall is stopped as stalled
#: (:attr:`ProcResult.starved`), without waiting for its backstop: a loaded machine still gives every runnable process
#: some CPU each second (load 20 on 2 cores: about 1/10 of a core), so only a stopped process (SIGSTOP, a frozen
#: cgroup) or one blocked on the machine uses none. A project's judge session (a 300 CPU-second floor) otherwise waited
#: 10 x 300 s before its infra.
CPU_STALL_SECONDS = 60.0


def child_pids(pid: int) -> list[int]:
    """The direct children of ``pid``, from ``/proc`` (every thread's ``children`` file)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found.extend(int(child) for child in task.read_text().split())
        except OSError:
            continue
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a sandbox wrapper's prover is one of them), from ``/proc``."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(child_pids(current))
    return found


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) used so far by ``pid`` and its descendants, the ended ones a process of the tree waited
    for included (``native_compute``'s compiler under coqc: its cost is the candidate's too), or None without
    ``/proc``."""
    total, seen = 0.0, False
    for current in process_tree(pid):
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # utime, stime, cutime, cstime (fields 14-17 of stat): a live child is counted by itself, an ended one in its
        # parent's cutime/cstime once waited for, so none twice
        total += sum(int(field) for field in fields[11:15]) / TICK
        seen = True
    return total if seen else None


class CpuWatch:
    """A process tree's CPU time against its budget: :meth:`spent` reads ``/proc`` only when the budget could have
    been spent since the last reading (``CORES``), so a watch costs a few reads per run, not one per ``POLL``.

    The last reading (``used``) is what a run killed at its wall-clock backstop had spent: spent budget, the input's
    own cost; unspent, the machine starved or stopped it."""

    def __init__(self, pid: int, budget: float) -> None:
        self.pid, self.budget = pid, budget
        self.used: float | None = None
        now = time.monotonic()
        #: when the tree's CPU last grew, and whether it then used none for :data:`CPU_STALL_SECONDS` (:meth:`read`)
        self.progress_at, self.stalled = now, False
        self.next_read = now + min(budget / CORES, CPU_STALL_SECONDS / 2)

    def spent(self, now: float | None = None) -> bool:
        """Whether the tree has used its budget (read now only when it could have)."""
        now = time.monotonic() if now is None else now
        if now < self.next_read:
            return False
        return self.read(now)

    def read(self, now: float | None = None) -> bool:
        """Read the tree's CPU now; whether the budget is spent. A tree whose CPU did not grow for
        :data:`CPU_STALL_SECONDS` is marked ``stalled`` (its watcher ends it: the machine's, never the input's)."""
        used = cpu_seconds(self.pid)
        now = time.monotonic() if now is None else now
        if used is None:
            self.next_read = now + POLL
            return False
        if used > (self.used or 0.0):
            self.progress_at = now
        self.stalled = now - self.progress_at >= CPU_STALL_SECONDS
        self.used = used
        self.next_read = now + min(max(POLL, (self.budget - used) / CORES), CPU_STALL_SECONDS / 2)
        return used >= self.budget

    def wire(self, killed_by_budget: bool, killed_stalled: bool = False) -> dict[str, Any]:
        """The run's record of its budget (``ProcResult.extra``): :attr:`ProcResult.starved` reads it."""
        return {"cpu_budget_s": self.budget, "cpu_used_s": None if self.used is None else round(self.used, 2),
                "cpu_spent": killed_by_budget, **({"cpu_stalled_s": CPU_STALL_SECONDS} if killed_stalled else {})}


class _CpuKill(threading.Thread):
    """Kills ``proc``'s group once the tree has spent its CPU budget (:class:`CpuWatch`)."""

    def __init__(self, proc: subprocess.Popen[Any], budget: float) -> None:
        super().__init__(daemon=True)
        self.proc, self.watch = proc, CpuWatch(proc.pid, budget)
        self.killed = False
        #: ended because the tree used no CPU for :data:`CPU_STALL_SECONDS` (``killed`` stays False: its budget is unspent)
        self.stalled = False
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(max(0.0, self.watch.next_read - time.monotonic())):
            if self.watch.read() or self.watch.stalled:
                self.killed = not self.watch.stalled
                self.stalled = self.watch.stalled
                kill_group(self.proc)
                return


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
                mem_mb: int | None = None, rss_mb: int | None = None, cpu_s: float | None = None) -> ProcResult:
    """Run ``argv`` in a new session; on timeout kill the whole group. Never raises for the tool's own failure.

    ``mem_mb`` caps the address space (RLIMIT_AS) so a runaway evaluation fails instead of taking the machine;
    ``rss_mb`` instead bounds the group's anonymous resident memory (killed past it, ``extra["rss_exceeded"]``).
    ``cpu_s``: a budget of CPU seconds for the process tree, killed (``timed_out``) once spent; ``timeout`` is then
    the wall-clock backstop, and a run it ends with the budget unspent is :attr:`ProcResult.starved`.
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
    cpu = _CpuKill(proc, cpu_s) if cpu_s is not None else None
    if cpu is not None:
        cpu.start()
    with tracked(lambda: kill_group(proc)):  # a cancelled scope kills the group; communicate() then returns
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            if cpu is not None:
                cpu.done.set()
                cpu.join()
                cpu.killed = cpu.killed or cpu.watch.read()  # what the tree had spent when the backstop came
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
            if cpu is not None:
                cpu.done.set()
                cpu.join()
            kill_group(proc)  # stragglers that stayed in the group after the leader exited
    timed_out = timed_out or bool(cpu is not None and (cpu.killed or cpu.stalled))
    rc = proc.returncode if not timed_out else 124
    result = ProcResult(list(argv), rc, out or "", err or "", time.monotonic() - start, timed_out)
    if cpu is not None:
        result.extra.update(cpu.watch.wire(cpu.killed, cpu.stalled))
    if watch is not None:
        result.extra.update(rss_limit_mb=rss_mb, rss_peak_mb=watch.peak_kb // 1024, rss_exceeded=watch.exceeded)
    return result
