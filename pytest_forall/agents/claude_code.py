"""The ``claude-code`` frontend: Claude Code driven through ``claude -p``, one process per turn.

Turn 1 starts a session and later turns ``--resume`` it by the id of its ``system/init`` event. The actor
may edit files under its cwd (``acceptEdits``) and run the prover (any shell command inside the bwrap
sandbox, only prover commands without it); the reviewer is offered only Read, Grep and Glob and any
other tool call is refused (``dontAsk``). Usage and cost come from the final ``result`` event, which
totals the invocation, i.e. exactly one turn.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_forall.agents.agent_cli import AgentCliFrontend, AgentCliSession, ParsedTurn
from pytest_forall.core.actor import Frontend, SessionContext
from pytest_forall.core.model import Usage
from pytest_forall.core.registry import hookimpl

REVIEWER_TOOLS = "Read,Grep,Glob"
#: Shell commands the actor may run without the sandbox around it: the provers' compilers only.
UNSANDBOXED_ACTOR_SHELL = "Bash(coqc:*),Bash(coqtop:*),Bash(lake:*),Bash(lean:*)"


def mcp_arguments(servers: dict[str, dict[str, Any]]) -> list[str]:
    """Only the given streamable-HTTP MCP servers (``{name: {"url": …}}``, see docs/tools.md); their tools are
    pre-approved by the caller's ``--allowedTools`` (under ``-p`` an unapproved MCP call is denied)."""
    if not servers:
        return []
    config = {name: {"type": "http", "url": spec["url"]} for name, spec in servers.items()}
    return ["--mcp-config", json.dumps({"mcpServers": config}), "--strict-mcp-config"]


class ClaudeCodeSession(AgentCliSession):
    key_env = "ANTHROPIC_API_KEY"
    #: the session transcripts ``--resume`` reads: all of the HOME kept from one turn to the next (no agents, commands,
    #: skills or plugins the actor wrote into ``~/.claude`` reach a later turn)
    conversation = (".claude/projects",)

    def command(self, executable: str, prompt: str) -> list[str]:
        # partial messages: bytes flow while the model streams (the stall detector sees them), and each
        # message's final usage is in the stream before ``result``, so a killed turn keeps its usage
        argv = [executable, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
                # no settings file counts: the user's is in the HOME and the project's in the workspace, both the
                # actor's to write (a "model" or "env" there switched the model of its next turns); only argv does
                "--setting-sources", ""]
        servers = self.options.get("mcp_servers") or {}
        allowed = [f"mcp__{name}" for name in servers]   # one --allowedTools list for every source
        if self.reviewer:
            argv += ["--tools", REVIEWER_TOOLS, "--permission-mode", "dontAsk"]
        else:
            argv += ["--permission-mode", "acceptEdits"]
            allowed.insert(0, "Bash" if self.sandboxed else UNSANDBOXED_ACTOR_SHELL)
        if allowed:
            argv += ["--allowedTools", ",".join(allowed)]
        if self.session_id:
            argv += ["--resume", self.session_id]
        if self.options.get("model"):
            argv += ["--model", str(self.options["model"])]
        if self.options.get("effort"):
            argv += ["--effort", str(self.options["effort"])]
        return [*argv, *mcp_arguments(servers), "--", prompt]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        # Without this Claude Code sends telemetry and asks the model for a session title on every start.
        env.update(CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
                   DISABLE_ERROR_REPORTING="1")
        if self.api_key():
            env["ANTHROPIC_API_KEY"] = self.api_key()
        if self.options.get("provider_url"):
            env["ANTHROPIC_BASE_URL"] = str(self.options["provider_url"])
        if self.options.get("max_retries") not in (None, ""):
            env["CLAUDE_CODE_MAX_RETRIES"] = str(self.options["max_retries"])
        return env

    def parse(self, events: list[dict[str, Any]]) -> ParsedTurn:
        parsed = ParsedTurn()
        #: usage of each model message, by message id: the turn's usage when it was killed before ``result``
        messages: dict[str, dict[str, Any]] = {}
        current = ""
        for event in events:
            parsed.session_id = event.get("session_id") or parsed.session_id
            stream = event.get("event") or {} if event.get("type") == "stream_event" else {}
            if stream.get("type") == "message_start":
                current = str((stream.get("message") or {}).get("id") or len(messages))
                messages[current] = dict((stream.get("message") or {}).get("usage") or {})
            elif stream.get("type") == "message_delta" and current in messages:
                messages[current].update(stream.get("usage") or {})  # output_tokens: the message's total so far
            if event.get("type") == "assistant":
                message = event.get("message") or {}
                parsed.answered = True
                parsed.commands += [str((block.get("input") or {}).get("command", ""))
                                    for block in message.get("content") or []
                                    if block.get("type") == "tool_use" and block.get("name") == "Bash"]
            if event.get("type") != "result":
                continue
            parsed.final_text = str(event.get("result") or "")
            parsed.usage = _usage(event.get("usage") or {}, event.get("total_cost_usd"))
            if event.get("is_error"):
                status = event.get("api_error_status")
                parsed.errors.append(f"{status or ''} {parsed.final_text}".strip())
        if messages and parsed.usage.tokens_in is None:  # no result event: the turn was killed mid-way
            for usage in messages.values():
                parsed.usage.add(_usage(usage, None))
        return parsed


def _usage(usage: dict[str, Any], cost: Any) -> Usage:
    """Claude's usage object as our Usage: input counts cached and cache-creation tokens too."""
    cached = int(usage.get("cache_read_input_tokens") or 0)
    return Usage(tokens_in=int(usage.get("input_tokens") or 0) + cached + int(usage.get("cache_creation_input_tokens") or 0),
                 tokens_out=int(usage.get("output_tokens") or 0), tokens_cached=cached,
                 cost_usd=None if cost is None else float(cost))


class ClaudeCodeFrontend(AgentCliFrontend):
    name = "claude-code"
    binary = "claude"
    npm_package = "@anthropic-ai/claude-code"
    default_endpoint = "api.anthropic.com:443"

    def start(self, ctx: SessionContext) -> ClaudeCodeSession:
        return ClaudeCodeSession(self, ctx)


@hookimpl(trylast=True)
def pytest_forall_make_frontend(name: str, options: dict[str, Any]) -> Frontend | None:
    return ClaudeCodeFrontend(options) if name == ClaudeCodeFrontend.name else None
