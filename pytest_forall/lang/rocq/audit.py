"""Rocq's statement audit: the refutation and vacuity tasks of a template, and a search for their certificates.

Both tasks keep the template's frozen preamble (imports, definitions, answer value) and restate its theorem:

- refutation: ``Theorem <name>_is_false : ~ (forall <binders>, <conclusion>).``
- vacuity: ``Theorem <name>_vacuous <binders> <premises> : False.`` where the premises are the conclusion's
  leading ``forall`` binders and ``->`` premises, peeled textually. Peeling is checked by the kernel, not
  trusted: the task's frozen part also defines ``<name>_audit_shape : (forall <binders>, <conclusion>) =
  (forall <binders> <premises>, <rest>) := eq_refl`` (fully qualified), so a wrong split makes the derived template fail to
  compile, and no certificate can pass.

Both also keep, after the hole, a frozen *tie* to the template's theorem, stated with its own binders and
conclusion (Coq elaborates a theorem's binders before its conclusion; the derived statements elaborate theirs
otherwise, and could get other types): ``<name>_audit_tie`` applies the vacuity theorem to the theorem's
hypotheses, ``<name>_audit_refutation_tie``/``_same`` check that the refuted statement is the theorem's type.

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
import functools
import re
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_INNER, AUDIT_VACUOUS, COUNTEREXAMPLE, Search, Split
from pytest_forall.core.model import Task
from pytest_forall.core.prover import Prover
from pytest_forall.lang import statement
from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.rocq.certificate import certificate_header
from pytest_forall.lang.rocq.lexer import mask
from pytest_forall.lang.rocq.lexer import tokens as lex
from pytest_forall.lang.rocq.screen import template_shape
from pytest_forall.lang.rocq.tactics import HAMMER_PRELUDE, PRELUDE, contrib_installed, hammer_installed
from pytest_forall.lang.statement import Grammar, kept

OPENING, CLOSING = "([{", ")]}"
#: Heads of constructs that extend as far right as possible: a ``->`` after one of them is inside it.
BINDING_HEADS = frozenset({"exists", "exists2", "exists!", "fun", "let", "if", "match", "forall", "λ", "∃", "∀"})
#: Small values tried for universally quantified variables (per numeral scope that the file has loaded).
VALUES = ("0", "1", "2", "3", "4", "(-1)", "(1/2)")
#: The values a function or a list is built from (constant functions, lists of one element).
SEEDS = ("0", "1")
SCOPES = ("nat", "Z", "R", "Q")
#: Values a scope cannot read (a numeral error is raised when the script is read, failing all of it).
UNREADABLE = {"nat": ("(-1)", "(1/2)", "(1/3)"), "Z": ("(1/2)", "(1/3)")}
#: What the environment offers, each asked of Coq on a goal ``True`` (a script naming what is not there fails
#: as a whole when it is read): the numeral scopes by their keys (``uconstr`` only interprets the term, so
#: mathcomp's ``0%R``, whose ring is inferred from where it is used, is accepted too) and ssreflect's
#: ``unlock`` for ``rewrite ?unlock`` (mathcomp's big operators are locked: no computation passes them before it;
#: without ssreflect, ``rewrite ?unlock`` parses too, as a rewrite with an evar, and fails).
SSR, NUM, RAT, POLY = "ssr", "num", "rat", "poly"
REALS, ZEQB, INTERVAL = "reals", "zeqb", "interval"
#: mathcomp's rationals and their embedding ``ratr`` into any numeric field
RATR = "mathcomp.algebra.rat"
#: ``True``'s proof by its full name: a template may declare its own ``I`` (``Variables (I : finType)``), and a
#: bare ``exact I`` then failed every probe, so nothing was searched
TRIVIAL = "exact Coq.Init.Logic.I"
#: Wall seconds a tie check may take to load (``Timeout``): a tie is checked by conversion, which a ``let`` of a
#: recursive function at a big numeral made unfold without end (past the CPU budget, then coqtop's memory
#: limit); a tie that does not load in time is not accepted, so no flag can rest on it
TIE_SECONDS = 10
FEATURES = {**{scope: f"let x := uconstr:(0%{scope}) in {TRIVIAL}" for scope in SCOPES},
            SSR: f"let x := uconstr:(unlock) in {TRIVIAL}", NUM: f"let x := uconstr:(Num.Theory.eqr_nat) in {TRIVIAL}",
            RAT: f"let x := uconstr:({RATR}.ratr_rmorphism) in {TRIVIAL}",
            POLY: f"let x := uconstr:(polyC) in {TRIVIAL}",
            # issue 34: Coq's reals (the indicator ``if Req_EM_T x 0 …``, sequences ``INR n``), ``Z.eqb`` (the
            # indicator over ``Z``) and Interval's ``interval`` (loaded by the search's prelude in a Coq-reals file)
            REALS: f"let x := uconstr:(Req_EM_T) in {TRIVIAL}", ZEQB: f"let x := uconstr:(Z.eqb) in {TRIVIAL}",
            INTERVAL: f"assert (Rle (1%R) (2%R)) by interval; {TRIVIAL}"}
#: Every implication of the context whose premise is decided (or in the context) applied, until none is: the
#: instances of an equivalence (split by BREAK) combined, where ``intuition`` on a hundred instances ran out of
#: time (two instances of one hypothesis that disagree: ``A 0`` from one, ``A 0 -> 1 = 0`` from the other).
MODUS_PONENS = ("repeat match goal with H : ?B -> _ |- _ => lazymatch type of B with Prop => let b := fresh in "
                "assert (b : B) by solve [ assumption | lia ]; specialize (H b) end end")
#: With mathcomp's polynomials: the coefficients of constant polynomials (``(c%:P)`_i``, the saturation's
#: polynomial values) evaluated (``coefC``; everything reverted first so that the rewrite reaches every
#: hypothesis), then the implications applied and ``lia``.
POLY_EVAL = ("repeat match goal with H : _ |- _ => revert H end; rewrite ?coefC; intros; simpl in *; "
             f"{MODUS_PONENS}; first [ lia | easy ]")
#: With mathcomp's ordered rings: a hypothesis comparing numerals of an abstract ring (``(2 : R) = 3``, ``3 < 1``)
#: moved to the goal and its numerals turned into comparisons of naturals (``eqr_nat``, ``ltr_nat``, ``ler_nat``).
NUMERAL_CHECK = ("first [ move/eqP: H | move: H ]; (try rewrite -[1%R]/(1%:R)%R); (try rewrite -[0%R]/(0%:R)%R); "
                 "rewrite ?Num.Theory.eqr_nat ?Num.Theory.ltr_nat ?Num.Theory.ler_nat; first [ easy | lia ]")
#: ... one hypothesis at a time, or two equations with the same left side (``f 2 = 1``, ``f 2 = 3``) combined.
NUMERALS = (f"first [ (match goal with H : _ |- _ => {NUMERAL_CHECK} end) "
            "| (match goal with E : ?a = _, E' : ?a = _ |- _ => let H := fresh in "
            f"pose proof (Coq.Init.Logic.eq_trans (Coq.Init.Logic.eq_sym E) E') as H; {NUMERAL_CHECK} end) ]")
#: With mathcomp's orders: two comparisons of the context that close a strict cycle (``x < y`` and ``y < x``,
#: ``x <= y`` and ``y < x``, or ``x < x``) over any ordered type, e.g. an abstract ``realType``, where
#: ``lia``/``lra`` see nothing (an order condition that already fails at ``i = j``).
PO = "Order.POrderTheory"
ORDER_CYCLE = ("match goal with "  # ``context``: after BREAK a comparison reads ``(x < y) = true``, not ``is_true``
               f"| H : context [@Order.lt _ _ ?x ?x] |- _ => by move: H; rewrite {PO}.ltxx "
               "| H : context [@Order.lt _ _ ?x ?y], H' : context [@Order.lt _ _ ?y ?x] |- _ => "
               f"by move: ({PO}.lt_trans H H'); rewrite {PO}.ltxx "
               "| H : context [@Order.le _ _ ?x ?y], H' : context [@Order.lt _ _ ?y ?x] |- _ => "
               f"by move: ({PO}.le_lt_trans H H'); rewrite {PO}.ltxx end")
#: With mathcomp's rationals: a hypothesis comparing rational constants of an abstract numeric field
#: (``1 / 3 > 1 / 2``, ``3 / 2 + 1 = 2``) moved to the goal, its integer numerals (``n%:~R``) rewritten as images
#: of rationals under ``ratr`` (the morphism ``M`` into the field of the hypothesis's first inverse) and folded
#: through it (a ring morphism that preserves inverses), then compared in ``rat`` by ``ltr_rat``/``ler_rat``
#: (``ratr`` is an order embedding) or its injectivity, and decided by computation (only then: a comparison
#: both of whose sides were folded into ``ratr`` is one of closed rationals). The field is fixed by the
#: hypothesis: with an undetermined one, ``rewrite -?rmorph1`` also rewrote ``rat``'s own ``1``, forever.
FRACTIONS = ("match goal with H : context [@GRing.inv _ ?x] |- _ => let T := type of x in "
             f"let M := constr:({RATR}.ratr_rmorphism _ : {{rmorphism rat -> T}}) in "
             "move: H; rewrite -?(mathcomp.algebra.ssrint.rmorph_int M) -?(GRing.fmorphV M) -?(GRing.rmorph1 M) "
             "-?(GRing.rmorph0 M) -?(GRing.rmorphM M) -?(GRing.rmorphD M) -?(GRing.rmorphN M) -?(GRing.rmorphB M) "
             f"; first [ rewrite {RATR}.ltr_rat | rewrite {RATR}.ler_rat | move=> /(GRing.fmorph_inj M) /eqP ]; "
             "by vm_compute end")
#: With mathcomp's rationals, the goal a comparison (``=``, ``<>``, ``<``, ``<=``, ``&&`` of them, or one of them
#: ``-> False``) of rational constants of an abstract numeric field (``1 <> 0``, ``0 < 1 / 2 < 1``, ``1 + 1 + 1 = 1
#: -> False``): the field read from the first ``1`` (or ``0``) of the goal in a numeric field (only once: retrying the
#: rest at every other ``1`` made each failure cost ten times more); natural and integer numerals, ``1`` and ``0`` rewritten as
#: images under ``ratr`` (the morphism ``M`` into that field), then the field operations (inverse, power, product,
#: sum, opposite) folded through it level by level until nothing changes, the comparison taken to ``rat``
#: (``ltr_rat``/``ler_rat``, the injectivity of ``M`` for ``==`` of an equation) and decided by computation, only
#: once no image under ``M`` is left (a goal with a variable, or ``size (1 / 2)%:P``, would have ``vm_compute``
#: unfold the abstract field: seconds to fail); each shape picked by matching (a failed ``rewrite inj_eq`` on a
#: boolean goal tried to unify it with ``ratr``'s definition: half a second).
RATIONAL = ("let M := match goal with |- context [@GRing.one ?U] => let T := type of (@GRing.one U) in "
            f"constr:({RATR}.ratr_rmorphism _ : {{rmorphism rat -> T}}) "
            "| |- context [@GRing.zero ?U] => let T := type of (@GRing.zero U) in "
            f"constr:({RATR}.ratr_rmorphism _ : {{rmorphism rat -> T}}) end in "
            f"lazymatch M with {RATR}.ratr_rmorphism ?F => "
            "rewrite -?(GRing.rmorph_nat M) -?(mathcomp.algebra.ssrint.rmorph_int M) -?(GRing.rmorph1 M) "
            "-?(GRing.rmorph0 M); repeat progress rewrite -?(GRing.fmorphV M) -?(GRing.rmorphX M) -?(GRing.rmorphM M) "
            f"-?(GRing.rmorphD M) -?(GRing.rmorphN M); rewrite ?(@{RATR}.ltr_rat F) ?(@{RATR}.ler_rat F); "
            "lazymatch goal with |- context [M] => lazymatch goal with "
            "| |- is_true _ => fail | |- (is_true _ -> False) => fail | |- @eq bool _ _ => fail "
            "| |- (@eq bool _ _ -> False) => fail "
            "| |- @eq _ _ _ => apply/eqP; rewrite (inj_eq (GRing.fmorph_inj M)); by vm_compute "
            "| |- ~ (@eq _ _ _) => move=> /eqP; rewrite (inj_eq (GRing.fmorph_inj M)); by vm_compute "
            "| |- (@eq _ _ _ -> False) => move=> /eqP; rewrite (inj_eq (GRing.fmorph_inj M)); by vm_compute end "
            "| _ => by vm_compute end end")
#: Big operators over literal ranges expanded (``\sum_(i < 3) F i`` by ``big_ord_recr`` down to ``big_ord0``;
#: ``\sum_(1 <= i < 2) F i`` unlocked, its index range computed by ``simpl``: ``F 1 + 0``) and beta-reduced.
EXPAND = "rewrite ?big_ord_recr ?big_ord0 ?unlock /="


def rational(features: tuple[str, ...]) -> str:
    """:data:`RATIONAL`, with mathcomp's polynomials after constant polynomials are evaluated (``hornerC``:
    ``(2%:P).[1 / 2] = 2``, ``horner0``: ``0.[1 / 2] = 0``)."""
    # matched, not ``rewrite ?hornerC``: unifying ``?c%:P`` with a polynomial ``1 / 3`` took a fifth of a second
    horner = ("repeat match goal with |- context [@horner _ (@polyC _ ?c) ?x] => rewrite (hornerC c x) "
              "| |- context [@horner _ (@GRing.zero _) ?x] => rewrite (horner0 x) end; ")
    # a polynomial left unevaluated (``(1 / 3).[1 / 2]`` of the polynomial ``1 / 3``) is not decided: failing at
    # once, where the folds tried to unify its ring with the field's (a fifth of a second each)
    left = "lazymatch goal with |- context [@horner _ _ _] => fail | _ => idtac end; "
    return f"{horner}{left}{RATIONAL}" if POLY in features else RATIONAL


def rational_hypotheses(features: tuple[str, ...]) -> str:
    """A hypothesis comparing rational constants (an equation, a boolean comparison, a negation) refuted, after
    its big operators are expanded."""
    return (f"match goal with H : ?P |- _ => lazymatch P with @eq _ _ _ => idtac | ~ _ => idtac end; "
            f"move: H; {EXPAND}; {rational(features)} end")


def rational_premises(features: tuple[str, ...]) -> str:
    """The implications of the context whose premises are decided applied: each premise once, unfolded
    (``hnf``: a definition such as ``sol a b c d := (c = a /\\ d = b) \\/ …`` at literals), one side of a
    disjunction picked, its conjunctions split and each piece proved by reflexivity, as a rational comparison
    (``0 < 1 / 2 < 1``, ``1 / 2 <> 1 / 3``) or from the context; an implication whose premise is not decided is
    set aside (reverted: a hundred instances were retried after every success, tens of seconds), and once all
    are tried, those whose premise is now in the context applied, until none is."""
    # ``reflexivity`` only on syntactically equal sides and a hypothesis only when it is the piece: conversions
    # (``size (1 / 2)%:P = 3``, ``(1 / 3).[0] = 0`` against ``0.[0] = 0``) took seconds
    pieces = (f"repeat match goal with |- _ /\\ _ => split end; "
              "first [ match goal with h : ?g |- ?g => exact h | |- ?a = ?a => reflexivity end "
              f"| ({rational(features)}) ]")
    return ("repeat match goal with H : ?B -> _ |- _ => lazymatch type of B with Prop => first [ let b := fresh in "
            f"assert (b : B) by (hnf; solve [ {pieces} | left; {pieces} | right; {pieces} ]); specialize (H b) "
            "| revert H ] end end; intros; "
            "repeat match goal with H : ?B -> _, b : ?B |- _ => lazymatch type of B with Prop => specialize (H b) end end")


#: Libraries loaded before a mathcomp file (chosen from the preamble's text; a certificate that depends on
#: them still has to pass the verifier): ``lia`` through mathcomp's arithmetic, ``ring``/``field`` on its rings.
MATHCOMP_PRELUDE = "From mathcomp Require Import zify ring.\n"
#: Break the context into pieces: let-bound locals unfolded, conjunctions, existentials, equivalences,
#: disjunctions (one goal per case), pairs and boolean conjunctions destructed.
BREAK = ("repeat match goal with x := _ |- _ => subst x end; repeat match goal with "
         "| H : _ /\\ _ |- _ => destruct H | H : exists _, _ |- _ => destruct H | H : _ <-> _ |- _ => destruct H "
         "| H : _ \\/ _ |- _ => destruct H | p : prod _ _ |- _ => destruct p "
         "| H : andb _ _ = true |- _ => apply andb_prop in H | H : is_true (andb _ _) |- _ => apply andb_prop in H "
         "end")
DESTRUCT = "intros; try cbv zeta in *; " + BREAK
#: The context's big operators and other locked constants, unlocked (everything reverted so that
#: ``rewrite`` reaches every hypothesis, then introduced again under the same names).
UNLOCK = "repeat match goal with H : _ |- _ => revert H end; rewrite ?unlock; intros"
CHEAP = ("easy", "tauto", "congruence", "discriminate", "lia", "lra")
EXPENSIVE = ("intuition", "nia", "firstorder")
HAMMER = ("sauto", "qauto")
#: Seconds of CPU per script: a search or cheap closer (which fails in milliseconds unless it succeeds),
#: and heavy automation (which usually runs to its limit).
SEARCH_SECONDS, AUTOMATION_SECONDS = 2.0, 1.0
#: The cheap vacuity strategies tried on each inner premise (the closers, negated existentials, specialisation,
#: and the all-zeros witness and Interval's bounds, which fail in milliseconds when they do not apply).
INNER_STRATEGIES = ("closers", "negated-existential", "specialise-2", "zero-witness", "interval")


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
        step = _peel_one(_unwrapped(rest), len(binders))
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


def _unwrapped(text: str) -> str:
    """``text`` without parentheses around the whole of it (``(forall x, A -> B)`` reads as ``forall x, A -> B``)."""
    while True:
        try:
            tokens = _tokens(text)
        except NotUnderstood:
            return text
        if not tokens or tokens[0][2] != "(" or tokens[-1][2] != ")":
            return text
        depth = 0
        for position, (_, kind, token) in enumerate(tokens):
            depth += GRAMMAR.depth_change(kind, token)
            if depth == 0:
                break
        if position != len(tokens) - 1:
            return text
        text = text[tokens[0][0] + 1:tokens[-1][0]].strip()


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


# --- scripts -------------------------------------------------------------------------------------------

def peano(n: int) -> str:
    """``n`` as a term of ``nat`` built from its constructors: a bare numeral is read in the file's open scope
    (``2`` is ``2%R`` under ``Open Scope R``), where a depth counter matched against ``S ?m`` never matched."""
    return "S (" * n + "O" + ")" * n


def literals(scopes: tuple[str, ...]) -> list[str]:
    """The small values as terms of each numeral scope, then the booleans."""
    return [f"{v}%{s}" for s in scopes for v in VALUES if v not in UNREADABLE.get(s, ())] + ["true", "false"]


def seeds(scopes: tuple[str, ...]) -> list[str]:
    return [f"{v}%{s}" for s in scopes for v in SEEDS] + ["true", "false"]


def witnesses(scopes: tuple[str, ...], typ: str, then: str) -> str:
    """Ltac that runs ``then`` (a tactic of the Ltac variable ``v``) with each candidate value ``v`` of the type
    ``typ`` (an Ltac variable) until one succeeds: small literals; for a function type, constant functions;
    for a list type, the empty list and one-element lists. An ill-typed candidate fails at once. Candidates are
    passed uninterpreted (``uconstr``): mathcomp's ``2%R`` is typed only where its ring is known."""
    def tries(values: list[str]) -> str:
        return " | ".join(f"forall_try uconstr:({v})" for v in values)

    return (f"let forall_try v := {then} in lazymatch {typ} with "
            f"| forall _ : _, _ => first [ {tries([f'fun {xs} => {v}' for xs in ('_', '_ _') for v in seeds(scopes)])} ] "
            f"| list _ => first [ {tries(['@nil _'] + [f'cons {v} nil' for v in seeds(scopes)])} ] "
            f"| _ => first [ {tries(literals(scopes))} ] end")


