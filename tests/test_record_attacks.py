"""Red team: an actor that rewrites the file judged, or the record of it, after the verifier read it (session 16).

Acceptance needs the verifier's pass, the reviewer's approval of the same SHA-256 and the file on disk holding that
digest at that moment; the record keeps those bytes. A process the actor left behind (a ``sleep 5; cp cheat proof.v
&``), a reviewer naming another file's digest, a sandbox that outlives its command or may write its own audit: each
is tried here. The protocol's attacks use the scripted frontends of ``test_protocol.py`` (a step stands for what a
leftover process does meanwhile); the sandbox's run real bwrap.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.core.accept import read_acceptance
from pytest_forall.core.actor import SessionContext, TurnResult
from pytest_forall.core.cache import VerdictCache, look_up, verify_cached
from pytest_forall.core.model import Task, Usage, sha256_bytes
from pytest_forall.core.protocol import ItemRun
from pytest_forall.core.prover import CompileResult
from pytest_forall.isolation.sandbox import SandboxPolicy, run_sandboxed

sys.path.insert(0, str(Path(__file__).parent))
from test_protocol import FakeProver, ScriptedFrontend, approves, events, fake_task, item, writes

from conftest import require_tool

HONEST, CHEAT = b"OK honest\n", b"OK but a cheat the verifier never saw\n"


def swap_then(actors_file: Path, step: Any) -> Any:
    """A review step that first does what the actor's leftover process does meanwhile: rewrite the actor's file."""
    def review(ctx: SessionContext, prompt: str) -> TurnResult:
        actors_file.write_bytes(CHEAT)
        return step(ctx, prompt)
    return review


def nothing_accepted(ctx: Any, result: dict[str, Any]) -> None:
    assert result["outcome"] not in ("strict", "rules-only") and result["digest"] == "", result
    assert not (ctx.audit.directory / "accepted").exists()


def test_a_file_rewritten_during_the_review_is_not_accepted(tmp_path: Path) -> None:
    """The reviewer approves the verified digest, the actor's file holds other bytes by then: rejected, and what the
    actor is told names the change; nothing under ``accepted/``."""
    ctx = item(tmp_path, ScriptedFrontend([writes(HONEST.decode())]), ScriptedFrontend([swap_then(tmp_path / "ws" / "t" / "t.txt", approves)]),
               rounds=1)
    result = ItemRun(ctx).run()
    nothing_accepted(ctx, result)
    [decision] = events(ctx, "acceptance")
    assert not decision["accepted"] and decision["reason"].startswith("file on disk changed after verification")
    assert decision["digest"] == sha256_bytes(HONEST)


class SwappingProver(FakeProver):
    """A prover during whose compile the actor's leftover process rewrites the actor's file (the verifier already
    read it): the verifier judges the bytes it read, acceptance reads the disk again."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
        (self.workspace / task.candidate_name).write_bytes(CHEAT)
        return super().compile(task, workspace, candidate, timeout)


def test_a_file_rewritten_during_verification_is_not_accepted_without_a_reviewer(tmp_path: Path) -> None:
    ctx = item(tmp_path, ScriptedFrontend([writes(HONEST.decode())]), None,
               prover=SwappingProver(tmp_path / "ws" / "t"), rounds=1)
    result = ItemRun(ctx).run()
    nothing_accepted(ctx, result)
    [decision] = events(ctx, "acceptance")
    assert decision["reason"].startswith("file on disk changed after verification")


def test_an_approval_of_another_files_digest_is_not_accepted(tmp_path: Path) -> None:
    """The reviewer approves, naming the digest of bytes the verifier did not pass (here: the cheat the actor's
    process put in place while the review ran, and then back): rejected."""
    def approves_the_cheat(ctx: SessionContext, prompt: str) -> TurnResult:
        return TurnResult(usage=Usage(50, 5, 0, 0.01),
                          final_text=f"fine\nREVIEW_VERDICT: APPROVE\nREVIEW_SHA256: {sha256_bytes(CHEAT)}")

    ctx = item(tmp_path, ScriptedFrontend([writes(HONEST.decode())]), ScriptedFrontend([approves_the_cheat]),
               rounds=1)
    result = ItemRun(ctx).run()
    nothing_accepted(ctx, result)
    [decision] = events(ctx, "acceptance")
    assert decision["reason"].startswith(f"reviewer approved digest {sha256_bytes(CHEAT)[:12]}")


