"""The audit's derived tasks of a Rocq template: the theorem split into preamble, binders and conclusion, the
refutation, vacuity and inner-vacuity statements restated from it, and their frozen ties and shape checks (the
kernel checks that each derived statement is the template's, so a wrong textual split cannot yield a flag)."""

from __future__ import annotations

import dataclasses

from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_INNER, AUDIT_VACUOUS, Split
from pytest_forall.core.model import Task
from pytest_forall.lang import statement
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.rocq.lexer import mask
from pytest_forall.lang.rocq.lexer import tokens as lex
from pytest_forall.lang.rocq.screen import template_shape
from pytest_forall.lang.statement import Grammar, kept

OPENING, CLOSING = "([{", ")]}"
#: Heads of constructs that extend as far right as possible: a ``->`` after one of them is inside it.
BINDING_HEADS = frozenset({"exists", "exists2", "exists!", "fun", "let", "if", "match", "forall", "λ", "∃", "∀"})


def split_theorem(template: str, theorem: str) -> Split | None:
    """The theorem's pieces as written, or None when the template's shape is not understood."""
    try:
        tokens = template_shape(template, theorem).theorem.tokens
    except NotUnderstood:
        return None
    starts = _line_starts(template)

    def offset(index: int) -> int:
        return starts[tokens[index].line - 1] + tokens[index].col - 1

    depth, colon = 0, None
    for index in range(2, len(tokens) - 1):
        text = tokens[index].text
        if tokens[index].kind == "symbol":
            if text == ":" and depth == 0:
                colon = index
                break
            depth += GRAMMAR.depth_change("symbol", text)
    if colon is None:
        return None
    return Split(template[:offset(0)], template[offset(2):offset(colon)].strip(),
                 template[offset(colon + 1):offset(len(tokens) - 1)].strip())


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _tokens(text: str) -> list[tuple[int, str, str]]:
    """(offset, kind, text) of each lexeme of a fragment."""
    starts = _line_starts(text)
    return [(starts[t.line - 1] + t.col - 1, t.kind, t.text) for t in lex(text)]


def peel(conclusion: str) -> tuple[list[str], str]:
    """The conclusion's leading ``forall`` binders and ``->`` premises, as theorem binders, and what remains.

    Untyped binders (``forall x y,``) are kept only when a peeled premise follows them: their types are
    inferred from where they are used, and the remaining conclusion is not part of the vacuity task.
    """
    binders: list[str] = []
    rest = conclusion
    untyped: list[tuple[int, str]] = []  # (index in binders, the rest before it) of untyped groups
    while True:
        step = _peel_one(GRAMMAR.unwrapped(rest), len(binders))
        if step is None:
            break
        group, remaining, typed = step
        if not typed:
            untyped.append((len(binders), rest))
        binders.append(group)
        rest = remaining
    while untyped and untyped[-1][0] == len(binders) - 1:  # nothing peeled after it says what it is
        _, rest = untyped.pop()
        binders.pop()
    return binders, rest


def _peel_one(rest: str, index: int) -> tuple[str, str, bool] | None:
    """One leading ``forall`` group or ``->`` premise of ``rest``: (binder, what remains, typed), or None."""
    try:
        tokens = _tokens(rest)
    except NotUnderstood:
        return None
    if not tokens:
        return None
    if tokens[0][1:] == ("ident", "forall"):
        comma = GRAMMAR.depth0(tokens[1:], lambda kind, text: kind == "symbol" and "," in text, stop=frozenset())
        if comma is None or len(tokens) < 2:
            return None
        cut = comma[0] + comma[1].index(",")
        group = rest[tokens[1][0]:cut].strip()
        if not group:
            return None
        typed = True
        if not group.startswith(("(", "{", "`", "[")):
            typed = GRAMMAR.depth0(_tokens(group), lambda kind, text: kind == "symbol" and text == ":",
                                   stop=frozenset()) is not None
            group = f"({group})" if typed else group
        return group, rest[cut + 1:].strip(), typed
    arrow = GRAMMAR.depth0(tokens, lambda kind, text: kind == "symbol" and text == "->", stop=BINDING_HEADS)
    if arrow is None or not rest[:arrow[0]].strip():
        return None
    return f"(forall_audit_h{index} : {rest[:arrow[0]].strip()})", rest[arrow[0] + 2:].strip(), True


def _statement(split: Split) -> str:
    return f"forall {split.binders}, {split.conclusion}" if split.binders else split.conclusion


HOLE = "Proof. Admitted.\n"


