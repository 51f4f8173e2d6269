"""The kernel-level judge for Rocq: template and candidate compared as kernel terms, not as printed text.

Both files are compiled under the same logical name (``ForallProblem.<module>``) in separate scratch
directories, so the kernel names of their constants coincide. A small OCaml plugin (``forall_judge.mlg``,
built by the harness into the cache) is loaded by an audit file that only ``Require``\\ s one compiled
``.vo``; it serialises, straight from the kernel's global environment, the theorem's type, every
constant and inductive of the problem file the roots (the theorem and every name the template declares)
transitively depend on, and ``Assumptions.assumptions`` of the theorem with fully qualified kernel names.
Nothing the candidate's own compile printed is read, and no printing option can change the output.
docs/verifier.md states the guarantee and what it assumes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock

from pytest_forall.core.model import sha256_bytes
from pytest_forall.core.proc import CPU_WALL_FACTOR, ProcResult
from pytest_forall.lang.rocq.advisories import DETECTED, NEEDS_CHECKER
from pytest_forall.lang.rocq.toolchain import Toolchain, no_answer, probe, run_in, version_info

PROBLEM_ROOT = "ForallProblem"
PLUGIN_SOURCE = Path(__file__).with_name("forall_judge.mlg")
#: One OCaml file per family of Coq/Rocq APIs, linked with the plugin as ``Forall_compat``.
COMPAT_DIR = Path(__file__).with_name("judge_compat")
PLUGIN_PACKAGE = "forall-judge"
#: Where the plugin's findlib directory is bound inside a sandbox.
PLUGIN_INSIDE = "/forall-judge"
NONCE_SLOT = "stored"
_LINE_KINDS = ("theorem ", "closure ", "assumption ", "missing-theorem ", "missing-root ", "finding ",
               "ulevels", "uconstraint ")

Runner = Callable[..., ProcResult]


def _digest_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def manifest_ok(entry: Path, key: str) -> bool:
    """A cache entry is trusted only when its manifest names this key and every listed file has its digest."""
    try:
        manifest = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
        files = manifest["files"]
        return bool(manifest.get("key") == key and isinstance(files, dict) and files and all(
            isinstance(digest, str) and _digest_file(entry / name) == digest for name, digest in files.items()))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def write_manifest(entry: Path, key: str, names: list[str]) -> None:
    """Record the digest of every file of a cache entry; :func:`manifest_ok` checks it on every read."""
    files = {name: _digest_file(entry / name) for name in names}
    (entry / "manifest.json").write_text(json.dumps({"key": key, "files": files}), encoding="utf-8")


#: Entries this process validated, with the status-change stamp of each of their files: a prover is made per item,
#: and re-hashing the plugin each time was a warm run's largest per-item cost after the protocol's own.
_validated: dict[str, tuple[tuple[str, int, int, int], ...]] = {}


def _stamps(entry: Path) -> tuple[tuple[str, int, int, int], ...]:
    """(name, inode, size, ctime) of every file of ``entry``: any rewrite changes the ctime, which no user sets."""
    found = []
    for path in sorted(entry.rglob("*")):
        info = path.lstat()
        found.append((str(path.relative_to(entry)), info.st_ino, info.st_size, info.st_ctime_ns))
    return tuple(found)


#: (plugin directory -> its files' stamps and their digest): a backend is made per item; the plugin is hashed once
_plugin_digests: dict[str, tuple[tuple[tuple[str, int, int, int], ...], str]] = {}


def plugin_digest(plugin: Path) -> str:
    """SHA-256 of the judge plugin's files (its ``.cmxs`` and ``META``, by relative name): what the judge runs, the
    same wherever a cache holds it (the build is reproducible: the same sources, shim and Coq give the same bytes).
    A key naming the plugin by this, not by its path, is found again in a copy of the cache or in another cache."""
    stamps = _stamps(plugin)
    known = _plugin_digests.get(str(plugin))
    if known is not None and known[0] == stamps:
        return known[1]
    digest = hashlib.sha256()
    for name, *_ in stamps:
        if name != "manifest.json" and (plugin / name).is_file():
            digest.update(name.encode() + b"\0" + _digest_file(plugin / name).encode() + b"\n")
    _plugin_digests[str(plugin)] = (stamps, digest.hexdigest())
    return digest.hexdigest()


def cached_entry(cache_dir: Path, key: str, build: Callable[[Path], list[str] | str]) -> tuple[Path, str]:
    """The validated cache entry for ``key``; built (into a fresh directory, then renamed) when absent, corrupt or
    foreign. ``build`` fills the directory and returns the names of the files to trust, or a problem. An entry
    this process validated is not hashed again while none of its files changed."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    entry = cache_dir / key
    try:
        if _validated.get(str(entry)) == _stamps(entry):
            return entry, ""
    except OSError:
        pass
    with FileLock(str(entry) + ".lock"):
        if manifest_ok(entry, key):
            _validated[str(entry)] = _stamps(entry)
            return entry, ""
        scratch = Path(tempfile.mkdtemp(prefix="build-", dir=cache_dir))
        try:
            produced = build(scratch)
            if isinstance(produced, str):
                return entry, produced
            write_manifest(scratch, key, produced)
            shutil.rmtree(entry, ignore_errors=True)
            scratch.rename(entry)
            _validated[str(entry)] = _stamps(entry)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return entry, ""


