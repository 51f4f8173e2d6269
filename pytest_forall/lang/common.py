"""Pieces shared by the Rocq and Lean static screens: tokens, findings, character policy, comparison."""

from __future__ import annotations

import unicodedata
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_forall.core.model import Layer

SYNTAX = "syntax_screen"
FROZEN = "frozen_statement"
SHADOWING = "shadowing_guard"
LAYER_NAMES = (SYNTAX, FROZEN, SHADOWING)


class NotUnderstood(Exception):
    """Text the screen cannot lex or structure; every layer that needed it rejects (fail closed)."""

    def __init__(self, message: str, line: int, excerpt: str = "") -> None:
        super().__init__(f"line {line}: {message}")
        self.message = message
        self.line = line
        self.excerpt = excerpt


@dataclass(frozen=True)
class Token:
    """One lexeme; ``separated`` records whether whitespace or a comment precedes it.

    Both languages lex by longest match over an extensible token table (Coq notations such as ``.+1``
    or ``%:R``; Lean ``x.1``, ``a[i]``, ``n!``), so *whether* two lexemes are separated can change the
    parse even though *how* (space, newline, comment) cannot.  Comparisons therefore keep it.
    """

    kind: str  # "ident" | "number" | "string" | "char" | "symbol" | "end" (Coq sentence end)
    text: str
    line: int
    col: int
    separated: bool
    newline: bool


@dataclass
class Finding:
    """One reason to reject, anchored to a line of the candidate (or template)."""

    line: int
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"line {self.line}: {self.reason}"


def layer_from_findings(name: str, findings: Sequence[Finding], passed: str,
                        evidence: dict[str, Any] | None = None) -> Layer:
    """The first finding is the reason; all of them go into the evidence."""
    if not findings:
        return Layer(name, True, passed, dict(evidence or {}))
    first = findings[0]
    details = {**(evidence or {}), **first.evidence, "line": first.line,
               "findings": [f.describe() for f in findings[:20]]}
    return Layer(name, False, first.describe(), details)


def not_understood_layers(error: NotUnderstood, what: str) -> list[Layer]:
    """Every layer rejects: nothing downstream can be judged on text the lexer could not read."""
    reason = f"{what} not understood at line {error.line}: {error.message}"
    return [Layer(name, False, reason, {"line": error.line, "excerpt": error.excerpt}) for name in LAYER_NAMES]


_ALLOWED_CONTROLS = {"\n", "\r", "\t"}
_SUSPECT_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}


def suspicious_characters(text: str) -> list[Finding]:
    """Controls, bidi overrides, zero-width and exotic spaces: each lexer could disagree with ours on them."""
    findings = []
    line = 1
    for char in text:
        if char == "\n":
            line += 1
            continue
        if char in _ALLOWED_CONTROLS or char == " ":
            continue
        if unicodedata.category(char) in _SUSPECT_CATEGORIES:
            name = unicodedata.name(char, "unnamed")
            findings.append(Finding(line, f"forbidden character U+{ord(char):04X} ({name})",
                                    {"codepoint": f"U+{ord(char):04X}", "character_name": name}))
    return findings


def layout_key(token: Token, first: bool) -> Hashable:
    """What must agree between two streams for one token (separation of a unit's first token is moot)."""
    return (token.kind, token.text, True if first else token.separated)



@dataclass(frozen=True)
class TokenRun:
    """A Lean command or a Rocq sentence: the unit the screen aligns, compares and judges."""

    tokens: tuple[Token, ...]

    @property
    def line(self) -> int:
        return self.tokens[0].line

    @property
    def text(self) -> str:
        return " ".join(t.text for t in self.tokens)

    def key(self) -> tuple[object, ...]:
        return tuple(layout_key(t, i == 0) for i, t in enumerate(self.tokens))

def first_difference(frozen: Sequence[Token], candidate: Sequence[Token]) -> int | None:
    """Index of the first token whose layout key differs, ``len`` of the shorter if one is a prefix, else None."""
    for index, (a, b) in enumerate(zip(frozen, candidate)):
        if layout_key(a, index == 0) != layout_key(b, index == 0):
            return index
    if len(frozen) != len(candidate):
        return min(len(frozen), len(candidate))
    return None


def describe_token(tokens: Sequence[Token], index: int) -> str:
    if index >= len(tokens):
        return "<end>"
    token = tokens[index]
    if token.newline and index:
        layout = f"(new line, column {token.col}) "
    else:
        layout = "" if token.separated or index == 0 else "(no space before) "
    return f"{layout}{token.text!r}"


def difference_finding(what: str, frozen: Sequence[Token], candidate: Sequence[Token], index: int,
                       fallback_line: int) -> Finding:
    """A finding that names the first differing token of two streams, with both line numbers."""
    template_line = frozen[index].line if index < len(frozen) else (frozen[-1].line if frozen else 0)
    candidate_line = candidate[index].line if index < len(candidate) else fallback_line
    expected, found = describe_token(frozen, index), describe_token(candidate, index)
    return Finding(candidate_line, f"{what} differs from the template (template line {template_line}): "
                                   f"expected {expected}, found {found}",
                   {"template_line": template_line, "candidate_line": candidate_line,
                    "expected": expected, "found": found,
                    "template_excerpt": excerpt(frozen, index), "candidate_excerpt": excerpt(candidate, index)})


def excerpt(tokens: Sequence[Token], index: int, width: int = 8) -> str:
    window = tokens[max(0, index - width): index + width]
    return " ".join(t.text for t in window)


def components(name: str) -> list[str]:
    """Dot-separated parts of a qualified name, guillemets dropped (Lean ``«a b».c`` is ``a b``, ``c``)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in name:
        if char == "«":
            quoted = True
        elif char == "»":
            quoted = False
        elif char == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in parts if p]


def name_clashes(declared: str, frozen_parts: set[str]) -> bool:
    """A declared name clashes if its last part is any part of any frozen identifier.

    Deliberately coarser than either resolver: it subsumes exact shadowing, ``open``/namespace suffix
    resolution and Lean's dot notation (``n.foo`` finding a new ``Nat.foo``) without modelling them.
    """
    parts = components(declared)
    return bool(parts) and parts[-1] in frozen_parts


def identifier_parts(tokens: Iterable[Token]) -> set[str]:
    return {part for t in tokens if t.kind == "ident" for part in components(t.text)}


class Language(Protocol):
    """What each language module of the screen provides to :func:`run_static_layers`."""

    def template_shape(self, template: str, theorem_name: str) -> object: ...
    def analyse(self, template: str, candidate: str, theorem_name: str) -> Any: ...
    def syntax_screen(self, candidate: str, analysis: Any, theorem_name: str) -> Layer: ...
    def frozen_statement(self, analysis: Any, theorem_name: str) -> Layer: ...
    def shadowing_guard(self, analysis: Any) -> Layer: ...


def run_static_layers(language: Language, template: str, candidate: str, theorem_name: str) -> list[Layer]:
    """The three static layers, in order; text the lexer cannot read fails every layer with its reason."""
    try:
        language.template_shape(template, theorem_name)
    except NotUnderstood as error:
        return not_understood_layers(error, "template")
    try:
        analysis = language.analyse(template, candidate, theorem_name)
    except NotUnderstood as error:
        layers = not_understood_layers(error, "candidate")
        layers[0] = layer_from_findings(SYNTAX, [*suspicious_characters(candidate),
                                                 Finding(error.line, error.message, {"excerpt": error.excerpt})], "")
        return layers
    return [language.syntax_screen(candidate, analysis, theorem_name),
            language.frozen_statement(analysis, theorem_name), language.shadowing_guard(analysis)]

