"""Issue 34, session 15: counterexamples found by evaluation. The refuted statement's number variables are given small
values in order of cost (their sizes summed: ``0``, then every one-variable step, then two, …, so several variables
with different values come early, not only after thousands of instances), each premise is decided as soon as its
variables have values (an undecided premise prunes that branch), and the instance is refuted once what it names is
*evaluated*: closed integer subterms computed (``Z.div``, ``Z.modulo``, ``Nat.pow``, ``fact``, ``Z.to_nat`` …, by
``vm_compute`` and ``change``: the kernel re-checks the conversion), Coquelicot's ``floor`` of a closed real found
between two integers, finite sums (``sum_n``, ``sum_n_m``, ``sum_f_R0``) and binomial coefficients expanded at literal
bounds, ``INR`` of a numeral made a real literal, and a natural number left unknown by an existential (``exists m, 2 =
INR m * 4``) split into its first cases. What closes the instance is a tactic (``lia``, ``lra``, ``nra``), so the
certificate is a proof the verifier re-checks like any other: the evaluation finds the counterexample and is part of
its proof, never a verdict of its own."""

from __future__ import annotations

from pytest_forall.lang.rocq.audit.generated import INTERVAL_REFUTE, UNFOLD_VALUE
from pytest_forall.lang.rocq.audit.tactics import BINOMIAL, BREAK, INTERVAL, REALS, SUMS, peano

DT, BN = "Coq.Init.Datatypes", "Coq.Numbers.BinNums"
#: ``forall_num t``: ``t`` is a numeral of ``nat``, ``Z`` or ``positive``, or a boolean (names qualified: a template may
#: rebind ``S`` or ``O``)
NUMERAL = (f"let rec forall_num t := lazymatch t with {DT}.O => idtac | {DT}.S ?n => forall_num n "
           f"| {BN}.Z0 => idtac | {BN}.Zpos ?p => forall_num p | {BN}.Zneg ?p => forall_num p | {BN}.xH => idtac "
           f"| {BN}.xI ?p => forall_num p | {BN}.xO ?p => forall_num p | {DT}.true => idtac | {DT}.false => idtac end in ")
#: The largest argument of a computation whose result is a natural number (``nat`` is unary: ``Nat.pow 10 10`` or
#: ``fact 12`` would fill the memory before any budget ends it): a power's value, a one-argument function's argument
#: (``fact``), any other argument; and the largest exponent of a ``Z.pow`` computed.
POW_LIMIT, UNARY_LIMIT, ARGUMENT_LIMIT, EXPONENT_LIMIT = 100000, 9, 1000, 4096
ZB = "Coq.ZArith.BinInt.Z"


def _z(n: int) -> str:
    """The positive integer ``n`` as a term of ``Z`` built from its constructors (a file without ``ZArith`` has no ``%Z``
    key, and a bare numeral is read in the file's open scope)."""
    def positive(k: int) -> str:
        return f"{BN}.xH" if k == 1 else f"({BN}.{'xI' if k % 2 else 'xO'} {positive(k // 2)})"

    return f"({BN}.Zpos {positive(n)})"


def _below(limit: int) -> str:
    """``forall_small{limit} a``: the numeral ``a`` (``nat`` or ``Z``; a boolean passes) is below ``limit``."""
    return (f"let forall_small{limit} a := let A := type of a in lazymatch A with "
            f"| {DT}.nat => let ok := eval vm_compute in (Coq.Init.Nat.ltb a {limit}%nat) in lazymatch ok with {DT}.true => idtac end "
            f"| {BN}.Z => let ok := eval vm_compute in ({ZB}.ltb a {_z(limit)}) in lazymatch ok with {DT}.true => idtac end "
            f"| {DT}.bool => idtac end in ")


