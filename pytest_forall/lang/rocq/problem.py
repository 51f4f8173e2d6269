"""A Rocq problem file as benchmarks ship it (the frozen part, the theorem, the final ``Admitted.`` hole),
and what it declares where.

Every scan goes through :mod:`pytest_forall.lang.rocq.lexer`, so a comment, a string or a string inside a
comment hides text from these readers exactly when it hides it from Coq.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_forall.core.model import Task
from pytest_forall.lang.rocq.lexer import LexError, mask, sentences

NAME = "rocq"
#: Other names users give this prover (markers, ``forall verify --prover``): the one place they are defined.
ALIASES = ("coq",)
_COQ_THEOREM = re.compile(r"(?:^|\.\s)\s*(?:Theorem|Lemma|Corollary|Proposition)\s+([A-Za-z_][\w']*)")
_WORD = re.compile(r"[^\W\d][\w']*")


def parse_coq(task_id: str, path: Path, text: str, *, suite: str = "putnam", track: str = "coq") -> Task:
    """Split a Coq problem: everything up to the hole is frozen; the last ``Admitted.`` is the hole."""
    masked = mask(text)
    holes = [m.start() for m in re.finditer(r"\bAdmitted\s*\.", masked)]
    problem = ""
    theorem = ""
    frozen = ""
    if not holes:
        problem = "no `Admitted.` to replace (every PutnamBench Coq problem ends its theorem with `Proof. Admitted.`)"
    else:
        frozen = text[: holes[-1]]
        names = _COQ_THEOREM.findall(masked[: holes[-1]])
        if not names:
            problem = "no `Theorem`/`Lemma` before the final `Admitted.`"
        else:
            theorem = names[-1]
    statement = frozen.rstrip()
    return Task(task_id=task_id, suite=suite, track=track, prover=NAME, source_path=str(path), template=text,
                frozen=frozen, theorem_name=theorem, statement=statement, problem=problem)


def outside_sections(text: str) -> str:
    """:func:`~pytest_forall.lang.rocq.lexer.mask` of ``text`` with every sentence inside a ``Section``
    blanked too: what a section declares is discharged at its ``End`` (a section ``Variable`` is then a
    binder of each theorem, not a parameter of the file, and a ``Let`` is gone)."""
    masked = mask(text)
    try:
        spans = sentences(text)
    except LexError:
        return masked
    out = list(masked)
    blocks: list[str] = []
    for start, end in spans:
        words = _WORD.findall(masked[start:end])[:2]
        head = words[0] if words else ""
        if head == "Section":
            blocks.append("Section")
        elif head == "Module" and ":=" not in masked[start:end]:
            blocks.append("Module")
        if "Section" in blocks:
            out[start:end] = ["\n" if c == "\n" else " " for c in masked[start:end]]
        if head == "End" and blocks:
            blocks.pop()
    return "".join(out)
