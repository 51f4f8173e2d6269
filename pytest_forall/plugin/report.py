"""Outcomes in the terminal, JUnit properties, ``results.jsonl``, the summary and the exit status.

Under xdist every report is rebuilt on the controller from builtin types, so the item's result
travels on the report as ``report.forall`` (a dict of JSON primitives) and everything here reads it
from there, never from the item.
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.gating import (
    Accounting,
    account,
    accounting_lines,
    annotate,
    gate_lines,
    load_baseline,
    parse_shard,
    shard_of,
    task_key,
)
from pytest_forall.core.model import (
    FAILED,
    INFRA,
    INNER_VACUOUS,
    RULES_ONLY,
    STATEMENT_FALSE,
    STRICT,
    VACUOUS,
)
from pytest_forall.core.outcomes import is_final, read_results, shorten
from pytest_forall.core.runlog import (
    RESULTS_FILE,
    SELECTION_FLAGS,
    RunBusy,
    RunLog,
    RunOwner,
    WorkerHold,
    describe_selection,
    is_run,
    merge_selection,
    moment,
    move_aside,
    read_meta,
    recorded_selection,
    utc_text,
)
from pytest_forall.core.state import load_secret
from pytest_forall.core.summary import summary_lines
from pytest_forall.plugin.options import TASK_KEY

#: Exit status of a run whose selected items were all infrastructure failures (sysexits EX_TEMPFAIL).
EXIT_ALL_INFRA = 75
JUNIT_FIELDS = ("outcome", "stop", "prover", "kernel", "advisories", "advisory_coverage", "toolchain", "digest",
                "axioms", "compiles", "rounds", "wall_s", "tokens_in", "tokens_out", "cost_usd", "cached", "statement_audit", "certificate")
#: What a worker needs of an earlier session's row to report the item as recorded (the controller keeps the row).
CARRIED_FIELDS = (*JUNIT_FIELDS, "nodeid", "task_id", "reason", "audit_dir")
STATUS = {
    STRICT: ("passed", ".", ("STRICT", {"green": True})),
    RULES_ONLY: ("rules_only", "r", ("RULES-ONLY", {"yellow": True})),
    FAILED: ("failed", "F", ("FAILED", {"red": True})),
    INFRA: ("infra", "I", ("INFRA", {"purple": True})),
    STATEMENT_FALSE: ("statement_false", "!", ("STATEMENT-FALSE", {"yellow": True})),
    VACUOUS: ("vacuous", "V", ("VACUOUS", {"yellow": True})),
    INNER_VACUOUS: ("inner_vacuous", "v", ("INNER-VACUOUS", {"yellow": True})),
}


#: The item's result dict, from the protocol to the report (see ``pytest_runtest_makereport``).
RESULT_KEY = pytest.StashKey[dict[str, Any]]()


def is_forall(nodeid: str) -> bool:
    """A forall item's node id: a suite manifest's item, or one of ``--forall-project``'s ``project.forall.toml``."""
    return ".forall.toml::" in nodeid


def run_dir_problem(run_dir: Path) -> str | None:
    """Why ``run_dir`` (and its results and secret files) could not be made or written, found without writing.

    Made only for a session with a forall item, the run directory may not exist yet at configure time: then
    its nearest existing ancestor must be a writable directory. Anything this cannot foresee (a full disk, a
    race) fails later in :meth:`ForallReporter.ensure_run_dir` with the same message.
    """
    existing = run_dir
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        read_only = os.statvfs(existing).f_flag & os.ST_RDONLY
        return os.strerror(errno.EROFS if read_only else errno.EACCES)
    if existing != run_dir:
        return None
    for name in ("results.jsonl", ".secret"):
        path = run_dir / name
        if not os.path.lexists(path):
            continue
        if not path.is_file():
            return f"{path}: {os.strerror(errno.EISDIR if path.is_dir() else errno.ENOENT)}"
        if not os.access(path, os.R_OK | os.W_OK):
            return f"{path}: {os.strerror(errno.EACCES)}"
    return None


#: outcomes that are findings about the benchmark's statement, not about this machine or the proof attempt
DEFECTS = (STATEMENT_FALSE, VACUOUS, INNER_VACUOUS)


def reason_after_stop(row: dict[str, Any]) -> str:
    """The row's reason without a leading ``<stop>:`` (the stop is said once, beside it)."""
    reason, stop = str(row.get("reason") or ""), str(row.get("stop") or "")
    return reason[len(stop) + 1:].lstrip() if stop and reason.startswith(f"{stop}:") else reason


