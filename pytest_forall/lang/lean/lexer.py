"""Lean 4's lexical rules, written once: every Lean text in the package is cut by this module.

Each rule follows Lean's own parser (``docs/lean-facts.md`` §Lexer cites the lines):

* whitespace and comments are consumed by ``whitespace``: ``--`` to the end of the line, ``/-`` a block
  comment, nested by ``/-``/``-/`` (``finishCommentBlock``). The character after ``/-`` is skipped
  unread, so ``/-/-/`` is a whole comment. A tab outside a literal or comment is an error.
* ``/--`` and ``/-!`` are *tokens* (doc comment, module doc), not comments: their body is read by
  ``finishCommentBlock`` from the fourth character, so ``/--/ … -/`` closes only at the next ``-/``.
* at a token start (``tokenFnAux``): ``"`` a string (backslash escapes one character; gaps need no rule
  to find the end); ``'`` not followed by ``'`` a character literal (one character or one escape, then
  ``'``, else an error); a digit a number; ``r`` followed by ``#*"`` a raw string closed by ``"`` and
  the same number of ``#``; otherwise an identifier (``«…»`` components, ``.``-joined) or a symbol.
* identifier characters are ``isIdFirst``/``isIdRest`` of ``Init/Meta/Defs.lean``.
* a string with ``{`` is also read as an interpolated string (``interpolatedStrFn``, L11): the text between
  ``{`` and its ``}`` is Lean code, lexed here as tokens (nested strings included), so the screen sees it. Which
  strings Lean reads as interpolated depends on the syntax before them (``s!``, ``m!``, ``f!``, ``dbg_trace``,
  ``throwError`` …), so every string is read both ways; where the two readings end at different places, the
  text is not understood (fails closed).
* Lean reads the file with CRLF turned into LF (L12): a CR LF inside a character literal is one character.

Text Lean would reject at this level (unterminated comment, string, escape; tabs) raises
:class:`NotUnderstood`, so every caller fails closed on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pytest_forall.lang.common import NotUnderstood, Token

#: Span kinds. ``comment`` and ``doc``/``moddoc`` are never tokens for the screen.
COMMENT, DOC, MODDOC = "comment", "doc", "moddoc"
LITERALS = frozenset({"string", "char"})
#: Multi-character symbols the screen needs as one token (``:=`` ends a signature, ``@[`` opens attributes).
_SYMBOLS2 = (":=", "@[")
#: Mathlib tokens that end in ``'``: without them the ``'`` would start a character literal (Lean matches
#: the token table first, ``tokenFnAux``). A ``'`` that forms no literal is a symbol, as in Lean's table.
_PRIMED_SYMBOLS = ("⁻¹'", "''")


@dataclass(frozen=True)
class Span:
    """One lexeme of ``text[start:end]``: ident, number, string, char, symbol, comment, doc or moddoc."""

    kind: str
    start: int
    end: int


def letter_like(char: str) -> bool:
    code = ord(char)
    return ((0x3B1 <= code <= 0x3C9 and code != 0x3BB) or (0x391 <= code <= 0x3A9 and code not in (0x3A0, 0x3A3))
            or 0x3CA <= code <= 0x3FB or 0x1F00 <= code <= 0x1FFE or 0x2100 <= code <= 0x214F
            or 0x1D49C <= code <= 0x1D59F or (0xC0 <= code <= 0xFF and code not in (0xD7, 0xF7))
            or 0x100 <= code <= 0x17F)


def _subscript(char: str) -> bool:
    code = ord(char)
    return 0x2080 <= code <= 0x2089 or 0x2090 <= code <= 0x209C or 0x1D62 <= code <= 0x1D6A or code == 0x2C7C


def id_first(char: str) -> bool:
    return (char.isascii() and char.isalpha()) or char == "_" or letter_like(char)


def id_rest(char: str) -> bool:
    return id_first(char) or (char.isascii() and char.isdigit()) or char in "'!?" or _subscript(char)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _fail(text: str, start: int, message: str) -> NotUnderstood:
    return NotUnderstood(message, _line_of(text, start), text[start:start + 40])


def comment_body_end(text: str, i: int, start: int, nesting: int = 1) -> int:
    """``finishCommentBlock``: from ``i`` (inside a comment ``nesting`` deep) to just after its ``-/``."""
    n = len(text)
    while i < n:
        if text.startswith("-/", i):
            nesting, i = nesting - 1, i + 2
            if nesting == 0:
                return i
        elif text.startswith("/-", i):
            nesting, i = nesting + 1, i + 2
        else:
            i += 1
    raise _fail(text, start, "unterminated comment")


def _comment_at(text: str, i: int) -> Span | None:
    """A comment, doc comment or module doc starting at ``i``, or None."""
    if text.startswith("--", i):
        end = text.find("\n", i)
        return Span(COMMENT, i, len(text) if end < 0 else end)
    if not text.startswith("/-", i):
        return None
    third = text[i + 2:i + 3]
    if third in ("-", "!"):  # "/--" and "/-!" are tokens; their body starts after the third character
        return Span(DOC if third == "-" else MODDOC, i, comment_body_end(text, i + 3, i))
    if not third:
        raise _fail(text, i, "unterminated comment")
    return Span(COMMENT, i, comment_body_end(text, i + 3, i))  # the third character is skipped unread


def _string_end(text: str, i: int) -> int:
    j, n = i + 1, len(text)
    while j < n:
        if text[j] == "\\":
            j += 2
        elif text[j] == '"':
            return j + 1
        else:
            j += 1
    raise _fail(text, i, "unterminated string literal")


def _raw_string_end(text: str, i: int) -> int:
    """End of ``r#*"…"#*`` at ``i``, or 0 when ``r`` does not start one (``isRawStrLitStart``)."""
    j = i + 1
    while j < len(text) and text[j] == "#":
        j += 1
    if j >= len(text) or text[j] != '"':
        return 0
    closing = '"' + "#" * (j - i - 1)
    end = text.find(closing, j + 1)
    if end < 0:
        raise _fail(text, i, "unterminated raw string literal")
    return end + len(closing)


