"""Frontends: who writes the candidate. Agent CLIs, stored proofs (``replay``), a tactic ``portfolio``.

A frontend opens :class:`AgentSession`s; a session is one resumable conversation bound to one
workspace. The protocol loop (:mod:`pytest_forall.core.protocol`) only ever calls ``turn`` on it, so the
same loop drives an offline frontend and a coding agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_forall.core.model import Budget, Task, Usage

if TYPE_CHECKING:
    from pytest_forall.core.prover import Prover

ACTOR = "actor"
REVIEWER = "reviewer"


@dataclass(frozen=True)
class SessionHandle:
    """What a later process needs to reopen a session: the frontend's id and the label of its private dirs.

    Agent CLIs keep their conversations in their HOME, so resuming means the same HOME (``label``) and the
    same id; ``turns`` keeps the per-turn audit file numbering going.
    """

    session_id: str
    label: str = ""
    turns: int = 0


@dataclass
class SessionContext:
    """Everything a frontend may use to start a session. ``audit_dir`` is outside the workspace."""

    task: Task
    workspace: Path
    audit_dir: Path
    role: str                      # ACTOR | REVIEWER
    prover: Prover
    budget: Budget
    options: dict[str, Any] = field(default_factory=dict)
    #: Called by a frontend each time it compiles; returns False when the compile budget is spent.
    charge_compile: Any = None
    #: Runs a command in the item's sandbox (argv, cwd, timeout, env) -> ProcResult; set by the workspace step.
    runner: Any = None
    #: Reopen this session (e.g. after an infra failure in an earlier run) instead of starting a new one.
    resume: SessionHandle | None = None
    #: Called by a frontend with what it is doing now ("statement audit: …"); ``forall watch`` shows it.
    progress: Any = None


@dataclass
class TurnResult:
    """What one turn of a session produced."""

    session_id: str = ""
    usage: Usage = field(default_factory=Usage)
    exit_code: int = 0
    final_text: str = ""
    #: non-empty when the turn failed for an infrastructure cause (credential, quota, 5xx, missing CLI…)
    infra: str = ""
    #: non-empty when the frontend gave up on its own (e.g. "no stored proof", "no tactic closed the goal")
    gave_up: str = ""
    #: the frontend put a file on disk to be judged (e.g. a stored proof), even if it equals the template
    submitted: bool = False
    timed_out: bool = False
    #: the actor says the statement is false (it should have proved ``False``-style refutation in the workspace)
    claims_false: bool = False
    #: why the statement audit the frontend ran did not search (``"timed out (…)"``: a wall-clock limit, not the CPU
    #: budget, ended it), "" when it searched or ran none: the row then reads ``statement_audit = not_searched``
    audit_not_searched: str = ""
    transcript: str = ""           # path of the raw event stream in the audit dir
    #: per-turn compile count done inside the frontend (e.g. portfolio, or an agent running ``coqc``)
    compiles: int = 0
    #: the prover commands an agent ran during the turn, as its event stream shows them (for the audit)
    compile_commands: list[str] = field(default_factory=list)
    #: non-empty when the turn ended by the actor's own doing although it looks like infra (its CLI killed from
    #: inside the sandbox, the memory bound, a provider failure the proxy did not see): judged, never infra
    own_fault: str = ""
    #: non-empty when the usage reported is below what the harness measured (``usage`` is then the larger)
    usage_disputed: str = ""
    #: what the sandbox's proxy saw of the turn's traffic to the provider (None: unsandboxed, not observed)
    traffic: dict[str, Any] | None = None


class AgentSession(Protocol):
    session_id: str

    def turn(self, prompt: str, *, timeout: float | None) -> TurnResult:
        """Run one turn: a fresh start on the first call, a resume of the same session afterwards."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class ResumableSession(Protocol):
    """A session a later process can reopen (the agent CLIs); offline sessions simply start again."""

    def handle(self) -> SessionHandle:
        """How to reopen this session later (see :class:`SessionHandle`)."""
        ...


@runtime_checkable
class StoresCandidates(Protocol):
    """A frontend whose one turn submits a candidate known before the turn runs (replay: a stored proof, or a
    project's own proof). The protocol asks the verdict cache about it first: an accepted verdict the cache holds
    is recorded without a workspace session (``ItemRun._accepted_from_cache``), the same row and audit files."""

    def stored_candidate(self, task: Task) -> bytes | None:
        """The bytes the turn would submit, or None when it would submit nothing (or cannot say)."""
        ...


class Frontend(Protocol):
    name: str
    #: True for coding agents that need a fresh reviewer; offline frontends have no reviewer by default.
    is_agent: bool
    # Optional flag, not a member: ``free_turns = True`` when a turn spends nothing (replay copies a stored file);
    # the template is then not checked before the first turn, since the verifier checks it anyway, beside the
    # candidate's compile. Read with ``getattr(frontend, "free_turns", False)``.

    def probe(self) -> str:
        """Return "" when usable, else the infra reason (e.g. CLI not installed) and how to fix it."""
        ...

    def start(self, ctx: SessionContext) -> AgentSession: ...
