"""Prover backends: what the verifier needs from Rocq, Lean or any other kernel.

A backend implements :class:`Prover`; the built-in ones are registered through the
``pytest_forall_make_prover`` hook, so a third party can add a prover with an entry point.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_forall.core.model import Layer, Task
from pytest_forall.core.proc import ProcResult


@dataclass
class CompileResult:
    """The outcome of elaborating one candidate file."""

    ok: bool
    infra: str = ""          # non-empty: the toolchain, not the proof, failed (missing binary, template broken here…)
    digest: str = ""         # SHA-256 of the bytes that were compiled, read back *after* compilation
    duration: float = 0.0
    timed_out: bool = False
    #: why the result is an accident of this machine, not a judgement (timed out, killed): never cached
    accident: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)  # structured diagnostics
    output: str = ""         # the prover's raw output, for the audit record
    artifact: str = ""       # compiled object (.vo / .olean) when the prover leaves one
    #: (start byte, end byte, the prover's rendering) of each sentence it executed, when it reports them
    sentences: list[tuple[int, int, str]] = field(default_factory=list)
    #: (start byte, end byte, kind, name) of each declaration the prover reports having made, when it reports them
    declarations: list[tuple[int, int, str, str]] = field(default_factory=list)

    @property
    def first_error(self) -> str:
        """The first error's text; stripped, so one that starts with a newline (Coq's "Error:" alone on its
        line, the text below) still shows its text on a one-line summary."""
        for m in self.messages:
            if m.get("severity") == "error":
                return str(m.get("data", "")).strip()[:2000]
        return self.output.strip()[-2000:]

    def first_error_at(self, file: str) -> str:
        """:attr:`first_error` as ``file:line: text`` when the prover gave its line (as the messages of
        ``forall verify --json`` have it), so a failure reads like a compiler's."""
        for m in self.messages:
            if m.get("severity") == "error":
                line = m.get("line") or (m.get("pos") or {}).get("line")
                return f"{file}:{line}: {self.first_error}" if line else self.first_error
        return self.first_error


@dataclass
class AxiomAudit:
    """Axioms a compiled theorem depends on, classified against the suite's policy."""

    ok: bool                  # output present and parsed (fail closed otherwise)
    axioms: list[str] = field(default_factory=list)
    strict_ok: bool = False   # every axiom is in the strict allow-list
    rules_ok: bool = False    # every axiom is permitted by the benchmark's own rule
    reason: str = ""
    output: str = ""
    infra: str = ""
    guarantee: str = ""       # the guarantee clause this audit establishes when it passes (audit record)
    #: axioms counted strict because the project's maintainer declared them its foundations (project mode's
    #: ``--forall-project-axioms``): named in the audit record and the row, so a reader sees them
    project_axioms: list[str] = field(default_factory=list)


class Prover(Protocol):
    """What a prover backend provides to the verifier and the frontends."""

    name: str
    ext: str
    # Optional flag, not a member (a backend that says nothing runs its layers one after another):
    # ``concurrent_layers = True`` lets the verifier run ``compile`` beside ``check_template`` and
    # ``independent_check`` beside the statement check and the audit, each in its own thread (the backend's steps
    # write disjoint directories and are thread-safe). Read with ``getattr(prover, "concurrent_layers", False)``.
    # Optional method, not a member: ``judged_from_records(task, data) -> bool``, True when the backend judges the
    # candidate ``data`` without a prover process of its own (e.g. a project's own proof, judged from the project's
    # build): its layers then run one after another in the verifier's thread (two threads per candidate cost more than
    # such layers); the verdict is the same either way (see ``core.verify._alongside``).
    # Optional method, not a member: ``judged_at_once(task, data) -> bool``, True when the verdict on ``data`` needs no
    # process and no wait (everything it reads is in the process's memory): an item whose progress is not shown yet
    # then writes none before that verification (it ends within milliseconds; ``forall watch`` counts it from its
    # row). Say False whenever the verification may wait (a build, a session, a lock): that item's progress is shown.

    def probe(self, workspace: Path) -> str:
        """Return "" when the toolchain is usable for ``workspace``, else the reason and the fixing command."""
        ...

    def check_template(self, task: Task, workspace: Path, timeout: float) -> CompileResult:
        """Compile the unmodified template once; failure here is infra (the benchmark cannot run here)."""
        ...

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
        """Elaborate ``candidate`` (the exact bytes later digested) inside ``workspace``."""
        ...

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        """List the axioms of the task's theorem from a *separate* audit file that loads the compiled candidate."""
        ...

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        """Re-check the compiled artifact with an independent checker; ``ok=None`` when none is installed."""
        ...

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        """The layers that need no prover: syntax screen, frozen statement, shadowing guard."""
        ...


