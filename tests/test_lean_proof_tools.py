"""The actor's interactive tools for Lean (goals, try, query over leanprover-community/repl), against the REPL
stand-in (tests/standin/repl). Lean cannot run here: these tests check the plumbing — the protocol's framing and
numbers (docs/lean-facts.md I1-I6), what is sent for which call, refusals, restarts, the file left alone, the answers'
`sha256:` line — never a goal Lean printed. The stand-in's goals say "stand-in goal, not Lean's".
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import SHARED, require_path, require_tool, standin_lean_project
from pytest_forall.core import workspace as ws
from pytest_forall.core.actor import ACTOR
from pytest_forall.core.model import Task, sha256_bytes
from pytest_forall.core.prover import SessionRefused
from pytest_forall.lang.lean.backend import LeanProver
from pytest_forall.lang.lean.interactive import LeanProofSession, Repl
from pytest_forall.tools.item import TOOL_CALLS, ItemTools, ToolContext, read_records
from pytest_forall.tools.shell import call

REPO = Path(__file__).resolve().parents[1]
STANDIN = REPO / "tests" / "standin"
BASE_PATH = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
TEMPLATE = """import Mathlib
open Real

def helper (n : ℕ) : ℕ := n + 1

/-- Show that helper n = n + 1. -/
theorem putnam_x
(n : ℕ)
: helper n = n + 1 := by
  sorry
"""
PROOF = "  intro x\n  simp [helper]\n  omega\n"
CANDIDATE = TEMPLATE.replace("  sorry\n", PROOF)
#: the line of ``intro x`` (the first proof line), and the file's last line
INTRO, LAST = 10, 12


def task() -> Task:
    return Task(task_id="putnam_x", suite="putnam", track="lean4", prover="lean", source_path="putnam_x.lean",
                template=TEMPLATE, theorem_name="putnam_x")


@pytest.fixture(scope="module")
def standin_env() -> Iterator[None]:
    """The stand-ins are the only `lean`/`lake` on PATH (module-wide, so the served item is shared)."""
    saved = {k: os.environ.get(k) for k in ("PATH", "LEAN_PATH", "FORALL_LEAN_BIN", "STANDIN_REPL_LOG")}
    os.environ["PATH"] = f"{STANDIN}{os.pathsep}{BASE_PATH}"
    for name in ("LEAN_PATH", "FORALL_LEAN_BIN", "STANDIN_REPL_LOG"):
        os.environ.pop(name, None)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def lean_prover(root: Path, repl: bool = True) -> LeanProver:
    project = standin_lean_project(root / "project")
    options = {"lean_project": str(project), "cache_dir": str(root / "cache")}
    return LeanProver({**options, "lean_repl": str(STANDIN / "repl")} if repl else options)


@pytest.fixture(scope="module")
def served(standin_env: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ItemTools]:
    root = tmp_path_factory.mktemp("lean-item")
    item = task()
    workspace = ws.prepare(root / "ws", "w", item, reset=True)
    (workspace / item.candidate_name).write_text(CANDIDATE, encoding="utf-8")
    os.environ["STANDIN_REPL_LOG"] = str(root / "requests.log")
    context = ToolContext(task=item, role=ACTOR, workspace=workspace, audit_dir=root / "audit", prover="lean",
                          timeout=30, excluded=(item.theorem_name,))
    with ItemTools(context, lean_prover(root)) as tools:
        yield tools


def ask(tools: ItemTools, tool: str, **arguments: Any) -> tuple[bool, str]:
    async def guarded() -> tuple[bool, str]:
        with anyio.fail_after(120):  # a hang guard, not a measurement
            return await call(tools.url, tool, arguments)

    return anyio.run(guarded)


def listed(tools: ItemTools) -> dict[str, str]:
    """The tools the item's server lists, with their descriptions."""
    from mcp import Client

    async def run() -> dict[str, str]:
        with anyio.fail_after(120):
            async with Client(tools.url) as client:
                return {t.name: t.description or "" for t in (await client.list_tools()).tools}

    return anyio.run(run)


