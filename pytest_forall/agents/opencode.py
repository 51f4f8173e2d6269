"""The ``opencode`` frontend: OpenCode driven through ``opencode run --format json``, one process per turn.

The config reaches the CLI only through its environment (``OPENCODE_CONFIG_CONTENT``, OpenCode's last and
strongest source), with project configs off (``OPENCODE_DISABLE_PROJECT_CONFIG``): the actor's shell can write
its HOME and workspace, and a config there (the prices set to 0, another model) was the CLI's for the next turn.
``opencode.json`` in the HOME is only the record of what was given. With ``provider_url`` it
declares a custom OpenAI-compatible provider (or Anthropic-compatible with ``provider_api="anthropic"``)
whose key comes from the environment. The working directory is passed with ``--dir`` because OpenCode
takes it from ``$PWD``, not from its cwd. The reviewer runs as an agent whose edit and bash permissions
are denied, so write/edit/patch/bash are not even offered. Usage and cost are summed over the turn's
``step_finish`` events; the cost is None when the provider's prices are unknown to OpenCode.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_forall.agents.agent_cli import AgentCliFrontend, AgentCliSession, ParsedTurn
from pytest_forall.core.actor import Frontend, SessionContext
from pytest_forall.core.model import Usage
from pytest_forall.core.registry import hookimpl

PROVIDER_ID = "forall"
KEY_VARIABLE = "FORALL_PROVIDER_KEY"
REVIEWER_AGENT = "forall-reviewer"
PROVIDER_PACKAGES = {"chat": "@ai-sdk/openai-compatible", "anthropic": "@ai-sdk/anthropic"}
#: Stops start-up fetches that would only fail or slow down an offline or sandboxed run.
QUIET_ENV = {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
             "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_CLAUDE_CODE": "1"}


class OpenCodeSession(AgentCliSession):
    key_env = "OPENAI_API_KEY"
    #: the session database: all of the HOME kept from one turn to the next. OpenCode loads plugins (code run inside
    #: the CLI), agents and commands from ``~/.config/opencode`` and ``~/.opencode``, and runs helpers it keeps in
    #: ``~/.cache/opencode/bin``: the actor's shell can write all of them
    conversation = (".local/share/opencode/opencode.db*",)

    def reopen(self) -> None:
        self.config_path = self.home / "opencode.json"

    def prepare(self) -> None:
        self.config_path = self.home / "opencode.json"
        self.config_path.write_text(json.dumps(self.config(), indent=2), encoding="utf-8")

    def config(self) -> dict[str, Any]:
        """The CLI's configuration, made from the options at every turn (never read back from a file the actor
        can write)."""
        config: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
            "agent": {REVIEWER_AGENT: {"mode": "primary", "description": "read-only reviewer",
                                       "permission": {"edit": "deny", "bash": "deny", "task": "deny"}}},
        }
        model = str(self.options.get("model") or "")
        if self.options.get("provider_url"):
            model = model or "default"
            entry: dict[str, Any] = {"name": model, "tool_call": True}
            if self.options.get("price"):
                entry["cost"] = dict(self.options["price"])
            api = str(self.options.get("provider_api") or "chat")
            config["provider"] = {PROVIDER_ID: {
                "npm": PROVIDER_PACKAGES[api], "name": PROVIDER_ID, "models": {model: entry},
                "options": {"baseURL": str(self.options["provider_url"]), "apiKey": f"{{env:{KEY_VARIABLE}}}"}}}
            model = f"{PROVIDER_ID}/{model}"
        if model:
            config["model"] = config["small_model"] = model
        servers = self.options.get("mcp_servers") or {}
        if servers:  # {name: {"url": …}}: streamable-HTTP MCP servers, see docs/tools.md
            config["mcp"] = {name: {"type": "remote", "url": spec["url"], "enabled": True}
                             for name, spec in servers.items()}
        return config

    @property
    def costs_known(self) -> bool:
        """OpenCode prices a custom provider at 0 unless given prices, so a 0 there means "unknown"."""
        return not self.options.get("provider_url") or bool(self.options.get("price"))

    def command(self, executable: str, prompt: str) -> list[str]:
        argv = [executable, "run", "--format", "json", "--dir", str(self.ctx.workspace)]
        if self.session_id:
            argv += ["--session", self.session_id]
        if self.reviewer:
            argv += ["--agent", REVIEWER_AGENT]
        if self.options.get("effort"):
            argv += ["--variant", str(self.options["effort"])]
        return [*argv, "--", prompt]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.update(QUIET_ENV, OPENCODE_CONFIG_CONTENT=json.dumps(self.config()), OPENCODE_DISABLE_PROJECT_CONFIG="1")
        if self.api_key():
            env[KEY_VARIABLE if self.options.get("provider_url") else self.key_env] = self.api_key()
        return env

    def parse(self, events: list[dict[str, Any]]) -> ParsedTurn:
        parsed = ParsedTurn()
        tokens_in = tokens_out = cached = 0
        cost = 0.0
        steps = 0
        for event in events:
            parsed.session_id = str(event.get("sessionID") or parsed.session_id)
            part = event.get("part") or {}
            kind = event.get("type")
            parsed.answered = parsed.answered or kind in ("text", "tool_use", "step_finish", "reasoning")
            if kind == "text":
                parsed.final_text = str(part.get("text") or "")
            elif kind == "error":
                parsed.errors.append(_error_text(event.get("error") or {}))
            elif kind == "tool_use" and part.get("tool") == "bash":
                parsed.commands.append(str(((part.get("state") or {}).get("input") or {}).get("command", "")))
            elif kind == "step_finish":
                steps += 1
                tokens = part.get("tokens") or {}
                cache_read = int((tokens.get("cache") or {}).get("read") or 0)
                tokens_in += int(tokens.get("input") or 0) + cache_read
                tokens_out += int(tokens.get("output") or 0)
                cached += cache_read
                cost += float(part.get("cost") or 0)
        if steps:
            parsed.usage = Usage(tokens_in, tokens_out, cached, cost if self.costs_known else None)
        return parsed


def _error_text(error: dict[str, Any]) -> str:
    """``APIError 500: boom`` from an error event, leaving out the echoed response headers."""
    data = error.get("data") or {}
    status = f" {data['statusCode']}" if data.get("statusCode") else ""
    body = str(data.get("responseBody") or "")
    return f"{error.get('name', 'error')}{status}: {data.get('message') or json.dumps(error)} {body}".strip()


class OpenCodeFrontend(AgentCliFrontend):
    name = "opencode"
    binary = "opencode"
    npm_package = "opencode-ai"

    def start(self, ctx: SessionContext) -> OpenCodeSession:
        return OpenCodeSession(self, ctx)


@hookimpl(trylast=True)
def pytest_forall_make_frontend(name: str, options: dict[str, Any]) -> Frontend | None:
    return OpenCodeFrontend(options) if name == OpenCodeFrontend.name else None
