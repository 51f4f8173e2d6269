"""Static layers for Rocq/Coq candidates: syntax screen, frozen statement, shadowing guard.

A candidate is the template's sentences with the final ``Admitted.`` replaced by a proof ending in
``Qed.``/``Defined.``, plus sentences the candidate inserts *before* the theorem.  Every inserted
sentence is classified by an allow-list; see ``docs/verifier-static.md`` for the rules and their limits.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_forall.core.model import Layer
from pytest_forall.lang.common import (
    FROZEN,
    SHADOWING,
    SYNTAX,
    Finding,
    NotUnderstood,
    Token,
    TokenRun,
    difference_finding,
    first_difference,
    identifier_parts,
    layer_from_findings,
    name_clashes,
    run_static_layers,
    suspicious_characters,
)
from pytest_forall.lang.rocq.lexer import tokens as lex

THEOREM_KEYWORDS = frozenset({"Theorem", "Lemma", "Fact", "Remark", "Corollary", "Proposition", "Property"})
#: Open a proof when written without ``:=``.
DEFINITION_KEYWORDS = frozenset({"Definition", "Example", "Fixpoint", "CoFixpoint"})
ALLOWED_HEADS = THEOREM_KEYWORDS | DEFINITION_KEYWORDS | {"Ltac", "Require", "From", "Set", "Unset"}
#: ``Set``/``Unset`` options that cannot change what a statement means or what the kernel checks.
ALLOWED_OPTIONS = frozenset({("Default", "Goal", "Selector"), ("Bullet", "Behavior"), ("Ltac", "Backtrace")})
#: Commands that change how later text is parsed, resolved or elaborated; the shadowing guard owns them.
RESOLUTION_HEADS = frozenset({
    "Notation", "Infix", "Reserved", "Delimit", "Undelimit", "Bind", "Open", "Close", "Arguments", "Import",
    "Export", "Include", "Module", "Section", "End", "Instance", "Existing", "Canonical", "Coercion",
    "Identity", "Hint", "Remove", "Opaque", "Transparent", "Strategy", "Typeclasses", "Implicit",
    "Generalizable", "Tactic", "Declare", "SubClass"})
#: Why the best-known escape hatches are refused (anything else off the allow-list gets a generic reason).
FORBIDDEN_REASONS = {
    "Axiom": "declares an axiom", "Axioms": "declares axioms", "Parameter": "declares an axiom",
    "Parameters": "declares axioms", "Hypothesis": "declares an axiom", "Hypotheses": "declares axioms",
    "Conjecture": "declares an axiom", "Variable": "adds a hypothesis", "Variables": "adds hypotheses",
    "Context": "adds hypotheses", "Admitted": "admits a proof", "Admit": "admits obligations",
    "Load": "loads unchecked source", "Declare ML Module": "loads a plugin", "Redirect": "redirects output",
    "Extraction": "runs extraction", "Drop": "leaves the checker", "Back": "rewinds the document",
    "Reset": "rewinds the document", "Undo": "rewinds the document", "Program": "may admit obligations",
    "Primitive": "declares a primitive", "Register": "registers primitives", "Print": "prints output",
    "Check": "prints output", "Compute": "prints output", "Eval": "prints output", "Search": "prints output",
    "Locate": "prints output", "About": "prints output", "Time": "is a control command", "Fail": "hides errors",
    "Succeed": "is a control command", "Timeout": "is a control command", "Abort": "abandons a proof",
    "Let": "adds a section-local definition", "Goal": "opens an anonymous proof",
}
OPENS_PROOF_ALWAYS = THEOREM_KEYWORDS | {"Goal"}
OPENS_PROOF_WITHOUT_BODY = DEFINITION_KEYWORDS | {"Instance", "Let", "Function"}
GOOD_TERMINATORS = frozenset({"Qed", "Defined"})
TERMINATORS = GOOD_TERMINATORS | {"Admitted", "Abort", "Save"}
#: Uppercase sentence heads a proof may contain; every other uppercase head is a vernacular command.
PROOF_COMMANDS = frozenset({"Proof", "Unshelve"})
FORBIDDEN_TACTICS = frozenset({"admit", "give_up", "Admitted"})
DECLARING_HEADS = (THEOREM_KEYWORDS | DEFINITION_KEYWORDS
                   | {"Ltac", "Axiom", "Axioms", "Parameter", "Parameters", "Hypothesis", "Hypotheses",
                      "Conjecture", "Variable", "Variables", "Let", "Inductive", "CoInductive", "Variant",
                      "Record", "Structure", "Class", "Function"})
BULLET_CHARS = frozenset("-+*{}")

# --- sentences -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sentence(TokenRun):

    def command_words(self) -> list[str]:
        """Leading identifiers after ``Local``/``Global``, e.g. ``['Declare', 'ML', 'Module']``."""
        words = []
        for token in self.tokens:
            if token.kind != "ident":
                break
            words.append(token.text)
        while words[:1] in (["Local"], ["Global"]):
            words = words[1:]
        return words

    def head(self) -> str:
        words = self.command_words()
        return words[0] if words else ""

    def has_attribute(self) -> bool:
        return self.tokens[0].text.startswith("#")

    def body_head(self) -> Token | None:
        """First token after leading bullets and braces (``- ``, ``+``, ``{``, ``} Qed.``)."""
        for token in self.tokens:
            if token.kind == "symbol" and set(token.text) <= BULLET_CHARS:
                continue
            return token
        return None

    def defines_inline(self) -> bool:
        return any(t.kind == "symbol" and ":=" in t.text for t in self.tokens)

    def opens_proof(self) -> bool:
        head = self.head()
        return head in OPENS_PROOF_ALWAYS or (head in OPENS_PROOF_WITHOUT_BODY and not self.defines_inline())

    def terminator(self) -> str:
        head = self.body_head()
        return head.text if head is not None and head.kind == "ident" and head.text in TERMINATORS else ""

    def declared_name(self) -> str:
        words = self.command_words()
        return words[1] if len(words) > 1 else ""


def split_sentences(tokens: Sequence[Token]) -> list[Sentence]:
    sentences, current = [], []
    for token in tokens:
        current.append(token)
        if token.kind == "end":
            sentences.append(Sentence(tuple(current)))
            current = []
    if current:
        raise NotUnderstood("text after the last sentence's closing '.'", current[0].line,
                            " ".join(t.text for t in current[:12]))
    return sentences


def same(a: Sentence, b: Sentence) -> bool:
    return first_difference(a.tokens, b.tokens) is None


# --- structure -------------------------------------------------------------------------------------


@dataclass
class TemplateShape:
    preamble: list[Sentence]
    theorem: Sentence
    proof_open: Sentence
    trailer: list[Sentence]


def template_shape(text: str, theorem_name: str) -> TemplateShape:
    sentences = split_sentences(lex(text))
    holes = [i for i, s in enumerate(sentences) if s.head() == "Admitted"]
    if not holes:
        raise NotUnderstood("no final `Admitted.` hole", 1)
    hole = holes[-1]
    if hole < 2 or sentences[hole - 1].head() != "Proof" or len(sentences[hole - 1].tokens) != 2:
        raise NotUnderstood("the hole `Admitted.` is not preceded by `Proof.`", sentences[hole].line)
    theorem = sentences[hole - 2]
    if theorem.head() not in THEOREM_KEYWORDS or theorem.declared_name() != theorem_name:
        raise NotUnderstood(f"`Proof. Admitted.` does not follow `Theorem {theorem_name}`", theorem.line,
                            theorem.text[:80])
    for sentence in sentences[:hole - 2]:
        if sentence.opens_proof():
            raise NotUnderstood("the template's preamble opens a proof", sentence.line, sentence.text[:80])
    return TemplateShape(sentences[:hole - 2], theorem, sentences[hole - 1], sentences[hole + 1:])


@dataclass
class Block:
    """A top-level candidate sentence and, if it opened a proof, the proof's sentences."""

    head: Sentence
    proof: list[Sentence]
    closed: bool = True


