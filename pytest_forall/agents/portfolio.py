"""``portfolio``: the embedded default actor. Audits the statement, then tries a ladder of closing tactics.

First the statement audit (:mod:`pytest_forall.core.audit`): the language pack searches for a certificate
that the hypotheses are contradictory or the statement false; one found is written as the claim file and
judged by the protocol like any submission, so a vacuous statement ends as ``vacuous``, never as a proof.
Then the ladder (the language pack's): every attempt counts as a compile; a tactic that closes the goal
becomes a candidate that goes through the full verifier like any agent's. A backend with an interactive
session (Rocq's ``coqtop``) tries the ladder in one session that loaded the statement once; others compile
one candidate per tactic. ``audit`` is the same frontend without the ladder.
"""

from __future__ import annotations

import time
from typing import Any

from pytest_forall.core.actor import AgentSession, SessionContext, TurnResult
from pytest_forall.core.audit import CLAIMS, audit_pack, claim_name, derived_tasks
from pytest_forall.core.language import language_or_plain
from pytest_forall.core.prover import ToolchainProbeFailed
from pytest_forall.core.registry import hookimpl

#: Seconds the statement audit's search may take per item (within the item's wall budget); the scripts are
#: ordered so that the ones most likely to succeed per second come first.
AUDIT_SECONDS = 20.0
#: How much longer than its CPU budget the audit may take by the wall clock (a loaded machine: at load 24 on 2 cores
#: coqtop gets about 1/12 of a core, and the 80 s of a factor 4 ended putnam_2017_a1's search on 8.20 at about 7 of
#: the 10.4 CPU s its vacuity needs). A backstop that expires makes the audit "not searched: timed out" (infra).
AUDIT_WALL_FACTOR = 15