def closer(features: tuple[str, ...]) -> str:
    """The cheap closers of ``False`` from the context, then computation (after unlocking, when ssreflect is
    there: big operators over literal ranges evaluate) and ``intuition`` with discriminating closers."""
    cheap = " | ".join(CHEAP)
    unlock = f"{UNLOCK}; " if SSR in features else ""
    numerals = f" | ({NUMERALS}) | ({ORDER_CYCLE})" if NUM in features else ""
    # a hypothesis comparing rational constants of an abstract field, then the implications whose premises are
    # decided applied first (``1 + 1 + 1 = 1`` inside an implication)
    numerals += (f" | ({FRACTIONS}) | ({rational_premises(features)}; {BREAK}; {rational_hypotheses(features)})"
                 if RAT in features else "")
    return (f"first [ {cheap} | (simpl in *; first [ {cheap} ]) "
            f"| ({unlock}vm_compute in *; first [ easy | discriminate | lia ]) "
            f"| intuition (first [ discriminate | lia | lra ]){numerals} ]")


def prove(features: tuple[str, ...]) -> str:
    """The deciders of a closed side condition (a premise at literal values, a witness's property)."""
    unlock = f"{UNLOCK}; " if SSR in features else ""
    # a negated inductive predicate at literals (``~ prime 1``) refuted by inverting it (``1 < 1``)
    return (f"solve [ easy | lia | lra | (repeat split; first [ easy | lia | lra ]) | reflexivity "
            f"| ({unlock}vm_compute; first [ easy | lia ]) | nia "
            "| (let h := fresh in intro h; inversion h; first [ lia | easy ]) "
            + (f"| ({rational(features)}) ]" if RAT in features else "]"))


