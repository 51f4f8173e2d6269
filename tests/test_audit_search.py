"""The statement audit's search on real PutnamBench templates (issue 20): each bug it had, shown failing first.

Every test states a goal in a real template's preamble (PutnamBench at ``PUTNAMBENCH_ROOT``), or a derived task of a real
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

from conftest import PUTNAM, require_tool
from pytest_forall.lang.rocq.coqtop import Goal, TacticProbe, process_tree
from pytest_forall.lang.rocq.problem import parse_coq


def template(name: str) -> str:
    path = PUTNAM / "coq" / "src" / f"{name}.v"
    if not path.is_file():
        pytest.fail(f"{path} is missing: the PutnamBench checkout is not at {PUTNAM}; set PUTNAMBENCH_ROOT")
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


def audit_of(tmp_path: Path, name: str, find: str, replace: str, cpu: float = 20.0) -> tuple[list[str], str]:
    """The verified findings of the audit on a real template with one replacement, and the search's log."""
    from pytest_forall.core.audit import audit_pack, derived_tasks
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.backend import RocqProver

    require_tool("coqtop")
    text = template(name)
    assert text.count(find) == 1, find
    path = tmp_path / f"{name}.v"
    path.write_text(text.replace(find, replace))
    task = parse_coq(name, path, path.read_text())
    derived = derived_tasks(task)
    prover = RocqProver({"cache_dir": str(tmp_path / "cache")})
    pack = audit_pack("rocq")
    assert pack is not None
    (tmp_path / "ws").mkdir()
    search = pack.search(task, derived, prover, tmp_path / "ws", time.monotonic() + 8 * cpu, cpu_seconds=cpu)
    found = [finding for finding, certificate in search.certificates.items()
             if verify_candidate(derived[finding], prover, certificate.encode()).accepted]
    return sorted(found), search.log


@pytest.mark.slow
def test_real_literals_are_tried_in_a_mathcomp_real_template(tmp_path: Path) -> None:
    """mathcomp's ``0%R`` has no ring until it is used: the old scope probe (``constr:``) failed on it, so no real
    literal was ever tried and ``g 2`` never met ``forall x, g x = x``; nor could ``(2 : R) = 3`` be refuted."""
    found, log = audit_of(tmp_path, "putnam_1962_b5", "(n : nat)",
                          "(n : nat) (g : R -> R) (hg : forall x : R, g x = x) (hg2 : g 2 = 3)")
    assert "uconstr:(0%R) in exact I: closed the goal" in log
    assert found == ["vacuous"], log[-3000:]


@pytest.mark.slow
def test_locked_big_operators_are_evaluated(tmp_path: Path) -> None:
    """An off-by-one summation range is refuted at ``n = 2`` only once ``\\sum`` is unlocked for ``vm_compute``."""
    found, log = audit_of(tmp_path, "putnam_1962_a5", "\\sum_(1 <= k < n.+1)", "\\sum_(1 <= k < n)")
    assert found == ["false"], log[-3000:]


@pytest.mark.slow
def test_the_refutation_search_descends_through_the_theorems_let_binders(tmp_path: Path) -> None:
    """``(f : nat -> int := …)`` makes the negated statement a ``let``: the old search never instantiated it. Here
    it refutes putnam_1966_a1 as it is: ``(m%:Z)/2`` is ``m * 2^-1`` in ``int``, whose ``2^-1`` is 2 (2 is not a
    unit), so ``f`` is not the intended sum of halves."""
    found, log = audit_of(tmp_path, "putnam_1966_a1", "(0 <= m < n + 1)", "(0 <= m < n + 1)")
    assert found == ["false"], log[-3000:]


@pytest.mark.slow
def test_an_order_premise_failing_at_i_equal_j_is_found_by_one_instance_and_its_premises(tmp_path: Path) -> None:
    """``0 < i -> i <= j -> f i < f j`` fails at ``i = j = 1``: one hypothesis, two literals, both premises decided."""
    found, log = audit_of(tmp_path, "putnam_1963_a2", "0 < i -> i < j -> f i < f j", "0 < i -> i <= j -> f i < f j")
    assert found == ["vacuous"], log[-3000:]


@pytest.mark.slow
def test_literal_instances_are_one_level_so_they_end_quickly(tmp_path: Path) -> None:
    """Instantiating every hypothesis of putnam_1963_a2's vacuity task at the literals used to instantiate the
    partial instances it created too (a multiplying context that ran until the time limit); marked instances
    are not instantiated again, so the script ends (here failing: nothing contradicts) well within its budget."""
    from pytest_forall.core.audit import derived_tasks
    from pytest_forall.lang.rocq.audit import DESTRUCT, literal_instances, search_prelude

    path = tmp_path / "putnam_1963_a2.v"
    path.write_text(template("putnam_1963_a2"))
    task = parse_coq("putnam_1963_a2", path, path.read_text())
    vacuity = derived_tasks(task)["vacuous"]
    script = f"{DESTRUCT}; {literal_instances(('nat', 'Z', 'R', 'Q'))}; fail"
    session = probe(tmp_path)
    winners, _, log = session.run_goals(search_prelude(task.template, hammer=False),
                                        [Goal(vacuity.frozen, vacuity.theorem_name, [(script, 10.0)])], tmp_path)
    assert winners == {} and "load failed" not in log, log[-2000:]
    assert "User interrupt" not in log and session.cpu_used < 8.0, (session.cpu_used, log[-500:])


@pytest.mark.slow
def test_fraction_comparisons_over_an_abstract_real_type_are_decided(tmp_path: Path) -> None:
    """``lambda := 1 / 3`` against ``lambda > 1 / 2`` over an abstract ``realType``: ``lia``/``lra`` see nothing
    there and ``eqr_nat`` only numerals; the constants are taken to ``rat`` (``ratr``, an order embedding) and
    compared there by computation."""
    found, log = audit_of(tmp_path, "putnam_1967_a4", "(lambda : R)\n", "(lambda : R := 1 / 3)\n")
    assert found == ["vacuous"], log[-3000:]
