"""Issue 31: a detector's finding is the benchmark's only where the candidate's term is the template's.

The judge plugin keys each finding by constant, place (a constant's type or body, an inductive's declaration) and
the digest of the term it was found in; a template (baseline) finding covers a candidate's only when all of these
agree, never on the theorem's own body (the template's theorem is admitted). Before, findings were subtracted as
strings ``<feature> <constant> <why>``: a candidate putting an unsafe ``fix`` in the proof of a theorem whose
statement has one the criterion refuses (putnam_1985_a3's ``fix a``) produced the template's string, and a proof
of ``False`` was accepted strict. Here: the cover rule (no Coq), what the detectors walk in an inductive (a test
per walk, each failing without it), and the masking attack on every PutnamBench template the judge finds a
``fix``/``cofix`` finding on, through the whole verifier.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from shared_builds import SharedBuilds

from conftest import PUTNAM, require_path, require_tool
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.judge import (
    Dump,
    FileDump,
    judge,
    judge_project_file,
    parse_dump,
    reparse,
    run_dump,
    uncovered_findings,
)

SRC = PUTNAM / "coq" / "src"
THM = "ForallProblem.p.p"
TYPE_FINDING = f"fix {THM} type {'a' * 32} a recursive call's decreasing argument is not a variable"
BODY_FINDING = f"fix {THM} body {'b' * 32} a recursive call's decreasing argument is not a variable"


# --- the cover rule ----------------------------------------------------------------------------------------

def _dump(findings: set[str]) -> Dump:
    return Dump(f"const {THM} - : (i X 0)", frozenset(), (), frozenset(), frozenset(findings))


def test_a_finding_in_the_theorems_body_is_never_the_templates() -> None:
    """The masking attack's shape: the template's finding is on the theorem's type (its statement has a fix the
    criterion refuses), the candidate's on its body with the same feature, constant and reason. It is kept; and a
    template finding on the theorem's body (a template with a proof) covers nothing either."""
    judged = judge(_dump({TYPE_FINDING}), _dump({TYPE_FINDING, BODY_FINDING}), set(), "p", frozenset(), ("Coq.",))
    assert judged.findings == [f"fix {THM} a recursive call's decreasing argument is not a variable (in its body)"]
    both = _dump({TYPE_FINDING, BODY_FINDING})
    assert judge(both, both, set(), "p", frozenset(), ("Coq.",)).findings == judged.findings


def test_a_template_finding_covers_only_the_same_term_in_the_same_place() -> None:
    """A template constant's finding covers the candidate's only for the same digest of the same place: a template
    lemma whose (opaque) proof the candidate changed, say through a hint it added, is judged as the candidate's."""
    helper = "fix ForallProblem.p.lemma body {} a recursive call is not applied up to its decreasing argument"
    template = frozenset({helper.format("c" * 32)})
    assert uncovered_findings(frozenset({helper.format("c" * 32)}), template, THM) == []
    assert uncovered_findings(frozenset({helper.format("d" * 32)}), template, THM) == [
        "fix ForallProblem.p.lemma a recursive call is not applied up to its decreasing argument (in its body)"]
    in_type = helper.format("c" * 32).replace(" body ", " type ")
    assert uncovered_findings(frozenset({in_type}), template, THM)  # same digest, another place: not covered
    assert uncovered_findings(frozenset({TYPE_FINDING}), frozenset({TYPE_FINDING}), THM) == []


def test_a_finding_without_place_and_digest_is_refused_when_read() -> None:
    """The judge fails closed on a finding line of another format (the old ``<feature> <constant> <why>``)."""
    text = "forall-judge n\ntheorem const T - : x\nfinding fix T a recursive call ...\nend n\n"
    assert isinstance(parse_dump(text, "n"), str)


