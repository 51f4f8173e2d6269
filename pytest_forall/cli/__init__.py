"""The ``forall`` command: the parts of pytest-forall that are not a pytest run.

Each subcommand lives in the module of the protocol step it belongs to; that module exposes
``add_cli(subparsers)`` which registers the parser and sets ``func`` (returning the exit status).
Only the module of the subcommand being run is imported, so ``forall verify`` does not pay for the
MCP SDK (one process per candidate adds up over a corpus).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence

#: Subcommand -> the module that defines it, in the order ``forall --help`` lists them.
SUBCOMMANDS = {
    "verify": "pytest_forall.core.verify",
    "doctor": "pytest_forall.cli.doctor",
    "sandbox": "pytest_forall.cli.sandbox",
    "toolchain": "pytest_forall.lang.rocq.toolchain",
    "mcp": "pytest_forall.cli.mcp",
    "start": "pytest_forall.tools.shell",
    "compile": "pytest_forall.tools.shell",
    "submit": "pytest_forall.tools.shell",
    "review-start": "pytest_forall.tools.shell",
    "review-compile": "pytest_forall.tools.shell",
    "goals": "pytest_forall.tools.shell",
    "try": "pytest_forall.tools.shell",
    "query": "pytest_forall.tools.shell",
    "report": "pytest_forall.cli.report",
    "proofs": "pytest_forall.cli.report",
    "apply": "pytest_forall.cli.apply",
    "watch": "pytest_forall.cli.watch",
}


def version_line() -> str:
    """The version and where the code runs from, as ``pip --version`` says it: two clones on one machine (each with
    its own environment, ``scripts/setup.sh``) are told apart at a glance."""
    from importlib.metadata import PackageNotFoundError, version

    import pytest_forall

    try:
        number = version("pytest-forall")
    except PackageNotFoundError:  # run from a checkout on PYTHONPATH that was never installed
        number = "(not installed)"
    where = os.path.dirname(os.path.abspath(pytest_forall.__file__))
    return f"forall {number} from {where} (python {sys.version.split()[0]} at {sys.executable})"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or (``only``) just the module defining that one."""
    parser = argparse.ArgumentParser(prog="forall", description="pytest-forall commands besides a pytest run")
    parser.add_argument("--version", action="store_true", help="print the version, where the code runs from, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = [SUBCOMMANDS[only]] if only in SUBCOMMANDS else list(dict.fromkeys(SUBCOMMANDS.values()))
    for name in modules:
        importlib.import_module(name).add_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--version"]:  # one line, never wrapped (argparse's version action wraps it)
        print(version_line())
        return 0
    parser = build_parser(args_list[0] if args_list else None)
    args = parser.parse_args(args_list)
    try:
        status: int = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (``forall report … | head``): end quietly, as other Unix tools do on SIGPIPE;
        # stdout now points at /dev/null so the interpreter's final flush has nowhere to fail
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    return status


if __name__ == "__main__":
    sys.exit(main())
