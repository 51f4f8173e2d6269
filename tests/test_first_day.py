"""A new user's first day (issue 19, items 5-8): inputs refused up front, a terminal that says what happened,
commands that work as the README writes them, and reports that lead with the verdict."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, PUTNAM, REPO, require_path

BASE = ["-p", "no:cacheprovider", "--forall-sandbox=none"]


def _out(run: pytest.RunResult) -> str:
    return run.stdout.str() + run.stderr.str()


# -- inputs validated at configure time ------------------------------------------------------------------------

def test_replay_without_proofs_is_one_usage_error(fake_suite: pytest.Pytester) -> None:
    """Was: every item infra, exit 75. Now: exit 4, one line naming the option, no item run."""
    run = fake_suite.runpytest(*BASE, "--forall-frontend=replay")
    assert run.ret == 4, _out(run)
    assert "--forall-frontend=replay needs --forall-proofs DIR" in _out(run)
    assert not (fake_suite.path / "reports").exists()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_replay_proofs_must_be_a_directory(fake_suite: pytest.Pytester, kind: str) -> None:
    target = fake_suite.path / "proofs"
    if kind == "file":
        target.write_text("not a directory\n")
    run = fake_suite.runpytest(*BASE, "--forall-frontend=replay", f"--forall-proofs={target}")
    assert run.ret == 4, _out(run)
    expected = {"missing": "no such directory", "file": "not a directory"}[kind]
    assert f"--forall-proofs: {target}: {expected}" in _out(run)
    assert "Traceback" not in _out(run)


def test_replay_proofs_must_be_readable(fake_suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """(This machine runs tests as root, who reads any directory: the permission answer is faked.)"""
    proofs = fake_suite.path / "proofs"
    proofs.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == proofs
                        else real_access(path, mode, **kw))
    run = fake_suite.runpytest(*BASE, "--forall-frontend=replay", f"--forall-proofs={proofs}")
    assert run.ret == 4 and f"--forall-proofs: {proofs}: not readable" in _out(run), _out(run)


def test_project_replay_without_proofs_is_allowed(pytester: pytest.Pytester) -> None:
    """A project has proofs of its own to re-check: no --forall-proofs is not an error there."""
    project = pytester.path / "proj"
    project.mkdir()
    (project / "_CoqProject").write_text("-R theories Demo\n")
    run = pytester.runpytest(*BASE, "--forall-project=proj", "--forall-frontend=replay", "--co")
    assert run.ret in (0, 5), _out(run)
    assert "needs --forall-proofs" not in _out(run)


def test_stray_proof_files_get_one_warning_with_the_nearest_task(fake_suite: pytest.Pytester) -> None:
    """Was: files matching no task ignored without a word."""
    proofs = fake_suite.path / "proofs"
    proofs.mkdir()
    (proofs / "t_strict.txt").write_text("STRICT\n")
    (proofs / "T_Strict.txt").write_text("STRICT\n")    # case
    (proofs / "t_rules.v").write_text("RULES\n")        # extension
    (proofs / "t_nosuch.txt").write_text("STRICT\n")    # unknown id
    run = fake_suite.runpytest(*BASE, "--forall-frontend=replay", f"--forall-proofs={proofs}", "-k", "t_strict")
    out = _out(run)
    warning = [line for line in out.splitlines() if "match no collected task" in line]
    assert f"--forall-proofs {proofs}" in out
    assert len(warning) == 1, out
    assert "3 file(s)" in warning[0]
    assert "T_Strict.txt (nearest task: t_strict)" in warning[0]
    assert "t_rules.v (nearest task: t_rules)" in warning[0]
    assert "t_nosuch.txt (nearest task: " in warning[0]
    assert "t_strict.txt (" not in warning[0].replace("T_Strict.txt (", "")


def test_coq_and_rocq_markers_select_the_same_items() -> None:
    """Was: ``-m rocq`` silently selected nothing."""
    require_path(PUTNAM / "coq" / "src", "PutnamBench")

    def collected(marker: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
                               "benchmarks/putnam", "-m", marker, "--co", "-q"], cwd=REPO, capture_output=True,
                              text=True, check=False, env={**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)})
        return done.stdout.strip().splitlines()[-1].split(" in ")[0]

    coq = collected("coq")
    assert coq == collected("rocq")
    assert coq.startswith(f"{len(list((PUTNAM / 'coq' / 'src').glob('*.v')))}/")


def test_verify_accepts_coq_as_the_rocq_prover(tmp_path: Path) -> None:
    """Was: ``forall verify --prover coq`` refused (exit 2, no language pack)."""
    template = tmp_path / "t.v"
    template.write_text("Theorem t : True.\nProof.\nAdmitted.\n")
    candidate = tmp_path / "c.v"
    candidate.write_text("Theorem t : True.\nProof.\n  exact I.\nQed.\n")
    for prover in ("coq", "rocq"):
        done = subprocess.run([sys.executable, "-m", "pytest_forall.core.verify", "--prover", prover, "--template",
                               str(template), "--candidate", str(candidate), "--static-only"],
                              capture_output=True, text=True, check=False, cwd=REPO)
        assert done.returncode == 0, (prover, done.stdout + done.stderr)


def test_the_alias_is_defined_once_in_the_rocq_pack() -> None:
    from pytest_forall.core.language import language, marker_names
    from pytest_forall.lang.rocq import LANGUAGE

    assert language("coq") is LANGUAGE
    assert marker_names(LANGUAGE.name) == [LANGUAGE.name, *LANGUAGE.aliases]
    assert EXAMPLES.is_dir()


# -- the terminal says what happened ---------------------------------------------------------------------------

def _counting_store(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    from test_gating import COUNTING_CONFTEST, REPLAY_SUITE

    pytester.makeconftest(COUNTING_CONFTEST)
    pytester.makefile(".forall.toml", suite=REPLAY_SUITE)
    monkeypatch.setenv("FAKE_COMPILE_LOG", str(pytester.path / "compiles.log"))
    store = pytester.path / "store"
    store.mkdir()
    for task in ("t_a", "t_b", "t_c"):
        (store / f"{task}.txt").write_text("a proof\n")
    (store / "t_open.txt").write_text("FAIL: a known-open problem\n")
    return store


def _summary(run: pytest.RunResult) -> list[str]:
    out = run.stdout.str()
    return out[out.index("forall summary"):].splitlines()


def test_the_cache_line_says_hits_misses_and_why(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: whether the cache hit or missed (and why) only in results.jsonl."""
    store = _counting_store(pytester, monkeypatch)
    args = [*BASE, "--forall-frontend=replay", f"--forall-proofs={store}"]
    cold = _summary(pytester.runpytest(*args, "--forall-run-id=cold"))
    assert any(line.startswith("verdict cache (readwrite): 0 hits, 4 misses (4 new proof") for line in cold), cold
    warm = _summary(pytester.runpytest(*args, "--forall-run-id=warm"))
    assert "verdict cache (readwrite): 4 hits, 0 misses" in warm, warm
    monkeypatch.setenv("FAKE_VERSION", "fake 2")  # a package upgrade: the environment digest changes
    changed = _summary(pytester.runpytest(*args, "--forall-run-id=changed"))
    assert "verdict cache (readwrite): 0 hits, 4 misses (4 environment changed: prover version)" in changed, changed
    off = _summary(pytester.runpytest(*args, "--forall-run-id=off", "--forall-cache=off"))
    assert any(line.startswith("verdict cache: off") for line in off), off


