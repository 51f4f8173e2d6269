"""The actor's interactive tools (goals, try, query) over the item's warm coqtop, on a real PutnamBench template with
mathcomp, checked against what a plain ``coqtop`` prints for the same prefix.

One item server (framework-side HTTP, as the protocol serves it) is shared by the module, so the mathcomp imports are
loaded once; the end-to-end test drives a real ``claude -p`` through the scripted model server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import PUTNAM, require_path, require_tool
from pytest_forall.agents.claude_code import ClaudeCodeFrontend
from pytest_forall.core import workspace as ws
from pytest_forall.core.actor import ACTOR, REVIEWER, SessionContext
from pytest_forall.core.model import Budget, Task, sha256_bytes
from pytest_forall.core.prover import SessionRefused
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.coqtop import process_tree
from pytest_forall.lang.rocq.problem import parse_coq
from pytest_forall.tools.item import TOOL_CALLS, URL_ENV, ItemTools, ToolContext, read_records
from pytest_forall.tools.shell import call

sys.path.insert(0, str(Path(__file__).parent))
from fake_model_server import ScriptedModelServer
from test_mcp_tools import claude  # noqa: F401  # the fixture: a real `claude` or skip (fail under CI)

#: A PutnamBench template importing mathcomp (fintype, perm); its goal has hypotheses after ``intros``.
TASK_ID = "putnam_1965_a5"
#: the template's lines 1-4 are the imports, the definition and the statement; 5 is ``Proof.``
PROOF = "Proof.\nintros n hn.\n" + "".join(
    f"assert (h{k} : {k} + 0 = {k}) by reflexivity.\n" for k in range(1, 29)) + "unfold putnam_1965_a5_solution.\n"
INTROS_LINE = 6
LAST_LINE = 6 + 28 + 1


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    require_tool("coqtop")
    source = tmp_path_factory.mktemp("task") / f"{TASK_ID}.v"
    shutil.copy(require_path(PUTNAM / "coq" / "src" / source.name, "PutnamBench"), source)
    return parse_coq(TASK_ID, source, source.read_text(encoding="utf-8"))


def candidate_text(task: Task) -> str:
    return task.template.replace("Proof. Admitted.", PROOF)


@pytest.fixture(scope="module")
def served(task: Task, tmp_path_factory: pytest.TempPathFactory, shared_prover_cache: Path) -> Iterator[ItemTools]:
    root = tmp_path_factory.mktemp("item")
    workspace = ws.prepare(root / "ws", "w", task, reset=True)
    (workspace / task.candidate_name).write_text(candidate_text(task), encoding="utf-8")
    context = ToolContext(task=task, role=ACTOR, workspace=workspace, audit_dir=root / "audit", prover="rocq",
                          prover_options={"cache_dir": str(shared_prover_cache)}, timeout=60,
                          excluded=(task.theorem_name,))
    with ItemTools(context, RocqProver({"cache_dir": str(shared_prover_cache)})) as tools:
        yield tools


def ask(tools: ItemTools, tool: str, **arguments: Any) -> tuple[bool, str]:
    async def guarded() -> tuple[bool, str]:
        with anyio.fail_after(300):  # a hang guard, not a measurement
            return await call(tools.url, tool, arguments)

    return anyio.run(guarded)


_REFERENCE: dict[str, str] = {}


def reference_goals(task: Task, prefix: str) -> str:
    """What a plain ``coqtop`` prints for ``Show.`` after ``prefix``: its last goal display (once per prefix)."""
    if prefix not in _REFERENCE:
        _REFERENCE[prefix] = _coqtop_show(prefix)
    return _REFERENCE[prefix]


def _coqtop_show(prefix: str) -> str:
    shown = subprocess.run(["coqtop", "-q"], input=prefix + "\nShow.\n", capture_output=True, text=True,
                           timeout=300, check=False).stdout
    blocks = re.split(r"(?m)^(?=\d+ (?:focused )?goals?\b)", shown)
    return blocks[-1].rstrip()


def shown_goals(answer: str) -> str:
    """The goal display of a goals/try answer, without the ``(ID n)`` the session's ``-emacs`` mode adds."""
    return re.sub(r" \(ID \d+\)", "", answer)


def prefix_lines(text: str, line: int) -> str:
    return "".join(text.splitlines(keepends=True)[:line])


