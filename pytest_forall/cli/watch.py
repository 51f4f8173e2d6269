"""``forall watch RUN``: what a run is doing now, read from its directory (no connection to the run).

Each item's protocol loop rewrites ``items/<item>/progress.json`` as it advances (:mod:`pytest_forall.core.progress`); the
controller writes ``run.json`` (selected items, finished or not); finished items are in results.jsonl.
The watcher only reads these, so it can be started, stopped and restarted at any time, from another
shell, without touching the run. Finished items are counted by :mod:`pytest_forall.core.summary`, like ``forall report``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from pytest_forall.core.accept import UNRECORDED_DIRS
from pytest_forall.core.progress import PROGRESS_FILE, RUN_FILE, RUNNING
from pytest_forall.core.runlog import has_finished
from pytest_forall.core.summary import Aggregate, latest_results


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file, or None when it is absent or (a foreign file) not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def controller_gone(meta: dict[str, Any]) -> bool:
    """The run's pytest process, on this host, no longer exists though the run never finished (killed, crashed)."""
    if has_finished(meta) or meta.get("host") != socket.gethostname() or not isinstance(meta.get("pid"), int):
        return False
    try:
        os.kill(meta["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def money(value: Any) -> str:
    return "unknown" if value is None else f"${float(value):.4f}"


def tool_calls(item_dir: Path) -> str:
    """``, tool calls N (goals 3, try 2, …)`` from the item's ``tool_calls.jsonl`` files, or "" when there are none.

    A display only: the watcher holds no key, so it counts lines as written, sealed or not (the row's ``tool_calls``
    counts only sealed ones)."""
    by_tool: dict[str, int] = {}
    for directory, subdirs, files in os.walk(item_dir):
        subdirs[:] = [d for d in subdirs if not d.endswith(UNRECORDED_DIRS)]  # an agent's own files, not the record
        if "tool_calls.jsonl" in files:
            try:
                lines = (Path(directory) / "tool_calls.jsonl").read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            for line in lines:
                try:
                    tool = str(json.loads(line).get("tool", "?"))
                except (ValueError, AttributeError):
                    tool = "?"
                by_tool[tool] = by_tool.get(tool, 0) + 1
    if not by_tool:
        return ""
    parts = ", ".join(f"{tool} {n}" for tool, n in sorted(by_tool.items(), key=lambda kv: (-kv[1], kv[0])))
    return f", tool calls {sum(by_tool.values())} ({parts})"


def frame(run_dir: Path, now: float | None = None) -> list[str]:
    """One screen: the run's counts, then one line per running item."""
    now = time.time() if now is None else now
    meta = read_json(run_dir / RUN_FILE) or {}
    results = latest_results(run_dir) if (run_dir / "results.jsonl").exists() else {}
    finished_dirs = {Path(str(row.get("audit_dir") or "")).name for row in results.values()}
    running: list[tuple[str, dict[str, Any]]] = []
    items = run_dir / "items"
    # an item is started once it shows progress or has a row (one that ended at once, e.g. from the verdict cache,
    # never wrote progress)
    started_dirs = {name for name in finished_dirs if name}
    for path in sorted(items.glob(f"*/{PROGRESS_FILE}")) if items.is_dir() else []:
        progress = read_json(path)
        if progress is None:
            continue
        started_dirs.add(path.parent.name)
        if progress.get("state") == RUNNING and path.parent.name not in finished_dirs:
            running.append((path.parent.name, progress))
    agg = Aggregate(list(results.values()))
    selected = meta.get("selected")
    ended = has_finished(meta) or controller_gone(meta)
    state = ("finished" if has_finished(meta) else "CONTROLLER GONE: it exited without finishing the run"
             if ended else "running" if meta else "no run.json")
    unfinished: list[str] = []
    if ended:  # nothing runs once the run is over: an item still "running" on disk was cut off, never finished
        unfinished, running = [name for name, _ in running], []
    lines = [(f"forall watch: run {run_dir.name} ({state}) at {time.strftime('%H:%M:%S', time.localtime(now))}: "
             f"{selected if selected is not None else '?'} selected, {len(started_dirs)} started, {agg.items} finished, "
             f"{len(running)} running")]
    if ended and meta.get("exitstatus") is not None:
        lines.append(f"run ended: exit status {meta['exitstatus']}")
    lines.append(f"finished: {agg.counts_line()}")
    lines.append(f"finished: {agg.spend_line()}")
    costs = [float(p["cost_usd"]) for _, p in running if p.get("cost_usd") is not None]
    finished = agg.total("cost_usd").value
    known = costs + ([] if finished is None else [float(finished)])
    lines.append(f"spend so far: {money(sum(known) if known else None)} (finished {money(finished)}, "
                 f"running {money(sum(costs) if costs else None)})")
    if unfinished:
        lines.append(f"not finished: {len(unfinished)} item(s) were running when the run ended (no result; "
                     f"--forall-resume runs them again): {', '.join(unfinished[:10])}")
    for name, progress in running:
        age = max(0.0, now - float(progress.get("updated_at") or now))
        lines.append(f"  {name}: {progress.get('activity', '?')}; sample {progress.get('sample', '?')}, "
                     f"{progress.get('rounds', '?')} rounds, {progress.get('compiles', '?')} compiles, "
                     f"{progress.get('reviews', '?')} reviews, tokens {progress.get('tokens_in') or '-'}/"
                     f"{progress.get('tokens_out') or '-'}, {money(progress.get('cost_usd'))}, "
                     f"{float(progress.get('wall_s') or 0) + age:.0f} s so far, updated {age:.0f} s ago"
                     f"{tool_calls(items / name)}")
    return lines


def run_watch(args: argparse.Namespace) -> int:
    run_dir = Path(args.run)
    if not run_dir.is_dir():
        print(f"forall watch: {run_dir} is not a run directory (expected reports/<run id>)", file=sys.stderr)
        return 2
    if args.interval <= 0:
        print(f"forall watch: --interval must be a positive number of seconds, not {args.interval}",
              file=sys.stderr)
        return 2
    clear = sys.stdout.isatty() and not args.once
    try:
        while True:
            try:
                lines = frame(run_dir)
            except ValueError as exc:  # a results.jsonl line that is not one
                print(f"forall watch: {exc}", file=sys.stderr)
                return 2
            print(("\033[H\033[2J" if clear else "") + "\n".join(lines), flush=True)
            meta = read_json(run_dir / RUN_FILE)
            if args.once or (meta is not None and has_finished(meta)):
                return 0
            if meta is not None and controller_gone(meta):
                return 1
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


def add_cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("watch", help="Show a run's running items, their round, compiles and spend")
    parser.add_argument("run", help="reports/<run id>")
    parser.add_argument("--interval", type=float, default=5.0, help="Seconds between refreshes (default 5)")
    parser.add_argument("--once", action="store_true", help="Print one frame and exit")
    parser.set_defaults(func=run_watch)
