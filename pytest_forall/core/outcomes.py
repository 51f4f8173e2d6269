"""The one outcome model: every way an item can stop, by its machine-readable name (``forall.stop``).

The protocol never picks an outcome itself: it names why the item stopped and :func:`outcome_of` says which
outcome that is, so "failed" and "infra" are decided here and nowhere else (docs/outcomes.md). The rule:
``failed`` means the item's own attempt ran and its budget ran out or the verifier refused; ``infra`` means
something outside the attempt stopped it (a spend cap, a provider or toolchain fault, a turn that spent
nothing or timed out without an answer) and the item is resumable.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_forall.core.model import (
    FAILED,
    INFRA,
    INNER_VACUOUS,
    RULES_ONLY,
    STATEMENT_FALSE,
    STRICT,
    VACUOUS,
)

#: stop name -> (outcome, what it means). docs/outcomes.md lists the same table (a test compares them).
STOPS: dict[str, tuple[str, str]] = {
    "accepted": (STRICT, "verifier and reviewer accepted the candidate; every axiom on the strict list"),
    "accepted-rules-only": (RULES_ONLY, "accepted by the benchmark's own rule, not by the strict axiom list"),
    "refuted": (STATEMENT_FALSE, "a refutation of the statement passed the verifier; for human review"),
    "claimed-false": (STATEMENT_FALSE, "the actor claims the statement is false; no refutation format to check"),
    "vacuous": (VACUOUS, "a proof that the hypotheses contradict each other passed the verifier; never a pass"),
    "inner-vacuous": (INNER_VACUOUS,
                      "a proof that a premise inside the conclusion can never hold passed the verifier; never a pass"),
    "rounds": (FAILED, "the round budget of the last sample ran out"),
    "compiles": (FAILED, "the compile budget of the last sample ran out"),
    "reviews": (FAILED, "the review budget ran out"),
    "wall": (FAILED, "the item's wall-time budget ran out while its attempt ran"),
    "gave-up": (FAILED, "the frontend stopped (no tactic closed the goal, stored proof rejected or absent)"),
    "malformed-task": (FAILED, "the problem file itself is malformed"),
    "run-usd": (INFRA, "the run-wide spend cap (--forall-run-usd) was reached; resume with a higher cap"),
    "item-usd": (INFRA, "the item's spend cap (--forall-usd) was reached; resume with a higher cap"),
    "authentication": (INFRA, "the provider refused the credential (401/403, not logged in)"),
    "quota": (INFRA, "the provider's quota, credit or billing limit"),
    "rate-limit": (INFRA, "the provider rate-limited the requests (429)"),
    "provider-error": (INFRA, "the provider failed (5xx, overloaded)"),
    "provider-unreachable": (INFRA, "the provider could not be reached"),
    "provider-unresponsive": (INFRA, "no output from the agent CLI for --forall-stall seconds; killed"),
    "turn-timeout": (INFRA, "a turn was killed at its time limit without any answer from the model"),
    "zero-tokens": (INFRA, "a turn spent no tokens (provider or credential problem)"),
    "never-ran": (INFRA, "an offline frontend tried nothing (0 compiles, no candidate)"),
    "cli-missing": (INFRA, "the agent CLI is not installed"),
    "sandbox": (INFRA, "the sandbox could not be built"),
    "probe": (INFRA, "the prover, frontend or reviewer is not usable here"),
    "template": (INFRA, "the unmodified problem does not compile here"),
    "verifier": (INFRA, "a verifier layer failed for a toolchain or machine reason"),
    "frontend-error": (INFRA, "the frontend failed for a reason of its own, not a proof failure"),
    "worker-crashed": (INFRA, "the process running the item died (xdist worker crash)"),
}
FINAL_OUTCOMES = (STRICT, RULES_ONLY, FAILED, STATEMENT_FALSE, VACUOUS, INNER_VACUOUS)


def outcome_of(stop: str) -> str:
    """The outcome of an item that stopped for ``stop`` (a key of :data:`STOPS`)."""
    return STOPS[stop][0]


def is_final(outcome: str) -> bool:
    """Final outcomes are not re-run by ``--forall-resume``; infra always is."""
    return outcome in FINAL_OUTCOMES


def infra_stop(cause: str) -> str:
    """The stop name of an infra reason ``"<cause>: <evidence>"``, whoever produced it."""
    head = cause.split(":", 1)[0].strip()
    return head if head in STOPS and outcome_of(head) == INFRA else "frontend-error"


@dataclass
class Results:
    """The rows of a ``results.jsonl`` and the lines that were not rows (a torn write, a stray edit)."""

    path: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    #: (line number, start of the line, why) of every line skipped: ``torn final line`` (the last line, cut off
    #: before its newline: a writer killed mid-line), ``malformed`` (not JSON) or JSON without a ``nodeid`` and an
    #: ``outcome``
    skipped: list[tuple[int, str, str]] = field(default_factory=list)

    def latest(self) -> dict[str, dict[str, Any]]:
        """The last recorded row of every item (a resumed run appends)."""
        return {str(row["nodeid"]): row for row in self.rows}

    def notices(self) -> list[str]:
        """What the reader skipped, for the summary: a skipped line must never go unsaid."""
        return [f"{self.path}:{number}: skipped a line that is not a results row ({why}): {start!r}"
                for number, start, why in self.skipped]


def read_results(path: Path) -> Results:
    """Every row of ``path``; lines that are not rows are skipped and reported, never fatal, never silent."""
    results = Results(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError:
            torn = number == len(lines) and not text.endswith("\n")
            results.skipped.append((number, line[:80], "torn final line" if torn else "malformed"))
            continue
        if not isinstance(row, dict) or not isinstance(row.get("nodeid"), str) or "outcome" not in row:
            results.skipped.append((number, line[:80], "JSON without a nodeid and an outcome"))
            continue
        results.rows.append(row)
    return results


def shorten(text: str, width: int = 160) -> str:
    """``text`` on one line, cut at a word boundary (a reason is never cut mid-word)."""
    return textwrap.shorten(" ".join(text.split()), width, placeholder=" …")
