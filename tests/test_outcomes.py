"""Outcome integrity (docs/outcomes.md): infra is never a proof failure, every stop has a name, bad input is
one clear error, every state change is said, and the pytest conventions (-r, crashes, Ctrl-C) hold.

Driven through pytest itself on the fake suite (tests/example_suites), so what is checked is what a user
sees: the exit status, the terminal, JUnit and results.jsonl. The real agent CLIs against faulty providers
are in test_agent_frontends.py (turns) and test_protocol_e2e.py (items).
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
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml, Properties

from conftest import EXAMPLES, REPO
from pytest_forall.core import workspace as ws
from pytest_forall.core.model import FAILED, INFRA, OUTCOMES, RULES_ONLY, STATEMENT_FALSE, STRICT, Task
from pytest_forall.core.outcomes import STOPS, outcome_of, read_results, shorten
from pytest_forall.plugin.report import EXIT_ALL_INFRA, STATUS, summary_lines

BASE = ["--forall-frontend=fake", "-p", "no:cacheprovider"]


def rows(pytester: pytest.Pytester, run_id: str) -> list[dict[str, Any]]:
    return read_results(pytester.path / "reports" / run_id / "results.jsonl").rows


def latest(pytester: pytest.Pytester, run_id: str) -> dict[str, dict[str, Any]]:
    return {row["task_id"]: row for row in rows(pytester, run_id)}


def suite(pytester: pytest.Pytester, tasks: dict[str, str]) -> pytest.Pytester:
    pytester.makeconftest((EXAMPLES / "fake_conftest.py").read_text())
    body = "".join(f'{name} = "{behaviour}"\n' for name, behaviour in tasks.items())
    pytester.makefile(".forall.toml", suite=f'adapter = "fake"\n[tasks]\n{body}')
    return pytester


# -- spend caps are infra and resumable -------------------------------------------------------------------

@pytest.mark.parametrize(("option", "stop", "raised"), [
    ("--forall-run-usd=0.015", "run-usd", "--forall-run-usd=1"),
    ("--forall-usd=0.015", "item-usd", "--forall-usd=1"),
])
def test_spend_caps_are_infra_and_a_resume_with_a_higher_cap_reruns_them(
        pytester: pytest.Pytester, option: str, stop: str, raised: str) -> None:
    # each fake turn costs $0.01; ROUNDS:3 compiles on the third turn
    suite(pytester, {"a_slow": "ROUNDS:3", "b_slow": "ROUNDS:3"})
    xml = pytester.path / "junit.xml"
    capped = pytester.runpytest(*BASE, option, "--forall-run-id=cap", f"--junitxml={xml}")
    first = latest(pytester, "cap")
    assert {t: (r["outcome"], r["stop"]) for t, r in first.items()} == {t: (INFRA, stop) for t in first}
    assert capped.ret == EXIT_ALL_INFRA, "a capped run is not a proof failure"
    junit = {case.name.split("[")[0]: {p.name: p.value for p in case.child(Properties)}
             for s in JUnitXml.fromfile(str(xml)) for case in s}
    assert {t: (p["forall.outcome"], p["forall.stop"]) for t, p in junit.items()} == {t: (INFRA, stop) for t in first}
    if stop == "run-usd":   # the second item never made a request, and is infra all the same
        assert sorted(r["rounds"] for r in first.values()) == [0, 2]

    resumed = pytester.runpytest(*BASE, raised, "--forall-resume=cap", "-v")
    after = latest(pytester, "cap")
    assert {t: r["outcome"] for t, r in after.items()} == {"a_slow": STRICT, "b_slow": STRICT}
    assert resumed.ret == 0 and "deselected" not in resumed.stdout.str()
    # counters continue across runs: the capped run's rounds plus the 3 of the fake's (non-resumable) new session
    assert after["a_slow"]["rounds"] == first["a_slow"]["rounds"] + 3


# -- configuration errors: once, at configure time, one message naming the option ---------------------------

@pytest.mark.parametrize(("args", "ini", "message"), [
    (["--forall-frontend=nope"], "", "--forall-frontend: no installed frontend is called 'nope'"),
    (["--forall-reviewer=nope"], "", "--forall-reviewer: no installed frontend is called 'nope'"),
    ([], "forall_frontend = nope", "ini option forall_frontend: no installed frontend is called 'nope'"),
    (["--forall-timeout=0"], "", "--forall-timeout: expected a finite number > 0, got '0'"),
    (["--forall-timeout=-1"], "", "--forall-timeout: expected a finite number > 0, got '-1'"),
    (["--forall-timeout=nan"], "", "--forall-timeout: expected a finite number > 0, got 'nan'"),
    (["--forall-tactic-timeout=inf"], "", "--forall-tactic-timeout: expected a finite number > 0, got 'inf'"),
    (["--forall-stall=0"], "", "--forall-stall: expected a finite number > 0, got '0'"),
    (["--forall-memory=100"], "", "--forall-memory: expected a whole number of MiB >= 256, got '100'"),
    ([], "forall_memory = 2G", "ini option forall_memory: expected a whole number of MiB >= 256, got '2G'"),
    ([], "forall_turn_timeout = soon", "ini option forall_turn_timeout: expected a number, got 'soon'"),
    (["--forall-run-usd=-2"], "", "--forall-run-usd: expected a finite number >= 0, got '-2'"),
    (["--forall-wall=nan"], "", "--forall-wall: wall must be positive, got 'nan'"),
])
def test_bad_configuration_is_one_usage_error(fake_suite: pytest.Pytester, args: list[str], ini: str,
                                              message: str) -> None:
    if ini:
        fake_suite.makeini(f"[pytest]\n{ini}\n")
    frontend = [] if any(a.startswith("--forall-frontend") for a in args) or ini.startswith("forall_frontend") \
        else ["--forall-frontend=fake"]
    for extra in ([], ["-m", "fake"], ["-n", "2"]):
        result = fake_suite.runpytest("-p", "no:cacheprovider", *frontend, *args, *extra)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (extra, result.stdout.str()[-500:])
        assert result.stderr.lines == [f"ERROR: {message}", ""] or result.stderr.lines == [f"ERROR: {message}"]
        assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_unusable_reports_directory_is_a_usage_error_not_an_internal_error(fake_suite: pytest.Pytester) -> None:
    (fake_suite.path / "afile").write_text("not a directory")
    result = fake_suite.runpytest(*BASE, "--forall-reports=afile")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --forall-reports: cannot write the run directory */afile/*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()

    (fake_suite.path / "reports" / "r" / "results.jsonl").mkdir(parents=True)   # the results file is unwritable
    result = fake_suite.runpytest(*BASE, "--forall-run-id=r")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: default of --forall-reports: cannot write the run directory */reports/r*"])


def test_a_results_file_that_becomes_unwritable_stops_the_run_with_one_message(fake_suite: pytest.Pytester) -> None:
    conftest = fake_suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + (
        "\ndef pytest_runtest_setup(item):\n"
        "    import pathlib, shutil\n"
        "    results = pathlib.Path('reports/gone/results.jsonl')\n"
        "    results.unlink(missing_ok=True)\n"
        "    results.mkdir(exist_ok=True)\n"))
    result = fake_suite.runpytest(*BASE, "-k", "t_strict", "--forall-run-id=gone")
    assert result.ret == 4
    out = result.stdout.str() + result.stderr.str()
    assert "cannot record the result of suite.forall.toml::t_strict[fake]" in out
    assert "INTERNALERROR" not in out and "Traceback" not in out and "FAILED" not in out


# -- every state change is said ----------------------------------------------------------------------------

def test_quarantined_state_and_an_empty_secret_are_said_in_the_summary(pytester: pytest.Pytester) -> None:
    suite(pytester, {"a_slow": "ROUNDS:3"})
    pytester.runpytest(*BASE, "--forall-run-usd=0.015", "--forall-run-id=q")
    state = Path(latest(pytester, "q")["a_slow"]["audit_dir"]) / "state.json"
    envelope = json.loads(state.read_text())
    state.write_text(json.dumps({**envelope, "hmac": "0" * 64}))
    resumed = pytester.runpytest(*BASE, "--forall-run-usd=1", "--forall-resume=q")
    resumed.stdout.fnmatch_lines(["*forall summary*", ("note: suite.forall.toml::a_slow?fake?: resume state "
                                  "quarantined, the item started afresh: ValueError: HMAC does not match*")])
    assert latest(pytester, "q")["a_slow"]["rounds"] == 3, "quarantined state must not be trusted"

    (pytester.path / "reports" / "empty").mkdir()
    (pytester.path / "reports" / "empty" / ".secret").write_bytes(b"")
    result = pytester.runpytest(*BASE, "--forall-run-id=empty")
    result.stdout.fnmatch_lines(["note: resume disabled: */reports/empty/.secret is empty*"])


def test_a_torn_final_line_is_skipped_and_said_by_resume_and_report(fake_suite: pytest.Pytester) -> None:
    fake_suite.runpytest(*BASE, "--forall-run-id=torn")
    results = fake_suite.path / "reports" / "torn" / "results.jsonl"
    count = len(results.read_text().splitlines())
    with results.open("a") as handle:
        handle.write('{"nodeid": "suite.forall.toml::t_strict[fake]", "outc')   # a writer killed mid-line
    resumed = fake_suite.runpytest(*BASE, "--forall-resume=torn", "-v")
    resumed.stdout.fnmatch_lines(["*t_infra?fake? INFRA*",
                                  "run torn continued: this session reports 5 items: 4 as recorded by earlier*",
                                  (f"note: {results}:{count + 1}: skipped a line that is not a results row "
                                  "(torn final line)*")])
    assert len(results.read_text().splitlines()) == count + 2   # the torn line and t_infra's new row
    report = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "report", str(results.parent)],
                            capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert report.returncode == 0, report.stderr
    assert "1 strict, 1 rules_only, 1 failed, 1 infra, 1 statement_false, 0 vacuous, 0 inner_vacuous  (5 items)" in report.stdout
    # the resumed session's row went on a line of its own after the torn one: the torn line is no longer last
    assert f"{results}:{count + 1}: skipped a line that is not a results row (malformed)" in report.stdout



def test_the_controller_opens_results_once_and_writes_each_row_whole(fake_suite: pytest.Pytester,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """results.jsonl is opened once per session (the controller owns the run: nobody else appends meanwhile), each
    row goes in with one write of a whole line, and a second session appends after the first's rows (#18: a lock,
    an open and a close per row were a tenth of a cached item's cost)."""
    opened: list[str] = []
    writes: list[bytes] = []
    real_open, real_write = os.open, os.write

    def counting_open(path: Any, *args: Any, **kw: Any) -> int:
        fd = real_open(path, *args, **kw)
        if str(path).endswith("results.jsonl"):
            opened.append(str(path))
            results_fds.add(fd)
        return fd

    def counting_write(fd: int, data: Any) -> int:
        if fd in results_fds:
            writes.append(bytes(data))
        return real_write(fd, data)

    results_fds: set[int] = set()
    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(os, "write", counting_write)
    fake_suite.runpytest(*BASE, "--forall-run-id=once")
    results = fake_suite.path / "reports" / "once" / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    assert len(opened) == 1 and len(lines) == 5, (opened, lines)
    assert writes == lines  # one write per row, each a whole line
    results_fds.clear()
    fake_suite.runpytest(*BASE, "--forall-resume=once")  # the infra item runs again: one more row, after the others
    assert len(opened) == 2 and results.read_bytes().splitlines(keepends=True)[:5] == lines
    assert len(results.read_bytes().splitlines()) == 6 and len(writes) == 6