def test_the_gate_says_its_verdict(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: exit 0 under "1 failed" with no line saying the gate passed."""
    store = _counting_store(pytester, monkeypatch)
    args = [*BASE, "--forall-frontend=replay", f"--forall-proofs={store}"]
    assert pytester.runpytest(*args, "--forall-run-id=base").ret == 1
    gated = pytester.runpytest(*args, "--forall-run-id=now", "--forall-baseline=reports/base",
                               "--forall-gate=regressions")
    assert gated.ret == 0
    assert ("gate (--forall-gate=regressions): PASSED: no regression against the baseline; 1 failed without "
            "regressing (not failing the run); exit status 0") in _summary(gated)
    (store / "t_b.txt").write_text("FAIL: broken\n")
    broken = pytester.runpytest(*args, "--forall-run-id=broken", "--forall-baseline=reports/base",
                                "--forall-gate=regressions")
    assert broken.ret == 1
    line = next(line for line in _summary(broken) if line.startswith("gate ("))
    assert "FAILED: 1 regressed (suite.forall.toml::t_b[fake])" in line and line.endswith("exit status 1")


def test_summary_shows_elapsed_wall_next_to_the_sum(fake_suite: pytest.Pytester) -> None:
    """Was: "wall" was the sum of the item times, called wall."""
    summary = _summary(fake_suite.runpytest(*BASE, "--forall-frontend=fake"))
    spend = next(line for line in summary if line.startswith("compiles "))
    assert " s elapsed (" in spend and " s summed over items)" in spend, spend


FAILING_CONFTEST_PATCH = ('"fake compile error"', '"\\nIn environment\\nx : nat\\nUnable to unify \\"2\\" with \\"1\\"."')


def test_failure_reason_has_file_line_and_no_task_id(pytester: pytest.Pytester) -> None:
    """Was: the reason dropped file:line, started with the task id, and an error starting with a newline
    showed as an empty reason."""
    conftest = (EXAMPLES / "fake_conftest.py").read_text()
    conftest = conftest.replace('[{"severity": "error", "data": "fake compile error"}]',
                                '[{"severity": "error", "line": 3, "data": "\\nIn environment\\nx : nat\\n'
                                'Unable to unify"}]')
    assert '"line": 3' in conftest
    pytester.makeconftest(conftest)
    pytester.makefile(".forall.toml", suite='adapter = "fake"\n[tasks]\nt_failed = "FAIL"\n')
    run = pytester.runpytest(*BASE, "--forall-frontend=fake", "-rf", "--forall-rounds=1")
    out = run.stdout.str()
    first = out.splitlines()[out.splitlines().index(next(l for l in out.splitlines() if "_ t_failed[fake] _" in l)) + 1]
    assert "elaboration: t_failed.txt:3: In environment x : nat Unable to unify" in first, out
    assert not first.startswith("t_failed:")
    short = next(line for line in out.splitlines() if line.startswith("FAILED "))
    assert short.startswith("FAILED suite.forall.toml::t_failed[fake] - round budget"), short


def test_verify_json_and_the_item_reason_agree_on_file_line(tmp_path: Path) -> None:
    """A real Coq error: the elaboration reason names the candidate file and line, like --json's messages."""
    from conftest import require_tool
    from pytest_forall.core.verify import task_from_template, verify_candidate
    from pytest_forall.lang.rocq.backend import RocqProver

    require_tool("coqc")
    template = tmp_path / "t.v"
    template.write_text("Theorem t : 1 = 2.\nProof.\nAdmitted.\n")
    task = task_from_template("rocq", template)
    verdict = verify_candidate(task, RocqProver({"sandbox": "none"}), b"Theorem t : 1 = 2.\nProof.\n  reflexivity.\nQed.\n",
                               builddir=tmp_path / "build")
    layer = next(layer for layer in verdict.layers if layer.name == "elaboration")
    assert layer.reason.startswith("t.v:3: "), layer.reason
    assert layer.evidence["messages"][0]["line"] == 3


def test_minus_ra_lists_vacuous_and_statement_false() -> None:
    """Was: ``-ra``/``-rA`` listed nothing for vacuous items."""
    from types import SimpleNamespace

    from pytest_forall.plugin.report import ShortSummary

    rows = [{"nodeid": "s::a[coq]", "outcome": "vacuous", "stop": "vacuous", "reason": "hypotheses contradict"},
            {"nodeid": "s::b[coq]", "outcome": "statement_false", "stop": "refuted", "reason": "negation proved"},
            {"nodeid": "s::c[coq]", "outcome": "strict", "stop": "accepted", "reason": ""}]
    for chars in ("a", "A", "s"):
        written: list[str] = []
        terminal = SimpleNamespace(stats={}, write_line=written.append, write_sep=lambda *a, w=written, **k: w.append("="))
        config = SimpleNamespace(option=SimpleNamespace(reportchars=chars))
        hook = ShortSummary(SimpleNamespace(results=rows)).pytest_terminal_summary(terminal, 0, config)
        next(hook)
        with pytest.raises(StopIteration):
            hook.send(None)
        assert "VACUOUS s::a[coq] - vacuous: hypotheses contradict" in written, (chars, written)
        assert "STATEMENT-FALSE s::b[coq] - refuted: negation proved" in written
        assert not any("s::c" in line for line in written)


# -- first day -------------------------------------------------------------------------------------------------

def _pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("PUTNAMBENCH_ROOT", "PYTEST_ADDOPTS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
                           *args], cwd=cwd, capture_output=True, text=True, check=False,
                          env={**base, "PYTHONPATH": str(REPO), **(env or {})}, timeout=600)


