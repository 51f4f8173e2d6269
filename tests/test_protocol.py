"""The protocol loop, resume state, review parsing and refutations, without agent CLIs.

A scripted in-process frontend stands in for the actor and the reviewer; the fake prover judges by
keywords (``FAIL`` does not compile), except in the refutation tests, which use the real Rocq.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.accept import AuditRecord, read_acceptance
from pytest_forall.core.actor import SessionContext, SessionHandle, TurnResult
from pytest_forall.core.audit import derived_tasks
from pytest_forall.core.model import Budget, Task, Usage, sha256_bytes
from pytest_forall.core.protocol import ItemContext, ItemRun
from pytest_forall.core.review import parse_review
from pytest_forall.core.state import ItemState, StateStore

sys.path.insert(0, str(Path(__file__).parent / "example_suites"))
from fake_conftest import FakeProver

from conftest import require_tool

SECRET = b"unit-test-run-secret"
DIGEST = "a" * 64

#: What one scripted turn does: gets the session context and the prompt, returns the turn's result.
Step = Callable[[SessionContext, str], TurnResult]


def writes(text: str, name: str = "", tokens: int = 100, **result: Any) -> Step:
    def step(ctx: SessionContext, prompt: str) -> TurnResult:
        (ctx.workspace / (name or ctx.task.candidate_name)).write_text(text)
        return TurnResult(usage=Usage(tokens, tokens // 10, 0, tokens / 10_000), **result)
    return step


def approves(ctx: SessionContext, prompt: str) -> TurnResult:
    digest = sha256_bytes((ctx.workspace / ctx.task.candidate_name).read_bytes())
    return TurnResult(usage=Usage(50, 5, 0, 0.01),
                      final_text=f"fine\nREVIEW_VERDICT: APPROVE\nREVIEW_SHA256: {digest}")


@dataclass
class ScriptedSession:
    frontend: ScriptedFrontend
    ctx: SessionContext
    session_id: str = ""
    turns: int = 0

    def turn(self, prompt: str, *, timeout: float | None) -> TurnResult:
        self.turns += 1
        self.frontend.prompts.append(prompt)
        result = self.frontend.steps.pop(0)(self.ctx, prompt)
        result.session_id = self.session_id
        return result

    def handle(self) -> SessionHandle:
        return SessionHandle(self.session_id, "actor", self.turns)

    def close(self) -> None:
        pass


@dataclass
class ScriptedFrontend:
    steps: list[Step]
    name: str = "scripted"
    is_agent: bool = True
    prompts: list[str] = field(default_factory=list)
    contexts: list[SessionContext] = field(default_factory=list)

    def probe(self) -> str:
        return ""

    def start(self, ctx: SessionContext) -> ScriptedSession:
        self.contexts.append(ctx)
        resumed = ctx.resume.session_id if ctx.resume else ""
        return ScriptedSession(self, ctx, resumed or f"session-{len(self.contexts)}",
                               ctx.resume.turns if ctx.resume else 0)


def fake_task(task_id: str = "t") -> Task:
    return Task(task_id=task_id, suite="fake", track="fake", prover="fakeprover", source_path=f"{task_id}.txt",
                template="TEMPLATE\n", theorem_name=task_id)


def item(tmp_path: Path, actor: ScriptedFrontend, reviewer: ScriptedFrontend | None, task: Task | None = None,
         prover: Any = None, **budget: Any) -> ItemContext:
    task = task or fake_task()
    return ItemContext(task=task, workspace_root=tmp_path / "ws", workspace_name=task.task_id,
                       audit=AuditRecord(tmp_path / "audit" / task.task_id, task), prover=prover or FakeProver(),
                       frontend=actor, reviewer=reviewer, budget=Budget(**budget), options={"sandbox": "none"},
                       run_secret=SECRET)


def events(ctx: ItemContext, kind: str) -> list[dict[str, Any]]:
    return [e for e in ctx.audit.events() if e["kind"] == kind]


# --- the loop --------------------------------------------------------------------------------------------

def test_infra_keeps_progress_and_the_resumed_run_continues_the_same_session(tmp_path: Path) -> None:
    infra = TurnResult(usage=Usage(0, 0), infra="authentication: 401 invalid x-api-key", exit_code=1)
    first = ScriptedFrontend([writes("FAIL\n"), lambda ctx, prompt: infra])
    result = ItemRun(item(tmp_path, first, ScriptedFrontend([approves]))).run()
    # the turn the credential cut short is not a round: the resumed run re-runs it within the budget
    assert (result["outcome"], result["stop"], result["rounds"], result["compiles"]) == ("infra", "authentication", 1, 1)
    assert result["reason"] == "actor: authentication: 401 invalid x-api-key"

    second = ScriptedFrontend([writes("OK\n")])
    ctx = item(tmp_path, second, ScriptedFrontend([approves]))
    result = ItemRun(ctx).run()
    assert (result["outcome"], result["rounds"], result["compiles"], result["tokens_in"]) == ("strict", 2, 2, 250)
    assert second.contexts[0].resume == SessionHandle("session-1", "actor", 2)
    assert result["sessions"] == ["session-1"]
    assert second.prompts[0].startswith("Your previous turn was cut short by an infrastructure problem "
                                        "(actor: authentication: 401")
    assert "The verifier rejected your submission" in second.prompts[0]   # the diagnostics it never saw
    assert [e["action"] for e in events(ctx, "state")] == ["resumed"]


def test_infra_in_the_review_resumes_with_a_new_review_and_no_actor_turn(tmp_path: Path) -> None:
    overloaded = TurnResult(usage=Usage(0, 0), infra="provider-error: 529 overloaded")
    result = ItemRun(item(tmp_path, ScriptedFrontend([writes("OK\n")]),
                          ScriptedFrontend([lambda ctx, prompt: overloaded]))).run()
    assert (result["outcome"], result["reason"]) == ("infra", "reviewer: provider-error: 529 overloaded")

    actor = ScriptedFrontend([])          # any actor turn would fail: it has nothing scripted
    ctx = item(tmp_path, actor, ScriptedFrontend([approves]))
    result = ItemRun(ctx).run()
    assert (result["outcome"], result["rounds"], result["compiles"], result["reviews"]) == ("strict", 1, 2, 2)
    assert actor.prompts == [] and actor.contexts[0].resume == SessionHandle("session-1", "actor", 1)
    assert [s["round"] for s in events(ctx, "submission")] == ["s0/r1", "s0/r1-resumed"]


def test_state_that_fails_its_hmac_is_quarantined_and_the_item_restarts(tmp_path: Path) -> None:
    infra = TurnResult(usage=Usage(0, 0), infra="quota: insufficient_quota")
    ItemRun(item(tmp_path, ScriptedFrontend([writes("FAIL\n"), lambda c, p: infra]), None)).run()
    state_file = tmp_path / "audit" / "t" / "state.json"
    envelope = json.loads(state_file.read_text())
    envelope["payload"] = envelope["payload"].replace('"rounds": 1', '"rounds": 0')
    state_file.write_text(json.dumps(envelope))

    actor = ScriptedFrontend([writes("OK\n")])
    ctx = item(tmp_path, actor, None)
    result = ItemRun(ctx).run()
    assert (result["outcome"], result["rounds"], result["compiles"]) == ("strict", 1, 1)
    assert actor.contexts[0].resume is None
    assert (state_file.parent / "state.json.quarantined-1").exists()
    assert "HMAC does not match" in events(ctx, "state")[0]["reason"]


def test_state_is_bound_to_its_task_and_workspace(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.json", SECRET, "t", tmp_path / "ws" / "a")
    store.save(ItemState(rounds=3))
    assert store.load() == (ItemState(rounds=3), "")
    for other in (StateStore(store.path, SECRET, "t", tmp_path / "ws" / "b"),
                  StateStore(store.path, SECRET, "u", tmp_path / "ws" / "a"),
                  StateStore(store.path, b"another run", "t", tmp_path / "ws" / "a")):
        store.save(ItemState(rounds=3))
        state, problem = other.load()
        assert state is None and "HMAC does not match" in problem and not store.path.exists()


def test_a_turn_without_tokens_is_infra_for_agents_only(tmp_path: Path) -> None:
    silent = writes("OK\n", tokens=0)
    result = ItemRun(item(tmp_path / "a", ScriptedFrontend([silent]), None)).run()
    assert result["outcome"] == "infra" and result["reason"].startswith("actor: zero-tokens: ")
    offline = ScriptedFrontend([writes("OK\n", tokens=0)], is_agent=False)
    assert ItemRun(item(tmp_path / "b", offline, None)).run()["outcome"] == "strict"


def test_compile_budget_is_per_sample_and_counts_the_agents_own_compiles(tmp_path: Path) -> None:
    def compiles_three(ctx: SessionContext, prompt: str) -> TurnResult:
        ctx.charge_compile(3)
        return writes("FAIL\n")(ctx, prompt)

    actor = ScriptedFrontend([compiles_three, compiles_three])   # 3 + 1 submission: a sample's budget of 4
    result = ItemRun(item(tmp_path, actor, None, samples=2, compiles=4)).run()
    assert (result["outcome"], result["samples"], result["rounds"], result["compiles"]) == ("failed", 2, 2, 8)
    assert result["reason"].startswith("compile budget of 4 per sample exhausted (last: ")
    assert len(actor.contexts) == 2 and not actor.steps


def test_item_budgets_stop_with_the_budget_and_the_progress_named(tmp_path: Path) -> None:
    actor = ScriptedFrontend([writes("FAIL\n"), writes("FAIL\n")])
    result = ItemRun(item(tmp_path / "usd", actor, None, usd=0.015)).run()
    # a spend cap is a resource decision outside the attempt: infra, resumable with a higher cap
    assert (result["outcome"], result["stop"], result["rounds"]) == ("infra", "item-usd", 2)
    assert result["reason"].startswith("spend cap of $0.015 for this item reached (last: elaboration")
    assert "after 1 sample(s), 2 round(s), 2 compile(s), 0 review(s), $0.0200" in result["reason"]

    rejecting = ScriptedFrontend([lambda ctx, prompt: TurnResult(usage=Usage(5, 5), final_text="no")] * 2)
    result = ItemRun(item(tmp_path / "rev", ScriptedFrontend([writes("OK\n")] * 3), rejecting,
                          review_rounds=2, rounds=5)).run()
    assert (result["outcome"], result["stop"]) == ("failed", "reviews")
    assert result["reason"].startswith("review budget of 2 exhausted")
    audit = json.loads((tmp_path / "rev" / "audit" / "t" / "audit.json").read_text())
    assert audit["budget"][0]["exhausted"] == "review budget of 2 exhausted"
    assert [a["accepted"] for a in audit["acceptances"]] == [False, False]


def test_review_sees_a_copy_of_the_verified_bytes_and_a_rejection_becomes_review_md(tmp_path: Path) -> None:
    seen: list[Path] = []

    def rejects(ctx: SessionContext, prompt: str) -> TurnResult:
        seen.append(ctx.workspace)
        return TurnResult(usage=Usage(5, 5), final_text=f"too clever\nREVIEW_VERDICT: REJECT\nREVIEW_SHA256: {DIGEST}")

    actor = ScriptedFrontend([writes("OK\n"), writes("OK again\n")])
    ctx = item(tmp_path, actor, ScriptedFrontend([rejects, approves]))
    result = ItemRun(ctx).run()
    assert result["outcome"] == "strict" and result["digest"] == sha256_bytes(b"OK again\n")
    workspace = tmp_path / "ws" / "t"
    assert seen[0] != workspace and (seen[0] / "t.txt").read_text() == "OK\n"
    assert (seen[0] / "STATEMENT.txt").read_text() == "TEMPLATE\n"
    assert "too clever" in (workspace / "REVIEW.md").read_text() and "REVIEW.md" in actor.prompts[1]


# --- the reviewer's verdict ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, approved, reason", [
    (f"ok\nREVIEW_VERDICT: APPROVE\nREVIEW_SHA256: {DIGEST}\n", True, ""),
    (f"ok\nREVIEW_SHA256: {DIGEST}\nREVIEW_VERDICT: REJECT", False, "reviewer rejected"),
    (f"REVIEW_VERDICT: APPROVE\nREVIEW_SHA256: {DIGEST}\nbut on second thought, no", False, "not the last two"),
    (f"REVIEW_VERDICT: APPROVE\nREVIEW_VERDICT: APPROVE\nREVIEW_SHA256: {DIGEST}", False, "got 2 and 1"),
    (f"REVIEW_VERDICT: approve\nREVIEW_SHA256: {DIGEST}", False, "unknown verdict"),
    ("REVIEW_VERDICT: APPROVE\nREVIEW_SHA256: abc", False, "malformed digest"),
    ("Looks good to me.", False, "got 0 and 0"),
])
def test_only_the_exact_two_line_ending_counts(text: str, approved: bool, reason: str) -> None:
    review = parse_review(text)
    assert review.approved is approved and reason in review.reason


# --- statement_false -------------------------------------------------------------------------------------

FALSE_PROBLEM = "Require Import Arith.\nTheorem forall_demo (n : nat) (h : n > 2) : n + n = 3.\nProof. Admitted.\n"


def rocq_task(tmp_path: Path) -> Task:
    from pytest_forall.lang.rocq.problem import parse_coq

    path = tmp_path / "forall_demo.v"
    path.write_text(FALSE_PROBLEM)
    return parse_coq("forall_demo", path, FALSE_PROBLEM)


def test_refutation_task_negates_the_whole_statement(tmp_path: Path) -> None:
    refutation = derived_tasks(rocq_task(tmp_path)).get("false")
    assert refutation is not None and refutation.theorem_name == "forall_demo_is_false"
    # the task, then the frozen ties after the hole that make the refuted statement the theorem's own type
    # (docs/audit.md: a statement elaborated otherwise than the theorem cannot be refuted in its place)
    assert refutation.template.startswith("Require Import Arith.\nTheorem forall_demo_is_false :\n"
                                          "    ~ (forall (n : nat) (h : n > 2), n + n = 3).\nProof. Admitted.\n"
                                          "Definition forall_demo_audit_refutation_tie (forall_audit_H : forall (n : "
                                          "nat) (h : n > 2), n + n = 3) (n : nat) (h : n > 2) :\n    n + n = 3\n")
    assert refutation.template.rstrip().endswith("Definition forall_demo_audit_refutation_same\n    := ltac:("
                                                 "lazymatch type of forall_demo_audit_refutation_tie with ?A -> ?B "
                                                 "=> exact (@Coq.Init.Logic.eq_refl _ A : @Coq.Init.Logic.eq _ A B)"
                                                 " end).")
    assert derived_tasks(fake_task()) == {}


@pytest.mark.slow
def test_a_checked_refutation_is_statement_false_and_a_wrong_one_is_fed_back(tmp_path: Path,
                                                                             shared_prover_cache: Path) -> None:
    require_tool("coqc")
    from pytest_forall.lang.rocq.backend import RocqProver

    task = rocq_task(tmp_path)
    refutation = derived_tasks(task).get("false")
    assert refutation is not None
    wrong = refutation.template.replace("Proof. Admitted.", "Proof. exact I. Qed.")
    right = refutation.template.replace(
        "Proof. Admitted.", "Proof.\n  intro claim. specialize (claim 3 (le_n 3)). discriminate claim.\nQed.")
    actor = ScriptedFrontend([writes(wrong, "STATEMENT_FALSE.v"), writes(right, "STATEMENT_FALSE.v")])
    ctx = item(tmp_path, actor, ScriptedFrontend([]), task=task,
               prover=RocqProver({"cache_dir": str(shared_prover_cache)}))
    result = ItemRun(ctx).run()
    assert result["outcome"] == "statement_false", result["reason"]
    assert result["reason"].startswith("STATEMENT_FALSE.v (sha256 ") and "needs human review" in result["reason"]
    assert "STATEMENT_FALSE.v" in actor.prompts[0] and "forall_demo_is_false" in actor.prompts[0]
    assert "The verifier rejected your submission `STATEMENT_FALSE.v`" in actor.prompts[1]
    assert [s["submission"] for s in events(ctx, "submission")] == ["refutation", "refutation"]
    assert (ctx.audit.directory / "accepted" / "STATEMENT_FALSE.v").read_text() == right


# --- a stored submission the verdict cache holds accepted (issue 18, part 4) ---------------------------------

class CountingProver(FakeProver):
    """The fake prover with an environment fingerprint (so verdicts are cached) and a count of its compiles."""

    def __init__(self) -> None:
        self._compiles = 0  # private: a backend's public settings are part of the cache key's policy

    def fingerprint(self, task: Task) -> dict[str, str]:
        return {"version": "fake 1", "libraries": "none"}

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        self._compiles += 1
        return super().compile(task, workspace, candidate, timeout)


class SessionOnlyReplay:
    """Replay without :class:`~pytest_forall.core.actor.StoresCandidates`: every item runs its session."""

    def __init__(self, proofs: Path) -> None:
        from pytest_forall.agents.replay import ReplayFrontend

        self.inner = ReplayFrontend({"proofs": str(proofs)})
        self.name, self.is_agent, self.free_turns = "replay", False, True

    def probe(self) -> str:
        return self.inner.probe()

    def start(self, ctx: SessionContext) -> Any:
        return self.inner.start(ctx)


def test_a_stored_proof_the_cache_holds_accepted_gives_the_sessions_row_without_a_session(tmp_path: Path) -> None:
    """A replayed proof whose accepted verdict is in the cache: the row is the one the full session gives from the
    same cache entry (outcome, digest, compiles, rounds, cached, …), the audit record still holds the accepted
    candidate, its verdict and the acceptance, and no workspace, turn or compile happened. A tampered entry, a
    cached rejection and a frontend that cannot say its submission beforehand all take the full path."""
    import dataclasses

    from pytest_forall.agents.replay import ReplayFrontend
    from pytest_forall.core.actor import StoresCandidates
    from pytest_forall.core.cache import VerdictCache

    proofs = tmp_path / "proofs"
    proofs.mkdir()
    task = fake_task("t")
    (proofs / task.candidate_name).write_text("OK\n")
    cache = VerdictCache(tmp_path / "verdicts", "readwrite")
    prover = CountingProver()

    def run(name: str, frontend: Any, which: Task = task) -> tuple[dict[str, Any], ItemContext]:
        ctx = dataclasses.replace(item(tmp_path / name, frontend, None, task=which, prover=prover), cache=cache)
        return ItemRun(ctx).run(), ctx

    assert isinstance(ReplayFrontend({"proofs": str(proofs)}), StoresCandidates)
    assert not isinstance(SessionOnlyReplay(proofs), StoresCandidates)
    first, _ = run("first", SessionOnlyReplay(proofs))
    assert (first["outcome"], first["cached"], prover._compiles) == ("strict", False, 1)
    session, _ = run("session", SessionOnlyReplay(proofs))
    fast, ctx = run("fast", ReplayFrontend({"proofs": str(proofs)}))
    assert prover._compiles == 1 and session["cached"] is True and fast["cached"] is True, (session["cache_miss"], session["uncacheable"], fast["cache_miss"])
    ignore = {"wall_s"}
    assert {k: v for k, v in fast.items() if k not in ignore} == {k: v for k, v in session.items() if k not in ignore}
    audit = ctx.audit.directory
    assert (audit / "accepted" / task.candidate_name).read_text() == "OK\n"
    acceptance = read_acceptance(audit)
    assert acceptance["digest"] == fast["digest"] == sha256_bytes(b"OK\n") and acceptance["verdict"]["verdict"] == "accept"
    assert json.loads((audit / "s0" / "r1" / "candidate-verdict.json").read_text())["digest"] == fast["digest"]
    assert [e["cached"] for e in events(ctx, "submission")] == [True] and events(ctx, "acceptance")[0]["accepted"]
    assert events(ctx, "turn") == [] and not (tmp_path / "fast" / "ws" / task.task_id).exists()
    assert json.loads((audit / "result.json").read_text())["outcome"] == "strict"

    # a tampered entry is a miss: the full path verifies again
    entries = [e for e in (tmp_path / "verdicts").glob("??/*.json")]
    assert len(entries) == 1 and '\\"axioms\\": []' in entries[0].read_text()
    entries[0].write_text(entries[0].read_text().replace('\\"axioms\\": []', '\\"axioms\\": [\\"x\\"]'))
    again, _ = run("tampered", ReplayFrontend({"proofs": str(proofs)}))
    assert (again["outcome"], again["cached"], prover._compiles) == ("strict", False, 2)

    # a cached rejection runs the session (whose row says why)
    (proofs / task.candidate_name).write_text("FAIL\n")
    run("reject-1", ReplayFrontend({"proofs": str(proofs)}))
    rejected, ctx = run("reject-2", ReplayFrontend({"proofs": str(proofs)}))
    assert (rejected["outcome"], rejected["cached"], prover._compiles) == ("failed", True, 3)
    assert events(ctx, "turn") != []


def test_a_candidate_copy_rewritten_after_its_compile_is_rejected(tmp_path: Path) -> None:
    """The verifier compares the copy it compiled with the submitted bytes before the axiom audit reads it: a layer
    (or anything the compile left running) that rewrites the copy after the compile reported the submitted digest
    gets a rejection; the same layer leaving the bytes as they were (rewriting them unchanged) does not."""
    from pytest_forall.core.model import Layer
    from pytest_forall.core.verify import verify_candidate

    class Rewriting(FakeProver):
        def __init__(self, replacement: bytes | None) -> None:
            self.replacement = replacement

        def statement_check(self, task: Task, workspace: Path, timeout: float) -> Layer:
            [copy] = [p for p in workspace.rglob(task.candidate_name) if p.is_file()]
            copy.write_bytes(self.replacement if self.replacement is not None else copy.read_bytes())
            return Layer("statement", True)

    task, honest = fake_task(), b"an honest proof\n"
    rewritten = verify_candidate(task, Rewriting(b"RULES: another proof\n"), honest, builddir=tmp_path / "a")
    assert (rewritten.verdict, rewritten.reason) == ("reject", "elaboration: the candidate copy changed after compilation")
    unchanged = verify_candidate(task, Rewriting(None), honest, builddir=tmp_path / "b")
    assert unchanged.verdict == "accept" and unchanged.strict, unchanged.reason