def requests(tools: ItemTools) -> list[dict[str, Any]]:
    """What the stand-in REPL received (STANDIN_REPL_LOG), in order."""
    path = Path(tools.context.audit_dir).parent / "requests.log"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.is_file() else []


def test_lean_tools_are_offered_only_with_a_repl(standin_env: None, tmp_path: Path) -> None:
    """Lean ships no REPL: without option lean_repl the actor gets no goals/try/query, and start() says nothing of
    them; with it, the tools are listed with descriptions that say they are untested on real Lean."""
    item = task()
    for repl in (False, True):
        root = tmp_path / str(repl)
        workspace = ws.prepare(root / "ws", "w", item, reset=True)
        context = ToolContext(task=item, role=ACTOR, workspace=workspace, audit_dir=root / "audit", prover="lean",
                              timeout=30, excluded=(item.theorem_name,))
        with ItemTools(context, lean_prover(root, repl=repl)) as tools:
            names = listed(tools)
            _, started = ask(tools, "start", task=item.task_id)
        assert ({"goals", "try", "query"} <= set(names)) is repl, names
        assert ("goals(line)" in started) is repl, started
        if repl:
            assert all("Untested on real Lean" in names[t] for t in ("goals", "try", "query"))
            assert "untested on real Lean" in started and "Coq" not in started + names["goals"]


def test_goals_answer_the_repls_goal_at_the_line(served: ItemTools) -> None:
    """goals(line) sends the file cut after `line` plus a `sorry`, on the imports' env, and answers the goal the REPL
    listed for that sorry; the answer starts with the sha256 of the file read, and the imports go once."""
    digest = sha256_bytes(CANDIDATE.encode())
    is_error, at_intro = ask(served, "goals", line=INTRO)
    assert not is_error and at_intro.splitlines()[:2] == [f"sha256: {digest}", "status: ok"], at_intro
    assert "stand-in goal, not Lean's" in at_intro and "intro x" in at_intro and "simp" not in at_intro
    assert "untested on real Lean" in at_intro
    _, at_end = ask(served, "goals")
    assert "intro x; simp [helper]; omega" in at_end
    _, in_statement = ask(served, "goals", line=8)  # no tactic proof is open there: no goal, said so
    assert in_statement.splitlines()[1] == "status: error" and "no proof state after line 8" in in_statement
    sent = requests(served)
    commands = [r for r in sent if "cmd" in r]
    assert [r["cmd"] for r in commands if "env" not in r] == ["import Mathlib\n"]  # the warm imports, once
    cut = next(r["cmd"] for r in commands if "intro x" in r["cmd"] and "simp" not in r["cmd"])
    # the header's line is blank, so the REPL's positions are the file's; the sorry goes on the next line
    assert cut.split("\n")[0] == "" and cut.split("\n")[INTRO] == "  sorry", cut


def test_try_runs_one_tactic_step_and_leaves_the_file_alone(served: ItemTools) -> None:
    candidate = served.context.workspace / task().candidate_name
    before = (candidate.read_bytes(), candidate.stat().st_mtime_ns)
    is_error, tried = ask(served, "try", tactics="simp [helper]", line=INTRO)
    assert not is_error and tried.splitlines()[:2] == [f"sha256: {sha256_bytes(before[0])}", "status: ok"]
    assert "after: " in tried and "intro x; simp [helper]" in tried and "nothing was written" in tried
    assert "Incomplete: open goals remain" in tried
    step = requests(served)[-1]
    assert step["tactic"] == "simp [helper]" and isinstance(step["proofState"], int)
    _, closed = ask(served, "try", tactics="STANDIN_CLOSE", line=INTRO)
    assert "Completed" in closed and "no goals" in closed
    _, failed = ask(served, "try", tactics="STANDIN_ERROR: unknown identifier 'foo'", line=INTRO)
    assert failed.splitlines()[1] == "status: error" and "fails at line 10" in failed and "foo" in failed
    assert (candidate.read_bytes(), candidate.stat().st_mtime_ns) == before


