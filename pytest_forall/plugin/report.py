"""Outcomes in the terminal, JUnit properties, ``results.jsonl``, the summary and the exit status.

Under xdist every report is rebuilt on the controller from builtin types, so the item's result
travels on the report as ``report.forall`` (a dict of JSON primitives) and everything here reads it
from there, never from the item.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from pytest_forall.core.gating import (
    annotate,
    gate_lines,
    latest_by_nodeid,
    load_baseline,
    parse_shard,
    read_rows,
    results_file,
    shard_of,
    task_key,
)
from pytest_forall.core.model import FAILED, INFRA, OUTCOMES, RULES_ONLY, STATEMENT_FALSE, STRICT
from pytest_forall.core.state import load_secret
from pytest_forall.plugin.options import TASK_KEY

#: Exit status of a run whose selected items were all infrastructure failures (sysexits EX_TEMPFAIL).
EXIT_ALL_INFRA = 75
FINAL_OUTCOMES = (STRICT, RULES_ONLY, FAILED, STATEMENT_FALSE)
JUNIT_FIELDS = ("outcome", "prover", "digest", "axioms", "compiles", "rounds", "wall_s", "tokens_in", "tokens_out",
                "cost_usd", "cached")
STATUS = {
    STRICT: ("passed", ".", ("STRICT", {"green": True})),
    RULES_ONLY: ("rules_only", "r", ("RULES-ONLY", {"yellow": True})),
    FAILED: ("failed", "F", ("FAILED", {"red": True})),
    INFRA: ("infra", "I", ("INFRA", {"purple": True})),
    STATEMENT_FALSE: ("statement_false", "!", ("STATEMENT-FALSE", {"yellow": True})),
}


#: The item's result dict, from the protocol to the report (see ``pytest_runtest_makereport``).
RESULT_KEY = pytest.StashKey[dict[str, Any]]()


class ForallFailure(Exception):
    """A proof failure: shown as the verifier's or budget's reason, not as a Python traceback."""


def junit_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


class ForallReporter:
    """Run-level state: run id, report directory, collected results (controller), exit policy."""

    def __init__(self, config: pytest.Config) -> None:
        from pytest_forall.plugin.options import new_run_id, resolved_options

        self.config = config
        options = resolved_options(config)
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and "forall_run_id" in workerinput:
            self.run_id = str(workerinput["forall_run_id"])
        else:
            self.run_id = str(options["resume"] or options["run_id"] or new_run_id())
        self.run_dir = Path(options["reports"]) / self.run_id
        self.results: list[dict[str, Any]] = []
        self.started: set[str] = set()
        self.expected: int | None = None
        self.require_strict = options["require"] == "strict"
        self._secret: bytes | None = None
        self.shard = parse_shard(options["shard"]) if options["shard"] else None
        self.gate = options["gate"]
        self.baseline = load_baseline(Path(options["baseline"])) if options["baseline"] and not hasattr(
            config, "workerinput") else None
        #: node id -> forall.change, added to the JUnit properties of the item's teardown report
        self.changes: dict[str, str] = {}
        self.other_failed = False

    # -- worker side ------------------------------------------------------------------------------

    def secret(self) -> bytes:
        """Run secret for opaque workspace names and state HMACs; kept in the run dir, never in a workspace."""
        if self._secret is None:
            self._secret = load_secret(self.run_dir / ".secret")
        return self._secret

    def item_dirname(self, nodeid: str) -> str:
        return nodeid.rsplit("::", 1)[-1].replace("/", "_").replace("[", "-").replace("]", "")

    def record(self, result: dict[str, Any]) -> None:
        """Append one line to results.jsonl; only the controller writes it (results arrive in the reports)."""
        path = self.run_dir / "results.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"), path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(result, sort_keys=True) + "\n")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if call.when == "call" and RESULT_KEY in item.stash:
            result: dict[str, Any] = item.stash[RESULT_KEY]
            report.forall = dict(result)
        return report

    # -- controller side --------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not hasattr(self.config, "workerinput"):
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.secret()

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Keep this shard's items (--forall-shard); with --forall-resume, deselect items already final."""
        from pytest_forall.plugin.options import resolved_options

        if self.shard is not None:
            k, n = self.shard
            tasks = {id(item): item.stash.get(TASK_KEY, None) for item in items}
            other = [item for item in items if (task := tasks[id(item)]) is not None
                     and shard_of(task_key(task.suite, task.track, task.task_id), n) != k]
            if other:
                config.hook.pytest_deselected(items=other)
                dropped = {id(item) for item in other}
                items[:] = [item for item in items if id(item) not in dropped]
        if not resolved_options(config)["resume"]:
            return
        path = self.run_dir / "results.jsonl"
        if not path.exists():
            raise pytest.UsageError(f"--forall-resume {self.run_id}: no {path}")
        latest: dict[str, str] = {}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                row = json.loads(line)
                latest[row["nodeid"]] = row["outcome"]
            except (ValueError, KeyError, TypeError):
                raise pytest.UsageError(f"{path}:{number}: not a results line: {line[:120]!r}") from None
        done = [item for item in items if latest.get(item.nodeid) in FINAL_OUTCOMES]
        if done:
            config.hook.pytest_deselected(items=done)
            items[:] = [item for item in items if latest.get(item.nodeid) not in FINAL_OUTCOMES]

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if ".forall.toml::" in nodeid:
            self.started.add(nodeid)

    @pytest.hookimpl(tryfirst=True)  # before junitxml reads the teardown report's properties
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "forall", None)
        if hasattr(self.config, "workerinput"):
            return
        if report.failed and ".forall.toml::" not in report.nodeid:
            self.other_failed = True  # a plain test of the same session: the gate does not hide it
        if report.when == "call" and isinstance(payload, dict):
            row = dict(payload)
            if self.baseline is not None:
                annotate(self.baseline, row, self.require_strict)
                self.changes[report.nodeid] = row["change"]
            self.record(row)
            self.results.append(row)
        elif report.when == "teardown" and report.nodeid in self.changes:
            report.user_properties.append(("forall.change", self.changes.pop(report.nodeid)))

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        payload = getattr(report, "forall", None)
        if report.when == "call" and isinstance(payload, dict) and payload.get("outcome") in STATUS:
            return STATUS[payload["outcome"]]
        return None

    def pytest_report_header(self, config: pytest.Config) -> str:
        from pytest_forall.plugin.options import resolved_options

        options = resolved_options(config)
        return (f"forall: run {self.run_id} -> {self.run_dir}; frontend={options['frontend']} "
                f"sandbox={options['sandbox']} require={options['require']}")

    def counts(self) -> Counter[str]:
        return Counter(str(r.get("outcome")) for r in self.results)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if hasattr(config, "workerinput") or not (self.results or self.started):
            return
        tr = terminalreporter
        tr.section("forall summary")
        for line in gate_lines(self.results) + summary_lines(self.results, self.missing(), self.run_dir):
            tr.write_line(line)

    def missing(self) -> list[str]:
        reported = {r.get("nodeid") for r in self.results}
        return sorted(n for n in self.started if n not in reported)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):
            return
        counts = self.counts()
        if self.expected is not None and len(self.results) + len(self.missing()) < self.expected:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # workers lost reports: never pass silently
        if self.missing() and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.require_strict and counts[RULES_ONLY] and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.results and counts[INFRA] == len(self.results) and session.exitstatus == 0:
            session.exitstatus = EXIT_ALL_INFRA
        if self.gate == "regressions" and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = self._gate_status()

    def _gate_status(self) -> int:
        """Under --forall-gate=regressions: fail on a regression or a lost report, never on a known failure."""
        lost = self.expected is not None and len(self.results) + len(self.missing()) < self.expected
        if lost or self.other_failed or self.missing() or any(r.get("change") == "regressed" for r in self.results):
            return int(pytest.ExitCode.TESTS_FAILED)
        if self.results and all(r.get("outcome") == INFRA for r in self.results):
            return EXIT_ALL_INFRA
        return int(pytest.ExitCode.OK)


