"""The ``codex`` frontend: Codex CLI driven through ``codex exec --json``, one process per turn.

The config lives in a private ``CODEX_HOME`` (inside the session's HOME) with ``TMPDIR`` next to it,
never around it: Codex refuses to set up its sandbox helpers under TMPDIR, and then every sandboxed
tool call fails. The provider is a custom one pointing at ``provider_url`` (``OPENAI_BASE_URL`` is
ignored by Codex). ``exec resume`` has no ``--sandbox`` flag and does not keep turn 1's mode, so the mode
is passed as ``-c sandbox_mode=…`` on every turn. Inside the framework's bwrap sandbox Codex's own sandbox
cannot start (no nested user namespaces), so there the mode is ``danger-full-access`` and the outer sandbox
confines it (the reviewer's directory is a read-only bind). Codex reports usage cumulated over the thread,
so each turn's usage is the difference to the previous turn's total; it reports no cost.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_forall.agents.agent_cli import AgentCliFrontend, AgentCliSession, ParsedTurn, read_events
from pytest_forall.core.actor import Frontend, SessionContext
from pytest_forall.core.model import Usage
from pytest_forall.core.registry import hookimpl

PROVIDER_ID = "forall"
#: What Codex keeps of a conversation in the HOME (the rollouts and the sqlite stores that index them): all of the HOME
#: that survives from one turn to the next. The rest (``config.toml``, other config layers, profiles, rules, hooks,
#: skills, AGENTS.md) is removed and the config rewritten before every turn.
CONVERSATION = (".codex/sessions", ".codex/*.sqlite", ".codex/*.sqlite-wal", ".codex/*.sqlite-shm")
KEY_VARIABLE = "FORALL_PROVIDER_KEY"


def _toml(value: Any) -> str:
    """A TOML literal for a str/int/bool; JSON's string escapes are valid TOML basic-string escapes."""
    return json.dumps(value)


def mcp_settings(servers: dict[str, dict[str, Any]]) -> list[tuple[str, Any]]:
    """``mcp_servers.NAME`` settings for streamable-HTTP servers (``{name: {"url": …}}``, see docs/tools.md);
    under ``approval_policy = "never"`` a call fails unless the table pre-approves its tools."""
    settings: list[tuple[str, Any]] = []
    for name, spec in servers.items():
        settings += [(f"mcp_servers.{name}.url", str(spec["url"])),
                     (f"mcp_servers.{name}.default_tools_approval_mode", "approve")]
    return settings


