"""PutnamBench adapter: an upstream checkout laid out as ``lean4/src/*.lean`` and ``coq/src/*.v``.

Task id = file stem; the track (``lean4`` or ``coq``) becomes a marker. The checkout is located by
``--forall-putnam-root``, the ini option ``forall_putnam_root`` or ``PUTNAMBENCH_ROOT``; it is read in
place and never copied into a workspace beyond the one template file an item needs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pytest_forall.core.errors import UsageError
from pytest_forall.core.model import Task
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.lean import lexer

SUITE = "putnam"
TRACKS = {"coq": ("coq/src", ".v", "rocq"), "lean4": ("lean4/src", ".lean", "lean")}


def putnam_root(options: dict[str, Any], manifest_dir: Path | None = None) -> Path:
    """Resolve the checkout, naming where the value came from when it is wrong."""
    for source, value in (("--forall-putnam-root / forall_putnam_root", options.get("putnam_root")),
                          ("PUTNAMBENCH_ROOT", os.environ.get("PUTNAMBENCH_ROOT"))):
        if value:
            root = Path(str(value)).expanduser()
            if not root.is_absolute() and manifest_dir is not None and source.startswith("--"):
                root = Path(str(options.get("rootdir", "."))) / root
            if not (root / "coq" / "src").is_dir() and not (root / "lean4" / "src").is_dir():
                raise UsageError(f"{source} = {value!r}: {root} is not a PutnamBench checkout "
                                 "(expected lean4/src/*.lean and/or coq/src/*.v)")
            return root
    raise UsageError("PutnamBench location not set: pass --forall-putnam-root DIR, set the ini option "
                     "forall_putnam_root, or export PUTNAMBENCH_ROOT")


# --- Coq -------------------------------------------------------------------------------------------

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


def parse_coq(task_id: str, path: Path, text: str) -> Task:
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
    return Task(task_id=task_id, suite=SUITE, track="coq", prover="rocq", source_path=str(path), template=text,
                frozen=frozen, theorem_name=theorem, statement=statement, problem=problem)


# --- Lean ------------------------------------------------------------------------------------------

_LEAN_SOLUTION = re.compile(r"^((?:noncomputable\s+)?abbrev\s+)(\S+_solution)\b(.*?):=\s*sorry[ \t]*\n--[ \t]?(.*)$",
                            re.MULTILINE)
_LEAN_SOLUTION_DECL = re.compile(r"^(?:noncomputable\s+)?abbrev\s+\S+_solution\b", re.MULTILINE)
_LEAN_THEOREM = re.compile(r"^theorem\s+([^\s:({\[]+)", re.MULTILINE)


def parse_lean(task_id: str, path: Path, text: str) -> Task:
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
    code = lexer.mask(template)  # comments, docstrings and strings blanked by the one Lean lexer
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
    return Task(task_id=task_id, suite=SUITE, track="lean4", prover="lean", source_path=str(path),
                template=template, frozen=frozen, theorem_name=theorem, answer=answer,
                statement=template[preamble_end:].strip(), problem=problem,
                meta={"preamble": template[:preamble_end]})


PARSERS = {"coq": parse_coq, "lean4": parse_lean}


def load_track(root: Path, track: str) -> list[Task]:
    subdir, ext, _ = TRACKS[track]
    tasks = []
    for path in sorted((root / subdir).glob(f"*{ext}")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            tasks.append(Task(task_id=path.stem, suite=SUITE, track=track, prover=TRACKS[track][2],
                              source_path=str(path), template="", problem=f"cannot read: {exc}"))
            continue
        tasks.append(PARSERS[track](path.stem, path, text))
    return tasks


@hookimpl(trylast=True)
def pytest_forall_load_tasks(path: Path, manifest: dict[str, Any], options: dict[str, Any]) -> list[Task] | None:
    if manifest.get("adapter") != SUITE:
        return None
    root = putnam_root(options, path.parent)
    tracks = manifest.get("tracks", ["coq", "lean4"])
    unknown = [t for t in tracks if t not in TRACKS]
    if unknown:
        raise UsageError(f"{path}: unknown PutnamBench track(s) {unknown}; known: {sorted(TRACKS)}")
    tasks: list[Task] = []
    for track in tracks:
        if (root / TRACKS[track][0]).is_dir():
            tasks.extend(load_track(root, track))
    return tasks
