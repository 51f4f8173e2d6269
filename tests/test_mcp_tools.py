"""The benchmark tools through real MCP clients, on a real PutnamBench Rocq task with the real verifier.

The stdio sessions go through ``forall mcp --item-context`` (a server started from a sealed context file);
the end-to-end test has a real ``claude -p`` solve the task through the framework-side HTTP server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import TextContent

from conftest import require_tool
from pytest_forall.agents.claude_code import ClaudeCodeFrontend
from pytest_forall.core import workspace as ws
from pytest_forall.core.actor import ACTOR, REVIEWER, SessionContext
from pytest_forall.core.model import Budget, Task, sha256_bytes
from pytest_forall.core.review import prepare_review_dir
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.problem import parse_coq
from pytest_forall.tools.item import (
    KEY_ENV,
    SUBMISSIONS,
    TOOL_CALLS,
    ItemTools,
    ToolContext,
    read_records,
    summarize_tool_calls,
    write_context,
)

sys.path.insert(0, str(Path(__file__).parent))
from fake_model_server import ScriptedModelServer

FIXTURES = Path(__file__).parent / "fixtures" / "retrieval"
#: Real PutnamBench problem with a short proof: hop (op b a) b, rewritten by hop b a, is the goal.
TASK_ID = "putnam_2001_a1"
PROOF = "Proof.\nintros a b. pose proof (hop (op b a) b) as H. rewrite (hop b a) in H. exact H.\nQed."
WRONG = "Proof.\nintros a b. exact (hop a b).\nQed."
WITHHELD = ("target_theorem", "Arith2.target_lemma")
NAVIGATION_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("lookup", {"name": "target_theorem"}), ("lookup", {"name": "double"}), ("search", {"query": "target"}),
    ("usages", {"name": "double"}), ("outline", {"file": "rocq/Small.v"}),
]


@pytest.fixture
def task(tmp_path: Path, putnam_root: Path) -> Task:
    require_tool("coqc")
    source = tmp_path / f"{TASK_ID}.v"
    shutil.copy(putnam_root / "coq" / "src" / source.name, source)
    return parse_coq(TASK_ID, source, source.read_text(encoding="utf-8"))


def solved(task: Task, proof: str = PROOF) -> str:
    return task.template.replace("Proof. Admitted.", proof)


def context(task: Task, tmp_path: Path, role: str, workspace: Path, cache: Path, **extra: Any) -> ToolContext:
    """The item's tool context; ``cache``: the prover's (the run's shared one: no test here is about it)."""
    return ToolContext(task=task, role=role, workspace=workspace, audit_dir=tmp_path / f"audit-{role}",
                       prover="rocq", prover_options={"cache_dir": str(cache)}, timeout=120, **extra)


def stdio_server(context_file: Path, key: bytes) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, env={**os.environ, KEY_ENV: key.hex()},
                                 args=["-m", "pytest_forall.cli", "mcp", "--item-context", str(context_file)])


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(tool, arguments or {})
    assert not result.is_error, result
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_actor_tools_over_stdio(task: Task, tmp_path: Path, shared_prover_cache: Path) -> None:
    workspace = ws.prepare(tmp_path / "ws", "w", task, reset=True)
    candidate = workspace / task.candidate_name
    key = os.urandom(32)
    ctx = context(task, tmp_path, ACTOR, workspace, shared_prover_cache, retrieval_root=str(FIXTURES),
                  retrieval_cache=str(tmp_path / "index"), excluded=(task.theorem_name, *WITHHELD))
    answers: dict[str, list[str]] = {}

    async def run() -> set[str]:
        with anyio.fail_after(300):   # a hang guard, not a measurement
            async with Client(stdio_server(write_context(ctx, key), key)) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                for tool, arguments in [("start", {"task": TASK_ID}), ("compile", {}), ("submit", {}),
                                        *NAVIGATION_CALLS]:
                    answers.setdefault(tool, []).append(await call(client, tool, arguments))
                candidate.write_text(solved(task, WRONG), encoding="utf-8")
                answers["compile"].append(await call(client, "compile"))
                answers["submit"].append(await call(client, "submit"))
                candidate.write_text(solved(task), encoding="utf-8")
                answers["compile"].append(await call(client, "compile"))
                answers["submit"].append(await call(client, "submit"))
                refused = await client.call_tool("start", {"task": "putnam_1962_a2"})
                assert refused.is_error and TASK_ID in str(refused.content)
                return tools

    tools = anyio.run(run)
    assert tools == {"start", "compile", "submit", "goals", "try", "query", "lookup", "search", "usages", "outline"}
    assert answers["start"][0].endswith(task.template) and "unchanged from the template" in answers["start"][0]
    template, wrong, right = (sha256_bytes(t.encode()) for t in (task.template, solved(task, WRONG), solved(task)))
    assert [a.splitlines()[:2] for a in answers["compile"]] == [
        ["status: ok", f"sha256: {template}"], ["status: error", f"sha256: {wrong}"], ["status: ok", f"sha256: {right}"]]
    assert "error at line 8: In environment" in answers["compile"][1] and str(tmp_path) not in answers["compile"][1]
    assert [a.splitlines()[:2] for a in answers["submit"]] == [
        ["status: reject", f"sha256: {template}"], ["status: reject", f"sha256: {wrong}"],
        ["status: accept", f"sha256: {right}"]]
    assert "FAIL elaboration" in answers["submit"][1] and "verdict: accept (strict)" in answers["submit"][2]
    # Retrieval beside the tools: no proof body, no withheld declaration, in any answer.
    everything = "\n".join(text for texts in answers.values() for text in texts)
    assert "SECRET_" not in everything and "target_lemma" not in everything and "target_theorem" not in everything
    assert "Definition double (n : nat) : nat" in "\n".join(answers["lookup"])

    submissions, forged = read_records(ctx.audit_dir, SUBMISSIONS, key)
    assert forged == 0
    assert [(s["tool"], s["digest"], s["verdict"]) for s in submissions] == [
        ("submit", template, "reject"), ("submit", wrong, "reject"), ("submit", right, "accept")]
    assert submissions[-1]["strict"] is True and submissions[-1]["layers"][-1] == ["independent_check", True]
    summary = summarize_tool_calls(ctx.audit_dir, key)
    assert summary == {"navigation": 5, "compilation": 6, "interaction": 0, "session": 2, "restarts": 0,
                       "navigation_share": round(5 / 11, 3),
                       "by_tool": {"compile": 3, "lookup": 2, "outline": 1, "search": 1, "start": 2, "submit": 3,
                                   "usages": 1}, "unauthenticated": 0}


