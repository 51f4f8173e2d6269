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


def _runner(sandbox: str, tmp_path: Path) -> Any:
    """The prover's runner: unsandboxed (``run_command``) or the sandbox's (the default for ``forall verify``)."""
    if sandbox == "none":
        return run_command
    require_tool("bwrap")
    from pytest_forall.isolation.sandbox import prover_runner

    return prover_runner(tmp_path / "log")


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_cpu_budget_tells_a_spent_budget_from_a_starved_run(sandbox: str, tmp_path: Path) -> None:
    """The same runner call shape the prover uses (``cpu_s`` budget, ``timeout`` the backstop): a burning process is
    killed by its budget (not starved: its own cost); a stopped one by the backstop with its budget unspent
    (starved: the machine's). Unsandboxed and in the sandbox (the default for ``forall verify``)."""
    run = _runner(sandbox, tmp_path)
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
    from pytest_forall.lang.rocq import tactics, toolchain

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


# --- the judge's and coqchk's budgets are CPU seconds too ---------------------------------------------------------

#: stops itself for ``$1`` seconds (a background sleeper sends SIGCONT), then runs the tool: a process the loaded
#: machine did not schedule for a while
PAUSE = ["/bin/sh", "-c", '(sleep "$0"; kill -CONT $$) </dev/null >/dev/null 2>&1 & kill -STOP $$; exec "$@"']


class Stalling:
    """The real tools, except the judge's coqc (``audit.v``) or coqchk (``tool``), which is stopped for ``pause``
    seconds (``None``: until its wall backstop ends it) or replaced by a CPU-burning loop (``burn``), under the
    prover's own budget and backstop (``cpu_s``, ``timeout``)."""

    def __init__(self, tool: str, pause: float | None = None, burn: bool = False) -> None:
        self.tool, self.pause, self.burn = tool, pause, burn
        self.calls: list[dict[str, Any]] = []

    def __call__(self, argv: Sequence[str], *, cwd: Path | str, timeout: float | None, **kw: Any) -> ProcResult:
        target = "audit.v" in argv if self.tool == "judge" else os.path.basename(argv[0]) == "coqchk"
        if not target:
            return run_command(argv, cwd=cwd, timeout=timeout, **kw)
        self.calls.append({"timeout": timeout, **kw})
        if self.burn:
            return run_command(BURN, cwd=cwd, timeout=timeout, **kw)
        if self.pause is None:
            return run_command(STOP, cwd=cwd, timeout=timeout, **kw)
        return run_command([*PAUSE, str(self.pause), *argv], cwd=cwd, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, Path]:
    """putnam_2001_a1's honest proof compiled into a workspace, its template's judge record in the template cache
    (the layers below then run only the candidate's judge and coqchk)."""
    require_tool("coqc")
    require_tool("coqchk")
    template = require_path(PUTNAM / "coq" / "src" / "putnam_2001_a1.v", "PutnamBench")
    from pytest_forall.lang.rocq.backend import RocqProver

    where = tmp_path_factory.mktemp("infra-cpu")
    task = task_from_template("rocq", template)
    prover = RocqProver({"cache_dir": str(where / "templates")})
    assert prover.compile(task, where / "ws", PROOF, 300).ok
    assert prover.statement_check(task, where / "ws", 300).ok, "the honest proof's judge"
    return task, where / "ws", where / "templates"


def _layer(compiled: tuple[Any, Path, Path], runner: Stalling, budget: float) -> Any:
    """The judge's statement layer or the independent check, by a fresh backend (nothing judged yet) on ``runner``."""
    from pytest_forall.lang.rocq.backend import RocqProver

    task, workspace, templates = compiled
    prover = RocqProver({"cache_dir": str(templates)}, runner=runner)
    if runner.tool == "judge":
        return prover.statement_check(task, workspace, budget)
    return prover.independent_check(task, workspace, PROOF, budget)


@pytest.mark.parametrize("tool", ["judge", "coqchk"])
def test_a_judge_or_coqchk_the_machine_stopped_for_a_while_still_judges(compiled: tuple[Any, Path, Path],
                                                                        tool: str) -> None:
    """Stopped for longer than its budget (a loaded machine that did not run it), then run: the layer is what an idle
    machine gives (passed), because the budget is CPU seconds of its process tree and the wall clock only a backstop
    CPU_WALL_FACTOR times longer. Before, the wall budget ran out: the judge "timed out" (infra), coqchk "not judged"."""
    runner = Stalling(tool, pause=4)
    layer = _layer(compiled, runner, 3)
    assert layer.ok is True and not layer.infra, layer
    assert runner.calls[-1].get("cpu_s") == 3 and runner.calls[-1]["timeout"] == 30, runner.calls


