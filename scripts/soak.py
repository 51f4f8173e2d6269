"""Soak: 50 PutnamBench Coq items (replay and portfolio) under -n 2, random worker kills and one Ctrl-C,
then resumes interleaved; checks every item ends with exactly one final row, none lost, JUnit matching
results.jsonl, and no orphan process.

    PUTNAMBENCH_ROOT=… nice -n 10 python scripts/soak.py [--items 50] [--kills 3] [--workdir DIR]

Sessions of the one run ``soak`` (issue 19): (1) the first run, with worker kills and a Ctrl-C; while it runs,
a ``--forall-resume soak`` is started, which must be refused (exit 4, naming the first controller's pid) and
record nothing; (2) a resume, itself interrupted by Ctrl-C part-way; (3) a resume to the end with
``--junitxml``, whose XML must hold every item of the run with the outcome of its row in results.jsonl.

Half the items are replayed (the real stored proofs of tests/data/proofs and tests/cheats/valid where the
problem has one, else the unmodified template, which the verifier rejects: a real coqc run either way), half
go to the tactic portfolio (one coqtop per item). A suite conftest picks the frontend per task. While pytest
runs, every process of its tree is sampled from ``ps``; after each run ends (and a grace period), any sampled
process still alive is an orphan. Prints a JSON report; exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FINAL = ("strict", "rules_only", "failed", "statement_false", "vacuous")
CONFTEST = '''
import pytest

from pytest_forall.plugin.options import resolved_options

REPLAY = set({replay!r})


@pytest.fixture
def forall_frontend(request, forall_task):
    """Replay for half the tasks, the portfolio for the others (the frontend is fixed per task)."""
    name = "replay" if forall_task.task_id in REPLAY else "portfolio"
    return request.node.ihook.pytest_forall_make_frontend(name=name, options=resolved_options(request.config))
'''


def stored_proofs() -> dict[str, Path]:
    """Real proofs of PutnamBench Coq problems kept in the repository, by task id."""
    found = {p.stem: p for p in (REPO / "tests" / "data" / "proofs").glob("putnam_*.v")}
    for case in sorted((REPO / "tests" / "cheats" / "valid").iterdir()):
        template = (case / "template").read_text().strip() if (case / "template").exists() else ""
        name = Path(template).stem
        if name.startswith("putnam_") and name not in found and (case / "candidate.v").exists():
            found[name] = case / "candidate.v"
    return found


def prepare(workdir: Path, putnam: Path, count: int) -> tuple[list[str], list[str]]:
    """The suite directory: a PutnamBench-shaped root of ``count`` problems, the proof store, the conftest."""
    listed = [line.split("\t") for line in (putnam / "coq" / "compile_here.tsv").read_text().splitlines()]
    compiling = sorted(row[0] for row in listed if len(row) > 1 and row[1] == "0")
    proofs = {task: path for task, path in stored_proofs().items() if task in compiling}
    others = [task for task in compiling if task not in proofs]
    chosen = sorted([*proofs, *others[: count - len(proofs)]])
    replay = sorted([*proofs, *others[: count // 2 - len(proofs)]])
    src = workdir / "putnam" / "coq" / "src"
    src.mkdir(parents=True)
    store = workdir / "proofs"
    store.mkdir()
    for task in chosen:
        shutil.copyfile(putnam / "coq" / "src" / f"{task}.v", src / f"{task}.v")
        if task in replay:
            shutil.copyfile(proofs.get(task, src / f"{task}.v"), store / f"{task}.v")
    (workdir / "putnam.forall.toml").write_text('adapter = "putnam"\ntracks = ["coq"]\n')
    (workdir / "conftest.py").write_text(CONFTEST.format(replay=replay))
    (workdir / "pytest.ini").write_text("[pytest]\n")
    return chosen, replay


class Sampler(threading.Thread):
    """Every process that is ever part of the pytest tree, as (pid, start time) -> command line."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.seen: dict[tuple[int, str], str] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            table = ps()
            children: dict[int, list[int]] = {}
            for pid, (ppid, _, _) in table.items():
                children.setdefault(ppid, []).append(pid)
            todo = [self.root]
            while todo:
                pid = todo.pop()
                if pid in table:
                    _, start, args = table[pid]
                    self.seen[(pid, start)] = args
                todo.extend(children.get(pid, []))
            time.sleep(0.5)


