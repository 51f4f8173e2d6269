"""Static layers for Rocq/Coq candidates: syntax screen, frozen statement, shadowing guard.

A candidate is the template's sentences with the final ``Admitted.`` replaced by a proof ending in
``Qed.``/``Defined.``, plus sentences the candidate inserts *before* the theorem (and queries after it).
Every inserted sentence is classified by an allow-list; see ``docs/verifier-static.md`` for the rules and
their limits. After compilation, :func:`sentence_structure` checks that the sentences coqc executed are the
screen's own, each judged by what Coq parsed. The kernel judge, not this screen, carries the guarantee.
"""

from __future__ import annotations

import difflib
import itertools
import sys
import unicodedata
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
from pytest_forall.lang.rocq.declarations import (
    INDUCTIVE_HEADS,
    constructor_names,
    depth_change,
    without_prefixes,
)
from pytest_forall.lang.rocq.lexer import comments
from pytest_forall.lang.rocq.lexer import tokens as lex
from pytest_forall.lang.rocq.plugin_commands import HB_COMMANDS, equations_derive, hierarchy_builder_attribute

THEOREM_KEYWORDS = frozenset({"Theorem", "Lemma", "Fact", "Remark", "Corollary", "Proposition", "Property"})
#: Open a proof when written without ``:=``.
DEFINITION_KEYWORDS = frozenset({"Definition", "Example", "Fixpoint", "CoFixpoint"})
#: Well-founded and structural recursion by the usual packages (issue 31): ``Function`` (Recdef) and ``Equations``
#: (``From Equations Require Import Equations.``). What they generate is ordinary kernel terms (fixpoints,
#: well-founded recursion through the library's ``Fix``/``Acc``, graphs and their proofs), judged like any other
#: candidate constant; obligations they leave are proved in ``Next Obligation.``/``Proof.`` blocks.
RECURSION_HEADS = frozenset({"Function", "Equations"})
#: Commands that only print: allowed anywhere at the top level, also after the proof.
QUERY_HEADS = frozenset({"Check", "About", "Print", "Locate", "Search", "SearchPattern", "SearchRewrite", "Compute",
                         "Eval"})
ALLOWED_HEADS = (THEOREM_KEYWORDS | DEFINITION_KEYWORDS | QUERY_HEADS
                 | {"Ltac", "Ltac2", "Require", "From", "Set", "Unset", "Inductive", "CoInductive", "Variant",
                    "Record", "Structure", "Class", "Scheme"} | RECURSION_HEADS)
#: ``Set``/``Unset`` options that cannot change what a statement means or what the kernel checks.
ALLOWED_OPTIONS = frozenset({("Default", "Goal", "Selector"), ("Bullet", "Behavior"), ("Ltac", "Backtrace"),
                             ("Ltac2", "Backtrace"), ("Default", "Timeout"), ("Printing", "Implicit", "Defensive")})
#: ``Set``/``Unset`` options that change only which arguments later declarations make implicit. Implicit status is
#: no part of a kernel term: if it changed how the frozen statement or a template constant elaborates, their kernel
#: terms would differ, and ``elaborated_statement`` rejects that; an unchanged elaboration is honest.
ELABORATION_OPTIONS = frozenset({("Implicit", "Arguments"), ("Strict", "Implicit"), ("Contextual", "Implicit"),
                                 ("Maximal", "Implicit", "Insertion"), ("Reversible", "Pattern", "Implicit"),
                                 ("Strongly", "Strict", "Implicit")})
#: ``Set``/``Unset`` options that change what later declarations generate, or only how tactics, unification or
#: messages behave: none is a typing flag of the kernel (``Guard``/``Positivity``/``Universe Checking``,
#: ``Definitional UIP`` stay refused). What they change in a template declaration after them is judged:
#: ``Primitive Projections`` makes a record primitive (its record kind and every projection term differ:
#: ``cheat/primitive_projections_on_template_record``), the scheme options decide which ``_rect``/``_ind``/… constants
#: an inductive generates (a candidate's own ``two_rect`` in their place is another constant:
#: ``cheat/elimination_schemes_unset_template_recursor``), ``Universe Polymorphism`` is the allowed
#: ``#[universes(polymorphic)]`` on each later declaration (the theorem or a template constant made polymorphic
#: differs: ``cheat/universe_polymorphism_switched_on``; the candidate's own are the ``upoly`` detector's), each
#: rejected by ``elaborated_statement`` with the static layers off. ``Warnings`` changes which messages print (no
#: layer reads a warning), the rest how tactics and unification search. Not ``Universe Minimization ToSet``: it
#: changes universe levels inside the closure, which the judge compares only as sorts (docs/verifier.md).
KERNEL_JUDGED_OPTIONS = frozenset({
    ("Primitive", "Projections"), ("Elimination", "Schemes"), ("Case", "Analysis", "Schemes"),
    ("Nonrecursive", "Elimination", "Schemes"), ("Rewriting", "Schemes"), ("Decidable", "Equality", "Schemes"),
    ("Boolean", "Equality", "Schemes"), ("Universe", "Polymorphism"), ("Warnings",), ("Keyed", "Unification"),
    ("Asymmetric", "Patterns"), ("Regular", "Subst", "Tactic"), ("SsrOldRewriteGoalsOrder",)})
