"""The statement audit: derived tasks, the certificate search on the real Rocq kernel, and what is reported.

The claims under test: a vacuous statement ends as ``vacuous`` (never as a strict pass), a false one as
``statement_false``, each with a certificate the full verifier accepted and ``forall verify`` re-accepts; a
sound statement is never flagged, whatever certificate is submitted for it; a wrong textual derivation
cannot produce a flag because the kernel checks it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_verifier_lean import BASE_PATH, STANDIN, project  # noqa: F401 - ``project`` is a fixture

from conftest import PUTNAM, REPO, require_tool
from pytest_forall.agents.portfolio import AuditFrontend, PortfolioFrontend
from pytest_forall.core.accept import AuditRecord
from pytest_forall.core.actor import SessionContext, TurnResult
from pytest_forall.core.audit import audit_pack, derived_tasks, findings_table
from pytest_forall.core.model import Budget, Task
from pytest_forall.core.prompts import initial_prompt
from pytest_forall.core.protocol import ItemContext, ItemRun
from pytest_forall.core.review import reviewer_prompt
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.audit import peel, vacuity_text
from pytest_forall.lang.rocq.problem import parse_coq

SECRET = b"audit-test-secret"
SOUND = "Require Import Arith.\nTheorem sound (n : nat) (h : n > 0) : n >= 1.\nProof. Admitted.\n"
FALSE = "Require Import Arith.\nTheorem wrong (n : nat) (h : n > 0) : n * n > n.\nProof. Admitted.\n"
#: vacuous only through the conclusion's own premises (``n > 3`` and ``n < 2``)
VACUOUS = ("Require Import Arith.\nTheorem empty (f : nat -> nat) : forall n : nat, n > 3 -> n < 2 -> f n = 0.\n"
           "Proof. Admitted.\n")


def task_of(tmp_path: Path, name: str, text: str) -> Task:
    path = tmp_path / f"{name}.v"
    path.write_text(text)
    return parse_coq(name, path, text)


def putnam(name: str) -> Task:
    path = PUTNAM / "coq" / "src" / f"{name}.v"
    if not path.is_file():
        pytest.fail(f"PutnamBench checkout not found at {PUTNAM}; set PUTNAMBENCH_ROOT")
    return parse_coq(name, path, path.read_text())


def run_item(tmp_path: Path, task: Task, frontend: Any, cache: Path,
             **budget: Any) -> tuple[dict[str, Any], ItemContext]:
    """One item run; ``cache``: the prover's cache (compiled templates, the judge plugin), which items share so each
    template is compiled once (``shared_prover_cache``: the entries are keyed by content and validated on reading)."""
    from pytest_forall.lang.rocq.backend import RocqProver

    ctx = ItemContext(task=task, workspace_root=tmp_path / "ws", workspace_name=task.task_id,
                      audit=AuditRecord(tmp_path / "audit" / task.task_id, task),
                      prover=RocqProver({"cache_dir": str(cache)}), frontend=frontend,
                      reviewer=None,
                      budget=Budget(**budget), options={"sandbox": "none"}, run_secret=SECRET)
    return ItemRun(ctx).run(), ctx


def forall_verify(template: Path, candidate: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_forall.cli", "verify", "--prover", "rocq", "--template",
                           str(template), "--candidate", str(candidate)], capture_output=True, text=True,
                          cwd=REPO, timeout=600, check=False)


# --- derivations (no prover) ---------------------------------------------------------------------------

@pytest.mark.parametrize(("conclusion", "binders", "rest"), [
    ("forall n : nat, n > 0 -> P n", ["(n : nat)", "(forall_audit_h1 : n > 0)"], "P n"),
    ("forall (x : R) (y : R), x < y -> exists z, x < z -> z < y",
     ["(x : R) (y : R)", "(forall_audit_h1 : x < y)"], "exists z, x < z -> z < y"),
    ("(forall x, f x = 0) -> A <-> B -> C", ["(forall_audit_h0 : (forall x, f x = 0))", "(forall_audit_h1 : A <-> B)"],
     "C"),
    ("~ (n = 0 -> False)", [], "~ (n = 0 -> False)"),
    ("let m := n in m = 0 -> False", [], "let m := n in m = 0 -> False"),
    ("forall x y, x = y", [], "forall x y, x = y"),  # untyped and nothing after them: types unknown
    ("forall x y, x < y -> y = x", ["x y", "(forall_audit_h1 : x < y)"], "y = x"),
    ("forall f : nat -> nat,f 0 = 0", ["(f : nat -> nat)"], "f 0 = 0"),
    # a conclusion wrapped in parentheses is peeled like the bare one (its leading premise is the statement's)
    ("(forall P, (A P /\\ B P) -> (C P /\\ D))", ["P", "(forall_audit_h1 : (A P /\\ B P))"], "(C P /\\ D)"),
    ("((forall n : nat, n > 0 -> P n))", ["(n : nat)", "(forall_audit_h1 : n > 0)"], "P n"),
    ("(A -> B) -> (C)", ["(forall_audit_h0 : (A -> B))"], "(C)"),  # not one pair around the whole
])
def test_peel_takes_leading_binders_and_premises_and_stops_at_binding_constructs(
        conclusion: str, binders: list[str], rest: str) -> None:
    assert peel(conclusion) == (binders, rest)


def test_the_vacuity_task_of_putnam_2017_a1_keeps_every_hypothesis_and_concludes_false() -> None:
    task = putnam("putnam_2017_a1")
    derived = derived_tasks(task)
    assert set(derived) == {"false", "vacuous"}
    vacuity = derived["vacuous"]
    assert vacuity.theorem_name == "putnam_2017_a1_vacuous"
    header = task.template[task.template.index("(IsQualifying : "):task.template.index("\n    : ~`")]
    assert f"Theorem putnam_2017_a1_vacuous\n    {header}\n    : False.\nProof. Admitted.\n" in vacuity.template
    assert "_audit_shape" not in vacuity.template  # nothing peeled: the binders are taken verbatim
    assert vacuity.template.startswith(task.template[:task.template.index("Theorem putnam_2017_a1")])


def test_peeled_premises_are_checked_by_the_kernel_in_the_derived_template(tmp_path: Path) -> None:
    text = vacuity_text(VACUOUS, "empty")
    assert text is not None
    assert ("Definition empty_audit_shape :\n    @Coq.Init.Logic.eq _ (forall (f : nat -> nat), forall n : nat, "
            "n > 3 -> n < 2 -> f n = 0)\n    (forall (f : nat -> nat) (n : nat) (forall_audit_h1 : n > 3) "
            "(forall_audit_h2 : n < 2), f n = 0)\n    := @Coq.Init.Logic.eq_refl _ _.\n") in text
    assert "Theorem empty_vacuous\n    (f : nat -> nat) (n : nat) (forall_audit_h1 : n > 3) (forall_audit_h2 : n < 2)" \
           "\n    : False.\n" in text


#: A type class whose instance is chosen by default when a binder's type is not yet known: the statement
#: ``forall x, ok x -> x + 0 = x`` is over ``nat`` (the rest fixes it), but the peeled binders alone,
#: ``x (h : ok x)``, are elaborated over ``unit`` (the last instance declared), where ``ok x`` is ``False``.
DEFAULTED = ("Class Bad (T : Type) := { ok : T -> Prop }.\n"
             "#[global] Instance bad_nat : Bad nat := { ok := fun _ => True }.\n"
             "#[global] Instance bad_unit : Bad unit := { ok := fun _ => False }.\n"
             "Theorem defaulted : forall x, ok x -> x + 0 = x.\nProof. Admitted.\n")


def test_the_vacuity_task_is_tied_to_the_statement_by_a_frozen_definition_after_the_hole() -> None:
    text = vacuity_text(VACUOUS, "empty")
    assert text is not None
    assert text.endswith("Proof. Admitted.\nDefinition empty_audit_tie (f : nat -> nat) :\n    forall n : nat, n > 3 -> "
                         "n < 2 -> f n = 0\n    := fun forall_audit_a0 forall_audit_a1 forall_audit_a2 => "
                         "@Coq.Init.Logic.False_rect _ (@empty_vacuous f forall_audit_a0 forall_audit_a1 "
                         "forall_audit_a2).\n")


@pytest.mark.slow
def test_premises_typed_otherwise_without_the_rest_of_the_conclusion_cannot_flag(tmp_path: Path,
                                                                                 shared_prover_cache: Path) -> None:
    """The vacuity theorem elaborates its binders without the rest of the conclusion; the tie, stated like the
    template's theorem, makes a proof about differently typed premises fail to compile (no flag)."""
    require_tool("coqtop")
    from pytest_forall.lang.rocq.backend import RocqProver

    task = task_of(tmp_path, "defaulted", DEFAULTED)
    vacuity = derived_tasks(task)["vacuous"]
    assert "defaulted_vacuous\n    x (forall_audit_h1 : ok x)\n    : False." in vacuity.template
    certificate = vacuity.template.replace("Proof. Admitted.", "Proof. intros; exact forall_audit_h1. Qed.")
    prover = RocqProver({"cache_dir": str(shared_prover_cache)})
    verdict = verify_candidate(vacuity, prover, certificate.encode())
    assert not verdict.accepted and verdict.reason.startswith("template:"), verdict.reason
    assert 'has type "nat" while it is expected to have type\n "unit"' in verdict.reason
    search = audit_pack("rocq")
    assert search is not None
    found = search.search(task, derived_tasks(task), prover, tmp_path, time.monotonic() + 30)
    assert "vacuous" not in found.certificates
    # the tie was checked first and refused: no vacuity script was tried
    assert not any(line.startswith("intros; try cbv zeta") for line in found.log.splitlines()), found.log
    result, _ = run_item(tmp_path / "item", task, AuditFrontend({}), cache=shared_prover_cache)
    assert (result["outcome"], result["statement_audit"]) == ("failed", "unknown"), result["reason"]