def test_reviewer_tools_leave_the_directory_untouched(task: Task, tmp_path: Path, shared_prover_cache: Path) -> None:
    review_dir = prepare_review_dir(tmp_path / "review", task, solved(task).encode())
    before = snapshot(review_dir)
    key = os.urandom(32)
    ctx = context(task, tmp_path, REVIEWER, review_dir, shared_prover_cache)
    digest = sha256_bytes(solved(task).encode())

    async def run() -> tuple[set[str], str, str]:
        with anyio.fail_after(300):   # a hang guard, not a measurement
            async with Client(stdio_server(write_context(ctx, key), key)) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                return tools, await call(client, "review_start"), await call(client, "review_compile")

    tools, start, compiled = anyio.run(run)
    assert tools == {"review_start", "review_compile"}  # no submit, no start: the reviewer writes nothing
    assert f"sha256 {digest}" in start and start.endswith(task.template)
    assert compiled.splitlines()[:2] == ["status: ok", f"sha256: {digest}"]
    assert snapshot(review_dir) == before
    (record,), _ = read_records(ctx.audit_dir, SUBMISSIONS, key)
    assert (record["tool"], record["digest"], record["status"], record["role"]) == ("review_compile", digest, "ok",
                                                                                     REVIEWER)


def test_forged_context_and_records_are_refused(task: Task, tmp_path: Path, shared_prover_cache: Path) -> None:
    workspace = ws.prepare(tmp_path / "ws", "w", task, reset=True)
    key = os.urandom(32)
    ctx = context(task, tmp_path, ACTOR, workspace, shared_prover_cache)
    path = write_context(ctx, key)
    sealed = json.loads(path.read_text())
    sealed["context"]["task"]["template"] = "Theorem t : True. Proof. Admitted.\n"
    path.write_text(json.dumps(sealed))
    refused = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "mcp", "--item-context", str(path)],
                             env={**os.environ, KEY_ENV: key.hex()}, capture_output=True, text=True, check=False, timeout=60)
    assert refused.returncode != 0 and "not sealed with this key" in refused.stderr
    # A record the agent appends itself is never counted.
    (ctx.audit_dir / TOOL_CALLS).write_text(json.dumps({"tool": "submit", "mac": "0" * 64}) + "\nnot json\n")
    assert summarize_tool_calls(ctx.audit_dir, key)["unauthenticated"] == 2
    assert summarize_tool_calls(ctx.audit_dir, key)["compilation"] == 0


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> None:
    if ClaudeCodeFrontend().probe():
        if os.environ.get("CI") == "true":
            pytest.fail(ClaudeCodeFrontend().probe())
        pytest.skip(ClaudeCodeFrontend().probe())
    monkeypatch.setenv("FORALL_TEST_PROVIDER_KEY", "sk-scripted")


