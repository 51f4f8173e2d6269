"""``forall start|compile|submit|review-compile`` as subprocesses against an item's framework-side server:
exit status 0 ok/accept, 1 error/reject, 2 infra/refused/usage; the records are the server's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require_tool
from pytest_forall.core import workspace as ws
from pytest_forall.core.actor import ACTOR, REVIEWER
from pytest_forall.core.model import Task, sha256_bytes
from pytest_forall.core.review import prepare_review_dir
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.problem import parse_coq
from pytest_forall.tools.item import CONTEXT_ENV, URL_ENV, ItemTools, ToolContext

TASK_ID = "putnam_2001_a1"
PROOF = "Proof.\nintros a b. pose proof (hop (op b a) b) as H. rewrite (hop b a) in H. exact H.\nQed."


@pytest.fixture
def task(tmp_path: Path, putnam_root: Path) -> Task:
    require_tool("coqc")
    source = tmp_path / f"{TASK_ID}.v"
    shutil.copy(putnam_root / "coq" / "src" / source.name, source)
    return parse_coq(TASK_ID, source, source.read_text(encoding="utf-8"))


def serve(task: Task, tmp_path: Path, role: str, directory: Path, cache: Path) -> ItemTools:
    ctx = ToolContext(task=task, role=role, workspace=directory, audit_dir=tmp_path / f"audit-{role}", prover="rocq",
                      prover_options={}, timeout=120)
    return ItemTools(ctx, RocqProver({"cache_dir": str(cache)}))


def forall(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in (CONTEXT_ENV, URL_ENV)}
    return subprocess.run([sys.executable, "-m", "pytest_forall.cli", *args], env={**clean, **env},
                          capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def actor(task: Task, tmp_path: Path, shared_prover_cache: Path) -> Iterator[tuple[ItemTools, Path]]:
    workspace = ws.prepare(tmp_path / "ws", "w", task, reset=True)
    with serve(task, tmp_path, ACTOR, workspace, shared_prover_cache) as tools:
        yield tools, workspace / task.candidate_name


def test_compile_and_submit_exit_statuses(task: Task, actor: tuple[ItemTools, Path]) -> None:
    tools, candidate = actor
    env = {CONTEXT_ENV: str(tools.context_path)}   # the context file alone finds the server
    started = forall("start", "--task", TASK_ID, env=env)
    assert started.returncode == 0 and started.stdout.rstrip("\n").endswith(task.template.rstrip("\n"))
    assert forall("compile", env=env).returncode == 0        # the template compiles: diagnostics, no verdict
    rejected = forall("submit", env=env)
    assert rejected.returncode == 1 and rejected.stdout.startswith("status: reject")
    candidate.write_text(task.template.replace("Proof. Admitted.", "Proof. exact I. Qed."), encoding="utf-8")
    broken = forall("compile", env=tools.env())
    assert broken.returncode == 1 and "error at line 7" in broken.stdout
    candidate.write_text(task.template.replace("Proof. Admitted.", PROOF), encoding="utf-8")
    accepted = forall("submit", env=tools.env())
    assert accepted.returncode == 0, accepted.stderr
    digest = sha256_bytes(candidate.read_bytes())
    assert accepted.stdout.splitlines()[:3] == ["status: accept", f"sha256: {digest}", "verdict: accept (strict)"]
    assert [(s["digest"], s["verdict"]) for s in tools.submissions()] == [
        (sha256_bytes(task.template.encode()), "reject"), (digest, "accept")]
    assert tools.summary()["by_tool"] == {"compile": 2, "start": 1, "submit": 2}


def test_refusals_and_usage_errors_exit_2(task: Task, tmp_path: Path, actor: tuple[ItemTools, Path],
                                          shared_prover_cache: Path) -> None:
    tools, _ = actor
    wrong_task = forall("start", "--task", "putnam_1962_a2", env=tools.env())
    assert wrong_task.returncode == 2 and TASK_ID in wrong_task.stderr
    missing = forall("submit", env={})
    assert missing.returncode == 2 and CONTEXT_ENV in missing.stderr
    unreachable = forall("compile", env={URL_ENV: "http://127.0.0.1:9/mcp"})
    assert unreachable.returncode == 2 and "cannot reach" in unreachable.stderr
    review_dir = prepare_review_dir(tmp_path / "review", task, task.template.encode())
    with serve(task, tmp_path, REVIEWER, review_dir, shared_prover_cache) as reviewer:
        assert forall("submit", env=reviewer.env()).returncode == 2   # the reviewer's server has no submit
        evidence = forall("review-compile", env=reviewer.env())
        assert evidence.returncode == 0 and evidence.stdout.startswith("status: ok")
        assert [s["tool"] for s in reviewer.submissions()] == ["review_compile"]
