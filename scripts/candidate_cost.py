"""What one Rocq candidate costs, in CPU seconds (issue 33 item 18; docs/measurements.md).

    python scripts/candidate_cost.py processes putnam_2000_a2 putnam_2008_a1   # each prover process of a verdict
    python scripts/candidate_cost.py flow putnam_2000_a2 …                     # compile tool, then submit
    python scripts/candidate_cost.py corpus OUT.json [BASE.json]               # every corpus verdict, compared
    python scripts/candidate_cost.py corpus-flow OUT.json [BASE.json]          # the same, compile tool first
    python scripts/candidate_cost.py kinds valid/putnam_2001_a1 cheat/wrong_proof …  # as shipped, by process

Names are ``tests/cheats/valid/`` entries. ``processes``: the layers in sequence, each prover call's
``RUSAGE_CHILDREN`` delta. ``flow``: an actor's ``compile`` tool then ``submit`` of the same bytes on one backend.
``kinds``: ``tests/cheats/<kind>/<name>`` entries (static layers off for ``kernel_layer`` cheats, so the kernel layer
judges them) verified as shipped (concurrent layers, sandboxed), each prover process's CPU by ``wait4`` (killed ones
too) and the whole verdict's (this process and its children), three repetitions each, medians. ``corpus``: every entry with the static layers on (and off for ``kernel_layer`` cheats), each on a fresh sandboxed
backend; with ``BASE.json`` (an earlier run's output) the verdicts are compared. ``corpus-flow``: the static layers
on only, each entry compiled by the ``compile`` tool's call first, on the backend that then judges it. The template cache is warm
throughout (``FORALL_COST_CACHE``, default a temporary directory); run it from the repository root.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_forall.core.model import Layer
from pytest_forall.core.proc import ProcResult
from pytest_forall.core.verify import resolve_template, task_from_template, verify_candidate
from pytest_forall.lang.rocq.backend import RocqProver

CHEATS = Path(__file__).resolve().parent.parent / "tests" / "cheats"
CACHE = os.environ.get("FORALL_COST_CACHE") or tempfile.mkdtemp(prefix="candidate-cost-")


def children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def everything() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return children() + used.ru_utime + used.ru_stime


def backend(extra: dict[str, Any] | None = None, cls: type[RocqProver] = RocqProver) -> RocqProver:
    return cls({"cache_dir": CACHE, "sandbox": "bwrap", "sandbox_audit_dir": f"{CACHE}/sandbox", **(extra or {})})


def entry_task(entry: Path) -> tuple[Any, bytes]:
    return task_from_template("rocq", resolve_template(entry / "template")), next(entry.glob("candidate.*")).read_bytes()


class Sequential(RocqProver):
    """The backend with its layers in sequence and each prover call's CPU printed."""

    concurrent_layers = False

    def _run(self, argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None,
             cpu_budget: bool = False) -> ProcResult:
        before = children()
        result = super()._run(argv, cwd, timeout, env, cpu_budget)
        what = " ".join(a for a in argv if a.endswith(".v") or a.startswith("ForallProblem."))
        print(f"  {children() - before:6.2f} s  {os.path.basename(argv[0]):7} {what}")
        return result


class NoStatic(RocqProver):
    concurrent_layers = False

    def static_layers(self, task: Any, text: str) -> list[Layer]:
        return []


class KernelSide(RocqProver):
    """The static layers off, the layers after the compile as shipped (concurrent where the verifier overlaps them)."""

    def static_layers(self, task: Any, text: str) -> list[Layer]:
        return []


def processes(names: list[str]) -> None:
    for name in names:
        task, data = entry_task(CHEATS / "valid" / name)
        prover = backend(cls=Sequential)
        with tempfile.TemporaryDirectory() as scratch:
            prover.check_template(task, Path(scratch), 300)  # warm, not counted
            print(name)
            verdict = verify_candidate(task, prover, data, builddir=Path(scratch) / "build", timeout=300)
        print(f"  verdict {verdict.verdict}")


def flow(names: list[str]) -> None:
    for name in names:
        task, data = entry_task(CHEATS / "valid" / name)
        prover = backend()
        with tempfile.TemporaryDirectory() as scratch:
            tool = Path(scratch) / "tool"
            (tool / "cand").mkdir(parents=True)
            prover.check_template(task, tool, 300)  # warm, not counted
            start = everything()
            (tool / "cand" / task.candidate_name).write_bytes(data)
            prover.compile(task, tool, tool / "cand" / task.candidate_name, 300)
            compiled = everything()
            verdict = verify_candidate(task, prover, data, builddir=Path(scratch) / "submit", timeout=300)
            done = everything()
        print(f"{name}: compile tool {compiled - start:.2f} s, submit {done - compiled:.2f} s, "
              f"total {done - start:.2f} s CPU; {verdict.verdict}")


def tool_compile(prover: RocqProver, task: Any, data: bytes, where: Path) -> None:
    """What the actor's ``compile`` tool does (tools/item.py): the template check, then ``prover.compile``."""
    (where / "cand").mkdir(parents=True)
    if prover.check_template(task, where, 300).ok:
        (where / "cand" / task.candidate_name).write_bytes(data)
        prover.compile(task, where, where / "cand" / task.candidate_name, 300)


