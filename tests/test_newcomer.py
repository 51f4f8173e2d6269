"""A newcomer's first week (issue 33): an environment per clone, resumes that keep their selection, and reports a
dashboard and a maintainer read without help."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO

# -- an environment per clone --------------------------------------------------------------------------------------


def _clone(root: Path, name: str) -> Path:
    """What ``scripts/setup.sh`` needs of a clone (the working tree's files, so uncommitted changes count)."""
    clone = root / name
    for part in ("pytest_forall", "scripts"):
        shutil.copytree(REPO / part, clone / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name_ in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name_, clone / name_)
    return clone


def _clean_env() -> dict[str, str]:
    """A shell as a newcomer has it: no PYTHONPATH pointing at some checkout, no environment activated."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "FORALL_SETUP_TOOLCHAINS": "0", "FORALL_SETUP_AGENTS": "0"}


def _machine_python(root: Path) -> Path:
    """A stand-in for the machine's Python (it sees the machine's packages, other checkouts' editable installs
    included): a setup that installs into "the machine's Python", as the one before issue 33 did, changes only it."""
    machine = root / "machine"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(machine)],
                   check=True, env=_clean_env())
    return machine / "bin" / "python"


def _setup(clone: Path, machine: Path) -> str:
    done = subprocess.run(["bash", str(clone / "scripts" / "setup.sh")], capture_output=True, text=True,
                          env={**_clean_env(), "FORALL_SETUP_PYTHON": str(machine)}, check=False, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_two_clones_on_one_machine_each_run_their_own_code(tmp_path: Path) -> None:
    """Issue 33, item 1: ``setup.sh`` ran ``pip install -e <clone>`` into the machine's Python, so setting up clone B
    made ``forall`` and the pytest plugin used from clone A run B's code. Now each clone has its own environment
    (``<clone>/.venv``) and its ``python``, ``forall``, plugin and ``scripts/test.sh`` (under ``-n 2``) run its own
    code; a module only B has is not importable from A; no editable finder of another checkout (such as the
    machine Python's own editable install) is active in either; and the stamp checks the environment."""
    require_dpkg_installed()
    machine = _machine_python(tmp_path)
    clones = {name: _clone(tmp_path, name) for name in ("a", "b")}
    (clones["b"] / "pytest_forall" / "only_in_b.py").write_text("WHO = 'b'\n")
    for name, clone in clones.items():
        out = _setup(clone, machine)
        assert f"setup: this clone's environment is {clone}/.venv" in out, out
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = ("import importlib, importlib.metadata as m, sys, pytest_forall\n"
             "finders = [str(v) for f in sys.meta_path for v in getattr(sys.modules.get(f.__module__), 'MAPPING', {})"
             ".values()]\n"
             "try:\n    importlib.import_module('pytest_forall.only_in_b'); only_b = True\n"
             "except ImportError:\n    only_b = False\n"
             "print(pytest_forall.__file__, only_b, ' '.join(finders), m.distribution('pytest-forall')"
             ".read_text('direct_url.json'), sep='|')\n")
    for name, clone in clones.items():
        venv = clone / ".venv"
        seen = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=elsewhere, capture_output=True,
                              text=True, env=_clean_env(), check=True).stdout.strip().split("|")
        assert seen[0] == f"{clone}/pytest_forall/__init__.py", seen
        assert seen[1] == str(name == "b"), seen
        assert all(path.startswith(str(clone)) for path in seen[2].split()), seen   # no other checkout's finder
        assert json.loads(seen[3])["url"] == clone.as_uri(), seen
        version = subprocess.run([str(venv / "bin" / "forall"), "--version"], cwd=elsewhere, capture_output=True,
                                 text=True, env=_clean_env(), check=True).stdout
        assert f" from {clone}/pytest_forall " in version, version
        # the plugin pytest loads, in the README's test command, on both xdist workers
        (clone / "probe_test.py").write_text(
            "import sys\nimport pytest\n\n@pytest.mark.parametrize('n', range(4))\n"
            "def test_probe(pytestconfig, n):\n"
            "    plugin = pytestconfig.pluginmanager.get_plugin('forall')\n"
            f"    assert plugin.__file__.startswith({str(clone / 'pytest_forall')!r}), plugin.__file__\n"
            f"    assert sys.prefix == {str(venv)!r}, sys.prefix\n")
        # clone a through the README's test command (2 xdist workers); clone b through a bare `pytest` after
        # `. .venv/bin/activate`, as the README's first commands run (in one process: cheaper). The environment had
        # no `pytest` of its own, so that `pytest` was the machine's, with the machine's plugin (issue 33).
        activated = {**_clean_env(), "VIRTUAL_ENV": str(venv), "PATH": f"{venv}/bin:{_clean_env()['PATH']}"}
        command = (["bash", str(clone / "scripts" / "test.sh")] if name == "a" else
                   ["pytest", "-p", "no:xdist", "--rootdir", str(clone)])
        tested = subprocess.run([*command, str(clone / "probe_test.py"), "-q", "-p", "no:cacheprovider"],
                                cwd=elsewhere, capture_output=True, text=True, env=activated, check=False,
                                timeout=300)
        assert tested.returncode == 0 and "4 passed" in tested.stdout, tested.stdout[-3000:] + tested.stderr[-2000:]

    # the stamp's fast path checks the environment: a clone whose .venv was removed is set up again
    assert "nothing changed since the last setup" in _setup(clones["a"], machine)
    shutil.rmtree(clones["a"] / ".venv")
    again = _setup(clones["a"], machine)
    assert "nothing changed" not in again and (clones["a"] / ".venv" / "bin" / "forall").exists(), again


