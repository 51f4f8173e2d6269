"""Coq's own sentences: the units ``coqc`` executed and how it printed each (``-time``, the ``.glob``), read back
from the compile, so the static screen's reading of the candidate is checked against Coq's rather than trusted
(the ``sentence_structure`` layer). Kept apart from :mod:`.screen`, the text-only layers."""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_forall.core.model import Layer
from pytest_forall.lang.common import (
    NotUnderstood,
    Token,
)
from pytest_forall.lang.rocq.screen import (
    BULLET_CHARS,
    PARSED_PROOF_HEADS,
    THEOREM_KEYWORDS,
    Sentence,
    candidate_shape,
    is_abbreviation,
)

STRUCTURE = "sentence_structure"
#: A command's head word, qualified for the commands a plugin exports under a dotted name (Hierarchy Builder's
#: ``HB.instance``, as the screen's lexer reads it too); the sentence's final ``.`` is no part of it.
_HEAD_WORD = re.compile(r"[A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*")
#: ``coqc -time`` shows at most this many characters of Coq's rendering, then ``...`` (``pp_cmd_header``).
_SHOWN, _CUT = 30, 33
#: The ``.glob`` kinds under which Coq records what a command with this head declares (``prf`` for a statement
#: proved in proof mode). Where the ``-time`` report cuts a command off before its head, these entries, located by
#: the parser's byte offsets, show which command Coq parsed without depending on how it prints.
GLOB_KINDS = {
    **{kw: frozenset({"prf"}) for kw in THEOREM_KEYWORDS},
    "Definition": frozenset({"def", "prf"}), "Example": frozenset({"ex", "def", "prf"}),
    "Fixpoint": frozenset({"def", "prf"}), "CoFixpoint": frozenset({"def", "prf"}),
    "Inductive": frozenset({"ind"}), "Variant": frozenset({"ind"}), "CoInductive": frozenset({"coind", "ind"}),
    "Record": frozenset({"rec", "ind"}), "Structure": frozenset({"rec", "ind"}), "Class": frozenset({"class", "rec"}),
    "Instance": frozenset({"inst", "prf"}), "Notation": frozenset({"abbrev", "syndef"}),  # an abbreviation
}


@dataclass(frozen=True)
class ParsedCommand:
    """What a ``coqc -time`` line shows of the command Coq parsed: its ``#[…]`` attributes, then its head word.

    Coq prints the command with its pretty-printer, turns every blank into ``~`` and cuts it after 30 characters
    (``pp_cmd_header``, Coq's ``vernac/topfmt.ml``). Where the printer breaks a line is layout, not syntax: any run
    of ``~`` (or a blank, which Rocq 9 prints after the attributes) is one blank here. ``complete`` is False when the cut falls inside the attributes or the head, so
    ``head`` is only a prefix of the word Coq parsed (possibly empty).
    """

    attributes: list[str]
    head: str
    complete: bool


def parsed_command(printed: str) -> ParsedCommand:
    """Read a ``-time`` rendering (``#[local]~Lemma~a_very_long_lem...``) as attributes and head."""
    cut = len(printed) == _CUT and printed.endswith("...")
    text = printed[:_SHOWN] if cut else printed
    attributes: list[str] = []
    i = 0

    def blanks(j: int) -> int:
        while j < len(text) and text[j] in "~ ":  # Rocq 9 prints a blank after the attributes
            j += 1
        return j

    i = blanks(i)
    while text.startswith("#[", i):
        i, depth, quoted, current = i + 2, 1, False, ""
        while i < len(text):
            char = text[i]
            i += 1
            if quoted:
                quoted = char != '"'
            elif char == '"':
                quoted = True
            elif char in "[(":
                depth += 1
            elif char in "])":
                depth -= 1
                if depth == 0:
                    break
            elif char == "," and depth == 1:
                attributes.append(current.replace("~", ""))
                current = ""
                continue
            current += char
        else:  # the cut falls inside the attribute list
            attributes.append(current.replace("~", ""))
            return ParsedCommand(attributes, "", False)
        attributes.append(current.replace("~", ""))
        i = blanks(i)
    word = _HEAD_WORD.match(text, i)
    head = word.group() if word else ""
    complete = not (cut and i + len(head) >= len(text))
    return ParsedCommand(attributes, head, complete)


@dataclass(frozen=True)
class Unit:
    """One sentence as coqc executes it: bullets and braces are sentences of their own, a goal selector with
    its brace (``2: {``) one sentence. ``start``/``end`` are character offsets into the screen's text."""

    start: int
    end: int
    sentence: Sentence
    in_proof: bool