#: A theorem's header binders are elaborated before its conclusion (``x : unit`` by the default instance; the
#: coercion ``five`` makes ``x + 0 = 5`` true by computation), the refuted ``forall (x : _) (h : ok x), x + 0 = 5``
#: all at once (``x : nat``, where it is false).
HEADER_FIRST = ("Class Bad (T : Type) := { ok : T -> Prop }.\n"
                "#[global] Instance bad_nat : Bad nat := { ok := fun _ => True }.\n"
                "#[global] Instance bad_unit : Bad unit := { ok := fun _ => True }.\n"
                "Coercion five (u : unit) : nat := 5.\n"
                "Theorem header_first (x : _) (h : ok x) : x + 0 = 5.\nProof. Admitted.\n")


@pytest.mark.slow
def test_a_refutation_of_the_statement_elaborated_otherwise_than_the_theorem_cannot_flag(
        tmp_path: Path, shared_prover_cache: Path) -> None:
    require_tool("coqtop")
    from pytest_forall.lang.rocq.backend import RocqProver

    prover = RocqProver({"cache_dir": str(shared_prover_cache)})
    task = task_of(tmp_path, "header_first", HEADER_FIRST)
    proved = verify_candidate(task, prover, HEADER_FIRST.replace("Proof. Admitted.", "Proof. reflexivity. Qed.").encode())
    assert proved.accepted, proved.reason  # the theorem is true
    refutation = derived_tasks(task)["false"]
    certificate = refutation.template.replace("Proof. Admitted.",
                                              "Proof. intro H; specialize (H 0 I); discriminate. Qed.")
    verdict = verify_candidate(refutation, prover, certificate.encode())
    assert not verdict.accepted and verdict.reason.startswith("template:"), verdict.reason
    search = audit_pack("rocq")
    assert search is not None
    found = search.search(task, derived_tasks(task), prover, tmp_path, time.monotonic() + 30)
    assert "false" not in found.certificates
    wrong = task_of(tmp_path, "wrong", FALSE)  # a false statement still is (its tie accepts the refutation)
    (tmp_path / "w").mkdir()
    assert "false" in search.search(wrong, derived_tasks(wrong), prover, tmp_path / "w",
                                    time.monotonic() + 30).certificates


