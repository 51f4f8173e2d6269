"""End to end: the real agent CLIs, driven by the scripted model server, work on a real PutnamBench Coq
problem through a pytester-run pytest session, judged by the real Rocq verifier, inside the bwrap sandbox.

Each scenario checks what the plugin reports (outcome, reason, JUnit properties, audit record, resume
state) against what really happened: the server's request log and the CLIs' own transcripts. Token
counts are compared by each CLI's convention (docs/frontends.md): a request that consumed a script step is
counted, OpenCode's title request (auxiliary) is not. A CLI that is not installed skips its tests
locally and fails them under ``CI=true``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml, Properties

from pytest_forall.agents import claude_code, codex, opencode
from pytest_forall.agents.agent_cli import AgentCliFrontend
from pytest_forall.core import protocol
from pytest_forall.core.workspace import opaque_name

sys.path.insert(0, str(Path(__file__).parent))
from fake_model_server import ScriptedModelServer
from test_agent_frontends import EventClock

from conftest import PUTNAM

PROBLEM = "putnam_2001_a1"
OTHER_PROBLEM = "putnam_1992_a1"
CANDIDATE = f"{PROBLEM}.v"
NODEID = f"putnam.forall.toml::{PROBLEM}[coq]"
HOLE = "Proof. Admitted."
PROOF_STEPS = ["intros a b.", "pose proof (hop (op b a) b) as H.", "rewrite (hop b a) in H.", "exact H."]
REVIEW_MATCH = "REVIEW_VERDICT"     # only the reviewer's prompt asks for this line
RUN_SECRET = b"e2e-run-secret-0123456789abcdef!"
HACK = "(* the reviewer was here *)\n"


def candidate(steps: list[str], comment: str = "") -> str:
    template = (PUTNAM / "coq" / "src" / CANDIDATE).read_text()
    assert template.count(HOLE) == 1
    return template.replace(HOLE, "Proof.\n" + comment + "".join(f"  {step}\n" for step in steps) + "Qed.")


PROOF = candidate(PROOF_STEPS)
PROOF_AFTER_REVIEW = candidate(PROOF_STEPS, "  (* hop at (op b a) and b; then hop b a rewrites the head *)\n")
BROKEN = candidate(PROOF_STEPS[:-1])    # the goal is left open: Qed fails
BROKEN_MESSAGE = "Attempt to save an incomplete proof"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def verdict(word: str, text: str, reasons: str = "The statement is unchanged and the proof is sound.") -> str:
    return f"{reasons}\nREVIEW_VERDICT: {word}\nREVIEW_SHA256: {sha(text)}"


def actor_turn(text: str, final: str = "Submitted.") -> list[dict[str, Any]]:
    """Read the file first (Claude Code refuses to overwrite a file it has not read), write it, end the turn."""
    return [{"read": {"path": CANDIDATE}}, {"write": {"path": CANDIDATE, "content": text}}, {"text": final}]


@dataclass
class Cli:
    name: str
    frontend: type[AgentCliFrontend]
    key_env: str
    openai_style: bool
    #: the CLI's file writer and shell, as a scripted reviewer calls them (offered or not)
    writer: str
    shell: str
    options: list[str] = field(default_factory=list)


CLIS = {c.name: c for c in (
    Cli("claude-code", claude_code.ClaudeCodeFrontend, "ANTHROPIC_API_KEY", False, "Write", "Bash"),
    Cli("codex", codex.CodexFrontend, "OPENAI_API_KEY", True, "apply_patch", "exec_command",
        ["--forall-model=gpt-5.5"]),
    Cli("opencode", opencode.OpenCodeFrontend, "OPENAI_API_KEY", True, "write", "bash"),
)}


def require(case: Cli) -> Cli:
    problem = case.frontend().probe()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{case.name}: {problem}")
        pytest.skip(f"{case.name}: {problem}")
    return case


@pytest.fixture
def claude() -> Cli:
    return require(CLIS["claude-code"])


@pytest.fixture(params=list(CLIS))
def any_cli(request: pytest.FixtureRequest) -> Cli:
    return require(CLIS[request.param])


@pytest.fixture(scope="module")
def putnam_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PutnamBench-shaped root holding two real problems (the plugin is pointed here, not at the checkout)."""
    root = tmp_path_factory.mktemp("putnam")
    (root / "coq" / "src").mkdir(parents=True)
    for problem in (PROBLEM, OTHER_PROBLEM):
        (root / "coq" / "src" / f"{problem}.v").write_text((PUTNAM / "coq" / "src" / f"{problem}.v").read_text())
    return root


