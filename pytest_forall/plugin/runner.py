"""The body of every pytest-forall item: run the protocol, record the result, and turn its outcome into pytest's."""

from __future__ import annotations

import functools
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.cache import VerdictCache
from pytest_forall.core.model import FAILED, INFRA, INNER_VACUOUS, STATEMENT_FALSE, VACUOUS, Task
from pytest_forall.core.outcomes import shorten
from pytest_forall.plugin.options import item_budget, resolved_options
from pytest_forall.plugin.report import JUNIT_FIELDS, RESULT_KEY, ForallFailure, ForallReporter, junit_value
from pytest_forall.suites.upstream import upstream_url


def finish_item(request: pytest.FixtureRequest, task: Task, workspace: Path, prover: Any, frontend: Any,
                reviewer: Any) -> None:
    """Run the protocol for one item and raise/skip according to its outcome."""
    from pytest_forall.core.accept import BLOBS, AuditRecord
    from pytest_forall.core.budget import SpendLedger
    from pytest_forall.core.protocol import ItemContext, ItemRun

    item = request.node
    reporter: ForallReporter = request.config.pluginmanager.getplugin("forall-reporter")
    options = resolved_options(request.config)
    prompt = item.ihook.pytest_forall_actor_prompt(task=task, options=options)
    if prompt is not None:  # a suite's conftest (or a plugin) words the actor's first prompt
        options = {**options, "actor_prompt": prompt}
    items = reporter.run_dir / "items"
    # candidates kept once per reports directory (its content-addressed .blobs), linked from each record
    audit = AuditRecord(items / reporter.item_dirname(item.nodeid), task, blobs=reporter.run_dir.parent / BLOBS)
    ledger = SpendLedger(reporter.run_dir / "spend.json")
    from pytest_forall.isolation.sandbox import sandboxed_prover_runner

    ctx = ItemContext(task=task, workspace_root=workspace.parent, workspace_name=workspace.name, audit=audit,
                      prover=prover, frontend=frontend, reviewer=reviewer, budget=item_budget(item),
                      options=options, ledger=ledger,
                      run_usd=options["run_usd"] if options["run_usd"] not in (None, "") else None,
                      verify_timeout=float(options["timeout"]), run_secret=reporter.secret(),
                      sandbox_runner=sandboxed_prover_runner, open_tools=open_item_tools,
                      cache=verdict_cache(options, frontend))
    run = ItemRun(ctx)
    result = run.run()
    # builtin types only: it crosses execnet to the controller (decoded from result.json's text, not encoded again)
    result = json.loads(run.result_json[1] if run.result_json and run.result_json[0] is result else json.dumps(result))
    result["nodeid"] = item.nodeid
    result["run_id"] = reporter.run_id
    result["sandbox"] = options["sandbox"]
    result["audit_dir"] = str(resolved(items) / audit.directory.name)
    result["audit_host"] = socket.gethostname()
    result["upstream"] = upstream_url(task.source_path)  # the problem file upstream, for an issue's table
    result["worker"] = str(getattr(request.config, "workerinput", {}).get("workerid", "main"))
    item.ihook.pytest_forall_item_finished(nodeid=item.nodeid, result=result)
    conclude(item, task.task_id, result)


@functools.cache
def resolved(directory: Path) -> Path:
    """``directory`` resolved, once per process (the run's ``items`` directory: each item's record is made in it, and
    resolving the record's own path stats each of its components again, #18)."""
    return directory.resolve()


def report_carried(item: pytest.Item, row: dict[str, Any]) -> None:
    """An item a resumed run's earlier session finished: reported as recorded (JUnit, terminal, exit status),
    not run again and not recorded again (``forall.carried`` says so)."""
    item.user_properties.append(("forall.carried", "true"))
    conclude(item, str(row.get("task_id") or item.name), {**row, "carried": True})


def conclude(item: pytest.Item, task_id: str, result: dict[str, Any]) -> None:
    """The item's JUnit properties and pytest outcome from its result row."""
    for name in JUNIT_FIELDS:
        item.user_properties.append((f"forall.{name}", junit_value(result.get(name))))
    item.stash[RESULT_KEY] = result
    outcome, reason = result["outcome"], result["reason"]
    if outcome == FAILED:
        # the first line is what pytest's short summary shows: the whole reason on one line, without the task
        # id the node id already names (an 80-column summary then shows the reason, not "putnam_200...")
        detail = f"\n{reason}" if "\n" in reason.strip() else ""
        raise ForallFailure(f"{shorten(reason, 2000)}{detail}\n(audit record: {result.get('audit_dir')})")
    if outcome in (INFRA, STATEMENT_FALSE, VACUOUS, INNER_VACUOUS):
        pytest.skip(f"{outcome}: {reason}")


def open_item_tools(**session: Any) -> Any:
    """The protocol's ``open_tools``, importing the MCP SDK (about 1.3 s) only when an agent session needs it."""
    from pytest_forall.tools.item import open_item_tools as open_tools

    return open_tools(**session)


def verdict_cache(options: dict[str, Any], frontend: Any) -> VerdictCache | None:
    """The run's verdict cache; none for a coding agent without a sandbox, which could write the cache itself."""
    if options["cache"] == "off" or (options["sandbox"] == "none" and getattr(frontend, "is_agent", False)):
        return None
    return VerdictCache(Path(options["cache_dir"]) / "verdicts", str(options["cache"]))