def ps() -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, start time, command line), from ``ps``."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,lstart=,args="], capture_output=True, text=True,
                         check=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split(None, 7)
        if len(parts) >= 7:
            table[int(parts[0])] = (int(parts[1]), " ".join(parts[2:7]), parts[7] if len(parts) > 7 else "")
    return table


def orphans(seen: dict[tuple[int, str], str], grace: float) -> list[str]:
    """Sampled processes still alive after ``grace`` seconds (the run itself has exited)."""
    deadline = time.monotonic() + grace
    while True:
        alive = ps()
        left = [f"{pid} {args}" for (pid, start), args in seen.items() if pid in alive and alive[pid][1] == start]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(1)


def rows(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def workers(root: int) -> list[int]:
    """The xdist workers: python children of the controller."""
    return [pid for pid, (ppid, _, args) in ps().items() if ppid == root and "python" in args]


def pytest_argv(workdir: Path, putnam: Path, run_args: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q", "-n", "2",
            "--dist", "worksteal", f"--forall-putnam-root={putnam}", f"--forall-proofs={workdir / 'proofs'}",
            "--forall-frontend=portfolio", "--forall-rounds=1", *run_args]


def second_controller(workdir: Path, putnam: Path, owner: int) -> dict[str, Any]:
    """``--forall-resume soak`` while the run's controller ``owner`` lives: it must be refused, writing nothing."""
    run_dir = workdir / "reports" / "soak"
    before = (run_dir / "results.jsonl").read_bytes() if (run_dir / "results.jsonl").exists() else b""
    done = subprocess.run(pytest_argv(workdir, putnam, ["--forall-resume=soak"]), cwd=workdir, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600, check=False)
    after = (run_dir / "results.jsonl").read_bytes() if (run_dir / "results.jsonl").exists() else b""
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    return {"exit": done.returncode, "error": errors, "names_owner": any(f"pid {owner} on host" in e for e in errors),
            "results_unchanged": after.startswith(before) and len(after) - len(before) < 4096}


def run(workdir: Path, putnam: Path, run_args: list[str], *, kills: int, interrupt: int | None,
        expected: int, rng: random.Random, probe: bool = False) -> dict[str, Any]:
    """One pytest session; ``interrupt``: Ctrl-C once results.jsonl has that many rows; ``probe``: start a second
    controller of the same run once this one has written its first row of this session."""
    argv = pytest_argv(workdir, putnam, run_args)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    log = (workdir / f"pytest-{len(list(workdir.glob('pytest-*.log')))}.log").open("w")
    proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    sampler = Sampler(proc.pid)
    sampler.start()
    run_dir = workdir / "reports" / "soak"
    events: list[str] = []
    base = len(rows(run_dir))
    thresholds = sorted(base + n for n in rng.sample(range(3, max(4, expected // 2)), kills)) if kills else []
    probed: dict[str, Any] = {}
    while proc.poll() is None:
        done = len(rows(run_dir))
        if probe and not probed and done > base:
            probed = second_controller(workdir, putnam, proc.pid)
            events.append(f"{time.monotonic() - started:.0f}s: a second controller (--forall-resume soak) after "
                          f"{done} rows: exit {probed['exit']}")
        if thresholds and done >= thresholds[0]:
            victims = workers(proc.pid)
            if victims:
                victim = rng.choice(victims)
                os.kill(victim, signal.SIGKILL)
                events.append(f"{time.monotonic() - started:.0f}s: SIGKILL worker {victim} after {done} rows")
                thresholds.pop(0)
        elif interrupt is not None and not thresholds and done >= interrupt and (probed or not probe):
            os.killpg(proc.pid, signal.SIGINT)   # Ctrl-C in a terminal signals the whole foreground group
            events.append(f"{time.monotonic() - started:.0f}s: Ctrl-C (SIGINT to the process group) after {done} rows")
            interrupt = None
        time.sleep(0.5)
    sampler.stop.set()
    sampler.join()
    log.close()
    return {"argv": argv[2:], "exit": proc.returncode, "seconds": round(time.monotonic() - started, 1),
            "rows_written": len(rows(run_dir)) - base, "events": events, "second_controller": probed,
            "processes_sampled": len(sampler.seen), "orphans": orphans(sampler.seen, 15.0)}


def junit_outcomes(path: Path) -> dict[str, str]:
    """Test case name -> its forall.outcome property, from a JUnit XML file."""
    import xml.etree.ElementTree as ET

    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        found[str(case.get("name")).split("[", 1)[0]] = str(props.get("forall.outcome"))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()
    putnam = Path(os.environ.get("PUTNAMBENCH_ROOT", REPO.parent / "shared" / "benchmarks" / "PutnamBench"))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="forall-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    chosen, replay = prepare(workdir, putnam, args.items)
    run_dir = workdir / "reports" / "soak"
    first = run(workdir, workdir / "putnam", ["--forall-run-id=soak"], kills=args.kills,
                interrupt=len(chosen) * 2 // 5, expected=len(chosen), rng=rng, probe=True)
    after_first = rows(run_dir)
    pending = len(chosen) - len({r["task_id"] for r in after_first if r["outcome"] in FINAL})
    second = run(workdir, workdir / "putnam", ["--forall-resume=soak"], kills=0,
                 interrupt=len(after_first) + max(1, pending // 3), expected=len(chosen), rng=rng)
    after_second = rows(run_dir)
    xml = workdir / "resumed.xml"
    resumed = run(workdir, workdir / "putnam", ["--forall-resume=soak", f"--junitxml={xml}"], kills=0,
                  interrupt=None, expected=len(chosen), rng=rng)
    recorded = rows(run_dir)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in recorded:
        by_task.setdefault(str(row["task_id"]), []).append(row)
    final_counts = {task: sum(1 for r in by_task.get(task, []) if r["outcome"] in FINAL) for task in chosen}
    latest = {task: by_task[task][-1]["outcome"] if task in by_task else None for task in chosen}
    junit = junit_outcomes(xml) if xml.exists() else {}
    probe = first["second_controller"]
    sessions = json.loads((run_dir / "run.json").read_text()).get("sessions", [])

    def ran_only_non_final(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> bool:
        done = {str(r["task_id"]) for r in before if r["outcome"] in FINAL}
        return all(str(r["task_id"]) not in done for r in after[len(before):])

    checks = {
        "every item has exactly one final row": all(n == 1 for n in final_counts.values()),
        "every item's latest row is final (none lost)": all(o in FINAL for o in latest.values()),
        "a second controller while the first ran was refused (exit 4, naming its pid), recording nothing":
            bool(probe) and probe["exit"] == 4 and probe["names_owner"] and probe["results_unchanged"],
        "the interrupted sessions exited 2": first["exit"] == 2 and second["exit"] == 2,
        "each resume ran only items without a final row": ran_only_non_final(after_first, after_second)
            and ran_only_non_final(after_second, recorded),
        "the last resume's JUnit holds every item with its results.jsonl outcome": junit == {
            task: str(by_task[task][-1]["outcome"]) for task in chosen if task in by_task} and len(junit) == len(chosen),
        "run.json keeps the three sessions": [s.get("mode") for s in sessions] == ["new", "resume", "resume"]
            and [s.get("exitstatus") for s in sessions][:2] == [2, 2],
        "no orphan process": not first["orphans"] and not second["orphans"] and not resumed["orphans"],
    }
    report = {"workdir": str(workdir), "items": len(chosen), "replay": len(replay),
              "portfolio": len(chosen) - len(replay), "first": first, "second": second, "resume": resumed,
              "rows": len(recorded), "rows_after_first_run": len(after_first),
              "rows_after_second_run": len(after_second), "junit_cases": len(junit),
              "first_run_outcomes": _count(after_first), "final_outcomes": _count(
                  [by_task[t][-1] for t in chosen if t in by_task]),
              "infra_rows_of_first_run": sorted({str(r.get("stop")) for r in after_first if r["outcome"] == "infra"}),
              "checks": checks}
    print(json.dumps(report, indent=2))
    return 0 if all(checks.values()) else 1


def _count(items: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in items:
        counts[str(row["outcome"])] = counts.get(str(row["outcome"]), 0) + 1
    return dict(sorted(counts.items()))


if __name__ == "__main__":
    sys.exit(main())
