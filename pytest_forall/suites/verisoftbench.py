"""VeriSoftBench adapter: 500 Lean 4 software-verification theorems, each proved inside its own repository.

Layout of ``--forall-verisoftbench-root ROOT`` (an upstream checkout after ``scripts/setup_repos.sh
--output-dir data/lean_repos`` has this shape; the short form is accepted too)::

    ROOT/data/verisoftbench.jsonl       or  ROOT/verisoftbench.jsonl      one record per task
    ROOT/data/lean_repos/<lean_root>/   or  ROOT/repos/<lean_root>/       each repository at its pinned
                                                                          commit, built (`lake build`)
    ROOT/aristotle_subset_tasks.csv     or  ROOT/data/aristotle_subset_tasks.csv   (``--forall-subset aristotle``)

Task id ``vsb_<id>``. The actor's workspace holds ``vsb_<id>.lean`` (the target theorem, ``:= by sorry``)
and ``repo/``: a *sanitized* copy of the repository — no ``.git``/``.lake``/hidden directories, and
in every ``.lean`` file the proof of every ``theorem``/``lemma``/``example`` replaced by ``sorry``
(definitions keep their bodies: the benchmark's own context gives definitions in full and lemmas as
statements only). The target's name is in ``task.meta["retrieval_exclude"]``.

Scoring (:class:`VeriSoftBenchProver`) splices the candidate — the theorem, optionally preceded by helper
lemmas — into the ORIGINAL file in place of the original declaration and elaborates that file with
``lake env lean`` in the built repository. A ``sorry`` inside the spliced text fails; ``sorry`` elsewhere
in the file is the repository's own. Benchmark rule (upstream README: a task is solved when the proof
compiles against the actual repository; it audits no axioms) = ``propext``, ``Classical.choice``,
``Quot.sound`` *and* ``sorryAx`` inherited from repository lemmas; strict = without ``sorryAx``.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_forall.core.cache import cache_root
from pytest_forall.core.errors import UsageError
from pytest_forall.core.model import Layer, Task, sha256_bytes
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.lean import LANGUAGE as LEAN
from pytest_forall.lang.lean import lexer
from pytest_forall.lang.lean.project import lean_decls

SUITE = "verisoftbench"
PROVER = "lean-verisoftbench"
SUBSETS = {"aristotle": "aristotle_subset_tasks.csv"}
DATASETS = ("verisoftbench.jsonl", "data/verisoftbench.jsonl")
REPO_DIRS = ("repos", "data/lean_repos")
SANITIZER_VERSION = "1"
SKIP_DIRS = frozenset({".git", ".lake", "lake-packages", "build", "_build", "__pycache__"})
RULES_AXIOMS = ("propext", "Classical.choice", "Quot.sound", "sorryAx")
_FORBIDDEN = re.compile(r"(?<![\w.'])(sorry|admit|sorryAx|axiom|native_decide|implemented_by|extern)(?![\w'])")


# --- locating the data ----------------------------------------------------------------------------------

def vsb_root(options: dict[str, Any]) -> Path:
    value = options.get("verisoftbench_root") or os.environ.get("VERISOFTBENCH_ROOT")
    if not value:
        raise UsageError("VeriSoftBench location not set: pass --forall-verisoftbench-root DIR (holding "
                         "verisoftbench.jsonl and repos/<name>/; see docs/suites.md) or export VERISOFTBENCH_ROOT")
    root = Path(str(value)).expanduser()
    if not root.is_absolute():
        root = Path(str(options.get("rootdir", "."))) / root
    if dataset_path(root) is None:
        raise UsageError(f"--forall-verisoftbench-root {value}: no dataset in {root} (expected "
                         f"{' or '.join(DATASETS)})")
    return root


def dataset_path(root: Path) -> Path | None:
    return next((root / rel for rel in DATASETS if (root / rel).is_file()), None)


def repos_dir(root: Path) -> Path:
    return next((root / rel for rel in REPO_DIRS if (root / rel).is_dir()), root / REPO_DIRS[0])


def subset_ids(root: Path, subset: str, records: list[dict[str, Any]]) -> set[int]:
    if subset not in SUBSETS:
        raise UsageError(f"--forall-subset {subset!r}: VeriSoftBench knows {sorted(SUBSETS)}")
    for rel in (SUBSETS[subset], f"data/{SUBSETS[subset]}"):
        path = root / rel
        if path.is_file():
            with path.open(encoding="utf-8", newline="") as handle:
                return {int(row["task_id"]) for row in csv.DictReader(handle)}
    return {int(r["id"]) for r in records if r.get(f"subset_{subset}")}  # the records' own flag


def read_records(path: Path) -> tuple[list[dict[str, Any]], list[Task]]:
    records, broken = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            int(record["id"]), str(record["thm_name"]), str(record["thm_stmt"])
            str(record["lean_root"]), str(record["rel_path"])
        except (ValueError, KeyError, TypeError) as exc:
            broken.append(Task(task_id=f"vsb_line{number}", suite=SUITE, track="lean4", prover=PROVER,
                               source_path=f"{path}:{number}", template="",
                               problem=f"not a VeriSoftBench record ({type(exc).__name__}: {exc})"))
            continue
        records.append(record)
    return records, broken


# --- sanitizing a repository -----------------------------------------------------------------------------

def sanitize_lean(text: str) -> str:
    """Every ``theorem``/``lemma``/``example`` proof becomes ``sorry``; everything else is kept."""
    out, last = [], 0
    for decl in lean_decls(text):
        if decl.body < 0 or decl.body < last:
            continue
        out.append(text[last:decl.body])
        masked = lexer.mask(text[decl.body:decl.end])
        out.append(":= sorry" if masked.startswith(":=") else " := sorry")
        last = decl.end
    out.append(text[last:])
    return "".join(out)


def _tree_key(repo: Path) -> str:
    digest = hashlib.sha256(f"vsb-sanitize-{SANITIZER_VERSION}\0".encode())
    for path in _repo_files(repo):
        stat = path.stat()
        digest.update(f"{path.relative_to(repo).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:20]


def _repo_files(repo: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        files += [Path(dirpath) / f for f in sorted(filenames)
                  if not f.startswith(".") and not os.path.islink(os.path.join(dirpath, f))]
    return files


def sanitized_tree(repo: Path, cache: Path) -> Path:
    """The sanitized copy of ``repo`` (cached per repository content; safe under xdist)."""
    target = cache / "verisoftbench" / f"{repo.name}-{_tree_key(repo)}"
    with FileLock(str(target) + ".lock"):
        if (target / ".forall-done").is_file():
            return target / "tree"
        shutil.rmtree(target, ignore_errors=True)
        for path in _repo_files(repo):
            rel = path.relative_to(repo)
            dest = target / "tree" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".lean":
                try:
                    dest.write_text(sanitize_lean(path.read_text(encoding="utf-8")), encoding="utf-8")
                except UnicodeDecodeError:
                    continue
            else:
                shutil.copyfile(path, dest)
        (target / "tree").mkdir(parents=True, exist_ok=True)
        (target / ".forall-done").write_text(str(repo), encoding="utf-8")
    return target / "tree"


# --- tasks ---------------------------------------------------------------------------------------------

def declared_name(statement: str) -> str:
    match = re.search(r"^(?:.*\s)?(?:theorem|lemma)\s+([^\s:({\[⦃]+)", lexer.mask(statement), re.MULTILINE)
    return match.group(1) if match else ""


def make_task(record: dict[str, Any], repos: Path, cache: Path, trees: dict[str, Path | None]) -> Task:
    task_id = f"vsb_{int(record['id'])}"
    repo = repos / str(record["lean_root"])
    original = repo / str(record["rel_path"])
    statement = str(record["thm_stmt"]).rstrip()
    template = f"{statement} := by\n  sorry\n"
    meta: dict[str, Any] = {
        "candidate_name": f"{task_id}.lean", "id": int(record["id"]), "repo": str(record["lean_root"]),
        "repo_dir": str(repo), "rel_path": str(record["rel_path"]), "declared_name": declared_name(statement),
        "retrieval_exclude": [str(record["thm_name"])], "category": record.get("category", ""),
        "subset_aristotle": bool(record.get("subset_aristotle")), "workspace_tree_dest": "repo",
    }
    if record["lean_root"] not in trees:
        trees[record["lean_root"]] = sanitized_tree(repo, cache) if repo.is_dir() else None
    tree = trees[record["lean_root"]]
    if tree is not None:
        meta["workspace_tree"] = str(tree)
    return Task(task_id=task_id, suite=SUITE, track="lean4", prover=PROVER, source_path=str(original),
                template=template, frozen=template[:template.rindex("sorry")], theorem_name=str(record["thm_name"]),
                statement=statement, meta=meta)


def load_tasks(root: Path, options: dict[str, Any], subset: str = "") -> list[Task]:
    dataset = dataset_path(root)
    assert dataset is not None
    records, tasks = read_records(dataset)
    if subset:
        wanted = subset_ids(root, subset, records)
        records = [r for r in records if int(r["id"]) in wanted]
    cache = cache_root(options)
    trees: dict[str, Path | None] = {}
    repos = repos_dir(root)
    return tasks + [make_task(r, repos, cache, trees) for r in records]


@hookimpl(trylast=True)
def pytest_forall_load_tasks(path: Path, manifest: dict[str, Any], options: dict[str, Any]) -> list[Task] | None:
    if manifest.get("adapter") != SUITE:
        return None
    return load_tasks(vsb_root(options), options, str(options.get("subset") or manifest.get("subset") or ""))


# --- scoring in the original repository -----------------------------------------------------------------

def splice(original: str, statement: str, candidate: str) -> tuple[str, int, int]:
    """``original`` with the declaration that starts with ``statement`` replaced by ``candidate``.

    Returns (text, first line, last line) of the candidate inside the result; ValueError when the
    statement is not (exactly once) in the original file.
    """
    start = original.find(statement)
    if start < 0 or original.find(statement, start + 1) >= 0:
        raise ValueError("the target's statement is not exactly once in the original file (is the repository "
                         "at the pinned commit?)")
    decl = next((d for d in lean_decls(original) if start <= d.start < start + len(statement)), None)
    if decl is None:
        raise ValueError("no theorem declaration at the target's statement in the original file")
    body = candidate.strip("\n")
    first = original.count("\n", 0, start) + 1
    text = original[:start] + body + original[decl.end:]
    return text, first, first + body.count("\n")


class VeriSoftBenchProver:
    """Lean backend of one task's repository: the candidate is elaborated spliced into its original file."""

    name = PROVER
    ext = LEAN.extension

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = dict(options)
        self._inner: dict[str, Any] = {}
        self._spans: dict[str, tuple[int, int]] = {}
        self._runner: Any = None

    @property
    def runner(self) -> Any:
        """The process runner of the per-repository Lean backends (the protocol swaps in the sandbox's)."""
        return self._runner

    @runner.setter
    def runner(self, value: Any) -> None:
        self._runner = value
        for prover in self._inner.values():
            prover.runner = value

    def inner(self, task: Task) -> Any:
        from pytest_forall.lang.lean.backend import LeanProver

        repo = str(task.meta["repo_dir"])
        if repo not in self._inner:
            manifest = Path(repo) / "lake-manifest.json"
            has_mathlib = manifest.is_file() and '"mathlib"' in manifest.read_text(encoding="utf-8")
            self._inner[repo] = LeanProver({**self.options, "lean_project": repo,
                                            "lean_required_modules": ["Mathlib"] if has_mathlib else [],
                                            "lean_rules_axioms": list(RULES_AXIOMS)})
            if self._runner is not None:
                self._inner[repo].runner = self._runner
        return self._inner[repo]

    def probe(self, workspace: Path) -> str:
        return ""  # per task, in check_template: a missing repository is reported as such

    def _setup(self, task: Task) -> tuple[str, str]:
        """(original file text, "") or ("", infra reason)."""
        repo = Path(str(task.meta.get("repo_dir", "")))
        if not repo.is_dir():
            return "", (f"repository {task.meta.get('repo')!r} is missing: expected it at {repo} "
                        "(--forall-verisoftbench-root DIR/repos/<name>/, see docs/suites.md)")
        original = repo / str(task.meta["rel_path"])
        if not original.is_file():
            return "", f"{task.meta['rel_path']} is not in {repo} (is the repository at its pinned commit?)"
        problem = self.inner(task).probe(repo)
        if problem:
            return "", problem
        return original.read_text(encoding="utf-8"), ""

    def _spliced(self, task: Task, text: str, workspace: Path) -> tuple[Path | None, str]:
        original, infra = self._setup(task)
        if infra:
            return None, infra
        try:
            spliced, first, last = splice(original, task.statement, text)
        except ValueError as exc:
            return None, str(exc)
        path = workspace / "spliced" / Path(str(task.meta["rel_path"])).name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(spliced, encoding="utf-8")
        self._spans[sha256_bytes(spliced.encode())] = (first, last)
        return path, ""

    def check_template(self, task: Task, workspace: Path, timeout: float) -> Any:
        from pytest_forall.core.prover import CompileResult

        path, infra = self._spliced(task, task.template, workspace)
        if path is None:
            return CompileResult(ok=False, infra=infra)
        return self.inner(task).check_template(dataclasses.replace(task, template=path.read_text(encoding="utf-8")),
                                               workspace, timeout)

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        from pytest_forall.core.prover import CompileResult
        from pytest_forall.lang.lean.messages import is_sorry_warning

        data = candidate.read_bytes()
        path, infra = self._spliced(task, data.decode("utf-8"), workspace)
        if path is None:
            return CompileResult(ok=False, infra=infra)
        result = self.inner(task).compile(task, workspace, path, timeout)
        first, last = self._spans[sha256_bytes(path.read_bytes())]
        if not result.ok and not result.infra:
            lean = [m for m in result.messages if m.get("source") != "pytest-forall"]
            ours = [m for m in result.messages if m.get("source") == "pytest-forall"]
            mine = [m for m in lean if is_sorry_warning(m) and first <= ((m.get("pos") or {}).get("line") or 0) <= last]
            errors = [m for m in lean if m.get("severity") == "error"]
            if not errors and not mine and all(m.get("kind") == "forall.sorry" for m in ours):
                result.ok = True  # the only sorry is the repository's own, outside the candidate
                result.messages = lean
        result.digest = sha256_bytes(candidate.read_bytes())
        if result.digest != sha256_bytes(data):
            result.ok = False
        return result

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        path = workspace / "spliced" / Path(str(task.meta["rel_path"])).name
        return self.inner(task).audit_axioms(task, workspace, path, timeout)

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        path = workspace / "spliced" / Path(str(task.meta["rel_path"])).name
        layer: Layer = self.inner(task).independent_check(task, workspace, path, timeout)
        return layer

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        """The theorem's statement verbatim, exactly once; no sorry/axiom/escape hatch anywhere in the text."""
        from pytest_forall.lang.common import NotUnderstood
        from pytest_forall.lang.lean.screen import lean_static_layers, template_shape

        count = text.count(task.statement)
        frozen = Layer("frozen_statement", count == 1,
                       "" if count == 1 else f"the target statement appears {count} times (expected exactly once, "
                                             "verbatim)")
        hits = sorted({m.group(1) for m in _FORBIDDEN.finditer(lexer.mask(text))})
        syntax = Layer("syntax_screen", not hits, f"forbidden in a candidate: {hits}" if hits else "")
        layers = [syntax, frozen]
        try:
            template_shape(task.template, str(task.meta.get("declared_name", "")))
        except NotUnderstood:
            return layers  # e.g. `lemma` / `omit … in`: the shared screen reads only `theorem` templates
        return layers + lean_static_layers(task.template, text, theorem_name=str(task.meta["declared_name"]))


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> VeriSoftBenchProver | None:
    return VeriSoftBenchProver(options) if name == PROVER else None