def skip_reason(row: dict[str, Any]) -> str:
    """A skipped item's one-line reason, led by what kind of skip it is: ``INFRA template: …`` (this machine) or
    ``DEFECT vacuous (vacuous): …`` (the benchmark's statement), so dashboards that show a skip's message tell them
    apart at a glance."""
    outcome, stop = str(row.get("outcome")), str(row.get("stop") or "")
    head = f"DEFECT {outcome}" + (f" ({stop})" if stop and stop != outcome else "") if outcome in DEFECTS else (
        f"INFRA {stop}" if stop else "INFRA")
    return f"{head}: {shorten(reason_after_stop(row), 2000)}"


def problem_location(task: Any, rootdir: str) -> tuple[str, int]:
    """The problem's file (relative to the rootdir when below it) and its theorem's line (1 when not found)."""
    import re

    path, name, line = str(task.source_path or ""), str(getattr(task, "theorem_name", "") or ""), 1
    if path and name:
        word = re.compile(rf"(?<![\w.']){re.escape(name)}(?![\w'])")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                line = next((number for number, text in enumerate(handle, 1) if word.search(text)), 1)
        except OSError:
            pass
    if path and os.path.isabs(path) and path.startswith(rootdir.rstrip("/") + "/"):
        path = os.path.relpath(path, rootdir)
    return path, line


def junit_classname(nodeid: str, outcome: str) -> str:
    """The JUnit ``classname``: the manifest's path as a dotted name without ``.forall.toml``
    (``benchmarks.putnam.putnam``: dashboards show package ``benchmarks.putnam``, class ``putnam``), and for a
    defect the class ``<manifest>-defects`` beside it, so Jenkins, GitLab and GitHub reporters, which all show the
    classname, list the benchmark's defects apart from infra skips (docs/reports.md, JUnit)."""
    manifest = nodeid.split("::", 1)[0].removesuffix(".forall.toml")
    dotted = manifest.replace("/", ".").strip(".")
    return f"{dotted}-defects" if outcome in DEFECTS else dotted


