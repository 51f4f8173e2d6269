"""The strategy tests' one search-and-verify (tests/test_audit_strategies_v4.py, v5, tests/test_generated_witnesses.py):
a small template searched once per module with some strategies, and the check that a new strategy certifies what the
former ones missed. It was copied into each of those files; one copy now, whose prover shares the run's prover cache
(``shared_prover_cache``: the judge plugin built once per run, not once per case)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from conftest import require_tool
from pytest_forall.core.audit import audit_pack, derived_tasks
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.problem import parse_coq

REALS = "Require Import Reals.\nOpen Scope R_scope.\n"
MATHCOMP_REALS = ("From mathcomp Require Import all_algebra all_ssreflect.\nFrom mathcomp Require Import reals.\n"
                  "Local Open Scope ring_scope.\nVariable R : realType.\n")
#: a module's searches by case name: (the search, its derived tasks, the prover)
Searched = dict[str, tuple[Any, dict[str, Any], Any]]


def closed(log: str) -> dict[str, bool]:
    """{strategy: whether it closed a goal} from the log's per-strategy spend line."""
    spend = next(line for line in log.splitlines() if line.startswith("audit strategies: "))
    return {m.group(1): bool(m.group(2)) for m in re.finditer(r"([\w-]+) [0-9.]+ s \(\d+(, closed)?\)", spend)}


def search_case(cache: Searched, root: Path, name: str, text: str, strategies: frozenset[str],
                prover_cache: Path | None = None) -> tuple[Any, dict[str, Any], Any]:
    """The search of ``text`` (theorem ``name``) with ``strategies`` only, at 20 s of CPU, run once per ``cache`` (a
    module-scoped dict); ``prover_cache``: the prover's cache directory (the run's shared one), else its own."""
    from pytest_forall.lang.rocq.backend import RocqProver

    if name not in cache:
        require_tool("coqtop")
        where = root / name
        where.mkdir()
        path = where / f"{name}.v"
        path.write_text(text)
        task = parse_coq(name, path, text)
        prover = RocqProver({"cache_dir": str(prover_cache or where / "cache")})
        derived = derived_tasks(task)
        pack = audit_pack("rocq")
        assert pack is not None
        (where / "ws").mkdir()
        search = pack.search(task, derived, prover, where / "ws", time.monotonic() + 300, cpu_seconds=20.0,
                             strategies=strategies)  # type: ignore[call-arg]
        cache[name] = (search, derived, prover)
    return cache[name]


def assert_the_new_strategy_certifies(found: tuple[Any, dict[str, Any], Any], former: tuple[str, ...], new: str,
                                      finding: str, shown: str | None) -> None:
    """The log shows ``new`` closing the goal and none of ``former`` (the search stops at the first success, and runs
    the former ones first); the one certificate is for ``finding``, its counterexample line shows ``shown`` (unless
    None), and the full verifier accepts it."""
    search, derived, prover = found
    ran = closed(search.log)
    assert {strategy: ran.get(strategy) for strategy in (*former, new)} == {
        **{strategy: False for strategy in former}, new: True}, search.log[-2000:]
    assert set(search.certificates) == {finding}, search.log[-2000:]
    if shown is not None:
        assert shown in search.log.rsplit("audit counterexample: ", 1)[-1], search.log[-1000:]
    verdict = verify_candidate(derived[finding], prover, search.certificates[finding].encode())
    assert verdict.accepted, verdict.reason
