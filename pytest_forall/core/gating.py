"""CI gating: stable shards, a regression baseline and the comparison of a run with it (pytest-free).

A result row (one line of results.jsonl) names its task by suite, track and task id; that triple, not the
pytest node id, is what shards and baselines key on, so moving a manifest changes neither.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
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
    much, so both are ``new``. A pass whose proof the project now leaves ``Admitted`` (the row says
    ``admitted``) is a regression whatever this run made of it: there is no proof left to confirm.
    """
    was = before is not None and before.get("outcome") != INFRA and _passed(before.get("outcome"), require_strict)
    if was and now.get("admitted") and not _passed(now.get("outcome"), require_strict):
        return "regressed"
    if now.get("outcome") == INFRA:
        return "unconfirmed"
    if before is None or before.get("outcome") == INFRA:
        return "new"
    now_passed = _passed(now.get("outcome"), require_strict)
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


def broken_by_change(before: dict[str, Any] | None, now: dict[str, Any]) -> str:
    """Why an item is infra because the change broke the build ("" when it is not, or nobody can tell).

    The prover names a project file that does not build (``build_break``: the file and its first error); whether
    the change caused that is read from digests, never from the error's text: the sources the item rests on (its
    file's ``coqdep`` cone, ``cone_key``) differ from the baseline's while the environment (toolchain, installed
    libraries) is the baseline's. Same sources: a tool fault (infra stays infra). Both changed: nobody can tell,
    so it stays infra too, and the cause says so.
    """
    broken = str(now.get("build_break") or "")
    if now.get("outcome") != INFRA or not broken or before is None:
        return ""
    old, new = before.get("cone_key"), now.get("cone_key")
    if not old or not new or old == new:
        return ""
    if before.get("environment") and now.get("environment") and before["environment"] != now["environment"]:
        return ""
    return broken


def annotate(baseline: dict[str, dict[str, Any]], row: dict[str, Any], require_strict: bool = False) -> None:
    """Add ``change``, ``change_cause`` and ``baseline_outcome`` to a result row (in place); ``breaks_build`` when
    the item is infra because the change made a file of the project stop compiling (:func:`broken_by_change`)."""
    before = baseline.get(row_key(row))
    row["change"] = change(before, row, require_strict)
    row["baseline_outcome"] = before.get("outcome") if before else None
    row["change_cause"] = cause(before, row) if row["change"] in ("regressed", "fixed") else ""
    if row["change"] == "regressed" and before is not None and row.get("outcome") == RULES_ONLY:
        # what it rests on now that the baseline's proof did not: the axiom or admitted lemma, by its kernel name
        new = sorted(set(map(str, row.get("axioms") or [])) - set(map(str, before.get("axioms") or [])))
        named = f"rests on {', '.join(new)}" if new else "rests on " + (", ".join(map(str, row.get("axioms") or []))
                                                                        or "an assumption outside the strict list")
        row["change_cause"] = f"{row['change_cause']}; {named}" if row["change_cause"] else named
    if row["change"] == "regressed" and row.get("admitted") and before is not None:
        row["change_cause"] = "now admitted" + (f", {row['change_cause']}" if row["change_cause"] else "")
    broken = broken_by_change(before, row)
    if broken:
        row["breaks_build"] = broken
        row["change_cause"] = f"the change breaks the build: {broken}"
    elif row["change"] == "unconfirmed" and row.get("build_break") and before is not None:
        row["change_cause"] = ("a file does not build, with the sources it rests on unchanged (a tool fault)"
                               if before.get("cone_key") == row.get("cone_key") else
                               "a file does not build, and the environment changed too (cannot tell whose)")
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
        reason = str(row.get("reason") or "")[:160]
        lines.append(f"REGRESSED {row.get('nodeid')}: {row.get('baseline_outcome')} -> {row.get('outcome')} "
                     f"({row.get('change_cause') or 'cause unknown'})" + (f": {reason}" if reason else ""))
    for row in sorted((r for r in annotated if r.get("change_cause") == "statement changed (still passes)"),
                      key=lambda r: str(r.get("nodeid"))):
        lines.append(f"STATEMENT CHANGED {row.get('nodeid')}: still {row.get('outcome')}, but its statement is not "
                     f"the baseline's")
    counts = {c: sum(1 for r in annotated if r["change"] == c) for c in CHANGES}
    lines.append("baseline: " + ", ".join(f"{counts[c]} {c}" for c in CHANGES))
    churn = sum(1 for r in regressed if "statement changed" in str(r.get("change_cause")))
    env = sum(1 for r in regressed if "environment changed" in str(r.get("change_cause")))
    if regressed:
        lines.append(f"of {len(regressed)} regressions: {churn} with the statement changed, "
                     f"{env} with the environment changed")
    broken: dict[str, list[str]] = {}
    for row in annotated:
        if row.get("breaks_build"):
            broken.setdefault(str(row["breaks_build"]), []).append(str(row.get("task_id") or row.get("nodeid")))
    for what, items in sorted(broken.items()):
        lines.append(f"BUILD BROKEN by the change: {what} ({len(items)} item(s) not judged: "
                     f"{', '.join(sorted(items)[:5])}{' …' if len(items) > 5 else ''})")
    fixed = [str(r.get("nodeid")) for r in annotated if r["change"] == "fixed"]
    if fixed:
        lines.append(f"fixed: {', '.join(sorted(fixed)[:10])}{' …' if len(fixed) > 10 else ''}")
    unconfirmed = [r for r in annotated if r["change"] == "unconfirmed" and _passed(r.get("baseline_outcome"), False)]
    if unconfirmed:
        lines.append(f"{len(unconfirmed)} baseline passes not confirmed (infra now, not judged)")
    return lines


