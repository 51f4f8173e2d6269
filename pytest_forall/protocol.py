"""The actor → verifier → reviewer → acceptance loop of one item, free of pytest.

Samples × rounds: each sample is a fresh actor session on a freshly prepared workspace; within a
sample, every rejection goes back to the *same* session as the next prompt. Infrastructure failures
end the item as ``infra`` (resumable), never as a proof failure.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import workspace as ws
from .accept import AuditRecord, decide_acceptance
from .actor import ACTOR, REVIEWER, Frontend, SessionContext, TurnResult
from .budget import SpendLedger
from .model import FAILED, INFRA, RULES_ONLY, STATEMENT_FALSE, STRICT, Budget, Task, Usage, Verdict
from .provers import Prover
from .review import Review, parse_review, prepare_review_dir, reviewer_prompt
from .verify import verify_candidate


@dataclass
class ItemContext:
    task: Task
    workspace_root: Path
    workspace_name: str
    audit: AuditRecord
    prover: Prover
    frontend: Frontend
    reviewer: Frontend | None
    budget: Budget
    options: dict[str, Any] = field(default_factory=dict)
    ledger: SpendLedger | None = None
    run_usd: float | None = None
    verify_timeout: float = 300.0


@dataclass
class Meters:
    started: float = field(default_factory=time.monotonic)
    compiles: int = 0
    rounds: int = 0
    samples: int = 0
    reviews: int = 0
    usage: Usage = field(default_factory=Usage)

    def wall(self) -> float:
        return time.monotonic() - self.started


def initial_prompt(task: Task) -> str:
    return (f"{ws.task_brief(task)}\nThe file `{task.candidate_name}` in the current directory holds the problem; "
            "replace its placeholder proof with a complete proof. Compile it to check your work. The task ends "
            "only when a complete proof is in that file: keep working until it compiles without placeholders.\n")


def feedback_prompt(verdict: Verdict | None, note: str) -> str:
    if verdict is None:
        return f"{note}\nContinue: put a complete proof in the file."
    lines = [f"The verifier rejected the current candidate (sha256 {verdict.digest}):"]
    for layer in verdict.layers:
        if layer.ok is False:
            lines.append(f"- {layer.name}: {layer.reason}")
    lines.append("Fix the proof and continue.")
    return "\n".join(lines)


class ItemRun:
    def __init__(self, ctx: ItemContext) -> None:
        self.ctx = ctx
        self.meters = Meters()
        self.last_reason = ""
        self.accepted_verdict: Verdict | None = None
        self.independent: bool | None = None
        self.sessions: list[str] = []

    # -- budget checks ----------------------------------------------------------------------------

    def _over_budget(self) -> str:
        b = self.ctx.budget
        if b.wall is not None and self.meters.wall() >= b.wall:
            return f"wall-time budget of {b.wall:g} s exhausted"
        if b.compiles is not None and self.meters.compiles >= b.compiles:
            return f"compile budget of {b.compiles} exhausted"
        if b.usd is not None and (self.meters.usage.cost_usd or 0.0) >= b.usd:
            return f"spend budget of ${b.usd:g} for this item exhausted"
        if self.ctx.ledger is not None and self.ctx.run_usd is not None and self.ctx.ledger.total() >= self.ctx.run_usd:
            return f"run-wide spend cap of ${self.ctx.run_usd:g} reached"
        return ""

    def _remaining_wall(self) -> float | None:
        return None if self.ctx.budget.wall is None else max(1.0, self.ctx.budget.wall - self.meters.wall())

    def _charge_compile(self, count: int = 1) -> bool:
        self.meters.compiles += count
        limit = self.ctx.budget.compiles
        return limit is None or self.meters.compiles <= limit

    def _account(self, turn: TurnResult, role: str) -> None:
        self.meters.usage.add(turn.usage)
        if turn.usage.cost_usd and self.ctx.ledger is not None:
            self.ctx.ledger.charge(turn.usage.cost_usd)
        self.ctx.audit.event(kind="turn", role=role, session=turn.session_id, usage=turn.usage.to_wire(),
                             exit_code=turn.exit_code, infra=turn.infra, gave_up=turn.gave_up,
                             timed_out=turn.timed_out, transcript=turn.transcript, compiles=turn.compiles,
                             final_text=turn.final_text[-2000:])

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        task = self.ctx.task
        if task.problem:
            return self._result(FAILED, f"{task.source_path}: {task.problem}")
        for probe, who in ((self.ctx.prover.probe(self.ctx.workspace_root), "prover"),
                           (self.ctx.frontend.probe(), "frontend"),
                           (self.ctx.reviewer.probe() if self.ctx.reviewer else "", "reviewer")):
            if probe:
                return self._result(INFRA, f"{who}: {probe}")
        if self.ctx.options.get("sandbox") == "bwrap" and hasattr(self.ctx.prover, "runner"):
            from .sandbox import probe_sandbox, prover_runner

            problem = probe_sandbox()
            if problem:
                return self._result(INFRA, f"sandbox: {problem}")
            binds = [(p, inside) for p, inside in getattr(self.ctx.prover, "sandbox_binds", ()) if p.exists()]
            self.ctx.prover.runner = prover_runner(self.ctx.audit.directory / "sandbox", binds)
        infra = self._template_infra()
        if infra:
            return self._result(INFRA, infra)
        for sample in range(self.ctx.budget.samples):
            self.meters.samples = sample + 1
            outcome = self._run_sample(sample)
            if outcome is not None:
                return outcome
        return self._result(FAILED, self.last_reason or "no accepted candidate")

    def _template_infra(self) -> str:
        """The unmodified problem must compile here before anyone tries to prove it (cached per template)."""
        build = self.ctx.audit.directory / "template-check"
        build.mkdir(parents=True, exist_ok=True)
        try:
            result = self.ctx.prover.check_template(self.ctx.task, build, self.ctx.verify_timeout)
        finally:
            shutil.rmtree(build, ignore_errors=True)
        if result.ok:
            return ""
        self.ctx.audit.write_json("template-check.json", {"infra": result.infra, "output": result.output[-8000:]})
        return f"template: {result.infra or result.first_error}"

    def _run_sample(self, sample: int) -> dict[str, Any] | None:
        task = self.ctx.task
        workspace = ws.prepare(self.ctx.workspace_root, self.ctx.workspace_name, task, reset=True)
        session_ctx = SessionContext(task=task, workspace=workspace, audit_dir=self.ctx.audit.directory / f"s{sample}",
                                     role=ACTOR, prover=self.ctx.prover, budget=self.ctx.budget,
                                     options=self.ctx.options, charge_compile=self._charge_compile)
        session_ctx.audit_dir.mkdir(parents=True, exist_ok=True)
        session = self.ctx.frontend.start(session_ctx)
        prompt = self.ctx.options.get("actor_prompt") or initial_prompt(task)
        try:
            for round_no in range(self.ctx.budget.rounds):
                stop = self._over_budget()
                if stop:
                    return self._result(FAILED, f"{stop} (after {self.meters.rounds} rounds, "
                                                f"{self.meters.compiles} compiles; last: {self.last_reason or 'none'})")
                self.meters.rounds += 1
                turn = session.turn(prompt, timeout=self._remaining_wall())
                if turn.session_id and turn.session_id not in self.sessions:
                    self.sessions.append(turn.session_id)
                self._account(turn, ACTOR)
                if turn.infra:
                    return self._result(INFRA, f"actor: {turn.infra}")
                if self.ctx.frontend.is_agent and turn.usage.spent_nothing and not turn.timed_out:
                    return self._result(INFRA, "actor turn spent zero tokens (provider or credential problem)")
                data = ws.read_candidate(workspace, task.candidate_name)
                if turn.gave_up and data == task.template.encode("utf-8"):
                    self.last_reason = turn.gave_up  # nothing was attempted: say why, not "Admitted found"
                    return None
                if data is None:
                    self.last_reason = turn.gave_up or f"no candidate file {task.candidate_name}"
                    if turn.gave_up:
                        return None
                    prompt = feedback_prompt(None, f"There is no regular file {task.candidate_name}.")
                    continue
                if turn.claims_false:
                    return self._result(STATEMENT_FALSE, "actor claims the statement is false: "
                                        + turn.final_text[-500:])
                if not self._charge_compile():
                    return self._result(FAILED, f"compile budget of {self.ctx.budget.compiles} exhausted "
                                                f"(after {self.meters.rounds} rounds)")
                verdict = verify_candidate(task, self.ctx.prover, data, timeout=self.ctx.verify_timeout)
                tag = f"s{sample}/r{round_no}"
                self.ctx.audit.write_bytes(f"{tag}/{task.candidate_name}", data)
                self.ctx.audit.write_json(f"{tag}/verdict.json", verdict.to_wire())
                self.ctx.audit.event(kind="verify", round=tag, verdict=verdict.verdict, digest=verdict.digest,
                                     reason=verdict.reason)
                if verdict.verdict == INFRA:
                    return self._result(INFRA, f"verifier: {verdict.reason}")
                if not verdict.accepted:
                    self.last_reason = verdict.reason
                    if turn.gave_up:
                        return None
                    prompt = feedback_prompt(verdict, "")
                    continue
                outcome = self._review_and_accept(verdict, workspace, tag)
                if outcome is not None:
                    return outcome
                prompt = feedback_prompt(None, "A reviewer rejected the candidate; see REVIEW.md in the "
                                               "working directory, address it, and continue.")
            self.last_reason = (f"round budget of {self.ctx.budget.rounds} exhausted "
                                f"(last: {self.last_reason or 'none'})")
            return None
        finally:
            session.close()

    def _review_and_accept(self, verdict: Verdict, workspace: Path, tag: str) -> dict[str, Any] | None:
        task = self.ctx.task
        review: Review | None = None
        if self.ctx.reviewer is not None:
            if self.meters.reviews >= self.ctx.budget.review_rounds:
                self.last_reason = f"review budget of {self.ctx.budget.review_rounds} exhausted"
                return self._result(FAILED, self.last_reason)
            self.meters.reviews += 1
            data = ws.read_candidate(workspace, task.candidate_name) or b""
            review_dir = prepare_review_dir(self.ctx.audit.directory / "review-ws" / tag.replace("/", "-"), task, data)
            rctx = SessionContext(task=task, workspace=review_dir, audit_dir=self.ctx.audit.directory / tag / "review",
                                  role=REVIEWER, prover=self.ctx.prover, budget=self.ctx.budget,
                                  options=self.ctx.options)
            rctx.audit_dir.mkdir(parents=True, exist_ok=True)
            session = self.ctx.reviewer.start(rctx)
            try:
                turn = session.turn(reviewer_prompt(task, verdict.digest), timeout=self._remaining_wall())
            finally:
                session.close()
            self._account(turn, REVIEWER)
            if turn.infra:
                return self._result(INFRA, f"reviewer: {turn.infra}")
            review = parse_review(turn.final_text)
            self.ctx.audit.write_json(f"{tag}/review.json", {"approved": review.approved, "digest": review.digest,
                                                             "reason": review.reason, "text": review.text[-4000:]})
        on_disk = ws.read_candidate(workspace, task.candidate_name)
        decision = decide_acceptance(verdict, review, on_disk, reviewer_required=self.ctx.reviewer is not None)
        self.ctx.audit.event(kind="acceptance", round=tag, accepted=decision.accepted, reason=decision.reason)
        if not decision.accepted:
            self.last_reason = decision.reason
            (workspace / "REVIEW.md").write_text(
                f"# Review of sha256 {verdict.digest}\n\n{decision.reason}\n\n"
                + (review.text[-6000:] if review else ""), encoding="utf-8")
            return None
        assert on_disk is not None
        self.accepted_verdict = verdict
        independent = next((layer for layer in verdict.layers if layer.name == "independent_check"), None)
        self.independent = independent.ok if independent else None
        self.ctx.audit.write_bytes(f"accepted/{task.candidate_name}", on_disk)
        self.ctx.audit.write_json("accepted/acceptance.json", {
            "digest": verdict.digest, "strict": verdict.strict, "axioms": list(verdict.axioms),
            "verdict": verdict.to_wire(), "review": None if review is None else review.__dict__,
            "round": tag, "sessions": self.sessions})
        return self._result(STRICT if verdict.strict else RULES_ONLY, "")

    def _result(self, outcome: str, reason: str) -> dict[str, Any]:
        verdict = self.accepted_verdict
        usage = self.meters.usage
        result = {
            "task_id": self.ctx.task.task_id, "suite": self.ctx.task.suite, "track": self.ctx.task.track,
            "prover": self.ctx.prover.name if self.ctx.prover else self.ctx.task.prover,
            "frontend": self.ctx.frontend.name, "reviewer": self.ctx.reviewer.name if self.ctx.reviewer else "",
            "outcome": outcome, "reason": reason,
            "digest": verdict.digest if verdict else "", "axioms": list(verdict.axioms) if verdict else [],
            "independent": self.independent, "compiles": self.meters.compiles, "rounds": self.meters.rounds,
            "samples": self.meters.samples, "wall_s": round(self.meters.wall(), 3),
            "tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out, "tokens_cached": usage.tokens_cached,
            "cost_usd": usage.cost_usd, "sessions": list(self.sessions),
        }
        self.ctx.audit.write_json("result.json", result)
        return result
