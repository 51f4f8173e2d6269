"""Accepted proofs of a project's admitted lemmas as patches against the project's own files (issue 38).

A project item's accepted candidate is the file *up to* the lemma plus its proof: copied over the original it would
delete the rest of the file. This module turns each one into an edit of the project's file (the candidate's helpers
right before the lemma, its proof in place of the admitted attempt: :mod:`pytest_forall.lang.rocq.splice`), merges
the edits of one file into one unified diff (``reports/<run>/patches/<file>.patch``) and says which items cannot
go in (a helper named like a later declaration of the file; with a ``check``, a proof that does not build in the
whole file). The run writes the patches as items are accepted (:func:`record_patch`); ``forall apply`` plans again
from the same records, checks each file by compiling it, writes it, and re-judges the library.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_forall.core.language import language_or_plain
from pytest_forall.core.model import RULES_ONLY, STRICT, sha256_bytes
from pytest_forall.lang.project import SUITE

#: The run directory's folder of patches, one ``<project file>.patch`` per file.
PATCHES = "patches"
#: Per accepted admitted lemma, where its audit record is (the run's index of what the patches are made from).
_INDEX = ".accepted"
#: The run's settings ``forall apply`` needs to compile and re-judge as the run did.
SETTINGS = "apply.json"
#: The options :func:`record_settings` keeps (the project, its build, the toolchain, the cache, the sandbox).
KEPT_OPTIONS = ("project", "project_build", "project_axioms", "rocq_toolchain", "cache_dir", "reports", "sandbox",
                "sandbox_ro", "timeout")


@dataclass(frozen=True)
class Accepted:
    """One accepted proof of an admitted lemma, with what the run knew of the lemma's file."""

    task_id: str
    nodeid: str
    prover: str
    root: Path
    rel: str
    statement_offset: int
    file_digest: str
    candidate: str


@dataclass
class FilePlan:
    """What goes into one project file: the items applied, those left out (with the reason), the new text."""

    root: Path
    rel: str
    text: str
    applied: list[Accepted] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    new_text: str = ""

    def diff(self) -> str:
        """The unified diff of the file (``a/<rel>`` → ``b/<rel>``, as ``patch -p1`` and ``git apply`` read it)."""
        return "".join(difflib.unified_diff(self.text.splitlines(keepends=True),
                                            self.new_text.splitlines(keepends=True),
                                            f"a/{self.rel}", f"b/{self.rel}"))


def patch_name(rel: str) -> str:
    """The patch of project file ``rel``, relative to the run directory."""
    return f"{PATCHES}/{rel}.patch"


