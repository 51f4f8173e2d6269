"""Per-item workspaces: a fresh directory holding only what the benchmark's rules permit.

For PutnamBench that is the one problem file (the candidate starts as the template) and a short
TASK.md; never the rest of the checkout. Directory names are opaque (derived from a run secret), so
the path an agent sees reveals neither the benchmark nor other tasks.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import shutil
import stat
from pathlib import Path, PurePosixPath

from pytest_forall.core.model import MAX_CANDIDATE_BYTES, Task


def opaque_name(secret: bytes, nodeid: str) -> str:
    return hmac.new(secret, nodeid.encode(), hashlib.sha256).hexdigest()[:20]


def task_brief(task: Task) -> str:
    """What the actor is told about its task, written into the workspace as TASK.md."""
    return (f"# Task {task.task_id}\n\nProve the theorem `{task.theorem_name}` in `{task.candidate_name}`.\n"
            f"Everything before the proof is frozen and must stay exactly as given"
            f"{' (including the answer value)' if task.answer else ''}; only the proof may change, and helper "
            "lemmas may be added before the theorem.\n")


def prepare(root: Path, name: str, task: Task, *, reset: bool, brief: bool = True) -> Path:
    """Create (or, with ``reset``, recreate) the workspace ``root/name`` for ``task``; ``brief``: with TASK.md (what
    a coding agent reads; an offline frontend reads nothing)."""
    workspace = root / name
    if reset and workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    # a resumed workspace is the agent's: every write below goes through write_file, never through its symlinks
    if not os.path.lexists(workspace / task.candidate_name):
        write_file(workspace, task.candidate_name, task.template.encode("utf-8"))
    if brief:
        write_file(workspace, "TASK.md", task_brief(task).encode("utf-8"))
    for rel, text in task.context_files.items():
        write_file(workspace, rel, text.encode("utf-8"))
    tree = task.meta.get("workspace_tree")  # a prepared (sanitized) directory, too large for context_files
    if tree:
        dest = PurePosixPath(str(task.meta.get("workspace_tree_dest") or "."))
        for dirpath, dirnames, filenames in os.walk(str(tree)):  # never follows symlinked directories
            dirnames[:] = [d for d in dirnames if d != ".git" and not os.path.islink(os.path.join(dirpath, d))]
            here = PurePosixPath(os.path.relpath(dirpath, str(tree)))
            links = [d for d in os.listdir(dirpath) if d != ".git" and os.path.islink(os.path.join(dirpath, d))]
            for entry in sorted({*filenames, *links}):
                source = os.path.join(dirpath, entry)
                rel = str(dest / here / entry)
                if os.path.islink(source):
                    write_file(workspace, rel, os.readlink(source).encode(), symlink=True)
                else:
                    write_file(workspace, rel, Path(source).read_bytes(), mode=stat.S_IMODE(os.stat(source).st_mode))
    return workspace


def write_file(workspace: Path, relname: str, data: bytes, *, mode: int = 0o644, symlink: bool = False) -> None:
    """Put ``data`` at ``workspace/relname`` (with ``symlink``: a symlink whose target is ``data``) as the harness's
    own file, whatever the agent left on the path.

    The workspace is written by a hostile agent that knows the host paths around it: a symlink it planted at the file
    or at any directory on the way would carry a plain ``write_text`` to a file outside (another item's record, the
    run's results, the verdict cache). Every directory is opened with O_NOFOLLOW relative to its parent's fd (what is
    not a directory there is removed and made one); the file is written under a fresh name and renamed over the
    entry, which replaces a symlink or file rather than writing through it (a directory there is removed first).
    """
    parts = [p for p in PurePosixPath(relname).parts if p != "."]
    if not parts or PurePosixPath(relname).is_absolute() or ".." in parts:
        raise ValueError(f"relname must be a relative path inside the workspace: {relname!r}")
    dir_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:
                _remove_entry(dir_fd, part)
                os.mkdir(part, 0o755, dir_fd=dir_fd)
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        name = parts[-1]
        fresh = f".{name}.forall-{os.getpid()}-{os.urandom(4).hex()}"
        if symlink:
            os.symlink(data.decode(), fresh, dir_fd=dir_fd)
        else:
            fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                         dir_fd=dir_fd)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        try:
            os.replace(fresh, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:  # a directory (or a non-empty one) where the file goes
            _remove_entry(dir_fd, name)
            os.replace(fresh, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _remove_entry(dir_fd: int, name: str) -> None:
    """Remove whatever ``name`` is in the directory ``dir_fd`` (a directory with its contents, never following)."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


class Unreadable(Exception):
    """A workspace file that is not read, and why (absent, a symlink on its path, not a plain file, too large)."""


def open_candidate(workspace: Path, relname: str, max_bytes: int = MAX_CANDIDATE_BYTES) -> bytes:
    """The bytes of ``workspace/relname`` written by an agent (hostile), or :class:`Unreadable`.

    Every path component is opened with O_NOFOLLOW relative to its parent's fd, so a planted symlink at any
    depth cannot redirect the read outside the workspace, and a swap between check and open cannot either.
    FIFOs, devices and directories are refused, and so is a file larger than ``max_bytes``.
    """
    parts = PurePosixPath(relname).parts
    if not parts or PurePosixPath(relname).is_absolute() or ".." in parts:
        raise ValueError(f"relname must be a relative path inside the workspace: {relname!r}")
    try:
        dir_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise Unreadable(f"workspace {workspace} cannot be opened: {exc.strerror}") from None
    try:
        for depth, part in enumerate(parts[:-1], 1):
            try:
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError as exc:
                raise Unreadable(f"{'/'.join(parts[:depth])} is not a directory of the workspace "
                                 f"({exc.strerror}; symlinks are never followed)") from None
            os.close(dir_fd)
            dir_fd = next_fd
        try:  # O_NONBLOCK: opening a planted FIFO must not hang the verifier
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                         dir_fd=dir_fd)
        except OSError as exc:
            raise Unreadable(f"no regular file {relname} ({exc.strerror}; symlinks are never followed)") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise Unreadable(f"{relname} is not a regular file")
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max_bytes + 1)  # the file may grow after fstat
        if len(data) > max_bytes or info.st_size > max_bytes:
            raise Unreadable(f"{relname} is {max(info.st_size, len(data))} bytes, over the limit of {max_bytes} "
                             "bytes for a candidate")
        return data
    finally:
        os.close(dir_fd)


