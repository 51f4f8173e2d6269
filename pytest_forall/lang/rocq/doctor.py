"""``forall doctor``'s Rocq track: is this machine ready to judge Rocq proofs, check by check.

Each check says what it ran and what it found: the ``coqc`` and ``coqchk`` versions, the libraries PutnamBench's
Coq problems import (each required in a scratch file by ``coqc`` itself), the judge plugin's build, ``bwrap``,
and one known-good and one known-bad candidate through the full verifier in the sandbox. Exit status: 0 every
check passed, 1 some check failed, 2 the track is not installed (no ``coqc`` on PATH).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from pytest_forall.core.model import ACCEPT, REJECT
from pytest_forall.core.proc import run_command

#: (what, the sentence PutnamBench's problems use to load it, the Debian package that ships it)
LIBRARIES = (
    ("Stdlib reals", "Require Import Reals.", "libcoq-stdlib"),
    ("Coquelicot", "Require Import Coquelicot.Coquelicot.", "libcoq-coquelicot"),
    ("mathcomp", "From mathcomp Require Import all_ssreflect all_algebra.", "libcoq-mathcomp"),
    ("mathcomp-analysis", "From mathcomp Require Import classical_sets reals normedtype.",
     "libcoq-mathcomp-analysis"),
)
TEMPLATE = "Theorem doctor_check : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\n"
GOOD = "Theorem doctor_check : forall n : nat, n + 0 = n.\nProof.\n  intro n. induction n; simpl; auto.\nQed.\n"
#: ``n + 0`` does not reduce to ``n`` for a variable: the kernel, not a text screen, refuses this one
BAD = "Theorem doctor_check : forall n : nat, n + 0 = n.\nProof.\n  intro n. reflexivity.\nQed.\n"


def _version(tool: str) -> tuple[bool, str]:
    if shutil.which(tool) is None:
        return False, f"{tool} not found on PATH"
    done = run_command([tool, "--version"], cwd=Path(tempfile.gettempdir()), timeout=60)
    text = " ".join((done.stdout + done.stderr).split())
    return done.returncode == 0, text[:200] or f"exit {done.returncode}"


def _library(sentence: str, scratch: Path, timeout: float) -> tuple[bool, str]:
    source = scratch / "Doctor.v"
    source.write_text(sentence + "\n", encoding="utf-8")
    done = run_command(["coqc", "-q", source.name], cwd=scratch, timeout=timeout)
    if done.returncode == 0:
        return True, "loads"
    return False, " ".join((done.stdout + done.stderr).split())[-300:] or f"coqc exit {done.returncode}"


def run(options: dict[str, Any], timeout: float) -> int:
    """Print one line per check; return 0 (all passed), 1 (a check failed) or 2 (no ``coqc``)."""
    from pytest_forall.core.verify import task_from_template, verify_candidate
    from pytest_forall.lang.rocq.backend import RocqProver
    from pytest_forall.lang.rocq.judge import plugin_dir

    failed = 0

    def report(ok: bool, name: str, detail: str) -> None:
        nonlocal failed
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")

    ok, text = _version("coqc")
    report(ok, "coqc", text)
    if shutil.which("coqc") is None:
        print("  install: apt-get install -y coq libcoq-stdlib (scripts/setup.sh does it)")
        return 2
    ok, text = _version("coqchk")
    report(ok, "coqchk", text)
    with tempfile.TemporaryDirectory(prefix="forall-doctor-") as scratch:
        for what, sentence, package in LIBRARIES:
            ok, text = _library(sentence, Path(scratch), timeout)
            report(ok, f"library {what}", text if ok else f"{text} (apt-get install -y {package})")
        cache = Path(str(options.get("cache_dir") or scratch))
        prover = RocqProver({"sandbox": "none", "cache_dir": str(cache)})
        plugin, problem = plugin_dir(cache / "rocq-judge", prover.version())
        report(plugin is not None, "judge plugin build", str(plugin) if plugin is not None else problem)
        bwrap = shutil.which("bwrap")
        report(bwrap is not None, "bwrap", bwrap or "not found on PATH (apt-get install -y bubblewrap)")
        template = Path(scratch) / "doctor_check.v"
        template.write_text(TEMPLATE, encoding="utf-8")
        task = task_from_template(prover.name, template)
        sandbox = "bwrap" if bwrap else "none"
        judge = RocqProver({"sandbox": sandbox, "cache_dir": str(cache), "sandbox_audit_dir": f"{scratch}/sandbox"})
        good = verify_candidate(task, judge, GOOD.encode(), builddir=Path(scratch) / "good", timeout=timeout)
        report(good.verdict == ACCEPT and good.strict, f"verifier accepts a proof (sandbox {sandbox})",
               good.reason or f"{good.verdict}, strict, {len(good.layers)} layers")
        bad = verify_candidate(task, judge, BAD.encode(), builddir=Path(scratch) / "bad", timeout=timeout)
        report(bad.verdict == REJECT, f"verifier rejects a wrong proof (sandbox {sandbox})",
               f"{bad.verdict}: {bad.reason}")
    return 1 if failed else 0