#: ``forall_evaluable t``: ``t`` (of type ``nat``, ``Z`` or ``bool``) is an application, not a numeral, whose last
#: arguments are numerals (innermost first: ``repeat`` reaches the enclosing term next), and a natural result bounded
#: (:data:`POW_LIMIT` …); the caller computes it (``vm_compute``) and keeps it only if the value is a numeral
EVALUABLE = (
    _below(UNARY_LIMIT) + _below(ARGUMENT_LIMIT) + _below(EXPONENT_LIMIT)
    + "let forall_evaluable t := let T := type of t in "
    f"lazymatch T with {DT}.nat => idtac | {BN}.Z => idtac | {DT}.bool => idtac end; "
    "tryif forall_num t then fail else idtac; "
    "lazymatch t with ?f ?a ?b => forall_num a; forall_num b | ?f ?a => forall_num a end; "
    "lazymatch t with "
    f"| Coq.Init.Nat.pow ?a ?b => let ok := eval vm_compute in ({ZB}.leb ({ZB}.pow "
    f"({ZB}.of_nat a) ({ZB}.of_nat b)) {_z(POW_LIMIT)}) in lazymatch ok with {DT}.true => idtac end "
    f"| {ZB}.pow _ ?b => forall_small{EXPONENT_LIMIT} b "
    f"| _ => lazymatch T with {DT}.nat => lazymatch t with ?f ?a ?b => forall_small{ARGUMENT_LIMIT} a; "
    f"forall_small{ARGUMENT_LIMIT} b | ?f ?a => forall_small{UNARY_LIMIT} a end | _ => idtac end end in ")
#: ``forall_compute ()``: the closed integer subterms of the goal and the context computed (:data:`EVALUABLE`) and
#: ``change``d into their values
COMPUTE = ("let forall_compute u := repeat match goal with "
           "| H : context [?t] |- _ => forall_evaluable t; let v := eval vm_compute in t in forall_num v; "
           "change t with v in H "
           "| |- context [?t] => forall_evaluable t; let v := eval vm_compute in t in forall_num v; change t with v end in ")
#: A natural literal under ``INR`` made a real literal (``INR 2`` is ``IZR (Z.of_nat 2)``, computed to ``2``)
INR_LITERALS = ("repeat match goal with "
                "| H : context [Coq.Reals.Raxioms.INR ?n] |- _ => forall_num n; "
                "rewrite (Coq.Reals.RIneq.INR_IZR_INZ n) in H "
                "| |- context [Coq.Reals.Raxioms.INR ?n] => forall_num n; rewrite (Coq.Reals.RIneq.INR_IZR_INZ n) end")
#: The integers Coquelicot's ``floor`` of a closed real is tried at (``floor c = N`` once ``N <= c < N + 1`` is proved)
FLOOR_VALUES = ("0", "1", "2", "3", "4", "5", "(-1)", "(-2)", "6", "7", "8", "9", "10", "(-3)")
RI = "Coq.Reals.RIneq"
#: Coquelicot's ``floor c`` of a closed real: ``floor_ex c`` destructed (its integer ``z`` with ``z <= c < z + 1``), ``z``
#: found equal to a candidate ``N`` whose bounds ``lra`` proves (the two half-open intervals meet only if ``z = N``:
#: ``lt_IZR`` on both strict sides, then ``lia``), and substituted
FLOOR = ("let forall_floor_at z hz c N := assert (z = N) by (destruct hz; "
         "assert (Coq.Reals.Rdefinitions.IZR N <= c < Coq.Reals.Rdefinitions.IZR N + 1)%R by (split; lra); "
         f"assert (z < N + 1)%Z by (apply {RI}.lt_IZR; rewrite {RI}.plus_IZR; lra); "
         f"assert (N < z + 1)%Z by (apply {RI}.lt_IZR; rewrite {RI}.plus_IZR; lra); lia); subst z in "
         "let forall_floor u := repeat match goal with H : context [Coquelicot.Rcomplements.floor ?c] |- _ => revert H; "
         "unfold Coquelicot.Rcomplements.floor; let z := fresh \"forall_z\" in let hz := fresh \"forall_hz\" in "
         "destruct (Coquelicot.Rcomplements.floor_ex c) as [z hz]; cbn [Coq.Init.Specif.proj1_sig]; intro H; "
         "first [ " + " | ".join(f"forall_floor_at z hz c {n}%Z" for n in FLOOR_VALUES) + " ] end in ")