_QUOTABLE = "\\\"'rnt"
_HEX = "0123456789abcdefABCDEF"


def _char_end(text: str, i: int) -> int:
    """``charLitFnAux``: one character or one escape after ``'``, then ``'``; 0 when there is none.

    Lean reports an error where we return 0 (unless a table token starts here); either way nothing that
    compiles is read differently.
    """
    j = i + 1
    if text.startswith("\r\n", j):  # one character once Lean has normalised the line ending [L12]
        j += 2
    elif text[j:j + 1] == "\\":
        escape = text[j + 1:j + 2]
        width = 2 if escape and escape in _QUOTABLE else 4 if escape == "x" else 6 if escape == "u" else 0
        if not width or len(text) < j + width or not all(c in _HEX for c in text[j + 2:j + width]):
            return 0
        j += width
    elif j < len(text):
        j += 1
    return j + 1 if text[j:j + 1] == "'" else 0


def _ident_end(text: str, i: int) -> int:
    """``identFnAux``: components of ``isIdRest`` characters or ``«…»``, joined by ``.`` before a component."""
    n = len(text)
    while True:
        if text[i] == "«":
            close = text.find("»", i + 1)
            if close < 0:
                raise _fail(text, i, "unterminated identifier escape")
            i = close + 1
        else:
            i += 1
            while i < n and id_rest(text[i]):
                i += 1
        if i + 1 < n and text[i] == "." and (text[i + 1] == "«" or id_first(text[i + 1])):
            i += 1
            continue
        return i


def _digits(text: str, i: int, allowed: str) -> int:
    while i < len(text) and (text[i] in allowed or text[i] == "_"):
        i += 1
    return i


