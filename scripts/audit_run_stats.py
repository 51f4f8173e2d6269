"""Outcomes, flags and CPU budget use of a statement-audit run (docs/measurements.md).

    python scripts/audit_run_stats.py reports/<run id>

Reads the run's ``results.jsonl`` (the last row of each item) and the last line of each item's ``audit.log``
(``audit spent: CPU … s of … s, wall … s``, written by the search).
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

SPENT = re.compile(r"audit spent: CPU ([\d.]+) s of ([\d.]+) s, wall ([\d.]+)")


def main(run: Path) -> int:
    rows: dict[str, dict[str, object]] = {}
    for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        rows[str(row["task_id"])] = row
    print(len(rows), "items:", dict(collections.Counter(str(r["outcome"]) for r in rows.values())))
    for task_id, row in sorted(rows.items()):
        if row["outcome"] in ("vacuous", "statement_false", "inner_vacuous"):
            print("  flag", task_id, row["outcome"], str(row.get("candidate_digest", ""))[:8])
    cpu: list[float] = []
    wall: list[float] = []
    budget, full = 0.0, 0
    for log in run.glob("items/*/**/audit.log"):
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        match = SPENT.search(lines[-1]) if lines else None
        if match:
            used, budget, seconds = (float(g) for g in match.groups())
            cpu.append(used)
            wall.append(seconds)
            full += used >= 0.95 * budget
    if not cpu:
        print("no audit.log with a spent line")
        return 1
    cpu.sort()
    wall.sort()
    n = len(cpu)
    print(f"searched {n}; CPU {sum(cpu):.0f} s, mean {sum(cpu) / n:.1f}, median {cpu[n // 2]:.1f}, max {cpu[-1]:.1f} "
          f"of {budget:.0f} s; share of the budget {sum(cpu) / (n * budget) * 100:.0f} %; spent >= 95 %: {full}")
    print(f"search wall: mean {sum(wall) / n:.1f} s, median {wall[n // 2]:.1f} s, max {wall[-1]:.1f} s")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    raise SystemExit(main(Path(sys.argv[1])))
