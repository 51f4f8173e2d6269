"""CI gating: stable shards, a regression baseline and the comparison of a run with it (pytest-free).

A result row (one line of results.jsonl) names its task by suite, track and task id; that triple, not the
pytest node id, is what shards and baselines key on, so moving a manifest changes neither.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_forall.core.model import INFRA, RULES_ONLY, STRICT

#: Values of ``forall.change``. ``unconfirmed``: the item is infra now, so nothing was judged (an infra cause
#: is never a regression, and never a confirmation either).
CHANGES = ("regressed", "fixed", "same", "new", "unconfirmed")
GATES = ("none", "regressions")


def task_key(suite: str, track: str, task_id: str) -> str:
    return f"{suite}::{track}::{task_id}"


def row_key(row: dict[str, Any]) -> str:
    return task_key(str(row.get("suite", "")), str(row.get("track", "")), str(row.get("task_id", "")))


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` with 1 <= K <= N, else ValueError saying what is wrong."""
    head, sep, tail = text.partition("/")
    try:
        k, n = int(head), int(tail)
    except ValueError:
        raise ValueError(f"{text!r} is not K/N (e.g. 2/4)") from None
    if not sep or n < 1 or not 1 <= k <= n:
        raise ValueError(f"{text!r}: need 1 <= K <= N")
    return k, n


def shard_of(key: str, count: int) -> int:
    """The shard (1-based) of a task: a hash of its key, so it stays put across runs and machines."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % count + 1


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a results.jsonl (the one reader, :func:`pytest_forall.core.outcomes.read_results`)."""
    from pytest_forall.core.outcomes import read_results

    return read_results(path).rows


def results_file(path: Path) -> Path:
    """``path`` when it is a file, else ``path/results.jsonl``; ValueError when there is none."""
    target = path if path.is_file() else path / "results.jsonl"
    if not target.is_file():
        raise ValueError(f"{path}: no results.jsonl (pass a run directory or a results.jsonl file)")
    return target


def latest_by_nodeid(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last row of every item (a resumed run appends)."""
    return {str(row["nodeid"]): row for row in rows}


def load_baseline(path: Path) -> dict[str, dict[str, Any]]:
    """The baseline's last row per task key."""
    return {row_key(row): row for row in latest_by_nodeid(read_rows(results_file(path))).values()}


def _passed(outcome: Any, require_strict: bool) -> bool:
    return outcome == STRICT or (outcome == RULES_ONLY and not require_strict)


def change(before: dict[str, Any] | None, now: dict[str, Any], require_strict: bool = False) -> str:
    """regressed / fixed / same / new / unconfirmed (see :data:`CHANGES`).

    A pass (strict, or rules-only unless strict is required) that is no longer a pass is a regression,
    and strict falling to rules-only is one too; statement_false counts as not passed. An infra baseline
    row is not a judgement: a pass after it is ``fixed`` and a failure after it ``same`` would claim too
    much, so both are ``new``.
    """
    if now.get("outcome") == INFRA:
        return "unconfirmed"
    if before is None or before.get("outcome") == INFRA:
        return "new"
    was, now_passed = _passed(before.get("outcome"), require_strict), _passed(now.get("outcome"), require_strict)
    if was and not now_passed:
        return "regressed"
    if was and before.get("outcome") == STRICT and now.get("outcome") == RULES_ONLY:
        return "regressed"
    if not was and now_passed:
        return "fixed"
    return "same"


def cause(before: dict[str, Any] | None, now: dict[str, Any]) -> str:
    """What differs between the two runs of one task: the statement, the environment, the proof, the verifier."""
    if before is None:
        return ""
    found = []
    fields: tuple[tuple[str, str], ...] = (
        ("task_digest", "statement changed"), ("environment", "environment changed"),
        ("candidate_digest", "proof changed"), ("verifier", "verifier changed"))
    if before.get("kernel_statement") and now.get("kernel_statement"):
        # the prover named the statement and what it rests on (project mode): its words, not the template's text
        fields = (("kernel_statement", "statement changed"),
                  ("kernel_context", "a definition it depends on changed"),
                  ("kernel_lemmas", "a lemma before it changed"),
                  ("proof_digest" if before.get("proof_digest") else "candidate_digest", "proof changed"),
                  ("environment", "environment changed"),
                  ("verifier", "verifier changed"))
    for field, what in fields:
        old, new = before.get(field), now.get(field)
        if old and new and old != new:
            found.append(what)
        elif not old or not new:
            found.append(f"{field} not recorded")
    if (before.get("declared_axioms") or "") != (now.get("declared_axioms") or ""):
        # the maintainer's --forall-project-axioms (absent from both: none declared)
        found.append("the declared project axioms changed")
    return ", ".join(found) if found else "nothing recorded changed"


def annotate(baseline: dict[str, dict[str, Any]], row: dict[str, Any], require_strict: bool = False) -> None:
    """Add ``change``, ``change_cause`` and ``baseline_outcome`` to a result row (in place)."""
    before = baseline.get(row_key(row))
    row["change"] = change(before, row, require_strict)
    row["baseline_outcome"] = before.get("outcome") if before else None
    row["change_cause"] = cause(before, row) if row["change"] in ("regressed", "fixed") else ""
    if (before and row["change"] == "same" and _passed(row.get("outcome"), False)
            and before.get("kernel_statement") and row.get("kernel_statement")
            and before["kernel_statement"] != row["kernel_statement"]):
        # statement drift: the proof still passes, but of another statement (what reviewers miss)
        row["change_cause"] = "statement changed (still passes)"


def gate_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Summary lines about the baseline: regressions first (each with its cause), then the counts."""
    annotated = [r for r in rows if r.get("change")]
    if not annotated:
        return []
    lines = []
    regressed = sorted((r for r in annotated if r["change"] == "regressed"), key=lambda r: str(r.get("nodeid")))
    for row in regressed:
        lines.append(f"REGRESSED {row.get('nodeid')}: {row.get('baseline_outcome')} -> {row.get('outcome')} "
                     f"({row.get('change_cause') or 'cause unknown'}): {str(row.get('reason', ''))[:160]}")
    for row in sorted((r for r in annotated if r.get("change_cause") == "statement changed (still passes)"),
                      key=lambda r: str(r.get("nodeid"))):
        lines.append(f"STATEMENT CHANGED {row.get('nodeid')}: still {row.get('outcome')}, but its statement is not "
                     f"the baseline's")
    counts = {c: sum(1 for r in annotated if r["change"] == c) for c in CHANGES}
    lines.append("baseline: " + ", ".join(f"{counts[c]} {c}" for c in CHANGES))
    churn = sum(1 for r in regressed if "statement changed" in str(r.get("change_cause")))
    env = sum(1 for r in regressed if "environment changed" in str(r.get("change_cause")))
    if regressed:
        lines.append(f"of {len(regressed)} regressions: {churn} with the statement changed (template churn), "
                     f"{env} with the environment changed")
    fixed = [str(r.get("nodeid")) for r in annotated if r["change"] == "fixed"]
    if fixed:
        lines.append(f"fixed: {', '.join(sorted(fixed)[:10])}{' …' if len(fixed) > 10 else ''}")
    unconfirmed = [r for r in annotated if r["change"] == "unconfirmed" and _passed(r.get("baseline_outcome"), False)]
    if unconfirmed:
        lines.append(f"{len(unconfirmed)} baseline passes not confirmed (infra now, not judged)")
    return lines