#: Coquelicot's finite sums at literal bounds as the standard library's (``sum_n_m`` as ``sum_f``, or ``0`` for an empty
#: range; ``sum_n`` as ``sum_f_R0``), which ``simpl`` expands
SUMS_EXPANDED = ("repeat match goal with H : context [@Coquelicot.Hierarchy.sum_n_m _ ?a ?n ?m] |- _ => "
                 "first [ rewrite (Coquelicot.Hierarchy.sum_n_m_Reals a n m) in H by lia "
                 "| rewrite (Coquelicot.Hierarchy.sum_n_m_zero a n m) in H by lia ] end; "
                 "rewrite ?Coquelicot.Hierarchy.sum_n_Reals in *; unfold Coq.Reals.Rfunctions.sum_f in *")
#: A natural number the instance leaves unknown (an existential's witness under ``INR``) split into ``0``, ``1``, ``2``
#: and ``m + 3`` with ``INR m >= 0``: a real equation that only a non-integer solves (``2 = INR m * 4``) is refuted
INTEGRAL = ("match goal with m : Coq.Init.Datatypes.nat, H : context [Coq.Reals.Raxioms.INR ?x] |- _ => "
            "is_var x; destruct x as [|[|[|x]]]; "
            f"rewrite ?{RI}.S_INR in *; simpl in *; try pose proof ({RI}.pos_INR x); solve [ lra | nra ] end")


#: Issue 34, session 15 round 3: Coq's ``ln`` is ``0`` on the non-positive reals (its definition's ``Rlt_dec 0 x``
#: branch; the standard library states no lemma for it), so ``Rpower a y = exp (y * ln a)`` is ``1`` for ``a <= 0``
#: (``Rpower (-1) y = 1``): each occurrence at an argument ``lra`` shows non-positive rewritten by an equation proved
#: from the definitions (``exp_0``), which the kernel re-checks with the certificate
RP = "Coq.Reals.Rpower"
NONPOSITIVE = (
    "repeat match goal with "
    f"| H : context [{RP}.Rpower ?a ?y] |- _ => let e := fresh in assert (e : {RP}.Rpower a y = 1%R) by "
    f"(unfold {RP}.Rpower, {RP}.ln; destruct ({RI}.Rlt_dec 0 a); [exfalso; lra "
    f"| rewrite {RI}.Rmult_0_r; exact Coq.Reals.Rtrigo_def.exp_0]); rewrite e in H; clear e "
    f"| H : context [{RP}.ln ?a] |- _ => let e := fresh in assert (e : {RP}.ln a = 0%R) by "
    f"(unfold {RP}.ln; destruct ({RI}.Rlt_dec 0 a); [exfalso; lra | reflexivity]); rewrite e in H; clear e end")
#: A premise universally quantified over naturals (an answer set's ``forall m2 n2, … -> m2 <> n2`` at an instance):
#: introduced and broken up, a disequation's two sides identified, the one natural left split at ``0`` (computed) and
#: ``S k``, where a remainder by a power ``a mod b ^ S k`` is ``a`` (``Nat.mod_small``, ``Nat.pow_gt_1``: ``a`` is
#: ``0`` or ``1``)
NAT_CASES = (
    "hnf; intros; " + BREAK + "; try (let E := fresh in intro E; subst); "
    f"match goal with k : {DT}.nat |- _ => destruct k as [|k]; "
    "[ vm_compute in *; first [ easy | lia ] "
    "| repeat match goal with H : context [Coq.Init.Nat.modulo ?a (Coq.Init.Nat.pow ?b (S ?j))] |- _ => "
    "rewrite (Coq.Arith.PeanoNat.Nat.mod_small a (Coq.Init.Nat.pow b (S j))) in H "
    "by (apply Coq.Arith.PeanoNat.Nat.pow_gt_1; lia) end; first [ easy | lia ] ] end")

