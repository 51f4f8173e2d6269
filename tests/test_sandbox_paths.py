"""Prover toolchains outside /usr in the sandbox, the ``--forall-sandbox-ro`` escape hatch, and a sandboxed
``forall verify --prover lean`` (docs/sandbox.md, "Toolchains outside /usr").

The opam-style installation is a prefix in tmp whose ``bin/coqc``, ``coqchk`` and ``coqtop`` are wrappers around
the real /usr/bin tools: each says on stderr where it runs (``uname -n`` is ``sandbox`` inside) and points the tool
at a standard library outside /usr (``COQLIB=<elsewhere>/lib/coq``, symlinks to the Debian one), as an opam switch
does. Without the bind of that library the compile fails; without the prefix's bind the wrapper is not found.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PUTNAM, REPO, require_tool, standin_lean_project

PROOFS = Path(__file__).parent / "data" / "proofs"
A1_TEMPLATE = PUTNAM / "coq" / "src" / "putnam_2001_a1.v"
VERIFY = [sys.executable, "-m", "pytest_forall.core.verify"]
STANDIN = Path(__file__).resolve().parent / "standin"
MARK = "forall-wrapper"


@pytest.fixture
def opam_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``<tmp>/opam/bin/{coqc,coqchk,coqtop}`` first on PATH; the standard library at ``<tmp>/elsewhere/lib``."""
    require_tool("coqc")
    require_tool("bwrap")
    prefix, lib = tmp_path / "opam", tmp_path / "elsewhere" / "lib"
    (prefix / "bin").mkdir(parents=True)
    lib.mkdir(parents=True)
    (lib / "coq").symlink_to("/usr/lib/ocaml/coq")
    (lib / "coq-core").symlink_to("/usr/lib/ocaml/coq-core")
    for tool in ("coqc", "coqchk", "coqtop"):
        wrapper = prefix / "bin" / tool
        wrapper.write_text(f'#!/bin/sh\necho "{MARK} {tool} on $(uname -n)" >&2\n'
                           f'COQLIB={lib / "coq"} exec /usr/bin/{tool} "$@"\n')
        wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return prefix


