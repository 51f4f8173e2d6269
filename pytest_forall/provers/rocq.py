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

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from ..adapters.putnam import coq_mask_comments
from ..model import Layer, Task, sha256_bytes
from ..proc import ProcResult, run_command
from . import AxiomAudit, CompileResult

CAND = "ForallCand"
TMPL = "ForallTmpl"

STRICT_AXIOMS = frozenset({
    "Coq.Logic.Classical_Prop.classic",
    "Coq.Logic.PropExtensionality.propositional_extensionality",
    "Coq.Logic.FunctionalExtensionality.functional_extensionality_dep",
    "Coq.Logic.ProofIrrelevance.proof_irrelevance",
    "Coq.Logic.Eqdep.Eq_rect_eq.eq_rect_eq",
    "Coq.Logic.JMeq.JMeq_eq",
    "Coq.Logic.IndefiniteDescription.constructive_indefinite_description",
    "Coq.Logic.ClassicalEpsilon.constructive_indefinite_description",
    "Coq.Logic.Epsilon.epsilon_statement",
    "Coq.Logic.ClassicalUniqueChoice.dependent_unique_choice",
    "Coq.Logic.ClassicalChoice.choice",
    "Coq.Reals.ClassicalDedekindReals.sig_forall_dec",
    "Coq.Reals.ClassicalDedekindReals.sig_not_dec",
    "mathcomp.classical.boolp.propositional_extensionality",
    "mathcomp.classical.boolp.functional_extensionality_dep",
    "mathcomp.classical.boolp.constructive_indefinite_description",
})
#: Logical roots of the libraries installed system-wide; axioms from them are within the benchmark's rule.
INSTALLED_ROOTS = ("Coq.", "mathcomp.", "Coquelicot.", "Hammer.", "Ltac2.", "elpi.", "HB.")

_LOCATION = re.compile(r'^File "(?P<file>[^"]*)", line (?P<line>\d+), characters (?P<c0>\d+)-(?P<c1>\d+):$')
_DECL_NAMES = re.compile(r"(?:^|\.\s)\s*(?:Definition|Fixpoint|Let|Theorem|Lemma|Corollary|Proposition)\s+"
                         r"([A-Za-z_][\w']*)")
_TEMPLATE_VARIABLES = re.compile(r"(?:^|\.\s)\s*(?:Variables?|Context|Hypothesis|Hypotheses|Parameter)s?\s+([^.]*)\.")

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
        head = re.match(r"^(Error|Warning|Anomaly)\b:?\s?(.*)$", raw)
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
    """Parse ``Print Assumptions`` output into ``(name, type)`` pairs; second value is a parse problem or ""."""
    text = output.strip()
    if "Closed under the global context" in text:
        return [], ""
    if not text.startswith("Axioms:"):
        return [], f"unrecognised Print Assumptions output: {text[:200]!r}"
    entries: list[tuple[str, str]] = []
    for raw in text.splitlines()[1:]:
        if not raw.strip():
            continue
        if re.match(r"^[A-Z][\w ]+:$", raw):  # another section ("Fixpoints relying on …", "Opaque constants:")
            return entries, f"unexpected assumptions section {raw.strip()!r}"
        if raw.startswith(" ") and entries:
            name, typ = entries[-1]
            entries[-1] = (name, f"{typ} {raw.strip()}".strip())
            continue
        name, _, typ = raw.partition(" : ")
        entries.append((name.strip(), typ.strip()))
    for name, _ in entries:
        if not re.fullmatch(r"[A-Za-z_][\w'.]*", name):
            return entries, f"unparseable assumption name {name!r}"
    return entries, ""


