"""The retrieval server through real MCP clients: every tool answers, no proof or target ever leaks."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from pytest_forall.retrieval.index import build_index
from pytest_forall.tools.mcp_server import build_server

FIXTURES = Path(__file__).parent / "fixtures" / "retrieval"
EXCLUDED = ("target_theorem", "Arith2.target_lemma")
#: Calls covering every tool, including ones aimed straight at the withheld targets.
CALLS: list[tuple[str, dict[str, object]]] = [
    ("lookup", {"name": "double"}),
    ("lookup", {"name": "target_theorem"}),
    ("lookup", {"name": "Fixture.Deep.Er.target_theorem"}),
    ("lookup", {"name": "target_lemma"}),
    ("search", {"query": "target"}),
    ("search", {"query": "double n = 2 * n", "limit": 100}),
    ("search", {"query": "omega simp lia reflexivity"}),
    ("usages", {"name": "double"}),
    ("usages", {"name": "Small.double"}),
    ("outline", {"file": "lean/Basic.lean"}),
    ("outline", {"file": "rocq/Small.v"}),
]


def server_arguments(cache_dir: Path) -> list[str]:
    excludes = [arg for name in EXCLUDED for arg in ("--exclude", name)]
    return [
        "-m",
        "pytest_forall.cli",
        "mcp",
        "--root",
        str(FIXTURES),
        "--cache-dir",
        str(cache_dir),
        *excludes,
    ]


async def answers_of(session: ClientSession) -> dict[str, list[str]]:
    """Every tool's answers to ``CALLS``, keyed by tool name."""
    await session.initialize()
    tools = {tool.name for tool in (await session.list_tools()).tools}
    assert {"lookup", "search", "usages", "outline"} <= tools
    answers: dict[str, list[str]] = {name: [] for name in tools}
    for tool, arguments in CALLS:
        result = await session.call_tool(tool, arguments)
        assert not result.is_error, result
        answers[tool] += [block.text for block in result.content if isinstance(block, TextContent)]
    return answers


def assert_nothing_leaks(answers: dict[str, list[str]]) -> None:
    everything = "\n".join(text for texts in answers.values() for text in texts)
    assert "SECRET_" not in everything  # every proof/body line of the fixtures is marked
    assert "target_theorem" not in everything and "target_lemma" not in everything
    assert "Fixture.Deep.Er.uses_target" in everything and "Small.Arith2.uses_target" in everything
    assert "def double (n : Nat) : Nat" in answers["lookup"][0]
    assert "Fixture.double_add" in "\n".join(answers["usages"])
    assert "Fixpoint sum_to (n : nat) {struct n} : nat" in answers["outline"][1]


def test_stdio_session(tmp_path: Path) -> None:
    async def run() -> dict[str, list[str]]:
        params = StdioServerParameters(command=sys.executable, args=server_arguments(tmp_path))
        with anyio.fail_after(300):   # a hang guard, not a measurement
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                return await answers_of(session)

    assert_nothing_leaks(anyio.run(run))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, *server_arguments(tmp_path), "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300   # the SDK's imports take seconds, far more on a loaded machine
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"the MCP server never listened on port {port}"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_streamable_http_session(http_server: str) -> None:
    async def run() -> dict[str, list[str]]:
        with anyio.fail_after(300):   # a hang guard, not a measurement
            async with (
                streamable_http_client(http_server) as (read, write),
                ClientSession(read, write) as session,
            ):
                return await answers_of(session)

    assert_nothing_leaks(anyio.run(run))


def test_extra_tools_are_served_beside_retrieval(tmp_path: Path) -> None:
    def submit(proof: str) -> str:
        """Stand-in for a benchmark tool the lead adds later."""
        return f"received {len(proof)} characters"

    declarations, _ = build_index(FIXTURES, tmp_path)
    server = build_server(declarations, excluded=EXCLUDED, extra_tools=[submit])

    async def run() -> tuple[set[str], str]:
        async with Client(server) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("submit", {"proof": "rfl"})
            block = result.content[0]
            return tools, block.text if isinstance(block, TextContent) else ""

    tools, answer = anyio.run(run)
    assert tools == {"lookup", "search", "usages", "outline", "submit"}
    assert answer == "received 3 characters"