class PortfolioSession:
    def __init__(self, ctx: SessionContext, tactic_timeout: float, ladder: bool = True) -> None:
        self.ctx = ctx
        self.session_id = ""
        self.tactic_timeout = tactic_timeout
        self.ladder = ladder
        self.audited = False
        self.done = False
        #: compiles this session has charged (the audit's attempts come out of the ladder's budget)
        self.spent = 0
        #: attempts of the current search already charged one by one as they started (seen live by forall watch)
        self.live = 0
        #: why this session's audit did not search ("" when it did): the turn that ran it reports it to the row
        self.not_searched = ""

    def _say(self, activity: str) -> None:
        if self.ctx.progress is not None:
            self.ctx.progress(activity)

    def _on_attempt(self) -> None:
        """Charge one attempt as it starts, so the item's compile count moves while a search runs."""
        self.live += 1
        if self.ctx.charge_compile is not None:
            self.ctx.charge_compile(1)

    def _charge_rest(self, attempts: int) -> None:
        """Charge what the search reported beyond the attempts already charged live."""
        rest, self.live = attempts - self.live, 0
        if self.ctx.charge_compile is not None and rest > 0:
            self.ctx.charge_compile(rest)

    def turn(self, prompt: str, *, timeout: float | None) -> TurnResult:
        """The audit's search (once), then the ladder. A question to the toolchain that got no answer (whether a
        library the ladder or the search uses is installed) ends the turn as infra (``probe``), never as a search or
        ladder run without that library."""
        try:
            return self._turn(timeout)
        except ToolchainProbeFailed as exc:
            return TurnResult(infra=f"probe: {exc}", compiles=self.spent)

    def _turn(self, timeout: float | None) -> TurnResult:
        audited = 0  # this turn's audit attempts: they are compiles the turn made (never "tried nothing")
        if not self.audited:
            self.audited = True
            found = self._audit(timeout)
            if found is not None:
                return found
            audited = self.spent
        for claim in CLAIMS:  # a certificate the verifier refused is withdrawn before the ladder
            (self.ctx.workspace / claim_name(self.ctx.task, claim)).unlink(missing_ok=True)
        if self.done or not self.ladder:
            return TurnResult(gave_up="statement audit: no checked certificate (statement_audit=unknown); the "
                                      "audit frontend does not attempt the proof" if not self.ladder else
                                      "portfolio has no further tactics", compiles=audited)
        self.done = True
        _task, prover = self.ctx.task, self.ctx.prover
        result = self._interactive(timeout) if hasattr(prover, "try_tactics") else self._generic()
        result.compiles += audited
        result.audit_not_searched = self.not_searched  # the ladder runs once, after the session's only search
        return result

    def _audit(self, timeout: float | None) -> TurnResult | None:
        """Search for audit certificates; a turn that submits them, or None when none was found."""
        task = self.ctx.task
        pack = audit_pack(task.prover)
        derived = derived_tasks(task)
        if pack is None or not derived:
            return None
        # the budget is CPU seconds of the prover (where the pack measures them), so that a loaded machine finds
        # what an idle one finds; the wall clock is a backstop within the turn's own time limit
        wall = AUDIT_SECONDS * AUDIT_WALL_FACTOR if timeout is None else min(AUDIT_SECONDS * AUDIT_WALL_FACTOR, timeout)
        self._say(f"statement audit: searching certificates for {', '.join(sorted(derived))}")
        search = pack.search(task, derived, self.ctx.prover, self.ctx.workspace, time.monotonic() + wall,
                             max_attempts=self._allowance(), cpu_seconds=min(AUDIT_SECONDS, wall),
                             on_attempt=self._on_attempt)
        self.spent += search.attempts
        self._charge_rest(search.attempts)
        (self.ctx.audit_dir / "audit.log").write_text(search.log, encoding="utf-8")
        if not search.certificates and search.timed_out:
            # a wall-clock limit, not the CPU budget, ended the search: "unknown" would be the machine's load
            self.not_searched = f"timed out ({search.timed_out})"
            if not self.ladder:
                return TurnResult(infra=f"statement audit not searched: {self.not_searched}", compiles=search.attempts,
                                  audit_not_searched=self.not_searched)
        if not search.certificates:
            return None
        for claim in CLAIMS:
            if claim.finding in search.certificates:
                (self.ctx.workspace / claim_name(task, claim)).write_text(search.certificates[claim.finding],
                                                                           encoding="utf-8")
        return TurnResult(final_text=f"statement audit: certificates for {sorted(search.certificates)}",
                          compiles=search.attempts)

    def _allowance(self) -> int | None:
        """Attempts left in the sample's compile budget, keeping one for the verifier's check of a winner."""
        limit = self.ctx.budget.compiles
        return None if limit is None else max(0, limit - self.spent - 1)

    def _budgeted(self, ladder: list[str]) -> list[str]:
        allowance = self._allowance()
        return ladder if allowance is None else ladder[:allowance]

    def _interactive(self, timeout: float | None) -> TurnResult:
        """One prover session that loaded the statement once tries every tactic (Rocq's ``coqtop``)."""
        task, prover = self.ctx.task, self.ctx.prover
        ladder, prelude = language_or_plain(task.prover).portfolio_ladder()
        ladder = self._budgeted(ladder)
        self._say(f"portfolio: trying {len(ladder)} closing tactics")
        winner, attempts, log = prover.try_tactics(  # type: ignore[attr-defined]
            task, self.ctx.workspace, ladder, self.tactic_timeout, prelude=prelude, on_attempt=self._on_attempt)
        self._charge_rest(attempts)
        (self.ctx.audit_dir / "portfolio.log").write_text(log, encoding="utf-8")
        if not winner:
            return TurnResult(gave_up=f"no tactic of {ladder} closed the goal", compiles=attempts,
                              final_text=log[-2000:])
        placed = getattr(prover, "candidate_with_prelude", None)  # a prover that says where helpers go (project mode)
        text = (placed(task, prelude, f"{winner}.\nQed.") if callable(placed) else
                prelude + prover.candidate_with_proof(task, f"{winner}.\nQed."))  # type: ignore[attr-defined]
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
        ladder = self._budgeted(pack.portfolio_ladder()[0])
        self._say(f"portfolio: trying {len(ladder)} closing tactics")
        for tactic in ladder:
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
    #: whether the closing ladder runs after the audit (``audit`` is the same frontend without it)
    ladder = True

    def __init__(self, options: dict[str, Any]) -> None:
        self.tactic_timeout = float(options.get("tactic_timeout") or 5)

    def probe(self) -> str:
        return ""

    def start(self, ctx: SessionContext) -> AgentSession:
        return PortfolioSession(ctx, self.tactic_timeout, ladder=self.ladder)


class AuditFrontend(PortfolioFrontend):
    """``audit``: only the statement audit, for maintainers looking for misformalized problems."""

    name = "audit"
    ladder = False


@hookimpl(trylast=True)
def pytest_forall_make_frontend(name: str, options: dict[str, Any]) -> PortfolioFrontend | None:
    return {"portfolio": PortfolioFrontend, "audit": AuditFrontend}.get(name, lambda _: None)(options)
