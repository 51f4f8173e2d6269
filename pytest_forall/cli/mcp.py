"""``forall mcp``: statement-only retrieval over a source tree, or one item's benchmark tools, over MCP."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pytest_forall.retrieval.index import DEFAULT_CACHE_DIR, build_index
from pytest_forall.tools.mcp_server import build_server


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
