"""Collection: a ``*.forall.toml`` suite manifest becomes one ``pytest.Function`` item per task.

Items are real ``pytest.Function``s (``callobj`` = :func:`run_forall_item`), so fixtures, markers,
``-k``, ``-m``, ``--lf``, ``-n`` and JUnit work as pytest users expect. A manifest or adapter problem
(unreadable manifest, unknown adapter or prover, missing or empty benchmark root) is one collection error
naming the file and the fix: never an item (which ``-m`` could deselect or count as a failed proof), never
a traceback.
"""

from __future__ import annotations

import difflib
import gc
import tomllib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.errors import UsageError
from pytest_forall.core.language import marker_names
from pytest_forall.core.model import Task
from pytest_forall.plugin.options import SUITE_BUDGET_KEY, TASK_KEY

SUITE_SUFFIX = ".forall.toml"


class ForallItem(pytest.Function):
    """One task. ``reportinfo`` points at the problem file, not at this plugin's code."""

    @property
    def forall_task(self) -> Task:
        return self.stash[TASK_KEY]

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        task = self.stash.get(TASK_KEY, None)
        return (task.source_path if task else self.path), None, self.name

    def carried_row(self) -> dict[str, Any] | None:
        """The final row an earlier session of a resumed run recorded for this item, if any."""
        reporter = self.config.pluginmanager.get_plugin("forall-reporter")
        carried: dict[str, dict[str, Any]] = getattr(reporter, "carried", {})
        return carried.get(self.nodeid)

    def setup(self) -> None:
        if self.carried_row() is None:  # a carried item needs no workspace, prover or frontend
            super().setup()

    def runtest(self) -> None:
        row = self.carried_row()
        if row is None:
            super().runtest()
            return
        from pytest_forall.plugin.runner import report_carried

        report_carried(self, row)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        from pytest_forall.plugin.report import ForallFailure

        if isinstance(excinfo.value, (ForallFailure, UsageError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def run_forall_item(request: pytest.FixtureRequest, forall_task: Task, forall_workspace: Path,
                    forall_prover: Any, forall_frontend: Any, forall_reviewer: Any) -> None:
    """The test function every task item runs: drive the protocol and turn its outcome into a report."""
    from pytest_forall.plugin.runner import finish_item

    finish_item(request, forall_task, forall_workspace, forall_prover, forall_frontend, forall_reviewer)


class ForallSuite(pytest.File):
    """A benchmark suite, described by a manifest such as ``benchmarks/putnam/putnam.forall.toml``."""

    def _tasks(self) -> list[Task]:
        try:
            manifest = tomllib.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise self.CollectError(f"{self.path}: cannot read suite manifest: {exc}") from None
        if not isinstance(manifest.get("adapter"), str):
            raise self.CollectError(f"{self.path}: suite manifest has no `adapter = \"…\"` entry")
        from pytest_forall.plugin.options import resolved_options

        options = resolved_options(self.config)
        try:
            tasks = self.ihook.pytest_forall_load_tasks(path=self.path, manifest=manifest, options=options)
        except UsageError as exc:
            raise self.CollectError(f"{self.path}: {exc}") from None
        if tasks is None:
            raise self.CollectError(f"{self.path}: no installed adapter is called {manifest['adapter']!r}")
        if not tasks:
            raise self.CollectError(f"{self.path}: the {manifest['adapter']!r} adapter found no tasks "
                                    "(is the benchmark root the right directory, and not empty?)")
        for prover in sorted({t.prover for t in tasks}):  # only whether a backend exists: nothing is built yet
            if self.ihook.pytest_forall_make_prover(name=prover, options={**options, "check_only": True}) is None:
                raise self.CollectError(f"{self.path}: no installed prover backend is called {prover!r}")
        self.manifest = manifest
        return sorted(tasks, key=lambda t: (t.track, t.task_id))  # xdist needs one order on every worker

    def collect(self) -> Iterator[pytest.Item]:
        for task in self._tasks():
            item = ForallItem.from_parent(self, name=f"{task.task_id}[{task.track}]", callobj=run_forall_item)
            item.stash[TASK_KEY] = task
            item.add_marker(pytest.mark.forall)
            item.add_marker(getattr(pytest.mark, task.track.replace("-", "_")))
            for name in marker_names(task.prover):  # ``-m rocq`` and ``-m coq`` select the same items
                if name != task.track:
                    item.add_marker(getattr(pytest.mark, name.replace("-", "_")))
            for marker in task.meta.get("markers") or []:  # e.g. ``admitted`` (project suite)
                item.add_marker(getattr(pytest.mark, str(marker)))
            budget = getattr(self, "manifest", {}).get("budget")
            item.stash[SUITE_BUDGET_KEY] = dict(budget) if isinstance(budget, dict) else {}
            yield item


class ForallWarning(pytest.PytestWarning):
    """Input pytest-forall will not use as the user probably meant (shown in pytest's warnings summary)."""


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect: a file is stray only if no task of the suite has its name
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """One warning listing the files of ``--forall-proofs`` that a replaying frontend would never read.

    Under xdist every worker collects the same items: only the first (gw0) warns, and xdist forwards it.
    """
    from pytest_forall.plugin.options import resolved_options

    if getattr(config, "workerinput", {}).get("workerid", "gw0") != "gw0":
        return
    options = resolved_options(config)
    tasks = {item.stash[TASK_KEY].candidate_name: item.stash[TASK_KEY].task_id
             for item in items if TASK_KEY in item.stash}
    if not tasks or not options.get("proofs"):
        return
    frontend = config.hook.pytest_forall_make_frontend(name=str(options["frontend"]), options=options)
    if not getattr(frontend, "reads_proofs", False):
        return
    proofs = Path(str(options["proofs"])).expanduser()
    try:
        names = sorted(p.name for p in proofs.iterdir() if p.is_file() and not p.name.startswith((".", "README")))
    except OSError:
        return  # checked at configure time; a directory gone since then is the item's problem
    ids = sorted(set(tasks.values()))
    stray = [f"{name} (nearest task: {difflib.get_close_matches(name.rsplit('.', 1)[0], ids, 1, 0)[0]})"
             for name in names if name not in tasks]
    if stray:
        warnings.warn_explicit(ForallWarning(f"{len(stray)} file(s) match no collected task and are not replayed: "
                                             f"{'; '.join(stray)}"), ForallWarning, f"--forall-proofs {proofs}", 0)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the items are collected, freeze what is alive (``gc.freeze``) when they include forall items: the
    collected tasks (a project's file texts), items and modules live to the end of the session, yet every full garbage
    collection walked them again, the two during the run and the five pytest makes at exit (0.7-0.8 s of a warm run of
    Coquelicot's 1 743 items, #18). Undone at the end of the session (:func:`unfreeze_after_session`)."""
    if any(isinstance(item, ForallItem) for item in session.items):
        gc.freeze()


def unfreeze_after_session() -> None:
    """The cleanup :func:`pytest_collection_finish`'s freeze needs: registered when the session is configured, before
    pytest's own garbage collections at exit are (cleanups run last first), so it runs after them; a process that goes
    on (an in-process ``pytester`` run, an IDE) then collects its garbage again."""
    gc.unfreeze()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SUITE_SUFFIX):
        suite: ForallSuite = ForallSuite.from_parent(parent, path=file_path)
        return suite
    return None