# --- every baseline item accounted for (issue 32) --------------------------------------------------------

def allowed_match(names: Iterable[str], row: dict[str, Any]) -> bool:
    """Whether the maintainer named this baseline item as allowed to go (``--forall-gate-allow-removed``): by its
    task id, its full key (suite::track::id), or a project item's qualified name (``Lib.File.lemma``)."""
    task_id, key = str(row.get("task_id", "")), row_key(row)
    return any(name in (task_id, key) or name.replace(".", "__") == task_id for name in names)


@dataclass
class Accounting:
    """What became of every baseline item that has no row in this run (one with a row is ``present``, and its
    ``change`` says the rest). Keys are task keys (:func:`row_key`)."""

    #: gone from the collection: no item of that name, none of the same statement under another name
    removed: list[str] = dataclasses.field(default_factory=list)
    #: old key -> the node id of the item with the same kernel statement (type) under a new name
    renamed: dict[str, str] = dataclasses.field(default_factory=dict)
    #: still collected, now an ``admitted`` item, and deselected (``-m "not admitted"``): no proof left
    now_admitted: list[str] = dataclasses.field(default_factory=list)
    #: collected and deselected for another reason (``-k``, ``-m``, ``--forall-shard``): not judged, not lost
    not_selected: list[str] = dataclasses.field(default_factory=list)
    #: of a suite and track of which this run collected no item at all (another suite's run): not judged
    not_collected: list[str] = dataclasses.field(default_factory=list)
    #: removed, renamed or now admitted, a pass in the baseline, and not allowed: each fails the gate
    lost: list[str] = dataclasses.field(default_factory=list)
    #: those the maintainer allowed to go (``--forall-gate-allow-removed``)
    allowed: list[str] = dataclasses.field(default_factory=list)
    #: task key -> the baseline row (for names and outcomes)
    baseline: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def name(self, key: str) -> str:
        return str(self.baseline.get(key, {}).get("task_id") or key)

    def how(self, key: str) -> str:
        if key in self.renamed:
            return f"renamed to {self.renamed[key].rsplit('::', 1)[-1]}"
        return "now admitted" if key in self.now_admitted else "removed"

    def to_json(self) -> dict[str, Any]:
        """What ``gate.json`` records (names are task ids; the JUnit file carries the same lists)."""
        names = self.name
        return {"removed": sorted(map(names, self.removed)),
                "renamed": {names(k): v.rsplit("::", 1)[-1] for k, v in sorted(self.renamed.items())},
                "now_admitted": sorted(map(names, self.now_admitted)),
                "lost": sorted(f"{names(k)} ({self.how(k)})" for k in self.lost),
                "allowed": sorted(f"{names(k)} ({self.how(k)})" for k in self.allowed),
                "not_selected": len(self.not_selected), "not_collected": len(self.not_collected)}


