"""Measure collection time of the full PutnamBench suite and the harness's per-item overhead.

    python scripts/bench_harness.py [--repeat 5] [--items 200]

Collection: wall time from pytest's ``pytest_collection`` hook to ``pytest_collection_finish`` for all
1,084 PutnamBench items (in process, so interpreter start-up and plugin import are excluded and
reported separately). Overhead: a suite of N items whose prover and frontend do no work (the fake suite
of the tests), timed from ``pytest_runtest_logstart`` to ``pytest_runtest_logfinish`` per item: what the
harness itself costs (workspace, audit record, verifier bookkeeping, results.jsonl, reports).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "tests" / "example_suites"

TIMER_PLUGIN = textwrap.dedent('''
    import time, json, os
    marks = {}
    def pytest_collection(session):
        marks["start"] = time.perf_counter()
    def pytest_collection_finish(session):
        marks["collect"] = time.perf_counter() - marks["start"]
        marks["items"] = len(session.items)
    starts = {}
    per_item = []
    def pytest_runtest_logstart(nodeid, location):
        starts[nodeid] = time.perf_counter()
    def pytest_runtest_logfinish(nodeid, location):
        per_item.append(time.perf_counter() - starts.pop(nodeid))
    def pytest_unconfigure(config):
        marks["per_item"] = per_item
        with open(os.environ["FORALL_BENCH_OUT"], "w") as handle:
            json.dump(marks, handle)
''')


def run_pytest(args: list[str], cwd: Path, env: dict[str, str]) -> dict:
    import json

    out = Path(tempfile.mkstemp(suffix=".json")[1])
    env = {**env, "FORALL_BENCH_OUT": str(out), "PYTHONPATH": str(cwd)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
                    "-p", "forall_bench_timer", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    marks = json.loads(out.read_text())
    marks["process"] = time.perf_counter() - started
    return marks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--items", type=int, default=200)
    args = parser.parse_args()
    putnam = os.environ.get("PUTNAMBENCH_ROOT", str(REPO.parent / "shared" / "benchmarks" / "PutnamBench"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "forall_bench_timer.py").write_text(TIMER_PLUGIN)
        (work / "putnam.forall.toml").write_text((REPO / "benchmarks/putnam/putnam.forall.toml").read_text())
        env = {**os.environ, "PUTNAMBENCH_ROOT": putnam}
        collect = [run_pytest(["--collect-only", "-q"], work, env) for _ in range(args.repeat)]
        times = [m["collect"] for m in collect]
        print(f"collection of {collect[0]['items']} items: median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}, {args.repeat} runs); whole process median "
              f"{statistics.median(m['process'] for m in collect):.2f} s")

        fake = work / "fake"
        fake.mkdir()
        (fake / "forall_bench_timer.py").write_text(TIMER_PLUGIN)
        (fake / "conftest.py").write_text((EXAMPLES / "fake_conftest.py").read_text())
        tasks = "\n".join(f't{i:04d} = "STRICT"' for i in range(args.items))
        (fake / "suite.forall.toml").write_text(f'adapter = "fake"\n[tasks]\n{tasks}\n')
        marks = run_pytest(["--forall-frontend=fake", "--forall-sandbox=none", "-q"], fake, env)
        per_item = marks["per_item"]
        print(f"per-item harness overhead over {len(per_item)} items (no prover work): "
              f"median {statistics.median(per_item) * 1000:.1f} ms, p95 "
              f"{sorted(per_item)[int(len(per_item) * 0.95)] * 1000:.1f} ms, "
              f"mean {statistics.mean(per_item) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