def test_putnambench_is_found_at_its_documented_default(tmp_path: Path) -> None:
    """Was: the README's first command failed with "PutnamBench location not set" (no PUTNAMBENCH_ROOT)."""
    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    clone = tmp_path / "clone"
    (clone / "benchmarks" / "putnam").mkdir(parents=True)
    (clone / "benchmarks" / "putnam" / "putnam.forall.toml").write_text(
        (REPO / "benchmarks" / "putnam" / "putnam.forall.toml").read_text())
    (tmp_path / "shared" / "benchmarks").mkdir(parents=True)
    (tmp_path / "shared" / "benchmarks" / "PutnamBench").symlink_to(PUTNAM)
    run = _pytest(clone, "benchmarks/putnam", "-m", "coq", "--co", "-q")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(list((PUTNAM / 'coq' / 'src').glob('*.v')))}/" in run.stdout.splitlines()[-1]
    (tmp_path / "shared" / "benchmarks" / "PutnamBench").unlink()
    missing = _pytest(clone, "benchmarks/putnam", "--co", "-q")
    assert missing.returncode != 0
    assert f"not at the default {tmp_path / 'shared' / 'benchmarks' / 'PutnamBench'}" in missing.stdout


def test_collect_only_and_empty_selections_build_no_judge_plugin(tmp_path: Path) -> None:
    """Was: ``--co`` and a run selecting nothing built the Rocq judge plugin (seconds, and files in the cache)."""
    from conftest import require_tool

    require_tool("coqc")
    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    cache = tmp_path / "cache"
    env = {"PUTNAMBENCH_ROOT": str(PUTNAM)}
    listed = _pytest(REPO, "benchmarks/putnam", "-m", "coq", "--co", "-q", f"--forall-cache-dir={cache}",
                     f"--forall-reports={tmp_path / 'reports'}", env=env)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    nothing = _pytest(REPO, "benchmarks/putnam", "-m", "coq", "-k", "no_such_problem", f"--forall-cache-dir={cache}",
                      f"--forall-reports={tmp_path / 'reports'}", env=env)
    assert nothing.returncode == 5, nothing.stdout + nothing.stderr
    assert not (cache / "rocq-judge").exists(), sorted(p.name for p in cache.rglob("*"))[:10]


