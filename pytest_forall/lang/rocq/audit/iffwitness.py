"""Issue 34, session 16 (read from PutnamBench's templates, not from a mutant): **an equivalence refuted where its
predicate's own definition is vacuous**.

A statement that defines a predicate by a premise (``forall x, P x <-> BODY``, ``P`` a variable of the statement) and
concludes ``P x <-> answer n`` (or ``exists x, P x <-> answer n``) is refuted at the smallest natural parameter
where ``BODY``'s universally quantified conditions are vacuous: ``putnam_2022_b4`` at ``n := 0`` (``forall i, i < 0 ->
…`` holds, and ``0`` is not in the answer). The predicate is not guessed: it is an evar that the defining premise,
proved by ``iff_refl``, sets to its own formula (``P := fun x => BODY``); the naturals are ``0`` then ``1``
(backtracking); one side of the equivalence is proved by its conditions' vacuity (``lia`` on ``i < 0``), and the
other side, now closed, is refuted by computation. Fails at once on a statement with a variable of any other type
(a number, a function into a number; the grids have those) or without a predicate variable. A refutation script like the others: what it closes is
flagged only once the verifier accepts the certificate (a proof with an evar left does not compile)."""

from __future__ import annotations

from pytest_forall.lang.rocq.audit.tactics import BREAK, NUM, SSR, closer

H = "forall_audit_H"
#: The natural values tried, smallest first: a ``forall i, i < n -> …`` is vacuous at ``0``, ``forall i, 1 <= i < n``
#: (or a cyclic index ``i.+1 %% n``) at ``1``
NATURALS = ("0%nat", "1%nat")
#: A type whose values are propositions (``R -> R -> R -> Prop``): the predicates a premise may define
PREDICATE = ("let rec forall_predicate T := lazymatch T with _ -> ?U => forall_predicate U | Prop => idtac end in")
#: A premise: a definition of a predicate evar (``iff_refl`` or ``eq_refl`` unifies it with the premise's own formula,
#: a higher-order pattern), else a side condition decided at the chosen naturals
PREMISE = ("intros; first [ exact (Coq.Init.Logic.iff_refl _) | exact Coq.Init.Logic.eq_refl "
           "| solve [ easy | lia ] ]")
#: One side proved by its conditions' vacuity: every universally quantified condition has a premise ``i < 0`` (or
#: ``i < 1 /\\ i <> 0``) that ``lia`` refutes
VACUOUS = "solve [ cbv beta; repeat split; intros; solve [ exfalso; lia | easy ] ]"
#: mathcomp's classical sets: a membership ``n \\in [set n | …]`` read as its predicate
MEMBERSHIP = ("repeat match goal with h : is_true (_ \\in _) |- _ => "
              "rewrite mathcomp.classical.classical_sets.in_setE in h; hnf in h end")


def _side(proved: str, used: str, dropped: str, refute: str) -> str:
    """``proved`` (a side of the equivalence) by :data:`VACUOUS`, the implication ``used`` applied to it and the other
    side it gives refuted."""
    return (f"let a := fresh in assert (a : {proved}) by {VACUOUS}; specialize ({used} a); clear {dropped}; "
            f"{refute}")


def iff_witness(features: tuple[str, ...]) -> str:
    """The refuted statement's naturals at :data:`NATURALS` (backtracking), its predicates as evars (:data:`PREDICATE`)
    defined by their premises (:data:`PREMISE`), its existentials destructed, then one side of the equivalence proved
    by vacuity and the other refuted (:func:`_side`); every evar fixed before (else fail)."""
    read = f"{MEMBERSHIP}; " if SSR in features and NUM in features else ""
    refute = f"solve [ cbv beta in *; {read}{BREAK}; first [ lia | easy | {closer(features)} ] ]"
    left, right = "forall_audit_L", "forall_audit_R"
    naturals = " | ".join(f"(specialize ({H} {n}); go ())" for n in NATURALS)
    # a predicate variable first (else fail at once: the script is early, before every item's former strategies)
    return (f"intro {H}; try cbv zeta in {H}; {PREDICATE} "
            f"match type of {H} with context [forall _ : ?T, _] => forall_predicate T end; "
            f"let rec go u := lazymatch type of {H} with "
            f"| forall _ : nat, _ => first [ {naturals} ] "
            f"| forall _ : ?T, _ => lazymatch type of T with "
            f"| Prop => let p := fresh in assert (p : T) by ({PREMISE}); specialize ({H} p); go () "
            f"| _ => forall_predicate T; let x := fresh in evar (x : T); specialize ({H} x); subst x; go () end "
            f"| _ => repeat lazymatch type of {H} with ex _ => destruct {H} as [? {H}] end; "
            f"lazymatch type of {H} with ?A <-> ?B => assert_fails (has_evar A); assert_fails (has_evar B); "
            f"destruct {H} as [{left} {right}]; "
            f"first [ {_side('A', left, right, refute)} | {_side('B', right, left, refute)} ] end end "
            "in go ()")


def iff_witness_scripts(scopes: tuple[str, ...], features: tuple[str, ...],
                        seconds: float) -> list[tuple[str, str, float]]:
    """This module's refutation script (``iff-witness``)."""
    return [("iff-witness", iff_witness(features), seconds)]


#: The strategies of :func:`iff_witness_scripts`, stated early (strategies.py's ``EARLY``): they fail at once on a
#: statement with a variable neither natural nor a predicate, and on ``putnam_2022_b4`` the former scripts spent the
#: item's 20 s of CPU first (``rational-saturation`` 6 s, ``specialise-3`` 4 s), so it never ran
IFF_WITNESS_STRATEGIES = frozenset({"iff-witness"})
