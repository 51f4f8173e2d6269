"""The actor → verifier → reviewer → acceptance loop of one item, free of pytest.

Samples × rounds: each sample is a fresh actor session on a freshly prepared workspace. Every turn ends
with a *submission*: the framework verifies the candidate file as it is on disk. A rejection goes back to
the *same* session as the next prompt, with the verifier's diagnostics. A verifier pass goes to a *fresh*
reviewer session that sees only the statement and a copy of the candidate; its rejection reaches the actor
as ``REVIEW.md`` in the workspace. Acceptance needs the verifier's pass and the reviewer's approval of the
same SHA-256 as the file on disk at that moment (:func:`pytest_forall.core.accept.decide_acceptance`).

Infrastructure failures (credentials, quota, provider errors, a missing CLI, a turn that spent no tokens)
end the item as ``infra``, never as a proof failure. Progress is kept in an HMAC-authenticated state file
outside the workspace (:mod:`pytest_forall.core.state`), so ``--forall-resume`` continues the same session
with budgets counted across runs. A checked refutation ends the item as ``statement_false``, a checked proof that the hypotheses
contradict each other as ``vacuous`` (:mod:`pytest_forall.core.audit`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_forall.core import workspace as ws
from pytest_forall.core.accept import UNRECORDED_DIRS, AuditRecord, decide_acceptance
from pytest_forall.core.actor import (
    ACTOR,
    REVIEWER,
    Frontend,
    ResumableSession,
    SessionContext,
    SessionHandle,
    StoresCandidates,
    TurnResult,
)
from pytest_forall.core.audit import (
    AUDIT_FALSE,
    AUDIT_NOT_SEARCHED,
    AUDIT_UNKNOWN,
    CLAIMS,
    DERIVED_DIR,
    claim_name,
    derived_tasks,
)
from pytest_forall.core.budget import SpendLedger
from pytest_forall.core.cache import (
    Lookup,
    VerdictCache,
    describe_environment,
    environment_digest,
    look_up,
    task_digest,
    template_key,
    verifier_version,
    verify_cached,
)
from pytest_forall.core.model import INFRA, Budget, Task, Verdict, verdict_json
from pytest_forall.core.outcomes import infra_stop, is_final, outcome_of
from pytest_forall.core.progress import FINISHED as PROGRESS_FINISHED
from pytest_forall.core.progress import PROGRESS_FILE, RUNNING, write_json_atomic
from pytest_forall.core.prompts import (
    REVIEW_FILE,
    initial_prompt,
    interrupted_prompt,
    review_feedback,
    verifier_feedback,
)
from pytest_forall.core.prover import ChecksAdvisories, NamesChanges, Prover, Sandboxable, toolchain_of
from pytest_forall.core.review import Review, parse_review, prepare_review_dir, reviewer_prompt
from pytest_forall.core.state import ACTOR_PHASE, REVIEW_PHASE, ItemState, StateStore

log = logging.getLogger(__name__)



def _verdict_text(verdict: Verdict) -> str:
    """The verdict's JSON text as :meth:`AuditRecord.write_json` writes it, the one encoding the cache's entry used too
    (:func:`~pytest_forall.core.model.verdict_json`)."""
    try:
        return verdict_json(verdict)
    except TypeError:  # a value JSON does not know: written as its text, as write_json writes it
        return json.dumps(verdict.to_wire(), sort_keys=True, default=str)


def _project_axioms(verdict: Verdict | None) -> list[str]:
    """The declared project axioms an accepted proof rests on (its axiom audit's evidence), for the row."""
    audit = next((layer for layer in verdict.layers if layer.name == "axiom_audit"), None) if verdict else None
    return [str(name) for name in (audit.evidence.get("project_axioms") or [])] if audit else []


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
    #: key of the resume state's HMAC (the run secret); empty: no resume state is kept
    run_secret: bytes = b""
    #: the verdict cache (None: every candidate is verified afresh)
    cache: VerdictCache | None = None
    #: ``(sandbox dir, binds) -> runner | problem``: runs prover processes inside the sandbox. Supplied by the
    #: layer that owns isolation (:func:`pytest_forall.isolation.sandbox.sandboxed_prover_runner`); without it
    #: ``--forall-sandbox=bwrap`` is infra, never a silent unsandboxed run.
    sandbox_runner: Callable[[Path, list[tuple[Path, str]]], Any] | None = None
    #: ``(context, prover, charge_compile=) -> context manager``: the item's benchmark tools for one agent
    #: session (:class:`pytest_forall.tools.item.ItemTools`); without it agents get no tools.
    open_tools: Callable[..., Any] | None = None


# -- the loop ---------------------------------------------------------------------------------------

class ItemRun:
    def __init__(self, ctx: ItemContext) -> None:
        self.ctx = ctx
        self.started = time.monotonic()
        #: state changes the user must hear about (the summary lists them), e.g. quarantined resume state
        self.notices: list[str] = []
        self.started_at = time.time()
        self.activity = "starting"
        self.outcome = ""  # set once, when the item ends (a resumed state may still hold an earlier infra)
        self.store = (StateStore(ctx.audit.directory / "state.json", ctx.run_secret, ctx.task.task_id,
                                 ctx.workspace_root / ctx.workspace_name) if ctx.run_secret else None)
        #: the actor's turns are free and instant (replay copies a stored file): nothing a turn does is lost by a
        #: crash, so the state and progress between its steps are not written (see :meth:`_step_saved`)
        self.free_turns = bool(getattr(ctx.frontend, "free_turns", False))
        self.state, self.resumed = self._load_state()
        #: whether the item continues a resumed state (its sessions may have left ``tools.json`` files, read for the row)
        self.resumed_at_start = self.resumed
        #: whether this run opened a session with the item's tools (which writes ``tools.json``, see :meth:`_tools`)
        self.tools_opened = False
        #: what the open session's tool server says about goals/try/query ("" when it does not offer them)
        self.tools_brief = ""
        #: whether this run wrote the item's progress (an item ending before it needs no final one: :meth:`_save`)
        self.progress_shown = False
        #: the file of the audit record holding the item's last candidate submission (``candidate_data``)
        self.candidate_file: Path | None = None
        #: the last submission's verdict and the record's file holding it (the acceptance names it, :meth:`_accept`)
        self.verdict_file: tuple[Verdict, Path] | None = None
        self.wall_before = self.state.wall_s
        self.accepted_verdict: Verdict | None = None
        #: the bytes of the item's last candidate submission (the gate's proof digest reads them, core/gating.py)
        self.candidate_data: bytes | None = None
        self.independent: bool | None = None
        #: the checked finding (core.audit) and its certificate's and derived template's paths in the record
        self.statement_audit = AUDIT_UNKNOWN
        self.certificate = ("", "")
        self.prover_sandboxed = False
        #: whether the verdict that decided the item came from the cache, and the digest it judged
        self.cached = False
        #: when progress.json was last written (compiles charged in between are written at most once a second)
        self.progress_written = 0.0
        #: the cache lookup of the stored candidate before the session (:meth:`_accepted_from_cache`): (task, bytes,
        #: lookup), taken by the submission of the same bytes (one key and one entry read per cold item, #18)
        self.looked_up: tuple[Task, bytes, Lookup] | None = None
        #: why that verdict's cache lookup missed (``""``: a hit, or no lookup)
        self.cache_miss = ""
        self.candidate_digest = ""
        #: a free-turn frontend skips the check before its first turn; until a verdict of the item's own task
        #: checks the template, any non-infra outcome is checked against it first (see :meth:`_result`)
        self.template_unchecked = False
        #: the last row :meth:`_result` made and its JSON text (result.json's): the row crossing to the controller is
        #: decoded from it, not encoded again
        self.result_json: tuple[dict[str, Any], str] | None = None

    # -- state ------------------------------------------------------------------------------------

    def _load_state(self) -> tuple[ItemState, bool]:
        """Earlier progress of this item, unless it finished, belongs to another frontend, or fails its HMAC."""
        fresh = ItemState(frontend=self.ctx.frontend.name)
        if self.store is None:
            return fresh, False
        state, problem = self.store.load()
        if problem:
            log.warning("%s: resume state quarantined: %s", self.ctx.task.task_id, problem)
            self.ctx.audit.event(kind="state", action="quarantined", reason=problem)
            self.notices.append(f"resume state quarantined, the item started afresh: {problem}")
        if state is None or (state.outcome and is_final(state.outcome)):
            return fresh, False
        if state.frontend != fresh.frontend:
            why = f"frontend changed from {state.frontend!r} to {fresh.frontend!r}"
            self.ctx.audit.event(kind="state", action="restarted", reason=why)
            self.notices.append(f"resume state not used, the item started afresh: {why}")
            return fresh, False
        self.ctx.audit.event(kind="state", action="resumed", sample=state.sample, rounds=state.rounds,
                             session=state.actor.session_id if state.actor else "", phase=state.phase,
                             after=state.infra or "interrupted run")
        return state, True

    def _save(self) -> None:
        """Write the resume state and the progress.

        The state of an item that ends final is written only over state of an earlier step or run: with no state on
        disk a resumed run starts the item afresh, which is what a final state makes it do (:meth:`_load_state`). The
        progress of an item that ends is written only over progress (of this run, or one an interrupted run left):
        an item that ends before any step that can take long (a verdict from the cache, a probe's infra) is never
        seen running, and ``forall watch`` counts it from its row.
        """
        self.state.wall_s = round(self._wall(), 3)
        if self.store is not None and (self.store.present or not (self.outcome and is_final(self.outcome))):
            self.store.save(self.state)
        if not self.outcome or self.progress_shown or (self.ctx.audit.directory / PROGRESS_FILE).exists():
            self._write_progress()

    def _step_saved(self) -> None:
        """:meth:`_save` between two steps of an actor session, unless its turns are free (:attr:`free_turns`).

        Then a crash at any step loses nothing a fresh start does not redo the same way (no tokens, no session to
        continue), and a resumed run runs the item again from its start (or from the state an earlier run left); the
        steps that can take long write progress when they start (the verification, a review, the template check)."""
        if not self.free_turns:
            self._save()

    def _write_progress(self, activity: str = "") -> None:
        """What the item is doing now and what it has spent so far, for ``forall watch``."""
        self.activity = activity or self.activity
        state, usage = self.state, self.state.usage
        self.progress_written = time.monotonic()
        self.progress_shown = True
        write_json_atomic(self.ctx.audit.directory / PROGRESS_FILE, {
            "task_id": self.ctx.task.task_id, "state": PROGRESS_FINISHED if self.outcome else RUNNING,
            "outcome": self.outcome, "activity": self.activity, "sample": state.sample,
            "round": state.sample_rounds, "rounds": state.rounds, "compiles": state.compiles,
            "reviews": state.reviews, "tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out,
            "cost_usd": usage.cost_usd, "wall_s": round(self._wall(), 3), "started_at": self.started_at,
            "updated_at": time.time()})

    def _wall(self) -> float:
        return self.wall_before + time.monotonic() - self.started

    # -- budgets ----------------------------------------------------------------------------------

    def _item_stop(self) -> tuple[str, str]:
        """(stop, why) of the per-item or run-wide limit that forbids another model turn, or ("", "")."""
        b, state = self.ctx.budget, self.state
        if b.wall is not None and self._wall() >= b.wall:
            return "wall", f"wall-time budget of {b.wall:g} s exhausted"
        if b.usd is not None and (state.usage.cost_usd or 0.0) >= b.usd:
            return "item-usd", f"spend cap of ${b.usd:g} for this item reached"
        if self.ctx.ledger is not None and self.ctx.run_usd is not None and self.ctx.ledger.total() >= self.ctx.run_usd:
            return "run-usd", f"run-wide spend cap of ${self.ctx.run_usd:g} reached"
        return "", ""

    def _sample_stop(self) -> tuple[str, str]:
        """(stop, why) of the per-sample budget that ends this sample, or ("", "")."""
        b, state = self.ctx.budget, self.state
        if state.sample_rounds >= b.rounds:
            return "rounds", f"round budget of {b.rounds} exhausted"
        if b.compiles is not None and state.sample_compiles >= b.compiles:
            return "compiles", f"compile budget of {b.compiles} per sample exhausted"
        return "", ""

    def _progress(self) -> str:
        state = self.state
        cost = "unknown" if state.usage.cost_usd is None else f"${state.usage.cost_usd:.4f}"
        return (f"after {min(state.sample + 1, self.ctx.budget.samples)} sample(s), {state.rounds} round(s), "
                f"{state.compiles} compile(s), {state.reviews} review(s), {cost}, {self._wall():.0f} s")

    def _exhausted(self, stop: str, why: str) -> dict[str, Any]:
        self.ctx.audit.event(kind="budget", stop=stop, exhausted=why, progress=self._progress())
        return self._result(stop, f"{why} (last: {self.state.last_reason or 'none'}) {self._progress()}")

    def _turn_limit(self) -> float | None:
        """A turn's time limit: ``--forall-turn-timeout``, or less when the wall budget has less left."""
        limits = [float(self.ctx.options["turn_timeout"])] if self.ctx.options.get("turn_timeout") else []
        if self.ctx.budget.wall is not None:
            limits.append(max(1.0, self.ctx.budget.wall - self._wall()))
        return min(limits, default=None)

    def _charge_compile(self, count: int = 1) -> bool:
        """Count compiles (the verifier's and the actor's own); False once the sample's budget is spent."""
        self.state.compiles += count
        self.state.sample_compiles += count
        if self.progress_shown and time.monotonic() - self.progress_written >= 1.0:
            self._write_progress()  # a frontend charging as it goes is seen live
        limit = self.ctx.budget.compiles
        return limit is None or self.state.sample_compiles <= limit

    # -- turns ------------------------------------------------------------------------------------

    def _account(self, turn: TurnResult, role: str, prompt: str, tag: str) -> None:
        self.state.usage.add(turn.usage)
        if turn.usage.cost_usd and self.ctx.ledger is not None:
            self.ctx.ledger.charge(turn.usage.cost_usd)
        transcript = Path(turn.transcript) if turn.transcript else None
        self.ctx.audit.event(
            kind="turn", role=role, round=tag, session=turn.session_id, usage=turn.usage.to_wire(),
            exit_code=turn.exit_code, infra=turn.infra, gave_up=turn.gave_up, timed_out=turn.timed_out,
            prompt=prompt, transcript=self.ctx.audit.relative(transcript) if transcript else "",
            stderr=self.ctx.audit.relative(transcript.with_suffix(".stderr.txt")) if transcript else "",
            compiles=turn.compiles, compile_commands=turn.compile_commands, final_text=turn.final_text[-2000:],
            own_fault=turn.own_fault, usage_disputed=turn.usage_disputed, traffic=turn.traffic)
        if turn.usage_disputed:
            self.notices.append(f"{role} turn {tag}: {turn.usage_disputed}")
        if turn.audit_not_searched and role == ACTOR and self.statement_audit == AUDIT_UNKNOWN:
            # the frontend's audit ended by a wall-clock limit (load): not "searched, nothing found"
            self.statement_audit = AUDIT_NOT_SEARCHED
            self.notices.append(f"{role} turn {tag}: statement audit not searched: {turn.audit_not_searched}")
        if role == ACTOR:
            self._step_saved()
        else:
            self._save()

    def _turn_infra(self, turn: TurnResult, frontend: Frontend) -> str:
        """The infra cause of a turn, or "": a turn that ended by the actor's own doing (``own_fault``) is judged."""
        if turn.infra:
            return turn.infra
        if turn.own_fault:
            return ""
        if frontend.is_agent and turn.usage.spent_nothing and not turn.timed_out:
            return "zero-tokens: the turn spent no tokens (provider or credential problem)"
        return ""

    def _remember_session(self, session: Any, turn: TurnResult) -> None:
        if turn.session_id and turn.session_id not in self.state.sessions:
            self.state.sessions.append(turn.session_id)
        self.state.actor = session.handle() if isinstance(session, ResumableSession) else SessionHandle(
            turn.session_id)

    # -- the item ---------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        task = self.ctx.task
        self.activity = "probing the prover and frontend"
        if not self.free_turns:  # a free-turn item writes progress at its first step that can take long
            self._write_progress()
        if task.problem:
            return self._result("malformed-task", f"{task.source_path}: {task.problem}")
        for probe, who in ((self.ctx.prover.probe(self.ctx.workspace_root), "prover"),
                           (self.ctx.frontend.probe(), "frontend"),
                           (self.ctx.reviewer.probe() if self.ctx.reviewer else "", "reviewer")):
            if probe:
                return self._result(infra_stop(probe) if who == "frontend" else "probe", f"{who}: {probe}")
        prover = self.ctx.prover
        sandboxable = isinstance(prover, Sandboxable)
        self.prover_sandboxed = self.ctx.options.get("sandbox") == "bwrap" and sandboxable
        if self.ctx.options.get("sandbox") == "bwrap" and not sandboxable:
            # Only backends that declare what they need bound (``sandbox_binds``) are run in the sandbox; say so.
            self.ctx.audit.event(kind="sandbox", prover=prover.name, sandboxed=False,
                                 reason="this prover backend declares no sandbox binds; it runs unsandboxed")
        if self.prover_sandboxed and isinstance(prover, Sandboxable):
            if self.ctx.sandbox_runner is None:
                return self._result("sandbox", "sandbox: --forall-sandbox=bwrap, but this run has no sandbox launcher")
            binds = [(p, inside) for p, inside in prover.sandbox_binds if p.exists()]
            runner = self.ctx.sandbox_runner(self.ctx.audit.directory / "sandbox", binds)
            if isinstance(runner, str):
                return self._result("sandbox", f"sandbox: {runner}")
            prover.runner, prover.sandboxed = runner, True
        self.template_unchecked = self.free_turns
        infra = "" if self.template_unchecked else self._template_infra()
        if infra:
            return self._result("template", infra)
        if not self.resumed:
            self.state.start_sample(0)
            accepted = self._accepted_from_cache()
            if accepted is not None:
                return accepted
        while self.state.sample < self.ctx.budget.samples:
            outcome = self._run_sample()
            if outcome is not None:
                return outcome
            self.state.start_sample(self.state.sample + 1)
            self._save()
        return self._result(self.state.stop or "gave-up", self.state.last_reason or "no accepted candidate")

    def _accepted_from_cache(self) -> dict[str, Any] | None:
        """The item's row when its frontend's one submission is known beforehand (:class:`StoresCandidates`) and the
        verdict cache holds it accepted: the same verdict, row and audit files (the candidate and its verdict under
        ``s0/r1``, ``accepted/``, the submission and acceptance events) as a session would give, without the
        workspace, the turn and their intermediate state and progress writes (a warm run's per-item cost). None
        otherwise: the item then runs as usual (a reviewer, a budget that forbids the turn, a miss, a rejection)."""
        task, cache, frontend = self.ctx.task, self.ctx.cache, self.ctx.frontend
        if (cache is None or self.ctx.reviewer is not None or not isinstance(frontend, StoresCandidates)
                or task.meta.get("submission_files") or self.ctx.budget.samples < 1 or self._sample_stop()[0]
                or self._item_stop()[0]):
            return None
        data = frontend.stored_candidate(task)
        if data is None:
            return None
        lookup = look_up(cache, task, self.ctx.prover, data, timeout=self.ctx.verify_timeout,
                         policy={"prover_sandboxed": self.prover_sandboxed})
        self.looked_up = (task, data, lookup)  # a miss: the session's submission of these bytes is not looked up again
        verdict = lookup.verdict
        if verdict is None or not decide_acceptance(verdict, None, data, reviewer_required=False).accepted:
            return None
        state, tag = self.state, "s0/r1"
        state.rounds = state.sample_rounds = 1
        self._charge_compile()
        self.cached, self.cache_miss = True, ""
        self._record_submission(task, data, tag, "candidate", "", verdict,
                                stored=f"{frontend.name}: the stored submission, judged from the verdict cache",
                                then=({"kind": "acceptance", "round": tag, "accepted": True, "reason": "",
                                       "digest": verdict.digest},))
        return self._accept(verdict, data, tag, None)

    def _template_infra(self) -> str:
        """The unmodified problem must compile here before anyone tries to prove it (cached per template).

        A template the verdict cache records as compiling in this environment is not compiled again: the
        verifier checks it anyway (and builds what it needs) whenever a candidate is not a cache hit.
        """
        cache = self.ctx.cache
        key = template_key(self.ctx.task, self.ctx.prover) if cache is not None else None
        if cache is not None and key is not None and cache.template_compiles(key):
            return ""
        self._write_progress("checking the template")
        build = self.ctx.audit.directory / "template-check"
        build.mkdir(parents=True, exist_ok=True)
        try:
            result = self.ctx.prover.check_template(self.ctx.task, build, self.ctx.verify_timeout)
        finally:
            shutil.rmtree(build, ignore_errors=True)
        if result.ok:
            if cache is not None and key is not None:
                cache.remember_template(key)
            return ""
        self.ctx.audit.write_json("template-check.json", {"infra": result.infra, "output": result.output[-8000:]})
        return f"template: {result.infra or result.first_error}"

    def _verifier_infra(self, verdict: Verdict) -> dict[str, Any]:
        """An infra verdict ends the item; an unusable template is the ``template`` stop whichever step found it."""
        if any(layer.name == "template" and layer.infra for layer in verdict.layers):
            return self._result("template", verdict.reason)
        return self._result("verifier", f"verifier: {verdict.reason}")

    def _run_sample(self) -> dict[str, Any] | None:
        """One actor session; None when the sample ended without an outcome (budget, or the actor gave up)."""
        task, state = self.ctx.task, self.state
        resume = state.actor if self.resumed else None
        skip_turn = resume is not None and state.phase == REVIEW_PHASE
        resumed_infra = resume is not None and state.infra and not skip_turn
        self.resumed = False
        workspace = ws.prepare(self.ctx.workspace_root, self.ctx.workspace_name, task, reset=resume is None,
                               brief=self.ctx.frontend.is_agent)
        session_ctx = SessionContext(task=task, workspace=workspace, audit_dir=self.ctx.audit.subdir(f"s{state.sample}"),
                                     role=ACTOR, prover=self.ctx.prover, budget=self.ctx.budget,
                                     options=self.ctx.options, charge_compile=self._charge_compile, resume=resume,
                                     progress=self._write_progress)
        with self._tools(ACTOR, workspace, session_ctx.audit_dir) as options:
            session_ctx.options = options
            # the brief names goals/try exactly when this session's tool server offers them
            prompt = state.prompt or self.ctx.options.get("actor_prompt") or initial_prompt(task, self.tools_brief)
            if resumed_infra:
                prompt = interrupted_prompt(state.infra, prompt)
            return self._actor_turns(session_ctx, workspace, prompt, skip_turn)

    def _actor_turns(self, session_ctx: SessionContext, workspace: Path, prompt: str,
                     skip_turn: bool) -> dict[str, Any] | None:
        state = self.state
        session = self.ctx.frontend.start(session_ctx)
        try:
            while True:
                turn: TurnResult | None = None
                tag = f"s{state.sample}/r{state.sample_rounds}"
                if skip_turn:
                    tag += "-resumed"
                    skip_turn = False
                else:
                    stop, why = self._sample_stop()
                    if stop:
                        state.stop = stop
                        state.last_reason = f"{why} (last: {state.last_reason or 'none'}) {self._progress()}"
                        return None
                    stop, why = self._item_stop()
                    if stop:
                        return self._exhausted(stop, why)
                    state.prompt, state.phase = prompt, ACTOR_PHASE
                    self.activity = f"actor turn s{state.sample}/r{state.sample_rounds + 1}"
                    self._step_saved()
                    turn = session.turn(prompt, timeout=self._turn_limit())
                    state.rounds += 1
                    state.sample_rounds += 1
                    tag = f"s{state.sample}/r{state.sample_rounds}"
                    self._remember_session(session, turn)
                    self._account(turn, ACTOR, prompt, tag)
                    problem = self._turn_infra(turn, self.ctx.frontend)
                    if problem:
                        return self._infra_turn(infra_stop(problem), f"actor: {problem}")
                state.infra = ""
                outcome, next_prompt = self._judge(turn, workspace, tag)
                if outcome is not None:
                    return outcome
                if next_prompt is None:
                    return None
                prompt = next_prompt
        finally:
            session.close()

    # -- judging a submission ---------------------------------------------------------------------

    def _judge(self, turn: TurnResult | None, workspace: Path,
               tag: str) -> tuple[dict[str, Any] | None, str | None]:
        """(outcome, None) to end the item, (None, prompt) to continue the session, (None, None) to end the sample."""
        task, state = self.ctx.task, self.state
        gave_up = turn.gave_up if turn else ""
        claimed = self._judge_claims(turn, workspace, tag)
        if claimed is not None:
            return claimed
        changed = ws.protected_changes(workspace, task)  # multi-file tasks: only the submission may change
        if changed:
            state.stop, state.last_reason = "gave-up", f"files outside the submission changed: {', '.join(changed[:10])}"
            self.ctx.audit.event(kind="submission", submission="candidate", round=tag, digest="", verdict="reject",
                                 reason=state.last_reason)
            return None, (None if gave_up else f"{state.last_reason}; restore them: only the submission files may "
                                               "change.")
        data = ws.read_task_candidate(workspace, task)
        if gave_up and data == task.template.encode("utf-8") and not (turn and turn.submitted):
            if turn is not None and not self.ctx.frontend.is_agent and not turn.compiles:
                # an offline frontend that compiled nothing and wrote nothing never tried: not a proof failure
                return self._infra_turn("never-ran", f"actor: never-ran: {gave_up} (0 compiles, no candidate)"), None
            state.stop, state.last_reason = "gave-up", gave_up  # nothing was attempted: say why, not "Admitted"
            return None, None
        if data is None:
            why = ws.unreadable_reason(workspace, task.candidate_name) or f"no candidate file {task.candidate_name}"
            state.stop = "gave-up"
            state.last_reason = f"{gave_up}: {why}" if gave_up else why
            return None, (None if gave_up else f"The submission was not read: {why}. Put a complete proof in "
                                               f"the regular file {task.candidate_name} and end your turn to submit.")
        verdict = self._submit(task, data, tag, "candidate")
        if verdict.verdict == INFRA:
            return self._verifier_infra(verdict), None
        if not verdict.accepted:
            state.stop, state.last_reason = "gave-up", verdict.reason
            return None, (None if gave_up else verifier_feedback(verdict, task.candidate_name))
        return self._review_and_accept(verdict, data, workspace, tag)

    def _judge_claims(self, turn: TurnResult | None, workspace: Path,
                      tag: str) -> tuple[dict[str, Any] | None, str | None] | None:
        """Judge the claim files (``STATEMENT_FALSE``, ``STATEMENT_VACUOUS``, ``STATEMENT_INNER_VACUOUS``), or None when the turn made none.

        A claim is verified as a candidate of its derived task; a passing one ends the item for human review.
        """
        task = self.ctx.task
        derived = derived_tasks(task)
        feedback = []
        for claim in CLAIMS:
            name = claim_name(task, claim)
            sub = derived.get(claim.finding)
            data = ws.read_candidate(workspace, name) if sub is not None else None
            claims_false = claim.finding == AUDIT_FALSE and bool(turn and turn.claims_false)
            if data is None and not claims_false:
                continue
            if sub is None:
                final_text = turn.final_text[-500:] if turn else ""
                return self._result("claimed-false", f"unchecked claim ({task.prover} has no refutation format): "
                                                     f"{final_text}"), None
            if data is None:
                self.state.last_reason = f"claimed the statement false without a {name}"
                feedback.append(f"You claimed the statement is false but there is no regular file {name}; write it.")
                continue
            verdict = self._submit(sub, data, tag, claim.submission, name)
            if verdict.verdict == INFRA:
                return self._verifier_infra(verdict), None
            if not verdict.accepted:
                self.state.last_reason = f"{name}: {verdict.reason}"
                feedback.append(verifier_feedback(verdict, name))
                continue
            self.accepted_verdict = verdict
            saved = self.ctx.audit.write_bytes(f"accepted/{name}", data)
            template = self.ctx.audit.write_bytes(f"accepted/{DERIVED_DIR}/{sub.candidate_name}",
                                                  sub.template.encode("utf-8"))
            self.ctx.audit.write_json(f"accepted/{claim.submission}.json", {
                "digest": verdict.digest, "round": tag, "finding": claim.finding, "verdict": verdict.to_wire()})
            self.statement_audit = claim.finding
            self.certificate = (self.ctx.audit.relative(saved), self.ctx.audit.relative(template))
            return self._result(claim.stop, f"{name} (sha256 {verdict.digest}) {claim.shows} and passed the "
                                            "verifier; needs human review"), None
        return (None, "\n\n".join(feedback)) if feedback else None

    def _submit(self, task: Task, data: bytes, tag: str, kind: str, name: str = "") -> Verdict:
        """Verify one submission (one compile) and record its bytes, digest and evidence."""
        self._charge_compile()
        if self.progress_shown or not self._judged_at_once(task, data):
            self._write_progress(f"verifying {tag}" + ("" if kind == "candidate" else f" ({kind})"))
        earlier = self.looked_up
        looked_up = earlier[2] if earlier is not None and earlier[0] is task and earlier[1] == data else None
        if looked_up is not None:
            self.looked_up = None  # once: a later submission of the same bytes (a next sample) is looked up afresh
        verdict, self.cached = verify_cached(self.ctx.cache, task, self.ctx.prover, data,
                                             timeout=self.ctx.verify_timeout,
                                             policy={"prover_sandboxed": self.prover_sandboxed}, looked_up=looked_up)
        self.cache_miss = self.ctx.cache.last_miss if self.ctx.cache is not None and not self.cached else ""
        self._record_submission(task, data, tag, kind, name, verdict)
        self._step_saved()
        return verdict

    def _judged_at_once(self, task: Task, data: bytes) -> bool:
        """The backend says the verdict on ``data`` needs no process and no wait (``judged_at_once``, see
        :class:`~pytest_forall.core.prover.Prover`): an item that showed no progress yet then writes none for it (its
        progress would be replaced within milliseconds; an item ending without progress is counted from its row)."""
        judged = getattr(self.ctx.prover, "judged_at_once", None)
        try:
            return bool(judged(task, data)) if callable(judged) else False
        except Exception:  # noqa: BLE001 - a backend that cannot say: the progress is shown
            return False

    def _record_submission(self, task: Task, data: bytes, tag: str, kind: str, name: str, verdict: Verdict,
                           then: tuple[dict[str, Any], ...] = (), **event: Any) -> None:
        """A judged submission's bytes, verdict and event in the audit record, and the item's view of it; ``then``:
        events that follow it at once, written with it (one append)."""
        self.candidate_digest = verdict.digest
        name = name or task.candidate_name
        saved = self.ctx.audit.write_bytes(f"{tag}/{name}", data)
        if task is self.ctx.task and kind == "candidate":
            self.candidate_data, self.candidate_file = data, saved
        if task is self.ctx.task and any(layer.name == "template" and layer.ok for layer in verdict.layers):
            self.template_unchecked = False
        evidence = self.ctx.audit.write_encoded(f"{tag}/{kind}-verdict.json", _verdict_text(verdict))
        self.verdict_file = (verdict, evidence)
        self.ctx.audit.append_events(
            {"kind": "submission", "submission": kind, "round": tag, "digest": verdict.digest,
             "verdict": verdict.verdict, "strict": verdict.strict, "reason": verdict.reason, "cached": self.cached,
             "file": self.ctx.audit.relative(saved), "evidence": self.ctx.audit.relative(evidence), **event}, *then)
        self.state.last_digest, self.state.last_verdict = verdict.digest, verdict.verdict

    def _review_and_accept(self, verdict: Verdict, data: bytes, workspace: Path,
                           tag: str) -> tuple[dict[str, Any] | None, str | None]:
        task, state = self.ctx.task, self.state
        review: Review | None = None
        if self.ctx.reviewer is not None:
            if state.reviews >= self.ctx.budget.review_rounds:
                return self._exhausted("reviews", f"review budget of {self.ctx.budget.review_rounds} exhausted"), None
            stop, why = self._item_stop()
            if stop:
                return self._exhausted(stop, why), None
            outcome, review = self._review(verdict, data, tag)
            if outcome is not None:
                return outcome, None
        state.phase = ACTOR_PHASE
        on_disk = ws.read_task_candidate(workspace, task)
        decision = decide_acceptance(verdict, review, on_disk, reviewer_required=self.ctx.reviewer is not None)
        self.ctx.audit.event(kind="acceptance", round=tag, accepted=decision.accepted, reason=decision.reason,
                             digest=verdict.digest)
        if not decision.accepted:
            state.last_reason = decision.reason
            ws.write_file(workspace, REVIEW_FILE, (  # never through a symlink the actor left there
                f"# Review of sha256 {verdict.digest}\n\n{decision.reason}\n\n"
                + (review.text[-6000:] if review else "")).encode("utf-8"))
            self._step_saved()
            return None, review_feedback(verdict.digest, decision.reason)
        assert on_disk is not None
        return self._accept(verdict, on_disk, tag, review), None

    def _accept(self, verdict: Verdict, data: bytes, tag: str, review: Review | None) -> dict[str, Any]:
        """Record the accepted artifact and its acceptance (the audit record every accepted item has)."""
        self.accepted_verdict = verdict
        independent = next((layer for layer in verdict.layers if layer.name == "independent_check"), None)
        self.independent = independent.ok if independent else None
        saved, name = self.candidate_file, f"accepted/{self.ctx.task.candidate_name}"
        if saved is not None and data == self.candidate_data:  # the submission's file holds these bytes: linked
            self.ctx.audit.link_bytes(name, data, saved)
        else:
            self.ctx.audit.write_bytes(name, data)
        named = self.verdict_file[1] if self.verdict_file and self.verdict_file[0] is verdict else None
        self.ctx.audit.write_acceptance({
            "digest": verdict.digest, "strict": verdict.strict, "axioms": list(verdict.axioms), "round": tag,
            "review": None if review is None else review.__dict__, "sessions": self.state.sessions},
            named, lambda: _verdict_text(verdict))
        return self._result("accepted" if verdict.strict else "accepted-rules-only", "")

    def _review(self, verdict: Verdict, data: bytes, tag: str) -> tuple[dict[str, Any] | None, Review | None]:
        """A fresh read-only session on a copy of exactly the verified bytes; (infra outcome, None) or (None, review)."""
        assert self.ctx.reviewer is not None
        task, state = self.ctx.task, self.state
        state.phase = REVIEW_PHASE
        state.reviews += 1
        self.activity = f"review {tag}"
        self._save()
        review_dir = prepare_review_dir(self.ctx.audit.directory / "review-ws" / tag.replace("/", "-"), task, data)
        rctx = SessionContext(task=task, workspace=review_dir, audit_dir=self.ctx.audit.directory / tag / "review",
                              role=REVIEWER, prover=self.ctx.prover, budget=self.ctx.budget, options=self.ctx.options)
        rctx.audit_dir.mkdir(parents=True, exist_ok=True)
        prompt = reviewer_prompt(task, verdict.digest)
        with self._tools(REVIEWER, review_dir, rctx.audit_dir) as options:
            rctx.options = options
            session = self.ctx.reviewer.start(rctx)
            try:
                turn = session.turn(prompt, timeout=self._turn_limit())
            finally:
                session.close()
        self._account(turn, REVIEWER, prompt, tag)
        problem = self._turn_infra(turn, self.ctx.reviewer)
        if problem:
            return self._result(infra_stop(problem), f"reviewer: {problem}"), None
        review = parse_review(turn.final_text)
        self.ctx.audit.write_json(f"{tag}/review.json", {"approved": review.approved, "digest": review.digest,
                                                         "reason": review.reason, "text": review.text[-4000:]})
        self.ctx.audit.event(kind="review", round=tag, shown_digest=verdict.digest, approved=review.approved,
                             digest=review.digest, reason=review.reason, session=turn.session_id,
                             review_dir=self.ctx.audit.relative(review_dir))
        state.last_review = f"{'APPROVE' if review.approved else 'REJECT'} {review.digest} {review.reason}".strip()
        self._save()
        return None, review

    @contextlib.contextmanager
    def _tools(self, role: str, workspace: Path, audit_dir: Path) -> Iterator[dict[str, Any]]:
        """A session's options: with ``--forall-tools=mcp`` a coding agent gets the item's MCP tools.

        The server runs framework-side for the session's lifetime (see docs/tools.md); its sealed call
        records stay in the session's audit dir and are summarised into ``tools.json`` there.
        """
        frontend = self.ctx.frontend if role == ACTOR else self.ctx.reviewer
        self.tools_brief = ""
        if (self.ctx.options.get("tools") != "mcp" or not getattr(frontend, "is_agent", False)
                or self.ctx.open_tools is None):
            yield self.ctx.options
            return
        self.tools_opened = True
        charge = self._charge_compile if role == ACTOR else None
        with self.ctx.open_tools(task=self.ctx.task, role=role, workspace=workspace, audit_dir=audit_dir,
                                 prover=self.ctx.prover, timeout=self.ctx.verify_timeout,
                                 retrieval_root=str(self.ctx.options.get("retrieval_root") or ""),
                                 charge_compile=charge) as tools:
            offered = tools.offered()
            self.tools_brief = offered.brief if offered else ""
            try:
                yield {**self.ctx.options, "mcp_servers": tools.mcp_servers(),
                       "env": {**(self.ctx.options.get("env") or {}), **tools.env()}}
            finally:
                (audit_dir / "tools.json").write_text(json.dumps(tools.summary(), sort_keys=True), encoding="utf-8")

    def _tool_counts(self) -> dict[str, int]:
        """Navigation, compilation and interaction (goals/try/query) calls over every session of the item (tools.json)."""
        counts = {"navigation": 0, "compilation": 0, "interaction": 0}
        if not (self.tools_opened or self.resumed_at_start):
            return counts  # no session of this item had tools: nothing to list (a warm item's directories, #18)
        # os.walk, not Path.rglob: the same files at a fraction of the cost (every item asks, a cached one too); never
        # below an agent's HOME or TMPDIR (its sandbox writes them: a tools.json planted there was counted)
        found = []
        for directory, subdirs, files in os.walk(self.ctx.audit.directory):
            subdirs[:] = [d for d in subdirs if not d.endswith(UNRECORDED_DIRS)]
            if "tools.json" in files:
                found.append(Path(directory) / "tools.json")
        for path in sorted(found):
            summary = json.loads(path.read_text(encoding="utf-8"))
            for key in counts:
                counts[key] += int(summary.get(key) or 0)
        return counts

    def _environment(self) -> dict[str, Any]:
        """What the verdict depended on besides the task and the proof (compared with a baseline's): with the
        kernel that judged it and the known soundness bugs in force for it (the verdict's, else the backend's)."""
        prover = self.ctx.prover
        if prover is None:
            return {"environment": "", "verifier": "", "uncacheable": "", "kernel": "", "advisories": [],
                    "advisory_coverage": [], "toolchain": ""}
        env, why = describe_environment(self.ctx.task, prover)
        changes = ({k: str(v) for k, v in prover.change_fields(self.ctx.task, self.candidate_data).items()}
                   if isinstance(prover, NamesChanges) else {})
        kernel = dict(self.accepted_verdict.kernel) if self.accepted_verdict else {}
        if not kernel and isinstance(prover, ChecksAdvisories):
            try:
                kernel = prover.kernel()
            except Exception as exc:  # noqa: BLE001 - said so in the row, never guessed
                kernel = {"problem": f"{type(exc).__name__}: {exc}"}
        return {"environment": environment_digest(env), "verifier": verifier_version(prover)[:16],
                "uncacheable": why,
                "kernel": " ".join(str(kernel.get(k, "")) for k in ("prover", "version")).strip()
                or str(kernel.get("problem", "")),
                "advisories": [str(a) for a in kernel.get("advisories", [])],
                # how each is kept out of an accepted proof: "<id> <detector|refused|impossible> (<construct>)"
                "advisory_coverage": [f"{a} {str(how).split(':', 1)[0]}"
                                      for a, how in sorted(kernel.get("coverage", {}).items())],
                # the installation that judged (a backend naming none: the version its fingerprint names)
                "toolchain": toolchain_of(prover) or str((env or {}).get("version", ""))[:300], **changes}

    def _infra_turn(self, stop: str, reason: str) -> dict[str, Any]:
        """End the item as infra after an actor turn that was not the attempt's: the round is not counted,
        so a resumed run re-runs the turn within the same round budget."""
        self.state.rounds = max(0, self.state.rounds - 1)
        self.state.sample_rounds = max(0, self.state.sample_rounds - 1)
        return self._result(stop, reason)

    def _result(self, stop: str, reason: str) -> dict[str, Any]:
        """The item's row: its outcome is the one its stop reason has (:mod:`pytest_forall.core.outcomes`).

        A problem that does not compile here is infra whatever else happened, so an outcome reached before any
        check of the template (a free-turn frontend with no stored proof) is first checked against it.
        """
        if self.template_unchecked and outcome_of(stop) != INFRA:
            self.template_unchecked = False
            infra = self._template_infra()
            if infra:
                stop, reason = "template", infra
        verdict = self.accepted_verdict
        state = self.state
        usage = state.usage
        outcome = outcome_of(stop)
        state.outcome = self.outcome = outcome
        state.stop = stop
        state.infra = reason if outcome == INFRA else ""
        self.activity = f"finished: {outcome}"
        self._save()
        result = {
            "task_id": self.ctx.task.task_id, "suite": self.ctx.task.suite, "track": self.ctx.task.track,
            "prover": self.ctx.prover.name if self.ctx.prover else self.ctx.task.prover,
            "frontend": self.ctx.frontend.name, "reviewer": self.ctx.reviewer.name if self.ctx.reviewer else "",
            "outcome": outcome, "stop": stop, "reason": reason,
            "digest": verdict.digest if verdict else "", "axioms": list(verdict.axioms) if verdict else [],
            "project_axioms": _project_axioms(verdict),
            "independent": self.independent, "compiles": state.compiles, "rounds": state.rounds,
            "samples": min(state.sample + 1, self.ctx.budget.samples), "reviews": state.reviews,
            "wall_s": round(self._wall(), 3),
            "tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out, "tokens_cached": usage.tokens_cached,
            "cost_usd": usage.cost_usd, "sessions": list(state.sessions), "budget": self.ctx.budget.to_wire(),
            "tool_calls": self._tool_counts(), "prover_sandboxed": self.prover_sandboxed,
            "notices": list(self.notices),
            "statement_audit": self.statement_audit, "certificate": self.certificate[0],
            "certificate_template": self.certificate[1],
            "cached": self.cached, "cache_miss": self.cache_miss, "candidate_digest": self.candidate_digest,
            "task_digest": task_digest(self.ctx.task), **self._environment(),
            "model": str(self.ctx.options.get("model") or ""), "effort": str(self.ctx.options.get("effort") or ""),
        }
        encoded = json.dumps(result, sort_keys=True, default=str)  # once: result.json, audit.json and the row's copy
        self.ctx.audit.write_encoded("result.json", encoded)
        self.ctx.audit.summarize(result, encoded)
        self.result_json = (result, encoded)
        return result
