"""Lean's statement audit: the refutation, vacuity and inner-vacuity tasks of a template, and a search.

The derived tasks keep the frozen preamble (imports, the filled-in answer, definitions) and restate the
theorem, as the Rocq pack does:

- refutation: ``theorem <name>_is_false : ¬ (∀ <binders>, <conclusion>) := sorry``
- vacuity: ``theorem <name>_vacuous <binders> <peeled> : False := sorry`` — the conclusion's leading ``∀``
  binders and ``→`` premises peeled (by Lean's precedences); the frozen part then proves
  ``<name>_audit_shape : @Eq Prop (<statement>) (∀ <binders> <peeled>, <rest>) := rfl``, so a wrong split makes
  the derived file fail to compile.
- inner vacuity: each premise inside the rest of the conclusion becomes ``def <name>_audit_premise<k>``, tied to
  its place by ``<name>_audit_inner_shape`` (the statement equals itself with the premises replaced by their
  definitions, by ``rfl``); the claim is that one of them fails at every instance of its scope.

The search compiles one candidate per script (there is no interactive session as for Rocq), alternatives inside
a script combined by ``first``: closing tactics and single-instance specialisation of one hypothesis on the
vacuity task; ``decide``/``norm_num``/``omega``, Mathlib's ``plausible`` run on the *original* statement as a
counterexample finder (its ``name := value`` lines instantiate the negated statement), and a grid of small
values with definitional witnesses on the refutation; per premise, its disjunct picked and unfolded, on the inner
task. Every certificate goes through the full verifier; nothing ``plausible`` prints is trusted. The Lean syntax
and behaviour relied on are cited in docs/lean-facts.md (A1-A11) and docs/audit.md. Tested against the stand-in
(tests/standin/lean) only, which does not type-check: what the search finds on real Lean has not been observed.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_INNER, AUDIT_VACUOUS, Search, Split
from pytest_forall.core.model import Task
from pytest_forall.core.prover import Prover
from pytest_forall.lang import statement
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.lean.lexer import COMMENT, DOC, MODDOC, spans
from pytest_forall.lang.lean.lexer import tokens as lex
from pytest_forall.lang.statement import Grammar, Lexeme

OPENING, CLOSING = "([{⦃⟨", ")]}⦄⟩"
VACUITY_TACTICS = ("omega", "linarith", "norm_num at *", "simp_all", "tauto")
REFUTATION_TACTICS = ("decide", "norm_num", "omega")
#: How a counterexample's instance is decided once ``plausible`` has named the values.
INSTANCE_CLOSERS = ("decide", "norm_num", "simp")
#: ``plausible``'s report of a counterexample: a header line, then one ``name := value`` line per variable.
FOUND = "Found problems!"
_ASSIGNMENT = re.compile(r"^\s*([^\s:=]+) := (.+?)\s*$")


def split_theorem(template: str, theorem: str) -> Split | None:
    """The last ``theorem <name>`` up to the ``:=`` before the final ``sorry``, cut at its top-level ``:``."""
    try:
        every = lex(template)
    except NotUnderstood:
        return None
    heads = [i for i in range(len(every) - 1) if every[i].text == "theorem" and every[i + 1].text == theorem]
    if not heads or every[-1].text != "sorry":
        return None
    assigns = [i for i in range(heads[-1], len(every)) if every[i].text == ":="]
    if not assigns or [t.text for t in every[assigns[-1] + 1:]] not in (["sorry"], ["by", "sorry"]):
        return None
    tokens = every[heads[-1]:assigns[-1] + 1]
    starts = [0]
    for line in template.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(index: int) -> int:
        return starts[tokens[index].line - 1] + tokens[index].col - 1

    head = next((i for i, t in enumerate(tokens) if t.text == "theorem"), None)
    if head is None:
        return None
    depth, colon = 0, None
    for index in range(head + 2, len(tokens) - 1):
        text = tokens[index].text
        if text == ":" and depth == 0:
            colon = index
            break
        depth += sum(text.count(c) for c in OPENING) - sum(text.count(c) for c in CLOSING)
    if colon is None:
        return None
    def end(index: int) -> int:  # after the token: a trailing ``--`` comment would swallow what a task appends
        return offset(index) + len(tokens[index].text)

    return Split(template[:offset(head)], template[offset(head + 2):end(colon - 1)].strip() if colon > head + 2 else "",
                 template[offset(colon + 1):end(len(tokens) - 2)].strip())


# --- reading a statement: tokens, binders, the peel, inner premises ------------------------------------

#: ASCII spellings of connectives, which the lexer cuts into several symbols (longest first).
ASCII_OPS = ("<->", "->", "/\\", "\\/", "<|", "|>", "=>")
ARROWS = frozenset({"→", "->"})
#: Operators of lower precedence than ``→`` (``↔`` 20, ``<|``/``|>``/``$`` 10 and below): with one at depth 0,
#: a leading ``→`` is not the top of the term.
BELOW_ARROW = frozenset({"↔", "<->", "<|", "|>", "$"})
#: Lean's propositional connectives by precedence, lowest first (``↔`` 20, ``→`` 25, ``∨`` 30, ``∧`` 35).
CONNECTIVES = (frozenset({"↔", "<->"}), ARROWS, frozenset({"∨", "\\/"}), frozenset({"∧", "/\\"}))
QUANTIFIERS = frozenset({"∀", "∃", "forall", "exists"})
#: Heads of constructs that extend as far right as possible (binders, big operators, ``fun``, ``let``, …): a
#: connective after one of them is inside it.
BINDING_HEADS = frozenset({"∀", "∃", "forall", "exists", "fun", "λ", "let", "have", "show", "if", "match", "do",
                           "by", "calc", "∑", "∏", "⋃", "⋂", "⨆", "⨅", "∫", "∮", "Σ", "Π", "∃!"})


def _lexemes(text: str) -> list[Lexeme]:
    """(offset, kind, text) of each lexeme of a fragment, comments left out, ASCII connectives joined."""
    found = [(s.start, s.kind, text[s.start:s.end]) for s in spans(text) if s.kind not in (COMMENT, DOC, MODDOC)]
    out: list[Lexeme] = []
    i = 0
    while i < len(found):
        offset, kind, token = found[i]
        op = next((op for op in ASCII_OPS if kind == "symbol" and text.startswith(op, offset)), None)
        if op is not None:
            j = i
            while j < len(found) and found[j][0] < offset + len(op) and found[j][1] == "symbol":
                j += 1
            if found[j - 1][0] + len(found[j - 1][2]) == offset + len(op):
                out.append((offset, "symbol", op))
                i = j
                continue
        out.append((offset, kind, token))
        i += 1
    return out


def _idents(text: str) -> set[str]:
    try:
        return {t[2] for t in _lexemes(text) if t[1] == "ident"}
    except NotUnderstood:
        return set()


@dataclasses.dataclass(frozen=True)
class Group:
    """One binder group: ``text`` as a parameter (implicit and strict-implicit groups made explicit, so that a
    definition over it takes its names as arguments), ``names`` it binds in order (``_`` for an anonymous
    instance), ``args`` passed explicitly (instance binders are found by instance search), its written
    ``type`` (empty when untyped) and whether it is typed."""

    text: str
    names: tuple[str, ...]
    args: tuple[str, ...]
    type: str
    typed: bool


def binder_groups(text: str) -> list[Group] | None:
    """The groups of a binder list as written (``(x y : T) {n : ℕ} [Fintype α]``, ``x y : T``, ``x y``), or None
    when a form is not understood (binder predicates ``x > 0``, default values, patterns, ``_``)."""
    text = text.strip()
    if not text:
        return []
    try:
        tokens = _lexemes(text)
    except NotUnderstood:
        return None
    if tokens[0][2] not in ("(", "{", "[", "⦃"):
        colon = GRAMMAR.depth0(tokens, lambda kind, t: kind == "symbol" and t in (":", ":="))
        names = tokens if colon is None else [t for t in tokens if t[0] < colon[0]]
        if not _plain_names(names) or (colon and colon[1] == ":="):
            return None
        written = text[colon[0] + 1:].strip() if colon else ""
        return [Group(f"({text})" if colon else text, tuple(t[2] for t in names), tuple(t[2] for t in names),
                      written, colon is not None)]
    groups: list[Group] = []
    depth, start = 0, 0
    for offset, kind, t in tokens:
        if depth == 0:
            if t not in ("(", "{", "[", "⦃"):
                return None
            start = offset
        depth += GRAMMAR.depth_change(kind, t)
        if depth < 0:
            return None
        if depth == 0:
            group = _group(text[start:offset + len(t)])
            if group is None:
                return None
            groups.append(group)
    return groups if depth == 0 else None


def _plain_names(names: list[Lexeme]) -> bool:
    return bool(names) and all(kind == "ident" and text != "_" for _, kind, text in names)


#: Heads of local definitions inside a type (``(h : let b := …; P b)``): their ``:=`` is not a default value.
LOCAL_DEFINITIONS = frozenset({"let", "letI", "have", "haveI"})


def _group(written: str) -> Group | None:
    """One bracketed group (``(x y : T)``, ``{x : T}``, ``⦃x : T⦄``, ``[C]``, ``[inst : C]``)."""
    opener = written[0]
    inner = written[1:-1]
    tokens = _lexemes(inner)
    stop = GRAMMAR.depth0(tokens, lambda kind, s: kind == "symbol" and s in (":", ":=", "|"))
    if opener == "[":
        if stop is None:
            return Group(written, ("_",), (), inner.strip(), True)
        names = [t for t in tokens if t[0] < stop[0]]
        if stop[1] != ":" or len(names) != 1 or not _plain_names(names):
            return None
        return Group(written, (names[0][2],), (), inner[stop[0] + 1:].strip(), True)
    default = GRAMMAR.depth0(tokens, lambda kind, s: s == ":=", stop=LOCAL_DEFINITIONS)  # ``(x : T := v)``
    if stop is None or stop[1] != ":" or default is not None:
        return None
    names = [t for t in tokens if t[0] < stop[0]]
    if not _plain_names(names):
        return None
    written_type = inner[stop[0] + 1:].strip()
    bound = tuple(t[2] for t in names)
    return Group(f"({' '.join(bound)} : {written_type})", bound, bound, written_type, True)


def peel(conclusion: str) -> tuple[list[str], str]:
    """The conclusion's leading typed ``∀`` binders and ``→`` premises, as theorem binders, and what remains.

    A conclusion inside parentheses is read inside them. An untyped binder stops the peel (see ``_peel_one``)."""
    binders: list[str] = []
    rest = conclusion
    while True:
        step = _peel_one(GRAMMAR.unwrapped(rest), len(binders))
        if step is None:
            return binders, rest
        binders.append(step[0])
        rest = step[1]


#: The relations of Lean's and Mathlib's binder predicates (``∀ x > 0,``, ``∀ x ∈ S,``).
BINDER_RELATIONS = frozenset({">", "≥", "<", "≤", "∈", "∉", "≠", "⊆", "⊂", "⊇", "⊃"})


def binder_predicate(written: str) -> tuple[str, str] | None:
    """(variable, relation) of a binder predicate ``x > 0`` (one plain name, then a relation), or None."""
    try:
        tokens = _lexemes(written)
    except NotUnderstood:
        return None
    if len(tokens) < 3 or tokens[0][1] != "ident" or tokens[0][2] == "_" or tokens[1][2] not in BINDER_RELATIONS:
        return None
    return tokens[0][2], tokens[1][2]


def _peel_one(rest: str, index: int) -> tuple[str, str] | None:
    """One leading typed ``∀`` group or ``→`` premise of ``rest``: (binder as written, what remains), or None."""
    try:
        tokens = _lexemes(rest)
    except NotUnderstood:
        return None
    if not tokens:
        return None
    if tokens[0][2] in ("∀", "forall"):
        comma = GRAMMAR.depth0(tokens[1:], lambda kind, text: kind == "symbol" and text == ",")
        if comma is None or len(tokens) < 2:
            return None
        written = rest[tokens[1][0]:comma[0]].strip()
        groups = binder_groups(written)
        if not groups or not all(g.typed for g in groups):
            # an untyped variable (``∀ x,``, ``∀ x > 0,``) would get its type in the vacuity task from the peeled
            # premises alone, where Lean's default numeral type (ℕ) can differ from the type the rest of the
            # statement gives it: its premises could contradict each other there and not in the statement
            return None
        if not written.startswith(("(", "{", "[", "⦃")):
            written = f"({written})"
        return written, rest[comma[0] + 1:].strip()
    if GRAMMAR.depth0(tokens, lambda kind, text: kind == "symbol" and text in BELOW_ARROW, stop=BINDING_HEADS):
        return None  # ``A → B ↔ C`` is ``(A → B) ↔ C``
    arrow = GRAMMAR.depth0(tokens, lambda kind, text: kind == "symbol" and text in ARROWS, stop=BINDING_HEADS)
    before = [t for t in tokens if t[0] < arrow[0]] if arrow is not None else []
    if arrow is None or not before:
        return None
    premise = rest[:before[-1][0] + len(before[-1][2])].strip()  # a trailing ``--`` comment would swallow the ``)``
    return f"(forall_audit_h{index} : {premise})", rest[arrow[0] + len(arrow[1]):].strip()


#: The walk's view of Lean's syntax (pytest_forall/lang/statement.py walks every pack's statements).
GRAMMAR: Grammar[Group] = Grammar(
    lex=_lexemes, opening=OPENING, closing=CLOSING, quantifiers=QUANTIFIERS, connectives=CONNECTIVES, arrows=ARROWS,
    binding_heads=BINDING_HEADS, binder_groups=binder_groups, unique="!", refused=BELOW_ARROW - CONNECTIVES[0],
    end_at_token=True)
InnerPremise = statement.InnerPremise[Group]


def inner_premises(rest: str, scope: list[Group]) -> list[InnerPremise]:
    """The premises inside ``rest`` (the conclusion after the peel) in positive positions: under ``∀``/``∃``
    bodies, the right side of ``→`` and both sides of ``↔``, ``∨``, ``∧`` (a part that starts with a construct
    extending to the right is not split, nor one with an operator below ``↔`` at its top)."""
    return statement.inner_premises(GRAMMAR, rest, scope)


# --- the derived tasks -----------------------------------------------------------------------------------

HOLE = ":=\n  sorry\n"


def _statement(split: Split) -> str:
    return f"∀ {split.binders}, {split.conclusion}" if split.binders else split.conclusion


def _shape(name: str, split: Split, other: str) -> str:
    """A theorem the kernel checks when the derived file compiles: the statement equals ``other`` (the same
    statement re-cut by the audit) by ``rfl``, i.e. up to definitional unfolding."""
    return f"theorem {name} :\n    @Eq Prop ({_statement(split)})\n    ({other}) :=\n  rfl\n"


def refutation_text(template: str, theorem: str) -> str | None:
    split = split_theorem(template, theorem)
    if split is None:
        return None
    return f"{split.preamble}theorem {theorem}_is_false :\n    ¬ ({_statement(split)}) {HOLE}"


def vacuity_text(template: str, theorem: str) -> str | None:
    """The vacuity task: the header's binders and the conclusion's leading ``∀`` binders and ``→`` premises
    prove ``False``. When anything was peeled, the frozen part proves ``<name>_audit_shape`` (the statement
    equals ``∀ <binders> <peeled>, <rest>``) by ``rfl``: a wrong textual split makes the derived file fail."""
    split = split_theorem(template, theorem)
    if split is None:
        return None
    groups = binder_groups(split.binders)
    if groups is None or not all(g.typed for g in groups):
        # an untyped header binder is typed in the original theorem with the help of its conclusion; in a task
        # that concludes ``False`` it could get another type (Lean's default numeral type), and hypotheses that
        # contradict each other there might not in the statement
        return None
    peeled, rest = peel(split.conclusion)
    header = " ".join(b for b in (split.binders, *peeled) if b)
    if not header:
        return None
    shape = _shape(f"{theorem}_audit_shape", split, f"∀ {header}, {rest}") if peeled else ""
    return f"{split.preamble}{shape}theorem {theorem}_vacuous\n    {header} :\n    False {HOLE}"


def _outer(split: Split, peeled: list[str]) -> list[Group] | None:
    """The binder groups of the header and of the peeled ``∀``s, in order; None when a form is not understood."""
    groups = binder_groups(split.binders)
    if groups is None:
        return None
    for binder in peeled:
        if binder.startswith("(forall_audit_h"):
            continue
        more = binder_groups(binder)
        if more is None:
            return None
        groups += more
    return groups


def inner_text(template: str, theorem: str) -> str | None:
    """The inner-vacuity task's text, or None when the conclusion has no inner premise understood.

    Each inner premise becomes ``def <name>_audit_premise<k> <its scope> : Prop := <premise>``; the frozen part
    proves ``<name>_audit_inner_shape``, that the statement equals itself with each premise replaced by its
    definition applied to its variables, by ``rfl`` (the kernel unfolds the definitions): every definition is
    the premise at that place of this statement, or the derived file does not compile. The theorem: one of the
    premises fails at every instance of its scope, under the theorem's binders, the peeled premises and the
    earlier premises on its path, ``(∀ …, P0 … → False) ∨ (∀ …, P0 … → P1 … → False) ∨ …``.
    """
    split = split_theorem(template, theorem)
    if split is None:
        return None
    peeled, rest = peel(split.conclusion)
    kept = split.conclusion
    while not kept.endswith(rest):  # a conclusion in parentheses: ``rest`` ends before their closing
        if not kept.rstrip().endswith(")"):
            return None
        kept = kept.rstrip()[:-1]
    head, tail = split.conclusion[:len(kept) - len(rest)], split.conclusion[len(kept):]
    outer = _outer(split, peeled)
    if outer is None or not all(g.typed for g in outer):
        return None  # an untyped header binder: the claim's hypotheses could read it at another type (A11)
    premises = inner_premises(rest, outer)
    if not premises:
        return None
    names = [f"{theorem}_audit_premise{k}" for k in range(len(premises))]
    definitions, applied = [], []
    for name, premise in zip(names, premises):
        body = rest[premise.start:premise.end].strip()
        params = statement.kept(premise.scope, _idents(body))
        definitions.append(f"def {name}{''.join(' ' + g.text for g in params)} : Prop :=\n    {body}\n")
        arguments = [a for g in params for a in g.args]
        applied.append(f"({name} {' '.join(arguments)})" if arguments else name)
    replaced = rest
    for premise, call in sorted(zip(premises, applied), key=lambda pc: -pc[0].start):
        replaced = f"{replaced[:premise.start]}{call}{replaced[premise.end:]}"
    shaped = f"{head}{replaced}{tail}"
    shape = _shape(f"{theorem}_audit_inner_shape", split, f"∀ {split.binders}, {shaped}" if split.binders else shaped)
    outer_binders = " ".join(b for b in (split.binders, *peeled) if b)
    disjuncts = []
    for k, premise in enumerate(premises):
        used = set().union(*(_idents(rest[premises[j].start:premises[j].end]) for j in (*premise.before, k)))
        inner = [g for g in statement.kept(premise.scope, used) if g not in outer]
        binders = " ".join(b for b in (outer_binders, *(g.text for g in inner)) if b)
        hyps = "".join(f"{applied[j]} → " for j in premise.before)
        disjuncts.append(f"({'∀ ' + binders + ', ' if binders else ''}{hyps}{applied[k]} → False)")
    return (f"{split.preamble}{''.join(definitions)}{shape}theorem {theorem}_inner_vacuous :\n    "
            + "\n    ∨ ".join(disjuncts) + f" {HOLE}")


def _derived(task: Task, text: str, theorem: str) -> Task:
    """The derived task: the same prover and context, its own text (frozen up to the final ``sorry``)."""
    hole = text.rindex("sorry")
    return dataclasses.replace(task, template=text, frozen=text[:hole], theorem_name=theorem,
                               statement=text[:hole].rstrip(), context_files={},
                               meta={k: v for k, v in task.meta.items() if k != "candidate_name"})


def derive(task: Task) -> dict[str, Task]:
    out: dict[str, Task] = {}
    for finding, text, suffix in ((AUDIT_FALSE, refutation_text(task.template, task.theorem_name), "is_false"),
                                  (AUDIT_VACUOUS, vacuity_text(task.template, task.theorem_name), "vacuous"),
                                  (AUDIT_INNER, inner_text(task.template, task.theorem_name), "inner_vacuous")):
        if text is not None:
            out[finding] = _derived(task, text, f"{task.theorem_name}_{suffix}")
    return out


def counterexample(output: str) -> list[tuple[str, str]]:
    """The ``name := value`` assignments ``plausible`` printed after "Found problems!" (empty if none)."""
    if FOUND not in output:
        return []
    found = []
    for line in output.split(FOUND, 1)[1].splitlines():
        if line.strip().startswith("---"):
            break
        assignment = _ASSIGNMENT.match(line)
        if assignment:
            found.append((assignment.group(1), assignment.group(2)))
    return found


def instance_scripts(values: list[tuple[str, str]]) -> list[str]:
    """Refutation scripts that instantiate the negated statement at a counterexample and decide it."""
    arguments = " ".join(f"({name} := {value})" for name, value in values)
    return [f"by\n  intro h\n  have := h {arguments}\n  revert this\n  {closer}" for closer in INSTANCE_CLOSERS]


# --- scripts ---------------------------------------------------------------------------------------------

#: Small values by number type (a value a type cannot take fails to elaborate, and that alternative fails).
NUMBER_VALUES = {"ℕ": ("0", "1", "2", "3"), "ℤ": ("0", "1", "2", "3", "-1"),
                 **{t: ("0", "1", "2", "3", "-1", "1 / 2") for t in ("ℚ", "ℝ", "ℂ")}}
#: Values a universally quantified hypothesis is specialised at (one hypothesis, one instance at a time).
SPECIALISE_VALUES = ("0", "1", "2", "3", "-1", "1 / 2")
#: ... its first two variables at most, then at these values each.
PAIR_VALUES = ("0", "1", "2")
#: Each alternative must close the goal (``done``), or ``first`` would stop at one that only simplified.
SPECIALISE_CLOSERS = ("norm_num at this", "simp at this", "omega", "linarith")
#: At most this many alternatives in one ``first`` (one compile, one heartbeat budget).
MAX_ALTERNATIVES = 64
#: The closers of an inner premise's goal ``False`` once it is introduced and unfolded.
INNER_CLOSERS = ("omega", "linarith", "(norm_num at *; done)", "(simp_all; done)", "tauto")


def _first(alternatives: list[str], indent: str = "  ") -> str:
    """``first`` over the alternatives, one per line (``first | tac | …``: each until one succeeds)."""
    return f"{indent}first\n" + "".join(f"{indent}| {a}\n" for a in alternatives[:MAX_ALTERNATIVES])


def _leading_variables(written_type: str) -> int:
    """How many variables a hypothesis's type binds in its leading ``∀`` (0 when not understood)."""
    try:
        tokens = _lexemes(written_type)
    except NotUnderstood:
        return 0
    if not tokens or tokens[0][2] not in ("∀", "forall"):
        return 0
    comma = GRAMMAR.depth0(tokens[1:], lambda kind, text: kind == "symbol" and text == ",")
    written = written_type[tokens[1][0]:comma[0]] if comma and len(tokens) > 1 else ""
    groups = binder_groups(written)
    if not groups:
        return 1 if binder_predicate(written) else 0  # ``∀ x > 0,``: one variable, then a premise
    return sum(len(g.names) for g in groups)