def require_dpkg_installed() -> None:
    """setup.sh's apt step must be a no-op here (the test must not install anything): the machine is set up."""
    from conftest import require_tool

    require_tool("dpkg-query")
    names = _setup_packages()
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}\\n", *names], capture_output=True, text=True, check=False)
    if done.stdout.count("install ok installed") != len(names):
        message = "scripts/setup.sh has not been run on this machine (some of its Debian packages are missing)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)



def _setup_packages() -> list[str]:
    text = (REPO / "scripts" / "setup.sh").read_text().split("apt_packages=(", 1)[1]
    code = " ".join(line.split("#", 1)[0] for line in text.splitlines())   # comments may hold parentheses
    return code.split(")", 1)[0].split()


def test_the_readme_lists_the_packages_setup_installs() -> None:
    """Issue 33, item 16: the README's package list differed from what ``setup.sh`` installs."""
    readme = " ".join((REPO / "README.md").read_text().split())
    listed = readme.split("installs Debian's `coq` 8.16 with the Debian packages `", 1)[1].split("`", 1)[0].split()
    assert listed == _setup_packages()


def test_the_test_command_before_setup_says_what_to_do(tmp_path: Path) -> None:
    """Without the clone's environment, ``scripts/test.sh`` is one line naming the setup to run (never the machine's
    Python running some other checkout's plugin)."""
    clone = _clone(tmp_path, "fresh")
    done = subprocess.run(["bash", str(clone / "scripts" / "test.sh")], capture_output=True, text=True,
                          env=_clean_env(), check=False, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"test.sh: no environment for this clone at {clone}/.venv: run bash "
                           f"{clone}/scripts/setup.sh first\n")


# -- what a dashboard and a maintainer read --------------------------------------------------------------------------