def verify(*args: str, cwd: Path | None = None) -> tuple[int, dict, str]:
    env = {**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)}
    proc = subprocess.run([*VERIFY, *args, "--json"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def layer(verdict: dict, name: str) -> dict:
    return next(entry for entry in verdict["layers"] if entry["name"] == name)


# --- Rocq from an opam-style prefix ------------------------------------------------------------------------

def test_rocq_backend_runs_and_fingerprints_the_host_tools_and_binds_their_installation(opam_prefix: Path,
                                                                                         tmp_path: Path) -> None:
    from pytest_forall.lang.rocq.backend import RocqProver, toolchain_fingerprint

    prover = RocqProver({"cache_dir": str(tmp_path / "cache")})
    assert (prover.coqc, prover.coqchk, prover.coqtop) == tuple(str(opam_prefix / "bin" / t)
                                                              for t in ("coqc", "coqchk", "coqtop"))
    binds = dict(prover.sandbox_binds)
    elsewhere = tmp_path / "elsewhere" / "lib"
    assert binds[opam_prefix] == str(opam_prefix)  # the prefix, at its own path
    assert binds[elsewhere / "coq"] == str(elsewhere / "coq")  # `coqc -where`, outside /usr
    assert binds[elsewhere / "coq-core"] == str(elsewhere / "coq-core")
    # the fingerprint (verdict cache key) describes the binaries that run, not /usr/bin's
    version = toolchain_fingerprint(prover.coqc, prover.coqchk)["version"]
    assert f"{opam_prefix}/bin/coqc:" in version and f"{opam_prefix}/bin/coqchk:" in version


def test_forall_verify_runs_the_opam_coqc_and_coqchk_inside_the_sandbox(opam_prefix: Path, tmp_path: Path) -> None:
    rc, verdict, _ = verify("--prover", "rocq", "--template", str(A1_TEMPLATE), "--candidate",
                            str(PROOFS / "putnam_2001_a1.v"), "--sandbox", "bwrap", "--cache-dir",
                            str(tmp_path / "cache"))
    assert (rc, verdict["verdict"], verdict["strict"]) == (0, "accept", True), verdict["reason"]
    assert f"{MARK} coqc on sandbox" in layer(verdict, "elaboration")["output"]
    assert f"{MARK} coqchk on sandbox" in layer(verdict, "independent_check")["output"]


def test_replay_item_runs_the_opam_coqc_in_the_item_sandbox(opam_prefix: Path, pytester: pytest.Pytester,
                                                            putnam_root: Path) -> None:
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {putnam_root}\n")
    pytester.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay", f"--forall-proofs={PROOFS}",
                       "-k", "putnam_2001_a1 and coq", "--forall-run-id=opam")
    run = pytester.path / "reports" / "opam"
    row = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    assert (row["outcome"], row["prover_sandboxed"]) == ("strict", True), row
    records = [json.loads(line) for log in run.glob("items/*/**/sandbox.jsonl") for line in log.read_text().splitlines()]
    coqc = [r for r in records if r["argv"][0] == str(opam_prefix / "bin" / "coqc")]
    assert coqc and all([str(opam_prefix), str(opam_prefix)] in r["policy"]["ro_binds"] for r in coqc)
    assert all(r["policy"]["sandbox"] == "bwrap" for r in records)
    verdicts = [json.loads(p.read_text()) for p in run.glob("items/*/**/*verdict.json")]
    accepted = [v for v in verdicts if v.get("verdict") == "accept"]
    assert accepted and f"{MARK} coqc on sandbox" in layer(accepted[-1], "elaboration")["output"]


def test_portfolio_coqtop_from_the_prefix_runs_in_the_sandbox(opam_prefix: Path, tmp_path: Path) -> None:
    from pytest_forall.lang.rocq.backend import RocqProver

    prover = RocqProver({"cache_dir": str(tmp_path / "cache")})
    prover.sandboxed = True  # as the protocol sets it: coqtop then runs under interactive_prefix
    workspace = tmp_path / "ws"
    workspace.mkdir()
    probe = prover.tactic_probe(workspace)
    assert probe.coqtop == str(opam_prefix / "bin" / "coqtop") and "--ro-bind" in probe.prefix
    winner, attempts, log = probe.run("Theorem forall_t : 2 + 2 = 4.\nProof.\n", ["reflexivity"], workspace, 60)
    assert (winner, attempts) == ("reflexivity", 1), log


# --- the escape hatch: --forall-sandbox-ro / --sandbox-ro ---------------------------------------------------

@pytest.mark.parametrize("spec, message", [
    ("does/not/exist", "does not exist"),
    ("{tmp}:relative/inside", "absolute and normalized"),
    ("{tmp}:/usr", "reserved by the sandbox"),
    ("{tmp}:/proc/x", "reserved by the sandbox"),
    ("{tmp}:/workspace/p", "the prover's build directory"),
    (":/opt/x", "no host path"),
])
def test_bad_sandbox_ro_values_are_one_usage_error_naming_the_option(pytester: pytest.Pytester, spec: str,
                                                                      message: str) -> None:
    spec = spec.format(tmp=pytester.path)
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest(f"--forall-sandbox-ro={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--forall-sandbox-ro" in result.stderr.str() and message in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    pytester.makeini(f"[pytest]\nforall_sandbox_ro =\n    {pytester.path}\n    {spec}\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option forall_sandbox_ro" in result.stderr.str() and message in result.stderr.str()
    rc, verdict, stderr = verify("--prover", "rocq", "--template", str(A1_TEMPLATE), "--candidate",
                                 str(PROOFS / "putnam_2001_a1.v"), "--sandbox-ro", spec, cwd=pytester.path)
    assert rc == 2 and verdict["verdict"] == "infra" and "--sandbox-ro" in stderr and message in stderr


def test_sandbox_ro_values_reach_every_prover_backend_normalized(pytester: pytest.Pytester, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative paths from where the option was given (command line: the invocation directory, ini: the rootdir);
    the Rocq and Lean backends and thereby the agents' sandboxes (their prover binds) get the same binds."""
    from pytest_forall.core.binds import option_binds, parse_ro_binds
    from pytest_forall.lang.lean.backend import LeanProver
    from pytest_forall.lang.rocq.backend import RocqProver

    (tmp_path / "tool").mkdir()
    specs = parse_ro_binds(["tool", f"{tmp_path / 'tool'}:/opt/tool"], tmp_path)
    assert specs == [f"{tmp_path / 'tool'}:{tmp_path / 'tool'}", f"{tmp_path / 'tool'}:/opt/tool"]
    expected = ((tmp_path / "tool", str(tmp_path / "tool")), (tmp_path / "tool", "/opt/tool"))
    assert option_binds({"sandbox_ro": specs}) == expected
    options = {"sandbox_ro": specs}
    assert RocqProver(options).sandbox_binds[-2:] == expected
    assert LeanProver(options).sandbox_binds[-2:] == expected
    pytester.makepyfile(conftest="""
        from pytest_forall.plugin.options import resolved_options
        def pytest_configure(config):
            print("RESOLVED", resolved_options(config)["sandbox_ro"])
    """)
    (pytester.path / "ini-tool").mkdir()
    (pytester.path / "sub").mkdir()
    (pytester.path / "sub" / "cli-tool").mkdir()
    pytester.makeini("[pytest]\nforall_sandbox_ro = ini-tool\n")
    result = pytester.runpytest("-s", "--co")
    result.stdout.fnmatch_lines([f"RESOLVED ['{pytester.path / 'ini-tool'}:{pytester.path / 'ini-tool'}']"])
    monkeypatch.chdir(pytester.path / "sub")
    result = pytester.runpytest("-s", "--co", "--forall-sandbox-ro=cli-tool",
                                           "--forall-sandbox-ro", "cli-tool:/opt/c")
    tool = pytester.path / "sub" / "cli-tool"
    result.stdout.fnmatch_lines([f"RESOLVED ['{tool}:{tool}', '{tool}:/opt/c']"])


# --- forall verify --prover lean, sandboxed ----------------------------------------------------------------

@pytest.fixture
def lean_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in toolchain on PATH and a Lake project with a stand-in Mathlib build (FORALL_LEAN_PROJECT)."""
    require_tool("bwrap")
    base = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    monkeypatch.setenv("PATH", f"{STANDIN}{os.pathsep}{base}")
    for name in ("FORALL_LEAN_BIN", "LEAN_PATH", "STANDIN_LEAN_VERSION", "STANDIN_LOG"):
        monkeypatch.delenv(name, raising=False)
    root = standin_lean_project(tmp_path / "project")
    monkeypatch.setenv("FORALL_LEAN_PROJECT", str(root))
    return root


def lean_candidate(tmp_path: Path) -> tuple[Path, Path]:
    template = PUTNAM / "lean4" / "src" / "putnam_2001_a1.lean"
    text = template.read_text()
    hole = text.rindex("sorry")
    candidate = tmp_path / "putnam_2001_a1.lean"
    candidate.write_text(text[:hole] + "by\n  intro a b\n  simpa using hS (b * a) b" + text[hole + len("sorry"):])
    return template, candidate


def test_forall_verify_lean_is_sandboxed_by_default(lean_project: Path, tmp_path: Path) -> None:
    """The stand-in imports the repository's lexer, so only ``--sandbox-ro REPO`` lets it run in the sandbox:
    without it the sandboxed run fails closed (infra), which also shows the sandbox is in effect."""
    template, candidate = lean_candidate(tmp_path)
    common = ["--prover", "lean", "--template", str(template), "--candidate", str(candidate),
              "--cache-dir", str(tmp_path / "cache")]
    rc, verdict, _ = verify(*common, "--sandbox-ro", str(REPO))
    assert (rc, verdict["verdict"], verdict["strict"]) == (0, "accept", True), verdict["reason"]
    rc, verdict, _ = verify(*common, "--cache-dir", str(tmp_path / "cache2"))
    assert (rc, verdict["verdict"]) == (2, "infra"), verdict["reason"]
    assert "ModuleNotFoundError: No module named 'pytest_forall'" in json.dumps(verdict)
    rc, verdict, _ = verify(*common, "--sandbox", "none", "--cache-dir", str(tmp_path / "cache3"))
    assert (rc, verdict["verdict"], verdict["strict"]) == (0, "accept", True), verdict["reason"]


def test_lean_items_are_sandboxed_by_the_protocol_alone(lean_project: Path, pytester: pytest.Pytester,
                                                        putnam_root: Path, tmp_path: Path) -> None:
    """In a pytest item the backend never sandboxes itself: the protocol's runner (the item's audit dir) runs
    every Lean call, with the ``--forall-sandbox-ro`` bind."""
    lean_candidate(tmp_path)  # the stored proof replay reads
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {putnam_root}\n")
    pytester.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay", f"--forall-proofs={tmp_path}",
                       "-k", "putnam_2001_a1 and lean4", "--forall-run-id=lean", f"--forall-sandbox-ro={REPO}",
                       f"--forall-lean-project={lean_project}")
    run = pytester.path / "reports" / "lean"
    row = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    assert (row["outcome"], row["prover_sandboxed"]) == ("strict", True), row
    records = [json.loads(line) for log in run.glob("items/*/**/sandbox.jsonl") for line in log.read_text().splitlines()]
    lean = [r for r in records if r["argv"][0].endswith("/bin/lean")]
    assert len(lean) >= 3, records  # template, candidate, audit file: all through the item's sandbox
    assert all([str(REPO), str(REPO)] in r["policy"]["ro_binds"] for r in lean)


def test_forall_sandbox_ro_bind_uses_the_same_checks(tmp_path: Path) -> None:
    """``forall sandbox --ro-bind`` parses with the same function: a missing source is one message, exit 2."""
    require_tool("bwrap")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    forall = [sys.executable, "-m", "pytest_forall.cli"]
    proc = subprocess.run([*forall, "sandbox", "--workspace", str(workspace), "--ro-bind", str(tmp_path / "nope"),
                           "--", "true"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "--ro-bind" in proc.stderr and "does not exist" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    (tmp_path / "tool").mkdir()
    (tmp_path / "tool" / "marker").write_text("bound")
    proc = subprocess.run([*forall, "sandbox", "--workspace", str(workspace), "--ro-bind",
                           f"{tmp_path / 'tool'}:/opt/tool", "--", "cat", "/opt/tool/marker"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert (proc.returncode, proc.stdout) == (0, "bound"), proc.stderr


def test_host_binds_bind_an_install_prefix_never_a_home_or_the_sandbox_skeleton(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_forall.isolation.sandbox import host_binds

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for tool in ("opam/default/bin/coqc", "home/bin/coqc", "opt/coq/coqc", "opt/real/bin/coqtop"):
        (tmp_path / tool).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / tool).write_text("#!/bin/sh\n")
    (tmp_path / "opam/default/bin/coqtop").symlink_to(tmp_path / "opt/real/bin/coqtop")
    (tmp_path / "lib").mkdir()
    assert host_binds([str(tmp_path / t) for t in ("opam/default/bin/coqc", "opam/default/bin/coqtop",
                                                   "home/bin/coqc", "opt/coq/coqc")],
                      [tmp_path / "lib", tmp_path / "opam/default/lib", tmp_path / "missing"]) == [
        tmp_path / "opam/default",   # <prefix>/bin/coqc: the switch
        tmp_path / "opt/real",       # the symlink's target's prefix
        home / "bin",                # never the whole home directory
        tmp_path / "opt/coq",        # not in a bin/: its own directory
        tmp_path / "lib",            # a library directory itself; one under a bound prefix adds nothing
    ]
    assert host_binds(["/usr/bin/coqc", "/bin/sh", "/tmp/coqc"]) == []  # /usr is there; / and /tmp are reserved