def test_an_oversized_stored_proof_is_refused_before_it_is_copied(fake_suite: pytest.Pytester) -> None:
    """Was: a 50 MB candidate was copied into the workspace, then refused (two different limits)."""
    from pytest_forall.core.model import MAX_CANDIDATE_BYTES

    proofs = fake_suite.path / "proofs"
    proofs.mkdir()
    with (proofs / "t_strict.txt").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    fake_suite.runpytest(*BASE, "--forall-frontend=replay", f"--forall-proofs={proofs}", "-k", "t_strict",
                         "--forall-run-id=big")
    run = fake_suite.path / "reports" / "big"
    row = next(line for line in (run / "results.jsonl").read_text().splitlines() if "t_strict" in line)
    assert f"is {50 * 1024 * 1024} bytes, over the limit of {MAX_CANDIDATE_BYTES} bytes" in row
    copied = [p for p in (run / "ws").rglob("*") if p.is_file() and p.stat().st_size > MAX_CANDIDATE_BYTES]
    assert not copied, copied


def test_one_size_limit_for_candidates() -> None:
    """Was: 2,000,000 bytes in the verifier and the Rocq backend, 4,194,304 in the workspace reader."""
    import ast

    defined = sorted(str(path.relative_to(REPO)) for path in (REPO / "pytest_forall").rglob("*.py")
                     for node in ast.walk(ast.parse(path.read_text()))
                     if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and "MAX_CANDIDATE" in t.id
                                                              for t in node.targets))
    assert defined == ["pytest_forall/core/model.py"]


