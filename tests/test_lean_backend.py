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
    return LeanProver({"lean_project": str(project)})


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
    assert result.messages[0]["kind"] == "forall.crash" and "exit 134" in result.first_error
    assert "Stack overflow detected" in result.output


def test_non_json_stdout_is_kept_as_text(prover: LeanProver, tmp_path: Path) -> None:
    candidate = write_candidate(tmp_path, proof("by simp -- STANDIN_STDOUT: INTERNAL PANIC: out of memory"))
    result = prover.compile(task(), tmp_path, candidate, timeout=60)
    assert result.ok and "INTERNAL PANIC: out of memory" in result.output


def test_timeout_kills_the_process_group(
    prover: LeanProver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "child.pid"
    monkeypatch.setenv("STANDIN_PIDFILE", str(pidfile))
    candidate = write_candidate(tmp_path, proof("by simp -- STANDIN_SLEEP: 60"))
    started = time.monotonic()
    result = prover.compile(task(), tmp_path, candidate, timeout=3)
    assert time.monotonic() - started < 20
    assert result.timed_out and not result.ok and result.messages[0]["kind"] == "forall.timeout"
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


def test_compile_runs_lake_env_lean_in_the_project(
    prover: LeanProver, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    candidate = write_candidate(tmp_path, proof("by simp"))
    prover.compile(task(), tmp_path, candidate, timeout=60)
    prover.audit_axioms(task(), tmp_path, candidate, timeout=60)
    compile_call, audit_call = [json.loads(line) for line in log.read_text().splitlines()]
    assert compile_call["cwd"] == str(project) and audit_call["cwd"] == str(project)
    assert "-DautoImplicit=false" in compile_call["argv"] and "--json" in compile_call["argv"]
    source = Path(compile_call["argv"][-1])
    assert (
        source.is_absolute()
        and source.name.startswith("ForallCandidate_")
        and source.parent != candidate.parent
    )
    assert compile_call["argv"][compile_call["argv"].index("-o") + 1] == str(source.with_suffix(".olean"))
    audit_file = Path(audit_call["argv"][-1])
    assert audit_file.name == "ForallAudit.lean" and audit_file.parent != source.parent
    assert str(source.parent) in audit_call["LEAN_PATH"].split(os.pathsep)


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
        if argv[-1].endswith("ForallAudit.lean"):
            result.stdout = rewrite(result.stdout)
        return result

    return runner


@pytest.mark.parametrize(
    "rewrite, reason",
    [
        (lambda out: "", "found 0"),
        (lambda out: "\n".join(line for line in out.splitlines() if "putnam_x" not in line), "found 1"),
        (
            lambda out: out.replace("[propext, Classical.choice, Quot.sound]", "propext Classical.choice"),
            "unparseable",
        ),
        (
            lambda out: out.replace("[propext, Classical.choice, Quot.sound]", "[propext Classical.choice]"),
            "unparseable",
        ),
        (lambda out: out.replace("'putnam_x'", "'Evil.putnam_x'"), "expected 'putnam_x'"),
        (lambda out: out.splitlines()[0] + "\n" + out, "found 3"),
        (lambda out: out.replace('"pos":{"column":0,"line":2}', '"pos":{"column":0,"line":1}'), "not where"),
        (lambda out: out.replace("forall_audit_end_", "forall_audit_end_x"), "sentinel"),
        (lambda out: "\n".join(out.splitlines()[::-1]), "not where"),
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
    assert "Lean toolchain not found: no lake or lean on PATH" in reason and f"{SETUP} {project}" in reason
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
    assert "has no lake-manifest.json" in reason and f"`{SETUP}`" in reason


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


def fake_checker(directory: Path, name: str, code: int) -> Path:
    directory.mkdir(exist_ok=True)
    script = directory / name
    script.write_text(
        f'#!/bin/sh\necho "$@"\necho "LEAN_PATH=$LEAN_PATH"\n'
        f"[ {code} = 0 ] || echo 'lean4checker found a problem in '\"$2\"\nexit {code}\n"
    )
    script.chmod(0o755)
    return script


def test_independent_check(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    candidate = write_candidate(tmp_path, proof("by simp"))
    layer = LeanProver({"lean_project": str(project)}).independent_check(task(), tmp_path, candidate, 60)
    assert (
        layer.ok is None and layer.reason == "not judged: neither leanchecker nor lean4checker is installed"
    )
    fake_checker(tmp_path / "bin", "lean4checker", 0)
    monkeypatch.setenv("PATH", f"{STANDIN}{os.pathsep}{tmp_path / 'bin'}{os.pathsep}{BASE_PATH}")
    layer = LeanProver({"lean_project": str(project)}).independent_check(task(), tmp_path, candidate, 60)
    assert layer.ok is True and layer.evidence["checker"] == "lean4checker"
    assert (
        layer.evidence["output"].startswith("--fresh ForallCandidate_")
        and "Mathlib" not in layer.evidence["argv"]
    )
    fake_checker(tmp_path / "bin", "leanchecker", 1)  # preferred when present
    layer = LeanProver({"lean_project": str(project)}).independent_check(task(), tmp_path, candidate, 60)
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
    assert failure(1, False, messages, "", [], 60, allow_sorry=False)[0] == "heartbeats"
    assert failure(0, False, messages[:1] + messages[5:], "", [], 60, allow_sorry=False)[0] == "sorry"
    assert failure(0, False, messages[:1] + messages[5:], "", [], 60, allow_sorry=True) == ("", "")
    assert failure(1, False, messages[:4], "", [], 60, allow_sorry=False)[1].startswith(
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
    assert failure(1, False, [], "", raw, 60, allow_sorry=False)[0] == "exit"
    assert (
        failure(-6, False, [], "Stack overflow detected. Aborting.", [], 60, allow_sorry=False)[0] == "crash"
    )
    assert parse_print_axioms("'t' depends on axioms: []") is None
    assert parse_print_axioms("'foo'' depends on axioms: [ax']") == ("foo'", ["ax'"])
