"""Measure the verdict cache and the cold verifier path on real coqc (docs/measurements.md).

    nice -n 10 python scripts/bench_cache.py --copies 17          # 51 proofs: cold, warm, library change
    nice -n 10 python scripts/bench_cache.py --hand --repeat 3     # cold path vs the check scripted by hand

The proof store is made of honest proofs only: each of the three PutnamBench problems the tests already
prove (2001 A1 and 2008 A1 from tests/data/proofs, 2017 A1 closed by CoqHammer's ``qauto`` as the portfolio
found it) is copied under new task ids (``putnam_2001_a1_c03`` …), statement and proof unchanged except for
the theorem's name, into a PutnamBench-shaped directory in a temporary directory (nothing is added to the
repository, and PutnamBench itself is not copied: only these three files are). Every run is a fresh pytest
process; "cold" starts with empty verdict and template caches.

The library change is real: ``coqc``/``coqchk`` wrappers set ``COQLIB`` to a copy of the installed library
tree (symbolic links) in which one file, mathcomp's ``ssrnat.vo``, is a fresh copy (new mtime: what a package
upgrade does); the sandbox does not see wrappers outside /usr, so those runs use ``--forall-sandbox=none``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBLEMS = ("putnam_2001_a1", "putnam_2008_a1", "putnam_2017_a1")
HAMMER_PRELUDE = "From Coq Require Import Lia Psatz Lra.\nFrom Hammer Require Import Tactics.\n"


def putnam_root() -> Path:
    root = Path(os.environ.get("PUTNAMBENCH_ROOT", REPO.parent / "shared" / "benchmarks" / "PutnamBench"))
    if not (root / "coq" / "src").is_dir():
        sys.exit(f"bench_cache: no PutnamBench at {root}; set PUTNAMBENCH_ROOT")
    return root


def proof_of(problem: str, template: str) -> str:
    stored = REPO / "tests" / "data" / "proofs" / f"{problem}.v"
    if stored.is_file():
        return stored.read_text(encoding="utf-8")
    hole = template.rindex("Admitted.")  # 2017 A1: the portfolio's winning candidate
    return HAMMER_PRELUDE + template[:hole] + "qauto.\nQed." + template[hole + len("Admitted."):]


def make_store(work: Path, copies: int) -> tuple[Path, Path, list[str]]:
    """A PutnamBench-shaped root with ``copies`` renamed copies of each problem, and their proofs."""
    root, store = work / "putnam", work / "store"
    (root / "coq" / "src").mkdir(parents=True)
    store.mkdir()
    ids = []
    for problem in PROBLEMS:
        template = (putnam_root() / "coq" / "src" / f"{problem}.v").read_text(encoding="utf-8")
        proof = proof_of(problem, template)
        for i in range(copies):
            task = f"{problem}_c{i:02d}" if copies > 1 else problem
            (root / "coq" / "src" / f"{task}.v").write_text(template.replace(problem, task), encoding="utf-8")
            (store / f"{task}.v").write_text(proof.replace(problem, task), encoding="utf-8")
            ids.append(task)
    (work / "putnam.forall.toml").write_text('adapter = "putnam"\ntracks = ["coq"]\n', encoding="utf-8")
    return root, store, ids


def run(work: Path, root: Path, store: Path, run_id: str, *extra: str, env: dict[str, str] | None = None
        ) -> tuple[float, dict[str, dict]]:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
            "--forall-frontend=replay", f"--forall-proofs={store}", f"--forall-putnam-root={root}",
            f"--forall-run-id={run_id}", "--forall-cache-dir=cache", *extra]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=work, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    path = work / "reports" / run_id / "results.jsonl"
    if not path.is_file():
        sys.exit(f"bench_cache: {run_id} wrote no results:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    rows = {json.loads(line)["task_id"]: json.loads(line) for line in path.read_text().splitlines()}
    return wall, rows


def verdicts(rows: dict[str, dict]) -> dict[str, tuple]:
    return {t: (r["outcome"], r["digest"], tuple(r["axioms"]), r["independent"]) for t, r in rows.items()}


def changed_library(work: Path) -> dict[str, str]:
    """PATH with coqc/coqchk wrappers whose COQLIB is a link farm of the installed one with ssrnat.vo renewed."""
    where = Path(subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True).stdout.strip())
    lib = work / "lib"
    lib.mkdir()
    subprocess.run(["cp", "-rs", str(where), str(lib / where.name)], check=True)
    core = where.parent / "coq-core"
    if core.is_dir():
        (lib / "coq-core").symlink_to(core)
    renewed = lib / where.name / "user-contrib" / "mathcomp" / "ssreflect" / "ssrnat.vo"
    target = renewed.resolve()
    renewed.unlink()
    shutil.copyfile(target, renewed)
    bindir = work / "bin"
    bindir.mkdir()
    for tool in ("coqc", "coqchk"):
        real = shutil.which(tool)
        (bindir / tool).write_text(f'#!/bin/sh\nCOQLIB={lib / where.name} exec {real} "$@"\n')
        (bindir / tool).chmod(0o755)
    return {"PATH": f"{bindir}:{os.environ['PATH']}"}


def bench_cache(copies: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        work = Path(tmp)
        root, store, ids = make_store(work, copies)
        print(f"store: {len(ids)} proofs ({copies} copies of {', '.join(PROBLEMS)})")
        cold, cold_rows = run(work, root, store, "cold")
        warm, warm_rows = run(work, root, store, "warm")
        outcomes = sorted({r["outcome"] for r in cold_rows.values()})
        print(f"cold: {cold:.1f} s, outcomes {outcomes}, cached {sum(r['cached'] for r in cold_rows.values())}")
        print(f"warm: {warm:.2f} s, cached {sum(r['cached'] for r in warm_rows.values())}/{len(warm_rows)}; "
              f"speed-up {cold / warm:.1f}x; verdicts identical: {verdicts(cold_rows) == verdicts(warm_rows)}")
        subset = ["-k", "putnam_2001_a1"]
        _, base = run(work, root, store, "none-cold", "--forall-sandbox=none", *subset)
        hit_wall, hit = run(work, root, store, "none-warm", "--forall-sandbox=none", *subset)
        env = changed_library(work)
        bump_wall, bumped = run(work, root, store, "library", "--forall-sandbox=none", *subset, env=env)
        print(f"library change ({len(bumped)} proofs, --forall-sandbox=none): before it {sum(r['cached'] for r in hit.values())}"
              f"/{len(hit)} cached in {hit_wall:.2f} s; after it {sum(r['cached'] for r in bumped.values())}"
              f"/{len(bumped)} cached in {bump_wall:.1f} s; verdicts identical: {verdicts(base) == verdicts(bumped)}")


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far, their own children included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(step: Callable[..., object], *args: object) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the processes it ran) of ``step(*args)``."""
    cpu, started = children_cpu(), time.perf_counter()
    step(*args)
    return time.perf_counter() - started, children_cpu() - cpu