def test_goals_are_what_coqtop_prints(served: ItemTools, task: Task) -> None:
    text = candidate_text(task)
    for line in (INTROS_LINE, LAST_LINE):
        is_error, answer = ask(served, "goals", line=line)
        digest = sha256_bytes(text.encode())
        assert not is_error and answer.splitlines()[:2] == [f"sha256: {digest}", "status: ok"], answer
        expected = reference_goals(task, prefix_lines(text, line))
        assert "hn : n > 0" in expected and expected in shown_goals(answer), (expected, answer)
    assert "2 ^ (n - 1)" in answer  # the last line unfolded the solution
    _, whole = ask(served, "goals")  # 0: the end of the file
    assert shown_goals(whole).split("\n", 2)[2] == shown_goals(answer).split("\n", 2)[2]


def test_try_answers_goals_and_leaves_the_file_alone(served: ItemTools, task: Task) -> None:
    candidate = served.context.workspace / task.candidate_name
    before = (candidate.read_bytes(), candidate.stat().st_mtime_ns)
    is_error, answer = ask(served, "try", tactics="unfold putnam_1965_a5_solution.", line=INTROS_LINE)
    assert not is_error and answer.splitlines()[1] == "status: ok" and "nothing was written" in answer
    expected = reference_goals(task, prefix_lines(candidate_text(task), INTROS_LINE)
                               + "unfold putnam_1965_a5_solution.\n")
    assert expected in shown_goals(answer) and "2 ^ (n - 1)" in expected
    _, failed = ask(served, "try", tactics="exact I.", line=INTROS_LINE)
    assert failed.splitlines()[1] == "status: error" and "`exact I.` fails at line 6" in failed
    assert "hn : n > 0" in failed  # the goals it failed on
    assert (candidate.read_bytes(), candidate.stat().st_mtime_ns) == before
    # the session went back to the file's state: goals after the try are the file's
    _, after = ask(served, "goals", line=INTROS_LINE)
    assert "putnam_1965_a5_solution n" in after and "2 ^ (n - 1)" not in after


@pytest.mark.parametrize(("tool", "arguments", "says"), [
    ("query", {"command": "Print putnam_1965_a5."}, "`Print putnam_1965_a5` is refused"),
    ("query", {"command": "Print Assumptions putnam_1965_a5."}, "`putnam_1965_a5` is withheld"),
    ("query", {"command": "Print putnam_1965_a5_solution."}, "is refused"),
    ("query", {"command": "Require Import Bool."}, "`Require` is refused"),
    ("query", {"command": "Redirect \"out\" Check nat."}, "`Redirect` is refused"),
    ("query", {"command": "Check nat. Print nat."}, "exactly one command"),
    ("try", {"tactics": "Print nat.", "line": INTROS_LINE}, "`Print nat.` is a command"),
    ("try", {"tactics": "Qed.", "line": INTROS_LINE}, "`Qed.` is a command"),
    ("try", {"tactics": "idtac.", "line": 999}, "line 999 is outside the file"),
    ("goals", {"line": 999}, "line 999 is outside the file"),
    ("goals", {"line": -1}, "line -1 is outside the file"),
])
def test_bad_input_is_one_line_and_loses_nothing(served: ItemTools, task: Task, tool: str,
                                                 arguments: dict[str, Any], says: str) -> None:
    is_error, answer = ask(served, tool, **arguments)
    assert is_error and says in answer and "\n" not in answer.strip(), answer
    assert "Error executing tool" not in answer or answer.count(":") >= 1
    is_error, goals = ask(served, "goals", line=INTROS_LINE)
    assert not is_error and "hn : n > 0" in goals


def test_a_file_that_moves_coqs_own_state_is_refused_not_misread(served: ItemTools, task: Task) -> None:
    """``Back`` in the file would undo states the session remembers: refused with one line, the file untouched."""
    candidate = served.context.workspace / task.candidate_name
    original = candidate.read_bytes()
    try:
        candidate.write_text(candidate_text(task).replace("intros n hn.\n", "intros n hn.\nBack 1.\n"),
                             encoding="utf-8")
        is_error, answer = ask(served, "goals")
    finally:
        candidate.write_bytes(original)
    assert is_error and "putnam_1965_a5.v:7: `Back` controls the prover session" in answer, answer
    _, goals = ask(served, "goals", line=INTROS_LINE)
    assert "hn : n > 0" in goals


