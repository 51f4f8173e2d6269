"""The audit's third finding: a premise inside the conclusion that can never hold (``inner_vacuous``).

The claims under test: the inner premises are found in positive positions only (never inside a negation or
inside another premise); each becomes a definition whose place in the statement the kernel checks
(``<name>_audit_inner_shape``), so a wrong textual reading cannot flag; a statement whose conclusion holds only
through an unsatisfiable inner premise ends as ``inner_vacuous`` (never a pass) with a certificate that
``forall verify`` re-accepts; and no certificate about another premise, another statement or a premise in a
negative position is accepted as the finding for a sound statement.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_audit import forall_verify, run_item, scripted, task_of

from conftest import REPO, require_tool
from pytest_forall.agents.portfolio import AuditFrontend
from pytest_forall.core.audit import audit_pack, derived_tasks
from pytest_forall.core.prompts import initial_prompt
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.audit import (
    HOLE,
    Group,
    binder_groups,
    inner_premises,
    inner_selectors,
    inner_text,
)
from pytest_forall.lang.rocq.tactics import PRELUDE

#: true only because ``j < i`` fails whenever ``i <= j`` (an order condition that already fails at ``i = j``)
INNER = ("Require Import Arith.\nTheorem orderly (a : nat -> nat) :\n"
         "    exists b : nat -> nat, forall i j : nat, i <= j -> j < i -> b i = a j.\nProof. Admitted.\n")
#: sound: its inner premise ``i < j`` holds at some instances (``b := id`` proves it)
GROWS = ("Require Import Arith.\nTheorem grows (n : nat) :\n"
         "    exists b : nat -> nat, forall i j : nat, i < j -> b i < b j.\nProof. Admitted.\n")
#: sound, with an unsatisfiable premise ``k < 0`` in a negative position (inside the premise of ``-> True``)
GUARDED = ("Require Import Arith.\nTheorem guarded (n : nat) :\n"
           "    exists m : nat, n < m /\\ ((forall k : nat, k < 0 -> m = k) -> True).\nProof. Admitted.\n")


def spans(rest: str) -> list[tuple[str, tuple[int, ...]]]:
    return [(rest[p.start:p.end], p.before) for p in inner_premises(rest, [])]


@pytest.mark.parametrize(("rest", "found"), [
    ("exists b : nat -> nat, forall i j : nat, i <= j -> j < i -> b i = a j",
     [("i <= j", ()), ("j < i", (0,))]),
    ("A /\\ (forall x : nat, x < 0 -> B) <-> C", [("x < 0", ())]),
    ("(A \\/ forall x : nat, x < 0 -> B) /\\ C", [("x < 0", ())]),
    ("~ (forall k : nat, k < 0 -> B)", []),  # negative: its failing would make this false, not trivial
    ("(forall k : nat, k < 0 -> B) -> True", [("(forall k : nat, k < 0 -> B)", ())]),  # not entered
    ("let m := 3 in m < 2 -> B", []),  # a construct extending to the right is not split
    ("exists '(x, y), x < y -> B", []),  # a pattern binder: not understood, nothing derived
])
def test_inner_premises_are_found_in_positive_positions_only(rest: str, found: list[tuple[str, tuple[int, ...]]]) -> None:
    assert spans(rest) == found


@pytest.mark.parametrize(("text", "groups"), [
    ("(x y : T) {R : realType} (a := 3)",
     [Group("(x y : T)", ("x", "y"), True), Group("{R : realType}", ("R",), True), Group("(a := 3)", (), True)]),
    ("x y", [Group("x y", ("x", "y"), False)]),
    ("x y : nat", [Group("(x y : nat)", ("x", "y"), True)]),
    ("'(a, b)", None),
    ("`{Foo}", None),
])
def test_binder_groups_name_their_arguments_or_give_up(text: str, groups: list[Group] | None) -> None:
    assert binder_groups(text) == groups


def test_the_inner_task_defines_each_premise_and_ties_it_to_the_statement() -> None:
    text = inner_text(INNER, "orderly")
    assert text is not None
    assert ("Definition orderly_audit_premise1 (a : nat -> nat) (b : nat -> nat) (i j : nat) : Prop :=\n"
            "    j < i.\n") in text
    # the statement and the same statement with each premise replaced by its definition: checked by the kernel
    assert ("@Coq.Init.Logic.eq _ (forall (a : nat -> nat), exists b : nat -> nat, forall i j : nat, i <= j -> "
            "j < i -> b i = a j)\n    (forall (a : nat -> nat), exists b : nat -> nat, forall i j : nat, "
            "(@orderly_audit_premise0 a b i j) -> (@orderly_audit_premise1 a b i j) -> b i = a j)") in text
    assert ("\\/ (forall (a : nat -> nat) (b : nat -> nat) (i j : nat), (@orderly_audit_premise0 a b i j) -> "
            "(@orderly_audit_premise1 a b i j) -> False).") in text
    assert inner_selectors(text, "orderly") == ["left; unfold orderly_audit_premise0, orderly_audit_premise1",
                                                "right; unfold orderly_audit_premise0, orderly_audit_premise1"]
    assert inner_text("Require Import Arith.\nTheorem p (n : nat) : n = n.\nProof. Admitted.\n", "p") is None


def test_the_first_prompt_offers_the_inner_claim_with_its_derived_template(tmp_path: Path) -> None:
    task = task_of(tmp_path, "orderly", INNER)
    prompt = initial_prompt(task)
    assert "`STATEMENT_INNER_VACUOUS.v`" in prompt and "a premise inside the conclusion" in prompt
    assert derived_tasks(task)["inner_vacuous"].template.rstrip() in prompt
    assert "inner_vacuous" not in derived_tasks(task_of(tmp_path, "plain", GROWS.replace(
        "exists b : nat -> nat, forall i j : nat, i < j -> b i < b j", "n = n")))


@pytest.mark.slow
def test_an_unsatisfiable_inner_premise_ends_inner_vacuous_and_its_certificate_is_reverified(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    require_tool("coqtop")
    result, ctx = run_item(tmp_path / "o", task_of(tmp_path, "orderly", INNER), AuditFrontend({}),
                           cache=shared_prover_cache)
    assert (result["outcome"], result["statement_audit"], result["stop"]) == (
        "inner_vacuous", "inner_vacuous", "inner-vacuous"), result["reason"]
    assert result["certificate"] == "accepted/STATEMENT_INNER_VACUOUS.v"
    checked = forall_verify(ctx.audit.directory / result["certificate_template"],
                            ctx.audit.directory / result["certificate"])
    assert checked.returncode == 0 and "verdict: accept (strict)" in checked.stdout, checked.stdout + checked.stderr
    assert not (ctx.audit.directory / "accepted" / "orderly.v").exists()  # never counted as a proof

    for name, text in {"grows": GROWS, "guarded": GUARDED}.items():
        sound, ctx = run_item(tmp_path / name, task_of(tmp_path, name, text), AuditFrontend({}),
                              cache=shared_prover_cache)
        assert (sound["outcome"], sound["statement_audit"]) == ("failed", "unknown"), (name, sound["reason"])
        assert not (ctx.audit.directory / "accepted").exists()


@pytest.mark.slow
def test_certificates_about_other_premises_never_flag_a_sound_statement(tmp_path: Path,
                                                                        shared_prover_cache: Path) -> None:
    """A certificate for another statement's premise, for a premise in a negative position, for a different
    premise of this statement or for a satisfiable one is refused; none ends the item as ``inner_vacuous``."""
    require_tool("coqtop")
    from pytest_forall.lang.rocq.backend import RocqProver

    task = task_of(tmp_path, "guarded", GUARDED)
    inner = derived_tasks(task)["inner_vacuous"].template
    assert inner.count("Definition guarded_audit_premise") == 1  # only the premise ``forall k, …`` of ``-> True``
    donor = derived_tasks(task_of(tmp_path, "orderly", INNER))["inner_vacuous"].template
    # the negative-position premise ``k < 0``, defined and tied the same way, proved unsatisfiable
    # the negative-position premise ``k < 0``, defined and tied the same way (a consistent derived template
    # of its own, which the kernel accepts), proved unsatisfiable
    negative = (inner.replace("(m : nat) : Prop :=\n    (forall k : nat, k < 0 -> m = k)", "(m k : nat) : Prop :=\n    k < 0")
                .replace("(@guarded_audit_premise0 n m)", "(forall k : nat, (@guarded_audit_premise0 n m k) -> m = k)", 1)
                .replace("(@guarded_audit_premise0 n m) -> False", "forall k : nat, (@guarded_audit_premise0 n m k) -> False"))
    assert negative != inner and "k < 0." in negative
    proofs = {"another statement's premise": (donor, ("right; unfold orderly_audit_premise0, orderly_audit_premise1; "
                                                      "intros; lia")),
              "a premise in a negative position": (negative, "unfold guarded_audit_premise0; intros; lia")}
    prover = RocqProver({"cache_dir": str(shared_prover_cache)})
    for label, (template, proof) in proofs.items():  # each is a valid certificate of its own task
        own = dataclasses.replace(derived_tasks(task)["inner_vacuous"], template=template,
                                  frozen=template[:template.index(HOLE) + len("Proof. ")],
                                  statement=template[:template.index(HOLE)].rstrip(),
                                  theorem_name=template.split("Theorem ")[-1].split()[0])
        certificate = PRELUDE + template.replace(HOLE, f"Proof. {proof}. Qed.\n")
        verdict = verify_candidate(own, prover, certificate.encode())
        assert verdict.accepted, (label, verdict.reason)
    tampered = {
        **{label: PRELUDE + template.replace(HOLE, f"Proof. {proof}. Qed.\n")
           for label, (template, proof) in proofs.items()},
        "a satisfiable premise, a proof the kernel refuses": PRELUDE + inner.replace(
            HOLE, "Proof. unfold guarded_audit_premise0; intros n m H; apply H; intros; lia. Qed.\n"),
        "a different statement proved": PRELUDE + inner.replace(
            "(@guarded_audit_premise0 n m) -> False", "~ ~ (@guarded_audit_premise0 n m)").replace(
            HOLE, "Proof. unfold guarded_audit_premise0; intros n m H; apply H; intros; lia. Qed.\n"),
        "negated elsewhere": inner.replace(HOLE, "Proof. Abort.\nTheorem x : True.\nProof. exact I. Qed.\n"),
    }
    for label, text in tampered.items():
        result, ctx = run_item(tmp_path / label.replace(" ", "-").replace(",", ""), task,
                               scripted(text, "STATEMENT_INNER_VACUOUS.v"), cache=shared_prover_cache, rounds=1)
        assert result["statement_audit"] == "unknown" and result["outcome"] == "failed", (label, result)
        assert not (ctx.audit.directory / "accepted").exists(), label
        verdicts = sorted((ctx.audit.directory / "s0" / "r1").glob("inner-vacuity-verdict.json"))
        assert verdicts and json.loads(verdicts[0].read_text())["verdict"] == "reject", label


@pytest.mark.slow
def test_a_wrong_textual_reading_of_an_inner_premise_cannot_flag(tmp_path: Path, shared_prover_cache: Path) -> None:
    """A notation hides its ``->`` from the textual reading; the kernel's shape check then fails the task."""
    require_tool("coqtop")
    from pytest_forall.lang.rocq.backend import RocqProver

    text = ('Notation "\'ALL\' x , P" := (forall x : nat, P) (at level 200, x name).\n'
            "Theorem hidden : exists m : nat, ALL x, x = m -> 1 = 1.\nProof. Admitted.\n")
    task = task_of(tmp_path, "hidden", text)
    inner = derived_tasks(task)["inner_vacuous"]
    assert ":=\n    ALL x, x = m.\n" in inner.template  # the wrong reading: ``ALL x, x = m`` as the premise
    certificate = inner.template.replace("Proof. Admitted.", "Proof. unfold hidden_audit_premise0; intros m H; "
                                                             "specialize (H (S m)); lia. Qed.")
    prover = RocqProver({"cache_dir": str(shared_prover_cache)})
    verdict = verify_candidate(inner, prover, certificate.encode())
    assert not verdict.accepted and verdict.reason.startswith("template:"), verdict.reason
    pack = audit_pack("rocq")
    assert pack is not None
    found = pack.search(task, derived_tasks(task), prover, tmp_path, time.monotonic() + 30)
    assert "inner_vacuous" not in found.certificates


