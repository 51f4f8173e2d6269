"""Rocq's statement audit: the refutation and vacuity tasks of a template, and a search for their certificates.

Both tasks keep the template's frozen preamble (imports, definitions, answer value) and restate its theorem:

- refutation: ``Theorem <name>_is_false : ~ (forall <binders>, <conclusion>).``
- vacuity: ``Theorem <name>_vacuous <binders> <premises> : False.`` where the premises are the conclusion's
  leading ``forall`` binders and ``->`` premises, peeled textually. Peeling is checked by the kernel, not
  trusted: the task's frozen part also defines ``<name>_audit_shape : (forall <binders>, <conclusion>) =
  (forall <binders> <premises>, <rest>) := eq_refl`` (fully qualified), so a wrong split makes the derived template fail to
  compile, and no certificate can pass.

The search runs in one ``coqtop`` per item (the libraries load once), each script under ``Timeout`` with a
process kill as backstop (:class:`pytest_forall.lang.rocq.coqtop.TacticProbe`): for vacuity, the closing
ladder after ``intros`` and destructuring, then with every universally quantified hypothesis instantiated
at the context's terms of the right type and at small literals; for falsity, the negated statement's
universal variables instantiated at small literals (a bounded backtracking search), its premises decided
and its conclusion refuted by ``lia``/``lra``/``nia``/``vm_compute``/… A script that closes a goal becomes
a certificate, which the protocol verifies like any submission.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_VACUOUS, Search, Split
from pytest_forall.core.model import Task
from pytest_forall.core.prover import Prover
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.rocq.lexer import mask
from pytest_forall.lang.rocq.lexer import tokens as lex
from pytest_forall.lang.rocq.screen import template_shape
from pytest_forall.lang.rocq.tactics import HAMMER_PRELUDE, PRELUDE, hammer_installed

OPENING, CLOSING = "([{", ")]}"
#: Heads of constructs that extend as far right as possible: a ``->`` after one of them is inside it.
BINDING_HEADS = frozenset({"exists", "exists2", "exists!", "fun", "let", "if", "match", "forall", "λ", "∃", "∀"})
#: Small values tried for universally quantified variables (per numeral scope that the file has loaded).
VALUES = ("0", "1", "2", "3", "4", "(-1)", "(1/2)")
SCOPES = ("nat", "Z", "R", "Q")
#: Values a scope cannot read (a numeral error is raised when the script is read, failing all of it).
UNREADABLE = {"nat": ("(-1)", "(1/2)"), "Z": ("(1/2)",)}
DESTRUCT = ("intros; repeat match goal with H : _ /\\ _ |- _ => destruct H | H : exists _, _ |- _ => destruct H "
            "| H : _ <-> _ |- _ => destruct H end")
NEW_INSTANCE = ("let forall_new H v := let P := type of (H v) in lazymatch goal with _ : P |- _ => fail "
                "| _ => pose proof (H v) end in ")
CHEAP = ("easy", "tauto", "congruence", "lia", "lra")
EXPENSIVE = ("intuition", "nia", "firstorder")
HAMMER = ("sauto", "qauto")
DECIDE_PREMISE = "solve [ easy | lia | lra | vm_compute; easy | nia ]"
REFUTE_INSTANCE = ("solve [ easy | lia | lra | congruence | discriminate | tauto | (vm_compute in forall_audit_H; "
                   "easy) | nia ]")
#: Seconds per script: a search or cheap closer (which fails in milliseconds unless it succeeds), and heavy
#: automation (which usually runs to its limit).
SEARCH_SECONDS, AUTOMATION_SECONDS = 2.0, 1.0


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
            depth += _depth_change(text)
    if colon is None:
        return None
    return Split(template[:offset(0)], template[offset(2):offset(colon)].strip(),
                 template[offset(colon + 1):offset(len(tokens) - 1)].strip())


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _depth_change(text: str) -> int:
    return sum(text.count(c) for c in OPENING) - sum(text.count(c) for c in CLOSING)


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
        step = _peel_one(rest, len(binders))
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
        comma = _depth0(tokens[1:], lambda kind, text: kind == "symbol" and "," in text, stop=frozenset())
        if comma is None or len(tokens) < 2:
            return None
        cut = comma[0] + comma[1].index(",")
        group = rest[tokens[1][0]:cut].strip()
        if not group:
            return None
        typed = True
        if not group.startswith(("(", "{", "`", "[")):
            typed = _depth0(_tokens(group), lambda kind, text: kind == "symbol" and text == ":",
                            stop=frozenset()) is not None
            group = f"({group})" if typed else group
        return group, rest[cut + 1:].strip(), typed
    arrow = _depth0(tokens, lambda kind, text: kind == "symbol" and text == "->", stop=BINDING_HEADS)
    if arrow is None or not rest[:arrow[0]].strip():
        return None
    return f"(forall_audit_h{index} : {rest[:arrow[0]].strip()})", rest[arrow[0] + 2:].strip(), True


def _depth0(tokens: list[tuple[int, str, str]], wanted: Any, stop: frozenset[str]) -> tuple[int, str] | None:
    """The first token at bracket depth 0 that ``wanted(kind, text)`` accepts, unless a ``stop`` word comes first."""
    depth = 0
    for offset, kind, text in tokens:
        if depth == 0 and kind == "ident" and text in stop:
            return None
        if depth == 0 and wanted(kind, text):
            return offset, text
        if kind == "symbol":
            depth += _depth_change(text)
    return None


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
    return (f"{split.preamble}Theorem {theorem}_is_false :\n    ~ ({_statement(split)}).\n{HOLE}"
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
    return (f"{split.preamble}{shape}Theorem {theorem}_vacuous\n    {header}\n    : False.\n{HOLE}"
            f"{_trailer(template)}")


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
    return out


# --- scripts -------------------------------------------------------------------------------------------

def literals(scopes: tuple[str, ...]) -> list[str]:
    """The small values as terms of each numeral scope, then the booleans."""
    return [f"{v}%{s}" for s in scopes for v in VALUES if v not in UNREADABLE.get(s, ())] + ["true", "false"]


def context_instances(rounds: int = 2) -> str:
    """Add every instance of a universally quantified hypothesis at a context term of the quantified type."""
    return (f"{NEW_INSTANCE}do {rounds} (repeat match goal with H : forall _ : ?T, _, v : ?T |- _ => "
            "forall_new H v end)")


def literal_instances(scopes: tuple[str, ...]) -> str:
    """Add the instances of every universally quantified hypothesis at the small values (one level)."""
    values = " | ".join(f"forall_new H ({v})" for v in literals(scopes))
    return f"{NEW_INSTANCE}repeat match goal with H : forall _ : ?T, _ |- _ => first [ {values} ] end"


def vacuity_scripts(scopes: tuple[str, ...], hammer: bool) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Scripts that close ``False`` from the hypotheses, each with its time limit: (cheap ones, which fail in
    milliseconds unless they succeed, and the automation that usually runs to its limit)."""
    cheap = " | ".join(CHEAP)
    heavy = (HAMMER[::-1] if hammer else ()) + EXPENSIVE
    return ([(f"{DESTRUCT}; first [ {cheap} ]", SEARCH_SECONDS),
             (f"{DESTRUCT}; {context_instances()}; first [ {cheap} ]", SEARCH_SECONDS),
             (f"{DESTRUCT}; {literal_instances(scopes)}; first [ {cheap} ]", AUTOMATION_SECONDS)],
            [(f"{DESTRUCT}; {context_instances()}; {tactic}", AUTOMATION_SECONDS) for tactic in heavy])