#: CPU seconds each step of the judge plugin's build (coqpp, ocamlopt) may take; the wall clock is only a backstop
#: ``CPU_WALL_FACTOR`` times longer (a loaded machine still builds it), and a step that used no CPU for
#: ``CPU_STALL_SECONDS`` was stopped: either end is the machine's (:data:`PLUGIN_BUILD_TIMED_OUT`)
PLUGIN_BUILD_CPU_SECONDS = 300.0
#: The start of :func:`plugin_dir`'s problem when a build step got no answer in time: the machine's (a loaded or
#: stalled build), not missing packages; nothing is cached, and a backend that met it is not kept (asked again)
PLUGIN_BUILD_TIMED_OUT = "building the judge plugin timed out"


def plugin_dir(cache_dir: Path, coq_version: str, toolchain: Toolchain | None = None) -> tuple[Path | None, str]:
    """The findlib directory holding the judge plugin, built by the harness (never by a candidate) once per
    plugin source and Coq installation, against that installation's own coq-core/rocq-runtime (inside its root
    filesystem when it has one) with the version's compatibility shim (``judge_compat/``, chosen by
    :func:`pytest_forall.lang.rocq.toolchain.version_info`). Returns (directory, "") or (None, why it could not be
    built)."""
    toolchain = toolchain or Toolchain("")
    info = probe(toolchain)[1] or version_info((8, 16))
    source = PLUGIN_SOURCE.read_bytes()
    compat = (COMPAT_DIR / f"{info.judge_compat}.ml").read_bytes()
    key = "judge-" + hashlib.sha256(source + b"\0" + compat + b"\0" + coq_version.encode()).hexdigest()[:24]

    def build(scratch: Path) -> list[str] | str:
        work = scratch / "src"
        work.mkdir()
        (work / "forall_judge.mlg").write_bytes(source)
        (work / "forall_compat.ml").write_bytes(compat)
        env = {"PATH": os.pathsep.join([toolchain.bin, os.environ.get("PATH") or "/usr/bin:/bin"])
               if toolchain.bin else os.environ.get("PATH") or "/usr/bin:/bin"}
        steps = [["coqpp", "forall_judge.mlg"],
                 ["ocamlfind", "ocamlopt", "-thread", "-shared", "-rectypes", "-w", "-a", "-package",
                  info.judge_packages, "forall_compat.ml", "forall_judge.ml", "-o", "forall_judge.cmxs"]]
        for argv in steps:
            result = run_in(toolchain, argv, work, timeout=PLUGIN_BUILD_CPU_SECONDS * CPU_WALL_FACTOR,
                            env=env if not toolchain.root else None, cpu_s=PLUGIN_BUILD_CPU_SECONDS)
            if result.timed_out:  # no verdict on the installation: the harness's own step, asked again
                return f"{PLUGIN_BUILD_TIMED_OUT} ({' '.join(argv[:2])} {no_answer(result)}; asked again)"
            if result.returncode != 0:
                return (f"building the judge plugin failed ({' '.join(argv[:2])} exited {result.returncode}): "
                        f"{(result.stdout + result.stderr).strip()[-600:]}; it needs libcoq-core-ocaml-dev, "
                        f"ocaml-findlib and coqpp (apt-get install -y libcoq-core-ocaml-dev ocaml-findlib)")
        package = scratch / PLUGIN_PACKAGE
        package.mkdir()
        shutil.copy2(work / "forall_judge.cmxs", package / "forall_judge.cmxs")
        requires = info.judge_packages.split(",")[0]
        (package / "META").write_text(f'package "plugin" (\n  directory = "."\n  requires = "{requires}"\n'
                                      '  archive(native) = "forall_judge.cmxs"\n'
                                      '  plugin(native) = "forall_judge.cmxs"\n)\n', encoding="utf-8")
        shutil.rmtree(work)
        return [f"{PLUGIN_PACKAGE}/forall_judge.cmxs", f"{PLUGIN_PACKAGE}/META"]

    try:
        entry, problem = cached_entry(cache_dir, key, build)
    except OSError as exc:
        return None, f"cannot build the judge plugin in {cache_dir}: {exc}"
    return (None, problem) if problem else (entry, "")


@dataclass(frozen=True)
class Dump:
    """What the plugin serialised from one environment (see ``forall_judge.mlg``)."""

    theorem: str
    closure: frozenset[str]
    assumptions: tuple[str, ...]
    missing: frozenset[str]
    #: kernel constructs the plugin's detectors found, "<feature> <constant> <place> <digest> <why>"
    #: (``scan_object``; see :func:`uncovered_findings`)
    findings: frozenset[str] = frozenset()
    #: the theorem's universe levels by first occurrence ("ulevels 1 2 1"), and the relations the universe graph
    #: entails between them and Set (index 0): "i <= j", "i < j", "i = j" (``statement_universes``)
    ulevels: str = ""
    uconstraints: frozenset[str] = frozenset()


