"""A fast, deterministic adapter + prover + frontend: each task's behaviour is named in the manifest.

STRICT  -> verifier accepts, strict axioms        RULES -> accepted, rules-only axioms
FAIL    -> does not compile                         INFRA -> the template does not compile here
FALSE   -> the actor claims the statement is false  ROUNDS:n -> compiles only on turn n
CRASH   -> the process running the item dies      BLOCK -> compiling writes blocked-<task> beside the manifest,
                                                           then waits for a file named release there; passes
INTERRUPT -> Ctrl-C reaches compiling while CPython runs exec'd source (an import building a dataclass)
"""


import pytest

from pytest_forall.core.actor import TurnResult
from pytest_forall.core.model import Layer, Task, Usage
from pytest_forall.core.prover import AxiomAudit, CompileResult


@pytest.hookimpl(tryfirst=True)
def pytest_forall_load_tasks(path, manifest, options):
    if manifest.get("adapter") != "fake":
        return None
    return [Task(task_id=tid, suite="fake", track="fake", prover="fakeprover", source_path=str(path),
                 template=f"{behaviour}\n", theorem_name=tid, frozen="")
            for tid, behaviour in manifest["tasks"].items()]


class FakeProver:
    name = "fakeprover"
    ext = "txt"

    def probe(self, workspace):
        return ""

    def static_layers(self, task, text):
        return [Layer("syntax_screen", "CHEAT" not in text, "cheat found" if "CHEAT" in text else "")]

    def check_template(self, task, workspace, timeout):
        if "INFRA" in task.template:
            return CompileResult(ok=False, infra="template does not compile here: fake library missing")
        return CompileResult(ok=True)

    def compile(self, task, workspace, candidate, timeout):
        import os

        from pytest_forall.core.model import sha256_bytes
        text = candidate.read_text()
        if "CRASH" in text:
            os._exit(3)  # the worker dies mid-item
        if text.startswith("INTERRUPT"):
            exec("import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nfor _ in range(100): pass\n")  # noqa: S102
        if text.startswith("BLOCK"):
            import time
            from pathlib import Path
            here = Path(task.source_path).parent
            (here / f"blocked-{task.task_id}").touch()   # the item is inside its prover call now
            give_up = time.monotonic() + 600               # an unreleased item still ends
            while not (here / "release").exists() and time.monotonic() < give_up:
                time.sleep(0.1)
        ok = "FAIL" not in text and "PENDING" not in text
        return CompileResult(ok=ok, digest=sha256_bytes(candidate.read_bytes()),
                             messages=[] if ok else [{"severity": "error", "data": "fake compile error"}])

    def audit_axioms(self, task, workspace, candidate, timeout):
        rules = "RULES" in candidate.read_text()
        return AxiomAudit(ok=True, axioms=["fake.choice"] if rules else [], strict_ok=not rules, rules_ok=True)

    def independent_check(self, task, workspace, candidate, timeout):
        return Layer("independent_check", True)


@pytest.hookimpl(tryfirst=True)
def pytest_forall_make_prover(name, options):
    return FakeProver() if name == "fakeprover" else None


class FakeSession:
    def __init__(self, ctx):
        self.ctx = ctx
        self.session_id = "fake-session"
        self.turns = 0

    def turn(self, prompt, *, timeout):
        self.turns += 1
        with open(self.ctx.audit_dir / "prompts.txt", "a") as handle:
            handle.write(prompt + "\n")
        path = self.ctx.workspace / self.ctx.task.candidate_name
        text = self.ctx.task.template
        if text.startswith("ROUNDS:"):
            text = "OK\n" if self.turns >= int(text.split(":")[1]) else "PENDING\n"
        path.write_text(text)
        return TurnResult(session_id=self.session_id, usage=Usage(10, 5, 0, 0.01),
                          claims_false="FALSE" in text)

    def close(self):
        pass


class FakeFrontend:
    name = "fake"
    is_agent = False

    def probe(self):
        return ""

    def start(self, ctx):
        return FakeSession(ctx)


@pytest.hookimpl(tryfirst=True)
def pytest_forall_make_frontend(name, options):
    return FakeFrontend() if name == "fake" else None


def pytest_configure(config):
    config.addinivalue_line("markers", "fake: fake track")
