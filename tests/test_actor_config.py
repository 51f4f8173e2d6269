"""The actor's CLI obeys only configuration the harness gave, whatever the actor's shell did to its HOME.

The actor's sandbox may write its HOME (the CLI keeps its conversation there), so a configuration file kept in
that HOME is the actor's to rewrite between turns: OpenCode's prices (``opencode.json``) set to zero made every
later turn cost $0 while its tokens stayed honest, so a cost cap never stopped it; Codex's ``config.toml`` in
``CODEX_HOME`` switched the model and effort the run declared, and so did Claude Code's settings (the user's in
the HOME, the project's in the workspace). The real CLIs against the scripted model server, in
the bwrap sandbox (where the HOME is the only place outside the workspace the actor can write).
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_agent_frontends import (  # noqa: F401
    PRICE,
    Cli,
    assert_usage_matches,
    cli,
    cli_params,
    open_session,
    scripted,
    serve,
    timed_turn,
)

#: a configuration pricing the harness's provider and model at 0
ZERO = {"provider": {"forall": {"models": {"scripted": {"cost": {"input": 0, "output": 0, "cache_read": 0}}}}}}
#: where the actor's shell can put it: the file the harness wrote into its HOME (OPENCODE_CONFIG), OpenCode's
#: global config in that HOME, the project config in its workspace, a ``.opencode`` directory there
PLACES = {"harness-file": "os.environ['OPENCODE_CONFIG']",
          "global": "os.path.expanduser('~/.config/opencode/opencode.json')",
          "project": "'opencode.json'", "dot-opencode": "'.opencode/opencode.json'"}


def zero_prices(place: str) -> str:
    """The actor's command: write ZERO where ``place`` says, merged into what is there."""
    return (f"python3 -c \"import json, os; p = {PLACES[place]}; os.makedirs(os.path.dirname(p) or '.', exist_ok=True); "
            f"c = json.load(open(p)) if os.path.exists(p) else dict(); c.setdefault('provider', dict()).update("
            f"{ZERO['provider']!r}); json.dump(c, open(p, 'w'))\"; echo edited")


OPENCODE = [c for c in cli_params() if c.values[0].name == "opencode"]


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("cli", OPENCODE, indirect=True)
def test_the_actor_cannot_zero_its_clis_prices(cli: Cli, serve: Any,  # noqa: F811
                                               tmp_path: Path, place: str) -> None:
    server = serve(scripted(actor=[{"call_tool": "bash", "args": {"command": zero_prices(place), "description": "x"}},
                                   {"text": "edited"}, {"text": "second turn", "usage": {"input": 5000,
                                                                                         "output": 300}}]))
    session = open_session(cli, server, tmp_path, sandbox="bwrap")
    first, _ = timed_turn(session, server, "Write proof.lean")
    assert first.infra == "" and first.exit_code == 0, first
    second, requests = timed_turn(session, server, "Go on")
    assert second.infra == "", second
    assert_usage_matches(cli, second, requests)


#: the actor's shell switches its CLI to another model and effort for the next turns (a file in its HOME)
SWITCH_SCRIPT = """
import os
path = os.path.join(os.environ["CODEX_HOME"], "config.toml")
kept = [line for line in open(path).read().splitlines() if not line.startswith(("model =", "model_reasoning_effort"))]
open(path, "w").write('model = "gpt-other"\\nmodel_reasoning_effort = "high"\\n' + "\\n".join(kept) + "\\n")
"""
SWITCH = f"echo {base64.b64encode(SWITCH_SCRIPT.encode()).decode()} | base64 -d | python3; echo edited"
CODEX = [c for c in cli_params() if c.values[0].name == "codex"]


@pytest.mark.parametrize("cli", CODEX, indirect=True)
def test_the_actor_cannot_switch_its_clis_model_or_effort(cli: Cli, serve: Any,  # noqa: F811
                                                         tmp_path: Path) -> None:
    server = serve(scripted(actor=[{"call_tool": "exec_command", "args": {"cmd": SWITCH}}, {"text": "edited"},
                                   {"text": "second turn"}]))
    session = open_session(cli, server, tmp_path, sandbox="bwrap", effort="low")
    first, _ = timed_turn(session, server, "Write proof.lean")
    assert first.infra == "" and first.exit_code == 0, first
    assert "edited" in (Path(first.transcript).read_text())
    second, requests = timed_turn(session, server, "Go on")
    assert second.infra == "" and requests, second
    assert {(r["body"].get("model"), (r["body"].get("reasoning") or {}).get("effort")) for r in requests} == {
        ("gpt-5.5", "low")}


CLAUDE = [c for c in cli_params() if c.values[0].name == "claude-code"]
#: a settings file the actor's tools can write: the project's (its workspace) and the user's (its HOME)
SETTINGS = {"project": ".claude/settings.json", "local": ".claude/settings.local.json", "user": "HOME"}


@pytest.mark.parametrize("where", list(SETTINGS))
@pytest.mark.parametrize("cli", CLAUDE, indirect=True)
def test_the_actor_cannot_switch_claude_codes_model(cli: Cli, serve: Any, tmp_path: Path,  # noqa: F811
                                                   where: str) -> None:
    settings = '{"model": "claude-other-model", "env": {"ANTHROPIC_MODEL": "claude-other-model"}}'
    path = SETTINGS[where] if where != "user" else "$HOME/.claude/settings.json"
    command = f"mkdir -p $(dirname {path}) && echo '{settings}' > {path}; echo edited"
    server = serve(scripted(actor=[{"call_tool": "Bash", "args": {"command": command}}, {"text": "edited"},
                                   {"text": "second turn"}]))
    session = open_session(cli, server, tmp_path, sandbox="bwrap")
    first, before = timed_turn(session, server, "Write proof.lean")
    assert first.infra == "" and first.exit_code == 0, first
    second, requests = timed_turn(session, server, "Go on")
    assert second.infra == "" and requests, second
    assert {r["body"].get("model") for r in requests} == {r["body"].get("model") for r in before}
