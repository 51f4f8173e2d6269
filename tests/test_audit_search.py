"""The statement audit's search on real PutnamBench templates (issue 20): each bug it had, shown failing first.

Every test states a goal in a real template's preamble (``putnam_root()``), or a derived task of a real
template, and checks that the search's scripts close what they must (or, for the pty, that a long line
arrives). What a closed goal proves is still judged by the verifier (tests/test_audit.py).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from conftest import putnam_root, require_tool
from pytest_forall.lang.rocq.audit import split_theorem
from pytest_forall.lang.rocq.coqtop import Goal, TacticProbe, process_tree
from pytest_forall.lang.rocq.problem import parse_coq


def template(name: str) -> str:
    path = putnam_root() / "coq" / "src" / f"{name}.v"
    if not path.is_file():
        pytest.fail(f"{path} is missing from the PutnamBench checkout")
    return path.read_text()


def probe(tmp_path: Path) -> TacticProbe:
    from pytest_forall.lang.rocq.backend import RocqProver

    require_tool("coqtop")
    return RocqProver({"cache_dir": str(tmp_path / "cache")}).tactic_probe(tmp_path)


def test_a_tactic_line_longer_than_the_pty_line_buffer_reaches_coqtop(tmp_path: Path) -> None:
    """A canonical-mode pty drops what exceeds 4095 bytes of a line: a 9 KB script got no answer at all."""
    script = "idtac; " * 1300 + "exact I"
    assert len(script) > 8192
    winners, _, log = probe(tmp_path).run_goals("", [Goal("Lemma long : True.\nProof.\n", "long", [(script, 5.0)])],
                                                tmp_path)
    assert winners == {"long": script}, log[-500:]


def _pause_coqtop(seconds: float, after: float) -> threading.Thread:
    """Stop this test's coqtop for ``seconds`` once it has run ``after`` seconds: a machine too loaded to run it."""
    def pause() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            mine = [pid for pid in process_tree(os.getpid()) if Path(f"/proc/{pid}/comm").read_text().strip()
                    .startswith("coqtop")]
            if mine:
                time.sleep(after)
                for pid in mine:
                    os.kill(pid, signal.SIGSTOP)
                time.sleep(seconds)
                for pid in mine:
                    os.kill(pid, signal.SIGCONT)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=pause, daemon=True)
    thread.start()
    return thread


def test_a_tactics_budget_is_cpu_time_so_a_stalled_machine_finds_what_an_idle_one_finds(tmp_path: Path) -> None:
    """Stopped for 4 s in the middle of a script that needs well under a second of CPU, coqtop still gets its
    3 s of CPU: a wall-clock ``Timeout 3`` ended the script instead."""
    busy = "do 30 (assert (Nat.pow 2 12 = 4096) by (cbv; reflexivity); clear); exact I"
    session = probe(tmp_path)
    pause = _pause_coqtop(4.0, after=0.8)
    winners, _, log = session.run_goals("", [Goal("Lemma busy : True.\nProof.\n", "busy", [(busy, 3.0)])], tmp_path)
    pause.join()
    assert winners == {"busy": busy}, log
    assert session.wall_used > 4.0 and session.cpu_used < 3.0, (session.wall_used, session.cpu_used)


def test_a_script_past_its_cpu_budget_is_interrupted_and_the_session_goes_on(tmp_path: Path) -> None:
    loop = "let rec f n := f (S n) in f 0"
    session = probe(tmp_path)
    winners, _, log = session.run_goals("", [Goal("Lemma loop : True.\nProof.\n", "loop",
                                                  [(loop, 1.0), ("exact I", 1.0)])], tmp_path)
    assert winners == {"loop": "exact I"}, log
    assert "User interrupt" in log and session.cpu_used < 3.0, log
