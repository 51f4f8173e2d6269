"""Issue 34, session 16 (read from PutnamBench's templates, not from a mutant): **the answer's own values checked**.

A statement of the shape ``forall x…, P x… <-> answer x…`` whose answer lists its solutions
(``(a = 673 /\\ b = 1358114) \\/ (a = 1009 /\\ b = 2018) \\/ …``) is refuted at a listed value where the other side
fails *as formalised*: ``putnam_2018_a1`` writes ``1/a + 1/b = 3/2018`` with ``=`` on ``Q``, Leibniz equality of
unreduced fractions, so ``1/1009 + 1/2018`` (``3027 # 2036162``) is not ``3 # 2018`` and no listed pair meets the
left side. The values come from the answer itself: the variables become evars, one disjunct of the answer is proved by
``reflexivity`` (which fixes them), and the other side, now closed, is computed and refuted by the closers. No grid
reaches such values (``1009``, ``2018``). A refutation script like the others: what it closes is flagged only once the
verifier accepts the certificate (a proof with an evar left does not compile)."""

from __future__ import annotations

from pytest_forall.lang.rocq.audit.tactics import BREAK

H = "forall_audit_H"
#: A listed value with a natural over 5000 (Coq writes it ``Nat.of_num_uint …``, unary once computed) skipped: on
#: ``putnam_2018_a1``'s first pair, ``(673, 1358114)``, the computation alone took 8 s of CPU of the script's 2
SMALL = "lazymatch type of {h} with context [Coq.Init.Nat.of_num_uint _] => fail | _ => idtac end"
#: An equation of the instance computed first, alone: its values are the answer's, often large (``1358114``), where
#: ``simpl`` on unary naturals spends the script's budget and ``vm_compute in *`` overflowed the stack on
#: ``putnam_2018_a1``'s hypotheses ``gt 2018 0``. The closers' ``lia`` and ``simpl`` are not tried after it: on that
#: problem's first listed pair, ``(673, 1358114)``, they ran for minutes on the unary natural before the next pair, and
#: so did a bare ``discriminate`` (it reduces every hypothesis to head normal form lazily, not by the VM)
COMPUTED = "match goal with h : _ = _ |- _ => vm_compute in h; first [ discriminate h | easy ] end"
#: How many disjuncts of an answer are tried (``do i right; try left``): PutnamBench's longest listed answers have 8
DISJUNCTS = 8
#: The negated statement's value variables (not its premises) made evars, in order, until its body
EVARS = (f"repeat lazymatch type of {H} with forall _ : ?T, _ => lazymatch type of T with Prop => fail "
         f"| _ => let x := fresh \"forall_audit_x\" in evar (x : T); specialize ({H} x); subst x end end")


def _pick(index: int) -> str:
    """The ``index``-th disjunct of the goal (an answer unfolded by ``hnf``) proved by reflexivity: its equations fix
    the evars. The last one of a disjunction is reached by ``right`` alone (``try left`` then does nothing)."""
    rights = f"do {index} right; " if index else ""
    return f"hnf; {rights}try left; repeat split; reflexivity"


def _check(proved: str, used: str) -> str:
    """One listed value: the premise of ``used`` (the answer side, held by ``proved`` after the iff is destructed)
    proved at a disjunct, every evar then fixed (else fail: a certificate must not keep one), the conclusion it gives
    (the other side at that value) broken up and refuted by computation (:data:`COMPUTED`) or ``lra``."""
    alternatives = " | ".join(
        f"(let s := fresh in assert (s : A) by ({_pick(i)}); specialize ({used} s); "
        f"lazymatch type of {used} with ?C => assert_fails (has_evar C) end; "
        f"{SMALL.format(h=used)}; "
        f"clear {proved}; cbv beta in {used}; solve [ {BREAK}; first [ ({COMPUTED}) | lra ] ])"
        for i in range(DISJUNCTS))
    return f"lazymatch type of {used} with ?A -> _ => first [ {alternatives} ] end"


def answer_listed() -> str:
    """The refuted statement's variables as evars (:data:`EVARS`), its body an equivalence (else it fails at once), then
    each listed value of the right side (the answer, as PutnamBench writes it) and then of the left side checked
    against the other side (:func:`_check`)."""
    left, right = "forall_audit_L", "forall_audit_R"
    return (f"intro {H}; try cbv zeta in {H}; {EVARS}; lazymatch type of {H} with _ <-> _ => idtac end; "
            f"destruct {H} as [{left} {right}]; "
            f"first [ {_check(left, right)} | {_check(right, left)} ]")


def answer_scripts(scopes: tuple[str, ...], features: tuple[str, ...], seconds: float) -> list[tuple[str, str, float]]:
    """This module's refutation script (``answer-listed``)."""
    return [("answer-listed", answer_listed(), seconds)]


#: The strategies of :func:`answer_scripts`
ANSWER_STRATEGIES = frozenset({"answer-listed"})
