"""The ``pytest11`` entry point: options, markers, fixtures and the run-level plugin object.

Kept thin: settings live in :mod:`pytest_forall.plugin.options`, the item body in
:mod:`pytest_forall.plugin.runner`, outcomes and reports in :mod:`pytest_forall.plugin.report`, the protocol in
:mod:`pytest_forall.core.protocol`. Heavy imports (pexpect, junitparser, agent code) happen only when an item runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core import registry
from pytest_forall.core.errors import UsageError
from pytest_forall.core.model import Task
from pytest_forall.plugin.collect import (  # noqa: F401  (hookimpls)
    ForallItem,
    pytest_collect_file,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    unfreeze_after_session,
)
from pytest_forall.plugin.options import OPTIONS, TASK_KEY, option_value, resolved_options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("forall", "pytest-forall: proofs as tests")
    for opt in OPTIONS:
        flag = "--forall-" + opt.name.replace("_", "-")
        default_note = f" (default: {opt.default})" if opt.default else ""
        group.addoption(flag, dest=f"forall_{opt.name}", default=None, metavar=opt.name.upper(),
                        choices=list(opt.choices) or None, help=opt.help + default_note,
                        action="append" if opt.repeated else "store")
        parser.addini(f"forall_{opt.name}", opt.help, type="linelist" if opt.repeated else None, default=None)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """pytest chose its rootdir before this plugin's options existed: settled again now (issue 32)."""
    from pytest_forall.plugin.options import settle_rootdir

    settle_rootdir(early_config, parser, args)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(registry)


@pytest.hookimpl(tryfirst=True)  # before pytest's own plugins register their cleanups (gc at exit: see collect)
def pytest_configure(config: pytest.Config) -> None:
    config.add_cleanup(unfreeze_after_session)
    config.addinivalue_line("markers", "forall: a pytest-forall task item")
    config.addinivalue_line("markers", "coq: a task of the Rocq/Coq track")
    config.addinivalue_line("markers", "lean4: a task of the Lean 4 track")
    config.addinivalue_line("markers", "admitted: a project item whose proof the project admits (--forall-project)")
    from pytest_forall.core.language import language, language_names, marker_names

    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    for prover in language_names():  # each pack's name and aliases select its items (see collect)
        for name in (n.replace("-", "_") for n in marker_names(prover)):  # as collect adds them
            if name not in known:
                config.addinivalue_line("markers", f"{name}: a task proved by {language(prover).title}")
    config.addinivalue_line("markers", "forall_budget(samples=None, rounds=None, compiles=None, review_rounds=None, "
                                       "wall=None, usd=None): per-item budget; overrides --forall-* options and ini")
    from pytest_forall.plugin import project

    for module in [*registry.builtin_modules(), project]:
        if not config.pluginmanager.is_registered(module):
            config.pluginmanager.register(module, f"forall-builtin-{module.__name__}")
    from pytest_forall.plugin.options import check_configuration
    from pytest_forall.plugin.report import ForallReporter, GateAccounting, ShortSummary

    check_configuration(config)
    reporter = ForallReporter(config)
    if not hasattr(config, "workerinput"):
        reporter.check_writable()
    config.pluginmanager.register(reporter, "forall-reporter")
    config.pluginmanager.register(ShortSummary(reporter), "forall-short-summary")
    config.pluginmanager.register(GateAccounting(reporter), "forall-gate-accounting")
    if config.pluginmanager.hasplugin("xdist"):
        from pytest_forall.plugin.report import XdistHooks

        config.pluginmanager.register(XdistHooks(reporter), "forall-xdist")


# --- fixtures ------------------------------------------------------------------------------------

@pytest.fixture
def forall_task(request: pytest.FixtureRequest) -> Task:
    """The task this item proves (a frozen :class:`pytest_forall.Task`)."""
    node = request.node
    if not isinstance(node, ForallItem):
        raise UsageError("forall_task is only available to pytest-forall task items")
    return node.stash[TASK_KEY]


@pytest.fixture
def forall_workspace(request: pytest.FixtureRequest, forall_task: Task) -> Path:
    """The directory the actor works in, under an opaque name: the protocol makes it when a sample starts (only the
    problem file, and TASK.md for a coding agent; :func:`pytest_forall.core.workspace.prepare`), so an item whose
    verdict comes from the cache makes none."""
    from pytest_forall.core import workspace as ws
    from pytest_forall.plugin.report import ForallReporter

    reporter: ForallReporter = request.config.pluginmanager.getplugin("forall-reporter")
    return reporter.run_dir / "ws" / ws.opaque_name(reporter.secret(), request.node.nodeid)


@pytest.fixture
def forall_prover(request: pytest.FixtureRequest, forall_task: Task) -> Any:
    """The prover backend for this task's track (override in a suite's conftest.py to swap it)."""
    options = resolved_options(request.config)
    prover = request.node.ihook.pytest_forall_make_prover(name=forall_task.prover, options=options)
    if prover is None and not forall_task.problem:
        raise UsageError(f"no installed prover backend is called {forall_task.prover!r}")
    return prover


def _make_frontend(request: pytest.FixtureRequest, name: str, source: str) -> Any:
    options = resolved_options(request.config)
    frontend = request.node.ihook.pytest_forall_make_frontend(name=name, options=options)
    if frontend is None:
        raise pytest.UsageError(f"{source}: no installed frontend is called {name!r}")
    return frontend


@pytest.fixture
def forall_frontend(request: pytest.FixtureRequest) -> Any:
    """The actor's frontend, from --forall-frontend / forall_frontend."""
    name, source = option_value(request.config, "frontend")
    return _make_frontend(request, str(name), source)


@pytest.fixture
def forall_reviewer(request: pytest.FixtureRequest, forall_frontend: Any) -> Any:
    """The fresh reviewer's frontend; defaults to the actor's for coding agents and to none otherwise."""
    name, source = option_value(request.config, "reviewer")
    if name in (None, ""):
        return forall_frontend if getattr(forall_frontend, "is_agent", False) else None
    if name == "none":
        return None
    return _make_frontend(request, str(name), source)