def universal_hypotheses(groups: list[Group]) -> list[tuple[str, int]]:
    """(name, variables) of each hypothesis whose written type starts with ``∀`` plain binders."""
    return [(name, count) for g in groups if (count := _leading_variables(g.type)) for name in g.args]


def specialisation_scripts(hypotheses: list[tuple[str, int]], prefix: str = "") -> list[str]:
    """One hypothesis at one literal instance at a time (its first variable at small values, or its first two
    at pairs), each alternative closed by one closer: a script per closer, ``first`` over the instances."""
    instances = []
    for name, count in hypotheses:
        tuples = (itertools.product(PAIR_VALUES, repeat=2) if count >= 2
                  else ((v,) for v in SPECIALISE_VALUES))
        instances += [f"{name} {' '.join(f'({v})' if ' ' in v or v.startswith('-') else v for v in values)}"
                      for values in tuples]
    if not instances:
        return []
    return [f"by\n{prefix}" + _first([f"(have := {i}; {closer}; done)" for i in instances]).rstrip("\n")
            for closer in SPECIALISE_CLOSERS]


def _number_type(written: str) -> str | None:
    written = GRAMMAR.unwrapped(written.strip())
    return written if written in NUMBER_VALUES else None


def _function_type(written: str) -> tuple[int, bool] | None:
    """(arity, domain = codomain) of a function type between number types (``ℕ → ℝ``, ``ℝ → ℝ → ℝ``)."""
    try:
        tokens = _lexemes(written)
    except NotUnderstood:
        return None
    parts, last, depth = [], 0, 0
    for offset, kind, text in tokens:
        if depth == 0 and text in ARROWS:
            parts.append(written[last:offset])
            last = offset + len(text)
        depth += GRAMMAR.depth_change(kind, text)
    parts.append(written[last:])
    if len(parts) < 2 or not all(_number_type(p) for p in parts):
        return None
    return len(parts) - 1, len({_number_type(p) for p in parts}) == 1