# -- what a candidate is, and a frontend that never ran -------------------------------------------------------

def test_the_reader_refuses_a_symlink_on_any_path_component(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "proof.v").write_text("Theorem outside.\n")
    workspace = tmp_path / "ws"
    (workspace / "real").mkdir(parents=True)
    (workspace / "real" / "proof.v").write_text("inside\n")
    (workspace / "sub").symlink_to(outside)
    (workspace / "real" / "deeper").symlink_to(outside)
    assert ws.read_candidate(workspace, "real/proof.v") == b"inside\n"
    for name in ("sub/proof.v", "real/deeper/proof.v"):
        assert ws.read_candidate(workspace, name) is None
        assert "symlinks are never followed" in ws.unreadable_reason(workspace, name)
    task = Task(task_id="t", suite="s", track="t", prover="fakeprover", source_path="t", template="x",
                meta={"candidate_name": "sub/proof.v"})
    assert ws.read_task_candidate(workspace, task) is None


def test_an_oversized_stored_proof_is_reported_as_such(fake_suite: pytest.Pytester) -> None:
    proofs = fake_suite.path / "proofs"
    proofs.mkdir()
    (proofs / "t_strict.txt").write_bytes(b"STRICT\n" + b"(* padding *)\n" * 400_000)
    fake_suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay", f"--forall-proofs={proofs}",
                         "-k", "t_strict", "--forall-run-id=big")
    row = latest(fake_suite, "big")["t_strict"]
    assert (row["outcome"], row["stop"]) == (FAILED, "gave-up")
    assert "t_strict.txt is 5600007 bytes, over the limit of 2000000 bytes for a candidate" in row["reason"]