#: Attributes a top-level sentence may carry (``#[local]`` …); any other (``bypass_check`` …) is refused.
ALLOWED_ATTRIBUTES = frozenset({"local", "global", "export", "program", "refine", "universes(polymorphic)",
                                "universes(monomorphic)"})
#: Section-local hypotheses: allowed inside a ``Section`` the candidate opened, axioms at the top level.
SECTION_HEADS = frozenset({"Variable", "Variables", "Hypothesis", "Hypotheses", "Context", "Let"})
#: ``Ltac2 <word>`` forms that are not tactic definitions (notations, externals, mutable settings …).
LTAC2_NON_DEFINITIONS = frozenset({"Notation", "Set", "Type", "External", "Eval", "Globalize", "Check"})
#: Commands that change how later text is parsed, resolved or elaborated; the shadowing guard owns them.
RESOLUTION_HEADS = frozenset({
    "Notation", "Infix", "Reserved", "Delimit", "Undelimit", "Bind", "Open", "Close", "Arguments", "Import",
    "Export", "Include", "Module", "Section", "End", "Instance", "Existing", "Canonical", "Coercion",
    "Identity", "Hint", "Remove", "Opaque", "Transparent", "Strategy", "Typeclasses", "Implicit",
    "Generalizable", "Tactic", "Declare", "SubClass", "Prenex"})
#: Commands that only serve tactics (a hint database, a ring or field for ``ring``/``field``): no term elaborates
#: differently; the proofs that use them still end in ``Qed``.
TACTIC_SUPPORT = frozenset({("Create", "HintDb"), ("Add", "Ring"), ("Add", "Field")})
#: Resolution commands left to the kernel judge: a new typeclass instance changes only how later text elaborates,
#: and the judge compares the statement and every template constant as kernel terms, so an instance that changes
#: them is rejected there (``elaborated_statement``); an honest helper instance is not refused by text. Its name
#: is still checked against the frozen text like any declaration.
KERNEL_JUDGED_HEADS = frozenset({"Instance"})
#: Commands that change only how later text is parsed or elaborated: scopes (``Open``/``Close``/``Delimit``/
#: ``Bind Scope``, also ``Local``), default binder types (``Implicit Types``), a notation's level reserved before
#: the ``where`` clause that interprets it. They reach the frozen statement, but the kernel judge compares the
#: elaborated statement and every template constant with the template's as kernel terms: a reading that changes
#: the statement is rejected there (``cheat/open_scope_reads_statement_in_z``, with the static layers off too), and
#: one that leaves it unchanged is honest (``valid/elaboration_settings_in_helpers``).
KERNEL_JUDGED_SETTINGS = frozenset({("Open", "Scope"), ("Close", "Scope"), ("Delimit", "Scope"),
                                    ("Undelimit", "Scope"), ("Bind", "Scope"), ("Declare", "Scope"),
                                    ("Implicit", "Types"), ("Implicit", "Type"), ("Reserved", "Notation"),
                                    ("Reserved", "Infix")})
#: Why the best-known escape hatches are refused (anything else off the allow-list gets a generic reason).
GOOD_TERMINATORS = frozenset({"Qed", "Defined"})
TERMINATORS = GOOD_TERMINATORS | {"Admitted", "Abort", "Save"}
FORBIDDEN_REASONS = {
    "Axiom": "declares an axiom", "Axioms": "declares axioms", "Parameter": "declares an axiom",
    "Parameters": "declares axioms", "Hypothesis": "declares an axiom", "Hypotheses": "declares axioms",
    "Conjecture": "declares an axiom", "Variable": "adds a hypothesis", "Variables": "adds hypotheses",
    "Context": "adds hypotheses", "Admitted": "admits a proof", "Admit": "admits obligations",
    "Load": "loads unchecked source", "Declare ML Module": "loads a plugin", "Redirect": "redirects output",
    "Extraction": "runs extraction", "Drop": "leaves the checker", "Back": "rewinds the document",
    "Reset": "rewinds the document", "Undo": "rewinds the document", "Admit Obligations": "admits obligations",
    "Primitive": "declares a primitive", "Register": "registers primitives", "Cd": "changes directory",
    "Declare Module": "declares an axiomatic module", "Obligation Tactic": "sets how obligations are solved",
    "Time": "is a control command", "Fail": "hides errors",
    "Succeed": "is a control command", "Timeout": "is a control command", "Abort": "abandons a proof",
    "Let": "adds a section-local definition", "Goal": "opens an anonymous proof",
}
OPENS_PROOF_ALWAYS = THEOREM_KEYWORDS | {"Goal", "Next"}
OPENS_PROOF_WITHOUT_BODY = DEFINITION_KEYWORDS | {"Instance", "Let", "Function"}
#: Uppercase sentence heads a proof may contain; every other uppercase head is a vernacular command.
PROOF_COMMANDS = frozenset({"Proof", "Unshelve"})
#: What a proof sentence may be, as Coq itself parsed it (``coqc -time``): a capitalised head is a command.
PARSED_PROOF_HEADS = PROOF_COMMANDS | GOOD_TERMINATORS
FORBIDDEN_TACTICS = frozenset({"admit", "give_up", "Admitted"})
DECLARING_HEADS = (THEOREM_KEYWORDS | DEFINITION_KEYWORDS
                   | {"Ltac", "Axiom", "Axioms", "Parameter", "Parameters", "Hypothesis", "Hypotheses",
                      "Conjecture", "Variable", "Variables", "Let", "Inductive", "CoInductive", "Variant",
                      "Record", "Structure", "Class", "Function", "Equations"})