@pytest.mark.parametrize("tool", ["judge", "coqchk"])
def test_a_stalled_judge_or_coqchk_is_infra_named_by_its_backstop(compiled: tuple[Any, Path, Path], tool: str) -> None:
    """Stopped until the wall backstop ends it, its CPU budget unspent: infra, the reason naming the backstop (the
    machine's, never the candidate's: not "not judged", which a candidate can cause, nor a rejection)."""
    layer = _layer(compiled, Stalling(tool), 0.3)
    assert layer.ok is False and layer.infra, layer
    assert "wall-clock backstop" in layer.reason and "of its 0.3 s CPU budget" in layer.reason, layer.reason


@pytest.mark.parametrize("tool", ["judge", "coqchk"])
def test_a_judge_or_coqchk_that_spends_its_cpu_budget_keeps_its_outcome(compiled: tuple[Any, Path, Path],
                                                                        tool: str) -> None:
    """Its CPU budget spent (the candidate's cost, however loaded the machine): the judge timed out (infra, as before),
    coqchk "not judged" (as before: a candidate that makes coqchk run out cannot choose a weaker guarantee where it
    matters, tests/test_judge_attacks_v2.py)."""
    layer = _layer(compiled, Stalling(tool, burn=True), 0.5)
    if tool == "judge":
        assert layer.ok is False and layer.infra and layer.reason.endswith("timed out"), layer
    else:
        assert layer.ok is None and not layer.infra and "not judged" in layer.reason, layer
        assert "CPU budget" in layer.reason, layer.reason


