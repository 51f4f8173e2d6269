"""Rocq's refutation task: the same frozen preamble, then the negation of the theorem's statement."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pytest_forall.core.model import Task
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.rocq.lexer import mask
from pytest_forall.lang.rocq.problem import parse_coq
from pytest_forall.lang.rocq.screen import template_shape

OPENING, CLOSING = "([{", ")]}"


def rocq_refutation(task: Task) -> Task | None:
    """``Theorem <name>_is_false : ~ (forall <binders>, <conclusion>).`` after the frozen preamble."""
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
    hole = mask(task.template).rindex("Admitted.") + len("Admitted.")
    trailer = task.template[hole:].lstrip("\n")  # what closes the hole's context (a project item's `End S.`)
    text = (f"{task.template[:offset(0)]}Theorem {task.theorem_name}_is_false :\n    ~ ({statement}).\n"
            f"Proof. Admitted.\n{trailer}")
    derived = parse_coq(task.task_id, Path(task.source_path), text, suite=task.suite, track=task.track)
    if derived.problem:
        return None
    # the same prover and context (a project's build and prefix library); the file name is the refutation's
    meta = {key: value for key, value in task.meta.items() if key != "candidate_name"}
    return dataclasses.replace(derived, prover=task.prover, meta=meta)