BULLET_CHARS = frozenset("-+*{}")

# --- sentences -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sentence(TokenRun):

    def _attribute_end(self) -> int:
        """Index of the first token after the leading ``#[…]`` attribute lists."""
        i, tokens = 0, self.tokens
        while i + 1 < len(tokens) and tokens[i].text == "#" and tokens[i + 1].text == "[":
            depth, i = 1, i + 2
            while i < len(tokens) and depth:
                depth += {"[": 1, "]": -1}.get(tokens[i].text, 0)
                i += 1
        return i

    def attributes(self) -> list[str]:
        """The leading attributes, e.g. ``['local', 'bypass_check(guard)']`` for ``#[local, bypass_check(guard)]``;
        ``#[]`` gives ``['']``."""
        found: list[str] = []
        i, tokens = 0, self.tokens
        while i + 1 < len(tokens) and tokens[i].text == "#" and tokens[i + 1].text == "[":
            depth, parens, current, i = 1, 0, "", i + 2
            while i < len(tokens):
                text = tokens[i].text
                i += 1
                depth += {"[": 1, "]": -1}.get(text, 0)
                if depth == 0:
                    break
                parens += {"(": 1, ")": -1}.get(text, 0)
                if text == "," and parens == 0:
                    found.append(current)
                    current = ""
                else:
                    current += text
            found.append(current)
        return found

    def command_words(self) -> list[str]:
        """Leading identifiers after attributes and ``Local``/``Global``, e.g. ``['Declare', 'ML', 'Module']``."""
        words = []
        for token in self.tokens[self._attribute_end():]:
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
        return self._attribute_end() > 0

    def body_head(self) -> Token | None:
        """First token after leading bullets and braces (``- ``, ``+``, ``{``, ``} Qed.``)."""
        for token in self.tokens:
            if token.kind == "symbol" and set(token.text) <= BULLET_CHARS:
                continue
            return token
        return None

    def defines_inline(self) -> bool:
        """A ``:=`` at bracket depth 0 that is not a ``let … :=`` of the type (``Definition d : let k := 2 in nat.``
        opens a proof)."""
        depth, lets = 0, 0
        for token in self.tokens:
            if token.kind == "symbol" and token.text in "([{":
                depth += 1
            elif token.kind == "symbol" and token.text in ")]}":
                depth -= 1
            elif depth == 0 and token.kind == "ident" and token.text == "let":
                lets += 1
            elif depth == 0 and token.kind == "symbol" and ":=" in token.text:
                if lets == 0:
                    return True
                lets -= 1
        return False

    def opens_proof(self) -> bool:
        words = self.command_words()
        head = words[1] if words[:1] == ["Program"] and len(words) > 1 else self.head()
        if head == "Next":
            return words[1:2] == ["Obligation"]
        if head == "Instance" and "refine" in self.attributes():  # #[refine]: Coq opens a proof for the fields
            return True
        if head == "Equations" and self.equations_proof():  # ``Equations?``: its obligations as one proof
            return True
        if head == "Function" and self.well_founded():  # Recdef opens the termination proof, body or not
            return True
        return head in OPENS_PROOF_ALWAYS or (head in OPENS_PROOF_WITHOUT_BODY and not self.defines_inline())

    def equations_proof(self) -> bool:
        """``Equations?`` (the ``?`` right after the command word, whatever attributes come first)."""
        texts = [t.text for t in self.tokens]
        at = texts.index("Equations") if "Equations" in texts else -1
        return 0 <= at < len(texts) - 1 and texts[at + 1] == "?"

    def well_founded(self) -> bool:
        """A ``{measure …}``/``{wf …}`` annotation: ``Function`` then asks for a termination proof."""
        texts = [t.text for t in self.tokens]
        return any(a == "{" and b in ("measure", "wf") for a, b in itertools.pairwise(texts))

    def terminator(self) -> str:
        head = self.body_head()
        return head.text if head is not None and head.kind == "ident" and head.text in TERMINATORS else ""

    def declared_name(self) -> str:
        words = self.command_words()
        if words == ["Equations"] and self.equations_proof():  # ``Equations? f …``: the name follows the ``?``
            texts = [t.text for t in self.tokens]
            rest = texts[texts.index("Equations") + 2:]
            return rest[0] if rest else ""
        if words[:1] == ["Program"] or (words[:1] == ["Ltac2"] and words[1:2] in (["rec"], ["mutable"])):
            words = words[1:]
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
        return identifier_parts(t for s in later + unmatched + rest for t in _unbound_tokens(s))


