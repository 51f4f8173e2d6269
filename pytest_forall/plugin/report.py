"""Outcomes in the terminal, JUnit properties, ``results.jsonl``, the summary and the exit status.

Under xdist every report is rebuilt on the controller from builtin types, so the item's result
travels on the report as ``report.forall`` (a dict of JSON primitives) and everything here reads it
from there, never from the item.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from pytest_forall.core.model import FAILED, INFRA, OUTCOMES, RULES_ONLY, STATEMENT_FALSE, STRICT
from pytest_forall.core.outcomes import is_final, read_results, shorten

#: Exit status of a run whose selected items were all infrastructure failures (sysexits EX_TEMPFAIL).
EXIT_ALL_INFRA = 75
JUNIT_FIELDS = ("outcome", "stop", "prover", "digest", "axioms", "compiles", "rounds", "wall_s", "tokens_in", "tokens_out",
                "cost_usd")
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
        #: names this pytest session's rows, so a crash row is never written for an item that recorded one
        self.session_token = str(workerinput.get("forall_session", "")) if workerinput else secrets.token_hex(6)
        #: state changes the user must hear about (skipped result lines, resume disabled), for the summary
        self.notices: list[str] = []

    def check_writable(self) -> None:
        """Controller, at configure time: the run directory and its results file must be writable."""
        from pytest_forall.plugin.options import option_value

        source = option_value(self.config, "reports")[1]
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.secret()
            with (self.run_dir / "results.jsonl").open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise pytest.UsageError(f"{source}: cannot write the run directory {self.run_dir}: "
                                    f"{exc.strerror or exc}") from None
        if not self.secret():
            self.notices.append(f"resume disabled: {self.run_dir / '.secret'} is empty, so no item keeps resume "
                                "state (delete the file to get a new secret; workspaces are then new too)")

    # -- worker side ------------------------------------------------------------------------------

    def secret(self) -> bytes:
        """Run secret for opaque workspace names and state HMACs; kept in the run dir, never in a workspace."""
        if self._secret is None:
            path = self.run_dir / ".secret"
            self.run_dir.mkdir(parents=True, exist_ok=True)
            with FileLock(str(path) + ".lock"):
                if not path.exists():
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(os.urandom(32))
                self._secret = path.read_bytes()
        return self._secret

    def item_dirname(self, nodeid: str) -> str:
        return nodeid.rsplit("::", 1)[-1].replace("/", "_").replace("[", "-").replace("]", "")

    def record(self, result: dict[str, Any]) -> None:
        """Append one line to results.jsonl under a file lock (several workers write the same file).

        A row that cannot be written stops the run with that message: going on would lose rows.
        """
        path = self.run_dir / "results.jsonl"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(path) + ".lock"), path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(result, sort_keys=True) + "\n")
        except OSError as exc:
            pytest.exit(f"forall: cannot record the result of {result.get('nodeid')} in {path}: "
                        f"{exc.strerror or exc}; the run stops so no result is lost", returncode=4)

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
        """With --forall-resume, deselect items whose latest recorded outcome is final."""
        from pytest_forall.plugin.options import resolved_options

        if not resolved_options(config)["resume"]:
            return
        path = self.run_dir / "results.jsonl"
        if not path.exists():
            raise pytest.UsageError(f"--forall-resume {self.run_id}: no {path}")
        recorded = read_results(path)
        self.notices += [n for n in recorded.notices() if n not in self.notices]
        latest = {nodeid: str(row["outcome"]) for nodeid, row in recorded.latest().items()}
        done = [item for item in items if is_final(latest.get(item.nodeid, ""))]
        if done:
            config.hook.pytest_deselected(items=done)
            items[:] = [item for item in items if not is_final(latest.get(item.nodeid, ""))]

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if ".forall.toml::" in nodeid:
            self.started.add(nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "forall", None)
        if report.when == "call" and isinstance(payload, dict):
            self.results.append(payload)

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
        for line in summary_lines(self.results, self.missing(), self.run_dir, self.notices):
            tr.write_line(line)

    def missing(self) -> list[str]:
        reported = {r.get("nodeid") for r in self.results}
        return sorted(n for n in self.started if n not in reported)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):
            return
        counts = self.counts()
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:
            return  # pytest's own status for an interrupted run, with or without xdist
        if self.expected is not None and len(self.results) + len(self.missing()) < self.expected:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # workers lost reports: never pass silently
        if self.missing() and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.require_strict and counts[RULES_ONLY] and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.results and counts[INFRA] == len(self.results) and session.exitstatus == 0:
            session.exitstatus = EXIT_ALL_INFRA


class ShortSummary:
    """pytest's short test summary, completed with the outcomes it does not know (registered next to the reporter)."""

    def __init__(self, reporter: ForallReporter) -> None:
        self.reporter = reporter

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> Any:
        """Under ``-r`` (s, a or A), list infra and statement_false items after pytest's own short summary:
        they are pytest skips of categories of their own, which pytest's summary does not show."""
        result = yield
        chars = str(getattr(config.option, "reportchars", "") or "")
        if hasattr(config, "workerinput") or not any(c in chars for c in "saA"):
            return result
        listed = sorted((row for row in self.reporter.results if row.get("outcome") in (INFRA, STATEMENT_FALSE)),
                        key=lambda row: str(row.get("nodeid")))
        if not listed:
            return result
        chars = chars.replace("a", "sxXEf").replace("A", "PpsxXEf")
        own = {"f": "failed", "E": "error", "s": "skipped", "x": "xfailed", "X": "xpassed", "p": "passed", "P": "passed"}
        if not any(terminalreporter.stats.get(own[c]) for c in chars if c in own):  # pytest printed no header
            terminalreporter.write_sep("=", "short test summary info", cyan=True, bold=True)
        for row in listed:
            word = STATUS[str(row["outcome"])][2][0]
            terminalreporter.write_line(f"{word} {row.get('nodeid')} - {row.get('stop', '')}: "
                                        f"{shorten(str(row.get('reason', '')))}")
        return result


