"""The actor's CLI reads only configuration the harness wrote, whatever the actor's shell did to its HOME.

The actor's sandbox may write its HOME (the CLI keeps its conversation there), so a configuration file kept in
that HOME is the actor's to rewrite between turns: OpenCode's prices (``opencode.json``) set to zero made every
later turn cost $0 while its tokens stayed honest, so ``--forall-max-cost`` never stopped it. The real OpenCode
against the scripted model server, in the bwrap sandbox (the configuration the attack needs).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_agent_frontends import (PRICE, Cli, assert_usage_matches, cli, cli_params, open_session, scripted,  # noqa: F401
                                  serve, timed_turn)

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
def test_the_actor_cannot_zero_its_clis_prices(cli: Cli, serve: Any, tmp_path: Path, place: str) -> None:
    server = serve(scripted(actor=[{"call_tool": "bash", "args": {"command": zero_prices(place), "description": "x"}},
                                   {"text": "edited"}, {"text": "second turn", "usage": {"input": 5000,
                                                                                         "output": 300}}]))
    session = open_session(cli, server, tmp_path, sandbox="bwrap")
    first, _ = timed_turn(session, server, "Write proof.lean")
    assert first.infra == "" and first.exit_code == 0, first
    second, requests = timed_turn(session, server, "Go on")
    assert second.infra == "", second
    assert_usage_matches(cli, second, requests)
