"""Lean Eval adapter: the comparator workspaces ``generated/<id>/`` of a leanprover/lean-eval checkout.

``--forall-lean-eval-root ROOT`` (or ``LEAN_EVAL_ROOT``) is the checkout; every ``ROOT/generated/<id>/``
with a ``config.json`` is one task, id ``<id>``. The actor's workspace holds the solver's copy of the
workspace — ``Challenge.lean``, ``ChallengeDeps.lean`` (when present), ``Submission.lean``,
``Submission/**``, ``config.json``, ``holes.json``, ``lakefile.toml``, ``lean-toolchain``, ``README.md``
and our ``TASK.md`` — and never ``Solution.lean`` (the trusted bridge comparator checks), the
``WorkspaceTest.lean`` harness, ``.git`` or ``.lake``.

The actor may change only ``Submission.lean`` and files under ``Submission/``
(``task.meta["submission_files"]``); after every turn any other change (added, modified or removed file;
``.lake/`` build output aside) rejects the round. The candidate is the canonical bundle of the submission
files (:func:`pytest_forall.core.workspace.bundle_bytes`: sorted relative paths, each with its length and
bytes); its SHA-256 is the digest.

Scoring (:class:`LeanEvalProver`) is the benchmark's own: a fresh copy of the ORIGINAL ``generated/<id>/``
(with its ``Solution.lean``) receives the submission files, and ``lake env comparator config.json`` judges
it, always with nanoda (``enable_nanoda`` forced on, as Lean Eval's own ``lake test`` does, whatever
``config.json`` says). Comparator's verdict is the ``elaboration`` layer and the independent-checker
evidence; without comparator, landrun, lean4export and nanoda the item is ``infra`` with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from pytest_forall.core.errors import UsageError
from pytest_forall.core.model import Layer, Task, sha256_bytes
from pytest_forall.core.proc import run_command
from pytest_forall.core.registry import hookimpl
from pytest_forall.core.workspace import parse_bundle
from pytest_forall.lang.lean import BINARY as LEAN_BINARY
from pytest_forall.lang.lean import LANGUAGE as LEAN
from pytest_forall.lang.lean import lexer

SUITE = "lean-eval"
PROVER = "lean-eval"
SUBMISSION = ["Submission.lean", "Submission/"]
#: Files of generated/<id>/ the solver's workspace gets (Submission/** besides); never Solution.lean.
WORKSPACE_FILES = ("Challenge.lean", "ChallengeDeps.lean", "Submission.lean", "config.json", "holes.json",
                   "lakefile.toml", "lean-toolchain", "README.md")
TOOLS = (("comparator", "COMPARATOR_BIN"), ("landrun", "COMPARATOR_LANDRUN"), ("lean4export", "COMPARATOR_LEAN4EXPORT"))
NANODA = ("nanoda_bin", "COMPARATOR_NANODA")
INSTALL = ("install comparator, landrun, lean4export (and nanoda) at the pins of lean-eval's SECURITY.md, as its "
           "README's 'Run comparator locally' shows, and put them on PATH")


def lean_eval_root(options: dict[str, Any]) -> Path:
    value = options.get("lean_eval_root") or os.environ.get("LEAN_EVAL_ROOT")
    if not value:
        raise UsageError("Lean Eval location not set: pass --forall-lean-eval-root DIR (a leanprover/lean-eval "
                         "checkout with generated/<id>/) or export LEAN_EVAL_ROOT")
    root = Path(str(value)).expanduser()
    if not root.is_absolute():
        root = Path(str(options.get("rootdir", "."))) / root
    if not (root / "generated").is_dir():
        raise UsageError(f"--forall-lean-eval-root {value}: {root} has no generated/ directory")
    return root


def workspace_files(source: Path) -> dict[str, str]:
    """The solver's files of one generated workspace (text), by relative path."""
    files = {}
    for name in WORKSPACE_FILES:
        path = source / name
        if path.is_file() and not path.is_symlink():
            files[name] = path.read_text(encoding="utf-8")
    sub = source / "Submission"
    if sub.is_dir():
        for dirpath, dirnames, filenames in os.walk(sub):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if not path.is_symlink():
                    files[path.relative_to(source).as_posix()] = path.read_text(encoding="utf-8")
    return files


def task_brief(problem: str, holes: list[dict[str, Any]]) -> str:
    names = "\n".join(f"- `{h.get('kind', 'theorem')} {h.get('basename', h.get('name'))}`" for h in holes)
    return (f"# Task {problem}\n\nFill every hole of this Lean Eval problem in `Submission.lean` (namespace "
            f"`Submission`):\n\n{names}\n\nYou may edit only `Submission.lean` and add or edit `.lean` files under "
            "`Submission/`. Every other file here (`Challenge.lean`, `ChallengeDeps.lean`, `config.json`, "
            "`holes.json`, `lakefile.toml`, …) is trusted and must stay unchanged: any other change rejects the "
            "round. No `sorry`; only the axioms propext, Quot.sound and Classical.choice.\n")


