"""The plugin registry: the ``pytest_forall_*`` hookspecs and the built-in plugins that implement them.

The built-in adapters, provers and frontends are ordinary plugins of these hooks (registered by
:mod:`pytest_forall.plugin`), so a third party adds one the same way: a module implementing the hook,
published under the ``pytest11`` entry point (for pytest runs) and the ``pytest_forall`` entry point
(for the ``forall`` command line). Built-in implementations are ``trylast``, so yours wins.

Inside pytest the hooks are called through ``item.ihook``/``collector.ihook``, so an implementation in
``benchmarks/<suite>/conftest.py`` applies to that suite only.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_forall.core.actor import Frontend
    from pytest_forall.core.language import Language
    from pytest_forall.core.model import Task
    from pytest_forall.core.prover import Prover

#: Marked with pytest's project name, so the same functions are hooks inside pytest and in the ``forall``
#: command's own plugin manager; backends use :data:`hookimpl` and need not import pytest.
hookspec = pluggy.HookspecMarker("pytest")
hookimpl = pluggy.HookimplMarker("pytest")

#: The built-in suites, language packs and frontends, registered like any third-party plugin (``trylast``).
BUILTIN_PLUGINS = (
    "pytest_forall.suites.putnam",
    "pytest_forall.suites.verisoftbench",
    "pytest_forall.suites.lean_eval",
    "pytest_forall.suites.project",
    "pytest_forall.lang.rocq",
    "pytest_forall.lang.lean",
    "pytest_forall.lang.rocq.backend",
    "pytest_forall.lang.lean.backend",
    "pytest_forall.lang.rocq.project",
    "pytest_forall.lang.rocq.project.prover",
    "pytest_forall.lang.lean.project",
    "pytest_forall.agents.replay",
    "pytest_forall.agents.portfolio",
    "pytest_forall.agents.claude_code",
    "pytest_forall.agents.codex",
    "pytest_forall.agents.opencode",
)


@hookspec(firstresult=True)
def pytest_forall_load_tasks(path: Path, manifest: dict[str, Any], options: dict[str, Any]) -> list[Task] | None:
    """Return the tasks of the suite described by ``manifest`` (a parsed ``*.forall.toml``), or None
    if ``manifest["adapter"]`` is not yours.

    ``options`` holds the resolved ``forall_*`` settings (plain values). Malformed inputs must not
    raise: return a :class:`Task` with ``problem`` set so that item fails with a message naming the file.
    Raise :class:`pytest_forall.core.errors.UsageError` when the suite cannot be located at all.
    """


@hookspec
def pytest_forall_languages() -> list[Language]:
    """Return the language packs this plugin provides (see :mod:`pytest_forall.core.language`)."""
    return []


@hookspec(firstresult=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> Prover | None:
    """Return the prover backend called ``name`` (``rocq``, ``lean``, …), or None.

    With ``options["check_only"]`` the caller (collection) only asks whether the backend exists: build nothing
    (no plugin, no toolchain probe); that instance never judges."""


@hookspec(firstresult=True)
def pytest_forall_make_frontend(name: str, options: dict[str, Any]) -> Frontend | None:
    """Return the frontend called ``name`` (``replay``, ``portfolio``, ``claude-code``, …), or None."""


@hookspec(firstresult=True)
def pytest_forall_actor_prompt(task: Task, options: dict[str, Any]) -> str | None:
    """Return the first prompt for the actor on ``task``; the default is per suite."""


@hookspec
def pytest_forall_item_finished(nodeid: str, result: dict[str, Any]) -> None:
    """Observe one item's final result (the same JSON-primitive dict written to results.jsonl)."""


def builtin_modules() -> list[Any]:
    """The built-in plugin modules that import here (an optional one may be absent from a slim install)."""
    modules = []
    for name in BUILTIN_PLUGINS:
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    return modules


def builtin_plugin_manager() -> pluggy.PluginManager:
    """A plugin manager with the forall hooks for the ``forall`` command (outside pytest).

    ``check_pending`` makes a misspelt third-party hook (``pytest_forall_make_prover2``) fail loudly instead
    of being ignored.
    """
    pm = pluggy.PluginManager("pytest")
    pm.add_hookspecs(sys.modules[__name__])
    for module in builtin_modules():
        pm.register(module)
    pm.load_setuptools_entrypoints("pytest_forall")
    pm.check_pending()
    return pm
