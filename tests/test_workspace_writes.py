"""What the harness writes into an actor's workspace goes into the workspace, never through what the actor planted.

The actor's shell can write its workspace and knows the host paths around it (paths keep their host names inside
its sandbox; its HOME is in the item's audit dir). A symlink it leaves where the harness later writes (``REVIEW.md``
after a rejection, ``TASK.md`` and the task's context files when a resumed run prepares the workspace again) must not
carry the harness's write to a file outside the workspace: another item's record, the run's ``results.jsonl``, the
verdict cache. The scripted in-process frontends of ``test_protocol`` play the actor and the reviewer.
"""

from __future__ import annotations

import os
from pathlib import Path

from test_protocol import DIGEST, ScriptedFrontend, approves, fake_task, item, writes

from pytest_forall.core.actor import SessionContext, TurnResult
from pytest_forall.core.model import Usage
from pytest_forall.core.protocol import ItemRun

RECORD = '{"nodeid": "other", "outcome": "failed"}\n'


def plants(link: str, victim: Path, text: str = "OK\n") -> object:
    """An actor turn: writes the candidate and leaves ``link`` in its workspace pointing at ``victim``."""
    def step(ctx: SessionContext, prompt: str) -> TurnResult:
        (ctx.workspace / ctx.task.candidate_name).write_text(text)
        target = ctx.workspace / link
        if target.exists() or target.is_symlink():
            target.unlink()
        os.symlink(victim, target)
        return TurnResult(usage=Usage(100, 10, 0, 0.01))
    return step


def rejects(ctx: SessionContext, prompt: str) -> TurnResult:
    return TurnResult(usage=Usage(5, 5), final_text=f"no\nREVIEW_VERDICT: REJECT\nREVIEW_SHA256: {DIGEST}")


def test_a_rejection_never_writes_review_md_through_a_symlink_the_actor_planted(tmp_path: Path) -> None:
    victim = tmp_path / "results.jsonl"          # stands for any harness file outside the workspace
    victim.write_text(RECORD)
    actor = ScriptedFrontend([plants("REVIEW.md", victim), writes("OK again\n")])
    result = ItemRun(item(tmp_path, actor, ScriptedFrontend([rejects, approves]))).run()
    assert result["outcome"] == "strict"
    assert victim.read_text() == RECORD
    review = tmp_path / "ws" / "t" / "REVIEW.md"
    assert not review.is_symlink() and "REVIEW_VERDICT: REJECT" in review.read_text()


def test_a_resumed_workspace_is_prepared_without_following_what_the_actor_planted(tmp_path: Path) -> None:
    victim = tmp_path / "results.jsonl"
    victim.write_text(RECORD)
    task = fake_task()
    task.context_files["lib/Helper.txt"] = "HELPER\n"
    infra = TurnResult(usage=Usage(0, 0), infra="authentication: 401 invalid x-api-key", exit_code=1)

    def plant_all(ctx: SessionContext, prompt: str) -> TurnResult:
        os.symlink(victim, ctx.workspace / "TASK.md.new")
        os.replace(ctx.workspace / "TASK.md.new", ctx.workspace / "TASK.md")
        (ctx.workspace / "lib" / "Helper.txt").unlink()
        os.symlink(victim, ctx.workspace / "lib" / "Helper.txt")
        return infra

    first = ScriptedFrontend([plant_all])
    assert ItemRun(item(tmp_path, first, None, task=task)).run()["outcome"] == "infra"
    second = ScriptedFrontend([lambda ctx, prompt: TurnResult(usage=Usage(1, 1))])
    ItemRun(item(tmp_path, second, None, task=task)).run()
    assert victim.read_text() == RECORD
    workspace = second.contexts[0].workspace
    assert not (workspace / "TASK.md").is_symlink() and "TEMPLATE" not in victim.read_text()
    assert (workspace / "lib" / "Helper.txt").read_text() == "HELPER\n"


def test_a_resumed_workspace_tree_is_copied_without_following_a_planted_directory_link(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "A.txt").write_text("A\n")
    os.symlink("A.txt", tree / "src" / "B.txt")
    outside.mkdir()
    task = fake_task()
    task.meta["workspace_tree"] = str(tree)
    infra = TurnResult(usage=Usage(0, 0), infra="authentication: 401 invalid x-api-key", exit_code=1)

    def plant(ctx: SessionContext, prompt: str) -> TurnResult:
        assert (ctx.workspace / "src" / "B.txt").read_text() == "A\n"
        (ctx.workspace / "src" / "A.txt").unlink()
        (ctx.workspace / "src" / "B.txt").unlink()
        (ctx.workspace / "src").rmdir()
        os.symlink(outside, ctx.workspace / "src")
        return infra

    ItemRun(item(tmp_path, ScriptedFrontend([plant]), None, task=task)).run()
    second = ScriptedFrontend([lambda ctx, prompt: TurnResult(usage=Usage(1, 1))])
    ItemRun(item(tmp_path, second, None, task=task)).run()
    assert list(outside.iterdir()) == []
    workspace = second.contexts[0].workspace
    assert (workspace / "src" / "A.txt").read_text() == "A\n" and os.readlink(workspace / "src" / "B.txt") == "A.txt"