@pytest.mark.slow
def test_junit_results_summary_and_report_carry_the_inner_finding(pytester: pytest.Pytester) -> None:
    require_tool("coqtop")
    src = pytester.path / "bench" / "coq" / "src"
    src.mkdir(parents=True)
    for name, text in {"orderly": INNER, "grows": GROWS}.items():
        (src / f"{name}.v").write_text(text)
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {pytester.path / 'bench'}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--forall-frontend=audit", "--forall-run-id=au",
                                "--junitxml=au.xml", "-rs")
    result.stdout.fnmatch_lines(["*1 failed, 0 infra, 0 statement_false, 0 vacuous, 1 inner_vacuous  (2 items)",
                                 ("suspected misformalizations: 1 (0 false, 0 vacuous, 1 inner_vacuous), each with a "
                                 "verified certificate:"),
                                 "  orderly: inner_vacuous  */items/orderly-coq/accepted/STATEMENT_INNER_VACUOUS.v"])
    result.stdout.fnmatch_lines(["*INNER-VACUOUS*orderly*"])
    rows = {r["task_id"]: r for r in map(json.loads, (pytester.path / "reports" / "au" / "results.jsonl")
                                         .read_text().splitlines())}
    assert {t: (r["outcome"], r["stop"], r["statement_audit"]) for t, r in rows.items()} == {
        "grows": ("failed", "gave-up", "unknown"), "orderly": ("inner_vacuous", "inner-vacuous", "inner_vacuous")}
    junit = (pytester.path / "au.xml").read_text()
    assert '<property name="forall.outcome" value="inner_vacuous" />' in junit
    assert '<property name="forall.statement_audit" value="inner_vacuous" />' in junit
    assert '<property name="forall.certificate" value="accepted/STATEMENT_INNER_VACUOUS.v" />' in junit
    out = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "report", str(pytester.path / "reports" / "au")],
                         capture_output=True, text=True, cwd=pytester.path, check=False)
    assert out.returncode == 0, out.stderr
    # the counterexample column names the inner strategy whose certificate it is (from the session's audit.log)
    assert re.search(r"^\| `orderly` \| inner_vacuous: proves that a premise inside the conclusion can never hold \| "
                     r"by inner-[a-z0-9-]+ \| `reports/au/items/orderly-coq/accepted/STATEMENT_INNER_VACUOUS\.v` ",
                     out.stdout, re.MULTILINE), out.stdout