def test_query_runs_check_and_print_axioms_in_the_template_context(served: ItemTools) -> None:
    _, checked = ask(served, "query", command="#check helper")
    assert checked.splitlines()[:2] == [f"sha256: {sha256_bytes(TEMPLATE.encode())}", "status: ok"]
    assert "helper" in checked and "untested on real Lean" in checked
    sent = requests(served)[-1]["cmd"]
    assert sent.strip() == "#check helper" and "theorem putnam_x" not in sent
    _, axioms = ask(served, "query", command="#print axioms helper")
    assert "'helper' does not depend on any axioms" in axioms
    wrapped = ask(served, "query", command="#check helper 1 = 2")[1]
    assert wrapped.splitlines()[1] == "status: ok"
    assert requests(served)[-1]["cmd"].strip() == "#check (helper 1 = 2)"  # one term, not a second command
    _, missing = ask(served, "query", command="#check no_such_lemma")
    assert missing.splitlines()[1] == "status: error" and "no_such_lemma" in missing


@pytest.mark.parametrize(("tool", "arguments", "says"), [
    ("query", {"command": "#print putnam_x"}, "`#print` is refused"),
    ("query", {"command": "#print helper"}, "`#print` is refused"),
    ("query", {"command": "#eval IO.println 1"}, "`#eval` is refused"),
    ("query", {"command": "#check putnam_x"}, "`putnam_x` is withheld"),
    ("query", {"command": "#print axioms putnam_x"}, "`putnam_x` is withheld"),
    ("query", {"command": "#check 1 #eval 2"}, "exactly one command"),
    ("query", {"command": "#check (1 theorem t : True := trivial)"}, "exactly one command"),
    ("query", {"command": "#check (1))(("}, "unbalanced"),
    ("try", {"tactics": "#eval 1", "line": INTRO}, "is a command"),
    ("try", {"tactics": "def x := 1", "line": INTRO}, "is a command"),
    ("try", {"tactics": "simp", "line": 99}, "line 99 is outside the file"),
    ("goals", {"line": 1}, "line 1 is in the imports"),
    ("goals", {"line": -1}, "line -1 is outside the file"),
])
def test_bad_input_is_one_line_and_sends_nothing(served: ItemTools, tool: str, arguments: dict[str, Any],
                                                 says: str) -> None:
    before = len(requests(served))
    is_error, answer = ask(served, tool, **arguments)
    assert is_error and says in answer and "\n" not in answer.strip(), answer
    assert len(requests(served)) == before


def test_a_candidate_with_other_imports_is_refused_before_anything_runs(served: ItemTools) -> None:
    """goals/try run on the template's imports (the warm env): a file importing something else is one line."""
    tools = served.tools
    assert tools is not None
    before = len(requests(served))
    with pytest.raises(SessionRefused, match="the imports differ from the template's"):
        tools._proof_session().goals(CANDIDATE.replace("import Mathlib", "import Other").encode(), 0)
    assert len(requests(served)) == before


def test_a_dead_repl_restarts_as_infra_and_a_slow_one_times_out(served: ItemTools) -> None:
    tools = served.tools
    assert tools is not None
    session = tools._proof_session()
    assert isinstance(session, LeanProofSession)
    ask(served, "goals", line=INTRO)
    assert session._repl is not None
    os.killpg(session._repl.proc.pid, signal.SIGKILL)
    is_error, goals = ask(served, "goals", line=INTRO)
    assert not is_error and goals.splitlines()[1] == "status: ok" and "not a proof failure" in goals, goals
    calls, forged = read_records(served.context.audit_dir, TOOL_CALLS, served.key)
    assert forged == 0 and calls[-1]["restarted"].startswith("the prover session died")
    _, died = ask(served, "try", tactics="STANDIN_DIE", line=INTRO)
    assert died.splitlines()[1] == "status: infra" and "restarted twice" in died
    session.timeout = 1
    try:
        _, slow = ask(served, "try", tactics="STANDIN_SLEEP: 30", line=INTRO)
    finally:
        session.timeout = 30
    assert slow.splitlines()[1] == "status: timeout" and len(slow.splitlines()) == 3, slow
    is_error, goals = ask(served, "goals", line=INTRO)
    assert not is_error and "intro x" in goals


