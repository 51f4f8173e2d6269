"""An infrastructure cause is never recorded as a proof outcome, and a proof's own failure never as infra.

A compile's budget is CPU seconds of its process tree; the wall clock is only a backstop
(``core.proc.CPU_WALL_FACTOR`` times longer). A candidate that spends its CPU budget failed (its own cost, however
slow the machine); a compile the backstop ends with its budget unspent was starved by the machine's load or stopped:
the verdict is infra (resumable, never cached), and the protocol ends the item as infra instead of telling the actor
its proof was too slow.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import PUTNAM, REPO, require_path, require_tool
from pytest_forall.core import cache as vcache
from pytest_forall.core.model import INFRA, REJECT
from pytest_forall.core.proc import ProcResult, run_command
from pytest_forall.core.verify import task_from_template

PROOF = REPO / "tests" / "data" / "proofs" / "putnam_2001_a1.v"
#: burns CPU until killed (a candidate's computation)
BURN = ["/bin/sh", "-c", "while :; do :; done"]
#: stops itself (SIGSTOP): no CPU while the wall clock runs, as a process the machine never schedules
STOP = ["/bin/sh", "-c", "kill -STOP $$; echo resumed"]


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_cpu_budget_tells_a_spent_budget_from_a_starved_run(sandbox: str, tmp_path: Path) -> None:
    """The same runner call shape the prover uses (``cpu_s`` budget, ``timeout`` the backstop): a burning process is
    killed by its budget (not starved: its own cost); a stopped one by the backstop with its budget unspent
    (starved: the machine's). Unsandboxed and in the sandbox (the default for ``forall verify``)."""
    if sandbox == "bwrap":
        require_tool("bwrap")
        from pytest_forall.isolation.sandbox import prover_runner

        run: Any = prover_runner(tmp_path / "log")
    else:
        run = run_command
    tmp_path = tmp_path / "work"
    tmp_path.mkdir()
    burnt = run(BURN, cwd=tmp_path, timeout=60, cpu_s=0.5)
    assert burnt.timed_out and burnt.extra["cpu_spent"] and burnt.extra["cpu_used_s"] >= 0.5, burnt.extra
    assert burnt.accident == "timed out" and not burnt.starved
    assert burnt.duration < 60, "the budget, not the backstop, ended it"
    stopped = run(STOP, cwd=tmp_path, timeout=1.5, cpu_s=30)
    assert stopped.timed_out and not stopped.extra["cpu_spent"], stopped.extra
    assert "wall-clock backstop" in stopped.starved and "of its 30 s CPU budget" in stopped.starved
    plain = run(STOP, cwd=tmp_path, timeout=0.5)  # no budget: a plain wall limit, nothing to tell apart
    assert plain.timed_out and not plain.starved


def test_the_cpu_of_a_child_that_ended_counts_against_the_budget(tmp_path: Path) -> None:
    """A child that computed and ended (``native_compute``'s compiler under coqc) is the tree's cost too: its parent's
    ``cutime`` is read with the tree. Before, only live processes counted, and a candidate's work in short-lived
    children was free."""
    burn_then_sleep = ["/bin/sh", "-c", "(i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done); exec sleep 60"]
    result = run_command(burn_then_sleep, cwd=tmp_path, timeout=8, cpu_s=60)
    assert result.timed_out and result.extra["cpu_used_s"] >= 0.1, result.extra


class Machine:
    """The real tools, except the candidate's compile (``-time``): ``stopped`` runs coqc SIGSTOPped under a 2 s wall
    backstop (its CPU budget unchanged), ``budget`` gives it ``budget`` CPU seconds (its backstop unchanged)."""

    def __init__(self) -> None:
        self.stopped = False
        self.budget: float | None = None
        self.calls: list[dict[str, Any]] = []

    def __call__(self, argv: Sequence[str], *, cwd: Path | str, timeout: float | None, **kw: Any) -> ProcResult:
        if "-time" in argv:
            self.calls.append({"timeout": timeout, **kw})
            if self.stopped:
                return run_command(["/bin/sh", "-c", 'kill -STOP $$; exec "$@"', "coqc", *argv], cwd=cwd,
                                   timeout=2, **kw)
            if self.budget is not None:
                kw["cpu_s"] = self.budget
        return run_command(argv, cwd=cwd, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Machine]:
    require_tool("coqc")
    template = require_path(PUTNAM / "coq" / "src" / "putnam_2001_a1.v", "PutnamBench")
    from pytest_forall.lang.rocq.backend import RocqProver

    where = tmp_path_factory.mktemp("infra-honesty")
    runner = Machine()
    prover = RocqProver({"cache_dir": str(where / "templates")}, runner=runner)
    return task_from_template("rocq", template), prover, runner


def test_a_compile_stopped_by_the_machine_is_infra_never_a_rejection(machine: tuple[Any, Any, Machine],
                                                                     tmp_path: Path) -> None:
    """coqc SIGSTOPped (a process the loaded machine does not run) until the wall backstop: the verdict on an honest
    proof is infra, naming the starved compile, and is not cached. Before, it was a rejection "timed out" that the
    protocol sent back to the actor as its proof's failure."""
    task, prover, runner = machine
    runner.stopped, runner.budget = True, None
    cache = vcache.VerdictCache(tmp_path / "verdicts", "readwrite")
    verdict, hit = vcache.verify_cached(cache, task, prover, PROOF.read_bytes(), timeout=300)
    runner.stopped = False
    assert not hit and verdict.verdict == INFRA, verdict.to_wire()
    assert runner.calls[-1]["cpu_s"] == 300, "the compile's budget is CPU seconds"
    elaboration = next(layer for layer in verdict.layers if layer.name == "elaboration")
    assert elaboration.infra and "wall-clock backstop" in elaboration.reason, elaboration
    assert not list((tmp_path / "verdicts").glob("*/*.json")), "an infra verdict was stored"


def test_a_candidate_that_spends_its_cpu_budget_is_rejected(machine: tuple[Any, Any, Machine],
                                                            tmp_path: Path) -> None:
    """A candidate whose proof computes past its CPU budget failed, however loaded the machine (its budget is CPU,
    not wall): a rejection that says so, marked as an accident (not cached: a larger budget may judge it)."""
    task, prover, runner = machine
    looping = PROOF.read_text().replace("Proof.", "Proof.\n  do 100000000 (do 100000000 idtac).", 1).encode()
    runner.stopped, runner.budget = False, 1.0
    cache = vcache.VerdictCache(tmp_path / "verdicts", "readwrite")
    verdict, hit = vcache.verify_cached(cache, task, prover, looping, timeout=300)
    runner.budget = None
    assert not hit and verdict.verdict == REJECT, verdict.to_wire()
    elaboration = next(layer for layer in verdict.layers if layer.name == "elaboration")
    assert elaboration.ok is False and not elaboration.infra, elaboration
    assert elaboration.evidence["accident"] == "timed out" and "of CPU" in elaboration.reason, elaboration
    assert not list((tmp_path / "verdicts").glob("*/*.json")), "an accident was stored"


# --- a question to the toolchain that gets no answer is infra, never "not installed" ------------------------------

@pytest.fixture
def fake_coqc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Installs a ``coqc`` first on PATH that runs ``body`` (sh); the probes' per-process answers are forgotten before
    and after the test, and their CPU budget is 0.2 s (a 2 s wall backstop)."""
    from pytest_forall.lang.rocq import backend, tactics, toolchain

    def forget() -> None:
        tactics.contrib_installed.cache_clear()
        toolchain.coqc_where.cache_clear()

    def install(body: str) -> Path:
        tool = tmp_path / "bin" / "coqc"
        tool.parent.mkdir(exist_ok=True)
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
        return tool

    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setattr(toolchain, "PROBE_CPU_SECONDS", 0.2)
    monkeypatch.setattr(backend, "PROBE_CPU_SECONDS", 0.2)  # its copy (the fingerprint's coqc --version)
    forget()
    yield install
    forget()


@pytest.mark.parametrize("body, why", [("kill -STOP $$", "wall-clock backstop"), ("kill -SEGV $$", "killed by signal 11"),
                                       ("exit 2", "exit 2")])
def test_a_library_probe_without_an_answer_is_infra_never_not_installed(fake_coqc: Any, body: str, why: str) -> None:
    """``coqc -where`` stalled (stopped by the machine), crashed or failing: before, "hammer not installed" for the
    whole process (a 30 s wall timeout, answer cached), so the portfolio's ladder silently lost CoqHammer's tactics.
    Now the probe raises (the portfolio's turn is then ``probe`` infra), and is asked again on the next call."""
    from pytest_forall.core.prover import ToolchainProbeFailed
    from pytest_forall.lang.rocq.tactics import contrib_installed, hammer_installed

    fake_coqc(body)
    with pytest.raises(ToolchainProbeFailed, match=why):
        hammer_installed()
    library = fake_coqc("").parent / "lib"
    (library / "user-contrib" / "Hammer" / "Tactics").mkdir(parents=True)
    answering = fake_coqc(f"echo {library}")
    assert hammer_installed() and not contrib_installed("Interval", "Tactic.vo")  # asked again, answered
    answering.write_text("#!/bin/sh\nexit 2\n")
    assert hammer_installed(), "an answer is kept for the process"


def test_a_portfolio_turn_whose_library_probe_fails_is_probe_infra(fake_coqc: Any, tmp_path: Path) -> None:
    """The portfolio's ladder asks whether CoqHammer is installed; no answer ends the turn as ``probe`` infra (the
    protocol's item outcome infra, resumable), not a ladder without CoqHammer's tactics that found nothing."""
    from types import SimpleNamespace

    from pytest_forall.agents.portfolio import PortfolioSession
    from pytest_forall.core.outcomes import infra_stop, outcome_of

    fake_coqc("kill -STOP $$")
    task = SimpleNamespace(prover="rocq")
    prover = SimpleNamespace(try_tactics=lambda *a, **k: pytest.fail("the ladder ran without its probe's answer"))
    ctx = SimpleNamespace(task=task, prover=prover, workspace=tmp_path, audit_dir=tmp_path, budget=SimpleNamespace(
        compiles=None), charge_compile=None, say=None)
    session = PortfolioSession(ctx, 1.0, ladder=True)  # type: ignore[arg-type]
    session.audited = True  # the search is the audit's (tests/test_audit_*.py); here the ladder alone
    turn = session.turn("", timeout=None)
    assert turn.infra.startswith("probe: ") and "wall-clock backstop" in turn.infra, turn
    assert outcome_of(infra_stop(turn.infra)) == "infra"


def test_a_version_probe_that_stalls_is_infra_for_the_verifier_and_asked_again(fake_coqc: Any, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``coqc --version`` stopped past its wall limit: before, the failed answer was kept for the process and the coqc
    on PATH was silently read as Coq 8.16 (its flags, its axiom names) for the whole run. Now the backend's probe layer
    says so (the verdict is infra, "toolchain"), and the next probe asks again."""
    from pytest_forall.core.model import INFRA
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq import toolchain
    from pytest_forall.lang.rocq.backend import RocqProver

    monkeypatch.setattr(toolchain, "VERSION_WALL_SECONDS", 1.0)
    monkeypatch.setattr(toolchain, "_PROBED", {})
    fake_coqc("kill -STOP $$")
    prover = RocqProver({"cache_dir": str(tmp_path / "cache")})
    assert "coqc --version timed out" in prover.probe(tmp_path), prover.probe(tmp_path)
    assert not toolchain._PROBED, "a probe without an answer was kept"
    task = task_from_template("rocq", require_path(PUTNAM / "coq" / "src" / "putnam_2001_a1.v", "PutnamBench"))
    verdict = verify_candidate(task, prover, PROOF.read_bytes(), builddir=tmp_path / "build")
    assert verdict.verdict == INFRA and verdict.layers[-1].name == "toolchain", verdict.to_wire()
    assert "gave no answer" in verdict.kernel.get("problem", ""), verdict.kernel  # the kernel is not named either