@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_junit_tells_defects_from_infra_and_points_at_the_problem(fake_suite: pytest.Pytester,
                                                                  workers: list[str]) -> None:
    """Issue 33, item 6: ``classname="….putnam.forall.toml"`` showed on dashboards as class ``toml``; every
    ``<skipped>`` text began with the plugin's own file and line; a defect was a ``pytest.skip`` like an infra skip.
    Now (read back with junitparser): the classname is the manifest's dotted path, a defect's class is
    ``<manifest>-defects`` (Jenkins, GitLab and GitHub reporters all show the classname), a skip's ``type`` is
    ``forall.<outcome>`` and its message leads with ``INFRA``/``DEFECT``, and its text starts with the problem's
    file and line."""
    from junitparser import JUnitXml, Skipped

    xml = fake_suite.path / "junit.xml"
    result = fake_suite.runpytest("--forall-frontend=fake", "--forall-sandbox=none", "-p", "no:cacheprovider",
                                  *workers, f"--junitxml={xml}", "-rs")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = {case.name.split("[")[0]: case for suite in JUnitXml.fromfile(str(xml)) for case in suite}
    assert {name: case.classname for name, case in cases.items()} == {
        "t_strict": "suite", "t_rules": "suite", "t_failed": "suite", "t_infra": "suite", "t_false": "suite-defects"}
    manifest = (fake_suite.path / "suite.forall.toml").read_text().splitlines()
    for name, kind, head in (("t_infra", "infra", "INFRA template: template does not compile here"),
                             ("t_false", "statement_false", "DEFECT statement_false (claimed-false): ")):
        skipped = [r for r in cases[name].result if isinstance(r, Skipped)]
        assert len(skipped) == 1, cases[name].result
        assert skipped[0].type == f"forall.{kind}" and skipped[0].message.startswith(head), skipped[0].message
        line = next(n for n, text in enumerate(manifest, 1) if text.startswith(f"{name} "))
        assert skipped[0].text.startswith(f"suite.forall.toml:{line}: {head}"), skipped[0].text
        assert "pytest_forall" not in skipped[0].text
    out = result.stdout.str()
    assert "template: template:" not in out   # -r said the stop twice (item 5)
    result.stdout.fnmatch_lines(["infra x1 (t_infra): template: template does not compile here*",
                                 "*INFRA suite.forall.toml::t_infra[[]fake[]] - template: template does not compile*"])


def test_forall_verify_names_the_candidate_file_and_the_templates_line(tmp_path: Path) -> None:
    """Issue 33, items 6 and 12: a syntax error said ``line 2: …`` without a file; a missing theorem on line 3 of the
    template was reported at ``line 1``; ``--prover lean4`` was refused although ``lean4`` is a marker."""
    template = tmp_path / "problem.v"
    template.write_text("Require Import Arith.\n\nTheorem t : 1 = 1.\nProof. Admitted.\n")
    broken, renamed = tmp_path / "broken.v", tmp_path / "renamed.v"
    broken.write_text("Require Import Arith.\n\nTheorem t : 1 = 1.\nProof. reflexivity. Qed. \"open\n")
    renamed.write_text("Require Import Arith.\n\nTheorem u : 1 = 1.\nProof. reflexivity. Qed.\n")

    def verify(prover: str, candidate: Path) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "verify", "--prover", prover, "--template",
                               str(template), "--candidate", str(candidate), "--static-only", "--json"],
                              capture_output=True, text=True, check=False, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert done.returncode in (1, 2), done.stderr
        return dict(json.loads(done.stdout))

    layers = {layer["name"]: layer["reason"] for layer in verify("rocq", broken)["layers"]}
    assert layers["syntax_screen"] == f"{broken}:4: unterminated string", layers
    layers = {layer["name"]: layer["reason"] for layer in verify("coq", renamed)["layers"]}
    assert layers["frozen_statement"] == f"{renamed}:3: `Theorem t` (template line 3) not found in the candidate"
    lean = verify("lean4", broken)   # the Lean pack judges it (this Coq text is no Lean theorem): not a usage error
    assert "usage" not in {layer["name"] for layer in lean["layers"]}, lean


def test_an_unknown_frontend_names_the_installed_ones(fake_suite: pytest.Pytester) -> None:
    result = fake_suite.runpytest("--forall-frontend=claude", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("ERROR: --forall-frontend: no installed frontend is called 'claude'; installed: "
                                 "portfolio, audit, replay, claude-code, codex, opencode (and any a plugin adds)")])


def test_forall_version_names_the_checkout() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "--version"], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.startswith("forall ") and f" from {REPO / 'pytest_forall'} (python " in done.stdout