def context_instances(rounds: int = 2) -> str:
    """Add every instance of a universally quantified hypothesis at a context term of the quantified type."""
    return (f"{NEW_INSTANCE}do {rounds} (repeat match goal with H : forall _ : ?T, _, v : ?T |- _ => "
            "forall_new H v end)")


MARK = "Coq.Init.Datatypes.id"
#: A hypothesis, not a function of the context: its type is a proposition.
PROP_ONLY = "let Q := type of H in lazymatch type of Q with Prop =>"
#: ``forall_new H v``: add ``H v`` unless the context has it. ``marked``: add it as ``id (H v)``, so that an
#: instance that is still universally quantified is not instantiated again (one level: without the mark, the
#: partial instances of a hypothesis with several variables multiplied until the time ran out).
NEW_INSTANCE = ("let forall_new H v := let P := type of (H v) in lazymatch goal with _ : P |- _ => fail "
                "| _ => pose proof (H v) end in ")
NEW_MARKED = (f"let forall_marked H v := let P := type of (H v) in lazymatch goal with _ : P |- _ => fail "
              f"| _ : {MARK} P |- _ => fail | _ => assert ({MARK} P) by exact (H v) end in ")


def literal_instances(scopes: tuple[str, ...]) -> str:
    """Add the instances of every universally quantified hypothesis at the small values (one level)."""
    values = witnesses(scopes, "T", "forall_marked H v")
    return (f"{NEW_MARKED}repeat match goal with H : forall _ : ?T, _ |- _ => {PROP_ONLY} "
            f"{values} end end; unfold {MARK} in *; {BREAK}")