def test_a_frontend_that_never_ran_is_infra_not_failed(fake_suite: pytest.Pytester) -> None:
    # the fake tasks have no proof hole: the portfolio tries nothing (0 compiles) and writes nothing
    result = fake_suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=portfolio", "-k", "t_failed",
                                  "--forall-run-id=never")
    row = latest(fake_suite, "never")["t_failed"]
    assert (row["outcome"], row["stop"], row["compiles"], row["rounds"]) == (INFRA, "never-ran", 0, 0)
    assert result.ret == EXIT_ALL_INFRA

    # a stored proof that equals the template was submitted: it is judged (and fails), it is not "never ran"
    proofs = fake_suite.path / "proofs"
    proofs.mkdir()
    (proofs / "t_failed.txt").write_text("FAIL\n")
    fake_suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay", f"--forall-proofs={proofs}",
                         "-k", "t_failed", "--forall-run-id=stored")
    row = latest(fake_suite, "stored")["t_failed"]
    assert (row["outcome"], row["stop"], row["compiles"]) == (FAILED, "gave-up", 1)
    assert "fake compile error" in row["reason"]


# -- pytest conventions -------------------------------------------------------------------------------------

def test_infra_and_statement_false_are_in_the_short_summary_under_r(fake_suite: pytest.Pytester) -> None:
    for chars in ("-rs", "-ra"):
        result = fake_suite.runpytest(*BASE, chars, f"--forall-run-id=r{chars}")
        result.stdout.fnmatch_lines(["*short test summary info*",
                                     "STATEMENT-FALSE suite.forall.toml::t_false?fake? - claimed-false: *",
                                     ("INFRA suite.forall.toml::t_infra?fake? - template: template: template does "
                                     "not compile here: fake library missing")])
    quiet = fake_suite.runpytest(*BASE, "-rN", "--forall-run-id=rN")
    assert "INFRA suite.forall.toml" not in quiet.stdout.str()


