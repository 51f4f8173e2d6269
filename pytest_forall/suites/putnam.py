"""PutnamBench adapter: an upstream checkout laid out as ``lean4/src/*.lean`` and ``coq/src/*.v``.

Task id = file stem; the track (``lean4`` or ``coq``) becomes a marker. The checkout is located by
``--forall-putnam-root``, the ini option ``forall_putnam_root`` or ``PUTNAMBENCH_ROOT``, else the manifest's
``default_root`` (relative to the manifest: ``../shared/benchmarks/PutnamBench`` beside the clone, as the README
says); it is read in place and never copied into a workspace beyond the one template file an item needs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytest_forall.core.errors import UsageError
from pytest_forall.core.language import Language
from pytest_forall.core.model import Task
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.lean import LANGUAGE as LEAN
from pytest_forall.lang.rocq import LANGUAGE as ROCQ

SUITE = "putnam"
#: track -> (directory, the language pack parsing its files)
TRACKS: dict[str, tuple[str, Language]] = {"coq": ("coq/src", ROCQ), "lean4": ("lean4/src", LEAN)}


def putnam_root(options: dict[str, Any], manifest_dir: Path | None = None, default: str = "") -> Path:
    """Resolve the checkout, naming where the value came from when it is wrong; ``default`` (the manifest's
    ``default_root``, relative to ``manifest_dir``) when nothing is set."""
    for source, value in (("--forall-putnam-root / forall_putnam_root", options.get("putnam_root")),
                          ("PUTNAMBENCH_ROOT", os.environ.get("PUTNAMBENCH_ROOT"))):
        if value:
            root = Path(str(value)).expanduser()
            if not root.is_absolute() and manifest_dir is not None and source.startswith("--"):
                root = Path(str(options.get("rootdir", "."))) / root
            if not (root / "coq" / "src").is_dir() and not (root / "lean4" / "src").is_dir():
                raise UsageError(f"{source} = {value!r}: {root} is not a PutnamBench checkout "
                                 "(expected lean4/src/*.lean and/or coq/src/*.v)")
            return root
    fallback = (manifest_dir / default).resolve() if default and manifest_dir is not None else None
    if fallback is not None and ((fallback / "coq" / "src").is_dir() or (fallback / "lean4" / "src").is_dir()):
        return fallback
    looked = f" and it is not at the default {fallback}" if fallback is not None else ""
    raise UsageError(f"PutnamBench location not set{looked}: pass --forall-putnam-root DIR, set the ini option "
                     "forall_putnam_root, or export PUTNAMBENCH_ROOT")


def load_track(root: Path, track: str) -> list[Task]:
    subdir, language = TRACKS[track]
    tasks = []
    for path in sorted((root / subdir).glob(f"*.{language.extension}")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            tasks.append(Task(task_id=path.stem, suite=SUITE, track=track, prover=language.name,
                              source_path=str(path), template="", problem=f"cannot read: {exc}"))
            continue
        tasks.append(language.parse_problem(path.stem, path, text, suite=SUITE, track=track))
    return tasks


@hookimpl(trylast=True)
def pytest_forall_load_tasks(path: Path, manifest: dict[str, Any], options: dict[str, Any]) -> list[Task] | None:
    if manifest.get("adapter") != SUITE:
        return None
    root = putnam_root(options, path.parent, str(manifest.get("default_root") or ""))
    tracks = manifest.get("tracks", ["coq", "lean4"])
    unknown = [t for t in tracks if t not in TRACKS]
    if unknown:
        raise UsageError(f"{path}: unknown PutnamBench track(s) {unknown}; known: {sorted(TRACKS)}")
    tasks: list[Task] = []
    for track in tracks:
        if (root / TRACKS[track][0]).is_dir():
            tasks.extend(load_track(root, track))
    return tasks
