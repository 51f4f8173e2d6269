"""Cost of the Lean fingerprint's library walk (``library_stats``) on a synthetic tree the size of Mathlib's build.

    python scripts/bench_lean_fingerprint.py [--modules 8000] [--repeat 5]

Builds, in a temporary directory, ``--modules`` modules spread over nested directories as Mathlib's are, each
with the files a Lake build leaves: ``.olean``, ``.ilean``, ``.trace`` (layout "classic") or also
``.olean.server``, ``.olean.private``, ``.ir`` (layout "module system"). Every file is empty: the walk reads
only names and ``stat``. Prints the median and maximum wall time and the median CPU time of one walk per layout. The page cache is
warm (the tree was just written), as it is for the second and later CI jobs on a machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_forall.lang.lean.backend import library_stats

LAYOUTS = {"classic": (".olean", ".ilean", ".trace"),
           "module system": (".olean", ".olean.server", ".olean.private", ".ir", ".ilean", ".trace")}


def build(root: Path, modules: int, suffixes: tuple[str, ...]) -> None:
    """``modules`` modules in ``Mathlib/<area>/<topic>/M<i>``: 30 areas of 20 topics (about 13 modules a directory)."""
    for index in range(modules):
        directory = root / "Mathlib" / f"Area{index % 30}" / f"Topic{index // 30 % 20}"
        directory.mkdir(parents=True, exist_ok=True)
        for suffix in suffixes:
            (directory / f"M{index}{suffix}").touch()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for name, suffixes in LAYOUTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp), args.modules, suffixes)
            times, cpu, counted = [], [], 0
            for _ in range(args.repeat):
                start, start_cpu = time.perf_counter(), time.process_time()
                _, counted = library_stats((tmp,))
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            print(f"{name}: {args.modules} modules, {args.modules * len(suffixes)} files, {counted} digested; "
                  f"walk median {statistics.median(times) * 1000:.0f} ms wall (max {max(times) * 1000:.0f}), "
                  f"{statistics.median(cpu) * 1000:.0f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