def test_a_crashed_item_gets_an_infra_row_and_is_rerun_by_resume(fake_suite: pytest.Pytester) -> None:
    manifest = fake_suite.path / "suite.forall.toml"
    manifest.write_text(manifest.read_text() + '\nt_crash = "CRASH"\n')
    result = fake_suite.runpytest(*BASE, "-n", "2", "-k", "t_strict or t_crash", "--forall-run-id=crash")
    assert result.ret == 1   # a crash never passes silently
    row = latest(fake_suite, "crash")["t_crash"]
    assert (row["outcome"], row["stop"]) == (INFRA, "worker-crashed") and "crashed" in row["reason"]
    assert [r["task_id"] for r in rows(fake_suite, "crash")].count("t_crash") == 1
    resumed = fake_suite.runpytest(*BASE, "-n", "2", "-k", "t_strict or t_crash", "--forall-resume=crash")
    resumed.stdout.fnmatch_lines(["*workers [[]2 items[]]*"])   # t_strict is reported as recorded; t_crash runs
    assert [r["task_id"] for r in rows(fake_suite, "crash")].count("t_strict") == 1
    assert [r["task_id"] for r in rows(fake_suite, "crash")].count("t_crash") == 2


#: ``python``, but with Ctrl-C as at a terminal: a suite started in the background (``cmd &``) hands its
#: children SIGINT ignored, and a Python started so never turns SIGINT into KeyboardInterrupt.
TERMINAL_PYTHON = [sys.executable, "-c", ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                                          "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")]