def test_the_client_reads_the_real_repls_framing(tmp_path: Path) -> None:
    """The session's reader on the REPL's own bytes (repl_session.out, copied from the repl's test expectations):
    multi-line Json.pretty responses, each ended by one blank line (I6)."""
    sample = require_path(SHARED / "reference" / "lean" / "samples" / "repl_session.out", "the Lean samples")
    expected = [json.loads(block) for block in sample.read_text(encoding="utf-8").strip().split("\n\n")]
    repl = Repl(["sh", "-c", f"cat '{sample}'; sleep 30"], tmp_path, {"PATH": "/usr/bin:/bin"})
    try:
        got = [repl.ask({"cmd": "x"}, time.monotonic() + 30) for _ in expected]
    finally:
        repl.close()
    assert got == expected and got[0]["sorries"][0]["goal"] == "x : Unit\n⊢ Nat"


def test_a_sandboxed_provers_repl_runs_in_the_sandbox(standin_env: None, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``sandbox=bwrap`` the REPL is started through bwrap (the item's isolation, its private directory the only
    writable path), with the probed LEAN_PATH; the repository is bound read-only for the stand-in's own imports."""
    require_tool("bwrap")
    monkeypatch.delenv("STANDIN_REPL_LOG", raising=False)  # a log outside the sandbox could not be written
    project = standin_lean_project(tmp_path / "project")
    prover = LeanProver({"lean_project": str(project), "lean_repl": str(STANDIN / "repl"), "sandbox": "bwrap",
                         "sandbox_ro": [str(REPO)]})
    session = prover.proof_session(task(), 60, ("putnam_x",))
    try:
        answer = session.goals(CANDIDATE.encode(), INTRO)
        assert session._repl is not None, answer
        argv = session._repl.argv
    finally:
        session.close()
    assert answer.status == "ok" and "intro x" in answer.text, answer
    assert Path(argv[0]).name == "bwrap" and "--unshare-all" in argv and argv[-1] == str(STANDIN / "repl")
    assert any(a.startswith("LEAN_PATH=") for a in argv)


def test_a_bad_lean_repl_option_is_one_usage_error(pytester: pytest.Pytester) -> None:
    """``--forall-lean-repl`` is checked at configure time: not an executable -> one line naming the option, exit 4."""
    result = pytester.runpytest("--forall-lean-repl=no/such/repl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--forall-lean-repl" in result.stderr.str() and "is not an executable file" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_a_template_whose_imports_do_not_load_is_infra_not_the_proofs(standin_env: None, tmp_path: Path) -> None:
    """An import the project does not have fails in the template's own header: the machine's problem (infra), as
    compile answers for a template that does not compile, never an error of the actor's proof."""
    template = TEMPLATE.replace("import Mathlib", "import Mathlib\nimport NotBuiltHere")
    item = Task(task_id="putnam_x", suite="putnam", track="lean4", prover="lean", source_path="putnam_x.lean",
                template=template, theorem_name="putnam_x")
    session = lean_prover(tmp_path).proof_session(item, 60, ("putnam_x",))
    try:
        goals = session.goals(template.encode(), 0)
        queried = session.query("#check helper")
    finally:
        session.close()
    assert goals.status == "infra" and "imports do not load here" in goals.text and "NotBuiltHere" in goals.text
    assert queried.status == "infra"