def _stub(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_setup_is_skipped_quickly_when_nothing_changed(tmp_path: Path) -> None:
    """Was: every call of scripts/setup.sh (so of scripts/putnam-coq.sh) re-ran pip and its network checks
    (51 s). Stubs stand in for dpkg, apt, npm and pip; the script is the repository's."""
    import time

    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True)
    for script in ("setup.sh", "venv.sh"):
        (clone / "scripts" / script).write_text((REPO / "scripts" / script).read_text())
    (clone / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (clone / "pytest_forall").mkdir()
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "calls.log"
    _stub(stubs, "dpkg-query", 'for a in "$@"; do case "$a" in -*) ;; *) echo "install ok installed";; esac; done\n')
    for tool in ("apt-get", "npm", "claude", "codex", "opencode"):
        _stub(stubs, tool, f'echo "{tool} $*" >> {log}\n')
    site = tmp_path / "site"
    site.mkdir()
    for python in ("python", "python3"):  # (python3: what the script called before FORALL_SETUP_PYTHON)
        # -m venv makes the clone's environment with this stub as its python; -c answers the sysconfig and import checks
        _stub(stubs, python, f'case "$1" in\n  -m) echo "python $*" >> {log}\n'
                             f'    for last in "$@"; do :; done; if [ "$2" = venv ]; then mkdir -p "$last/bin"; cp "$0" "$last/bin/python"; fi;;\n'
                             f'  -c) case "$2" in *sysconfig*) echo "{site}";; *) echo "{clone}/pytest_forall/__init__.py";;'
                             f' esac;;\n  *) echo "Python 3.11.7";;\nesac\n')
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}/usr/bin{os.pathsep}/bin",
           "FORALL_SETUP_PYTHON": str(stubs / "python")}

    def setup() -> tuple[str, float]:
        started = time.monotonic()
        done = subprocess.run(["bash", str(clone / "scripts" / "setup.sh")], capture_output=True, text=True,
                              env=env, check=False, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout, time.monotonic() - started

    first, _ = setup()
    assert "pip install" in first and log.read_text().count("pip install") == 1
    again, seconds = setup()
    assert "setup: nothing changed since the last setup" in again
    assert log.read_text().count("pip install") == 1  # no pip, no apt, no npm: nothing that costs network
    assert seconds < 3, seconds
    (clone / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text() + "\n# a new dependency\n")
    changed, _ = setup()
    assert "pip install" in changed and log.read_text().count("pip install") == 2


# -- reports people put on a wall --------------------------------------------------------------------------------

def _dump_dom(page: Path) -> str:
    import shutil
    import tempfile

    from conftest import require_tool

    require_tool("chromium")
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([str(shutil.which("chromium")), "--headless", "--no-sandbox", "--disable-gpu",
                               "--no-first-run", "--disable-background-networking", "--disable-component-update",
                               "--disable-sync", f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                              capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class _Page:
    """The DOM as Chromium built it: the run facts, the item rows, the plots' captions."""

    def __init__(self, dom: str) -> None:
        from html.parser import HTMLParser

        self.facts: dict[str, dict[str, str]] = {}
        self.items: list[dict[str, str]] = []
        self.captions: list[str] = []
        self.plots: list[str] = []
        self.verdict = ""
        page = self
        state: dict[str, Any] = {"run": None, "field": None, "item": None, "col": None, "text": [], "in": ""}

        class Parser(HTMLParser):
            def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
                a = {k: v or "" for k, v in attrs}
                if tag == "tr" and "data-run" in a and "data-nodeid" not in a:
                    state["run"] = a["data-run"]
                    page.facts[a["data-run"]] = {}
                elif tag == "tr" and "data-nodeid" in a:
                    state["item"] = {}
                    page.items.append(state["item"])
                elif tag == "td" and ("data-field" in a or "data-col" in a):
                    state["field"], state["text"] = a.get("data-field") or a.get("data-col"), []
                elif tag in ("figcaption", "span") and (tag == "figcaption" or a.get("id") == "verdict"):
                    state["in"], state["text"] = tag, []
                if tag == "svg":
                    page.plots.append(a.get("data-plot", ""))

            def handle_data(self, data: str) -> None:
                state["text"].append(data)

            def handle_endtag(self, tag: str) -> None:
                text = "".join(state["text"]).strip()
                if tag == "td" and state["field"]:
                    target = state["item"] if state["item"] is not None else page.facts.get(state["run"] or "")
                    if target is not None:
                        target[state["field"]] = text
                    state["field"] = None
                elif tag == "tr":
                    state["run"], state["item"] = None, None
                elif tag == state["in"] == "figcaption":
                    page.captions.append(text)
                    state["in"] = ""
                elif tag == state["in"] == "span":
                    page.verdict, state["in"] = text, ""

        Parser().feed(dom)


def test_html_page_leads_with_the_verdict_and_counts_an_item_once(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: no verdict, exit status, gate, date, host or run column; a re-run item counted twice (failed and
    passed); an empty cost panel; a chart titled "compiles (compiles)"."""
    import socket

    from pytest_forall.cli import main

    store = _counting_store(pytester, monkeypatch)
    args = [*BASE, "--forall-frontend=replay", f"--forall-proofs={store}"]
    assert pytester.runpytest(*args, "--forall-run-id=base").ret == 1
    (store / "t_open.txt").write_text("now proved\n")
    assert pytester.runpytest(*args, "--forall-run-id=now", "--forall-baseline=reports/base",
                              "--forall-gate=regressions").ret == 0
    reports = pytester.path / "reports"
    page = reports / "report.html"
    assert main(["report", str(reports / "base"), str(reports / "now"), "--html", str(page)]) == 0
    dom = _Page(_dump_dom(page))
    assert dom.verdict == "FAILED"  # one of the combined runs failed
    base, now = dom.facts["base"], dom.facts["now"]
    assert (base["verdict"], base["exit status"], base["gate"]) == ("FAILED", "1", "none (no baseline)")
    assert (now["verdict"], now["exit status"]) == ("PASSED", "0")
    assert now["gate"] == "PASSED: 0 regressed, 1 fixed against the baseline"
    assert now["host"] == socket.gethostname() and now["frontend"] == "replay"
    assert now["toolchain"] == "fake 1" and now["date"].endswith(" UTC") and now["date"][:2] == "20"
    # one row per item: the re-run's, with the run it comes from
    assert sorted(item["task"] for item in dom.items) == ["t_a", "t_b", "t_c", "t_open"]
    assert {item["run"] for item in dom.items} == {"now"}
    assert next(item for item in dom.items if item["task"] == "t_open")["outcome"] == "strict"
    # no cost was reported: no cost panel; no doubled chart title
    assert "cost_usd" not in dom.plots and dom.plots == ["compiles", "wall_s"]
    assert dom.captions == ["compiles per item", "wall time (s) per item"]


def test_watch_shows_the_true_end_state(tmp_path: Path) -> None:
    """Was: items "running" after the run had finished."""
    import json
    import time

    from pytest_forall.cli.watch import frame

    run = tmp_path / "run"
    (run / "items" / "t_cut-fake").mkdir(parents=True)
    (run / "items" / "t_cut-fake" / "progress.json").write_text(json.dumps(
        {"task_id": "t_cut", "state": "running", "activity": "verifying s0/r1", "compiles": 3,
         "updated_at": time.time() - 60}))
    (run / "run.json").write_text(json.dumps({"run_id": "run", "selected": 1, "started_at": time.time() - 100,
                                              "finished_at": time.time() - 50, "exitstatus": 2}))
    lines = frame(run)
    assert "(finished)" in lines[0] and "0 running" in lines[0] and "run ended: exit status 2" in lines, lines
    assert any(line.startswith("not finished: 1 item(s) were running when the run ended") and "t_cut-fake" in line
               for line in lines), lines
    assert not any(line.startswith("  t_cut-fake:") for line in lines)


def test_a_closed_pipe_ends_forall_report_quietly(tmp_path: Path) -> None:
    """Was: ``forall report … | head`` ended in a BrokenPipeError traceback."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text('{"nodeid": "s::a", "outcome": "strict", "task_id": "a"}\n')
    reader, writer = os.pipe()
    os.close(reader)  # the reader (``head``) is gone before forall writes a line
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "report", str(run)], stdout=writer,
                              stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=120, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    finally:
        os.close(writer)
    assert done.stderr == "" and done.returncode == 141, (done.returncode, done.stderr)


LIVE_CONFTEST = (EXAMPLES / "fake_conftest.py").read_text() + '''

import glob as _glob
import json as _json
import time as _time


def _try_tactics(self, task, workspace, tactics, timeout, prelude="", on_attempt=None):
    """Three attempts, each a while: what forall watch reads between them is recorded."""
    for _ in range(3):
        _time.sleep(1.1)
        on_attempt()
        with open("observed.jsonl", "a") as handle:
            for path in _glob.glob("reports/*/items/*/progress.json"):
                handle.write(open(path).read() + "\\n")
    return "", 3, "no tactic closed it"


FakeProver.try_tactics = _try_tactics
'''


def test_watch_sees_the_portfolios_compiles_while_it_searches(pytester: pytest.Pytester) -> None:
    """Was: "0 compiles" in forall watch while the portfolio compiled (charged only when its search ended)."""
    import json

    pytester.makeconftest(LIVE_CONFTEST)
    pytester.makefile(".forall.toml", suite='adapter = "fake"\n[tasks]\nt_strict = "STRICT"\n')
    run = pytester.runpytest(*BASE, "--forall-frontend=portfolio", "--forall-rounds=1", "--forall-run-id=live")
    seen = [json.loads(line) for line in (pytester.path / "observed.jsonl").read_text().splitlines()]
    assert [p["compiles"] for p in seen] == [1, 2, 3], (seen, run.stdout.str())
    assert all(p["activity"] == "portfolio: trying 0 closing tactics" and p["state"] == "running" for p in seen)
    row = json.loads((pytester.path / "reports" / "live" / "results.jsonl").read_text())
    assert row["compiles"] == 3  # charged once each, live: the total is unchanged


def test_the_rocq_audit_search_reports_each_attempt_as_it_starts(tmp_path: Path) -> None:
    """The statement audit's coqtop search (the portfolio's first minutes) charges each attempt live too."""
    from conftest import require_tool
    from pytest_forall.lang.rocq.coqtop import Goal, TacticProbe

    require_tool("coqtop")
    calls: list[int] = []
    goal = Goal("Lemma g : 1 = 2 \\/ True.\nProof.\n", "g", [("left; reflexivity", 5.0), ("right; exact I", 5.0)])
    winners, attempts, log = TacticProbe("coqtop", 2048).run_goals("", [goal], tmp_path,
                                                                    on_attempt=lambda: calls.append(1))
    assert attempts == len(calls) == 2 and winners == {"g": "right; exact I"}, log
