"""A run's selection on the pytest side (issue 33): what this session selects, and the run's recorded one applied.

A resume or ``--forall-run-exists=continue`` takes each part of the selection it does not give (paths, ``-k``,
``-m``, ``--forall-shard``, ``--forall-subset``) from the run's ``run.json`` (:mod:`pytest_forall.core.runlog`), on
the controller at configure time and on every xdist worker from ``workerinput`` (a worker parses the command line
again, so it would not see the controller's changes), so the session collects exactly the run's items.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.runlog import SELECTION


def given_selection(config: pytest.Config) -> dict[str, Any]:
    """This session's own selection: paths typed on the command line (relative to the rootdir), -k, -m, options."""
    from pytest_forall.plugin.options import resolved_options

    options = resolved_options(config)
    paths: list[str] = []
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        for arg in config.args:
            path, sep, rest = str(arg).partition("::")
            where = Path(config.invocation_params.dir, path).resolve()
            relative = os.path.relpath(where, config.rootpath) if where.is_relative_to(config.rootpath) else str(where)
            paths.append(Path(relative).as_posix() + sep + rest)
    option = config.option
    return {"paths": paths, "keyword": str(getattr(option, "keyword", "") or ""),
            "markexpr": str(getattr(option, "markexpr", "") or ""), "shard": str(options["shard"] or ""),
            "subset": str(options["subset"] or ""), "project": str(options["project"] or "")}


def apply_selection(config: pytest.Config, selection: dict[str, Any]) -> None:
    """Make this process collect ``selection``: its paths, -k and -m, and the options among its parts."""
    from pytest_forall.plugin.options import resolved_options

    if selection.get("paths"):
        config.args[:] = [str(config.rootpath / path) if not os.path.isabs(path.partition("::")[0]) else path
                          for path in selection["paths"]]
        config.args_source = pytest.Config.ArgsSource.ARGS
    config.option.keyword = str(selection.get("keyword") or "")
    config.option.markexpr = str(selection.get("markexpr") or "")
    options = resolved_options(config)
    for part in SELECTION[3:]:
        options[part] = selection.get(part) or options[part]
