"""The one Rocq/Coq lexer: every consumer of Rocq source (screen, template parser, project suite,
retrieval, the backend's regexes) reads comments, strings, identifiers and sentence ends from here.

It follows Coq 8.16's own lexer, ``parsing/cLexer.ml`` with ``clib/unicode.ml`` (Debian ships both as
source in ``libcoq-core-ocaml-dev``; docs/rocq-lexer.md cites the lines), and is checked against real
``coqc -time`` sentence spans in tests/test_rocq_lexer.py:

* blanks are exactly space, tab, newline, carriage return (``next_token``; ``blank_or_eof``) — a no-break
  space is an *identifier* character (``IdentSep``), a form feed is not a blank;
* comments ``(* … *)`` nest; inside a comment a ``"`` opens a string that the comment skips whole, so
  ``(* a "*)" b *)`` is one comment and an unterminated string in a comment is a lexer error;
* strings ``"…"`` with ``""`` as the escaped quote, newlines allowed;
* identifiers: ASCII letters or ``_``, or a non-ASCII Letter/IdentSep, then those, digits, ``'`` or a
  non-ASCII IdentPart (Coq's tables, generated into :mod:`.unicode_table`);
* numbers as ``NumTok.Unsigned.parse``: ``[0-9][0-9_]*``, ``0x`` hex, ``.frac``, ``e``/``p`` exponents;
* a ``.`` ends a sentence only when a blank or the end of the file follows.

Symbols are maximal runs (Coq's token table grows with every ``Notation``, so a run is the most a static
reader can say), with the ``separated`` flag telling whether a blank or comment came before each token.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from pytest_forall.lang.common import NotUnderstood, Token
from pytest_forall.lang.rocq.unicode_table import IDENT_INITIAL, IDENT_TRAILING_ONLY

BLANKS = frozenset(" \t\n\r")
BRACKETS = frozenset("()[]{}")
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")
_INITIAL_STARTS = [lo for lo, _ in IDENT_INITIAL]
_QUOTE_OR_COMMENT = re.compile(r'"|\(\*')
_BLANK_RUN = re.compile(r"[ \t\n\r]+")
_ASCII_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_']*")
_TRAILING_STARTS = [lo for lo, _ in IDENT_TRAILING_ONLY]
#: the lexer's hot loops jump over runs with these instead of testing one character at a time (the retrieval index
#: of the installed libraries lexes 1 600 files; the screen, the project collection and the audit lex every
#: candidate): each matches exactly the characters the per-character test accepts, in ASCII
_ASCII_TRAILING = re.compile(r"[A-Za-z0-9_']+")
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_']*(?:\.[A-Za-z_][A-Za-z0-9_']*)*")  # qualified, in ASCII
_ASCII_SYMBOLS = re.compile(r'[^ \t\n\rA-Za-z_0-9()\[\]{}"\x80-\U0010FFFF]+')
_COMMENT_MARK = re.compile(r'\(\*|\*\)|"')
_NOT_NEWLINE = re.compile(r"[^\n]")


class LexError(NotUnderstood):
    """Text Coq's lexer refuses (unterminated comment or string) or a reader cannot split (a symbol run ending in
    three or more dots before a blank, other than ``...`` alone, the ellipsis that ends a tactic sentence): every
    consumer that needs the structure fails closed."""

    def __init__(self, message: str, offset: int, text: str) -> None:
        super().__init__(message, text.count("\n", 0, offset) + 1, text[offset:offset + 40])
        self.offset = offset


class Lexeme(NamedTuple):
    """One lexeme of the source: ``kind`` and the half-open character range ``[start, end)``.

    Kinds: ``comment``, ``string``, ``ident`` (qualified names joined: ``Coq.Init.nat``), ``number``,
    ``bracket``, ``symbol`` (a maximal run), ``end`` (the ``.`` closing a sentence). (A tuple: made millions of
    times by an index of the installed libraries, a frozen dataclass cost three attribute writes each.)
    """

    kind: str
    start: int
    end: int


def _in(table: tuple[tuple[int, int], ...], starts: list[int], char: str) -> bool:
    code = ord(char)
    index = bisect.bisect_right(starts, code) - 1
    return index >= 0 and code <= table[index][1]


def ident_initial(char: str) -> bool:
    """May ``char`` start an identifier (``is_valid_ident_initial``)?"""
    if char < "\x80":
        return char == "_" or ("a" <= char <= "z") or ("A" <= char <= "Z")
    return _in(IDENT_INITIAL, _INITIAL_STARTS, char)


def ident_trailing(char: str) -> bool:
    """May ``char`` continue an identifier (``ident_tail`` / ``is_valid_ident_trailing``)?"""
    if char < "\x80":
        return ident_initial(char) or char in _DIGITS or char == "'"
    return _in(IDENT_INITIAL, _INITIAL_STARTS, char) or _in(IDENT_TRAILING_ONLY, _TRAILING_STARTS, char)


def _symbol_char(char: str) -> bool:
    return not (char in BLANKS or ident_initial(char) or char in _DIGITS or char in BRACKETS or char == '"')


def string_end(text: str, start: int, *, strict: bool = True) -> int:
    """End of the string whose ``"`` is at ``start``: the first ``"`` not doubled (cLexer ``string``)."""
    i, n = start + 1, len(text)
    while i < n:
        j = text.find('"', i)
        if j < 0:
            break
        if text.startswith('""', j):
            i = j + 2
            continue
        return j + 1
    if strict:
        raise LexError("unterminated string", start, text)
    return n


def comment_end(text: str, start: int, *, strict: bool = True) -> int:
    """End of the comment opening at ``start`` (cLexer ``comment``): nested ``(*``, strings skipped whole."""
    depth, i, n = 0, start, len(text)
    while i < n:
        found = _COMMENT_MARK.search(text, i)  # the next "(*", "*)" or '"' (leftmost; "(*" first where both start)
        if found is None:
            break
        mark, i = found.group(), found.start()
        if mark == "(*":
            depth, i = depth + 1, i + 2
        elif mark == "*)":
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i = string_end(text, i, strict=strict)
    if strict:
        raise LexError("unterminated comment", start, text)
    return n


def number_end(text: str, i: int) -> int:
    """End of the number at ``i`` (``NumTok.Unsigned.parse``: int, optional ``.frac``, optional exponent)."""
    n = len(text)
    hexa = text.startswith(("0x", "0X"), i) and i + 2 < n and text[i + 2] in _HEX
    digits = _HEX if hexa else _DIGITS

    def run(j: int) -> int:  # [digits][digits_]*
        while j < n and (text[j] in digits or (text[j] == "_")):
            j += 1
        return j

    i = run(i + 3 if hexa else i + 1)
    if i + 1 < n and text[i] == "." and (text[i + 1] in digits or text[i + 1] == "_"):
        i = run(i + 2)
    marks = "pP" if hexa else "eE"
    if i + 1 < n and text[i] in marks:
        if text[i + 1] in _DIGITS:
            i += 2
        elif text[i + 1] in "+-" and i + 2 < n and text[i + 2] in _DIGITS:
            i += 3
        else:
            return i
        while i < n and (text[i] in _DIGITS or text[i] == "_"):
            i += 1
    return i


def scan(text: str, *, strict: bool = True, quoted_only: bool = False) -> Iterator[Lexeme]:
    """Every lexeme of ``text`` in order, comments included, blanks skipped.

    ``strict=False`` reads an unterminated comment or string to the end of the text instead of raising
    (for masking files Coq would refuse anyway) and does not judge runs of dots. ``quoted_only`` yields
    only comments and strings, jumping from one ``(*`` or ``"`` to the next: no other lexeme can contain
    either (identifiers and numbers have neither, a symbol run stops before both).
    """
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if quoted_only and char != '"' and not text.startswith("(*", i):
            found = _QUOTE_OR_COMMENT.search(text, i)
            i = found.start() if found else n
            continue
        if char in BLANKS:  # (never with quoted_only: it stops only at a quote or a comment)
            i = _BLANK_RUN.match(text, i).end()  # type: ignore[union-attr]  # char is a blank
            if i == n:
                break
            char = text[i]
        if char == "(" and text.startswith("(*", i):
            end = comment_end(text, i, strict=strict)
            yield Lexeme("comment", i, end)
            i = end
        elif char == '"':
            end = string_end(text, i, strict=strict)
            yield Lexeme("string", i, end)
            i = end
        elif ("a" <= char <= "z") or ("A" <= char <= "Z") or char == "_" or (char >= "\x80" and ident_initial(char)):
            ascii_run = _ASCII_NAME.match(text, i)
            j = ascii_run.end() if ascii_run else i + 1
            while j < n:  # trailing characters, and a "." before an initial one (a qualified name)
                follower = text[j]
                if follower == ".":
                    if not (j + 1 < n and ident_initial(text[j + 1])):
                        break
                    j += 1
                elif follower >= "\x80":
                    if not ident_trailing(follower):
                        break
                    j += 1
                else:
                    trailing = _ASCII_TRAILING.match(text, j)
                    if not trailing:
                        break
                    j = trailing.end()
            yield Lexeme("ident", i, j)
            i = j
        elif char in _DIGITS:
            j = number_end(text, i)
            yield Lexeme("number", i, j)
            i = j
        elif char in BRACKETS:
            yield Lexeme("bracket", i, i + 1)
            i += 1
        else:
            j = i  # ("(*" never continues a run: "(" is a bracket)
            while j < n:
                symbols = _ASCII_SYMBOLS.match(text, j)
                if symbols:
                    j = symbols.end()
                elif text[j] >= "\x80" and _symbol_char(text[j]):
                    j += 1
                else:
                    break
            if text[j - 1] == "." and (j == n or text[j] in BLANKS):
                dots = (j - i) - len(text[i:j].rstrip("."))
                if j - i == 3 and dots == 3:  # ``tac...``: the sentence ends, ``Proof with``'s tactic applied
                    yield Lexeme("end", i, j)
                    i = j
                    continue
                if dots >= 3 and strict:
                    raise LexError("ambiguous run of dots before a blank", i, text)
                if dots == 1:
                    if j - 1 > i:
                        yield Lexeme("symbol", i, j - 1)
                    yield Lexeme("end", j - 1, j)
                    i = j
                    continue
            yield Lexeme("symbol", i, j)
            i = j


def comments(text: str, *, strict: bool = False) -> list[tuple[int, int]]:
    """``(start, end)`` of every top-level comment."""
    return [(x.start, x.end) for x in scan(text, strict=strict, quoted_only=True) if x.kind == "comment"]


def _blank(chunk: str) -> str:
    return "".join("\n" if c == "\n" else " " for c in chunk)


def mask(text: str, *, strings: bool = True, strict: bool = False) -> str:
    """``text`` with every comment blanked (with ``strings``, every string's contents too; the quotes stay),
    offsets and newlines kept: what regular expressions over Rocq source may safely look at."""
    return _masked(text, scan(text, strict=strict, quoted_only=True), strings)


def masks(text: str, *, strict: bool = False) -> tuple[list[tuple[int, int]], str, str]:
    """:func:`comments`, :func:`mask` without and with ``strings``, from one scan of ``text``."""
    quoted = list(scan(text, strict=strict, quoted_only=True))
    return ([(x.start, x.end) for x in quoted if x.kind == "comment"], _masked(text, quoted, False),
            _masked(text, quoted, True))


def _masked(text: str, quoted: Iterable[Lexeme], strings: bool) -> str:
    out = list(text)
    for lexeme in quoted:
        if lexeme.kind == "comment":
            start, end = lexeme.start, lexeme.end
        elif strings and lexeme.kind == "string":
            closed = lexeme.end - lexeme.start >= 2 and text[lexeme.end - 1] == '"'
            start, end = lexeme.start + 1, lexeme.end - closed
        else:
            continue
        out[start:end] = _NOT_NEWLINE.sub(" ", text[start:end])  # (lexemes never overlap: out is text there)
    return "".join(out)


def sentences(text: str, *, strict: bool = True) -> list[tuple[int, int]]:
    """``(start, end)`` of every sentence: from its first lexeme (not a comment) to just after its ``.``.

    ``strict=False`` (readers that index rather than judge) reads leniently as :func:`scan` does and drops
    text after the last sentence end instead of raising."""
    spans: list[tuple[int, int]] = []
    start = -1
    for lexeme in scan(text, strict=strict):
        if lexeme.kind == "comment":
            continue
        if start < 0:
            start = lexeme.start
        if lexeme.kind == "end":
            spans.append((start, lexeme.end))
            start = -1
    if start >= 0 and strict:
        raise LexError("text after the last sentence's closing '.'", start, text)
    return spans


def tokens(text: str) -> list[Token]:
    """The screen's tokens: comments dropped; each knows its line and column and whether a blank or a
    comment (``separated``) or a line break (``newline``) came before it; the first token has both."""
    out: list[Token] = []
    line, line_start, pos, previous_end = 1, 0, 0, 0

    def advance(to: int) -> None:
        nonlocal line, line_start, pos
        breaks = text.count("\n", pos, to)
        if breaks:
            line, line_start = line + breaks, text.rindex("\n", pos, to) + 1
        pos = to

    for lexeme in scan(text):
        if lexeme.kind == "comment":
            continue
        gap = text[previous_end:lexeme.start]
        advance(lexeme.start)
        out.append(Token("symbol" if lexeme.kind == "bracket" else lexeme.kind, text[lexeme.start:lexeme.end],
                         line, lexeme.start - line_start + 1, not out or bool(gap), not out or "\n" in gap))
        advance(lexeme.end)
        previous_end = lexeme.end
    return out
