"""The statement audit: kernel-checked evidence that a problem is misformalized.

Two findings can end an item for human review, each a *claim file* in the workspace judged as an ordinary
candidate of a task derived mechanically from the problem by its language pack (``lang/<prover>/audit.py``):

- ``false``: ``STATEMENT_FALSE.<ext>`` proves the negation of the statement (outcome ``statement_false``);
- ``vacuous``: ``STATEMENT_VACUOUS.<ext>`` proves ``False`` from the theorem's binders and premises, those
  of its conclusion's leading ``forall``/``->`` included (outcome ``vacuous``): the statement holds for any
  conclusion, so a proof of it says nothing about the problem;
- ``inner_vacuous``: ``STATEMENT_INNER_VACUOUS.<ext>`` proves that a premise *inside* the conclusion (of an
  ``->`` under its quantifiers and connectives, past the peeled ones) fails at every instance of its scope
  (outcome ``inner_vacuous``): the part of the conclusion behind it holds for that reason alone, whatever it
  says. The pack ties each premise to its place in the statement by a kernel-checked equation.

The full verifier judges a claim file (static layers, compile, elaborated statement, axiom audit,
independent check), so a finding exists only with a certificate the kernel accepted; nothing here reads
text the candidate controls. Every item reports ``statement_audit`` = ``vacuous`` / ``false`` /
``inner_vacuous`` / ``unknown`` (no checked certificate, which says nothing about the statement). Anyone may submit a
claim: an agent, or the ``audit`` and ``portfolio`` frontends, which search for certificates with
automation (see docs/audit.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_forall.core.language import language_or_plain
from pytest_forall.core.model import INNER_VACUOUS, STATEMENT_FALSE, VACUOUS, Task

if TYPE_CHECKING:
    from pytest_forall.core.prover import Prover

#: ``statement_audit`` values (a field of every result row and JUnit testcase).
AUDIT_VACUOUS = "vacuous"
AUDIT_FALSE = "false"
AUDIT_INNER = "inner_vacuous"
AUDIT_UNKNOWN = "unknown"
#: the search a frontend ran was ended by a wall-clock limit (a loaded machine), not by its CPU budget: finding
#: nothing then says nothing about the search either (``Search.timed_out``); a rerun searches again, as for unknown
AUDIT_NOT_SEARCHED = "not_searched"
AUDIT_VALUES = (AUDIT_VACUOUS, AUDIT_FALSE, AUDIT_INNER, AUDIT_UNKNOWN, AUDIT_NOT_SEARCHED)
#: Where a checked claim's derived template is kept next to the accepted certificate (for ``forall verify``).
DERIVED_DIR = "derived"


@dataclass(frozen=True)
class Claim:
    """One kind of finding: its claim file's stem, the outcome it ends the item with, and what it shows."""

    finding: str
    stem: str
    outcome: str
    shows: str
    #: the submission kind in the audit record's events and verdict files
    submission: str
    #: the stop name (``forall.stop``, core/outcomes.py) of an item this claim ends
    stop: str


CLAIMS = (
    Claim(AUDIT_FALSE, "STATEMENT_FALSE", STATEMENT_FALSE, "proves the negation of the statement", "refutation",
          "refuted"),
    Claim(AUDIT_VACUOUS, "STATEMENT_VACUOUS", VACUOUS, "proves False from the statement's hypotheses", "vacuity",
          "vacuous"),
    Claim(AUDIT_INNER, "STATEMENT_INNER_VACUOUS", INNER_VACUOUS,
          "proves that a premise inside the conclusion can never hold", "inner-vacuity", "inner-vacuous"),
)
CLAIM_BY_FINDING = {claim.finding: claim for claim in CLAIMS}


def claim_name(task: Task, claim: Claim) -> str:
    return f"{claim.stem}.{language_or_plain(task.prover).extension}"


@dataclass(frozen=True)
class Split:
    """A template's theorem cut, as written, into the text before it, its binders and its conclusion."""

    preamble: str
    binders: str
    conclusion: str


@dataclass
class Search:
    """What an automated search found: {finding: certificate text}, attempts made (compiles) and a log."""

    certificates: dict[str, str]
    attempts: int
    log: str
    #: what a wall-clock limit ended (a loaded machine), "" when none did: the search is then not what its CPU
    #: budget gives, so finding nothing is "not searched: timed out", not "unknown"
    timed_out: str = ""