def candidate_values(group: Group) -> list[str]:
    """Witnesses for a data variable: small literals of a number type; constant functions, and for one argument
    the indicator of 0 and the identity."""
    number = _number_type(group.type)
    if number is not None:
        return list(NUMBER_VALUES[number])
    function = _function_type(group.type)
    if function is None:
        return []
    arity, same = function
    blanks = " ".join("_" for _ in range(arity))
    unary = ["fun x => if x = 0 then 1 else 0"] + (["fun x => x"] if same else []) if arity == 1 else []
    return [f"fun {blanks} => 0", f"fun {blanks} => 1", *unary]


def definitional_witnesses(groups: list[Group]) -> dict[str, tuple[str, str, str]]:
    """{function: (its witness, the hypothesis, its proof)} for a hypothesis ``f = fun … => RHS`` or
    ``∀ xs, f xs = RHS`` about an earlier variable ``f``, whose right side names no other variable of the
    statement: ``f := fun xs => RHS``, proved by ``rfl`` (``fun _ … => rfl``)."""
    bound = {n for g in groups for n in g.names}
    found: dict[str, tuple[str, str, str]] = {}
    for g in groups:
        if len(g.args) != 1:
            continue
        try:
            tokens = _lexemes(g.type)
        except NotUnderstood:
            continue
        binders: list[Group] = []
        body = g.type
        if tokens and tokens[0][2] in ("∀", "forall"):
            comma = GRAMMAR.depth0(tokens[1:], lambda kind, text: kind == "symbol" and text == ",")
            parsed = binder_groups(g.type[tokens[1][0]:comma[0]]) if comma and len(tokens) > 1 else None
            if not parsed:
                continue
            binders, body = parsed, g.type[comma[0] + 1:].strip() if comma else body
        body_tokens = _lexemes(body)
        equals = GRAMMAR.depth0(body_tokens, lambda kind, text: kind == "symbol" and text == "=", stop=BINDING_HEADS)
        if equals is None:
            continue
        left, right = body[:equals[0]].split(), body[equals[0] + 1:].strip()
        names = [n for b in binders for n in b.names]
        if not left or left[0] not in bound or left[0] in found or left[1:] != names:
            continue
        if _idents(right) & (bound - set(names)):
            continue  # the witness would mention a variable it cannot see
        if binders:
            witness = f"fun {' '.join(b.text for b in binders)} => {right}"
            proof = f"fun {' '.join('_' for _ in names)} => rfl"
        elif right.startswith(("fun ", "λ ")):
            witness, proof = right, "rfl"
        else:
            continue
        found[left[0]] = (witness, g.args[0], proof)
    return found