def test_a_problem_without_an_audit_pack_or_without_hypotheses_derives_nothing(tmp_path: Path) -> None:
    fake = Task(task_id="t", suite="fake", track="fake", prover="fakeprover", source_path="t.txt",
                template="TEMPLATE\n", theorem_name="t")
    assert derived_tasks(fake) == {} and audit_pack("fakeprover") is None
    closed = task_of(tmp_path, "closed", "Theorem closed : 1 + 1 = 2.\nProof. Admitted.\n")
    assert set(derived_tasks(closed)) == {"false"}


def test_prompts_tell_the_actor_and_the_reviewer_about_vacuity(tmp_path: Path) -> None:
    task = task_of(tmp_path, "sound", SOUND)
    prompt = initial_prompt(task)
    assert "`STATEMENT_VACUOUS.v`" in prompt and "hypotheses contradict each other" in prompt
    assert "Theorem sound_vacuous\n    (n : nat) (h : n > 0)\n    : False." in prompt
    assert "`STATEMENT_FALSE.v`" in prompt and "Theorem sound_is_false" in prompt
    assert "VACUOUS:" in reviewer_prompt(task, "0" * 64)


def test_the_findings_table_is_markdown_with_a_recheck_command(tmp_path: Path) -> None:
    row = {"task_id": "p", "prover": "rocq", "statement_audit": "vacuous", "digest": "ab" * 32,
           "audit_dir": str(tmp_path / "items" / "p"), "certificate": "accepted/STATEMENT_VACUOUS.v",
           "certificate_template": "accepted/derived/p.v"}
    (tmp_path / "items" / "p").mkdir(parents=True)
    (tmp_path / "items" / "p" / "audit.log").write_text("closers: no\naudit counterexample: false: x := 1\n"
                                                        "audit counterexample: vacuous: by zero-witness\n")
    table = findings_table([row, {"task_id": "q", "statement_audit": "unknown"}])
    assert table[:2] == ["| problem | finding | counterexample | certificate (sha256) | re-check |",
                         "|---|---|---|---|---|"]
    assert len(table) == 3 and table[2].startswith("| `p` | vacuous: proves False from the statement's hypotheses | "
                                                   "by zero-witness |")
    assert (f"`forall verify --prover rocq --template {tmp_path}/items/p/accepted/derived/p.v --candidate "
            f"{tmp_path}/items/p/accepted/STATEMENT_VACUOUS.v`") in table[2]