#: ``forall x, ok x -> (…)`` is over ``nat`` (``x + 0`` fixes it) with ``ok x`` true; a disjunct restating ``x``
#: without the rest is over ``unit`` (the type class's default instance), where ``ok x`` is ``False``: the
#: former derivation's certificate ``intros; exact forall_audit_h1`` passed the full verifier for this true
#: statement (docs/audit.md, "Inner vacuity and unwritten types").
DEFAULTED_INNER = ("Class Bad (T : Type) := { ok : T -> Prop }.\n"
                   "#[global] Instance bad_nat : Bad nat := { ok := fun _ => True }.\n"
                   "#[global] Instance bad_unit : Bad unit := { ok := fun _ => False }.\n"
                   "Theorem defaulted : forall {binder}, ok x -> (x + 0 = x /\\ forall y : nat, y < 5 -> y < 6).\n"
                   "Proof. Admitted.\n")


@pytest.mark.parametrize(("binder", "derived"), [("x", False), ("(x : _)", False), ("(x : nat)", True)])
def test_no_inner_task_restates_a_binder_whose_type_is_not_written(binder: str, derived: bool) -> None:
    text = inner_text(DEFAULTED_INNER.replace("{binder}", binder), "defaulted")
    assert (text is not None) is derived
    if text is not None:  # the written type is restated as written
        assert ("Theorem defaulted_inner_vacuous :\n    (forall (x : nat) (forall_audit_h1 : ok x) (y : nat), "
                "(@defaulted_audit_premise0 x y) -> False).") in text, text