class CodexSession(AgentCliSession):
    key_env = "OPENAI_API_KEY"

    conversation = CONVERSATION

    def prepare(self) -> None:
        """Also before every turn (:meth:`before_turn`), after all but :data:`CONVERSATION` was removed: a key the
        actor added to ``config.toml`` was the CLI's for every later turn whenever the run left it at its default
        (no ``-c`` for it), e.g. ``model_reasoning_effort``."""
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(exist_ok=True)
        if not hasattr(self, "thread_total"):
            #: (input, output, cached) of the thread up to the last turn
            self.thread_total = (0, 0, 0)
        # the record of what was given; what the CLI obeys is passed again with ``-c`` on every turn (command)
        (self.codex_home / "config.toml").write_text(
            "".join(f"{key} = {_toml(value)}\n" for key, value in self.settings()), encoding="utf-8")

    def settings(self) -> list[tuple[str, Any]]:
        """The CLI's configuration as ``(dotted key, value)``, made from the options. CODEX_HOME is in the HOME the
        actor's shell may write (Codex keeps its threads there), so a ``config.toml`` there is the actor's: it
        switched the model and effort of the next turns. Each setting is given as ``-c`` on every turn instead,
        which Codex ranks above every file."""
        settings: list[tuple[str, Any]] = [("approval_policy", "never"), ("check_for_update_on_startup", False)]
        if self.options.get("model"):
            settings.append(("model", str(self.options["model"])))
        if self.options.get("effort"):
            settings.append(("model_reasoning_effort", str(self.options["effort"])))
        settings += [("analytics.enabled", False), ("features.plugins", False)]
        if self.options.get("provider_url"):
            provider = f"model_providers.{PROVIDER_ID}"
            settings += [("model_provider", PROVIDER_ID), (f"{provider}.name", PROVIDER_ID),
                         (f"{provider}.base_url", str(self.options["provider_url"])),
                         (f"{provider}.env_key", KEY_VARIABLE), (f"{provider}.wire_api", "responses")]
            if self.options.get("max_retries") not in (None, ""):
                retries = int(self.options["max_retries"])
                settings += [(f"{provider}.request_max_retries", retries), (f"{provider}.stream_max_retries", retries)]
        return settings + mcp_settings(self.options.get("mcp_servers") or {})

    def reopen(self) -> None:
        """A resumed thread's next usage total still includes the earlier process's turns."""
        self.codex_home = self.home / ".codex"
        self.thread_total = self._recorded_total()

    def _recorded_total(self) -> tuple[int, int, int]:
        """The thread's last cumulative usage, from the transcripts of the earlier turns."""
        total = (0, 0, 0)
        for number in range(1, self.turns + 1):
            transcript = self.ctx.audit_dir / f"{self.label}-turn{number}.jsonl"
            if not transcript.exists():
                continue
            for event in read_events(transcript):
                if event.get("type") == "turn.completed":
                    usage = event.get("usage") or {}
                    total = (int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                             int(usage.get("cached_input_tokens") or 0))
        return total

    def command(self, executable: str, prompt: str) -> list[str]:
        if self.sandboxed:
            sandbox = "danger-full-access"
        else:
            sandbox = "read-only" if self.reviewer else "workspace-write"
        resume = ["resume"] if self.session_id else []
        flags = ["--json", "--skip-git-repo-check", "-c", f"sandbox_mode={_toml(sandbox)}"]
        for key, value in self.settings():
            flags += ["-c", f"{key}={_toml(value)}"]
        return [executable, "exec", *resume, *flags, "--", *([self.session_id] if resume else []), prompt]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["CODEX_HOME"] = str(self.codex_home)
        if self.api_key():
            env[KEY_VARIABLE if self.options.get("provider_url") else "OPENAI_API_KEY"] = self.api_key()
        return env

    def parse(self, events: list[dict[str, Any]]) -> ParsedTurn:
        parsed = ParsedTurn()
        for event in events:
            kind = event.get("type")
            item = event.get("item") or {}
            parsed.answered = parsed.answered or (kind in ("item.started", "item.completed", "turn.completed")
                                                  and item.get("type") != "error")
            if kind == "thread.started":
                parsed.session_id = str(event.get("thread_id") or "")
            elif kind == "item.completed" and item.get("type") == "agent_message":
                parsed.final_text = str(item.get("text") or "")
            elif kind == "item.completed" and item.get("type") == "command_execution":
                parsed.commands.append(str(item.get("command") or ""))
            elif kind == "error":
                parsed.errors.append(str(event.get("message") or event))
            elif kind == "turn.failed":
                parsed.errors.append(str((event.get("error") or {}).get("message") or event))
            elif kind == "turn.completed":
                parsed.usage = self._this_turn(event.get("usage") or {})
        return parsed

    def _this_turn(self, usage: dict[str, Any]) -> Usage:
        """Turn usage from the thread's running total (see module docstring). The CLI resumes that total from its
        rollout, a file the actor can write: a total below the one this harness recorded was rewound, and then the
        whole reported total is counted for this turn (never less than 0, never less than the turn used)."""
        total = (int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                 int(usage.get("cached_input_tokens") or 0))
        rewound = any(now < before for now, before in zip(total, self.thread_total))
        this_turn = list(total) if rewound else [now - before for now, before in zip(total, self.thread_total)]
        self.thread_total = total
        return Usage(*this_turn)


class CodexFrontend(AgentCliFrontend):
    name = "codex"
    binary = "codex"
    npm_package = "@openai/codex"
    default_endpoint = "api.openai.com:443"

    def start(self, ctx: SessionContext) -> CodexSession:
        return CodexSession(self, ctx)


@hookimpl(trylast=True)
def pytest_forall_make_frontend(name: str, options: dict[str, Any]) -> Frontend | None:
    return CodexFrontend(options) if name == CodexFrontend.name else None