def make_task(source: Path) -> Task:
    problem_id = source.name
    try:
        config = json.loads((source / "config.json").read_text(encoding="utf-8"))
        holes = json.loads((source / "holes.json").read_text(encoding="utf-8")).get("holes", [])
        files = workspace_files(source)
        template = files.pop("Submission.lean")
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        return Task(task_id=problem_id, suite=SUITE, track="lean4", prover=PROVER, source_path=str(source),
                    template="", problem=f"not a Lean Eval workspace: {type(exc).__name__}: {exc}",
                    meta={"candidate_name": "Submission.lean"})
    files["TASK.md"] = task_brief(problem_id, holes)
    names = list(config.get("theorem_names", [])) + list(config.get("definition_names", []))
    return Task(task_id=problem_id, suite=SUITE, track="lean4", prover=PROVER,
                source_path=str(source / "Challenge.lean"), template=template,
                theorem_name=names[0] if names else "", context_files=files,
                meta={"candidate_name": "Submission.lean", "submission_files": SUBMISSION,
                      "source_dir": str(source), "theorem_names": list(config.get("theorem_names", [])),
                      "definition_names": list(config.get("definition_names", [])),
                      "enable_nanoda": bool(config.get("enable_nanoda")),
                      "permitted_axioms": list(config.get("permitted_axioms", [])),
                      "retrieval_exclude": [str(h.get("name")) for h in holes]})


def load_tasks(root: Path, problems: list[str] | None = None) -> list[Task]:
    generated = root / "generated"
    dirs = sorted(p for p in generated.iterdir() if p.is_dir() and (p / "config.json").is_file())
    if problems:
        unknown = sorted(set(problems) - {p.name for p in dirs})
        if unknown:
            raise UsageError(f"Lean Eval problems not in {generated}: {unknown}")
        dirs = [p for p in dirs if p.name in problems]
    return [make_task(d) for d in dirs]


@hookimpl(trylast=True)
def pytest_forall_load_tasks(path: Path, manifest: dict[str, Any], options: dict[str, Any]) -> list[Task] | None:
    if manifest.get("adapter") != SUITE:
        return None
    problems = manifest.get("problems")
    return load_tasks(lean_eval_root(options), list(problems) if problems else None)


# --- scoring with comparator -------------------------------------------------------------------------

def submission_paths_ok(files: dict[str, bytes]) -> list[str]:
    """Problems with a bundle's paths: only Submission.lean and .lean files under Submission/."""
    bad = [rel for rel in files
           if rel != "Submission.lean" and not (rel.startswith("Submission/") and rel.endswith(".lean"))
           or ".." in rel.split("/")]
    return [f"not a submission file: {rel}" for rel in bad]