def _dump_lines(text: str, nonce: str) -> list[str] | str:
    """The lines of a plugin output file written by this run (its nonce opens and closes it), or why not."""
    lines = text.split("\n")
    if lines[-1:] == [""]:
        lines = lines[:-1]
    if len(lines) < 2 or lines[0] != f"forall-judge {nonce}" or lines[-1] != f"end {nonce}":
        return "the judge's output is missing or not from this run"
    return lines


def parse_dump(text: str, nonce: str) -> Dump | str:
    """The plugin's output file, or the reason it is not understood (the judge then fails closed)."""
    lines = _dump_lines(text, nonce)
    if isinstance(lines, str):
        return lines
    theorem, closure, assumptions, missing, findings, ulevels, uconstraints = "", set(), [], set(), set(), "", set()
    for line in lines[1:-1]:
        kind = next((k for k in _LINE_KINDS if line.startswith(k)), "")
        rest = line[len(kind):]
        if kind == "theorem ":
            theorem = rest
        elif kind == "closure ":
            closure.add(rest)
        elif kind == "assumption ":
            assumptions.append(rest)
        elif kind == "finding ":
            if not _FINDING.fullmatch(rest):
                return f"malformed judge finding {line[:200]!r}"
            findings.add(rest)
        elif kind == "ulevels":
            ulevels = line
        elif kind == "uconstraint ":
            uconstraints.add(rest)
        elif kind:
            missing.add(line)
        else:
            return f"unexpected judge output line {line[:200]!r}"
    return Dump(theorem, frozenset(closure), tuple(assumptions), frozenset(missing), frozenset(findings), ulevels,
                frozenset(uconstraints))


#: A judge failure of the harness's own making (the process was killed, the plugin did not load): never a verdict
#: on the candidate, so the layer is infra. Anything else (the plugin refusing a term it cannot compare) rejects.
JUDGE_COULD_NOT_RUN = "the judge could not run: "
#: Exit statuses of a judge the harness killed (SIGKILL, SIGTERM, as a sandbox's PID 1 reports them). Not every
#: 128+N: coqc itself exits 129 on an anomaly, and a crash (SIGSEGV, SIGABRT) the candidate's terms may cause; both
#: reject, failing closed.
_KILLED_STATUSES = (-9, -15, 128 + 9, 128 + 15)


def timed_out_problem(result: ProcResult) -> str:
    """Why a judge run that timed out has no dump (both infra for the callers): its CPU budget spent ("timed out"), or
    its wall-clock backstop ended it with the budget unspent (:attr:`ProcResult.starved`: the machine's load or a
    stopped process), named so."""
    return f"{JUDGE_COULD_NOT_RUN}coqc was {result.starved}" if result.starved else "timed out"


def killed_from_outside(result: ProcResult) -> str:
    """Why the judge's process was stopped from outside (a timeout, the memory watch, a kill), or ""."""
    if result.timed_out or result.extra.get("rss_exceeded"):
        return str(result.accident)
    return f"killed (exit status {result.returncode})" if result.returncode in _KILLED_STATUSES else ""


_PLUGIN_NOT_LOADED = re.compile(r"Dynlink|findlib|Cannot (?:find|load)[^\n]*(?:plugin|ML module|forall_judge)|"
                                r"Declare ML Module", re.IGNORECASE)


def audit_source(module: str, roots: list[str], theorem: str, out_name: str, nonce: str) -> str:
    """The audit file: load the plugin, ``Require`` the one compiled problem library, dump. Nothing else."""
    for name in [*roots, theorem]:
        if not re.fullmatch(r"[^\W\d][\w']*", name) or '"' in name:
            raise ValueError(f"not a Coq identifier: {name!r}")
    return (f'Declare ML Module "{PLUGIN_PACKAGE}.plugin".\nRequire {PROBLEM_ROOT}.{module}.\n'
            f'ForallJudgeDump "{out_name}" "{nonce}" "{PROBLEM_ROOT}.{module}" "{" ".join(roots)}" "{theorem}".\n')


def run_dump(run: Callable[[list[str], Path], ProcResult], parent: Path, vo: Path, module: str, roots: list[str],
             theorem: str) -> tuple[Dump | None, str, str]:
    """Run the audit in a fresh directory under ``parent`` holding only a copy of ``vo`` and the audit file.

    ``run(arguments, cwd)`` runs coqc with those arguments (sandboxed, the plugin on its findlib path). Returns the parsed dump, its
    raw text (for the template cache) and "" — or None, "", and why it failed.
    """
    work = Path(tempfile.mkdtemp(prefix="judge-", dir=parent))
    try:
        (work / "p").mkdir()
        shutil.copyfile(vo, work / "p" / f"{module}.vo")
        nonce = secrets.token_hex(8)
        try:
            source = audit_source(module, roots, theorem, "dump.txt", nonce)
        except ValueError as exc:
            return None, "", str(exc)
        (work / "audit.v").write_text(source, encoding="utf-8")
        result = run(["-q", "-Q", "p", PROBLEM_ROOT, "audit.v"], work)
        if result.timed_out:
            return None, "", timed_out_problem(result)
        output = (result.stdout + result.stderr).strip()
        killed = killed_from_outside(result)
        if result.returncode != 0 and (killed or _PLUGIN_NOT_LOADED.search(output)):
            return None, "", f"{JUDGE_COULD_NOT_RUN}{killed or output[-600:]}"
        if result.returncode != 0:
            return None, "", f"the audit exited with {result.returncode}: {output[-600:]}"
        try:
            text = (work / "dump.txt").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return None, "", f"the judge wrote no output: {exc}"
        parsed = parse_dump(text, nonce)
        if isinstance(parsed, str):
            return None, "", parsed
        lines = text.rstrip("\n").split("\n")
        stored = "\n".join([f"forall-judge {NONCE_SLOT}", *lines[1:-1], f"end {NONCE_SLOT}"]) + "\n"
        return parsed, stored, ""
    finally:
        shutil.rmtree(work, ignore_errors=True)