def _number_end(text: str, i: int) -> int:
    """``numberFnAux``: ``0b``/``0o``/``0x`` or decimal with optional ``.digits`` and exponent; ``_`` separators."""
    prefix = text[i:i + 2].lower()
    if prefix in ("0b", "0o", "0x"):
        return _digits(text, i + 2, {"0b": "01", "0o": "01234567", "0x": _HEX}[prefix])
    i = _digits(text, i, "0123456789")
    if text[i:i + 1] == "." and text[i + 1:i + 2].isdigit():
        i = _digits(text, i + 1, "0123456789")
    if text[i:i + 1] in ("e", "E"):
        j = i + 1 + (text[i + 1:i + 2] in ("+", "-"))
        if text[j:j + 1].isdigit():
            i = _digits(text, j, "0123456789")
    return i


def _interpolated(text: str, i: int) -> tuple[int, list[Span]] | None:
    """``interpolatedStrFn`` [L11] on the string at ``i``: (its end, the literal pieces and the code lexemes in
    order), or None when it has no ``{`` region. A piece runs from ``"`` or ``}`` to ``{`` or ``"``."""
    pieces: list[Span] = []
    start, j, n = i, i + 1, len(text)
    while j < n:
        char = text[j]
        if char == "\\":
            j += 2
        elif char == '"':
            if not pieces:
                return None
            pieces.append(Span("string", start, j + 1))
            return j + 1, pieces
        elif char == "{":
            pieces.append(Span("string", start, j + 1))
            j, code = _code_region(text, j + 1, i)
            pieces += code
            start, j = j, j + 1
        else:
            j += 1
    raise _fail(text, i, "unterminated string literal")


def _code_region(text: str, i: int, string_start: int) -> tuple[int, list[Span]]:
    """The lexemes of a ``{…}`` region from ``i`` to the ``}`` that closes it: (that ``}``'s index, lexemes).

    Lean parses a term there and then expects ``}``; a term's own braces are balanced, so the first ``}`` at
    depth 0 is the one."""
    found: list[Span] = []
    depth, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in " \n\r":
            i += 1
            continue
        if char == "\t":
            raise _fail(text, i, "tab outside a literal or comment (Lean: tabs are not allowed)")
        if char == '"':
            found += string_lexemes(text, i, text[found[-1].start:found[-1].end] if found else "")
            i = found[-1].end
            continue
        span = lexeme_at(text, i)
        if span.kind == "symbol" and text[span.start:span.end] == "}":
            if depth == 0:
                return i, found
            depth -= 1
        elif span.kind == "symbol" and text[span.start:span.end] == "{":
            depth += 1
        found.append(span)
        i = span.end
    raise _fail(text, string_start, "unterminated string literal")


#: Syntax whose only argument form is an interpolated string (``syntax:max "s!" interpolatedStr(term)`` …) [L11].
#: After anything else a string may be plain or interpolated (``dbg_trace`` is both: a plain ``str`` as a tactic,
#: an interpolated string in ``do`` notation).
INTERPOLATING = frozenset({"s!", "m!", "f!"})


def string_lexemes(text: str, i: int, after: str = "") -> list[Span]:
    """The string at ``i`` (``after``: the token before it): one span, or, when it has ``{`` regions, its pieces
    and the code inside [L11]. After ``s!``/``m!``/``f!`` it is read as Lean reads it there, interpolated;
    elsewhere both readings must end at the same place, else the text is not understood."""
    if after in INTERPOLATING:
        read = _interpolated(text, i)
        return [Span("string", i, _string_end(text, i))] if read is None else read[1]
    end = _string_end(text, i)
    if "{" not in text[i:end]:
        return [Span("string", i, end)]
    try:
        read = _interpolated(text, i)
    except NotUnderstood:
        read = (-1, [])
    if read is None:  # every `{` is escaped
        return [Span("string", i, end)]
    if read[0] != end:
        raise _fail(text, i, "a string literal that ends elsewhere when Lean reads it as an interpolated string")
    return read[1]