def _trailer(template: str) -> str:
    """What follows the template's hole (a project item's ``End S.`` closing its sections): kept as is."""
    hole = mask(template).rindex("Admitted.") + len("Admitted.")
    return template[hole:].lstrip("\n")


def refutation_text(template: str, theorem: str) -> str | None:
    split = split_theorem(template, theorem)
    if split is None:
        return None
    header = binder_groups(split.binders)
    names = [a for g in header or [] for a in g.args]
    if header is None or "_" in names:
        return None
    # the tie: stated with the template's own binders and conclusion (elaborated as its theorem is: binders
    # first), it type-checks only if the refuted statement has the theorem's binder types and conclusion
    # (an application checks each argument's type and the result by conversion), and is the refuted one
    binders = f" {split.binders}" if split.binders else ""
    applied = f"forall_audit_H {' '.join(names)}".strip()
    # ... up to coercions the application may insert: so the types are also compared, by conversion
    tie = (f"Definition {theorem}_audit_refutation_tie (forall_audit_H : {_statement(split)}){binders} :\n    "
           f"{split.conclusion}\n    := let _ := @{theorem}_is_false forall_audit_H in {applied}.\n"
           f"Definition {theorem}_audit_refutation_same\n    := ltac:(lazymatch type of "
           f"{theorem}_audit_refutation_tie with ?A -> ?B => exact (@Coq.Init.Logic.eq_refl _ A : "
           f"@Coq.Init.Logic.eq _ A B) end).\n")
    return (f"{split.preamble}Theorem {theorem}_is_false :\n    ~ ({_statement(split)}).\n{HOLE}{tie}"
            f"{_trailer(template)}")


def vacuity_text(template: str, theorem: str) -> str | None:
    """The vacuity task's text, or None when the theorem has neither binders nor premises to contradict."""
    split = split_theorem(template, theorem)
    if split is None:
        return None
    peeled, rest = peel(split.conclusion)
    header = " ".join(b for b in (split.binders, *peeled) if b)
    if not header:
        return None
    shape = ""
    if peeled:
        # fully qualified: libraries rebind the short names (ssreflect's ``eq_refl`` is about ``==``)
        shape = (f"Definition {theorem}_audit_shape :\n    @Coq.Init.Logic.eq _ ({_statement(split)})\n    "
                 f"(forall {header}, {rest})\n    := @Coq.Init.Logic.eq_refl _ _.\n")
    tie = _vacuity_tie(split, peeled, theorem)
    if tie is None:
        return None
    return (f"{split.preamble}{shape}Theorem {theorem}_vacuous\n    {header}\n    : False.\n{HOLE}{tie}"
            f"{_trailer(template)}")


def _vacuity_tie(split: Split, peeled: list[str], theorem: str) -> str | None:
    """The frozen sentence after the hole that ties the vacuity theorem to the template's own statement:
    ``Definition <name>_audit_tie <binders> : <conclusion> := fun <peeled> => False_rect _ (@<name>_vacuous …)``.

    Stated with the template's binders and conclusion, it is elaborated as the template's theorem is (binders
    first, then the conclusion), whereas the vacuity theorem elaborates its binders and peeled premises without
    the rest of the conclusion: a binder whose type the rest fixes (an untyped ``forall x``, a type class
    instance found by default) could get another type there, with premises that contradict each other. The
    kernel accepts the tie only if the vacuity theorem applies to the statement's own hypotheses, so a proof of
    it is a proof of ``False`` from them. None when a binder group is not understood.
    """
    header = binder_groups(split.binders)
    if header is None:
        return None
    count = 0
    for binder in peeled:
        if binder.startswith("(forall_audit_h"):
            count += 1
            continue
        groups = binder_groups(binder)
        if groups is None:
            return None
        count += sum(len(g.args) for g in groups)
    names = [a for g in header for a in g.args]
    if "_" in names:
        return None
    bound = [f"forall_audit_a{k}" for k in range(count)]
    body = f"@Coq.Init.Logic.False_rect _ (@{theorem}_vacuous {' '.join(names + bound)})".replace(" )", ")")
    if bound:
        body = f"fun {' '.join(bound)} => {body}"
    binders = f" {split.binders}" if split.binders else ""
    return f"Definition {theorem}_audit_tie{binders} :\n    {split.conclusion}\n    := {body}.\n"


#: The connectives an inner premise is looked for under (lowest precedence first); a premise is the left side
#: of an ``->``, whose right side is walked further. Negations and the premises themselves are not entered:
#: a premise there is in a negative position, and its failing would not make the statement hold.
CONNECTIVES = ("->", "<->", "\\/", "/\\")
QUANTIFIERS = frozenset({"forall", "exists", "∀", "∃"})