@pytest.fixture(scope="module")
def template_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Compiled templates shared by the module's runs (the cache is keyed by template and coqc version)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ScriptedModelServer] = []

    def start(actor: list[dict[str, Any]], reviewer: list[dict[str, Any]] | None = None,
              keys: dict[str, int | None] | None = None) -> ScriptedModelServer:
        roles = [{"name": "reviewer", "match": REVIEW_MATCH, "steps": reviewer}] if reviewer else []
        script: dict[str, Any] = {"roles": [*roles, {"name": "actor", "steps": actor}]}
        if keys is not None:
            script["keys"] = keys
        servers.append(ScriptedModelServer(script).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@dataclass
class Run:
    """One pytest session of the plugin and what it left behind."""

    result: pytest.RunResult
    run_dir: Path
    rows: dict[str, dict[str, Any]]
    junit: dict[str, dict[str, str]]

    @property
    def row(self) -> dict[str, Any]:
        return self.rows[PROBLEM]

    @property
    def props(self) -> dict[str, str]:
        return self.junit[PROBLEM]

    @property
    def audit_dir(self) -> Path:
        return Path(self.row["audit_dir"])

    @property
    def workspace(self) -> Path:
        return self.run_dir / "ws" / opaque_name(RUN_SECRET, NODEID)

    def audit(self) -> dict[str, Any]:
        return json.loads((self.audit_dir / "audit.json").read_text())


class Forall:
    """Runs the plugin in ``pytester`` against the scripted server, with the CLI's key in the environment."""

    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, putnam: Path,
                 cache: Path) -> None:
        self.pytester, self.monkeypatch, self.putnam, self.cache = pytester, monkeypatch, putnam, cache
        pytester.makefile(".forall.toml", putnam='adapter = "putnam"\ntracks = ["coq"]\n')

    def run(self, cli: Cli, server: ScriptedModelServer, run_id: str, *args: str, key: str = "sk-scripted",
            resume: bool = False) -> Run:
        self.monkeypatch.setenv(cli.key_env, key)
        run_dir = self.pytester.path / "reports" / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / ".secret").write_bytes(RUN_SECRET)   # known secret: the test can name the workspace
        xml = self.pytester.path / f"junit-{run_id}-{len(list(self.pytester.path.glob('junit-*')))}.xml"
        url = f"{server.url}/v1" if cli.openai_style else server.url
        result = self.pytester.runpytest(
            "-p", "no:cacheprovider", f"--forall-putnam-root={self.putnam}", f"--forall-frontend={cli.name}",
            f"--forall-provider-url={url}", f"--forall-cache-dir={self.cache}", f"--junitxml={xml}",
            "--forall-max-retries=0",
            f"--forall-resume={run_id}" if resume else f"--forall-run-id={run_id}", *cli.options, *args)
        lines = (run_dir / "results.jsonl").read_text().splitlines() if (run_dir / "results.jsonl").exists() else []
        rows = {json.loads(line)["task_id"]: json.loads(line) for line in lines}
        junit = {case.name.split("[")[0]: {p.name: p.value for p in case.child(Properties)}
                 for suite in JUnitXml.fromfile(str(xml)) for case in suite}
        return Run(result, run_dir, rows, junit)


