"""Reading a statement's conclusion for the inner-vacuity audit, once for every language pack.

The walk over a conclusion's positive positions (quantifier bodies, the right side of an arrow, both sides of
the other connectives) is the same idea in every prover's syntax; what differs is described by a
:class:`Grammar` each pack supplies (its lexer, quantifier words, connectives by precedence, binder reader).
The walk is textual and bounded: whatever it finds is tied to its place by the kernel (the packs' inner shape
equation), so a wrong split fails the derived task rather than changing what it claims.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from pytest_forall.lang.common import NotUnderstood

#: (offset in the fragment, kind, text) of one lexeme; comments are left out by the lexer.
Lexeme = tuple[int, str, str]
#: At most this many inner premises go into one inner-vacuity task (its statement is their disjunction).
MAX_INNER = 8


class Binding(Protocol):
    """What the walk and :func:`kept` need of a pack's binder group."""

    @property
    def args(self) -> tuple[str, ...]: ...

    @property
    def typed(self) -> bool: ...


G = TypeVar("G", bound=Binding)


@dataclasses.dataclass(frozen=True)
class Grammar(Generic[G]):
    """The syntax a pack's statements are walked by.

    ``connectives`` go lowest precedence first; a premise is the left side of one of ``arrows``. A connective
    after one of ``binding_heads`` at bracket depth 0 is inside that construct (``fun``, ``let``, a binder), so
    the part is not split; ``heads_are_idents`` restricts that test (and the quantifier test) to identifiers.
    ``unique`` is the token that may follow a quantifier word (``∃!``), ``joined_comma`` whether the lexer can
    join the binder list's comma into a longer symbol, ``refused`` operators whose presence at depth 0 makes a
    part unreadable (an operator below the arrow), and ``end_at_token`` whether a premise ends after its last
    lexeme (rather than at the arrow, spaces trimmed)."""

    lex: Callable[[str], list[Lexeme]]
    opening: str
    closing: str
    quantifiers: frozenset[str]
    connectives: tuple[frozenset[str], ...]
    arrows: frozenset[str]
    binding_heads: frozenset[str]
    binder_groups: Callable[[str], list[G] | None]
    heads_are_idents: bool = False
    unique: str | None = None
    joined_comma: bool = False
    refused: frozenset[str] = frozenset()
    end_at_token: bool = False

    def depth_change(self, kind: str, text: str) -> int:
        """How much a lexeme changes the bracket depth (only symbols do)."""
        if kind != "symbol":
            return 0
        return sum(text.count(c) for c in self.opening) - sum(text.count(c) for c in self.closing)

    def depth0(self, tokens: Sequence[Lexeme], wanted: Callable[[str, str], bool],
               stop: frozenset[str] = frozenset()) -> tuple[int, str] | None:
        """The first token at bracket depth 0 that ``wanted(kind, text)`` accepts, unless a ``stop`` word comes
        first."""
        depth = 0
        for offset, kind, text in tokens:
            if depth == 0 and text in stop and (kind == "ident" or not self.heads_are_idents):
                return None
            if depth == 0 and wanted(kind, text):
                return offset, text
            depth += self.depth_change(kind, text)
        return None

    def closing_index(self, tokens: Sequence[Lexeme]) -> int | None:
        """The index of the token that closes the bracket the first token opens."""
        depth = 0
        for index, (_, kind, text) in enumerate(tokens):
            depth += self.depth_change(kind, text)
            if depth <= 0:
                return index
        return None

    def unwrapped(self, text: str) -> str:
        """``text`` without parentheses around the whole of it (``(forall x, A -> B)`` reads as ``forall x, A -> B``);
        text the pack's lexer cannot read comes back as it is."""
        while True:
            try:
                tokens = self.lex(text)
            except NotUnderstood:
                return text
            if not tokens or tokens[0][2] != "(" or tokens[-1][2] != ")" \
                    or self.closing_index(tokens) != len(tokens) - 1:
                return text
            text = text[tokens[0][0] + 1:tokens[-1][0]].strip()