#: Tokens that bind the names after them up to the end of the enclosing bracket (``forall x y, …``, ``fun (a : A)
#: => …``, ``exists! n, …`` and their Utf8 notations).
BINDER_TOKENS = frozenset({"forall", "fun", "exists", "exists2", "∀", "∃", "∃!", "λ"})


def _unbound_tokens(sentence: Sentence) -> list[Token]:
    """The sentence's tokens without its binder names and their bound occurrences (issue: a helper named like a
    statement binder was refused).

    A bound name is no global constant: a declaration reusing it cannot change what the frozen text means, and if
    it did (a constructor turning a pattern variable into a pattern) the statement's kernel term would change, which
    ``elaborated_statement`` rejects. Only the plain forms are read as binders: a declaration's parameters and the
    names right after a :data:`BINDER_TOKENS` word (bare or in ``(x y : T)``/``{x}``/``[x]`` groups), in scope until
    the bracket around the binder closes. Everything else (``let``, match patterns, ``'(a, b)``, set-builder
    notations) still counts as a use, and so does every name in a match pattern, so a misread can only keep a
    refusal."""
    tokens = sentence.tokens
    bound_at: set[int] = set()
    scopes: list[tuple[int, int, str]] = []  # (from index, to index, name)
    words = sentence.command_words()
    if words and words[0] in THEOREM_KEYWORDS | DEFINITION_KEYWORDS and len(words) > 1:
        at = sentence._attribute_end() + next(i for i, t in enumerate(tokens[sentence._attribute_end():])
                                              if t.text == words[0])
        scopes += [(k, len(tokens), name) for k, name in _binder_names(tokens, at + 2)]
    depth_at: list[int] = []
    depth = 0
    for token in tokens:
        depth_at.append(depth)
        depth += depth_change(token)
    for i, token in enumerate(tokens):
        if token.kind in ("ident", "symbol") and token.text in BINDER_TOKENS:
            start = i + 1 + (i + 1 < len(tokens) and tokens[i + 1].text == "!")  # ``exists !``
            close = next((k for k in range(start, len(tokens)) if depth_at[k] + depth_change(tokens[k]) < depth_at[i]),
                         len(tokens))
            scopes += [(k, close, name) for k, name in _binder_names(tokens, start)]
    for begin, end, name in scopes:
        bound_at.update(k for k in range(begin, end) if tokens[k].kind == "ident" and tokens[k].text == name)
    pattern = False  # a match pattern (``with``/``|`` up to ``=>``): a constructor there would change its meaning
    for k, token in enumerate(tokens):
        pattern = (pattern or token.text in ("with", "|")) and token.text != "=>"
        if pattern:
            bound_at.discard(k)
    return [t for k, t in enumerate(tokens) if k not in bound_at]


def _binder_names(tokens: Sequence[Token], start: int) -> list[tuple[int, str]]:
    """(index, name) of each name the binder list at ``start`` binds (``x y``, ``(x y : T)``, ``{x}``, ``[x]``); the
    list ends at ``,``/``=>``/``:``/``:=`` or anything else. A name's scope starts at the name itself (``(x : T x)``
    misread so can only matter if ``T x`` used a global ``x``, which the kernel comparison still sees)."""
    names: list[tuple[int, str]] = []
    i = start
    while i < len(tokens):
        token = tokens[i]
        if token.kind == "ident" and "." not in token.text:
            names.append((i, token.text))
            i += 1
        elif token.kind == "symbol" and token.text in ("(", "{", "["):
            k = i + 1
            while k < len(tokens) and tokens[k].kind == "ident" and "." not in tokens[k].text:
                k += 1
            if k == i + 1 or k >= len(tokens) or tokens[k].text not in (":", ")", "}", "]", ":=") \
                    or tokens[i + 1].text in ("struct", "measure", "wf"):
                break  # ``(f x)``, ``'(a, b)``, ``{struct n}`` … are not read as binders
            names += [(j, tokens[j].text) for j in range(i + 1, k)]
            depth, i = 1, i + 1
            while i < len(tokens) and depth:
                depth += depth_change(tokens[i])
                i += 1
        else:
            break
    return names