def test_the_run_is_announced_only_when_one_is_made(fake_suite: pytest.Pytester) -> None:
    """Issue 33, item 4: ``forall: run <id> -> …`` was printed by the test command, by a ``-k`` matching nothing and
    by a refused duplicate id, none of which makes a run. Now only a session that makes (or continues) one says so."""
    base = ["--forall-frontend=fake", "--forall-sandbox=none", "-p", "no:cacheprovider"]
    fake_suite.makepyfile(test_plain="def test_one():\n    assert True\n")
    for args in (["test_plain.py"], ["-k", "nothing_matches"]):
        quiet = fake_suite.runpytest(*base, "--forall-run-id=r1", *args)
        assert "forall: run" not in quiet.stdout.str(), args
    made = fake_suite.runpytest(*base, "--forall-run-id=r1", "-k", "t_strict")
    assert made.ret == 0
    made.stdout.fnmatch_lines([f"forall: run r1 (new) -> {fake_suite.path}/reports/r1"])
    refused = fake_suite.runpytest(*base, "--forall-run-id=r1", "-k", "t_strict")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR and "forall: run r1" not in refused.stdout.str()
    resumed = fake_suite.runpytest(*base, "--forall-resume=r1")
    resumed.stdout.fnmatch_lines([f"forall: run r1 (resume) -> {fake_suite.path}/reports/r1"])


def _forall(*args: str, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_forall.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, check=False, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_report_of_a_damaged_run_says_so_and_exits_1(tmp_path: Path) -> None:
    """Issue 33, item 9: a corrupt or empty results.jsonl gave notes but exit 0 with fewer items than run.json
    selected; a complete JSON line was called "torn"; ``forall report corrupt/nosuch`` named ``corrupt/results.jsonl``."""
    run = tmp_path / "corrupt"
    run.mkdir()
    missing = _forall("report", str(run / "nosuch"))
    assert missing.returncode == 2
    assert missing.stderr == f"forall report: {run / 'nosuch'}: no such run directory or results file\n"
    row = {"nodeid": "s.forall.toml::a[x]", "outcome": "strict", "task_id": "a"}
    (run / "run.json").write_text(json.dumps({"selected": 3, "finished_at": 1.0, "exitstatus": 0}))
    (run / "results.jsonl").write_text(json.dumps(row) + '\n{"a": 1}\n')
    damaged = _forall("report", str(run))
    assert damaged.returncode == 1, damaged.stdout + damaged.stderr
    assert f"note: {run}/results.jsonl:2: skipped a line that is not a results row (JSON without a nodeid and an " \
           "outcome)" in damaged.stdout
    assert damaged.stderr == (f"forall report: {run}: incomplete: {run}/results.jsonl (1 lines of it skipped, above) "
                              "holds results for 1 items, but run.json says the run selected 3: 2 are missing; exit 1\n")
    (run / "results.jsonl").write_text("")
    assert _forall("report", str(run)).returncode == 1
    (run / "run.json").write_text(json.dumps({"selected": 3, "finished_at": 1.0, "exitstatus": 2}))
    interrupted = _forall("report", str(run))
    assert interrupted.returncode == 1 and "--forall-resume corrupt runs them" in interrupted.stderr
    rows = [{**row, "nodeid": f"s.forall.toml::{n}[x]", "task_id": n} for n in "abc"]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    whole = _forall("report", str(run))
    assert whole.returncode == 0 and whole.stderr == "", whole.stderr


def test_a_closed_pipe_still_leaves_the_html_page(tmp_path: Path) -> None:
    """Issue 33, item 8: ``forall report … --html out.html | head`` exited 141 without writing the page."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text('{"nodeid": "s::a", "outcome": "strict", "task_id": "a"}\n')
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = _forall("report", str(run), "--html", str(tmp_path / "out.html"), stdout=writer)
    finally:
        os.close(writer)
    assert done.returncode == 141 and done.stderr == ""
    assert "<html" in (tmp_path / "out.html").read_text()


def test_doctor_finds_putnambench_where_pytest_does(tmp_path: Path) -> None:
    """Issue 33, item 11: ``forall doctor`` looked only at --putnam-root and PUTNAMBENCH_ROOT, not at the default
    pytest uses (``../shared/benchmarks/PutnamBench`` beside the clone, the manifest's ``default_root``)."""
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "pytest_forall", clone / "pytest_forall", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "benchmarks" / "putnam", clone / "benchmarks" / "putnam")
    checkout = tmp_path / "shared" / "benchmarks" / "PutnamBench"
    (checkout / "lean4" / "src").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "PUTNAMBENCH_ROOT"}
    done = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "doctor", "--track", "lean"], cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=300,
                          env={**env, "PYTHONPATH": str(clone), "PATH": "/usr/bin:/bin"})
    assert "PutnamBench" not in done.stdout.split("no usable Lean toolchain")[0], done.stdout
    assert "no usable Lean toolchain" in done.stdout and done.returncode == 2, done.stdout
    (checkout / "lean4" / "src").rmdir()
    gone = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "doctor", "--track", "lean"], cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=300,
                          env={**env, "PYTHONPATH": str(clone), "PATH": "/usr/bin:/bin"})
    assert "forall doctor: PutnamBench's Lean track not found: " in gone.stdout and gone.returncode == 2, gone.stdout


