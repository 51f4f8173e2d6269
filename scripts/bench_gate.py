"""Issue 32's measurements of library mode as a maintainer runs it, on synthetic libraries made here.

    python scripts/bench_gate.py runs [--runs 20] [--dir DIR]     # reports per run, --collect-only after N runs
    python scripts/bench_gate.py broken [--dir DIR] [--warm] [--pyc]   # a broken proof in a 50-proof file

``runs``: a library of 4 files x 50 proofs (each after a comment paragraph; ``-Q theories Bench``, 200 items);
from its root, N times ``pytest --forall-project=. --forall-frontend replay -q --forall-run-id rN`` in the default
``reports/`` (the first cold, the others warm), then the size of ``reports/`` without its ``.cache`` (``du``, 4 KB
blocks, and the bytes of the files themselves) and of the run's own directory; ``--collect-only -q`` timed before
any run and after runs 1 and N (three samples after N).

``broken``: one file of 50 ``ring`` lemmas (``-R . Fifty``) with the 41st proof replaced by ``exact I.``; the file's
own compile (``coqc`` of the unbroken file, before and after), then one pytest run on the broken library from its
root, with a fresh cache (cold) or, with ``--warm``, after a run on the unbroken file in the same cache (the
maintainer's case: the edit breaks one proof). Each command's CPU is its whole process tree's
(``scripts/tree_cpu.py``); the last line is the run's ratio to the mean of the three compiles, CPU and wall.
``--intact``: the run on the unbroken file instead (the floor: what judging the file costs when nothing is broken).
``--heavy N``: each lemma a product of N four-variable sums (N = 6: about three times the compile).
``--pyc``: Python's bytecode cache on, as for an installed package (this machine's sessions set
``PYTHONDONTWRITEBYTECODE``). With ``FORALL_PROC_TRACE=FILE`` and ``scripts/`` on ``PYTHONPATH``
(``-p forall_proc_trace``), every subprocess of the run is written to FILE with its start, end and thread.

Each pytest runs the checkout this script is in (``PYTHONPATH``). Prints one line per figure, with the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


#: ``--pyc``: Python writes and reads its bytecode cache (as an installed package does); off when the environment
#: sets ``PYTHONDONTWRITEBYTECODE`` (then every run compiles pytest-forall's modules again: about 0.5 s of CPU)
BYTECODE = {"keep": False}


def env(trace: str = "") -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "scripts")])}
    if BYTECODE["keep"]:
        out.pop("PYTHONDONTWRITEBYTECODE", None)
    if trace:
        out["FORALL_PROC_TRACE"] = trace
    return out


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path, trace: str = "") -> tuple[float, str]:
    """Wall seconds of ``argv`` and its output's last line, with the CPU seconds of its processes (user + system, those
    it waited for: less noisy than wall on a shared machine)."""
    seconds, last, used = tree_timed(argv, cwd, trace)
    return seconds, f"{last}; CPU {used:.2f} s"


def tree_timed(argv: list[str], cwd: Path, trace: str = "") -> tuple[float, str, float]:
    """Wall seconds of ``argv``, its output's last line and the CPU seconds of its whole process tree (run under
    ``scripts/tree_cpu.py``, whose subreaper waits for every descendant, those it left behind too)."""
    started, used = time.monotonic(), cpu()
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "tree_cpu.py"), *argv], cwd=cwd, env=env(trace),
                          capture_output=True, text=True, check=False)
    lines = [line for line in (done.stdout + done.stderr).strip().splitlines() if not line.startswith("tree CPU:")]
    return time.monotonic() - started, lines[-1] if lines else "", cpu() - used


def library(root: Path) -> None:
    """4 files x 50 proofs, each file requiring the one before."""
    (root / "theories").mkdir(parents=True)
    files = []
    for f in range(4):
        lines = [] if f == 0 else [f"From Bench Require Import F{f - 1}.\n"]
        lines.append("Require Import Arith.\n")
        for i in range(50):
            lines.append("(* " + f"Lemma {i} of file {f}: a paragraph of the kind a library writes before its "
                         "lemmas. " * 4 + "*)\n")
            lines.append(f"Lemma f{f}_l{i} : forall n m, n + m + {i} = m + n + {i}.\nProof.\n  intros n m. "
                         "rewrite (Nat.add_comm n m). reflexivity.\nQed.\n\n")
        (root / "theories" / f"F{f}.v").write_text("".join(lines), encoding="utf-8")
        files.append(f"theories/F{f}.v")
    (root / "_CoqProject").write_text("-Q theories Bench\n" + "\n".join(files) + "\n", encoding="utf-8")


#: ``--heavy``: each lemma a product of this many equal four-variable sums (a larger file: the fixed costs weigh less)
HEAVY = {"factors": 0}


def fifty(root: Path, broken: bool) -> None:
    """One file of 50 lemmas whose ``ring`` proofs make a measurable compile; the 41st broken when asked."""
    root.mkdir(parents=True)
    parts = ["Require Import Arith.\n"]
    for i in range(50):
        proof = "exact I." if broken and i == 40 else "intros; ring."
        if HEAVY["factors"]:
            one, other = f"(a + b + c + d + {i})", f"(d + c + b + a + {i})"
            parts.append(f"Lemma l{i} : forall a b c d : nat, {' * '.join([one] * HEAVY['factors'])} * (a + b) = "
                         f"(b + a) * {' * '.join([other] * HEAVY['factors'])}.\nProof. {proof} Qed.\n\n")
            continue
        parts.append(f"Lemma l{i} : forall a b c : nat, (a + b + c + {i}) * (a + b + c) * (a + b) = "
                     f"(a + b) * (c + b + a) * (c + a + b + {i}).\nProof. {proof} Qed.\n\n")
    (root / "A.v").write_text("".join(parts), encoding="utf-8")
    (root / "_CoqProject").write_text("-R . Fifty\nA.v\n", encoding="utf-8")


def size(path: Path) -> tuple[int, int]:
    """(KB as ``du`` counts them without ``.cache``, bytes of the files themselves, each inode once as ``du`` does)."""
    du = subprocess.run(["du", "-sk", "--exclude=.cache", str(path)], capture_output=True, text=True, check=True).stdout
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        if ".cache" in dirnames and Path(dirpath) == path:
            dirnames.remove(".cache")
        for name in filenames:
            info = os.lstat(os.path.join(dirpath, name))
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_size
    return int(du.split()[0]), total


def runs(args: argparse.Namespace) -> None:
    lib = Path(args.dir) / "lib"
    shutil.rmtree(lib, ignore_errors=True)
    library(lib)
    collect = [*PYTEST, "--forall-project=.", "--collect-only", "-q"]
    for sample in range(3):
        seconds, last = timed(collect, lib)
        print(f"collect-only before any run: {seconds:.2f} s ({last}); load {load()}", flush=True)
    previous = previous_kb = 0
    for n in range(1, args.runs + 1):
        seconds, last = timed([*PYTEST, "--forall-project=.", "--forall-frontend", "replay", "-q",
                               "--forall-run-id", f"r{n}"], lib)
        kb, data = size(lib / "reports")
        own_kb, own = size(lib / "reports" / f"r{n}")
        print(f"run {n}: {seconds:.1f} s ({last}); reports/ without .cache {kb / 1024:.1f} MB du, "
              f"(+{(kb - previous_kb) / 1024:.1f}), {data / 1e6:.2f} MB of files (+{(data - previous) / 1e6:.2f}); "
              f"this run's directory {own_kb} KB du, "
              f"{own / 1e3:.0f} KB of files; load {load()}", flush=True)
        previous, previous_kb = data, kb
        if n in (1, args.runs):
            for sample in range(3):
                seconds, last = timed(collect, lib)
                print(f"collect-only after run {n}: {seconds:.2f} s ({last}); load {load()}", flush=True)


def broken(args: argparse.Namespace) -> None:
    where = Path(args.dir)
    shutil.rmtree(where / "ok", ignore_errors=True)
    shutil.rmtree(where / "lib", ignore_errors=True)
    shutil.rmtree(where / "cache", ignore_errors=True)
    fifty(where / "ok", False)
    fifty(where / "lib", not args.intact)
    compile_ = ["coqc", "-q", "-R", ".", "Fifty", "A.v"]
    compiles: list[tuple[float, float]] = []

    def own_compile(when: str) -> None:
        (where / "ok" / "A.vo").unlink(missing_ok=True)
        seconds, _, used = tree_timed(compile_, where / "ok")
        compiles.append((seconds, used))
        print(f"coqc of the unbroken file{when}: {seconds:.2f} s, CPU {used:.2f} s; load {load()}", flush=True)

    own_compile("")
    run = [*PYTEST, "--forall-project=.", "--forall-frontend", "replay", "-q", f"--forall-cache-dir={where / 'cache'}"]
    if args.trace:
        run += ["-p", "forall_proc_trace"]
    if args.warm:
        shutil.rmtree(where / "lib")
        fifty(where / "lib", False)
        seconds, last = timed([*run, "--forall-run-id", "ok"], where / "lib")
        print(f"the run on the unbroken file (fills the cache): {seconds:.1f} s ({last}); load {load()}", flush=True)
        text = (where / "lib" / "A.v").read_text(encoding="utf-8")
        at = text.index("intros; ring.", text.index("Lemma l40 "))
        if not args.intact:
            (where / "lib" / "A.v").write_text(text[:at] + "exact I." + text[at + len("intros; ring."):],
                                               encoding="utf-8")
    seconds, last, used = tree_timed([*run, "--forall-run-id", "b"], where / "lib", args.trace)
    print(f"pytest on the {'unbroken' if args.intact else 'broken'} file ({'warm' if args.warm else 'cold'}): {seconds:.1f} s, CPU {used:.2f} s "
          f"({last}); load {load()}", flush=True)
    for n in range(2):
        own_compile(" again")
    wall, cpu_s = (sum(c[i] for c in compiles) / len(compiles) for i in (0, 1))
    print(f"the run against the file's own compile (mean of {len(compiles)}): CPU {used / cpu_s:.2f}x "
          f"({used:.2f} s / {cpu_s:.2f} s), wall {seconds / wall:.2f}x ({seconds:.1f} s / {wall:.2f} s); Python's "
          f"bytecode cache {'on' if 'PYTHONDONTWRITEBYTECODE' not in env() else 'off'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("runs")
    one.add_argument("--runs", type=int, default=20)
    one.add_argument("--dir", default="")
    two = sub.add_parser("broken")
    two.add_argument("--dir", default="")
    two.add_argument("--warm", action="store_true")
    two.add_argument("--trace", default="", help="write the run's subprocesses to this file")
    two.add_argument("--pyc", action="store_true", help="Python's bytecode cache on (PYTHONDONTWRITEBYTECODE unset)")
    two.add_argument("--intact", action="store_true", help="the run on the unbroken file (what any cold run costs)")
    two.add_argument("--heavy", type=int, default=0, help="each lemma a product of this many sums (a larger file)")
    args = parser.parse_args()
    BYTECODE["keep"] = bool(getattr(args, "pyc", False))
    HEAVY["factors"] = int(getattr(args, "heavy", 0))
    args.dir = args.dir or tempfile.mkdtemp(prefix=f"bench-gate-{args.what}-")
    print(f"in {args.dir}", flush=True)
    {"runs": runs, "broken": broken}[args.what](args)


if __name__ == "__main__":
    main()