class LeanEvalProver:
    """Comparator (and nanoda) on a copy of the original workspace with the submission files in it."""

    name = PROVER
    ext = LEAN.extension

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = dict(options)
        bin_dir = self.options.get("lean_bin") or os.environ.get("FORALL_LEAN_BIN")
        self.bin_dir = Path(str(bin_dir)).expanduser() if bin_dir else None
        self.last: dict[str, Any] = {}
        self.runner = run_command

    def _tool(self, name: str, env: str = "") -> str | None:
        if env and os.environ.get(env):
            found = shutil.which(os.environ[env])
            if found:
                return found
        if self.bin_dir is not None and (self.bin_dir / name).is_file():
            return str(self.bin_dir / name)
        return shutil.which(name)

    def probe(self, workspace: Path) -> str:
        missing = [name for name in ("lake", LEAN_BINARY) if self._tool(name) is None]
        if missing:
            return (f"Lean toolchain not found: no {' or '.join(missing)} on PATH (or FORALL_LEAN_BIN); "
                    "Lean Eval is scored by comparator inside the problem's Lake workspace")
        missing = [f"{name} (or ${env})" for name, env in TOOLS if self._tool(name, env) is None]
        if missing:
            return f"comparator is not installed: missing {', '.join(missing)}; {INSTALL}"
        return ""

    def _scoring_dir(self, task: Task, build: Path, files: dict[str, bytes]) -> tuple[Path | None, str]:
        source = Path(str(task.meta["source_dir"]))
        if not (source / "Solution.lean").is_file():
            return None, f"{source} has no Solution.lean (comparator's trusted bridge)"
        score = build / "score"
        shutil.rmtree(score, ignore_errors=True)
        shutil.copytree(source, score, ignore=shutil.ignore_patterns(".git", ".lake"))
        shutil.rmtree(score / "Submission", ignore_errors=True)
        (score / "Submission.lean").unlink(missing_ok=True)
        for rel, data in files.items():
            (score / rel).parent.mkdir(parents=True, exist_ok=True)
            (score / rel).write_bytes(data)
        packages = source.parent.parent / ".lake" / "packages"
        if not packages.is_dir():
            return None, (f"Mathlib is not fetched for {source.parent.parent}: run `lake exe cache get && lake build` "
                          "there (the problems' workspaces share its .lake/packages)")
        (score / ".lake").mkdir(exist_ok=True)
        (score / ".lake" / "packages").symlink_to(packages, target_is_directory=True)
        return score, ""

    def _comparator(self, task: Task, score: Path, timeout: float) -> dict[str, Any]:
        config = json.loads((score / "config.json").read_text(encoding="utf-8"))
        env = dict(os.environ)
        # Lean Eval's own `lake test` forces nanoda whatever config.json says [N1]; so does this scorer
        config["enable_nanoda"] = True
        nanoda = self._tool(*NANODA)
        if nanoda is None:
            return {"infra": f"Lean Eval replays every solution through nanoda (its `lake test` forces "
                             f"enable_nanoda) but nanoda_bin is not installed; {INSTALL}"}
        env["COMPARATOR_NANODA"] = nanoda
        for name, var in TOOLS[1:]:
            env[var] = self._tool(name, var) or name
        config["json_output_path"] = str(score / "comparator-result.json")
        (score / "forall-comparator.json").write_text(json.dumps(config), encoding="utf-8")
        comparator = self._tool(*TOOLS[0]) or "comparator"
        lake = self._tool("lake") or "lake"
        argv = [lake, "env", comparator, "forall-comparator.json"]
        proc = self.runner(argv, cwd=score, timeout=timeout, env=env)
        return {"argv": argv, "returncode": proc.returncode, "timed_out": proc.timed_out,
                "output": (proc.stdout + proc.stderr)[-8000:], "nanoda": bool(config.get("enable_nanoda")),
                "duration": proc.duration}

    def check_template(self, task: Task, workspace: Path, timeout: float) -> Any:
        from pytest_forall.core.prover import CompileResult

        problem = self.probe(workspace)
        if problem:
            return CompileResult(ok=False, infra=problem)
        score, infra = self._scoring_dir(task, workspace, {})
        if score is None:
            return CompileResult(ok=False, infra=infra)
        lake = self._tool("lake") or "lake"
        proc = self.runner([lake, "build", "Challenge"], cwd=score, timeout=timeout)
        if proc.returncode != 0:
            return CompileResult(ok=False, infra=f"Challenge does not build here: {(proc.stdout + proc.stderr)[-300:]}",
                                 output=proc.stdout + proc.stderr)
        return CompileResult(ok=True, output=proc.stdout + proc.stderr)

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        from pytest_forall.core.prover import CompileResult

        data = candidate.read_bytes()
        files = parse_bundle(data)
        score, infra = self._scoring_dir(task, workspace, files)
        if score is None:
            return CompileResult(ok=False, infra=infra)
        self.last = self._comparator(task, score, timeout)
        if self.last.get("infra"):
            return CompileResult(ok=False, infra=self.last["infra"])
        ok = self.last["returncode"] == 0 and not self.last["timed_out"]
        messages = [] if ok else [{"severity": "error", "source": "comparator",
                                   "data": f"comparator rejected the submission (exit {self.last['returncode']}"
                                           f"{', timed out' if self.last['timed_out'] else ''}): "
                                           f"{self.last['output'][-1500:]}"}]
        return CompileResult(ok=ok, digest=sha256_bytes(candidate.read_bytes()), duration=self.last["duration"],
                             timed_out=self.last["timed_out"], messages=messages, output=self.last["output"])

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        from pytest_forall.core.prover import AxiomAudit

        permitted = task.meta.get("permitted_axioms") or []
        strict = set(permitted) <= {"propext", "Quot.sound", "Classical.choice"}
        return AxiomAudit(ok=True, axioms=[], strict_ok=strict, rules_ok=True,
                          reason=f"comparator enforced permitted_axioms {permitted}", output=self.last.get("output", ""))

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        checker = "comparator+nanoda" if self.last.get("nanoda") else "comparator"
        return Layer("independent_check", self.last.get("returncode") == 0, "",
                     {"checker": checker, "argv": self.last.get("argv"), "output": self.last.get("output", "")[-4000:]})

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        try:
            files = parse_bundle(text.encode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            return [Layer("syntax_screen", False, f"not a submission bundle: {exc}")]
        problems = submission_paths_ok(files)
        if "Submission.lean" not in files:
            problems.append("Submission.lean is missing")
        for rel, data in sorted(files.items()):
            masked = lexer.mask(data.decode("utf-8", errors="replace"))
            if re.search(r"(?<![\w.'])(sorry|admit|sorryAx)(?![\w'])", masked):
                problems.append(f"{rel} still contains sorry/admit")
        return [Layer("syntax_screen", not problems, "; ".join(problems), {"files": sorted(files)})]


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> LeanEvalProver | None:
    return LeanEvalProver(options) if name == PROVER else None