def test_project_mode_applies_the_same_rule() -> None:
    """Project mode: the baseline build's finding on the target's type covers the candidate's identical one, not
    one in the target's proof (whatever the baseline's proof had there) nor one on a changed helper."""
    entry = f"const {THM} opaque [gtrue ptrue utrue ifalse sfalse sptrue csfalse uipfalse] mono : (i X 0)"

    def file_dump(findings: tuple[str, ...]) -> FileDump:
        return FileDump(((("p"), entry),), (), frozenset({"p"}), {"p": ()}, frozenset(), {"p": findings}, {})

    baseline = file_dump((TYPE_FINDING, BODY_FINDING))
    same = judge_project_file(baseline, file_dump((TYPE_FINDING,)), "ForallProblem.p", "p", (), frozenset(), ())
    assert same.findings == [] and same.statement == ""
    masked = judge_project_file(baseline, file_dump((TYPE_FINDING, BODY_FINDING)), "ForallProblem.p", "p", (),
                                frozenset(), ())
    assert masked.findings == [f"fix {THM} a recursive call's decreasing argument is not a variable (in its body)"]


# --- what the detectors walk: an inductive's arity (parameters and indices) --------------------------------

#: rocq#20413's fixpoint as a closed term (the guard checker of 8.16-9.0.0 accepts it; the criterion refuses it:
#: the fixpoint is passed unapplied to an opaque lemma), and the lemma and type it needs
PAYLOAD_DEFS = """Definition T (n : nat) : Type := match n with 0 => unit -> False | S _ => unit end.
Lemma h (p : nat) (g : forall n, T n -> False) : T p.
Proof. destruct p as [|q]. - exact (fun _ => g 1 tt). - exact tt. Qed.
"""
PAYLOAD = ("((fix f (n : nat) (x : T n) {struct n} : False :=\n"
           "  (match n as k return T k -> False with 0 => fun y => y tt | S p => fun _ => f p (h p f) end) x) 1 tt)")
WALKS = {
    # an index's type (an index is in no constructor's argument types)
    "index": ("Inductive E : (fun _ : False => True) " + PAYLOAD + " -> Prop := mkE : forall x, E x.", "E I",
              "ForallProblem.w.E inductive"),
    # a parameter of an inductive without constructors (its parameters are nowhere else)
    "parameter": ("Inductive E (x : (fun _ : False => True) " + PAYLOAD + ") : Prop := .", "E I",
                  "ForallProblem.w.E inductive"),
    # a definition only an arity mentions (here in a redex the kernel never needs to reduce): followed too
    "reference": ("Definition bad : False := " + PAYLOAD + ".\nInductive E : (fun _ : False => nat) bad -> Prop := .",
                  "E 0", "ForallProblem.w.bad body"),
}


@pytest.fixture(scope="module")
def prover() -> RocqProver:
    """The verifier's backend (its plugin and template cache are the shared ones: nothing is built twice; an attack
    the corpus also holds, tests/cheats/cheat/masked_*, is compiled and judged once per process:
    :mod:`shared_builds`).

    Its layers run one after another (``concurrent_layers`` off): the verdict and its layers are the same
    (:func:`pytest_forall.core.verify._alongside`), but every candidate here is rejected at `kernel_advisories`,
    and beside it coqchk would run in vain until killed — about 70 % of each candidate's CPU (docs/measurements.md,
    "The test command, faster")."""
    require_tool("coqc")
    backend = SharedBuilds({})
    assert backend.plugin is not None, backend.plugin_problem
    backend.concurrent_layers = False
    return backend