def refutation_scripts(scopes: tuple[str, ...]) -> list[tuple[str, float]]:
    """A bounded search: instantiate the negated statement's variables at small values, decide its premises,
    refute the instance; backtracking over the values."""
    values = " | ".join(f"specialize (forall_audit_H ({v})); go ()" for v in literals(scopes))
    search = ("intro forall_audit_H; let rec go u := first [ match type of forall_audit_H with "
              "forall _ : ?T, _ => lazymatch type of T with Prop => "
              f"let h := fresh in assert (h : T) by {DECIDE_PREMISE}; specialize (forall_audit_H h); go () "
              f"| _ => first [ {values} ] end end | {REFUTE_INSTANCE} ] in go ()")
    return [("intro forall_audit_H; " + REFUTE_INSTANCE, SEARCH_SECONDS), (search, SEARCH_SECONDS)]


# --- the search ------------------------------------------------------------------------------------------

class RocqAudit:
    """The audit pack of the Rocq language (registered through ``pytest_forall_audit_pack``)."""

    def derive(self, task: Task) -> dict[str, Task]:
        return derive(task)

    def search(self, task: Task, derived: dict[str, Task], prover: Prover, workspace: Path,
               deadline: float, max_attempts: int | None = None) -> Search:
        from pytest_forall.lang.rocq.coqtop import Goal

        probe_of = getattr(prover, "tactic_probe", None)
        split = split_theorem(task.template, task.theorem_name)
        if probe_of is None or split is None or not derived:
            return Search({}, 0, "no derived task or no interactive prover")
        hammer = hammer_installed()
        prelude = PRELUDE + (HAMMER_PRELUDE if hammer else "")
        preamble = prelude + split.preamble
        winners: dict[str, str] = {}
        scopes: list[str] = []
        keys = {f"forall_audit_scope_{s}": s for s in SCOPES}
        stated: set[str] = set()

        def goals() -> Iterator[Goal]:
            for theorem, scope in keys.items():  # which numeral scopes are loaded: naming another fails a script
                yield Goal(f"Lemma {theorem} : True.\nProof.\n", theorem,
                           [(f"let x := constr:(0%{scope}) in exact I", 1.0)], counted=False)
            scopes.extend(keys[t] for t in keys if t in winners)
            cheap, heavy = vacuity_scripts(tuple(scopes), hammer)
            # cheap vacuity scripts, then the refutation search, then the heavy automation on vacuity again:
            # an item that reaches its deadline has had the scripts most likely to succeed per second spent
            for finding, scripts in ((AUDIT_VACUOUS, cheap), (AUDIT_FALSE, refutation_scripts(tuple(scopes))),
                                     (AUDIT_VACUOUS, heavy)):
                if finding in derived and derived[finding].theorem_name not in winners:
                    sub = derived[finding]
                    statement = sub.frozen[len(split.preamble):]
                    if finding in stated:  # its definitions exist already (``Abort`` ends only the proof)
                        statement = statement[statement.index(f"Theorem {sub.theorem_name}"):]
                    stated.add(finding)
                    yield Goal(statement, sub.theorem_name, scripts)

        probe = probe_of(workspace)
        _, attempts, log = probe.run_goals(preamble, goals(), workspace, deadline=deadline, winners=winners,
                                           max_attempts=max_attempts)
        certificates = {}
        for finding, sub in derived.items():
            script = winners.get(sub.theorem_name)
            if script:
                certificates[finding] = prelude + sub.frozen + f"{script}.\nQed.\n"
        return Search(certificates, attempts, log)