def definitions(features: tuple[str, ...], halves: bool = False) -> str:
    """The Ltac definitions the evaluation uses, stated once at the start of a script (``forall_evaluate ()``: the
    instance evaluated; ``forall_decide ()``: a premise decided; ``forall_leaf ()``: an instance refuted). ``halves``
    (:func:`halves_grid`): ``Rpower``/``ln`` at non-positive arguments rewritten (:data:`NONPOSITIVE`), a value
    definition unfolded, a premise by Interval's bounds or over naturals by cases (:data:`NAT_CASES`), an instance
    refuted by Interval's bounds too."""
    steps = ["forall_compute ()"]
    if REALS in features:  # before a floor's bounds: ``lra`` reads ``2``, not ``INR 2``
        steps += [INR_LITERALS, "forall_compute ()"]
    if SUMS in features:
        steps += ["forall_floor ()", "forall_compute ()", SUMS_EXPANDED]
    if BINOMIAL in features:
        steps += ["unfold Coq.Reals.Binomial.C in *"]
    steps += ["simpl in *", "forall_compute ()"]
    if REALS in features:
        steps += [INR_LITERALS, "forall_compute ()"]
    if halves and REALS in features:
        steps += [NONPOSITIVE]
    evaluate = "; ".join(f"try ({step})" for step in steps)
    integral = f" | ({INTEGRAL})" if REALS in features else ""
    arithmetic = "easy | lia | lra | reflexivity | (repeat split; first [ easy | lia | lra ])"
    closers = f"easy | lia | lra | nra{integral}"
    premise, evaluated, clear = arithmetic, arithmetic, ""
    if halves:  # no ``nra``: on the square roots of an instance that holds it ran for tenths of a second each
        bounds = (f" | ({INTERVAL_REFUTE}) | ({UNFOLD_VALUE.format(leaf=f'first [ lra | ({INTERVAL_REFUTE}) ]')})"
                  if INTERVAL in features else "")
        closers = f"easy | lia | lra{bounds}{integral}"
        # each piece of a premise by arithmetic (``easy`` on a whole false premise over the reals was a fifth of the
        # search), by Interval's bounds (``1 < sqrt 2``), or over naturals by cases
        interval = " | interval" if INTERVAL in features else ""
        premise = f"(repeat split; first [ lra | lia{interval} | easy | reflexivity ]) | ({NAT_CASES})"
        evaluated = "repeat split; first [ lra | lia | easy | reflexivity ]"
        # the refuted statement left out of a premise's proof: the evaluation walked its every subterm (0.2 s a premise)
        clear = "try clear forall_audit_H; "
    return (NUMERAL + EVALUABLE + COMPUTE + (FLOOR if SUMS in features else "")
            + f"let forall_evaluate u := {evaluate} in "
            # a premise: by arithmetic, or once evaluated (cheap: no ``nia``, no automation; undecided prunes)
            + f"let forall_decide u := {clear}solve [ {premise} | (forall_evaluate (); solve [ {evaluated} "
            "| (vm_compute; first [ easy | lia ]) ]) ] in "
            # an instance: broken up, evaluated, then arithmetic, an unknown natural's cases, or the grid's closers
            + f"let forall_leaf u := solve [ {BREAK}; forall_evaluate (); {BREAK}; first [ {closers} ] ] in ")