def read_candidate(workspace: Path, name: str, max_bytes: int = MAX_CANDIDATE_BYTES) -> bytes | None:
    """:func:`open_candidate`, with None for a file that is not read."""
    try:
        return open_candidate(workspace, name, max_bytes)
    except Unreadable:
        return None


def unreadable_reason(workspace: Path, name: str) -> str:
    """Why :func:`read_candidate` returns None for ``name`` ("" when it does not)."""
    try:
        open_candidate(workspace, name)
    except Unreadable as exc:
        return str(exc)
    return ""


# --- multi-file submissions (``meta["submission_files"]``, e.g. Lean Eval) -------------------------------
#: Never part of a submission nor a protected change: our own notes and build outputs.
_IGNORED = ("TASK.md", "REVIEW.md")
_IGNORED_DIRS = (".lake",)


def _is_submission(rel: str, patterns: list[str]) -> bool:
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in patterns)


def _walk(workspace: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(workspace):  # never follows symlinked directories
        dirnames[:] = sorted(d for d in dirnames if d not in _IGNORED_DIRS)
        for name in filenames:
            found.append(os.path.relpath(os.path.join(dirpath, name), workspace).replace(os.sep, "/"))
        found += [os.path.relpath(os.path.join(dirpath, d), workspace).replace(os.sep, "/")
                  for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
    return sorted(found)


def bundle_bytes(files: dict[str, bytes]) -> bytes:
    """Canonical serialisation of a multi-file submission; its SHA-256 is the submission's digest.

    For each relative path (``/``-separated) in sorted order: the UTF-8 path, NUL, the byte length
    in decimal, NUL, the bytes.
    """
    return b"".join(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data
                    for rel, data in sorted(files.items()))


def parse_bundle(data: bytes) -> dict[str, bytes]:
    """Inverse of :func:`bundle_bytes`; raises ValueError on anything else."""
    files: dict[str, bytes] = {}
    i = 0
    while i < len(data):
        a = data.index(b"\0", i)
        b = data.index(b"\0", a + 1)
        rel, size = data[i:a].decode(), int(data[a + 1:b])
        if size < 0 or b + 1 + size > len(data) or rel in files or (files and rel < max(files)):
            raise ValueError(f"malformed bundle entry {rel!r}")
        files[rel] = data[b + 1:b + 1 + size]
        i = b + 1 + size
    return files


def read_task_candidate(workspace: Path, task: Task) -> bytes | None:
    """The candidate's bytes: the one file, or for ``meta["submission_files"]`` the canonical bundle."""
    patterns = task.meta.get("submission_files")
    if not patterns:
        return read_candidate(workspace, task.candidate_name)
    files: dict[str, bytes] = {}
    for rel in _walk(workspace):
        if _is_submission(rel, list(patterns)):
            data = read_candidate(workspace, rel)
            if data is not None:  # symlinks and special files are never part of a submission
                files[rel] = data
    return bundle_bytes(files) if task.candidate_name in files else None


def protected_changes(workspace: Path, task: Task) -> list[str]:
    """For ``meta["submission_files"]`` tasks: every change outside the submission since :func:`prepare`."""
    patterns = task.meta.get("submission_files")
    if not patterns:
        return []
    expected = {task.candidate_name: task.template, **task.context_files}
    changes = []
    present = set()
    for rel in _walk(workspace):
        if rel in _IGNORED or _is_submission(rel, list(patterns)):
            continue
        present.add(rel)
        if rel not in expected:
            changes.append(f"added {rel}")
        elif read_candidate(workspace, rel) != expected[rel].encode("utf-8"):
            changes.append(f"modified {rel}")
    changes += [f"removed {rel}" for rel in sorted(expected)
                if rel not in present and rel not in _IGNORED and not _is_submission(rel, list(patterns))]
    return changes
