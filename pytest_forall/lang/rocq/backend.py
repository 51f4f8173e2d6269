"""Rocq (Coq) backend: real ``coqc``/``coqchk``/``coqtop`` from the system installation.

The verifier hands every method a private build directory that holds a *copy* of the candidate as
``cand/<task id>.v``; the agent's workspace is never compiled in place. Layout of a build directory::

    cand/<id>.v      the candidate (logical prefix ForallCand)
    tmpl/<id>.v      the unmodified template, compiled once per template digest (logical prefix ForallTmpl)
    audit/*.v        audit files that *load* the compiled candidate; nothing is appended to it

Strict axiom policy for Rocq (documented in docs/verifier.md): a proof may rest on the task's own
top-level ``Variable``/``Context`` declarations (they are parameters of the statement) and on the
classical axioms that correspond to Lean's ``propext``/``Classical.choice``/``Quot.sound`` —
excluded middle, propositional and functional extensionality, (indefinite) description/choice,
proof irrelevance — plus the axioms of the standard library's classical reals. Any other axiom
from an installed library makes the pass ``rules_only``; an axiom from anywhere else fails.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_forall.core.model import Layer, Task, sha256_bytes
from pytest_forall.core.proc import ProcResult, run_command
from pytest_forall.core.prover import AxiomAudit, CompileResult
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.rocq.lexer import mask
from pytest_forall.lang.rocq.problem import outside_sections

CAND = "ForallCand"
TMPL = "ForallTmpl"

#: The strict allow-list (docs/verifier.md): the axioms with which the standard library and mathcomp state
#: excluded middle, propositional and functional extensionality, proof irrelevance (and its equivalents
#: ``eq_rect_eq``/``JMeq_eq``), description/choice as ``IndefiniteDescription``/``ClassicalEpsilon``/
#: ``ClassicalUniqueChoice``/``ClassicalChoice`` state it, and the two axioms the classical reals rest on.
#: The list is closed: an axiom off it is ``rules_only`` even when it follows from the listed ones
#: (``Coq.Logic.Epsilon.epsilon_statement``, ``Coq.Sets.Ensembles.Extensionality_Ensembles``, mathcomp's
#: ``algC``/``finmap`` parameters, the primitive-float axioms …).
STRICT_AXIOMS = frozenset({
    "Coq.Logic.Classical_Prop.classic",
    "Coq.Logic.PropExtensionality.propositional_extensionality",
    "Coq.Logic.FunctionalExtensionality.functional_extensionality_dep",
    "Coq.Logic.ProofIrrelevance.proof_irrelevance",
    "Coq.Logic.Eqdep.Eq_rect_eq.eq_rect_eq",
    "Coq.Logic.JMeq.JMeq_eq",
    "Coq.Logic.IndefiniteDescription.constructive_indefinite_description",
    "Coq.Logic.ClassicalEpsilon.constructive_indefinite_description",
    "Coq.Logic.Description.constructive_definite_description",
    "Coq.Logic.ClassicalUniqueChoice.dependent_unique_choice",
    "Coq.Logic.RelationalChoice.relational_choice",
    "Coq.Sets.Ensembles.Extensionality_Ensembles",  # propositional + functional extensionality on sets
    "Coq.Reals.ClassicalDedekindReals.sig_forall_dec",
    "Coq.Reals.ClassicalDedekindReals.sig_not_dec",
    "mathcomp.classical.boolp.propositional_extensionality",
    "mathcomp.classical.boolp.functional_extensionality_dep",
    "mathcomp.classical.boolp.constructive_indefinite_description",
})
#: Logical roots of the libraries installed system-wide; axioms from them are within the benchmark's rule.
INSTALLED_ROOTS = ("Coq.", "mathcomp.", "Coquelicot.", "Hammer.", "Ltac2.", "elpi.", "HB.")
#: Largest candidate the backend compiles (a bigger file is rejected before coqc runs).
MAX_CANDIDATE_BYTES = 2_000_000

_LOCATION = re.compile(r'^File "(?P<file>[^"]*)", line (?P<line>\d+), characters (?P<c0>\d+)-(?P<c1>\d+):$')
_DECL_NAMES = re.compile(
    r"(?:^|\.\s)\s*(?:#\[[^\]]*\]\s*)?(?:(?:Local|Global|Polymorphic|Monomorphic)\s+)*"
    r"(?:Definition|Fixpoint|CoFixpoint|Let|Example|Inductive|CoInductive|Variant|Record|Structure|Class|"
    r"Theorem|Lemma|Fact|Remark|Corollary|Proposition|Property)\s+([^\W\d][\w']*)")
_TEMPLATE_VARIABLES = re.compile(r"(?:^|\.\s)\s*(?:Variables?|Context|Hypothesis|Hypotheses|Parameters?)\s+([^.]*)\.")
_NAME = r"[^\W\d][\w'.]*"
_IDENT = re.compile(r"[^\W\d][\w']*")
#: ``Print Assumptions`` entries that are not axioms but disabled kernel checks (Coq 8.16 wording).
_UNSAFE_ENTRY = re.compile(rf"^(?P<name>{_NAME}) (?P<what>is assumed to be guarded|is assumed to be positive|"
                           r"relies on an unsafe hierarchy)\.$")
_AXIOM_ENTRY = re.compile(rf"^(?P<name>{_NAME})(?:\s*$| : )")

Runner = Callable[..., ProcResult]


def parse_coq_messages(output: str) -> list[dict[str, Any]]:
    """Split coqc's stderr/stdout into ``{severity, line, data}`` messages (location line + text block)."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    line_no: int | None = None
    for raw in output.splitlines():
        loc = _LOCATION.match(raw)
        if loc:
            line_no = int(loc.group("line"))
            continue
        head = re.match(r"^(Error|Warning|Anomaly|Fatal Error)\b:?\s?(.*)$", raw)
        if head:
            current = {"severity": "warning" if head.group(1) == "Warning" else "error",
                       "line": line_no, "data": head.group(2)}
            messages.append(current)
            line_no = None
        elif current is not None:
            current["data"] += "\n" + raw
    if not messages and re.search(r"Stack overflow|Out of memory|Killed", output):
        messages.append({"severity": "error", "line": None, "data": output.strip()[-500:]})
    return messages