def reparse(stored: str) -> Dump | str:
    """A dump stored in the template cache (its nonce replaced by a fixed slot) parsed again."""
    return parse_dump(stored, NONCE_SLOT)


#: A detector's finding as the plugin writes it: feature, constant, place (a constant's ``type`` or ``body``, an
#: inductive's whole declaration, a ``module`` of the file), the MD5 of the canonical serialisation of the term in that
#: place (of the module's path and why: no term), why.
_FINDING = re.compile(r"(\S+) (\S+) (type|body|inductive|module) ([0-9a-f]{32}) (.+)", re.DOTALL)


def uncovered_findings(candidate: frozenset[str] | tuple[str, ...], template: frozenset[str] | tuple[str, ...],
                       theorem: str) -> list[str]:
    """The candidate's findings no template (baseline) finding covers, as ``<feature> <constant> <why> (in its
    <place>)``. A template finding covers a candidate finding only when both are the same detector's on the same
    constant, in the same place, in a term with the same digest (a kernel-identical type, body or inductive
    declaration: the term is the benchmark's), and never on ``theorem``'s body, which is always the candidate's
    (the template's theorem is admitted), nor for a ``module`` finding (the module walk's: its digest is of the
    module's path and kind, not of a term, so it cannot show the module is the template's). Keying on the constant alone let a candidate hide an unsafe fixpoint in
    the theorem's proof behind one the template's statement has (issue 31)."""
    known = set(template)
    kept = []
    for found in sorted(set(candidate)):
        match = _FINDING.fullmatch(found)
        if match is None:  # parse_dump refuses these; a stored dump of an older format is never trusted either
            kept.append(found)
            continue
        feature, constant, place, _, why = match.groups()
        if found in known and not (constant == theorem and place == "body") and place != "module":
            continue
        kept.append(f"{feature} {constant} {why}" + ("" if place == "module" else
                    f" (in its {'declaration' if place == 'inductive' else place})"))
    return kept


@dataclass
class Judgement:
    """The judge's findings, one per guarantee clause ("" = holds)."""

    statement: str
    axioms: list[str]
    assumptions: str       # why the assumptions are outside the rule ("" = fine)
    strict: bool
    rules: bool
    compared: list[str]    # the kernel names whose terms were compared (the theorem first)
    #: the detectors' findings no template finding covers (:func:`uncovered_findings`), "<feature> <constant> <why>
    #: (in its <place>)"
    findings: list[str] = field(default_factory=list)
    #: a project's declared axioms the theorem rests on (:class:`ProjectJudgement`'s; a benchmark declares none)
    project_axioms: list[str] = field(default_factory=list)


def judge(template: Dump, candidate: Dump, parameters: set[str], module: str, strict_axioms: frozenset[str],
          installed_roots: tuple[str, ...]) -> Judgement:
    """Clause 1 (same statement and closure, parameters still parameters) and clause 2 (assumptions)."""
    own = f"{PROBLEM_ROOT}.{module}."
    statement = ""
    if not candidate.theorem:
        statement = f"the candidate defines no theorem `{_theorem_name(template)}` at the top level of the file"
    elif candidate.theorem != template.theorem:
        statement = (f"the type of `{_theorem_name(template)}` differs from the template's as a kernel term "
                     f"({_diff(template.theorem, candidate.theorem)})")
    elif candidate.missing != template.missing:
        statement = f"names the template declares are missing: {sorted(candidate.missing - template.missing)[:5]}"
    elif candidate.closure != template.closure:
        changed = sorted({_entry_name(e) for e in candidate.closure ^ template.closure})
        statement = f"the statement's dependencies differ from the template's as kernel terms: {changed[:8]}"
    elif candidate.ulevels != template.ulevels:
        statement = (f"the universe levels of `{_theorem_name(template)}` are not the template's: the candidate's "
                     f"type shares levels differently ({candidate.ulevels!r}, template {template.ulevels!r})")
    elif added := _added_constraints(template.uconstraints, candidate.uconstraints):
        statement = (f"the candidate adds universe constraints between the universes of `{_theorem_name(template)}`'s "
                     f"statement (levels by first occurrence, 0 = Set): {added[:6]}")
    template_axioms = {_entry_name(e) for e in template.closure if _entry_kind(e) == "axiom"}
    allowed_params = {own + p for p in parameters} & template_axioms
    axioms, strict_bad, rules_bad = [], [], []
    for line in candidate.assumptions:
        kind, _, name = line.partition(" ")
        axioms.append(name if kind == "axiom" else line)
        if kind != "axiom":
            rules_bad.append(line)
        elif name in allowed_params:
            continue
        elif name.startswith(own) or not name.startswith(installed_roots):
            rules_bad.append(name)
        elif name not in strict_axioms:
            strict_bad.append(name)
    reason = (f"assumptions outside the benchmark's rule: {rules_bad}" if rules_bad else
              f"axioms outside the strict allow-list: {strict_bad}" if strict_bad else "")
    compared = [_theorem_name(template), *sorted(_entry_name(e) for e in template.closure)]
    return Judgement(statement, axioms, reason, not (strict_bad or rules_bad), not rules_bad, compared,
                     uncovered_findings(candidate.findings, template.findings, _theorem_name(template)))


