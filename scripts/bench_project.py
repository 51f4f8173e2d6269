"""Cost of project mode against the project's own build (issue 18), on a copy of a real library.

    python scripts/bench_project.py [LIBRARY_DIR] [LOGICAL] [EDIT_FILE] [FILE ...]
    python scripts/bench_project.py --whole [LIBRARY_DIR] [LOGICAL]        # every .v, the edit on a leaf

Copies the FILEs (default: every ``.v``) of LIBRARY_DIR (default: the installed Coquelicot sources) to a scratch
project under the new logical name LOGICAL (``-R . LOGICAL``), then times, one after the other on the same
machine:

1. ``make -j2`` of the copy (``coq_makefile``), the reference;
2. cold: ``pytest --forall-project DIR --forall-frontend replay -m "not admitted"`` with an empty cache (the build,
   one judge session and one coqchk per file, every item judged);
3. warm: the same again, nothing changed (verdict cache hits);
4. one edit: a proof-free line appended to EDIT_FILE (a leaf of the library), the same command again.

Prints one line per step: wall seconds and the ratio to ``make -j2``, the CPU seconds of the step's processes
(user + system, the step's children: less noisy than wall on a shared machine), the item outcomes, and how long creating a small file took just before the step (this disk slows
15-20x for half a minute after a large tree is deleted: read a step's figures with it). ``--whole``
takes every ``.v`` file and, as EDIT_FILE, the leaf file (one no other file requires, by ``coqdep``) with the most
proofs. ``--workers N`` runs each pytest under pytest-xdist (``-n N``; the line says how many rows each process
wrote). ``--profile DIR`` runs each pytest under ``cProfile`` (``DIR/<step>.prof``); The scratch directory is
kept (its path is printed: ``reports/<step>/results.jsonl`` there) unless ``--clean``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def installed(name: str) -> Path:
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True).stdout.strip()
    return Path(where) / "user-contrib" / name


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def file_creation_us(where: Path, count: int = 300) -> float:
    """Microseconds to make a directory with a small file in it, here and now: on this machine's ext4 (mounted with
    ``discard``) it is 50-60 us idle but 15-20x that for half a minute after a large tree was deleted, which moves every
    step's figures (each item writes its audit record); printed with each step so a run can be read."""
    probe = Path(tempfile.mkdtemp(prefix="fs-probe-", dir=where))
    started = time.perf_counter()
    for n in range(count):
        (probe / str(n)).mkdir()
        (probe / str(n) / "f").write_bytes(b"x" * 2000)
    spent = time.perf_counter() - started
    shutil.rmtree(probe)
    return spent / count * 1e6