#: Candidate values per numeral scope with their cost (an integer's size, a fraction's numerator and denominator)
COSTED = {"nat": (("0", 0), ("1", 1), ("2", 2), ("3", 3), ("4", 4), ("5", 5), ("6", 6)),
          "Z": (("0", 0), ("1", 1), ("(-1)", 1), ("2", 2), ("(-2)", 2), ("3", 3), ("(-3)", 3), ("4", 4), ("5", 5)),
          "R": (("0", 0), ("1", 1), ("(-1)", 1), ("2", 2), ("(-2)", 2), ("(1/2)", 3), ("3", 3), ("(-1/2)", 4),
                ("4", 4), ("(1/3)", 4)),
          "Q": (("0", 0), ("1", 1), ("(-1)", 1), ("2", 2), ("(-2)", 2), ("(1/2)", 3), ("3", 3), ("4", 4))}
#: Constant functions and their costs (a function variable beside the numbers)
COSTED_FUNCTIONS = (("0", 0), ("1", 1))
#: The largest total cost searched (levels ``0`` … ``LEVELS``)
LEVELS = 7


def _pattern(cost: int) -> str:
    """The Ltac pattern of a remaining cost of at least ``cost``, binding what is left as ``?r``."""
    return "S (" * cost + "?r" + ")" * cost


def cost_grid(scopes: tuple[str, ...], features: tuple[str, ...], gate: str = "", halves: bool = False) -> str:
    """The refuted statement's variables at small values by total cost (:data:`COSTED`), level by level: at level ``b``
    the values' costs sum to ``b`` exactly (so no instance is tried twice), each premise decided when reached
    (``forall_decide``), each full instance refuted by ``forall_leaf`` (:func:`definitions`). ``gate``: a ``lazymatch`` the statement must
    pass first (the early variant runs only on a statement that names something to evaluate). ``halves``:
    :func:`halves_grid`'s walk and definitions."""
    h = "forall_audit_H"
    numbers = [(f"{v}%{s}", c) for s in scopes for v, c in COSTED.get(s, ())]
    numbers += [(f"(fun _ => {v}%{s})", c) for s in scopes for v, c in COSTED_FUNCTIONS]
    numbers.sort(key=lambda vc: vc[1])
    tries = " | ".join(f"lazymatch n with {_pattern(c)} => specialize ({h} {v}); go r end" for v, c in numbers)
    levels = " | ".join(f"go ({peano(b)})" for b in range(LEVELS + 1))
    # a conjunction or an equivalence reached on the way: either half refuted refutes it (``~ A -> ~ (A /\ B)``)
    # (and a premise is decided only where a variable, or a half, is still to come once the costs are not all spent:
    # else each level decided again every premise of the levels below it, 400 premises for two variables)
    more = ("let rec forall_more t := let P := type of t in lazymatch P with forall _ : ?T, _ => "
            "lazymatch type of T with Prop => let t' := open_constr:(t _) in forall_more t' | _ => idtac end "
            "| _ /\\ _ => idtac | _ <-> _ => idtac end in ") if halves else ""
    prune = f"lazymatch n with O => idtac | _ => assert_succeeds (forall_more {h}) end; " if halves else ""
    leaf = "lazymatch n with O => forall_leaf () end"
    # ... and one that unfolds to them (an answer set's membership), unfolded first
    last = (f"?P => first [ let P' := eval hnf in P in lazymatch P' with _ /\\ _ => idtac | _ <-> _ => idtac end; "
            f"change P' in {h}; go n | {leaf} ]") if halves else f"_ => {leaf}"
    split = (f"| _ /\\ _ => first [ destruct {h} as [{h} _]; go n | destruct {h} as [_ {h}]; go n ] "
             f"| _ <-> _ => first [ destruct {h} as [{h} _]; go n | destruct {h} as [_ {h}]; go n ] ") if halves else ""
    return (f"intro {h}; try cbv zeta in {h}; {gate}{definitions(features, halves)}"
            f"{more}let rec go n := lazymatch type of {h} with forall _ : ?T, _ => lazymatch type of T with "
            f"Prop => {prune}let p := fresh in assert (p : T) by forall_decide (); specialize ({h} p); go n "
            f"| _ => first [ {tries} ] end {split}"
            f"| {last} end in first [ {levels} ]")