@dataclass
class CandidateShape:
    before: list[Block]  # top-level blocks before the theorem
    main: Block | None
    after: list[Block]


def candidate_shape(text: str, theorem_name: str) -> CandidateShape:
    blocks: list[Block] = []
    sentences = split_sentences(lex(text))
    i = 0
    while i < len(sentences):
        block = Block(sentences[i], [], closed=not sentences[i].opens_proof())
        i += 1
        while not block.closed and i < len(sentences):
            block.proof.append(sentences[i])
            block.closed = bool(sentences[i].terminator())
            i += 1
        blocks.append(block)
    for index, block in enumerate(blocks):
        if block.head.head() in THEOREM_KEYWORDS and block.head.declared_name() == theorem_name:
            return CandidateShape(blocks[:index], block, blocks[index + 1:])
    return CandidateShape(blocks, None, [])


def align(template: Sequence[Sentence], candidate: Sequence[Sentence]) -> dict[int, int]:
    """Template index -> candidate index for sentences kept verbatim, in order (a maximal matching)."""
    matcher = difflib.SequenceMatcher(None, [s.key() for s in template], [s.key() for s in candidate],
                                      autojunk=False)
    return {a + k: b + k for a, b, size in matcher.get_matching_blocks() for k in range(size)}


@dataclass
class Analysis:
    template: TemplateShape
    candidate: CandidateShape
    preamble_match: dict[int, int]  # template preamble index -> candidate ``before`` index
    trailer_match: dict[int, int]  # template trailer index -> candidate ``after`` index

    def inserted(self) -> list[tuple[int, Block]]:
        kept = set(self.preamble_match.values())
        return [(i, b) for i, b in enumerate(self.candidate.before) if i not in kept]

    def frozen_parts_after(self, candidate_index: int) -> set[str]:
        """Identifier parts of every frozen sentence that follows candidate position ``candidate_index``."""
        later = [self.template.preamble[t] for t, c in self.preamble_match.items() if c > candidate_index]
        unmatched = [s for t, s in enumerate(self.template.preamble) if t not in self.preamble_match]
        rest = [self.template.theorem, self.template.proof_open, *self.template.trailer]
        return identifier_parts(t for s in later + unmatched + rest for t in s.tokens)