class XdistHooks:
    """xdist-only hooks, registered only when xdist is installed (their specs exist only then)."""

    def __init__(self, reporter: ForallReporter) -> None:
        self.reporter = reporter

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["forall_run_id"] = self.reporter.run_id

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        count = sum(1 for i in ids if ".forall.toml::" in i)
        self.reporter.expected = max(self.reporter.expected or 0, count)


def summary_lines(results: list[dict[str, Any]], missing: list[str], run_dir: Path) -> list[str]:
    counts = Counter(str(r.get("outcome")) for r in results)
    lines = [", ".join(f"{counts[o]} {o}" for o in OUTCOMES) + f"  ({len(results)} items)"]

    def total(key: str) -> str:
        known = [r[key] for r in results if r.get(key) is not None]
        if not known:
            return "unknown"
        value = sum(known)
        suffix = f" ({len(results) - len(known)} unknown)" if len(known) < len(results) else ""
        return (f"{value:.4f}" if isinstance(value, float) else str(value)) + suffix

    lines.append(f"compiles {total('compiles')}, wall {sum(r.get('wall_s') or 0 for r in results):.1f} s, "
                 f"tokens in {total('tokens_in')}, out {total('tokens_out')}, cost USD {total('cost_usd')}")
    accepted = [r for r in results if r.get("outcome") in (STRICT, RULES_ONLY)]
    judged = [r for r in accepted if r.get("independent") is not None]
    passed = sum(1 for r in judged if r.get("independent"))
    lines.append(f"independent check: {passed}/{len(judged)} judged accepted, "
                 f"{len(accepted) - len(judged)} accepted not judged")
    unsandboxed = sum(1 for r in results if r.get("sandbox") == "none")
    if unsandboxed:
        lines.append(f"sandbox: NONE for {unsandboxed} items (--forall-sandbox=none): actor and prover ran unisolated")
    prover_only = sum(1 for r in results if r.get("sandbox") == "bwrap" and r.get("prover_sandboxed") is False
                      and r.get("outcome") != INFRA)
    if prover_only:
        lines.append(f"sandbox: the prover of {prover_only} items ran unsandboxed (its backend declares no binds)")
    infra_reasons = Counter(str(r.get("reason", ""))[:100] for r in results if r.get("outcome") == INFRA)
    for reason, count in infra_reasons.most_common(5):
        lines.append(f"infra x{count}: {reason}")
    if missing:
        lines.append(f"{len(missing)} items started but never reported: {missing[:5]}")
    lines.append(f"results: {run_dir / 'results.jsonl'}")
    return lines