def analyse(template: str, candidate: str, theorem_name: str) -> Analysis:
    shape = template_shape(template, theorem_name)
    cand = candidate_shape(candidate, theorem_name)
    return Analysis(shape, cand, align(shape.preamble, [b.head for b in cand.before]),
                    align(shape.trailer, [b.head for b in cand.after]))


# --- layers ----------------------------------------------------------------------------------------


def _top_level_finding(sentence: Sentence, in_section: bool = False) -> Finding | None:
    """Syntax-screen verdict on one inserted top-level sentence (resolution commands are the guard's)."""
    hierarchy_builder = sentence.head() in HB_COMMANDS
    refused = [a for a in sentence.attributes() if a not in ALLOWED_ATTRIBUTES and not _deprecation(a)
               and not (hierarchy_builder and hierarchy_builder_attribute(a))]
    if refused:
        return Finding(sentence.line, f"attribute `{refused[0] or '#[]'}` is not allowed (allowed: "
                                      f"{sorted(ALLOWED_ATTRIBUTES)})", {"sentence": sentence.text[:200]})
    words = sentence.command_words()
    head = words[0] if words else ""
    if words[:1] == ["Program"] and words[1:2] and words[1] in THEOREM_KEYWORDS | DEFINITION_KEYWORDS | {"Instance"}:
        return None
    if words[:2] == ["Next", "Obligation"] and len(sentence.tokens) == 3:
        return None
    if _structure_command(sentence) or (head in SECTION_HEADS and in_section):
        return None
    if head == "Ltac2" and (len(words) < 2 or words[1] in LTAC2_NON_DEFINITIONS):
        return Finding(sentence.line, f"`{sentence.text[:40]}` is not an Ltac2 tactic definition",
                       {"sentence": sentence.text[:200]})
    if _allowed_hint(sentence, words) or tuple(words[:2]) in TACTIC_SUPPORT:
        return None
    if head in RESOLUTION_HEADS and words[:3] != ["Declare", "ML", "Module"] and words[:2] != ["Declare", "Module"]:
        return None
    if head in ("Set", "Unset"):
        option = tuple(words[1:])
        allowed = ALLOWED_OPTIONS | ELABORATION_OPTIONS | KERNEL_JUDGED_OPTIONS
        if option not in allowed:
            return Finding(sentence.line, f"`{head} {' '.join(option)}` is not an allowed option "
                                          f"(allowed: {sorted(' '.join(o) for o in allowed)})",
                           {"sentence": sentence.text[:200]})
        return None
    if head in ("Require", "From"):
        return _require_finding(sentence, words)
    if equations_derive(without_prefixes(list(sentence.tokens[sentence._attribute_end():-1]))):
        return None
    if head in ALLOWED_HEADS or hierarchy_builder:
        return None
    reason = (FORBIDDEN_REASONS.get(" ".join(words[:3])) or FORBIDDEN_REASONS.get(" ".join(words[:2]))
              or FORBIDDEN_REASONS.get(head))
    what = f"`{' '.join(words[:3]) or sentence.tokens[0].text}`"
    return Finding(sentence.line, f"{what} {reason}" if reason else f"{what} is not on the allow-list of "
                                                                      f"commands a candidate may add",
                   {"sentence": sentence.text[:200]})


def _deprecation(attribute: str) -> bool:
    """``deprecated`` or ``deprecated(since="…", note="…")``: a warning where the name is used, nothing else."""
    return attribute == "deprecated" or (attribute.startswith("deprecated(") and attribute.endswith(")"))


def _structure_command(sentence: Sentence) -> str:
    """``Section X.``, ``Module X.`` or ``End X.`` exactly (no functor, type, Import): the command's name, else ""."""
    words = sentence.command_words()
    plain = len(sentence.tokens) == 3 and not sentence.has_attribute() and len(words) == 2
    return words[0] if plain and words[0] in ("Section", "Module", "End") else ""


def _opens_scope(sentence: Sentence) -> bool:
    """``Module Type T.``, ``Module F (X : T).``, ``Module Import M.`` … open a scope ``End`` closes (not ``:=``)."""
    return sentence.head() in ("Module", "Section") and not sentence.defines_inline() and len(sentence.tokens) > 2


def _scope_name(sentence: Sentence) -> str:
    words = [w for w in sentence.command_words()[1:] if w not in ("Type", "Import", "Export")]
    return words[0] if words else ""


