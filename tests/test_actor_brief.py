"""The actor's brief (its first prompt) explains when to use goals/try rather than compile/submit exactly when the
session's tool server offers them: the words are the language pack's (``Interactive.proof_tools``), the decision is
the tool server's (an actor with ``--forall-tools=mcp`` and a prover that can hold a session here)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.actor import SessionContext, TurnResult
from pytest_forall.core.model import Usage
from pytest_forall.core.prompts import initial_prompt
from pytest_forall.core.protocol import ItemRun
from pytest_forall.core.prover import Interactive, ProofTools, proof_tools
from pytest_forall.lang.lean.backend import LeanProver
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.tools.item import open_item_tools

sys.path.insert(0, str(Path(__file__).parent / "example_suites"))
from fake_conftest import FakeProver
from test_protocol import ScriptedFrontend, fake_task, item

BRIEF = "Use goals(line) and try(tactics, line) while writing; compile and submit the finished file."


class InteractiveFake(FakeProver):
    """The fake prover with a language pack's tool texts (its session is never started: the turn ends at once)."""

    def __init__(self, offered: bool) -> None:
        super().__init__()
        self.offered = offered

    def proof_tools(self) -> ProofTools | None:
        return ProofTools(BRIEF, "goals doc", "try doc", "query doc") if self.offered else None

    def proof_session(self, task: Any, timeout: float, excluded: tuple[str, ...]) -> Any:
        raise AssertionError("no session in this test")


def stop(ctx: SessionContext, prompt: str) -> TurnResult:
    return TurnResult(usage=Usage(0, 0), infra="quota: stop here")


@pytest.mark.parametrize(("prover", "tools", "mentioned"), [
    (InteractiveFake(True), "mcp", True),   # offered: the brief says when to use them
    (InteractiveFake(False), "mcp", False),  # the pack cannot offer them here (Lean without a REPL)
    (FakeProver(), "mcp", False),            # not Interactive at all
    (InteractiveFake(True), "none", False),  # no tool server for this session
])
def test_the_brief_mentions_goals_and_try_exactly_when_they_are_offered(tmp_path: Path, prover: Any, tools: str,
                                                                       mentioned: bool) -> None:
    actor = ScriptedFrontend([stop])
    ctx = item(tmp_path, actor, None, prover=prover)
    ctx.options = {**ctx.options, "tools": tools}
    ctx.open_tools = open_item_tools
    ItemRun(ctx).run()
    assert len(actor.prompts) == 1
    assert (BRIEF in actor.prompts[0]) is mentioned and ("goals(" in actor.prompts[0]) is mentioned, actor.prompts[0]
    servers = actor.contexts[0].options.get("mcp_servers")
    assert bool(servers) is (tools == "mcp")


def test_each_language_pack_words_its_own_brief() -> None:
    """Rocq's names Coq's commands; Lean's (offered only with a REPL) names #check and says it is untested on real
    Lean; the brief is placed in the prompt as given."""
    rocq = proof_tools(RocqProver({}))
    assert rocq is not None and "Check/About/Locate" in rocq.brief and "Coq" in rocq.goals
    assert proof_tools(LeanProver({})) is None and isinstance(LeanProver({}), Interactive)
    lean = proof_tools(LeanProver({"lean_repl": "/nonexistent/repl"}))
    assert lean is not None and "#check" in lean.brief and "untested on real Lean" in lean.brief
    assert "Coq" not in lean.brief + lean.goals + lean.try_ + lean.query
    task = fake_task()
    assert lean.brief in initial_prompt(task, lean.brief) and "goals(" not in initial_prompt(task)
