"""A Rocq problem file as benchmarks ship it: the frozen part, the theorem, and the final ``Admitted.`` hole."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_forall.core.model import Task

NAME = "rocq"


_COQ_THEOREM = re.compile(r"(?:^|\.\s)\s*(?:Theorem|Lemma|Corollary|Proposition)\s+([A-Za-z_][\w']*)")


def coq_mask_comments(text: str) -> str:
    """Replace the contents of (nested) comments and strings by spaces, keeping offsets."""
    out = list(text)
    i, depth, n = 0, 0, len(text)
    in_string = False
    while i < n:
        if in_string:
            if text[i] == '"':
                if i + 1 < n and text[i + 1] == '"':
                    out[i] = out[i + 1] = " "
                    i += 2
                    continue
                in_string = False
            else:
                out[i] = " " if text[i] != "\n" else "\n"
            i += 1
        elif text.startswith("(*", i):
            depth += 1
            out[i] = out[i + 1] = " "
            i += 2
        elif depth and text.startswith("*)", i):
            depth -= 1
            out[i] = out[i + 1] = " "
            i += 2
        elif depth:
            out[i] = " " if text[i] != "\n" else "\n"
            i += 1
        elif text[i] == '"':
            in_string = True
            i += 1
        else:
            i += 1
    return "".join(out)


def parse_coq(task_id: str, path: Path, text: str, *, suite: str = "putnam", track: str = "coq") -> Task:
    """Split a Coq problem: everything up to the hole is frozen; the last ``Admitted.`` is the hole."""
    masked = coq_mask_comments(text)
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
