"""Lean 4 backend: ``lean --json`` on a private copy of the candidate; axioms and statement from a separate file.

Every Lean/Lake/elan behaviour relied on here is cited in ``docs/lean-facts.md`` (ids in brackets). The
project's environment is probed once per process (``lake env printenv LEAN_PATH LEAN_SYSROOT`` [K2]); every
later call runs ``$LEAN_SYSROOT/bin/lean`` directly with that ``LEAN_PATH``, so a candidate costs one
``lean`` for elaboration, one for the audit file and one checker run (``docs/lean.md`` counts them).

Build directory, owned by this prover (never the agent's workspace), all names relative so the same
argv works inside the sandbox, where the directory is the only writable path::

    <scratch>/<digest16>/ForallCandidate_<digest16>.lean   the private copy
    <scratch>/<digest16>/ForallCandidate_<digest16>.olean  ``lean -o``; written only without errors
    <scratch>/<digest16>/ForallAudit_<nonce>.lean          imports it: ``#print axioms``, sentinel, term dump

The audit file reports the theorem's axioms and dumps, as kernel terms (``repr`` of ``Expr`` [R4], no
pretty printer), the theorem's type and every declaration of the candidate's own module that the type
reaches. The template is dumped the same way (cached per template, toolchain and manifest); the
``elaborated_statement`` layer accepts only identical dumps, so a slip of the static screen can never
accept a different theorem or answer. ``initialize`` code of an imported module still runs in the audit
process; the screen refuses it, and the independent checker replays the module in the kernel.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import tomllib
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_forall.core.binds import option_binds
from pytest_forall.core.cache import cache_root
from pytest_forall.core.model import Layer, Task, sha256_bytes
from pytest_forall.core.proc import CPU_WALL_FACTOR, ProcResult, run_command
from pytest_forall.core.prover import AxiomAudit, CompileResult, ProofTools
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.lean import lexer
from pytest_forall.lang.lean.messages import is_sorry_warning

if TYPE_CHECKING:
    from pytest_forall.lang.lean.interactive import LeanProofSession, Repl

REPO = Path(__file__).resolve().parents[3]
SETUP = REPO / "lean_env" / "setup"
DEFAULT_PROJECT = REPO / "lean_env" / "putnam"
#: The strict allow-list. PutnamBench's own rule is the same set (option ``lean_rules_axioms`` sets that one).
STRICT_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
MODULE_PREFIX = "ForallCandidate_"
AUDIT_SENTINEL = "forall_audit_end_"
DUMP_MARKER = "forall-statement-dump"
#: The toolchain's own checkers, looked up in ``$LEAN_SYSROOT/bin`` only: ``leanchecker`` on ``PATH`` is
#: elan's proxy for every toolchain [E1], which fails on toolchains without it [C5, E2-E4].
CHECKERS = ("leanchecker", "lean4checker")
#: The files of a compiled module: the ``.olean`` an import reads and its ``.server``/``.private`` parts [R7], and
#: the IR Lake writes beside them [K5]. A rebuild or a cache download rewrites them; sources and traces do not
#: change a verdict.
COMPILED_SUFFIXES = (".olean", ".olean.server", ".olean.private", ".ir")
#: What a checker prints when the kernel rejects [C2] (and Lean's kernel errors).
_KERNEL_VERDICT = re.compile(r"lean4checker found a problem in|\(kernel\)")

_HEARTBEATS = re.compile(
    r"\(deterministic\) timeout|maximum number of heartbeats|\(kernel\) deterministic timeout"
)
_STACK_OVERFLOW = "Stack overflow detected"
_PANIC = "INTERNAL PANIC"
_CRASH_CODES = (134, -6)  # SIGABRT: seen as 134 through a shell, as -6 by a direct parent
_AXIOMS = re.compile(
    r"'(?P<name>.+?)' (?:depends on axioms: \[(?P<list>.*)\]|(?P<none>does not depend on any axioms))",
    re.DOTALL,
)
_AXIOM_NAME = re.compile(r"[^\s,\[\]]+")

Runner = Callable[..., ProcResult]


# --- parsing -------------------------------------------------------------------------------------


def parse_lean_output(stdout: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Split ``lean --json`` stdout into messages and the lines that are not messages (crash text etc.).

    Keys are read by name (their order changed between toolchains); ``kind``/``isSilent`` may be
    missing and ``endPos`` may be null.
    """
    messages: list[dict[str, Any]] = []
    raw: list[str] = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raw.append(line)
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("severity"), str) or "data" not in obj:
            raw.append(line)
            continue
        obj["data"] = str(obj["data"])
        obj.setdefault("kind", "[anonymous]")
        obj.setdefault("isSilent", False)
        obj.setdefault("endPos", None)
        messages.append(obj)
    return messages, raw


def is_heartbeat_timeout(message: dict[str, Any]) -> bool:
    return message.get("kind") == "runtime.maxHeartbeats" or bool(_HEARTBEATS.search(message["data"]))


def parse_print_axioms(text: str) -> tuple[str, list[str]] | None:
    """``(name, axioms)`` from one ``#print axioms`` message (wrapped or not), or None if it is not one."""
    match = _AXIOMS.fullmatch(text.strip())
    if not match:
        return None
    if match.group("none"):
        return match.group("name"), []
    axioms = re.split(r",\s*", match.group("list").strip())
    if not all(_AXIOM_NAME.fullmatch(a) for a in axioms):
        return None
    return match.group("name"), axioms


