"""The layered verifier: every candidate passes the same named layers, each leaving evidence.

Layers, in order: ``syntax_screen``, ``frozen_statement``, ``shadowing_guard`` (static, no prover),
``template`` (the unmodified problem compiles here, else the run is *infra*), ``elaboration`` (the
prover compiles a private copy of the exact bytes that are then digested), ``sentence_structure``
(where the prover reports the sentences it executed: they must be the screen's), ``elaborated_statement``
(where the prover can compare the elaborated statement with the template's), ``axiom_audit`` (from a
separate audit file), ``kernel_advisories`` (where the prover knows its kernel's known bugs) and
``independent_check`` (a second checker; "not judged" when absent or out of budget, infra when an earlier
layer requires it). An accepted verdict lists the guarantee clauses its layers established (``Verdict.guarantee``).
The pytest items and ``forall verify`` both call :func:`verify_candidate`.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_forall.core.binds import OPTION as BINDS_OPTION
from pytest_forall.core.binds import parse_ro_binds
from pytest_forall.core.model import (
    ACCEPT,
    INFRA,
    MAX_CANDIDATE_BYTES,
    REJECT,
    Layer,
    Task,
    Verdict,
    sha256_bytes,
)
from pytest_forall.core.proc import in_background
from pytest_forall.core.prover import (
    ChecksAdvisories,
    ChecksSentences,
    ChecksStatement,
    CompileResult,
    Prover,
    toolchain_of,
)

DEFAULT_TIMEOUT = 300.0


def at_file(layer: Layer, file: str) -> Layer:
    """A rejecting static layer's reason as ``file:line: text`` (issue 33: a syntax error named its line but not its
    file), as a compiler and the prover's own errors (``CompileResult.first_error_at``) say it."""
    line = layer.evidence.get("line")
    if layer.ok is not False or not isinstance(line, int) or isinstance(line, bool):
        return layer
    reason = layer.reason.removeprefix(f"line {line}: ").replace(f" at line {line}: ", ": ", 1)
    return replace(layer, reason=f"{file}:{line}: {reason}")


def _decide(layers: list[Layer], digest: str, axioms: tuple[str, ...], strict: bool, compiles: int) -> Verdict:
    if any(layer.infra for layer in layers):
        verdict = INFRA
    elif any(layer.ok is False for layer in layers):
        verdict = REJECT
    else:
        verdict = ACCEPT
    guarantee = tuple(_guarantee(layers)) if verdict == ACCEPT else ()
    return Verdict(verdict, strict and verdict == ACCEPT, digest, tuple(layers), axioms, compiles, guarantee)


def _guarantee(layers: list[Layer]) -> Iterator[str]:
    """The clauses an accepted candidate got: each passing layer's own ``guarantee``, and each layer that could
    not judge, said so (e.g. "independent check: not judged", counted separately in the summary)."""
    for layer in layers:
        if layer.ok is True and layer.evidence.get("guarantee"):
            yield str(layer.evidence["guarantee"])
        elif layer.ok is None:
            yield f"{layer.name.replace('_', ' ')}: not judged ({layer.reason})"


def verify_candidate(task: Task, prover: Prover, data: bytes, *, builddir: Path | None = None,
                     timeout: float = DEFAULT_TIMEOUT, static_only: bool = False) -> Verdict:
    """Judge ``data`` (the candidate's bytes, already read without following symlinks); the verdict names the
    toolchain that judged it, and its kernel and the advisories in force for it when the backend knows them
    (:class:`ChecksAdvisories`)."""
    verdict = _verify_candidate(task, prover, data, builddir=builddir, timeout=timeout, static_only=static_only)
    kernel: dict[str, Any] = {}
    if isinstance(prover, ChecksAdvisories):
        try:
            kernel = prover.kernel()
        except Exception as exc:  # noqa: BLE001 - a kernel that cannot be named is said so, never guessed
            kernel = {"problem": f"{type(exc).__name__}: {exc}"}
    # a layer that knows an advisory is not kept out of this proof says so (``not_covered``: id -> why): the verdict
    # never claims the backend's general coverage for it
    uncovered = {k: str(v) for layer in verdict.layers for k, v in (layer.evidence.get("not_covered") or {}).items()}
    if uncovered and "coverage" in kernel:
        kernel = {**kernel, "coverage": {**kernel["coverage"], **uncovered}}
    toolchain = toolchain_of(prover)
    if toolchain:
        kernel = {**kernel, "toolchain": toolchain}
    return replace(verdict, kernel=kernel) if kernel else verdict


