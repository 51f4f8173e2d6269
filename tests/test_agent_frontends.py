"""The agent CLI frontends, driven end to end: real ``claude``/``codex``/``opencode`` binaries against the
scripted model server, so every claim (resume, read-only reviewer, usage, infra causes, timeouts) is
checked against what a real CLI does, not against a mock of it.

A CLI that is not installed makes its tests skip locally and fail under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.agents import agent_cli, claude_code, codex, opencode
from pytest_forall.agents.agent_cli import AgentCliFrontend, AgentCliSession
from pytest_forall.core.actor import ACTOR, REVIEWER, SessionContext, TurnResult
from pytest_forall.core.model import Budget, Task, Usage
from pytest_forall.isolation import sandbox as isolation_sandbox

sys.path.insert(0, str(Path(__file__).parent))
from fake_model_server import SHELL_TOOLS, ScriptedModelServer

KEY_ENV = "FORALL_TEST_PROVIDER_KEY"
PRICE = {"input": 3.0, "output": 15.0, "cache_read": 0.3}   # $ per 1M tokens, given to OpenCode
PROOF = "proof.lean"


@dataclass
class Cli:
    """How to point one frontend at the scripted server, and how its model can start a long child."""

    name: str
    frontend: type[AgentCliFrontend]
    openai_style: bool
    #: a tool call that makes the CLI run ``sleep`` as a child; None when the actor may not run commands
    sleep_call: dict[str, Any] | None
    options: dict[str, Any] = field(default_factory=dict)


CLIS = [
    Cli("claude-code", claude_code.ClaudeCodeFrontend, False, None),
    Cli("codex", codex.CodexFrontend, True, {"call_tool": "exec_command", "args": {"cmd": "SLEEP"}},
        {"model": "gpt-5.5"}),   # a slug Codex knows, so it offers apply_patch
    Cli("opencode", opencode.OpenCodeFrontend, True,
        {"call_tool": "bash", "args": {"command": "SLEEP", "description": "wait"}},
        {"model": "scripted", "price": PRICE}),
]


def cli_params(slow: frozenset[str] = frozenset()) -> list[Any]:
    """The CLIs as parameters of the ``cli`` fixture, marking ``slow`` those whose test takes > 10 s."""
    return [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.name in slow else []) for c in CLIS]


@pytest.fixture
def cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Cli:
    case: Cli = request.param
    if case.frontend().probe():
        message = f"{case.name}: {case.frontend().probe()}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch.setenv(KEY_ENV, "sk-scripted")
    return case


def scripted(*, actor: list[dict[str, Any]], reviewer: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    roles = [{"name": "reviewer", "match": "REVIEW", "steps": reviewer}] if reviewer else []
    return {"roles": [*roles, {"name": "actor", "steps": actor}]}


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ScriptedModelServer] = []

    def start(script: dict[str, Any]) -> ScriptedModelServer:
        servers.append(ScriptedModelServer(script).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def open_session(cli: Cli, server: ScriptedModelServer, tmp_path: Path, role: str = ACTOR,
                 **options: Any) -> AgentCliSession:
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    url = f"{server.url}/v1" if cli.openai_style else server.url
    task = Task(task_id="t", suite="s", track="t", prover="lean", source_path="t.lean", template="")
    ctx = SessionContext(task=task, workspace=workspace, audit_dir=tmp_path / "audit", role=role,
                         prover=None,  # type: ignore[arg-type]  # the CLI frontends never use the prover
                         budget=Budget(), options={"provider_url": url, "api_key_env": KEY_ENV, "max_retries": 0,
                                                   # the CLIs' own confinement; bwrap: test_protocol_e2e.py
                                                   "sandbox": "none", **cli.options, **options})
    return cli.frontend().start(ctx)


def timed_turn(session: AgentCliSession, server: ScriptedModelServer, prompt: str,
               timeout: float = 90) -> tuple[TurnResult, list[dict[str, Any]]]:
    """Run a turn; also return the model requests (steps consumed) the server logged during it."""
    before = len(server.model_requests())
    result = session.turn(prompt, timeout=timeout)
    return result, server.model_requests()[before:]


def logged(requests: list[dict[str, Any]], key: str) -> int:
    return sum(r["usage"][key] for r in requests)


def assert_usage_matches(cli: Cli, result: TurnResult, requests: list[dict[str, Any]]) -> None:
    assert requests, "the turn made no model request"
    assert (result.usage.tokens_in, result.usage.tokens_out, result.usage.tokens_cached) == (
        logged(requests, "input"), logged(requests, "output"), logged(requests, "cached"))
    events = [json.loads(line) for line in Path(result.transcript).read_text().splitlines() if line.startswith("{")]
    if cli.name == "claude-code":     # priced by Claude Code itself; we pass on its figure
        assert result.usage.cost_usd == next(e["total_cost_usd"] for e in events if e["type"] == "result") > 0
    elif cli.name == "opencode":      # priced from the configured $/Mtok
        uncached = logged(requests, "input") - logged(requests, "cached")
        expected = (uncached * PRICE["input"] + logged(requests, "cached") * PRICE["cache_read"]
                    + logged(requests, "output") * PRICE["output"]) / 1e6
        assert result.usage.cost_usd == pytest.approx(expected)
    else:                             # Codex reports no cost, and none is invented
        assert result.usage.cost_usd is None


HACK = "-- the reviewer was here\n"
#: (prompt, role): each reviewer turn tries another way to change the workspace. Roles are listed before
#: the actor's, latest turn first, because a resumed request also carries the earlier turns' prompts.
REVIEWER_ATTEMPTS = [
    ("REVIEW-SHELL: check proof.lean", {"name": "review-shell", "match": "REVIEW-SHELL", "steps": [
        {"write": {"path": "extra.lean", "content": HACK}, "via": SHELL_TOOLS}, {"text": "APPROVE"}]}),
    ("REVIEW-TASK: check proof.lean", {"name": "review-task", "match": "REVIEW-TASK", "steps": [
        {"call_tool": "task", "args": {"description": "edit", "prompt": "SUBTASK: write proof.lean",
                                       "subagent_type": "general"}}, {"text": "APPROVE"}]}),
    ("REVIEW-WRITE: check proof.lean", {"name": "review-write", "match": "REVIEW-WRITE", "steps": [
        {"write": {"path": PROOF, "content": HACK}}, {"text": "APPROVE"}]}),
]
SUBAGENT = {"name": "subagent", "match": "SUBTASK", "steps": [{"write": {"path": PROOF, "content": HACK}},
                                                              {"text": "written"}]}


@pytest.mark.parametrize("cli", cli_params(slow=frozenset({"opencode"})), indirect=True)
def test_actor_resumes_its_session_and_reviewer_cannot_write(cli: Cli, serve: Any, tmp_path: Path) -> None:
    actor_steps = [{"write": {"path": PROOF, "content": "-- turn 1\n"}}, {"text": "first done"},
                   {"write": {"path": PROOF, "content": "-- turn 2\n"}},
                   {"text": "second done", "usage": {"input": 5000, "output": 40, "cached": 1200}}]
    server = serve({"roles": [SUBAGENT, *(role for _, role in REVIEWER_ATTEMPTS),
                              {"name": "actor", "steps": actor_steps}]})
    actor = open_session(cli, server, tmp_path)
    workspace, audit = actor.ctx.workspace, actor.ctx.audit_dir

    first, first_requests = timed_turn(actor, server, "Write proof.lean, turn one")
    assert (first.infra, first.exit_code, first.final_text) == ("", 0, "first done")
    assert (workspace / PROOF).read_text() == "-- turn 1\n"
    assert first.session_id and first.transcript == str(audit / "actor-turn1.jsonl")
    assert (audit / "actor-turn1.prompt.txt").read_text() == "Write proof.lean, turn one"
    assert_usage_matches(cli, first, first_requests)

    second, second_requests = timed_turn(actor, server, "Write it again, turn two")
    assert (second.infra, second.final_text) == ("", "second done")
    assert second.session_id == first.session_id
    assert (workspace / PROOF).read_text() == "-- turn 2\n"
    assert "turn one" in json.dumps(second_requests[0]["body"]), "turn 2 did not carry turn 1's conversation"
    assert_usage_matches(cli, second, second_requests)

    files_before = sorted(p.name for p in workspace.iterdir())
    reviewer = open_session(cli, server, tmp_path, REVIEWER)
    for prompt, _ in reversed(REVIEWER_ATTEMPTS):
        review, review_requests = timed_turn(reviewer, server, prompt)
        assert review.infra == "" and review.final_text, prompt   # APPROVE, or "no offered tool can …"
        assert review.session_id and review.session_id != first.session_id
        assert (workspace / PROOF).read_text() == "-- turn 2\n", prompt
        assert sorted(p.name for p in workspace.iterdir()) == files_before, prompt
        assert {r["role"] for r in review_requests} <= {"review-shell", "review-task", "review-write", "subagent"}
    assert reviewer.turns == 3 and (audit / "reviewer-turn3.jsonl").exists()

    assert actor.home.parent == audit and reviewer.home.parent == audit
    assert not any(workspace in p.parents for p in (actor.home, reviewer.home))


INFRA_SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "authentication": [{"error": 401, "message": "invalid x-api-key"}],
    "quota": [{"error": 429, "type": "insufficient_quota", "retry_after_ms": 1,
               "message": "You exceeded your current quota, please check your plan and billing details."}],
    "provider-error": [{"error": 500, "retry_after_ms": 1, "message": "upstream exploded"}],
    "zero-tokens": [{"text": "", "usage": {"input": 0, "output": 0}}],
}


@pytest.mark.parametrize("cli", cli_params(), indirect=True)
@pytest.mark.parametrize("cause", list(INFRA_SCRIPTS))
def test_provider_failures_are_infra(cli: Cli, serve: Any, tmp_path: Path, cause: str) -> None:
    server = serve(scripted(actor=INFRA_SCRIPTS[cause]))
    result = open_session(cli, server, tmp_path).turn("Write proof.lean", timeout=90)
    assert result.infra.startswith(f"{cause}: "), result.infra
    assert not result.timed_out


def test_missing_cli_is_infra_from_probe_and_turn(serve: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(scripted(actor=[{"text": "never asked"}]))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    for case in CLIS:
        frontend = case.frontend()
        assert frontend.probe().startswith("cli-missing: ")
        assert f"npm install -g {frontend.npm_package}" in frontend.probe()
        result = open_session(case, server, tmp_path / case.name).turn("hello", timeout=30)
        assert result.infra == frontend.probe() and result.exit_code == 127
    assert server.requests == []


def processes_mentioning(marker: str) -> list[int]:
    """Live processes whose command line or environment contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            blob = b" ".join((entry / name).read_bytes() for name in ("cmdline", "environ")).replace(b"\0", b" ")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in blob and state != "Z":
            found.append(int(entry.name))
    return found