def mark_junit(config: pytest.Config, report: pytest.TestReport, outcome: str) -> None:
    """Controller, before junitxml records the call report: the item's classname, and a skip's ``type``
    (``forall.infra``, ``forall.vacuous``, …) in place of pytest's ``pytest.skip``."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    reporter = xml.node_reporter(report)
    reporter.attrs["classname"] = junit_classname(report.nodeid, outcome)  # kept: record_testreport restores attrs
    if report.skipped and "append_skipped" not in vars(reporter):
        append = reporter.append_skipped

        def append_skipped(skipped_report: pytest.TestReport) -> None:
            append(skipped_report)
            for node in reversed(reporter.nodes):
                if node.tag == "skipped":
                    node.set("type", f"forall.{outcome}")
                    break

        reporter.append_skipped = append_skipped  # type: ignore[method-assign,assignment]


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
        #: the forall items this session selected (node ids), known once collection ends on the controller
        self.selected_ids: set[str] = set()
        self.expected: int | None = None
        self.require_strict = options["require"] == "strict"
        #: the controller's, sent to every worker (local or remote) as hex in ``workerinput``
        self._secret: bytes | None = None
        if workerinput is not None and "forall_secret" in workerinput:
            self._secret = bytes.fromhex(str(workerinput["forall_secret"]))
        #: whether the controller has made the run directory (only a session with a forall item does)
        self.created = False
        #: this run's owner lock (held by the controller for the session's life) and its run.json history
        self.owner = RunOwner(self.run_dir)
        self.worker_hold = WorkerHold()
        self.log = RunLog(self.run_dir, self.run_id)
        #: how this session meets an earlier run of the same id: new, resume, continue, restart or refuse
        self.mode = "new"
        #: node id -> the final row an earlier session of the run recorded: reported as it is, never re-run
        self.carried: dict[str, dict[str, Any]] = {}
        if workerinput is not None and "forall_carried" in workerinput:
            self.carried = {str(k): dict(v) for k, v in dict(workerinput["forall_carried"]).items()}
        #: node ids with a final row in this run (results.jsonl never gets a second), and every recorded one
        self.final_ids: set[str] = set()
        self.recorded_ids: set[str] = set()
        #: results.jsonl, opened for appending at the first row of this session (:meth:`record`)
        self._results: int | None = None
        self._torn = False
        #: the selection this session runs on resume or continue (the run's, completed by this session's own), which
        #: every worker applies as it starts; None for a new run (its own selection, recorded as given)
        self.selection: dict[str, Any] | None = None
        if workerinput is not None and workerinput.get("forall_selection") is not None:
            from pytest_forall.plugin.selection import apply_selection

            self.selection = dict(workerinput["forall_selection"])
            apply_selection(config, self.selection)
        self.shard = parse_shard(options["shard"]) if options["shard"] else None
        self.gate = options["gate"]
        self.baseline = load_baseline(Path(options["baseline"])) if options["baseline"] and not hasattr(
            config, "workerinput") else None
        #: node id -> forall.change, added to the JUnit properties of the item's teardown report
        self.changes: dict[str, str] = {}
        self.other_failed = False
        #: why the run directory could not be made or owned once items were selected (the session ends with it)
        self.refused = ""
        #: state changes the user must hear about (skipped result lines, resume disabled), for the summary
        self.notices: list[str] = []
        #: for the summary's elapsed wall time (the items' own times overlap under xdist)
        self.session_started = time.monotonic()
        #: the gate's own verdict line (``--forall-gate``), set when the exit status is decided
        self.gate_verdict = ""
        #: task key -> {"nodeid", "admitted"} of every forall item collected, before any deselection (the gate
        #: accounts for every baseline item: :class:`GateAccounting`), from every xdist worker under xdist
        self.collected: dict[str, dict[str, Any]] = {}
        #: ``--forall-gate-allow-removed``: baseline items the maintainer lets go
        self.allowed = [str(n) for n in options["gate_allow_removed"]]
        #: what became of the baseline items without a row (computed once the items have run)
        self.accounting: Accounting | None = None

    def check_writable(self) -> None:
        """Controller, at configure time: the run directory must be writable; checked without making anything.

        An explicit ``--forall-reports`` (or ini) that is not is an error now; the default one only once a
        forall item is selected (:meth:`ensure_run_dir`), so plain tests in a read-only project still run.
        The run's secret is chosen here (the one on disk, on resume) because workers get it when they start.
        """
        from pytest_forall.plugin.options import option_value

        problem = run_dir_problem(self.run_dir)
        if problem is not None and not option_value(self.config, "reports")[1].startswith("default of"):
            raise pytest.UsageError(self._cannot_write(problem))
        self._meet_earlier_run()
        secret = self.run_dir / ".secret"
        try:
            fresh = self.mode == "restart" or not secret.is_file()
            self._secret = os.urandom(32) if fresh else secret.read_bytes()
        except OSError as exc:
            self.owner.release()  # this reporter is not registered yet: no pytest_unconfigure would release it
            raise pytest.UsageError(self._cannot_write(f"{secret}: {exc.strerror or exc}")) from None
        if not self._secret:
            self.notices.append(f"resume disabled: {secret} is empty, so no item keeps resume "
                                "state (delete the file to get a new secret; workspaces are then new too)")

    def _meet_earlier_run(self) -> None:
        """Configure time: what this session does with an earlier run of its id (issue 19).

        ``--forall-resume`` needs the run to exist (nothing is made otherwise) and takes it over, as does
        ``--forall-run-exists=continue``; both read its final rows now, before any worker starts, so every worker
        reports them as recorded. A plain ``--forall-run-id`` of an existing run is refused, and ``restart``
        moves it aside, once a forall item is selected (:meth:`ensure_run_dir`): plain tests still run.
        """
        from pytest_forall.plugin.options import option_value, resolved_options

        options = resolved_options(self.config)
        exists = is_run(self.run_dir)
        if options["resume"]:
            if not exists:
                raise pytest.UsageError(f"{option_value(self.config, 'resume')[1]} {self.run_id}: no run "
                                        f"{self.run_id} in {self.run_dir.parent} (it has no {self.run_id}/run.json "
                                        f"or {self.run_id}/{RESULTS_FILE})")
            self.mode = "resume"
        elif exists:
            self.mode = str(options["run_exists"])
        if self.mode not in ("resume", "continue"):
            return
        self._claim()
        self._take_selection()
        path = self.run_dir / RESULTS_FILE
        if path.is_file():
            recorded = read_results(path)
            self.notices += [n for n in recorded.notices() if n not in self.notices]
            self.recorded_ids = {str(row["nodeid"]) for row in recorded.rows}
            self.final_ids = {str(row["nodeid"]) for row in recorded.rows if is_final(str(row["outcome"]))}
            self.carried = {nodeid: row for nodeid, row in recorded.latest().items() if is_final(str(row["outcome"]))}

    def _take_selection(self) -> None:
        """Resume or continue (the run is claimed): this session selects the run's items (issue 33). A part of the
        selection it does not give is the run's; one it gives differently is refused, unless ``--forall-selection=new``
        asks for this session's own (which then becomes the run's)."""
        from pytest_forall.plugin.options import option_value, resolved_options
        from pytest_forall.plugin.selection import apply_selection, given_selection

        given = given_selection(self.config)
        if resolved_options(self.config)["selection"] == "new":
            self.selection = given
            return
        recorded = recorded_selection(read_meta(self.run_dir))
        effective, differ = merge_selection(recorded, given)
        if effective["project"] != given["project"]:
            differ.append("project")  # a project is collected by its own configure step: it must be given again
        if differ:
            self.owner.release()  # not registered yet: no pytest_unconfigure would release it
            source = option_value(self.config, "resume" if self.mode == "resume" else "run_id")[1]
            flags = " ".join(dict.fromkeys(SELECTION_FLAGS[part] for part in differ))
            raise pytest.UsageError(
                f"{source}: this session selects {describe_selection(given, differ, absent=True)} where run "
                f"{self.run_id} selected {describe_selection(recorded, differ, absent=True)} (the run's selection: "
                f"{describe_selection(recorded)}); give the run's {flags} or leave them out to resume its items, or add "
                "--forall-selection=new to select anew on purpose (widening or narrowing the run)")
        apply_selection(self.config, effective)
        self.selection = effective
        shard = resolved_options(self.config)["shard"]
        self.shard = parse_shard(shard) if shard else None

    def _claim(self) -> None:
        """Own the run directory (it exists) for this process's life, or one error naming the live owner."""
        from pytest_forall.plugin.options import option_value

        try:
            self.owner.acquire()
        except RunBusy as exc:
            source = option_value(self.config, "resume" if self.mode == "resume" else "run_id")[1]
            raise pytest.UsageError(f"{source}: run {self.run_id} ({self.run_dir}) is in use {exc}; wait for it to "
                                    "end or stop it") from None
        except OSError as exc:
            raise pytest.UsageError(self._cannot_write(str(exc.strerror or exc))) from None

    def _exists_message(self) -> str:
        from pytest_forall.plugin.options import option_value

        try:
            meta = json.loads((self.run_dir / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = None
        finished = moment(meta, "finished") if isinstance(meta, dict) else None
        state = (f"finished {utc_text(finished)}, exit {meta.get('exitstatus')}"
                 if isinstance(meta, dict) and finished is not None else "not finished")
        return (f"{option_value(self.config, 'run_id')[1]}: run {self.run_id} already exists ({self.run_dir}, {state}); "
                f"--forall-resume={self.run_id} finishes it, --forall-run-exists=continue (ini forall_run_exists) "
                "adds this session to it, --forall-run-exists=restart moves it aside and starts afresh")

    def _cannot_write(self, problem: str) -> str:
        from pytest_forall.plugin.options import option_value

        return f"{option_value(self.config, 'reports')[1]}: cannot write the run directory {self.run_dir}: {problem}"

    def ensure_run_dir(self, selected: int, carried: int = 0) -> None:
        """Controller, once a forall item is selected and before it runs: the run directory, owned by this
        process, with ``.secret`` and this session in ``run.json`` (``forall watch`` reads it); a session without
        forall items makes nothing. A run of the same id is refused, continued or moved aside here."""
        if self.created:
            self.write_run_meta(selected=selected, carried=carried)
            return
        try:
            self._make_run_dir(selected, carried)
        except pytest.UsageError as exc:
            self.refused = str(exc)  # said in the summary, before pytest's closing "N deselected in 1.6s" line
            raise
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:  # only a session that makes (or continues) a run says so (issue 33, item 4)
            terminal.write_line(f"forall: run {self.run_id} ({self.mode}) -> {self.run_dir}")

    def _make_run_dir(self, selected: int, carried: int) -> None:
        problem = run_dir_problem(self.run_dir)
        kept = b""
        if problem is None:
            try:
                self.run_dir.mkdir(parents=True, exist_ok=True)
                self._claim()
                if self.mode == "new" and is_run(self.run_dir):  # a run of this id began after configure time
                    self.mode = "refuse"
                if self.mode == "refuse":
                    self.owner.release()
                    raise pytest.UsageError(self._exists_message())
                if self.mode == "restart" and is_run(self.run_dir):
                    moved = move_aside(self.run_dir)
                    earlier, self.owner = self.owner, RunOwner(self.run_dir)
                    self.run_dir.mkdir()
                    self._claim()
                    earlier.release()
                    self.notices.append(f"--forall-run-exists=restart: the earlier run {self.run_id} was moved "
                                        f"to {moved}")
                kept = load_secret(self.run_dir / ".secret", self.secret())
                self.log.begin(self._session(selected, carried))
            except OSError as exc:
                problem = str(exc.strerror or exc)
        if problem is None and kept != self.secret():
            problem = f"{self.run_dir / '.secret'} was written by another process during this run"
        if problem is not None:
            raise pytest.UsageError(self._cannot_write(problem))
        self.created = True

    # -- worker side ------------------------------------------------------------------------------

    def secret(self) -> bytes:
        """Run secret for opaque workspace names and state HMACs; kept in the run dir, never in a workspace.

        Chosen by the controller at configure time; a worker not given it reads (or makes) the file."""
        if self._secret is None:
            self._secret = load_secret(self.run_dir / ".secret")
        return self._secret

    def item_dirname(self, nodeid: str) -> str:
        return nodeid.rsplit("::", 1)[-1].replace("/", "_").replace("[", "-").replace("]", "")

    def record(self, result: dict[str, Any]) -> None:
        """Append one line to results.jsonl; only the controller writes it (results arrive in the reports).

        A row that cannot be written stops the run with that message: going on would lose rows. The file is opened
        once per session (append only, one ``write`` per row): the controller holds the run's owner lock, so no
        other process appends to it meanwhile, and a row is in the file as soon as its ``write`` returns.
        """
        path = self.run_dir / "results.jsonl"
        nodeid, final = str(result.get("nodeid")), is_final(str(result.get("outcome")))
        result.setdefault("recorded_at", utc_text(time.time()))  # when the row was written (ISO 8601 UTC)
        if final and nodeid in self.final_ids:
            self.notices.append(f"{nodeid}: a second final result ({result.get('outcome')}) was not recorded; "
                                "the run's first final row stands")
            return
        try:
            if self._results is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._results = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
                size = os.fstat(self._results).st_size
                # after a writer killed mid-line, the row starts on a line of its own (else both are lost)
                self._torn = size > 0 and os.pread(self._results, 1, size - 1) != b"\n"
            line = memoryview((("\n" if self._torn else "") + json.dumps(result, sort_keys=True) + "\n").encode())
            self._torn = True  # until the whole line is in: a failed write leaves a torn line behind
            while line:
                line = line[os.write(self._results, line):]
            self._torn = False
        except OSError as exc:
            pytest.exit(f"forall: cannot record the result of {result.get('nodeid')} in {path}: "
                        f"{exc.strerror or exc}; the run stops so no result is lost", returncode=4)
        if final:
            self.final_ids.add(nodeid)

    def close_results(self) -> None:
        if self._results is not None:
            os.close(self._results)
            self._results = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if call.when == "call" and RESULT_KEY in item.stash:
            result: dict[str, Any] = item.stash[RESULT_KEY]
            report.forall = dict(result)
            task = item.stash.get(TASK_KEY, None)
            if report.skipped and isinstance(report.longrepr, tuple) and task is not None:
                # where a skip points (terminal -rs, JUnit): the problem's file and theorem, not this plugin's line
                report.longrepr = (*problem_location(task, str(self.config.rootpath)), skip_reason(result))
        return report

    # -- controller side --------------------------------------------------------------------------

    def _session(self, selected: int, carried: int) -> dict[str, Any]:
        """This session's entry of ``run.json``: how it was started and what it selected."""
        from pytest_forall.plugin.options import resolved_options
        from pytest_forall.plugin.selection import given_selection

        option = self.config.option
        return {"mode": self.mode, "argv": [str(a) for a in self.config.invocation_params.args],
                "keyword": str(getattr(option, "keyword", "") or ""),
                "markexpr": str(getattr(option, "markexpr", "") or ""),
                "shard": str(resolved_options(self.config)["shard"] or ""), "selected": selected, "carried": carried,
                "selection": self.selection if self.selection is not None else given_selection(self.config)}

    def write_run_meta(self, **fields: Any) -> None:
        """``run.json``: this session's entry (and the top-level fields ``forall watch`` reads) updated."""
        self.log.update(**fields)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Without xdist (or under ``--co``, which xdist leaves to the controller): nothing to make unless items run."""
        selected = [item.nodeid for item in session.items if is_forall(item.nodeid)]
        self.selected_ids.update(selected)
        if selected and not hasattr(self.config, "workerinput") and not self.config.option.collectonly:
            self.ensure_run_dir(len(selected), sum(1 for nodeid in selected if nodeid in self.carried))

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Keep this shard's items (--forall-shard). A resumed run's final items stay selected: they are
        reported as recorded (:data:`carried`), not run again, so the reports cover the run."""
        if self.shard is not None:
            k, n = self.shard
            tasks = {id(item): item.stash.get(TASK_KEY, None) for item in items}
            other = [item for item in items if (task := tasks[id(item)]) is not None
                     and shard_of(task_key(task.suite, task.track, task.task_id), n) != k]
            if other:
                config.hook.pytest_deselected(items=other)
                dropped = {id(item) for item in other}
                items[:] = [item for item in items if id(item) not in dropped]

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if is_forall(nodeid):
            self.started.add(nodeid)
            if hasattr(self.config, "workerinput") and nodeid not in self.carried:
                try:  # a worker keeps its run owned while it runs items, even past its controller's death
                    self.worker_hold.take(self.run_dir)
                except OSError:
                    pass  # a remote worker's own disk: the item reports any real problem writing there

    @pytest.hookimpl(tryfirst=True)  # before junitxml reads the teardown report's properties
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "forall", None)
        if hasattr(self.config, "workerinput"):
            return
        if report.failed and not is_forall(report.nodeid):
            self.other_failed = True  # a plain test of the same session: the gate does not hide it
        if report.when == "call" and isinstance(payload, dict):
            carried = bool(payload.get("carried")) and report.nodeid in self.carried
            row = {**self.carried[report.nodeid], "carried": True} if carried else dict(payload)
            if self.baseline is not None:
                annotate(self.baseline, row, self.require_strict)
                self.changes[report.nodeid] = row["change"]
            if not carried:  # an earlier session's row is in results.jsonl already
                self.record(row)
            self.results.append(row)
            mark_junit(self.config, report, str(row.get("outcome")))
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
        # the run is announced when it is made (:meth:`ensure_run_dir`): a session may select no forall item
        return f"forall: frontend={options['frontend']} sandbox={options['sandbox']} require={options['require']}"

    def counts(self) -> Counter[str]:
        return Counter(str(r.get("outcome")) for r in self.results)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if not hasattr(config, "workerinput") and self.refused:
            terminalreporter.write_line(f"forall: no run was made and no item ran (exit 4): {self.refused}")
            return
        if hasattr(config, "workerinput") or not (self.results or self.started):
            return
        from pytest_forall.plugin.options import resolved_options

        tr = terminalreporter
        tr.section("forall summary")
        elapsed = time.monotonic() - self.session_started
        accounted = accounting_lines(self.accounting) if self.accounting is not None else []
        lines = self.coverage_lines() + self.not_reached_lines() + gate_lines(self.results) + accounted + summary_lines(
            self.results, self.missing(), self.run_dir, self.notices, elapsed=elapsed,
            cache_mode=resolved_options(config)["cache"])
        for line in lines + ([self.gate_verdict] if self.gate_verdict else []):
            tr.write_line(line)

    def coverage_lines(self) -> list[str]:
        """On a resumed or continued run, what this session's reports (terminal, JUnit, exit status) cover."""
        if self.mode not in ("resume", "continue"):
            return []
        carried = sum(1 for r in self.results if r.get("carried"))
        reported = {str(r.get("nodeid")) for r in self.results}
        left = len(self.recorded_ids - (self.selected_ids or reported))
        return [f"run {self.run_id} continued: this session reports {len(self.results)} items: {carried} as recorded "
                f"by earlier sessions (not re-run) and {len(self.results) - carried} run now; "
                + (f"{left} items recorded in the run but not selected now are in no report of this session"
                   if left else "every item recorded in the run is in this session's reports")]

    def not_reached(self) -> list[str]:
        """Items this session selected but never started (it was interrupted first): no row, nothing to report."""
        reported = {str(r.get("nodeid")) for r in self.results}
        return sorted(self.selected_ids - reported - self.started)

    def not_reached_lines(self) -> list[str]:
        left = self.not_reached()
        if not left:
            return []
        shown = ", ".join(left[:5]) + (" …" if len(left) > 5 else "")
        one = len(left) == 1
        return [(f"{len(left)} selected {'item was' if one else 'items were'} not reached (the session ended first): "
                 f"--forall-resume {self.run_id} runs {'it' if one else 'them'}: {shown}")]

    def missing(self) -> list[str]:
        reported = {r.get("nodeid") for r in self.results}
        return sorted(n for n in self.started if n not in reported)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):
            return
        counts = self.counts()
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:  # pytest's own status, with or without xdist
            self._report_unreached_carried()
            if self.created:
                self.write_run_meta(finished=utc_text(time.time()), exitstatus=int(session.exitstatus))
            _forget_caught_interrupt()
            return
        if self.expected is not None and len(self.results) + len(self.missing()) < self.expected:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # workers lost reports: never pass silently
        if self.missing() and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.require_strict and counts[RULES_ONLY] and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.results and counts[INFRA] == len(self.results) and session.exitstatus == 0:
            session.exitstatus = EXIT_ALL_INFRA
        if self.gate == "regressions" and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED,
                                                                  EXIT_ALL_INFRA):  # all infra: the change's break?
            session.exitstatus = self._gate_status()
            self.gate_verdict = self._gate_line(int(session.exitstatus))
        if self.created and self.accounting is not None:
            self._write_gate(int(session.exitstatus))
        if self.created:
            self.write_run_meta(finished=utc_text(time.time()), exitstatus=int(session.exitstatus))

    def _report_unreached_carried(self) -> None:
        """An interrupted session still reports the selected items the run had finished before (as recorded), even
        those it never reached: their outcomes and findings are known, so its summary does not lose them."""
        reported = {str(r.get("nodeid")) for r in self.results}
        for nodeid in sorted(self.selected_ids & set(self.carried)):
            if nodeid not in reported:
                self.results.append({**self.carried[nodeid], "carried": True})

    def _gate_line(self, status: int) -> str:
        """What the gate decided and why, so exit 0 under "2 failed" is explained on the terminal."""
        regressed = sorted(str(r.get("nodeid")) for r in self.results if r.get("change") == "regressed")
        known = sum(1 for r in self.results if r.get("outcome") == FAILED and r.get("change") != "regressed")
        why = []
        if regressed:
            more = " …" if len(regressed) > 3 else ""
            why.append(f"{len(regressed)} regressed ({', '.join(regressed[:3])}{more})")
        found = self.accounting
        if found is not None and found.lost:
            gone = [f"{found.name(k)} {found.how(k)}" for k in found.lost]
            why.append(f"{len(gone)} baseline pass(es) lost ({', '.join(gone[:5])}{' …' if len(gone) > 5 else ''})")
        broken = sorted({str(r["breaks_build"]) for r in self.results if r.get("breaks_build")})
        if broken:
            why.append(f"the change breaks the build ({'; '.join(shorten(b, 200) for b in broken[:3])})")
        lost = self.expected is not None and len(self.results) + len(self.missing()) < self.expected
        if self.missing() or lost:
            why.append("items lost their reports")
        if self.other_failed:
            why.append("a plain test failed")
        verdict = "FAILED" if status == int(pytest.ExitCode.TESTS_FAILED) else (
            "PASSED" if status == int(pytest.ExitCode.OK) else f"exit {status}")
        detail = "; ".join(why) if why else "no regression against the baseline"
        if known and not regressed:
            detail += f"; {known} failed without regressing (not failing the run)"
        return f"gate (--forall-gate=regressions): {verdict}: {detail}; exit status {status}"

    def _write_gate(self, status: int) -> None:
        """``gate.json`` in the run directory: every baseline item without a row accounted for, the files the change
        broke, and the gate's verdict (what CI keeps besides results.jsonl and JUnit)."""
        from pytest_forall.plugin.options import resolved_options

        assert self.accounting is not None
        record = {"gate": self.gate, "verdict": self.gate_verdict, "exitstatus": status,
                  "baseline": str(resolved_options(self.config)["baseline"]), **self.accounting.to_json(),
                  "breaks_build": sorted({str(r["breaks_build"]) for r in self.results if r.get("breaks_build")}),
                  "regressed": sorted(str(r.get("task_id")) for r in self.results if r.get("change") == "regressed")}
        try:
            (self.run_dir / "gate.json").write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
        except OSError as exc:
            self.notices.append(f"cannot write {self.run_dir / 'gate.json'}: {exc.strerror or exc}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The session is over: the run is no longer owned (a process that dies drops the lock all the same)."""
        self.close_results()
        self.owner.release()
        self.worker_hold.release()

    def _gate_status(self) -> int:
        """Under --forall-gate=regressions: fail on a regression or a lost report, never on a known failure."""
        lost = self.expected is not None and len(self.results) + len(self.missing()) < self.expected
        if lost or self.other_failed or self.missing() or any(r.get("change") == "regressed" for r in self.results):
            return int(pytest.ExitCode.TESTS_FAILED)
        if (self.accounting is not None and self.accounting.lost) or any(r.get("breaks_build") for r in self.results):
            return int(pytest.ExitCode.TESTS_FAILED)  # a proof the baseline had is gone, or the change broke a file
        if self.results and all(r.get("outcome") == INFRA for r in self.results):
            return EXIT_ALL_INFRA
        return int(pytest.ExitCode.OK)


class GateAccounting:
    """Against a baseline: every collected forall item seen before any deselection, and, once the items have run,
    every baseline item accounted for (present, removed, renamed, now admitted, not selected: core/gating.py), with
    the lists added to the JUnit file's test-suite properties (``forall.gate.*``) before junitxml writes it."""

    def __init__(self, reporter: ForallReporter) -> None:
        self.reporter = reporter

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> Any:
        for item in items:  # before -m, -k, --forall-shard or any other plugin deselects
            task = item.stash.get(TASK_KEY, None)
            if task is not None and is_forall(item.nodeid):
                self.reporter.collected[task_key(task.suite, task.track, task.task_id)] = {
                    "nodeid": item.nodeid, "admitted": item.get_closest_marker("admitted") is not None}
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:  # the controller collects nothing: it reads this at pytest_testnodedown
            workeroutput["forall_collected"] = self.reporter.collected
        return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        reporter = self.reporter
        if hasattr(reporter.config, "workerinput") or reporter.baseline is None:
            return
        from pytest_forall.plugin.options import resolved_options

        reporter.accounting = found = account(reporter.baseline, reporter.results, reporter.collected,
                                              reporter.require_strict, reporter.allowed)
        try:  # junitxml's own object (what ``record_testsuite_property`` writes to)
            from _pytest.junitxml import xml_key
        except ImportError:  # another pytest: gate.json and the summary still say it
            return
        xml = reporter.config.stash.get(xml_key, None)
        if xml is not None:
            record = found.to_json()
            for name in ("removed", "now_admitted", "lost", "allowed"):
                xml.add_global_property(f"forall.gate.{name}", ",".join(record[name]))
            xml.add_global_property("forall.gate.renamed", ",".join(f"{a}->{b}" for a, b in record["renamed"].items()))
            xml.add_global_property("forall.gate.baseline", str(resolved_options(reporter.config)["baseline"]))


class ShortSummary:
    """pytest's short test summary, completed with the outcomes it does not know (registered next to the reporter)."""

    def __init__(self, reporter: ForallReporter) -> None:
        self.reporter = reporter

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> Any:
        """Under ``-r`` (s, a or A), list infra, statement_false and vacuous items after pytest's short summary:
        they are pytest skips of categories of their own, which pytest's summary does not show."""
        result = yield
        chars = str(getattr(config.option, "reportchars", "") or "")
        if hasattr(config, "workerinput") or not any(c in chars for c in "saA"):
            return result
        listed = sorted((row for row in self.reporter.results
                         if row.get("outcome") in (INFRA, STATEMENT_FALSE, VACUOUS, INNER_VACUOUS)),
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
                                        f"{shorten(reason_after_stop(row))}")
        return result


class XdistHooks:
    """xdist-only hooks, registered only when xdist is installed (their specs exist only then)."""

    def __init__(self, reporter: ForallReporter) -> None:
        self.reporter = reporter

    def pytest_configure_node(self, node: Any) -> None:
        """Run id and secret for the worker: a remote one shares neither the controller's disk nor its run dir."""
        node.workerinput["forall_run_id"] = self.reporter.run_id
        node.workerinput["forall_secret"] = self.reporter.secret().hex()
        node.workerinput["forall_selection"] = self.reporter.selection
        node.workerinput["forall_carried"] = {nodeid: {k: row.get(k) for k in CARRIED_FIELDS}
                                              for nodeid, row in self.reporter.carried.items()}

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker is done: the items it collected (before deselection), for the gate's accounting."""
        collected = getattr(node, "workeroutput", {}).get("forall_collected")
        if isinstance(collected, dict):
            self.reporter.collected.update({str(k): dict(v) for k, v in collected.items()})

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """A worker died running ``crashitem``: record it as infra (resumable), unless its row already came."""
        reporter = self.reporter
        if not is_forall(crashitem) or any(row.get("nodeid") == crashitem for row in reporter.results):
            return  # a plain test's crash is pytest's failure, not a forall row
        name = crashitem.rsplit("::", 1)[-1]
        row = {"nodeid": crashitem, "task_id": name.split("[", 1)[0], "run_id": reporter.run_id,
               "outcome": INFRA, "stop": "worker-crashed",
               "reason": f"worker-crashed: {shorten(str(report.longrepr), 300)}"}
        reporter.record(row)
        report.forall = row  # type: ignore[attr-defined]
        reporter.results.append(row)

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Called before any item is scheduled: the controller makes the run dir here, if a forall item is selected."""
        count = sum(1 for i in ids if is_forall(i))
        self.reporter.selected_ids.update(i for i in ids if is_forall(i))
        self.reporter.expected = max(self.reporter.expected or 0, count)
        if self.reporter.expected:
            self.reporter.ensure_run_dir(self.reporter.expected, sum(1 for i in ids if i in self.reporter.carried))


def _forget_caught_interrupt() -> None:
    """Keep Ctrl-C's exit status 2 under ``python -m pytest``.

    CPython 3.11 flags a KeyboardInterrupt that leaves source run by ``exec`` (a dataclass built during an
    import) as unhandled although pytest caught it, and the interpreter then ends by SIGINT instead of exiting
    2; every ``exec`` of source that completes clears that flag (Python/pythonrun.c, ``run_eval_code_obj``).
    """
    exec("")  # noqa: S102 - a fixed empty string