class XdistHooks:
    """xdist-only hooks, registered only when xdist is installed (their specs exist only then)."""

    def __init__(self, reporter: ForallReporter) -> None:
        self.reporter = reporter

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["forall_run_id"] = self.reporter.run_id
        node.workerinput["forall_session"] = self.reporter.session_token

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """A worker died running ``crashitem``: record it as infra (resumable), unless it already has a row."""
        reporter = self.reporter
        path = reporter.run_dir / "results.jsonl"
        if path.exists() and any(row.get("nodeid") == crashitem and row.get("session") == reporter.session_token
                                 for row in read_results(path).rows):
            return
        name = crashitem.rsplit("::", 1)[-1]
        row = {"nodeid": crashitem, "task_id": name.split("[", 1)[0], "run_id": reporter.run_id,
               "outcome": INFRA, "stop": "worker-crashed", "session": reporter.session_token,
               "reason": f"worker-crashed: {shorten(str(report.longrepr), 300)}"}
        reporter.record(row)
        report.forall = row  # type: ignore[attr-defined]
        reporter.results.append(row)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        count = sum(1 for i in ids if ".forall.toml::" in i)
        self.reporter.expected = max(self.reporter.expected or 0, count)


def summary_lines(results: list[dict[str, Any]], missing: list[str], run_dir: Path,
                  notices: list[str] | None = None) -> list[str]:
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
    infra_reasons = Counter(shorten(str(r.get("reason", "")), 120) for r in results if r.get("outcome") == INFRA)
    for reason, count in infra_reasons.most_common(5):
        lines.append(f"infra x{count}: {reason}")
    stops = Counter(str(r.get("stop")) for r in results if r.get("stop"))
    if stops:
        lines.append("stops: " + ", ".join(f"{stop} {count}" for stop, count in sorted(stops.items())))
    notes = list(notices or [])
    notes += [f"{r.get('nodeid')}: {note}" for r in results for note in r.get("notices") or []]
    lines += [f"note: {note}" for note in notes]
    if missing:
        lines.append(f"{len(missing)} items started but never reported: {missing[:5]}")
    lines.append(f"results: {run_dir / 'results.jsonl'}")
    return lines


# --- forall report ---------------------------------------------------------------------------------

def run_report(args: argparse.Namespace) -> int:
    run_dir = Path(args.run) if Path(args.run).is_dir() else Path(args.run).parent
    try:
        recorded = read_results(run_dir / "results.jsonl")
    except OSError as exc:
        print(f"forall report: {exc}", file=sys.stderr)
        return 2
    for line in summary_lines(list(recorded.latest().values()), [], run_dir, recorded.notices()):
        print(line)
    return 0


def latest_results(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The last recorded result of every item of a run (a resumed run appends); skipped lines go to stderr."""
    recorded = read_results(run_dir / "results.jsonl")
    for note in recorded.notices():
        print(f"note: {note}", file=sys.stderr)
    return recorded.latest()


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
    parser = sub.add_parser("report", help="Summarise a run's results.jsonl")
    parser.add_argument("run", help="reports/<run id> or a results.jsonl file")
    parser.set_defaults(func=run_report)
    proofs = sub.add_parser("proofs", help="Export a run's accepted proofs for --forall-proofs (replay)")
    proofs.add_argument("run", help="reports/<run id>")
    proofs.add_argument("--out", required=True, help="Directory to write <task id>.<ext> files into")
    proofs.set_defaults(func=run_export_proofs)