def failure(proc: ProcResult, messages: list[dict[str, Any]], raw: list[str], timeout: float, *,
            allow_sorry: bool) -> tuple[str, str]:
    """``(class, reason)`` of a rejected elaboration, ``("", "")`` when it passed.

    Classes: ``timeout`` (its CPU budget, ``timeout`` CPU seconds of its process tree, spent), ``crash`` (stack
    overflow abort), ``heartbeats``, ``error``, ``sorry`` — verdicts on the proof — and ``infra``: a non-zero exit
    with no Lean message (a Lake or elan error [E4], ``INTERNAL PANIC: out of memory`` [R1], a kill, the memory
    limit), or a run the wall-clock backstop ended with its CPU budget unspent (:attr:`ProcResult.starved`: a loaded
    machine or a stopped process), which says nothing about the proof.
    """
    rc, stderr = proc.returncode, proc.stderr
    tail = (stderr.strip() or " ".join(raw))[-300:]
    if proc.starved:
        return "infra", f"lean was {proc.starved}"
    if proc.timed_out:
        return "timeout", f"timed out: its {timeout:g} s of CPU spent (process group killed)"
    if proc.extra.get("rss_exceeded"):
        return "infra", (f"lean passed the resident-memory limit of {proc.extra.get('rss_limit_mb')} MB and was "
                         "killed (option lean_mem_mb)")
    if _STACK_OVERFLOW in stderr or any(_STACK_OVERFLOW in line for line in raw):
        return "crash", f"lean crashed (exit {rc}): {tail}"
    errors = [m for m in messages if m["severity"] == "error"]
    heartbeat = next((m for m in errors if is_heartbeat_timeout(m)), None)
    if heartbeat is not None:
        return "heartbeats", f"heartbeat limit reached: {heartbeat['data'].splitlines()[0]}"
    if errors and _PANIC not in stderr:
        return "error", errors[0]["data"]
    if rc != 0:
        what = "ran out of memory" if _PANIC in stderr else "was killed" if rc < 0 or rc > 128 else "failed"
        return "infra", f"lean {what} without a Lean verdict (exit {rc}): {tail}"
    sorry = next((m for m in messages if is_sorry_warning(m)), None)
    if sorry is not None and not allow_sorry:
        line = (sorry.get("pos") or {}).get("line", "?")
        return "sorry", f"{sorry['data']} (line {line}): the proof is incomplete"
    return "", ""


def own_message(data: str, kind: str) -> dict[str, Any]:
    """An error message written by pytest-forall (``source`` says so), never passed off as Lean's."""
    return {"severity": "error", "data": data, "kind": kind, "source": "pytest-forall",
            "pos": None, "endPos": None}