@dataclasses.dataclass(frozen=True)
class Group:
    """One binder group in scope of an inner premise: its text as a definition's parameter, the names it binds
    as arguments (a let-bound local binds none), and whether its type is written."""

    text: str
    args: tuple[str, ...]
    typed: bool


def binder_groups(text: str) -> list[Group] | None:
    """The groups of a binder list as written (``(x y : T) {R : realType} (a := 3)``, ``x y``, ``x y : T``),
    or None when a form is not understood (patterns, generalisation)."""
    text = text.strip()
    if not text:
        return []
    try:
        tokens = _tokens(text)
    except NotUnderstood:
        return None
    # a pattern (``'(a, b)``) or generalisation (`` `{…} ``) binder starts with a symbol that is not a bracket
    # and fails below; a ``'`` or backtick inside a type (``'I_n``, ``P`_n``) is no concern
    if tokens[0][2][:1] not in "({[":
        colon = GRAMMAR.depth0(tokens, lambda kind, t: kind == "symbol" and t in (":", ":="), stop=frozenset())
        names = tokens if colon is None else [t for t in tokens if t[0] < colon[0]]
        if not names or any(kind != "ident" for _, kind, _ in names) or (colon and colon[1] == ":="):
            return None
        return [Group(f"({text})" if colon else text, tuple(t[2] for t in names), colon is not None)]
    groups: list[Group] = []
    depth, start = 0, 0
    for offset, kind, t in tokens:
        if kind != "symbol":
            if depth == 0:
                return None
            continue
        if depth == 0:
            if t[:1] not in "({[":
                return None
            start = offset
        depth += GRAMMAR.depth_change(kind, t)
        if depth < 0:
            return None
        if depth == 0:
            end = offset + len(t)
            inner = _tokens(text[start + 1:end - 1])
            stop = GRAMMAR.depth0(inner, lambda kind, s: kind == "symbol" and s in (":", ":=", "|"), stop=frozenset())
            names = [i for i in inner if stop is None or i[0] < stop[0]]
            if not names or any(kind != "ident" for _, kind, _ in names) or stop is None or stop[1] == "|":
                return None
            is_let = stop[1] == ":=" or GRAMMAR.depth0(inner, lambda kind, s: kind == "symbol" and s == ":=",
                                                         stop=frozenset()) is not None
            groups.append(Group(text[start:end], () if is_let else tuple(i[2] for i in names), True))
    return groups if depth == 0 else None


#: The walk's view of Rocq's syntax (pytest_forall/lang/statement.py walks every pack's statements).
GRAMMAR: Grammar[Group] = Grammar(
    lex=_tokens, opening=OPENING, closing=CLOSING, quantifiers=QUANTIFIERS,
    connectives=tuple(frozenset({op}) for op in CONNECTIVES), arrows=frozenset({"->"}), binding_heads=BINDING_HEADS,
    binder_groups=binder_groups, heads_are_idents=True, joined_comma=True)
InnerPremise = statement.InnerPremise[Group]


def inner_premises(rest: str, scope: list[Group]) -> list[InnerPremise]:
    """The premises inside ``rest`` (the conclusion after its leading binders and premises are peeled) in
    positive positions: under ``forall``/``exists`` bodies, the right side of ``->`` and both sides of
    ``<->``, ``\\/``, ``/\\`` (a part that starts with a construct extending to the right is not split)."""
    return statement.inner_premises(GRAMMAR, rest, scope)


def _idents(text: str) -> set[str]:
    try:
        return {t[2] for t in _tokens(text) if t[1] == "ident"}
    except NotUnderstood:
        return set()


def _written(group: Group) -> bool:
    """Whether a binder group's type is written in full (no ``_``), so that it elaborates alike wherever it is
    restated."""
    return group.typed and "_" not in _idents(group.text)