# --- forall report ---------------------------------------------------------------------------------

def run_report(args: argparse.Namespace) -> int:
    if args.merge:
        return run_merge([Path(p) for p in args.merge], Path(args.out or "merged"))
    if not args.run:
        print("forall report: name a run directory (or results.jsonl), or --merge DIR…", file=sys.stderr)
        return 2
    run_dir = Path(args.run) if Path(args.run).is_dir() else Path(args.run).parent
    try:
        latest = latest_results(run_dir)
    except (OSError, ValueError) as exc:
        print(f"forall report: {exc}", file=sys.stderr)
        return 2
    rows = list(latest.values())
    for line in gate_lines(rows) + summary_lines(rows, [], run_dir):
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


def latest_results(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The last recorded result of every item of a run (a resumed run appends)."""
    return latest_by_nodeid(read_rows(run_dir / "results.jsonl"))


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
        from pytest_forall.core.model import sha256_bytes

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
    parser = sub.add_parser("report", help="Summarise a run's results.jsonl, or merge shards' results and JUnit")
    parser.add_argument("run", nargs="?", help="reports/<run id> or a results.jsonl file")
    parser.add_argument("--merge", nargs="+", metavar="DIR", help="Runs (shards) to combine into one")
    parser.add_argument("--out", help="With --merge: directory for results.jsonl and junit.xml (default: merged)")
    parser.set_defaults(func=run_report)
    proofs = sub.add_parser("proofs", help="Export a run's accepted proofs for --forall-proofs (replay)")
    proofs.add_argument("run", help="reports/<run id>")
    proofs.add_argument("--out", required=True, help="Directory to write <task id>.<ext> files into")
    proofs.set_defaults(func=run_export_proofs)
