"""A seccomp-BPF filter for sandboxed commands, built with the stdlib (no libseccomp binding).

bwrap loads it with ``--seccomp FD`` just before it execs the command. Namespaces, dropped capabilities
and ``--disable-userns`` already stop most of these calls; the filter is the second wall, and it also closes
kernel attack surface that namespaces leave open (io_uring, bpf, userfaultfd, keyrings, perf, TIOCSTI).
Denied calls fail with ``EPERM`` rather than killing the process: curious tools get an error to handle.
"""

from __future__ import annotations

import errno
import platform
import struct

#: Denied on x86_64 (numbers from ``asm/unistd_64.h``): debugging other processes (``pidfd_getfd`` too: a copy of
#: another process's descriptor, such as the init's status socket or the sandbox's stdout), mounting and namespace
#: changes, kernel modules and kexec, keyrings, eBPF, perf, io_uring, userfaultfd, handle-based opens.
DENIED_SYSCALLS_X86_64: dict[str, int] = {
    "ptrace": 101, "syslog": 103, "uselib": 134, "vhangup": 153, "pivot_root": 155, "chroot": 161,
    "acct": 163, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "iopl": 172,
    "ioperm": 173, "init_module": 175, "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212,
    "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
    "perf_event_open": 298, "fanotify_init": 300, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313,
    "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "pidfd_getfd": 438, "mount_setattr": 442, "quotactl_fd": 443,
}
SYS_IOCTL, SYS_CLONE, SYS_CLONE3 = 16, 56, 435
#: ioctls that push input into, or reprogram, the controlling terminal (TIOCSTI injection, TIOCLINUX).
DENIED_IOCTLS = (0x5412, 0x541C)
#: CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}: creating namespaces from inside the sandbox.
CLONE_NAMESPACE_FLAGS = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
                         | 0x40000000)
X32_SYSCALL_BIT = 0x40000000
AUDIT_ARCH_X86_64 = 0xC000003E

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
# offsets in struct seccomp_data: nr, arch, then args[] as u64 from byte 16 (we read the low 32 bits,
# which is all the kernel looks at for ioctl's cmd and for clone's namespace flags)
_NR, _ARCH, _ARG0_LOW, _ARG1_LOW = 0, 4, 16, 24


def supported() -> bool:
    """The filter is written for x86_64 only; elsewhere the sandbox runs without it (and says so)."""
    return platform.machine() == "x86_64"


def build_filter() -> bytes:
    """Return the ``struct sock_filter[]`` program that bwrap's ``--seccomp`` expects."""
    # (code, jump-if-true label, jump-if-false label, k); label None = fall through to the next instruction
    program: list[tuple[int, str | None, str | None, int]] = [
        (_LD_W_ABS, None, None, _ARCH),
        (_JEQ, None, "kill", AUDIT_ARCH_X86_64),  # another ABI (i386 via int 0x80) could dodge the numbers
        (_LD_W_ABS, None, None, _NR),
        (_JGE, "eperm", None, X32_SYSCALL_BIT),
        (_JEQ, "ioctl", None, SYS_IOCTL),
        (_JEQ, "clone", None, SYS_CLONE),
        # clone3 passes flags in memory the filter cannot read; ENOSYS makes libc fall back to clone
        (_JEQ, "enosys", None, SYS_CLONE3),
        *[(_JEQ, "eperm", None, nr) for nr in DENIED_SYSCALLS_X86_64.values()],
        (_RET, None, None, _RET_ALLOW),
    ]
    labels = {"ioctl": len(program)}
    program += [(_LD_W_ABS, None, None, _ARG1_LOW),
                *[(_JEQ, "eperm", None, cmd) for cmd in DENIED_IOCTLS],
                (_RET, None, None, _RET_ALLOW)]
    labels["clone"] = len(program)
    program += [(_LD_W_ABS, None, None, _ARG0_LOW),
                (_JSET, "eperm", None, CLONE_NAMESPACE_FLAGS),
                (_RET, None, None, _RET_ALLOW)]
    labels["eperm"] = len(program)
    program.append((_RET, None, None, _RET_ERRNO | errno.EPERM))
    labels["enosys"] = len(program)
    program.append((_RET, None, None, _RET_ERRNO | errno.ENOSYS))
    labels["kill"] = len(program)
    program.append((_RET, None, None, _RET_KILL_PROCESS))

    def offset(index: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - index - 1

    return b"".join(struct.pack("<HBBI", code, offset(i, jt), offset(i, jf), k)
                    for i, (code, jt, jf, k) in enumerate(program))