@pytest.mark.parametrize("walk", sorted(WALKS))
def test_the_detectors_walk_an_inductives_arity(walk: str, prover: RocqProver, tmp_path: Path) -> None:
    """An unsafe fixpoint in an inductive's parameter or index type, or in a definition only an arity mentions, is
    found (before issue 31 only constructor types were walked: each case had no finding)."""
    inductive, applied, where = WALKS[walk]
    # the theorem mentions the inductive, never the payload or its type: the arity is the one way to the payload
    (tmp_path / "w.v").write_text(f"{PAYLOAD_DEFS}{inductive}\nTheorem w : {applied} -> True.\n"
                                  "Proof. intros _; exact I. Qed.\n")
    done = subprocess.run(["coqc", "-q", "-Q", ".", "ForallProblem", "w.v"], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    dump, _, problem = run_dump(prover._judge_run(300), tmp_path, tmp_path / "w.vo", "w", ["T", "h"], "w")
    assert dump is not None, problem
    assert [f for f in dump.findings if f.startswith(f"fix {where} ")], sorted(dump.findings)


# --- the masking attack on PutnamBench's templates -----------------------------------------------------------

#: Every way a template can put a fixpoint or cofixpoint in its own kernel terms leaves one of these words in its
#: text (a `fix`/`cofix` term or a `Fixpoint`/`CoFixpoint`, an inductive's schemes, Program/Function/Equations, a
#: definition built by tactics). Only a first cut, so that not every template is compiled: which templates hold a
#: fixpoint is the judge's dump's answer (the kernel terms of the statement and of its closure).
MAY_HOLD_A_FIXPOINT = re.compile(r"fix|Fix|Inductive|Record|Structure|Class|Instance|Program|Function|Equations|"
                                 r"Scheme|ltac:|Defined|Qed")
#: How many PutnamBench templates hold a `fix`/`cofix` in the kernel terms of their statement or its closure (29
#: in the statement itself, 5 in a `Fixpoint` before it): fewer means the selection lost some.
HOLDING_A_FIXPOINT = 34


#: Templates on which these candidates cannot be judged: the kernel's check of a proof by `exfalso` of these
#: statements does not finish on 8.16.1 — putnam_2015_a3's not within 5 minutes even for `exfalso. exact ax.` with
#: an axiom of `False`; putnam_2007_b3's and putnam_2015_a2's payload proofs run out of memory at `Qed` (each
#: statement applies a let-bound fixpoint to a large unary numeral, 2007, 2015). Their fixpoints pass the
#: criterion, so they have no finding to mask (docs/measurements.md, issue 31).
UNCHECKABLE = ("putnam_2007_b3", "putnam_2015_a2", "putnam_2015_a3")

#: The payloads, each one tactic expression proving `False`; qualified, with bound names no template uses (templates
#: open scopes and declare `I`, `h`, `n` …). rocq#20455: a recursive call on a match on a match, which the guard
#: checker of 8.16-9.0.0 takes for a subterm.
P20455 = """refine ((fix forall_g (forall_n : Datatypes.nat) {struct forall_n} :
      (match forall_n with Datatypes.O => Logic.False | Datatypes.S _ => Logic.True end) -> Logic.False :=
    match forall_n with
    | Datatypes.O => fun forall_h => forall_h
    | Datatypes.S forall_m => fun forall_h =>
      let forall_k (forall_b : Datatypes.bool) (forall_e : @Logic.eq Datatypes.bool forall_b Datatypes.true)
            (forall_y : Datatypes.nat) (forall_Hy : match forall_y with Datatypes.O => Logic.False
              | Datatypes.S forall_z => match forall_z with Datatypes.O => Logic.False | Datatypes.S _ => Logic.True end
              end) :=
        forall_g (match (if forall_b then forall_y else forall_m) with
                  Datatypes.O => forall_m | Datatypes.S forall_mm => forall_mm end) _
      in forall_k Datatypes.true Logic.eq_refl (Datatypes.S (Datatypes.S Datatypes.O)) Logic.I
    end) (Datatypes.S Datatypes.O) Logic.I);
  (* the hole's hypotheses by their types (a hint's tactic cannot name the term's binders) *)
  match goal with [ e : ?b = Datatypes.true |- _ ] => subst b end;
  match goal with [ y : Datatypes.nat, Hy : match ?y with Datatypes.O => _ | Datatypes.S _ => _ end |- _ ] =>
    destruct y; cbn in Hy; [exfalso; exact Hy | exact Hy] end"""
#: rocq#20413: the fixpoint passed, eta-expanded, to a hypothesis in a non-structural argument (unchecked there).
P20413 = """assert (forall_h : forall (forall_p : Datatypes.nat) (forall_g : forall forall_n,
      (match forall_n return Type with Datatypes.O => Datatypes.unit -> Logic.False | Datatypes.S _ => Datatypes.unit
       end) -> Logic.False),
      match forall_p return Type with Datatypes.O => Datatypes.unit -> Logic.False | Datatypes.S _ => Datatypes.unit
      end)
    by (intros [|forall_q] forall_g; [exact (fun _ => forall_g (Datatypes.S Datatypes.O) Datatypes.tt)
                                    | exact Datatypes.tt]);
  exact ((fix forall_f (forall_n : Datatypes.nat) (forall_y : match forall_n return Type with
      Datatypes.O => Datatypes.unit -> Logic.False | Datatypes.S _ => Datatypes.unit end) {struct forall_n}
      : Logic.False :=
    (match forall_n as forall_k return (match forall_k return Type with
        Datatypes.O => Datatypes.unit -> Logic.False | Datatypes.S _ => Datatypes.unit end) -> Logic.False with
     | Datatypes.O => fun forall_z => forall_z Datatypes.tt
     | Datatypes.S forall_p => fun _ => forall_f forall_p (forall_h forall_p (fun forall_m forall_w =>
                                                                               forall_f forall_m forall_w)) end)
    forall_y) (Datatypes.S Datatypes.O) Datatypes.tt)"""
PAYLOADS = {"rocq#20455": P20455, "rocq#20413": P20413}


def with_proof(template: str, proof: str, before: str = "") -> str:
    """The template with its final `Proof. Admitted.` replaced by ``proof`` and ``before`` put before the theorem."""
    hole = template.rindex("Admitted.")
    opener = template.rindex("Proof.", 0, hole)
    start = template.rindex("Theorem", 0, opener)
    return template[:start] + before + template[start:opener] + proof + template[hole + len("Admitted."):]


#: Where a payload goes: (the theorem's proof, what comes before the theorem).
PLACES = {"own proof": ("Proof.\n  exfalso.\n  {}.\nQed.", ""),
          "hint": ("Proof. exfalso. auto. Qed.", "#[local] Hint Extern 1 Logic.False => ({}) : core.\n"),
          "helper": ("Proof. exfalso. exact forall_helper. Qed.",
                     "Lemma forall_helper : Logic.False.\nProof.\n  {}.\nQed.\n")}


def attack(template: str, payload: str, place: str) -> str:
    proof, before = PLACES[place]
    return with_proof(template, proof.format(PAYLOADS[payload]), before.format(PAYLOADS[payload]))


@pytest.fixture(scope="module")
def masked(prover: RocqProver) -> dict[str, tuple[Any, list[str]]]:
    """The PutnamBench templates whose statement or its closure holds a fixpoint or cofixpoint as a kernel term,
    each task with the template's own `fix`/`cofix` findings, all read from the judge's dump of the compiled
    template (the verifier's template cache: the attacks below reuse it)."""
    require_path(SRC, "PutnamBench's Coq templates")
    found = {}
    for path in sorted(SRC.glob("*.v")):
        if not MAY_HOLD_A_FIXPOINT.search(path.read_text(encoding="utf-8")):
            continue
        task = task_from_template("rocq", path)
        entry, data, problem = prover._template_entry(task, 600)
        assert not problem and data["ok"], (path.name, problem)
        dump = reparse((entry / "dump.txt").read_text(encoding="utf-8"))
        assert not isinstance(dump, str), (path.name, dump)
        if any("(fix " in term or "(cofix " in term for term in (dump.theorem, *dump.closure)):
            found[path.stem] = (task, sorted(f for f in dump.findings if f.split(" ")[0] in ("fix", "cofix")))
    assert len(found) == HOLDING_A_FIXPOINT, sorted(found)
    return found


def _rejected(prover: RocqProver, task: Any, text: str, build: Path, constant: str, place: str) -> str:
    """"" when the verifier rejects ``text`` at `kernel_advisories` for a fixpoint in ``constant``'s ``place``."""
    build.mkdir(parents=True)
    verdict = verify_candidate(task, prover, text.encode(), builddir=build, timeout=600)
    first = next((layer for layer in verdict.layers if layer.ok is False or layer.infra), None)
    if verdict.verdict != "reject" or first is None or first.name != "kernel_advisories":
        return f"{verdict.verdict} (strict={verdict.strict}) at {first and first.name}: {verdict.reason[:400]}"
    if f"`{constant}`" not in verdict.reason or f"(in its {place})" not in verdict.reason:
        return f"rejected for something else: {verdict.reason[:400]}"
    return ""


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_the_masking_attack_is_rejected_on_every_template_holding_a_fixpoint(
        payload: str, prover: RocqProver, masked: dict[str, tuple[Any, list[str]]], tmp_path: Path) -> None:
    """Each template whose statement (or its closure) holds a fixpoint, proved by ``payload`` (a proof of `False`
    that coqc and coqchk 8.16.1 accept) in the theorem's own proof: rejected at `kernel_advisories`, for the
    theorem's body. Where the template's own finding on the theorem's type has the candidate's reason (its
    statement's fixpoint fails the criterion as the payload does: putnam_1985_a3 today), subtracting findings
    by constant accepted it, strict."""
    started, wrong, masking = time.monotonic(), [], []
    assert set(UNCHECKABLE) <= set(masked) and not any(masked[name][1] for name in UNCHECKABLE)
    for name, (task, fixes) in masked.items():
        if name in UNCHECKABLE:
            continue
        theorem = f"ForallProblem.{name}.{task.theorem_name}"
        text = attack(task.template, payload, "own proof")
        problem = _rejected(prover, task, text, tmp_path / name, theorem, "body")
        if problem:
            wrong.append(f"{name}: {problem}")
        masking += [name for f in fixes if f.split(" ")[1:3] == [theorem, "type"]]
    print(f"{payload}: {len(masked) - len(UNCHECKABLE)} templates ({len(set(masking))} with a finding on the theorem's own type) in "
          f"{time.monotonic() - started:.0f} s")
    assert not wrong, "\n".join(wrong)


#: Templates of different shapes for the other placements: a `fix` in a `let` of the statement (Coquelicot), a
#: `Fixpoint` before the theorem (ZArith), a `fix` in the statement under mathcomp/ssreflect.
REPRESENTATIVE = ("putnam_1985_a3", "putnam_1984_b1", "putnam_2017_b6")


@pytest.mark.parametrize("place", ["hint", "helper"])
def test_the_payloads_are_rejected_in_a_hint_and_in_a_helper(place: str, prover: RocqProver,
                                                             masked: dict[str, tuple[Any, list[str]]],
                                                             tmp_path: Path) -> None:
    """The payloads through a `Hint Extern` (its term lands in the theorem's body) and in a helper lemma (judged as
    the candidate's: the template has no such constant), on templates of different shapes."""
    wrong = []
    for name in REPRESENTATIVE:
        task, _ = masked[name]
        constant = f"ForallProblem.{name}." + (task.theorem_name if place == "hint" else "forall_helper")
        for payload in sorted(PAYLOADS):
            problem = _rejected(prover, task, attack(task.template, payload, place),
                                tmp_path / f"{name}-{payload[5:]}", constant, "body")
            if problem:
                wrong.append(f"{name} {payload}: {problem}")
    assert not wrong, "\n".join(wrong)