def _added_constraints(template: frozenset[str], candidate: frozenset[str]) -> list[str]:
    """The candidate's relations between statement universes that the template's graph does not entail
    (``i = j`` entails ``i <= j``; ``i < j`` entails ``i <= j``)."""
    implied = set(template)
    for relation in template:
        i, op, j = relation.split(" ")
        if op in ("=", "<"):
            implied.add(f"{i} <= {j}")
        if op == "=":
            implied.update({f"{j} = {i}", f"{j} <= {i}"})
    return sorted(candidate - implied)


def _theorem_name(dump: Dump) -> str:
    return _entry_name(dump.theorem)


def _entry_name(entry: str) -> str:
    parts = entry.split(" ", 2)
    return parts[1] if len(parts) > 1 else entry


def _entry_kind(entry: str) -> str:
    parts = entry.split(" ", 3)
    return parts[2] if len(parts) > 2 else ""


def _diff(a: str, b: str) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"template …{a[max(0, i - 60):i + 60]!r} / candidate …{b[max(0, i - 60):i + 60]!r}"


# --- project mode: one file of a project, baseline build against candidate build -------------------------

@dataclass(frozen=True)
class FileDump:
    """What ``ForallJudgeFile`` serialised from one compiled file of a project (``forall_judge.mlg``): every
    declaration in the kernel's order (``fields``: path in the file, serialisation), the paths of modules the
    judge cannot compare (functors, module types), and each requested target's assumptions."""

    fields: tuple[tuple[str, str], ...]
    opaque_modules: tuple[str, ...]
    targets: frozenset[str]
    assumptions: dict[str, tuple[str, ...]]
    missing: frozenset[str]
    #: per target, the detectors' findings "<feature> <constant> <place> <digest> <why>" on what it depends on in
    #: the file
    findings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: per target, its statement's universe levels by first occurrence ("ulevels 1 2 1") and the relations the
    #: kernel entails between them and Set ("uconstraint 1 <= 2"; a polymorphic constant's from its own context)
    universes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: per target, the other library files its closure reaches that have a module-walk finding
    reaches: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: per target, the module walk of its own file up to the target's top-level field
    module_findings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: per such file, its whole-file module walk: "functor <module path> module <digest> <why>"
    file_findings: dict[str, tuple[str, ...]] = field(default_factory=dict)


def parse_file_dump(text: str, nonce: str) -> FileDump | str:
    """The plugin's project-mode output, or why it is not understood (the judge then reports infra)."""
    lines = _dump_lines(text, nonce)
    if isinstance(lines, str):
        return lines
    fields: list[tuple[str, str]] = []
    opaque: list[str] = []
    targets: set[str] = set()
    assumptions: dict[str, list[str]] = {}
    missing: set[str] = set()
    findings: dict[str, list[str]] = {}
    universes: dict[str, list[str]] = {}
    reaches: dict[str, list[str]] = {}
    file_findings: dict[str, list[str]] = {}
    module_findings: dict[str, list[str]] = {}
    for line in lines[1:-1]:
        kind, _, rest = line.partition(" ")
        if kind == "universes-of":
            path, _, what = rest.partition(" ")
            universes.setdefault(path, []).append(what)
        elif kind == "finding-of":
            path, _, found = rest.partition(" ")
            if not found.startswith("finding ") or not _FINDING.fullmatch(found.removeprefix("finding ")):
                return f"malformed judge finding {line[:200]!r}"
            findings.setdefault(path, []).append(found.removeprefix("finding "))
        elif kind == "module-finding-of":
            path, _, found = rest.partition(" ")
            if not found.startswith("finding functor ") or not _FINDING.fullmatch(found.removeprefix("finding ")):
                return f"malformed judge finding {line[:200]!r}"
            module_findings.setdefault(path, []).append(found.removeprefix("finding "))
        elif kind == "reaches":
            path, _, library = rest.partition(" ")
            reaches.setdefault(path, []).append(library)
        elif kind == "file-finding":
            library, _, found = rest.partition(" ")
            if not found.startswith("finding functor ") or not _FINDING.fullmatch(found.removeprefix("finding ")):
                return f"malformed judge finding {line[:200]!r}"
            file_findings.setdefault(library, []).append(found.removeprefix("finding "))
        elif kind == "field":
            path, _, entry = rest.partition(" ")
            fields.append((path, entry))
        elif kind in ("functor", "module-type"):
            opaque.append(rest)
        elif kind in ("module", "end-module"):
            continue
        elif kind == "target":
            targets.add(rest)
            assumptions.setdefault(rest, [])
        elif kind == "assumption":
            path, _, what = rest.partition(" ")
            assumptions.setdefault(path, []).append(what)
        elif kind in ("missing-target", "missing-file"):
            missing.add(rest)
        else:
            return f"unexpected judge output line {line[:200]!r}"
    return FileDump(tuple(fields), tuple(opaque), frozenset(targets),
                    {k: tuple(v) for k, v in assumptions.items()}, frozenset(missing),
                    {k: tuple(v) for k, v in findings.items()}, {k: tuple(v) for k, v in universes.items()},
                    reaches={k: tuple(v) for k, v in reaches.items()},
                    module_findings={k: tuple(v) for k, v in module_findings.items()},
                    file_findings={k: tuple(v) for k, v in file_findings.items()})


