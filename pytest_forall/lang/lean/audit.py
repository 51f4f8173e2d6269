"""Lean's statement audit: the refutation and vacuity tasks of a template, and a search for certificates.

The derived tasks keep the frozen preamble (imports, the filled-in answer, definitions) and restate the
theorem, as the Rocq pack does:

- refutation: ``theorem <name>_is_false : ¬ (∀ <binders>, <conclusion>) := sorry``
- vacuity: ``theorem <name>_vacuous <binders> : False := sorry`` — the header's binders only. Unlike the
  Rocq pack, the conclusion's leading ``∀``/``→`` are not peeled: Rocq checks a peeled split by a
  kernel-checked equation in the derived file, and that check cannot be exercised here (no Lean).

The search compiles one candidate per script (there is no interactive session as for Rocq): the closing
tactics on the vacuity task, and for the refutation ``decide``/``norm_num``/``omega``, plus Mathlib's
``plausible`` run on the *original* statement as a counterexample finder. A counterexample it prints
("Found problems!" and ``name := value`` lines) is turned into a refutation script that instantiates the
negated statement at those values (named arguments) and decides the instance. Every certificate goes
through the full verifier; nothing ``plausible`` prints is trusted. The Lean syntax and tactic behaviour
relied on are cited in docs/audit.md. Tested against the stand-in (tests/standin/lean) only, which does
not type-check: what the search finds on real Lean has not been observed here.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_VACUOUS, Search, Split
from pytest_forall.core.model import Task
from pytest_forall.core.prover import Prover
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.lean.lexer import tokens as lex

OPENING, CLOSING = "([{⦃⟨", ")]}⦄⟩"
VACUITY_TACTICS = ("omega", "linarith", "norm_num at *", "simp_all", "tauto")
REFUTATION_TACTICS = ("decide", "norm_num", "omega")
#: How a counterexample's instance is decided once ``plausible`` has named the values.
INSTANCE_CLOSERS = ("decide", "norm_num", "simp")
#: ``plausible``'s report of a counterexample: a header line, then one ``name := value`` line per variable.
FOUND = "Found problems!"
_ASSIGNMENT = re.compile(r"^\s*([^\s:=]+) := (.+?)\s*$")


def split_theorem(template: str, theorem: str) -> Split | None:
    """The last ``theorem <name>`` up to the ``:=`` before the final ``sorry``, cut at its top-level ``:``."""
    try:
        every = lex(template)
    except NotUnderstood:
        return None
    heads = [i for i in range(len(every) - 1) if every[i].text == "theorem" and every[i + 1].text == theorem]
    if not heads or every[-1].text != "sorry":
        return None
    assigns = [i for i in range(heads[-1], len(every)) if every[i].text == ":="]
    if not assigns or [t.text for t in every[assigns[-1] + 1:]] not in (["sorry"], ["by", "sorry"]):
        return None
    tokens = every[heads[-1]:assigns[-1] + 1]
    starts = [0]
    for line in template.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(index: int) -> int:
        return starts[tokens[index].line - 1] + tokens[index].col - 1

    head = next((i for i, t in enumerate(tokens) if t.text == "theorem"), None)
    if head is None:
        return None
    depth, colon = 0, None
    for index in range(head + 2, len(tokens) - 1):
        text = tokens[index].text
        if text == ":" and depth == 0:
            colon = index
            break
        depth += sum(text.count(c) for c in OPENING) - sum(text.count(c) for c in CLOSING)
    if colon is None:
        return None
    return Split(template[:offset(head)], template[offset(head + 2):offset(colon)].strip(),
                 template[offset(colon + 1):offset(len(tokens) - 1)].strip())


def refutation_text(template: str, theorem: str) -> str | None:
    split = split_theorem(template, theorem)
    if split is None:
        return None
    statement = f"∀ {split.binders}, {split.conclusion}" if split.binders else split.conclusion
    return f"{split.preamble}theorem {theorem}_is_false :\n    ¬ ({statement}) :=\n  sorry\n"


def vacuity_text(template: str, theorem: str) -> str | None:
    split = split_theorem(template, theorem)
    if split is None or not split.binders:
        return None
    return f"{split.preamble}theorem {theorem}_vacuous\n    {split.binders} :\n    False :=\n  sorry\n"


def derive(task: Task) -> dict[str, Task]:
    out: dict[str, Task] = {}
    for finding, text, name in ((AUDIT_FALSE, refutation_text(task.template, task.theorem_name), "is_false"),
                                (AUDIT_VACUOUS, vacuity_text(task.template, task.theorem_name), "vacuous")):
        if text is not None:
            hole = text.rindex("sorry")
            out[finding] = dataclasses.replace(
                task, template=text, frozen=text[:hole], theorem_name=f"{task.theorem_name}_{name}",
                statement=text[:hole].rstrip(), context_files={},
                meta={k: v for k, v in task.meta.items() if k != "candidate_name"})
    return out


def counterexample(output: str) -> list[tuple[str, str]]:
    """The ``name := value`` assignments ``plausible`` printed after "Found problems!" (empty if none)."""
    if FOUND not in output:
        return []
    found = []
    for line in output.split(FOUND, 1)[1].splitlines():
        if line.strip().startswith("---"):
            break
        assignment = _ASSIGNMENT.match(line)
        if assignment:
            found.append((assignment.group(1), assignment.group(2)))
    return found


def instance_scripts(values: list[tuple[str, str]]) -> list[str]:
    """Refutation scripts that instantiate the negated statement at a counterexample and decide it."""
    arguments = " ".join(f"({name} := {value})" for name, value in values)
    return [f"by\n  intro h\n  have := h {arguments}\n  revert this\n  {closer}" for closer in INSTANCE_CLOSERS]


class LeanAudit:
    """The audit pack of the Lean language (registered through ``pytest_forall_audit_pack``)."""

    def derive(self, task: Task) -> dict[str, Task]:
        return derive(task)

    def search(self, task: Task, derived: dict[str, Task], prover: Prover, workspace: Path,
               deadline: float, max_attempts: int | None = None, cpu_seconds: float | None = None,
               on_attempt: Callable[[], None] | None = None) -> Search:
        # ``cpu_seconds`` is not measured for Lean (each script is a compile through the verifier): the wall
        # clock ``deadline`` is the budget
        from pytest_forall.core.verify import verify_candidate

        log: list[str] = []
        attempts = 0
        certificates: dict[str, str] = {}

        def budget_left() -> bool:
            return time.monotonic() < deadline and (max_attempts is None or attempts < max_attempts)

        def attempt(finding: str, proof: str) -> bool:
            nonlocal attempts
            attempts += 1
            if on_attempt is not None:
                on_attempt()
            sub = derived[finding]
            text = sub.frozen + proof + sub.template[len(sub.frozen) + len("sorry"):]
            verdict = verify_candidate(sub, prover, text.encode("utf-8"),
                                       timeout=max(1.0, deadline - time.monotonic()))
            log.append(f"{finding}: {proof.splitlines()[-1].strip()}: {verdict.verdict} {verdict.reason[:200]}")
            if verdict.accepted:
                certificates[finding] = text
            return verdict.accepted

        if AUDIT_VACUOUS in derived:
            for tactic in VACUITY_TACTICS:
                if not budget_left() or attempt(AUDIT_VACUOUS, f"by\n  {tactic}"):
                    break
        if AUDIT_FALSE in derived:
            scripts = [f"by\n  {tactic}" for tactic in REFUTATION_TACTICS]
            values = self._plausible(task, prover, deadline) if budget_left() else []
            if values:
                log.append(f"plausible: counterexample {values}")
                scripts = instance_scripts(values) + scripts
            for proof in scripts:
                if not budget_left() or attempt(AUDIT_FALSE, proof):
                    break
        return Search(certificates, attempts, "\n".join(log))

    def _plausible(self, task: Task, prover: Prover, deadline: float) -> list[tuple[str, str]]:
        """Run ``plausible`` on the original statement; its counterexample, if it printed one."""
        if not task.frozen:
            return []
        probe = task.frozen + "by\n  plausible" + task.template[len(task.frozen) + len("sorry"):]
        with tempfile.TemporaryDirectory(prefix="forall-plausible-") as build:
            path = Path(build) / task.candidate_name
            path.write_text(probe, encoding="utf-8")
            result = prover.compile(task, Path(build), path, max(1.0, deadline - time.monotonic()))
        return counterexample(result.output + "\n" + "\n".join(str(m.get("data", "")) for m in result.messages))