def _allowed_hint(sentence: Sentence, words: list[str]) -> bool:
    """Proof-search hints (``#[local] Hint Resolve …``) change no statement; typeclass hints could change how the
    frozen text elaborates, so they stay with the shadowing guard (the kernel judge would see the difference)."""
    return (words[:1] == ["Hint"] and len(words) > 1
            and words[1] in ("Resolve", "Immediate", "Constructors", "Unfold", "Rewrite", "Extern")
            and not any(t.text == "typeclass_instances" for t in sentence.tokens))


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
        if sentence.has_attribute():
            findings.append(Finding(sentence.line, f"attribute list `{sentence.text[:40]}` inside the proof of "
                                                   f"{owner}: commands are not allowed in a proof",
                                    {"sentence": sentence.text[:200]}))
            continue
        head = sentence.body_head()
        if head is None or head.kind != "ident" or not head.text[:1].isupper():
            continue
        if head.text in GOOD_TERMINATORS or head.text in ltac_names or "." in head.text:
            continue  # a qualified head (``Control.shelve ()``) is an Ltac2 call: no command is qualified
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
    findings = suspicious_characters(_coq_read_spaces_blanked(candidate))
    ltac_names = {b.head.declared_name() for _, b in analysis.inserted() if b.head.head() in ("Ltac", "Ltac2")}
    inserted = dict(analysis.inserted())
    opened: list[tuple[str, str, bool]] = []  # (Section|Module, name, opened by the candidate)
    for index, block in enumerate(analysis.candidate.before):
        structure, mine = _structure_command(block.head), index in inserted
        if structure == "End":
            name = block.head.declared_name()
            if not opened or opened[-1][1] != name:
                findings.append(Finding(block.head.line, f"`End {name}` closes no open Section/Module of that name",
                                        {"sentence": block.head.text[:200]}))
            elif opened[-1][2] != mine:
                findings.append(Finding(block.head.line, f"`End {name}` closes a Section/Module the "
                                                         f"{'template' if mine else 'candidate'} opened", {}))
            else:
                opened.pop()
        elif structure or _opens_scope(block.head):
            opened.append((structure or "Module", _scope_name(block.head), mine))
        if not mine:
            continue
        # a Variable/Hypothesis only in a Section the candidate opened (one in the template's would change the
        # statement: the theorem is generalised over it)
        finding = _top_level_finding(block.head, in_section=bool(opened) and opened[-1][0] == "Section"
                                     and opened[-1][2])
        if finding:
            findings.append(finding)
        findings += _tactic_findings(block.head, f"`{block.head.head()} {block.head.declared_name()}`")
        findings += _proof_findings(block, ltac_names, f"`{block.head.declared_name() or block.head.head()}`")
    main = analysis.candidate.main
    left_open = [f"{kind} {name}" for kind, name, mine in opened if mine]
    if main is not None and left_open:
        findings.append(Finding(main.head.line, f"`{theorem_name}` is inside {left_open[-1]}, which the candidate "
                                                f"opened: it would be generalised or renamed", {}))
    if main is not None:
        findings += _proof_findings(main, ltac_names, f"`{theorem_name}`")
        kept = set(analysis.trailer_match.values())
        for i, b in enumerate(analysis.candidate.after):
            if i in kept:
                continue
            if b.head.head() in QUERY_HEADS and not b.proof:
                finding = _top_level_finding(b.head)
                findings += [finding] if finding else []
                continue
            findings.append(Finding(b.head.line, f"sentence after the proof of `{theorem_name}` (only queries such "
                                                 f"as Check/Print may follow): `{b.head.text[:60]}`",
                                    {"sentence": b.head.text[:200]}))
    count = len(inserted)
    return layer_from_findings(SYNTAX, findings, f"{count} inserted sentence(s) on the allow-list; "
                                                 f"proofs free of admits and vernacular",
                               {"inserted_sentences": count})


#: Coq reads U+00A0 as an identifier character (``clib/unicode.ml``: ``IdentSep``), and so does this lexer: a name
#: written with one (Coquelicot's ``Lub.v`` names a hypothesis ``[x | | ]`` so) is a name like any other. A look-alike
#: in the statement is a frozen-token difference, and a name that reads like a frozen one elaborates to another
#: constant, which the kernel judge rejects (``cheat/nbsp_lookalike_name_in_statement``, static layers off too).
COQ_IDENTIFIER_SPACES = frozenset("\u00a0")


def _coq_read_spaces_blanked(text: str) -> str:
    """``text`` with the Unicode spaces Coq and this lexer read alike made plain for the character check: any inside
    a comment (a comment cannot change where Coq's sentences are) and U+00A0 anywhere (an identifier character,
    :data:`COQ_IDENTIFIER_SPACES`). coqc's own sentence report is checked against the screen's after compilation;
    other spaces (U+2000 …), which Coq reads as neither, stay refused."""
    out = [" " if char in COQ_IDENTIFIER_SPACES else char for char in text]
    for start, end in comments(text):
        for k in range(start, end):
            if unicodedata.category(text[k]) == "Zs":
                out[k] = " "
    return "".join(out)