def parse_print_assumptions(output: str) -> tuple[list[tuple[str, str]], str]:
    """Parse ``Print Assumptions`` into ``(name, kind)`` pairs; the second value is a parse problem or "".

    ``kind`` is ``"axiom"`` for an entry ``name : type`` (the type may continue on indented lines) and the
    disabled check for ``name is assumed to be guarded.`` / ``… positive.`` / ``… relies on an unsafe
    hierarchy.`` (Coq 8.16 lists those under ``Axioms:`` too). Any other section (``Section Variables:``,
    ``Opaque constants:`` …), a line at column 0 of another shape, or text before the first section is a
    problem: the audit fails closed rather than guess.
    """
    text = output.strip("\n")
    if text.strip() == "Closed under the global context":
        return [], ""
    lines = text.splitlines()
    if not lines or lines[0] != "Axioms:":
        return [], f"unrecognised Print Assumptions output: {text[:200]!r}"
    entries: list[tuple[str, str]] = []
    for raw in lines[1:]:
        if not raw.strip():
            continue
        if raw[0].isspace():
            if not entries:
                return entries, f"indented line before any assumption: {raw[:120]!r}"
            continue  # the type of the previous entry, continued
        if re.fullmatch(r"[A-Z][\w /,()-]*:", raw.strip()):
            return entries, f"unexpected assumptions section {raw.strip()!r}"
        unsafe = _UNSAFE_ENTRY.match(raw)
        if unsafe:
            entries.append((unsafe.group("name"), unsafe.group("what")))
            continue
        axiom = _AXIOM_ENTRY.match(raw)
        if not axiom:
            return entries, f"unparseable assumption line {raw[:200]!r}"
        entries.append((axiom.group("name"), "axiom"))
    return entries, ""