@pytest.fixture
def forall(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, putnam_copy: Path,
           template_cache: Path) -> Forall:
    return Forall(pytester, monkeypatch, putnam_copy, template_cache)


def transcripts(audit_dir: Path) -> list[Path]:
    return sorted(audit_dir.rglob("*-turn*.jsonl"))


def assert_usage_reported(cli: Cli, run: Run, requests: list[dict[str, Any]]) -> None:
    """JUnit tokens = the server's usage over the item's requests; cost = what the CLI itself reported."""
    assert requests
    assert run.props["forall.tokens_in"] == str(sum(r["usage"]["input"] for r in requests))
    assert run.props["forall.tokens_out"] == str(sum(r["usage"]["output"] for r in requests))
    if cli.name == "claude-code":      # priced by Claude Code (its own table); the plugin sums its figures
        reported = [json.loads(line)["total_cost_usd"] for path in transcripts(run.audit_dir)
                    for line in path.read_text().splitlines() if '"type":"result"' in line]
        assert reported and float(run.props["forall.cost_usd"]) == pytest.approx(sum(reported))
    else:                              # Codex reports no cost, OpenCode none for an unpriced provider
        assert run.props["forall.cost_usd"] == ""


def bodies(requests: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(r["body"]) for r in requests]


# ---------------------------------------------------------------------------------------------------
# Every CLI


def test_solved_in_the_first_round_and_the_reviewer_cannot_write(any_cli: Cli, forall: Forall, serve: Any) -> None:
    run_id = "first"
    workspace = forall.pytester.path / "reports" / run_id / "ws" / opaque_name(RUN_SECRET, NODEID)
    server = serve(actor_turn(PROOF), reviewer=[
        {"write": {"path": CANDIDATE, "content": HACK}, "via": [any_cli.writer], "force": True},
        {"write": {"path": str(workspace / CANDIDATE), "content": HACK}, "via": [any_cli.shell], "force": True},
        {"text": verdict("APPROVE", PROOF)}])
    run = forall.run(any_cli, server, run_id, "-k", PROBLEM)

    assert (run.row["outcome"], run.row["rounds"], run.row["reviews"]) == ("strict", 1, 1), run.row["reason"]
    assert run.props["forall.digest"] == sha(PROOF) and run.result.ret == 0
    assert run.workspace == workspace and (workspace / CANDIDATE).read_text() == PROOF
    review_copy = run.audit_dir / "review-ws" / "s0-r1" / CANDIDATE
    assert review_copy.read_text() == PROOF
    reviewer = server.model_requests("reviewer")
    assert [r["tool"] for r in reviewer] == [any_cli.writer, any_cli.shell, ""], "the write attempts were not made"
    assert not any("Submitting: when you end your turn" in body for body in bodies(reviewer))
    assert (run.audit_dir / "accepted" / CANDIDATE).read_text() == PROOF
    assert_usage_reported(any_cli, run, server.model_requests())

    audit = run.audit()
    assert [t["role"] for t in audit["turns"]] == ["actor", "reviewer"]
    assert all((run.audit_dir / t["transcript"]).stat().st_size > 0 for t in audit["turns"])
    assert [(s["submission"], s["digest"]) for s in audit["submissions"]] == [("candidate", sha(PROOF))]
    assert audit["reviews"][0]["digest"] == audit["reviews"][0]["shown_digest"] == sha(PROOF)
    sandbox_log = [json.loads(line) for path in run.audit_dir.rglob("sandbox.jsonl")
                   for line in path.read_text().splitlines()]
    review_launch = next(r for r in sandbox_log if r["cwd_inside"] == str(review_copy.parent))
    assert [str(review_copy.parent), str(review_copy.parent)] in review_launch["policy"]["ro_binds"]
    allowed = review_launch["policy"]["allow"]
    assert server.url.removeprefix("http://") in allowed
    assert len(allowed) == 2 and all(a.startswith("127.0.0.1:") for a in allowed)  # provider + the item's tools
    review_tools = json.loads((run.audit_dir / "s0" / "r1" / "review" / "tools.json").read_text())
    assert review_tools["unauthenticated"] == 0
    assert run.row["tool_calls"] == {"navigation": 0, "compilation": 0, "interaction": 0}  # this scripted model called no tool