def specialise(scopes: tuple[str, ...], features: tuple[str, ...], depth: int) -> str:
    """One hypothesis at a time, instantiated at literals (its premises decided), up to ``depth`` variables
    deep, then the closers: a backtracking search over hypotheses and values."""
    values = witnesses(scopes, "T", "inst (h v) m")
    return (f"let rec inst h n := first [ (pose proof h; {BREAK}; {closer(features)}) "
            "| lazymatch n with S ?m => lazymatch type of h with forall _ : ?T, _ => "
            "lazymatch type of T with Prop => let p := fresh in assert (p : T) by "
            f"{prove(features)}; inst (h p) m | _ => {values} end end end ] in "
            f"match goal with H : forall _ : ?T, _ |- _ => {PROP_ONLY} inst H ({peano(depth)}) end end")


#: The values a saturation instantiates every variable at (all of them, not one at a time).
SATURATION_VALUES = ("0", "1", "2", "3")
#: ... and, with mathcomp's rationals, two distinct rationals strictly between 0 and 1 besides 0 (two distinct
#: points of ``(0, 1)``: an existential over them moved outside an equivalence).
RATIONAL_VALUES = ("0", "(1/2)", "(1/3)")


def saturate(scopes: tuple[str, ...], depth: int = 3, small: tuple[str, ...] = SATURATION_VALUES,
             features: tuple[str, ...] = ()) -> str:
    """Every universally quantified hypothesis replaced by all its instances at a few small values (up to
    ``depth`` variables; an instance whose premise is not decided at once is dropped): for contradictions that
    need several instances together (``f 1 < f 2``, ``f 2 < f 3`` and ``0 < f 1`` against ``f 3 = 2``; two
    instances of one equivalence that disagree). With mathcomp's polynomials, constant polynomials of the same
    values too (``polyC 2``: a quantifier over polynomials moved outside an equivalence)."""
    values = [f"{v}%{s}" for s in scopes for v in small if v not in UNREADABLE.get(s, ())]
    values += [f"(polyC {v})" for v in values] if POLY in features else []
    tries = "; ".join(f"try (full (h {v}) m)" for v in values)
    return ("let rec full h n := lazymatch type of h with forall _ : ?T, _ => lazymatch type of T with "
            "Prop => let p := fresh in assert (p : T) by solve [ easy | lia | reflexivity ]; full (h p) n "
            f"| _ => lazymatch n with S ?m => {tries} end end | _ => pose proof h end in "
            f"repeat match goal with H : forall _ : ?T, _ |- _ => {PROP_ONLY} full H ({peano(depth)}); clear H end end")


def negated_existentials(scopes: tuple[str, ...], features: tuple[str, ...], depth: int = 2) -> str:
    """A hypothesis ``~ exists x, P x`` (or any ``~ P``) refuted by proving ``P``: literal witnesses chosen for
    its existentials, then the deciders."""
    values = witnesses(scopes, "T", "exists v; wit m")
    return (f"let rec wit n := first [ {prove(features)} | lazymatch n with S ?m => lazymatch goal with "
            f"|- exists _ : ?T, _ => {values} | |- _ /\\ _ => split; wit n end end ] in "
            f"match goal with H : ~ _ |- _ => apply H; wit ({peano(depth)}) end")


#: The strategy each script belongs to (by its text), for the audit log's per-strategy spend (issue 34).
STRATEGIES: dict[str, str] = {}


def named(strategy: str, script: str, seconds: float) -> tuple[str, float]:
    """A script and its CPU seconds, recorded under ``strategy`` (:func:`strategy_spend`)."""
    STRATEGIES.setdefault(script, strategy)
    return script, seconds


