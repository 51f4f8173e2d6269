"""The embedded portfolio frontend on the real kernel, and its accepted proofs re-verified by replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, require_tool
from pytest_forall.cli import main as cli_main

TOY = {
    "toy_lia": "Require Import Arith.\nTheorem toy_lia (n m : nat) : n + m = m + n.\nProof. Admitted.\n",
    "toy_tauto": "Theorem toy_tauto (P Q : Prop) : P /\\ Q -> Q /\\ P.\nProof. Admitted.\n",
    # true (so the audit finds no certificate against it), but only by induction, which no ladder tactic does
    "toy_open": ("Theorem toy_open (f : nat -> nat) (h : forall n : nat, f (S n) = f n) :\n"
                 "    forall n : nat, f n = f 0.\nProof. Admitted.\n"),
}


@pytest.fixture
def toy_root(pytester: pytest.Pytester) -> pytest.Pytester:
    require_tool("coqtop")
    src = pytester.path / "bench" / "coq" / "src"
    src.mkdir(parents=True)
    for name, text in TOY.items():
        (src / f"{name}.v").write_text(text)
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {pytester.path / 'bench'}\nforall_tactic_timeout = 3\n")
    return pytester


def rows(pytester: pytest.Pytester, run_id: str) -> dict[str, dict]:
    path = pytester.path / "reports" / run_id / "results.jsonl"
    return {r["task_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_portfolio_proves_what_a_tactic_closes_and_replay_reverifies_it(toy_root: pytest.Pytester) -> None:
    result = toy_root.runpytest("-p", "no:cacheprovider", "--forall-run-id=pf")
    found = rows(toy_root, "pf")
    assert found["toy_lia"]["outcome"] == "strict"
    assert found["toy_tauto"]["outcome"] == "strict"
    assert found["toy_open"]["outcome"] == "failed"
    assert "no tactic" in found["toy_open"]["reason"]
    assert all(found[t]["compiles"] >= 1 for t in found)
    assert result.ret == 1

    proofs = toy_root.path / "accepted"
    assert cli_main(["proofs", str(toy_root.path / "reports" / "pf"), "--out", str(proofs)]) == 0
    assert sorted(p.name for p in proofs.iterdir()) == ["toy_lia.v", "toy_tauto.v"]
    replay = toy_root.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay", f"--forall-proofs={proofs}",
                                "-k", "toy_lia or toy_tauto", "--forall-run-id=rp")
    again = rows(toy_root, "rp")
    assert {t: again[t]["outcome"] for t in again} == {"toy_lia": "strict", "toy_tauto": "strict"}
    assert again["toy_lia"]["digest"] == found["toy_lia"]["digest"]
    assert replay.ret == 0


def test_compile_budget_caps_the_ladder(toy_root: pytest.Pytester) -> None:
    toy_root.runpytest("-p", "no:cacheprovider", "-k", "toy_open", "--forall-compiles=3", "--forall-run-id=b")
    row = rows(toy_root, "b")["toy_open"]
    assert row["outcome"] == "failed" and row["compiles"] <= 3


def test_portfolio_coqtop_runs_inside_the_sandbox(tmp_path: Path) -> None:
    """The coqtop session sees only its workspace: a host file loadable outside is absent inside."""
    require_tool("coqtop")
    require_tool("bwrap")
    from pytest_forall.lang.rocq.backend import RocqProver
    from pytest_forall.lang.rocq.problem import parse_coq

    host_file = tmp_path / "outside" / "Helper.v"
    host_file.parent.mkdir()
    host_file.write_text("Definition helper := 0.\n")
    text = f'Load "{host_file}".\nTheorem toy : helper = 0.\nProof. Admitted.\n'
    task = parse_coq("toy", tmp_path / "toy.v", text)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    prover = RocqProver()
    assert prover.try_tactics(task, workspace, ["reflexivity"], 5)[0] == "reflexivity"
    prover.sandboxed = True
    winner, _, log = prover.try_tactics(task, workspace, ["reflexivity"], 5)
    assert winner == "" and "load failed" in log