def test_every_record_of_an_accepted_item_holds_the_verified_bytes(tmp_path: Path) -> None:
    """The bytes verified, reviewed, accepted and recorded are one: the submission's saved file, the review's copy,
    ``accepted/``, the acceptance, the review's answer and the row all name (and hold) the same SHA-256. The actor's
    file rewritten after the acceptance changes none of them."""
    ctx = item(tmp_path, ScriptedFrontend([writes(HONEST.decode())]), ScriptedFrontend([approves]),
               rounds=1)
    result = ItemRun(ctx).run()
    (tmp_path / "ws" / "t" / "t.txt").write_bytes(CHEAT)  # what a process outliving the item would do
    digest, audit = sha256_bytes(HONEST), ctx.audit.directory
    assert result["outcome"] == "strict" and result["digest"] == digest
    [submission] = events(ctx, "submission")
    [review] = events(ctx, "review")
    acceptance = read_acceptance(audit)
    assert (submission["digest"], review["shown_digest"], review["digest"], acceptance["digest"],
            acceptance["verdict"]["digest"]) == (digest,) * 5
    for saved in (audit / submission["file"], audit / "accepted" / "t.txt", audit / review["review_dir"] / "t.txt"):
        assert saved.read_bytes() == HONEST, saved
    assert json.loads((audit / "s0" / "r1" / "review.json").read_text())["digest"] == digest


# --- the sandbox: what outlives the actor's command, what it may write of its own audit -------------------------

@pytest.fixture
def bwrap() -> None:
    require_tool("bwrap")