def coq_units(text: str) -> list[Unit]:
    """The screen's segmentation of ``text`` into the units ``coqc -time`` reports (NotUnderstood if unreadable)."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def offset(token: Token) -> int:
        return starts[token.line - 1] + token.col - 1

    units: list[Unit] = []
    for block in candidate_shape(text, "").before:
        for in_proof, sentence in [(False, block.head), *((True, s) for s in block.proof)]:
            tokens = list(sentence.tokens)
            while tokens and tokens[0].kind == "symbol" and set(tokens[0].text) <= BULLET_CHARS:
                units.append(Unit(offset(tokens[0]), offset(tokens[0]) + len(tokens[0].text), sentence, in_proof))
                tokens = tokens[1:]
            brace = _selector_brace(tokens) if in_proof else None
            if brace is not None:
                units.append(Unit(offset(tokens[0]), offset(tokens[brace]) + 1, sentence, in_proof))
                tokens = tokens[brace + 1:]
                while tokens and tokens[0].kind == "symbol" and set(tokens[0].text) <= BULLET_CHARS:
                    units.append(Unit(offset(tokens[0]), offset(tokens[0]) + len(tokens[0].text), sentence,
                                      in_proof))
                    tokens = tokens[1:]
            if tokens:
                units.append(Unit(offset(tokens[0]), offset(tokens[-1]) + len(tokens[-1].text), sentence, in_proof))
    return units


def _selector_brace(tokens: Sequence[Token]) -> int | None:
    """Index of the ``{`` of a goal selector opening a focus (``2: {``, ``[x]: {``, ``all: {``), else None."""
    colon = next((i for i, t in enumerate(tokens) if t.text in (":", "!:")), None)
    if colon is None or colon + 1 >= len(tokens) or tokens[colon + 1].text != "{":
        return None
    selector = tokens[:colon]
    if all(t.kind == "number" or t.text in (",", "-", "all", "par", "!") for t in selector) or (
            len(selector) == 3 and (selector[0].text, selector[2].text) == ("[", "]")):
        return colon + 1
    return None


def sentence_structure(data: bytes, reported: Sequence[tuple[int, int, str]],
                       declarations: Sequence[tuple[int, int, str, str]] = ()) -> Layer:
    """The sentences coqc executed (byte ranges from ``coqc -time``) must be exactly the screen's units, and each
    is judged by what Coq parsed: in a proof, a capitalised head Coq parsed is a command unless it is ``Proof``,
    ``Unshelve``, ``Qed``, ``Defined`` or a tactic the candidate defined; at the top level Coq's command must be
    the one the screen classified. The candidate can print lines that look like coqc's report, but only add
    ranges, so a forgery can make this layer reject, never accept.

    Coq's rendering is read by :func:`parsed_command`, so the printer's line breaks do not matter. Where the report
    cuts a top-level command off before its head is complete (long attribute lists), the command is confirmed
    from ``declarations`` (coqc's ``.glob``: kind, name and the parser's byte offsets): Coq must have declared the
    screen's name, as that kind of command, inside that sentence; otherwise the layer rejects.
    """
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode("utf-8")
        units = coq_units(text)
    except (UnicodeDecodeError, NotUnderstood) as exc:
        return Layer(STRUCTURE, False, f"the screen cannot segment the candidate: {exc}")
    byte_at = [0]  # coqc counts bytes after a leading byte order mark (tests/cheats/valid/utf8_bom)
    for char in text:
        byte_at.append(byte_at[-1] + len(char.encode("utf-8")))
    expected = [(byte_at[u.start], byte_at[u.end]) for u in units]
    got = [(a, b) for a, b, _ in reported]
    evidence: dict[str, object] = {"sentences": len(got), "screen_units": len(expected)}
    if got != expected:
        index = next((i for i, (x, y) in enumerate(zip(expected, got)) if x != y), min(len(expected), len(got)))
        mine = f"bytes {expected[index][0]}-{expected[index][1]}" if index < len(expected) else "nothing more"
        coq = f"bytes {got[index][0]}-{got[index][1]} [{reported[index][2][:60]}]" if index < len(got) else "nothing"
        return Layer(STRUCTURE, False, f"coqc's sentences differ from the screen's at sentence {index + 1}: coqc "
                                       f"executed {coq}, the screen expected {mine}", evidence)
    tactics = {u.sentence.declared_name() for u in units if not u.in_proof and u.sentence.head() in ("Ltac", "Ltac2")}
    confirmed = 0
    for unit, (start, end, parsed) in zip(units, reported):
        command = parsed_command(parsed)
        head = command.head
        line = unit.sentence.line
        if unit.in_proof:
            allowed = PARSED_PROOF_HEADS | tactics
            # a cut head is at least 30 characters long: no command keyword is, only a tactic name can be
            known = head in allowed if command.complete else any(name.startswith(head) for name in allowed)
            if command.attributes or (head[:1].isupper() and not known):
                return Layer(STRUCTURE, False, f"line {line}: Coq parsed the command `{parsed[:60]}` inside a proof",
                             evidence)
            continue
        words = unit.sentence.command_words()
        screen = words[1] if words[:1] == ["Program"] and len(words) > 1 else (words[0] if words else "")
        # Rocq 9 prints an abbreviation (``Notation name := term``) as ``Abbreviation``
        spellings = {screen, "Abbreviation"} if screen == "Notation" and is_abbreviation(unit.sentence) else {screen}
        if command.complete:
            if head not in spellings and {head, screen} != {"Eval", "Compute"}:
                return Layer(STRUCTURE, False, f"line {line}: Coq parsed `{parsed[:60]}` where the screen saw "
                                               f"`{' '.join(words[:2])}`", evidence)
            continue
        name = unit.sentence.declared_name()
        declared = any(start <= a < end and kind in GLOB_KINDS.get(screen, ()) and found == name
                       for a, _, kind, found in declarations)
        if not (any(spelling.startswith(head) for spelling in spellings) and name and declared):
            return Layer(STRUCTURE, False, f"line {line}: coqc's report cuts the command off (`{parsed[:60]}`) and "
                                           f"Coq recorded no `{screen}` declaring `{name}` in that sentence", evidence)
        confirmed += 1
    evidence["confirmed_by_declarations"] = confirmed
    return Layer(STRUCTURE, True, f"all {len(got)} sentences coqc executed are the screen's", evidence)


