"""``forall report`` and ``forall proofs``: a finished (or running) run's results, read from its directory.

The numbers come from :mod:`pytest_forall.core.summary`, the same code that prints pytest's
``forall summary``; ``--html`` renders them as a page (:mod:`pytest_forall.cli.report_html`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_forall.core.model import RULES_ONLY, STRICT, sha256_bytes
from pytest_forall.core.summary import RunRows, latest_results, report_lines


def run_report(args: argparse.Namespace) -> int:
    """Print the summary and the per-configuration table of one or more runs; ``--html`` also writes the page."""
    from pytest_forall.cli.report_html import write_html

    runs = []
    for name in args.run:
        run_dir = Path(name) if Path(name).is_dir() else Path(name).parent
        try:
            runs.append(RunRows(run_dir, list(latest_results(run_dir).values())))
        except (OSError, ValueError) as exc:
            print(f"forall report: {name}: {exc}", file=sys.stderr)
            return 2
    for line in report_lines(runs):
        print(line)
    if args.html:
        try:
            out = write_html(runs, Path(args.html))
        except OSError as exc:
            print(f"forall report: --html {args.html}: {exc}", file=sys.stderr)
            return 2
        print(f"html report: {out}")
    return 0


def run_export_proofs(args: argparse.Namespace) -> int:
    """Copy every accepted proof of a run into a directory ``replay`` reads (``--forall-proofs``)."""
    run_dir, out = Path(args.run), Path(args.out)
    try:
        latest = latest_results(run_dir)
    except (OSError, ValueError) as exc:
        print(f"forall proofs: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    exported = []
    for row in sorted(latest.values(), key=lambda r: str(r["nodeid"])):
        if row.get("outcome") not in (STRICT, RULES_ONLY):
            continue
        accepted = sorted((Path(row["audit_dir"]) / "accepted").glob(f"{row['task_id']}.*"))
        if not accepted:
            print(f"forall proofs: {row['nodeid']}: accepted but {row['audit_dir']}/accepted is missing",
                  file=sys.stderr)
            return 2
        data = accepted[0].read_bytes()
        if sha256_bytes(data) != row["digest"]:
            print(f"forall proofs: {accepted[0]}: digest differs from the recorded {row['digest']}", file=sys.stderr)
            return 2
        (out / accepted[0].name).write_bytes(data)
        exported.append(row["task_id"])
    print(f"exported {len(exported)} accepted proofs to {out}")
    if exported:
        print("replay them with: -k '" + " or ".join(sorted(set(exported))) + "'")
    return 0


def add_cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("report", help="Summarise runs: per-configuration table, optionally an HTML page")
    parser.add_argument("run", nargs="+", help="reports/<run id> or a results.jsonl file (several: one table)")
    parser.add_argument("--html", metavar="OUT", help="Also write a self-contained HTML report to OUT")
    parser.set_defaults(func=run_report)
    proofs = sub.add_parser("proofs", help="Export a run's accepted proofs for --forall-proofs (replay)")
    proofs.add_argument("run", help="reports/<run id>")
    proofs.add_argument("--out", required=True, help="Directory to write <task id>.<ext> files into")
    proofs.set_defaults(func=run_export_proofs)