def frozen_statement(analysis: Analysis, theorem_name: str) -> Layer:
    template, cand = analysis.template, analysis.candidate
    if cand.main is None:
        line = template.theorem.line  # where the template has it (the candidate has no line for it; was: line 1)
        return layer_from_findings(FROZEN, [Finding(line, f"`{template.theorem.head()} {theorem_name}` (template line "
                                                          f"{line}) not found in the candidate", {})], "")
    findings = _alignment_findings(template.preamble, [b.head for b in cand.before], analysis.preamble_match,
                                   "preamble sentence")
    index = first_difference(template.theorem.tokens, cand.main.head.tokens)
    if index is not None:
        findings.append(difference_finding("theorem statement", template.theorem.tokens,
                                           cand.main.head.tokens, index, cand.main.head.line))
    opener = cand.main.proof[0] if cand.main.proof else None
    using = (opener is not None and opener.command_words()[:2] == ["Proof", "using"]
             and template.proof_open.command_words() == ["Proof"])
    if opener is None or not (same(template.proof_open, opener) or using):
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
    """Inserted sentences that could change what the frozen text after them means, by text.

    It defers to the kernel judge (layer ``elaborated_statement``, which compares the statement and the problem
    file's closure as kernel terms) where that judge decides: a section's own hypotheses (``Variable A`` in a
    Section the candidate opened, gone at its ``End``; the syntax screen allows them nowhere else) and ``Import``/
    ``Export`` of any module, the candidate's or a library's (:func:`_imports_modules`: a frozen name it captures
    elaborates to another kernel term), new typeclass instances
    (``KERNEL_JUDGED_HEADS``, and a ``Canonical`` that defines its instance), notations with a string and
    ``Canonical``/``Coercion``/``Arguments``/``Prenex Implicits`` on any constant and ``Tactic Notation``
    (:func:`_kernel_judged_resolution`),
    and settings that change only how later text
    parses or elaborates (``KERNEL_JUDGED_SETTINGS``: scopes, ``Implicit Types``, ``Reserved Notation``). Text
    refusals stay for the other resolution commands (issue 22).
    """
    findings = []
    kept = set(analysis.preamble_match.values())
    for index, block in enumerate(analysis.candidate.before):
        sentence = block.head
        words = sentence.command_words()
        head = words[0] if words else ""
        structure = _structure_command(sentence)
        if index in kept:
            continue
        if structure in ("Section", "Module") or _module_import(sentence):
            name = _scope_name(sentence)
            if name_clashes(name, analysis.frozen_parts_after(index)):
                findings.append(Finding(sentence.line, f"`{head} {name}` shadows a name the frozen text after it "
                                                       f"uses", {}))
            continue
        if structure or _allowed_hint(sentence, words) or head in SECTION_HEADS:
            continue
        if _imports_modules(sentence):
            continue
        if tuple(words[:2]) in KERNEL_JUDGED_SETTINGS:
            continue
        declares = is_abbreviation(sentence) or _canonical_definition(sentence, words) \
            or _coercion_definition(sentence, words) or words[:2] == ["Identity", "Coercion"]
        if _kernel_judged_resolution(sentence, words) and not declares:
            continue
        if head in RESOLUTION_HEADS - KERNEL_JUDGED_HEADS and not declares \
                and words[:3] != ["Declare", "ML", "Module"] and words[:2] != ["Declare", "Module"]:
            findings.append(Finding(sentence.line, f"`{' '.join(words[:2])}` changes how the frozen text is "
                                                   f"parsed or resolved", {"sentence": sentence.text[:200]}))
            continue
        if head not in DECLARING_HEADS | KERNEL_JUDGED_HEADS and not declares:
            continue
        frozen_parts = analysis.frozen_parts_after(index)
        for name in _declared_names(sentence, words):
            if name_clashes(name, frozen_parts):
                findings.append(Finding(sentence.line, f"`{head} {name}` shadows `{name}`, which the frozen "
                                                       f"text after it uses", {"name": name}))
    return layer_from_findings(SHADOWING, findings, "no inserted sentence declares a name the frozen text uses "
                                                    "or changes resolution")


def is_abbreviation(sentence: Sentence) -> bool:
    """``Notation name args := term``: a name for a term, which parses no frozen text differently (a notation with
    a string changes the grammar and stays refused); its name faces the name check like any declaration."""
    body = without_prefixes(list(sentence.tokens[sentence._attribute_end():]))
    return len(body) > 2 and body[0].text == "Notation" and body[1].kind == "ident" and "." not in body[1].text