def vacuity_scripts(scopes: tuple[str, ...], hammer: bool,
                    features: tuple[str, ...] = ()) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Scripts that close ``False`` from the hypotheses, each with its CPU time limit: (the cheap ones and the
    searches, and the automation that usually runs to its limit)."""
    close = closer(features)
    heavy = (HAMMER[::-1] if hammer else ()) + EXPENSIVE
    cheap = [named("closers", f"{DESTRUCT}; {close}", SEARCH_SECONDS),
             named("negated-existential", f"{DESTRUCT}; {negated_existentials(scopes, features)}", SEARCH_SECONDS),
             named("specialise-2", f"{DESTRUCT}; {specialise(scopes, features, 2)}", SEARCH_SECONDS),
             # issue 34: one value for all of a negated existential's variables (all zeros first), and over Coq's
             # reals a comparison of closed terms refuted by Interval's bounds (both fail in milliseconds)
             named("zero-witness", f"{DESTRUCT}; {zero_witness(scopes, features)}", SEARCH_SECONDS),
             *([named("interval", f"{DESTRUCT}; {INTERVAL_REFUTE}", SEARCH_SECONDS)] if INTERVAL in features else []),
             named("context-instances", f"{DESTRUCT}; {context_instances()}; {close}", SEARCH_SECONDS),
             named("literal-instances", f"{DESTRUCT}; {literal_instances(scopes)}; {close}", SEARCH_SECONDS),
             # with mathcomp's rationals: three variables deep at 0, 1/2 and 1/3 (in any ring, polynomials too),
             # the implications whose premises are rational comparisons applied (before the saturations that run to
             # their limit in most files, or an item's budget ended before it; 6 s: deciding the premises of the
             # 66 implications among the instances of a file with three predicates on polynomials took 2.5 to 4 s)
             *([named("rational-saturation", (f"{DESTRUCT}; {saturate(scopes, 3, RATIONAL_VALUES)}; {BREAK}; "
                                             f"{rational_premises(features)}; {BREAK}; {close}"), 3 * SEARCH_SECONDS)]
               if RAT in features else []),
             # the instances combined nonlinearly too (``x 1 ^ 2 - x 0 * x 2 = 1`` with every ``x n`` zero)
             named("saturation", f"{DESTRUCT}; {saturate(scopes)}; {BREAK}; first [ {close} | nra | nia ]",
                   SEARCH_SECONDS),
             # four variables deep at two values: two instances of one hypothesis with several variables
             named("saturation-modus-ponens",
                   f"{DESTRUCT}; {saturate(scopes, 4, SATURATION_VALUES[:2])}; {BREAK}; {MODUS_PONENS}; {close}",
                   SEARCH_SECONDS),
             *([named("polynomial-saturation",
                      f"{DESTRUCT}; {saturate(scopes, 2, SATURATION_VALUES[:3], features)}; {BREAK}; {POLY_EVAL}",
                      2 * SEARCH_SECONDS)] if POLY in features else []),
             named("specialise-3", f"{DESTRUCT}; {specialise(scopes, features, 3)}", 2 * SEARCH_SECONDS),
             # issue 34: one hypothesis at a time at the generated candidates (rationals, functions, sequences,
             # Interval's values), two deep, each instance refuted by lia/lra/nra/field/interval
             named("generated-specialise", f"{DESTRUCT}; {fine_specialise(scopes, features, 2)}", SEARCH_SECONDS)]
    return cheap, ([named(f"automation-{tactic}", f"{DESTRUCT}; {context_instances()}; {tactic}", AUTOMATION_SECONDS)
                    for tactic in heavy]
                   + [named(f"automation-{tactic}-literals", f"{DESTRUCT}; {literal_instances(scopes)}; {tactic}",
                            AUTOMATION_SECONDS) for tactic in heavy])


def refutation_scripts(scopes: tuple[str, ...], features: tuple[str, ...] = ()) -> list[tuple[str, float]]:
    """A bounded search: instantiate the negated statement's variables at small values (a function also at the
    definition its next premise states, ``g := fun x => RHS``), decide its premises, refute the instance;
    backtracking over the values. The statement's ``let``s are reduced first."""
    h = "forall_audit_H"
    values = witnesses(scopes, "T", f"specialize ({h} v); go ()")
    refute = (f"solve [ {BREAK}; {closer(features)} | "
              f"{negated_existentials(scopes, features)} ]")
    # the instance's negated conclusion may itself be universal (``forall x y, f x y = g x - g y``: the same
    # search with that hypothesis specialised at literals) or nonlinear (``0 = a * b + b * c + c * a + 1``)
    deep = f"solve [ {BREAK}; {specialise(scopes, features, 2)} | {BREAK}; nia ]"
    definitional = " | ".join(
        f"match type of {h} with forall g : _, (forall {xs}, g {xs} = @?R {xs}) -> _ => specialize ({h} R); "
        f"match type of {h} with ?A -> _ => let p := fresh in assert (p : A) by (intros; reflexivity); "
        f"specialize ({h} p); go () end end"
        for xs in ("x", "x y", "x y z"))

    def search(leaf: str) -> str:
        return (f"intro {h}; try cbv zeta in {h}; let rec go u := first [ match type of {h} with "
                "forall _ : ?T, _ => lazymatch type of T with Prop => "
                f"let p := fresh in assert (p : T) by {prove(features)}; specialize ({h} p); go () "
                f"| _ => first [ {definitional} | {values} ] end end | {leaf} ] in go ()")

    # every variable at the same value, one value at a time (``a = b = c = d = 1``): a handful of instances,
    # where the search above visits the values of the last variables first (thousands for four variables)
    same = witnesses(scopes, "T", f"let rec go u := lazymatch type of {h} with forall _ : ?T, _ => "
                     "lazymatch type of T with Prop => "
                     f"let p := fresh in assert (p : T) by {prove(features)}; specialize ({h} p); go () "
                     f"| _ => specialize ({h} v); go () end | _ => {refute} end in go ()")
    uniform = (f"intro {h}; try cbv zeta in {h}; match type of {h} with forall _ : ?T, _ => "
               f"lazymatch type of T with Prop => fail | _ => {same} end end")
    # issue 34: distinct successive values (cheap: three instances), then the generated candidates' search
    stairs = " | ".join(f"({staircase(scopes, features, start)})" for start in STAIRCASE_STARTS)
    return [named("refute-direct", f"intro {h}; try cbv zeta in {h}; {refute}", SEARCH_SECONDS),
            named("same-value", uniform, SEARCH_SECONDS),
            named("staircase", f"first [ {stairs} ]", SEARCH_SECONDS),
            named("backtracking", search(refute), 2 * SEARCH_SECONDS),
            named("generated-backtracking", fine_search(scopes, features), 2 * SEARCH_SECONDS),
            named("backtracking-deep", search(deep), SEARCH_SECONDS)]


