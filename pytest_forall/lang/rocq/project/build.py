"""The project's own build: its keys (the whole build's, each file's ``coqdep`` cone), the copy built once per key
(``coq_makefile`` + ``make``, dune, or the user's command; incremental from the last build declared the same way),
what did not build and its first error, and a candidate compiled as its file in a tree of the build's ``.vo``."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any, ClassVar, Self

from filelock import FileLock

from pytest_forall.core.cache import cache_root
from pytest_forall.core.model import Task
from pytest_forall.core.proc import run_command
from pytest_forall.core.prover import ToolchainProbeFailed
from pytest_forall.lang.project import source_files
from pytest_forall.lang.rocq.backend import RocqProver, clean_env, read_compile
from pytest_forall.lang.rocq.project.ahead import start_ahead, worker_share
from pytest_forall.lang.rocq.project.layout import CoqProject, declared_axioms, read_coqproject
from pytest_forall.lang.rocq.project.prefix import PREFIX_ENV, PREFIX_LOADER, prefix_plugin
from pytest_forall.lang.rocq.toolchain import (
    PROBE_TIMED_OUT,
    Toolchain,
    coqc_answer,
    label,
    probe,
    resolve,
    root_prefix,
    run_in,
)

#: What a build makes (compiled Coq and OCaml files): never copied from the project's own tree into the copy, where a
#: stale one newer than its copied source would be taken as up to date by make.
BUILD_PRODUCTS = (".vo", ".vos", ".vok", ".vio", ".glob", ".aux", ".cmi", ".cmo", ".cmx", ".cmxs", ".cma", ".cmxa",
                  ".o", ".a")


def build_inputs(project: CoqProject, command: str = "") -> list[str]:
    """The files a build of the project reads, relative to its root: ``_CoqProject`` and the ``.v`` files for the
    default ``coq_makefile`` build; every file of the tree for dune or the user's own build command (their rules,
    scripts and generated inputs are the project's)."""
    if project.tool == "coq_makefile" and not command:
        return ["_CoqProject", *project.files]
    return [p.relative_to(project.root).as_posix() for p in source_files(project.root, "")
            if not p.name.endswith(BUILD_PRODUCTS)]


def declaration(project: CoqProject, command: str = "") -> bytes:
    """What declares the project's build: the build command and the files that declare the mapping and flags
    (``_CoqProject``, or ``dune-project`` and every ``dune`` file)."""
    declared = [project.root / "_CoqProject"] if project.tool == "coq_makefile" else [
        project.root / "dune-project", *(p for p in source_files(project.root, "dune") if p.name == "dune")]
    out = f"build\0{command}\0".encode()
    for path in declared:
        if path.is_file():
            out += path.relative_to(project.root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0"
    return out


def rocq_build_key(project: CoqProject, version: str, command: str = "") -> str:
    """The baseline build's key: the toolchain, how the project declares its build, and every input of the build."""
    digest = hashlib.sha256(f"forall-project-rocq-3\0{version}\0".encode() + declaration(project, command))
    for rel in build_inputs(project, command):
        path = project.root / rel
        digest.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"<missing>") + b"\0")
    return digest.hexdigest()[:24]


def cone_keys(project: CoqProject, version: str, command: str = "",
              toolchain: Toolchain | None = None) -> dict[str, dict[str, Any]]:
    """Per file: ``key``, a digest of the toolchain, ``_CoqProject`` and the file's ``coqdep`` cone (itself and every
    project file it transitively requires), so an edit changes the key of the files that depend on it only;
    ``deps_key``, the same without the file itself (what its proofs rest on); ``deps``, the cone's other files.
    Without ``coqdep`` every key is the whole project's and ``deps`` is every other file."""
    whole = rocq_build_key(project, version, command)
    graph = coqdep_graph(project, toolchain)
    if graph is None:
        return {rel: {"key": whole, "deps_key": whole, "deps": [f for f in project.files if f != rel]}
                for rel in project.files}
    contents = {rel: hashlib.sha256((project.root / rel).read_bytes()).hexdigest()
                if (project.root / rel).is_file() else "<missing>" for rel in project.files}
    head = f"forall-project-cone-2\0{version}\0".encode() + declaration(project, command)

    def digest(members: set[str]) -> str:
        found = hashlib.sha256(head)
        for member in sorted(members):
            found.update(f"\0{member}\0{contents.get(member, '<outside>')}".encode())
        return found.hexdigest()[:24]

    keys = {}
    for rel in project.files:
        cone: set[str] = set()
        todo = [rel]
        while todo:
            current = todo.pop()
            if current not in cone:
                cone.add(current)
                todo += graph.get(current, [])
        keys[rel] = {"key": digest(cone), "deps_key": digest(cone - {rel}), "deps": sorted(cone - {rel})}
    return keys


