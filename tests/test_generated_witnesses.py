"""The statement audit's evaluated and saturated refutations (issue 34, the generated corpus's misses).

Each template is a miss of the former search, in kind: a finite sum or a binomial coefficient at literal arguments
that no closer computed, and a swapped quantifier order (``exists k, forall n``) whose refutation needs two
instances of the same hypothesis together; and putnam_1962_b5, whose refutation the former search finds only just
within its budget. One search per template runs the former strategy that tries that
instance and then the new one, in the search's order: the log must show the new one closing the goal (the search
stops at the first success, so the former one did not), and the certificate must pass the full verifier.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import PUTNAM, require_path, require_tool
from pytest_forall.core.audit import AUDIT_FALSE, audit_pack, derived_tasks
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.problem import parse_coq

COQUELICOT = "Require Import Reals Coquelicot.Coquelicot.\nOpen Scope R_scope.\n"
#: (template, or None for PutnamBench's, the former strategies that try the refuting instance, the new strategy
#: that refutes it)
CASES = {
    # a function witness (a := fun _ => 1) and a sum at a literal bound (n := 0), refuted once the sum is computed
    "sums": (f"{COQUELICOT}Theorem sums (a : nat -> R) (n : nat) (h : a O = 1) : sum_n a n < 1.\nProof. Admitted.\n",
             ("backtracking",), "evaluated-backtracking"),
    # the binomial coefficient at n = k = 0: C 0 0 = 1, not INR 0
    "binomial": (("Require Import Reals Binomial.\nOpen Scope R_scope.\n"
                 "Theorem binomial : forall n k : nat, le k n -> Binomial.C n k = INR n.\nProof. Admitted.\n"),
                 ("same-value", "backtracking"), "evaluated-same-value"),
    # exists k, forall n: n = 1 gives k = 1 and n = 2 gives 4 = 2 * k (one instance alone is satisfiable)
    "swapped": (("Require Import Reals.\nOpen Scope R_scope.\n"
                "Theorem swapped (A : nat -> R := fun n => INR (n * n)) :\n"
                "    exists k : R, forall n : nat, A n = INR n * k.\nProof. Admitted.\n"),
                ("refute-direct", "backtracking-deep"), "refute-saturation"),
    # PutnamBench's own statement, false at n = 2 (10/6 < 5/4 fails): the rational decider alone on each same-value
    # instance, where ``backtracking``'s closers spend 3.4-3.8 s of its 4 s before the decider (a fragile flag)
    "putnam_1962_b5": (None, ("same-value",), "rational-same-value"),
}


@pytest.fixture(scope="module")
def searched() -> dict[str, tuple[Any, dict[str, Any], Any]]:
    """Each case's search, run once for the module (each is one coqtop session)."""
    return {}


def closed(log: str) -> dict[str, bool]:
    """{strategy: whether it closed a goal} from the log's per-strategy spend line."""
    spend = next(line for line in log.splitlines() if line.startswith("audit strategies: "))
    return {m.group(1): bool(m.group(2)) for m in re.finditer(r"([\w-]+) [0-9.]+ s \(\d+(, closed)?\)", spend)}


def _search(cache: dict[str, tuple[Any, dict[str, Any], Any]], root: Path,
            name: str) -> tuple[Any, dict[str, Any], Any]:
    from pytest_forall.lang.rocq.backend import RocqProver

    if name not in cache:
        require_tool("coqtop")
        template, former, new = CASES[name]
        text = template or require_path(PUTNAM / "coq" / "src" / f"{name}.v", "PutnamBench").read_text()
        where = root / name
        where.mkdir()
        path = where / f"{name}.v"
        path.write_text(text)
        task = parse_coq(name, path, text)
        prover = RocqProver({"cache_dir": str(where / "cache")})
        derived = derived_tasks(task)
        pack = audit_pack("rocq")
        assert pack is not None
        (where / "ws").mkdir()
        search = pack.search(task, derived, prover, where / "ws", time.monotonic() + 300, cpu_seconds=20.0,
                             strategies=frozenset({*former, new}))  # type: ignore[call-arg]
        cache[name] = (search, derived, prover)
    return cache[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_evaluated_or_saturated_refutation_is_found_where_the_former_search_was_not(
        searched: dict[str, tuple[Any, dict[str, Any], Any]], tmp_path_factory: pytest.TempPathFactory,
        name: str) -> None:
    search, derived, prover = _search(searched, tmp_path_factory.mktemp("witnesses"), name)
    _, former, new = CASES[name]
    ran = closed(search.log)
    assert {strategy: ran.get(strategy) for strategy in (*former, new)} == {
        **{strategy: False for strategy in former}, new: True}, search.log[-2000:]
    assert set(search.certificates) == {AUDIT_FALSE}, search.log[-2000:]
    verdict = verify_candidate(derived[AUDIT_FALSE], prover, search.certificates[AUDIT_FALSE].encode())
    assert verdict.accepted, verdict.reason
