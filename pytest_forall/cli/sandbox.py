"""``forall sandbox``: run one command in exactly the sandbox a benchmark task would get
(:mod:`pytest_forall.isolation.sandbox`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_forall.core.binds import parse_ro_binds
from pytest_forall.isolation.sandbox import SandboxPolicy, run_sandboxed


def add_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``forall sandbox``: run one command in exactly the sandbox a benchmark task would get."""
    parser = subparsers.add_parser(
        "sandbox", help="Run a command inside a workspace sandbox",
        description="Run one command in exactly the sandbox a benchmark task gets; exit with its status "
                    "(124 on timeout).")
    parser.add_argument("--workspace", type=Path, required=True, help="The only writable directory")
    parser.add_argument("--allow", action="append", default=[], metavar="HOST:PORT",
                        help="Reachable through the proxy (repeatable); none means no network")
    parser.add_argument("--ro-bind", action="append", default=[], metavar="SRC[:DEST]",
                        help="Read-only bind (repeatable); DEST defaults to SRC")
    parser.add_argument("--wall", type=float, default=None, metavar="S", help="Wall-clock limit in seconds")
    parser.add_argument("--mem", type=int, default=None, metavar="MB", help="Memory limit in MiB")
    parser.add_argument("--pids", type=int, default=1024, metavar="N", help="Task limit (default 1024)")
    parser.add_argument("--audit-dir", type=Path, default=None,
                        help="Where sandbox.jsonl and access.jsonl go (default: WORKSPACE.audit next to it)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD...")
    parser.set_defaults(func=_cli_main)


def _cli_main(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("forall sandbox: no command given (forall sandbox --workspace DIR -- CMD...)", file=sys.stderr)
        return 2
    workspace: Path = args.workspace.resolve()
    try:
        specs = parse_ro_binds(args.ro_bind, Path.cwd())
    except ValueError as exc:
        print(f"forall sandbox: --ro-bind {exc}", file=sys.stderr)
        return 2
    ro_binds = [(Path(src), dest) for src, _, dest in (spec.partition(":") for spec in specs)]
    policy = SandboxPolicy(workspace=workspace, ro_binds=tuple(ro_binds), allow=tuple(args.allow),
                           wall_seconds=args.wall, memory_mb=args.mem, max_processes=args.pids)
    audit_dir = args.audit_dir or workspace.with_name(workspace.name + ".audit")
    result = run_sandboxed(command, policy, audit_dir=audit_dir)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    access = result.extra["access_log"] or "none (no network allowed)"
    print(f"forall sandbox: audit {audit_dir / 'sandbox.jsonl'}; access log {access}", file=sys.stderr)
    return result.returncode