def template_variable_names(template: str) -> set[str]:
    """Names declared by the template's own top-level ``Variable``/``Context``: parameters of the statement.

    A textual approximation (binders in parentheses and bare ones such as ``Context d (T : …)``); the Rocq
    audit itself takes the allowed names from ``Print Assumptions`` of the compiled template.
    """
    names: set[str] = set()
    for decl in _TEMPLATE_VARIABLES.findall(outside_sections(template)):
        depth, bare, groups, current = 0, [], [], ""
        for char in decl:
            if char in "({[`":
                if depth == 0:
                    current = ""
                depth += char != "`"
                continue
            if char in ")}]":
                depth -= 1
                if depth == 0:
                    groups.append(current.partition(":")[0])
                continue
            if depth:
                current += char
            else:
                bare.append(char)
        head = "".join(bare)
        groups.append(head.partition(":")[0] if ":" in head and not groups else head)
        for group in groups:
            names.update(n for n in group.replace("!", " ").split() if _IDENT.fullmatch(n))
    return names


def coq_module_name(task_id: str) -> str:
    """A Coq library name for the task: the id when it is one, else a digest-based stand-in."""
    if _IDENT.fullmatch(task_id) and task_id.isascii():
        return task_id
    return "Forall_" + hashlib.sha256(task_id.encode()).hexdigest()[:16]


def clean_env() -> dict[str, str]:
    """The environment for coqc/coqchk: PATH only, and no user load path (COQPATH, XDG dirs, HOME, coqrc)."""
    return {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent",
            "XDG_DATA_HOME": "/nonexistent", "XDG_DATA_DIRS": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent",
            "XDG_CONFIG_DIRS": "/nonexistent", "LC_ALL": "C.UTF-8"}


def parse_coqchk_summary(output: str) -> dict[str, list[str]] | None:
    """``coqchk -o``'s CONTEXT SUMMARY as {section title: names}; None when the summary is missing."""
    if "CONTEXT SUMMARY" not in output:
        return None
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in output.split("CONTEXT SUMMARY", 1)[1].splitlines():
        head = re.match(r"^\* (?P<title>[^:]+):\s*(?P<rest>.*)$", raw)
        if head:
            title = head.group("title").strip()
            title = title.removeprefix("Constants/Inductives relying on ")
            current = sections.setdefault(title, [])
            rest = head.group("rest").strip()
            if rest and rest != "<none>" and title != "Theory":
                current.append(rest)
            continue
        if current is not None and raw.strip() and raw.strip() != "<none>":
            current.append(raw.strip())
    return sections


#: Compiled library files whose change changes what a proof means (objects and native plugins).
_LIBRARY_SUFFIXES = (".vo", ".vos", ".cmxs", ".cma", ".cmxa")