def refutation_grid(groups: list[Group]) -> list[str]:
    """Refutation scripts: the negated statement instantiated by name at definitional witnesses and at small
    values of its data variables (``first`` over the instances), each instance refuted by one closer."""
    witnesses = definitional_witnesses(groups)
    fixed = "".join(f" ({f} := {w}) ({h} := {proof})" for f, (w, h, proof) in witnesses.items())
    grid = [(name, values) for g in groups if (values := candidate_values(g)) for name in g.args
            if name not in witnesses]
    if not grid and not fixed:
        return []
    instances = [fixed + "".join(f" ({name} := {v})" for (name, _), v in zip(grid, combination))
                 for combination in itertools.islice(itertools.product(*(v for _, v in grid)), MAX_ALTERNATIVES)]
    return ["by\n  intro h\n" + _first([f"(have := h{i}; {closer}; done)" for i in instances]).rstrip("\n")
            for closer in ("norm_num at this", "simp at this")]


def _bound_names(split: Split, peeled: list[str]) -> list[str]:
    """The names the header and the peeled binders bind, in order (``_`` for an anonymous instance)."""
    names = [n for g in binder_groups(split.binders) or [] for n in g.names]
    for index, binder in enumerate(peeled):
        names += ([f"forall_audit_h{index}"] if binder.startswith("(forall_audit_h")
                  else [n for g in binder_groups(binder) or [] for n in g.names])
    return names