# --- the search and the outcomes on the real kernel -------------------------------------------------------

@pytest.mark.slow
def test_putnam_2017_a1_is_vacuous_not_strict_and_its_certificate_is_reverified(tmp_path: Path,
                                                                                shared_prover_cache: Path) -> None:
    """The portfolio's ladder alone proves this statement (CoqHammer's qauto); with the audit it is vacuous."""
    require_tool("coqtop")
    result, ctx = run_item(tmp_path, putnam("putnam_2017_a1"), PortfolioFrontend({"tactic_timeout": 3}),
                           cache=shared_prover_cache)
    assert (result["outcome"], result["statement_audit"]) == ("vacuous", "vacuous"), result["reason"]
    assert result["reason"].startswith("STATEMENT_VACUOUS.v (sha256 ")
    assert result["certificate"] == "accepted/STATEMENT_VACUOUS.v"
    certificate = ctx.audit.directory / result["certificate"]
    template = ctx.audit.directory / result["certificate_template"]
    checked = forall_verify(template, certificate)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "verdict: accept (strict)" in checked.stdout and f"sha256={result['digest']}" in checked.stdout
    assert not (ctx.audit.directory / "accepted" / "putnam_2017_a1.v").exists()  # no proof was accepted


@pytest.mark.slow
def test_the_audit_finds_a_false_statement_and_leaves_a_sound_one_unknown(tmp_path: Path,
                                                                          shared_prover_cache: Path) -> None:
    require_tool("coqtop")
    wrong, ctx = run_item(tmp_path / "w", task_of(tmp_path, "wrong", FALSE), AuditFrontend({}),
                          cache=shared_prover_cache)
    assert (wrong["outcome"], wrong["statement_audit"]) == ("statement_false", "false"), wrong["reason"]
    checked = forall_verify(ctx.audit.directory / wrong["certificate_template"],
                            ctx.audit.directory / wrong["certificate"])
    assert checked.returncode == 0, checked.stdout + checked.stderr

    empty, _ = run_item(tmp_path / "e", task_of(tmp_path, "empty", VACUOUS), AuditFrontend({}),
                        cache=shared_prover_cache)
    assert (empty["outcome"], empty["statement_audit"]) == ("vacuous", "vacuous"), empty["reason"]

    sound, ctx = run_item(tmp_path / "s", task_of(tmp_path, "sound", SOUND), AuditFrontend({}),
                          cache=shared_prover_cache)
    assert (sound["outcome"], sound["statement_audit"], sound["certificate"]) == ("failed", "unknown", "")
    assert "does not attempt the proof" in sound["reason"]
    assert "sound_vacuous" not in sound["reason"] and not (ctx.audit.directory / "accepted").exists()
    proved, _ = run_item(tmp_path / "p", task_of(tmp_path, "sound", SOUND), PortfolioFrontend({"tactic_timeout": 3}),
                         cache=shared_prover_cache)
    assert (proved["outcome"], proved["statement_audit"]) == ("strict", "unknown")