def coqdep_graph(project: CoqProject, toolchain: Toolchain | None = None) -> dict[str, list[str]] | None:
    """``coqdep``'s answer (the toolchain's, default the one on PATH: another version resolves ``Require``s against
    its own libraries): for each project file, the project files it requires (None when coqdep fails)."""
    toolchain = toolchain or Toolchain("")
    if not toolchain.has("coqdep") or not project.files:
        return None
    argv = ["coqdep"]
    for flag, directory, logical in project.mappings:
        argv += [flag, directory, logical]
    result = run_in(toolchain, [*argv, *project.files], project.root, timeout=120)
    if result.returncode != 0:
        return None
    files = set(project.files)
    graph: dict[str, list[str]] = {}
    for line in result.stdout.replace("\\\n", " ").splitlines():
        target, _, prereqs = line.partition(":")
        names = target.split()
        if not names or not names[0].endswith(".vo"):
            continue
        source = os.path.normpath(names[0][:-3] + ".v")
        graph[source] = [os.path.normpath(p[:-3] + ".v") for p in prereqs.split()
                         if p.endswith(".vo") and os.path.normpath(p[:-3] + ".v") in files]
    return graph


def first_build_error(log: str, rel: str) -> tuple[str, int]:
    """The first error coqc printed for the project file ``rel`` in a build's log (``File "./rel", line …`` and the
    message after it, a few lines) and its line, ("", 0) when the log has none: what the gate and the summary show,
    not the log's tail (a ``COQDEP …`` line says nothing), and where the file stops compiling."""
    lines = log.splitlines()
    want = os.path.normpath(rel)
    for index, line in enumerate(lines):
        found = re.match(r'File "([^"]+)", line (\d+)', line.strip())
        if found and os.path.normpath(found.group(1)) == want:
            message = []
            for more in lines[index + 1:index + 8]:
                if re.match(r"(File \"|make(\[\d+\])?:|COQ\w+ |\S+\.vo? )", more.strip()) or not more.strip():
                    break
                message.append(more.strip())
            text = f"{rel}:{found.group(2)}: {' '.join(message).removeprefix('Error:').strip()}"[:300]
            return text, int(found.group(2))
    return "", 0


def located_build_error(log: str, rel: str) -> tuple[int, int, int, str] | None:
    """coqc's first located error in the project file ``rel`` in a build's log, whole: its line, the first and last
    byte it names on that line, and the message as coqc printed it (from ``Error:`` to the build's next line of its
    own); None when the log has none."""
    lines = log.splitlines()
    want = os.path.normpath(rel)
    for index, line in enumerate(lines):
        found = re.match(r'File "([^"]+)", line (\d+), characters (\d+)-(\d+):', line.strip())
        if found and os.path.normpath(found.group(1)) == want:
            message: list[str] = []
            for more in lines[index + 1:]:
                if re.match(r"(File \"|make(\[\d+\])?:|COQ\w+ )", more):
                    break
                message.append(more)
            text = "\n".join(message).strip()
            if not text.startswith("Error"):
                return None
            return int(found.group(2)), int(found.group(3)), int(found.group(4)), text
    return None


def first_error_lines(log: str) -> str:
    """The first error of a build's log and the lines that say what it is (a located ``File "…", line …`` block, or
    the first line naming an error and the two after it), "" when none is found: a build's reason starts with what
    went wrong, not with its log's last lines (``COQDEP …`` progress)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for index, line in enumerate(lines):  # coqc's located error first
        if line.startswith('File "'):
            return " ".join(lines[index:index + 3])[:400]
    for index, line in enumerate(lines):  # else the first error; make's own line says only which rule failed
        if re.search(r"\b(Error|error|ERROR)\b", line):
            shown = lines[max(0, index - 2):index + 1] if re.match(r"make(\[\d+\])?: \*\*\*", line) else \
                lines[index:index + 3]
            return " ".join(shown)[:400]
    return ""




def coqc_version(coqc: str = "coqc") -> str:
    """``coqc --version`` for the collection's keys; none (stalled, killed, failed) raises ToolchainProbeFailed."""
    if shutil.which(coqc) is None:
        return "<no coqc>"
    return coqc_answer(coqc, "--version")