class EventClock:
    """The clock of a turn's limits (``run_streaming``'s and the sandbox supervisor's): it stands still until
    ``ready()``, then runs, first leaping ``jump`` seconds ahead. A limit then counts from the event the test
    is about (the CLI asked the provider, its child runs), not from a start-up a loaded machine stretches; the
    limits and the kill paths are the real ones."""

    def __init__(self, ready: Callable[[], bool], jump: float = 0.0, give_up: float = 600.0) -> None:
        self.ready, self.jump = ready, jump
        self.frozen = time.monotonic()
        self.give_up = self.frozen + give_up   # it never stands still for good: the test fails, not hangs
        self.fired_at: float | None = None

    def monotonic(self) -> float:
        now = time.monotonic()
        if self.fired_at is None and (now > self.give_up or self.ready()):
            self.fired_at = now
        return self.frozen if self.fired_at is None else self.frozen + self.jump + now - self.fired_at

    @property
    def fired(self) -> bool:
        """``ready()`` held before the clock gave up."""
        return self.fired_at is not None and self.fired_at <= self.give_up

    def __getattr__(self, name: str) -> Any:   # sleep and the rest: the real ones
        return getattr(time, name)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> EventClock:
        for module in (agent_cli, isolation_sandbox):
            monkeypatch.setattr(module, "time", self)
        return self


