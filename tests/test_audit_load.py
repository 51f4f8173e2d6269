"""The statement audit's outcome does not depend on the machine's load: its limits are CPU time of coqtop, and a
wall-clock backstop that expires says so ("not searched: timed out") instead of reading as "nothing found".

Load is simulated deterministically and for free: coqtop is stopped (``SIGSTOP``) for a while in the middle of
the computation under test, as a descheduled process on a loaded machine is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_audit_search import _tie_goal, probe

from pytest_forall.lang.rocq.coqtop import TacticProbe, cpu_seconds, process_tree

#: A tie whose conversion unfolds a recursive ``let`` at 15 (putnam_2007_b3's shape, 2^15 steps): about 0.5 s of
#: CPU to load, far below its budget; at 2007 it would never end.
SLOW_TIE = ("Require Import Reals. Open Scope R_scope.\nTheorem t (X := fix x (n : nat) := match n with O => 1 | "
            "S m => 3 * x m + IZR (Int_part (x m * sqrt 5)) end) : X 15%nat = 0.\nProof. Admitted.\n")


def _stop_during_load(session: TacticProbe, theorem: str, seconds: float) -> list[float]:
    """Make ``session`` stop its coqtop for ``seconds`` once it has spent 0.1 s of CPU loading ``theorem``'s
    statement (inside the tie's conversion: the sentences before it cost milliseconds). Returns a list the stop's
    length is appended to once it happened (empty: the load ended before)."""
    stopped: list[float] = []
    load: Callable[..., Any] = session._load

    def pause(pid: int, base: float, done: threading.Event) -> None:
        while not done.is_set():
            used = cpu_seconds(pid)
            if used is not None and used - base >= 0.1:
                tree = process_tree(pid)
                for current in tree:
                    os.kill(current, signal.SIGSTOP)
                began = time.monotonic()
                done.wait(seconds)
                time.sleep(max(0.0, seconds - (time.monotonic() - began)))
                for current in tree:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(current, signal.SIGCONT)
                stopped.append(time.monotonic() - began)
                return
            time.sleep(0.005)

    def stalled(child: Any, statement: str, name: str, timeout: float, **kw: Any) -> Any:
        if name != theorem:
            return load(child, statement, name, timeout, **kw)
        done = threading.Event()
        thread = threading.Thread(target=pause, args=(child.pid, cpu_seconds(child.pid) or 0.0, done), daemon=True)
        thread.start()
        try:
            return load(child, statement, name, timeout, **kw)
        finally:
            thread.join()

    session._load = stalled  # type: ignore[method-assign]
    return stopped


def test_a_tie_check_stalled_by_load_is_accepted_as_on_an_idle_machine(tmp_path: Path,
                                                                       shared_prover_cache: Path) -> None:
    """The tie check's limit was Coq's ``Timeout 10`` on the tie's definition, which counts wall time: coqtop
    descheduled for longer than that in the middle of a tie that needs half a second of CPU failed the tie, and the
    search never ran (on a loaded machine, "audit strategies: none"). Its budget is CPU time now: the same tie loads
    as on an idle machine."""
    from pytest_forall.lang.rocq.audit import TIE_SECONDS

    loaded, check = _tie_goal(tmp_path, SLOW_TIE, "t", "false")
    idle = probe(tmp_path, shared_prover_cache)
    assert idle.run_goals(loaded, [check], tmp_path)[0] == {check.theorem: check.tactics[0][0]}
    session = probe(tmp_path, shared_prover_cache)
    stopped = _stop_during_load(session, check.theorem, TIE_SECONDS + 2)
    winners, _, log = session.run_goals(loaded, [check], tmp_path)
    assert stopped and stopped[0] > TIE_SECONDS, (stopped, log[-2000:])  # the stall happened inside the tie's load
    assert winners == {check.theorem: check.tactics[0][0]}, log[-2000:]
    assert session.cpu_used < TIE_SECONDS, session.cpu_used


#: A statement whose hypotheses contradict (vacuous): the search's first vacuity scripts close it.
VACUOUS = "Theorem t (n : nat) (h : n < 0) : n = 5.\nProof. Admitted.\n"


def _search(tmp_path: Path, cache: Path, wall: float, stall: float = 0.0) -> Any:
    """The Rocq audit's search on :data:`VACUOUS` with ``wall`` seconds of wall clock and 20 of CPU, its coqtop
    stopped for ``stall`` seconds once it has spent 0.1 s of CPU (inside the preamble's load)."""
    from pytest_forall.core.audit import audit_pack, derived_tasks
    from pytest_forall.lang.rocq.backend import RocqProver
    from pytest_forall.lang.rocq.problem import parse_coq

    path = tmp_path / "t.v"
    path.write_text(VACUOUS)
    task = parse_coq("t", path, VACUOUS)
    pack = audit_pack(task.prover)
    assert pack is not None
    workspace = tmp_path / f"ws{wall:.0f}-{stall:.0f}"
    workspace.mkdir()
    stopped: list[float] = []
    pause = threading.Thread(target=_stop_new_coqtop, args=(stall, stopped), daemon=True) if stall else None
    if pause is not None:
        pause.start()
    search = pack.search(task, derived_tasks(task), RocqProver({"cache_dir": str(cache)}), workspace,
                         time.monotonic() + wall, cpu_seconds=20.0)
    if pause is not None:
        pause.join()
        assert stopped, search.log[-2000:]  # the stall happened (while the preamble loaded)
    return search


def _stop_new_coqtop(seconds: float, stopped: list[float]) -> None:
    """Stop the first coqtop this process starts from now on for ``seconds``, once it has spent 0.1 s of CPU (in
    its preamble's load); append the stop's length to ``stopped``. A coqtop already running (or a zombie of one)
    is not it."""
    def coqtops() -> set[int]:
        found = set()
        for pid in process_tree(os.getpid()):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if stat.split("(", 1)[1].startswith("coqtop") and stat.rsplit(")", 1)[1].split()[0] != "Z":
                found.add(pid)
        return found

    before = coqtops()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for pid in coqtops() - before:
            used = cpu_seconds(pid)
            if used is not None and used >= 0.1:
                began = time.monotonic()
                os.kill(pid, signal.SIGSTOP)
                time.sleep(seconds)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
                stopped.append(time.monotonic() - began)
                return
        time.sleep(0.005)


def test_a_search_its_wall_clock_backstop_ended_says_timed_out_not_nothing_found(tmp_path: Path,
                                                                                 shared_prover_cache: Path) -> None:
    """The search's wall-clock deadline (the portfolio's ``AUDIT_SECONDS * AUDIT_WALL_FACTOR``, 80 s) ended
    putnam_2017_a1's search on 8.20 under load ~24 at about 7 of the 10.4 CPU s its vacuity needs, and the row read
    "unknown" (tests/test_toolchains.py::test_statement_audit_on_trixie). Stalled past its deadline, the search
    now reports that it was not searched (``Search.timed_out``, the log's strategies line); stalled as long but
    within the deadline, it finds what the idle search finds."""
    from pytest_forall.core.audit import AUDIT_VACUOUS

    idle = _search(tmp_path, shared_prover_cache, wall=120)
    assert AUDIT_VACUOUS in idle.certificates and not idle.timed_out, idle.log[-2000:]
    stalled = _search(tmp_path, shared_prover_cache, wall=120, stall=4)
    assert set(stalled.certificates) == set(idle.certificates) and not stalled.timed_out, stalled.log[-2000:]
    cut = _search(tmp_path, shared_prover_cache, wall=3, stall=4)
    assert not cut.certificates and "deadline" in cut.timed_out, cut.log[-2000:]
    assert "(not searched: timed out: " in cut.log, cut.log[-2000:]


def _fake_search(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Make the portfolio's audit derive one finding and "search" by returning the list's first ``Search``."""
    from pytest_forall.agents import portfolio

    found: list[Any] = []

    class Pack:
        def search(self, *args: Any, **kwargs: Any) -> Any:
            return found[0]

    monkeypatch.setattr(portfolio, "audit_pack", lambda prover: Pack())
    monkeypatch.setattr(portfolio, "derived_tasks", lambda task: {"vacuous": task})
    return found


def test_the_audit_frontend_reports_a_timed_out_search_as_infra(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A search a wall-clock limit ended found nothing because of the machine, not the statement: the audit
    frontend's turn is infra ("not searched: timed out"), never "unknown"; the same search not timed out stays
    "no checked certificate" (unknown)."""
    from types import SimpleNamespace

    from pytest_forall.agents import portfolio
    from pytest_forall.core.audit import Search

    found = _fake_search(monkeypatch)
    ctx = SimpleNamespace(task=SimpleNamespace(prover="rocq"), prover=None, workspace=tmp_path, audit_dir=tmp_path,
                          budget=SimpleNamespace(compiles=None), charge_compile=None, progress=None)
    found.append(Search({}, 3, "log", timed_out="the search's wall-clock deadline, at CPU 7.0 s"))
    turn = portfolio.AuditFrontend({}).start(ctx).turn("", timeout=None)  # type: ignore[arg-type]
    assert turn.infra == "statement audit not searched: timed out (the search's wall-clock deadline, at CPU 7.0 s)"
    assert turn.audit_not_searched == "timed out (the search's wall-clock deadline, at CPU 7.0 s)"  # the row's value
    found[0] = Search({}, 3, "log")
    turn = portfolio.AuditFrontend({}).start(ctx).turn("", timeout=None)  # type: ignore[arg-type]
    assert not turn.infra and "statement_audit=unknown" in turn.gave_up, turn


def test_the_portfolio_reports_a_timed_out_search_in_the_row_not_as_unknown(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """With a ladder, the portfolio goes on to its closing tactics after a search a wall-clock limit ended; the
    row's ``statement_audit`` then read "unknown" (searched, found nothing): the machine's load recorded as an audit
    result. It reads ``not_searched`` and a notice names the timeout; a search not timed out stays ``unknown``. (The
    Lean stand-in judges the ladder: no Coq, no real search.)"""
    from test_lean_audit import ORDERLY, run_lean_item
    from test_verifier_lean import BASE_PATH, STANDIN, standin_lean_project

    from pytest_forall.agents import portfolio
    from pytest_forall.core.audit import AUDIT_NOT_SEARCHED, AUDIT_UNKNOWN, Search
    from pytest_forall.core.model import Task

    monkeypatch.setenv("PATH", f"{STANDIN}:{BASE_PATH}")
    found = _fake_search(monkeypatch)
    project = standin_lean_project(tmp_path / "project")
    path = tmp_path / "orderly.lean"
    path.write_text(ORDERLY)
    task = Task(task_id="orderly", suite="s", track="lean4", prover="lean", source_path=str(path), template=ORDERLY,
                frozen=ORDERLY[:ORDERLY.rindex("sorry")], theorem_name="orderly")
    found.append(Search({}, 3, "log", timed_out="the search's wall-clock deadline, at CPU 7.0 s"))
    row, _ = run_lean_item(tmp_path / "cut", task, portfolio.PortfolioFrontend({}), project)
    assert row["statement_audit"] == AUDIT_NOT_SEARCHED != AUDIT_UNKNOWN, row
    assert any("statement audit not searched: timed out (the search's wall-clock deadline, at CPU 7.0 s)" in notice
               for notice in row["notices"]), row["notices"]
    found[0] = Search({}, 3, "log")
    row, _ = run_lean_item(tmp_path / "whole", task, portfolio.PortfolioFrontend({}), project)
    assert row["statement_audit"] == AUDIT_UNKNOWN and not any("not searched" in n for n in row["notices"]), row


def test_a_coqtop_killed_from_outside_is_not_searched_never_a_failed_script(tmp_path: Path,
                                                                            shared_prover_cache: Path) -> None:
    """coqtop SIGKILLed in the middle of a script (the memory cgroup, the machine) was logged "coqtop died" and counted
    as the script failing: a search that ended so said "nothing found" (``unknown``). Now the kill is a reason the
    search did not search (``TacticProbe.timed_out``, the audit's ``not_searched``), as a wall-clock backstop is."""
    from pytest_forall.lang.rocq.coqtop import Goal

    session = probe(tmp_path, shared_prover_cache)
    attempt = session._attempt
    killed: list[int] = []

    def killing(child: Any, tactic: str, seconds: float) -> str:
        def kill() -> None:
            base = cpu_seconds(child.pid) or 0.0
            while (cpu_seconds(child.pid) or 0.0) - base < 0.2:  # inside the script's computation
                time.sleep(0.01)
            leaf = process_tree(child.pid)[-1]
            os.kill(leaf, signal.SIGKILL)
            killed.append(leaf)

        thread = threading.Thread(target=kill, daemon=True)
        thread.start()
        try:
            return attempt(child, tactic, seconds)
        finally:
            thread.join()

    session._attempt = killing  # type: ignore[method-assign]
    goal = Goal("Theorem t : True.\nProof.\n", "t", [("do 100000000 (do 100000000 idtac); exact I", 30.0)])
    winners, attempts, log = session.run_goals("", [goal], tmp_path)
    assert killed and winners == {} and attempts == 1, log
    assert "coqtop died" in log
    assert any("killed by signal 9" in why for why in session.timed_out), (session.timed_out, log)