def test_forall_proofs_prints_the_command_that_replays_them(fake_suite: pytest.Pytester) -> None:
    """Issue 33, items 10 and 17: ``forall proofs`` printed a ``-k`` but not the ``--forall-frontend=replay
    --forall-proofs DIR`` (nor the track) it needs. The printed command, run as printed, replays the proofs."""
    import shlex

    base = ["--forall-sandbox=none", "-p", "no:cacheprovider"]
    assert fake_suite.runpytest("--forall-frontend=fake", *base, "--forall-run-id=src").ret == 1
    done = _forall("proofs", str(fake_suite.path / "reports" / "src"), "--out", str(fake_suite.path / "proofs"))
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[-1]
    assert line.startswith("replay them with: pytest . -m fake --forall-frontend=replay --forall-proofs "), line
    words = shlex.split(line.removeprefix("replay them with: "))
    replayed = fake_suite.runpytest(*words[1:], "-p", "no:cacheprovider", "--forall-run-id=again")
    assert replayed.ret == 0
    replayed.stdout.fnmatch_lines(["1 strict, 1 rules_only, 0 failed, 0 infra*(2 items)"])
    readme = (REPO / "README.md").read_text()
    assert "forall proofs reports/<run id> --out proofs/" in readme
    assert "pytest benchmarks/putnam -m coq --forall-frontend=replay --forall-proofs proofs/ -k" in readme


def test_the_cache_line_says_why_without_a_cut_exception() -> None:
    """Issue 33, item 13: a Python exception's text, cut mid-sentence, appeared in the verdict-cache line."""
    from pytest_forall.core.summary import cache_line

    why = ("the rocq environment could not be named: ValueError: the toolchain probe failed: " + "coqc said " * 40)
    line = cache_line([{"outcome": "strict", "uncacheable": why}], "readwrite")
    assert line == ("verdict cache (readwrite): 0 hits, 0 misses, 1 uncacheable (the rocq environment could not be "
                    "named; why: the uncacheable field of results.jsonl)")
    plain = cache_line([{"outcome": "strict", "uncacheable": "the fake backend has no environment fingerprint"}])
    assert plain.endswith("1 uncacheable (the fake backend has no environment fingerprint)")


def test_the_main_job_keeps_each_calls_junit(tmp_path: Path) -> None:
    """Issue 33, item 15: ``scripts/putnam-coq.sh`` always wrote ``reports/putnam-coq.xml``, so an interrupted
    second call replaced the first call's JUnit. Each call now has its own file; ``putnam-coq.xml`` names the latest.
    (setup and pytest are stand-ins here: what is checked is where the script asks pytest to write.)"""
    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True)
    for script in ("putnam-coq.sh", "venv.sh"):
        shutil.copy(REPO / "scripts" / script, clone / "scripts" / script)
    (clone / "scripts" / "setup.sh").write_text("exit 0\n")
    python = clone / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\nwhile [ "$1" != --junitxml ]; do shift; done\necho "<testsuites/>" > "$2"\n')
    python.chmod(0o755)
    for _ in range(2):
        done = subprocess.run(["bash", str(clone / "scripts" / "putnam-coq.sh")], capture_output=True, text=True,
                              check=False, timeout=60, env=_clean_env())
        assert done.returncode == 0, done.stderr
    files = sorted((clone / "reports").glob("putnam-coq-*.xml"))
    assert len(files) == 2, files
    latest = clone / "reports" / "putnam-coq.xml"
    assert latest.is_symlink() and latest.resolve() in files


