"""The Ltac building blocks of the audit's search: the candidate values of the grid, the closers of ``False``,
the deciders of side conditions, the specialisation and saturation searches (each an Ltac text; what a script
proves is judged by the verifier, never by these texts)."""

from __future__ import annotations

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
#: Definitions the generated search evaluates at literal arguments (:data:`EVALUATIONS`), each present when its
#: library is loaded: Coquelicot's finite sums and the standard library's binomial coefficients
SUMS, BINOMIAL, DIVISORS = "sums", "binomial", "divisors"
#: issue 34, session 14: Coquelicot's derivatives (a constant function witness's derivatives evaluated), the standard
#: library's ``continuity`` and lists' ``In`` (a list witness's first element)
DERIVE, RANALYSIS, LISTS = "derive", "ranalysis", "lists"
#: mathcomp's rationals and their embedding ``ratr`` into any numeric field
RATR = "mathcomp.algebra.rat"
#: ``True``'s proof by its full name: a template may declare its own ``I`` (``Variables (I : finType)``), and a
#: bare ``exact I`` then failed every probe, so nothing was searched
TRIVIAL = "exact Coq.Init.Logic.I"
#: ssreflect's tactic syntax (``move: t => _``): a file that requires a mathcomp library without importing ssreflect
#: (``From mathcomp Require Import div``, 27 PutnamBench templates) has mathcomp's constants but not that syntax, and
#: every script whose closers use it (``move/eqP: H``) was a syntax error there, so nothing was searched (session 14)
SSR_SYNTAX = "(move: Coq.Init.Logic.I => _)"
FEATURES = {**{scope: f"let x := uconstr:(0%{scope}) in {TRIVIAL}" for scope in SCOPES},
            SSR: f"let x := uconstr:(unlock) in {SSR_SYNTAX}; {TRIVIAL}",
            NUM: f"let x := uconstr:(Num.Theory.eqr_nat) in {SSR_SYNTAX}; {TRIVIAL}",
            RAT: f"let x := uconstr:({RATR}.ratr_rmorphism) in {SSR_SYNTAX}; {TRIVIAL}",
            POLY: f"let x := uconstr:(polyC) in {SSR_SYNTAX}; {TRIVIAL}",
            # issue 34: Coq's reals (the indicator ``if Req_EM_T x 0 …``, sequences ``INR n``), ``Z.eqb`` (the
            # indicator over ``Z``) and Interval's ``interval`` (loaded by the search's prelude in a Coq-reals file)
            REALS: f"let x := uconstr:(Req_EM_T) in {TRIVIAL}", ZEQB: f"let x := uconstr:(Z.eqb) in {TRIVIAL}",
            INTERVAL: f"assert (Rle (1%R) (2%R)) by interval; {TRIVIAL}",
            SUMS: f"let x := uconstr:(Coquelicot.Hierarchy.sum_n_Reals) in {TRIVIAL}",
            BINOMIAL: f"let x := uconstr:(Coq.Reals.Binomial.C) in {TRIVIAL}",
            DIVISORS: f"let x := uconstr:(Coq.ZArith.Znumtheory.Zis_gcd) in {TRIVIAL}",
            DERIVE: f"let x := uconstr:(Coquelicot.Derive.Derive_n_const) in {TRIVIAL}",
            RANALYSIS: f"let x := uconstr:(Coq.Reals.Ranalysis1.continuity_const) in {TRIVIAL}",
            LISTS: f"let x := uconstr:(Coq.Lists.List.In) in {TRIVIAL}"}
#: issue 34, session 15: mathcomp-analysis's topology (``cst_continuous``, ``cvg_id``) and derivatives (``ex_derive``,
#: ``derive1_cst``), each loaded by what the file requires: the side conditions of a function witness over a
#: ``realType`` (:mod:`.real`)
MC_TOPOLOGY, MC_DERIVE = "mc_topology", "mc_derive"
FEATURES.update({MC_TOPOLOGY: f"let x := uconstr:(mathcomp.analysis.topology.cst_continuous) in {SSR_SYNTAX}; {TRIVIAL}",
                 MC_DERIVE: f"let x := uconstr:(mathcomp.analysis.derive.ex_derive) in {SSR_SYNTAX}; {TRIVIAL}"})
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


def unary_guard(features: tuple[str, ...]) -> str:
    """Fails when the context names a factorial or a binomial coefficient over Coq's reals (loaded: ``features``), else
    "" or a no-op: ``vm_compute`` reads its result back as a term, and a natural as large as ``fact 10`` (3 628 800
    nested ``S``: ``Binomial.C 5 j`` in a finite sum at a literal bound, unfolded) overflows Coq's stack, an error no
    tactic catches (``Stack_overflow`` is critical to Ltac's ``first``): the whole script ended there
    (putnam_1991_b4's ``generated-backtracking``, after ``p := 5``)."""
    names = [*(["Coq.Arith.Factorial.fact _"] if REALS in features else []),
             *(["Coq.Reals.Binomial.C _ _"] if BINOMIAL in features else [])]
    if not names:
        return ""
    cases = " ".join(f"| H : context [{name}] |- _ => fail | |- context [{name}] => fail" for name in names)
    return f"lazymatch goal with {cases} | _ => idtac end; "


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
            f"| ({unary_guard(features)}{unlock}vm_compute in *; first [ easy | discriminate | lia ]) "
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
