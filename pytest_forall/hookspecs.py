"""The ``pytest_forall_*`` hooks through which benchmark adapters, prover backends and frontends are found.

The built-in adapters, provers and frontends are ordinary plugins of these hooks (registered by
:mod:`pytest_forall.plugin`), so a third party adds one the same way: a module implementing the hook,
published under the ``pytest11`` entry point (for pytest runs) and the ``pytest_forall`` entry point
(for the ``forall`` command line). Built-in implementations are ``trylast``, so yours wins.

Inside pytest the hooks are called through ``item.ihook``/``collector.ihook``, so an implementation in
``benchmarks/<suite>/conftest.py`` applies to that suite only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pathlib import Path

    from .actor import Frontend
    from .model import Task
    from .provers import Prover

hookspec = pluggy.HookspecMarker("pytest")


@hookspec(firstresult=True)
def pytest_forall_load_tasks(path: Path, manifest: dict[str, Any], options: dict[str, Any]) -> list[Task] | None:
    """Return the tasks of the suite described by ``manifest`` (a parsed ``*.forall.toml``), or None
    if ``manifest["adapter"]`` is not yours.

    ``options`` holds the resolved ``forall_*`` settings (plain values). Malformed inputs must not
    raise: return a :class:`Task` with ``problem`` set so that item fails with a message naming the file.
    Raise :class:`pytest_forall.errors.UsageError` when the suite cannot be located at all.
    """


@hookspec(firstresult=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> Prover | None:
    """Return the prover backend called ``name`` (``rocq``, ``lean``, …), or None."""


@hookspec(firstresult=True)
def pytest_forall_make_frontend(name: str, options: dict[str, Any]) -> Frontend | None:
    """Return the frontend called ``name`` (``replay``, ``portfolio``, ``claude-code``, …), or None."""


@hookspec(firstresult=True)
def pytest_forall_actor_prompt(task: Task, options: dict[str, Any]) -> str | None:
    """Return the first prompt for the actor on ``task``; the default is per suite."""


@hookspec
def pytest_forall_item_finished(nodeid: str, result: dict[str, Any]) -> None:
    """Observe one item's final result (the same JSON-primitive dict written to results.jsonl)."""