def file_audit_source(module: str, targets: list[str], out_name: str, nonce: str, each: bool = False,
                      roots: tuple[str, ...] = ()) -> str:
    """The audit file of project mode: load the plugin, ``Require`` the project's compiled file, dump it. The
    targets' assumptions come from one shared walk of the file's closure; ``each``: from one Coq
    ``Assumptions.assumptions`` per target (the reference the shared walk is tested against)."""
    return files_audit_source([(module, targets, out_name)], nonce, each, roots)


def project_roots_of(load: list[str]) -> tuple[str, ...]:
    """The logical roots a coqc load path maps (``-Q``/``-R dir Root``): the project's own files, whose constants the
    detectors walk wherever a target reaches them (an installed library is found without a mapping)."""
    return tuple(dict.fromkeys(load[i + 2] for i, flag in enumerate(load[:-2])
                               if flag in ("-Q", "-R") and load[i + 2]))


def files_audit_source(files: list[tuple[str, list[str], str]], nonce: str, each: bool = False,
                       roots: tuple[str, ...] = ()) -> str:
    """The audit file of several compiled files of one build, (module, targets, output file) each: the plugin loaded
    once, then per file its ``Require`` and its dump, in that order (a file is dumped before the next is loaded, as
    its own session would dump it), except its targets' assumptions: those are fixed once a target is declared, so
    with several files they come from one walk over every file's targets at the end (``ForallJudgeFlush``; one walk
    per file went over the libraries they share again each time). ``roots``: the project's logical roots, whose
    files' constants the detectors walk when a target reaches them (``ForallJudgeProjectRoots``)."""
    later = len(files) > 1 and not each
    command = "ForallJudgeFileEach" if each else "ForallJudgeFileLater" if later else "ForallJudgeFile"
    lines = [f'Declare ML Module "{PLUGIN_PACKAGE}.plugin".\n']
    if roots:
        if not all(re.fullmatch(r"[^\W\d][\w']*(\.[^\W\d][\w']*)*", root) for root in roots):
            raise ValueError(f"not a Coq logical root: {roots!r}")
        lines.append(f'ForallJudgeProjectRoots "{" ".join(roots)}".\n')
    for module, targets, out_name in files:
        for path in targets:
            if not all(re.fullmatch(r"[^\W\d][\w']*", part) for part in path.split(".")):
                raise ValueError(f"not a Coq qualified identifier: {path!r}")
        if not all(re.fullmatch(r"[^\W\d][\w']*", part) for part in module.split(".")):
            raise ValueError(f"not a Coq library name: {module!r}")
        lines.append(f'Require {module}.\n{command} "{out_name}" "{nonce}" "{module}" "{" ".join(targets)}".\n')
    return "".join(lines) + ("ForallJudgeFlush.\n" if later else "")


def run_file_dump(run: Callable[[list[str], Path], ProcResult], parent: Path, load: list[str], module: str,
                  targets: list[str], fresh: bool = True, each: bool = False) -> tuple[FileDump | None, str]:
    """Dump ``module`` as the project's load path ``load`` (coqc ``-Q``/``-R`` arguments) finds it, from a fresh
    directory under ``parent`` (or, ``fresh=False``, from ``parent`` itself: a sandbox binds only the directory it
    runs in). Returns the dump and "" or None and why it failed."""
    dumps, problem = run_files_dump(run, parent, load, [(module, targets)], fresh, each)
    found = dumps.get(module, problem)
    return (None, found) if isinstance(found, str) else (found, "")


def run_files_dump(run: Callable[[list[str], Path], ProcResult], parent: Path, load: list[str],
                   files: list[tuple[str, list[str]]], fresh: bool = True,
                   each: bool = False) -> tuple[dict[str, FileDump | str], str]:
    """:func:`run_file_dump` of several files of one build in one session (#18: the plugin and the libraries they
    share are loaded once). Returns per module its dump or why it has none, and "" or why the whole session failed
    (then no module has a dump: a caller that needs one file's own reason runs that file alone)."""
    work = Path(tempfile.mkdtemp(prefix="judge-", dir=parent)) if fresh else parent
    nonce = secrets.token_hex(8)
    name = f"ForallJudgeAudit_{nonce}"  # a name no project file has (the audit may run inside the project's tree)
    outs = {module: f"{name}_{i}.txt" for i, (module, _) in enumerate(files)}
    try:
        try:
            source = files_audit_source([(module, targets, outs[module]) for module, targets in files], nonce, each,
                                        project_roots_of(load))
        except ValueError as exc:
            return {}, str(exc)
        (work / f"{name}.v").write_text(source, encoding="utf-8")
        result = run(["-q", *load, f"{name}.v"], work)
        if result.timed_out:
            return {}, timed_out_problem(result)
        if result.returncode != 0:
            return {}, f"the audit exited with {result.returncode}: {(result.stdout + result.stderr).strip()[-600:]}"
        dumps: dict[str, FileDump | str] = {}
        for module, out in outs.items():
            try:
                text = (work / out).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                dumps[module] = f"the judge wrote no output: {exc}"
                continue
            dumps[module] = parse_file_dump(text, nonce)
        return dumps, ""
    finally:
        if fresh:
            shutil.rmtree(work, ignore_errors=True)
        else:
            for leftover in work.glob(f"*{name}*"):
                leftover.unlink(missing_ok=True)