def analyse(template: str, candidate: str, theorem_name: str) -> Analysis:
    shape = template_shape(template, theorem_name)
    cand = candidate_shape(candidate, theorem_name)
    return Analysis(shape, cand, align(shape.preamble, [b.head for b in cand.before]),
                    align(shape.trailer, [b.head for b in cand.after]))


# --- layers ----------------------------------------------------------------------------------------


def _top_level_finding(sentence: Sentence) -> Finding | None:
    """Syntax-screen verdict on one inserted top-level sentence (resolution commands are the guard's)."""
    if sentence.has_attribute():
        return Finding(sentence.line, f"attribute `{sentence.text[:40]}` is not allowed (e.g. #[bypass_check])",
                       {"sentence": sentence.text[:200]})
    words = sentence.command_words()
    head = words[0] if words else ""
    if head in RESOLUTION_HEADS and words[:3] != ["Declare", "ML", "Module"]:
        return None
    if head in ("Set", "Unset"):
        option = tuple(words[1:])
        if option not in ALLOWED_OPTIONS:
            return Finding(sentence.line, f"`{head} {' '.join(option)}` is not an allowed option "
                                          f"(allowed: {sorted(' '.join(o) for o in ALLOWED_OPTIONS)})",
                           {"sentence": sentence.text[:200]})
        return None
    if head in ("Require", "From"):
        return _require_finding(sentence, words)
    if head in ALLOWED_HEADS:
        return None
    reason = FORBIDDEN_REASONS.get(" ".join(words[:3])) or FORBIDDEN_REASONS.get(head)
    what = f"`{' '.join(words[:3]) or sentence.tokens[0].text}`"
    return Finding(sentence.line, f"{what} {reason}" if reason else f"{what} is not on the allow-list of "
                                                                      f"commands a candidate may add",
                   {"sentence": sentence.text[:200]})