def account(baseline: dict[str, dict[str, Any]], rows: Iterable[dict[str, Any]],
            collected: dict[str, dict[str, Any]], require_strict: bool = False,
            allowed: Iterable[str] = ()) -> Accounting:
    """Every baseline item is present (it has a row), or removed, renamed, now admitted, not selected or not
    collected (see :class:`Accounting`). ``collected``: task key -> ``{"nodeid", "admitted"}`` for every item the
    collection found, before any deselection. A rename is told by the kernel: an item new to the baseline whose
    statement's type (``kernel_type``, name-free) is the missing one's; without kernel data it is a removal."""
    allowed = list(allowed)
    reported = {row_key(r): r for r in rows}
    found = Accounting(baseline=baseline)
    pairs = {tuple(key.split("::")[:2]) for key in collected} | {tuple(key.split("::")[:2]) for key in reported}
    fresh: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for key, row in sorted(reported.items()):
        if key not in baseline and row.get("kernel_type"):
            fresh.setdefault((str(row.get("suite")), str(row.get("track")), str(row["kernel_type"])), []).append(row)
    for key, before in sorted(baseline.items()):
        if key in reported:
            continue
        if key in collected:
            (found.now_admitted if collected[key].get("admitted") else found.not_selected).append(key)
        elif tuple(key.split("::")[:2]) not in pairs:
            found.not_collected.append(key)
            continue
        else:
            same = fresh.get((str(before.get("suite")), str(before.get("track")), str(before.get("kernel_type"))))
            if before.get("kernel_type") and same:
                found.renamed[key] = str(same.pop(0).get("nodeid"))
            else:
                found.removed.append(key)
        if key in found.not_selected:
            continue
        if before.get("outcome") != INFRA and _passed(before.get("outcome"), require_strict):
            (found.allowed if allowed_match(allowed, before) else found.lost).append(key)
    return found


def accounting_lines(found: Accounting) -> list[str]:
    """The summary's lines about baseline items without a row: each lost pass by name, then the counts."""
    lines = [f"LOST {found.name(key)}: {found.baseline[key].get('outcome')} in the baseline, {found.how(key)} "
             f"(--forall-gate-allow-removed {found.name(key)} if meant)" for key in found.lost]
    lines += [f"allowed: {found.name(key)} {found.how(key)} (--forall-gate-allow-removed)" for key in found.allowed]
    others = [key for key in (*found.removed, *found.renamed, *found.now_admitted)
              if key not in found.lost and key not in found.allowed]
    lines += [f"{found.how(key)}: {found.name(key)} (not a pass in the baseline: "
              f"{found.baseline[key].get('outcome')})" for key in sorted(others)]
    counts = [(len(found.removed), "removed"), (len(found.renamed), "renamed"),
              (len(found.now_admitted), "now admitted (deselected)"), (len(found.not_selected), "not selected"),
              (len(found.not_collected), "not collected (their suite was not run)")]
    if any(n for n, _ in counts):
        lines.append("baseline items without a row: " + ", ".join(f"{n} {what}" for n, what in counts))
    return lines
