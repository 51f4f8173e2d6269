"""An accepted proof of an admitted lemma, put back into the project's own file (``forall apply``, issue 38).

A project item's candidate is the file up to the lemma (the project's bytes), the candidate's helper sentences,
the lemma's statement (frozen), its proof, then ``End``s. What belongs in the project's file is only the helpers,
inserted right before the statement, and the proof, in place of the file's admitted attempt up to its
``Admitted.``: nothing else of the file is touched. Where the sentences are is read with the pack's one lexer and
sentence splitter (:mod:`.lexer`, :func:`.screen.split_sentences`); what they mean is the rebuild's and the
judge's business (``forall apply`` compiles the patched file and re-judges the library).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.rocq.lexer import tokens
from pytest_forall.lang.rocq.screen import (
    DECLARING_HEADS,
    GOOD_TERMINATORS,
    Sentence,
    same,
    split_sentences,
)

#: Sentence heads that declare a name a later sentence could clash with (besides :data:`DECLARING_HEADS`).
_ALSO_DECLARING = frozenset({"Instance", "Notation", "Module"})


class SpliceError(ValueError):
    """The candidate cannot be put back into the file (it is not a proof of the file's admitted lemma there)."""


@dataclass(frozen=True)
class Located:
    """One sentence of a text with its character span ``[start, end)``."""

    sentence: Sentence
    start: int
    end: int


@dataclass(frozen=True)
class Splice:
    """Replace ``text[start:end]`` of the project's file by ``replacement``; ``helpers`` names what it declares
    before the lemma (the names a later declaration of the file must not reuse)."""

    start: int
    end: int
    replacement: str
    helpers: tuple[str, ...]


def located(text: str) -> list[Located]:
    """Every sentence of ``text`` with its span (raises :class:`NotUnderstood` on text the lexer refuses)."""
    starts = [0]
    starts += [i + 1 for i, char in enumerate(text) if char == "\n"]
    out = []
    for sentence in split_sentences(tokens(text)):
        first, last = sentence.tokens[0], sentence.tokens[-1]
        begin = starts[first.line - 1] + first.col - 1
        out.append(Located(sentence, begin, starts[last.line - 1] + last.col - 1 + len(last.text)))
    return out


def _declared(sentence: Sentence) -> str:
    head = sentence.command_words()[1:2] if sentence.head() == "Program" else sentence.command_words()[:1]
    return sentence.declared_name() if head and (head[0] in DECLARING_HEADS or head[0] in _ALSO_DECLARING) else ""


def _proof_after(spans: list[Located], at: int, what: str) -> tuple[int, int]:
    """For the statement at ``spans[at]``: (index of its ``Proof …`` opener, or -1 when it has none; index of its
    terminator)."""
    j = at + 1
    opener = -1
    if j < len(spans) and spans[j].sentence.head() == "Proof":
        opener, j = j, j + 1
    while j < len(spans) and not spans[j].sentence.terminator():
        j += 1
    if j >= len(spans):
        raise SpliceError(f"{what}: the proof has no terminator")
    return opener, j


def proof_splice(file_text: str, statement_offset: int, candidate: str) -> Splice:
    """The edit that puts ``candidate``'s helpers and proof of the lemma whose statement starts at
    ``statement_offset`` into ``file_text``, where that lemma ends in ``Admitted.``.

    ``candidate`` must start with the file's text up to the statement (the verifier required that of it)."""
    if candidate[:statement_offset] != file_text[:statement_offset]:
        raise SpliceError("the candidate's text before the lemma is not the file's")
    try:
        ours, theirs = located(file_text), located(candidate)
    except NotUnderstood as exc:
        raise SpliceError(f"cannot split into sentences: {exc}") from None
    at = next((i for i, s in enumerate(ours) if s.start == statement_offset), -1)
    if at < 0 or not ours[at].sentence.opens_proof():
        raise SpliceError("no statement of the lemma where the run found it")
    statement = ours[at].sentence
    opener, end = _proof_after(ours, at, "the file")
    if ours[end].sentence.terminator() != "Admitted":
        raise SpliceError(f"the lemma ends in {ours[end].sentence.terminator()}, not Admitted, in the file")
    # the candidate: helper sentences from the cut up to the lemma's statement, then its proof
    stated = [i for i, s in enumerate(theirs) if s.start >= statement_offset and same(s.sentence, statement)]
    if len(stated) != 1:
        raise SpliceError("the candidate does not state the lemma as the file does" if not stated
                          else "the candidate states the lemma more than once")
    c_at = stated[0]
    helpers = [s for s in theirs if statement_offset <= s.start < theirs[c_at].start]
    c_opener, c_end = _proof_after(theirs, c_at, "the candidate")
    if theirs[c_end].sentence.terminator() not in GOOD_TERMINATORS:
        raise SpliceError(f"the candidate's proof ends in {theirs[c_end].sentence.terminator()}")
    if any(s.sentence.head() != "End" for s in theirs[c_end + 1:]):
        # the template's own ``End``s close the sections and modules open at the lemma; anything else after the
        # proof is not part of what can go back into the file
        raise SpliceError("the candidate has sentences after the lemma's proof other than the closing `End`s")
    helper_text = candidate[statement_offset:theirs[c_at].start]
    same_opener = opener >= 0 and c_opener >= 0 and same(ours[opener].sentence, theirs[c_opener].sentence)
    if same_opener:  # the file's own opener stays, byte for byte: only what follows it changes
        keep_to, from_candidate = ours[opener].end, theirs[c_opener].end
    else:
        keep_to, from_candidate = ours[at].end, theirs[c_at].end
    replacement = (helper_text + file_text[statement_offset:keep_to]
                   + candidate[from_candidate:theirs[c_end].end])
    names = tuple(name for s in helpers if (name := _declared(s.sentence)))
    return Splice(statement_offset, ours[end].end, replacement, names)


def declared_after(file_text: str, offset: int) -> dict[str, int]:
    """Names the sentences of ``file_text`` from ``offset`` on declare, each with the line of its first declaration
    (a helper of that name before them would clash: Coq refuses a name declared twice in one scope)."""
    found: dict[str, int] = {}
    try:
        spans = located(file_text)
    except NotUnderstood as exc:
        raise SpliceError(f"cannot split the file into sentences: {exc}") from None
    for span in spans:
        if span.start >= offset and (name := _declared(span.sentence)):
            found.setdefault(name, span.sentence.line)
    return found