# ---------------------------------------------------------------------------------------------------
# The full scenario set, on Claude Code


def test_verifier_failure_resumes_the_same_session_with_the_diagnostics(claude: Cli, forall: Forall,
                                                                        serve: Any) -> None:
    server = serve([*actor_turn(BROKEN), *actor_turn(PROOF)], reviewer=[{"text": verdict("APPROVE", PROOF)}])
    run = forall.run(claude, server, "again", "-k", PROBLEM)

    assert (run.row["outcome"], run.row["rounds"], run.row["compiles"]) == ("strict", 2, 2), run.row["reason"]
    assert len(run.row["sessions"]) == 1
    ids = {json.loads(line).get("session_id") for path in run.audit_dir.glob("s0/actor-turn*.jsonl")
           for line in path.read_text().splitlines()} - {None}
    assert ids == set(run.row["sessions"])
    second_turn = server.model_requests("actor")[3]
    assert BROKEN_MESSAGE in json.dumps(second_turn["body"]), "turn 2 did not carry the diagnostics"
    assert "intros a b." in json.dumps(second_turn["body"]), "turn 2 did not carry turn 1's conversation"
    assert [s["verdict"] for s in run.audit()["submissions"]] == ["reject", "accept"]
    assert_usage_reported(claude, run, server.model_requests())


def test_reviewer_rejection_reaches_the_actor_as_review_md_and_the_fix_is_accepted(claude: Cli, forall: Forall,
                                                                                   serve: Any) -> None:
    objection = "The proof lacks an explanation of the rewrite (REVIEWER-OBJECTION-7)."
    server = serve([*actor_turn(PROOF), {"read": {"path": "REVIEW.md"}}, *actor_turn(PROOF_AFTER_REVIEW)],
                   reviewer=[{"text": verdict("REJECT", PROOF, objection)},
                             {"read": {"path": CANDIDATE}}, {"text": verdict("APPROVE", PROOF_AFTER_REVIEW)}])
    run = forall.run(claude, server, "review", "-k", PROBLEM)

    assert (run.row["outcome"], run.row["reviews"]) == ("strict", 2), run.row["reason"]
    assert run.row["digest"] == sha(PROOF_AFTER_REVIEW)
    assert objection in (run.workspace / "REVIEW.md").read_text()
    actor = server.model_requests("actor")
    assert "REVIEW.md" in json.dumps(actor[3]["body"]) and objection in json.dumps(actor[4]["body"])
    second_review = server.model_requests("reviewer")[1:]
    assert not any(objection in body or "Submitting:" in body for body in bodies(second_review))
    assert_usage_reported(claude, run, server.model_requests())


def test_approval_of_another_digest_is_not_acceptance(claude: Cli, forall: Forall, serve: Any) -> None:
    server = serve(actor_turn(PROOF), reviewer=[{"text": verdict("APPROVE", BROKEN)}])
    run = forall.run(claude, server, "digest", "-k", PROBLEM, "--forall-rounds=1")

    assert run.row["outcome"] == "failed" and run.result.ret == 1
    assert f"reviewer approved digest {sha(BROKEN)[:12]}" in run.row["reason"]
    assert "round budget of 1 exhausted" in run.row["reason"]
    assert run.props["forall.digest"] == "" and not (run.audit_dir / "accepted").exists()
    assert [a["accepted"] for a in run.audit()["acceptances"]] == [False]
    assert_usage_reported(claude, run, server.model_requests())


