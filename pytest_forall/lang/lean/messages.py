"""Reading Lean's messages, shared by the backend (``lean --json``) and the REPL session (its ``messages``)."""

from __future__ import annotations

import re
from typing import Any

_SORRY = re.compile(r"declaration uses\b.*\bsorry\b", re.DOTALL)


def is_sorry_warning(message: dict[str, Any]) -> bool:
    """Lean's ``declaration uses `sorry``` warning [R3]: by its ``kind`` where the message has one (``lean --json``),
    else by its text (the REPL's messages carry no ``kind``, I1)."""
    return message.get("kind") == "hasSorry" or bool(_SORRY.search(message["data"]))