def _verify_candidate(task: Task, prover: Prover, data: bytes, *, builddir: Path | None,
                      timeout: float, static_only: bool) -> Verdict:
    digest = sha256_bytes(data)
    if task.problem:  # the template, not the candidate, is unusable: no verdict on the proof
        return _decide([Layer("task", False, f"{task.source_path}: {task.problem}", infra=True)], digest, (),
                       False, 0)
    if len(data) > MAX_CANDIDATE_BYTES:
        return _decide([Layer("syntax_screen", False, f"the candidate has {len(data)} bytes; the limit is "
                              f"{MAX_CANDIDATE_BYTES}")], digest, (), False, 0)
    try:
        # A leading UTF-8 byte order mark is skipped by coqc (and editors write one); the static layers read
        # the text after it, the prover compiles the exact bytes. A BOM anywhere else is a format character.
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _decide([Layer("syntax_screen", False, f"candidate is not UTF-8: {exc}")], digest, (), False, 0)
    try:
        layers = [at_file(layer, task.candidate_name) for layer in prover.static_layers(task, text)]
    except Exception as exc:  # noqa: BLE001 - a crashing layer must reject, never accept
        layers = [Layer("syntax_screen", False, f"the static layers crashed: {type(exc).__name__}: {exc}")]
    if static_only and not layers:
        return _decide([Layer("static", False, f"the {prover.name} backend has no static layers", infra=True)],
                       digest, (), False, 0)
    if static_only or any(layer.ok is False for layer in layers):
        return _decide(layers, digest, (), False, 0)
    own_dir = builddir is None
    # a candidate judged from the backend's records is compiled nowhere: its copy goes to this thread's scratch
    # directory (made once) and is removed, not a directory made and removed per candidate
    reused = own_dir and _judged_from_records(prover, task, data)
    if builddir is not None:
        build = builddir
    else:
        build = _scratch() if reused else Path(tempfile.mkdtemp(prefix="forall-build-"))
    try:
        return _verify_compiled(task, prover, data, layers, build, timeout, digest)
    except Exception as exc:  # noqa: BLE001 - a crash in a prover layer is infra, never an accept
        crashed = Layer("verifier", False, f"the verifier crashed: {type(exc).__name__}: {exc}", infra=True)
        return _decide(layers + [crashed], digest, (), False, 0)
    finally:
        if reused:
            (build / "cand" / task.candidate_name).unlink(missing_ok=True)
        elif own_dir:
            shutil.rmtree(build, ignore_errors=True)


#: per thread of this process: a scratch directory for the candidates judged from a backend's records
_SCRATCH: dict[int, Path] = {}


def _scratch() -> Path:
    """This thread's scratch directory (``mkdtemp``: private, never a name another user could plant), made on first
    use and removed when the process exits."""
    ident = threading.get_ident()
    found = _SCRATCH.get(ident)
    if found is None or not found.is_dir():
        found = _SCRATCH[ident] = Path(tempfile.mkdtemp(prefix="forall-build-"))
        atexit.register(shutil.rmtree, found, ignore_errors=True)
    return found