def test_expired_credential_is_infra_and_a_resumed_run_finishes_in_the_same_session(claude: Cli, forall: Forall,
                                                                                   serve: Any) -> None:
    server = serve(actor_turn(PROOF), reviewer=[{"text": verdict("APPROVE", PROOF)}],
                   keys={"sk-expiring": 1, "sk-renewed": None})
    first = forall.run(claude, server, "cred", "-k", PROBLEM, key="sk-expiring")

    assert first.row["outcome"] == "infra" and first.row["reason"].startswith("actor: authentication: ")
    assert first.result.ret == 75 and first.props["forall.outcome"] == "infra"
    assert [r["status"] for r in server.requests if r["path"].startswith("/v1/messages")][:2] == [200, 401]
    session = first.row["sessions"][0]
    state = json.loads((first.audit_dir / "state.json").read_text())
    assert set(state) == {"payload", "hmac"} and json.loads(state["payload"])["state"]["outcome"] == "infra"

    resumed = forall.run(claude, server, "cred", "-k", PROBLEM, key="sk-renewed", resume=True)
    assert resumed.row["outcome"] == "strict", resumed.row["reason"]
    # the turn cut short by the expired key is not a round (it is re-run): one round in all
    assert resumed.row["sessions"] == [session] and resumed.row["rounds"] == 1
    resumed_turn = json.dumps(server.model_requests("actor")[1]["body"])
    assert "cut short by an infrastructure problem" in resumed_turn
    assert "Submitting: when you end your turn" in resumed_turn, "the resumed turn lost the first turn's prompt"
    assert [e["action"] for e in resumed.audit()["state"]] == ["resumed"]
    assert_usage_reported(claude, resumed, server.model_requests())   # cumulative over both runs


def test_a_turn_that_spends_no_tokens_is_infra(claude: Cli, forall: Forall, serve: Any) -> None:
    server = serve([{"text": "", "usage": {"input": 0, "output": 0}}])
    run = forall.run(claude, server, "zero", "-k", PROBLEM)

    assert run.row["outcome"] == "infra" and "zero-tokens" in run.row["reason"]
    assert run.result.ret == 75 and run.row["compiles"] == 0


def test_the_run_wide_spend_cap_stops_every_item_as_infra_and_a_higher_cap_resumes(claude: Cli, forall: Forall,
                                                                                  serve: Any) -> None:
    server = serve([{"text": "Still thinking."}, {"text": "Still thinking."}, *actor_turn(PROOF)],
                   reviewer=[{"text": verdict("APPROVE", PROOF)}])
    run = forall.run(claude, server, "cap", "-k", PROBLEM, "--forall-run-usd=0.01")

    assert (run.row["outcome"], run.row["stop"]) == ("infra", "run-usd"), run.row["reason"]
    assert run.props["forall.stop"] == "run-usd" and run.result.ret == 75   # a cap is never a proof failure
    assert "run-wide spend cap of $0.01 reached" in run.row["reason"] and run.row["rounds"] == 1
    ledger = json.loads((run.run_dir / "spend.json").read_text())["usd"]
    assert ledger > 0.01 and ledger == pytest.approx(float(run.props["forall.cost_usd"]))

    resumed = forall.run(claude, server, "cap", "-k", PROBLEM, "--forall-run-usd=100", resume=True)
    assert resumed.row["outcome"] == "strict", resumed.row["reason"]
    assert resumed.row["sessions"] == run.row["sessions"] and resumed.row["rounds"] == 3


def test_the_run_wide_spend_cap_stops_an_item_that_never_made_a_request(claude: Cli, forall: Forall,
                                                                        serve: Any) -> None:
    server = serve([{"text": "Still thinking."}])
    run = forall.run(claude, server, "cap2", "--forall-run-usd=0.01")
    assert {task: (row["outcome"], row["stop"]) for task, row in run.rows.items()} == {
        PROBLEM: ("infra", "run-usd"), OTHER_PROBLEM: ("infra", "run-usd")}
    assert sorted(row["rounds"] for row in run.rows.values()) == [0, 1]
    assert len(server.model_requests()) == 1, "the cap did not stop the second item"