def hand_check(store: Path, work: Path) -> float:
    """coqc the proof, Print Assumptions from a separate file, coqchk: what a careful user scripts."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "cand").mkdir(parents=True)
    started = time.perf_counter()
    for proof in sorted(store.glob("*.v")):
        module = proof.stem
        shutil.copyfile(proof, work / "cand" / proof.name)
        (work / f"audit_{module}.v").write_text(f"Require Cand.{module}.\nPrint Assumptions Cand.{module}.{module}.\n")
        for argv in (["coqc", "-q", "-Q", "cand", "Cand", f"cand/{proof.name}"],
                     ["coqc", "-q", "-Q", "cand", "Cand", f"audit_{module}.v"],
                     ["coqchk", "-silent", "-o", "-Q", "cand", "Cand", "-norec", f"Cand.{module}"]):
            subprocess.run(argv, cwd=work, capture_output=True, check=True)
    return time.perf_counter() - started


def bench_hand(repeat: int) -> None:
    """Wall time and CPU time: the verifier overlaps two prover processes on a multi-core machine, so its wall
    time can beat the sequential hand check while it spends more CPU; both are printed."""
    with tempfile.TemporaryDirectory(prefix="bench-hand-") as tmp:
        work = Path(tmp)
        root, store, ids = make_store(work, 1)
        hand, cold, tmpl_warm = [], [], []
        for i in range(repeat):
            hand.append(timed(hand_check, store, work / "hand"))
            shutil.rmtree(work / "cache", ignore_errors=True)
            cold.append(timed(run, work, root, store, f"cold{i}", "--forall-cache=off"))
            tmpl_warm.append(timed(run, work, root, store, f"tmpl{i}", "--forall-cache=off"))
        (h, hc), (c, cc), (t, tc) = (tuple(statistics.median(x[k] for x in runs) for k in (0, 1))
                                     for runs in (hand, cold, tmpl_warm))
        print(f"{len(ids)} proofs ({', '.join(ids)}), medians of {repeat}; load average {os.getloadavg()[0]:.1f}:")
        print(f"  by hand (coqc, Print Assumptions file, coqchk): {h:.2f} s wall, {hc:.2f} s CPU")
        print(f"  pytest replay, verdict cache off, all caches empty: {c:.2f} s = {c / h:.2f}x wall, "
              f"{cc:.2f} s = {cc / hc:.2f}x CPU")
        print(f"  pytest replay, verdict cache off, template cache warm: {t:.2f} s = {t / h:.2f}x wall, "
              f"{tc:.2f} s = {tc / hc:.2f}x CPU")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=17)
    parser.add_argument("--hand", action="store_true", help="compare the cold path with the check by hand")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.hand:
        bench_hand(args.repeat)
    else:
        bench_cache(args.copies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
