"""Count Lean processes and module loads per candidate from the stand-in's log (docs/lean.md, "Per-candidate cost").

usage: PUTNAMBENCH_ROOT=… PYTHONPATH=<tree> python scripts/lean_cost.py <standin-dir>

``<tree>`` is the pytest-forall tree whose backend is measured (e.g. ``git archive`` of an older commit);
``<standin-dir>`` the stand-in that logs (this tree's ``tests/standin``). Three accepted candidates in one process.
"""
import json
import os
import sys
import tempfile
from pathlib import Path

standin = Path(sys.argv[1]).resolve()
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.lean.backend import DEFAULT_PROJECT, LeanProver

tmp = Path(tempfile.mkdtemp())
root = tmp / "project"
lib = root / ".lake/packages/mathlib/.lake/build/lib/lean"
lib.mkdir(parents=True)
(lib / "Mathlib.olean").write_text(json.dumps({"standin": "olean", "module": "Mathlib", "imports": [], "decls": {}}))
for name in ("lakefile.toml", "lean-toolchain"):
    (root / name).write_text((DEFAULT_PROJECT / name).read_text())
(root / "lake-manifest.json").write_text(json.dumps({"version": "1.1.0", "packagesDir": ".lake/packages",
                                                     "packages": [{"name": "mathlib"}]}))
checker_bin = tmp / "checker-bin"
checker_bin.mkdir()
(checker_bin / "leanchecker").symlink_to(standin / "checker" / "leanchecker")
toolchain = tmp / "toolchain" / "bin"
toolchain.mkdir(parents=True)
for n in ("lean", "lake"):
    (toolchain / n).symlink_to(standin / n)
(toolchain / "leanchecker").symlink_to(standin / "checker" / "leanchecker")
os.environ["PATH"] = f"{toolchain}:{checker_bin}:{Path(sys.executable).parent}:/usr/bin:/bin"
log = tmp / "log.jsonl"
os.environ["STANDIN_LOG"] = str(log)
task = task_from_template("lean", Path(os.environ["PUTNAMBENCH_ROOT"]) / "lean4/src/putnam_2001_a1.lean")
proof = "by\n  intro a b\n  have h1 := hS b a\n  have h2 := hS (b * a) b\n  rw [h1] at h2\n  exact h2"
text = task.template[:task.template.rindex("sorry")] + proof + "\n"
prover = LeanProver({"lean_project": str(root), "cache_dir": str(tmp / "cache")})
marks = [0]
for extra in ("", "\n", "\n\n"):
    verdict = verify_candidate(task, prover, (text + extra).encode(), timeout=60)
    assert verdict.verdict == "accept", verdict.reason
    marks.append(len(log.read_text().splitlines()))
lines = [json.loads(l) for l in log.read_text().splitlines()]
for i in range(3):
    part = lines[marks[i]:marks[i + 1]]
    tools = [p["tool"] for p in part]
    loads = sum(p.get("loaded", []).count("Mathlib") for p in part)
    replays = sum(len(p.get("replayed", [])) for p in part)
    print(f"candidate {i + 1}: processes {len(tools)} ({', '.join(tools)}); Mathlib loads {loads}; "
          f"modules replayed by the checker {replays}")