def _require_finding(sentence: Sentence, words: list[str]) -> Finding | None:
    """``Require [Import|Export] A B.`` or ``From X Require ...``: names only, no strings or filters."""
    body = sentence.tokens[:-1]
    if any(t.kind != "ident" for t in body):
        return Finding(sentence.line, f"`Require` with something other than library names: {sentence.text[:80]}",
                       {"sentence": sentence.text[:200]})
    rest = words[2:] if words[0] == "From" else words
    if rest[:1] != ["Require"] or len(rest) < 2:
        return Finding(sentence.line, f"malformed `Require`: {sentence.text[:80]}", {"sentence": sentence.text})
    return None


def _tactic_findings(sentence: Sentence, owner: str) -> list[Finding]:
    """Admitting tactics, wherever they hide (a proof, or ``ltac:(…)`` in a definition body)."""
    return [Finding(t.line, f"`{t.text}` in {owner}", {"token": t.text, "sentence": sentence.text[:200]})
            for t in sentence.tokens
            if t.kind == "ident" and (t.text in FORBIDDEN_TACTICS or t.text.endswith("_no_check"))]


def _proof_findings(block: Block, ltac_names: set[str], owner: str) -> list[Finding]:
    findings = []
    for index, sentence in enumerate(block.proof):
        findings += _tactic_findings(sentence, f"the proof of {owner}")
        head = sentence.body_head()
        if head is None or head.kind != "ident" or not head.text[:1].isupper():
            continue
        if head.text in GOOD_TERMINATORS or head.text in ltac_names:
            continue
        if head.text in PROOF_COMMANDS and (head.text != "Proof" or index == 0):
            continue
        if head.text in TERMINATORS:
            findings.append(Finding(head.line, f"proof of {owner} ends with `{head.text}`, not `Qed.`/`Defined.`",
                                    {"sentence": sentence.text[:200]}))
        else:
            findings.append(Finding(head.line, f"vernacular command `{head.text}` inside the proof of {owner}",
                                    {"sentence": sentence.text[:200]}))
    if not block.closed:
        findings.append(Finding(block.head.line, f"the proof of {owner} is never closed with `Qed.`",
                                {"sentence": block.head.text[:200]}))
    return findings


def syntax_screen(candidate: str, analysis: Analysis, theorem_name: str) -> Layer:
    findings = suspicious_characters(candidate)
    ltac_names = {b.head.declared_name() for _, b in analysis.inserted() if b.head.head() == "Ltac"}
    for _, block in analysis.inserted():
        finding = _top_level_finding(block.head)
        if finding:
            findings.append(finding)
        findings += _tactic_findings(block.head, f"`{block.head.head()} {block.head.declared_name()}`")
        findings += _proof_findings(block, ltac_names, f"`{block.head.declared_name() or block.head.head()}`")
    main = analysis.candidate.main
    if main is not None:
        findings += _proof_findings(main, ltac_names, f"`{theorem_name}`")
        kept = set(analysis.trailer_match.values())
        findings += [Finding(b.head.line, f"sentence after the proof of `{theorem_name}`: "
                                          f"`{b.head.text[:60]}`", {"sentence": b.head.text[:200]})
                     for i, b in enumerate(analysis.candidate.after) if i not in kept]
    inserted = len(analysis.inserted())
    return layer_from_findings(SYNTAX, findings, f"{inserted} inserted sentence(s) on the allow-list; "
                                                 f"proofs free of admits and vernacular",
                               {"inserted_sentences": inserted})


