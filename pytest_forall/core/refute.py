"""The ``statement_false`` claim: an actor that believes the statement is false must prove its negation.

The claim is a file ``STATEMENT_FALSE.<ext>`` in the workspace. It is judged as an ordinary candidate of a
*refutation task* derived mechanically from the problem: the same frozen preamble (imports, definitions,
answer value), then ``Theorem <name>_is_false : ~ (forall <binders>, <conclusion>).`` with the placeholder
proof. The full verifier runs on it (static layers, compile, elaborated statement, axiom audit,
independent check), so a claim passes only with a kernel-checked proof that the statement, taken as a
hypothesis, yields ``False``. A passing refutation is not an acceptance: it ends the item as
``statement_false`` for a human to review (the formalisation, not the actor, may be wrong).

Each language pack derives its own refutation task (``Language.refutation``); where a pack has none,
:func:`refutation_task` is None.
"""

from __future__ import annotations

from pytest_forall.core.language import language_or_plain
from pytest_forall.core.model import Task

REFUTATION_STEM = "STATEMENT_FALSE"


def refutation_name(task: Task) -> str:
    return f"{REFUTATION_STEM}.{language_or_plain(task.prover).extension}"


def refutation_task(task: Task) -> Task | None:
    """The task whose accepted candidate refutes ``task``, or None when no refutation can be derived."""
    if task.problem:
        return None
    return language_or_plain(task.prover).refutation(task)