def _kernel_judged_resolution(sentence: Sentence, words: list[str]) -> bool:
    """Resolution commands whose every effect is on how later text parses or elaborates, which the kernel judge
    compares (``elaborated_statement``: the statement and every template constant as kernel terms, with the
    template's): a notation with a string (``Notation "x + y" := …``, ``Infix "+" := …``: new grammar, and a frozen
    text re-read with it elaborates to another term: ``cheat/notation_redefines_statement_operator``),
    ``Canonical``/``Coercion``/``Identity Coercion`` on any constant, a template's or a library's too (a canonical
    instance or coercion path the frozen text then takes changes its term: ``cheat/canonical_instance_of_template_
    structure``, ``cheat/coercion_of_template_function``), and ``Arguments``/``Prenex Implicits`` on any constant
    (implicits, scopes, renamings: ``cheat/arguments_scope_on_template_constant``), each rejected with the static
    layers off; and ``Tactic Notation`` (tactic grammar: its body is screened like any tactic text, and the term a
    tactic builds is the kernel's to check: ``cheat/tactic_notation_hides_no_check``, rejected by coqc's kernel at
    ``Qed`` with the static layers off; a keyword it adds that re-reads the frozen text changes its term). None of
    them declares an axiom, runs code or touches a file; one that also defines a constant faces the name check."""
    body = without_prefixes(list(sentence.tokens[sentence._attribute_end():]))
    if len(body) > 2 and body[0].text in ("Notation", "Infix") and body[1].kind == "string":
        return True
    return words[:1] in (["Canonical"], ["Coercion"], ["Arguments"]) \
        or words[:2] in (["Identity", "Coercion"], ["Prenex", "Implicits"], ["Tactic", "Notation"])


def _coercion_definition(sentence: Sentence, words: list[str]) -> bool:
    """``Coercion c (x : A) : B := body``: defines ``c`` and declares it a coercion; its name faces the name check."""
    return words[:1] == ["Coercion"] and sentence.defines_inline()


def _canonical_definition(sentence: Sentence, words: list[str]) -> bool:
    """``Canonical [Structure] c … := body``: defines ``c`` and makes it canonical. Like a new ``Instance`` it
    changes only how later text elaborates, which the kernel judge compares; its name faces the name check."""
    return words[:1] == ["Canonical"] and sentence.defines_inline()


def _imports_modules(sentence: Sentence) -> bool:
    """``Import M.`` / ``Export M N.`` naming modules only (no categories or filters), the candidate's own or a
    library's: what it brings into scope (names, notations, coercions, canonical and typeclass instances, hints,
    exported settings) changes how later text resolves or elaborates, or how tactics search, and nothing the kernel
    checks; a frozen name it captures elaborates to another kernel term, which ``elaborated_statement`` rejects
    (``cheat/import_library_module_renames_statement_function``: ``Import Nat.`` makes the statement's ``sqrt``
    ``Nat.sqrt``; ``cheat/export_in_helper_module_renames_statement_function``;
    ``cheat/imported_module_captures_frozen_name``; each with the static layers off too). A module that does not
    exist is coqc's error."""
    body = without_prefixes(list(sentence.tokens[sentence._attribute_end():-1]))
    return len(body) > 1 and body[0].text in ("Import", "Export") and all(t.kind == "ident" for t in body[1:])


def _module_import(sentence: Sentence) -> bool:
    """``Module Import X.`` / ``Module Export X.``: a Module of the candidate's, imported at its ``End`` (which
    then counts as an ``Import`` of an own module); it brings nothing in when it opens."""
    words = sentence.command_words()
    return (len(sentence.tokens) == 4 and not sentence.has_attribute() and len(words) == 3
            and words[0] == "Module" and words[1] in ("Import", "Export") and "." not in words[2])


def _declared_names(sentence: Sentence, words: list[str]) -> list[str]:
    """The name after the keyword, further names of ``Variables a b``, ``with`` names of mutual blocks, and what an
    inductive type declares besides itself: constructors, a record's constructor (``Build_R``) and fields."""
    names = words[1:] if words[0] in ("Variables", "Parameters", "Axioms", "Hypotheses") else words[1:2]
    if words[:2] in (["Canonical", "Structure"], ["Identity", "Coercion"]):
        names = words[2:3]
    tokens = sentence.tokens
    for i, token in enumerate(tokens[:-1]):
        if token.text == "with" and tokens[i + 1].kind == "ident" and words[0] in (
                THEOREM_KEYWORDS | {"Fixpoint", "CoFixpoint", "Inductive", "CoInductive"}):
            names.append(tokens[i + 1].text)
    if words[0] in INDUCTIVE_HEADS:
        names += constructor_names(sentence.tokens[sentence._attribute_end():-1], words[0])
    return list(dict.fromkeys(names))


def rocq_static_layers(template: str, candidate: str, *, theorem_name: str) -> list[Layer]:
    """The three static layers, in order; text the lexer cannot read fails every layer with its reason."""
    return run_static_layers(sys.modules[__name__], template, candidate, theorem_name)