# --- optional capabilities: a backend has them when it has the members (``isinstance`` checks that) ---------------

@runtime_checkable
class Sandboxable(Protocol):
    """Its prover processes can run in the sandbox: every one goes through ``runner`` (a drop-in for
    :func:`pytest_forall.core.proc.run_command`), which the protocol replaces with the sandbox launcher, then sets
    ``sandboxed`` (paths the backend hands its tools change inside); ``sandbox_binds`` are the host paths those
    processes need, each bound read-only at the given inside path."""

    runner: Callable[..., ProcResult]
    sandboxed: bool

    @property
    def sandbox_binds(self) -> tuple[tuple[Path, str], ...]: ...


@runtime_checkable
class ChecksSentences(Protocol):
    """The prover reports the sentences it executed; they must be the screen's (``sentence_structure``)."""

    def sentence_check(self, task: Task, data: bytes, compiled: CompileResult) -> Layer: ...


@runtime_checkable
class ChecksStatement(Protocol):
    """The prover compares the elaborated statement with the template's (``elaborated_statement``)."""

    def statement_check(self, task: Task, workspace: Path, timeout: float) -> Layer: ...


@runtime_checkable
class NamesToolchain(Protocol):
    """The prover names the installation its verdicts come from (``coq-8.20.1 (root:…)``)."""

    def toolchain_label(self) -> str: ...


def toolchain_of(prover: object) -> str:
    """The installation a backend's verdicts come from, recorded in every verdict, result row and JUnit property;
    "" when the backend names none."""
    return str(prover.toolchain_label()) if isinstance(prover, NamesToolchain) else ""


@runtime_checkable
class ProvidesShellTools(Protocol):
    """The prover's commands for an agent's shell, from the installation the verifier runs (another version on the
    shell's PATH would let the actor compile against a Coq/Lean the verdict never sees): ``shell_tools(directory)``
    writes them into ``directory`` (first on the shell's PATH) and returns the read-only ``(host, inside)`` binds
    they need; () when the shell's own PATH already finds them."""

    def shell_tools(self, directory: Path) -> tuple[tuple[Path, str], ...]: ...


@runtime_checkable
class NamesChanges(Protocol):
    """The prover names a task's statement and what it rests on as the prover itself has them (project mode: kernel
    digests ``kernel_statement``, ``kernel_context``…), so the gate can say which of them changed (core/gating.py)."""

    def change_fields(self, task: Task, candidate: bytes | None = None) -> dict[str, str]:
        """``candidate``: the item's last submission, when this process has it (a verdict from the cache included)."""
        ...


@runtime_checkable
class Fingerprinted(Protocol):
    """The prover names the environment a verdict depends on besides the task and the candidate (the verdict cache's
    key, :mod:`pytest_forall.core.cache`): at least ``version`` and ``libraries``; raising means it cannot be named."""

    def fingerprint(self, task: Task) -> dict[str, str]: ...


@runtime_checkable
class ChecksAdvisories(Protocol):
    """The prover knows its kernel: ``kernel()`` names it (``{"prover", "version", "advisories": [ids in force]}``,
    in every verdict) and ``advisory_check`` rejects the constructs the known bugs of that kernel need
    (``kernel_advisories``). Its evidence ``requires_independent_check`` (a reason) makes an independent check
    that did not finish an infra verdict instead of an acceptance "not judged"."""

    def kernel(self) -> dict[str, Any]: ...

    def advisory_check(self, task: Task, workspace: Path, timeout: float) -> Layer: ...