@pytest.mark.slow
@pytest.mark.parametrize("cli", cli_params(), indirect=True)
def test_timeout_kills_the_whole_process_tree(cli: Cli, serve: Any, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    sleep = "sleep 3131.5"      # an odd duration that names this test's child
    hang = json.loads(json.dumps(cli.sleep_call).replace("SLEEP", sleep)) if cli.sleep_call else None
    server = serve(scripted(actor=[*([hang] if hang else []), {"text": "too late", "delay": 60}]))
    session = open_session(cli, server, tmp_path)
    markers = [str(session.home), *([sleep] if hang else [])]
    actor = next(role for role in server.model.roles if role.name == "actor")

    def tree_running() -> bool:
        """The CLI asked the model (and, where it may, started its child): what the time limit must kill."""
        return actor.consumed > 0 and all(processes_mentioning(m) for m in markers)

    limit = 30.0
    clock = EventClock(tree_running, jump=limit).install(monkeypatch)   # the limit strikes once the tree runs
    result = session.turn("Wait for it", timeout=limit)
    assert clock.fired, "the tree to kill never ran"
    assert result.timed_out
    deadline = time.monotonic() + 30      # SIGKILLed processes may take a moment to be reaped
    while any(processes_mentioning(m) for m in markers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [m for m in markers if processes_mentioning(m)] == []


def test_each_module_makes_only_its_own_frontend() -> None:
    for module, name in ((claude_code, "claude-code"), (codex, "codex"), (opencode, "opencode")):
        frontend = module.pytest_forall_make_frontend(name=name, options={"model": "m"})
        assert frontend is not None and frontend.name == name and frontend.is_agent
        assert module.pytest_forall_make_frontend(name="replay", options={}) is None


# --------------------------------------------------------------------------------------------------------
# The scripted server on its own


def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_server_routes_roles_repeats_last_step_and_speaks_each_api(serve: Any) -> None:
    server = serve(scripted(actor=[{"text": "one"}, {"text": "two", "usage": {"input": 7, "output": 3}}],
                            reviewer=[{"error": 401, "message": "bad key"}]))
    tool = {"name": "Write", "input_schema": {"properties": {"file_path": {}, "content": {}}}}
    status, body = post(f"{server.url}/v1/messages", {"messages": [{"role": "user", "content": "hi"}],
                                                      "tools": [tool]})
    assert status == 200 and json.loads(body)["content"] == [{"type": "text", "text": "one"}]
    chat_tool = {"type": "function", "function": {"name": "write", "parameters": {}}}
    status, body = post(f"{server.url}/v1/chat/completions",
                        {"stream": True, "messages": [{"role": "user", "content": "hi"}], "tools": [chat_tool]})
    chunks = [line[6:] for line in body.decode().splitlines() if line.startswith("data: ")]
    assert chunks[-1] == "[DONE]" and json.loads(chunks[-2])["usage"]["prompt_tokens"] == 7
    responses_tool = {"type": "function", "name": "write", "parameters": {}}
    status, body = post(f"{server.url}/v1/responses",
                        {"stream": True, "input": [{"role": "user", "content": "again"}], "tools": [responses_tool]})
    assert '"output_text", "text": "two"' in body.decode()          # the last step repeats
    status, body = post(f"{server.url}/v1/responses",
                        {"input": [{"role": "user", "content": "REVIEW"}], "tools": [responses_tool]})
    assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key"
    assert [(r["role"], r["step"], r["status"]) for r in server.requests] == [
        ("actor", 0, 200), ("actor", 1, 200), ("actor", 1, 200), ("reviewer", 0, 401)]


def test_server_runs_standalone_with_a_port_file(tmp_path: Path) -> None:
    script, port_file, log = tmp_path / "script.json", tmp_path / "port", tmp_path / "log.jsonl"
    script.write_text(json.dumps([{"text": "hello", "usage": {"input": 11, "output": 2}}]))
    server = subprocess.Popen([sys.executable, str(Path(__file__).parent / "fake_model_server.py"),
                               "--script", str(script), "--port-file", str(port_file), "--log", str(log)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout and server.stdout.readline().startswith("LISTENING ")
        status, body = post(f"http://127.0.0.1:{port_file.read_text()}/v1/messages",
                            {"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "Read"}]})
        assert status == 200 and json.loads(body)["usage"]["input_tokens"] == 11
        assert json.loads(log.read_text())["usage"] == {"input": 11, "output": 2, "cached": 0}
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_classify_infra_leaves_healthy_and_timed_out_turns_alone() -> None:
    spent = agent_cli.ParsedTurn(usage=Usage(tokens_in=10, tokens_out=2))
    assert agent_cli.classify_infra(spent, agent_cli.ProcessOutcome(0, False), "HTTP 500 in a log line") == ""
    answered = agent_cli.ParsedTurn(answered=True)
    assert agent_cli.classify_infra(answered, agent_cli.ProcessOutcome(-9, True), "") == ""   # its round, judged
    assert agent_cli.classify_infra(agent_cli.ParsedTurn(), agent_cli.ProcessOutcome(-9, True), "").startswith(
        "turn-timeout: killed at the turn's time limit without an answer")


@pytest.mark.parametrize("cli", cli_params(), indirect=True)
def test_provider_key_reaches_no_audit_file(cli: Cli, serve: Any, tmp_path: Path) -> None:
    """The key is passed through the environment only: no audit file may contain it."""
    server = serve(scripted(actor=[{"text": "ok"}]))
    session = open_session(cli, server, tmp_path)
    session.turn("hello", timeout=60)
    leaked = [p for p in session.ctx.audit_dir.rglob("*") if p.is_file() and b"sk-scripted" in p.read_bytes()]
    assert leaked == []


# --------------------------------------------------------------------------------------------------------
# A provider that goes silent: the stall detector and the per-turn limit bound every turn (docs/outcomes.md)

#: The stall limit: short, as the clock of each test below counts silence only from the request the provider
#: leaves unanswered (start-up never counts), so what is tested (the detector fires on the provider's silence and
#: names it) does not depend on the figure; 10 s here cost 100 s of the suite's wall (20 s per sandboxed run). The
#: clock then leaps :data:`STALL_JUMP` ahead: the limit strikes 1 s of real silence after the request (a CLI that
#: writes anything meanwhile restarts the count, as ever).
STALL = 3.0
STALL_JUMP = STALL - 1.0


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
@pytest.mark.parametrize("cli", cli_params(), indirect=True)
def test_a_provider_that_never_answers_is_infra_after_the_stall_limit(cli: Cli, serve: Any, tmp_path: Path,
                                                                     sandbox: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(scripted(actor=[{"text": "too late", "delay": 120}]))
    session = open_session(cli, server, tmp_path, stall=STALL, sandbox=sandbox)
    actor = next(role for role in server.model.roles if role.name == "actor")
    clock = EventClock(lambda: actor.consumed >= 1, jump=STALL_JUMP).install(monkeypatch)  # silence once it asked
    result = session.turn("Write proof.lean", timeout=90)
    assert clock.fired, "the CLI never asked the provider"
    assert result.infra.startswith(f"provider-unresponsive: no output from the CLI for {STALL:g} s"), result.infra
    assert result.timed_out


@pytest.mark.parametrize("cli", cli_params(), indirect=True)
def test_a_provider_that_answers_then_stalls_keeps_the_usage_the_cli_wrote(cli: Cli, serve: Any, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(scripted(actor=[{"write": {"path": PROOF, "content": "-- turn 1\n"}},
                                   {"text": "too late", "delay": 120}]))
    session = open_session(cli, server, tmp_path, stall=STALL)
    actor = next(role for role in server.model.roles if role.name == "actor")
    clock = EventClock(lambda: actor.consumed >= 2, jump=STALL_JUMP).install(monkeypatch)  # once it asks again
    result, requests = timed_turn(session, server, "Write proof.lean")
    assert clock.fired, "the CLI never came back to the provider after the first answer"
    assert result.infra.startswith("provider-unresponsive: "), result.infra
    assert (session.ctx.workspace / PROOF).read_text() == "-- turn 1\n"
    answered = [r for r in requests if r["status"] == 200 and r.get("tool")]
    assert answered, "the first request was not answered"
    if cli.name == "codex":        # Codex writes usage only when the turn completes: unknown, never invented
        assert result.usage.tokens_in is None and result.usage.tokens_out is None
    else:                          # Claude Code and OpenCode wrote the answered request's usage before the stall
        assert (result.usage.tokens_in, result.usage.tokens_out) == (
            logged(answered, "input"), logged(answered, "output"))


@pytest.mark.parametrize("cli", cli_params(), indirect=True)
def test_a_turn_killed_at_its_limit_without_an_answer_is_infra(cli: Cli, serve: Any, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(scripted(actor=[{"text": "too late", "delay": 120}]))
    session = open_session(cli, server, tmp_path, stall=600)
    actor = next(role for role in server.model.roles if role.name == "actor")
    limit = 8.0   # strikes 1 s after the CLI asked (not 8 s after a start-up a loaded machine stretches)
    clock = EventClock(lambda: actor.consumed >= 1, jump=limit - 1).install(monkeypatch)
    result = session.turn("Write proof.lean", timeout=limit)
    assert clock.fired, "the CLI never asked the provider"
    assert result.timed_out and result.infra.startswith("turn-timeout: killed at the turn's time limit"), result.infra