def inner_scripts(selectors: list[str], cheap: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """An inner premise's certificate scripts: one disjunct picked (``selectors``), the premises unfolded, then the
    cheap vacuity strategies of :data:`INNER_STRATEGIES`."""
    return [named(f"inner-{STRATEGIES[script]}", f"{selector}; {script}", seconds)
            for selector in selectors for script, seconds in cheap if STRATEGIES[script] in INNER_STRATEGIES]


#: issue 34's strategies (candidates generated by type). They run after every strategy the search had before, in
#: that one's order: a script's budget is CPU time in one coqtop session, so what runs before it can cost it its
#: result (putnam_1962_b5's refutation by ``backtracking`` takes 3.4-3.7 s of its 4 s after the former scripts;
#: with the generated ones interleaved it ran past its 4 s and the known flag was lost).
GENERATED = frozenset({"zero-witness", "interval", "staircase", "generated-backtracking", "generated-specialise"})


def search_order(cheap: list[tuple[str, float]], refutation: list[tuple[str, float]],
                 inner: list[tuple[str, float]],
                 heavy: list[tuple[str, float]]) -> list[tuple[str, list[tuple[str, float]]]]:
    """The goals the search states, in order, each with its scripts: the former strategies (cheap vacuity scripts,
    the refutation search, the inner premises, then the heavy automation on vacuity again: an item that reaches its
    deadline has had the scripts most likely to succeed per second spent), then the :data:`GENERATED` ones in the
    same order of phases."""
    def part(scripts: list[tuple[str, float]], generated: bool) -> list[tuple[str, float]]:
        return [(s, t) for s, t in scripts if (STRATEGIES[s].removeprefix("inner-") in GENERATED) is generated]

    phases = ((AUDIT_VACUOUS, cheap), (AUDIT_FALSE, refutation), (AUDIT_INNER, inner), (AUDIT_VACUOUS, heavy))
    return [(finding, part(scripts, generated)) for generated in (False, True) for finding, scripts in phases]


# --- issue 34: candidates generated by type, each counterexample certified by the field's own tactics -----------
#
# The grids above give every variable a value of a handful (0…4, -1, 1/2) and a function a constant. The searches
# below test more candidates per type, cheapest first, and keep only what a tactic then proves: a counterexample is
# never flagged for having been found, only for the certificate the verifier accepts (``lia``/``lra``/``nra``/
# ``field``, computation, and over Coq's reals ``interval``, whose bounds are proved by reflection).

#: Further values of a number variable, per numeral scope: more integers, and rationals with small denominators in
#: the scopes that read them (``R``, ``Q``)
FINE_VALUES = {"nat": ("5", "6", "7", "8", "10"), "Z": ("5", "(-2)", "(-3)", "10"),
               "R": ("(-2)", "5", "(-1/2)", "(1/3)", "(2/3)", "(3/2)", "(1/4)", "(3/4)", "(-1/3)"),
               "Q": ("(-2)", "5", "(-1/2)", "(1/3)", "(2/3)", "(3/2)", "(1/4)")}
#: ... and over Coq's reals, with Interval: values whose trigonometric, square-root, exponential and logarithmic
#: images ``interval`` bounds (a rational multiple of π, √2)
INTERVAL_VALUES = ("(PI/6)", "(PI/4)", "(PI/3)", "(PI/2)", "PI", "(2*PI/3)", "(2*PI)", "(sqrt 2)")
#: With Interval: a comparison of closed real terms refuted (``sin (PI/6) > 1/2 + 1/1000``, ``cos (2*PI/3) = -1/3``):
#: the opposite comparison proved by ``interval``, then ``lra``. A term with a free variable fails at once.
INTERVAL_REFUTE = ("match goal with "
                   "| H : Rlt ?a ?b |- _ => assert (Rle b a) by interval; lra "
                   "| H : Rle ?a ?b |- _ => assert (Rlt b a) by interval; lra "
                   "| H : Rgt ?a ?b |- _ => assert (Rle a b) by interval; lra "
                   "| H : Rge ?a ?b |- _ => assert (Rlt a b) by interval; lra "
                   "| H : @Coq.Init.Logic.eq R ?a ?b |- _ => "
                   "first [ assert (Rlt a b) by interval | assert (Rlt b a) by interval ]; lra end")
#: An indicator's test (``if Nat.eqb x 0 then 1 else 0``, ``if Req_EM_T x 0 …``) decided case by case, in the goal
#: and the context (a case the test's own hypothesis contradicts is closed by the closers that follow).
IFS = ("repeat match goal with |- context [if ?c then _ else _] => destruct c "
       "| H : context [if ?c then _ else _] |- _ => destruct c end")


def fine_literals(scopes: tuple[str, ...], features: tuple[str, ...]) -> list[str]:
    """The grid's values, then the further ones of :data:`FINE_VALUES` (and :data:`INTERVAL_VALUES` over reals
    with Interval), as terms of each loaded numeral scope."""
    extra = [f"{v}%{s}" for s in scopes for v in FINE_VALUES.get(s, ())]
    extra += [f"{v}%R" for v in INTERVAL_VALUES] if INTERVAL in features and "R" in scopes else []
    return literals(scopes) + extra


def fine_functions(scopes: tuple[str, ...], features: tuple[str, ...]) -> list[str]:
    """Function candidates: constants, the identity, linear and quadratic polynomials, indicators of 0 (over
    ``nat``, ``Z`` and Coq's reals) and, into the reals, the sequence ``INR n``; one or two arguments."""
    out = [f"fun {xs} => {v}" for xs in ("_", "_ _") for v in seeds(scopes)] + ["fun x => x"]
    for s in scopes:
        out += [f"fun x => (2 * x)%{s}", f"fun x => (x * x)%{s}", f"fun x => (x + 1)%{s}", f"fun _ => 2%{s}"]
        out += [f"fun x => if Nat.eqb x 0 then 1%{s} else 0%{s}"]
        out += [f"fun x => if Z.eqb x 0 then 1%{s} else 0%{s}"] if ZEQB in features else []
        out += [f"fun x => if Req_EM_T x 0 then 1%{s} else 0%{s}"] if REALS in features else []
    out += ["fun n => INR n", "fun n => (INR n * INR n)%R"] if REALS in features else []
    return out


def fine_witnesses(scopes: tuple[str, ...], features: tuple[str, ...], typ: str, then: str) -> str:
    """:func:`witnesses` with the candidates generated by type: :func:`fine_literals` for a number,
    :func:`fine_functions` for a function, lists of up to three elements (finite sequences) for a list."""
    def tries(values: list[str]) -> str:
        return " | ".join(f"forall_try uconstr:({v})" for v in values)

    small = seeds(scopes)
    lists = ["@nil _"] + [f"cons {v} nil" for v in small] + [f"cons {v} (cons {w} nil)" for v in small for w in small]
    lists += [f"cons {v} (cons {v} (cons {v} nil))" for v in small]
    return (f"let forall_try v := {then} in lazymatch {typ} with "
            f"| forall _ : _, _ => first [ {tries(fine_functions(scopes, features))} ] "
            f"| list _ => first [ {tries(lists)} ] "
            f"| _ => first [ {tries(fine_literals(scopes, features))} ] end")


def fine_prove(features: tuple[str, ...]) -> str:
    """:func:`prove`, with a universally quantified side condition (a function witness's property) introduced and
    decided, an indicator's cases split, ``field`` and, over reals with Interval, ``interval``."""
    extra = (" | interval | (split; interval) | (let h := fresh in intro h; "
             f"{INTERVAL_REFUTE})" if INTERVAL in features else "")
    # ``field`` is Coq's (loaded with its reals; the name is unknown without them, failing the whole script)
    field = " | field" if REALS in features else ""
    return (f"first [ {prove(features)} | (intros; solve [ lia | lra | nra{field} ]) "
            f"| (intros; {IFS}; solve [ easy | lia | lra | nra ]){(' | solve [ ' + field[3:] + extra + ' ]') if field else ''} ]")


def same_witness(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """The goal ``exists x y z…, P`` (a negated existential's body, after ``apply H``) given one value for every
    existential at once, all zeros first (``0`` of whatever number type, or the constant function ``0``), then
    the premise decided: the all-zeros witness that a search over one existential at a time, two deep, missed."""
    def each(v: str) -> str:
        alternatives = [f"exists {v}%{s}" for s in scopes] + [f"exists (fun _ => {v}%{s})" for s in scopes]
        alternatives += [f"exists (fun _ _ => {v}%{s})" for s in scopes]
        return (f"(repeat lazymatch goal with |- exists _ : _, _ => first [ {' | '.join(alternatives)} ] "
                f"| |- _ /\\ _ => split end; {fine_prove(features)})")

    return " | ".join(each(v) for v in ("0", "1"))


def zero_witness(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """A hypothesis ``~ exists …`` refuted by one value for all its existentials (:func:`same_witness`)."""
    return f"match goal with H : ~ _ |- _ => apply H; first [ {same_witness(scopes, features)} ] end"


def fine_closer(features: tuple[str, ...]) -> str:
    """:func:`closer`, then ``nra``, an indicator's cases (:data:`IFS`), and over reals with Interval a refuted
    comparison of closed terms (:data:`INTERVAL_REFUTE`)."""
    # a sequence defined by recursion evaluated at its literal index first (``simpl``), for Interval to bound it
    extra = f" | ({INTERVAL_REFUTE}) | (simpl in *; {INTERVAL_REFUTE})" if INTERVAL in features else ""
    # ``nra`` after ``simpl``: an instance's indices computed (``u (Nat.add 0 2)`` is ``u 2``, ``INR (fact 0)`` is
    # ``1``), so its products meet the context's values of the same terms (``u 0 * u 2 - u 1 * u 2 = 1``)
    return (f"first [ {closer(features)} | nra | (simpl in *; nra) | ({IFS}; solve [ easy | lia | lra | nra ])"
            f"{extra} ]")


def fine_specialise(scopes: tuple[str, ...], features: tuple[str, ...], depth: int) -> str:
    """:func:`specialise` with the generated candidates and the certifying closers of :func:`fine_closer`."""
    values = fine_witnesses(scopes, features, "T", "inst (h v) m")
    return (f"let rec inst h n := first [ (pose proof h; {BREAK}; {fine_closer(features)}) "
            "| lazymatch n with S ?m => lazymatch type of h with forall _ : ?T, _ => "
            "lazymatch type of T with Prop => let p := fresh in assert (p : T) by "
            f"{fine_prove(features)}; inst (h p) m | _ => {values} end end end ] in "
            f"match goal with H : forall _ : ?T, _ |- _ => {PROP_ONLY} inst H ({peano(depth)}) end end")


#: Distinct successive values (``a = 0, b = 1, c = 2``, then from 1 and from -1): the grid's same-value instances
#: give every variable one value, and its backtracking search reaches such a point late.
STAIRCASE_STARTS = (0, 1, -1)


def staircase(scopes: tuple[str, ...], features: tuple[str, ...], start: int) -> str:
    """The refuted statement's variables given the values ``start``, ``start + 1``, … in order (its premises
    decided on the way), then the instance refuted."""
    h = "forall_audit_H"
    refute = f"solve [ {BREAK}; {fine_closer(features)} | {zero_witness(scopes, features)} ]"

    def at(k: int) -> str:
        number = f"({k})" if k < 0 else str(k)
        tries = [f"specialize ({h} {number}%{s})" for s in scopes if not (s == "nat" and k < 0)]
        tries += [f"specialize ({h} (fun _ => {number}%{s}))" for s in scopes if not (s == "nat" and k < 0)]
        return f"first [ {' | '.join(tries)} ]"

    # the counter is the next value's index; at most six variables
    cases = " | ".join(f"{peano(i)} => {at(start + i)}; go ({peano(i + 1)})" for i in range(6))
    return (f"intro {h}; try cbv zeta in {h}; let rec go n := lazymatch type of {h} with forall _ : ?T, _ => "
            f"lazymatch type of T with Prop => let p := fresh in assert (p : T) by {fine_prove(features)}; "
            f"specialize ({h} p); go n | _ => lazymatch n with {cases} end end | _ => {refute} end in go O")


def fine_search(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """The refutation's backtracking search over the generated candidates (:func:`fine_witnesses`), each instance
    refuted by the certifying closers or, for a negated existential, by one value for all its variables."""
    h = "forall_audit_H"
    values = fine_witnesses(scopes, features, "T", f"specialize ({h} v); go ()")
    refute = (f"solve [ {BREAK}; {fine_closer(features)} | {zero_witness(scopes, features)} "
              f"| {negated_existentials(scopes, features)} ]")
    return (f"intro {h}; try cbv zeta in {h}; let rec go u := first [ match type of {h} with "
            "forall _ : ?T, _ => lazymatch type of T with Prop => "
            f"let p := fresh in assert (p : T) by {fine_prove(features)}; specialize ({h} p); go () "
            f"| _ => {values} end end | {refute} ] in go ()")


# --- the search ------------------------------------------------------------------------------------------

def search_prelude(preamble: str, hammer: bool) -> str:
    """What the search loads before a template's preamble (and its certificates start with): the arithmetic
    tactics, CoqHammer's when installed, mathcomp's ``zify``/``ring`` in a file that imports mathcomp (a
    choice of tactics only: the verifier judges what they produce)."""
    return (PRELUDE + (HAMMER_PRELUDE if hammer else "")
            + (MATHCOMP_PRELUDE if "mathcomp" in preamble else "")
            + (INTERVAL_PRELUDE if uses_coq_reals(preamble) and interval_installed() else ""))


#: Interval's tactics (Debian's libcoq-interval), loaded by the search in a file over Coq's reals (not mathcomp's,
#: whose reals ``interval`` does not read). Its certificates rest on the axioms that specify Coq's primitive
#: integers and floats (``Coq.Numbers.Cyclic.Int63.Uint63.*_spec``, ``Coq.Floats.FloatAxioms.*``), off the strict
#: list: a certificate that uses ``interval`` is accepted rules-only (docs/audit.md).
INTERVAL_PRELUDE = "From Interval Require Import Tactic.\n"


def uses_coq_reals(preamble: str) -> bool:
    """The preamble imports Coq's reals (or Coquelicot) and not mathcomp."""
    return "mathcomp" not in preamble and re.search(r"\b(Reals|Coquelicot)\b", preamble) is not None


@functools.cache
def interval_installed() -> bool:
    """Interval's tactic (Debian's libcoq-interval) is installed next to the standard library."""
    return contrib_installed("Interval", "Tactic.vo")


def tie_check(template: str, theorem: str, ties: tuple[str, ...]) -> Any:
    """A derived task's ties (the frozen definitions ``ties`` after its hole: :func:`_vacuity_tie`,
    :func:`refutation_text`) as a goal for the search, tried before the task's theorem is: an admitted stand-in
    of that theorem (the search's session only) and the ties stated with it; the goal loads only if they are
    accepted. When it does not, no proof of the theorem could pass the verifier (its derived template would
    not compile). None when the template has no such tie."""
    from pytest_forall.lang.rocq.coqtop import Goal

    at = template.index(f"Theorem {theorem}")
    stub, name = f"{theorem}_tie_stub", f"{theorem}_tie_check"
    sentences = [template[at:template.index(HOLE, at)].replace(theorem, stub, 1) + "Admitted.\n"]
    for tie in ties:
        if f"Definition {tie}\n" not in template and f"Definition {tie} " not in template:
            return None
        start = template.index(f"Definition {tie}")
        end = template.index(".\n", template.index("\n    := ", start)) + 2
        sentences.append(template[start:end])
    # ``@<theorem>`` ends with a space, or with ``)`` when the tie applies it to nothing (let-binders only)
    text = re.sub(rf"@{re.escape(theorem)}(?![\w'])", f"@{stub}", "".join(sentences))
    for tie in ties:
        text = text.replace(f"Definition {tie}", f"Timeout {TIE_SECONDS} Definition {tie}")
        text = text.replace(tie, f"{tie}_check")
    return Goal(f"{text}Lemma {name} : Coq.Init.Logic.True.\nProof.\n", name, [(TRIVIAL, SEARCH_SECONDS)], counted=False)


#: The tie sentence after the hole of each derived task (:func:`tie_check`).
TIES = {AUDIT_VACUOUS: ("_audit_tie",), AUDIT_FALSE: ("_audit_refutation_tie", "_audit_refutation_same")}


class RocqAudit:
    """The audit pack of the Rocq language (registered through ``pytest_forall_audit_pack``)."""

    def derive(self, task: Task) -> dict[str, Task]:
        return derive(task)

    def search(self, task: Task, derived: dict[str, Task], prover: Prover, workspace: Path,
               deadline: float, max_attempts: int | None = None, cpu_seconds: float | None = None,
               on_attempt: Callable[[], None] | None = None, strategies: Collection[str] | None = None) -> Search:
        """:meth:`AuditPack.search`; ``strategies``: only the scripts of these strategies (:data:`STRATEGIES`;
        the tests' way of showing which strategy alone finds a certificate)."""
        from pytest_forall.lang.rocq.coqtop import Goal

        probe_of = getattr(prover, "tactic_probe", None)
        split = split_theorem(task.template, task.theorem_name)
        if probe_of is None or split is None or not derived:
            return Search({}, 0, "no derived task or no interactive prover")
        hammer = hammer_installed()
        prelude = search_prelude(split.preamble, hammer)
        preamble = prelude + split.preamble
        winners: dict[str, str] = {}
        keys = {f"forall_audit_has_{key}": key for key in FEATURES}
        stated: set[str] = set()
        untied: set[str] = set()  # a vacuity proof the tie refused (its binders are not the statement's)

        def goals() -> Iterator[Goal]:
            for theorem, key in keys.items():  # what the environment has: naming what it lacks fails a script
                yield Goal(f"Lemma {theorem} : Coq.Init.Logic.True.\nProof.\n", theorem, [(FEATURES[key], 1.0)], counted=False)
            features = tuple(keys[t] for t in keys if t in winners)
            scopes = tuple(f for f in features if f in SCOPES)
            cheap, heavy = vacuity_scripts(scopes, hammer, features)
            inner = derived.get(AUDIT_INNER)
            selectors = inner_selectors(inner.template, task.theorem_name) if inner is not None else []
            for finding, scripts in search_order(cheap, refutation_scripts(scopes, features),
                                                 inner_scripts(selectors, cheap), heavy):
                if strategies is not None:
                    scripts = [(script, seconds) for script, seconds in scripts if STRATEGIES[script] in strategies]
                if not scripts:
                    continue
                if finding == AUDIT_INNER and any(derived[f].theorem_name in winners for f in derived if f != finding):
                    continue  # contradictory hypotheses or a false statement: that is the finding
                if finding in derived and derived[finding].theorem_name not in winners and finding not in untied:
                    sub = derived[finding]
                    statement = sub.frozen[len(split.preamble):]
                    if finding in stated:
                        if sub.theorem_name not in probe.loaded:  # e.g. its shape check failed: no flag possible
                            continue
                        # its definitions exist already (``Abort`` ends only the proof)
                        statement = statement[statement.index(f"Theorem {sub.theorem_name}"):]
                    if finding in TIES and finding not in stated:
                        # the frozen tie must accept a proof, or the certificate's template does not compile
                        check = tie_check(sub.template, sub.theorem_name,
                                          tuple(task.theorem_name + tie for tie in TIES[finding]))
                        if check is not None:
                            yield check
                        if check is None or check.theorem not in winners:
                            untied.add(finding)
                            continue
                    stated.add(finding)
                    yield Goal(statement, sub.theorem_name, scripts)

        probe = probe_of(workspace)
        if AUDIT_FALSE in derived:  # the values a refutation's certificate instantiated, for its one-line description
            probe.show_proof = {derived[AUDIT_FALSE].theorem_name}
        _, attempts, log = probe.run_goals(preamble, goals(), workspace, deadline=deadline, winners=winners,
                                           max_attempts=max_attempts, cpu_budget=cpu_seconds,
                                           on_attempt=on_attempt)
        log += "\naudit strategies: " + strategy_spend(log)
        described: dict[str, str] = {}
        for finding, sub in derived.items():
            if sub.theorem_name in winners:
                described[finding] = describe(finding, getattr(probe, "proofs", {}).get(sub.theorem_name, ""), split,
                                              STRATEGIES.get(winners[sub.theorem_name], "?"))
                log += f"\n{COUNTEREXAMPLE}{finding}: " + described[finding]
        log += (f"\naudit spent: CPU {probe.cpu_used:.2f} s"
                + (f" of {cpu_seconds:.0f} s" if cpu_seconds is not None else "") + f", wall {probe.wall_used:.2f} s")
        certificates = {}
        for finding, sub in derived.items():
            script = winners.get(sub.theorem_name)
            if script:
                certificates[finding] = (certificate_header(task, finding, sub, described.get(finding, "")) + prelude
                                         + sub.frozen + f"{script}.\nQed.\n" + _trailer(sub.template))
        return Search(certificates, attempts, log)


_TOOK = re.compile(r"\(([0-9.]+) s, CPU ([0-9.]+) s\)$")


def strategy_spend(log: str) -> str:
    """Which strategies ran and the CPU seconds each spent, from the search's log (each attempt's line starts with
    its script and ends with its CPU time): ``closers 0.12 s (2 scripts), zero-witness 0.03 s (1, closed)…`` in
    the order they first ran."""
    spent: dict[str, list[float]] = {}
    closed: set[str] = set()
    by_length = sorted(STRATEGIES, key=len, reverse=True)
    for line in log.splitlines():
        took = _TOOK.search(line)
        if took is None:
            continue
        name = next((STRATEGIES[s] for s in by_length if line.startswith(s + ": ")), None)
        if name is None:
            continue
        entry = spent.setdefault(name, [0.0, 0.0])
        entry[0] += float(took.group(2))
        entry[1] += 1
        if ": closed the goal" in line:
            closed.add(name)
    return ", ".join(f"{name} {cpu:.2f} s ({int(count)}{', closed' if name in closed else ''})"
                     for name, (cpu, count) in spent.items()) or "none"


#: A local proof the search named (``fresh``): an argument of the refuted statement that is not a value
_PROOF_NAME = re.compile(r"^(H|p|b|forall_audit_\w+)\d*$")


def _argument(term: str, at: int) -> str:
    """The one argument term that starts at ``at`` (a parenthesised term, or an atom up to the next blank)."""
    while at < len(term) and term[at].isspace():
        at += 1
    if term[at:at + 1] != "(":
        end = at
        while end < len(term) and not term[end].isspace() and term[end] not in "()":
            end += 1
        return term[at:end]
    depth = 0
    for end in range(at, len(term)):
        depth += {"(": 1, ")": -1}.get(term[end], 0)
        if depth == 0:
            return term[at + 1:end]
    return term[at + 1:]


def describe(finding: str, proof: str, split: Split, strategy: str) -> str:
    """One line for a human: for a refutation, the values its certificate gave the statement's variables (read from
    the proof term's instances ``forall_audit_H v``, named after the statement's binders in order); for the other
    findings, the strategy whose certificate it is. A description only: the certificate is what the verifier checks."""
    if finding != AUDIT_FALSE or not proof:
        return f"by {strategy}"
    values = [" ".join(_argument(proof, m.end()).split())
              for m in re.finditer(r":=\s*forall_audit_H\d*\s+(?=\S)", proof)]
    names = [a for g in binder_groups(split.binders) or [] for a in g.args]
    peeled, _ = peel(split.conclusion)
    names += [a for b in peeled for g in binder_groups(b) or [] for a in g.args]
    shown = [f"{name} := {value}" for name, value in zip(names, values) if not _PROOF_NAME.match(value)]
    shown += [value for value in values[len(names):] if not _PROOF_NAME.match(value)]
    return (", ".join(shown) or "no variable instantiated") + f" (by {strategy})"
