"""What a Rocq declaration declares, read from its tokens: the shadowing guard's declaration readers (constructors,
record constructors and fields of an inductive type), kept apart from :mod:`.screen`, which applies them."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_forall.lang.common import Token

#: How a bracket token moves the nesting depth (the declaration readers below count it the same way).
_DEPTH_CHANGE = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def depth_change(token: Token) -> int:
    return _DEPTH_CHANGE.get(token.text, 0) if token.kind == "symbol" else 0


def without_prefixes(tokens: list[Token], prefixes: tuple[str, ...] = ("Local", "Global")) -> list[Token]:
    """``tokens`` without the leading locality (or other ``prefixes``) words a command may start with."""
    while tokens and tokens[0].text in prefixes:
        tokens = tokens[1:]
    return tokens


#: Commands declaring inductive types, whose constructors, record constructors and fields are names too.
INDUCTIVE_HEADS = frozenset({"Inductive", "CoInductive", "Variant", "Record", "Structure", "Class"})


def constructor_names(sentence: Sequence[Token], head: str) -> list[str]:
    """Constructors (``:= c1 … | c2 …``), record constructors (``:= Mk {`` or ``Build_R``) and fields of each block
    of an inductive declaration (``sentence``: its tokens after the attributes, without the final ``.``; blocks split
    at a ``with`` outside ``match``); a ``where`` notation ends a block."""
    tokens = without_prefixes(list(sentence),
                               ("Local", "Global", "Private", "Polymorphic", "Monomorphic", "Cumulative",
                                "NonCumulative"))
    blocks: list[list[Token]] = [[]]
    depth, matches = 0, 0
    for token in tokens[1:]:  # after the command word
        text = token.text
        depth += depth_change(token)
        if token.kind == "ident" and text == "match":
            matches += 1
        elif token.kind == "ident" and text == "end" and matches:
            matches -= 1
        elif token.kind == "ident" and text == "with" and depth == 0 and matches == 0:
            blocks.append([])
            continue
        blocks[-1].append(token)
    names: list[str] = []
    for block in blocks:
        if not block or block[0].kind != "ident":
            continue
        names += _block_constructors(block, head in ("Record", "Structure", "Class"))
    return names


def _block_constructors(block: list[Token], record: bool) -> list[str]:
    """What one block ``name params : arity := body`` declares besides ``name`` (see :func:`constructor_names`)."""
    depth, matches, start = 0, 0, None
    for i, token in enumerate(block):
        depth += depth_change(token)
        if depth == 0 and token.kind == "symbol" and token.text == ":=":
            start = i + 1
            break
    if start is None:
        return []
    body = block[start:]
    brace = next((i for i, t in enumerate(body[:2]) if t.text == "{"), None)
    if brace is not None:  # a record: ``:= Mk { f : T; … }`` or ``:= { … }``
        maker = body[0].text if brace == 1 and body[0].kind == "ident" else f"Build_{block[0].text}"
        return [maker, *_field_names(body[brace + 1:])]
    if record:  # ``Class C := m : T``: one method, no constructor name of its own
        return [body[0].text] if body and body[0].kind == "ident" else []
    names, expect = [], True
    depth = 0
    for token in body:
        depth += depth_change(token)
        if token.kind == "ident" and token.text == "match":
            matches += 1
        elif token.kind == "ident" and token.text == "end" and matches:
            matches -= 1
        elif depth == 0 and matches == 0 and token.kind == "ident" and token.text == "where":
            break
        if expect and token.kind == "ident":
            names.append(token.text)
        expect = depth == 0 and matches == 0 and token.kind == "symbol" and token.text == "|"
    return names


def _field_names(tokens: list[Token]) -> list[str]:
    """The field names of a record body (after its ``{``): the first name of each ``;``-separated field."""
    names, expect, depth = [], True, 0
    for token in tokens:
        if depth == 0 and token.kind == "symbol" and token.text == "}":
            break
        depth += depth_change(token)
        if expect and depth == 0 and token.kind == "ident":
            names.append(token.text)
            expect = False
        elif expect and depth == 0 and token.text not in ("#", "]"):  # ``#[canonical=no] f``: the name is after
            expect = False
        if depth == 0 and token.kind == "symbol" and token.text == ";":
            expect = True
    return names