def statement_key(entry: str) -> tuple[str, str]:
    """(kind-free header, type) of a constant's serialisation ``const <kn> <kind> <flags> <univs> : <type>[ := b]``;
    the kind (axiom/opaque/def) and the body are the proof's business, not the statement's."""
    head, _, rest = entry.partition(" : ")
    words = head.split(" ")
    if len(words) > 2:
        del words[2]
    return " ".join(w for w in words if not w.startswith("poly")), rest.partition(" := ")[0]


@dataclass
class ProjectJudgement:
    """The project-mode judge's findings ("" = the clause holds)."""

    statement: str
    axioms: list[str]
    assumptions: str
    strict: bool
    rules: bool
    compared: int
    #: the detectors' findings the candidate brings (:func:`uncovered_findings`: on the target's proof, or on a term
    #: the build does not have as it is): ``advisory_check`` of the backend reads them as for a benchmark candidate
    findings: list[str] = field(default_factory=list)
    #: the maintainer's declared project axioms (``--forall-project-axioms``) the target rests on: strict
    project_axioms: list[str] = field(default_factory=list)
    #: the project's own module-walk findings (functors, module types, sealed, aliased, applied or declared modules,
    #: included fields) in the files the target reaches: the module advisories are not covered for it, so it is not
    #: strict (``kernel_advisories`` names them not covered)
    project_modules: list[str] = field(default_factory=list)
    #: the detectors' findings (``fix``, ``cofix``, ``letin``, ``variance``, ``upoly``) on the project's own terms the
    #: target reaches, excused as the baseline's: the project's code is what is judged, so no detector covers their
    #: advisories and the target is not strict (``kernel_advisories`` names those advisories not covered)
    project_findings: list[str] = field(default_factory=list)
    #: the project's own VM and native conversions (``vm``, ``native`` findings) the target reaches, excused as the
    #: baseline's: they are still checked by no one but coqc's VM or compiler, so the independent check is required and
    #: covers the files that have them (coqchk ``-norec`` of the target's file loads the others, it does not check them)
    project_checks: list[str] = field(default_factory=list)


def reached_module_findings(dump: FileDump, target: str, project_roots: tuple[str, ...]) -> list[str]:
    """The module walk's findings of its own file up to ``target`` and of the project's other files it reaches in
    ``dump``; an installed library's are not the project's (installed libraries are trusted, as everywhere)."""
    return sorted({*dump.module_findings.get(target, ()),
                   *(found for library in dump.reaches.get(target, ()) if (library + ".").startswith(project_roots)
                     for found in dump.file_findings.get(library, ()))})


def _ulevels(dump: FileDump, target: str) -> str:
    return next((u for u in dump.universes.get(target, ()) if u.startswith("ulevels")), "")


def _uconstraints(dump: FileDump, target: str) -> frozenset[str]:
    """The relations between the target's statement universes, as the benchmark judge's ``uconstraints`` read them."""
    return frozenset(u.removeprefix("uconstraint ") for u in dump.universes.get(target, ())
                     if u.startswith("uconstraint "))


#: the last dump whose declared names :func:`_names_of` read, with them (a file's items ask for the same dump in turn)
_NAMES: list[tuple[FileDump, frozenset[str]]] = []


def _names_of(dump: FileDump) -> frozenset[str]:
    """The kernel names ``dump`` declares, read once per dump in a row (not once per item of its file)."""
    known = _NAMES[:1]
    if known and known[0][0] is dump:
        return known[0][1]
    names = frozenset(_entry_name(entry) for _, entry in dump.fields)
    _NAMES[:] = [(dump, names)]
    return names


