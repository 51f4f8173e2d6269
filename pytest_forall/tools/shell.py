"""``forall start|compile|submit|review-start|review-compile|goals|try|query``: the benchmark tools from a shell.

For frontends whose agent has a shell but no MCP client. Each command is a client of the item's tool
server (found through the context file named by ``FORALL_ITEM_CONTEXT``), never a second
implementation: the verdict and the records come from the framework's side, which holds the prover
and the key, so running these commands is the only thing the agent can do with them. The server is
found through ``FORALL_TOOLS_URL``, else the ``url`` of the context file ``FORALL_ITEM_CONTEXT`` names
(a sandboxed agent sees the variable but not the audit dir).

Exit status: 0 ``ok``/``accept``, 1 ``error``/``reject``, 2 ``infra``, a refused call, or a usage
problem (no context, server unreachable).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from pytest_forall.tools.item import CONTEXT_ENV, STATUS_PREFIX, URL_ENV, ContextError, read_context

#: subcommand -> (tool, help)
COMMANDS = {
    "start": ("start", "show the task's exact template and the workspace state"),
    "compile": ("compile", "compile the current candidate: the prover's diagnostics, no verdict"),
    "submit": ("submit", "run the full verifier on the current candidate and record the verdict"),
    "review-start": ("review_start", "reviewer: the statement and the candidate's SHA-256"),
    "review-compile": ("review_compile", "reviewer: compile the candidate and record the evidence"),
    "goals": ("goals", "the proof state the prover has after a line of the candidate (warm session, nothing written)"),
    "try": ("try", "run tactics after a line of the candidate and show the goals (the file is not touched)"),
    "query": ("query", "one statement query in the template's context (its commands: the tool's description)"),
}
EXIT_STATUS = {"ok": 0, "accept": 0, "error": 1, "reject": 1, "timeout": 1}
USAGE_OR_INFRA = 2
#: Longer than any prover timeout the framework sets, so the server, not the client, decides when to stop.
CALL_TIMEOUT = 3600.0


async def call(url: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(is_error, text) of one tool call over streamable HTTP."""
    from mcp import Client  # imported per call: keeps every other `forall` subcommand's start-up fast
    from mcp.types import TextContent

    async with Client(url, read_timeout_seconds=CALL_TIMEOUT) as client:
        result = await client.call_tool(tool, arguments)
    text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
    return result.is_error, text


def exit_status(text: str) -> int:
    """From the answer's ``status:`` line (the first, or the second after an interactive answer's ``sha256:``);
    answers without one (start) succeed."""
    for line in text.split("\n", 2)[:2]:
        if line.startswith(STATUS_PREFIX):
            return EXIT_STATUS.get(line[len(STATUS_PREFIX):].strip(), USAGE_OR_INFRA)
    return 0


def server_url(args: argparse.Namespace) -> str:
    """The item's tool server; raises ContextError when nothing names one."""
    path = args.context or ("" if os.environ.get(URL_ENV) else os.environ.get(CONTEXT_ENV, ""))
    if path:
        return read_context(Path(path), None).url
    if os.environ.get(URL_ENV):
        return os.environ[URL_ENV]
    raise ContextError(f"no item context (pass --context FILE, or set {URL_ENV} or {CONTEXT_ENV})")


def run_cli(args: argparse.Namespace) -> int:
    try:
        url = server_url(args)
    except ContextError as exc:
        print(f"forall {args.command}: {exc}", file=sys.stderr)
        return USAGE_OR_INFRA
    if not url:
        print(f"forall {args.command}: the item's tools are not served over HTTP", file=sys.stderr)
        return USAGE_OR_INFRA
    tool = COMMANDS[args.command][0]
    arguments: dict[str, Any] = {"task": args.task} if getattr(args, "task", "") else {}
    for name, dest in (("line", "line"), ("tactics", "tactics"), ("command", "query_command")):
        if getattr(args, dest, None) is not None:
            arguments[name] = getattr(args, dest)
    try:
        import anyio

        is_error, text = anyio.run(call, url, tool, arguments)
    # Any transport failure means the tools are unavailable, not that the proof failed.
    except Exception as exc:  # noqa: BLE001
        print(f"forall {args.command}: cannot reach the item's tool server at {url}: {exc}", file=sys.stderr)
        return USAGE_OR_INFRA
    print(text, file=sys.stderr if is_error else sys.stdout)
    return USAGE_OR_INFRA if is_error else exit_status(text)


def add_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the tool commands."""
    for command, (tool, help_text) in COMMANDS.items():
        parser = subparsers.add_parser(command, help=help_text, description=f"{help_text[0].upper()}{help_text[1:]}. "
                                       "Exit 0 ok/accept, 1 error/reject, 2 infra, refused or usage error.")
        parser.add_argument("--context", default="", metavar="FILE",
                            help=f"the item's context file (default: ${URL_ENV}, else ${CONTEXT_ENV})")
        if tool in ("start", "review_start"):
            parser.add_argument("--task", default="", help="task id (checked against the item's)")
        if tool == "try":
            parser.add_argument("tactics", help="tactics to run, e.g. 'intros x. induction x.'")
        if tool in ("goals", "try"):
            parser.add_argument("--line", type=int, default=0,
                                help="after the last sentence ending at or before this line (default 0: the end)")
        if tool == "query":
            parser.add_argument("query_command", metavar="COMMAND", help="e.g. 'Search (_ + 0 = _).' or 'About addn0.'")
        parser.set_defaults(func=run_cli)