def frozen_statement(analysis: Analysis, theorem_name: str) -> Layer:
    template, cand = analysis.template, analysis.candidate
    if cand.main is None:
        return layer_from_findings(FROZEN, [Finding(1, f"`{template.theorem.head()} {theorem_name}` not found "
                                                       f"in the candidate", {})], "")
    findings = _alignment_findings(template.preamble, [b.head for b in cand.before], analysis.preamble_match,
                                   "preamble sentence")
    index = first_difference(template.theorem.tokens, cand.main.head.tokens)
    if index is not None:
        findings.append(difference_finding("theorem statement", template.theorem.tokens,
                                           cand.main.head.tokens, index, cand.main.head.line))
    opener = cand.main.proof[0] if cand.main.proof else None
    if opener is None or not same(template.proof_open, opener):
        findings.append(Finding(opener.line if opener else cand.main.head.line,
                                "the theorem's proof must start with the template's `Proof.`",
                                {"found": opener.text[:80] if opener else "<nothing>"}))
    findings += _alignment_findings(template.trailer, [b.head for b in cand.after], analysis.trailer_match,
                                    "sentence after the proof")
    compared = sum(len(s.tokens) for s in [*template.preamble, template.theorem, template.proof_open,
                                             *template.trailer])
    return layer_from_findings(FROZEN, findings, f"all {compared} frozen tokens match",
                               {"frozen_tokens": compared})


def _alignment_findings(template: Sequence[Sentence], candidate: Sequence[Sentence], matched: dict[int, int],
                        what: str) -> list[Finding]:
    """One finding per template sentence the candidate dropped or altered, diffed against its nearest rival."""
    findings = []
    kept = set(matched.values())
    for t_index, sentence in enumerate(template):
        if t_index in matched:
            continue
        previous = max((c for t, c in matched.items() if t < t_index), default=-1)
        rivals = [c for c in range(previous + 1, len(candidate)) if c not in kept]
        if rivals:
            rival = candidate[rivals[0]]
            index = first_difference(sentence.tokens, rival.tokens) or 0
            findings.append(difference_finding(what, sentence.tokens, rival.tokens, index, rival.line))
        else:
            findings.append(Finding(candidate[-1].line if candidate else 1,
                                    f"{what} at template line {sentence.line} is missing: `{sentence.text[:80]}`",
                                    {"template_line": sentence.line, "expected": sentence.text[:200]}))
    return findings


def shadowing_guard(analysis: Analysis) -> Layer:
    findings = []
    for index, block in analysis.inserted():
        sentence = block.head
        words = sentence.command_words()
        head = words[0] if words else ""
        if head in RESOLUTION_HEADS and words[:3] != ["Declare", "ML", "Module"]:
            findings.append(Finding(sentence.line, f"`{' '.join(words[:2])}` changes how the frozen text is "
                                                   f"parsed or resolved", {"sentence": sentence.text[:200]}))
            continue
        if head not in DECLARING_HEADS:
            continue
        frozen_parts = analysis.frozen_parts_after(index)
        for name in _declared_names(sentence, words):
            if name_clashes(name, frozen_parts):
                findings.append(Finding(sentence.line, f"`{head} {name}` shadows `{name}`, which the frozen "
                                                       f"text after it uses", {"name": name}))
    return layer_from_findings(SHADOWING, findings, "no inserted sentence declares a name the frozen text uses "
                                                    "or changes resolution")


def _declared_names(sentence: Sentence, words: list[str]) -> list[str]:
    """The name after the keyword, further names of ``Variables a b``, and ``with`` names of mutual blocks."""
    names = words[1:] if words[0] in ("Variables", "Parameters", "Axioms", "Hypotheses") else words[1:2]
    tokens = sentence.tokens
    for i, token in enumerate(tokens[:-1]):
        if token.text == "with" and tokens[i + 1].kind == "ident" and words[0] in (
                THEOREM_KEYWORDS | {"Fixpoint", "CoFixpoint", "Inductive", "CoInductive"}):
            names.append(tokens[i + 1].text)
    return names


def rocq_static_layers(template: str, candidate: str, *, theorem_name: str) -> list[Layer]:
    """The three static layers, in order; text the lexer cannot read fails every layer with its reason."""
    return run_static_layers(sys.modules[__name__], template, candidate, theorem_name)
