"""Rocq (Coq) backend: real ``coqc``/``coqchk``/``coqtop`` from the system installation.

The verifier hands every method a private build directory; the agent's workspace is never compiled in
place. Template and candidate are both compiled as the library ``ForallProblem.<module>`` (so their kernel
names coincide), each in a fresh directory of its own that holds nothing else; the kernel judge
(:mod:`pytest_forall.lang.rocq.judge`) and coqchk then each load one copied ``.vo`` in another fresh
directory. The build directory keeps ``cand/<module>.v`` (the bytes compiled) and ``cand/<module>.vo``;
the compiled template and its judge record live in the template cache, validated on every read.

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
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_forall.core.binds import option_binds
from pytest_forall.core.cache import cache_root
from pytest_forall.core.model import MAX_CANDIDATE_BYTES, Layer, Task, sha256_bytes
from pytest_forall.core.proc import CPU_WALL_FACTOR, ProcResult, run_command
from pytest_forall.core.prover import AxiomAudit, CompileResult, ProofTools, ToolchainProbeFailed
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.rocq.advisories import (
    DETECTED,
    DETECTED_CONSTRUCT,
    NEEDS_CHECKER,
    in_force,
    version_of,
)
from pytest_forall.lang.rocq.judge import (
    JUDGE_COULD_NOT_RUN,
    PLUGIN_BUILD_TIMED_OUT,
    PLUGIN_INSIDE,
    PROBLEM_ROOT,
    Judgement,
    cached_entry,
    judge,
    killed_from_outside,
    plugin_digest,
    plugin_dir,
    reparse,
    run_dump,
    uncovered_findings,
)
from pytest_forall.lang.rocq.lexer import mask
from pytest_forall.lang.rocq.problem import ALIASES, NAME, outside_sections
from pytest_forall.lang.rocq.toolchain import (
    PROBE_CPU_SECONDS,
    PROBE_TIMED_OUT,
    Toolchain,
    VersionInfo,
    coqc_answer,
    coqc_where,
    label,
    no_answer,
    probe,
    resolve,
    root_prefix,
    run_in,
    shell_tools,
    version_info,
)

if TYPE_CHECKING:
    from pytest_forall.lang.rocq.coqtop import TacticProbe
    from pytest_forall.lang.rocq.interactive import RocqProofSession

#: What each accepted candidate is guaranteed (the audit record lists the clauses its layers established).
STATEMENT_CLAUSE = ("kernel statement: the theorem's type and every problem-file constant and inductive it depends "
                    "on are the template's, as kernel terms; template parameters are still axioms of the same type")
AXIOM_CLAUSE = ("assumptions: classified from the kernel's own list, fully qualified: template parameters and "
                "permitted axioms only, no disabled kernel check")
CHECKER_CLAUSE = "independent check: coqchk re-checked the compiled library"
ADVISORY_CLAUSE = ("kernel advisories: none of the constructs the known soundness bugs of this kernel need (a "
                   "fixpoint or cofixpoint outside the judge's conservative criteria, an inductive with let-ins in "
                   "its constructors, a cumulative or universe-polymorphic declaration) in the candidate's constants")

#: The strict allow-list (docs/verifier.md): the axioms with which the standard library and mathcomp state
#: excluded middle, propositional and functional extensionality, proof irrelevance (and its equivalents
#: ``eq_rect_eq``/``JMeq_eq``), description/choice as ``IndefiniteDescription``/``ClassicalEpsilon``/
#: ``ClassicalUniqueChoice``/``ClassicalChoice`` state it, and the two axioms the classical reals rest on.
#: The list is closed: an axiom off it is ``rules_only`` even when it follows from the listed ones
#: (``Coq.Logic.Epsilon.epsilon_statement``, ``Coq.Sets.Ensembles.Extensionality_Ensembles``, mathcomp's
#: ``algC``/``finmap`` parameters, the primitive-float axioms …).
STRICT_AXIOMS = version_info((8, 16)).strict_axioms  # per version: toolchain.VersionInfo.strict_axioms
#: Logical roots of the libraries installed system-wide; axioms from them are within the benchmark's rule.
INSTALLED_ROOTS = version_info((8, 16)).installed_roots

_LOCATION = re.compile(r'^File "(?P<file>[^"]*)", line (?P<line>\d+), characters (?P<c0>\d+)-(?P<c1>\d+):$')
_DECL_NAMES = re.compile(
    r"(?:^|\.\s)\s*(?:#\[[^\]]*\]\s*)?(?:(?:Local|Global|Polymorphic|Monomorphic)\s+)*"
    r"(?:Definition|Fixpoint|CoFixpoint|Let|Example|Inductive|CoInductive|Variant|Record|Structure|Class|"
    r"Theorem|Lemma|Fact|Remark|Corollary|Proposition|Property)\s+([^\W\d][\w']*)")
_TEMPLATE_VARIABLES = re.compile(r"(?:^|\.\s)\s*(?:Variables?|Context|Hypothesis|Hypotheses|Parameters?)\s+([^.]*)\.")
_IDENT = re.compile(r"[^\W\d][\w']*")
#: One sentence as ``coqc -time`` reports it: its byte range in the file and Coq's rendering of what it parsed.
_TIME_LINE = re.compile(r"^Chars (?P<a>\d+) - (?P<b>\d+) \[(?P<text>.*)\] [\d.]+ secs \(.*\)\n?", re.MULTILINE)

#: One declaration in coqc's globalisation file (``.glob``): ``kind start:end <section path> name``, byte offsets.
_GLOB_DECLARATION = re.compile(r"^(?P<kind>[a-z]+) (?P<a>\d+):(?P<b>\d+) \S+ (?P<name>\S+)$", re.MULTILINE)

Runner = Callable[..., ProcResult]


def parse_time_report(stdout: str) -> list[tuple[int, int, str]]:
    """``coqc -time``'s sentence lines: (start byte, end byte, Coq's rendering of the parsed command)."""
    return [(int(m["a"]), int(m["b"]), m["text"]) for m in _TIME_LINE.finditer(stdout)]


def parse_glob(data: bytes) -> list[tuple[int, int, str, str]]:
    """The declarations coqc dumped into its ``.glob`` file: (start byte, end byte, kind, name). The positions are
    the parser's, like ``-time``'s, so they do not depend on how Coq prints anything. References (``R…``) and
    anything unreadable are left out: a missing entry can only make :func:`sentence_structure` reject."""
    text = data.decode("utf-8", "replace")
    return [(int(m["a"]), int(m["b"]), m["kind"], m["name"]) for m in _GLOB_DECLARATION.finditer(text)]


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


def template_variable_names(template: str) -> set[str]:
    """Names declared by the template's own top-level ``Variable``/``Context``: parameters of the statement.

    Read from the template (harness input, not the candidate's); binders in parentheses and bare ones such as
    ``Context d (T : …)``. The judge allows one of these as an assumption only when the compiled template has
    it as an axiom of the very type the candidate's has.
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


def coqchk_layer(argv: list[str], result: ProcResult, budget: float, *, killed: dict[str, Any] | None = None,
                 infra_accident: str = "",
                 summary: Callable[[dict[str, list[str]], dict[str, Any]], Layer | None] | None = None) -> Layer:
    """The ``independent_check`` layer of a ``coqchk -norec`` run (the benchmark's and a project's, one reading):
    killed past its CPU budget (the candidate's cost), "not judged" (``killed``: more evidence); ended by its
    wall-clock backstop with that budget unspent (:attr:`ProcResult.starved`: the machine), infra; not started, infra;
    any other failure or no context summary, a rejection; else ``summary`` (what the caller reads in the summary's
    sections, adding to the evidence) or a pass. ``infra_accident``: what was checked, when a killed check of it (the run ending, the
    machine) is infra, never a rejection (a project's own build; a candidate must not choose its layer)."""
    output = (result.stdout + result.stderr).strip()
    evidence: dict[str, Any] = {"checker": "coqchk", "argv": argv, "output": output[-4000:],
                                "returncode": result.returncode, "duration_s": round(result.duration, 3)}
    if result.starved:  # the machine's load or a stopped coqchk, not the candidate's terms: infra, not "not judged"
        return Layer("independent_check", False, f"coqchk was {result.starved}: not judged",
                     {**evidence, "budget_s": budget, "accident": result.accident}, infra=True)
    if result.timed_out:  # its CPU budget spent (or a plain wall limit): the candidate's cost, "not judged"
        spent = " CPU" if result.extra.get("cpu_spent") else ""
        return Layer("independent_check", None, f"not judged: coqchk did not finish within its {budget:g} s{spent} "
                     "budget and was killed", {**evidence, "budget_s": budget, **(killed or {})})
    if infra_accident and result.accident:
        return Layer("independent_check", False, f"{infra_accident} was {result.accident}",
                     {**evidence, "accident": result.accident}, infra=True)
    own_limit = result.extra.get("oom") or result.extra.get("rss_exceeded")  # its own memory limit: its own cost
    if killed_from_outside(result) and not own_limit:  # SIGKILL/SIGTERM from the machine (its OOM killer, the run's end)
        return Layer("independent_check", False, f"coqchk was {killed_from_outside(result)}: not judged",
                     {**evidence, "accident": result.accident}, infra=True)
    if result.returncode == 127:
        return Layer("independent_check", False, f"coqchk could not be started: {output[-300:]}", evidence,
                     infra=True)
    if result.returncode != 0:  # a crash (SIGSEGV, an anomaly), its memory limit: the candidate's terms may cause them;
        # fails closed, and a death by a signal is not kept (the verdict cache)
        return Layer("independent_check", False, f"coqchk rejected the compiled proof: {output[-400:]}",
                     {**evidence, **({"accident": result.accident} if result.accident else {})})
    sections = parse_coqchk_summary(output)
    if sections is None:
        return Layer("independent_check", False, "coqchk printed no context summary", evidence)
    found = summary(sections, evidence) if summary is not None else None
    return found or Layer("independent_check", True, "", {**evidence, "guarantee": CHECKER_CLAUSE})


def host_tool(name: str) -> str:
    """The absolute host path of a tool (a name looked up on PATH now, or a path), else ``name`` unchanged.

    The sandbox runs exactly this path (bound when it is outside /usr), so the binary that runs is the one
    :func:`toolchain_fingerprint` describes; a bare name would be looked up again inside, where an opam switch
    on the host PATH does not exist and another ``coqc`` (or none) would be found."""
    found = shutil.which(os.path.expanduser(name))
    return os.path.abspath(found) if found else name


@functools.cache
def coq_library_dirs(coqc: str, root: str = "") -> tuple[Path, ...]:
    """``coqc -where`` (the standard library and every installed library) and its sibling ``coq-core`` (the
    plugins), the directories a compile reads: fingerprinted, and bound into the sandbox when outside /usr.
    With a ``root`` filesystem: those directories inside it, as host paths.
    With no answer (timed out, killed, failed) it raises :class:`ToolchainProbeFailed`, never an empty tuple (a
    sandbox without the libraries, a fingerprint of none); not cached, so the next call asks again."""
    if root:
        ran = run_in(Toolchain(root, root=root), [os.path.basename(coqc), "-where"], Path(tempfile.gettempdir()),
                     timeout=PROBE_CPU_SECONDS * CPU_WALL_FACTOR, cpu_s=PROBE_CPU_SECONDS)
        where = ran.stdout.strip()
        if ran.returncode != 0 or not where:
            why = no_answer(ran) if ran.timed_out else f"exit {ran.returncode}"
            raise ToolchainProbeFailed(f"`{coqc} -where` in {root} gave no answer ({why}): "
                                       f"{(ran.stdout + ran.stderr).strip()[-300:]}")
        return (Path(root + where), Path(root + where).parent / "coq-core", Path(root + where).parent / "rocq-runtime")
    where = coqc_where(coqc)
    return (Path(where), Path(where).parent / "coq-core")


@functools.cache
def toolchain_fingerprint(coqc: str, coqchk: str, root: str = "") -> dict[str, str]:
    """``{"version", "libraries"}`` of a Rocq installation, once per process.

    ``version``: ``coqc --version`` and the size and mtime of the ``coqc`` and ``coqchk`` executables.
    ``libraries``: a digest of the relative path, size and mtime of every compiled library file under
    ``coqc -where`` (the whole load path: the environment is cleaned of COQPATH) and its ``coq-core`` plugins.
    A package upgrade rewrites the files it ships, so it changes the digest; reading every file's bytes
    (230 MB here) would cost seconds per process for the same answer.
    """
    if root:
        line = probe(Toolchain(root, root=root))[0] + f" root:{root}"
    else:
        line = " ".join(coqc_answer(coqc, "--version").split())  # never a fingerprint (a cache key) without it
    tools = []
    for tool in (coqc, coqchk):
        path = (root + tool if os.path.isfile(root + tool) else None) if root else shutil.which(tool)
        stat = os.stat(path) if path else None
        tools.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}" if stat else f"{tool}:missing")
    digest = hashlib.sha256()
    for base in coq_library_dirs(coqc, root):
        for directory, dirs, files in os.walk(base, followlinks=True):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(_LIBRARY_SUFFIXES):
                    found = Path(directory) / name
                    info = found.stat()
                    digest.update(f"{found.relative_to(base.parent)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return {"version": f"{line} ({' '.join(tools)})", "libraries": digest.hexdigest()}



def read_compile(coqc: str, result: ProcResult, source: Path, timeout: float, report_sentences: bool) -> CompileResult:
    """What one ``coqc`` run on ``source`` established: ok only with exit 0, no timeout and a fresh ``.vo``; the
    digest is of the source read back *after* coqc finished; with ``report_sentences`` (``-time``), the executed
    sentences and the ``.glob``'s declarations (the sentence-structure layer reads both). The one reading of a
    compile, for PutnamBench candidates and project files alike."""
    sentences = parse_time_report(result.stdout)
    stdout = _TIME_LINE.sub("", result.stdout) if report_sentences else result.stdout
    output = (stdout + result.stderr).strip()
    messages = parse_coq_messages(output)
    vo = source.with_suffix(".vo")
    if result.returncode == 127 and not vo.exists():
        return CompileResult(ok=False, infra=f"{coqc} could not be started: {result.stderr.strip()}", output=output)
    if result.starved:  # the machine's load or a stopped coqc, not the proof: no verdict on it (infra, resumable)
        return CompileResult(ok=False, infra=f"coqc was {result.starved}", duration=result.duration, timed_out=True,
                             accident=result.accident, output=output)
    ok = result.returncode == 0 and not result.timed_out and vo.is_file()
    if result.timed_out:
        spent = " of CPU" if result.extra.get("cpu_spent") else ""
        messages.insert(0, {"severity": "error", "line": None, "data": f"timed out after {timeout:.0f} s{spent}"})
    elif not ok and not any(m["severity"] == "error" for m in messages):
        why = f"coqc exited with {result.returncode}" if result.returncode else "coqc left no .vo"
        messages.insert(0, {"severity": "error", "line": None, "data": f"{why}: {output[-500:]}"})
    try:
        digest = sha256_bytes(source.read_bytes())
        glob = source.with_suffix(".glob")
        declarations = parse_glob(glob.read_bytes()) if report_sentences and glob.is_file() else []
    except OSError as exc:
        return CompileResult(ok=False, output=output, messages=[
            {"severity": "error", "line": None, "data": f"the compiled source vanished: {exc}"}])
    return CompileResult(ok=ok, digest=digest, duration=result.duration, timed_out=result.timed_out,
                         accident="" if ok else result.accident, messages=messages, output=output,
                         sentences=sentences, declarations=declarations)

class RocqProver:
    """The Rocq backend; ``runner`` is swapped for the sandbox's runner when sandboxing is on.

    With the option ``sandbox="bwrap"`` (what ``forall verify`` passes by default) the backend sandboxes every
    coqc/coqchk itself; the protocol does the same for pytest items under ``--forall-sandbox=bwrap``.
    """

    name = "rocq"
    ext = "v"
    #: compile, template check, judge and coqchk each work in their own fresh directory (see the methods)
    concurrent_layers = True
    #: what an accepted statement is guaranteed, and which judge says so (the statement layer's evidence)
    statement_clause = STATEMENT_CLAUSE
    judge_label = "forall-judge plugin"
    #: guards every backend's kept compiles (:meth:`compile`): the tools' server thread and the verifier's compile
    #: thread ask at once; one per class, so a prover's copy (``fresh``) has the same settings as a new one
    _compiled_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, options: dict[str, Any] | None = None, runner: Runner = run_command) -> None:
        opts = options or {}
        spec = str(opts.get("rocq_toolchain") or opts.get("toolchain") or "")
        found = resolve(spec)
        #: ``--forall-rocq-toolchain`` (docs/toolchains.md): what every prover process runs from
        self.toolchain = found if isinstance(found, Toolchain) else Toolchain(spec)
        self.toolchain_problem = found if isinstance(found, str) else ""
        line, info = probe(self.toolchain) if not self.toolchain_problem else ("", None)
        #: a question to the toolchain got no answer here (the machine's: a stalled probe, a plugin build that timed
        #: out): this backend's verdicts are infra, and it is never kept for another item (``project_rocq_prover``)
        self.unanswered = line.startswith(PROBE_TIMED_OUT)
        if not self.toolchain_problem and info is None and (self.toolchain.spec or line.startswith(PROBE_TIMED_OUT)):
            # a probe with no answer in time is infra, never a toolchain read as Coq 8.16 for the whole run
            which = f"the toolchain {self.toolchain.spec!r}" if self.toolchain.spec else "the coqc on PATH"
            self.toolchain_problem = f"{which} does not run coqc --version: {line}"
        #: the version knowledge of this toolchain (flags, stdlib prefix, axiom names, plugin shim)
        self.info: VersionInfo = info or version_info((8, 16))
        #: OCaml 5 reserves address space for the minor heaps of every possible domain (128) at start: under the
        #: address-space limit its coqc dies ("Not enough heap memory to reserve minor heaps", a verdict-looking
        #: failure). Coq runs one domain; allowing 8 keeps the limit and the reservation small.
        self.ocaml_env = {"OCAMLRUNPARAM": "d=8"} if re.search(r"OCaml [5-9]", line) else {}
        root = self.toolchain.root
        self.coqc = self._tool(opts, "coqc")
        self.coqchk = self._tool(opts, "coqchk")
        self.coqtop = self._tool(opts, "coqtop")
        self.mem_mb = int(opts.get("prover_mem_mb") or 8192)
        #: coqchk's own budget; past it the independent check is "not judged", never a verdict
        self.checker_timeout = float(opts.get("checker_timeout") or 0) or None
        # absolute: unsandboxed, the judge's coqc finds the plugin through OCAMLPATH from its own scratch directory
        cache = cache_root(opts).expanduser().absolute()
        self.cache_dir = cache / "rocq-templates"
        self.runner = runner
        #: set by the protocol under ``--forall-sandbox=bwrap``: interactive sessions run in the sandbox too
        self.sandboxed = False
        self._version: str | None = None
        #: ``-Q``/``-R`` arguments every coqc, coqchk and coqtop call gets (a project's load path)
        self.load: list[str] = []
        self._judged: dict[tuple[str, str], tuple[Judgement | None, str, bool]] = {}
        #: this backend's last clean candidate compiles (:meth:`compile`), by what decides them: an actor's
        #: ``compile`` tool and its ``submit`` of the same bytes cost one coqc, not two
        self._compiled: dict[tuple[Any, ...], tuple[CompileResult, bytes]] = {}
        #: Host files a sandboxed coqc needs besides /usr: findlib's config (else coqc dies with an Anomaly), the
        #: tools' installation outside /usr (an opam switch: binaries and ``coqc -where``), the judge plugin and
        #: the user's ``--forall-sandbox-ro`` binds, read-only.
        #: A root filesystem toolchain is one bind at "/" (the sandbox puts its /usr and /etc in place of the host's).
        self.sandbox_binds: tuple[tuple[Path, str], ...] = (((Path(root), "/"),) if root else
                                                            ((Path("/etc/ocamlfind.conf"), "/etc/ocamlfind.conf"),))
        self.plugin: Path | None = None
        self.plugin_problem = "coqc is not installed"
        # ``check_only``: collection asks only whether this backend exists (``--co`` and a run selecting nothing
        # build no judge plugin); such an instance never judges
        if self._has(self.coqc) and not self.toolchain_problem and not opts.get("check_only"):
            from pytest_forall.isolation.sandbox import host_binds

            tools = [tool for tool in (self.coqc, self.coqchk, self.coqtop) if os.path.isabs(tool)]
            try:
                if not root:
                    self.sandbox_binds += tuple((p, str(p)) for p in host_binds(tools, coq_library_dirs(self.coqc)))
                self.plugin, self.plugin_problem = plugin_dir(cache / "rocq-judge", self.version(), self.toolchain)
                self.unanswered = self.plugin_problem.startswith(PLUGIN_BUILD_TIMED_OUT)
            except ToolchainProbeFailed as exc:  # infra at the verifier's probe, this backend's every verdict
                self.toolchain_problem, self.unanswered = str(exc), True
        if self.plugin is not None:
            self.sandbox_binds += ((self.plugin, PLUGIN_INSIDE),)
        self.sandbox_binds += option_binds(opts)
        self.sandbox_problem = ""
        from pytest_forall.isolation.sandbox import own_prover_runner

        sandboxed = own_prover_runner(opts, self.sandbox_binds)
        if isinstance(sandboxed, str):
            self.sandbox_problem = sandboxed
        elif sandboxed is not None:
            self.runner, self.sandboxed = sandboxed, True

    # -- helpers ---------------------------------------------------------------------------------

    def _tool(self, opts: dict[str, Any], name: str) -> str:
        """Where ``name`` runs from: the root filesystem's ``/usr/bin`` (a path inside it), the toolchain's
        ``bin/``, or the option's/PATH's (resolved on the host now, see :func:`host_tool`)."""
        if opts.get(name):
            return host_tool(str(opts[name]))
        return self.toolchain.tool(name) if self.toolchain.root else host_tool(self.toolchain.tool(name))

    def _has(self, tool: str) -> bool:
        return os.path.isfile(self.toolchain.root + tool) if self.toolchain.root else shutil.which(tool) is not None

    def _run(self, argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None,
             cpu_budget: bool = False) -> ProcResult:
        """``argv`` through the runner; with ``cpu_budget``, ``timeout`` is CPU seconds of its process tree and the
        wall clock only a backstop :data:`~pytest_forall.core.proc.CPU_WALL_FACTOR` times longer (a compile starved by
        the machine's load is then told apart from one that spent its budget: ``ProcResult.starved``)."""
        if self.load and argv and argv[0] in (self.coqc, self.coqchk):
            argv = [argv[0], *self.load, *argv[1:]]
        environment = {**clean_env(), **self.ocaml_env, **(env or {})}
        if self.toolchain.root:
            environment["PATH"] = "/usr/bin:/bin"
            if not self.sandboxed:  # --forall-sandbox=none: the root's tools still need the root's /usr
                binds = [(p, str(p) if inside == PLUGIN_INSIDE else inside) for p, inside in self.sandbox_binds
                         if inside != "/" and p.exists()]
                argv = [*root_prefix(self.toolchain.root, Path(cwd).absolute(), binds), "--", *argv]
        if cpu_budget:
            return self.runner(argv, cwd=cwd, timeout=timeout * CPU_WALL_FACTOR, cpu_s=timeout, mem_mb=self.mem_mb,
                               env=environment)
        return self.runner(argv, cwd=cwd, timeout=timeout, mem_mb=self.mem_mb, env=environment)

    def toolchain_label(self) -> str:
        """The toolchain every verdict of this backend names (``coq-8.20.1 (root:/var/cache/…)``)."""
        return label(self.toolchain)

    def shell_tools(self, directory: Path) -> tuple[tuple[Path, str], ...]:
        """The toolchain's commands for an agent's shell, written into ``directory`` (see
        :func:`~pytest_forall.lang.rocq.toolchain.shell_tools`), and the read-only binds they need; nothing for the
        installation on PATH (the shell finds that one itself)."""
        if self.toolchain_problem or not (self.toolchain.root or self.toolchain.bin):
            return ()
        root = self.toolchain.root
        coqlib = coq_library_dirs(self.coqc, root)[0] if root and coq_library_dirs(self.coqc, root) else None
        shell_tools(self.toolchain, coqlib, self.ocaml_env, directory)
        return ((directory, str(directory)), *(((Path(root), root),) if root else ()))

    def probe(self, workspace: Path) -> str:
        if self.toolchain_problem:
            return f"--forall-rocq-toolchain: {self.toolchain_problem}"
        missing = [tool for tool in (self.coqc, self.coqchk) if not self._has(tool)]
        if missing:
            return (f"{', '.join(missing)} not found on PATH; install Rocq: apt-get install -y coq libcoq-stdlib "
                    "libcoq-mathcomp libcoq-coquelicot libcoq-mathcomp-analysis")
        if self.sandbox_problem:
            return self.sandbox_problem
        if self.plugin is None:
            return f"the kernel judge is unavailable: {self.plugin_problem}"
        return ""

    def version(self) -> str:
        """The compiler's version and the installed libraries' fingerprint (the template cache key).

        Installing or upgrading a library (e.g. mathcomp's real-closed, which some templates need)
        changes the library files, so a template cached as "does not compile here" is retried.
        """
        found = toolchain_fingerprint(self.coqc, self.coqchk, self.toolchain.root)
        return f"{found['version']} [{found['libraries'][:16]}]"

    def fingerprint(self, task: Task) -> dict[str, str]:
        """The environment a verdict depends on (the verdict cache's key): see :func:`toolchain_fingerprint`; plus
        the judge plugin's build (its directory is named by the digest of its source and the Coq version)."""
        found = toolchain_fingerprint(self.coqc, self.coqchk, self.toolchain.root)
        judge_build = self.plugin.name if self.plugin is not None else "unavailable"
        return {**found, "version": f"{found['version']} judge:{judge_build}", "toolchain": self.toolchain_label()}

    def _compile_source(self, data: bytes, module: str, parent: Path, timeout: float,
                        report_sentences: bool) -> tuple[CompileResult, bytes | None]:
        """``coqc`` on a copy of ``data`` as ``ForallProblem.<module>`` in a fresh directory under ``parent``.

        The directory holds nothing else, so the compile (the only writer, sandboxed) cannot touch any other
        file of the verification. ok only with exit 0, no timeout and a fresh ``.vo`` (returned as bytes); the
        digest is of the source read back *after* coqc finished. With ``report_sentences`` coqc runs with
        ``-time`` and the executed sentences' byte ranges are returned in ``sentences``.
        """
        run = Path(tempfile.mkdtemp(prefix="coqc-", dir=parent))
        try:
            source = run / "p" / f"{module}.v"
            source.parent.mkdir()
            source.write_bytes(data)
            argv = [self.coqc, "-q", *self.info.compile_flags, *(["-time"] if report_sentences else []), "-Q", "p",
                    PROBLEM_ROOT, f"p/{module}.v"]
            result = self._run(argv, run, timeout, cpu_budget=True)
            compiled_result = read_compile(self.coqc, result, source, timeout, report_sentences)
            if not compiled_result.ok:
                return compiled_result, None
            try:
                compiled = source.with_suffix(".vo").read_bytes()
            except OSError as exc:
                return CompileResult(ok=False, output=compiled_result.output, messages=[
                    {"severity": "error", "line": None, "data": f"the compiled file vanished: {exc}"}]), None
            return compiled_result, compiled
        finally:
            shutil.rmtree(run, ignore_errors=True)

    def _judge_run(self, timeout: float) -> Callable[[list[str], Path], ProcResult]:
        """How the judge's audit runs coqc: the plugin on findlib's path (inside the sandbox, its read-only bind);
        ``timeout`` is CPU seconds, the wall clock a backstop (a starved judge is named so: :func:`timed_out_problem`)."""
        path = PLUGIN_INSIDE if self.sandboxed else str(self.plugin)
        return lambda args, cwd: self._run([self.coqc, *args], cwd, timeout, env={"OCAMLPATH": path}, cpu_budget=True)

    def _roots(self, task: Task) -> list[str]:
        """Every name the template declares (definitions, theorems, parameters): the judge's starting points."""
        names = dict.fromkeys(_DECL_NAMES.findall(outside_sections(task.frozen)))
        names.update(dict.fromkeys(sorted(template_variable_names(task.template))))
        return [n for n in names if n != task.theorem_name]

    def _template_key(self, task: Task) -> str:
        """The template cache's key: everything the compiled template and its judge dump depend on — the toolchain
        and its libraries (:meth:`version`: ``coqc --version``, the root, the tools' and library files' stamps),
        the compile flags and load path, the judge plugin's bytes (:func:`plugin_digest`, not its path: a copied or
        another cache's entry is found again), the library name, the template's text, the theorem and the roots."""
        plugin = plugin_digest(self.plugin) if self.plugin is not None else "unavailable"
        fields = [self.version(), json.dumps(self.info.compile_flags), json.dumps(self.load), plugin,
                  coq_module_name(task.task_id), task.template, task.theorem_name, *self._roots(task)]
        return hashlib.sha256("\0".join(fields).encode()).hexdigest()[:32]

    def _template_entry(self, task: Task, timeout: float) -> tuple[Path, dict[str, Any], str]:
        """The validated cache entry of the compiled template and its judge dump (built by the harness here)."""
        module = coq_module_name(task.task_id)
        roots = self._roots(task)
        key = self._template_key(task)

        def build(scratch: Path) -> list[str] | str:
            result, vo = self._compile_source(task.template.encode(), module, scratch, timeout, False)
            if result.timed_out or result.infra:  # not a verdict on the template: do not cache it
                return result.infra or f"template compile timed out after {timeout:.0f} s"
            record: dict[str, Any] = {"ok": result.ok, "output": result.output, "messages": result.messages}
            (scratch / "result.json").write_text(json.dumps(record), encoding="utf-8")
            if vo is None:
                return ["result.json"]
            (scratch / "template.vo").write_bytes(vo)
            _, stored, problem = run_dump(self._judge_run(timeout), scratch, scratch / "template.vo", module, roots,
                                          task.theorem_name)
            if problem:
                return f"the judge could not read the compiled template: {problem}"
            (scratch / "dump.txt").write_text(stored, encoding="utf-8")
            return ["result.json", "template.vo", "dump.txt"]

        try:
            entry, problem = cached_entry(self.cache_dir, key, build)
            data = {} if problem else json.loads((entry / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return self.cache_dir / key, {}, f"template cache unusable: {exc}"
        return entry, data, problem

    # -- Prover protocol ---------------------------------------------------------------------------

    def check_template(self, task: Task, workspace: Path, timeout: float) -> CompileResult:
        """Compile the unmodified template once per (template, coqc, judge) and keep its .vo and judge dump."""
        if self.plugin is None:
            return CompileResult(ok=False, infra=f"the kernel judge is unavailable: {self.plugin_problem}")
        _, data, problem = self._template_entry(task, timeout)
        if problem:
            return CompileResult(ok=False, infra=problem)
        if not data["ok"]:
            first = next((m["data"] for m in data["messages"] if m["severity"] == "error"), data["output"][-300:])
            return CompileResult(ok=False, infra=f"template does not compile here: {first.strip()[:300]}",
                                 output=data["output"], messages=data["messages"])
        return CompileResult(ok=True, output=data["output"], messages=data["messages"])

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
        """Compile a copy of ``candidate`` in its own directory; keep the source and the .vo under ``cand/``."""
        module = coq_module_name(task.task_id)
        target = workspace / "cand" / f"{module}.v"
        data = candidate.read_bytes()
        if len(data) > MAX_CANDIDATE_BYTES:
            return CompileResult(ok=False, digest=sha256_bytes(data), messages=[{
                "severity": "error", "line": None,
                "data": f"the candidate has {len(data)} bytes; the limit is {MAX_CANDIDATE_BYTES}"}])
        target.parent.mkdir(parents=True, exist_ok=True)
        if candidate.resolve() != target.resolve():
            target.write_bytes(data)
        vo_path = target.with_suffix(".vo")
        vo_path.unlink(missing_ok=True)
        result, vo = self._compiled_before(data, module, timeout)
        if vo is None:
            result, vo = self._compile_source(data, module, workspace, timeout, True)
            self._remember_compile(data, module, result, vo)
        if vo is not None:
            vo_path.write_bytes(vo)
            result.artifact = str(vo_path)
        return result

    #: how many clean compiles :meth:`compile` keeps (an item's actor works on one candidate at a time)
    KEPT_COMPILES = 4

    def _compile_key(self, data: bytes, module: str) -> tuple[Any, ...]:
        """Everything a compile's outcome depends on besides the toolchain this backend was made for: the bytes, the
        library name, the load path and flags, and the runner (the sandbox the protocol may swap in)."""
        return (sha256_bytes(data), module, tuple(self.load), tuple(self.info.compile_flags), id(self.runner))

    def _compiled_before(self, data: bytes, module: str, timeout: float) -> tuple[CompileResult, bytes | None]:
        """A clean compile of these very bytes this backend made (the actor's ``compile`` tool, then the verifier
        on ``submit``), as a fresh copy, with the .vo coqc wrote then; (_, None) when there is none that finished
        within ``timeout``. coqc on the same bytes, toolchain, flags and load path writes the same library, so the
        verifier's layers judge what a compile now would give them; the judge and coqchk still run on it."""
        with self._compiled_lock:
            found = self._compiled.get(self._compile_key(data, module))
        if found is None or found[0].duration > timeout:
            return CompileResult(ok=False), None
        result, vo = found
        return replace(result, messages=[dict(m) for m in result.messages], sentences=list(result.sentences),
                       declarations=list(result.declarations)), vo

    def _remember_compile(self, data: bytes, module: str, result: CompileResult, vo: bytes | None) -> None:
        """Keep a compile that established its library: ok, within its time, no accident of the machine (a timed
        out, killed or failed compile is never reused: the next asks coqc again)."""
        if vo is None or not result.ok or result.timed_out or result.accident or result.infra:
            return
        with self._compiled_lock:
            self._compiled[self._compile_key(data, module)] = (replace(result), vo)
            while len(self._compiled) > self.KEPT_COMPILES:
                del self._compiled[next(iter(self._compiled))]

    def sentence_check(self, task: Task, data: bytes, compiled: CompileResult) -> Layer:
        """The sentences coqc executed (``-time``'s byte ranges) must be the screen's own, each judged as Coq
        parsed it; see :func:`pytest_forall.lang.rocq.sentences.sentence_structure`."""
        from pytest_forall.lang.rocq.sentences import sentence_structure

        return sentence_structure(data, compiled.sentences, compiled.declarations)

    def _judge(self, task: Task, workspace: Path, timeout: float) -> tuple[Judgement | None, str, bool]:
        """The judge's verdict on ``cand/<module>.vo`` (once per compiled candidate): judgement, problem, infra."""
        module = coq_module_name(task.task_id)
        vo = workspace / "cand" / f"{module}.vo"
        if not vo.is_file():
            return None, "the candidate has no compiled .vo", False
        key = (sha256_bytes(vo.read_bytes()), task.task_id)
        if key in self._judged:
            return self._judged[key]
        entry, data, problem = self._template_entry(task, timeout)
        if not problem and not data.get("ok"):
            problem = "the template does not compile here"
        template = reparse((entry / "dump.txt").read_text(encoding="utf-8")) if not problem else problem
        if isinstance(template, str):
            return None, f"the template's judge record is unusable: {template}", True
        cand, _, problem = run_dump(self._judge_run(timeout), workspace, vo, module, self._roots(task),
                                    task.theorem_name)
        if cand is None:  # the candidate's .vo cannot be judged: infra only where the harness failed, not the proof
            return None, problem, problem == "timed out" or problem.startswith(JUDGE_COULD_NOT_RUN)
        parameters = template_variable_names(task.template) - {task.theorem_name}
        self._judged[key] = (judge(template, cand, parameters, module, self.info.strict_axioms,
                                   self.info.installed_roots), "", False)
        return self._judged[key]

    def statement_check(self, task: Task, workspace: Path, timeout: float) -> Layer:
        """Clause 1 of the guarantee: the theorem's type and the statement's closure in the problem file are the
        template's, as kernel terms; a template parameter is still an axiom of the same type."""
        judgement, problem, infra = self._judge(task, workspace, timeout)
        if judgement is None:
            return Layer("elaborated_statement", False, f"the kernel judge failed: {problem}", infra=infra)
        if judgement.statement:
            return Layer("elaborated_statement", False, judgement.statement)
        return Layer("elaborated_statement", True, "", {"guarantee": self.statement_clause, "judge": self.judge_label,
                                                        "compared": judgement.compared})

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        """Clause 2: the theorem's assumptions, from the kernel (``Assumptions.assumptions`` in the judge's own
        process, fully qualified kernel names). Strict: template parameters and :data:`STRICT_AXIOMS`. Rules: an
        axiom of an installed library (:data:`INSTALLED_ROOTS`). Anything else, or a disabled kernel check, fails."""
        judgement, problem, infra = self._judge(task, workspace, timeout)
        if judgement is None:
            return AxiomAudit(ok=False, reason=f"axiom audit failed to run: {problem}", infra=problem if infra else "")
        return AxiomAudit(ok=True, axioms=judgement.axioms, strict_ok=judgement.strict, rules_ok=judgement.rules,
                          reason=judgement.assumptions, output="\n".join(judgement.axioms), guarantee=AXIOM_CLAUSE,
                          project_axioms=judgement.project_axioms)

    def kernel(self) -> dict[str, Any]:
        """The kernel's exact version (``coqc --version``), the advisories in force for it
        (:mod:`pytest_forall.lang.rocq.advisories`; an unreadable version puts every advisory in force) and how each
        is kept out of an accepted proof (``coverage``: advisory id -> "detector|refused|impossible (<feature>): <layer>")."""
        banner = toolchain_fingerprint(self.coqc, self.coqchk, self.toolchain.root)["version"]
        version = version_of(banner)
        advisories = in_force(version)
        return {"prover": "Rocq" if "Rocq" in banner else "Coq", "version": version or f"unknown ({banner[:80]})",
                "advisories": [a.id for a in advisories],
                "coverage": {a.id: f"{a.coverage} ({a.feature}): {a.covered_by}" for a in advisories},
                "toolchain": self.toolchain_label()}

    def advisory_check(self, task: Task, workspace: Path, timeout: float) -> Layer:
        """Layer ``kernel_advisories``: the judge plugin's detectors on every problem-file constant the theorem
        depends on (opaque proofs and anonymous fix/cofix included; library constants are out of scope). A
        fixpoint or cofixpoint outside the plugin's conservative criteria rejects while an advisory needing that
        construct is in force, naming the advisories and the constant. A VM or native conversion makes the
        independent check required (coqchk has neither): if it does not finish, the verdict is infra."""
        judgement, problem, infra = self._judge(task, workspace, timeout)
        kernel = self.kernel()
        evidence: dict[str, Any] = {"kernel": f"{kernel['prover']} {kernel['version']}",
                                    "advisories_in_force": kernel["advisories"]}
        if judgement is None:
            return Layer("kernel_advisories", False, f"the kernel judge failed: {problem}", evidence, infra=infra)
        advisories = in_force(kernel["version"])
        evidence["findings"] = judgement.findings
        needs: list[str] = []
        refused: list[str] = []
        for finding in judgement.findings:
            feature, _, rest = finding.partition(" ")
            constant, _, why = rest.partition(" ")
            ids = [a.id for a in advisories if a.feature == feature]
            if feature in DETECTED and ids:
                refused.append(f"{', '.join(ids)} (known {feature} bugs of {evidence['kernel']}): the candidate's "
                               f"{DETECTED_CONSTRUCT[feature]} `{constant}` is outside the judge's conservative "
                               f"criterion: {why}")
            if feature in NEEDS_CHECKER:
                needs.append(f"{'VM' if feature == 'vm' else 'native'} conversion in `{constant}`"
                             + (f"; {', '.join(ids)} in force" if ids else ""))
        # project mode: the project's own VM and native conversions this proof reaches, excused as the baseline's, are
        # still checked by no kernel without a VM: the independent check is required (and covers their files)
        for finding in getattr(judgement, "project_checks", []):
            feature, _, rest = finding.partition(" ")
            needs.append(f"the project's own {'VM' if feature == 'vm' else 'native'} conversion in "
                         f"`{rest.partition(' ')[0]}`")
        if refused:
            return Layer("kernel_advisories", False, "; ".join(sorted(set(refused))), evidence)
        # project mode: the project's own non-plain modules and detector findings this proof reaches (the baseline's
        # too, so not refused): their advisories are not covered for it
        modules = getattr(judgement, "project_modules", [])
        own: dict[str, str] = {"functor": "the project's own modules outside the module walk's plain `Module M. … "
                                          f"End M.` in the files this proof reaches: "
                                          f"{uncovered_findings(tuple(modules[:8]), (), '')}"} if modules else {}
        found = getattr(judgement, "project_findings", [])
        for feature in sorted({finding.partition(" ")[0] for finding in found}):
            own[feature] = (f"the project's own terms this proof reaches outside the judge's conservative criterion: "
                            f"{[finding for finding in found if finding.partition(' ')[0] == feature][:8]}")
        not_covered = {a.id: f"NOT covered ({a.feature}): {own[a.feature]}" for a in advisories if a.feature in own}
        if not_covered:
            evidence["not_covered"] = not_covered
        if needs:
            evidence["requires_independent_check"] = "; ".join(sorted(set(needs)))
        return Layer("kernel_advisories", True, "", {**evidence, "guarantee": f"{ADVISORY_CLAUSE} "
                                                     f"({evidence['kernel']}; in force: "
                                                     f"{', '.join(kernel['advisories']) or 'none'}"
                                                     + (f"; NOT covered: {', '.join(evidence['not_covered'])}"
                                                        if evidence.get("not_covered") else "") + ")"})

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        """Clause 3: ``coqchk -norec`` on the compiled candidate with its own kernel (no bytecode VM: a
        ``vm_compute`` bug in coqc is not trusted twice). Installed libraries are trusted, not re-checked. The budget
        is CPU seconds of coqchk's process tree: past it coqchk is killed and the check is "not judged"; stopped by the
        wall-clock backstop with it unspent (a loaded machine), the check is infra (:func:`coqchk_layer`)."""
        if not self._has(self.coqchk):
            return Layer("independent_check", None, f"not judged: {self.coqchk} is not installed")
        module = coq_module_name(task.task_id)
        budget = min(timeout, self.checker_timeout or timeout)
        run = Path(tempfile.mkdtemp(prefix="coqchk-", dir=workspace))
        try:
            (run / "p").mkdir()
            shutil.copyfile(workspace / "cand" / f"{module}.vo", run / "p" / f"{module}.vo")
            argv = [self.coqchk, "-silent", "-o", "-Q", "p", PROBLEM_ROOT, "-norec", f"{PROBLEM_ROOT}.{module}"]
            result = self._run(argv, run, budget, cpu_budget=True)
        finally:
            shutil.rmtree(run, ignore_errors=True)
        own = f"{PROBLEM_ROOT}.{module}."

        def candidate_constants(sections: dict[str, list[str]], evidence: dict[str, Any]) -> Layer | None:
            evidence["summary"] = sections
            allowed = {own + n for n in template_variable_names(task.template)}
            foreign = [a for a in sections.get("Axioms", []) if a.startswith(own) and a not in allowed]
            if foreign:
                return Layer("independent_check", False, f"coqchk lists axioms declared by the candidate: {foreign}",
                             evidence)
            for title, names in sections.items():
                if title != "Axioms" and title != "Theory" and any(n.startswith(own) for n in names):
                    return Layer("independent_check", False, f"coqchk: candidate constants {title}: {names}",
                                 evidence)
            return None

        return coqchk_layer(argv, result, budget, killed={"accident": "timed out"}, summary=candidate_constants)

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        from pytest_forall.lang.screens import rocq_static_layers

        return rocq_static_layers(task.template, text, theorem_name=task.theorem_name)

    def candidate_with_proof(self, task: Task, proof: str) -> str:
        """The template with its hole (the final ``Admitted.``) replaced by ``proof`` (which ends in ``Qed.``)."""
        masked = mask(task.template)
        hole = [m for m in re.finditer(r"\bAdmitted\s*\.", masked)][-1]
        return task.template[: hole.start()] + proof + task.template[hole.end():]

    def try_tactics(self, task: Task, workspace: Path, tactics: list[str], timeout: float,
                    prelude: str = "", on_attempt: Callable[[], None] | None = None) -> tuple[str, int, str]:
        """Try closing tactics in one ``coqtop`` that loaded the statement once (library loading dominates).

        Returns (winning tactic or "", attempts made, log). A crash (stack overflow) restarts coqtop and
        moves on: it is a failed attempt, not an infrastructure error.
        """
        return self.tactic_probe(workspace).run(prelude + task.frozen, tactics, workspace, timeout,
                                                theorem=task.theorem_name, on_attempt=on_attempt)

    def proof_tools(self) -> ProofTools:
        """goals/try/query are always offered for Rocq (``coqtop`` ships with every toolchain)."""
        from pytest_forall.lang.rocq.interactive import TOOLS

        return TOOLS

    def proof_session(self, task: Task, timeout: float, excluded: tuple[str, ...]) -> RocqProofSession:
        """The actor's warm ``coqtop`` for goals/try/query (:mod:`.interactive`), in the sandbox when the item's
        prover is, working in a private directory of its own (never the workspace)."""
        from pytest_forall.lang.rocq.interactive import RocqProofSession

        directory = Path(tempfile.mkdtemp(prefix="forall-session-"))
        return RocqProofSession(task, self.tactic_probe(directory), directory, timeout, excluded)

    def tactic_probe(self, workspace: Path) -> TacticProbe:
        """An interactive ``coqtop`` driver for ``workspace``, in the sandbox when the item's prover is."""
        from pytest_forall.lang.rocq.coqtop import TacticProbe

        prefix: list[str] = []
        if self.sandboxed:
            from pytest_forall.isolation.sandbox import interactive_prefix

            prefix = interactive_prefix(workspace, [(p, inside) for p, inside in self.sandbox_binds if p.exists()])
        elif self.toolchain.root:
            prefix = [*root_prefix(self.toolchain.root, workspace.absolute(), self._probe_binds()), "--"]
        if self.ocaml_env:
            prefix += ["/usr/bin/env", *(f"{k}={v}" for k, v in self.ocaml_env.items())]
        return TacticProbe(self.coqtop, self.mem_mb, prefix or None, self._probe_load(workspace),
                           show_goals=not self.info.coqtop_prints_goals)

    def _probe_binds(self) -> list[tuple[Path, str]]:
        """What ``coqtop`` from a toolchain's root also reads, outside the sandbox (the benchmark: nothing more)."""
        return []

    def _probe_load(self, workspace: Path) -> list[str]:
        """``coqtop``'s load path and flags in ``workspace``: the version's flags, as every compile gets them (8.20
        refuses PutnamBench's top-level `Variable` without), and the backend's load path."""
        return [*self.info.compile_flags, *self.load]


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> RocqProver | None:
    return RocqProver(options) if name in (NAME, *ALIASES) else None
