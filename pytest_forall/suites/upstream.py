"""Where a problem file comes from upstream: its GitHub address at the commit its checkout is pinned to.

Issue 33, item 17: the Markdown table a user pastes into an upstream issue (``forall report``) named each problem
by local paths, which mean nothing to the maintainers who read it. A row now carries ``upstream``, the problem
file's address in its upstream repository at the pinned commit, when the checkout says both:

- a git checkout (``.git`` in it): ``origin``'s GitHub repository and ``HEAD``, for a file git has unchanged;
- a data copy with a ``SOURCE.md`` naming the repository (``owner/name`` in parentheses, as the shared
  PutnamBench copy does) and the ``commit`` of its 40 hex digits.

Anything else (another host, no commit, a modified file) gives "": no link rather than a wrong one.
"""

from __future__ import annotations

import functools
import hashlib
import re
import subprocess
from pathlib import Path

SOURCE_NOTE = "SOURCE.md"
_GITHUB_REMOTE = re.compile(r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)"
                            r"([\w.-]+/[\w.-]+?)(?:\.git)?/?$")
_NOTE_REPOSITORY = re.compile(r"\(([\w.-]+/[\w.-]+)\)")
_NOTE_COMMIT = re.compile(r"\bcommit\s+([0-9a-f]{40})\b")


def upstream_url(source_path: str) -> str:
    """``https://github.com/<owner>/<name>/blob/<commit>/<path>`` of the problem file at ``source_path``, or ""."""
    if not source_path:
        return ""
    path = Path(source_path)
    if not path.is_absolute() or not path.is_file():
        return ""
    for root in path.parents:
        if (root / ".git").exists() or (root / SOURCE_NOTE).is_file():
            pinned = _pinned(str(root))
            if pinned is None:
                return ""
            repository, commit, from_git = pinned
            relative = path.relative_to(root).as_posix()
            if from_git and not _unchanged(root, relative):
                return ""
            return f"https://github.com/{repository}/blob/{commit}/{relative}"
    return ""


@functools.cache
def _pinned(root: str) -> tuple[str, str, bool] | None:
    """(owner/name, commit, whether git says so) of the checkout at ``root``, once per process."""
    if (Path(root) / ".git").exists():
        remote, head = _git(root, "remote", "get-url", "origin"), _git(root, "rev-parse", "HEAD")
        match = _GITHUB_REMOTE.match(remote)
        return (match.group(1), head, True) if match and re.fullmatch(r"[0-9a-f]{40}", head) else None
    try:
        note = (Path(root) / SOURCE_NOTE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    repository, commit = _NOTE_REPOSITORY.search(note), _NOTE_COMMIT.search(note)
    return (repository.group(1), commit.group(1), False) if repository and commit else None


def _git(root: str, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError, ValueError):  # ValueError: a path git prints that is not UTF-8
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _unchanged(root: Path, relative: str) -> bool:
    """Whether ``relative`` is on disk as ``HEAD`` has it committed (a link must show the very file that was run):
    its git blob id, computed here, against ``HEAD``'s tree read once per checkout (no subprocess per item)."""
    committed = _head_blobs(str(root)).get(relative)
    if committed is None:
        return False
    try:
        data = (root / relative).read_bytes()
    except OSError:
        return False
    digest = hashlib.sha256 if len(committed) == 64 else hashlib.sha1  # the repository's object format
    return digest(b"blob %d\0" % len(data) + data).hexdigest() == committed


@functools.cache
def _head_blobs(root: str) -> dict[str, str]:
    """Each file of ``HEAD``'s tree at ``root`` and its blob id (``git ls-tree -r -z HEAD``), once per process."""
    listing = _git(root, "ls-tree", "-r", "-z", "--full-tree", "HEAD")
    blobs = {}
    for entry in listing.split("\0"):
        meta, _, name = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            blobs[name] = fields[2]
    return blobs
