"""OS sandboxing of workspaces: actor and verifier commands see one writable directory and nothing else.

A sandboxed command runs under bubblewrap in fresh user, mount, pid, net, ipc, uts and cgroup namespaces, on a
tmpfs root that holds only ``/usr`` (read-only), a few ``/etc`` files, the policy's read-only binds and the
workspace. Its only network route is a per-run CONNECT proxy (:mod:`pytest_forall.isolation.netproxy`) that enforces a
``host:port`` allowlist and logs every attempt. Memory and process count are capped with cgroups (v1 on
these hosts), the wall clock with a kill of the whole pid namespace, and :mod:`pytest_forall.isolation.init` runs as
PID 1 so nothing outlives the command. ``docs/sandbox.md`` lists what is enforced how, and what is not.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_forall.core.binds import RESERVED_INSIDE, RUN_DIR_INSIDE, check_inside_path
from pytest_forall.core.cache import cache_root
from pytest_forall.core.proc import CpuWatch, ProcResult, kill_group, run_command, tracked
from pytest_forall.isolation import confine, seccomp

BWRAP = "/usr/bin/bwrap"
#: The interpreter for the in-sandbox init; it must live under /usr, the only host tree the sandbox sees.
INSIDE_PYTHON = "/usr/bin/python3"
INIT_SCRIPT = Path(__file__).with_name("init.py")
CONFINE_SCRIPT = Path(__file__).with_name("confine.py")
#: The shells an agent CLI runs the model's commands in (``/bin/sh`` is dash here): each is replaced inside by a
#: wrapper that confines it below the CLI (:mod:`pytest_forall.isolation.confine`) and execs the real one.
CONFINED_SHELLS = ("/usr/bin/bash", "/usr/bin/dash")
SANDBOX_KINDS = ("bwrap", "none")
PROXY_PORT = 3128
#: The sandbox has no capabilities, so it cannot listen below this port (so no mirror for those).
UNPRIVILEGED_PORT_START = 1024
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_UID = 1000
#: Host /etc entries the sandbox gets (read-only, skipped when absent): TLS roots, alternatives, ld cache.
HOST_ETC = ("/etc/ssl", "/etc/ca-certificates", "/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime")
#: Bytes kept per output stream (the tail), so a chatty or hostile command cannot exhaust the caller's memory.
OUTPUT_CAP = 8 << 20
#: How long a killed sandbox may take to disappear before everything of the run is killed again, harder.
KILL_GRACE = 5.0
CHUNK = 65536

# Runs between Popen and bwrap, so the sandbox is inside its cgroups (and rlimits) before its first fork.
_ENTER_LIMITS_SHIM = """
for procs in $FORALL_CGROUP_PROCS; do echo $$ > "$procs" || exit 125; done
if [ -n "$FORALL_RLIMIT_AS_KB" ]; then ulimit -v "$FORALL_RLIMIT_AS_KB" || exit 125; fi
ulimit -c 0
exec "$@"
"""


class SandboxUnavailable(RuntimeError):
    """bwrap is missing or could not build the sandbox: an infrastructure failure, not the command's."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What one sandboxed command may touch. Everything not granted here does not exist inside."""

    #: The only writable host path, mounted at ``workspace_inside`` (an opaque name: the host path stays
    #: hidden, except in /proc/self/mountinfo, see docs/sandbox.md).
    workspace: Path
    #: Extra read-only ``(host_path, inside_path)`` binds, e.g. a toolchain; /usr is always there.
    ro_binds: tuple[tuple[Path, str], ...] = ()
    #: Extra writable ``(host_path, inside_path)`` binds outside the workspace, e.g. an agent CLI's private HOME.
    rw_binds: tuple[tuple[Path, str], ...] = ()
    #: ``host:port`` endpoints reachable through the proxy; empty means no network at all.
    allow: tuple[str, ...] = ()
    wall_seconds: float | None = None
    #: CPU seconds of the run's process tree, killed (``timed_out``) once spent; ``wall_seconds`` is then its backstop
    #: (see :func:`pytest_forall.core.proc.run_command`'s ``cpu_s``)
    cpu_seconds: float | None = None
    #: Seconds without a byte on stdout after which the run is killed like at its wall limit (``stalled``)
    stall_seconds: float | None = None
    memory_mb: int | None = None
    #: Tasks (processes and threads) in the run, counting bwrap and the sandbox init (3 with network, else 2).
    max_processes: int | None = 1024
    #: The whole environment inside (it is cleared); HOME defaults to the workspace, PATH to DEFAULT_PATH.
    env: Mapping[str, str] = field(default_factory=dict)
    sandbox: str = "bwrap"
    workspace_inside: str = "/workspace"
    #: A root filesystem (e.g. a prover toolchain built from another Debian release) whose ``/usr`` and ``/etc``
    #: replace the host's, read-only; None: the host's ``/usr`` and a few host ``/etc`` files.
    root: Path | None = None
    #: Every shell started inside runs one Landlock domain below the command (an agent CLI), so what the model
    #: runs cannot reach the CLI's output, memory or signals (:mod:`pytest_forall.isolation.confine`).
    confine_shells: bool = False
    #: The command and all it starts may execute files only beneath ``/usr`` and these inside paths (Landlock),
    #: never one written during the run (an agent CLI starts programs it looks up itself, in its HOME or on PATH:
    #: docs/sandbox.md). Paths the sandbox can write are left out. None: no such rule (prover runs).
    exec_beneath: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.sandbox not in SANDBOX_KINDS:
            raise ValueError(f"sandbox must be one of {SANDBOX_KINDS}, not {self.sandbox!r}")
        from pytest_forall.isolation.netproxy import parse_endpoint  # lazy: netproxy pulls in asyncio

        for endpoint in self.allow:
            parse_endpoint(endpoint)
        for inside in (self.workspace_inside, *(dest for _, dest in (*self.ro_binds, *self.rw_binds))):
            check_inside_path(inside)
        for name in ("wall_seconds", "cpu_seconds", "stall_seconds", "memory_mb", "max_processes"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, not {value!r}")

    def to_wire(self) -> dict[str, Any]:
        """JSON primitives for the audit record. Env *values* are left out: they may hold credentials."""
        return {"sandbox": self.sandbox, "workspace": str(self.workspace.absolute()),
                "workspace_inside": self.workspace_inside,
                "ro_binds": [[str(src), dest] for src, dest in self.ro_binds],
                "rw_binds": [[str(src), dest] for src, dest in self.rw_binds], "allow": list(self.allow),
                "wall_seconds": self.wall_seconds, "cpu_seconds": self.cpu_seconds,
                "stall_seconds": self.stall_seconds, "memory_mb": self.memory_mb,
                "max_processes": self.max_processes, "env_keys": sorted(self.env),
                "confine_shells": self.confine_shells,
                **({"exec_beneath": list(self.exec_beneath)} if self.exec_beneath is not None else {}),
                **({"root": str(self.root)} if self.root else {})}


#: One writer at a time for this process's threads (the verifier runs two prover calls at once).
_LOG_LOCK = threading.Lock()


def run_sandboxed(argv: Sequence[str], policy: SandboxPolicy, *, audit_dir: Path, stdin: str | None = None,
                  cwd_inside: str | None = None) -> ProcResult:
    """Run ``argv`` under ``policy``; append the policy and outcome to ``audit_dir/sandbox.jsonl``.

    Like :func:`pytest_forall.core.proc.run_command` it never raises for the command's own failure (a timeout gives
    returncode 124). It raises :class:`SandboxUnavailable` when the sandbox itself cannot be built.
    """
    if not argv:
        raise ValueError("empty command")
    workspace = policy.workspace.resolve(strict=True)
    audit_dir = audit_dir.resolve()
    if audit_dir.is_relative_to(workspace):
        raise ValueError("the audit dir must be outside the workspace (the command could rewrite it)")
    # a writable bind holding the audit dir (an agent's HOME) would let the command forge its lines, or plant a link
    # the harness's append then writes through (a file anywhere the harness may write)
    writable = next((host for host, _ in policy.rw_binds if audit_dir.is_relative_to(host.resolve())), None)
    if writable is not None:
        raise ValueError(f"the audit dir must be outside every writable bind ({writable}: the command could rewrite it)")
    audit_dir.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex[:12]
    started_at = time.time()
    cwd = cwd_inside or policy.workspace_inside
    record: dict[str, Any] = {"run": run_id, "ts": round(started_at, 3), "argv": list(argv),
                              "cwd_inside": cwd, "policy": policy.to_wire(), "bwrap_argv": None}
    try:
        if policy.sandbox == "none":
            result = _run_unsandboxed(argv, policy, workspace, stdin, cwd)
        else:
            result = _run_bwrap(argv, policy, workspace, audit_dir, run_id, stdin, cwd, record)
    except SandboxUnavailable as exc:
        record["outcome"] = {"error": str(exc)}
        raise
    else:
        result.extra["run"] = run_id
        record["outcome"] = {"returncode": result.returncode, "duration": round(result.duration, 3),
                             **result.extra}
    finally:
        line = json.dumps(record, sort_keys=True) + "\n"
        with _LOG_LOCK, (audit_dir / "sandbox.jsonl").open("a", encoding="utf-8") as log:
            log.write(line)
    return result


def _run_unsandboxed(argv: Sequence[str], policy: SandboxPolicy, workspace: Path, stdin: str | None,
                     cwd_inside: str) -> ProcResult:
    """``--forall-sandbox=none``: same call shape and audit record, no isolation at all."""
    inside = PurePosixPath(cwd_inside)
    if not inside.is_relative_to(policy.workspace_inside):
        raise ValueError(f"without a sandbox, cwd must be inside the workspace, not {cwd_inside!r}")
    cwd = workspace / inside.relative_to(policy.workspace_inside)
    env = {"PATH": DEFAULT_PATH, "HOME": str(workspace), **policy.env}
    result = run_command(argv, cwd=cwd, timeout=policy.wall_seconds, env=env, stdin=stdin, cpu_s=policy.cpu_seconds)
    result.extra.update(sandbox="none", timed_out=result.timed_out, oom=None, pids_limit_hit=None,
                        leftovers_killed=None, survivors=None, access_log=None,
                        limits={"memory": None, "pids": None, "network": "unrestricted", "seccomp": False})
    return result


def _run_bwrap(argv: Sequence[str], policy: SandboxPolicy, workspace: Path, audit_dir: Path, run_id: str,
               stdin: str | None, cwd_inside: str, record: dict[str, Any]) -> ProcResult:
    """Run under bwrap; ``record["bwrap_argv"]`` gets the exact command, for the audit."""
    if not os.access(BWRAP, os.X_OK):
        raise SandboxUnavailable(_unavailable_message(f"{BWRAP} is not installed"))
    run_dir = Path(tempfile.mkdtemp(prefix="forall-sbx-"))  # 0700: proxy socket, generated /etc files
    access_log = audit_dir / "access.jsonl"
    from pytest_forall.isolation.netproxy import ConnectProxy

    proxy = ConnectProxy(run_dir / "proxy.sock", policy.allow, access_log, run_id) if policy.allow else None
    cgroups = _RunCgroups.create(run_id, policy.memory_mb, policy.max_processes)
    owned_fds: list[int] = []
    proc: subprocess.Popen[bytes] | None = None
    try:
        _write_etc(run_dir, policy.workspace_inside)
        if proxy is not None:
            proxy.start()
        info_read, info_write = os.pipe()
        # a socket for the same reason as stdout and stderr below: the command could reopen a pipe of the init's
        # through /proc/1/fd and write a report of its own before the init's (exit 0, no signal)
        status_read, status_write = (end.detach() for end in socket.socketpair())
        owned_fds += [info_read, info_write, status_read, status_write]
        pass_fds = [info_write, status_write]
        seccomp_fd = None
        if seccomp.supported():
            seccomp_fd = os.memfd_create("forall-seccomp", 0)
            owned_fds.append(seccomp_fd)
            os.write(seccomp_fd, seccomp.build_filter())
            os.lseek(seccomp_fd, 0, os.SEEK_SET)
            pass_fds.append(seccomp_fd)
        init_args = ["--status-fd", str(status_write)]
        if proxy is not None:
            init_args += ["--proxy", f"{RUN_DIR_INSIDE}/proxy.sock", "--listen", str(PROXY_PORT)]
            for port, endpoint in _loopback_mirrors(policy.allow):
                init_args += ["--mirror", f"{port}={endpoint}"]
        shells = _shell_wrappers(run_dir, policy)
        executable = _exec_dirs(policy)
        bwrap_argv = _bwrap_argv(policy, workspace, run_dir, cwd_inside, has_proxy=proxy is not None,
                                 seccomp_fd=seccomp_fd, info_fd=info_write, shells=shells,
                                 bind_confine=bool(shells) or executable is not None)
        confined = [INSIDE_PYTHON, "-I", "-S", f"{RUN_DIR_INSIDE}/confine.py", *executable, "--"] if (
            executable is not None) else []
        bwrap_argv += ["--", INSIDE_PYTHON, "-I", "-S", f"{RUN_DIR_INSIDE}/init.py", *init_args, "--", *confined, *argv]
        record["bwrap_argv"] = _redact_env_values(bwrap_argv)
        memory_rlimit_kb = policy.memory_mb << 10 if policy.memory_mb and cgroups.memory is None else None
        shim_env = {"FORALL_CGROUP_PROCS": " ".join(str(d / "cgroup.procs") for d in cgroups.dirs()),
                    "FORALL_RLIMIT_AS_KB": str(memory_rlimit_kb or "")}
        stdin_file = _stdin_file(run_dir, stdin)
        # stdout and stderr are sockets, not pipes: /proc/<pid>/fd/N of a pipe can be opened again for writing by
        # any process of the sandbox's user, of a socket it cannot (ENXIO), so what we read is what the command wrote
        outputs = [socket.socketpair() for _ in range(2)]
        for ours, _ in outputs:
            ours.shutdown(socket.SHUT_WR)
        stdout_fd, stderr_fd = (ours.detach() for ours, _ in outputs)
        owned_fds += [stdout_fd, stderr_fd]
        start = time.monotonic()
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", _ENTER_LIMITS_SHIM, "forall-sandbox", *bwrap_argv],
                                    env=shim_env, stdin=stdin_file, stdout=outputs[0][1].fileno(),
                                    stderr=outputs[1][1].fileno(), close_fds=True, pass_fds=pass_fds,
                                    start_new_session=True)
        finally:
            for _, theirs in outputs:
                theirs.close()
        if stdin_file != subprocess.DEVNULL:
            os.close(stdin_file)
        for fd in (info_write, status_write):
            os.close(fd)
            owned_fds.remove(fd)
        supervisor = _Supervisor(proc, stdout_fd, stderr_fd, info_read, status_read, cgroups)
        with tracked(supervisor.cancel):  # a cancelled scope kills the sandbox as its time limit would
            supervisor.run(policy.wall_seconds, policy.stall_seconds, policy.cpu_seconds)
        duration = time.monotonic() - start
        survivors = cgroups.reap_survivors()
        if not supervisor.timed_out and not supervisor.init_started and proc.returncode != 0:
            bwrap_error = supervisor.stderr.text().strip()
            raise SandboxUnavailable(_unavailable_message(
                f"bwrap could not build the sandbox (exit {proc.returncode}): {bwrap_error}"))
        leftovers = (supervisor.killed_at_timeout if supervisor.timed_out
                     else (supervisor.init_report or {}).get("leftovers"))
        report = supervisor.init_report or {}
        extra = {"sandbox": "bwrap", "sandbox_pid": supervisor.sandbox_pid,
                 "timed_out": supervisor.timed_out, "stalled": supervisor.stalled,
                 **(supervisor.cpu.wire(supervisor.cpu_spent, supervisor.cpu_stalled) if supervisor.cpu is not None else {}),
                 "stopped_at_stall": supervisor.stopped_at_stall,
                 # the command died of a signal the harness did not send (it kills PID 1, and then no report
                 # comes): sent from inside the sandbox, or the kernel's (the memory cgroup's OOM killer)
                 "command_signal": None if supervisor.timed_out else report.get("signal"),
                 "oom": cgroups.oom_kills() > 0 if cgroups.memory else None,
                 "memory_peak_mb": cgroups.memory_peak_mb(),
                 "pids_limit_hit": cgroups.pids_limit_hits() > 0 if cgroups.pids else None,
                 "leftovers_killed": leftovers, "survivors": survivors,
                 "access_log": str(access_log) if proxy is not None else None,
                 "output_dropped_bytes": {"stdout": supervisor.stdout.dropped,
                                          "stderr": supervisor.stderr.dropped},
                 "limits": {"memory": ("cgroup-v1" if cgroups.memory
                                       else "rlimit-as" if memory_rlimit_kb else None),
                            "pids": "cgroup-v1" if cgroups.pids else None,
                            "network": "proxy-allowlist" if proxy is not None else "none",
                            "seccomp": seccomp_fd is not None,
                            "shells": f"landlock-abi{_landlock_abi()}" if shells else None,
                            "exec": executable}}
        returncode = 124 if supervisor.timed_out else proc.returncode
        return ProcResult(list(argv), returncode, supervisor.stdout.text(), supervisor.stderr.text(),
                          duration, supervisor.timed_out, extra)
    finally:
        if proc is not None and proc.poll() is None:  # interrupted (e.g. Ctrl-C in pytest): take it all down
            cgroups.kill()
            kill_group(proc)
            proc.wait()
        if proxy is not None:
            proxy.stop()
        cgroups.remove()
        for fd in owned_fds:
            os.close(fd)
        shutil.rmtree(run_dir, ignore_errors=True)