# --- interactive proof sessions (the actor's goals/try/query tools, docs/tools.md) ---------------------------------

class SessionRefused(Exception):
    """Input an interactive session will not run (a line past the end, a command where tactics go, a query that is
    not one); the message is the one line the agent sees. Nothing ran, nothing changed."""


@dataclass
class SessionAnswer:
    """One interactive answer: ``status`` ``ok`` | ``error`` (the prover said no) | ``timeout`` (the call's budget
    ran out; the session was restarted) | ``infra`` (the prover process failed, never the proof's fault)."""

    status: str
    text: str
    #: why the session was restarted during this call ("" when it was not): infra-side, never a proof failure
    restarted: str = ""


class ToolchainProbeFailed(Exception):
    """A question to the toolchain (where its libraries are, whether one is installed) got no answer: it timed out, was
    killed or failed. The machine's or the installation's problem (infra, asked again next time), never an answer
    such as "not installed", which would silently change what a run tries."""


class SessionDied(Exception):
    """The session's prover process ended, or its replies stopped matching what was sent: it is restarted (infra)."""


class SessionTimeout(Exception):
    """No answer before the call's deadline: the process was stopped; the next call starts a new one."""


def call_restarting(body: Callable[[float], SessionAnswer], timeout: float, reset: Callable[[], None]) -> SessionAnswer:
    """Run ``body(deadline)`` under the call's ``timeout``: past it ``timeout`` (the session reset); a session that
    died is reset and the call retried once, and the answer says so (an infrastructure event, never a proof failure);
    two deaths in a row answer ``infra``. The caller holds the session's lock."""
    restarted = ""
    for attempt in (1, 2):
        try:
            answer = body(time.monotonic() + timeout)
        except SessionTimeout:
            reset()
            return SessionAnswer("timeout", f"no answer within {timeout:g} s: the prover session was stopped and "
                                 "restarts on the next call (the file is unchanged)", "timeout")
        except SessionDied as exc:
            reset()
            restarted = f"the prover session died ({exc}) and was restarted"
            if attempt == 2:
                return SessionAnswer("infra", f"{restarted} twice; the file is unchanged", restarted)
            continue
        answer.restarted = restarted
        if restarted:
            answer.text += f"\n({restarted}: an infrastructure event, not a proof failure)"
        return answer
    raise AssertionError("unreachable")


class ProofSession(Protocol):
    """A warm prover process for one item: it keeps the template's imports loaded and reuses the longest unchanged
    prefix of the candidate between calls. ``data`` is the candidate's bytes as read from disk by the caller, who
    never writes them; ``line`` 0 means the end of the file. Each call is bounded by the session's timeout."""

    def goals(self, data: bytes, line: int) -> SessionAnswer: ...

    def try_tactics(self, data: bytes, line: int, tactics: str) -> SessionAnswer: ...

    def query(self, command: str) -> SessionAnswer: ...

    def warm(self) -> None:
        """Load the template's context now (called in the background when the actor starts)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ProofTools:
    """What the actor is told about the interactive tools, in its language's words (the language pack writes them,
    so the tool layer never names a prover): the brief (when to use goals/try rather than compile/submit, in the
    actor's prompt, ``start()`` and the server's instructions) and each tool's description."""

    brief: str
    goals: str
    try_: str
    query: str


@runtime_checkable
class Interactive(Protocol):
    """The prover can hold a warm session for the interactive tools (``goals``, ``try``, ``query``)."""

    def proof_tools(self) -> ProofTools | None:
        """The tools' texts, or None when this prover cannot offer them here (then they are not offered)."""
        ...

    def proof_session(self, task: Task, timeout: float, excluded: tuple[str, ...]) -> ProofSession: ...


def proof_tools(prover: object) -> ProofTools | None:
    """The interactive tools ``prover`` offers, or None (not :class:`Interactive`, or unavailable here)."""
    return prover.proof_tools() if isinstance(prover, Interactive) else None