def test_a_writer_the_actors_command_left_behind_is_dead_when_the_command_returns(tmp_path: Path,
                                                                                 bwrap: None) -> None:
    """``setsid sh -c 'sleep 1; cp cheat proof' &``, then exit: when :func:`run_sandboxed` returns (the turn ends, the
    verifier reads the file next) nothing of the command is alive, so the file stays the one the turn left."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "proof.v").write_bytes(HONEST)
    (workspace / "cheat.v").write_bytes(CHEAT)
    script = "setsid sh -c 'sleep 1; cp cheat.v proof.v' </dev/null >/dev/null 2>&1 & echo left"
    result = run_sandboxed(["sh", "-c", script], SandboxPolicy(workspace=workspace, wall_seconds=30),
                           audit_dir=tmp_path / "audit")
    assert (result.returncode, result.stdout) == (0, "left\n")
    time.sleep(1.5)  # past the leftover's delay
    assert (workspace / "proof.v").read_bytes() == HONEST
    assert result.extra["leftovers_killed"] >= 1 and result.extra["survivors"] == []


def test_a_sandbox_may_not_write_its_own_audit_through_a_writable_bind(tmp_path: Path, bwrap: None) -> None:
    """The audit dir inside a writable bind (an agent's HOME) would let the command forge the lines of
    ``sandbox.jsonl`` the harness appends to, or make it a link the harness then writes through: refused like an audit
    dir inside the workspace."""
    workspace, home = tmp_path / "ws", tmp_path / "record"
    workspace.mkdir()
    home.mkdir()
    forged = json.dumps({"run": "forged", "outcome": {"returncode": 0, "sandbox": "bwrap"}})
    policy = SandboxPolicy(workspace=workspace, rw_binds=((home, "/home/agent"),), wall_seconds=30)
    with pytest.raises(ValueError, match="writable"):
        run_sandboxed(["sh", "-c", f"echo '{forged}' > /home/agent/audit/sandbox.jsonl"], policy,
                      audit_dir=home / "audit")
    assert not (home / "audit" / "sandbox.jsonl").exists()


# --- the verdict cache: a later item or run served "accepted" for other bytes, task, settings or policy -----------

class NamedProver(FakeProver):
    """The fake prover with an environment fingerprint (so its verdicts are cached) and one plain setting."""

    def __init__(self, checker_timeout: float = 0.0) -> None:
        self.checker_timeout = checker_timeout

    def fingerprint(self, task: Task) -> dict[str, str]:
        return {"version": "fake 1", "libraries": "fake-libraries"}


def test_an_accepted_entry_serves_only_its_own_bytes_task_settings_and_policy(tmp_path: Path) -> None:
    """A cached acceptance is found again for the same bytes, task, settings and policy only: the same bytes under
    another template, another setting or unsandboxed miss; the entry copied to another key's path, or its body edited
    to name other bytes, is refused (its key and its HMAC)."""
    cache, prover, sandboxed = VerdictCache(tmp_path / "cache", "readwrite"), NamedProver(), {"prover_sandboxed": True}
    task = fake_task()
    verdict, cached = verify_cached(cache, task, prover, HONEST, policy=sandboxed)
    assert verdict.accepted and not cached
    assert look_up(cache, task, prover, HONEST, policy=sandboxed).verdict == verdict
    other_template = replace(task, template="TEMPLATE of another statement\n")
    for case, lookup in {
            "other bytes": look_up(cache, task, prover, CHEAT, policy=sandboxed),
            "other template": look_up(cache, other_template, prover, HONEST, policy=sandboxed),
            "other setting": look_up(cache, task, NamedProver(checker_timeout=1.0), HONEST, policy=sandboxed),
            "unsandboxed": look_up(cache, task, prover, HONEST, policy={"prover_sandboxed": False})}.items():
        assert (lookup.verdict, lookup.why) == (None, "absent"), case
    entry = cache._path(look_up(cache, task, prover, HONEST, policy=sandboxed).key or {})
    for target in (other_template, task):
        data = HONEST if target is other_template else CHEAT
        moved = cache._path(look_up(cache, target, prover, data, policy=sandboxed).key or {})
        moved.parent.mkdir(parents=True, exist_ok=True)
        moved.write_text(entry.read_text())
        lookup = look_up(cache, target, prover, data, policy=sandboxed)
        assert lookup.verdict is None and lookup.why == "entry is for another key or format", lookup
    stored = json.loads(entry.read_text())
    stored["body"] = stored["body"].replace(sha256_bytes(HONEST), sha256_bytes(CHEAT))
    entry.write_text(json.dumps(stored))
    lookup = look_up(cache, task, prover, HONEST, policy=sandboxed)
    assert lookup.verdict is None and lookup.why == "entry not written by this cache (bad HMAC)"


def test_a_read_only_bind_cannot_be_written_through_a_hard_link_in_the_workspace(tmp_path: Path, bwrap: None) -> None:
    """The actor's sandbox holds the verifier's own files read-only (the judge plugin's build, the toolchain, the prover
    commands), on the same filesystem as its workspace here: neither a write nor a hard link into the writable
    workspace (then written there) reaches them."""
    workspace, judge = tmp_path / "ws", tmp_path / "judge-build"
    workspace.mkdir()
    judge.mkdir()
    (judge / "plugin.cmxs").write_bytes(HONEST)
    script = ("exec 2>&1; ln /judge/plugin.cmxs linked; echo cheat >> linked; echo cheat >> /judge/plugin.cmxs; "
              "ls /judge; true")
    result = run_sandboxed(["sh", "-c", script], SandboxPolicy(workspace=workspace, ro_binds=((judge, "/judge"),),
                                                               wall_seconds=30), audit_dir=tmp_path / "audit")
    assert "Invalid cross-device link" in result.stdout and "Read-only file system" in result.stdout, result.stdout
    assert (judge / "plugin.cmxs").read_bytes() == HONEST and (workspace / "linked").read_bytes() == b"cheat\n"


#: an unconfined command's ways at another process's file descriptors in the sandbox: reopen through ``/proc/<pid>/fd``
#: (a pipe can be reopened, a socket cannot) and ``pidfd_getfd`` (a copy of the descriptor itself, any kind)
STEAL_FDS = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
forged = b'{"exit_code": 0, "leftovers": 0}\n'
got = {}
for fd in sorted(int(n) for n in os.listdir("/proc/1/fd")):
    if os.readlink(f"/proc/1/fd/{fd}") == "/dev/null":
        continue
    got[f"{fd}"] = os.readlink(f"/proc/1/fd/{fd}")
    try:
        reopened = os.open(f"/proc/1/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
        os.write(reopened, forged)
        got[f"reopen {fd}"] = "wrote"
    except OSError as exc:
        got[f"reopen {fd}"] = exc.strerror
    pidfd = os.pidfd_open(1)
    stolen = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
    if stolen < 0:
        got[f"getfd {fd}"] = os.strerror(ctypes.get_errno())
    else:
        os.write(stolen, forged)
        got[f"getfd {fd}"] = "wrote"
print(json.dumps(got), flush=True)
os.kill(os.getpid(), 9)
"""


def test_a_command_can_neither_forge_its_inits_report_nor_take_its_output_sockets(tmp_path: Path,
                                                                                   bwrap: None) -> None:
    """The sandbox's init reports how the command ended (``command_signal``: a signal the harness did not send makes
    an agent's turn its own, never infra) on a status descriptor, and holds the sandbox's stdout and stderr sockets
    (which every process writes the CLI's stream to). A command not confined by Landlock (a prover's, or an agent's
    on a kernel without Landlock scopes) tries to write a forged report (exit 0, no signal) into every descriptor of
    the init, by reopening it and by ``pidfd_getfd``, then kills itself: none of them can be had, and the record
    says SIGKILL."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = run_sandboxed(["/usr/bin/python3", "-c", STEAL_FDS], SandboxPolicy(workspace=workspace, wall_seconds=30),
                           audit_dir=tmp_path / "audit")
    got = json.loads(result.stdout.splitlines()[-1])
    assert "wrote" not in got.values(), got
    assert result.stdout.count("exit_code") == 0  # nothing forged reached the sandbox's stdout either
    assert result.extra["command_signal"] == 9 and result.returncode == 137


# --- files and variables the actor plants for the verifier -----------------------------------------------------------

PLANTED_TEMPLATE = "Theorem forall_planted (n : nat) : n + 0 = n.\nProof. Admitted.\n"
PLANTED_CANDIDATE = ("From Cheat Require Import Cheat.\nTheorem forall_planted (n : nat) : n + 0 = n.\n"
                     "Proof. apply cheat. Qed.\n")


@pytest.mark.slow
def test_a_library_the_actor_compiled_in_its_workspace_is_not_on_the_verifiers_load_path(
        tmp_path: Path, shared_prover_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The actor compiles a library of its own in its workspace (``Cheat/Cheat.vo``, with ``_CoqProject`` and a
    ``.coqrc`` naming it) and a variable of the harness's environment points there (``COQPATH``, as if a tool of the
    actor's had exported it): the candidate that loads it does not elaborate, since the verifier compiles the
    submitted bytes alone in a directory of its own with a cleaned environment."""
    require_tool("coqc")
    import subprocess

    from pytest_forall.lang.rocq.backend import RocqProver
    from pytest_forall.lang.rocq.problem import parse_coq

    source = tmp_path / "forall_planted.v"
    source.write_text(PLANTED_TEMPLATE)
    task = parse_coq("forall_planted", source, PLANTED_TEMPLATE)
    workspace = tmp_path / "ws" / task.task_id

    def plants(ctx: SessionContext, prompt: str) -> TurnResult:
        library = ctx.workspace / "Cheat"
        library.mkdir()
        (library / "Cheat.v").write_text("Axiom cheat : forall n : nat, n + 0 = n.\n")
        subprocess.run(["coqc", "-Q", "Cheat", "Cheat", "Cheat/Cheat.v"], cwd=ctx.workspace, check=True)
        (ctx.workspace / "_CoqProject").write_text("-Q Cheat Cheat\n-R . ForallProblem\n")
        (ctx.workspace / ".coqrc").write_text("Add LoadPath \"Cheat\" as Cheat.\n")
        return writes(PLANTED_CANDIDATE)(ctx, prompt)

    monkeypatch.setenv("COQPATH", str(workspace))
    ctx = item(tmp_path, ScriptedFrontend([plants]), None, task=task,
               prover=RocqProver({"cache_dir": str(shared_prover_cache)}), rounds=1)
    result = ItemRun(ctx).run()
    assert (workspace / "Cheat" / "Cheat.vo").is_file()
    nothing_accepted(ctx, result)
    [submission] = events(ctx, "submission")
    assert submission["reason"].startswith("elaboration:") and "Cheat" in submission["reason"], submission
