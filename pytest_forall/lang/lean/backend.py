"""Lean 4 backend: ``lake env lean --json`` on a private copy of the candidate; axioms from a separate file.

Every compile copies the candidate's bytes into a build directory owned by this prover (never the
agent's workspace) and elaborates them as the module ``ForallCandidate_<digest>``::

    <scratch>/<digest[:16]>/ForallCandidate_<digest[:16]>.lean    the private copy
    <scratch>/<digest[:16]>/ForallCandidate_<digest[:16]>.olean   ``lean -o``; written only without errors
    <scratch>/audit-*/ForallAudit.lean                            imports that module, runs ``#print axioms``

The module name is fixed by ``--root`` (``lean -o`` needs one) and is unique, so no module on Lake's
``LEAN_PATH`` can shadow it. The audit file is separate because a candidate can print anything while it
is elaborated; the audit only trusts ``#print axioms`` output positioned in the audit file, followed by
a sentinel with a random name, and fails closed otherwise. Imported modules' ``initialize`` code still
runs in the audit process (``lean`` enables initializers), so the audit is a filter, not a proof: the
independent checker (``lean4checker``/``leanchecker``) and the frozen-statement layers do the rest.

Lake runs ``lean`` with the project's ``LEAN_PATH`` but *not* with the package's ``leanOptions``; those
(``autoImplicit = false`` for PutnamBench) are read from ``lakefile.toml`` and passed as ``-D``.
"""

from __future__ import annotations

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
from typing import Any

from pytest_forall.core.model import Layer, Task, sha256_bytes
from pytest_forall.core.proc import ProcResult, run_command
from pytest_forall.core.prover import AxiomAudit, CompileResult
from pytest_forall.core.registry import hookimpl

REPO = Path(__file__).resolve().parents[3]
SETUP = REPO / "lean_env" / "setup"
DEFAULT_PROJECT = REPO / "lean_env" / "putnam"
#: The strict allow-list. PutnamBench's own rule is the same set (option ``lean_rules_axioms`` sets that one).
STRICT_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
MODULE_PREFIX = "ForallCandidate_"
AUDIT_SENTINEL = "forall_audit_end_"
CHECKERS = ("leanchecker", "lean4checker")

_SORRY = re.compile(r"declaration uses\b.*\bsorry\b", re.DOTALL)
_HEARTBEATS = re.compile(
    r"\(deterministic\) timeout|maximum number of heartbeats|\(kernel\) deterministic timeout"
)
_STACK_OVERFLOW = "Stack overflow detected"
_CRASH_CODES = (134, -6)  # SIGABRT: seen as 134 through Lake or a shell, as -6 by a direct parent
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


def is_sorry_warning(message: dict[str, Any]) -> bool:
    return message.get("kind") == "hasSorry" or bool(_SORRY.search(message["data"]))


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


def failure(rc: int, timed_out: bool, messages: list[dict[str, Any]], stderr: str, raw: list[str],
            timeout: float, *, allow_sorry: bool) -> tuple[str, str]:
    """``(class, reason)`` of a rejected elaboration, ``("", "")`` when it passed.

    Classes: ``timeout`` (wall clock), ``crash`` (abort / stack overflow), ``heartbeats``, ``error``,
    ``exit`` (non-zero exit without an error message), ``sorry``.
    """
    if timed_out:
        return "timeout", f"wall-clock timeout after {timeout:.0f} s (process group killed)"
    crash_text = _STACK_OVERFLOW in stderr or any(_STACK_OVERFLOW in line for line in raw)
    if rc in _CRASH_CODES or crash_text:
        return "crash", f"lean crashed (exit {rc}): {(stderr.strip() or ' '.join(raw))[-300:]}"
    errors = [m for m in messages if m["severity"] == "error"]
    heartbeat = next((m for m in errors if is_heartbeat_timeout(m)), None)
    if heartbeat is not None:
        return "heartbeats", f"heartbeat limit reached: {heartbeat['data'].splitlines()[0]}"
    if errors:
        return "error", errors[0]["data"]
    if rc != 0:
        return "exit", f"lean exited with code {rc}: {(stderr.strip() or ' '.join(raw))[-300:]}"
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


# --- the backend ---------------------------------------------------------------------------------


