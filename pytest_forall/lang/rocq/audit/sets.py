"""Issue 34, session 15 round 3: set witnesses over mathcomp's classical sets. A statement that quantifies a variable of
type ``set T`` is refuted at ``set0``, ``setT`` or a singleton of the grid's values, the sets built from it that the
instance makes empty shown so (``seteqP``, membership read by ``in_setE``) and rewritten to ``set0``, then
``supremum``/``infimum``/``sup``/``inf`` of ``set0`` and of a singleton evaluated by the library's own lemmas
(``supremum0``, ``supremum1``, ``sup0``, ``inf0``; ``infimum``'s default by its definition): the held-out seed-61 miss,
``drop_hypothesis`` of ``putnam_1964_a1``, is false at ``A := set0`` because both defaults are ``1``. A refutation
script like the others: what it closes is flagged only once the verifier accepts the certificate."""

from __future__ import annotations

from pytest_forall.lang.rocq.audit.real import MC_COMPARE, MC_NUMBERS, MEMBERSHIP, H, instantiate, mc_prove
from pytest_forall.lang.rocq.audit.tactics import BREAK, NUM, NUMERALS, RAT, SSR, rational

CS = "mathcomp.classical.classical_sets"
#: Set candidates, typed where used (a singleton of a pair only where the set is one of pairs): the empty and the full
#: set, then singletons of the grid's values
SETS = (f"{CS}.set0", f"{CS}.setT", "[set 0%R]", "[set 1%R]", "[set (0%R, 0%R)]", "[set 0%N]", "[set 1%N]")
#: A variable of type ``set _`` in the refuted statement (checked before anything is instantiated: fails at once)
HAS_SET = f"match type of {H} with context [forall _ : {CS}.set _, _] => idtac end"
#: The pieces of a membership hypothesis read (``a \\in set0`` is ``False``, ``a \\in [set p]`` is ``a = p``), the
#: equations substituted, and what is left refuted (``p != p``)
READ = (f"{BREAK}; repeat match goal with h : is_true (_ \\in _) |- _ => rewrite {CS}.in_setE in h; hnf in h end; "
        f"{BREAK}; subst; first [ match goal with h : is_true (?a != ?a) |- _ => by rewrite eqxx in h end | easy ]")
#: Every set term of the context (not ``set0`` already) that the instance makes empty, rewritten to ``set0``
EMPTIED = ("repeat match goal with h : context [?S] |- _ => "
           f"lazymatch type of S with {CS}.set _ => idtac end; lazymatch S with {CS}.set0 => fail | _ => idtac end; "
           f"let e := fresh in assert (e : S = {CS}.set0) by "
           f"(apply/{CS}.seteqP; split=> ?; [ let m := fresh in intro m; hnf in m; {READ} | easy ]); "
           "rewrite e in h; clear e end")
#: The extrema of ``set0`` and of a singleton evaluated (everything reverted so that the rewrites reach each
#: hypothesis): mathcomp-classical's ``supremum0``/``supremum1``, ``infimum``'s ``if A == set0`` default by its
#: definition, mathcomp-analysis's ``sup0``/``sup1``/``inf0``/``inf1`` over a realType
EXTREMA = ("repeat match goal with h : _ |- _ => revert h end; "
           f"rewrite ?{CS}.supremum0 ?{CS}.supremum1 ?mathcomp.analysis.reals.sup0 ?mathcomp.analysis.reals.sup1 "
           "?mathcomp.analysis.reals.inf0 ?mathcomp.analysis.reals.inf1; "
           f"try (rewrite /{CS}.infimum ?eqxx /=); intros")
#: A bound on a square root of a constant (``sqrt 3 <= 1``) squared (``ler_sqr`` on non-negatives, ``sqr_sqrtr``)
SQUARED = ("match goal with h : is_true (Order.le (Num.sqrt _) _) |- _ => move: h; rewrite ?GRing.divr1 "
           "-Num.Theory.ler_sqr ?Num.Theory.sqr_sqrtr ?Num.Theory.nnegrE ?Num.Theory.sqrtr_ge0 // end")


def set_witness(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """The refuted statement's set variables at :data:`SETS`, its numbers at ``realtype-witness``'s values (real.py's
    ``instantiate``: backtracking, each candidate typed where used, so a set never instantiates ``R -> R``), the
    premises proved as ``realtype-witness`` proves them, then the instance broken up, its empty sets rewritten to
    ``set0`` (:data:`EMPTIED`), their extrema evaluated (:data:`EXTREMA`) and the contradiction found by ``NUMERALS``,
    the rational decider (on a squared square root too: :data:`SQUARED`), or a membership read (:data:`MEMBERSHIP`).
    Fails at once on a statement without a variable of type ``set _``."""
    decide = rational(features) if RAT in features else "fail"
    leaf = (f"solve [ {BREAK}; cbv beta in *; {EMPTIED}; {EXTREMA}; {BREAK}; "
            f"first [ easy | lia | ({NUMERALS}) | {MC_COMPARE.format(rational=decide)} | ({SQUARED}; {decide}) "
            f"| ({MEMBERSHIP}; {BREAK}; first [ easy | ({NUMERALS}) ]) ] ]")
    # a set is a function type once unfolded (``set T`` is ``T -> Prop``): the sets are ``instantiate``'s functions
    return instantiate(list(SETS), list(MC_NUMBERS), mc_prove(features), leaf, HAS_SET)


def set_scripts(scopes: tuple[str, ...], features: tuple[str, ...], seconds: float) -> list[tuple[str, str, float]]:
    """This module's refutation script where the file has mathcomp's ordered rings (``set-witness``)."""
    return [("set-witness", set_witness(scopes, features), seconds)] if SSR in features and NUM in features else []


#: The strategies of :func:`set_scripts`
SET_STRATEGIES = frozenset({"set-witness"})
