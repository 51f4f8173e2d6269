"""Latency of the actor's goals/try over the warm session vs a plain ``coqc`` of the same file (docs/measurements.md).

Usage: ``PYTHONPATH=. python scripts/measure_proof_tools.py [PUTNAMBENCH_ROOT]``. Each figure is the median of 7 calls
through the item's MCP server over HTTP from one client (as an agent's CLI keeps one), after one cold call.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from pytest_forall.core import workspace as ws
from pytest_forall.core.actor import ACTOR
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.problem import parse_coq
from pytest_forall.tools.item import TOOL_CALLS, ItemTools, ToolContext, read_records

TASK_ID = "putnam_1965_a5"
PROOF = "Proof.\nintros n hn.\n" + "".join(
    f"assert (h{k} : {k} + 0 = {k}) by reflexivity.\n" for k in range(1, 29)) + "unfold putnam_1965_a5_solution.\nAdmitted.\n"


async def session_figures(url: str, candidate: Path, text: str, lines: int) -> tuple[dict[str, list[float]], float]:
    """One MCP client for every call, as an agent's CLI keeps one: the figures are the calls, not the handshakes."""
    from mcp import Client

    async with Client(url, read_timeout_seconds=300) as client:
        async def ask(tool: str, **arguments: Any) -> float:
            started = time.monotonic()
            result = await client.call_tool(tool, arguments)
            took = time.monotonic() - started
            assert not result.is_error and "status: ok" in str(result.content), result
            return took

        last = lines - 1  # the last tactic, before the closing Admitted.
        cold = await ask("goals", line=last)
        figures = {"goals at the end, file unchanged": [await ask("goals", line=last) for _ in range(7)],
                   "try one tactic at the end": [await ask("try", tactics="simpl.", line=last) for _ in range(7)],
                   "goals at line 6 (after intros)": [await ask("goals", line=6) for _ in range(7)]}
        edited = []
        for k in range(7):  # the last line edited between calls: one sentence re-run
            candidate.write_text(text.replace("unfold putnam_1965_a5_solution.",
                                              f"idtac {k}; unfold putnam_1965_a5_solution."), encoding="utf-8")
            edited.append(await ask("goals", line=last))
        figures["goals at the end after editing the last line"] = edited
    return figures, cold


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "PUTNAMBENCH_ROOT", Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "PutnamBench"))
    source = root / "coq" / "src" / f"{TASK_ID}.v"
    task = parse_coq(TASK_ID, source, source.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        workspace = ws.prepare(work / "ws", "w", task, reset=True)
        candidate = workspace / task.candidate_name
        text = task.template.replace("Proof. Admitted.", PROOF)
        candidate.write_text(text, encoding="utf-8")
        lines = len(text.splitlines())
        coqc: list[float] = []
        for _ in range(5):
            started = time.monotonic()
            subprocess.run(["coqc", "-q", candidate.name], cwd=workspace, check=True, capture_output=True)
            coqc.append(time.monotonic() - started)
        context = ToolContext(task=task, role=ACTOR, workspace=workspace, audit_dir=work / "audit", prover="rocq",
                              prover_options={"cache_dir": str(work / "cache")}, timeout=120,
                              excluded=(task.theorem_name,))
        with ItemTools(context, RocqProver({"cache_dir": str(work / "cache")})) as tools:
            figures, cold = anyio.run(session_figures, tools.url, candidate, text, lines)
            server = [c["seconds"] for c in read_records(context.audit_dir, TOOL_CALLS, tools.key)[0]
                      if c["tool"] in ("goals", "try")][1:]
    print(f"file: {TASK_ID} with a {lines - 4}-line proof ({lines} lines)")
    print(f"coqc of the file: median {statistics.median(coqc):.3f} s (min {min(coqc):.3f})")
    print(f"first goals (cold: coqtop start, mathcomp imports, the whole file): {cold:.3f} s")
    for name, values in figures.items():
        print(f"{name}: median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})")
    print(f"server side (tool log seconds) of the 28 warm calls: median {statistics.median(server):.3f} s, "
          f"max {max(server):.3f} s")


if __name__ == "__main__":
    main()
