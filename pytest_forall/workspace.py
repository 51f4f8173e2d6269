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
from pathlib import Path

from .model import Task


def opaque_name(secret: bytes, nodeid: str) -> str:
    return hmac.new(secret, nodeid.encode(), hashlib.sha256).hexdigest()[:20]


def task_brief(task: Task) -> str:
    """What the actor is told about its task, written into the workspace as TASK.md."""
    return (f"# Task {task.task_id}\n\nProve the theorem `{task.theorem_name}` in `{task.candidate_name}`.\n"
            f"Everything before the proof is frozen and must stay exactly as given"
            f"{' (including the answer value)' if task.answer else ''}; only the proof may change, and helper "
            "lemmas may be added before the theorem.\n")


def prepare(root: Path, name: str, task: Task, *, reset: bool) -> Path:
    """Create (or, with ``reset``, recreate) the workspace ``root/name`` for ``task``."""
    workspace = root / name
    if reset and workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    candidate = workspace / task.candidate_name
    if not candidate.exists():
        candidate.write_text(task.template, encoding="utf-8")
    (workspace / "TASK.md").write_text(task_brief(task), encoding="utf-8")
    for rel, text in task.context_files.items():
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return workspace


def read_candidate(workspace: Path, name: str, max_bytes: int = 4 * 1024 * 1024) -> bytes | None:
    """Read ``workspace/name`` without following a symlink the agent planted; None when absent or not a file."""
    try:
        fd = os.open(workspace / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= max_bytes else None
    finally:
        os.close(fd)
