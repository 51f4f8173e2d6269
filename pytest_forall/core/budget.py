"""Budgets: ``forall_budget`` marker > ``--forall-*`` option > ini > default, with errors naming their source.

The run-wide spend ledger is a JSON file under a file lock so every xdist worker sees one total.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_forall.core.errors import UsageError
from pytest_forall.core.model import BUDGET_FIELDS, Budget


def _coerce(name: str, value: Any, source: str) -> int | float | None:
    if value is None or value == "":
        return None
    kind = BUDGET_FIELDS[name]
    try:
        number: int | float = kind(value)
    except (TypeError, ValueError):
        raise UsageError(f"{source}: {name} must be a {'whole number' if kind is int else 'number'}, "
                         f"got {value!r}") from None
    if not math.isfinite(number) or number <= 0 and name not in ("usd",) or number < 0:
        raise UsageError(f"{source}: {name} must be positive, got {value!r}")
    return number


def resolve_budget(markers: Iterable[tuple[str, Mapping[str, Any]]], layers: Iterable[tuple[str, Mapping[str, Any]]]
                   ) -> Budget:
    """``markers``: (source, kwargs) closest first; ``layers``: option layers (source, values) highest first."""
    values: dict[str, Any] = {}
    for source, kwargs in markers:
        unknown = sorted(set(kwargs) - set(BUDGET_FIELDS))
        if unknown:
            raise UsageError(f"{source}: unknown budget field(s) {unknown}; known: {sorted(BUDGET_FIELDS)}")
        for name, value in kwargs.items():
            values.setdefault(name, _coerce(name, value, source))
    for source, layer in layers:
        for name in BUDGET_FIELDS:
            if name not in values and layer.get(name) not in (None, ""):
                values[name] = _coerce(name, layer[name], source.format(name=name))
    return Budget(**{k: v for k, v in values.items() if v is not None})


class SpendLedger:
    """Run-wide spend shared by all workers; ``charge`` returns the new total."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: FileLock | None = None

    @property
    def lock(self) -> FileLock:
        """Made when first used: every item has a ledger, most never spend (a lock costs 0.1 ms to make, #18)."""
        if self._lock is None:
            self._lock = FileLock(str(self.path) + ".lock")
        return self._lock

    def total(self) -> float:
        with self.lock:
            return self._read()

    def _read(self) -> float:
        try:
            return float(json.loads(self.path.read_text(encoding="utf-8"))["usd"])
        except (OSError, ValueError, KeyError):
            return 0.0

    def charge(self, usd: float) -> float:
        with self.lock:
            total = self._read() + usd
            self.path.write_text(json.dumps({"usd": total}), encoding="utf-8")
            return total
