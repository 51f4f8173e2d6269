"""Any-project suite: ``pytest --forall-project PATH`` turns every proof of a project into an item.

* **Rocq** (``_CoqProject``, or ``*.v`` files): every ``Theorem``/``Lemma``/``Fact``/``Remark``/``Corollary``/
  ``Proposition``/``Example``, and every ``Definition``/``Instance`` (``Program`` ones too) proved in proof mode,
  is an item (library mode); ``Admitted`` ones are marked ``admitted``. Task id = the qualified name with ``.``
  written ``__`` (``Demo.Arith.add_zero`` -> ``Demo__Arith__add_zero``). Proofs that are not items (``Let``,
  ``Next Obligation``, unnamed instances, inside functors …) are listed once in the collection report.
* **Lean** (``lakefile.toml``/``lakefile.lean``): every ``theorem``/``lemma`` whose proof is ``sorry``
  (``:= sorry``, ``:= by sorry``) is an item, with the same id scheme.

A Rocq item's context is the project itself (issue 18): its template is the target's own file up to the
target, with the proof as the hole and the open sections/modules closed; a candidate is compiled *as that file*
in a copy of the project's own build (``lang/rocq/project/``), and the judge compares, as kernel terms, the
target's type and every earlier declaration of the file with the project's own build. Nothing of Coq's scoping
is rebuilt from text. A proof resting on the project's admitted lemmas or axioms is ``rules_only``; on proved
ones, ``strict``; on axioms the maintainer declared the project's foundations (``--forall-project-axioms``, checked
against the build), ``strict``, naming them.

``--forall-proofs DIR`` is the proof store: replay (``--forall-frontend replay``) reads ``DIR/<id>.v``
(without ``--forall-proofs``, a project item replays the project's own proof), and every accepted project proof
from any other frontend is written there.

This module is the collection: the project's files → tasks (the Rocq pack reads a Rocq project's layout and items,
``lang/rocq/project/``, and builds and judges them; the Lean pack finds a Lean file's ``sorry`` theorems,
``lang/lean/project.py``), and the proofs that are not items, with the reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path
from typing import Any

from pytest_forall.core.model import Task
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.lean.project import LEAN_PROVER, is_sorry_proof, lean_decls
from pytest_forall.lang.project import (
    LAKEFILES,
    SUITE,
    is_lean_project,
    is_rocq_project,
    project_root,
    source_files,
    task_id_of,
)
from pytest_forall.lang.rocq.project.build import cone_keys, project_toolchain, toolchain_version
from pytest_forall.lang.rocq.project.items import rocq_tasks
from pytest_forall.lang.rocq.project.layout import CoqProject, read_coqproject
from pytest_forall.lang.rocq.project.prover import project_rocq_prover

#: Per project root: the proofs the last collection did not make items, with the reason (the collection report).
NOT_ITEMS: dict[str, list[tuple[str, str]]] = {}


def build_command_problem(command: str, root: Path) -> str:
    """Why ``--forall-project-build`` cannot run (checked at configure time), or "": it must be one shell command
    line whose program exists (on PATH, or a path in the project)."""
    import shlex

    if not command.strip():
        return "the build command is empty"
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return f"cannot read the build command {command!r}: {exc}"
    first = next((w for w in words if not re.fullmatch(r"\w+=.*", w)), "")  # after VAR=value assignments
    if not first:
        return f"the build command {command!r} runs no program"
    if "/" in first:
        if not (root / first).is_file() or not os.access(root / first, os.X_OK):
            return f"{first} (the build command's program) is not an executable file of the project {root}"
    elif shutil.which(first) is None and first not in ("cd", "exec", "set", "export", "true", ":", "."):
        return f"{first!r} (the build command's program) is not on PATH"
    return ""


#: a fully qualified kernel name as the judge prints an assumption: a logical root, then at least a name
_QUALIFIED = re.compile(r"[^\W\d][\w']*(?:\.[^\W\d][\w']*)+")



def project_axioms_problem(names: tuple[str, ...], root: Path) -> str:
    """Why ``--forall-project-axioms`` is malformed for the project at ``root`` (checked at configure time), or "":
    each name is fully qualified under one of the project's logical names. Whether the build has each as an axiom
    is checked against the build itself (``ProjectRocqProver._declaration_problem``, ``lang/rocq/project/``)."""
    bad = [name for name in names if not _QUALIFIED.fullmatch(name)]
    if bad:
        return (f"{bad[0]!r} is not a fully qualified kernel name (e.g. Lib.File.my_axiom, as the audit names "
                "assumptions)")
    if not is_rocq_project(root):
        return f"{root} is not a Rocq project (no _CoqProject or *.v files): declared axioms are a Rocq project's own"
    roots = tuple(f"{logical}." for _, _, logical in read_coqproject(root).mappings)
    foreign = [name for name in names if roots and not name.startswith(roots)]
    if foreign:
        return (f"`{foreign[0]}` is not under the project's logical names ({', '.join(r[:-1] for r in roots)}): "
                "only the project's own axioms can be declared (an installed library's are not the project's)")
    return ""


def lean_tasks(root: Path) -> list[Task]:
    tasks = []
    for path in source_files(root, ".lean"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("lake-packages/") or rel in LAKEFILES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "sorry" not in text:
            continue
        for decl in lean_decls(text):
            if decl.keyword == "example" or not is_sorry_proof(decl.proof_text(text)):
                continue
            task_id = task_id_of(decl.qualified)
            template = text[:decl.end] + "\n"
            meta = {"candidate_name": f"{task_id}.lean", "project_root": str(root), "project_file": rel,
                    "qualified_name": decl.qualified, "declared_name": decl.name,
                    "retrieval_exclude": [decl.qualified]}
            problem = "private theorems cannot be audited from another module" if decl.private else ""
            tasks.append(Task(task_id=task_id, suite=SUITE, track="lean4", prover=LEAN_PROVER,
                              source_path=str(path), template=template, frozen=text[:decl.body],
                              theorem_name=decl.qualified, statement=text[decl.start:decl.body].strip(),
                              problem=problem, meta=meta))
    return tasks


# --- hooks --------------------------------------------------------------------------------------------

def _lex_store(options: dict[str, Any]) -> Any:
    """The run's verdict cache as the store of lexed files (None with ``--forall-cache=off`` or no cache directory,
    and, as the verdict cache itself (``plugin.runner.verdict_cache``), outside a sandbox unless the frontend is a
    non-agent one: an unsandboxed coding agent could write the cache and its key)."""
    from pytest_forall.core.cache import CACHE_MODES, VerdictCache

    mode, where = str(options.get("cache") or "off"), options.get("cache_dir")
    if options.get("sandbox") == "none" and str(options.get("frontend") or "") not in ("replay", "portfolio"):
        return None
    return VerdictCache(Path(str(where)).expanduser() / "verdicts", mode) if where and mode in CACHE_MODES \
        and mode != "off" else None


def load_project(root: Path, options: dict[str, Any]) -> list[Task]:
    tasks: list[Task] = []
    skipped: list[tuple[str, str]] = []
    if is_rocq_project(root):
        project = read_coqproject(root)
        if options.get("build_ahead"):
            _build_ahead(project, options)
        tasks += rocq_tasks(project, cone_keys(project, toolchain_version(options),
                                               str(options.get("project_build") or "").strip(),
                                               project_toolchain(options)), skipped, _lex_store(options))
    NOT_ITEMS[str(root)] = skipped
    if is_lean_project(root):
        tasks += lean_tasks(root)
    seen: dict[str, int] = {}
    unique = []
    for task in tasks:  # overloaded names (e.g. in two files outside any mapping) stay distinct
        count = seen.get(task.task_id, 0)
        seen[task.task_id] = count + 1
        unique.append(task if not count else Task(**{**task.to_wire(), "task_id": f"{task.task_id}_{count + 1}"}))
    return unique


def _build_ahead(project: CoqProject, options: dict[str, Any]) -> None:
    """The project's build started in the background as the collection finds the project (``options["build_ahead"]``:
    a pytest run that will run items, not ``--collect-only``), so that the collection's lexing runs while coqc
    compiles (``ProjectBuilds.build_ahead``, ``lang/rocq/project/build.py``). Nothing when the toolchain cannot run:
    every item says why."""
    if not project.files:
        return
    with contextlib.suppress(Exception):  # ahead of need only: the first item builds and reports
        prover = project_rocq_prover(options)
        if not prover.probe(project.root):
            prover.build_ahead(project, float(options.get("timeout") or 300))


def not_items(root: Path, options: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """The proofs of a Rocq project that are not items, with the reason, read from its text alone (no build, no
    coqdep): the listing of a process that did not collect (the pytest-xdist controller). ``options``: the run's, for
    its lexed files kept in the verdict cache (:func:`~pytest_forall.lang.rocq.project.items._proofs_of`)."""
    skipped: list[tuple[str, str]] = []
    if is_rocq_project(root):
        rocq_tasks(read_coqproject(root), {}, skipped, _lex_store(options or {}))
    return skipped


@hookimpl(trylast=True)
def pytest_forall_load_tasks(path: Path, manifest: dict[str, Any], options: dict[str, Any]) -> list[Task] | None:
    if manifest.get("adapter") != SUITE:
        return None
    return load_project(project_root(options, manifest), options)
