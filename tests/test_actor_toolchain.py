"""Issue 21: the actor's shell compiles with the toolchain the verifier uses, never the host's other Coq.

An agent CLI's sandbox keeps the host's ``/usr`` (the CLI needs it), where ``coqc`` is the host's 8.16; under
``--forall-rocq-toolchain ROOT`` the session puts the root's own commands first on the shell's PATH
(``ProvidesShellTools``). No model is needed: the test runs the commands the actor's shell would run, in the very
sandbox policy and environment the session gives its CLI.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_toolchains import root

from conftest import require_tool
from pytest_forall.agents.claude_code import ClaudeCodeFrontend
from pytest_forall.core.actor import ACTOR, REVIEWER, SessionContext
from pytest_forall.core.model import Budget, Task
from pytest_forall.isolation.sandbox import run_sandboxed
from pytest_forall.lang.rocq.backend import RocqProver

SHELL = "cd w && coqc --version && coqc -q -Q . W A.v && coqchk -silent -o -Q . W W.A && ls A.vo"


def session(tmp_path: Path, spec: str, role: str = ACTOR, sandbox: str = "bwrap") -> object:
    require_tool("coqc")
    workspace = tmp_path / "workspace"
    (workspace / "w").mkdir(parents=True)
    (workspace / "w" / "A.v").write_text("Definition d := 0.\nLemma l : d = 0. Proof. reflexivity. Qed.\n")
    prover = RocqProver({"toolchain": spec, "check_only": True})
    task = Task(task_id="t", suite="s", track="t", prover="rocq", source_path="t.v", template="")
    return ClaudeCodeFrontend().start(SessionContext(
        task=task, workspace=workspace, audit_dir=tmp_path / "audit", role=role, prover=prover, budget=Budget(),
        options={"provider_url": "http://127.0.0.1:9/v1", "api_key_env": "FORALL_TEST_PROVIDER_KEY",
                 "max_retries": 0, "sandbox": sandbox}))


def in_shell(actor: object, command: str) -> tuple[int, str]:
    """``command`` as the actor's shell runs it: the CLI's sandbox policy and environment."""
    env = actor.environment()  # type: ignore[attr-defined]
    if actor.sandboxed:  # type: ignore[attr-defined]
        policy = actor.sandbox_policy("/bin/sh", env, 180)  # type: ignore[attr-defined]
        result = run_sandboxed(["/bin/sh", "-c", command], policy, audit_dir=actor.ctx.audit_dir,  # type: ignore
                               cwd_inside=str(actor.ctx.workspace))  # type: ignore[attr-defined]
        return result.returncode, result.stdout + result.stderr
    proc = subprocess.run(["/bin/sh", "-c", command], cwd=actor.ctx.workspace, env=env,  # type: ignore
                          capture_output=True, text=True, timeout=180, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_the_actor_shell_compiles_with_the_root_toolchain(tmp_path: Path, sandbox: str) -> None:
    """trixie's 8.20: the shell's coqc and coqchk are the root's, sandboxed or not."""
    actor = session(tmp_path, str(root("trixie")), sandbox=sandbox)
    code, output = in_shell(actor, SHELL)
    assert code == 0 and "version 8.20.1" in output and "8.16" not in output, output


def test_a_toolchain_the_shell_cannot_run_is_refused_not_replaced_by_the_host(tmp_path: Path) -> None:
    """sid's Rocq 9.2 ``coqc`` starts ``rocqworker`` under the host's loader (its glibc is too old), so the shell
    cannot run it: its commands say so and point at the item's compile tool; the host's 8.16 never answers."""
    actor = session(tmp_path, str(root("sid")))
    code, output = in_shell(actor, "coqc --version; coqc -q w/A.v")
    assert code == 127 and "cannot run in this shell" in output and "compile tool" in output, output
    assert "8.16" not in output


def test_the_host_toolchain_and_the_reviewer_keep_the_shell_path(tmp_path: Path) -> None:
    host = session(tmp_path / "host", "")
    assert host.prover_tools() == () and "-bin" not in host.environment()["PATH"]  # type: ignore[attr-defined]
    reviewer = session(tmp_path / "rev", str(root("trixie")), role=REVIEWER)
    assert reviewer.prover_tools() == ()  # type: ignore[attr-defined]