class AuditPack(Protocol):
    """A language pack's audit: the derived tasks of a problem, and an automated search for certificates."""

    def derive(self, task: Task) -> dict[str, Task]:
        """{finding: derived task} for the findings this problem's text allows (none when not understood)."""
        ...

    def search(self, task: Task, derived: dict[str, Task], prover: Prover, workspace: Path,
               deadline: float, max_attempts: int | None = None, cpu_seconds: float | None = None,
               on_attempt: Callable[[], None] | None = None) -> Search:
        """Look for certificates of the derived tasks until ``deadline`` (``time.monotonic()``), making at most
        ``max_attempts`` attempts (each counts as a compile; ``on_attempt`` is called as each starts) and, where the
        pack can measure it, spending at most ``cpu_seconds`` of the prover's CPU time (then ``deadline`` is only a
        wall-clock backstop).

        A certificate is only a suggestion: the protocol verifies it like any submission.
        """
        ...


def audit_pack(prover: str) -> AuditPack | None:
    """The statement audit of ``prover``'s language pack (``Language.audit``), or None."""
    return language_or_plain(prover).audit()


def derived_tasks(task: Task) -> dict[str, Task]:
    """{finding: derived task}; empty for a malformed problem, a prover without an audit pack, or a task whose suite
    cannot judge a derived statement (``meta["statement_audit"] == "off"``: project mode judges the project's own
    statements only, and deriving would re-read the whole file on every item)."""
    if task.problem or task.meta.get("statement_audit") == "off":
        return {}
    pack = audit_pack(task.prover)
    return pack.derive(task) if pack is not None else {}


# --- reporting ---------------------------------------------------------------------------------------

def findings(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The result rows with a checked finding (suspected misformalizations), in task order."""
    return sorted((r for r in results if r.get("statement_audit") in CLAIM_BY_FINDING),
                  key=lambda r: str(r.get("task_id")))


def audit_lines(results: list[dict[str, Any]]) -> list[str]:
    """The run summary's findings: each suspected misformalization with its checked certificate's path."""
    found = findings(results)
    if not found:
        return []
    kinds = Counter(str(r["statement_audit"]) for r in found)
    lines = [f"suspected misformalizations: {len(found)} ("
             + ", ".join(f"{kinds[k]} {k}" for k in CLAIM_BY_FINDING) + "), each with a verified certificate:"]
    for row in found:
        certificate = Path(str(row.get("audit_dir") or "")) / str(row.get("certificate") or "")
        lines.append(f"  {row.get('task_id')}: {row['statement_audit']}  {certificate}")
    return lines


def findings_table(results: list[dict[str, Any]]) -> list[str]:
    """Suspected misformalizations as a Markdown table to paste into an upstream issue, with the command that
    re-checks each certificate against its derived template. Its one link is each problem's file upstream (the
    row's ``upstream``, :mod:`pytest_forall.suites.upstream`); local paths are code, never link targets."""
    rows = findings(results)
    if not rows:
        return []
    lines = ["| problem | finding | counterexample | certificate (sha256) | re-check |", "|---|---|---|---|---|"]
    for row in rows:
        claim = CLAIM_BY_FINDING[str(row["statement_audit"])]
        base = Path(str(row.get("audit_dir") or "."))
        certificate, template = (_shown(base / str(row.get(key) or "")) for key in ("certificate", "certificate_template"))
        described = counterexample(base, claim.finding).replace("|", "\\|")  # a pipe would end the cell
        upstream = str(row.get("upstream") or "")  # the only link: local paths mean nothing upstream (issue 33)
        problem = f"[`{row.get('task_id')}`]({upstream})" if upstream.startswith("https://") else f"`{row.get('task_id')}`"
        lines.append(f"| {problem} | {claim.finding}: {claim.shows} | {described} | `{certificate}` "
                     f"(`{str(row.get('digest') or '')[:16]}…`) | `forall verify --prover {row.get('prover', '')} "
                     f"--template {template} --candidate {certificate}` |")
    return lines


#: The search log's line that describes a finding's certificate for a human (``lang/<prover>/audit.py``).
COUNTEREXAMPLE = "audit counterexample: "


def counterexample(audit_dir: Path, finding: str) -> str:
    """The one-line description the search wrote of its certificate for ``finding`` (the values a refutation
    instantiated, or the strategy), from the item's ``audit.log``; empty when there is none (e.g. an agent's
    certificate). A description only: the certificate is what the verifier checked. The search writes its log in
    its session's directory (``s<sample>/audit.log``); the latest session's description is the one shown."""
    prefix = f"{COUNTEREXAMPLE}{finding}: "
    sessions = sorted(audit_dir.glob("s[0-9]*/audit.log"), key=lambda p: int(p.parent.name[1:]) if
                      p.parent.name[1:].isdigit() else -1, reverse=True)
    for path in [*sessions, audit_dir / "audit.log"]:
        try:
            log = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        described = next((line[len(prefix):].strip() for line in log.splitlines() if line.startswith(prefix)), None)
        if described is not None:
            return described
    return ""


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (shorter to paste), else as is."""
    cwd = Path.cwd()
    return str(path.relative_to(cwd)) if path.is_absolute() and path.is_relative_to(cwd) else str(path)