def _option_list(value: Any, default: frozenset[str] | tuple[str, ...]) -> list[str]:
    """Options arrive as lists or as comma/space separated ini strings."""
    if value is None or value == "":
        return sorted(default)
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    return [str(v) for v in value]


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"pp": {"unicode": {"fun": True}}}`` -> ``{"pp.unicode.fun": "true"}`` (TOML dotted keys nest)."""
    flat: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return flat


def lakefile_lean_options(text: str) -> dict[str, str]:
    """``leanOptions := #[⟨`name, value⟩, …]`` of a ``lakefile.lean`` [K3], read with the Lean lexer.

    Raises ``ValueError`` for a form this reader does not know (the caller reports it; silently dropping
    ``autoImplicit := false`` would elaborate every candidate differently).
    """
    try:
        spans = [s for s in lexer.spans(text) if s.kind not in (lexer.COMMENT, lexer.DOC, lexer.MODDOC)]
    except NotUnderstood as exc:
        raise ValueError(f"lakefile.lean not readable: {exc}") from exc
    words = [text[s.start:s.end] for s in spans]
    options: dict[str, str] = {}
    for index, word in enumerate(words):
        if word != "leanOptions":
            continue
        if words[index + 1:index + 4] != [":=", "#", "["]:
            raise ValueError("lakefile.lean: `leanOptions` is not written as `leanOptions := #[⟨`name, value⟩, …]`")
        i = index + 4
        while i < len(words) and words[i] != "]":
            entry = words[i:i + 6]
            if len(entry) < 6 or entry[0] != "⟨" or entry[1] != "`" or entry[3] != "," or entry[5] != "⟩":
                raise ValueError(f"lakefile.lean: cannot read the leanOptions entry starting `{' '.join(entry)}`")
            options[entry[2]] = entry[4].strip('"')
            i += 6
            if i < len(words) and words[i] == ",":
                i += 1
    return options


def _threads(option: Any) -> int:
    """Threads per ``lean`` [R2]: the option, else the machine's CPUs shared by the xdist workers."""
    if option:
        return max(1, int(option))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    return max(1, (os.cpu_count() or 1) // max(1, workers))


@dataclass
class _Build:
    """One elaboration of exact bytes, with the ``.olean`` it left (checked by hash before reuse)."""

    directory: Path
    module: str
    result: CompileResult
    olean_sha: str = ""

    @property
    def olean(self) -> Path:
        return self.directory / f"{self.module}.olean"

    def olean_intact(self) -> bool:
        return (
            bool(self.olean_sha)
            and self.olean.is_file()
            and sha256_bytes(self.olean.read_bytes()) == self.olean_sha
        )


@dataclass
class _Audit:
    """What the audit file reported: the theorem's axioms and the term dump (or why it is not trusted)."""

    problem: str = ""
    name: str = ""
    axioms: tuple[str, ...] = ()
    dump: str = ""
    output: str = ""
    #: the problem is the machine's (a starved audit run), never a verdict on the candidate
    infra: bool = False


def dump_program(module: str, theorem: str) -> str:
    """Lean code for audit lines 5-: logs (on line 6) the theorem's type and its own-module closure as
    ``repr`` of kernel terms [R4]. It has never run on real Lean: only the stand-in has executed it."""
    return f"""open Lean
#eval show CoreM Unit from do -- {DUMP_MARKER} {module} {theorem}
  let env ← getEnv
  let some idx := env.getModuleIdx? `{module} | throwError "{DUMP_MARKER}: module not loaded"
  let mut todo : Array Name := #[`{theorem}]
  let mut seen : NameSet := {{}}
  let mut out : Array String := #[]
  while true do
    let some n := todo.back? | break
    todo := todo.pop
    if seen.contains n then continue
    seen := seen.insert n
    let some ci := env.find? n | throwError "{DUMP_MARKER}: unknown constant {{n}}"
    let value? := if n == `{theorem} then none else ci.value?
    let kind := match ci with
      | .thmInfo _ => "theorem" | .defnInfo v => s!"def {{repr v.safety}}" | .axiomInfo _ => "axiom"
      | .opaqueInfo _ => "opaque" | .inductInfo v => s!"inductive {{v.ctors}}" | .ctorInfo _ => "ctor"
      | .recInfo _ => "rec" | .quotInfo _ => "quot"
    let more := match ci with | .inductInfo v => v.ctors.toArray | _ => #[]
    for d in ci.type.getUsedConstants ++ ((value?.map (·.getUsedConstants)).getD #[]) ++ more do
      if env.getModuleIdxFor? d == some idx && !seen.contains d then todo := todo.push d
    out := out.push s!"{{n}} {{kind}} {{ci.levelParams}} : {{repr ci.type}} := {{repr value?}}"
  logInfo (String.intercalate "\\n" ("{DUMP_MARKER}" :: (out.qsort (· < ·)).toList))
"""


# --- the environment a verdict depends on ------------------------------------------------------------


def _compiled_files(directory: str, prefix: str, lines: list[str]) -> None:
    """Append ``relative path, size, mtime_ns`` of every compiled module file under ``directory``, sorted."""
    with os.scandir(directory) as found:
        entries = sorted(found, key=lambda e: e.name)
    for entry in entries:
        if entry.is_dir():
            _compiled_files(entry.path, f"{prefix}{entry.name}/", lines)
        elif entry.name.endswith(COMPILED_SUFFIXES):
            info = entry.stat()
            lines.append(f"{prefix}{entry.name}\0{info.st_size}\0{info.st_mtime_ns}\n")


def library_stats(roots: tuple[str, ...]) -> tuple[str, int]:
    """Digest of the search-path index, root and relative path, size and mtime of every compiled module file
    under ``roots`` (in search order: the first root holding a module wins [R6]), and how many files it covers.

    Stat, not content: a rebuild or ``lake exe cache get`` rewrites the files, so it changes the digest, and
    reading Mathlib's gigabytes would cost seconds per process for the same answer. An entry that is not a
    directory is recorded as absent (Lean finds nothing there [R6]); an unreadable directory or file raises.
    """
    digest = hashlib.sha256()
    count = 0
    for index, root in enumerate(roots):
        digest.update(f"{index}\0{root}\n".encode())
        if not os.path.isdir(root):
            digest.update(b"absent\n")
            continue
        lines: list[str] = []
        _compiled_files(root, "", lines)
        digest.update("".join(lines).encode())
        count += len(lines)
    return digest.hexdigest(), count


@functools.cache
def toolchain_fingerprint(lean: str, roots: tuple[str, ...], manifest: str, checker: str,
                          env: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """``{"version", "libraries", "manifest", "checker"}`` of a probed Lake project, once per process.

    ``version``: what ``lean --version`` prints (version, platform, commit [R8]) and the binary's path, size and
    mtime; ``libraries``: :func:`library_stats` of the ``LEAN_PATH`` that ``lake env`` set [K2] and the
    toolchain's own library directory [R6]; ``manifest``: the digest of ``lake-manifest.json`` (every
    dependency's resolved commit [K6]); ``checker``: path, size, mtime and digest of the checker (``none``
    without one). Anything unreadable raises: an environment that cannot be named is never cached.
    """
    proc = run_command([lean, "--version"], cwd=Path(tempfile.gettempdir()), timeout=60, env=dict(env))
    line = " ".join(proc.stdout.split())
    if proc.returncode != 0 or not line.startswith("Lean (version "):
        raise ValueError(f"`{lean} --version` printed no version (exit {proc.returncode}): "
                         f"{(proc.stderr or proc.stdout).strip()[-200:]!r}")
    info = os.stat(lean)
    libraries, count = library_stats(roots)
    found = {"version": f"{line} ({lean}:{info.st_size}:{info.st_mtime_ns})",
             "libraries": f"{libraries} ({count} files)",
             "manifest": sha256_bytes(Path(manifest).read_bytes()), "checker": "none"}
    if checker:
        info = os.stat(checker)
        found["checker"] = f"{checker}:{info.st_size}:{info.st_mtime_ns}:{sha256_bytes(Path(checker).read_bytes())}"
    return found


# --- the backend ---------------------------------------------------------------------------------


class LeanProver:
    """Lean 4 in a Lake project; ``runner`` is swapped for the sandbox's runner when sandboxing is on.

    Options: ``lean_bin`` (directory holding ``lake``; env ``FORALL_LEAN_BIN``), ``lean_project`` (Lake
    project with Mathlib; env ``FORALL_LEAN_PROJECT``; default ``lean_env/putnam``), ``lean_rules_axioms`` (the benchmark's allowed
    axioms), ``lean_required_modules`` (default ``Mathlib``), ``lean_options`` (``-D`` options, default: the
    project's ``leanOptions``), ``lean_checker`` (path of a checker), ``lean_checker_fresh`` (default false),
    ``lean_mem_mb`` (resident-memory limit per process, default 16384; 0 = none), ``lean_threads``
    (threads per ``lean``, default CPUs / xdist workers), ``cache_dir`` (template verdicts), ``sandbox`` and
    ``sandbox_ro`` (``bwrap``: the backend sandboxes itself after its probe, see :meth:`_sandbox_itself`),
    ``lean_repl`` (a leanprover-community/repl executable built for the project's toolchain: the actor's goals/try/
    query, :mod:`.interactive`, untested on real Lean; without it they are not offered).
    """

    name = "lean"
    ext = "lean"

    def __init__(self, options: dict[str, Any] | None = None, runner: Runner = run_command) -> None:
        opts = options or {}
        self.options = dict(opts)
        bin_dir = opts.get("lean_bin") or os.environ.get("FORALL_LEAN_BIN")
        self.bin_dir = Path(str(bin_dir)).expanduser() if bin_dir else None
        project = opts.get("lean_project") or os.environ.get("FORALL_LEAN_PROJECT") or DEFAULT_PROJECT
        self.project = Path(str(project)).expanduser().resolve()
        self.rules_axioms = frozenset(_option_list(opts.get("lean_rules_axioms"), STRICT_AXIOMS))
        self.required_modules = _option_list(opts.get("lean_required_modules"), ("Mathlib",))
        self.lean_options: dict[str, str] | None = (
            _flatten(dict(opts["lean_options"])) if isinstance(opts.get("lean_options"), dict) else None
        )
        self.checker_option = str(opts.get("lean_checker") or "")
        fresh = str(opts.get("lean_checker_fresh", False)).lower()
        self.checker_fresh = fresh in ("true", "1", "yes", "on")
        self.mem_mb = int(opts.get("lean_mem_mb", 16384) or 0) or None
        #: not a setting of the judgement (it follows the xdist worker count), so private: see ``threads``
        self._threads = _threads(opts.get("lean_threads"))
        self.cache_dir = cache_root(opts) / "lean-templates"
        repl = opts.get("lean_repl") or ""
        #: private: the tools it serves never change a verdict, so it is not a setting of the judgement (cache key)
        self._repl = str(Path(str(repl)).expanduser().resolve()) if repl else ""
        self.runner = runner
        #: set by the protocol when it moves the runner into the sandbox (the paths stay the host's: bound as-is)
        self.sandboxed = False
        self._probed: str | None = None
        self._sysroot: Path | None = None
        self._lean_path: list[str] = []
        self._builds: dict[str, _Build] = {}
        self._audits: dict[str, _Audit] = {}
        self._last_compiled = ""
        self._templates: dict[str, dict[str, Any]] = {}
        self._scratch: Path | None = None

    # -- helpers ---------------------------------------------------------------------------------

    def _lake_binary(self) -> str | None:
        if self.bin_dir is not None:
            path = self.bin_dir / "lake"
            return str(path) if path.is_file() and os.access(path, os.X_OK) else None
        return shutil.which("lake")

    def _fix(self) -> str:
        command = str(SETUP) if self.project == DEFAULT_PROJECT else f"{SETUP} {self.project}"
        return f"run `{command}` (installs elan, the toolchain and Mathlib's prebuilt cache; needs internet)"

    def _scratch_dir(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="forall-lean-"))
            weakref.finalize(self, shutil.rmtree, str(self._scratch), True)
        return self._scratch

    def _dash_d(self) -> list[str]:
        """The project's ``leanOptions`` as ``-D`` flags: a plain ``lean`` call does not apply them [K2, K3]."""
        if self.lean_options is None:
            toml, lean = self.project / "lakefile.toml", self.project / "lakefile.lean"
            if toml.is_file():
                table = tomllib.loads(toml.read_text(encoding="utf-8")).get("leanOptions", {})
                self.lean_options = _flatten(table)
            elif lean.is_file():
                self.lean_options = lakefile_lean_options(lean.read_text(encoding="utf-8"))
            else:
                self.lean_options = {}
        return [f"-D{key}={value}" for key, value in sorted(self.lean_options.items())]

    def _env(self, extra_path: str = "") -> dict[str, str]:
        """What ``lake env`` gave at probe time [K2] and nothing else of ours (no credentials reach Lean);
        ``STANDIN_*`` passes for the test stand-in, which reads its controls from the environment."""
        assert self._sysroot is not None
        env = {k: v for k, v in os.environ.items() if k.startswith("STANDIN_")}
        env.update(LEAN_PATH=os.pathsep.join([*self._lean_path, *([extra_path] if extra_path else [])]),
                   LEAN_SYSROOT=str(self._sysroot), LC_ALL="C.UTF-8",
                   PATH=f"{self._sysroot / 'bin'}{os.pathsep}{os.environ.get('PATH') or '/usr/bin:/bin'}")
        return env

    def _lean(self, args: list[str], cwd: Path, timeout: float) -> ProcResult:
        """``$LEAN_SYSROOT/bin/lean`` with the probed ``LEAN_PATH`` plus ``cwd`` (argv paths are relative); ``timeout``
        is CPU seconds of its process tree, the wall clock a backstop ``CPU_WALL_FACTOR`` times longer (as Rocq's
        compile: a starved run is infra, a spent budget the candidate's)."""
        assert self._sysroot is not None
        lean = str(self._sysroot / "bin" / "lean")
        return self.runner([lean, f"-j{self._threads}", *args], cwd=cwd, timeout=timeout * CPU_WALL_FACTOR,
                           cpu_s=timeout, env=self._env("."), rss_mb=self.mem_mb)

    def _unfetched(self) -> str:
        """A project Lake would have to resolve or download: refused, judged from files [K1]."""
        manifest = self.project / "lake-manifest.json"
        if not manifest.is_file():
            return (f"{self.project} has no lake-manifest.json, so any `lake` call there would resolve and clone "
                    f"its dependencies and write a manifest into it; pytest-forall never lets Lake write into "
                    f"your project: run `lake update` (or `lake exe cache get`) there yourself")
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            packages_dir = self.project / str(data.get("packagesDir") or ".lake/packages")
            names = [str(p["name"]) for p in data.get("packages", [])]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return f"{manifest} is not a Lake manifest ({exc}); regenerate it with `lake update`"
        missing = [name for name in names if not (packages_dir / name).is_dir()]
        return f"Lake packages {missing} are not downloaded in {self.project}" if missing else ""

    def _elaborate(self, source: bytes, timeout: float, *, allow_sorry: bool) -> _Build:
        """Compile ``source`` as a uniquely named module with ``-o``, so the audit can import exactly it."""
        digest = sha256_bytes(source)
        module = f"{MODULE_PREFIX}{digest[:16]}"
        directory = self._scratch_dir() / digest[:16]
        directory.mkdir(exist_ok=True)
        path = directory / f"{module}.lean"
        path.write_bytes(source)
        build = _Build(directory, module, CompileResult(ok=False))
        build.olean.unlink(missing_ok=True)
        proc = self._lean(["--json", *self._dash_d(), "--root=.", "-o", build.olean.name, path.name], directory,
                          timeout)
        messages, raw = parse_lean_output(proc.stdout)
        output = proc.stdout + (f"\n--- stderr ---\n{proc.stderr}" if proc.stderr.strip() else "")
        klass, reason = failure(proc, messages, raw, timeout, allow_sorry=allow_sorry)
        if klass == "infra" or (proc.returncode == 127 and not proc.stdout):
            build.result = CompileResult(ok=False, infra=reason or proc.stderr.strip(), output=output,
                                         duration=proc.duration)
            return build
        if klass not in ("", "error"):  # make first_error say why; marked as ours, not Lean's
            messages.insert(0, own_message(reason, f"forall.{klass}"))
        build.result = CompileResult(
            ok=not klass,
            digest=sha256_bytes(path.read_bytes()),
            duration=proc.duration,
            timed_out=proc.timed_out,
            accident="" if not klass else proc.accident,
            messages=messages,
            output=output,
            artifact=str(build.olean) if build.olean.is_file() else "",
        )
        if build.olean.is_file():
            build.olean_sha = sha256_bytes(build.olean.read_bytes())
            self._builds[digest] = build
        return build

    def _built(self, source: bytes, timeout: float) -> _Build:
        """The build of exactly these bytes: reused when its .olean is untouched, else compiled now."""
        build = self._builds.get(sha256_bytes(source))
        if build is not None and build.olean_intact():
            return build
        return self._elaborate(source, timeout, allow_sorry=True)

    # -- the audit file ------------------------------------------------------------------------------

    def _audit(self, build: _Build, theorem: str, timeout: float) -> _Audit:
        """Run the audit file once per build: axioms of ``theorem`` and the term dump, both positioned."""
        if build.olean_sha in self._audits:
            return self._audits[build.olean_sha]
        sentinel = f"{AUDIT_SENTINEL}{secrets.token_hex(8)}"
        audit = build.directory / f"ForallAudit_{secrets.token_hex(6)}.lean"
        audit.write_text(
            f"import {build.module}\n#print axioms {theorem}\n"
            f"theorem {sentinel} : True := trivial\n#print axioms {sentinel}\n"
            + dump_program(build.module, theorem),
            encoding="utf-8",
        )
        proc = self._lean(["--json", audit.name], build.directory, timeout)
        result = self._read_audit(proc, audit.name, sentinel, timeout)
        result.output = proc.stdout + proc.stderr
        result.dump = result.dump.replace(build.module, "ForallModule")
        if not result.problem:
            self._audits[build.olean_sha] = result
        return result

    @staticmethod
    def _read_audit(proc: ProcResult, audit: str, sentinel: str, timeout: float) -> _Audit:
        """Trusted only when the output holds exactly: the theorem's report on line 2, the sentinel's on
        line 4 and one dump on line 6, all information messages of the audit file."""
        if proc.starved:
            return _Audit(f"the audit's lean was {proc.starved}", infra=True)
        if proc.timed_out:
            return _Audit(f"axiom audit timed out: its {timeout:g} s of CPU spent")
        messages, _ = parse_lean_output(proc.stdout)
        errors = [m["data"] for m in messages if m["severity"] == "error"]
        if proc.returncode != 0 or errors:
            return _Audit(f"audit file did not elaborate (exit {proc.returncode}): " + (
                errors[0] if errors else (proc.stderr or proc.stdout).strip()[-300:]))
        expected = {2: "theorem", 4: "sentinel", 6: "dump"}
        found: dict[int, dict[str, Any]] = {}
        for message in messages:
            line = (message.get("pos") or {}).get("line")
            if message["severity"] != "information" or message.get("fileName") != audit or line not in expected:
                if "axioms" in message["data"] or DUMP_MARKER in message["data"]:
                    return _Audit(f"an audit report not where the audit file put it: {json.dumps(message)[:300]}")
                continue
            if line in found:
                return _Audit(f"two messages on audit line {line}")
            found[line] = message
        if sorted(found) != [2, 4, 6]:
            return _Audit(f"expected the reports on audit lines 2, 4 and 6, found lines {sorted(found)}")
        parsed = [parse_print_axioms(found[line]["data"]) for line in (2, 4)]
        if parsed[0] is None or parsed[1] is None:
            return _Audit(f"unparseable #print axioms output: {found[2]['data'][:300]!r}")
        if parsed[1] != (sentinel, []):
            return _Audit("the audit's closing sentinel is missing")
        dump = found[6]["data"]
        if not dump.startswith(DUMP_MARKER):
            return _Audit(f"the statement dump is not the audit's: {dump[:200]!r}")
        return _Audit(name=parsed[0][0], axioms=tuple(parsed[0][1]), dump=dump)

    # -- Prover protocol ---------------------------------------------------------------------------

    def probe(self, workspace: Path) -> str:
        """Check the toolchain and that the project's ``LEAN_PATH`` holds a Mathlib build (cached)."""
        if self._probed is None:
            self._probed = self._probe() or self._sandbox_itself()
        return self._probed

    def _sandbox_itself(self) -> str:
        """Built from options asking for a sandbox (``forall verify``), every later call runs in it, bound from
        what the probe found (toolchain, project, ``LEAN_PATH``); nothing when the protocol swaps the runner."""
        from pytest_forall.isolation.sandbox import own_prover_runner

        runner = None if self.sandboxed else own_prover_runner(self.options, self.sandbox_binds)
        if isinstance(runner, str):
            return runner
        if runner is not None:
            self.runner, self.sandboxed = runner, True
        return ""

    def _probe(self) -> str:
        lake = self._lake_binary()
        if lake is None:
            where = f"in {self.bin_dir} (FORALL_LEAN_BIN / option lean_bin)" if self.bin_dir else "on PATH"
            return f"Lean toolchain not found: no lake {where}; {self._fix()}"
        if not any((self.project / f).is_file() for f in ("lakefile.toml", "lakefile.lean")):
            return f"no Lake project at {self.project} (option lean_project); {self._fix()}"
        unfetched = self._unfetched()
        if unfetched:
            return f"{unfetched}; {self._fix()}"
        try:
            self._dash_d()
        except ValueError as exc:
            return f"{exc}; set the options explicitly with the option lean_options"
        env = {k: v for k, v in os.environ.items() if k != "LEAN_PATH"}
        proc = run_command([lake, "env", "printenv", "LEAN_PATH", "LEAN_SYSROOT"], cwd=self.project, timeout=300,
                           env=env)
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) < 2:
            return (f"`lake env printenv LEAN_PATH LEAN_SYSROOT` failed in {self.project} (exit {proc.returncode}): "
                    f"{(proc.stderr or proc.stdout).strip()[-300:]}; {self._fix()}")
        self._lean_path = [p for p in lines[0].split(os.pathsep) if p]
        self._sysroot = Path(lines[1].strip())
        if not (self._sysroot / "bin" / "lean").is_file():
            return f"the toolchain at LEAN_SYSROOT={self._sysroot} has no bin/lean; {self._fix()}"
        unbuilt = [m for m in self.required_modules
                   if not any(Path(e, m.replace(".", "/") + ".olean").is_file() for e in self._lean_path)]
        if unbuilt:
            return (f"{', '.join(unbuilt)} is not built in {self.project} (no .olean on the LEAN_PATH that "
                    f"`lake env` sets); {self._fix()}")
        return ""

    # -- the actor's interactive tools (docs/lean-facts.md I1-I6; untested on real Lean) ------------------------

    def proof_tools(self) -> ProofTools | None:
        """goals/try/query, offered only when option ``lean_repl`` names the REPL (Lean ships none)."""
        from pytest_forall.lang.lean.interactive import TOOLS

        return TOOLS if self._repl else None

    def proof_session(self, task: Task, timeout: float, excluded: tuple[str, ...]) -> LeanProofSession:
        """The item's warm REPL, in a private directory of its own (never the workspace), in the sandbox when the
        item's prover is, with the ``LEAN_PATH`` the probe found [K2]."""
        from pytest_forall.lang.lean.interactive import LeanProofSession

        return LeanProofSession(task, self._start_repl, Path(tempfile.mkdtemp(prefix="forall-session-")), timeout,
                                excluded)

    def _start_repl(self, directory: Path) -> Repl:
        from pytest_forall.lang.lean.interactive import Repl, ReplUnavailable

        problem = self.probe(directory)
        if problem:
            raise ReplUnavailable(f"the Lean toolchain is not usable here: {problem}")
        if not os.access(self._repl, os.X_OK):
            raise ReplUnavailable(f"option lean_repl: {self._repl} is not an executable")
        env = self._env(".")
        argv = [self._repl]
        if self.sandboxed:
            from pytest_forall.isolation.sandbox import interactive_prefix

            repl = Path(self._repl).parent
            binds = [(p, inside) for p, inside in (*self.sandbox_binds, (repl, str(repl))) if p.exists()]
            argv = [*interactive_prefix(directory, binds), "/usr/bin/env", *(f"{k}={v}" for k, v in env.items()),
                    self._repl]
        return Repl(argv, directory, env)

    @property
    def sysroot(self) -> Path | None:
        """``LEAN_SYSROOT`` of the project's toolchain, once probed [K2]."""
        return self._sysroot

    @property
    def sandbox_binds(self) -> tuple[tuple[Path, str], ...]:
        """Read-only at their own paths: the toolchain, the project and every ``LEAN_PATH`` entry; then the user's
        ``--forall-sandbox-ro`` binds."""
        paths = [self.project, *(Path(p) for p in self._lean_path)]
        if self._sysroot is not None:
            paths.append(self._sysroot)
        kept: list[Path] = []
        for path in sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts)):
            if not any(path.is_relative_to(k) for k in kept):
                kept.append(path)
        return (*((path, str(path)) for path in kept), *option_binds(self.options))

    def version(self) -> str:
        """``lean --version`` of the project's toolchain, for the audit record."""
        if self.probe(Path.cwd()) or self._sysroot is None:
            return ""
        return self._lean(["--version"], self._scratch_dir(), 60).stdout.strip()

    @property
    def threads(self) -> int:
        """Threads per ``lean`` [R2]; a resource, never part of the verdict cache's key."""
        return self._threads

    def fingerprint(self, task: Task) -> dict[str, str]:
        """The environment a verdict depends on besides the task and the candidate (the verdict cache's key):
        :func:`toolchain_fingerprint` of the probed project, plus the ``-D`` options every ``lean`` gets and the
        benchmark's axiom rule. Raises when the toolchain is not usable or a part cannot be read (never cached)."""
        problem = self.probe(Path.cwd())
        if problem or self._sysroot is None:
            raise ValueError(f"the toolchain probe failed: {problem}")
        roots = tuple(dict.fromkeys([*self._lean_path, str(self._sysroot / "lib" / "lean")]))
        found = toolchain_fingerprint(str(self._sysroot / "bin" / "lean"), roots,
                                      str(self.project / "lake-manifest.json"), self._checker() or "",
                                      tuple(sorted(self._env().items())))
        return {**found, "options": " ".join(self._dash_d()), "axioms": " ".join(sorted(self.rules_axioms))}

    def _template_key(self, task: Task) -> str:
        """Template digest, toolchain and manifest: what a template verdict depends on."""
        assert self._sysroot is not None
        lean = self._sysroot / "bin" / "lean"
        manifest = self.project / "lake-manifest.json"
        parts = [sha256_bytes(task.template.encode("utf-8")), str(self._sysroot), str(lean.stat().st_mtime_ns),
                 sha256_bytes(manifest.read_bytes()), " ".join(self._dash_d()), task.theorem_name]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]

    def _read_template_entry(self, path: Path) -> dict[str, Any] | None:
        """A cached template verdict, or None if absent, corrupt or foreign (then it is recomputed)."""
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not (isinstance(entry, dict) and entry.get("key") == path.stem and isinstance(entry.get("ok"), bool)
                and isinstance(entry.get("dump"), str) and isinstance(entry.get("error"), str)):
            return None
        return entry

    def check_template(self, task: Task, workspace: Path, timeout: float) -> CompileResult:
        """The template compiles (sorries allowed) and its statement dump; cached on disk per template key."""
        infra = self.probe(workspace)
        if infra:
            return CompileResult(ok=False, infra=infra)
        key = self._template_key(task)
        path = self.cache_dir / f"{key}.json"
        entry = self._templates.get(key) or self._read_template_entry(path)
        if entry is None:
            build = self._elaborate(task.template.encode("utf-8"), timeout, allow_sorry=True)
            result = build.result
            if result.infra or result.timed_out:  # not a verdict on the template: do not cache it
                return CompileResult(ok=False, infra=result.infra or "template check timed out",
                                     output=result.output)
            error = "" if result.ok else f"template does not compile here: {result.first_error.strip()[:300]}"
            dump = ""
            if result.ok and task.theorem_name:
                audit = self._audit(build, task.theorem_name, timeout)
                if audit.problem:
                    return CompileResult(ok=False, infra=f"template audit failed here: {audit.problem}",
                                         output=audit.output)
                dump = audit.dump
            entry = {"key": key, "ok": result.ok, "error": error, "dump": dump}
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{secrets.token_hex(4)}.tmp")
            tmp.write_text(json.dumps(entry), encoding="utf-8")
            os.replace(tmp, path)
        self._templates[key] = entry
        if entry["ok"]:
            return CompileResult(ok=True, output="template verdict: compiles (cached per template, toolchain, "
                                                 "manifest)")
        return CompileResult(ok=False, infra=str(entry["error"]))

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
        """Elaborate a private copy; the digest is of the candidate as read *after* compilation."""
        infra = self.probe(workspace)
        if infra:
            return CompileResult(ok=False, infra=infra)
        data = candidate.read_bytes()
        result = self._elaborate(data, timeout, allow_sorry=False).result
        self._last_compiled = sha256_bytes(data)
        after = sha256_bytes(candidate.read_bytes())
        if not result.infra and after != result.digest:
            result.ok = False
            changed = own_message("the candidate changed while it was being compiled", "forall.changed")
            result.messages.insert(0, changed)
            result.digest = after
        return result

    def statement_check(self, task: Task, workspace: Path, timeout: float) -> Layer:
        """``elaborated_statement``: the candidate's theorem and own-module closure equal the template's, as
        kernel terms; the candidate is the one :meth:`compile` elaborated last."""
        name = "elaborated_statement"
        build = self._builds.get(self._last_compiled)
        if build is None or not build.olean_intact() or not task.theorem_name:
            return Layer(name, False, "no compiled candidate to compare")
        template = self._templates.get(self._template_key(task)) if self._sysroot else None
        if template is None or not template.get("dump"):
            return Layer(name, None, "not judged: the template's statement dump is not available", infra=True)
        audit = self._audit(build, task.theorem_name, timeout)
        if audit.problem:
            return Layer(name, False, f"the statement dump failed: {audit.problem}", {"output": audit.output[-4000:]},
                         infra=audit.infra)
        if audit.dump != template["dump"]:
            first = next((i for i, (a, b) in enumerate(zip(audit.dump.splitlines(), str(template["dump"]).splitlines()))
                          if a != b), min(len(audit.dump.splitlines()), len(str(template["dump"]).splitlines())))
            return Layer(name, False, "the candidate's theorem or a declaration it depends on differs from the "
                                      "template's as elaborated terms",
                         {"first_difference_line": first, "candidate": audit.dump[:4000],
                          "template": str(template["dump"])[:4000]})
        return Layer(name, True, "the theorem's type and its own-module closure equal the template's (kernel terms)",
                     {"declarations": len(audit.dump.splitlines()) - 1})

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        """``#print axioms`` from the audit file importing the compiled candidate; oddities fail closed."""
        infra = self.probe(workspace)
        if infra:
            return AxiomAudit(ok=False, reason=infra, infra=infra)
        if not task.theorem_name:
            return AxiomAudit(ok=False, reason="the task names no theorem to audit")
        build = self._built(candidate.read_bytes(), timeout)
        if not build.olean_intact():
            return AxiomAudit(ok=False, reason=f"the candidate did not compile to an .olean: "
                                               f"{build.result.first_error.strip()[:300]}",
                              output=build.result.output)
        audit = self._audit(build, task.theorem_name, timeout)
        if audit.problem:
            return AxiomAudit(ok=False, reason=audit.problem, output=audit.output,
                              infra=audit.problem if audit.infra else "")
        if audit.name != task.theorem_name:
            return AxiomAudit(ok=False, axioms=list(audit.axioms), output=audit.output,
                              reason=f"#print axioms reported {audit.name!r}, expected {task.theorem_name!r}")
        axioms = list(audit.axioms)
        strict_bad = [a for a in axioms if a not in STRICT_AXIOMS]
        rules_bad = [a for a in axioms if a not in self.rules_axioms]
        reason = (f"axioms outside the benchmark's rule: {rules_bad}" if rules_bad
                  else f"axioms outside the strict allow-list: {strict_bad}" if strict_bad else "")
        return AxiomAudit(ok=True, axioms=axioms, strict_ok=not strict_bad, rules_ok=not rules_bad,
                          reason=reason, output=audit.output)

    def _checker(self) -> str | None:
        """The option's checker, else the toolchain's own [E5, K2]; never a bare ``PATH`` lookup [E1]."""
        if self.checker_option:
            return shutil.which(self.checker_option)
        if self._sysroot is None:
            return None
        return next((str(self._sysroot / "bin" / n) for n in CHECKERS
                     if os.access(self._sysroot / "bin" / n, os.X_OK)), None)

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        """Replay the compiled module in Lean's kernel, from its imports unless ``lean_checker_fresh`` [C1]."""
        infra = self.probe(workspace)
        if infra:
            return Layer("independent_check", None, f"not judged: {infra}")
        checker = self._checker()
        if checker is None:
            return Layer("independent_check", None,
                         f"not judged: the toolchain at {self._sysroot} ships no leanchecker (from v4.28) and no "
                         f"lean4checker is configured (option lean_checker)")
        build = self._built(candidate.read_bytes(), timeout)
        if not build.olean_intact():
            return Layer("independent_check", False, "the candidate did not compile to an .olean")
        argv = [checker, *(["--fresh"] if self.checker_fresh else []), build.module]
        proc = self.runner(argv, cwd=build.directory, timeout=timeout * CPU_WALL_FACTOR, cpu_s=timeout,
                           env=self._env("."), rss_mb=self.mem_mb)
        output = (proc.stdout + proc.stderr).strip()
        name = Path(checker).name
        evidence = {"checker": name, "argv": argv, "returncode": proc.returncode, "output": output[-4000:],
                    "fresh": self.checker_fresh}
        if proc.starved:  # the machine's, as Rocq's coqchk (``coqchk_layer``): infra, never "not judged"
            return Layer("independent_check", False, f"{name} was {proc.starved}: not judged",
                         {**evidence, "accident": "timed out"}, infra=True)
        if proc.timed_out:
            return Layer("independent_check", None, f"not judged: {name} spent its {timeout:g} s CPU budget",
                         {**evidence, "accident": "timed out"})
        if proc.returncode == 0:
            return Layer("independent_check", True, "", evidence)
        if _KERNEL_VERDICT.search(output):
            return Layer("independent_check", False, f"{name} rejected the compiled module: {output[-400:]}",
                         evidence)
        return Layer("independent_check", None,
                     f"not judged: {name} failed without a kernel verdict (exit {proc.returncode}): {output[-300:]}",
                     evidence)

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        """Syntax screen, frozen statement and shadowing guard (``pytest_forall.lang.lean.screen``)."""
        from pytest_forall.lang.screens import lean_static_layers

        return lean_static_layers(task.template, text, theorem_name=task.theorem_name)


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> LeanProver | None:
    return LeanProver(options) if name == "lean" else None