def template_variable_names(template: str) -> set[str]:
    """Names declared by the template's own top-level ``Variable``/``Context``: parameters of the statement."""
    names: set[str] = set()
    for decl in _TEMPLATE_VARIABLES.findall(coq_mask_comments(template)):
        for group in re.findall(r"[({`]\s*([^:(){}]*?)\s*:", decl) or [decl.partition(":")[0]]:
            names.update(n for n in group.split() if re.fullmatch(r"[A-Za-z_][\w']*", n))
    return names


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
        self._version: str | None = None

    #: Host files a sandboxed coqc needs besides /usr (findlib's config, else coqc dies with an Anomaly).
    sandbox_binds = ((Path("/etc/ocamlfind.conf"), "/etc/ocamlfind.conf"),)

    # -- helpers ---------------------------------------------------------------------------------

    def _run(self, argv: list[str], cwd: Path, timeout: float) -> ProcResult:
        return self.runner(argv, cwd=cwd, timeout=timeout, mem_mb=self.mem_mb)

    def probe(self, workspace: Path) -> str:
        missing = [tool for tool in (self.coqc, self.coqchk) if shutil.which(tool) is None]
        if missing:
            return (f"{', '.join(missing)} not found on PATH; install Rocq: apt-get install -y coq libcoq-stdlib "
                    "libcoq-mathcomp libcoq-coquelicot libcoq-mathcomp-analysis")
        return ""

    def version(self) -> str:
        """The compiler's version line (a cache key): asked once, outside any sandbox."""
        if self._version is None:
            result = run_command([self.coqc, "--version"], cwd=tempfile.gettempdir(), timeout=30)
            self._version = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
        return self._version

    def _compile_file(self, builddir: Path, subdir: str, prefix: str, stem: str, timeout: float) -> CompileResult:
        source = builddir / subdir / f"{stem}.v"
        result = self._run([self.coqc, "-q", "-Q", subdir, prefix, f"{subdir}/{stem}.v"], builddir, timeout)
        output = (result.stdout + result.stderr).strip()
        messages = parse_coq_messages(output)
        if result.returncode == 127:
            return CompileResult(ok=False, infra=f"{self.coqc} could not be started: {result.stderr.strip()}",
                                 output=output)
        ok = result.returncode == 0 and not result.timed_out
        if result.timed_out:
            messages.append({"severity": "error", "line": None, "data": f"timed out after {timeout:.0f} s"})
        elif not ok and not any(m["severity"] == "error" for m in messages):
            messages.append({"severity": "error", "line": None,
                             "data": f"coqc exited with {result.returncode}: {output[-500:]}"})
        vo = source.with_suffix(".vo")
        return CompileResult(ok=ok, digest=sha256_bytes(source.read_bytes()), duration=result.duration,
                             timed_out=result.timed_out, messages=messages, output=output,
                             artifact=str(vo) if ok and vo.exists() else "")

    # -- Prover protocol ---------------------------------------------------------------------------

    def check_template(self, task: Task, workspace: Path, timeout: float) -> CompileResult:
        """Compile the unmodified template once per (template, coqc) and keep the .vo for statement checks."""
        key = hashlib.sha256(f"{self.version()}\0{task.task_id}\0{task.template}".encode()).hexdigest()[:32]
        entry = self.cache_dir / key
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(entry) + ".lock"):
            record = entry / "result.json"
            if not record.exists():
                scratch = Path(tempfile.mkdtemp(prefix="tmpl-", dir=self.cache_dir))
                (scratch / "tmpl").mkdir()
                (scratch / "tmpl" / f"{task.task_id}.v").write_text(task.template, encoding="utf-8")
                result = self._compile_file(scratch, "tmpl", TMPL, task.task_id, timeout)
                if result.timed_out:  # a slow machine is not a verdict on the template: do not cache it
                    shutil.rmtree(scratch, ignore_errors=True)
                    return CompileResult(ok=False, infra=f"template compile timed out after {timeout:.0f} s",
                                         output=result.output)
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
        return self._compile_file(workspace, "cand", CAND, task.task_id, timeout)

    def _audit_run(self, workspace: Path, name: str, body: str, timeout: float) -> ProcResult:
        audit = workspace / "audit"
        audit.mkdir(exist_ok=True)
        (audit / f"{name}.v").write_text(body, encoding="utf-8")
        return self._run([self.coqc, "-q", "-Q", "cand", CAND, "-Q", "tmpl", TMPL, f"audit/{name}.v"],
                         workspace, timeout)

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        module = f"{CAND}.{task.task_id}"
        result = self._audit_run(workspace, "forall_axioms",
                                 f"Require {module}.\nPrint Assumptions {module}.{task.theorem_name}.\n", timeout)
        output = result.stdout + result.stderr
        if result.returncode != 0:
            return AxiomAudit(ok=False, reason=f"axiom audit failed to run: {output.strip()[-400:]}", output=output)
        entries, problem = parse_print_assumptions(result.stdout)
        if problem:
            return AxiomAudit(ok=False, reason=problem, output=output)
        qualified: list[str] = []
        if entries:
            locate = self._audit_run(workspace, "forall_locate", f"Require {module}.\n" + "".join(
                f"Locate Term {name}.\n" for name, _ in entries), timeout)
            found = re.findall(r"^Constant\s+(\S+)", locate.stdout, re.M)
            if locate.returncode != 0 or len(found) != len(entries):
                return AxiomAudit(ok=False, output=output + locate.stdout,
                                  reason=f"could not resolve axiom names {[n for n, _ in entries]}")
            qualified = found
        own = template_variable_names(task.template)
        strict_bad, rules_bad = [], []
        for fqn in qualified:
            if fqn.startswith(f"{module}."):
                allowed = fqn[len(module) + 1:] in own
                if not allowed:
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

    def statement_check(self, task: Task, workspace: Path, timeout: float) -> Layer:
        """Compare the *elaborated* theorem and frozen definitions of candidate and template.

        Textual equality of the frozen part cannot see an import that changes what a name means; the
        fully explicit terms (``Set Printing All``) can.
        """
        names = [n for n in _DECL_NAMES.findall(coq_mask_comments(task.frozen))]
        lines = [f"Require {TMPL}.{task.task_id} {CAND}.{task.task_id}.", "Set Printing All.",
                 "Set Printing Width 1000000."]
        for prefix in (TMPL, CAND):
            lines.append("Check I.")  # section separator: prints "I : True" in any environment
            for name in names:
                if name == task.theorem_name:
                    lines.append(f"Check @{prefix}.{task.task_id}.{name}.")
                else:
                    lines.append(f"Print {prefix}.{task.task_id}.{name}.")
        result = self._audit_run(workspace, "forall_statement", "\n".join(lines) + "\n", timeout)
        if result.returncode != 0:
            return Layer("elaborated_statement", False, "statement check failed to run: "
                         + (result.stdout + result.stderr).strip()[-400:])
        parts = re.split(r"^I\s*\n\s*: True\s*$", result.stdout, flags=re.M)
        if len(parts) != 3:
            return Layer("elaborated_statement", False, "unrecognised statement check output",
                         {"output": result.stdout[-2000:]})
        # With both modules loaded, Coq prints whichever of the two twins is shadowed with a longer
        # qualifier; the module part says nothing about the statement, so it is normalised away.
        own = re.compile(rf"\b(?:(?:{TMPL}|{CAND})\.)?{re.escape(task.task_id)}\.")
        tmpl, cand = own.sub("<task>.", parts[1]), own.sub("<task>.", parts[2])
        if tmpl != cand:
            diff = next((f"template: {a.strip()!r} / candidate: {b.strip()!r}"
                         for a, b in zip(tmpl.splitlines(), cand.splitlines()) if a != b), "lengths differ")
            return Layer("elaborated_statement", False, f"the elaborated statement differs from the template's ({diff[:600]})")
        return Layer("elaborated_statement", True, "", {"compared": names})

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        if shutil.which(self.coqchk) is None:
            return Layer("independent_check", None, f"not judged: {self.coqchk} is not installed")
        argv = [self.coqchk, "-silent", "-o", "-bytecode-compiler", "yes", "-Q", "cand", CAND,
                "-norec", f"{CAND}.{task.task_id}"]
        result = self._run(argv, workspace, timeout)
        output = (result.stdout + result.stderr).strip()
        evidence = {"checker": "coqchk", "argv": argv, "output": output[-4000:], "returncode": result.returncode}
        if result.timed_out:
            return Layer("independent_check", False, f"coqchk timed out after {timeout:.0f} s", evidence, infra=True)
        if result.returncode != 0:
            return Layer("independent_check", False, f"coqchk rejected the compiled proof: {output[-400:]}", evidence)
        axioms_section = output.split("* Axioms:", 1)[-1].split("* Constants/Inductives", 1)[0]
        own = template_variable_names(task.template)
        foreign = [a for a in axioms_section.split() if a.startswith(f"{CAND}.")
                   and a[len(CAND) + len(task.task_id) + 2:] not in own]
        if foreign:
            return Layer("independent_check", False, f"coqchk lists axioms declared by the candidate: {foreign}",
                         evidence)
        for section in ("type-in-type", "unsafe (co)fixpoints", "positivity is assumed"):
            block = output.split(section, 1)[-1].split("*", 1)[0] if section in output else ""
            if block and "<none>" not in block and CAND in block:
                return Layer("independent_check", False, f"coqchk: candidate constants {section}", evidence)
        return Layer("independent_check", True, "", evidence)

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        from ..screen import rocq_static_layers

        return rocq_static_layers(task.template, text, theorem_name=task.theorem_name)

    def candidate_with_proof(self, task: Task, proof: str) -> str:
        """The template with its hole (the final ``Admitted.``) replaced by ``proof`` (which ends in ``Qed.``)."""
        masked = coq_mask_comments(task.template)
        hole = [m for m in re.finditer(r"\bAdmitted\s*\.", masked)][-1]
        return task.template[: hole.start()] + proof + task.template[hole.end():]

    def try_tactics(self, task: Task, workspace: Path, tactics: list[str], timeout: float,
                    prelude: str = "") -> tuple[str, int, str]:
        """Try closing tactics in one ``coqtop`` that loaded the statement once (library loading dominates).

        Returns (winning tactic or "", attempts made, log). A crash (stack overflow) restarts coqtop and
        moves on: it is a failed attempt, not an infrastructure error.
        """
        from .coqtop import TacticProbe

        return TacticProbe(self.coqtop, self.mem_mb).run(prelude + task.frozen, tactics, workspace, timeout,
                                                         theorem=task.theorem_name)


@pytest.hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> RocqProver | None:
    return RocqProver(options) if name in ("rocq", "coq") else None
