"""``forall doctor``: each prover track checked separately (the Rocq track's checks live in its language pack,
``lang/rocq/doctor.py``); for Lean, the shipped conformance set through the toolchain on PATH, every divergence.

Each case is a candidate for a real PutnamBench problem (read from ``PUTNAMBENCH_ROOT``; only our proofs are
shipped) with the verdict real Lean must give, layer by layer, derived from the facts in
``docs/lean-facts.md``. A first run on a new machine is a test of this package against that machine's Lean:
its output is meant to be pasted into a bug report. In CI it runs against the stand-in (tests/standin), which
is all it has met so far.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_forall.core.model import Layer, Task, Verdict
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.lean.backend import LeanProver
from pytest_forall.lang.lean.problem import parse_lean

A1 = "putnam_2001_a1"
#: (b * a) * b = a by hS b a; then hS (b * a) b reads a * (b * a) = b. No axioms.
A1_PROOF = "by\n  intro a b\n  have h1 := hS b a\n  have h2 := hS (b * a) b\n  rw [h1] at h2\n  exact h2"
#: The same proof under `Classical.em`, which depends on the three standard axioms.
A1_CLASSICAL = ("by\n  intro a b\n  rcases Classical.em (a = b) with _ | _ <;>\n"
                "  · have h1 := hS b a\n    have h2 := hS (b * a) b\n    rw [h1] at h2\n    exact h2")
A1_STATEMENT = ": ∀ a b : S, a * (b * a) = b :="
A2 = "putnam_1986_a2"  # an answer problem: `abbrev putnam_1986_a2_solution : ℕ := 3`


@dataclass
class Case:
    """One candidate and what real Lean must make of it; ``expect`` maps layer name to ``ok`` (True/False/None)."""

    name: str
    what: str
    problem: str
    proof: str
    expect: dict[str, bool | None]
    static: bool = True
    axioms: tuple[str, ...] | None = None
    message: str = ""  # a severity and text that must appear among the elaboration's messages
    before: str = ""
    replace: tuple[str, str] = ("", "")
    observed: dict[str, Any] = field(default_factory=dict)


CASES = [
    Case("good", "a valid proof is accepted, with no axioms", A1, A1_PROOF,
         {"syntax_screen": True, "elaboration": True, "elaborated_statement": True, "axiom_audit": True}, axioms=()),
    Case("axiom-report", "#print axioms of a classical proof lists the three standard axioms (information message)",
         A1, A1_CLASSICAL, {"elaboration": True, "axiom_audit": True},
         axioms=("propext", "Classical.choice", "Quot.sound")),
    Case("sorry-warning", "`sorry` is a warning of kind hasSorry that rejects the candidate", A1, "sorry",
         {"elaboration": False}, static=False, message="warning:declaration uses"),
    # the comment is the stand-in's way of failing here (a [control]); real Lean ignores it and fails on `rfl`
    Case("error-message", "a failing tactic is an error message that rejects the candidate", A1,
         "by\n  exact rfl -- STANDIN_ERROR: type mismatch", {"elaboration": False}, static=False, message="error:"),
    Case("doc-comment-token", "`/--/` opens a doc comment up to the next `-/`: Lean sees `theorem … : True`", A1,
         f"by simp -- -/ theorem {A1} : True := trivial", {"frozen_statement": False}, before="/--/\n"),
    Case("doc-comment-token-elaborated", "the same candidate past the static layers: the term dump differs", A1,
         f"by simp -- -/ theorem {A1} : True := trivial", {"elaboration": True, "elaborated_statement": False},
         static=False, before="/--/\n"),
    Case("hypothesis-added", "an added hypothesis compiles but is a different theorem (term dump)", A1, "h",
         {"elaboration": True, "elaborated_statement": False}, static=False,
         replace=(A1_STATEMENT, "(h : ∀ a b : S, a * (b * a) = b)\n" + A1_STATEMENT)),
    Case("answer-changed", "a changed answer value is a different problem (static layers)", A2, "sorry",
         {"frozen_statement": False}, replace=("putnam_1986_a2_solution : ℕ := 3", "putnam_1986_a2_solution : ℕ := 4")),
]


class _NoStatic(LeanProver):
    def static_layers(self, task: Task, text: str) -> list[Layer]:
        return []


def _candidate(task: Task, case: Case) -> str:
    text = task.template.replace(*case.replace) if case.replace[0] else task.template
    hole, theorem = text.rindex("sorry"), text.index("theorem ")
    doc = text.rfind("/--", 0, theorem)
    insert_at = doc if doc != -1 and "-/" in text[doc:theorem] else theorem
    return text[:insert_at] + case.before + text[insert_at:hole] + case.proof + text[hole + len("sorry"):]


def _divergences(case: Case, verdict: Verdict) -> list[str]:
    layers = {layer.name: layer for layer in verdict.layers}
    found = []
    for name, expected in case.expect.items():
        layer = layers.get(name)
        if layer is None:
            found.append(f"layer {name} did not run (expected ok={expected}); verdict: {verdict.reason}")
        elif layer.ok is not expected:
            found.append(f"layer {name}: expected ok={expected}, got ok={layer.ok}: {layer.reason[:300]}")
    if case.axioms is not None and tuple(verdict.axioms) != case.axioms and "axiom_audit" in layers:
        found.append(f"axioms: expected {list(case.axioms)}, got {list(verdict.axioms)}")
    if case.message:
        severity, text = case.message.split(":", 1)
        messages = layers["elaboration"].evidence.get("messages", []) if "elaboration" in layers else []
        if not any(m.get("severity") == severity and text in str(m.get("data", "")) and m.get("source") is None
                   for m in messages):
            found.append(f"no Lean {severity} message containing {text!r} among {len(messages)} messages")
    return found


def _elan_proxy(prover: LeanProver) -> list[str]:
    """The `leanchecker` on PATH: on a toolchain without one, elan's proxy must fail with E2's message and the
    backend must not use it (it looks only in $LEAN_SYSROOT/bin)."""
    found = shutil.which("leanchecker")
    sysroot = prover.sysroot
    if found is None or sysroot is None or (sysroot / "bin" / "leanchecker").exists():
        return []
    proc = subprocess.run([found], cwd=prover.project, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode == 0 or "does not have the binary" not in proc.stderr:
        return [(f"`leanchecker` on PATH ({found}) without one in the toolchain did not fail with elan's "
                f"'does not have the binary' (exit {proc.returncode}): {proc.stderr.strip()[:200]}")]
    return []


#: Exit status of a track: every check passed, some failed, the track is not installed here.
TRACK_OK, TRACK_FAILED, TRACK_MISSING = 0, 1, 2


def _rocq_track(args: argparse.Namespace) -> int:
    from pytest_forall.lang.rocq.doctor import run

    return run({}, args.timeout)


def _tracks() -> dict[str, Callable[[argparse.Namespace], int]]:
    """Track name (the language pack's) -> its checks; each returns 0 ok, 1 a check failed, 2 not installed."""
    from pytest_forall.lang.lean import LANGUAGE as LEAN
    from pytest_forall.lang.rocq import LANGUAGE as ROCQ

    return {ROCQ.name: _rocq_track, LEAN.name: _lean_track}


def run_doctor(args: argparse.Namespace) -> int:
    """Each track checked separately, with its own status; ``--track`` checks one and exits with its status.

    All tracks: 1 if an installed track failed a check, else 0 if at least one track is ready, else 2."""
    tracks = _tracks()
    chosen = [args.track] if args.track else list(tracks)
    statuses: dict[str, int] = {}
    for name in chosen:
        print(f"== forall doctor: the {name} track")
        statuses[name] = tracks[name](args)
        word = {TRACK_OK: "ready", TRACK_FAILED: "FAILED a check", TRACK_MISSING: "not installed"}
        print(f"== {name}: {word.get(statuses[name], 'exit ' + str(statuses[name]))} (exit {statuses[name]})")
    if args.track:
        return statuses[args.track]
    if TRACK_FAILED in statuses.values():
        return TRACK_FAILED
    return TRACK_OK if TRACK_OK in statuses.values() else TRACK_MISSING


def putnam_checkout(given: str) -> tuple[Path | None, str]:
    """(PutnamBench, "") where pytest finds it (--putnam-root, PUTNAMBENCH_ROOT, else the suite manifest's
    ``default_root`` beside this clone), or (None, why not): doctor and pytest never disagree on it (issue 33)."""
    import tomllib

    from pytest_forall.core.errors import UsageError
    from pytest_forall.suites.putnam import putnam_root

    manifest = Path(__file__).resolve().parents[2] / "benchmarks" / "putnam" / "putnam.forall.toml"
    try:
        default = str(tomllib.loads(manifest.read_text(encoding="utf-8")).get("default_root", ""))
    except (OSError, ValueError):
        default = ""  # an installed package without the clone's benchmarks/: only the option and the variable
    try:
        return putnam_root({"putnam_root": given, "rootdir": str(Path.cwd())}, manifest.parent, default), ""
    except UsageError as exc:
        return None, str(exc)


def _lean_track(args: argparse.Namespace) -> int:
    root, why = putnam_checkout(args.putnam_root)
    source = (root or Path(".")) / "lean4" / "src"
    if root is None or not source.is_dir():
        print(f"forall doctor: PutnamBench's Lean track not found: {why or f'no {source}'}; set PUTNAMBENCH_ROOT or "
              "pass --putnam-root")
        return 2
    with tempfile.TemporaryDirectory(prefix="forall-doctor-") as cache:
        return _run_cases(source, {k: v for k, v in {"lean_project": args.project, "cache_dir": cache}.items() if v},
                          args.timeout)


def _run_cases(source: Path, options: dict[str, Any], timeout: float) -> int:
    prover = LeanProver(options)
    problem = prover.probe(Path.cwd())
    if problem:
        print(f"forall doctor: no usable Lean toolchain: {problem}")
        return 2
    print(f"forall doctor: {prover.version() or 'lean (version unknown)'}; project {prover.project}")
    divergences = 0
    for case in CASES:
        task = parse_lean(case.problem, source / f"{case.problem}.lean",
                          (source / f"{case.problem}.lean").read_text(encoding="utf-8"))
        judge = LeanProver(dict(prover.options)) if case.static else _NoStatic(dict(prover.options))
        verdict = verify_candidate(task, judge, _candidate(task, case).encode("utf-8"), timeout=timeout)
        found = _divergences(case, verdict)
        divergences += len(found)
        print(f"{'ok  ' if not found else 'DIVERGENCE'} {case.name}: {case.what}")
        for line in found:
            print(f"      {line}")
    proxy = _elan_proxy(prover)
    divergences += len(proxy)
    print(f"{'ok  ' if not proxy else 'DIVERGENCE'} elan-proxy: a `leanchecker` proxy is never taken for a checker")
    for line in proxy:
        print(f"      {line}")
    print(f"forall doctor: {len(CASES) + 1} checks, {divergences} divergence(s)")
    return 0 if divergences == 0 else 1


def add_cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("doctor", help="Check each prover track of this machine (Rocq, Lean) separately",
                            description="Rocq track: coqc/coqchk versions, the libraries PutnamBench imports, the "
                                        "judge plugin build, bwrap, a proof accepted and a cheat rejected. Lean "
                                        "track: the shipped conformance set (PutnamBench problems, our candidates), "
                                        "every divergence printed. Per track: exit 0 ready, 1 a check failed or "
                                        "diverged, 2 not installed (or no PutnamBench for Lean). --track T exits "
                                        "with T's status; all tracks: 1 if any failed, else 0 if any is ready, "
                                        "else 2.")
    parser.add_argument("--track", choices=sorted(_tracks()), default="",
                        help="Check one track only and exit with its status (default: every track)")
    parser.add_argument("--project", default="", help="Lake project (default lean_env/putnam)")
    parser.add_argument("--putnam-root", default="", help="PutnamBench checkout (default: $PUTNAMBENCH_ROOT, else "
                        "../shared/benchmarks/PutnamBench beside the clone, as pytest finds it)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per Lean call")
    parser.set_defaults(func=run_doctor)