def project_toolchain(options: dict[str, Any]) -> Toolchain:
    """``--forall-rocq-toolchain`` as the project's collection reads it (a bad value: the PATH's; the backend
    reports the problem on every item)."""
    found = resolve(str(options.get("rocq_toolchain") or options.get("toolchain") or ""))
    return found if isinstance(found, Toolchain) else Toolchain("")


def toolchain_version(options: dict[str, Any]) -> str:
    """What the collection's keys name: the toolchain (``label``: version and where it runs from) and its
    ``coqc --version``, or the ``coqc`` option's version."""
    if options.get("coqc"):
        return coqc_version(str(options["coqc"]))
    toolchain = project_toolchain(options)
    line = probe(toolchain)[0]
    if line.startswith(PROBE_TIMED_OUT):  # the machine's: never a key (asked again on the next collection)
        raise ToolchainProbeFailed(f"{label(toolchain)}: {line}")
    return f"{label(toolchain)} {line}"


# --- Rocq: the prover in the project's own build -----------------------------------------------------------
def _stamp(path: Path) -> tuple[int, int, int] | None:
    """(inode, mtime, size) of a file, None when there is none: what says it was not written since."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size



class ProjectBuilds(RocqProver):
    """The build half of :class:`~pytest_forall.lang.rocq.project.prover.ProjectRocqProver`: the project read and
    built once per item, and what the build left (its compiled files, what did not compile and why)."""

    #: Process-wide (pytest makes one prover per item, and a warm run would otherwise re-read and re-hash every
    #: compiled file and re-parse every judge dump per item), each keyed by what determines it: a build's key by
    #: the toolchain and the sources' stamps, a compiled file's digest by its stamp and the judge plugin, a judge
    #: dump by its record's path (named by that digest).
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()
    _shared_keys: ClassVar[dict[tuple[str, str, str, str], tuple[tuple[tuple[str, int, int], ...], str]]] = {}
    _shared_vo_digests: ClassVar[dict[tuple[str, int, int, str], str]] = {}
    _shared_dumps: ClassVar[dict[str, Any]] = {}
    #: finished builds (by directory) and their answer ("" or why the project does not build)
    _built: ClassVar[dict[str, str]] = {}
    #: build directories whose per-file sessions this process has started ahead of their items (:meth:`_prefetch`)
    _prefetched: ClassVar[set[str]] = set()
    #: build directories this process has started building at collection (:meth:`build_ahead`)
    _ahead: ClassVar[set[str]] = set()
    #: per (build directory, declaration): why ``--forall-project-axioms`` does not hold of that build ("": it does)
    _declarations: ClassVar[dict[tuple[str, str], str]] = {}
    #: per finished build directory and file: the SHA-256 of the source the build compiled (the copy does not change
    #: once built: its directory is named by its inputs)
    _shared_sources: ClassVar[dict[tuple[str, str], str]] = {}
    #: per stored ``coqchk`` record (named by its compiled file's digest): its text, read once per process
    _shared_checks: ClassVar[dict[str, str]] = {}
    #: per ``user-contrib`` directory: its mtime and the installed libraries' logical roots (re-listed when it moves)
    _shared_contrib: ClassVar[dict[str, tuple[int, tuple[str, ...]]]] = {}
    #: per project root: the stamps of its ``_CoqProject`` and ``dune-project`` and the project read from them, when
    #: they alone declare it (its files listed, not found by walking the tree; no dune theories)
    _shared_projects: ClassVar[dict[str, tuple[tuple[tuple[int, int, int] | None, ...], CoqProject]]] = {}
    #: makes one item's project, build directory and answer once, when the compile and the layers ask at once
    _item_lock: ClassVar[threading.RLock] = threading.RLock()
    #: per (build directory, file that did not build): where it stops, which items are judged from one compile of
    #: the file before that, and per item how many leading bytes of the file its judgement rests on
    #: (:meth:`_broken_file_plan`)
    _shared_plans: ClassVar[dict[tuple[str, str], tuple[int, int, Task | None, list[str], list[str],
                                                        dict[str, int]]]] = {}
    #: per (build directory, file that did not build): an earlier build that compiled it, with the same compiled
    #: files under it, how many leading bytes the two copies share, and the digest of its own (:meth:`_earlier_compile`)
    _shared_earlier: ClassVar[dict[tuple[str, str], tuple[Path, int, str] | None]] = {}
    #: per file's content as collected (its cone's key) and judge: the baseline dump a row's kernel digests were read
    #: from (:meth:`change_fields`), so a file's next items read none of the build's inputs again
    _shared_row_baselines: ClassVar[dict[tuple[str, ...], Any]] = {}

    def __init__(self, options: dict[str, Any] | None = None, runner: Any = None) -> None:
        from pytest_forall.core.proc import run_command as default_runner

        super().__init__(options, runner or default_runner)
        self.builds = cache_root(options).expanduser().resolve() / "project-rocq"
        #: ``--forall-project-build``: the user's own build command, run with ``sh -c`` in the project's copy
        self.build_command = str((options or {}).get("project_build") or "").strip()
        #: ``--forall-project-axioms``: the project's own axioms its maintainer declares as foundations (strict)
        self.declared = declared_axioms((options or {}).get("project_axioms"))
        #: this process's share of the judge sessions ahead under pytest-xdist (:func:`worker_share`)
        self.worker_share = worker_share(options or {})
        #: the declaration as one plain setting: part of the verdict cache's policy (``core.cache.prover_settings``),
        #: so a verdict judged under another declaration is never served
        self.project_axioms = " ".join(self.declared)
        self.builds.mkdir(parents=True, exist_ok=True)
        self.sandbox_binds = (*self.sandbox_binds, (self.builds, str(self.builds)))
        self._lock = self._shared_lock
        self._keys = self._shared_keys
        self._judged_project: dict[tuple[str, str], tuple[Any, str, bool]] = {}
        #: per verification directory, held while its candidate is judged (the independent check reads the judgement)
        self._judge_locks: dict[str, threading.Lock] = {}
        self._tactic_load: dict[str, list[str]] = {}
        #: verification directories whose candidate is the project's own proof (digest), judged from the build
        self._own: dict[str, str] = {}
        #: per item, the digest of the last compiled candidate after the project's own text (the proof, helpers)
        self._proofs: dict[str, str] = {}
        self._vo_digests = self._shared_vo_digests
        self._dumps = self._shared_dumps
        #: what this prover found about the item it verifies (:meth:`_for_item`): every layer asks for the project,
        #: its build and the baseline, which are read once per item, not once per layer
        self._item: dict[Any, Any] = {}
        #: per verification directory, the SHA-256 of its compiled candidate (forgotten when it is compiled again)
        self._candidate_vo: dict[str, str] = {}

    def fresh(self) -> Self:
        """A copy of this prover as its constructor left it: the same settings, its own containers (the records of
        one item's candidates) except those the class shares on purpose between the provers of a process."""
        other = copy.copy(self)
        shared = {id(value) for klass in type(self).__mro__ for value in vars(klass).values()}
        for name, value in vars(other).items():
            if isinstance(value, (dict, list, set)) and id(value) not in shared:
                setattr(other, name, copy.copy(value))
        return other

    def _for_item(self, task: Task) -> dict[Any, Any]:
        """This prover's records about ``task`` (the same Task object: one item's verification, whose layers all ask
        for the project, the build and the baseline). Another task, or the same item collected again (a new Task),
        starts them afresh, so an edit between items (or between two collections) is seen as before."""
        with self._item_lock:
            if self._item.get("task") is not task:
                self._item.clear()
                self._item["task"] = task
            return self._item

    def _project(self, task: Task) -> CoqProject:
        """The project's ``_CoqProject`` (or dune files), read once per item; a ``_CoqProject`` that lists the files
        is read once per process and whenever it (or a ``dune-project``) changes: two stats per item."""
        with self._item_lock:
            item = self._for_item(task)
            if "project" not in item:
                root = Path(task.meta["project_root"])
                stamp = (_stamp(root / "_CoqProject"), _stamp(root / "dune-project"))
                known = self._shared_projects.get(str(root))
                if known is None or known[0] != stamp:
                    project = read_coqproject(root)
                    known = (stamp, project)
                    if project.own_file and project.tool == "coq_makefile" and not project.walked and stamp[1] is None:
                        self._shared_projects[str(root)] = known
                item["project"] = known[1]
            found: CoqProject = item["project"]
            return found

    def _build_dir(self, project: CoqProject) -> Path:
        """The build directory of the project as it is now (its key re-read when a source's size or mtime moved)."""
        stamp = []
        root = str(project.root)
        for rel in build_inputs(project, self.build_command):
            try:  # os.stat of the joined text: a Path per input costs more than its stat (every item asks, #18)
                info = os.stat(os.path.join(root, rel))
                stamp.append((rel, info.st_size, info.st_mtime_ns))
            except OSError:
                stamp.append((rel, -1, -1))
        where = (str(project.root), self.toolchain.spec, self.coqc, self.build_command)
        with self._lock:
            known = self._keys.get(where)
            if known is None or known[0] != tuple(stamp):
                known = (tuple(stamp), rocq_build_key(project, self.version(), self.build_command))
                self._keys[where] = known
        return self.builds / known[1]

    def _build(self, task: Task, timeout: float) -> tuple[CoqProject, Path, str]:
        """(project, build directory, "") once the project is built, else why not (infra: a build that fails here
        is the project's or the machine's fault, never the candidate's)."""
        if "project_root" not in task.meta:
            return read_coqproject(Path(task.source_path).parent), Path(), "not a project item"
        with self._item_lock:
            project, build = self._item_build(task)
            answer = self._for_item(task).get("built")
        if answer is None:
            answer = self._build_project(project, build, timeout)
            if str(build) in self._built:  # finished: the item's answer (a timed-out build is asked again)
                self._for_item(task)["built"] = answer
        return project, build, answer

    def _item_build(self, task: Task) -> tuple[CoqProject, Path]:
        """The item's project and build directory, found once per item (the build inputs are stat'ed once)."""
        with self._item_lock:
            item = self._for_item(task)
            if "build" not in item:
                project = self._project(task)
                item["build"] = (project, self._build_dir(project))
            found: tuple[CoqProject, Path] = item["build"]
            return found

    @staticmethod
    def _out(project: CoqProject, build: Path) -> Path:
        """Where the build put the compiled files (and the sources they were compiled from): the copy, or dune's
        ``_build/default`` in it. The judge reads the build's own compiled files from there."""
        return build / "src" / project.compiled if project.compiled else build / "src"

    def _build_steps(self, project: CoqProject, src: Path) -> tuple[list[list[str]], str]:
        """The build's commands, run in the copy ``src`` (or why the project cannot be built here): the user's
        ``--forall-project-build``; else ``dune build`` for a dune project; else ``coq_makefile`` on the project's
        ``_CoqProject`` (``-arg``s kept) and ``make``."""
        if self.build_command:
            return [["sh", "-c", self.build_command]], ""
        if project.tool == "dune":
            if shutil.which("dune") is None:
                return [], ("the project builds with dune (its dune-project uses coq) and `dune` is not installed "
                            "here: install dune, or give the build with --forall-project-build")
            return [["dune", "build", "--root", ".", "--display", "short"]], ""
        lines = [f"{flag} {directory} {logical}" for flag, directory, logical in project.mappings]
        lines += [f"-arg {arg}" for arg in project.args] + list(project.files)
        (src / "_CoqProject.forall").write_text("\n".join(lines) + "\n", encoding="utf-8")
        saver = self._prefix_plugin()  # each coqc that stops at an error keeps what it compiled (prefix.py)
        return [[self.toolchain.tool("coq_makefile"), "-f", "_CoqProject.forall", "-o", "Makefile.forall"],
                ["make", "-k", "-f", "Makefile.forall", f"-j{min(8, os.cpu_count() or 1)}", f"COQC={self.coqc}",
                 *([f"COQBIN={self.toolchain.bin}/"] if self.toolchain.bin else []),
                 *([f"COQEXTRAFLAGS=-l {saver / PREFIX_LOADER}"] if saver is not None else [])]], ""

    def _prefix_plugin(self) -> Path | None:
        """The prefix plugin's directory (:func:`prefix_plugin`), or None: not for a user's or dune's build."""
        return prefix_plugin(self.builds.parent / "rocq-prefix", self.version(), self.toolchain)

    def _build_env(self, project: CoqProject, build: Path | None = None) -> dict[str, str] | None:
        """The user's build and dune see the run's coqc first on PATH and as ``COQC`` (a Makefile's convention); the
        default build names it on make's command line, and finds the prefix plugin (``OCAMLPATH``) and where it
        saves (``build``'s ``prefix/``)."""
        if project.tool == "coq_makefile" and not self.build_command:
            saver = self._prefix_plugin()
            if saver is None or build is None:
                return None
            (build / "prefix").mkdir(exist_ok=True)
            found = os.environ.get("OCAMLPATH")
            return {**os.environ, PREFIX_ENV: str(build / "prefix"),
                    "OCAMLPATH": os.pathsep.join([str(saver), *([found] if found else [])])}

        env = {**os.environ, "COQC": self.coqc, "DUNE_CACHE": "disabled"}
        if os.path.isabs(self.coqc):
            env["PATH"] = os.path.dirname(self.coqc) + os.pathsep + env.get("PATH", "")
        return env

    def build_ahead(self, project: CoqProject, timeout: float) -> None:
        """Start the project's build in the background (once per build and process; nothing when it is finished):
        the collection calls it as it finds the project, so its lexing runs while coqc compiles (#18). An item waits
        for it under the build's lock as for a build of its own, and reads its answer (a failed build is infra for
        every item, as ever); a build still running when the process exits is killed (:func:`stop_ahead`), left
        unfinished, and built again by the next run."""
        build = self._build_dir(project)
        with self._lock:
            if str(build) in self._built or str(build) in self._ahead:
                return
            self._ahead.add(str(build))
        if (build / "built.json").is_file():
            return

        def step() -> None:
            with contextlib.suppress(Exception):  # ahead of need only: the first item builds and reports
                self._build_project(project, build, timeout)
        start_ahead("forall-build-ahead", step)

    def _build_project(self, project: CoqProject, build: Path, timeout: float) -> str:
        """"" once the build directory ``build`` (named by its inputs' key) holds a finished build, else why not; a
        finished build's answer is read once per process (every item asks, a warm run's per-item cost)."""
        with self._lock:
            known = self._built.get(str(build))
        if known is not None and (build / "built.json").is_file():
            return known
        reason = self._build_project_once(project, build, timeout)
        if (build / "built.json").is_file():  # finished (a timed-out build is not: retried next time)
            with self._lock:
                self._built[str(build)] = reason
        return reason

    def _build_project_once(self, project: CoqProject, build: Path, timeout: float) -> str:
        done = build / "built.json"
        with FileLock(str(build) + ".lock"):
            if done.is_file():
                record = json.loads(done.read_text(encoding="utf-8"))
                return "" if record["ok"] else str(record["reason"])
            shutil.rmtree(build, ignore_errors=True)
            src = build / "src"
            out = self._out(project, build)
            previous = self._previous_build(project)
            if previous is not None:  # copies keep their mtimes: make rebuilds what changed and what rests on it
                shutil.copytree(previous / "src", src, symlinks=True)
                wanted = {os.path.normpath(rel) for rel in project.files}
                for stale in src.rglob("*.v"):
                    if not stale.relative_to(src).as_posix().startswith("_build/") and \
                            os.path.normpath(stale.relative_to(src).as_posix()) not in wanted:
                        stale.unlink()
                        (out / stale.relative_to(src)).with_suffix(".vo").unlink(missing_ok=True)
            src.mkdir(parents=True, exist_ok=True)
            changed = set()
            inputs = build_inputs(project, self.build_command)
            for rel in inputs if project.tool != "coq_makefile" or self.build_command else project.files:
                target = src / rel
                data = (project.root / rel).read_bytes() if (project.root / rel).is_file() else None
                if data is not None and (not target.is_file() or target.read_bytes() != data):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    changed.add(rel)
            if previous is not None and changed:
                # what a changed file reaches is compiled again or is missing: never a stale .vo from the old build
                graph = coqdep_graph(project, self.toolchain) or {}
                # a changed build rule, script or dune file may change any file's compilation
                reached: set[str] = set(changed) if graph and changed <= set(project.files) else set(project.files)
                while True:
                    more = {rel for rel, deps in graph.items() if rel not in reached and reached.intersection(deps)}
                    if not more:
                        break
                    reached |= more
                for rel in reached:
                    for suffix in (".vo", ".vos", ".vok", ".glob"):
                        (out / rel).with_suffix(suffix).unlink(missing_ok=True)
            steps, reason = self._build_steps(project, src)
            timed_out = False
            log = []
            started = time.monotonic()
            for argv in steps:
                result = self._build_command(argv, src, max(timeout, 1800.0), self._build_env(project, build))
                log.append(f"$ {' '.join(argv)}\n{result.stdout}{result.stderr}")
                if result.returncode != 0:
                    timed_out = result.timed_out or result.returncode < 0  # killed: no verdict on the project
                    tail = (result.stdout + result.stderr).strip()[-600:]
                    built = [rel for rel in project.files if (out / rel).with_suffix(".vo").is_file()]
                    default = project.tool == "coq_makefile" and not self.build_command
                    # coqc's located error in a project file: the project's text broke, not its build's tooling
                    located = any(first_build_error(result.stdout + result.stderr, rel)[0] for rel in project.files)
                    if argv is steps[-1] and not timed_out and (built or default or located):
                        # some files do not build: each item of them is judged against its own template (the file up
                        # to the target), and items of files resting on them are infra (see _baseline); a user's or
                        # dune's build that compiled nothing is the build's failure, infra for every item
                        self._record_missing(project, build, tail, result.stdout + result.stderr)
                        break
                    shown = self.build_command if argv[:2] == ["sh", "-c"] else " ".join(argv[:2])
                    reason = (f"the project does not build here (`{shown}` exited "
                              f"{result.returncode}{', timed out' if timed_out else ''}): "
                              f"{first_error_lines(result.stdout + result.stderr) or tail}")
                    break
            else:
                if not steps:
                    pass  # the reason is why nothing could run
                elif not any((out / rel).with_suffix(".vo").is_file() for rel in project.files) and project.files:
                    reason = (f"the project's build ran but left no compiled file where its mapping puts them "
                              f"({out.relative_to(build / 'src').as_posix() or '.'}/<file>.vo, e.g. "
                              f"{Path(project.files[0]).with_suffix('.vo').as_posix()})")
                else:
                    self._record_missing(project, build, "the build succeeded without compiling it")
            (build / "build.log").write_text("\n".join(log), encoding="utf-8")
            if not timed_out:  # a slow machine is not a verdict on the project: retry next time
                done.write_text(json.dumps({"ok": not reason, "reason": reason, "root": str(project.root),
                                            "declared": self._declared(project),
                                            "toolchain": self.toolchain_label(), "version": self.version(),
                                            "incremental": previous is not None,
                                            "previous": previous.name if previous is not None else "",
                                            "seconds": round(time.monotonic() - started, 3)}), encoding="utf-8")
            return reason

    def _record_missing(self, project: CoqProject, build: Path, log: str, full: str = "") -> None:
        """The project files the build did not compile (their items are judged against their templates, or infra),
        with each one's first error as the build printed it (the log's tail, else)."""
        out = self._out(project, build)
        missing = [rel for rel in project.files if not (out / rel).with_suffix(".vo").is_file()]
        if missing:
            errors = {rel: first_build_error(full, rel) for rel in missing}
            (build / "missing.json").write_text(json.dumps({"files": missing, "log": log,
                                                            "errors": {k: v[0] for k, v in errors.items() if v[0]},
                                                            "lines": {k: v[1] for k, v in errors.items() if v[1]}}),
                                                encoding="utf-8")

    def _build_command(self, argv: list[str], src: Path, timeout: float, env: dict[str, str] | None = None) -> Any:
        """One step of the project's own build (trusted: the user's project) with the toolchain's tools: for a root
        filesystem inside it (bubblewrap, ``src`` writable), with the host's ``make`` when the root has none."""
        if not self.toolchain.root:
            return run_command(argv, cwd=src, timeout=timeout, env=env)
        binds: list[tuple[Path, str]] = []
        if argv[0] == "make" and not self.toolchain.has("make") and shutil.which("make"):
            binds.append((Path(str(shutil.which("make"))), "/run/forall-make"))  # the harness's tool, libc only
            argv = ["/run/forall-make", *argv[1:]]
        env = {**clean_env(), **self.ocaml_env, "PATH": "/usr/bin:/bin"}
        prefix = [*root_prefix(self.toolchain.root, src.absolute(), binds), "--clearenv",
                  *[x for key, value in env.items() for x in ("--setenv", key, value)], "--"]
        return run_command([*prefix, *argv], cwd=src, timeout=timeout)

    def _per_vo(self, vo: Path, module: str, suffix: str) -> Path:
        """Where a record about one compiled file is kept: by the file's digest and the judge plugin's build."""
        info = vo.stat()
        known = (str(vo), info.st_mtime_ns, info.st_size, str(self.plugin))
        if known not in self._vo_digests:
            self._vo_digests[known] = hashlib.sha256(vo.read_bytes() + b"\0" + str(self.plugin).encode()).hexdigest()
        digest = self._vo_digests[known][:24]
        return self.builds / "by-vo" / f"{module}.{digest}.{suffix}"  # (made by who writes the first record)

    def _declared(self, project: CoqProject) -> str:
        """A digest of how the project's build is declared (command, ``_CoqProject`` or dune files, toolchain)."""
        return hashlib.sha256(declaration(project, self.build_command) + self.version().encode()).hexdigest()[:24]

    def _previous_build(self, project: CoqProject) -> Path | None:
        """The newest finished build of the same project declared the same way, with the same toolchain and
        libraries (its sources and compiled files are the starting point of an incremental build), or None: a changed
        build command, ``-arg`` or dune flag rebuilds everything (make does not see a flag change), and another Coq's
        ``.vo`` files would be kept by ``make`` and refused by this one."""
        found: list[tuple[float, Path]] = []
        declared = self._declared(project)
        for done in self.builds.glob("*/built.json"):
            try:
                record = json.loads(done.read_text(encoding="utf-8"))
                if record.get("ok") and record.get("root") == str(project.root) and (done.parent / "src").is_dir() \
                        and record.get("declared") == declared and record.get("version") == self.version():
                    found.append((done.stat().st_mtime, done.parent))
            except (OSError, ValueError):
                continue
        return max(found)[1] if found else None

    def _load(self, project: CoqProject, base: Path, with_args: bool, cwd: Path | None = None) -> list[str]:
        """``-Q``/``-R`` of the project onto ``base`` (and its ``-arg``s for coqc; coqchk does not take them);
        relative to ``cwd`` when given (the workspace has another path inside the sandbox)."""
        out: list[str] = []
        for flag, directory, logical in project.mappings:
            where = base / directory if directory != "." else base
            out += [flag, os.path.relpath(where, cwd) if cwd is not None else str(where), logical]
        return out + (project.args if with_args else [])

    @staticmethod
    def _missing_record(build: Path) -> dict[str, Any]:
        """``missing.json`` of a build some files of which did not compile ({} when all did): the files, the log's
        tail, each file's first error and its line."""
        try:
            record = json.loads((build / "missing.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def _unbuilt_dep(self, task: Task, project: CoqProject, build: Path) -> str:
        """Why ``task`` cannot be judged because a file its file requires did not build ("" when all did): that file
        and its first error, remembered as the item's ``build_break``."""
        record = self._missing_record(build)
        log, errors = str(record.get("log", "")), dict(record.get("errors") or {})
        src = self._out(project, build)
        unbuilt = [dep for dep in task.meta.get("deps") or [] if not (src / dep).with_suffix(".vo").is_file()]
        if not unbuilt:
            return ""
        dep = min(unbuilt, key=lambda d: (d not in errors, d))  # one that failed itself, if the log says
        error = str(errors.get(dep) or f"{dep}: {log.strip()[-300:]}")
        return self._build_break(task, error, f"{error} ({dep} does not build in the project, and "
                                              f"{task.meta['project_file']} requires it)")

    def _build_break(self, task: Task, error: str, reason: str) -> str:
        """Remember that ``task`` is infra because the project's sources do not build: ``error`` (the file and its
        first error, the gate's ``build_break``) and ``reason`` (the item's answer, given again when asked again)."""
        item = self._for_item(task)
        item["build_break"], item["build_break_reason"] = error, reason
        return reason

    def _link_compiled(self, project: CoqProject, build: Path, tree: Path, rel: str) -> None:
        """A fresh ``tree`` with links to every compiled file of the build but ``rel``."""
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        src = self._out(project, build)
        for other in project.files:
            compiled = (src / other).with_suffix(".vo")
            if other != rel and compiled.is_file():
                link = (tree / other).with_suffix(".vo")
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(compiled)

    def _compile_in_tree(self, project: CoqProject, build: Path, tree: Path, data: bytes, timeout: float,
                         report_sentences: bool, rel: str = "") -> Any:
        """``coqc`` on ``data`` as the project file ``rel`` in ``tree``: links to every other compiled file of the
        build (so the file is compiled under its own logical name, with the project's mapping and ``-arg``s)."""
        from pytest_forall.core.prover import CompileResult

        self._link_compiled(project, build, tree, rel)
        source = tree / rel
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(data)
        argv = [self.coqc, "-q", *(["-time"] if report_sentences else []), *self._load(project, tree, True, tree),
                str(source.relative_to(tree))]
        result = self._run(argv, tree, timeout, cpu_budget=True)  # a starved compile is infra (read_compile)
        outcome = read_compile(self.coqc, result, source, timeout, report_sentences)
        refused = re.search(r"(?:Unknown option|unknown option|Illegal option|bad option)[^\n]*", outcome.output)
        if result.returncode != 0 and refused and not outcome.sentences:
            return CompileResult(ok=False, output=outcome.output, infra=(
                f"coqc refused the project's options ({refused.group(0).strip()}): fix _CoqProject's -arg lines"))
        return dataclasses.replace(outcome, artifact=str(source.with_suffix(".vo"))) if outcome.ok else outcome