def read_accepted(audit_dir: Path, task_id: str, nodeid: str = "", digest: str = "") -> Accepted | str | None:
    """The accepted proof an item's audit record holds, when the item is an admitted lemma of a project; None when it
    is not one (its proof, if any, is the project's); why it cannot be read back (a string) otherwise. ``digest``: the
    row's, which the stored file must match."""
    try:
        task = json.loads((audit_dir / "task.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"cannot read the item's task record: {exc}"
    meta = task.get("meta") or {}
    if task.get("suite") != SUITE or "project_file" not in meta or "statement_offset" not in meta \
            or not meta.get("admitted"):
        return None
    stored = audit_dir / "accepted" / str(meta.get("candidate_name") or f"{task_id}.v")
    try:
        data = stored.read_bytes()
    except OSError as exc:
        return f"the accepted proof is missing: {exc}"
    if digest and sha256_bytes(data) != digest:
        return f"{stored}: its digest differs from the recorded {digest}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{stored} is not UTF-8 text: {exc}"
    root, rel = Path(str(meta["project_root"])), str(meta["project_file"])
    # apply writes root/rel: a record naming a file outside the project (absolute, or through ``..``) is refused
    if Path(rel).is_absolute() or ".." in Path(rel).parts or not (root / rel).resolve().is_relative_to(root.resolve()):
        return f"its task record names {rel}, a file outside the project {root}"
    return Accepted(task_id, nodeid, str(task.get("prover") or ""), root, rel, int(meta["statement_offset"]),
                    str(meta.get("file_digest") or ""), text)


def accepted_in_run(run_dir: Path) -> tuple[list[Accepted], list[tuple[str, str]]]:
    """Every accepted proof of an admitted project lemma in the run (its latest rows), and the accepted project rows
    whose proof cannot be read back, with the reason."""
    from pytest_forall.core.summary import latest_results

    found: list[Accepted] = []
    problems: list[tuple[str, str]] = []
    for row in sorted(latest_results(run_dir).values(), key=lambda r: str(r.get("nodeid"))):
        if row.get("suite") != SUITE or row.get("outcome") not in (STRICT, RULES_ONLY):
            continue
        got = read_accepted(Path(str(row.get("audit_dir", ""))), str(row["task_id"]), str(row["nodeid"]),
                            str(row.get("digest") or ""))
        if isinstance(got, Accepted):
            found.append(got)
        elif got is not None:
            problems.append((str(row["task_id"]), got))
    return found, problems


def file_digest(text: str) -> str:
    """The digest the project suite records of a file's text (``meta["file_digest"]``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan_file(root: Path, rel: str, text: str, proofs: list[Accepted],
              check: Callable[[str], str] | None = None) -> FilePlan:
    """The edits of ``proofs`` (accepted proofs of lemmas of ``rel``) merged into ``text``, in file order.

    An item is left out, with the reason, when its proof cannot be put back, when a helper it adds is named like a
    declaration after it in the file (the file's own, or an earlier item's helper), or when ``check`` (given the
    file with it and the items kept before it) says the file does not build."""
    plan = FilePlan(root, rel, text)
    edits: list[Any] = []
    taken: dict[str, str] = {}  # a helper name already added -> the item that adds it
    for proof in sorted({p.task_id: p for p in proofs}.values(), key=lambda p: p.statement_offset):
        splicer = language_or_plain(proof.prover).project_splice()  # the pack decides if its items go back
        if splicer is None:
            plan.left_out.append((proof.task_id, f"the {proof.prover} pack puts no proof back into a project's file"))
            continue
        try:
            edit = splicer.splice(text, proof.statement_offset, proof.candidate)
        except ValueError as exc:
            plan.left_out.append((proof.task_id, f"its proof cannot be put back into {rel}: {exc}"))
            continue
        try:
            later = splicer.declared_after(text, edit.end)
        except ValueError as exc:
            plan.left_out.append((proof.task_id, f"its proof cannot be put back into {rel}: {exc}"))
            continue
        clash = next((name for name in edit.helpers if name in later or name in taken), "")
        if clash:
            where = (f"declared at line {later[clash]} of {rel}" if clash in later
                     else f"the helper {taken[clash]} adds before it")
            plan.left_out.append((proof.task_id, f"its helper `{clash}` clashes with `{clash}` {where}"))
            continue
        trial = _render(text, [*edits, edit])
        problem = check(trial) if check is not None else ""
        if problem:
            plan.left_out.append((proof.task_id, f"its proof does not build in the whole file {rel}: {problem}"))
            continue
        edits.append(edit)
        plan.applied.append(proof)
        taken.update(dict.fromkeys(edit.helpers, proof.task_id))
    plan.new_text = _render(text, edits)
    return plan


def _render(text: str, edits: list[Any]) -> str:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[:edit.start] + edit.replacement + text[edit.end:]
    return text


def write_patch(run_dir: Path, plan: FilePlan) -> Path:
    """The plan's unified diff at :func:`patch_name` (an empty plan removes a stale one)."""
    path = run_dir / patch_name(plan.rel)
    if not plan.applied:
        path.unlink(missing_ok=True)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(plan.diff(), encoding="utf-8")
    return path


def record_settings(run_dir: Path, options: dict[str, Any]) -> None:
    """Keep the options ``forall apply`` compiles and re-judges with (:data:`KEPT_OPTIONS`)."""
    path = run_dir / PATCHES / SETTINGS
    if path.is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = {key: options.get(key) for key in KEPT_OPTIONS if options.get(key) not in (None, "", [], ())}
    for key in ("cache_dir", "reports"):  # relative to where the run started, not to where apply does
        if key in kept:
            kept[key] = str(Path(str(kept[key])).resolve())
    path.write_text(json.dumps({"options": kept}, sort_keys=True, default=str), encoding="utf-8")


def read_settings(run_dir: Path) -> dict[str, Any]:
    """The options :func:`record_settings` kept ({} when the run wrote no patch)."""
    try:
        value = json.loads((run_dir / PATCHES / SETTINGS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    options = value.get("options") if isinstance(value, dict) else None
    return dict(options) if isinstance(options, dict) else {}


def record_patch(run_dir: Path, result: dict[str, Any]) -> dict[str, str]:
    """An accepted project item, as it finishes: its lemma's file's patch made again with it (under a lock: items of
    one file finish in several workers). Returns the row's fields: ``patch`` (the file, relative to the run
    directory) or ``patch_problem`` (why its proof is not in one); {} for an item that is not an admitted lemma."""
    got = read_accepted(Path(str(result.get("audit_dir", ""))), str(result.get("task_id")), str(result.get("nodeid")),
                        str(result.get("digest") or ""))
    if not isinstance(got, Accepted):
        return {} if got is None else {"patch_problem": got}
    index = run_dir / PATCHES / _INDEX
    index.mkdir(parents=True, exist_ok=True)
    entry = {"audit_dir": str(result["audit_dir"]), "task_id": got.task_id, "nodeid": got.nodeid,
             "digest": str(result.get("digest") or ""), "rel": got.rel}
    (index / f"{got.task_id}.json").write_text(json.dumps(entry, sort_keys=True), encoding="utf-8")
    with FileLock(str(run_dir / PATCHES / ".lock")):
        proofs = []
        for path in sorted(index.glob("*.json")):
            other = json.loads(path.read_text(encoding="utf-8"))
            if other.get("rel") != got.rel:
                continue
            found = got if other["task_id"] == got.task_id else read_accepted(
                Path(other["audit_dir"]), other["task_id"], other["nodeid"], other["digest"])
            if isinstance(found, Accepted) and found.root == got.root:
                proofs.append(found)
        try:
            text = (got.root / got.rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return {"patch_problem": f"cannot read {got.rel}: {exc}"}
        if file_digest(text) != got.file_digest:
            return {"patch_problem": f"{got.rel} changed during the run: no patch against it"}
        plan = plan_file(got.root, got.rel, text, [p for p in proofs if p.file_digest == got.file_digest])
        write_patch(run_dir, plan)
    reason = dict(plan.left_out).get(got.task_id)
    return {"patch_problem": reason} if reason else {"patch": patch_name(got.rel)}


def project_prover(options: dict[str, Any], work: Path) -> Any:
    """The run's :class:`~pytest_forall.lang.rocq.project.prover.ProjectRocqProver` (its build, toolchain and
    cache), its processes sandboxed as the run's were (``work``: where the sandbox keeps its log). Raises
    :class:`ApplyInfra` when no sandbox can start."""
    from pytest_forall.lang.rocq.project.prover import ProjectRocqProver

    prover = ProjectRocqProver(options)
    if options.get("sandbox", "bwrap") == "bwrap":
        from pytest_forall.isolation.sandbox import sandboxed_prover_runner

        runner = sandboxed_prover_runner(work / "sandbox", [(p, inside) for p, inside in prover.sandbox_binds
                                                            if p.exists()])
        if isinstance(runner, str):
            raise ApplyInfra(f"sandbox: {runner}")
        prover.runner, prover.sandboxed = runner, True
    return prover


class ApplyInfra(RuntimeError):
    """A check could not run at all (no toolchain, the project does not build, no sandbox): nothing is decided about
    the items."""


def _first_error(output: str) -> str:
    """coqc's error in one line (its ``File …, line N`` location and message)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    at = next((i for i, line in enumerate(lines) if line.startswith("File ")), -1)
    return " ".join(lines[at:at + 3] if at >= 0 else lines[-2:])[:400] or "coqc failed"


def compile_check(options: dict[str, Any], root: Path, rel: str, work: Path) -> Callable[[str], str]:
    """A check of one file's whole text for :func:`plan_file`: coqc on it as the project file ``rel`` in the project's
    build (the build the run judged against). "" when it compiles, else coqc's error."""
    from pytest_forall.suites.project import load_project

    state: dict[str, Any] = {}

    def check(text: str) -> str:
        if "task" not in state:
            tasks = [t for t in load_project(root, options) if t.meta.get("project_file") == rel]
            if not tasks:
                raise ApplyInfra(f"{rel} has no items any more")
            state["prover"], state["task"] = project_prover(options, work), tasks[0]
        where = Path(tempfile.mkdtemp(prefix="check-", dir=work))
        try:
            candidate = where / Path(rel).name
            candidate.write_text(text, encoding="utf-8")
            result = state["prover"].compile(state["task"], where, candidate, float(options.get("timeout") or 300))
        finally:
            shutil.rmtree(where, ignore_errors=True)
        if result.infra:
            raise ApplyInfra(result.infra)
        return "" if result.ok else _first_error(result.output)

    return check


@dataclass(frozen=True)
class KernelView:
    """What the kernel has of a project as it is now (the project's build): every item's statement (the gate's
    ``kernel_statement`` digest, by task id) and every declaration of the project's files (by ``<file> <path>``),
    as :func:`declaration_key` keeps it. ``forall apply`` compares the two before and after."""

    statements: dict[str, str]
    declarations: dict[str, str]


def declaration_key(entry: str) -> str:
    """What a helper put before a lemma must not change of a declaration after it, from its kernel serialisation: a
    proof's or an admitted lemma's type (its proof is the one thing an apply may change), anything else as a whole
    (a transparent definition's body is what later text means by its name; an inductive's constructors)."""
    from pytest_forall.lang.rocq.judge import statement_key

    if entry.split(" ")[2:3] in (["opaque"], ["axiom"]):
        return " : ".join(statement_key(entry))
    return entry


def kernel_view(options: dict[str, Any], root: Path, work: Path) -> KernelView:
    """The project's :class:`KernelView` in its build as the project is now; an item (or a file) the build has no
    answer for is absent. A helper put before a lemma must not change what a later lemma states, nor what a later
    declaration is (``Definition four := two + two`` after a helper ``two``: every statement naming ``four`` reads
    the same, its meaning does not)."""
    from pytest_forall.suites.project import load_project

    prover = project_prover(options, work)
    statements: dict[str, str] = {}
    declarations: dict[str, str] = {}
    files: set[str] = set()

    def add(rel: str, dump: Any) -> None:
        files.add(rel)
        for path, entry in dump.fields:
            declarations.setdefault(f"{rel} {path}", declaration_key(entry))

    tasks = list(load_project(root, options))
    for task in tasks:
        statement = prover.change_fields(task).get("kernel_statement")
        if statement:
            statements[task.task_id] = statement
        rel = str(task.meta.get("project_file") or "")
        if rel in files:
            continue
        dump = prover._row_baseline(task)
        if dump is not None:
            add(rel, dump)
    # the files without items too: a helper whose effect reaches the files importing its own (an exported module, an
    # instance, a hint) changes what a file of definitions elaborates, and the items naming those definitions then
    # read the same statement with another meaning
    first = next((task for task in tasks if task.prover == prover.name and "project_root" in task.meta), None)
    if first is not None:
        project, build, problem = prover._build(first, 600.0)
        for rel in [] if problem else project.files:
            module = project.logical_module(rel)
            if rel in files or module is None or not (prover._out(project, build) / rel).with_suffix(".vo").is_file():
                continue
            dump, _ = prover._file_dump(project, build, rel, module, 600.0)
            if dump is not None:
                add(rel, dump)
    return KernelView(statements, declarations)


def kernel_statements(options: dict[str, Any], root: Path, work: Path) -> dict[str, str]:
    """Every item's statement as the kernel reads it (:func:`kernel_view`'s ``statements``)."""
    return kernel_view(options, root, work).statements


def write_text_as(path: Path, text: str) -> None:
    """Replace ``path``'s text at once (a temporary file beside it, renamed), keeping its mode and its line ends (the
    suite reads a file's text with ``\r\n`` read as ``\n``, as the offsets of its items are counted)."""
    temporary = path.with_name(f".{path.name}.forall-apply")
    crlf = b"\r\n" in path.read_bytes()
    temporary.write_text(text, encoding="utf-8", newline="\r\n" if crlf else "\n")
    os.chmod(temporary, path.stat().st_mode & 0o7777)
    os.replace(temporary, path)
