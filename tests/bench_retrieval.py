"""Measure index build (cold and warm cache) and query latency; prints the table in docs/retrieval.md.

Usage: python tests/bench_retrieval.py [--root DIR]... [--queries N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_forall.retrieval.index import Declaration, Retriever, build_index

DEFAULT_ROOTS = (Path("/usr/lib/ocaml/coq/theories"), Path("/usr/lib/ocaml/coq/user-contrib/mathcomp"))


def build_all(roots: list[Path], cache_dir: Path) -> tuple[list[Declaration], float, int]:
    start = time.perf_counter()
    declarations: list[Declaration] = []
    files = 0
    for root in roots:
        found, stats = build_index(root, cache_dir)
        declarations += found
        files += stats.files
    return declarations, time.perf_counter() - start, files


def latencies_ms(query: Callable[[str], object], inputs: list[str]) -> tuple[float, float]:
    """p50 and p95 of one query function over ``inputs``, in milliseconds."""
    timings = []
    for text in inputs:
        start = time.perf_counter()
        query(text)
        timings.append((time.perf_counter() - start) * 1000)
    quantiles = statistics.quantiles(timings, n=20)
    return statistics.median(timings), quantiles[18]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="source tree (repeatable)")
    parser.add_argument("--queries", type=int, default=300, help="queries per kind")
    args = parser.parse_args()
    roots: list[Path] = args.root or list(DEFAULT_ROOTS)
    with tempfile.TemporaryDirectory() as cache:
        declarations, cold, files = build_all(roots, Path(cache))
        _, warm, _ = build_all(roots, Path(cache))
    start = time.perf_counter()
    retriever = Retriever(declarations)
    engine = time.perf_counter() - start

    sample = random.Random(0).sample(declarations, args.queries)
    names = [d.name.rsplit(".", 1)[-1] for d in sample]
    phrases = [" ".join(d.statement.split()[2:6]) or d.name for d in sample]  # words after kind and name
    print(f"roots: {', '.join(map(str, roots))}")
    print(f"{files} files, {len(declarations)} declarations\n")
    print("| measurement | value |\n|---|---|")
    print(f"| index build, cold cache | {cold:.2f} s |")
    print(f"| index build, warm cache | {warm:.2f} s |")
    print(f"| query engine construction | {engine:.2f} s |")
    for label, query, inputs in (
        ("lookup", retriever.lookup, names),
        ("search", retriever.search, phrases),
        ("usages", retriever.usages, names),
    ):
        p50, p95 = latencies_ms(query, inputs)
        print(f"| {label} p50 / p95 ({len(inputs)} queries) | {p50:.2f} ms / {p95:.2f} ms |")


if __name__ == "__main__":
    main()
