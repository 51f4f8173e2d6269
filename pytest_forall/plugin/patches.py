"""pytest glue of ``forall apply``'s patches: every accepted proof of a project's admitted lemma lands in
``reports/<run>/patches/<file>.patch`` as it is accepted, and its ``results.jsonl`` row names that patch.

The patch itself is made without pytest (:mod:`pytest_forall.suites.project_patch`); this module only hooks it to
the end of an item.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.model import RULES_ONLY, STRICT
from pytest_forall.lang.project import SUITE


class PatchWriter:
    """Adds ``patch`` (or ``patch_problem``) to an accepted project item's result, writing its file's patch."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_forall_item_finished(self, nodeid: str, result: dict[str, Any]) -> None:
        from pytest_forall.plugin.options import resolved_options
        from pytest_forall.suites import project_patch

        if result.get("suite") != SUITE or result.get("outcome") not in (STRICT, RULES_ONLY) \
                or not result.get("audit_dir"):
            return
        run_dir = Path(str(result["audit_dir"])).parent.parent  # <run>/items/<item>
        try:
            fields = project_patch.record_patch(run_dir, result)
            if fields:  # what forall apply compiles and re-judges with
                project_patch.record_settings(run_dir, resolved_options(self.config))
        except (OSError, ValueError) as exc:  # the item's verdict stands; its row says why its patch is missing
            fields = {"patch_problem": f"the patch could not be made: {exc}"}
        result.update(fields)
