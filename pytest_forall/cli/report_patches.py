"""The patches a run made for a project's admitted lemmas (``reports/<run>/patches/``, issue 38), as ``forall
report`` lists them (Markdown) and as the HTML report shows them: one line per file, the items in it, and the
accepted items whose proof is in no patch, with the reason. ``forall apply RUN`` writes them into the project."""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path

from pytest_forall.core.summary import RunRows


def _by_patch(run: RunRows) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    patches: dict[str, list[str]] = {}
    missing: list[tuple[str, str]] = []
    for row in sorted(run.rows, key=lambda r: str(r.get("task_id"))):
        if row.get("patch"):
            patches.setdefault(str(row["patch"]), []).append(str(row.get("task_id")))
        elif row.get("patch_problem"):
            missing.append((str(row.get("task_id")), str(row["patch_problem"])))
    return patches, missing


def patch_lines(runs: Sequence[RunRows]) -> list[str]:
    """The Markdown section: each run's patches (path relative to the run directory) and the items left out."""
    lines: list[str] = []
    for run in runs:
        patches, missing = _by_patch(run)
        if not patches and not missing:
            continue
        lines += ["", f"## Patches of {run.run_dir.name} (apply with `forall apply {run.run_dir}`)", ""]
        lines += [f"- `{path}`: {', '.join(items)}" for path, items in sorted(patches.items())]
        lines += [f"- not in a patch: {task_id}: {reason}" for task_id, reason in missing]
    return lines


def patch_html(runs: Sequence[RunRows], out_dir: Path) -> str:
    """The HTML section (links relative to the page), or "" when no run made a patch."""
    items = []
    for run in runs:
        patches, missing = _by_patch(run)
        for path, tasks in sorted(patches.items()):
            href = os.path.relpath(run.run_dir / path, out_dir)
            items.append(f'<li><a href="{html.escape(href)}">{html.escape(run.run_dir.name + "/" + path)}</a>: '
                         f'{html.escape(", ".join(tasks))}</li>')
        items += [f"<li>not in a patch: {html.escape(task_id)}: {html.escape(reason)}</li>"
                  for task_id, reason in missing]
    if not items:
        return ""
    return ('<h2>Patches</h2><p>Accepted proofs of the project\'s admitted lemmas, one patch per file '
            '(<code>forall apply RUN</code> writes them into the project).</p><ul id="patches">'
            + "".join(items) + "</ul>\n")
