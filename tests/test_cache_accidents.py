"""The verdict cache stores judgements, not accidents (issue 19, item 4).

A proof that timed out once on a loaded machine was served ``failed`` from the cache (0.2 s) until the
environment changed: a lasting false regression under the gate. A verdict decided by a timeout or a killed
process says nothing lasting about the proof; it is never stored, and the next run judges the proof again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, require_tool
from pytest_forall.core import cache as vcache
from pytest_forall.core.model import ACCEPT, INFRA, REJECT
from pytest_forall.core.proc import ProcResult, run_command
from pytest_forall.core.verify import task_from_template

PROOF = REPO / "tests" / "data" / "proofs" / "putnam_2001_a1.v"
NORMAL = 300.0


class LoadedMachine:
    """A runner that gives the candidate's first compile no time (``tiny`` seconds, as a machine at load 20 would)
    or kills it (as the OOM killer would); every other call, and every later compile, runs as normal."""

    def __init__(self, accident: str) -> None:
        self.accident = accident
        self.hit = 0

    def __call__(self, argv: Sequence[str], *, cwd: Path | str, timeout: float | None, **kw: Any) -> ProcResult:
        first_compile = "-time" in argv and not self.hit
        if first_compile:
            self.hit += 1
            if self.accident == "timeout":
                return run_command(argv, cwd=cwd, timeout=0.01, **kw)
            return run_command(["/bin/sh", "-c", "kill -KILL $$"], cwd=cwd, timeout=timeout, **kw)
        return run_command(argv, cwd=cwd, timeout=timeout, **kw)


@pytest.mark.parametrize("accident", ["timeout", "killed"])
def test_a_timed_out_or_killed_compile_is_not_cached(tmp_path: Path, putnam_root: Path, accident: str) -> None:
    """The same proof, the same key (same ``timeout`` policy): first its compile gets a tiny wall-clock backstop (or
    is killed), then the normal one. The first verdict is not stored: a compile the backstop ended with its CPU
    budget unspent is infra (the machine starved it, tests/test_infra_honesty.py), a killed one a reject marked as
    an accident; the second is the real verdict (accept), judged by coqc, not served from the cache; then it is
    cached."""
    require_tool("coqc")
    from pytest_forall.lang.rocq.backend import RocqProver

    task = task_from_template("rocq", putnam_root / "coq" / "src" / "putnam_2001_a1.v")
    machine = LoadedMachine(accident)
    prover = RocqProver({"cache_dir": str(tmp_path / "templates")}, runner=machine)
    cache = vcache.VerdictCache(tmp_path / "verdicts", "readwrite")
    data = PROOF.read_bytes()

    first, hit = vcache.verify_cached(cache, task, prover, data, timeout=NORMAL)
    assert machine.hit == 1 and not hit
    assert first.verdict == (INFRA if accident == "timeout" else REJECT), first.to_wire()
    assert not list((tmp_path / "verdicts").glob("*/*.json")), "an accident was stored"

    second, hit = vcache.verify_cached(cache, task, prover, data, timeout=NORMAL)
    assert not hit and second.verdict == ACCEPT, second.reason
    elaboration = next(layer for layer in first.layers if layer.name == "elaboration")
    expected = "timed out" if accident == "timeout" else "killed by signal 9"
    assert elaboration.ok is False and elaboration.evidence["accident"] == expected
    assert elaboration.infra == (accident == "timeout"), elaboration
    third, hit = vcache.verify_cached(cache, task, prover, data, timeout=NORMAL)
    assert hit and third.verdict == ACCEPT   # a judgement is cached as before


def test_a_not_judged_check_that_timed_out_is_not_cached(tmp_path: Path) -> None:
    """An accept whose independent checker was killed at its budget ("not judged") is not kept either: with
    more time the next run judges it, instead of reading "not judged" from the cache forever."""
    from pytest_forall.core.model import Layer, Verdict

    cache = vcache.VerdictCache(tmp_path / "c", "readwrite")
    key = {"candidate": "d" * 64, "k": "v"}
    layers = (Layer("elaboration", True), Layer("axiom_audit", True),
              Layer("independent_check", None, "not judged: killed at its budget", {"accident": "timed out"}))
    assert not cache.put(key, Verdict(ACCEPT, True, "d" * 64, layers))
    assert cache.put(key, Verdict(ACCEPT, True, "d" * 64, layers[:2]))
    assert cache.get(key)[0] is not None


def test_process_accidents_are_named() -> None:
    """What counts as an accident of the machine: a timeout, a signal (directly, or as a sandbox's PID 1
    reports it, 128 + N), the memory watch; a tool's own exit status is a judgement."""
    def result(code: int, **kw: Any) -> ProcResult:
        return ProcResult(["x"], code, "", "", 0.0, **kw)

    assert result(124, timed_out=True).accident == "timed out"
    assert result(-9).accident == "killed by signal 9"
    assert result(137).accident == "killed by signal 9"
    assert result(1, extra={"rss_exceeded": True}).accident == "killed by the memory watch"
    assert result(1).accident == result(0).accident == result(2).accident == ""