def inner_scripts(task: Task) -> list[str]:
    """Per inner premise: pick its disjunct, introduce the binders under their names and the premises, unfold
    the premises' definitions there, then the closers, or a specialisation of one hypothesis."""
    split = split_theorem(task.template, task.theorem_name)
    if split is None:
        return []
    peeled, rest = peel(split.conclusion)
    outer = _outer(split, peeled)
    if outer is None:
        return []
    premises = inner_premises(rest, outer)
    count = len(premises)
    scripts = []
    for k, premise in enumerate(premises):
        used = set().union(*(_idents(rest[premises[j].start:premises[j].end]) for j in (*premise.before, k)))
        inner_groups = [g for g in statement.kept(premise.scope, used) if g not in outer]
        names = _bound_names(split, peeled) + [n for g in inner_groups for n in g.names]
        premise_names = [f"forall_audit_p{j}" for j in (*premise.before, k)]
        pick = "Or.inr (" * k + ("Or.inl ?_" if k < count - 1 else "?_") + ")" * k
        select = f"  refine {pick}\n" if count > 1 else ""
        intro = " ".join(names + premise_names)
        unfold = "".join(f"  unfold {task.theorem_name}_audit_premise{j} at forall_audit_p{j}\n"
                         for j in (*premise.before, k))
        prefix = f"{select}  intro {intro}\n{unfold}"
        scripts.append(f"by\n{prefix}" + _first(list(INNER_CLOSERS)).rstrip("\n"))
        hypotheses = universal_hypotheses(outer + inner_groups)
        scripts += specialisation_scripts(hypotheses, prefix)[:1]
    return scripts