class _Deferred:
    """A step run when its result is asked for: the sequential stand-in for :func:`in_background`'s future."""

    def __init__(self, step: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._step, self._args = step, args

    def result(self) -> Any:
        return self._step(*self._args)


@contextmanager
def _alongside(concurrent: bool, step: Callable[..., Any], *args: Any) -> Iterator[Any]:
    """``step(*args)`` beside the block when the backend allows it (``concurrent_layers``), else when asked for.

    Either way the block asks for the result only after the layers before it passed, so the verdict and its
    layers are the same; concurrency only overlaps two prover processes (the candidate's compile with the
    template check, the independent checker with the audit), and an unneeded step is killed, not awaited.
    The independent checker overlaps the audit only while a core is idle (:func:`_idle_core`): on a busy machine
    the overlap gains no time and a candidate the judge rejects would pay for a checker run in vain.
    """
    if not concurrent:
        yield _Deferred(step, args)
        return
    with in_background(step, *args) as future:
        yield future


def _idle_core() -> bool:
    """A core is free beside the judge's process (the 1-minute load average leaves one of this process's cores
    unused): only then does the independent checker start before the judge has passed (issue 33 item 18). Either
    way the verdict is the same; the machine's load, not the candidate, decides only when coqchk starts."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores > 1 and os.getloadavg()[0] <= cores - 1


def _judged_from_records(prover: Prover, task: Task, data: bytes) -> bool:
    """The backend judges ``data`` from what it already has, no prover process of its own (``judged_from_records``,
    see :class:`~pytest_forall.core.prover.Prover`): no thread beside its layers."""
    judged = getattr(prover, "judged_from_records", None)
    return bool(judged(task, data)) if callable(judged) else False


def _verify_compiled(task: Task, prover: Prover, data: bytes, layers: list[Layer], build: Path,
                     timeout: float, digest: str) -> Verdict:
    """The layers that need the prover; ``digest``: the SHA-256 of ``data`` (hashed once per candidate)."""
    problem = prover.probe(build)
    if problem:
        return _decide(layers + [Layer("toolchain", False, problem, infra=True)], digest, (), False, 0)
    concurrent = bool(getattr(prover, "concurrent_layers", False)) and not _judged_from_records(prover, task, data)
    cand_dir = build / "cand"
    cand_dir.mkdir(parents=True, exist_ok=True)
    candidate = cand_dir / task.candidate_name
    candidate.write_bytes(data)
    with _alongside(concurrent, prover.compile, task, build, candidate, timeout) as compiling:
        template = prover.check_template(task, build, timeout)
        if not template.ok:
            layer = Layer("template", False, template.infra or template.first_error,
                          {"output": template.output[-4000:]}, infra=True)
            return _decide(layers + [layer], digest, (), False, 0)
        layers.append(Layer("template", True))
        compiled: CompileResult = compiling.result()
    evidence: dict[str, Any] = {"digest": compiled.digest, "duration_s": round(compiled.duration, 3),
                                "messages": compiled.messages[:50], "output": compiled.output[-8000:]}
    if compiled.ok and compiled.digest != digest:  # also when the prover reported no digest: fail closed
        layers.append(Layer("elaboration", False, "the compiled file's digest differs from the submitted bytes",
                            evidence))
        return _decide(layers, digest, (), False, 1)
    if not compiled.ok:
        accident = compiled.accident or ("timed out" if compiled.timed_out else "")
        if accident:  # past its CPU budget, or killed: the candidate's failure, but not one to keep (cache)
            evidence["accident"] = accident
        # a compile the machine starved (the wall backstop came, its CPU budget unspent) or could not start: infra
        reason = compiled.infra or compiled.first_error_at(task.candidate_name)
        layers.append(Layer("elaboration", False, reason, evidence,
                            infra=bool(compiled.infra)))
        return _decide(layers, digest, (), False, 1)
    layers.append(Layer("elaboration", True, "", evidence))
    if isinstance(prover, ChecksSentences):
        layers.append(prover.sentence_check(task, data, compiled))
        if layers[-1].ok is False:
            return _decide(layers, digest, (), False, 1)
    overlap = concurrent and _idle_core()  # coqchk beside the judge, or only once the judge passed
    with _alongside(overlap, prover.independent_check, task, build, candidate, timeout) as checking:
        if isinstance(prover, ChecksStatement):
            layers.append(prover.statement_check(task, build, timeout))
            if layers[-1].ok is False:
                return _decide(layers, digest, (), False, 1)
        if not candidate.is_file() or candidate.read_bytes() != data:  # the bytes compared, not hashed again
            layers.append(Layer("elaboration", False, "the candidate copy changed after compilation"))
            return _decide(layers, digest, (), False, 1)
        audit = prover.audit_axioms(task, build, candidate, timeout)
        layers.append(Layer("axiom_audit", audit.ok and audit.rules_ok, audit.reason,
                            {"axioms": audit.axioms, "strict": audit.strict_ok, "rules": audit.rules_ok,
                             "output": audit.output[-4000:], "guarantee": audit.guarantee,
                             **({"project_axioms": audit.project_axioms} if audit.project_axioms else {})},
                            infra=bool(audit.infra)))
        if layers[-1].ok is False or layers[-1].infra:
            return _decide(layers, digest, tuple(audit.axioms), False, 1)
        if isinstance(prover, ChecksAdvisories):
            advice = prover.advisory_check(task, build, timeout)
            layers.append(advice)
            if advice.ok is False or advice.infra:
                return _decide(layers, digest, tuple(audit.axioms), False, 1)
        layers.append(_required_check(layers, checking.result()))
    return _decide(layers, digest, tuple(audit.axioms), audit.strict_ok, 1)


def _required_check(layers: list[Layer], check: Layer) -> Layer:
    """An independent check that did not finish (or is absent) while an earlier layer requires it (e.g. a proof
    checked with the bytecode VM, which the independent checker re-checks without it) is infra, resumable with a
    larger checker budget, never an acceptance "not judged" the candidate could choose for itself."""
    required = next((str(layer.evidence["requires_independent_check"]) for layer in layers
                     if layer.evidence.get("requires_independent_check")), "")
    if not required or check.ok:
        return check
    if check.ok is not None:  # the checker that the construct required judged it: say what required it
        return Layer(check.name, False, f"{check.reason} (required: {required})",
                     {**check.evidence, "requires_independent_check": required}, infra=check.infra)
    return Layer(check.name, False, f"independent check required ({required}) did not finish: {check.reason}",
                 {**check.evidence, "requires_independent_check": required}, infra=True)


# --- forall verify -----------------------------------------------------------------------------------

def task_from_template(prover_name: str, template: Path) -> Task:
    """Build a task from a single template file the way the PutnamBench adapter would.

    The task id is the file's stem after following symlinks (``template -> …/putnam_1962_a2.v``); CRLF line
    endings and a leading byte order mark are read the way the prover reads them.
    """
    from pytest_forall.core.language import language

    resolved = template.resolve()
    text = resolved.read_bytes().decode("utf-8-sig")
    return language(prover_name).parse_problem(resolved.stem, resolved, text)


def resolve_template(path: Path) -> Path:
    """``path`` itself, or the file it names when it is a one-line pointer file (corpus ``template`` entries)."""
    if path.is_file() and path.stat().st_size < 4096:
        try:
            content = path.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError:
            return path
        if content and "\n" not in content and content.endswith((".v", ".lean")):
            bases = [path.parent, Path.cwd()]
            if os.environ.get("PUTNAMBENCH_ROOT"):
                bases.append(Path(os.environ["PUTNAMBENCH_ROOT"]))
            for base in bases:
                target = (base / content).expanduser()
                if target.is_file():
                    return target
    return path


def _print_human(verdict: Verdict) -> None:
    for layer in verdict.layers:
        mark = {True: "ok", False: "FAIL", None: "not judged"}[layer.ok]
        print(f"  {layer.name:<22} {mark}{'  ' + layer.reason if layer.reason else ''}")
    kind = "strict" if verdict.strict else ("rules-only" if verdict.accepted else "")
    print(f"verdict: {verdict.verdict}{' (' + kind + ')' if kind else ''}  sha256={verdict.digest}")
    if verdict.kernel:
        kernel = verdict.kernel
        print(f"kernel: {kernel.get('prover', '')} {kernel.get('version', kernel.get('problem', ''))}".rstrip()
              + (f" from {kernel['toolchain']}" if kernel.get("toolchain") else "")
              + (f"; advisories in force: {', '.join(kernel['advisories']) or 'none'}" if "advisories" in kernel else ""))
        for advisory, how in sorted(kernel.get("coverage", {}).items()):  # how each advisory in force is kept out
            print(f"  {advisory}: {how}")


def _usage_error(args: argparse.Namespace, message: str) -> int:
    print(f"forall verify: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        json.dump({"verdict": INFRA, "strict": False, "digest": "", "axioms": [], "compiles": 0,
                   "reason": f"usage: {message}", "layers": [{"name": "usage", "ok": False, "reason": message,
                                                              "infra": True}]}, sys.stdout, indent=2)
        print()
    return 2


def run_verify(args: argparse.Namespace) -> int:
    """Exit 0 accept, 1 reject, 2 infra or usage error (with ``--json`` an infra verdict is still printed)."""
    from pytest_forall.core.language import UnknownLanguage
    from pytest_forall.core.registry import builtin_plugin_manager

    try:
        template = resolve_template(Path(args.template).expanduser())
        task = task_from_template(args.prover, template)
    except UnknownLanguage as exc:
        return _usage_error(args, f"--prover {args.prover}: {exc}")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return _usage_error(args, f"cannot read template {args.template}: {exc}")
    try:
        candidate = Path(args.candidate).expanduser()
        if not candidate.is_file():
            raise OSError(f"{candidate} is not a file")
        data = candidate.read_bytes()
    except OSError as exc:
        return _usage_error(args, f"cannot read candidate {args.candidate}: {exc}")
    if args.timeout <= 0:
        return _usage_error(args, "--timeout must be positive")
    if args.checker_timeout < 0:
        return _usage_error(args, "--checker-timeout must not be negative")
    try:
        binds = parse_ro_binds(args.sandbox_ro, Path.cwd())
    except ValueError as exc:
        return _usage_error(args, f"--sandbox-ro {exc}")
    from pytest_forall.core.language import toolchain_problem

    toolchain, problem = toolchain_problem(args.prover, args.toolchain, Path.cwd())
    if problem:
        return _usage_error(args, f"--toolchain {problem}")
    with tempfile.TemporaryDirectory(prefix="forall-verify-") as scratch, _terminate_cleanly():
        options: dict[str, Any] = {"sandbox": args.sandbox, "sandbox_audit_dir": os.path.join(scratch, "sandbox"),
                                   "checker_timeout": args.checker_timeout, BINDS_OPTION: binds,
                                   "toolchain": toolchain}
        if args.cache_dir:
            options["cache_dir"] = args.cache_dir
        # the pack's own name: an alias (``coq``) reaches the same backend as ``rocq``
        prover = builtin_plugin_manager().hook.pytest_forall_make_prover(name=task.prover, options=options)
        if prover is None:
            return _usage_error(args, f"unknown prover {args.prover!r}")
        if args.theorem:
            task = Task(**{**task.to_wire(), "theorem_name": args.theorem})
        verdict = verify_candidate(task, prover, data, builddir=Path(scratch) / "build", timeout=args.timeout,
                                   static_only=args.static_only)
    # a location names the file the user gave, not the copy's name inside the build directory
    shown = f"{task.candidate_name}:"
    verdict = replace(verdict, layers=tuple(
        replace(layer, reason=str(args.candidate) + layer.reason[len(shown) - 1:]) if layer.reason.startswith(shown)
        else layer for layer in verdict.layers))
    if args.json:
        json.dump(verdict.to_wire(), sys.stdout, indent=2)
        print()
    else:
        _print_human(verdict)
    return {ACCEPT: 0, REJECT: 1}.get(verdict.verdict, 2)


class Terminated(SystemExit):
    """SIGTERM/SIGHUP/SIGINT while verifying: unwinds every ``finally``, so each prover's process group (and its
    sandbox) is killed and the scratch directory removed before ``forall verify`` exits."""


@contextmanager
def _terminate_cleanly() -> Iterator[None]:
    def stop(signum: int, _frame: object) -> None:
        raise Terminated(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def add_cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("verify", help="Verify one candidate proof against its template",
                            description="Run the verifier's layers on one candidate. Exit 0 accept, 1 reject, "
                                        "2 infra or usage error.")
    parser.add_argument("--prover", required=True, help="The prover whose language pack judges the candidate "
                                                          "(built in: rocq or its alias coq, lean)")
    parser.add_argument("--template", required=True, help="The problem file as the benchmark ships it")
    parser.add_argument("--candidate", required=True, help="The proof to judge")
    parser.add_argument("--theorem", default="", help="Theorem name (default: found in the template)")
    parser.add_argument("--static-only", action="store_true", help="Only the layers that need no prover")
    parser.add_argument("--json", action="store_true", help="Print the verdict as JSON")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="Seconds per prover call (a Rocq compile, judge or coqchk: CPU seconds, with a 10x wall-clock "
                             "backstop)")
    parser.add_argument("--cache-dir", default="", help="Where compiled templates are cached")
    parser.add_argument("--sandbox", choices=["bwrap", "none"], default="bwrap",
                        help="Run every prover process in the bubblewrap sandbox (default) or unsandboxed")
    parser.add_argument("--sandbox-ro", action="append", default=[], metavar="PATH[:INSIDE]",
                        help="Extra read-only bind for every prover process, e.g. a toolchain outside /usr "
                             "(repeatable; INSIDE defaults to PATH)")
    parser.add_argument("--toolchain", default="", metavar="PATH",
                        help="The prover installation every prover process runs from: a root filesystem, an opam "
                             "switch prefix or a bin/ directory (default: PATH); see docs/toolchains.md")
    parser.add_argument("--checker-timeout", type=float, default=0.0,
                        help="CPU seconds for the independent checker (default: --timeout); past them: not judged")
    parser.set_defaults(func=run_verify)


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_forall.core.verify …``: the same as ``forall verify …`` without the other subcommands'
    imports (the corpus tests start one process per candidate)."""
    parser = argparse.ArgumentParser(prog="forall")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["verify", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
