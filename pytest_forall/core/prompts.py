"""What the loop says to the actor: its first prompt, the verifier's and the reviewer's feedback, and the note after
an interruption. Kept apart from :mod:`pytest_forall.core.protocol` so the words can be read (and changed) without
the loop's bookkeeping."""

from __future__ import annotations

import re

from pytest_forall.core.audit import (
    AUDIT_FALSE,
    AUDIT_INNER,
    AUDIT_VACUOUS,
    CLAIMS,
    claim_name,
    derived_tasks,
)
from pytest_forall.core.language import language_or_plain
from pytest_forall.core.model import Task, Verdict

REVIEW_FILE = "REVIEW.md"
SUITE_TITLES = {"putnam": "PutnamBench, a benchmark of formalised Putnam competition problems"}
FEEDBACK_OUTPUT_CHARS = 3000


def answer_note(task: Task) -> str:
    """The frozen answer, named so the actor does not try to change it."""
    if task.answer:
        return f" The answer is given and frozen: `{task.answer}`."
    # the search only where the name can be: a project item's frozen part is its whole file up to the target
    solution = re.search(r"\b(\w+_solution)\b", task.frozen) if "_solution" in task.frozen else None
    return f" The answer `{solution.group(1)}` is already filled in and frozen." if solution else ""


def initial_prompt(task: Task, tools_brief: str = "") -> str:
    """The actor's first prompt: what is frozen, how to compile, what a submission is, and how to refute;
    ``tools_brief`` (the language pack's words on goals/try versus compile/submit) when the session offers them."""
    pack = language_or_plain(task.prover)
    placeholder = f"`{pack.placeholder}`"
    compile_hint = pack.compile_command.format(file=task.candidate_name)
    intro = SUITE_TITLES.get(task.suite, f"the {task.suite} benchmark")
    lines = [
        f"You are proving problem {task.task_id} from {intro}, in {pack.title}.",
        "",
        (f"The file `{task.candidate_name}` in the current directory holds the problem (TASK.md repeats the "
         f"rules). Replace the placeholder proof ({placeholder}) of `{task.theorem_name}` with a complete proof."),
        ("Everything before that proof is frozen and must stay exactly as given: imports, definitions and the "
         f"theorem statement.{answer_note(task)} You may add helper lemmas before the theorem. No "
         "placeholders, admits, new axioms or hypotheses: the proof's axioms are audited."),
    ]
    if compile_hint:
        lines.append(f"Compile to check your work: `{compile_hint}`.")
    if tools_brief:
        lines += ["", f"Interactive tools (the `forall` server's goals, try and query): {tools_brief}"]
    lines += [
        "",
        (f"Submitting: when you end your turn, `{task.candidate_name}` as it is on disk is your submission. It "
         "is checked by the verifier and then by an independent reviewer; their findings come back to you in "
         f"this conversation (the reviewer's also as {REVIEW_FILE}). Only an accepted submission ends the task: "
         "ending a turn without a complete proof just costs one of your limited rounds, so keep working until "
         "the file compiles without placeholders."),
    ]
    derived = derived_tasks(task)
    claims = {
        AUDIT_FALSE: "If you become convinced the statement is false, prove its negation instead: write",
        AUDIT_VACUOUS: ("If the theorem's hypotheses contradict each other (then the statement holds vacuously and "
                        "says nothing about the problem), that is a finding like a refutation: prove `False` from "
                        "them by writing"),
        AUDIT_INNER: ("If a premise inside the conclusion (the left side of an `->` under its quantifiers) can never "
                      "hold, the part behind it is true for that reason alone: that is a finding too. Prove that "
                      "one of the listed premises fails at every instance by writing"),
    }
    for claim in CLAIMS:
        if claim.finding in derived:
            lines += [
                "",
                (f"{claims[claim.finding]} `{claim_name(task, claim)}` containing exactly the text below with its "
                 f"{placeholder} replaced by a complete proof, and end your turn. A certificate that passes the "
                 "verifier ends the task for human review; while the file exists it is judged instead of the "
                 "proof (delete it to withdraw)."),
                "", derived[claim.finding].template.rstrip(),
            ]
    return "\n".join(lines) + "\n"


def verifier_feedback(verdict: Verdict, name: str) -> str:
    """The latest diagnostics: every failed layer and the prover's output tail."""
    lines = [f"The verifier rejected your submission `{name}` (sha256 {verdict.digest}):"]
    output = ""
    for layer in verdict.layers:
        if layer.ok is False:
            lines.append(f"- {layer.name}: {layer.reason}")
            output = output or str(layer.evidence.get("output") or "")
    if output:
        lines += ["Prover output (end):", output[-FEEDBACK_OUTPUT_CHARS:]]
    lines.append(f"Fix `{name}` and end your turn to submit again.")
    return "\n".join(lines)


def review_feedback(digest: str, reason: str) -> str:
    return (f"Your submission (sha256 {digest}) passed the verifier but was not accepted: {reason}\n"
            f"The reviewer's report is in {REVIEW_FILE} in the current directory. Address it and end your turn "
            "to submit again.")


def interrupted_prompt(cause: str, prompt: str) -> str:
    return (f"Your previous turn was cut short by an infrastructure problem ({cause[:300]}); nothing was "
            f"judged. Continue where you were. The last instructions were:\n\n{prompt}")