@pytest.mark.parametrize("body", ["kill -STOP $$", "exit 0"])
def test_a_collection_key_never_holds_an_empty_coqc_version(fake_coqc: Any, body: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A project's items are keyed by the toolchain's version. ``coqc --version`` stalled (or silent) made the key
    hold an empty version (the ``coqc`` option) or "coqc --version timed out" (the PATH's toolchain): items keyed by a
    machine accident. Now both raise ToolchainProbeFailed (infra), and the next collection asks again."""
    from pytest_forall.core.prover import ToolchainProbeFailed
    from pytest_forall.lang.rocq import toolchain
    from pytest_forall.lang.rocq.project.build import toolchain_version

    monkeypatch.setattr(toolchain, "VERSION_WALL_SECONDS", 1.0)
    monkeypatch.setattr(toolchain, "_PROBED", {})
    tool = fake_coqc(body)
    with pytest.raises(ToolchainProbeFailed, match="wall-clock backstop" if "STOP" in body else "exit 0"):
        toolchain_version({"coqc": str(tool)})
    if "STOP" in body:  # the PATH's toolchain: probe()'s wall limit
        with pytest.raises(ToolchainProbeFailed, match="coqc --version timed out"):
            toolchain_version({})
    fake_coqc("echo 'The Coq Proof Assistant, version 8.16.1'")
    assert toolchain_version({"coqc": str(tool)}) == "The Coq Proof Assistant, version 8.16.1"
    assert "version 8.16.1" in toolchain_version({}), "asked again, answered"


def test_a_project_whose_toolchain_gives_no_version_is_a_collection_error_naming_infra(
        fake_coqc: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The collection of ``--forall-project`` reports the unanswered version as one error naming the project and
    infra (no traceback, no items with a broken key)."""
    from pytest_forall.lang.rocq import toolchain

    monkeypatch.setattr(toolchain, "VERSION_WALL_SECONDS", 1.0)
    monkeypatch.setattr(toolchain, "_PROBED", {})
    fake_coqc("kill -STOP $$")
    root = pytester.path / "lib"
    root.mkdir()
    (root / "_CoqProject").write_text("-R . Lib\nA.v\n")
    (root / "A.v").write_text("Lemma l : 0 = 0.\nProof. reflexivity. Qed.\n")
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--forall-project", "lib",
                             "--collect-only")
    output = run.stdout.str() + run.stderr.str()
    assert "infra, the toolchain gave no version" in output and "coqc --version timed out" in output, output
    assert "Traceback" not in output, output


def test_a_judge_plugin_build_that_times_out_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build step that got no answer in time (``coqpp`` stopped here) is the machine's: the problem says it timed
    out, not that packages are missing (before: "it needs libcoq-core-ocaml-dev … apt-get install"), and nothing is
    cached."""
    require_tool("coqc")
    from pytest_forall.lang.rocq import judge

    tool = tmp_path / "bin" / "coqpp"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nkill -STOP $$\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(judge, "PLUGIN_BUILD_CPU_SECONDS", 0.1)  # its backstop: 1 s
    plugin, problem = judge.plugin_dir(tmp_path / "cache", "a version no cache holds")
    assert plugin is None and problem.startswith(judge.PLUGIN_BUILD_TIMED_OUT), problem
    assert "coqpp" in problem and "apt-get" not in problem and "wall-clock backstop" in problem, problem
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir()], "a failed build was kept"


def test_a_judge_plugin_build_the_machine_paused_still_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build step the loaded machine did not run for a while (``coqpp`` stopped 3 s, then answering) is not a failed
    build: each step's budget is CPU seconds (here 1 s), the wall clock a backstop 10 times longer. Before, the step's
    limit was wall time (here 1 s): the build "timed out" on a loaded machine, every verdict of the run infra."""
    require_tool("coqc")
    from pytest_forall.lang.rocq import judge

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "coqpp").write_text(
        "#!/bin/sh\n(sleep 3; kill -CONT $$) </dev/null >/dev/null 2>&1 & kill -STOP $$\n: > forall_judge.ml\n")
    (bin_dir / "ocamlfind").write_text("#!/bin/sh\n: > forall_judge.cmxs\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(judge, "PLUGIN_BUILD_CPU_SECONDS", 1.0, raising=False)
    monkeypatch.setattr(judge, "PLUGIN_BUILD_WALL_SECONDS", 1.0, raising=False)  # the former wall limit
    plugin, problem = judge.plugin_dir(tmp_path / "cache", "a version no cache holds")
    assert problem == "" and plugin is not None and (plugin / judge.PLUGIN_PACKAGE / "META").is_file(), problem


def test_a_roots_library_probe_is_cpu_budgeted_and_a_starved_one_is_infra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A root filesystem's ``coqc -where`` (the sandbox's libraries, the fingerprint) and ``coqc --version`` are asked
    under the probes' CPU budget with the wall clock as backstop (before: 60 s of wall, an answer a loaded machine
    may not give); one the backstop ends starved raises ToolchainProbeFailed naming it (infra, not cached), never an
    empty library list."""
    from pytest_forall.core.prover import ToolchainProbeFailed
    from pytest_forall.lang.rocq import backend, toolchain
    from pytest_forall.lang.rocq.toolchain import PROBE_CPU_SECONDS, PROBE_TIMED_OUT, Toolchain

    calls: list[dict[str, Any]] = []

    def starved(tool: Any, argv: Sequence[str], cwd: Path, timeout: float = 300, env: Any = None,
                cpu_s: float | None = None) -> ProcResult:
        calls.append({"argv": list(argv), "timeout": timeout, "cpu_s": cpu_s})
        return ProcResult(list(argv), 124, "", "", timeout, True, {"cpu_budget_s": cpu_s, "cpu_used_s": 0.0,
                                                                      "cpu_spent": False})

    monkeypatch.setattr(backend, "run_in", starved)
    monkeypatch.setattr(toolchain, "run_in", starved)
    monkeypatch.setattr(toolchain, "_PROBED", {})
    with pytest.raises(ToolchainProbeFailed, match="wall-clock backstop"):
        backend.coq_library_dirs("/usr/bin/coqc", "/a-root-no-test-made")
    line, info = toolchain.probe(Toolchain("/a-root-no-test-made", root="/a-root-no-test-made"))
    assert info is None and line.startswith(PROBE_TIMED_OUT) and "wall-clock backstop" in line, line
    assert [c["cpu_s"] for c in calls] == [PROBE_CPU_SECONDS] * 2, calls
    assert not toolchain._PROBED, "a probe without an answer was kept"


def test_a_project_prover_whose_probe_got_no_answer_is_asked_again_on_the_next_item(
        fake_coqc: Any, compiled: tuple[Any, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Project mode keeps one prover per run as the prototype of every item's (#18). One made while ``coqc --version``
    was stalled (its every verdict infra) was that prototype for the whole run; now it is not kept, and the next item
    gets a prover that asked again (here answered by the real coqc)."""
    from pytest_forall.lang.rocq import toolchain
    from pytest_forall.lang.rocq.project.prover import project_rocq_prover

    monkeypatch.setattr(toolchain, "VERSION_WALL_SECONDS", 1.0)
    monkeypatch.setattr(toolchain, "_PROBED", {})
    stalled = fake_coqc("kill -STOP $$")
    options = {"cache_dir": str(compiled[2]), "sandbox": "none"}
    first = project_rocq_prover(options)
    assert "coqc --version timed out" in first.probe(compiled[1]), first.probe(compiled[1])
    stalled.unlink()  # the machine answers again: the coqc on PATH is the real one
    toolchain.coqc_where.cache_clear()
    second = project_rocq_prover(options)
    assert second.probe(compiled[1]) == "", second.probe(compiled[1])