def scripted(text: str, name: str) -> Any:
    """A frontend whose only turn writes ``text`` to ``name``."""
    class Session:
        session_id = ""

        def __init__(self, ctx: SessionContext) -> None:
            self.ctx = ctx

        def turn(self, prompt: str, *, timeout: float | None) -> TurnResult:
            (self.ctx.workspace / name).write_text(text)
            return TurnResult(final_text="submitted", gave_up="one turn only")

        def close(self) -> None:
            pass

    class Frontend:
        name = "scripted"
        is_agent = False

        def probe(self) -> str:
            return ""

        def start(self, ctx: SessionContext) -> Session:
            return Session(ctx)

    return Frontend()


@pytest.mark.slow
def test_tampered_certificates_for_a_sound_statement_never_flag_it(tmp_path: Path, shared_prover_cache: Path) -> None:
    """Every way of getting a ``False`` past the verifier for a sound statement is refused; none flags it."""
    require_tool("coqtop")
    task = task_of(tmp_path, "sound", SOUND)
    vacuity = derived_tasks(task)["vacuous"].template
    donor = derived_tasks(task_of(tmp_path, "empty", VACUOUS))["vacuous"].template
    tampered = {
        "admitted": vacuity,
        "a proof the kernel refuses": vacuity.replace("Proof. Admitted.", "Proof. intros; lia. Qed."),
        "axiom": vacuity.replace("Theorem sound_vacuous", "Axiom forall_cheat : False.\nTheorem sound_vacuous")
                        .replace("Proof. Admitted.", "Proof. exact forall_cheat. Qed."),
        "extra hypothesis": vacuity.replace("(h : n > 0)", "(h : n > 0) (bad : n = 0)")
                                   .replace("Proof. Admitted.", "Proof. intros; lia. Qed."),
        "weaker import": vacuity.replace("Require Import Arith.", "Require Import Arith.\nAxiom cheat : False.")
                                .replace("Proof. Admitted.", "Proof. exact cheat. Qed."),
        "another problem's certificate": donor.replace("Proof. Admitted.", "Proof. intros; lia. Qed."),
        "negated elsewhere": vacuity.replace("Proof. Admitted.", "Proof. Abort.\nTheorem x : True.\nProof. exact I. Qed."),
    }
    for label, text in tampered.items():
        result, ctx = run_item(tmp_path / label.replace(" ", "-"), task, scripted(text, "STATEMENT_VACUOUS.v"),
                               cache=shared_prover_cache, rounds=1)
        assert result["statement_audit"] == "unknown" and result["outcome"] == "failed", (label, result)
        assert not (ctx.audit.directory / "accepted").exists(), label
        verdicts = sorted((ctx.audit.directory / "s0" / "r1").glob("vacuity-verdict.json"))
        assert verdicts and json.loads(verdicts[0].read_text())["verdict"] == "reject", label