def _chromium_probe(page: Path, width: int) -> dict[str, Any]:
    """Layout facts of ``page`` as headless Chromium lays it out at ``width`` pixels: a copy of the page with a probe
    script appended (the page itself has none) writes them into the DOM that ``--dump-dom`` prints."""
    import re
    import tempfile

    from conftest import require_tool

    require_tool("chromium")
    probe = page.with_name("probe-" + page.name)
    script = """<script>
const pres = [...document.querySelectorAll('pre')];
const facts = {inner: window.innerWidth, scroll: document.documentElement.scrollWidth,
  preCut: pres.filter(p => p.scrollWidth > p.clientWidth + 1).length, pres: pres.length,
  digests: [...document.querySelectorAll('code.digest')].map(d => [d.textContent.length, d.getClientRects().length]),
  defects: document.querySelectorAll('#defects tr[data-nodeid]').length,
  widest: [...document.body.children].map(e => [e.tagName + '#' + e.id, e.scrollWidth]).sort((a, b) => b[1] - a[1])[0],
  labels: [...document.querySelectorAll('#items a')].map(a => a.textContent)};
const out = document.createElement('div'); out.id = 'probe'; out.textContent = JSON.stringify(facts);
document.body.appendChild(out);
</script>"""
    probe.write_text(page.read_text().replace("</body>", script + "</body>"))
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--window-size={width},900", "--disable-background-networking",
                               "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                               "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<div id="probe">(.*?)</div>', done.stdout)
    assert found, done.stdout[-2000:]
    import html

    return dict(json.loads(html.unescape(found.group(1))))