class LeanProver:
    """Lean 4 through Lake; ``runner`` is swapped for the sandbox's runner when sandboxing is on.

    Options: ``lean_bin`` (directory holding ``lake``/``lean``; env ``FORALL_LEAN_BIN``), ``lean_project``
    (Lake project with Mathlib, default ``lean_env/putnam``), ``lean_rules_axioms`` (the benchmark's
    allowed axioms), ``lean_required_modules`` (default ``Mathlib``), ``lean_options`` (``-D`` options,
    default: ``[leanOptions]`` of the project's ``lakefile.toml``), ``lean_checker`` (path of
    ``leanchecker``/``lean4checker``), ``lean_checker_fresh`` (default true), ``lean_mem_mb`` (RLIMIT_AS,
    default 16384; 0 = none).
    """

    name = "lean"
    ext = "lean"

    def __init__(self, options: dict[str, Any] | None = None, runner: Runner = run_command) -> None:
        opts = options or {}
        bin_dir = opts.get("lean_bin") or os.environ.get("FORALL_LEAN_BIN")
        self.bin_dir = Path(str(bin_dir)).expanduser() if bin_dir else None
        self.project = Path(str(opts.get("lean_project") or DEFAULT_PROJECT)).expanduser().resolve()
        self.rules_axioms = frozenset(_option_list(opts.get("lean_rules_axioms"), STRICT_AXIOMS))
        self.required_modules = _option_list(opts.get("lean_required_modules"), ("Mathlib",))
        self.lean_options: dict[str, str] | None = (
            _flatten(dict(opts["lean_options"])) if isinstance(opts.get("lean_options"), dict) else None
        )
        self.checker_option = str(opts.get("lean_checker") or "")
        fresh = str(opts.get("lean_checker_fresh", True)).lower()
        self.checker_fresh = fresh not in ("false", "0", "no", "off")
        self.mem_mb = int(opts.get("lean_mem_mb", 16384) or 0) or None
        self.runner = runner
        self._probed: str | None = None
        self._sysroot = ""
        self._builds: dict[str, _Build] = {}
        self._scratch: Path | None = None

    # -- helpers ---------------------------------------------------------------------------------

    def _tool(self, name: str) -> str | None:
        if self.bin_dir is not None:
            path = self.bin_dir / name
            return str(path) if path.is_file() and os.access(path, os.X_OK) else None
        return shutil.which(name)

    def _fix(self) -> str:
        command = str(SETUP) if self.project == DEFAULT_PROJECT else f"{SETUP} {self.project}"
        return f"run `{command}` (installs elan, the toolchain and Mathlib's prebuilt cache; needs internet)"

    def _scratch_dir(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="forall-lean-"))
            weakref.finalize(self, shutil.rmtree, str(self._scratch), True)
        return self._scratch

    def _dash_d(self) -> list[str]:
        """The project's ``leanOptions`` as ``-D`` flags, because ``lake env lean`` does not apply them."""
        if self.lean_options is None:
            lakefile = self.project / "lakefile.toml"
            table: dict[str, Any] = {}
            if lakefile.is_file():
                table = tomllib.loads(lakefile.read_text(encoding="utf-8")).get("leanOptions", {})
            self.lean_options = _flatten(table)
        return [f"-D{key}={value}" for key, value in sorted(self.lean_options.items())]

    def _lake(self, args: list[str], timeout: float, lean_path: Path | None = None) -> ProcResult:
        """``lake <args>`` in the project; an inherited ``LEAN_PATH`` is dropped so only ours is added."""
        env = dict(os.environ)
        env.pop("LEAN_PATH", None)
        if self.bin_dir is not None:
            env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        if lean_path is not None:
            env["LEAN_PATH"] = str(lean_path)
        lake = self._tool("lake") or "lake"
        return self.runner([lake, *args], cwd=self.project, timeout=timeout, env=env, mem_mb=self.mem_mb)

    def _unfetched(self) -> str:
        """Packages missing on disk, judged from the manifest so that `lake env` never starts a clone."""
        manifest = self.project / "lake-manifest.json"
        if not manifest.is_file():
            fetched_nothing = f"{self.project} has no lake-manifest.json: its packages were never fetched"
            return fetched_nothing if self.required_modules else ""
        data = json.loads(manifest.read_text(encoding="utf-8"))
        packages_dir = self.project / str(data.get("packagesDir") or ".lake/packages")
        missing = [
            str(p["name"]) for p in data.get("packages", []) if not (packages_dir / str(p["name"])).is_dir()
        ]
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
        argv = ["env", "lean", "--json", *self._dash_d(), f"--root={directory}", "-o", str(build.olean),
                str(path)]
        proc = self._lake(argv, timeout)
        messages, raw = parse_lean_output(proc.stdout)
        output = proc.stdout + (f"\n--- stderr ---\n{proc.stderr}" if proc.stderr.strip() else "")
        if proc.returncode == 127 and not proc.stdout:
            build.result = CompileResult(
                ok=False,
                infra=f"lake could not be started: {proc.stderr.strip()}; {self._fix()}",
                output=output,
                duration=proc.duration,
            )
            return build
        klass, reason = failure(
            proc.returncode, proc.timed_out, messages, proc.stderr, raw, timeout, allow_sorry=allow_sorry
        )
        if klass not in ("", "error"):  # make first_error say why; marked as ours, not Lean's
            messages.insert(0, own_message(reason, f"forall.{klass}"))
        build.result = CompileResult(
            ok=not klass,
            digest=sha256_bytes(path.read_bytes()),
            duration=proc.duration,
            timed_out=proc.timed_out,
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

    # -- Prover protocol ---------------------------------------------------------------------------

    def probe(self, workspace: Path) -> str:
        """Check the toolchain and that the project's ``LEAN_PATH`` holds a Mathlib build (cached)."""
        if self._probed is None:
            self._probed = self._probe()
        return self._probed

    def _probe(self) -> str:
        missing = [tool for tool in ("lake", "lean") if self._tool(tool) is None]
        if missing:
            where = f"in {self.bin_dir} (FORALL_LEAN_BIN / option lean_bin)" if self.bin_dir else "on PATH"
            return f"Lean toolchain not found: no {' or '.join(missing)} {where}; {self._fix()}"
        if not any((self.project / f).is_file() for f in ("lakefile.toml", "lakefile.lean")):
            return f"no Lake project at {self.project} (option lean_project); {self._fix()}"
        unfetched = self._unfetched()
        if unfetched:
            return f"{unfetched}; {self._fix()}"
        proc = self._lake(["env", "printenv", "LEAN_PATH", "LEAN_SYSROOT"], timeout=300)
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) < 2:
            return (
                f"`lake env printenv LEAN_PATH LEAN_SYSROOT` failed in {self.project} "
                f"(exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-300:]}; {self._fix()}"
            )
        entries = [Path(p) for p in lines[0].split(os.pathsep) if p]
        self._sysroot = lines[1].strip()
        unbuilt = [
            m
            for m in self.required_modules
            if not any((e / (m.replace(".", "/") + ".olean")).is_file() for e in entries)
        ]
        if unbuilt:
            return (
                f"{', '.join(unbuilt)} is not built in {self.project} (no .olean on the LEAN_PATH that "
                f"`lake env` sets); {self._fix()}"
            )
        return ""

    def version(self) -> str:
        """``lean --version`` as the project's toolchain reports it, for the audit record."""
        proc = self._lake(["env", "lean", "--version"], timeout=60)
        return proc.stdout.strip()

    def check_template(self, task: Task, workspace: Path, timeout: float) -> CompileResult:
        infra = self.probe(workspace)
        if infra:
            return CompileResult(ok=False, infra=infra)
        result = self._elaborate(task.template.encode("utf-8"), timeout, allow_sorry=True).result
        if not result.ok and not result.infra:
            result.infra = f"template does not compile here: {result.first_error.strip()[:300]}"
        return result

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
        """Elaborate a private copy; the digest is of the candidate as read *after* compilation."""
        infra = self.probe(workspace)
        if infra:
            return CompileResult(ok=False, infra=infra)
        result = self._elaborate(candidate.read_bytes(), timeout, allow_sorry=False).result
        after = sha256_bytes(candidate.read_bytes())
        if not result.infra and after != result.digest:
            result.ok = False
            changed = own_message("the candidate changed while it was being compiled", "forall.changed")
            result.messages.insert(0, changed)
            result.digest = after
        return result

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        """``#print axioms`` from a separate file importing the compiled candidate; oddities fail closed."""
        infra = self.probe(workspace)
        if infra:
            return AxiomAudit(ok=False, reason=infra, infra=infra)
        if not task.theorem_name:
            return AxiomAudit(ok=False, reason="the task names no theorem to audit")
        build = self._built(candidate.read_bytes(), timeout)
        if not build.olean_intact():
            return AxiomAudit(
                ok=False,
                reason=f"the candidate did not compile to an .olean: "
                f"{build.result.first_error.strip()[:300]}",
                output=build.result.output,
            )
        sentinel = f"{AUDIT_SENTINEL}{secrets.token_hex(8)}"
        audit_dir = Path(tempfile.mkdtemp(prefix="audit-", dir=self._scratch_dir()))
        audit = audit_dir / "ForallAudit.lean"
        audit.write_text(
            f"import {build.module}\n#print axioms {task.theorem_name}\n"
            f"theorem {sentinel} : True := trivial\n#print axioms {sentinel}\n",
            encoding="utf-8",
        )
        proc = self._lake(["env", "lean", "--json", str(audit)], timeout, lean_path=build.directory)
        output = proc.stdout + proc.stderr
        problem, report = self._read_audit(proc, str(audit), sentinel, timeout)
        if report is None:
            return AxiomAudit(ok=False, reason=problem, output=output)
        name, axioms = report
        if name != task.theorem_name:
            return AxiomAudit(
                ok=False,
                axioms=axioms,
                output=output,
                reason=f"#print axioms reported {name!r}, expected {task.theorem_name!r}",
            )
        strict_bad = [a for a in axioms if a not in STRICT_AXIOMS]
        rules_bad = [a for a in axioms if a not in self.rules_axioms]
        reason = (
            f"axioms outside the benchmark's rule: {rules_bad}"
            if rules_bad
            else f"axioms outside the strict allow-list: {strict_bad}"
            if strict_bad
            else ""
        )
        return AxiomAudit(ok=True, axioms=axioms, strict_ok=not strict_bad, rules_ok=not rules_bad,
                          reason=reason, output=output)

    @staticmethod
    def _read_audit(
        proc: ProcResult, audit: str, sentinel: str, timeout: float
    ) -> tuple[str, tuple[str, list[str]] | None]:
        """The theorem's ``(name, axioms)``, trusted only when the output holds exactly that report on the
        audit file's line 2 and then the sentinel's on line 4; otherwise ``(reason, None)``."""
        if proc.timed_out:
            return f"axiom audit timed out after {timeout:.0f} s", None
        messages, _ = parse_lean_output(proc.stdout)
        errors = [m["data"] for m in messages if m["severity"] == "error"]
        if proc.returncode != 0 or errors:
            return f"audit file did not elaborate (exit {proc.returncode}): " + (
                errors[0] if errors else (proc.stderr or proc.stdout).strip()[-300:]
            ), None
        mentions = [m for m in messages if "axioms" in m["data"]]
        if len(mentions) != 2:
            return f"expected two #print axioms reports (theorem, sentinel), found {len(mentions)}", None
        parsed = []
        for message, line in zip(mentions, (2, 4)):
            report = parse_print_axioms(message["data"])
            if report is None:
                return f"unparseable #print axioms output: {message['data'][:300]!r}", None
            if (
                message["severity"] != "information"
                or message.get("fileName") != audit
                or (message.get("pos") or {}).get("line") != line
            ):
                return (
                    f"#print axioms report not where the audit file put it: {json.dumps(message)[:300]}",
                    None,
                )
            parsed.append(report)
        if parsed[1] != (sentinel, []):
            return "the audit's closing sentinel is missing", None
        return "", parsed[0]

    def _checker(self) -> str | None:
        if self.checker_option:
            return self.checker_option if shutil.which(self.checker_option) else None
        for name in CHECKERS:
            found = self._tool(name) or shutil.which(name)
            if found:
                return found
            if self._sysroot and os.access(Path(self._sysroot) / "bin" / name, os.X_OK):
                return str(Path(self._sysroot) / "bin" / name)
        return None

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        """Replay the compiled module in Lean's kernel with ``leanchecker``/``lean4checker`` if installed."""
        infra = self.probe(workspace)
        if infra:
            return Layer("independent_check", None, f"not judged: {infra}")
        checker = self._checker()
        if checker is None:
            return Layer(
                "independent_check", None, "not judged: neither leanchecker nor lean4checker is installed"
            )
        build = self._built(candidate.read_bytes(), timeout)
        if not build.olean_intact():
            return Layer("independent_check", False, "the candidate did not compile to an .olean")
        argv = ["env", checker, *(["--fresh"] if self.checker_fresh else []), build.module]
        proc = self._lake(argv, timeout, lean_path=build.directory)
        output = (proc.stdout + proc.stderr).strip()
        name = Path(checker).name
        evidence = {"checker": name, "argv": argv, "returncode": proc.returncode, "output": output[-4000:]}
        if proc.timed_out:
            return Layer("independent_check", None, f"not judged: {name} timed out after {timeout:.0f} s",
                         evidence)
        if proc.returncode != 0:
            return Layer("independent_check", False, f"{name} rejected the compiled module: {output[-400:]}",
                         evidence)
        return Layer("independent_check", True, "", evidence)

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        """Syntax screen, frozen statement and shadowing guard (``pytest_forall.lang.lean.screen``)."""
        from pytest_forall.lang.screens import lean_static_layers

        return lean_static_layers(task.template, text, theorem_name=task.theorem_name)


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> LeanProver | None:
    return LeanProver(options) if name == "lean" else None
