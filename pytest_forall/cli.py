"""The ``forall`` command: the parts of pytest-forall that are not a pytest run.

Each subcommand lives in the module of the protocol step it belongs to; that module exposes
``add_cli(subparsers)`` which registers the parser and sets ``func`` (returning the exit status).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Modules that contribute subcommands, in the order ``forall --help`` lists them.
SUBCOMMAND_MODULES = (
    "pytest_forall.verify",
    "pytest_forall.sandbox",
    "pytest_forall.mcp_server",
    "pytest_forall.submit",
    "pytest_forall.report",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="forall", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a step not built yet; its absence is not an error for the others
                continue
            raise
        add_cli = getattr(module, "add_cli", None)
        if add_cli is not None:
            add_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