def _redact_env_values(argv: Sequence[str]) -> list[str]:
    """The bwrap command for the audit record, with ``--setenv`` values hidden (they may be API keys)."""
    redacted = list(argv)
    for index, arg in enumerate(redacted[:-2]):
        if arg == "--setenv":
            redacted[index + 2] = "<redacted>"
    return redacted


def _skeleton_args(*extra_flags: str, root: Path | None = None) -> list[str]:
    """Namespaces, no capabilities, read-only /usr with its /bin and /lib links, and the host /etc pieces (with
    a ``root`` filesystem: its /usr and its whole /etc instead)."""
    usr = f"{root}/usr" if root else "/usr"
    args = [BWRAP, "--unshare-all", "--unshare-user", "--unshare-net", "--disable-userns",
            "--die-with-parent", "--new-session", *extra_flags, "--cap-drop", "ALL",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox",
            "--ro-bind", usr, "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            "--symlink", "usr/lib", "/lib"]
    if os.path.isdir(f"{usr}/lib64"):
        args += ["--symlink", "usr/lib64", "/lib64"]
    if root:
        return args + ["--ro-bind", f"{root}/etc", "/etc"]
    for path in HOST_ETC:
        args += ["--ro-bind-try", path, path]
    return args


#: The inside path of a prover bind that names a root filesystem (``(ROOT, ROOT_INSIDE)`` among a backend's
#: ``sandbox_binds``): the prover runner makes it the policy's ``root`` instead of binding it.
ROOT_INSIDE = "/"


def split_root(binds: Sequence[tuple[Path, str]]) -> tuple[Path | None, tuple[tuple[Path, str], ...]]:
    """A backend's binds as (root filesystem or None, the other binds)."""
    roots = [src for src, inside in binds if inside == ROOT_INSIDE]
    return (roots[-1] if roots else None), tuple((src, inside) for src, inside in binds if inside != ROOT_INSIDE)


def _bwrap_argv(policy: SandboxPolicy, workspace: Path, run_dir: Path, cwd_inside: str, *, has_proxy: bool,
                seccomp_fd: int | None, info_fd: int, shells: Sequence[tuple[Path, Path, str, str]] = (),
                bind_confine: bool = False) -> list[str]:
    args = _skeleton_args("--as-pid-1", root=policy.root)
    for name in ("passwd", "group", "hosts", "nsswitch.conf"):
        args += ["--ro-bind", str(run_dir / "etc" / name), f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
             "--ro-bind", str(INIT_SCRIPT), f"{RUN_DIR_INSIDE}/init.py"]
    if has_proxy:
        args += ["--ro-bind", str(run_dir / "proxy.sock"), f"{RUN_DIR_INSIDE}/proxy.sock"]
    # the workspace first, so a read-only bind may sit inside it (e.g. a shared dependency cache)
    args += ["--bind", str(workspace), policy.workspace_inside]
    for src, dest in policy.rw_binds:
        args += ["--bind", str(src), dest]
    for src, dest in policy.ro_binds:
        args += ["--ro-bind", str(src), dest]
    if shells or bind_confine:
        args += ["--ro-bind", str(CONFINE_SCRIPT), f"{RUN_DIR_INSIDE}/confine.py"]
    for wrapper, real, real_inside, shell in shells:
        args += ["--ro-bind", str(real), real_inside, "--ro-bind", str(wrapper), shell]
    if policy.exec_beneath is not None:
        # the root tmpfs itself (/etc, /bin, /lib64, /run, any PATH directory that does not exist inside): an actor
        # writing /etc/ld.so.preload had its code loaded into every program its CLI started; binds keep their flags
        args += ["--remount-ro", "/"]
    args += ["--chdir", cwd_inside, "--clearenv"]
    for key, value in _inside_env(policy, has_proxy).items():
        args += ["--setenv", key, value]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    return args + ["--info-fd", str(info_fd)]


@functools.cache
def _landlock_abi() -> int:
    """The kernel's Landlock ABI (the host's is the sandbox's): once per process."""
    return confine.abi() if seccomp.supported() else 0


def _exec_dirs(policy: SandboxPolicy) -> list[str] | None:
    """The inside directories the command may execute files beneath: ``/usr`` and those of
    ``policy.exec_beneath`` that lie in a read-only bind (bound last, so nothing writable covers them); None when
    the policy asks for no rule or the kernel has no Landlock."""
    if policy.exec_beneath is None or policy.root is not None or _landlock_abi() < 1:
        return None
    readonly = [dest for _, dest in policy.ro_binds]
    return ["/usr", *dict.fromkeys(path for path in policy.exec_beneath
                                   if any(os.path.commonpath([path, top]) == top for top in readonly))]


def _shell_wrappers(run_dir: Path, policy: SandboxPolicy) -> list[tuple[Path, Path, str, str]]:
    """(wrapper, real shell's copy, the copy's path inside, the shell path the wrapper replaces) for a policy that
    confines shells, on a
    kernel with Landlock scopes; [] otherwise (the audit's ``limits.shells`` says which)."""
    if not policy.confine_shells or policy.root is not None or _landlock_abi() < confine.SCOPED_ABI:
        return []
    wrappers = []
    for shell in CONFINED_SHELLS:
        if not os.path.isfile(shell) or not os.path.isfile(confine.LOADER):
            continue
        name = Path(shell).name
        # the real shell inside is a copy without execute permission: only the loader runs it, as the wrapper does,
        # so a CLI that starts a shell by a path of its choosing cannot start an unconfined one
        real = run_dir / "shells-real" / name
        real.parent.mkdir(exist_ok=True)
        shutil.copyfile(shell, real)
        real.chmod(0o444)
        real_inside = f"{RUN_DIR_INSIDE}/shells/{name}"
        wrapper = run_dir / "shells" / name
        wrapper.parent.mkdir(exist_ok=True)
        wrapper.write_text(f"#!{INSIDE_PYTHON} -IS\nimport sys\nsys.path.insert(0, {RUN_DIR_INSIDE!r})\n"
                           f"import confine\nconfine.run({real_inside!r})\n")
        wrapper.chmod(0o555)
        wrappers.append((wrapper, real, real_inside, shell))
    return wrappers


def _inside_env(policy: SandboxPolicy, has_proxy: bool) -> dict[str, str]:
    env = {"PATH": DEFAULT_PATH, "HOME": policy.workspace_inside, "USER": "sandbox", "LOGNAME": "sandbox"}
    if has_proxy:
        proxy_url = f"http://127.0.0.1:{PROXY_PORT}"
        for key in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            env[key] = proxy_url
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env = {**env, **policy.env}
    executable = _exec_dirs(policy)
    if executable is not None:  # a PATH entry nothing inside may execute from is only a lookup that fails
        usable = (*executable, "/bin", "/sbin")
        env["PATH"] = ":".join(entry for entry in env["PATH"].split(":") if entry.startswith("/") and any(
            os.path.commonpath([entry, top]) == top for top in usable)) or DEFAULT_PATH
    return env


def _loopback_mirrors(allow: Sequence[str]) -> list[tuple[int, str]]:
    """Allowlisted host-loopback services appear at the same 127.0.0.1:port inside (tunnelled, logged)."""
    mirrors = []
    for endpoint in allow:
        from pytest_forall.isolation.netproxy import parse_endpoint

        host, port = parse_endpoint(endpoint)
        if host in ("127.0.0.1", "localhost") and port >= UNPRIVILEGED_PORT_START and port != PROXY_PORT:
            mirrors.append((port, endpoint))
    return mirrors


def _write_etc(run_dir: Path, home: str) -> None:
    """Minimal identity and name-service files: tools that look up their user or ``localhost`` work."""
    etc = run_dir / "etc"
    etc.mkdir()
    (etc / "passwd").write_text(f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{home}:/bin/sh\n")
    (etc / "group").write_text(f"sandbox:x:{SANDBOX_UID}:\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
    (etc / "nsswitch.conf").write_text("passwd: files\ngroup: files\nhosts: files\n")  # no DNS, ever


def _stdin_file(run_dir: Path, stdin: str | None) -> int:
    """stdin from a file, not a pipe: no writer thread, and no deadlock against a command that never reads."""
    if stdin is None:
        return subprocess.DEVNULL
    path = run_dir / "stdin"
    path.write_text(stdin, encoding="utf-8")
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def _unavailable_message(reason: str) -> str:
    return (f"sandbox unavailable: {reason}. Fix: `apt-get install -y bubblewrap` on a kernel with user "
            "namespaces enabled, or run unsandboxed with --forall-sandbox=none (recorded in the audit).")


class _Tail:
    """The last :data:`OUTPUT_CAP` bytes of a stream, and how many earlier bytes were dropped."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        excess = len(self.data) - OUTPUT_CAP
        if excess > 0:
            del self.data[:excess]
            self.dropped += excess

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class _Supervisor:
    """Drains the sandbox's output, enforces the wall clock, and tears the sandbox down on timeout."""

    def __init__(self, proc: subprocess.Popen[bytes], stdout_fd: int, stderr_fd: int, info_fd: int,
                 status_fd: int, cgroups: _RunCgroups) -> None:
        self.proc = proc
        self.cgroups = cgroups
        self.stdout, self.stderr = _Tail(), _Tail()
        self._info, self._status = bytearray(), bytearray()
        self._stdout_fd = stdout_fd
        self._fds: dict[int, Callable[[bytes], None]] = {
            stdout_fd: self.stdout.add, stderr_fd: self.stderr.add,
            info_fd: self._info.extend, status_fd: self._status.extend}
        self._info_fd = info_fd
        self._sandbox_pidfd: int | None = None
        #: :meth:`cancel` (another thread) never signals through a pidfd this thread has closed
        self._pidfd_lock = threading.Lock()
        self._finished = False
        self.sandbox_pid: int | None = None
        self.timed_out = False
        #: killed because stdout stayed silent for ``stall_seconds`` (``timed_out`` is then set too)
        self.stalled = False
        self.killed_at_timeout: int | None = None
        #: processes of the run that were stopped (SIGSTOP, traced) when the stall fired: silence not the provider's
        self.stopped_at_stall: int | None = None
        #: the run's CPU budget (``SandboxPolicy.cpu_seconds``), and whether it ended the run
        self.cpu: CpuWatch | None = None
        self.cpu_spent = False
        #: ended because its process tree used no CPU for ``CPU_STALL_SECONDS`` (:class:`CpuWatch`), its budget unspent
        self.cpu_stalled = False

    @property
    def init_started(self) -> bool:
        """The sandbox's init ran, so bwrap built the sandbox (whatever happened to the command later)."""
        return bool(self._status)

    @property
    def init_report(self) -> dict[str, Any] | None:
        """What the sandbox's init wrote when the command ended (None if it was killed before that)."""
        reports = [json.loads(line) for line in self._status.splitlines()]
        return next((report for report in reports if "exit_code" in report), None)

    def run(self, wall_seconds: float | None, stall_seconds: float | None = None,
            cpu_seconds: float | None = None) -> None:
        deadline = None if wall_seconds is None else time.monotonic() + wall_seconds
        self.cpu = CpuWatch(self.proc.pid, cpu_seconds) if cpu_seconds is not None else None
        stdout_fd = self._stdout_fd
        last_output = time.monotonic()
        with selectors.DefaultSelector() as selector:
            for fd, sink in self._fds.items():
                selector.register(fd, selectors.EVENT_READ, sink)
            while selector.get_map():
                now = time.monotonic()
                silent_until = None if stall_seconds is None or self.timed_out else last_output + stall_seconds
                if silent_until is not None and now >= silent_until:
                    self.stalled = True
                    self.stopped_at_stall = self.cgroups.stopped()
                    deadline = now
                if self.cpu is not None and not self.timed_out and self.cpu.spent(now):
                    self.cpu_spent = True
                    deadline = now
                elif self.cpu is not None and not self.timed_out and self.cpu.stalled:  # no CPU for a while: stopped
                    self.cpu_stalled = True
                    deadline = now
                if deadline is not None and now >= deadline:
                    if self.timed_out:  # the pid namespace is gone but something still holds our pipes
                        self._kill_everything()
                        break
                    if self.cpu is not None and not self.cpu_spent:  # what the tree had spent when the backstop came
                        self.cpu_spent = self.cpu.read(now)
                    self.timed_out = True
                    self._kill_sandbox()
                    deadline = now + KILL_GRACE
                cpu_read = self.cpu.next_read if self.cpu is not None and not self.timed_out else None
                wake = min((t for t in (deadline, silent_until, cpu_read) if t is not None), default=None)
                for key, _ in selector.select(None if wake is None else max(0.0, wake - now)):
                    try:
                        chunk = os.read(key.fd, CHUNK)
                    except ConnectionResetError:  # a socket whose other end closed with data unread
                        chunk = b""
                    if chunk:
                        if key.fd == stdout_fd:
                            last_output = time.monotonic()
                        key.data(chunk)
                        continue
                    selector.unregister(key.fd)
                    if key.fd == self._info_fd:
                        self._open_sandbox_pidfd()
        try:
            self.proc.wait(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            self._kill_everything()
            self.proc.wait()
        with self._pidfd_lock:
            self._finished = True
            if self._sandbox_pidfd is not None:
                os.close(self._sandbox_pidfd)
                self._sandbox_pidfd = None

    def _open_sandbox_pidfd(self) -> None:
        """bwrap reports the host pid of the sandbox's PID 1; a pidfd pins it against pid reuse."""
        try:
            self.sandbox_pid = int(json.loads(self._info)["child-pid"])
            self._sandbox_pidfd = os.pidfd_open(self.sandbox_pid)
        except (ValueError, KeyError, ProcessLookupError):
            pass  # bwrap failed early, or the sandbox is already gone

    def _kill_sandbox(self) -> None:
        """SIGKILL the sandbox's PID 1: the kernel kills the whole pid namespace (setsid escapees too),
        and bwrap, still alive, reaps it, so no zombie is left to the host's init."""
        members = self.cgroups.members()
        if members is not None:
            self.killed_at_timeout = max(0, len(members) - 2)  # not counting bwrap and the sandbox init
        if self._sandbox_pidfd is not None:
            try:
                signal.pidfd_send_signal(self._sandbox_pidfd, signal.SIGKILL)
                return
            except ProcessLookupError:
                pass
        kill_group(self.proc)  # bwrap itself; --die-with-parent then takes the sandbox down

    def cancel(self) -> None:
        """From another thread: the result is no longer needed. Kill the sandbox's PID 1, as the time limit does,
        so bwrap reaps the whole namespace before it exits and the run ends with no survivor."""
        with self._pidfd_lock:
            if not self._finished:
                self._kill_sandbox()

    def _kill_everything(self) -> None:
        self.cgroups.kill()
        kill_group(self.proc)


@dataclass
class _RunCgroups:
    """The run's own cgroups: v1 memory and pids for limits, v2 for membership and ``cgroup.kill``.

    Each is None where the host does not offer it or we may not write it; the audit records which limits held.
    """

    memory: Path | None = None
    pids: Path | None = None
    unified: Path | None = None

    @classmethod
    def create(cls, run_id: str, memory_mb: int | None, max_processes: int | None) -> _RunCgroups:
        own = _own_cgroup_dirs()
        name = f"forall-{run_id}"
        groups = cls()
        if memory_mb is not None and "memory" in own:
            limit = {"memory.limit_in_bytes": str(memory_mb << 20)}
            groups.memory = _make_cgroup(own["memory"] / name, limit)
        if max_processes is not None and "pids" in own:
            groups.pids = _make_cgroup(own["pids"] / name, {"pids.max": str(max_processes)})
        if "unified" in own:
            groups.unified = _make_cgroup(own["unified"] / name, {})
        return groups

    def dirs(self) -> list[Path]:
        return [path for path in (self.memory, self.pids, self.unified) if path is not None]

    def members(self) -> set[int] | None:
        """Pids of the run still alive (None when no cgroup tracks the run)."""
        if not self.dirs():
            return None
        return {int(pid) for path in self.dirs() for pid in (path / "cgroup.procs").read_text().split()}

    def stopped(self) -> int | None:
        """How many of the run's processes are stopped (state T or t) now; None when no cgroup tracks the run."""
        members = self.members()
        if members is None:
            return None
        count = 0
        for pid in members:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            except (OSError, IndexError):
                continue
            count += state in ("T", "t")
        return count

    def kill(self) -> None:
        if self.unified is not None and (self.unified / "cgroup.kill").exists():
            (self.unified / "cgroup.kill").write_text("1")
            return
        for pid in self.members() or ():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def reap_survivors(self) -> list[int] | None:
        """After the sandbox is gone: which of its processes are still alive (must be none), killed now."""
        survivors = self.members()
        if survivors:
            self.kill()
            deadline = time.monotonic() + KILL_GRACE
            while self.members() and time.monotonic() < deadline:
                time.sleep(0.02)
        return None if survivors is None else sorted(survivors)

    def oom_kills(self) -> int:
        assert self.memory is not None
        return _counter(self.memory / "memory.oom_control", "oom_kill")

    def memory_peak_mb(self) -> int | None:
        """The run's peak charge to its memory cgroup (MiB), what the bound was measured against."""
        if self.memory is None:
            return None
        try:
            return int((self.memory / "memory.max_usage_in_bytes").read_text()) >> 20
        except (OSError, ValueError):
            return None

    def pids_limit_hits(self) -> int:
        assert self.pids is not None
        return _counter(self.pids / "pids.events", "max")

    def remove(self) -> None:
        """Best effort: a cgroup still busy after the grace period is left (``survivors`` says why)."""
        for path in self.dirs():
            deadline = time.monotonic() + KILL_GRACE
            while path.exists() and time.monotonic() < deadline:
                try:
                    path.rmdir()
                except OSError:  # EBUSY while the last task's exit is still being accounted
                    time.sleep(0.01)


def _counter(path: Path, key: str) -> int:
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def _own_cgroup_dirs() -> dict[str, Path]:
    """This process's cgroup directories: v1 ``memory`` and ``pids``, and ``unified`` for the v2 hierarchy."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else ["unified"]:
            own[controller] = path
    found: dict[str, Path] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mount_fields, _, fs_fields = line.partition(" - ")
        root, mount_point = mount_fields.split()[3:5]
        fs_type, _, super_options = fs_fields.split()[:3]
        if fs_type == "cgroup2":
            keys = ["unified"]
        elif fs_type == "cgroup":
            keys = [opt for opt in super_options.split(",") if opt in ("memory", "pids")]
        else:
            continue
        for key in keys:
            if key in own and PurePosixPath(own[key]).is_relative_to(root):
                found[key] = Path(mount_point) / PurePosixPath(own[key]).relative_to(root)
    return found


def _make_cgroup(path: Path, settings: Mapping[str, str]) -> Path | None:
    try:
        path.mkdir()
    except OSError:
        return None
    try:
        for name, value in settings.items():
            (path / name).write_text(value)
    except OSError:
        path.rmdir()
        return None
    return path


def probe_sandbox() -> str:
    """"" when bwrap can build a sandbox here (user namespaces work), else the reason and the fix."""
    for tool in (BWRAP, INSIDE_PYTHON):
        if not os.access(tool, os.X_OK):
            return _unavailable_message(f"{tool} is not installed")
    argv = [BWRAP, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--as-pid-1",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--proc", "/proc", "--dev", "/dev", "--", INSIDE_PYTHON, "-I", "-S", "-c", "pass"]
    try:
        probe = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _unavailable_message(f"running bwrap failed: {exc}")
    if probe.returncode != 0:
        return _unavailable_message(f"bwrap cannot create namespaces here: {probe.stderr.strip()}")
    return ""


def host_binds(programs: Iterable[str], directories: Iterable[Path] = ()) -> list[Path]:
    """Host paths to bind read-only at their own paths so that ``programs`` (absolute host paths) run inside and
    ``directories`` can be read: each program's install prefix (``<prefix>/bin/<tool>``, for the path and for its
    resolved target, e.g. an opam switch), each directory itself. Nothing under /usr (always there) or already
    covered. A tool not in a ``bin/``, or whose prefix would be the home directory or a path the sandbox reserves
    (``~/bin/coqc``, ``/tmp/bin/coqc``), gets only its own directory: every candidate's compile can read a bind."""
    found: list[Path] = []

    def add(path: Path) -> None:
        if str(path) in RESERVED_INSIDE or path.is_relative_to("/usr"):
            return
        if not any(path.is_relative_to(p) for p in found):
            found.append(path)

    for program in programs:
        for path in (Path(os.path.abspath(program)), Path(program).resolve()):
            prefix = path.parent.parent if path.parent.name == "bin" else path.parent
            add(path.parent if str(prefix) in RESERVED_INSIDE or prefix == Path.home() else prefix)
    for directory in directories:
        if directory.is_dir():
            add(Path(os.path.abspath(directory)))  # the path the tool opens; bwrap follows a symlinked source
    return found


def own_prover_runner(options: Mapping[str, Any], binds: Sequence[tuple[Path, str]]) -> Callable[..., ProcResult] | str | None:
    """The sandbox a prover backend puts itself in when built from options that ask for one (``forall verify``,
    ``sandbox="bwrap"``): the runner, or why no sandbox can start. None when unsandboxed, or when the caller
    sandboxes the backend itself (the pytest items' protocol swaps its runner: ``sandboxed_by="protocol"``).
    The sandbox log goes to ``sandbox_audit_dir``, else into the cache directory (made by the first sandboxed call):
    never a directory of its own in /tmp, which nothing would remove."""
    if options.get("sandbox") != "bwrap" or options.get("sandboxed_by") == "protocol":
        return None
    audit = Path(str(options.get("sandbox_audit_dir") or cache_root(dict(options)) / "sandbox-log")).absolute()
    runner = sandboxed_prover_runner(audit, [(path, inside) for path, inside in binds if path.exists()])
    if isinstance(runner, str):
        return f"the prover sandbox is unavailable: {runner} (forall verify --sandbox none runs the prover unsandboxed)"
    return runner


def sandboxed_prover_runner(audit_dir: Path, ro_binds: Sequence[tuple[Path, str]] = ()) -> Callable[..., ProcResult] | str:
    """:func:`prover_runner`, or why no sandbox can start here (with the fix): the protocol's sandbox launcher."""
    problem = _probe_once()
    return problem or prover_runner(audit_dir, ro_binds)


@functools.cache
def _probe_once() -> str:
    """:func:`probe_sandbox` once per process: whether namespaces work does not change between items, and the
    probe starts a sandbox (15-60 ms), more than an item whose verdict comes from the cache costs."""
    return probe_sandbox()


def prover_runner(audit_dir: Path, ro_binds: Sequence[tuple[Path, str]] = ()) -> Callable[..., ProcResult]:
    """A drop-in for :func:`pytest_forall.core.proc.run_command` that runs a prover call in the sandbox.

    The call's ``cwd`` (the verifier's private build directory) becomes the writable workspace; relative
    paths in ``argv`` keep working because the command starts in the workspace inside. No network. A bind at
    :data:`ROOT_INSIDE` is the toolchain's root filesystem (``SandboxPolicy.root``).
    """
    root, binds = split_root(ro_binds)

    def run(argv: Sequence[str], *, cwd: Path | str, timeout: float | None, env: dict[str, str] | None = None,
            stdin: str | None = None, mem_mb: int | None = None, rss_mb: int | None = None,
            cpu_s: float | None = None) -> ProcResult:
        # the run's memory cgroup charges resident pages (reclaimable file pages included), which is what
        # either limit asks for here
        policy = SandboxPolicy(workspace=Path(cwd), ro_binds=binds, wall_seconds=timeout, cpu_seconds=cpu_s, root=root,
                               memory_mb=rss_mb or mem_mb, env=dict(env or {"PATH": DEFAULT_PATH}))
        try:
            return run_sandboxed(argv, policy, audit_dir=audit_dir, stdin=stdin)
        except SandboxUnavailable as exc:
            return ProcResult(list(argv), 127, "", f"sandbox unavailable: {exc}", 0.0)

    return run


def interactive_prefix(workspace: Path, ro_binds: Sequence[tuple[Path, str]] = ()) -> list[str]:
    """A bwrap command prefix for an interactive tool driven over a pty (the portfolio's ``coqtop``).

    Same isolation as :func:`run_sandboxed` for files, processes and network (own namespaces, no
    network at all, read-only /usr, the workspace as the only writable path, dies with its parent), but
    no proxy, cgroups or init: the caller bounds time and memory and kills the pty's process group.
    """
    root, binds = split_root(ro_binds)
    args = _skeleton_args(root=root)
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(workspace), "/workspace"]
    for src, dest in binds:
        args += ["--ro-bind", str(src), dest]
    return args + ["--chdir", "/workspace", "--clearenv", "--setenv", "PATH", DEFAULT_PATH,
                   "--setenv", "HOME", "/workspace", "--"]