def test_query_runs_statement_queries_in_the_template_context(served: ItemTools, task: Task) -> None:
    _, about = ask(served, "query", command="About cardinal")
    assert about.splitlines()[:2] == [f"sha256: {sha256_bytes(task.template.encode())}", "status: ok"]
    assert "cardinal : forall U : Type" in about
    _, assumptions = ask(served, "query", command="Print Assumptions fintype.card_ord.")
    assert "Closed under the global context" in assumptions and "Fetching" not in assumptions
    _, found = ask(served, "query", command='Search "card" "perm".')
    assert "card_perm" in found
    _, missing = ask(served, "query", command="Check no_such_lemma.")
    assert missing.splitlines()[1] == "status: error" and "no_such_lemma" in missing


def test_looping_tactics_time_out_and_a_dead_session_restarts(served: ItemTools, task: Task) -> None:
    tools = served.tools
    assert tools is not None
    session = tools._proof_session()
    session.timeout = 2  # type: ignore[attr-defined]
    try:
        is_error, answer = ask(served, "try", tactics="do 1000000000 idtac.", line=INTROS_LINE)
    finally:
        session.timeout = 60  # type: ignore[attr-defined]
    assert not is_error and answer.splitlines()[1] == "status: timeout" and len(answer.splitlines()) == 3, answer
    _, goals = ask(served, "goals", line=INTROS_LINE)
    assert "hn : n > 0" in goals and goals.splitlines()[1] == "status: ok"
    # kill the session's coqtop: the next call restarts it, says so, and logs an infra restart
    child = session.coq.child  # type: ignore[attr-defined]
    for pid in reversed(process_tree(child.pid)):
        os.kill(pid, signal.SIGKILL)
    child.wait()
    is_error, goals = ask(served, "goals", line=INTROS_LINE)
    assert not is_error and goals.splitlines()[1] == "status: ok" and "hn : n > 0" in goals
    assert "not a proof failure" in goals
    calls, forged = read_records(served.context.audit_dir, TOOL_CALLS, served.key)
    assert forged == 0 and calls[-1]["restarted"].startswith("the prover session died")
    assert [c["status"] for c in calls if c["arguments"].get("tactics") == "do 1000000000 idtac."] == ["timeout"]