def evaluable(features: tuple[str, ...]) -> str:
    """A gate: the negated statement names something :func:`evaluate` computes (integer division, remainder, powers,
    with the standard library's reals a sum or a factorial, with Coquelicot a floor or a sum, a binomial coefficient);
    else the early grid fails at once and the generated one, later, tries the statement."""
    heads = ["Coq.ZArith.BinInt.Z.div _ _", "Coq.ZArith.BinInt.Z.modulo _ _", "Coq.ZArith.BinInt.Z.pow _ _",
             "Coq.Init.Nat.pow _ _", "Coq.Init.Nat.div _ _", "Coq.Init.Nat.modulo _ _",
             "Coq.ZArith.BinInt.Z.quot _ _", "Coq.ZArith.BinInt.Z.rem _ _"]
    if REALS in features:
        heads += ["Coq.Reals.Rfunctions.sum_f_R0 _ _"]
    if SUMS in features:
        heads += ["Coquelicot.Rcomplements.floor _", "@Coquelicot.Hierarchy.sum_n_m _ _ _ _",
                  "@Coquelicot.Hierarchy.sum_n _ _ _"]
    if BINOMIAL in features:
        heads += ["Coq.Reals.Binomial.C _ _", "Coq.Arith.Factorial.fact _"]
    cases = " | ".join(f"context [{head}] => idtac" for head in heads)
    return f"let forall_S := type of forall_audit_H in match forall_S with {cases} end; "


def evaluated_grid(scopes: tuple[str, ...], features: tuple[str, ...], early: bool) -> str:
    """:func:`cost_grid`, gated on :func:`evaluable` when ``early``."""
    return cost_grid(scopes, features, evaluable(features) if early else "")


def evaluated_leaf(features: tuple[str, ...]) -> str:
    """The vacuity search's leaf (a hypothesis instantiated at literals, :func:`generated.fine_specialise`): the context
    evaluated and refuted as an instance is (``forall_leaf``, :func:`definitions`), so a hypothesis about a floor, a sum
    or an integer division that fails at a small value contradicts itself."""
    return f"{definitions(features)}forall_leaf ()"


#: :func:`halves_grid`'s gate: the refuted statement reaches a conjunction or an equivalence once its variables are
#: given (placeholder) values, unfolded to its head (an answer set's membership), or names ``Rpower``/``ln``
def halves_gate(features: tuple[str, ...]) -> str:
    """:func:`halves_grid`'s gate: the refuted statement reaches a conjunction or an equivalence once its variables are
    given (placeholder) values, unfolded to its head (an answer set's membership), or, over Coq's reals (the names
    resolve only there), names ``Rpower``/``ln``."""
    powers = (f" | lazymatch type of forall_audit_H with context [{RP}.Rpower _ _] => idtac "
              f"| context [{RP}.ln _] => idtac end" if REALS in features else "")
    return ("let rec forall_peel t := let P := type of t in lazymatch P with "
            "| forall _ : _, _ => let t' := open_constr:(t _) in forall_peel t' "
            "| _ => let P' := eval hnf in P in lazymatch P' with _ /\\ _ => idtac | _ <-> _ => idtac end end in "
            f"first [ assert_succeeds (forall_peel forall_audit_H){powers} ]; ")


def halves_grid(scopes: tuple[str, ...], features: tuple[str, ...]) -> str:
    """Issue 34, session 15 round 3 (the seed-61 misses): :func:`cost_grid` that refutes one half of a conjunction or
    an equivalence it reaches (``putnam_1984_b2``'s ``(forall x y, … -> f x y >= 9) /\\ …`` at ``x := 1, y := 3``; a membership that unfolds
    to one), premises decided by Interval's bounds (``1 < sqrt 2``) and over naturals by cases, and
    ``Rpower``/``ln`` at non-positive arguments evaluated (``putnam_1998_b4``: ``Rpower (-1) y = 1``). Gated on
    :func:`halves_gate`: fails at once on a statement with neither."""
    return cost_grid(scopes, features, halves_gate(features), halves=True)
