"""``replay``: stored proofs as the actor. ``--forall-proofs DIR`` holds ``<task id>.v`` / ``<task id>.lean``;
without it, an item that carries the project's own proof (``meta["own_candidate"]``, library mode) replays that.

This is how CI gates merges on proof regressions: every stored proof goes through the full verifier again.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pytest_forall.core.actor import AgentSession, SessionContext, TurnResult
from pytest_forall.core.model import MAX_CANDIDATE_BYTES, Task
from pytest_forall.core.registry import hookimpl


class ReplaySession:
    def __init__(self, ctx: SessionContext, proofs: Path | None) -> None:
        self.ctx = ctx
        self.proofs = proofs
        self.session_id = ""
        self.used = False

    def turn(self, prompt: str, *, timeout: float | None) -> TurnResult:
        if self.used:
            return TurnResult(gave_up="the stored proof was already submitted")
        self.used = True
        name = self.ctx.task.candidate_name
        if self.proofs is None:
            own = self.ctx.task.meta.get("own_candidate")
            if own:  # a project item: the project's own proof of it, as the project has it
                (self.ctx.workspace / name).write_text(str(own), encoding="utf-8")
                return TurnResult(gave_up="the project's own proof submitted; replay does not revise", submitted=True)
            if "own_candidate" in self.ctx.task.meta:
                (self.ctx.workspace / name).unlink(missing_ok=True)
                return TurnResult(gave_up="the project has no proof of this item (it is admitted)")
            return TurnResult(infra="replay needs --forall-proofs DIR (a directory of stored proofs)")
        stored = self.proofs / name
        if not stored.is_file():
            (self.ctx.workspace / name).unlink(missing_ok=True)
            return TurnResult(gave_up=f"no stored proof {stored}")
        size = stored.stat().st_size
        if size > MAX_CANDIDATE_BYTES:  # refused before a byte of it is copied into the workspace
            (self.ctx.workspace / name).unlink(missing_ok=True)
            return TurnResult(gave_up=f"stored proof {stored} is {size} bytes, over the limit of "
                                      f"{MAX_CANDIDATE_BYTES} bytes for a candidate")
        shutil.copyfile(stored, self.ctx.workspace / name)
        return TurnResult(gave_up="stored proof submitted; replay does not revise", submitted=True)

    def close(self) -> None:
        pass


class ReplayFrontend:
    name = "replay"
    is_agent = False
    free_turns = True
    #: ``--forall-proofs`` is checked at configure time (exists, a readable directory)
    reads_proofs = True

    def __init__(self, options: dict[str, Any]) -> None:
        proofs = options.get("proofs")
        self.proofs = Path(str(proofs)).expanduser() if proofs else None

    def probe(self) -> str:
        if self.proofs is not None and not self.proofs.is_dir():
            return f"--forall-proofs {self.proofs} is not a directory"
        return ""

    def start(self, ctx: SessionContext) -> AgentSession:
        return ReplaySession(ctx, self.proofs)

    def stored_candidate(self, task: Task) -> bytes | None:
        """What :meth:`ReplaySession.turn` would put in the workspace, when it puts a file there."""
        if self.proofs is None:
            own = task.meta.get("own_candidate")
            return str(own).encode("utf-8") if own else None
        stored = self.proofs / task.candidate_name
        try:
            if not stored.is_file() or stored.stat().st_size > MAX_CANDIDATE_BYTES:
                return None
            return stored.read_bytes()
        except OSError:
            return None


@hookimpl(trylast=True)
def pytest_forall_make_frontend(name: str, options: dict[str, Any]) -> ReplayFrontend | None:
    return ReplayFrontend(options) if name == "replay" else None