class LeanAudit:
    """The audit pack of the Lean language (registered through ``pytest_forall_audit_pack``)."""

    def derive(self, task: Task) -> dict[str, Task]:
        return derive(task)

    def search(self, task: Task, derived: dict[str, Task], prover: Prover, workspace: Path,
               deadline: float, max_attempts: int | None = None, cpu_seconds: float | None = None,
               on_attempt: Callable[[], None] | None = None) -> Search:
        # ``cpu_seconds`` is not measured for Lean (each script is a compile through the verifier): the wall
        # clock ``deadline`` is the budget
        from pytest_forall.core.verify import verify_candidate

        log: list[str] = []
        attempts = 0
        certificates: dict[str, str] = {}

        def budget_left() -> bool:
            return time.monotonic() < deadline and (max_attempts is None or attempts < max_attempts)

        def attempt(finding: str, proof: str) -> bool:
            nonlocal attempts
            attempts += 1
            if on_attempt is not None:
                on_attempt()
            sub = derived[finding]
            text = sub.frozen + proof + sub.template[len(sub.frozen) + len("sorry"):]
            verdict = verify_candidate(sub, prover, text.encode("utf-8"),
                                       timeout=max(1.0, deadline - time.monotonic()))
            lines = proof.splitlines()
            shown = lines[-1].strip() if len(lines) <= 3 else f"{lines[1].strip()} … ({len(lines)} lines)"
            log.append(f"{finding}: {shown}: {verdict.verdict} {verdict.reason[:200]}")
            if verdict.accepted:
                certificates[finding] = text
            if not verdict.accepted and verdict.layers and verdict.layers[-1].name == "template" \
                    and not verdict.layers[-1].ok:
                # the derived file itself does not compile (e.g. its shape theorem does not hold): no script can
                # pass, so the finding's search ends here (the verdict is ``infra``, never a proof failure)
                log.append(f"{finding}: the derived template does not compile; no certificate possible")
                return True
            return verdict.accepted

        split = split_theorem(task.template, task.theorem_name)
        peeled = peel(split.conclusion)[0] if split is not None else []
        groups = (_outer(split, peeled) or []) if split is not None else []
        if AUDIT_VACUOUS in derived:
            scripts = [f"by\n  {tactic}" for tactic in VACUITY_TACTICS]
            for proof in scripts + specialisation_scripts(universal_hypotheses(groups)):
                if not budget_left() or attempt(AUDIT_VACUOUS, proof):
                    break
        if AUDIT_FALSE in derived:
            scripts = [f"by\n  {tactic}" for tactic in REFUTATION_TACTICS]
            values = self._plausible(task, prover, deadline) if budget_left() else []
            if values:
                log.append(f"plausible: counterexample {values}")
                scripts = instance_scripts(values) + scripts
            for proof in scripts + refutation_grid(groups):
                if not budget_left() or attempt(AUDIT_FALSE, proof):
                    break
        if AUDIT_INNER in derived and not certificates:  # contradictory hypotheses or a false statement come first
            for proof in inner_scripts(task):
                if not budget_left() or attempt(AUDIT_INNER, proof):
                    break
        return Search(certificates, attempts, "\n".join(log))

    def _plausible(self, task: Task, prover: Prover, deadline: float) -> list[tuple[str, str]]:
        """Run ``plausible`` on the original statement; its counterexample, if it printed one."""
        if not task.frozen:
            return []
        probe = task.frozen + "by\n  plausible" + task.template[len(task.frozen) + len("sorry"):]
        with tempfile.TemporaryDirectory(prefix="forall-plausible-") as build:
            path = Path(build) / task.candidate_name
            path.write_text(probe, encoding="utf-8")
            result = prover.compile(task, Path(build), path, max(1.0, deadline - time.monotonic()))
        return counterexample(result.output + "\n" + "\n".join(str(m.get("data", "")) for m in result.messages))
