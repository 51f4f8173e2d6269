"""Outcomes, exit statuses, JUnit properties, results.jsonl and xdist equivalence, on the fake suite."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from junitparser import JUnitXml, Properties

from pytest_forall.plugin.report import EXIT_ALL_INFRA, junit_value

BASE = ["--forall-frontend=fake", "-p", "no:cacheprovider"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*BASE, *args)


def results(pytester: pytest.Pytester, run_id: str) -> dict[str, dict]:
    lines = (pytester.path / "reports" / run_id / "results.jsonl").read_text().splitlines()
    return {json.loads(line)["task_id"]: json.loads(line) for line in lines}


def test_every_outcome_has_its_own_letter_word_and_count(fake_suite: pytest.Pytester) -> None:
    result = run(fake_suite, "-v", "--forall-run-id=r1")
    result.stdout.fnmatch_lines([
        "*t_failed?fake? FAILED*", "*t_false?fake? STATEMENT-FALSE*", "*t_infra?fake? INFRA*",
        "*t_rules?fake? RULES-ONLY*", "*t_strict?fake? STRICT*",
        "*forall summary*", "1 strict, 1 rules_only, 1 failed, 1 infra, 1 statement_false, 0 vacuous, 0 inner_vacuous  (5 items)",
        "infra x1 (t_infra): template: template does not compile here: fake library missing",
    ])
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and outcomes["passed"] == 1 and outcomes["rules_only"] == 1
    assert outcomes["infra"] == 1 and outcomes["statement_false"] == 1
    assert result.ret == 1  # a proof failure fails the run


def test_failure_message_names_the_reason_not_a_traceback(fake_suite: pytest.Pytester) -> None:
    result = run(fake_suite, "-k", "t_failed", "--forall-run-id=r2")
    result.stdout.fnmatch_lines(["round budget of 8 exhausted (last: elaboration: fake compile error)*",
                                  "*audit record:*"])
    assert "Traceback" not in result.stdout.str()
    assert "t_failed: round budget" not in result.stdout.str()  # the node id names the task (issue 19)


def test_exit_status_policy(fake_suite: pytest.Pytester) -> None:
    assert run(fake_suite, "-k", "t_strict or t_rules or t_infra or t_false").ret == 0
    assert run(fake_suite, "-k", "t_strict or t_rules", "--forall-require=strict").ret == 1
    assert run(fake_suite, "-k", "t_strict", "--forall-require=strict").ret == 0
    assert run(fake_suite, "-k", "t_infra").ret == EXIT_ALL_INFRA  # all infra never exits 0
    fake_suite.makeini("[pytest]\nforall_require = strict\n")
    assert run(fake_suite, "-k", "t_rules").ret == 1  # ini twin


def test_junit_properties_and_results_jsonl_agree(fake_suite: pytest.Pytester) -> None:
    xml = fake_suite.path / "junit.xml"
    run(fake_suite, f"--junitxml={xml}", "--forall-run-id=r3")
    rows = results(fake_suite, "r3")
    assert set(rows) == {"t_strict", "t_rules", "t_failed", "t_infra", "t_false"}
    seen = {}
    for suite in JUnitXml.fromfile(str(xml)):
        for case in suite:
            props = {p.name: p.value for p in case.child(Properties)}
            seen[case.name.split("[")[0]] = props
    assert set(seen) == set(rows)
    for task_id, props in seen.items():
        row = rows[task_id]
        assert props["forall.outcome"] == row["outcome"]
        assert props["forall.prover"] == "fakeprover"
        for name in ("compiles", "rounds", "tokens_in", "tokens_out", "cost_usd", "wall_s"):
            assert props[f"forall.{name}"] == junit_value(row[name]), (task_id, name)
    assert seen["t_strict"]["forall.digest"] == rows["t_strict"]["digest"] and len(rows["t_strict"]["digest"]) == 64
    assert seen["t_failed"]["forall.digest"] == ""  # unknown is empty, never invented
    assert seen["t_infra"]["forall.tokens_in"] == "" and seen["t_infra"]["forall.cost_usd"] == ""
    assert seen["t_rules"]["forall.axioms"] == "fake.choice"
    audit = Path(rows["t_strict"]["audit_dir"])
    assert (audit / "accepted" / "t_strict.txt").read_text() == "STRICT\n"
    assert json.loads((audit / "accepted" / "acceptance.json").read_text())["digest"] == rows["t_strict"]["digest"]


def test_xdist_gives_the_same_outcomes_as_serial(fake_suite: pytest.Pytester) -> None:
    serial = run(fake_suite, "--forall-run-id=serial")
    parallel = run(fake_suite, "-n", "2", "--dist", "worksteal", "--forall-run-id=par")
    assert serial.ret == parallel.ret == 1
    # the reason ends with the item's elapsed wall seconds, which differ between two runs on a loaded machine
    strip = lambda rows: {k: (v["outcome"], re.sub(r", \d+ s$", "", v["reason"]), v["digest"])
                          for k, v in rows.items()}
    assert strip(results(fake_suite, "serial")) == strip(results(fake_suite, "par"))
    assert parallel.parseoutcomes() == serial.parseoutcomes()
    parallel.stdout.fnmatch_lines(["*forall summary*", "1 strict, 1 rules_only, 1 failed, 1 infra, 1 statement_false*"])


def test_last_failed_reruns_only_the_failed_item(fake_suite: pytest.Pytester) -> None:
    fake_suite.runpytest("--forall-frontend=fake")
    again = fake_suite.runpytest("--forall-frontend=fake", "--lf", "-v")
    again.stdout.fnmatch_lines(["*t_failed?fake? FAILED*"])
    assert "t_strict" not in again.stdout.str()


def test_markers_select_by_track(fake_suite: pytest.Pytester) -> None:
    result = run(fake_suite, "-m", "fake and not coq", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*5 tests collected*"])
    assert run(fake_suite, "-m", "coq", "--collect-only", "-q").ret == 5


def test_resume_runs_only_items_without_a_final_outcome(fake_suite: pytest.Pytester) -> None:
    run(fake_suite, "--forall-run-id=res")
    resumed = run(fake_suite, "--forall-resume=res", "-v")
    # the final items are reported as recorded (issue 19: the reports cover the run), not run or recorded again
    resumed.stdout.fnmatch_lines(["*t_infra?fake? INFRA*", ("run res continued: this session reports 5 items: 4 as "
                                                           "recorded by earlier sessions (not re-run) and 1 run now*")])
    assert "deselected" not in resumed.stdout.str()
    lines = (fake_suite.path / "reports" / "res" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 6  # earlier lines are kept; the infra item appended again


def test_fixtures_are_overridable_in_a_suite_conftest(fake_suite: pytest.Pytester) -> None:
    conftest = fake_suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + (
        "\n@pytest.fixture\ndef forall_frontend():\n"
        "    class Overridden(FakeSession):\n"
        "        def turn(self, prompt, *, timeout):\n"
        "            (self.ctx.workspace / self.ctx.task.candidate_name).write_text('FAIL by override')\n"
        "            return TurnResult(gave_up='overridden')\n"
        "    class Never(FakeFrontend):\n"
        "        def start(self, ctx):\n"
        "            return Overridden(ctx)\n"
        "    return Never()\n"))
    result = run(fake_suite, "-k", "t_strict", "--forall-run-id=ovr")
    row = results(fake_suite, "ovr")["t_strict"]
    assert row["outcome"] == "failed" and "fake compile error" in row["reason"]
    assert result.ret == 1


def test_a_worker_crash_never_passes_silently(fake_suite: pytest.Pytester) -> None:
    manifest = fake_suite.path / "suite.forall.toml"
    manifest.write_text(manifest.read_text() + '\nt_crash = "CRASH"\n')
    result = run(fake_suite, "-n", "2", "-k", "t_strict or t_crash", "--forall-run-id=crash")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*t_crash*", "*forall summary*"])
    assert "crashed" in result.stdout.str()


def test_running_unsandboxed_is_recorded_and_shown(fake_suite: pytest.Pytester) -> None:
    result = run(fake_suite, "-k", "t_strict", "--forall-sandbox=none", "--forall-run-id=nosbx")
    result.stdout.fnmatch_lines(["*sandbox=none*", "*sandbox: NONE for 1 items (--forall-sandbox=none)*"])
    assert results(fake_suite, "nosbx")["t_strict"]["sandbox"] == "none"
    default = run(fake_suite, "-k", "t_strict", "--forall-run-id=sbx")
    assert "sandbox: NONE" not in default.stdout.str()
    row = results(fake_suite, "sbx")["t_strict"]
    assert row["sandbox"] == "bwrap"
    # the fake prover declares no sandbox binds, like the Lean backends: it is recorded as unsandboxed
    assert row["prover_sandboxed"] is False
    default.stdout.fnmatch_lines(["*sandbox: the prover of 1 items ran unsandboxed (its backend declares no binds)*"])


def test_a_suite_conftest_words_the_actor_prompt(fake_suite: pytest.Pytester) -> None:
    conftest = fake_suite.path / "conftest.py"
    conftest.write_text(conftest.read_text() + (
        "\n@pytest.hookimpl(tryfirst=True)\ndef pytest_forall_actor_prompt(task, options):\n"
        "    return f'Custom prompt for {task.task_id}'\n"))
    run(fake_suite, "-k", "t_strict", "--forall-run-id=prompt")
    audit = Path(results(fake_suite, "prompt")["t_strict"]["audit_dir"])
    assert (audit / "s0" / "prompts.txt").read_text().splitlines()[0] == "Custom prompt for t_strict"
