"""The verifier overlaps two prover processes where its layers allow it, and kills the one it no longer needs.

A backend that declares ``concurrent_layers`` (Rocq) gets its candidate compiled beside the template check and,
while a core is idle, ``coqchk`` run beside the kernel judge's audit; the verdict is the one the sequential order
gives, and a rejection by the audit kills the running checker instead of waiting for it. On a busy machine coqchk
starts only once the judge passed, so a rejected candidate pays for no checker (issue 33 item 18). A backend that
says nothing keeps the sequential order: a later step never starts when an earlier layer rejected.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import PUTNAM, require_tool
from pytest_forall.core import verify as verify_module
from pytest_forall.core.model import Layer
from pytest_forall.core.proc import in_background, run_command
from pytest_forall.core.prover import AxiomAudit, CompileResult
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.rocq.backend import CHECKER_CLAUSE, RocqProver

PROOFS = Path(__file__).parent / "data" / "proofs"
SRC = PUTNAM / "coq" / "src"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def _sleeper(marker: Path) -> Any:
    """A step that records the pid of the process it starts, then waits a minute for it."""

    def step() -> Any:
        return run_command(["/bin/sh", "-c", f"echo $$ > {marker}; exec sleep 60"], cwd=marker.parent, timeout=120)

    return step


def test_leaving_the_block_early_kills_the_background_step(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    started = time.monotonic()
    with in_background(_sleeper(marker)) as future:
        while not marker.is_file() or not marker.read_text().strip():
            time.sleep(0.02)
        pid = int(marker.read_text())
        assert _alive(pid)
    assert time.monotonic() - started < 15, "the block waited for the step instead of killing it"
    assert future.done() and future.result().returncode != 0
    assert not _alive(pid)


def test_an_exception_in_the_block_also_kills_the_step(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    with pytest.raises(KeyboardInterrupt), in_background(_sleeper(marker)):
        while not marker.is_file() or not marker.read_text().strip():
            time.sleep(0.02)
        raise KeyboardInterrupt  # what forall verify's signal handler raises (Terminated) unwinds the same way
    assert not _alive(int(marker.read_text()))


def test_the_block_gets_the_result_of_a_finished_step(tmp_path: Path) -> None:
    with in_background(lambda: run_command(["/bin/echo", "done"], cwd=tmp_path, timeout=30)) as future:
        assert future.result().stdout == "done\n"


def test_a_sandboxed_step_is_killed_with_its_sandbox(tmp_path: Path) -> None:
    require_tool("bwrap")
    from pytest_forall.isolation.sandbox import sandboxed_prover_runner

    runner = sandboxed_prover_runner(tmp_path / "audit")
    assert not isinstance(runner, str), runner
    work = tmp_path / "work"
    work.mkdir()
    started = time.monotonic()
    with in_background(lambda: runner(["/bin/sh", "-c", "echo up > up; exec sleep 60"], cwd=work,
                                      timeout=120)) as future:
        while not (work / "up").is_file():
            time.sleep(0.02)
    assert time.monotonic() - started < 20
    assert future.result().returncode != 0
    record = json.loads((tmp_path / "audit" / "sandbox.jsonl").read_text().splitlines()[-1])
    assert record["outcome"]["duration"] < 20 and record["outcome"]["survivors"] in ([], None)


# --- the order of the layers, for a backend without concurrent layers -------------------------------------------

class Recording:
    """A pure-Python backend that records which steps ran; ``reject`` names the layer that fails."""

    name = "recording"
    ext = "v"

    def __init__(self, reject: str) -> None:
        self.reject = reject
        self.calls: list[str] = []

    def probe(self, workspace: Path) -> str:
        return ""

    def static_layers(self, task: Any, text: str) -> list[Layer]:
        return []

    def check_template(self, task: Any, workspace: Path, timeout: float) -> CompileResult:
        self.calls.append("template")
        return CompileResult(ok=self.reject != "template", infra="broken template" if self.reject == "template" else "")

    def compile(self, task: Any, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
        from pytest_forall.core.model import sha256_bytes

        self.calls.append("compile")
        return CompileResult(ok=True, digest=sha256_bytes(candidate.read_bytes()))

    def statement_check(self, task: Any, workspace: Path, timeout: float) -> Layer:
        self.calls.append("statement")
        return Layer("elaborated_statement", self.reject != "statement", "differs" if self.reject == "statement" else "")

    def audit_axioms(self, task: Any, workspace: Path, candidate: Path, timeout: float) -> AxiomAudit:
        self.calls.append("audit")
        return AxiomAudit(ok=True, strict_ok=True, rules_ok=self.reject != "audit")

    def independent_check(self, task: Any, workspace: Path, candidate: Path, timeout: float) -> Layer:
        self.calls.append("checker")
        return Layer("independent_check", True)


class ConcurrentRecording(Recording):
    """The same backend declaring ``concurrent_layers``, as Rocq does."""

    concurrent_layers = True


@pytest.mark.parametrize("reject", ["statement", "audit", ""])
def test_on_a_busy_machine_the_checker_starts_only_after_the_judge_passed(
        reject: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No core idle: a concurrent backend's checker is not started beside the audit, so a candidate the judge rejects
    causes no checker run, and an accepted one still gets the checker's verdict, after the audit."""
    monkeypatch.setattr(verify_module, "_idle_core", lambda: False)
    prover = ConcurrentRecording(reject)
    task = task_from_template("rocq", SRC / "putnam_2001_a1.v")
    verdict = verify_candidate(task, prover, b"Theorem x : True. Proof. exact I. Qed.\n", builddir=tmp_path)
    assert verdict.accepted == (reject == "")
    if reject:  # the step that rejected was the last: no checker before, beside or after it
        assert prover.calls[-1] == reject and "checker" not in prover.calls, prover.calls
    else:
        assert prover.calls[-2:] == ["audit", "checker"], prover.calls


