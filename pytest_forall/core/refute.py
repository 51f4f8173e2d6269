"""The ``statement_false`` claim: an actor that believes the statement is false must prove its negation.

The claim is a file ``STATEMENT_FALSE.<ext>`` in the workspace. It is judged as an ordinary candidate of a
*refutation task* derived mechanically from the problem: the same frozen preamble (imports, definitions,
answer value), then ``Theorem <name>_is_false : ~ (forall <binders>, <conclusion>).`` with the placeholder
proof. The full verifier runs on it (static layers, compile, elaborated statement, axiom audit,
independent check), so a claim passes only with a kernel-checked proof that the statement, taken as a
hypothesis, yields ``False``. A passing refutation is not an acceptance: it ends the item as
``statement_false`` for a human to review (the formalisation, not the actor, may be wrong).

Only Rocq problems have a refutation format so far; for other provers :func:`refutation_task` is None.
"""

from __future__ import annotations

from pathlib import Path

from pytest_forall.core.model import PROVER_EXT, Task

REFUTATION_STEM = "STATEMENT_FALSE"
OPENING, CLOSING = "([{", ")]}"


def refutation_name(task: Task) -> str:
    return f"{REFUTATION_STEM}.{PROVER_EXT.get(task.prover, 'txt')}"


def refutation_task(task: Task) -> Task | None:
    """The task whose accepted candidate refutes ``task``, or None when no refutation can be derived."""
    if task.prover != "rocq" or task.problem:
        return None
    return _rocq_refutation(task)


def _rocq_refutation(task: Task) -> Task | None:
    from pytest_forall.lang.common import NotUnderstood
    from pytest_forall.lang.rocq.problem import parse_coq
    from pytest_forall.lang.rocq.screen import template_shape

    try:
        tokens = template_shape(task.template, task.theorem_name).theorem.tokens
    except NotUnderstood:
        return None
    line_starts = [0]
    for line in task.template.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))

    def offset(index: int) -> int:
        return line_starts[tokens[index].line - 1] + tokens[index].col - 1

    depth, colon = 0, None
    for index in range(2, len(tokens) - 1):
        text = tokens[index].text
        if tokens[index].kind == "symbol":
            if text == ":" and depth == 0:
                colon = index
                break
            depth += sum(text.count(c) for c in OPENING) - sum(text.count(c) for c in CLOSING)
    if colon is None:
        return None
    binders = task.template[offset(2):offset(colon)].strip()
    conclusion = task.template[offset(colon + 1):offset(len(tokens) - 1)].strip()
    statement = f"forall {binders}, {conclusion}" if binders else conclusion
    text = (f"{task.template[:offset(0)]}Theorem {task.theorem_name}_is_false :\n    ~ ({statement}).\n"
            "Proof. Admitted.\n")
    derived = parse_coq(task.task_id, Path(task.source_path), text)
    return None if derived.problem else derived