def judge_project_file(baseline: FileDump, candidate: FileDump, module: str, target: str,
                       project_roots: tuple[str, ...], strict_axioms: frozenset[str], installed_roots: tuple[str, ...],
                       declared: frozenset[str] = frozenset()) -> ProjectJudgement:
    """Clause 1: the target's type is the baseline's, and every declaration of the file before it is the baseline's
    (type, and body of a transparent definition); clause 2: the target's assumptions are within the rules — the
    strict allow-list, or (rules only) axioms and admitted lemmas the project itself declares before the candidate
    ran (another file, or this file before the target) and axioms of installed libraries. ``declared``: the
    project's own axioms its maintainer declared as foundations (``--forall-project-axioms``, checked against the
    baseline build): strict, but only as the baseline has them — of another file (which no candidate changes), or
    of this file before the target; a name the candidate's file declares itself stays outside the rule."""
    def upto(dump: FileDump) -> tuple[list[tuple[str, str]], str]:
        before: list[tuple[str, str]] = []
        for path, entry in dump.fields:
            if path == target:
                return before, entry
            before.append((path, entry))
        return before, ""

    base_before, base_target = upto(baseline)
    cand_before, cand_target = upto(candidate)
    statement = ""
    if not cand_target or target not in candidate.targets:
        statement = f"the candidate's file declares no `{target}` where the project's does"
    elif statement_key(cand_target) != statement_key(base_target):
        statement = (f"the type of `{target}` differs from the project's as a kernel term "
                     f"({_diff(statement_key(base_target)[1], statement_key(cand_target)[1])})")
    elif (levels := _ulevels(candidate, target)) != _ulevels(baseline, target):
        statement = (f"the universe levels of `{target}` are not the project's: the candidate's type shares levels "
                     f"differently ({levels!r}, the project's {_ulevels(baseline, target)!r})")
    elif added := _added_constraints(_uconstraints(baseline, target), _uconstraints(candidate, target)):
        statement = (f"the candidate adds universe constraints between the universes of `{target}`'s statement "
                     f"(levels by first occurrence, 0 = Set): {added[:6]}")
    elif candidate is not baseline:  # (the build's own file judged against itself: nothing before it differs)
        have = set(cand_before)
        changed = [path for path, entry in base_before if (path, entry) not in have]
        if changed:
            statement = (f"declarations of the file before `{target}` differ from the project's as kernel terms "
                         f"(or are missing): {changed[:8]}")
    own: list[set[str]] = []  # the file's axioms before the target, read when an assumption is of this file

    def own_axioms() -> set[str]:
        if not own:
            own.append({_entry_name(entry) for _, entry in base_before if _entry_kind(entry) == "axiom"})
        return own[0]
    file_prefix = module + "."
    module_names = _names_of(candidate)
    axioms: list[str] = []
    strict_bad: list[str] = []
    rules_bad: list[str] = []
    used: list[str] = []
    for line in candidate.assumptions.get(target, ()):
        kind, _, name = line.partition(" ")
        axioms.append(name if kind == "axiom" else line)
        if kind != "axiom":
            rules_bad.append(line)
        elif name in strict_axioms:
            continue
        elif name == _entry_name(base_target):
            rules_bad.append(name)
        elif name in module_names or name.startswith(file_prefix):
            # this file: only what the project declared before the target
            if name not in own_axioms():
                rules_bad.append(name)
            elif name in declared:
                used.append(name)
            else:
                strict_bad.append(name)
        elif name in declared and name.startswith(project_roots):
            used.append(name)
        elif name.startswith(project_roots + installed_roots):
            strict_bad.append(name)
        else:
            rules_bad.append(name)
    # the module walk (docs/verifier.md): a finding the build's file does not have is the candidate's, refused at
    # kernel_advisories as a benchmark candidate's; the project's own keep the target from strict
    base_modules = set(reached_module_findings(baseline, target, project_roots))
    cand_modules = reached_module_findings(candidate, target, project_roots)
    project_modules = [found for found in cand_modules if found in base_modules]
    # the detectors likewise: a finding the baseline has is not the candidate's, but it is the project's own code,
    # which is what is judged, so its advisories stay possible for the target (docs/verifier.md)
    theorem = _entry_name(base_target or cand_target)
    found = candidate.findings.get(target, ())
    # a finding on another file's term is the build's whatever the candidate's proof reaches: the candidate compiles
    # its own file only, and every kernel name of that file starts with the file's name (one of a module `C` of this
    # file is `<module>.C.…`, so it never passes for another file's)
    others = tuple(f for f in found if not f.split(" ", 2)[1].startswith(file_prefix))
    brought = uncovered_findings(found, baseline.findings.get(target, ()) + others, theorem)
    excused = [f for f in uncovered_findings(found, (), theorem) if f not in brought]
    project_findings = [f for f in excused if f.partition(" ")[0] in DETECTED]
    project_checks = [f for f in excused if f.partition(" ")[0] in NEEDS_CHECKER]
    own_terms: list[str] = []
    if project_modules:
        own_terms.append(f"the project's own modules the module walk does not cover (the module advisories are not "
                         f"covered for what rests on them): {uncovered_findings(tuple(project_modules[:8]), (), '')}")
    if project_findings:
        own_terms.append(f"the project's own terms outside the judge's conservative criteria (their advisories are "
                         f"not covered for what rests on them): {project_findings[:8]}")
    reason = (f"assumptions outside the rule: {rules_bad}" if rules_bad else
              f"axioms outside the strict allow-list (the project's own axioms and admitted lemmas count here): "
              f"{strict_bad}" if strict_bad else "; ".join(own_terms))
    brought += uncovered_findings(tuple(found for found in cand_modules if found not in base_modules), (), "")
    return ProjectJudgement(statement, axioms, reason, not (strict_bad or rules_bad or own_terms),
                            not rules_bad, len(base_before) + 1, brought, sorted(set(used)), project_modules,
                            project_findings, project_checks)