@pytest.mark.parametrize("spent", [True, False])
def test_project_modes_readings_tell_a_spent_budget_from_a_starved_run(tmp_path: Path, spent: bool) -> None:
    """Project mode reads its coqchk runs (the build's files: ``infra_accident``) and its judge sessions
    (``run_files_dump``) through the same functions: a spent CPU budget keeps its outcome ("not judged"; the judge
    "timed out"), a run the backstop ended with it unspent is infra naming the backstop."""
    from pytest_forall.lang.rocq.backend import coqchk_layer
    from pytest_forall.lang.rocq.judge import JUDGE_COULD_NOT_RUN, run_files_dump

    ran = ProcResult(["coqchk"], 124, "", "", 30.0, True, {"cpu_budget_s": 3.0, "cpu_used_s": 0.2, "cpu_spent": spent})
    layer = coqchk_layer(["coqchk"], ran, 3.0, infra_accident="coqchk of the project's build")
    assert (layer.ok is None and not layer.infra) if spent else (layer.ok is False and layer.infra), layer
    assert ("CPU budget" if spent else "wall-clock backstop") in layer.reason, layer.reason
    _, problem = run_files_dump(lambda args, cwd: ran, tmp_path, [], [("P.A", ["a"])])
    assert problem == "timed out" if spent else problem.startswith(f"{JUDGE_COULD_NOT_RUN}coqc was stopped"), problem


# --- a stopped process ends at its stall window, not at 10 x its budget ------------------------------------------

@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_run_whose_tree_uses_no_cpu_ends_as_stalled_before_its_backstop(sandbox: str, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU-budgeted run stopped outright (no CPU at all) is ended once it used none for ``CPU_STALL_SECONDS`` (here
    2 s), starved (infra) and named so, not at its wall backstop (here 30 s; 10 x its budget in the prover). Before, it
    waited the whole backstop. A run that keeps computing is not stalled (the budget ends it: its own cost)."""
    from pytest_forall.core import proc

    monkeypatch.setattr(proc, "CPU_STALL_SECONDS", 2.0, raising=False)
    run = _runner(sandbox, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    stopped = run(STOP, cwd=work, timeout=30, cpu_s=300)
    assert stopped.timed_out and stopped.duration < 15, (stopped.duration, stopped.extra)
    assert not stopped.extra["cpu_spent"] and "used no CPU for 2 s" in stopped.starved, stopped.starved
    burnt = run(BURN, cwd=work, timeout=120, cpu_s=0.5)  # a loaded machine: 1/13 of a core still reaches 0.5 s
    assert burnt.extra["cpu_spent"] and not burnt.starved and not burnt.extra.get("cpu_stalled_s"), burnt.extra


def test_a_stalled_project_judge_session_is_infra_within_its_stall_window(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A project's judge session has a 300 CPU-second floor (``max(timeout, 300.0)``, sessions.py), so its wall backstop
    was 3000 s: a stopped session held its item ~50 min before infra. Now the session (the backend's judge run, as
    project mode calls it) ends once its coqc used no CPU for the stall window, as infra naming it. The runner caps the
    wall at 20 s, so the code before this change ends there by its backstop (and fails the assertion) instead of
    hanging."""
    require_tool("coqc")
    from pytest_forall.core import proc
    from pytest_forall.lang.rocq.backend import RocqProver
    from pytest_forall.lang.rocq.judge import JUDGE_COULD_NOT_RUN, run_file_dump

    monkeypatch.setattr(proc, "CPU_STALL_SECONDS", 1.0, raising=False)
    calls: list[dict[str, Any]] = []

    def stopped(argv: Sequence[str], *, cwd: Path | str, timeout: float | None, **kw: Any) -> ProcResult:
        calls.append({"timeout": timeout, **kw})
        return run_command(STOP, cwd=cwd, timeout=min(timeout or 20, 20), **kw)

    prover = RocqProver({"cache_dir": str(tmp_path / "cache")}, runner=stopped)
    prover.plugin = tmp_path  # the session never starts coqc here: the plugin's path is only passed along
    dump, problem = run_file_dump(prover._judge_run(300.0), tmp_path, [], "Lib.A", ["Lib.A.l"])
    assert dump is None and calls[-1]["cpu_s"] == 300.0 and calls[-1]["timeout"] == 3000.0, calls
    assert problem.startswith(f"{JUDGE_COULD_NOT_RUN}coqc was stopped") and "used no CPU" in problem, problem