def leaf_with_most_proofs(project: Path, logical: str, files: list[str]) -> str:
    """The file no other file requires (``coqdep``), with the most ``Qed``/``Defined``: an edit there rebuilds and
    re-judges that file alone."""
    deps = subprocess.run(["coqdep", "-R", ".", logical, *files], cwd=project, capture_output=True, text=True,
                          check=True).stdout.replace("\\\n", " ")
    required: set[str] = set()
    for line in deps.splitlines():
        target, _, prereqs = line.partition(":")
        if target.split()[:1] and target.split()[0].endswith(".vo"):
            required |= {p[:-3] + ".v" for p in prereqs.split() if p.endswith(".vo")}
    leaves = [f for f in files if f not in required]
    proofs = {f: len(re.findall(r"\b(?:Qed|Defined)\s*\.", (project / f).read_text(encoding="utf-8"))) for f in leaves}
    return max(leaves, key=lambda f: (proofs[f], f))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", nargs="?", type=Path, default=None)
    parser.add_argument("logical", nargs="?", default="CQ")
    parser.add_argument("edit", nargs="?", default="Equiv.v", help="the file the one-edit step edits")
    parser.add_argument("files", nargs="*")
    parser.add_argument("--whole", action="store_true", help="every .v file; the edit on the leaf with most proofs")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile each pytest run into DIR/<step>.prof")
    parser.add_argument("--timers", type=Path, default=None,
                        help="CPU seconds per harness step of each pytest run into DIR/<step>.txt")
    parser.add_argument("--clean", action="store_true", help="remove the scratch directory at the end")
    parser.add_argument("--steps", default="cold,warm,one-edit", help="which pytest steps (comma-separated)")
    parser.add_argument("--workers", type=int, default=0,
                        help="pytest-xdist workers (-n N; 0: one process). Every item sits in the one scope "
                             "project.forall.toml, so --dist loadfile/loadscope would send all to one worker: "
                             "the default --dist load")
    args = parser.parse_args()
    library = args.library or installed("Coquelicot")
    scratch = Path(tempfile.mkdtemp(prefix="bench-project-"))
    project = scratch / "proj"
    project.mkdir()
    files = sorted(args.files) or sorted(p.name for p in library.glob("*.v"))
    for name in files:
        text = (library / name).read_text(encoding="utf-8")
        (project / name).write_text(text, encoding="utf-8")
    (project / "_CoqProject").write_text(f"-R . {args.logical}\n" + "".join(f"{f}\n" for f in files))
    leaf = leaf_with_most_proofs(project, args.logical, files) if args.whole else args.edit
    reference = scratch / "make"
    shutil.copytree(project, reference)
    subprocess.run(["coq_makefile", "-f", "_CoqProject", "-o", "Makefile"], cwd=reference, check=True,
                   capture_output=True)
    print(f"file creation before make: {file_creation_us(scratch):.0f} us", flush=True)
    started, cpu = time.monotonic(), children_cpu()
    made = subprocess.run(["make", "-j2"], cwd=reference, capture_output=True, text=True, check=False)
    make_s, make_cpu = time.monotonic() - started, children_cpu() - cpu
    print(f"pytest workers: {args.workers or 'one process'}", flush=True)
    print(f"make -j2: {make_s:.1f} s, {make_cpu:.1f} CPU s (exit {made.returncode}), {len(files)} files; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    (scratch / "pytest.ini").write_text("[pytest]\n")
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": str(here.parent) + (os.pathsep + str(here) if args.timers else "")}
    for where in (args.profile, args.timers):
        if where:
            where.mkdir(parents=True, exist_ok=True)

    def run(label: str) -> None:
        profile = ["-m", "cProfile", "-o", str((args.profile / f"{label}.prof").resolve())] if args.profile else []
        timers = ["-p", "forall_cpu_timers"] if args.timers else []
        workers = ["-n", str(args.workers)] if args.workers else []
        if args.timers:
            env["FORALL_CPU_TIMERS"] = str((args.timers / f"{label}.txt").resolve())
        creation = file_creation_us(scratch)
        started, cpu = time.monotonic(), children_cpu()
        subprocess.run([sys.executable, *profile, "-m", "pytest", *timers, "-p", "no:cacheprovider", "-p",
                        "no:hypothesispytest", *workers, "-q", "--forall-project", "proj", "--forall-frontend", "replay", "-m",
                        "not admitted", "--forall-run-id", label], cwd=scratch, env=env, capture_output=True,
                       text=True, check=False)
        seconds, used = time.monotonic() - started, children_cpu() - cpu
        rows = [json.loads(line) for line in (scratch / "reports" / label / "results.jsonl").read_text().splitlines()]
        outcomes = collections.Counter(r["outcome"] for r in rows)
        cached = sum(1 for r in rows if r.get("cached"))
        by_worker = dict(sorted(collections.Counter(str(r.get("worker")) for r in rows).items()))
        print(f"{label}: {seconds:.1f} s = {seconds / make_s:.2f}x make -j2, {used:.1f} CPU s = "
              f"{used / make_cpu:.2f}x; {len(rows)} items {dict(outcomes)}, {cached} from the verdict cache, per process {by_worker}; "
              f"load average {os.getloadavg()[0]:.1f}; file creation before it {creation:.0f} us", flush=True)
        for row in rows:
            if row["outcome"] != "strict":
                print(f"  not strict: {row.get('task_id')} {row['outcome']}: {str(row.get('reason', ''))[:300]}")

    steps = args.steps.split(",")
    for step in ("cold", "warm"):
        if step in steps:
            run(step)
    if "one-edit" in steps:
        edited = project / leaf
        edited.write_text(edited.read_text(encoding="utf-8") + "\n(* edited *)\nDefinition forall_bench_edit := 0.\n")
        print(f"edited: {leaf}")
        run("one-edit")
    if args.clean:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"scratch: {scratch}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