@pytest.fixture(params=["claude-code", "codex"])
def claude_or_codex(request: pytest.FixtureRequest) -> Cli:
    return require(CLIS[request.param])


#: The stall limit and the item's wall budget below, small: the clocks that bound the turn (the CLI's, the sandbox
#: supervisor's and, for the wall budget, the item's) stand still until the CLI has asked the provider
#: (:class:`EventClock`), so each limit counts from the unanswered request, not from a start-up a loaded machine
#: stretches (8 s and 25 s here cost 35 s of the suite's wall per CLI).
STALL, WALL = 3.0, 4.0


def test_a_provider_that_never_answers_ends_the_item_as_infra(claude_or_codex: Cli, forall: Forall,
                                                              serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cli = claude_or_codex
    server = serve([{"text": "too late", "delay": 300}])
    actor = next(role for role in server.model.roles if role.name == "actor")
    clock = EventClock(lambda: actor.consumed >= 1).install(monkeypatch)   # silence counts once it asked
    stalled = forall.run(cli, server, "silent", "-k", PROBLEM, f"--forall-stall={STALL:g}")
    assert clock.fired, "the CLI never asked the provider"
    assert (stalled.row["outcome"], stalled.row["stop"]) == ("infra", "provider-unresponsive"), stalled.row
    assert f"no output from the CLI for {STALL:g} s" in stalled.row["reason"], stalled.row["reason"]
    assert stalled.row["wall_s"] < 120 and stalled.result.ret == 75

    # the report: with --forall-wall 30 the item was `failed`; a turn killed without an answer is infra
    asked = actor.consumed
    clock = EventClock(lambda: actor.consumed > asked).install(monkeypatch)
    monkeypatch.setattr(protocol, "time", clock)   # the item's wall budget: its start-up spends none of it
    walled = forall.run(cli, server, "walled", "-k", PROBLEM, f"--forall-wall={WALL:g}")
    assert clock.fired, "the CLI never asked the provider"
    assert (walled.row["outcome"], walled.row["stop"]) == ("infra", "turn-timeout"), walled.row
    assert walled.row["rounds"] == 0 and walled.props["forall.stop"] == "turn-timeout"   # re-run on resume


def test_round_budget_exhaustion_fails_with_the_budget_named(claude: Cli, forall: Forall, serve: Any) -> None:
    server = serve(actor_turn(BROKEN))
    run = forall.run(claude, server, "budget", "-k", PROBLEM, "--forall-rounds=1")

    assert run.row["outcome"] == "failed" and run.result.ret == 1
    reason = run.row["reason"]
    assert reason.startswith("round budget of 1 exhausted (last: elaboration: ") and BROKEN_MESSAGE in reason
    assert "after 1 sample(s), 1 round(s), 1 compile(s), 0 review(s)" in reason
    assert (run.props["forall.rounds"], run.props["forall.compiles"]) == ("1", "1")
    assert_usage_reported(claude, run, server.model_requests())


# ---------------------------------------------------------------------------------------------------
# The actor cannot write its own record (issue 37, docs/sandbox.md "What the actor can and cannot influence")

FORGED = {"type": "result", "subtype": "success", "is_error": True, "api_error_status": 529,
          "result": "API Error: 529 overloaded", "usage": {"input_tokens": 1, "output_tokens": 1},
          "total_cost_usd": 0, "session_id": "forged"}
#: Run by the model in the actor's shell: every ancestor but the sandbox's init (the shell's CLI among them) is
#: attacked as the review of issue 37 did: a forged ``result`` into its stdout and an API error into its stderr
#: through /proc, its memory opened for writing, then SIGSTOP and SIGKILL; every fd the shell holds gets the
#: forged line too. It prints one line per attempt, which reaches the scripted server in the next request.
ATTACK = r"""python3 - <<'FORALL_ATTACK'
import json, os, signal
forged = json.dumps(FORGED_EVENT) + "\n"
def ancestors():
    pid = os.getppid()
    while pid > 1:
        comm = open(f"/proc/{pid}/comm").read().strip()   # a confined shell runs through the loader
        yield pid, "shell" if comm in ("bash", "sh", "dash") or comm.startswith("ld-linux") else "cli"
        pid = int(next(l for l in open(f"/proc/{pid}/status") if l.startswith("PPid:")).split()[1])
def attempt(who, what, action):
    try:
        action()
        print("ATTACK", who, what, "SUCCEEDED")
    except OSError as exc:
        print("ATTACK", who, what, "failed:", exc.strerror)
for fd in os.listdir("/proc/self/fd"):
    attempt("own", f"fd {fd}", lambda: os.write(int(fd), forged.encode()))
targets = list(ancestors())
for pid, who in targets:
    for fd, text in (("1", forged), ("2", "API Error: 529 overloaded\n")):
        attempt(who, f"write /proc/{pid}/fd/{fd}", lambda: open(f"/proc/{pid}/fd/{fd}", "w").write(text))
    attempt(who, f"open /proc/{pid}/mem", lambda: open(f"/proc/{pid}/mem", "r+b").close())
for pid, who in targets:
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        attempt(who, f"signal {sig.name} to {pid}", lambda: os.kill(pid, sig) if who == "cli" else None)
print("ATTACKED", " ".join(who for _, who in targets))
FORALL_ATTACK""".replace("FORGED_EVENT", repr(FORGED))


def _texts(value: Any) -> Iterator[str]:
    """Every string in a request body (tool results are nested in the wire API's content blocks)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def shell_call(cli: Cli, command: str) -> dict[str, Any]:
    """A scripted step that runs ``command`` in the CLI's shell tool."""
    args = {"cmd": command} if cli.shell == "exec_command" else {"command": command, "description": "run"}
    return {"call_tool": cli.shell, "args": args}


def actor_launch(run: Run) -> dict[str, Any]:
    """The sandbox record of the actor's first turn (the actor's HOME is among its writable binds)."""
    return next(r for r in sandbox_records(run) if any(dest.endswith("/actor-home") for _, dest in r["policy"]["rw_binds"]))


def sandbox_records(run: Run) -> list[dict[str, Any]]:
    return [json.loads(line) for path in run.audit_dir.rglob("sandbox.jsonl") for line in path.read_text().splitlines()]


def test_the_actors_shell_cannot_forge_its_clis_stream_or_kill_it(any_cli: Cli, forall: Forall, serve: Any) -> None:
    server = serve([shell_call(any_cli, ATTACK), {"text": "I give up."}])
    run = forall.run(any_cli, server, "forge", "-k", PROBLEM, "--forall-rounds=1")

    actor = server.model_requests("actor")
    # the attack's output, as the CLI gave it back to the model: the CLI lived on to send it
    report = next(text for text in _texts(actor[1]["body"]) if "ATTACKED" in text and "FORALL_ATTACK" not in text)
    assert report.split("ATTACKED ")[1].split()[0] == "shell" and " cli" in report.split("ATTACKED ")[1], report
    on_cli = [line for line in report.splitlines() if line.startswith("ATTACK cli ")]
    assert len(on_cli) >= 5 and all(" failed: " in line for line in on_cli), on_cli
    # the item is the actor's failure, judged, with the provider's usage: nothing forged reached the record
    assert (run.row["outcome"], run.result.ret) == ("failed", 1), run.row["reason"]
    assert run.row["tokens_in"] == sum(r["usage"]["input"] for r in actor) > 1
    events = [json.loads(line) for path in transcripts(run.audit_dir) for line in path.read_text().splitlines()
              if line.startswith("{")]
    assert events and not any(e.get("session_id") == "forged" for e in events)
    launch = actor_launch(run)
    assert launch["outcome"]["limits"]["shells"].startswith("landlock-abi")
    assert launch["outcome"]["command_signal"] is None and launch["policy"]["confine_shells"]


def test_a_provider_529_seen_by_the_proxy_is_still_infra(any_cli: Cli, forall: Forall, serve: Any) -> None:
    server = serve([{"error": 529, "message": "Overloaded", "retry_after_ms": 10}])
    run = forall.run(any_cli, server, "overloaded", "-k", PROBLEM)

    assert (run.row["outcome"], run.result.ret) == ("infra", 75), run.row["reason"]
    assert run.row["reason"].startswith("actor: provider-error: "), run.row["reason"]
    turn = run.audit()["turns"][0]
    assert 529 in turn["traffic"]["statuses"] and turn["own_fault"] == ""


def test_a_memory_balloon_in_the_actors_shell_stops_at_the_bound(any_cli: Cli, forall: Forall, serve: Any) -> None:
    balloon = "python3 -c 'b = bytearray(1 << 30); print(\"BALLOON SURVIVED\", len(b))'"
    server = serve([shell_call(any_cli, balloon), {"text": "Out of ideas."}])
    run = forall.run(any_cli, server, "balloon", "-k", PROBLEM, "--forall-rounds=1", "--forall-memory=512")

    assert (run.row["outcome"], run.result.ret) == ("failed", 1), run.row["reason"]
    launch = actor_launch(run)
    assert launch["policy"]["memory_mb"] == 512 and launch["outcome"]["limits"]["memory"] == "cgroup-v1"
    assert launch["outcome"]["oom"] is True
    # the kernel kills the largest process of the tree at the bound: the balloon (Claude Code, Codex: the CLI lives on
    # to pass "Killed" to the model) or the CLI itself (OpenCode's runtime is larger when the bound is hit); the
    # actor's failure either way, and the allocation never completed
    assert not any("BALLOON SURVIVED 1073741824" in json.dumps(r["body"]) for r in server.model_requests("actor"))
    turn = run.audit()["turns"][0]
    assert turn["own_fault"].startswith("the turn's processes passed the memory bound") and not turn["infra"]


#: Run by the model through Codex's ``exec_command`` with a ``shell`` of its choosing (the tool's own parameter):
#: the command runs as ``<shell> -c <cmd>``, here a Python that reads its parent (the CLI) and opens its memory.
NOT_A_SHELL = ("import os\npid = os.getppid()\ncomm = open(f'/proc/{pid}/comm').read().strip()\n"
               "try:\n    open(f'/proc/{pid}/mem', 'r+b').close()\n    print('PROBE', comm, 'mem SUCCEEDED')\n"
               "except OSError as exc:\n    print('PROBE', comm, 'mem failed:', exc.strerror)\n")


def test_a_shell_the_model_names_is_still_confined(forall: Forall, serve: Any) -> None:
    """Codex's ``exec_command`` offers the model a ``shell`` (the binary to launch) and ``login``: naming a program
    that is not a shell (python3, which would then run ``-c <cmd>`` as the CLI's direct child, in the CLI's own
    Landlock domain) must not get the model a process that can open the CLI's memory. Codex 0.171 runs the command
    in the user's shell (the confined ``/bin/sh``) instead; a Codex that honoured the name would fail here."""
    cli = require(CLIS["codex"])
    step = {"call_tool": "exec_command", "args": {"cmd": NOT_A_SHELL, "shell": "/usr/bin/python3", "login": False}}
    server = serve([step, {"text": "I give up."}])
    forall.run(cli, server, "not-a-shell", "-k", PROBLEM, "--forall-rounds=1")
    actor = server.model_requests("actor")
    outputs = [str(i.get("output")) for i in actor[1]["body"].get("input", []) if i.get("type") == "function_call_output"]
    assert len(outputs) == 1, outputs   # the call ran and its output reached the model
    probes = [line for line in outputs[0].splitlines() if line.startswith("PROBE ")]
    assert not any("SUCCEEDED" in line for line in probes), probes
    assert probes or "/bin/sh" in outputs[0], outputs[0]   # the probe failed, or the text ran as a shell script
