"""A/B: median `forall verify` wall time per candidate: a checkout of the old verifier (FORALL_BASE_TREE, here
commit 85204ce) against this tree with the judge, sandboxed and not; same machine, interleaved runs, warm caches."""
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tests" / "cheats" / "valid"
NAMES = ["putnam_2001_a1", "putnam_1997_a4", "putnam_2000_a2", "putnam_2008_a1", "classical_excluded_middle",
         "mathcomp_boolp_is_strict"]
CONFIGS = {"old": (os.environ["FORALL_BASE_TREE"], "pytest_forall.core.verify", []),
           "judge+sandbox": (str(ROOT.parents[2]), "pytest_forall.core.verify", []),
           "judge, --sandbox none": (str(ROOT.parents[2]), "pytest_forall.core.verify", ["--sandbox", "none"])}
REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
times = {c: {n: [] for n in NAMES} for c in CONFIGS}
for rep in range(REPS + 1):  # rep 0 warms the template caches and is not counted
    for name in NAMES:
        for config, (tree, module, extra) in CONFIGS.items():
            env = {**os.environ, "PYTHONPATH": tree, "PUTNAMBENCH_ROOT": os.environ["PUTNAMBENCH_ROOT"]}
            argv = [sys.executable, "-m", module, "--prover", "rocq", "--template", str(ROOT / name / "template"),
                    "--candidate", str(ROOT / name / "candidate.v"), "--json",
                    "--cache-dir", f"/tmp/measure-{config.split()[0].strip(',')}", *extra]
            t = time.monotonic()
            out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd="/tmp", check=False)
            dt = time.monotonic() - t
            verdict = json.loads(out.stdout)["verdict"]
            assert verdict == "accept", (config, name, out.stdout[-500:])
            if rep:
                times[config][name].append(dt)
print(f"{'candidate':<28}" + "".join(f"{c:>24}" for c in CONFIGS))
for name in NAMES:
    print(f"{name:<28}" + "".join(f"{statistics.median(times[c][name]):>24.2f}" for c in CONFIGS))
print(f"{'median of all runs':<28}" + "".join(
    f"{statistics.median([x for n in NAMES for x in times[c][n]]):>24.2f}" for c in CONFIGS))
print("load average:", Path("/proc/loadavg").read_text().split()[:3])