@pytest.mark.parametrize(("load", "cores", "idle"), [(0.3, 2, True), (1.0, 2, True), (1.4, 2, False), (7.5, 2, False),
                                                      (0.0, 1, False), (2.5, 4, True)])
def test_a_core_is_idle_while_the_load_leaves_one_unused(load: float, cores: int, idle: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(verify_module.os, "sched_getaffinity", lambda _pid: set(range(cores)))
    assert verify_module._idle_core() is idle


@pytest.mark.parametrize(("reject", "calls"), [
    ("template", ["template"]),
    ("statement", ["template", "compile", "statement"]),
    ("audit", ["template", "compile", "statement", "audit"]),
    ("", ["template", "compile", "statement", "audit", "checker"]),
])
def test_a_backend_that_says_nothing_runs_each_step_only_after_the_earlier_layers_passed(
        reject: str, calls: list[str], tmp_path: Path) -> None:
    prover = Recording(reject)
    task = task_from_template("rocq", SRC / "putnam_2001_a1.v")
    verdict = verify_candidate(task, prover, b"Theorem x : True. Proof. exact I. Qed.\n", builddir=tmp_path)
    assert prover.calls == calls
    assert verdict.accepted == (reject == "")


# --- on the real kernel ------------------------------------------------------------------------------------------

def _sequential() -> RocqProver:
    prover = RocqProver({"sandbox": "none"})
    prover.concurrent_layers = False
    return prover


def test_overlapping_layers_give_the_sequential_verdict_on_real_proofs(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    require_tool("coqc")
    require_tool("bwrap")
    monkeypatch.setattr(verify_module, "_idle_core", lambda: True)  # an idle core: coqchk beside the judge
    for problem in ("putnam_2001_a1", "putnam_2008_a1"):
        task = task_from_template("rocq", SRC / f"{problem}.v")
        data = (PROOFS / f"{problem}.v").read_bytes()
        audit = tmp_path / problem / "audit"
        together = verify_candidate(task, RocqProver({"sandbox": "bwrap", "sandbox_audit_dir": str(audit)}), data,
                                    builddir=tmp_path / problem / "a")
        apart = verify_candidate(task, _sequential(), data, builddir=tmp_path / problem / "b")
        assert together.accepted and together.strict
        assert ([(layer.name, layer.ok) for layer in together.layers]
                == [(layer.name, layer.ok) for layer in apart.layers])
        assert (together.digest, together.axioms, together.guarantee) == (apart.digest, apart.axioms, apart.guarantee)
        # the two processes after the compile really ran at the same time: coqchk and the judge's audit file
        runs = [json.loads(line) for line in (audit / "sandbox.jsonl").read_text().splitlines()]
        checker = next(r for r in runs if r["argv"][0].endswith("coqchk"))
        judge = [r for r in runs if r["argv"][-1] == "audit.v"][-1]
        spans = [(r["ts"], r["ts"] + r["outcome"]["duration"]) for r in (checker, judge)]
        assert max(s for s, _ in spans) < min(e for _, e in spans), spans


class SlowChecker(RocqProver):
    """The real backend whose independent checker would take a minute: it must be killed, not awaited."""

    def __init__(self, marker: Path) -> None:
        super().__init__({"sandbox": "none"})
        self.marker = marker

    def independent_check(self, task: Any, workspace: Path, candidate: Path, timeout: float) -> Layer:
        result = self._run(["/bin/sh", "-c", f"echo $$ > {self.marker}; exec sleep 60"], workspace, 120)
        return Layer("independent_check", result.returncode == 0, "slow checker")


def test_a_statement_rejection_kills_the_running_checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_tool("coqc")
    monkeypatch.setattr(verify_module, "_idle_core", lambda: True)  # an idle core: the checker starts beside the judge
    text = (PROOFS / "putnam_2001_a1.v").read_text()
    weakened = text.replace("(hop : forall (a b: A), op (op a b) a = b)",
                            "(hop : forall (a b: A), op (op a b) a = b)\n    (extra : forall a b : A, a = b)")
    assert weakened != text
    prover = SlowChecker(tmp_path / "pid")
    task = task_from_template("rocq", SRC / "putnam_2001_a1.v")
    started = time.monotonic()
    prover.static_layers = lambda task, text: []  # type: ignore[method-assign]  # the kernel judge must reject
    verdict = verify_candidate(task, prover, weakened.encode(), builddir=tmp_path / "build", timeout=300)
    elapsed = time.monotonic() - started
    assert verdict.verdict == "reject"
    assert [layer.name for layer in verdict.layers][-1] == "elaborated_statement"
    assert "independent_check" not in [layer.name for layer in verdict.layers]
    assert (tmp_path / "pid").is_file(), "the checker did not run beside the judge"
    assert not _alive(int((tmp_path / "pid").read_text()))
    assert elapsed < 45, f"the verifier waited for the checker ({elapsed:.1f} s)"


class Traced(RocqProver):
    """The real backend recording each prover process it starts: the tool's name and when it started and ended."""

    def __init__(self) -> None:
        super().__init__({"sandbox": "none"})
        self.runs: list[tuple[str, str, float, float]] = []

    def _run(self, argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None,
             cpu_budget: bool = False) -> Any:
        began = time.monotonic()
        result = super()._run(argv, cwd, timeout, env, cpu_budget)
        self.runs.append((os.path.basename(argv[0]), argv[-1], began, time.monotonic()))
        return result


def test_on_a_busy_machine_a_rejected_candidate_starts_no_coqchk_and_an_accepted_one_keeps_its_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the real kernel, no core idle: a candidate the judge rejects, or the compile, causes no coqchk process; an
    honest proof's coqchk runs after the judge's audit ended, and its verdict is in the record (issue 33 item 18)."""
    require_tool("coqc")
    monkeypatch.setattr(verify_module, "_idle_core", lambda: False)
    task = task_from_template("rocq", SRC / "putnam_2001_a1.v")
    text = (PROOFS / "putnam_2001_a1.v").read_text()
    weakened = text.replace("(hop : forall (a b: A), op (op a b) a = b)",
                            "(hop : forall (a b: A), op (op a b) a = b)\n    (extra : forall a b : A, a = b)")
    wrong = text.replace("Qed.", "exact I. Qed.", 1)
    assert weakened != text and wrong != text
    for name, data, layer in [("weakened", weakened, "elaborated_statement"), ("wrong", wrong, "elaboration")]:
        prover = Traced()
        prover.static_layers = lambda task, text: []  # type: ignore[method-assign]  # the kernel layers must reject
        verdict = verify_candidate(task, prover, data.encode(), builddir=tmp_path / name, timeout=300)
        assert verdict.verdict == "reject" and next(x for x in verdict.layers if x.ok is False).name == layer
        assert "coqchk" not in [tool for tool, *_ in prover.runs], prover.runs
        if layer == "elaboration":  # a compile the candidate fails starts no judge either
            assert [what for _, what, *_ in prover.runs] == ["p/putnam_2001_a1.v"], prover.runs
    prover = Traced()
    verdict = verify_candidate(task, prover, text.encode(), builddir=tmp_path / "honest", timeout=300)
    assert verdict.accepted and verdict.strict and CHECKER_CLAUSE in verdict.guarantee
    check = next(layer for layer in verdict.layers if layer.name == "independent_check")
    assert check.ok and check.evidence["checker"] == "coqchk" and "Axioms" in check.evidence["summary"]
    judged = [run for run in prover.runs if run[1] == "audit.v"][-1]
    checked = next(run for run in prover.runs if run[0] == "coqchk")
    assert checked[2] >= judged[3], prover.runs
