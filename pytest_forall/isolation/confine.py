"""A shell of an agent's tools, one Landlock domain below the agent CLI that started it. Runs *inside* bwrap.

The agent CLI (Claude Code, Codex, OpenCode) and the shell it runs the model's commands in share the sandbox's
user and pid namespace, so without more the model's commands could reach the CLI: write a forged event into
its stdout through ``/proc/<pid>/fd/1``, rewrite its memory through ``/proc/<pid>/mem``, stop or kill it. The
sandbox binds a small script over each shell (``/usr/bin/bash``, ``/usr/bin/dash``) that calls :func:`run`: it
enters a new Landlock domain and has the dynamic loader run the real shell, a copy without execute permission. Landlock lets a process of a domain trace (and so open
another's ``/proc/<pid>/fd``, ``mem``, ``environ``) only processes of its own domain or below, and with
``LANDLOCK_SCOPE_SIGNAL`` signal only those: everything the shell starts can neither touch the CLI nor the
sandbox's init, and the domain cannot be left. Filesystem and network rules stay bwrap's and the proxy's: the
ruleset handles no access right, only the scopes.

A program the CLI starts *itself* (OpenCode's ``rg``, looked up in its HOME's cache when PATH has none; a
helper, language server or hook found by name) runs in the CLI's domain, not a shell's. So the CLI is started
through :func:`main` too, which enters a domain that may execute files only beneath the directories the harness
names (``/usr``, the CLI's install, the prover's tools: read-only binds nobody in the sandbox can write). Domains
nest, so the CLI and all it starts, its shells included, can never execute a file written during the run, whatever
its name or wherever the CLI looks it up.

Stdlib only, imported with ``python3 -I -S``. A shell that cannot be confined does not start (exit 126): the
host checks :func:`abi` before it installs the wrappers, so that means the kernel changed under the run.
"""

from __future__ import annotations

import ctypes
import os
import sys

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446  # every ABI's table
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_ACCESS_FS_EXECUTE = 1
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, LANDLOCK_SCOPE_SIGNAL = 1, 2
#: The first ABI with scopes (signals); below it the ruleset could not be created without filesystem rights.
SCOPED_ABI = 6
PR_SET_NO_NEW_PRIVS = 38
#: Names the variables set for the agent CLI only (what its own ``git`` may read): a confined shell drops them.
CLI_ONLY_ENV = "FORALL_CLI_ONLY_ENV"
#: The dynamic loader runs the real shell, whose copy inside has no execute permission (docs/sandbox.md).
LOADER = "/lib64/ld-linux-x86-64.so.2"


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is absent or disabled."""
    version = _libc().syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                              ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(0, int(version))


def enter_domain(exec_beneath: list[str] | None = None) -> str:
    """Put this process (and all it will start) into a new Landlock domain; "" or why not. Without
    ``exec_beneath`` the domain is scoped (signals, abstract sockets); with it, it may execute files only beneath
    those directories."""
    libc = _libc()
    if exec_beneath is None:
        attr = _RulesetAttr(0, 0, LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL)
    else:
        attr = _RulesetAttr(LANDLOCK_ACCESS_FS_EXECUTE, 0, 0)
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}"
    try:
        for path in exec_beneath or ():
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(LANDLOCK_ACCESS_FS_EXECUTE, fd)
                if libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    return f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}"
            finally:
                os.close(fd)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"PR_SET_NO_NEW_PRIVS: {os.strerror(ctypes.get_errno())}"
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(ruleset)
    return ""


def run(real: str) -> None:
    """The wrapper's body: confine, then become ``real`` with the caller's arguments (``sys.argv[0]`` is the
    path the caller ran, e.g. ``/bin/sh``, so a shell that looks at its name behaves as called). ``real`` has no
    execute permission, so a CLI that starts a shell by a path of its own choosing cannot start it unconfined;
    the loader maps it."""
    problem = enter_domain()
    if problem:
        print(f"sandbox: the shell was not started, it could not be confined: {problem}", file=sys.stderr)
        os._exit(126)
    for name in (*os.environ.get(CLI_ONLY_ENV, "").split(), CLI_ONLY_ENV):
        os.environ.pop(name, None)
    os.execv(LOADER, [sys.argv[0], "--argv0", sys.argv[0], real, *sys.argv[1:]])


def main(args: list[str]) -> None:
    """``confine.py DIR... -- COMMAND...``: run COMMAND in a domain that may execute files only beneath each DIR
    (a DIR that does not exist inside is left out)."""
    split = args.index("--")
    beneath = [path for path in args[:split] if os.path.isdir(path)]
    problem = enter_domain(beneath)
    if problem:
        print(f"sandbox: {args[split + 1]} was not started, it could not be confined: {problem}", file=sys.stderr)
        os._exit(126)
    try:
        os.execvp(args[split + 1], args[split + 1:])
    except OSError as exc:
        print(f"sandbox: {args[split + 1]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
