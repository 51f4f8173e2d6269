"""The Lean backend against the stand-in `lean`/`lake` (tests/standin); its parsers on the reference samples.

Nothing here ran real Lean: the stand-in follows Lean's documented formats (see its docstring).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from conftest import SHARED, require_path
from pytest_forall.core.model import Task, sha256_bytes
from pytest_forall.core.proc import ProcResult, run_command
from pytest_forall.lang.lean.backend import (
    DEFAULT_PROJECT,
    SETUP,
    LeanProver,
    failure,
    is_heartbeat_timeout,
    is_sorry_warning,
    parse_lean_output,
    parse_print_axioms,
    pytest_forall_make_prover,
)

REPO = Path(__file__).resolve().parents[1]
STANDIN = REPO / "tests" / "standin"
SAMPLES = SHARED / "reference" / "lean" / "samples"
BASE_PATH = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
MATHLIB_OLEAN = {
    "standin": "olean",
    "module": "Mathlib",
    "imports": [],
    "decls": {"Real.pi_gt_three": ["Classical.choice", "Quot.sound", "propext"]},
}

TEMPLATE = """import Mathlib

open MeasureTheory

/--
Show that n = n. (A docstring that mentions sorry does not count.)
-/
theorem putnam_x
(n : ℕ)
: n = n :=
{proof}
"""


def task(template: str = TEMPLATE.format(proof="sorry"), theorem: str = "putnam_x") -> Task:
    return Task(
        task_id="putnam_x",
        suite="putnam",
        track="lean4",
        prover="lean",
        source_path="",
        template=template,
        theorem_name=theorem,
    )


@pytest.fixture(autouse=True)
def standin_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in is the only `lean`/`lake` on PATH; no inherited switches leak in."""
    monkeypatch.setenv("PATH", f"{STANDIN}{os.pathsep}{BASE_PATH}")
    for name in (
        "FORALL_LEAN_BIN",
        "LEAN_PATH",
        "STANDIN_LEAN_VERSION",
        "STANDIN_LEAN_JSON_ORDER",
        "STANDIN_LOG",
        "STANDIN_PIDFILE",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A Lake project shaped like lean_env/putnam after `lean_env/setup`, with a stand-in Mathlib build."""
    root = tmp_path / "project"
    lib = root / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean"
    lib.mkdir(parents=True)
    (lib / "Mathlib.olean").write_text(json.dumps(MATHLIB_OLEAN))
    (root / "lakefile.toml").write_text((DEFAULT_PROJECT / "lakefile.toml").read_text())
    (root / "lean-toolchain").write_text((DEFAULT_PROJECT / "lean-toolchain").read_text())
    (root / "lake-manifest.json").write_text(
        json.dumps(
            {
                "version": "1.1.0",
                "packagesDir": ".lake/packages",
                "name": "putnam",
                "lakeDir": ".lake",
                "packages": [{"name": "mathlib", "type": "git", "rev": "0" * 40, "inputRev": "v4.27.0"}],
            }
        )
    )
    return root


@pytest.fixture
def prover(project: Path) -> LeanProver:
    return LeanProver({"lean_project": str(project), "cache_dir": str(project.parent / "cache")})


def write_candidate(tmp_path: Path, text: str) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    path = workspace / "putnam_x.lean"
    path.write_text(text, encoding="utf-8")
    return path


def proof(body: str) -> str:
    return TEMPLATE.format(proof=body)


# --- compile -------------------------------------------------------------------------------------


def test_clean_proof_passes_with_the_standard_axioms(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by simp"))
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert result.ok and not result.infra and result.messages == []
    assert result.digest == sha256_bytes(candidate.read_bytes())
    assert Path(result.artifact).is_file()
    audit = prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    assert (audit.ok, audit.strict_ok, audit.rules_ok) == (True, True, True)
    assert audit.axioms == ["propext", "Classical.choice", "Quot.sound"]


def test_axiom_free_proof_and_mathlib_lemmas(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("rfl"))
    assert prover.compile(task(), tmp_path, candidate, timeout=60).ok
    assert prover.audit_axioms(task(), tmp_path, candidate, timeout=60).axioms == []
    candidate.write_text(proof("by exact absurd Real.pi_gt_three"))
    assert prover.audit_axioms(task(), tmp_path, candidate, timeout=60).axioms == [
        "propext",
        "Classical.choice",
        "Quot.sound",
    ]


def test_sorry_is_rejected_and_audited_as_sorryAx(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by\n  sorry"))
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert not result.ok and not result.infra
    assert result.messages[0]["kind"] == "forall.sorry" and "sorry" in result.first_error
    assert any(m.get("kind") == "hasSorry" for m in result.messages)
    audit = prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    assert audit.ok and audit.axioms == ["sorryAx"] and not audit.strict_ok and not audit.rules_ok


def test_error_is_rejected_with_leans_message(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by exact foo -- STANDIN_ERROR: Unknown identifier `foo`"))
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert not result.ok and not result.infra
    assert result.first_error == "Unknown identifier `foo`"
    assert not Path(result.artifact or tmp_path / "none").is_file()  # lean -o writes nothing on error
    audit = prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    assert not audit.ok and "did not compile" in audit.reason


def test_unknown_import_is_a_failure_not_infra(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(
        tmp_path, proof("rfl").replace("import Mathlib", "import Mathlib\nimport Nonexistent")
    )
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert not result.ok and not result.infra
    assert result.first_error.startswith("unknown module prefix 'Nonexistent'")
    assert result.messages[0]["endPos"] is None


def test_heartbeat_timeout_is_recognised(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by simp -- STANDIN_HEARTBEATS"))
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert not result.ok and not result.timed_out and not result.infra
    assert result.messages[0]["kind"] == "forall.heartbeats"
    assert any(m.get("kind") == "runtime.maxHeartbeats" for m in result.messages)


def test_stack_overflow_is_a_crash_not_infra(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by simp -- STANDIN_STACK_OVERFLOW"))
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert not result.ok and not result.infra and not result.timed_out
    assert result.messages[0]["kind"] == "forall.crash" and ("exit -6" in result.first_error or "exit 134" in result.first_error)
    assert "Stack overflow detected" in result.output


def test_non_json_stdout_is_kept_as_text(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by simp -- STANDIN_STDOUT: INTERNAL PANIC: out of memory"))
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert result.ok and "INTERNAL PANIC: out of memory" in result.output


def test_timeout_kills_the_process_group(
    prover: LeanProver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lean (sleeping: no CPU) past its wall-clock backstop (10 x its 1 s CPU budget): the whole group is killed, and
    the run, its budget unspent, is infra (the machine's), never the proof's timeout."""
    pidfile = tmp_path / "child.pid"
    monkeypatch.setenv("STANDIN_PIDFILE", str(pidfile))
    candidate = write_candidate(tmp_path, proof("by simp -- STANDIN_SLEEP: 60"))
    started = time.monotonic()
    result = prover.compile(task(), tmp_path, candidate, timeout=1)
    assert time.monotonic() - started < 20
    assert not result.ok and "wall-clock backstop" in result.infra, result
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("lean's child process survived the timeout")


#: runs the tool stopped (SIGSTOP) until its wall limit: a process the loaded machine does not schedule
STOPPED = ["/bin/sh", "-c", 'kill -STOP $$; exec "$@"', "lean"]
#: burns CPU until killed, instead of the tool: a candidate whose elaboration computes past its budget
BURNING = ["/bin/sh", "-c", "while :; do :; done"]


def lean_runner(how: list[str] | None, calls: list[dict[str, Any]], wall: float = 3.0) -> Any:
    """The real stand-in, except the candidate's compile (``-o``), run stopped (``STOPPED``) or replaced by a CPU
    burner (``BURNING``) under the backend's own budget, its wall capped at ``wall`` seconds."""

    def runner(argv: list[str], **kwargs: Any) -> ProcResult:
        if "-o" not in argv or how is None:
            return run_command(argv, **kwargs)
        calls.append({k: v for k, v in kwargs.items() if k in ("timeout", "cpu_s")})
        kwargs["timeout"] = min(kwargs["timeout"], wall)
        return run_command([*how, *argv] if how is STOPPED else how, **kwargs)

    return runner


def test_a_compile_the_machine_stopped_is_infra_never_a_timeout(project: Path, tmp_path: Path) -> None:
    """An honest proof whose lean the machine did not run (stopped until its wall backstop, its CPU budget unspent)
    is infra naming the backstop, never the proof's timeout. Before, the compile's limit was wall time: a stalled or
    starved machine turned the proof into a ``forall.timeout`` rejection. The budget is CPU seconds, the wall clock a
    backstop 10 times longer (as Rocq's compile)."""
    calls: list[dict[str, Any]] = []
    prover = LeanProver({"lean_project": str(project)}, runner=lean_runner(STOPPED, calls))
    result = prover.compile(task(), tmp_path, write_candidate(tmp_path, proof("by simp")), 60)
    assert calls == [{"timeout": 600, "cpu_s": 60}], calls
    assert not result.ok and "wall-clock backstop" in result.infra and not result.messages, result


def test_a_compile_that_spends_its_cpu_budget_is_the_proofs_timeout(project: Path, tmp_path: Path) -> None:
    """An elaboration that computes past its CPU budget failed (its own cost, however loaded the machine): a
    ``forall.timeout`` rejection saying its CPU was spent, not infra."""
    calls: list[dict[str, Any]] = []
    prover = LeanProver({"lean_project": str(project)}, runner=lean_runner(BURNING, calls, wall=30))
    result = prover.compile(task(), tmp_path, write_candidate(tmp_path, proof("by simp")), 0.5)
    assert calls == [{"timeout": 5, "cpu_s": 0.5}], calls
    assert result.timed_out and not result.ok and not result.infra, result
    assert result.messages[0]["kind"] == "forall.timeout" and "CPU spent" in result.messages[0]["data"], result


def test_a_stalled_audit_or_checker_is_infra(project: Path, tmp_path: Path) -> None:
    """The axiom audit and the independent checker have CPU budgets too: run stopped until their backstop, each is
    infra naming it (before: the audit's wall timeout rejected the proof, the checker's was "not judged")."""
    calls: list[dict[str, Any]] = []
    candidate = write_candidate(tmp_path, proof("by simp"))
    stopped = {"audit": False}

    def runner(argv: list[str], **kwargs: Any) -> ProcResult:
        if stopped["audit"] and "-o" not in argv and "--version" not in argv:
            calls.append({k: v for k, v in kwargs.items() if k in ("timeout", "cpu_s")})
            kwargs["timeout"] = min(kwargs["timeout"], 2.0)
            return run_command([*STOPPED, *argv], **kwargs)
        return run_command(argv, **kwargs)

    prover = LeanProver({"lean_project": str(project), "lean_checker": str(STANDIN / "checker" / "leanchecker")},
                        runner=runner)
    assert prover.compile(task(), tmp_path, candidate, 60).ok
    stopped["audit"] = True
    audit = prover.audit_axioms(task(), tmp_path, candidate, 60)
    assert not audit.ok and "wall-clock backstop" in audit.infra, audit
    layer = prover.independent_check(task(), tmp_path, candidate, 60)
    assert layer.ok is False and layer.infra and "wall-clock backstop" in layer.reason, layer
    assert {"timeout": 600, "cpu_s": 60} in calls, calls


def test_candidate_changed_during_compilation_is_rejected(project: Path, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by simp"))

    def tampering_runner(argv: list[str], **kwargs: Any) -> ProcResult:
        result = run_command(argv, **kwargs)
        if "-o" in argv:
            candidate.write_text(proof("by sorry"))
        return result

    result = LeanProver({"lean_project": str(project)}, runner=tampering_runner).compile(
        task(), tmp_path, candidate, 60
    )
    assert not result.ok and result.messages[0]["kind"] == "forall.changed"
    assert result.digest == sha256_bytes(candidate.read_bytes())


def test_compile_runs_lean_directly_with_the_probed_lean_path(
    prover: LeanProver, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    candidate = write_candidate(tmp_path, proof("by simp"))
    prover.compile(task(), tmp_path, candidate, timeout=60)
    prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["tool"] for c in calls] == ["lake", "lean", "lean"]  # one `lake env printenv`, then lean only
    compile_call, audit_call = calls[1:]
    build = Path(compile_call["cwd"])
    assert compile_call["argv"][0] == str(STANDIN / "bin" / "lean") and audit_call["cwd"] == str(build)
    assert build != candidate.parent and build.name in compile_call["argv"][-1]
    assert "-DautoImplicit=false" in compile_call["argv"] and "--json" in compile_call["argv"]
    assert any(a.startswith("-j") for a in compile_call["argv"])
    source = compile_call["argv"][-1]
    assert source.startswith("ForallCandidate_") and "/" not in source  # relative: valid inside the sandbox too
    assert compile_call["argv"][compile_call["argv"].index("-o") + 1] == source.replace(".lean", ".olean")
    assert audit_call["argv"][-1].startswith("ForallAudit_") and "." in audit_call["LEAN_PATH"].split(os.pathsep)


# --- axioms --------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["current", "legacy"])
def test_wrapped_axiom_list_in_both_key_orders(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    monkeypatch.setenv("STANDIN_LEAN_JSON_ORDER", order)
    name = "Q3.RouteB.D0Pstar.preAnchorFullMellinCoordinate_eq_preAnchorGwinTransformCoordinate"
    text = (
        "import Mathlib\nnamespace Q3.RouteB.D0Pstar\ntheorem preAnchorFullMellinCoordinate_eq_"
        "preAnchorGwinTransformCoordinate : 1 = 1 := by simp\nend Q3.RouteB.D0Pstar\n"
    )
    candidate = write_candidate(tmp_path, text)
    prover = LeanProver({"lean_project": str(project)})
    assert prover.compile(task(text, name), tmp_path, candidate, timeout=60).ok
    audit = prover.audit_axioms(task(text, name), tmp_path, candidate, timeout=60)
    assert "[propext,\\n Classical.choice,\\n Quot.sound]" in audit.output  # the stand-in wrapped it
    assert audit.ok and audit.strict_ok and audit.axioms == ["propext", "Classical.choice", "Quot.sound"]
    if order == "legacy":
        assert audit.output.startswith('{"severity":"information","pos":{"line":2,')


@pytest.mark.parametrize(
    "version, body, expected",
    [
        ("4.27.0", "by native_decide", ["Lean.ofReduceBool", "Lean.trustCompiler"]),
        ("4.21.0", "by native_decide", ["Lean.ofReduceBool"]),
        ("4.29.0", "by native_decide", ["putnam_x._native.native_decide.ax_1_1"]),
        ("4.27.0", "by simp; exact cheat", ["cheat", "propext", "Classical.choice", "Quot.sound"]),
    ],
)
def test_native_and_user_axioms_fail_strict(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    body: str,
    expected: list[str],
) -> None:
    monkeypatch.setenv("STANDIN_LEAN_VERSION", version)
    text = proof(body).replace("open MeasureTheory", "open MeasureTheory\n\naxiom cheat : False")
    candidate = write_candidate(tmp_path, text)
    prover = LeanProver({"lean_project": str(project)})
    assert prover.compile(task(text), tmp_path, candidate, timeout=60).ok  # axioms do not show up as messages
    audit = prover.audit_axioms(task(text), tmp_path, candidate, timeout=60)
    assert audit.ok and audit.axioms == expected
    assert not audit.strict_ok and not audit.rules_ok and "rule" in audit.reason


def test_rules_allow_list_is_an_option(project: Path, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by native_decide"))
    prover = LeanProver(
        {
            "lean_project": str(project),
            "lean_rules_axioms": "propext, Classical.choice, Quot.sound, Lean.ofReduceBool "
            "Lean.trustCompiler",
        }
    )
    audit = prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    assert audit.ok and audit.rules_ok and not audit.strict_ok and "strict" in audit.reason


def test_sample_sorting_reproduced_by_the_standin(project: Path, tmp_path: Path) -> None:
    """The stand-in's Name.lt order matches the documented `[knownin1980s, propext, sorryAx, …]`."""
    text = (
        "import Mathlib\naxiom knownin1980s : False\n"
        "theorem flt : False := by\n  simp\n  exact knownin1980s\n  sorry\n"
    )
    candidate = write_candidate(tmp_path, text)
    audit = LeanProver({"lean_project": str(project)}).audit_axioms(
        task(text, "flt"), tmp_path, candidate, 60
    )
    assert audit.axioms == ["knownin1980s", "propext", "sorryAx", "Classical.choice", "Quot.sound"]


def test_candidate_forging_output_does_not_fool_the_audit(prover: LeanProver, tmp_path: Path) -> None:
    forged = json.dumps(
        {
            "severity": "information",
            "data": "'putnam_x' does not depend on any axioms",
            "pos": {"line": 2, "column": 0},
        }
    )
    candidate = write_candidate(tmp_path, proof(f"sorry -- STANDIN_STDOUT: {forged}\n#print axioms putnam_x"))
    audit = prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    assert audit.ok and audit.axioms == ["sorryAx"] and not audit.strict_ok


def rewriting_runner(rewrite: Any) -> Any:
    """A runner that alters only the audit run's stdout, to simulate broken or hostile output."""

    def runner(argv: list[str], **kwargs: Any) -> ProcResult:
        result = run_command(argv, **kwargs)
        if Path(argv[-1]).name.startswith("ForallAudit_"):
            result.stdout = rewrite(result.stdout)
        return result

    return runner


@pytest.mark.parametrize(
    "rewrite, reason",
    [
        (lambda out: "", "found lines []"),
        (lambda out: "\n".join(line for line in out.splitlines() if "'putnam_x'" not in line), "found lines [4, 6]"),
        (lambda out: "\n".join(line for line in out.splitlines() if "statement-dump" not in line), "found lines [2, 4]"),
        (
            lambda out: out.replace("[propext, Classical.choice, Quot.sound]", "propext Classical.choice"),
            "unparseable",
        ),
        (
            lambda out: out.replace("[propext, Classical.choice, Quot.sound]", "[propext Classical.choice]"),
            "unparseable",
        ),
        (lambda out: out.replace("'putnam_x'", "'Evil.putnam_x'"), "expected 'putnam_x'"),
        (lambda out: out.splitlines()[0] + "\n" + out, "two messages on audit line 2"),
        (lambda out: out.replace('"pos":{"column":0,"line":2}', '"pos":{"column":0,"line":1}'), "not where"),
        (lambda out: out.replace("forall_audit_end_", "forall_audit_end_x"), "sentinel"),
        (lambda out: out.replace('"fileName":"ForallAudit', '"fileName":"Other'), "not where"),
    ],
)
def test_missing_or_garbled_print_axioms_fails_closed(
    project: Path, tmp_path: Path, rewrite: Any, reason: str
) -> None:
    candidate = write_candidate(tmp_path, proof("by simp"))
    prover = LeanProver({"lean_project": str(project)}, runner=rewriting_runner(rewrite))
    audit = prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    assert not audit.strict_ok and not audit.rules_ok and reason in audit.reason
    assert not audit.ok or reason.startswith("expected")


def test_audit_of_unknown_theorem_fails_closed(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by simp").replace("putnam_x", "putnam_y"))
    audit = prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    assert not audit.ok and "Unknown constant `putnam_x`" in audit.reason


def test_audit_rebuilds_a_tampered_olean(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by sorry"))
    olean = Path(prover.compile(task(), tmp_path, candidate, timeout=60).artifact)
    forged = json.loads(olean.read_text())
    forged["decls"]["putnam_x"] = []
    olean.write_text(json.dumps(forged))
    assert prover.audit_axioms(task(), tmp_path, candidate, timeout=60).axioms == ["sorryAx"]


# --- probe, template, independent check, hook ------------------------------------------------------


def test_no_toolchain_is_infra_naming_the_setup_command(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", BASE_PATH)
    prover = LeanProver({"lean_project": str(project)})
    reason = prover.probe(tmp_path)
    assert "Lean toolchain not found: no lake on PATH" in reason and f"{SETUP} {project}" in reason
    result = prover.compile(task(), tmp_path, write_candidate(tmp_path, proof("rfl")), timeout=60)
    assert result.infra == reason and not result.ok
    assert prover.audit_axioms(task(), tmp_path, tmp_path / "workspace" / "putnam_x.lean", 60).infra == reason
    assert prover.independent_check(task(), tmp_path, tmp_path, 60).ok is None


def test_default_project_without_setup_points_at_lean_env_setup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", BASE_PATH)
    assert (
        LeanProver()
        .probe(tmp_path)
        .endswith(
            f"run `{SETUP}` (installs elan, the toolchain and Mathlib's prebuilt cache; needs internet)"
        )
    )
    monkeypatch.setenv("PATH", f"{STANDIN}{os.pathsep}{BASE_PATH}")
    reason = LeanProver().probe(tmp_path)
    assert "Lake packages ['mathlib'" in reason and "are not downloaded" in reason and f"`{SETUP}`" in reason


def test_toolchain_from_forall_lean_bin(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", BASE_PATH)
    monkeypatch.setenv("FORALL_LEAN_BIN", str(STANDIN))
    prover = LeanProver({"lean_project": str(project)})
    assert prover.probe(tmp_path) == ""
    assert prover.compile(task(), tmp_path, write_candidate(tmp_path, proof("rfl")), timeout=60).ok
    assert prover.version().startswith("Lean (version 4.27.0,")


def test_unbuilt_mathlib_is_infra(project: Path, tmp_path: Path) -> None:
    next(project.rglob("Mathlib.olean")).unlink()
    reason = LeanProver({"lean_project": str(project)}).probe(tmp_path)
    assert reason.startswith(f"Mathlib is not built in {project}") and "lean_env/setup" in reason


def test_undownloaded_packages_are_infra_without_running_lake(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "calls.jsonl"))
    manifest = json.loads((project / "lake-manifest.json").read_text())
    manifest["packages"].append({"name": "batteries"})
    (project / "lake-manifest.json").write_text(json.dumps(manifest))
    reason = LeanProver({"lean_project": str(project)}).probe(tmp_path)
    assert "['batteries'] are not downloaded" in reason and not (tmp_path / "calls.jsonl").exists()


def test_check_template(prover: LeanProver, tmp_path: Path) -> None:
    assert prover.check_template(task(), tmp_path, timeout=60).ok  # sorries allowed in the template
    broken = task(proof("by simp -- STANDIN_ERROR: unexpected token"))
    result = prover.check_template(broken, tmp_path, timeout=60)
    assert not result.ok and result.infra == "template does not compile here: unexpected token"


def toolchain_with_checker(tmp_path: Path) -> Path:
    """A stand-in toolchain >= v4.28: the stand-in's binaries plus its `leanchecker` in one bin/ [C5]."""
    root = tmp_path / "toolchain"
    (root / "bin").mkdir(parents=True)
    for name in ("lean", "lake"):
        (root / "bin" / name).symlink_to(STANDIN / name)
    (root / "bin" / "leanchecker").symlink_to(STANDIN / "checker" / "leanchecker")
    return root


def test_independent_check_uses_the_toolchains_checker_replaying_from_imports(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    candidate = write_candidate(tmp_path, proof("by simp"))
    layer = LeanProver({"lean_project": str(project)}).independent_check(task(), tmp_path, candidate, 60)
    assert layer.ok is None and "ships no leanchecker" in layer.reason  # v4.27: none in $LEAN_SYSROOT/bin
    toolchain = toolchain_with_checker(tmp_path)
    monkeypatch.setenv("PATH", f"{toolchain / 'bin'}{os.pathsep}{BASE_PATH}")
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    layer = LeanProver({"lean_project": str(project)}).independent_check(task(), tmp_path, candidate, 60)
    assert layer.ok is True and layer.evidence["checker"] == "leanchecker" and not layer.evidence["fresh"]
    assert layer.evidence["argv"][0] == str(toolchain / "bin" / "leanchecker")
    checked = [json.loads(line) for line in log.read_text().splitlines() if '"leanchecker"' in line][-1]
    assert checked["replayed"] == [checked["argv"][-1]] and "Mathlib" in checked["loaded"]  # from imports [C1]
    rejected = write_candidate(tmp_path, proof("by simp -- STANDIN_KERNEL_REJECT"))
    layer = LeanProver({"lean_project": str(project)}).independent_check(task(), tmp_path, rejected, 60)
    assert layer.ok is False and "found a problem in ForallCandidate_" in layer.reason


def test_hook_builds_the_lean_backend() -> None:
    assert isinstance(pytest_forall_make_prover("lean", {}), LeanProver)
    assert pytest_forall_make_prover("rocq", {}) is None
    names = [layer.name for layer in LeanProver().static_layers(task(), "")]
    assert names == ["syntax_screen", "frozen_statement", "shadowing_guard"]


def test_putnam_project_matches_upstream() -> None:
    config = tomllib.loads((DEFAULT_PROJECT / "lakefile.toml").read_text())
    assert config["leanOptions"] == {"autoImplicit": False}
    assert [(r["name"], r["rev"]) for r in config["require"]] == [("mathlib", "v4.27.0")]
    assert (DEFAULT_PROJECT / "lean-toolchain").read_text().strip() == "leanprover/lean4:v4.27.0"
    assert subprocess.run(["bash", "-n", str(SETUP)], check=False).returncode == 0
    script = SETUP.read_text()
    assert "sh -s -- -y --default-toolchain none" in script and "lake exe cache get" in script


# --- parsers on the reference samples --------------------------------------------------------------

needs_samples = pytest.mark.usefixtures("lean_samples")


@pytest.fixture
def lean_samples() -> Path:
    return require_path(SAMPLES, "the Lean output reference samples")


@needs_samples
@pytest.mark.parametrize("sample", ["json_messages_current.jsonl", "json_messages_legacy.jsonl"])
def test_parse_sample_messages(sample: str) -> None:
    messages, raw = parse_lean_output((SAMPLES / sample).read_text(encoding="utf-8"))
    assert raw == [] and len(messages) == 9
    assert [m["severity"] for m in messages] == ["warning"] + ["error"] * 4 + ["information"] * 4
    assert is_sorry_warning(messages[0]) and not any(is_sorry_warning(m) for m in messages[1:])
    assert [is_heartbeat_timeout(m) for m in messages] == [False] * 4 + [True] + [False] * 4
    assert "⊢ q" in messages[2]["data"]
    reports = [parse_print_axioms(m["data"]) for m in messages[5:]]
    native = (
        ["nd._native.native_decide.ax_1_1"]
        if "current" in sample
        else ["Lean.ofReduceBool", "Lean.trustCompiler"]
    )
    assert reports == [
        ("t0", []),
        ("t6", ["propext", "Classical.choice", "Quot.sound"]),
        ("t1", ["sorryAx"]),
        ("nd", native),
    ]
    assert failure(ProcResult([], 1, "", "", 0.0), messages, [], 60, allow_sorry=False)[0] == "heartbeats"
    assert failure(ProcResult([], 0, "", "", 0.0), messages[:1] + messages[5:], [], 60, allow_sorry=False)[0] == "sorry"
    assert failure(ProcResult([], 0, "", "", 0.0), messages[:1] + messages[5:], [], 60, allow_sorry=True) == ("", "")
    assert failure(ProcResult([], 1, "", "", 0.0), messages[:4], [], 60, allow_sorry=False)[1].startswith(
        ("Unknown", "unknown")
    )


@needs_samples
def test_parse_sample_print_axioms_including_wrapped() -> None:
    reports, pending = [], ""
    for line in (SAMPLES / "print_axioms.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        pending = f"{pending}\n{line}" if line.startswith(" ") else line
        parsed = parse_print_axioms(pending)
        if parsed:
            reports.append(parsed)
    assert ("flt", ["knownin1980s", "propext", "sorryAx", "Classical.choice", "Quot.sound"]) in reports
    assert ("Empiricist.nd", ["Empiricist.nd._native.native_decide.ax_1_1"]) in reports
    assert (
        "Q3.RouteB.D0Pstar.preAnchorFullMellinCoordinate_eq_preAnchorGwinTransformCoordinate",
        ["propext", "Classical.choice", "Quot.sound"],
    ) in reports
    assert len(reports) == 12


def test_parser_tolerates_missing_fields_null_endpos_and_junk() -> None:
    stdout = (
        '{"severity":"error","pos":{"line":1,"column":0},"fileName":"<input>","endPos":null,'
        '"data":"boom","caption":""}\n'
        "uncaught exception: something\n"
        '{"data":"x","pos":{"column":0,"line":1},"severity":"information","isSilent":false}\n'
        "[1, 2]\n\n"
    )
    messages, raw = parse_lean_output(stdout)
    assert [m["data"] for m in messages] == ["boom", "x"] and messages[0]["kind"] == "[anonymous]"
    assert messages[0]["endPos"] is None and raw == ["uncaught exception: something", "[1, 2]"]
    assert failure(ProcResult([], 1, "", "", 0.0), [], raw, 60, allow_sorry=False)[0] == "infra"
    overflow = ProcResult([], -6, "", "Stack overflow detected. Aborting.", 0.0)
    assert failure(overflow, [], [], 60, allow_sorry=False)[0] == "crash"
    assert parse_print_axioms("'t' depends on axioms: []") is None
    assert parse_print_axioms("'foo'' depends on axioms: [ax']") == ("foo'", ["ax'"])


# --- how real Lean, Lake and elan behave (docs/lean-facts.md) --------------------------------------


def test_a_runtime_panic_without_lean_json_is_infra_not_a_rejection(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by simp -- STANDIN_PANIC"))  # INTERNAL PANIC: out of memory [R1]
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert not result.ok and "ran out of memory without a Lean verdict (exit 1)" in result.infra


@pytest.mark.parametrize("returncode, stderr, what", [
    (1, "error: toolchain 'leanprover/lean4:v4.27.0' does not have the binary `/x/bin/lean`\n", "failed"),  # E2-E4
    (1, "error: no such file or directory (error code: 2)\n  file: ./lakefile.lean\n", "failed"),
    (-9, "", "was killed"),
    (137, "", "was killed"),
])
def test_a_nonzero_exit_without_lean_json_is_infra(project: Path, tmp_path: Path, returncode: int, stderr: str,
                                                   what: str) -> None:
    def runner(argv: list[str], **kwargs: Any) -> ProcResult:
        return ProcResult(list(argv), returncode, "", stderr, 0.1)

    prover = LeanProver({"lean_project": str(project)}, runner=runner)
    result = prover.compile(task(), tmp_path, write_candidate(tmp_path, proof("by simp")), timeout=60)
    assert not result.ok and f"lean {what} without a Lean verdict" in result.infra


def test_passing_the_resident_memory_limit_is_infra(project: Path, tmp_path: Path) -> None:
    def runner(argv: list[str], **kwargs: Any) -> ProcResult:
        assert kwargs["rss_mb"] == 512 and "mem_mb" not in kwargs  # resident, not address space
        return ProcResult(list(argv), -9, "", "", 0.1, extra={"rss_exceeded": True, "rss_limit_mb": 512})

    prover = LeanProver({"lean_project": str(project), "lean_mem_mb": 512}, runner=runner)
    result = prover.compile(task(), tmp_path, write_candidate(tmp_path, proof("by simp")), timeout=60)
    assert not result.ok and "resident-memory limit of 512 MB" in result.infra


def test_rss_limit_counts_anonymous_memory_not_mapped_files(tmp_path: Path) -> None:
    """`ulimit -v` would count Mathlib's mmapped .olean files; the resident limit counts only what is allocated."""
    big = tmp_path / "big.olean"
    with big.open("wb") as handle:
        handle.truncate(300 << 20)
    touch = ("import mmap,sys,time\nf=open(sys.argv[1],'rb');m=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ)\n"
             "s=sum(m[i] for i in range(0,len(m),4096));time.sleep(1.5)")
    mapped = run_command([sys.executable, "-c", touch, str(big)], cwd=tmp_path, timeout=60, rss_mb=150)
    assert mapped.returncode == 0 and not mapped.extra["rss_exceeded"]
    grab = "import time\nb=bytearray(300<<20)\nfor i in range(0,len(b),4096): b[i]=1\ntime.sleep(5)"
    allocated = run_command([sys.executable, "-c", grab], cwd=tmp_path, timeout=60, rss_mb=150)
    assert allocated.returncode != 0 and allocated.extra["rss_exceeded"] and allocated.duration < 5


def test_a_project_without_manifest_is_refused_and_left_untouched(project: Path, tmp_path: Path) -> None:
    """Lake would resolve, clone and write a manifest there [K1]; the stand-in lake does exactly that."""
    (project / "lake-manifest.json").unlink()
    before = sorted(p.name for p in project.iterdir())
    prover = LeanProver({"lean_project": str(project), "lean_required_modules": []})
    reason = prover.probe(tmp_path)
    assert "has no lake-manifest.json" in reason and "run `lake update`" in reason
    result = prover.compile(task(), tmp_path, write_candidate(tmp_path, proof("by simp")), timeout=60)
    assert result.infra == reason and sorted(p.name for p in project.iterdir()) == before


def test_lean_options_are_read_from_lakefile_lean(project: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """PutnamBench's own lakefile.lean sets autoImplicit off [K3]; a plain `lean` call does not apply it."""
    (project / "lakefile.toml").unlink()
    (project / "lakefile.lean").write_text(
        "import Lake\nopen Lake DSL\n\npackage «putnam» where\n  -- add package configuration options here\n"
        "  leanOptions := #[\n    ⟨`autoImplicit, false⟩,\n    ⟨`pp.unicode.fun, true⟩\n  ]\n"
        'require mathlib from git "https://github.com/leanprover-community/mathlib4" @ "v4.27.0"\n')
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    LeanProver({"lean_project": str(project)}).compile(task(), tmp_path, write_candidate(tmp_path, proof("rfl")), 60)
    argv = [json.loads(line) for line in log.read_text().splitlines()][-1]["argv"]
    assert "-DautoImplicit=false" in argv and "-Dpp.unicode.fun=true" in argv
    (project / "lakefile.lean").write_text("import Lake\npackage p where\n  leanOptions := opts\n")
    reason = LeanProver({"lean_project": str(project)}).probe(tmp_path)
    assert "leanOptions" in reason and "option lean_options" in reason


def test_template_verdict_is_cached_per_template_toolchain_and_manifest(project: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    options = {"lean_project": str(project), "cache_dir": str(tmp_path / "cache")}

    def lean_calls() -> int:
        return sum('"tool": "lean"' in line for line in log.read_text().splitlines()) if log.exists() else 0

    assert LeanProver(options).check_template(task(), tmp_path, 60).ok and lean_calls() == 2  # compile, dump
    assert LeanProver(options).check_template(task(), tmp_path, 60).ok and lean_calls() == 2  # another process
    entry = next((tmp_path / "cache" / "lean-templates").glob("*.json"))
    entry.write_text("{not json")  # corrupt: rebuilt, never trusted
    assert LeanProver(options).check_template(task(), tmp_path, 60).ok and lean_calls() == 4
    assert json.loads(entry.read_text())["ok"] is True
    manifest = json.loads((project / "lake-manifest.json").read_text())
    manifest["packages"][0]["rev"] = "1" * 40
    (project / "lake-manifest.json").write_text(json.dumps(manifest))
    assert LeanProver(options).check_template(task(), tmp_path, 60).ok and lean_calls() == 6
    broken = task(TEMPLATE.format(proof="by sorry -- STANDIN_ERROR: no").replace("import Mathlib", "import Mathlib"))
    assert "template does not compile here" in LeanProver(options).check_template(broken, tmp_path, 60).infra
    calls = lean_calls()
    assert "template does not compile here" in LeanProver(options).check_template(broken, tmp_path, 60).infra
    assert lean_calls() == calls  # the negative verdict is cached too


def test_threads_per_lean_share_the_cpus_among_xdist_workers(project: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def runner(argv: list[str], **kwargs: Any) -> ProcResult:
        seen.append(list(argv))
        return run_command(argv, **kwargs)

    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    LeanProver({"lean_project": str(project)}, runner=runner).compile(
        task(), tmp_path, write_candidate(tmp_path, proof("rfl")), 60)
    assert "-j4" in seen[-1]  # 16 CPUs / 4 workers [R2]
    LeanProver({"lean_project": str(project), "lean_threads": 2}, runner=runner).compile(
        task(), tmp_path, write_candidate(tmp_path, proof("rfl")), 60)
    assert "-j2" in seen[-1]


def test_lean_calls_run_in_the_sandbox_with_the_toolchain_and_project_read_only(
    prover: LeanProver, project: Path, tmp_path: Path
) -> None:
    from pytest_forall.isolation.sandbox import probe_sandbox, prover_runner

    assert prover.probe(tmp_path) == ""
    binds = dict(prover.sandbox_binds)
    assert binds[project] == str(project) and binds[STANDIN] == str(STANDIN)  # same paths: LEAN_PATH holds
    problem = probe_sandbox()
    if problem:
        pytest.fail(f"bwrap unusable here: {problem}")
    prover.runner = prover_runner(tmp_path / "audit", [*prover.sandbox_binds, (REPO, str(REPO))])
    candidate = write_candidate(tmp_path, proof("by simp"))
    assert prover.compile(task(), tmp_path, candidate, timeout=60).ok
    assert prover.audit_axioms(task(), tmp_path, candidate, timeout=60).strict_ok
    records = [json.loads(line) for line in (tmp_path / "audit" / "sandbox.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["policy"]["sandbox"] == "bwrap" for r in records)
    assert all([str(project), str(project)] in r["policy"]["ro_binds"] for r in records)


def test_putnambench_manifest_is_committed_unchanged() -> None:
    from conftest import PUTNAM

    upstream = PUTNAM / "lean4" / "lake-manifest.json"
    assert (DEFAULT_PROJECT / "lake-manifest.json").read_bytes() == upstream.read_bytes()  # [K4]


def test_lean_gets_the_probed_environment_and_no_credentials(project: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, str]] = []

    def runner(argv: list[str], **kwargs: Any) -> ProcResult:
        seen.append(kwargs["env"])
        return run_command(argv, **kwargs)

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    monkeypatch.setenv("LEAN_PATH", "/evil")
    LeanProver({"lean_project": str(project)}, runner=runner).compile(
        task(), tmp_path, write_candidate(tmp_path, proof("rfl")), 60)
    env = seen[-1]
    assert "ANTHROPIC_API_KEY" not in env and "/evil" not in env["LEAN_PATH"]
    assert env["LEAN_SYSROOT"] == str(STANDIN) and env["PATH"].startswith(str(STANDIN / "bin"))