def test_the_html_page_has_a_defects_table_whole_digests_and_no_horizontal_cut(tmp_path: Path) -> None:
    """Issue 33, item 7: the defects sat in a verbatim block cut off on the right, a certificate was labelled
    "accepted proof", and SHA-256 digests wrapped a few characters per line. Checked in headless Chromium."""
    run = tmp_path / "reports" / "r7"
    item = run / "items" / "putnam_2017_a1-coq"
    (item / "accepted").mkdir(parents=True)
    (item / "derived").mkdir()
    (item / "accepted" / "STATEMENT_VACUOUS.v").write_text("(* certificate *)\n")
    (item / "derived" / "template.v").write_text("(* derived *)\n")
    digest = "ab" * 32
    long_reason = "template: " + "a library this template needs is not installed here " * 8
    rows = [
        {"nodeid": "benchmarks/putnam/putnam.forall.toml::putnam_2017_a1[coq]", "task_id": "putnam_2017_a1",
         "outcome": "vacuous", "stop": "vacuous", "statement_audit": "vacuous", "digest": digest, "prover": "rocq",
         "certificate": "accepted/STATEMENT_VACUOUS.v", "certificate_template": "derived/template.v",
         "audit_dir": str(item), "reason": "vacuous: the hypotheses contradict each other", "frontend": "audit"},
        {"nodeid": "benchmarks/putnam/putnam.forall.toml::putnam_1999_b6[coq]", "task_id": "putnam_1999_b6",
         "outcome": "infra", "stop": "template", "reason": long_reason, "frontend": "audit", "prover": "rocq"}]
    (run / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    page = tmp_path / "reports" / "page.html"
    done = _forall("report", str(run), "--html", str(page))
    assert done.returncode == 0, done.stderr
    for width in (1280, 1024):
        facts = _chromium_probe(page, width)
        assert facts["defects"] == 1, facts
        assert facts["digests"] == [[64, 1]], facts      # the whole digest, on one line
        assert facts["pres"] >= 1 and facts["preCut"] == 0, facts   # nothing of the summary cut off
        assert facts["scroll"] <= facts["inner"], json.dumps(facts)   # the page needs no sideways scrolling
        assert "certificate" in facts["labels"] and "accepted proof" not in facts["labels"], facts


ISO_UTC = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"


def test_run_json_and_rows_carry_readable_times(fake_suite: pytest.Pytester) -> None:
    """Issue 33, item 17: run.json held epoch floats and a result row no time at all. Now every time run.json holds
    is ISO 8601 UTC text (no epoch beside it), and every row says when it was recorded and what its item took in
    wall seconds (through xdist too: tests/test_run_dir.py's first-item test under ``-n 2``)."""
    import re

    iso = re.compile(ISO_UTC)
    commit = "3c9b9268ebd132d482938b8e9d242dd71fc1ebc0"  # the suite is a data copy whose SOURCE.md pins it
    (fake_suite.path / "SOURCE.md").write_text(f"Problems from the public repository (owner/suite), commit {commit}.\n")
    result = fake_suite.runpytest("--forall-frontend=fake", "--forall-sandbox=none", "-p", "no:cacheprovider",
                                  "--forall-run-id=t", "-k", "t_strict or t_rules")
    assert result.ret == 0, result.stdout.str()[-2000:]
    meta = json.loads((fake_suite.path / "reports" / "t" / "run.json").read_text())
    for entry in (meta, *meta["sessions"]):
        assert iso.match(entry["started"]) and iso.match(entry["finished"]), entry
        assert not [k for k, v in entry.items() if isinstance(v, float)], entry  # no epoch left
    rows = [json.loads(line) for line in (fake_suite.path / "reports" / "t" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert iso.match(row["recorded_at"]), row
        assert type(row["wall_s"]) is float and row["wall_s"] >= 0, row
        # where its problem file is upstream, for the findings table of an upstream issue (tests/test_certificates.py)
        assert row["upstream"] == f"https://github.com/owner/suite/blob/{commit}/suite.forall.toml", row


def test_a_run_json_of_epochs_is_still_read_and_resumed(fake_suite: pytest.Pytester,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33, item 17: run.json's times became ISO 8601 text; a run recorded before (epoch floats, ``started_at``
    and ``finished_at``) is still resumed, reported and watched: its sessions are kept as they were, the new session
    is ISO text, and no reader takes the old session's end for the run's."""
    import re

    base = ["--forall-frontend=fake", "--forall-sandbox=none", "-p", "no:cacheprovider", "-k", "t_strict or t_rules"]
    assert fake_suite.runpytest(*base, "--forall-run-id=old").ret == 0
    run = fake_suite.path / "reports" / "old"
    rows = (run / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text(next(r for r in rows if "t_strict" in r) + "\n")  # t_rules never reached
    earlier = 1_700_000_000.0
    session = {"started_at": earlier, "finished_at": earlier + 60, "exitstatus": 2, "selected": 2, "pid": 1,
               "host": "elsewhere", "keyword": "t_strict or t_rules", "markexpr": "", "shard": "", "mode": "new"}
    (run / "run.json").write_text(json.dumps({"run_id": "old", **session, "sessions": [session]}))
    from pytest_forall.cli import main

    def forall(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        status = main(list(args))
        out, err = capsys.readouterr()
        return status, out + err

    status, said = forall("report", str(run))
    assert status == 1 and "incomplete: the run was interrupted" in said, said
    resumed = fake_suite.runpytest(*base, "--forall-resume=old")
    assert resumed.ret == 0, resumed.stdout.str()[-2000:]
    meta = json.loads((run / "run.json").read_text())
    assert meta["sessions"][0] == session  # the older session as it was recorded
    assert re.match(ISO_UTC, meta["sessions"][1]["finished"]) and meta["sessions"][1]["carried"] == 1
    assert "finished_at" not in meta and "started_at" not in meta and re.match(ISO_UTC, meta["finished"]), meta
    assert forall("report", str(run))[0] == 0
    status, said = forall("watch", str(run), "--once")
    assert status == 0 and "(finished)" in said, said
    page = fake_suite.path / "page.html"
    assert forall("report", str(run), "--html", str(page))[0] == 0
    assert "2023-11-14 22:13 UTC" in page.read_text()  # the run's first start, from the older session's epoch
    refused = fake_suite.runpytest(*base, "--forall-run-id=old")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*run old already exists (*, finished *, exit 0)*"])
