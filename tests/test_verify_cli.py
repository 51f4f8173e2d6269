"""`forall verify` end to end: the cheat/valid corpus, CLI robustness, and agreement with the pytest items.

The corpus lives in ``tests/cheats/{valid,cheat}/<name>/`` with ``template`` (a file naming a PutnamBench
problem relative to the checkout, or the template itself), ``candidate.v`` and ``expect.json``
(``verdict``, for cheats the first ``layer`` that must reject, for valid proofs ``strict``). A held-out
corpus is run the same way, so every entry goes through the command line in a subprocess: ``forall verify``'s own
``main`` (argv in; stdout, stderr and exit code out), one call per entry, in one process per worker (a process per
entry cost 0.45 s of CPU in imports and toolchain probes, most of a statically rejected entry's cost); the usage
errors, hostile candidate files and the replay's comparison go through the same process. The other tests after the corpus start a process
per call: the installed script, relative paths, the human output, the exits of a run.
Rocq entries run the real ``coqc``/``coqchk``.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PUTNAM, require_tool
from pytest_forall.core.model import sha256_bytes

CORPUS = Path(__file__).resolve().parent / "cheats"
ENTRIES = sorted(p for p in CORPUS.glob("*/*") if (p / "expect.json").is_file())
#: ``python -m pytest_forall.core.verify`` is ``forall verify`` without the other subcommands' imports (mcp …),
#: which would cost more than a second per candidate; one test below uses the ``forall`` script itself.
VERIFY = [sys.executable, "-m", "pytest_forall.core.verify"]


def verify(*args: str, cwd: Path | None = None, command: list[str] | None = None,
           timeout: float = 600) -> tuple[int, dict, str]:
    env = {**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)}
    proc = subprocess.run([*(command or VERIFY), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    try:
        data = json.loads(proc.stdout) if "--json" in args else {}
    except json.JSONDecodeError:
        pytest.fail(f"--json printed no JSON (exit {proc.returncode}): {proc.stdout[-800:]} {proc.stderr[-800:]}")
    return proc.returncode, data, proc.stderr


#: The corpus's process: each stdin line is one ``forall verify`` argv (JSON), answered by one line on the
#: process's own stdout with the exit code and what ``main`` printed; a prover's child writing to fd 1 lands on
#: stderr instead, so it cannot corrupt an answer.
DRIVER = """
import contextlib, io, json, os, sys
from pytest_forall.core.verify import main
answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
for line in sys.stdin:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(json.loads(line))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    answers.write(json.dumps({"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}) + "\\n")
    answers.flush()
"""


class Driver:
    """One ``forall verify`` process for many calls (see :data:`DRIVER`); one that died or hung is replaced before
    the next call, so a failing entry fails alone."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        env = {**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)}
        self.proc = subprocess.Popen([sys.executable, "-c", DRIVER], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.answers), daemon=True).start()

    @staticmethod
    def _read(proc: subprocess.Popen[str], answers: queue.Queue[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            answers.put(line)
        answers.put("")  # the process ended

    def __call__(self, *args: str, timeout: float = 600) -> tuple[int, dict, str]:
        if self.proc.poll() is not None:
            self._start()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(list(args)) + "\n")
        self.proc.stdin.flush()
        try:
            line = self.answers.get(timeout=timeout)
        except queue.Empty:
            self.proc.terminate()  # forall verify's SIGTERM handling kills its provers' process groups
            self.close()
            pytest.fail(f"forall verify {' '.join(args)} did not answer in {timeout:.0f} s")
        if not line:
            pytest.fail(f"the forall verify process ended (exit {self.proc.wait()}) on {' '.join(args)}")
        answer = json.loads(line)
        try:
            data = json.loads(answer["stdout"]) if "--json" in args else {}
        except json.JSONDecodeError:
            pytest.fail(f"--json printed no JSON (exit {answer['rc']}): {answer['stdout'][-800:]} "
                        f"{answer['stderr'][-800:]}")
        return answer["rc"], data, answer["stderr"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def corpus_verify() -> Iterator[Driver]:
    driver = Driver()
    yield driver
    driver.close()


def first_failure(verdict: dict) -> str | None:
    return next((layer["name"] for layer in verdict["layers"] if layer["ok"] is False or layer["infra"]), None)


@pytest.mark.parametrize("entry", ENTRIES, ids=[f"{p.parent.name}/{p.name}" for p in ENTRIES])
def test_corpus_entry(entry: Path, corpus_verify: Driver) -> None:
    expect = json.loads((entry / "expect.json").read_text())
    if expect.get("prover", "rocq") == "rocq":
        require_tool("coqc")
    candidate = next(entry.glob("candidate.*"))
    budget = ["--checker-timeout", str(expect["checker_timeout"])] if "checker_timeout" in expect else []
    rc, verdict, stderr = corpus_verify("--prover", expect.get("prover", "rocq"), "--template",
                                        str(entry / "template"), "--candidate", str(candidate), "--json", *budget)
    assert verdict["verdict"] == expect["verdict"], (verdict["reason"], stderr[-500:])
    assert rc == {"accept": 0, "reject": 1, "infra": 2}[expect["verdict"]]
    where = expect.get("in_force")  # an exploit the kernel refuses where its advisory is not in force
    if where and where["advisory"] in verdict["kernel"]["advisories"]:
        expect = {**expect, "layer": where["layer"], "advisory": where["advisory"]}
    if expect.get("prover", "rocq") == "rocq":  # every verdict names its kernel and the advisories in force
        assert verdict["kernel"]["version"].count(".") >= 1 and "rocq#22389" in verdict["kernel"]["advisories"]
        # issue 31: and how each is kept out of an accepted proof, one coverage per advisory
        assert set(verdict["kernel"]["coverage"]) == set(verdict["kernel"]["advisories"])
        assert verdict["kernel"]["coverage"]["rocq#21051"].startswith("detector (functor): kernel_advisories")
    if "advisory" in expect:  # issue 22: the advisory the exploit needs is named in the reason
        assert expect["advisory"] in verdict["reason"], verdict["reason"]
    assert verdict["digest"] == sha256_bytes(candidate.read_bytes())
    assert {"verdict", "strict", "digest", "layers"} <= set(verdict)
    assert all({"name", "ok", "reason"} <= set(layer) for layer in verdict["layers"])
    if expect["verdict"] in ("reject", "infra"):
        assert first_failure(verdict) == expect["layer"], verdict["reason"]
        assert verdict["strict"] is False
    else:
        assert verdict["strict"] is expect["strict"], verdict["layers"][-2]
        names = [layer["name"] for layer in verdict["layers"]]
        assert names == ["syntax_screen", "frozen_statement", "shadowing_guard", "template", "elaboration",
                         "sentence_structure", "elaborated_statement", "axiom_audit", "kernel_advisories",
                         "independent_check"]
        check = verdict["layers"][-1]
        assert check["ok"] is True and check["checker"] == "coqchk" and "-norec" in check["argv"]
        # the audit record states the guarantee this acceptance got, one clause per kernel-side layer
        assert [g.split(":")[0] for g in verdict["guarantee"]] == ["kernel statement", "assumptions",
                                                                   "kernel advisories", "independent check"]


def test_corpus_covers_the_classes() -> None:
    cheats = [json.loads((p / "expect.json").read_text()) for p in ENTRIES if p.parent.name == "cheat"]
    layers = {c["layer"] for c in cheats}
    assert {"syntax_screen", "frozen_statement", "shadowing_guard", "sentence_structure"} <= layers
    valid = [json.loads((p / "expect.json").read_text()) for p in ENTRIES if p.parent.name == "valid"]
    assert any(v["strict"] is False for v in valid) and sum(v["strict"] for v in valid) >= 8
    # issue 14's red team: 30+ attacks beyond the earlier classes, 15+ honest but unusual proofs
    assert sum(c.get("issue") == 14 for c in cheats) >= 30 and sum(v.get("issue") == 14 for v in valid) >= 15
    # issue 22: an exploit for each advisory of the installed kernel that reproduces, and honest recursion
    from pytest_forall.lang.rocq.advisories import ADVISORIES
    exploited = {c["advisory"] for c in cheats if c.get("issue") == 22 and "advisory" in c}
    assert {"rocq#20413", "rocq#20455", "rocq#22386", "rocq#22389", "rocq#19402", "rocq#22378"} <= exploited
    assert exploited <= {a.id for a in ADVISORIES}
    assert sum(v.get("issue") == 22 for v in valid) >= 3


KERNEL_SIDE = [p for p in ENTRIES if json.loads((p / "expect.json").read_text()).get("kernel_layer")]


@pytest.mark.parametrize("entry", KERNEL_SIDE, ids=[p.name for p in KERNEL_SIDE])
def test_corpus_cheat_is_caught_prover_side_with_the_static_screen_off(entry: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: with the static layers off, the layers after compilation still reject (``kernel_layer``)."""
    from shared_builds import SharedBuilds

    from pytest_forall.core.model import Layer
    from pytest_forall.core.verify import resolve_template, task_from_template, verify_candidate

    class NoStatic(SharedBuilds):
        #: layers one after another: the same verdict and layers, without a coqchk run in vain beside a rejected
        #: cheat (the corpus above runs them concurrently, as `forall verify` does); a candidate another test of
        #: this process compiled (tests/test_judge.py's advisory exploits) is not compiled again
        concurrent_layers = False

        def static_layers(self, task: object, text: str) -> list[Layer]:
            return []

    require_tool("coqc")
    expect = json.loads((entry / "expect.json").read_text())
    monkeypatch.setenv("PUTNAMBENCH_ROOT", str(PUTNAM))  # the corpus's one-line template pointers resolve there
    task = task_from_template("rocq", resolve_template(entry / "template"))
    verdict = verify_candidate(task, NoStatic(), (entry / "candidate.v").read_bytes(), builddir=tmp_path)
    assert verdict.verdict == "reject", verdict.layers
    assert next(layer.name for layer in verdict.layers if layer.ok is False) == expect["kernel_layer"], verdict.reason


# --- command-line robustness -------------------------------------------------------------------------

A1 = CORPUS / "valid" / "putnam_2001_a1" / "candidate.v"
A1_TEMPLATE = PUTNAM / "coq" / "src" / "putnam_2001_a1.v"


def test_forall_script_relative_paths_and_pointer_template(tmp_path: Path) -> None:
    """The installed ``forall`` entry point, run from another directory with relative paths."""
    require_tool("coqc")
    forall = shutil.which("forall")
    assert forall, "the forall script is not installed (pip install -e .)"
    (tmp_path / "t").mkdir()
    shutil.copy(A1_TEMPLATE, tmp_path / "t" / "putnam_2001_a1.v")
    shutil.copy(A1, tmp_path / "proof.v")
    rc, verdict, _ = verify("--prover", "rocq", "--template", "t/putnam_2001_a1.v", "--candidate", "proof.v",
                            "--json", cwd=tmp_path, command=[forall, "verify"])
    assert (rc, verdict["verdict"], verdict["strict"]) == (0, "accept", True)
    (tmp_path / "pointer").write_text("t/putnam_2001_a1.v\n")  # a one-line file naming the template
    rc, verdict, _ = verify("--prover", "rocq", "--template", str(tmp_path / "pointer"), "--candidate",
                            str(tmp_path / "proof.v"), "--json", "--static-only")
    assert (rc, verdict["verdict"]) == (0, "accept")


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_relative_cache_dir_works_sandboxed_or_not(tmp_path: Path, sandbox: str) -> None:
    """The judge's plugin is found from a relative ``--cache-dir`` too (unsandboxed, coqc runs in a scratch
    directory and reads the plugin's path from OCAMLPATH: a relative one pointed nowhere, and every verdict was
    infra)."""
    require_tool("coqc")
    if sandbox == "bwrap":
        require_tool("bwrap")
    rc, verdict, _ = verify("--prover", "rocq", "--template", str(A1_TEMPLATE), "--candidate", str(A1), "--json",
                            "--sandbox", sandbox, "--cache-dir", "relative-cache", cwd=tmp_path)
    assert (rc, verdict["verdict"], verdict["strict"]) == (0, "accept", True), verdict
    assert (tmp_path / "relative-cache").is_dir()


@pytest.mark.parametrize("case", ["missing_candidate", "candidate_is_dir", "missing_template", "no_theorem",
                                  "binary_template"])
def test_usage_and_template_problems_exit_2_with_an_infra_verdict(tmp_path: Path, case: str,
                                                                   corpus_verify: Driver) -> None:
    template, candidate = A1_TEMPLATE, A1
    if case == "missing_candidate":
        candidate = tmp_path / "nope.v"
    elif case == "candidate_is_dir":
        candidate = tmp_path
    elif case == "missing_template":
        template = tmp_path / "nope.v"
    elif case == "no_theorem":
        template = tmp_path / "x.v"
        template.write_text("Require Import Arith.\nDefinition x := 1.\n")
    elif case == "binary_template":
        template = tmp_path / "x.v"
        template.write_bytes(b"\xff\xfe\x00garbage")
    rc, verdict, stderr = corpus_verify("--prover", "rocq", "--template", str(template), "--candidate",
                                        str(candidate), "--json")
    assert rc == 2 and verdict["verdict"] == "infra" and verdict["strict"] is False, stderr


@pytest.mark.parametrize("case", ["empty", "binary", "huge", "nul_byte", "bom_in_middle", "latin1"])
def test_hostile_candidate_files_are_rejected(tmp_path: Path, case: str, corpus_verify: Driver) -> None:
    text = A1.read_bytes()
    data = {"empty": b"", "binary": bytes(range(256)) * 4, "huge": text + b"(*" + b"x" * 3_000_000 + b"*)\n",
            "nul_byte": text.replace(b"intros a b.", b"intros a\x00 b."),
            "bom_in_middle": text.replace(b"intros a b.", "intros a \ufeffb.".encode()),
            "latin1": text + "(* caf\xe9 *)".encode("latin-1")}[case]
    candidate = tmp_path / "c.v"
    candidate.write_bytes(data)
    rc, verdict, _ = corpus_verify("--prover", "rocq", "--template", str(A1_TEMPLATE), "--candidate", str(candidate),
                                   "--json")
    assert (rc, verdict["verdict"]) == (1, "reject") and verdict["digest"] == sha256_bytes(data)


def test_theorem_override_and_human_output(tmp_path: Path) -> None:
    rc, _, _ = verify("--prover", "rocq", "--template", str(A1_TEMPLATE), "--candidate", str(A1),
                      "--static-only", "--theorem", "putnam_other")
    assert rc == 1
    proc = subprocess.run([*VERIFY, "--prover", "rocq", "--template", str(A1_TEMPLATE), "--candidate", str(A1),
                           "--static-only"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "verdict: accept" in proc.stdout


# --- forall verify and the pytest items agree --------------------------------------------------------

REPLAYED = {  # task id -> corpus entry whose candidate is stored as <task id>.v
    "putnam_2001_a1": "valid/putnam_2001_a1",
    "putnam_2008_a1": "valid/putnam_2008_a1",
    "putnam_2000_a2": "cheat/axiom_false",          # a candidate for another problem: rejected statically
    "putnam_2005_a5": "cheat/answer_tampered",
    "putnam_2000_b4": "cheat/definition_shadows_library",
}


def test_replay_items_and_forall_verify_agree(pytester: pytest.Pytester, tmp_path: Path,
                                              corpus_verify: Driver) -> None:
    """Same candidates through `pytest --forall-frontend=replay` and `forall verify`: same outcome and digest;
    the summary counts coqchk acceptances over judged candidates."""
    require_tool("coqc")
    root, proofs = tmp_path / "PutnamBench", tmp_path / "proofs"
    (root / "coq" / "src").mkdir(parents=True)
    proofs.mkdir()
    for task_id, entry in REPLAYED.items():
        shutil.copy(PUTNAM / "coq" / "src" / f"{task_id}.v", root / "coq" / "src" / f"{task_id}.v")
        shutil.copy(CORPUS / entry / "candidate.v", proofs / f"{task_id}.v")
    pytester.makefile(".forall.toml", putnam='adapter = "putnam"\ntracks = ["coq"]\n[budget]\nsamples = 1\n'
                                             'rounds = 1\n')
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--forall-frontend=replay",
        f"--forall-proofs={proofs}", f"--forall-putnam-root={root}", "--forall-run-id=eq",
        f"--forall-cache-dir={Path(tempfile.gettempdir()) / 'pytest-forall-cache'}", timeout=600)
    rows = {json.loads(line)["task_id"]: json.loads(line)
            for line in (pytester.path / "reports" / "eq" / "results.jsonl").read_text().splitlines()}
    assert set(rows) == set(REPLAYED)
    outcome_of = {("accept", True): "strict", ("accept", False): "rules_only", ("reject", False): "failed",
                  ("infra", False): "infra"}
    for task_id in REPLAYED:
        _, verdict, _ = corpus_verify("--prover", "rocq", "--template", str(root / "coq" / "src" / f"{task_id}.v"),
                                       "--candidate", str(proofs / f"{task_id}.v"), "--json")
        row = rows[task_id]
        assert row["outcome"] == outcome_of[verdict["verdict"], verdict["strict"]], (task_id, row["reason"])
        if verdict["verdict"] == "accept":
            assert row["digest"] == verdict["digest"] == sha256_bytes((proofs / f"{task_id}.v").read_bytes())
            assert row["independent"] is True
        else:
            assert row["reason"].startswith(first_failure(verdict)), (row["reason"], verdict["reason"])
    result.stdout.fnmatch_lines(["*2 strict, 0 rules_only, 3 failed, 0 infra, 0 statement_false*",
                                 "*independent check: 2/2 judged accepted, 0 accepted not judged*"])
