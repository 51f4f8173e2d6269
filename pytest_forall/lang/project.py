"""A proof project on disk, whatever its prover: where it is (``--forall-project``), which kind it is, and its source
files. The language packs read their project's layout from here; the project suite makes tasks of it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_forall.core.errors import UsageError

#: The suite of a project's items (``suites/project.py``).
SUITE = "project"
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".lake", "_build", "_opam", "node_modules", "__pycache__"})
LAKEFILES = ("lakefile.toml", "lakefile.lean")
#: A file in every run directory of the harness that ran an item (the run secret).
RUN_MARKER = ".secret"
#: Per project root: the proofs the last collection did not make items, with the reason (the collection report).


def project_root(options: dict[str, Any], manifest: dict[str, Any] | None = None) -> Path:
    """The project named by ``--forall-project`` (or a manifest's ``path``), checked to be one."""
    value = options.get("project") or (manifest or {}).get("path")
    if not value:
        raise UsageError("no project given: pass --forall-project PATH (a Lake project with lakefile.toml/"
                         "lakefile.lean, or a Rocq project with _CoqProject or *.v files)")
    root = Path(str(value)).expanduser()
    if not root.is_absolute():  # typed on the command line: from the invocation directory (issue 32)
        root = Path(str(options.get("project_base") or options.get("rootdir", "."))) / root
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(f"--forall-project {value}: {root} is not a directory")
    if not is_lean_project(root) and not is_rocq_project(root):
        raise UsageError(f"--forall-project {value}: {root} is neither a Lake project (lakefile.toml/lakefile.lean) "
                         "nor a Rocq project (_CoqProject or *.v files)")
    return root


def is_lean_project(root: Path) -> bool:
    return any((root / name).is_file() for name in LAKEFILES)


def is_rocq_project(root: Path) -> bool:
    return (root / "_CoqProject").is_file() or next(source_files(root, ".v"), None) is not None


def source_files(root: Path, ext: str) -> Iterator[Path]:
    """The project's ``ext`` files, without VCS/build directories and without the harness's own run
    directories (a reports directory inside the project holds copies of its files in every workspace)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
                             and not (Path(dirpath) / d / RUN_MARKER).exists())
        for name in sorted(filenames):
            if name.endswith(ext):
                yield Path(dirpath) / name


def task_id_of(qualified: str) -> str:
    return qualified.replace(".", "__")