def inner_text(template: str, theorem: str) -> str | None:
    """The inner-vacuity task's text, or None when the conclusion has no inner premise understood.

    Each inner premise becomes a definition ``<name>_audit_premise<k>`` over the variables in its scope; the
    frozen part checks, by the kernel, that the statement is the same term with each premise replaced by its
    definition applied to those variables (``<name>_audit_inner_shape``), so every definition is the premise
    at that place of this statement, whatever the text says. The theorem: one of the premises fails at every
    instance of its scope, under the theorem's hypotheses, the peeled premises and the earlier premises on its
    path, ``(forall …, premise1 -> False) \\/ (forall …, premise1 -> premise2 -> False) \\/ …`` (``-> False``
    rather than ``~``: ``intros`` then leaves the goal ``False`` of the vacuity searches).
    """
    split = split_theorem(template, theorem)
    if split is None:
        return None
    peeled, rest = peel(split.conclusion)
    if not split.conclusion.endswith(rest):
        return None
    header = binder_groups(split.binders)
    if header is None:
        return None
    outer: list[Group] = list(header)
    for binder in peeled:
        if binder.startswith("(forall_audit_h"):
            continue
        groups = binder_groups(binder)
        if groups is None:
            return None
        outer += groups
    premises = inner_premises(rest, outer)
    if not premises:
        return None
    # every binder a disjunct restates is elaborated there without the rest of the statement, which could give
    # an unwritten type (``forall x``, ``(x : _)``) another value, e.g. a type class instance found by default
    # (docs/audit.md); the shape equation ties the premise definitions only, so every such type must be written
    if not all(_written(g) for g in (*outer, *(g for p in premises for g in p.scope))):
        return None
    names = [f"{theorem}_audit_premise{k}" for k in range(len(premises))]
    definitions, applied = [], []
    for name, premise in zip(names, premises):
        body = rest[premise.start:premise.end].strip()
        params = kept(premise.scope, _idents(body))
        definitions.append(f"Definition {name} {' '.join(g.text for g in params)} : Prop :=\n    {body}.\n")
        applied.append(f"(@{name} {' '.join(a for g in params for a in g.args)})".replace(" )", ")"))
    replaced = rest
    for premise, call in sorted(zip(premises, applied), key=lambda pc: -pc[0].start):
        replaced = f"{replaced[:premise.start]}{call}{replaced[premise.end:]}"
    head = split.conclusion[:len(split.conclusion) - len(rest)]
    shaped = f"forall {split.binders}, {head}{replaced}" if split.binders else f"{head}{replaced}"
    shape = (f"Definition {theorem}_audit_inner_shape :\n    @Coq.Init.Logic.eq _ ({_statement(split)})\n    "
             f"({shaped})\n    := @Coq.Init.Logic.eq_refl _ _.\n")
    outer_binders = " ".join(b for b in (split.binders, *peeled) if b)
    disjuncts = []
    for k, premise in enumerate(premises):
        used = set().union(*(_idents(rest[premises[j].start:premises[j].end]) for j in (*premise.before, k)))
        inner = [g for g in kept(premise.scope, used) if g not in outer]
        binders = " ".join(b for b in (outer_binders, *(g.text for g in inner)) if b)
        hyps = "".join(f"{applied[j]} -> " for j in premise.before)
        disjuncts.append(f"({'forall ' + binders + ', ' if binders else ''}{hyps}{applied[k]} -> False)")
    return (f"{split.preamble}{''.join(definitions)}{shape}Theorem {theorem}_inner_vacuous :\n    "
            + "\n    \\/ ".join(disjuncts) + f".\n{HOLE}{_trailer(template)}")


def inner_selectors(text: str, theorem: str) -> list[str]:
    """The tactic prefix that picks each disjunct of an inner-vacuity task and unfolds the premises."""
    count = text.count(f"Definition {theorem}_audit_premise")
    unfold = ", ".join(f"{theorem}_audit_premise{k}" for k in range(count))
    return [("right; " * k) + ("left; " if k < count - 1 else "") + f"unfold {unfold}" for k in range(count)]


def _derived(task: Task, text: str, theorem: str) -> Task:
    """The derived task: the same prover and context (a project's build), its own text."""
    frozen = text[:text.index(HOLE, text.index(f"Theorem {theorem}")) + len("Proof. ")]
    return dataclasses.replace(task, template=text, frozen=frozen, theorem_name=theorem,
                               statement=frozen.rstrip(), answer="", context_files={},
                               meta={k: v for k, v in task.meta.items() if k != "candidate_name"})


def derive(task: Task) -> dict[str, Task]:
    out: dict[str, Task] = {}
    refutation = refutation_text(task.template, task.theorem_name)
    if refutation is not None:
        out[AUDIT_FALSE] = _derived(task, refutation, f"{task.theorem_name}_is_false")
    vacuity = vacuity_text(task.template, task.theorem_name)
    if vacuity is not None:
        out[AUDIT_VACUOUS] = _derived(task, vacuity, f"{task.theorem_name}_vacuous")
    inner = inner_text(task.template, task.theorem_name)
    if inner is not None:
        out[AUDIT_INNER] = _derived(task, inner, f"{task.theorem_name}_inner_vacuous")
    return out
