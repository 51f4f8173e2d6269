"""A Lean problem file as benchmarks ship it: the answer value frozen from its comment, the final ``sorry`` hole."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_forall.core.model import Task
from pytest_forall.lang.lean.lexer import mask

NAME = "lean"


_LEAN_SOLUTION = re.compile(r"^((?:noncomputable\s+)?abbrev\s+)(\S+_solution)\b(.*?):=\s*sorry[ \t]*\n--[ \t]?(.*)$",
                            re.MULTILINE)
_LEAN_SOLUTION_DECL = re.compile(r"^(?:noncomputable\s+)?abbrev\s+\S+_solution\b", re.MULTILINE)
_LEAN_THEOREM = re.compile(r"^theorem\s+([^\s:({\[]+)", re.MULTILINE)


def parse_lean(task_id: str, path: Path, text: str, *, suite: str = "putnam", track: str = "lean4") -> Task:
    """Split a Lean problem and fill the answer from its ``-- <answer>`` line, as the benchmark's rewrite does.

    The answer-given task freezes that value; the proof hole is the theorem's final ``sorry``.
    """
    problem = ""
    answer = ""
    template = text.replace("\r\n", "\n")
    solutions = list(_LEAN_SOLUTION.finditer(template))
    if len(_LEAN_SOLUTION_DECL.findall(template)) != len(solutions):
        problem = "an `abbrev …_solution … := sorry` is not followed by a `-- <answer>` comment line"
    for sol in reversed(solutions):
        answer = sol.group(4).strip()
        if not answer:
            problem = f"empty answer comment after `abbrev {sol.group(2)}`"
        filled = f"{sol.group(1)}{sol.group(2)}{sol.group(3)}:= {answer}\n--{' ' if answer else ''}{sol.group(4)}"
        template = template[: sol.start()] + filled + template[sol.end():]
    code = mask(template)  # comments, docstrings and strings blanked by the one Lean lexer
    theorems = [m for m in _LEAN_THEOREM.finditer(code) if m.group(1) == task_id]
    theorem = task_id if theorems else ""
    frozen = ""
    if not theorems:
        problem = problem or f"no `theorem {task_id}` in the file"
    else:
        start = theorems[-1].start()
        hole = code.rfind("sorry")
        if hole < start:
            problem = problem or f"`theorem {task_id}` has no `sorry` proof to replace"
        else:
            frozen = template[:hole]
    preamble_end = theorems[-1].start() if theorems else len(template)
    return Task(task_id=task_id, suite=suite, track=track, prover=NAME, source_path=str(path),
                template=template, frozen=frozen, theorem_name=theorem, answer=answer,
                statement=template[preamble_end:].strip(), problem=problem,
                meta={"preamble": template[:preamble_end]})
