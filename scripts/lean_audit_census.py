"""How the Lean audit reads PutnamBench's Lean templates (figures in docs/audit.md, "Lean").

Usage: ``python3 scripts/lean_audit_census.py <PutnamBench>/lean4/src``. Only reads and derives text; no
prover runs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pytest_forall.core.audit import AUDIT_INNER, derived_tasks
from pytest_forall.lang.lean.audit import (
    _outer,
    _unwrapped,
    definitional_witnesses,
    peel,
    refutation_grid,
    specialisation_scripts,
    split_theorem,
    universal_hypotheses,
)
from pytest_forall.lang.lean.problem import parse_lean


def census(folder: Path) -> dict[str, int]:
    count: dict[str, int] = {}

    def add(key: str, n: int = 1) -> None:
        count[key] = count.get(key, 0) + n

    for path in sorted(folder.glob("*.lean")):
        task = parse_lean(path.stem, path, path.read_text())
        add("templates")
        split = split_theorem(task.template, task.theorem_name)
        if split is None:
            continue
        add("understood")
        peeled, _ = peel(split.conclusion)
        derived = derived_tasks(task)
        for finding in derived:
            add(f"task {finding}")
        if peeled:
            add("something peeled")
        if re.search(r"\blet\b", split.conclusion):
            add("let in the conclusion")
        if re.search(r"\blet\b", split.binders):
            add("let in a hypothesis")
        if _unwrapped(split.conclusion) != split.conclusion:
            add("conclusion in parentheses")
            add("  ... something peeled", bool(peeled))
            add("  ... an inner task", AUDIT_INNER in derived)
        if AUDIT_INNER in derived:
            premises = re.findall(r"^def \S+_audit_premise\d+", derived[AUDIT_INNER].template, re.MULTILINE)
            add("inner premises", len(premises))
        groups = _outer(split, peeled) or []
        add("specialisation scripts", bool(specialisation_scripts(universal_hypotheses(groups))))
        add("a definitional witness", bool(definitional_witnesses(groups)))
        add("refutation grid", bool(refutation_grid(groups)))
    return count


if __name__ == "__main__":
    for key, value in census(Path(sys.argv[1])).items():
        print(f"{key}: {value}")