def test_calls_are_sealed_counted_and_the_shell_twins_answer(served: ItemTools, task: Task,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``forall goals|try|query`` (the same main() a shell runs; the subprocess path is test_submit_cli's) answer
    with exit 0 ok, 1 error, 2 refused."""
    from pytest_forall.cli import main

    monkeypatch.setenv(URL_ENV, served.url)
    assert main(["goals", "--line", str(INTROS_LINE)]) == 0 and "hn : n > 0" in capsys.readouterr().out
    assert main(["try", "exact I.", "--line", str(INTROS_LINE)]) == 1
    assert "fails at line 6" in capsys.readouterr().out
    assert main(["query", "Print putnam_1965_a5."]) == 2 and "is refused" in capsys.readouterr().err
    summary = served.summary()
    assert summary["interaction"] >= 3 and summary["unauthenticated"] == 0
    calls, _ = read_records(served.context.audit_dir, TOOL_CALLS, served.key)
    assert {c["category"] for c in calls if c["tool"] in ("goals", "try", "query")} == {"interaction"}
    assert any(c["status"].startswith("refused: query runs only") for c in calls)


def test_the_session_runs_in_the_items_sandbox(task: Task, tmp_path: Path, shared_prover_cache: Path) -> None:
    """A sandboxed prover's session is a coqtop under bwrap (no network, only its private directory writable)."""
    require_tool("bwrap")
    prover = RocqProver({"cache_dir": str(shared_prover_cache), "sandbox": "bwrap"})
    assert prover.sandboxed, prover.sandbox_problem
    session = prover.proof_session(task, 120, (task.theorem_name,))
    try:
        answer = session.goals(candidate_text(task).encode(), INTROS_LINE)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                    for pid in process_tree(session.coq.child.pid)]  # type: ignore[attr-defined]
    finally:
        session.close()
    assert answer.status == "ok" and "hn : n > 0" in answer.text, answer
    assert b"/usr/bin/bwrap" in commands and any(c.endswith(b"coqtop") for c in commands), commands


def test_a_template_that_does_not_load_here_is_infra_not_the_proofs(tmp_path: Path,
                                                                    shared_prover_cache: Path) -> None:
    """The template's own import failing is this machine's problem (infra), as compile says; the candidate's own
    broken sentence is the proof's (error)."""
    template = "From NoSuchLibrary Require Import Nothing.\nTheorem t : True.\nProof. Admitted.\n"
    broken = parse_coq("t", tmp_path / "t.v", template)
    session = RocqProver({"cache_dir": str(shared_prover_cache)}).proof_session(broken, 60, ("t",))
    try:
        answer = session.goals(template.replace("Proof. Admitted.", "Proof.\nexact I.").encode(), 0)
        query = session.query("Check True.")
    finally:
        session.close()
    assert answer.status == "infra" and answer.text.startswith("the template does not load here (t.v:1:"), answer
    assert query.status == "infra"
    fine = parse_coq("t", tmp_path / "t.v", "Theorem t : True.\nProof. Admitted.\n")
    session = RocqProver({"cache_dir": str(shared_prover_cache)}).proof_session(fine, 60, ("t",))
    try:
        answer = session.goals(b"Require Import NoSuchLibrary.\nTheorem t : True.\nProof.\nexact I.", 0)
    finally:
        session.close()
    assert answer.status == "error" and "t.v:1: error:" in answer.text, answer


#: A template with a definition the proof unfolds: its goal says whether ``unfold`` ran (``42 = 42``) or not.
SMALL = "Definition secret := 42.\nTheorem t : secret = 42.\nProof. Admitted.\n"


@pytest.mark.parametrize("prefix", ["#[] ", "#[local] ", "Time ", "Fail Fail ", "(* c *) #[ ] "])
def test_a_prefixed_session_command_is_refused_not_run(prefix: str, tmp_path: Path,
                                                       shared_prover_cache: Path) -> None:
    """An attribute or a control prefix before ``Back`` is still ``Back``: in the file, goals refuses it (it ran, and
    undid the ``unfold`` before it, with ``#[]``); in try, a prefixed command is a command (``#[] Print t.`` ran)."""
    require_tool("coqtop")
    task = parse_coq("t", tmp_path / "t.v", SMALL)
    session = RocqProver({"cache_dir": str(shared_prover_cache)}).proof_session(task, 60, ("t",))
    body = SMALL.replace("Proof. Admitted.", "Proof.\nunfold secret.\n")
    try:
        with pytest.raises(SessionRefused, match=r"t.v:6: `Back` controls the prover session"):
            session.goals((body + prefix + "Back 1.\nidtac.\n").encode(), 0)
        for command in ("Print t.", "Ltac reflexivity := fail.", "Back 1."):
            with pytest.raises(SessionRefused, match="try runs tactics only"):
                session.try_tactics(body.encode(), 0, prefix + command)
        honest = session.try_tactics(body.encode(), 0, "time reflexivity.")   # a tactic named like a prefix
        goals = session.goals(body.encode(), 0)
    finally:
        session.close()
    assert honest.status == "ok" and "No more goals" in honest.text, honest
    assert goals.status == "ok" and "42 = 42" in goals.text, goals


#: A string Coq prints that is the session's prompt markup, made without that markup in the input (``RESERVED``).
FORGED_PROMPT = '("<pro" ++ "mpt>t < 99 |t| 0 < </pro" ++ "mpt>")'


def test_output_that_imitates_the_prompt_is_the_callers_error_not_a_lie(tmp_path: Path,
                                                                        shared_prover_cache: Path) -> None:
    """Coq's own output can spell the prompt markup (a computed string): read as a prompt, it ended a reply early,
    a failing tactic was answered ``ok`` and the next call restarted the session as an "infrastructure event". The
    stream is checked with a nonce only the session knows: such a call is an error of the caller's text."""
    require_tool("coqtop")
    template = "Require Import String.\nOpen Scope string_scope.\nTheorem t : 1 = 1.\nProof. Admitted.\n"
    task = parse_coq("t", tmp_path / "t.v", template)
    session = RocqProver({"cache_dir": str(shared_prover_cache)}).proof_session(task, 60, ("t",))
    body = template.replace("Proof. Admitted.", "Proof.\nidtac.\n")
    forging = f"let s := eval cbv in {FORGED_PROMPT} in idtac s; fail.\n"
    try:
        query = session.query(f"Check ltac:(let s := eval cbv in {FORGED_PROMPT} in idtac s; exact I).")
        after_query = session.query("Check 1.")
        goals = session.goals((body + forging).encode(), 0)
        after_goals = session.goals(body.encode(), 0)
    finally:
        session.close()
    for answer in (query, goals):
        assert answer.status == "error" and "imitates the session's prompt" in answer.text, answer
        assert not answer.restarted
    assert after_query.status == "ok" and after_query.text.startswith("1\n") and not after_query.restarted
    assert after_goals.status == "ok" and "1 = 1" in after_goals.text and not after_goals.restarted, after_goals


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_the_session_speaks_each_toolchains_coqtop(toolchain: str, tmp_path: Path, shared_prover_cache: Path) -> None:
    """Coq 8.20 and Rocq 9.2 (whose coqtop gives a query such as ``Show.`` no state of its own): the goals and a
    try on a PutnamBench template without mathcomp (sid has none) are what that toolchain prints."""
    from test_toolchains import root

    source = require_path(PUTNAM / "coq" / "src" / "putnam_2001_a1.v", "PutnamBench")
    task = parse_coq("putnam_2001_a1", source, source.read_text(encoding="utf-8"))
    prover = RocqProver({"cache_dir": str(shared_prover_cache), "toolchain": str(root(toolchain))})
    session = prover.proof_session(task, 120, (task.theorem_name,))
    text = task.template.replace("Proof. Admitted.", "Proof.\nintros a b.\nsplit.\n").encode()
    try:
        goals = session.goals(text, 0)
        tried = session.try_tactics(text, 8, "pose proof (hop (op b a) b) as H.")
    finally:
        session.close()
    assert goals.status == "error" and "goals after line 8 (`intros a b.`):\n1 goal" in goals.text, goals
    assert "a, b : A" in goals.text and "putnam_2001_a1.v:9: error:" in goals.text
    assert tried.status == "ok" and "H : op (op (op b a) b) (op b a) = b" in tried.text, tried


def test_the_reviewer_gets_no_interactive_tools(task: Task, tmp_path: Path, shared_prover_cache: Path) -> None:
    review = tmp_path / "review"
    review.mkdir()
    (review / task.candidate_name).write_text(candidate_text(task), encoding="utf-8")
    context = ToolContext(task=task, role=REVIEWER, workspace=review, audit_dir=tmp_path / "audit", prover="rocq",
                          prover_options={"cache_dir": str(shared_prover_cache)})
    with ItemTools(context, RocqProver({"cache_dir": str(shared_prover_cache)})) as tools:
        is_error, answer = ask(tools, "goals")
    assert is_error and "goals" in answer


def test_warm_calls_beat_a_whole_file_compile(served: ItemTools, task: Task) -> None:
    """The reason for the session: a warm goals/try costs a fraction of a coqc of the same file (measured figures:
    docs/measurements.md). Relative, so a loaded machine slows both sides."""
    ask(served, "goals")
    started = time.monotonic()
    ask(served, "goals")
    warm_goals = time.monotonic() - started
    started = time.monotonic()
    ask(served, "try", tactics="unfold putnam_1965_a5_solution.")
    warm_try = time.monotonic() - started
    candidate = served.context.workspace / task.candidate_name
    started = time.monotonic()
    subprocess.run(["coqc", "-q", candidate.name], cwd=candidate.parent, capture_output=True, timeout=300, check=False)
    coqc = time.monotonic() - started
    for suffix in (".vo", ".vok", ".vos", ".glob"):
        candidate.with_suffix(suffix).unlink(missing_ok=True)
    (candidate.parent / f".{candidate.stem}.aux").unlink(missing_ok=True)
    assert warm_goals < coqc / 2 and warm_try < coqc / 2, (warm_goals, warm_try, coqc)


def tool_results(requests: list[dict[str, Any]]) -> list[str]:
    """The tool results the CLI sent back to the model, in order (Anthropic ``tool_result`` blocks)."""
    seen: list[str] = []
    for request in requests:
        for message in request["body"].get("messages", []):
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    text = content if isinstance(content, str) else "\n".join(
                        part.get("text", "") for part in content or [] if isinstance(part, dict))
                    if text not in seen:
                        seen.append(text)
    return seen


@pytest.mark.usefixtures("claude")
def test_claude_code_sees_the_true_proof_state(task: Task, tmp_path: Path, shared_prover_cache: Path) -> None:
    """A real ``claude -p`` (bwrap sandbox) calls goals, try and query: what it is told is coqtop's own display
    for that prefix, the file stays byte-identical, and the Print of the theorem is refused."""
    workspace = ws.prepare(tmp_path / "ws", "w", task, reset=True)
    candidate = workspace / task.candidate_name
    candidate.write_text(candidate_text(task), encoding="utf-8")
    before = candidate.read_bytes()
    steps = [{"call_tool": "forall__start", "args": {"task": TASK_ID}},
             {"call_tool": "forall__goals", "args": {"line": INTROS_LINE}},
             {"call_tool": "forall__try", "args": {"tactics": "unfold putnam_1965_a5_solution.",
                                                   "line": INTROS_LINE}},
             {"call_tool": "forall__query", "args": {"command": "Print putnam_1965_a5."}},
             {"text": "looked"}]
    context = ToolContext(task=task, role=ACTOR, workspace=workspace, audit_dir=tmp_path / "audit", prover="rocq",
                          prover_options={"cache_dir": str(shared_prover_cache)}, timeout=120,
                          excluded=(task.theorem_name,))
    prover = RocqProver({"cache_dir": str(shared_prover_cache)})
    with ScriptedModelServer(steps) as model, ItemTools(context, prover) as tools:
        session = ClaudeCodeFrontend().start(SessionContext(
            task=task, workspace=workspace, audit_dir=tmp_path / "session", role=ACTOR, prover=prover,
            budget=Budget(), options={"provider_url": model.url, "api_key_env": "FORALL_TEST_PROVIDER_KEY",
                                      "max_retries": 0, "mcp_servers": tools.mcp_servers(), "env": tools.env()}))
        turn = session.turn("Prove the task.", timeout=240)
        called = [request["tool"] for request in model.model_requests()]
        first = json.dumps(model.model_requests()[0]["body"])  # Claude Code puts MCP server instructions in it
        results = tool_results(model.model_requests())
        summary = tools.summary()
    assert not turn.infra and turn.final_text == "looked", turn
    assert called == ["mcp__forall__start", "mcp__forall__goals", "mcp__forall__try", "mcp__forall__query", ""]
    assert candidate.read_bytes() == before
    # the brief reaches the model: the server's instructions say when to use goals/try rather than compile
    assert "MCP Server Instructions" in first and "use goals(line) to see the proof state" in first
    assert "use goals(line) to see the proof state" in results[0]  # and start()'s answer says it too
    goals, tried, refused = results[1], results[2], results[3]
    text = candidate_text(task)
    assert goals.startswith(f"sha256: {sha256_bytes(before)}\nstatus: ok")
    assert reference_goals(task, prefix_lines(text, INTROS_LINE)) in shown_goals(goals)
    assert reference_goals(task, prefix_lines(text, INTROS_LINE) + "unfold putnam_1965_a5_solution.\n") in \
        shown_goals(tried)
    assert "`Print putnam_1965_a5` is refused" in refused and "2 ^ (n - 1)" not in refused
    assert summary["by_tool"] == {"goals": 1, "query": 1, "start": 1, "try": 1} and summary["interaction"] == 3
    assert json.dumps(summary)  # the counters are what the row's tool_calls sums


def test_watch_shows_a_running_items_tool_calls(tmp_path: Path) -> None:
    from pytest_forall.cli.watch import frame

    run = tmp_path / "run"
    item = run / "items" / "t-claude"
    (item / "s0").mkdir(parents=True)
    (item / "progress.json").write_text(json.dumps({"task_id": "t", "state": "running", "activity": "actor s0/r1",
                                                    "updated_at": time.time()}))
    (item / "s0" / "tool_calls.jsonl").write_text("".join(json.dumps({"tool": tool, "mac": "x"}) + "\n" for tool in
                                                          ("goals", "goals", "try", "query", "compile")))
    (run / "run.json").write_text(json.dumps({"run_id": "run", "selected": 1, "started_at": time.time()}))
    line = next(line for line in frame(run) if line.startswith("  t-claude:"))
    assert line.endswith(", tool calls 5 (goals 2, compile 1, query 1, try 1)"), line


def escaped_forms(text: str) -> tuple[str, ...]:
    """``text`` as it appears in a request body: once JSON-escaped, or twice (a CLI that nests the tool's output)."""
    once = json.dumps(text)[1:-1]
    return text, once, json.dumps(once)[1:-1]


@pytest.mark.parametrize("name", ["codex", pytest.param("opencode", marks=pytest.mark.slow)])  # OpenCode: ~30 s
def test_codex_and_opencode_see_the_true_proof_state(name: str, served: ItemTools, task: Task, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through the two OpenAI-style CLIs (on the module's warm item server): each call reaches the server
    and coqtop's display reaches the model; the file is unchanged."""
    from test_agent_frontends import CLIS, KEY_ENV

    cli = next(c for c in CLIS if c.name == name)
    if cli.frontend().probe():
        if os.environ.get("CI") == "true":
            pytest.fail(cli.frontend().probe())
        pytest.skip(cli.frontend().probe())
    monkeypatch.setenv(KEY_ENV, "sk-scripted")
    workspace = served.context.workspace
    candidate = workspace / task.candidate_name
    before = candidate.read_bytes()
    calls_before = len(read_records(served.context.audit_dir, TOOL_CALLS, served.key)[0])
    steps = [{"call_tool": "goals", "args": {"line": INTROS_LINE}},
             {"call_tool": "try", "args": {"tactics": "unfold putnam_1965_a5_solution.", "line": INTROS_LINE}},
             {"call_tool": "query", "args": {"command": "Print putnam_1965_a5."}}, {"text": "looked"}]
    prover = served.prover
    with ScriptedModelServer(steps) as model:
        session = cli.frontend().start(SessionContext(
            task=task, workspace=workspace, audit_dir=tmp_path / "session", role=ACTOR, prover=prover,
            budget=Budget(), options={"provider_url": f"{model.url}/v1", "api_key_env": KEY_ENV, "max_retries": 0,
                                      **cli.options, "model": "scripted",  # Codex: a slug it does not know lists
                                      # MCP tools directly (a known one puts them behind tool_search)
                                      "mcp_servers": served.mcp_servers(), "env": served.env()}))
        turn = session.turn("Prove the task.", timeout=240)
        bodies = re.sub(r" \(ID \d+\)", "", json.dumps([r["body"] for r in model.model_requests()]))
    calls = read_records(served.context.audit_dir, TOOL_CALLS, served.key)[0][calls_before:]
    assert not turn.infra and turn.final_text == "looked", turn
    assert [c["tool"] for c in calls] == ["goals", "try", "query"], calls
    assert candidate.read_bytes() == before
    text = candidate_text(task)
    for expected in (reference_goals(task, prefix_lines(text, INTROS_LINE)),
                     reference_goals(task, prefix_lines(text, INTROS_LINE) + "unfold putnam_1965_a5_solution.\n"),
                     "`Print putnam_1965_a5` is refused",
                     "use goals(line) to see the proof state"):  # the brief: the server's instructions
        assert any(form in bodies for form in escaped_forms(expected)), expected


def test_a_withheld_name_is_matched_by_its_qualified_suffix_not_its_last_part(tmp_path: Path) -> None:
    """A project item ``Mod.add_comm`` withholds ``add_comm`` and ``Mod.add_comm``, never ``Nat.add_comm``: an
    honest proof may use the library's lemma of the same short name (both in queries and in Search results)."""
    from pytest_forall.lang.rocq.coqtop import TacticProbe
    from pytest_forall.lang.rocq.interactive import RocqProofSession

    task = Task(task_id="t", suite="s", track="rocq", prover="rocq", source_path="t.v", template="",
                theorem_name="add_comm")
    session = RocqProofSession(task, TacticProbe("coqtop", 1024), tmp_path, 10, ("Lib.Mod.add_comm",))
    assert session._query_sentence("Check Nat.add_comm") == "Check Nat.add_comm."
    for name in ("add_comm", "Mod.add_comm", "Lib.Mod.add_comm"):
        with pytest.raises(SessionRefused, match="withheld"):
            session._query_sentence(f"Check {name}")
    shown = session._withhold("Nat.add_comm: forall n m : nat, n + m = m + n\nadd_comm: forall x y : T, x = y\n"
                              "Mod.add_comm:\n  forall x y : T, x = y")
    assert shown == "Nat.add_comm: forall n m : nat, n + m = m + n"