@functools.cache
def toolchain_fingerprint(coqc: str, coqchk: str) -> dict[str, str]:
    """``{"version", "libraries"}`` of a Rocq installation, once per process.

    ``version``: ``coqc --version`` and the size and mtime of the ``coqc`` and ``coqchk`` executables.
    ``libraries``: a digest of the relative path, size and mtime of every compiled library file under
    ``coqc -where`` (the whole load path: the environment is cleaned of COQPATH) and its ``coq-core`` plugins.
    A package upgrade rewrites the files it ships, so it changes the digest; reading every file's bytes
    (230 MB here) would cost seconds per process for the same answer.
    """
    cwd = tempfile.gettempdir()
    line = " ".join(run_command([coqc, "--version"], cwd=cwd, timeout=30).stdout.split())
    tools = []
    for tool in (coqc, coqchk):
        path = shutil.which(tool)
        stat = os.stat(path) if path else None
        tools.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}" if stat else f"{tool}:missing")
    where = run_command([coqc, "-where"], cwd=cwd, timeout=30).stdout.strip()
    digest = hashlib.sha256()
    if where:
        root = Path(where)
        for base in (root, root.parent / "coq-core"):
            for directory, dirs, files in os.walk(base, followlinks=True):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(_LIBRARY_SUFFIXES):
                        found = Path(directory) / name
                        info = found.stat()
                        digest.update(f"{found.relative_to(base.parent)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return {"version": f"{line} ({' '.join(tools)})", "libraries": digest.hexdigest()}


class RocqProver:
    """The Rocq backend; ``runner`` is swapped for the sandbox's runner when sandboxing is on."""

    name = "rocq"
    ext = "v"

    def __init__(self, options: dict[str, Any] | None = None, runner: Runner = run_command) -> None:
        opts = options or {}
        self.coqc = str(opts.get("coqc") or "coqc")
        self.coqchk = str(opts.get("coqchk") or "coqchk")
        self.coqtop = str(opts.get("coqtop") or "coqtop")
        self.mem_mb = int(opts.get("prover_mem_mb") or 8192)
        cache = opts.get("cache_dir") or os.path.join(tempfile.gettempdir(), "pytest-forall-cache")
        self.cache_dir = Path(str(cache)) / "rocq-templates"
        self.runner = runner
        #: set by the protocol under ``--forall-sandbox=bwrap``: interactive sessions run in the sandbox too
        self.sandboxed = False
        #: ``-Q``/``-R`` arguments every coqc, coqchk and coqtop call gets (a project's load path)
        self.load: list[str] = []

    #: Host files a sandboxed coqc needs besides /usr (findlib's config, else coqc dies with an Anomaly).
    sandbox_binds = ((Path("/etc/ocamlfind.conf"), "/etc/ocamlfind.conf"),)

    # -- helpers ---------------------------------------------------------------------------------

    def _run(self, argv: list[str], cwd: Path, timeout: float) -> ProcResult:
        if self.load and argv and argv[0] in (self.coqc, self.coqchk):
            argv = [argv[0], *self.load, *argv[1:]]
        return self.runner(argv, cwd=cwd, timeout=timeout, mem_mb=self.mem_mb, env=clean_env())

    def probe(self, workspace: Path) -> str:
        missing = [tool for tool in (self.coqc, self.coqchk) if shutil.which(tool) is None]
        if missing:
            return (f"{', '.join(missing)} not found on PATH; install Rocq: apt-get install -y coq libcoq-stdlib "
                    "libcoq-mathcomp libcoq-coquelicot libcoq-mathcomp-analysis")
        return ""

    def version(self) -> str:
        """The compiler's version and the installed libraries' fingerprint (the template cache key).

        Installing or upgrading a library (e.g. mathcomp's real-closed, which some templates need)
        changes the library files, so a template cached as "does not compile here" is retried.
        """
        found = toolchain_fingerprint(self.coqc, self.coqchk)
        return f"{found['version']} [{found['libraries'][:16]}]"

    def fingerprint(self, task: Task) -> dict[str, str]:
        """The environment a verdict depends on (the verdict cache's key): see :func:`toolchain_fingerprint`."""
        return toolchain_fingerprint(self.coqc, self.coqchk)

    def _compile_file(self, builddir: Path, subdir: str, prefix: str, stem: str, timeout: float) -> CompileResult:
        """``coqc`` on ``<subdir>/<stem>.v``; ok only with exit 0, no timeout and a fresh ``.vo``.

        The digest is of the source as read back *after* coqc finished, so it names the bytes compiled.
        """
        source = builddir / subdir / f"{stem}.v"
        vo = source.with_suffix(".vo")
        vo.unlink(missing_ok=True)
        result = self._run([self.coqc, "-q", "-Q", subdir, prefix, f"{subdir}/{stem}.v"], builddir, timeout)
        output = (result.stdout + result.stderr).strip()
        messages = parse_coq_messages(output)
        if result.returncode == 127 and not vo.exists():
            return CompileResult(ok=False, infra=f"{self.coqc} could not be started: {result.stderr.strip()}",
                                 output=output)
        ok = result.returncode == 0 and not result.timed_out and vo.is_file()
        if result.timed_out:
            messages.insert(0, {"severity": "error", "line": None, "data": f"timed out after {timeout:.0f} s"})
        elif not ok and not any(m["severity"] == "error" for m in messages):
            why = f"coqc exited with {result.returncode}" if result.returncode else "coqc left no .vo"
            messages.insert(0, {"severity": "error", "line": None, "data": f"{why}: {output[-500:]}"})
        try:
            digest = sha256_bytes(source.read_bytes())
        except OSError as exc:
            return CompileResult(ok=False, output=output, messages=[
                {"severity": "error", "line": None, "data": f"the compiled source vanished: {exc}"}])
        return CompileResult(ok=ok, digest=digest, duration=result.duration,
                             timed_out=result.timed_out, messages=messages, output=output,
                             artifact=str(vo) if ok else "")

    # -- Prover protocol ---------------------------------------------------------------------------

    def check_template(self, task: Task, workspace: Path, timeout: float) -> CompileResult:
        """Compile the unmodified template once per (template, coqc) and keep the .vo for statement checks."""
        module = coq_module_name(task.task_id)
        key = hashlib.sha256(f"{self.version()}\0{module}\0{task.template}".encode()).hexdigest()[:32]
        entry = self.cache_dir / key
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(entry) + ".lock"):
            record = entry / "result.json"
            if not record.exists() or not (entry / "tmpl").is_dir():
                scratch = Path(tempfile.mkdtemp(prefix="tmpl-", dir=self.cache_dir))
                (scratch / "tmpl").mkdir()
                (scratch / "tmpl" / f"{module}.v").write_text(task.template, encoding="utf-8")
                result = self._compile_file(scratch, "tmpl", TMPL, module, timeout)
                if result.timed_out or result.infra:  # not a verdict on the template: do not cache it
                    shutil.rmtree(scratch, ignore_errors=True)
                    return CompileResult(ok=False, infra=result.infra or f"template compile timed out after "
                                         f"{timeout:.0f} s", output=result.output)
                (scratch / "result.json").write_text(json.dumps(
                    {"ok": result.ok, "output": result.output, "messages": result.messages}), encoding="utf-8")
                shutil.rmtree(entry, ignore_errors=True)
                scratch.rename(entry)
            data = json.loads(record.read_text(encoding="utf-8"))
            (workspace / "tmpl").mkdir(parents=True, exist_ok=True)
            for produced in (entry / "tmpl").iterdir():
                shutil.copy2(produced, workspace / "tmpl" / produced.name)
        if not data["ok"]:
            first = next((m["data"] for m in data["messages"] if m["severity"] == "error"), data["output"][-300:])
            return CompileResult(ok=False, infra=f"template does not compile here: {first.strip()[:300]}",
                                 output=data["output"], messages=data["messages"])
        return CompileResult(ok=True, output=data["output"], messages=data["messages"])

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
        """Compile ``workspace/cand/<module>.v``; ``candidate`` is copied there first when it is elsewhere."""
        module = coq_module_name(task.task_id)
        target = workspace / "cand" / f"{module}.v"
        data = candidate.read_bytes()
        if len(data) > MAX_CANDIDATE_BYTES:
            return CompileResult(ok=False, digest=sha256_bytes(data), messages=[{
                "severity": "error", "line": None,
                "data": f"the candidate has {len(data)} bytes; the limit is {MAX_CANDIDATE_BYTES}"}])
        if candidate.resolve() != target.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for stale in target.parent.glob(f"{module}.vo*"):
            stale.unlink()
        return self._compile_file(workspace, "cand", CAND, module, timeout)

    def _audit_run(self, workspace: Path, name: str, body: str, timeout: float) -> ProcResult:
        audit = workspace / "audit"
        audit.mkdir(exist_ok=True)
        (audit / f"{name}.v").write_text(body, encoding="utf-8")
        return self._run([self.coqc, "-q", "-Q", "cand", CAND, "-Q", "tmpl", TMPL, f"audit/{name}.v"],
                         workspace, timeout)

    def _marked_run(self, workspace: Path, name: str, preamble: list[str], queries: list[tuple[str, str]],
                    timeout: float) -> tuple[dict[str, str], str]:
        """Run ``queries`` (key, vernacular) in one audit file; return each query's own output, or a problem.

        Every query is preceded by a marker with a fresh nonce, so output cannot be attributed to the wrong
        query; a missing marker or a failed run is a problem (the caller fails closed).
        """
        nonce = secrets.token_hex(6)
        marks = {key: f"forall_mark_{nonce}_{i}" for i, (key, _) in enumerate(queries)}
        lines = list(preamble)
        for key, query in queries:
            lines += [f"Check (fun {marks[key]} : True => {marks[key]}).", query]
        end = f"forall_mark_{nonce}_end"
        lines.append(f"Check (fun {end} : True => {end}).")
        result = self._run_audit_file(workspace, name, "\n".join(lines) + "\n", timeout)
        if result.timed_out:
            return {}, f"timed out after {timeout:.0f} s"
        if result.returncode != 0:
            return {}, f"coqc exited with {result.returncode}: {(result.stdout + result.stderr).strip()[-600:]}"
        out: dict[str, str] = {}
        text = result.stdout
        positions = []
        for key, mark in [*marks.items(), ("", end)]:
            found = [m.start() for m in re.finditer(rf"^fun {mark} : True => {mark}\n\s+: (?:True -> True|"
                                                    rf"forall _ : True, True)\n", text, re.MULTILINE)]
            if len(found) != 1:
                return {}, f"audit output not understood (marker for {key or 'end'!r} seen {len(found)} times)"
            positions.append((key, found[0]))
        for (key, pos), (_, nxt) in itertools.pairwise(positions):
            if nxt < pos:
                return {}, "audit output out of order"
            block = text[pos:nxt].split("\n", 2)
            out[key] = block[2] if len(block) > 2 else ""
        return out, ""

    def _run_audit_file(self, workspace: Path, name: str, body: str, timeout: float) -> ProcResult:
        return self._audit_run(workspace, name, body, timeout)

    def _inspect(self, task: Task, workspace: Path, timeout: float) -> tuple[dict[str, Any], str]:
        """One audit run for the statement check and the axiom audit, cached per compiled candidate."""
        module = coq_module_name(task.task_id)
        vo = workspace / "cand" / f"{module}.vo"
        if not vo.is_file():
            return {}, "the candidate has no compiled .vo"
        key = sha256_bytes(vo.read_bytes())
        cache = workspace / "audit" / "inspect.json"
        if cache.is_file():
            data = json.loads(cache.read_text(encoding="utf-8"))
            if (data.get("vo"), data.get("theorem"), data.get("template")) == (key, task.theorem_name,
                                                                               task.template):
                return data, ""
        tmpl_mod, cand_mod = f"{TMPL}.{module}", f"{CAND}.{module}"
        names = [n for n in dict.fromkeys(_DECL_NAMES.findall(outside_sections(task.frozen)))]
        if task.theorem_name not in names:
            names.append(task.theorem_name)
        queries: list[tuple[str, str]] = [("assume:tmpl", f"Print Assumptions {tmpl_mod}.{task.theorem_name}."),
                                          ("assume:cand", f"Print Assumptions {cand_mod}.{task.theorem_name}.")]
        params = sorted(template_variable_names(task.template) - {task.theorem_name})
        for prefix, mod in (("tmpl", tmpl_mod), ("cand", cand_mod)):
            for name in names:
                verb = "Check @" if name == task.theorem_name else "Print "
                queries.append((f"{prefix}:{name}", f"{verb}{mod}.{name}."))
            for name in params:
                queries.append((f"{prefix}:param:{name}", f"Check @{mod}.{name}."))
        out, problem = self._marked_run(workspace, "forall_inspect", [
            f"Require {tmpl_mod}.", f"Require {cand_mod}.", "Set Printing All.", "Set Printing Width 1000000."],
            queries, timeout)
        if problem:
            return {}, problem
        parsed: dict[str, Any] = {"vo": key, "theorem": task.theorem_name, "template": task.template,
                                  "names": names, "out": out}
        for side in ("tmpl", "cand"):
            entries, bad = parse_print_assumptions(out[f"assume:{side}"])
            parsed[f"assume:{side}"] = {"entries": entries, "problem": bad}
        want = sorted({n for side in ("tmpl", "cand") for n, _ in parsed[f"assume:{side}"]["entries"]})
        fqns: dict[str, str] = {}
        if want:
            about, problem = self._marked_run(workspace, "forall_about", [
                f"Require {tmpl_mod}.", f"Require {cand_mod}.", "Set Printing Width 1000000."],
                [(n, f"About {n}.") for n in want], timeout)
            if problem:
                return {}, f"could not resolve assumption names: {problem}"
            for name in want:
                found = re.findall(r"^Expands to:\s+(?:Constant|Inductive|Constructor)\s+(\S+)\s*$", about[name],
                                   re.MULTILINE)
                if len(found) != 1:
                    return {}, f"could not resolve assumption name {name!r}: {about[name][-300:]!r}"
                fqns[name] = found[0]
        parsed["fqns"] = fqns
        cache.write_text(json.dumps(parsed), encoding="utf-8")
        return parsed, ""

    def statement_check(self, task: Task, workspace: Path, timeout: float) -> Layer:
        """Compare the *elaborated* theorem, frozen definitions and template parameters of candidate and template.

        Textual equality of the frozen part cannot see an import that changes what a name means; the fully
        explicit terms (``Set Printing All``) can. The template's own parameters (its top-level
        ``Variable``/``Context``, as ``Print Assumptions`` of the template reports them) are compared by type.
        """
        data, problem = self._inspect(task, workspace, timeout)
        if problem:
            return Layer("elaborated_statement", False, f"statement check failed to run: {problem}")
        module = coq_module_name(task.task_id)
        out = data["out"]
        compared = list(data["names"])
        pairs = [(out[f"tmpl:{n}"], out[f"cand:{n}"], n) for n in data["names"]]
        tmpl_params = self._template_parameters(task, data)
        if tmpl_params is None:
            return Layer("elaborated_statement", False, "the template's assumptions are not understood: "
                         + str(data["assume:tmpl"]["problem"]), {"output": out["assume:tmpl"][-2000:]})
        compared += sorted(tmpl_params)
        pairs += [(out[f"tmpl:param:{n}"], out[f"cand:param:{n}"], n) for n in sorted(tmpl_params)]
        # Both sides are printed in one environment, so different constants print differently. The two task
        # modules print as ``ForallTmpl.<m>.x`` or ``<m>.x`` (whichever was required last gets the short
        # name): map both spellings of both modules to ``<m>.x`` before comparing.
        own = re.compile(rf"(?<![\w'.])(?:{TMPL}\.|{CAND}\.)?{re.escape(module)}\.")
        for tmpl, cand, name in pairs:
            tmpl, cand = own.sub(f"{module}.", tmpl), own.sub(f"{module}.", cand)
            # the printer's line breaks and indentation depend on name lengths: compare the token stream
            if tmpl.split() != cand.split():
                diff = next((f"template: {a.strip()!r} / candidate: {b.strip()!r}"
                             for a, b in zip(tmpl.splitlines(), cand.splitlines()) if a != b), "lengths differ")
                return Layer("elaborated_statement", False,
                             f"the elaborated `{name}` differs from the template's ({diff[:600]})",
                             {"compared": compared, "template": tmpl[-2000:], "candidate": cand[-2000:]})
        return Layer("elaborated_statement", True, "", {"compared": compared})

    def _template_parameters(self, task: Task, data: dict[str, Any]) -> set[str] | None:
        """The template's own parameters: its top-level ``Variable``/``Context`` names (``Print Assumptions`` of
        an admitted theorem lists only the theorem, so they are read from the text). None when the template's
        assumptions are not understood. The statement check compares their types in template and candidate."""
        if data["assume:tmpl"]["problem"]:
            return None
        return {n for n in template_variable_names(task.template) if n != task.theorem_name}

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        """``Print Assumptions`` of the candidate's theorem, from a separate file that only ``Require``s it.

        Names are resolved with ``About`` to fully qualified ones. Strict: every axiom is on
        :data:`STRICT_AXIOMS` or is one of the template's own parameters. Rules: an axiom from an installed
        library (:data:`INSTALLED_ROOTS`). Fail: an axiom the candidate declared, a disabled guard/positivity/
        universe check anywhere, or output that is not understood.
        """
        data, problem = self._inspect(task, workspace, timeout)
        if problem:
            return AxiomAudit(ok=False, reason=f"axiom audit failed to run: {problem}")
        output = data["out"]["assume:cand"]
        info = data["assume:cand"]
        if info["problem"]:
            return AxiomAudit(ok=False, reason=info["problem"], output=output)
        own = self._template_parameters(task, data)
        if own is None:
            return AxiomAudit(ok=False, reason="the template's assumptions are not understood", output=output)
        module = coq_module_name(task.task_id)
        cand_prefix = f"{CAND}.{module}."
        qualified = [data["fqns"][name] for name, _ in info["entries"]]
        unsafe = [f"{data['fqns'][name]} {kind}" for name, kind in info["entries"] if kind != "axiom"]
        if unsafe:
            return AxiomAudit(ok=False, axioms=qualified, output=output,
                              reason=f"the proof relies on disabled kernel checks: {unsafe}")
        strict_bad, rules_bad = [], []
        for fqn in qualified:
            if fqn.startswith(cand_prefix) and fqn[len(cand_prefix):] in own:
                continue
            if fqn.startswith((f"{CAND}.", f"{TMPL}.")):
                strict_bad.append(fqn)
                rules_bad.append(fqn)
            elif fqn not in STRICT_AXIOMS:
                strict_bad.append(fqn)
                if not fqn.startswith(INSTALLED_ROOTS):
                    rules_bad.append(fqn)
        reason = ""
        if rules_bad:
            reason = f"axioms outside the benchmark's rule: {rules_bad}"
        elif strict_bad:
            reason = f"axioms outside the strict allow-list: {strict_bad}"
        return AxiomAudit(ok=True, axioms=qualified, strict_ok=not strict_bad, rules_ok=not rules_bad,
                          reason=reason, output=output)

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        """``coqchk -norec`` on the compiled candidate with its own kernel (no bytecode VM: a ``vm_compute``
        bug in coqc is not trusted twice). Installed libraries are trusted, not re-checked."""
        if shutil.which(self.coqchk) is None:
            return Layer("independent_check", None, f"not judged: {self.coqchk} is not installed")
        module = coq_module_name(task.task_id)
        argv = [self.coqchk, "-silent", "-o", "-Q", "cand", CAND, "-norec", f"{CAND}.{module}"]
        result = self._run(argv, workspace, timeout)
        output = (result.stdout + result.stderr).strip()
        evidence = {"checker": "coqchk", "argv": argv, "output": output[-4000:], "returncode": result.returncode,
                    "duration_s": round(result.duration, 3)}
        if result.timed_out:
            return Layer("independent_check", False, f"coqchk timed out after {timeout:.0f} s", evidence, infra=True)
        if result.returncode == 127:
            return Layer("independent_check", False, f"coqchk could not be started: {output[-300:]}", evidence,
                         infra=True)
        if result.returncode != 0:
            return Layer("independent_check", False, f"coqchk rejected the compiled proof: {output[-400:]}", evidence)
        sections = parse_coqchk_summary(output)
        if sections is None:
            return Layer("independent_check", False, "coqchk printed no context summary", evidence)
        evidence["summary"] = sections
        data, _ = self._inspect(task, workspace, timeout)
        own = self._template_parameters(task, data) if data else None
        allowed = {f"{CAND}.{module}.{n}" for n in (own or set())}
        foreign = [a for a in sections.get("Axioms", []) if a.startswith(f"{CAND}.") and a not in allowed]
        if foreign:
            return Layer("independent_check", False, f"coqchk lists axioms declared by the candidate: {foreign}",
                         evidence)
        for title, names in sections.items():
            if title != "Axioms" and title != "Theory" and any(n.startswith(f"{CAND}.") for n in names):
                return Layer("independent_check", False, f"coqchk: candidate constants {title}: {names}", evidence)
        return Layer("independent_check", True, "", evidence)

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        from pytest_forall.lang.screens import rocq_static_layers

        return rocq_static_layers(task.template, text, theorem_name=task.theorem_name)

    def candidate_with_proof(self, task: Task, proof: str) -> str:
        """The template with its hole (the final ``Admitted.``) replaced by ``proof`` (which ends in ``Qed.``)."""
        masked = mask(task.template)
        hole = [m for m in re.finditer(r"\bAdmitted\s*\.", masked)][-1]
        return task.template[: hole.start()] + proof + task.template[hole.end():]

    def try_tactics(self, task: Task, workspace: Path, tactics: list[str], timeout: float,
                    prelude: str = "") -> tuple[str, int, str]:
        """Try closing tactics in one ``coqtop`` that loaded the statement once (library loading dominates).

        Returns (winning tactic or "", attempts made, log). A crash (stack overflow) restarts coqtop and
        moves on: it is a failed attempt, not an infrastructure error.
        """
        from pytest_forall.lang.rocq.coqtop import TacticProbe

        prefix = None
        if self.sandboxed:
            from pytest_forall.isolation.sandbox import interactive_prefix

            prefix = interactive_prefix(workspace, [(p, inside) for p, inside in self.sandbox_binds if p.exists()])
        return TacticProbe(self.coqtop, self.mem_mb, prefix, self.load).run(
            prelude + task.frozen, tactics, workspace, timeout, theorem=task.theorem_name)


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> RocqProver | None:
    return RocqProver(options) if name in ("rocq", "coq") else None