def test_claude_code_solves_a_putnam_task_through_the_tools(claude: None, task: Task, tmp_path: Path,
                                                            shared_prover_cache: Path) -> None:
    """A real ``claude -p`` (in the bwrap sandbox, the default) calls start, compile, writes the proof and
    submits; the framework-side server records the accepted digest, which is the file's on disk."""
    workspace = ws.prepare(tmp_path / "ws", "w", task, reset=True)
    steps = [{"call_tool": "forall__start", "args": {"task": TASK_ID}}, {"call_tool": "forall__compile", "args": {}},
             {"call_tool": "Read", "args": {"file_path": str(workspace / task.candidate_name)}},  # Write needs it
             {"write": {"path": task.candidate_name, "content": solved(task)}},
             {"call_tool": "forall__submit", "args": {}}, {"text": "submitted"}]
    prover = RocqProver({"cache_dir": str(shared_prover_cache)})
    with ScriptedModelServer(steps) as model, ItemTools(context(task, tmp_path, ACTOR, workspace, shared_prover_cache),
                                                          prover) as tools:
        session = ClaudeCodeFrontend().start(SessionContext(
            task=task, workspace=workspace, audit_dir=tmp_path / "session", role=ACTOR, prover=prover,
            budget=Budget(), options={"provider_url": model.url, "api_key_env": "FORALL_TEST_PROVIDER_KEY",
                                      "max_retries": 0, "mcp_servers": tools.mcp_servers(), "env": tools.env()}))
        turn = session.turn("Prove the task.", timeout=120)
        called = [request["tool"] for request in model.model_requests()]
        submissions, summary = tools.submissions(), tools.summary()
    assert not turn.infra and turn.final_text == "submitted", turn
    assert called == ["mcp__forall__start", "mcp__forall__compile", "Read", "Write", "mcp__forall__submit", ""]
    digest = sha256_bytes((workspace / task.candidate_name).read_bytes())
    assert digest == sha256_bytes(solved(task).encode())
    assert [(s["tool"], s["digest"], s["verdict"], s["strict"]) for s in submissions] == [
        ("submit", digest, "accept", True)]
    assert summary["by_tool"] == {"compile": 1, "start": 1, "submit": 1} and summary["unauthenticated"] == 0