@dataclasses.dataclass(frozen=True)
class InnerPremise(Generic[G]):
    """A premise inside the conclusion: its span in the remaining conclusion, the groups in scope and the
    earlier premises on its path (hypotheses of its certificate)."""

    start: int
    end: int
    scope: tuple[G, ...]
    before: tuple[int, ...]


def among(ops: frozenset[str]) -> Callable[[str, str], bool]:
    """A ``depth0`` test for a symbol among ``ops``."""
    return lambda kind, text: kind == "symbol" and text in ops


def inner_premises(grammar: Grammar[G], rest: str, scope: Sequence[G]) -> list[InnerPremise[G]]:
    """The premises inside ``rest`` (the conclusion after the peel) in positive positions: under quantifier
    bodies, the right side of an arrow and both sides of the other connectives (a part that starts with a
    construct extending to the right is not split, nor one with a refused operator at its top). Negations and
    the premises themselves are not entered: a premise there is in a negative position, and its failing would
    not make the statement hold."""
    found: list[InnerPremise[G]] = []

    def walk(lo: int, hi: int, groups: tuple[G, ...], before: tuple[int, ...]) -> None:
        while lo < hi and rest[lo].isspace():
            lo += 1
        while hi > lo and rest[hi - 1].isspace():
            hi -= 1
        if lo >= hi or len(found) >= MAX_INNER:
            return
        try:
            tokens = grammar.lex(rest[lo:hi])
        except NotUnderstood:
            return
        if not tokens:
            return
        if tokens[0][2] == "(" and grammar.closing_index(tokens) == len(tokens) - 1:
            walk(lo + 1, lo + tokens[-1][0], groups, before)
            return
        if (tokens[0][2] in grammar.quantifiers and len(tokens) > 1
                and (tokens[0][1] == "ident" or not grammar.heads_are_idents)):
            first = 2 if grammar.unique is not None and tokens[1][2] == grammar.unique else 1
            joined = grammar.joined_comma
            comma = grammar.depth0(tokens[first:], lambda kind, text: kind == "symbol" and (
                "," in text if joined else text == ","))
            if comma is None or len(tokens) <= first:
                return
            cut = comma[0] + comma[1].index(",")
            bound = grammar.binder_groups(rest[lo + tokens[first][0]:lo + cut])
            if bound is None:
                return
            walk(lo + cut + 1, hi, groups + tuple(bound), before)
            return
        if grammar.refused and grammar.depth0(tokens, lambda kind, text: text in grammar.refused,
                                              stop=grammar.binding_heads):
            return
        for ops in grammar.connectives:
            at = grammar.depth0(tokens, among(ops), stop=grammar.binding_heads)
            if at is None:
                continue
            if at[1] in grammar.arrows:
                if grammar.end_at_token:  # a trailing comment before the arrow is not part of the premise
                    last = [t for t in tokens if t[0] < at[0]]
                    if not last:
                        return
                    end = lo + last[-1][0] + len(last[-1][2])
                else:
                    end = lo + at[0]
                    while end > lo and rest[end - 1].isspace():
                        end -= 1
                found.append(InnerPremise(lo, end, groups, before))
                walk(lo + at[0] + len(at[1]), hi, groups, before + (len(found) - 1,))
            else:
                walk(lo, lo + at[0], groups, before)
                walk(lo + at[0] + len(at[1]), hi, groups, before)
            return

    walk(0, len(rest), tuple(scope), ())
    return found


def kept(scope: Sequence[G], used: set[str]) -> list[G]:
    """The groups a definition over ``used`` names needs: every typed group, an untyped one only when used
    (otherwise its type could not be inferred; an untyped group passes all its names as arguments)."""
    return [g for g in scope if g.typed or used & set(g.args)]