@pytest.mark.slow
def test_a_wrong_textual_split_cannot_flag_because_the_kernel_checks_the_shape(tmp_path: Path,
                                                                               shared_prover_cache: Path) -> None:
    """A notation at binder level hides its ``->`` from the textual split; the shape definition then fails."""
    require_tool("coqtop")
    from pytest_forall.lang.rocq.backend import RocqProver

    text = ('Notation "\'ALL\' x , P" := (forall x : nat, P) (at level 200, x name).\n'
            "Theorem hidden : ALL x, x = 0 -> 1 = 2.\nProof. Admitted.\n")
    task = task_of(tmp_path, "hidden", text)
    vacuity = derived_tasks(task)["vacuous"]
    assert "(forall_audit_h0 : ALL x, x = 0)" in vacuity.template  # the wrong split: a contradictory premise
    certificate = vacuity.template.replace("Proof. Admitted.", "Proof. intros; specialize (forall_audit_h0 1); "
                                                               "discriminate. Qed.")
    prover = RocqProver({"cache_dir": str(shared_prover_cache)})
    verdict = verify_candidate(vacuity, prover, certificate.encode())
    assert not verdict.accepted and verdict.reason.startswith("template:"), verdict.reason
    search = audit_pack("rocq")
    assert search is not None
    found = search.search(task, derived_tasks(task), prover, tmp_path, time.monotonic() + 30)
    assert "vacuous" not in found.certificates  # the false statement may be refuted (it is false at x = 0)


# --- reporting through pytest ------------------------------------------------------------------------------

@pytest.mark.slow
def test_junit_results_summary_and_report_carry_the_audit(pytester: pytest.Pytester) -> None:
    require_tool("coqtop")
    src = pytester.path / "bench" / "coq" / "src"
    src.mkdir(parents=True)
    for name, text in {"sound": SOUND, "wrong": FALSE, "empty": VACUOUS}.items():
        (src / f"{name}.v").write_text(text)
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {pytester.path / 'bench'}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--forall-frontend=audit", "--forall-run-id=au",
                                "--junitxml=au.xml", "-rs")
    result.stdout.fnmatch_lines(["*1 failed, 0 infra, 1 statement_false, 1 vacuous, 0 inner_vacuous  (3 items)",
                                 "suspected misformalizations: 2 (1 false, 1 vacuous, 0 inner_vacuous), each with a verified certificate:",
                                 "  empty: vacuous  */items/empty-coq/accepted/STATEMENT_VACUOUS.v",
                                 "  wrong: false  */items/wrong-coq/accepted/STATEMENT_FALSE.v"])
    rows = {r["task_id"]: r for r in map(json.loads, (pytester.path / "reports" / "au" / "results.jsonl")
                                         .read_text().splitlines())}
    assert {t: (r["outcome"], r["statement_audit"]) for t, r in rows.items()} == {
        "sound": ("failed", "unknown"), "wrong": ("statement_false", "false"), "empty": ("vacuous", "vacuous")}
    junit = (pytester.path / "au.xml").read_text()
    assert junit.count('name="forall.statement_audit"') == 3
    assert '<property name="forall.statement_audit" value="vacuous" />' in junit
    assert '<property name="forall.certificate" value="accepted/STATEMENT_VACUOUS.v" />' in junit
    out = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "report", str(pytester.path / "reports" / "au")],
                         capture_output=True, text=True, cwd=pytester.path, check=False)
    assert out.returncode == 0, out.stderr
    assert "| problem | finding | counterexample | certificate (sha256) | re-check |" in out.stdout
    assert "| `empty` | vacuous: proves False from the statement's hypotheses |" in out.stdout
    assert "| `wrong` | false: proves the negation of the statement |" in out.stdout


# --- Lean: derivations and the search's plumbing, against the stand-in only (it does not type-check) --------

PLAUSIBLE_REPORT = "===================\nFound problems!\n\nx := 258\n-------------------\n"


