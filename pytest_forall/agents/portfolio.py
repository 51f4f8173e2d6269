"""``portfolio``: the embedded default actor. Tries a ladder of closing tactics within the compile budget.

Every attempt counts as a compile; a tactic that closes the goal becomes a candidate that goes
through the full verifier like any agent's. A backend with an interactive session (Rocq's ``coqtop``) tries the
ladder in one session that loaded the statement once; others compile one candidate per tactic. The ladder
is the language pack's.
"""

from __future__ import annotations

from typing import Any

from pytest_forall.core.actor import AgentSession, SessionContext, TurnResult
from pytest_forall.core.language import language_or_plain
from pytest_forall.core.registry import hookimpl


class PortfolioSession:
    def __init__(self, ctx: SessionContext, tactic_timeout: float) -> None:
        self.ctx = ctx
        self.session_id = ""
        self.tactic_timeout = tactic_timeout
        self.done = False

    def turn(self, prompt: str, *, timeout: float | None) -> TurnResult:
        if self.done:
            return TurnResult(gave_up="portfolio has no further tactics")
        self.done = True
        _task, prover = self.ctx.task, self.ctx.prover
        if hasattr(prover, "try_tactics"):
            return self._interactive(timeout)
        return self._generic()

    def _budgeted(self, ladder: list[str]) -> list[str]:
        remaining = self.ctx.budget.compiles
        # keep one compile for the verifier's own check of the winning candidate
        return ladder if remaining is None else ladder[: max(0, remaining - 1)]

    def _interactive(self, timeout: float | None) -> TurnResult:
        """One prover session that loaded the statement once tries every tactic (Rocq's ``coqtop``)."""
        task, prover = self.ctx.task, self.ctx.prover
        ladder, prelude = language_or_plain(task.prover).portfolio_ladder()
        ladder = self._budgeted(ladder)
        winner, attempts, log = prover.try_tactics(  # type: ignore[attr-defined]
            task, self.ctx.workspace, ladder, self.tactic_timeout, prelude=prelude)
        if self.ctx.charge_compile is not None and attempts:
            self.ctx.charge_compile(attempts)
        (self.ctx.audit_dir / "portfolio.log").write_text(log, encoding="utf-8")
        if not winner:
            return TurnResult(gave_up=f"no tactic of {ladder} closed the goal", compiles=attempts,
                              final_text=log[-2000:])
        text = prelude + prover.candidate_with_proof(task, f"{winner}.\nQed.")  # type: ignore[attr-defined]
        (self.ctx.workspace / task.candidate_name).write_text(text, encoding="utf-8")
        return TurnResult(final_text=f"closed by {winner}", compiles=attempts,
                          gave_up="portfolio submits its first closing tactic")

    def _generic(self) -> TurnResult:
        from pytest_forall.core.verify import verify_candidate

        task, prover = self.ctx.task, self.ctx.prover
        pack = language_or_plain(task.prover)
        if not task.frozen or pack.close_hole is None:
            return TurnResult(gave_up="task has no proof hole the portfolio can fill")
        attempts = 0
        for tactic in self._budgeted(pack.portfolio_ladder()[0]):
            attempts += 1
            text = pack.close_hole(task, tactic)
            verdict = verify_candidate(task, prover, text.encode(), timeout=self.tactic_timeout * 4)
            if verdict.verdict == "infra":
                return TurnResult(infra=verdict.reason, compiles=attempts)
            if verdict.accepted:
                (self.ctx.workspace / task.candidate_name).write_text(text, encoding="utf-8")
                return TurnResult(final_text=f"closed by {tactic}", compiles=attempts,
                                  gave_up="portfolio submits its first closing tactic")
        if self.ctx.charge_compile is not None and attempts:
            self.ctx.charge_compile(attempts)
        return TurnResult(gave_up="no tactic of the ladder closed the goal", compiles=attempts)

    def close(self) -> None:
        pass


class PortfolioFrontend:
    name = "portfolio"
    is_agent = False

    def __init__(self, options: dict[str, Any]) -> None:
        self.tactic_timeout = float(options.get("tactic_timeout") or 5)

    def probe(self) -> str:
        return ""

    def start(self, ctx: SessionContext) -> AgentSession:
        return PortfolioSession(ctx, self.tactic_timeout)


@hookimpl(trylast=True)
def pytest_forall_make_frontend(name: str, options: dict[str, Any]) -> PortfolioFrontend | None:
    return PortfolioFrontend(options) if name == "portfolio" else None
