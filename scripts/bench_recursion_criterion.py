"""Median ``verify_candidate`` time per candidate with the judge plugin of a base revision and of the working tree,
in one run, interleaved per candidate (issue 31: the widened recursion criterion's cost). The candidates: every
valid corpus entry on putnam_2001_a1 and the advisory cheats (not advisory_19402_checker_exhausted: 90 s of
coqchk exhaustion, the same either way). Only the plugin (forall_judge.mlg and its shims) differs; the screen is
the working tree's for both.

    PYTHONPATH=$PWD PUTNAMBENCH_ROOT=... python scripts/bench_recursion_criterion.py [BASE_REV]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_forall.core.verify import resolve_template, task_from_template, verify_candidate
from pytest_forall.lang.rocq import judge as judge_module
from pytest_forall.lang.rocq.backend import RocqProver


def main(base: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-recursion-"))
    (work / "compat").mkdir()

    def show(path: str) -> str:
        return subprocess.run(["git", "show", f"{base}:{path}"], capture_output=True, text=True, check=True).stdout

    (work / "forall_judge.mlg").write_text(show("pytest_forall/lang/rocq/forall_judge.mlg"))
    for shim in judge_module.COMPAT_DIR.glob("*.ml"):
        (work / "compat" / shim.name).write_text(show(f"pytest_forall/lang/rocq/judge_compat/{shim.name}"))
    plugins = {"base": (work / "forall_judge.mlg", work / "compat"),
               "tree": (judge_module.PLUGIN_SOURCE, judge_module.COMPAT_DIR)}
    provers = {}
    for name, (source, compat) in plugins.items():  # a backend builds its plugin when made
        judge_module.PLUGIN_SOURCE, judge_module.COMPAT_DIR = source, compat
        provers[name] = RocqProver({"cache_dir": str(work / f"cache-{name}")})
    corpus = Path(__file__).resolve().parents[1] / "tests" / "cheats"
    entries = [p for p in sorted(corpus.glob("*/*")) if (p / "expect.json").is_file()
               and (p / "template").read_text().strip().endswith("putnam_2001_a1.v")
               and json.loads((p / "expect.json").read_text()).get("prover", "rocq") == "rocq"
               and (p.parent.name == "valid" or p.name.startswith("advisory_"))
               and p.name != "advisory_19402_checker_exhausted"]
    times: dict[str, list[float]] = {name: [] for name in plugins}
    for i, entry in enumerate(entries):
        task = task_from_template("rocq", resolve_template(entry / "template"))
        data = next(entry.glob("candidate.*")).read_bytes()
        for name in (("base", "tree") if i % 2 == 0 else ("tree", "base")):
            started = time.monotonic()
            verdict = verify_candidate(task, provers[name], data, builddir=work / f"b-{name}-{entry.name}", timeout=300)
            times[name].append(time.monotonic() - started)
            print(f"{entry.parent.name}/{entry.name} {name}: {verdict.verdict} {times[name][-1]:.2f}s", flush=True)
    print(len(entries), {name: round(statistics.median(t), 2) for name, t in times.items()})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "HEAD")