def corpus(out: Path, base: Path | None, first_the_tool: bool = False) -> None:
    rows: dict[str, dict[str, Any]] = {}
    for entry in sorted(p for p in CHEATS.glob("*/*") if (p / "expect.json").is_file()):
        expect = json.loads((entry / "expect.json").read_text(encoding="utf-8"))
        if expect.get("prover", "rocq") != "rocq":
            continue
        task, data = entry_task(entry)
        extra = {"checker_timeout": expect["checker_timeout"]} if "checker_timeout" in expect else {}
        off = [("off", NoStatic)] if expect.get("kernel_layer") and not first_the_tool else []
        for mode, cls in [("on", RocqProver), *off]:
            before = children()
            prover = backend(extra, cls)
            with tempfile.TemporaryDirectory() as scratch:
                if first_the_tool:
                    tool_compile(prover, task, data, Path(scratch) / "tool")
                verdict = verify_candidate(task, prover, data, builddir=Path(scratch) / "b", timeout=300)
            first = next((layer for layer in verdict.layers if layer.ok is False or layer.infra), None)
            rows[f"{entry.parent.name}/{entry.name}/{mode}"] = {
                "verdict": verdict.verdict, "strict": verdict.strict, "axioms": list(verdict.axioms),
                "layers": [[layer.name, layer.ok, layer.infra] for layer in verdict.layers],
                "first": first.name if first else None, "reason": first.reason[:300] if first else "",
                "cpu": round(children() - before, 2)}
    out.write_text(json.dumps(rows, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(rows)} verdicts, {sum(r['cpu'] for r in rows.values()):.1f} s of prover CPU")
    if base is not None:
        old = json.loads(base.read_text(encoding="utf-8"))
        keys = ("verdict", "strict", "axioms", "layers", "first", "reason")
        differ = [k for k in rows if k not in old or any(rows[k][x] != old[k][x] for x in keys)]
        print(f"{len(differ)} differ from {base}: {differ}")


def kinds(names: list[str], repeat: int = 3) -> None:
    import ctypes
    import statistics
    import threading
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import forall_proc_trace as trace  # patches Popen: each reaped process's CPU by pid

    # a prover killed with its sandbox (coqchk beside a rejected candidate) leaves orphans: reparented here and reaped
    # below, so the total counts them (scripts/tree_cpu.py does the same for a whole command)
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER

    ticks = os.sysconf("SC_CLK_TCK")
    seen_chk: dict[int, float] = {}  # coqchk pid -> CPU seconds last seen in /proc (a killed one's rusage is lost)
    watching = threading.Event()

    def watch() -> None:
        while watching.is_set():
            for entry in os.scandir("/proc"):
                if entry.name.isdigit():
                    try:
                        stat = Path(entry.path, "stat").read_text()
                    except OSError:
                        continue
                    if "(coqchk)" in stat and mine(int(entry.name)):  # this process's, not another user's
                        fields = stat[stat.rindex(")") + 2:].split()
                        seen_chk[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
            time.sleep(0.1)

    def mine(pid: int) -> bool:
        while pid > 1:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                return False
            pid = int(stat[stat.rindex(")") + 2:].split()[1])
            if pid == os.getpid():
                return True
        return False

    def reap() -> None:
        time.sleep(0.5)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    return
            except ChildProcessError:
                return

    for name in names:
        entry = CHEATS / name
        expect = json.loads((entry / "expect.json").read_text(encoding="utf-8")) if "cheat/" in name else {}
        task, data = entry_task(entry)
        cls = KernelSide if expect.get("kernel_layer") else RocqProver
        totals: list[float] = []
        watched: list[float] = []  # coqchk's CPU as /proc showed it while it ran (killed ones included)
        tools: dict[str, list[float]] = {}
        for _ in range(repeat):
            prover = backend(cls=cls)
            with tempfile.TemporaryDirectory() as scratch:
                prover.check_template(task, Path(scratch), 300)  # warm, not counted
                del trace.LOG[:]
                before = everything()
                seen_chk.clear()
                watching.set()
                watcher = threading.Thread(target=watch)
                watcher.start()
                verdict = verify_candidate(task, prover, data, builddir=Path(scratch) / "b", timeout=300)
                watching.clear()
                watcher.join()
                reap()
                totals.append(everything() - before)
                watched.append(sum(seen_chk.values()))
            seen: dict[str, float] = {}
            for _start, _end, _thread, what in trace.LOG:
                used, _, command = what.partition("] ")
                words = command.split(" ")  # the sandbox's own init runs the tool: find it among the words
                tool = ("judge" if "audit.v" in words else "coqchk" if "coqchk" in words else
                        "compile" if "coqc" in words else words[0])
                if used.startswith("[CPU "):
                    seen[tool] = seen.get(tool, 0.0) + float(used[5:-2])
            for tool, spent in seen.items():
                tools.setdefault(tool, []).append(spent)
        first = next((layer.name for layer in verdict.layers if layer.ok is False or layer.infra), "-")
        parts = ", ".join(f"{tool} {statistics.median(cpu):.2f}" for tool, cpu in sorted(tools.items()))
        rest = statistics.median(totals) - sum(statistics.median(cpu) for cpu in tools.values())
        print(f"{name}: {verdict.verdict} at {first}; total {statistics.median(totals):.2f} s CPU ({parts}); "
              f"python and killed orphans {rest:.2f}; coqchk seen in /proc {statistics.median(watched):.2f}")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("processes", "flow", "corpus", "corpus-flow", "kinds"):
        print(__doc__, file=sys.stderr)
        return 2
    os.environ.setdefault("PUTNAMBENCH_ROOT", str(CHEATS.parents[2] / "shared" / "benchmarks" / "PutnamBench"))
    if argv[0] == "processes":
        processes(argv[1:])
    elif argv[0] == "kinds":
        kinds(argv[1:])
    elif argv[0] == "flow":
        flow(argv[1:])
    else:
        corpus(Path(argv[1]), Path(argv[2]) if len(argv) > 2 else None, argv[0] == "corpus-flow")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
