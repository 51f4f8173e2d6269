"""A run's live progress: a small JSON file per item that the protocol loop rewrites as it advances.

``forall watch`` reads these files while a run is going (an hour-long agent item otherwise shows nothing
until it ends). Every write is a write to a temporary file and a rename, so a reader sees either the
previous or the next progress, never half of one.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

PROGRESS_FILE = "progress.json"
#: The controller's view of the whole run, in the run directory: items selected, started, finished.
RUN_FILE = "run.json"
RUNNING, FINISHED = "running", "finished"


def replace_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename: a reader sees the old file or the new one, and two writers leave
    one of theirs (the temporary file is unique to this process and thread, removed if the write fails)."""
    scratch = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        scratch.write_text(text, encoding="utf-8")
        os.replace(scratch, path)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` as JSON (:func:`replace_text_atomic`)."""
    replace_text_atomic(path, json.dumps(data, sort_keys=True))
