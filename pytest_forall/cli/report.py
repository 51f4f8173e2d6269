"""``forall report`` and ``forall proofs``: a finished (or running) run's results, read from its directory.

The numbers come from :mod:`pytest_forall.core.summary`, the same code that prints pytest's
``forall summary``; ``--html`` renders them as a page (:mod:`pytest_forall.cli.report_html`).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path
from typing import Any

from pytest_forall.core.gating import gate_lines, latest_by_nodeid, read_rows, results_file
from pytest_forall.core.model import RULES_ONLY, STRICT, sha256_bytes
from pytest_forall.core.summary import RunRows, latest_results, read_run, report_lines, summary_lines


def run_report(args: argparse.Namespace) -> int:
    """Print the summary and the per-configuration table of one or more runs; ``--html`` also writes the page."""
    from pytest_forall.cli.report_html import write_html

    if args.merge:
        return run_merge([Path(p) for p in args.merge], Path(args.out or "merged"))
    if args.prune:
        return run_prune(Path(args.prune), args.keep, tuple(args.keep_run or ()))
    if not args.run:
        print("forall report: name a run directory (or results.jsonl), or --merge DIR…", file=sys.stderr)
        return 2
    runs = []
    for name in args.run:
        path = Path(name)
        if not path.exists():
            print(f"forall report: {name}: no such run directory or results file", file=sys.stderr)
            return 2
        try:
            runs.append(read_run(path if path.is_dir() else path.parent))
        except (OSError, ValueError) as exc:
            print(f"forall report: {name}: {exc}", file=sys.stderr)
            return 2
    out = None
    if args.html:  # written before anything is printed: a reader that goes away (``| head``) cannot prevent it
        try:
            out = write_html(runs, Path(args.html))
        except OSError as exc:
            print(f"forall report: --html {args.html}: {exc}", file=sys.stderr)
            return 2
    from pytest_forall.cli.report_patches import patch_lines

    for line in report_lines(runs) + patch_lines(runs):
        print(line)
    if out is not None:
        print(f"html report: {out}")
    problems = [f"forall report: {run.run_dir}: {problem}" for run in runs if (problem := incomplete(run))]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def incomplete(run: RunRows) -> str:
    """Why the report of ``run`` covers fewer items than its last session selected (run.json), or "" when it does
    not: a report must never look whole, and exit 0, when rows are missing (a damaged or emptied results file)."""
    from pytest_forall.core.runlog import has_finished, read_meta

    meta = read_meta(run.run_dir)
    selected = meta.get("selected")
    if not isinstance(selected, int) or not has_finished(meta) or len(run.rows) >= selected:
        return ""  # no run.json, a run still going (or killed) says nothing about completeness
    missing = selected - len(run.rows)
    if meta.get("exitstatus") == 2:
        return (f"incomplete: the run was interrupted, {missing} of its {selected} selected items have no result "
                f"(--forall-resume {run.run_dir.name} runs them); exit 1")
    damaged = f" ({len(run.notices)} lines of it skipped, above)" if run.notices else ""
    return (f"incomplete: {run.run_dir / 'results.jsonl'}{damaged} holds results for {len(run.rows)} items, but "
            f"run.json says the run selected {selected}: {missing} are missing; exit 1")


def run_prune(reports: Path, keep: int | None, protect: tuple[str, ...]) -> int:
    """``--prune REPORTS --keep N``: the runs of a reports directory but the newest N (and ``--keep-run`` ones)
    deleted, then the candidates no run links any more (core/runlog.py, ``prune_runs``)."""
    from pytest_forall.core.accept import BLOBS
    from pytest_forall.core.runlog import prune_runs

    if keep is None or keep < 0:
        print("forall report --prune: say how many runs to keep (--keep N, N >= 0)", file=sys.stderr)
        return 2
    if not reports.is_dir():
        print(f"forall report --prune: {reports} is not a directory", file=sys.stderr)
        return 2
    for line in prune_runs(reports, keep, protect, BLOBS):
        print(line)
    return 0


def run_merge(sources: list[Path], out: Path) -> int:
    """Combine shards: their results.jsonl into one, their JUnit files into one test suite, one summary.

    Each source is a run directory (its ``*.xml`` files are the JUnit reports) or a results.jsonl. An item
    reported by two sources is an error naming both: shards never overlap, so the inputs are wrong.
    """
    from junitparser import JUnitXml, TestSuite

    rows: dict[str, dict[str, Any]] = {}
    origin: dict[str, Path] = {}
    cases: dict[tuple[str, str], Path] = {}
    suite = TestSuite("pytest")
    try:
        for source in sources:
            path = results_file(source)
            for nodeid, row in latest_by_nodeid(read_rows(path)).items():
                if nodeid in rows:
                    raise ValueError(f"{nodeid} is reported by both {origin[nodeid]} and {path}")
                rows[nodeid], origin[nodeid] = row, path
            for xml_path in sorted(path.parent.glob("*.xml")) if source.is_dir() else []:
                xml = JUnitXml.fromfile(str(xml_path))
                for part in ([xml] if isinstance(xml, TestSuite) else list(xml)):
                    for case in part:
                        key = (str(case.classname), str(case.name))
                        if key in cases:
                            raise ValueError(f"test case {key[0]}::{key[1]} is in both {cases[key]} and {xml_path}")
                        cases[key] = xml_path
                        suite.add_testcase(case)
    except (OSError, ValueError) as exc:
        print(f"forall report --merge: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - junitparser's parse errors (lxml or ElementTree) have no common base
        print(f"forall report --merge: cannot read a JUnit file: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    with (out / "results.jsonl").open("w", encoding="utf-8") as handle:
        for nodeid in sorted(rows):
            handle.write(json.dumps(rows[nodeid], sort_keys=True) + "\n")
    merged = JUnitXml()
    suite.update_statistics()  # type: ignore[no-untyped-call]
    merged.add_testsuite(suite)
    merged.write(str(out / "junit.xml"))
    values = [rows[n] for n in sorted(rows)]
    for line in gate_lines(values) + summary_lines(values, [], out):
        print(line)
    print(f"merged {len(sources)} runs: {len(rows)} items, {len(cases)} JUnit test cases -> {out}")
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
            host = row.get("audit_host")
            where = f" (its audit record lives on host {host})" if host and host != socket.gethostname() else ""
            print(f"forall proofs: {row['nodeid']}: accepted but {row['audit_dir']}/accepted is missing{where}",
                  file=sys.stderr)
            return 2
        data = accepted[0].read_bytes()
        if sha256_bytes(data) != row["digest"]:
            print(f"forall proofs: {accepted[0]}: digest differs from the recorded {row['digest']}", file=sys.stderr)
            return 2
        (out / accepted[0].name).write_bytes(data)
        exported.append(row)
    print(f"exported {len(exported)} accepted proofs to {out}")
    if exported:
        print(f"replay them with: {replay_command(exported, out)}")
    return 0


def replay_command(rows: list[dict[str, Any]], proofs: Path) -> str:
    """The pytest command that replays ``rows``' stored proofs from ``proofs``: their manifests' directories, their
    tracks (the node id's parameter, a marker), the replay frontend and the ids (issue 33: only ``-k`` was printed)."""
    import shlex

    places = sorted({str(Path(str(row["nodeid"]).split("::", 1)[0]).parent) for row in rows})
    tracks = sorted({str(row["nodeid"]).rsplit("[", 1)[-1].rstrip("]") for row in rows if "[" in str(row["nodeid"])})
    ids = " or ".join(sorted({str(row["task_id"]) for row in rows}))
    words = ["pytest", *places, *(["-m", " or ".join(tracks)] if tracks else []), "--forall-frontend=replay",
             "--forall-proofs", str(proofs), "-k", ids]
    return " ".join(shlex.quote(word) for word in words)


def add_cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("report", help="Summarise runs: per-configuration table, optionally an HTML page; "
                                           "or merge shards' results and JUnit (--merge)")
    parser.add_argument("run", nargs="*", help="reports/<run id> or a results.jsonl file (several: one table)")
    parser.add_argument("--merge", nargs="+", metavar="DIR", help="Runs (shards) to combine into one")
    parser.add_argument("--out", help="With --merge: directory for results.jsonl and junit.xml (default: merged)")
    parser.add_argument("--html", metavar="OUT", help="Also write a self-contained HTML report to OUT")
    parser.add_argument("--prune", metavar="REPORTS", help="Retention: delete the runs of a reports directory but the "
                        "newest --keep N (never one in use), then the stored candidates no run links any more")
    parser.add_argument("--keep", type=int, metavar="N", help="With --prune: how many of the newest runs to keep")
    parser.add_argument("--keep-run", action="append", metavar="ID", help="With --prune: a run never deleted "
                        "(e.g. the baseline, main); repeatable")
    parser.set_defaults(func=run_report)
    proofs = sub.add_parser("proofs", help="Export a run's accepted proofs for --forall-proofs (replay)")
    proofs.add_argument("run", help="reports/<run id>")
    proofs.add_argument("--out", required=True, help="Directory to write <task id>.<ext> files into")
    proofs.set_defaults(func=run_export_proofs)