def lexeme_at(text: str, i: int) -> Span:
    """The comment, doc comment or token starting at ``i`` (not whitespace)."""
    comment = _comment_at(text, i)
    if comment is not None:
        return comment
    char = text[i]
    if char == '"':
        return Span("string", i, _string_end(text, i))
    for symbol in _PRIMED_SYMBOLS:
        if text.startswith(symbol, i):
            return Span("symbol", i, i + len(symbol))
    if char == "'" and _char_end(text, i):
        return Span("char", i, _char_end(text, i))
    if char.isascii() and char.isdigit():
        return Span("number", i, _number_end(text, i))
    if char == "r" and _raw_string_end(text, i):
        return Span("string", i, _raw_string_end(text, i))
    if char == "«" or id_first(char):
        return Span("ident", i, _ident_end(text, i))
    return Span("symbol", i, i + (2 if text.startswith(_SYMBOLS2, i) else 1))


def spans(text: str, *, lenient: bool = False) -> Iterator[Span]:
    """Every lexeme of ``text`` in order (whitespace omitted); raises :class:`NotUnderstood` where Lean errs.

    ``lenient`` (for indexing and collection, never for judging) reads a tab as a space and an
    unterminated construct as a comment to the end: the text Lean's error swallows.
    """
    i, n = 0, len(text)
    previous = ""
    while i < n:
        char = text[i]
        if char in " \n\r" or (char == "\t" and lenient):
            i += 1
            continue
        if char == "\t":
            raise _fail(text, i, "tab outside a literal or comment (Lean: tabs are not allowed)")
        try:
            found = string_lexemes(text, i, previous) if char == '"' else [lexeme_at(text, i)]
        except NotUnderstood:
            if not lenient:
                raise
            found = [Span(COMMENT, i, n)]
        yield from found
        if found[-1].kind not in (COMMENT, DOC, MODDOC):
            previous = text[found[-1].start:found[-1].end]
        i = found[-1].end


def tokens(text: str) -> list[Token]:
    """The screen's tokens: comments and doc comments vanish but count as separation (and line breaks)."""
    out: list[Token] = []
    separated = newline = True
    last = 0
    line, line_start = 1, 0
    for span in spans(text):
        gap = text[last:span.start]
        if gap:
            separated = True
            if "\n" in gap:
                newline = True
                line += gap.count("\n")
                line_start = text.rindex("\n", last, span.start) + 1
        if span.kind in (COMMENT, DOC, MODDOC):
            separated = True
            body = text[span.start:span.end]
            if "\n" in body:
                newline = True
                line += body.count("\n")
                line_start = text.rindex("\n", span.start, span.end) + 1
        else:
            out.append(Token(span.kind, text[span.start:span.end], line, span.start - line_start + 1,
                             separated, newline))
            separated = newline = False
            body = text[span.start:span.end]
            if "\n" in body:
                line += body.count("\n")
                line_start = text.rindex("\n", span.start, span.end) + 1
        last = span.end
    return out


def mask(text: str, *, strings: bool = True, lenient: bool = True) -> str:
    """``text`` with comments and doc comments (and, if ``strings``, literal interiors) blanked.

    Newlines and offsets are kept, so positions found in the mask are positions in ``text``.
    """
    out = list(text)
    for span in spans(text, lenient=lenient):
        if span.kind in (COMMENT, DOC, MODDOC):
            lo, hi = span.start, span.end
        elif strings and span.kind in LITERALS:
            lo, hi = span.start + 1, span.end - 1
        else:
            continue
        for k in range(lo, hi):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


def doc_comments(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, body)`` of every ``/-- … -/`` declaration doc comment (module docs excluded)."""
    return [(s.start, s.end, text[s.start + 3:s.end - 2]) for s in spans(text, lenient=True) if s.kind == DOC]