def wait_until(condition: Any, what: str, seconds: float = 300) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` if it never does (never a fixed sleep)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_interrupted_run_exits_2(pytester: pytest.Pytester, workers: list[str]) -> None:
    """Ctrl-C while items run inside their prover call: exit 2, the finished item's row kept, the running
    items without a row, and a resume runs exactly those."""
    suite(pytester, {"a_done": "STRICT", **{f"b{i}": "BLOCK" for i in range(3)}})
    proc = subprocess.Popen([*TERMINAL_PYTHON, "-m", "pytest", *BASE, *workers, "--forall-run-id=int", "-p",
                             "no:hypothesispytest"], cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    results = pytester.path / "reports" / "int" / "results.jsonl"
    try:
        wait_until(lambda: results.is_file() and "a_done" in latest(pytester, "int"), "a_done's row")
        wait_until(lambda: any(pytester.path.glob("blocked-*")), "an item blocked in its prover call")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-2000:]
    assert [(r["task_id"], r["outcome"]) for r in rows(pytester, "int")] == [("a_done", STRICT)]

    (pytester.path / "release").touch()
    resumed = pytester.runpytest(*BASE, *workers, "--forall-resume=int")
    assert resumed.ret == 0
    assert sorted((r["task_id"], r["outcome"]) for r in rows(pytester, "int")) == [
        ("a_done", STRICT), *((f"b{i}", STRICT) for i in range(3))]


def test_ctrl_c_inside_exec_source_still_exits_2(pytester: pytest.Pytester) -> None:
    """CPython 3.11 marks a KeyboardInterrupt that leaves ``exec``'d source as unhandled even when pytest
    catches it, and ``python -m pytest`` then ends by SIGINT (-2) instead of exiting 2 (seen under load)."""
    suite(pytester, {"a_interrupted": "INTERRUPT", "b_never": "STRICT"})
    done = subprocess.run([*TERMINAL_PYTHON, "-m", "pytest", *BASE, "--forall-run-id=ex", "-p", "no:hypothesispytest"],
                          cwd=pytester.path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-2000:]
    assert "KeyboardInterrupt" in done.stdout
    assert not (pytester.path / "reports" / "ex" / "results.jsonl").exists()   # the interrupted item: no row


# -- the outcome model, in one place, and the README and docs agree with it -----------------------------------

def test_summary_reasons_are_cut_at_a_word_boundary() -> None:
    reason = "template: " + "undefined reference to Coquelicot.Derive.is_derive_unique " * 5
    lines = summary_lines([{"outcome": INFRA, "reason": reason, "nodeid": "n"}], [], Path("/r"))
    line = next(line for line in lines if line.startswith("infra x1: "))
    cut = line.removeprefix("infra x1: ").removesuffix(" …")
    assert line.endswith(" …") and reason.startswith(cut) and reason[len(cut)] == " "
    assert shorten("short reason") == "short reason"


def _table(text: str, header: str) -> list[list[str]]:
    """The body rows of the Markdown table under ``header``, as cells."""
    lines = text[text.index(header):].splitlines()
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in _rows_after(lines)]


def _rows_after(lines: list[str]) -> list[str]:
    table = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return table


def test_readme_outcome_table_matches_the_code() -> None:
    readme = (REPO / "README.md").read_text()
    table = _table(readme, "| outcome | terminal | pytest outcome | counts as (`forall.stop` names why) |")
    assert [row[0].strip("`") for row in table] == list(OUTCOMES)
    for row in table:
        outcome = row[0].strip("`")
        letter, word = STATUS[outcome][1], STATUS[outcome][2][0]
        assert row[1] == f"`{letter}` {word}", row
        pytest_outcome = {STRICT: "passed", RULES_ONLY: "passed", FAILED: "failed"}.get(outcome, "skipped")
        assert row[2] == pytest_outcome, row
        stops = sorted(re.findall(r"`([a-z-]+)`", row[3]))
        assert stops == sorted(s for s, (o, _) in STOPS.items() if o == outcome), (outcome, stops)


def test_docs_outcomes_lists_every_stop_with_its_outcome() -> None:
    doc = (REPO / "docs" / "outcomes.md").read_text()
    table = _table(doc, "| stop (`forall.stop`) | outcome | meaning |")
    assert {row[0].strip("`"): row[1].strip("`") for row in table} == {s: o for s, (o, _) in STOPS.items()}
    assert all(outcome_of(stop) in OUTCOMES for stop in STOPS)
    assert {outcome for outcome, _ in STOPS.values()} == set(OUTCOMES)
    assert STATEMENT_FALSE in doc and "resum" in doc


def test_the_portfolio_on_project_items_is_never_a_failure_without_a_compile(pytester: pytest.Pytester) -> None:
    """Issue 12: on --forall-project items the portfolio tried nothing and all were `failed` with 0 compiles.

    Whether or not the portfolio can try tactics there (that is the project suite's business), an item it
    never tried is infra `never-ran`, and an item it failed has compiles to show for it.
    """
    shutil.copytree(REPO / "tests" / "fixtures" / "project_rocq", pytester.path / "proj")
    pytester.runpytest("-p", "no:cacheprovider", "--forall-project=proj", "--forall-frontend=portfolio",
                       "--forall-run-id=proj", "-m", "admitted")
    found = rows(pytester, "proj")
    assert len(found) == 3
    for row in found:
        assert row["outcome"] != FAILED or row["compiles"] > 0, row
        assert (row["outcome"] == INFRA) == (row["stop"] == "never-ran" and row["compiles"] == 0), row


def test_an_unknown_prover_is_one_collection_error(fake_suite: pytest.Pytester) -> None:
    conftest = fake_suite.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace('prover="fakeprover"', 'prover="nonesuch"'))
    result = fake_suite.runpytest(*BASE, "-m", "fake")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*suite.forall.toml: no installed prover backend is called 'nonesuch'*"])
    assert "Traceback" not in result.stdout.str() and "deselected" not in result.stdout.str()
