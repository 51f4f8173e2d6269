"""A Lean project's items (``--forall-project`` on a Lake project): the ``theorem``/``lemma`` declarations of a file
with their proof's span and namespace-qualified name, which proofs are ``sorry``, and the Lean backend compiling in
the project (``lean-project``: the Lean pack's language under the project prover's name)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from pytest_forall.core.language import Language
from pytest_forall.core.model import Layer, Task
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.lean import LANGUAGE as LEAN
from pytest_forall.lang.lean import lexer
from pytest_forall.lang.lean.backend import LeanProver
from pytest_forall.lang.project import project_root

#: The prover name of a Lean project's items.
LEAN_PROVER = "lean-project"
# without the pack's aliases (as ``rocq-project``)
LANGUAGE = dataclasses.replace(LEAN, name=LEAN_PROVER, aliases=())

_LEAN_DECL = re.compile(
    r"^(?:@\[[^\]\n]*\]\s*)*(?:(?:private|protected|noncomputable|nonrec|scoped|local|unsafe|partial)\s+)*"
    r"(?P<kw>theorem|lemma|example)\b[ \t]*(?P<name>[^\s:({\[⦃]*)", re.MULTILINE)
_LEAN_SCOPE = re.compile(r"^(?:noncomputable\s+)?(?P<kw>namespace|section|end)\b[ \t]*(?P<name>[^\s]*)", re.MULTILINE)
_OPEN = "([{⟨⦃"
_CLOSE = ")]}⟩⦄"


@dataclass
class LeanDecl:
    keyword: str
    name: str           # as written
    qualified: str
    start: int
    body: int           # offset of the proof: the depth-0 ``:=`` (or the first ``|`` arm); -1 if none
    end: int            # offset after the declaration's last non-blank character
    private: bool = False

    def proof_text(self, text: str) -> str:
        return text[self.body:self.end] if self.body >= 0 else ""


def lean_decls(text: str) -> list[LeanDecl]:
    """``theorem``/``lemma``/``example`` declarations with their proof span and namespace-qualified name."""
    masked = lexer.mask(text)
    line_starts = [m.start() for m in re.finditer(r"^(?=\S)", masked, re.MULTILINE)]
    scopes: list[tuple[int, str, str]] = [(m.start(), m.group("kw"), m.group("name"))
                                          for m in _LEAN_SCOPE.finditer(masked)]
    decls = []
    for match in _LEAN_DECL.finditer(masked):
        start = match.start()
        end = next((s for s in line_starts if s > start and not masked.startswith("|", s)), len(text))
        while end > start and masked[end - 1].isspace():
            end -= 1
        body = _lean_body(masked, match.end(), end)
        namespace: list[list[str]] = []
        for offset, kw, name in scopes:
            if offset >= start:
                break
            if kw == "namespace":
                namespace.append(name.split("."))
            elif kw == "section":
                namespace.append([])
            elif namespace:
                namespace.pop()
        name = match.group("name")
        parts = [p for block in namespace for p in block]
        qualified = name.removeprefix("_root_.") if name.startswith("_root_.") else ".".join(parts + [name])
        decls.append(LeanDecl(match.group("kw"), name, qualified, start, body, end,
                              private="private" in masked[start:match.start("kw")]))
    return decls


def _lean_body(masked: str, begin: int, end: int) -> int:
    depth = 0
    i = begin
    while i < end:
        char = masked[i]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and masked.startswith(":=", i):
            return i
        elif depth == 0 and char == "\n":
            stripped = masked[i + 1:end].lstrip(" \t")
            if stripped.startswith("|"):
                return i
        i += 1
    return -1


def is_sorry_proof(proof: str) -> bool:
    return re.fullmatch(r":=\s*(?:by\s+)?sorry\s*", lexer.mask(proof)) is not None


class LeanProjectProver(LeanProver):
    """The Lean backend compiling in the project; the screen reads the name as declared."""

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        from pytest_forall.lang.screens import lean_static_layers

        return lean_static_layers(task.template, text, theorem_name=str(task.meta.get("declared_name")))


@hookimpl(trylast=True)
def pytest_forall_languages() -> list[Language]:
    return [LANGUAGE]


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> LeanProjectProver | None:
    if name != LEAN_PROVER:
        return None
    prover = LeanProjectProver({"lean_required_modules": [], **options, "lean_project": str(project_root(options))})
    prover.name = LEAN_PROVER
    return prover
