"""MCP server exposing statement-only retrieval (``forall mcp``), extensible with benchmark tools.

Agents get the repository's interface (kinds, names, statements, locations) without proof bodies,
and never the excluded target declarations. The server is built by :func:`build_server` so other
steps can add their own tools to the same server: :mod:`pytest_forall.tools.item` adds the benchmark tools
(start/compile/submit/review_*) and serves one item's server with ``--item-context``.
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_forall.retrieval.index import DEFAULT_CACHE_DIR, Declaration, Retriever, build_index

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


def add_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``forall mcp``."""
    parser = subparsers.add_parser("mcp", help="serve statement-only retrieval (or one item's tools) over MCP")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--root", type=Path, help="source tree to index (.lean and .v files)")
    source.add_argument(
        "--item-context",
        type=Path,
        metavar="FILE",
        help="serve one item's benchmark tools (and its retrieval) from this signed context file; "
        "the key is read from $FORALL_CONTEXT_KEY (see docs/tools.md)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="NAME",
        help="withhold this declaration (exact or dotted-suffix name) from every answer; repeatable",
    )
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=8000, help="port for --transport http (on 127.0.0.1)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="index cache directory")
    parser.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    """Index the root, then serve until the client disconnects (stdio) or the process is stopped (http)."""
    if args.item_context is not None:
        from pytest_forall.tools.item import KEY_ENV, ContextError, item_server_from_file

        try:
            server = item_server_from_file(args.item_context, bytes.fromhex(os.environ.get(KEY_ENV, "")))
        except (ContextError, ValueError) as exc:
            raise SystemExit(f"forall mcp: {exc}") from None
    elif not args.root.is_dir():
        raise SystemExit(f"forall mcp: --root {args.root} is not a directory")
    else:
        declarations, _ = build_index(args.root, args.cache_dir)
        server = build_server(declarations, excluded=args.exclude)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    return 0
