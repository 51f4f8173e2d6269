"""Issue 33 (item 18): the Rocq backend does not compile the same candidate twice.

An actor's ``compile`` tool and its ``submit`` of the same bytes used to cost two coqc runs on one backend; the
verifier now takes the tool's clean compile (the same bytes, library name, flags, load path and runner) and still
runs the judge and coqchk on its library. A compile that timed out, was killed or failed, or that took longer than
the verifier's own budget, is never reused; other bytes are compiled again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import PUTNAM, require_path, require_tool
from pytest_forall.core.proc import ProcResult, run_command
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.rocq.backend import RocqProver

TEMPLATE = PUTNAM / "coq" / "src" / "putnam_2001_a1.v"
PROOF = ("Proof.\n  intros a b.\n  pose proof (hop (op b a) b) as H.\n  rewrite (hop b a) in H.\n  exact H.\nQed.")


class Counting:
    """A runner that runs every prover call and keeps the candidate compiles' argv (``coqc … -time …``); ``slow``
    reports the next compile as taking that many seconds, ``stall`` as timed out (the compile still runs)."""

    def __init__(self) -> None:
        self.compiles = 0
        self.slow = 0.0
        self.stall = False

    def __call__(self, argv: list[str], **kwargs: Any) -> ProcResult:
        result = run_command(argv, **kwargs)
        if "-time" in argv:
            self.compiles += 1
            if self.stall:
                self.stall = False
                result = ProcResult(result.argv, 124, result.stdout, result.stderr, result.duration, True)
            if self.slow:
                result.duration, self.slow = self.slow, 0.0
        return result


@pytest.fixture(scope="module")
def options() -> dict[str, Any]:
    """The machine's default cache, as the other verifier tests use it: the judge plugin and the template are built
    once for them all."""
    require_tool("coqc")
    require_tool("coqchk")
    require_path(TEMPLATE, "PutnamBench's putnam_2001_a1.v")
    return {}


def _task() -> Any:
    return task_from_template("rocq", TEMPLATE)


def _candidate(proof: str = PROOF) -> bytes:
    text = TEMPLATE.read_text(encoding="utf-8")
    return (text[:text.rindex("Proof.")] + proof + "\n").encode()


def _tool_compile(prover: RocqProver, data: bytes, where: Path, timeout: float = 300) -> Any:
    """What the actor's ``compile`` tool does (tools/item.py): the template check, then ``prover.compile``."""
    task = _task()
    assert prover.check_template(task, where, timeout).ok
    candidate = where / "cand" / task.candidate_name
    candidate.parent.mkdir(parents=True, exist_ok=True)
    candidate.write_bytes(data)
    return prover.compile(task, where, candidate, timeout)


def _shape(verdict: Any) -> list[tuple[str, Any, bool]]:
    return [(layer.name, layer.ok, layer.infra) for layer in verdict.layers]


def test_a_submitted_candidate_the_tool_compiled_is_not_compiled_again(options: dict[str, Any], tmp_path: Path) -> None:
    """compile() then submit() of the same bytes: one coqc, and the verdict of a backend that compiled afresh."""
    runner = Counting()
    prover = RocqProver(options, runner=runner)
    data = _candidate()
    assert _tool_compile(prover, data, tmp_path / "tool").ok
    assert runner.compiles == 1
    verdict = verify_candidate(_task(), prover, data, builddir=tmp_path / "submit")
    assert runner.compiles == 1, "the submitted bytes were compiled again"
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason
    fresh = verify_candidate(_task(), RocqProver(options), data, builddir=tmp_path / "fresh")
    assert _shape(verdict) == _shape(fresh) and verdict.digest == fresh.digest and verdict.axioms == fresh.axioms
    assert verdict.layers[-1].name == "independent_check" and verdict.layers[-1].ok is True  # coqchk still ran
    # another byte is another candidate: compiled
    other = verify_candidate(_task(), prover, _candidate(PROOF.replace("exact H.", "apply H.")),
                             builddir=tmp_path / "other")
    assert runner.compiles == 2 and other.verdict == "accept", other.reason


@pytest.mark.parametrize("accident", ["stall", "slow"])
def test_a_compile_that_timed_out_or_took_longer_than_the_budget_is_not_reused(accident: str, options: dict[str, Any],
                                                                                 tmp_path: Path) -> None:
    """A timed-out compile is an accident of the machine, not a result; a compile that took longer than the
    verifier's budget would have timed out there: both are compiled again by the verifier."""
    runner = Counting()
    prover = RocqProver(options, runner=runner)
    data = _candidate()
    setattr(runner, accident, True if accident == "stall" else 200.0)
    first = _tool_compile(prover, data, tmp_path / "tool")
    assert first.ok is (accident == "slow")
    verdict = verify_candidate(_task(), prover, data, builddir=tmp_path / "submit", timeout=100)
    assert runner.compiles == 2
    assert verdict.verdict == "accept", verdict.reason
