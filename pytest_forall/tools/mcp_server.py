"""MCP server exposing statement-only retrieval (``forall mcp``), extensible with benchmark tools.

Agents get the repository's interface (kinds, names, statements, locations) without proof bodies,
and never the excluded target declarations. The server is built by :func:`build_server` so other
steps can add their own tools to the same server: :mod:`pytest_forall.tools.item` adds the benchmark tools
(start/compile/submit/review_*) and serves one item's server with ``--item-context``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pytest_forall.retrieval.index import Declaration, Retriever

if TYPE_CHECKING:  # the SDK is imported when a server is built, so `forall --help` and `forall verify` stay fast
    from mcp.server.mcpserver import MCPServer

SERVER_NAME = "forall-retrieval"
INSTRUCTIONS = (
    "Find declarations of this Lean/Rocq repository by name or text. Answers give the kind, fully "
    "qualified name, statement (bodies and proofs are never shown) and file:line. Matching is textual: "
    "notations and implicit arguments are not elaborated."
)
#: Called after every retrieval answer with (tool, arguments, answer, seconds): how calls are counted.
Observer = Callable[[str, dict[str, Any], str, float], None]


def _render(declarations: Sequence[Declaration], empty: str) -> str:
    """One block per declaration; ``empty`` never echoes the query, so a withheld name is never said back."""
    return "\n".join(d.render() for d in declarations) if declarations else empty


def build_server(
    index: Iterable[Declaration],
    *,
    excluded: Sequence[str] = (),
    extra_tools: Iterable[Callable[..., Any]] | None = None,
    observe: Observer | None = None,
    name: str = SERVER_NAME,
    instructions: str = INSTRUCTIONS,
) -> MCPServer:
    """An MCP server answering retrieval queries over ``index`` with ``excluded`` names withheld.

    ``extra_tools`` are registered as-is (name and description from the function), so a caller
    can serve benchmark tools alongside retrieval; the returned server also accepts ``add_tool``.
    ``observe`` sees every retrieval call, so an item can count its navigation.
    """
    from mcp.server.mcpserver import MCPServer

    retriever = Retriever(index, excluded=excluded)
    server = MCPServer(name, instructions=instructions, log_level="WARNING")

    def tool(fn: Callable[..., str]) -> Callable[..., str]:
        """Register ``fn`` (text only: structured output would repeat every answer in a second copy the
        agent pays for), reporting each call to ``observe``."""
        if observe is None:
            return server.tool(structured_output=False)(fn)

        @functools.wraps(fn)
        def observed(**arguments: Any) -> str:
            started = time.monotonic()
            answer = fn(**arguments)
            observe(fn.__name__, arguments, answer, time.monotonic() - started)
            return answer

        return server.tool(structured_output=False)(observed)

    @tool
    def lookup(name: str) -> str:
        """Declarations whose fully qualified name is `name` or ends with `.name` (e.g. `add_comm`)."""
        return _render(retriever.lookup(name), "No declaration has that name.")

    @tool
    def search(query: str, limit: int = 20) -> str:
        """Declarations ranked by how well names and statements match the words/symbols of `query`."""
        return _render(
            retriever.search(query, limit=max(1, min(limit, 100))), "No declaration matches that query."
        )

    @tool
    def usages(name: str, limit: int = 50) -> str:
        """Declarations whose statement mentions `name` (textually), with file and line."""
        found = retriever.usages(name, limit=max(1, min(limit, 200)))
        return _render(found, "No statement mentions that name.")

    @tool
    def outline(file: str) -> str:
        """Declarations of one file (path relative to the root, or a unique suffix) in source order."""
        return _render(
            retriever.outline(file),
            "No indexed declarations in that file (give a path relative to the root).",
        )

    for tool in extra_tools or ():
        server.add_tool(tool)
    return server
