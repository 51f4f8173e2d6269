"""Sum the per-test costs a run recorded (``FORALL_TEST_COSTS=LOG``, see ``tests/conftest.py``) per test file.

    FORALL_TEST_COSTS=/tmp/costs.jsonl bash scripts/test.sh
    python scripts/test_costs.py /tmp/costs.jsonl            # a table, costliest file first
    python scripts/test_costs.py /tmp/costs.jsonl --write    # and merge it into tests/durations.json

``tests/durations.json`` orders the suite's files, costliest first, so that under ``-n 2`` the long files start at
once and the two workers finish together. ``--by cpu`` (the default) is right on a loaded machine, whose wall
times are inflated; ``--by wall`` on an idle one also counts the time a test waits (timeouts, polling).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

DURATIONS = Path(__file__).resolve().parent.parent / "tests" / "durations.json"


def per_file(lines: list[str], by: str) -> dict[str, tuple[int, float, float]]:
    """File -> (tests, CPU s, wall s); a test recorded more than once counts with its last record."""
    last: dict[str, dict[str, float]] = {}
    for line in lines:
        if line.strip():
            row = json.loads(line)
            last[row["test"]] = row
    files: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for test, row in last.items():
        entry = files[test.split("::")[0]]
        entry[0] += 1
        entry[1] += row["cpu"]
        entry[2] += row["wall"]
    key = 1 if by == "cpu" else 2
    return {name: (int(v[0]), v[1], v[2]) for name, v in sorted(files.items(), key=lambda kv: -kv[1][key])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="+", type=Path, help="JSON lines written under FORALL_TEST_COSTS")
    parser.add_argument("--by", choices=["cpu", "wall"], default="cpu", help="What orders the files")
    parser.add_argument("--write", action="store_true", help=f"Merge the sums into {DURATIONS.name}")
    args = parser.parse_args(argv)
    lines = [line for log in args.log for line in log.read_text(encoding="utf-8").splitlines()]
    files = per_file(lines, args.by)
    print(f"{'file':50} {'tests':>5} {'cpu s':>8} {'wall s':>8}")
    for name, (tests, cpu, wall) in files.items():
        print(f"{name:50} {tests:5d} {cpu:8.1f} {wall:8.1f}")
    total = [sum(v[i] for v in files.values()) for i in range(3)]
    print(f"{'total':50} {int(total[0]):5d} {total[1]:8.1f} {total[2]:8.1f}")
    if args.write:
        known = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}
        known.update({name: round(v[1] if args.by == "cpu" else v[2], 1) for name, v in files.items()})
        ordered = dict(sorted(known.items(), key=lambda kv: -kv[1]))
        DURATIONS.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