def test_lean_derived_tasks_restate_the_theorem_and_keep_the_filled_answer() -> None:
    from pytest_forall.lang.lean.problem import parse_lean

    path = PUTNAM / "lean4" / "src" / "putnam_2017_a1.lean"
    task = parse_lean(path.stem, path, path.read_text())
    derived = derived_tasks(task)
    assert set(derived) == {"false", "vacuous"}
    preamble = task.template[:task.template.index("theorem putnam_2017_a1")]
    assert "abbrev putnam_2017_a1_solution : Set ℤ := {x : ℤ | x > 0 ∧ (x = 1 ∨ 5 ∣ x)}" in preamble
    header = task.template[task.template.index("(IsQualifying : "):task.template.index(" :\n    Sᶜ")]
    assert derived["vacuous"].template == (f"{preamble}theorem putnam_2017_a1_vacuous\n    {header} :\n"
                                           "    False :=\n  sorry\n")
    assert derived["false"].template == (f"{preamble}theorem putnam_2017_a1_is_false :\n    ¬ (∀ {header}, "
                                         "Sᶜ ∩ {n | 0 < n} = putnam_2017_a1_solution) :=\n  sorry\n")
    assert derived["false"].frozen == derived["false"].template[:-len("sorry\n")]


def test_lean_counterexample_is_read_from_plausibles_report_and_instantiated() -> None:
    from pytest_forall.lang.lean.audit import counterexample, instance_scripts

    assert counterexample("error: " + PLAUSIBLE_REPORT) == [("x", "258")]
    assert counterexample("Gave up after failing to generate values that fulfill the preconditions 100 times.") == []
    assert instance_scripts([("x", "258"), ("ys", "[1]")])[0] == ("by\n  intro h\n  have := h (x := 258) (ys := [1])\n"
                                                                  "  revert this\n  decide")


def test_lean_search_verifies_each_script_and_stops_at_the_first_accepted(tmp_path: Path) -> None:
    """A scripted prover stands in for Lean: it compiles only what a real kernel would accept here."""
    sys.path.insert(0, str(Path(__file__).parent / "example_suites"))
    from fake_conftest import FakeProver

    from pytest_forall.core.prover import CompileResult
    from pytest_forall.lang.lean.audit import LeanAudit

    class Scripted(FakeProver):  # type: ignore[misc]
        name = "lean"

        def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> CompileResult:
            from pytest_forall.core.model import sha256_bytes

            text = candidate.read_text()
            if text.rstrip().endswith("plausible"):
                return CompileResult(ok=False, output="error: " + PLAUSIBLE_REPORT)
            ok = "(x := 258)" in text and text.rstrip().endswith("norm_num")
            return CompileResult(ok=ok, digest=sha256_bytes(candidate.read_bytes()),
                                 messages=[] if ok else [{"severity": "error", "data": "unsolved goals"}])

    text = "import Mathlib\n\ntheorem t (x : ℕ) (h : 2 ∣ x) : x < 100 :=\n  sorry\n"
    task = Task(task_id="t", suite="putnam", track="lean4", prover="lean", source_path="t.lean", template=text,
                frozen=text[:text.rindex("sorry")], theorem_name="t")
    derived = derived_tasks(task)
    found = LeanAudit().search(task, derived, Scripted(), tmp_path, time.monotonic() + 60)
    assert set(found.certificates) == {"false"}
    assert found.certificates["false"].endswith("have := h (x := 258)\n  revert this\n  norm_num\n")
    assert found.attempts == 5 + 2  # every vacuity tactic refused, then decide, then norm_num on the instance
    assert "plausible: counterexample [('x', '258')]" in found.log


def test_lean_derived_certificates_pass_the_standin_through_the_full_verifier(project: Path,  # noqa: F811
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the plumbing: the stand-in accepts any sorry-free file, so this says nothing about Lean's verdicts."""
    from pytest_forall.lang.lean.backend import LeanProver
    from pytest_forall.lang.lean.problem import parse_lean

    monkeypatch.setenv("PATH", f"{STANDIN}:{BASE_PATH}")
    path = PUTNAM / "lean4" / "src" / "putnam_2001_a1.lean"
    task = parse_lean(path.stem, path, path.read_text())
    vacuity = derived_tasks(task)["vacuous"]
    certificate = vacuity.frozen + "by\n  simp_all" + vacuity.template[len(vacuity.frozen) + len("sorry"):]
    verdict = verify_candidate(vacuity, LeanProver({"lean_project": str(project)}), certificate.encode(), timeout=60)
    assert verdict.accepted, verdict.reason
    assert [layer.name for layer in verdict.layers][:4] == ["syntax_screen", "frozen_statement", "shadowing_guard",
                                                            "template"]
