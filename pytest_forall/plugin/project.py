"""pytest glue of the any-project suite: the project directory collects its own items (no manifest on disk).

The suite itself (:mod:`pytest_forall.suites.project`) finds the holes and builds tasks without pytest; this
module turns ``--forall-project DIR`` into a collector and stores accepted proofs for replay.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.errors import UsageError
from pytest_forall.core.model import RULES_ONLY, STRICT, Task
from pytest_forall.core.prover import ToolchainProbeFailed
from pytest_forall.lang.project import SUITE, project_root


def _suite_collector() -> Any:
    from pytest_forall.plugin.collect import ForallSuite

    class ProjectSuite(ForallSuite):
        """The project's items, without a manifest on disk."""

        def _tasks(self) -> list[Task]:
            from pytest_forall.plugin.options import resolved_options

            options = resolved_options(self.config)
            self.manifest = {"adapter": SUITE}
            try:
                tasks = self.ihook.pytest_forall_load_tasks(path=self.path, manifest=self.manifest, options=options)
            except UsageError as exc:
                raise self.CollectError(f"--forall-project {self.path}: {exc}") from None
            except ToolchainProbeFailed as exc:  # the items' keys need the toolchain's version: none is infra
                raise self.CollectError(f"--forall-project {self.path}: infra, the toolchain gave no version for the "
                                        f"items' keys (asked again on the next run): {exc}") from None
            return sorted(tasks or [], key=lambda t: (t.track, t.task_id))

    return ProjectSuite


class ProjectDir(pytest.Dir):  # type: ignore[misc]  # pytest marks Dir final; only collect() is extended
    """The project directory: its forall items, then whatever pytest would collect there anyway."""

    def collect(self) -> Iterator[Any]:
        # The suite's path is the project directory (so the project's conftest.py files apply to its items);
        # its name and node id say "project.forall.toml", a manifest that does not exist on disk.
        yield _suite_collector().from_parent(self, path=self.path, name="project.forall.toml",
                                             nodeid=f"{self.nodeid}/project.forall.toml".lstrip("/"))
        yield from super().collect()


def _configured_project(config: pytest.Config) -> Path | None:
    from pytest_forall.plugin.options import resolved_options

    options = resolved_options(config)
    value = options.get("project")
    if not value:
        return None
    root = Path(str(value)).expanduser()  # relative: from where it was typed (resolved_options' project_base)
    return (root if root.is_absolute() else Path(str(options["project_base"])) / root).resolve()


def pytest_configure(config: pytest.Config) -> None:
    """``pytest --forall-project PATH`` alone collects PATH; with explicit paths, PATH is added to them."""
    from pytest_forall.lang.rocq.project.layout import declared_axioms
    from pytest_forall.plugin.options import option_value, resolved_options
    from pytest_forall.suites.project import build_command_problem, project_axioms_problem

    root = _configured_project(config)
    command, source = option_value(config, "project_build")
    axioms, axioms_source = option_value(config, "project_axioms")
    if root is None:
        if command:
            raise pytest.UsageError(f"{source}: a build command needs --forall-project PATH (the project it builds)")
        if axioms:
            raise pytest.UsageError(f"{axioms_source}: declared project axioms need --forall-project PATH (the "
                                    "project that declares them)")
        return
    if not config.pluginmanager.has_plugin("forall-proof-store"):
        config.pluginmanager.register(ProofStore(config), "forall-proof-store")
    if not config.pluginmanager.has_plugin("forall-patches"):
        from pytest_forall.plugin.patches import PatchWriter

        config.pluginmanager.register(PatchWriter(config), "forall-patches")  # forall apply's patches (#38)
    try:
        project = project_root(resolved_options(config))
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    problem = build_command_problem(str(command), project) if command not in (None, "") else ""
    if problem:
        raise pytest.UsageError(f"{source}: {problem}")
    problem = project_axioms_problem(declared_axioms(axioms), project) if axioms else ""
    if problem:
        raise pytest.UsageError(f"{axioms_source}: {problem}")
    args = [Path(a.split("::", 1)[0]).resolve() for a in config.args]
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(root)]
    elif not any(root == a or a in root.parents for a in args):
        config.args.append(str(root))


def _not_items_report(config: pytest.Config) -> list[str]:
    """Every proof of the project that is not an item, with the reason (library mode): as this process's collection
    found them, or read from the project's text where nothing was collected (the pytest-xdist controller)."""
    from pytest_forall.suites.project import NOT_ITEMS, not_items

    root = _configured_project(config)
    if root is None:
        return []
    from pytest_forall.plugin.options import resolved_options

    skipped = NOT_ITEMS[str(root)] if str(root) in NOT_ITEMS else not_items(root, resolved_options(config))
    if not skipped:
        return []
    lines = [f"forall project: {len(skipped)} proof(s) of {root} are not items:"]
    explained: set[str] = set()
    for name, reason in skipped:  # a long explanation once per kind (a library lists its obligations by the 100)
        head, sep, why = reason.partition(": ")
        if sep and len(why) > 80 and why in explained:
            lines.append(f"  {name}: {head} (why: as for the first one above)")
        else:
            explained.add(why)
            lines.append(f"  {name}: {reason}")
    return lines


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """The listing, once, after collection (a worker's report is not shown: the controller prints it)."""
    return [] if hasattr(config, "workerinput") else _not_items_report(config)


#: set once the pytest-xdist controller has printed the listing (one report per run, not one per worker)
_LISTED_KEY = pytest.StashKey[bool]()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under pytest-xdist the controller collects nothing itself: it prints the listing when the first worker has
    collected, once."""
    config = node.config
    if config.stash.get(_LISTED_KEY, False):
        return
    config.stash[_LISTED_KEY] = True
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in _not_items_report(config):
            reporter.write_line(line)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """pytest's own walk never enters the reports directory, the cache or any run directory (issue 32): runs pile up
    under ``reports/`` inside a project, and each holds copies of the project's files in its workspaces, which the
    walk would read at every collection."""
    from pytest_forall.core.runlog import is_run
    from pytest_forall.lang.project import RUN_MARKER
    from pytest_forall.plugin.options import resolved_options

    options = resolved_options(config)
    if str(collection_path) in (options["reports"], options["cache_dir"]):
        return True
    if (collection_path / RUN_MARKER).is_file() and is_run(collection_path):
        return True  # a run directory of another --forall-reports
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    root = _configured_project(parent.config)
    if root is not None and path.resolve() == root:
        return ProjectDir.from_parent(parent, path=path)
    return None


class ProofStore:
    """Writes every accepted project proof (from a frontend other than replay) to ``--forall-proofs``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_forall_item_finished(self, nodeid: str, result: dict[str, Any]) -> None:
        from pytest_forall.plugin.options import resolved_options

        options = resolved_options(self.config)
        if (result.get("suite") != SUITE or result.get("outcome") not in (STRICT, RULES_ONLY)
                or not options.get("proofs") or result.get("frontend") == "replay"):
            return
        accepted = Path(str(result.get("audit_dir", ""))) / "accepted"
        for produced in sorted(accepted.glob(f"{result['task_id']}.*")):
            if produced.suffix in (".v", ".lean"):
                store = Path(str(options["proofs"])).expanduser()
                store.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(produced, store / produced.name)
