"""Lean's statement audit (lang/lean/audit.py): derived tasks on real PutnamBench Lean templates, the search's
scripts as text, and the search run through the full verifier against the stand-in.

Lean cannot run here. The stand-in (tests/standin/lean) does not type-check: it accepts any sorry-free file, so
these tests show what the audit *derives* and *submits*, and that only a verifier-accepted file is recorded —
never what Lean's kernel would accept: nothing the stand-in accepts here is a finding about a PutnamBench problem. Every expected text
below was written by hand from the Lean source of the template it names.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_verifier_lean import BASE_PATH, STANDIN, project  # noqa: F401 - ``project`` is a fixture

from conftest import PUTNAM, require_path
from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_INNER, AUDIT_VACUOUS, derived_tasks
from pytest_forall.core.model import Task
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.lean.audit import (
    Group,
    LeanAudit,
    binder_groups,
    definitional_witnesses,
    inner_scripts,
    peel,
    refutation_grid,
    specialisation_scripts,
    split_theorem,
    universal_hypotheses,
)


def template(problem: str) -> Task:
    from pytest_forall.lang.lean.problem import parse_lean

    path = require_path(PUTNAM / "lean4" / "src" / f"{problem}.lean", "PutnamBench's Lean templates")
    return parse_lean(path.stem, path, path.read_text())


def derived_text(task: Task, finding: str) -> str:
    """The derived task's text after the template's preamble (which every derived task keeps unchanged)."""
    split = split_theorem(task.template, task.theorem_name)
    assert split is not None
    text = derived_tasks(task)[finding].template
    assert text.startswith(split.preamble)
    return text[len(split.preamble):]


def header_groups(task: Task) -> list[Group]:
    split = split_theorem(task.template, task.theorem_name)
    assert split is not None
    groups = binder_groups(split.binders)
    assert groups is not None
    for binder in peel(split.conclusion)[0]:
        if not binder.startswith("(forall_audit_h"):
            groups += binder_groups(binder) or []
    return groups


# --- derived tasks on real templates -------------------------------------------------------------------------

def test_a_leading_premise_of_a_parenthesised_conclusion_is_peeled_and_tied_by_a_shape_theorem() -> None:
    """putnam_2000_a6: ``: ((∃ m > 0, a m = 0) → (a 1 = 0 ∨ a 2 = 0))`` — the premise joins the vacuity task's
    binders, and the frozen part proves by ``rfl`` that the re-cut statement is the statement."""
    task = template("putnam_2000_a6")
    header = "(f : Polynomial ℤ)\n(a : ℕ → ℤ)\n(ha0 : a 0 = 0)\n(ha : ∀ n : ℕ, a (n + 1) = f.eval (a n))"
    assert derived_text(task, AUDIT_VACUOUS) == (
        "theorem putnam_2000_a6_audit_shape :\n"
        f"    @Eq Prop (∀ {header}, ((∃ m > 0, a m = 0) → (a 1 = 0 ∨ a 2 = 0)))\n"
        f"    (∀ {header} (forall_audit_h0 : (∃ m > 0, a m = 0)), (a 1 = 0 ∨ a 2 = 0)) :=\n"
        "  rfl\n"
        "theorem putnam_2000_a6_vacuous\n"
        f"    {header} (forall_audit_h0 : (∃ m > 0, a m = 0)) :\n"
        "    False :=\n"
        "  sorry\n")
    assert derived_text(task, AUDIT_FALSE) == (
        f"theorem putnam_2000_a6_is_false :\n    ¬ (∀ {header}, ((∃ m > 0, a m = 0) → (a 1 = 0 ∨ a 2 = 0))) :=\n"
        "  sorry\n")
    assert AUDIT_INNER not in derived_tasks(task)  # ``a 1 = 0 ∨ a 2 = 0`` has no premise


def test_an_inner_premise_under_an_existential_becomes_a_definition_tied_by_the_inner_shape() -> None:
    """putnam_1962_b2: ``∃ f : ℝ → Set ℕ+, ∀ a b : ℝ, a < b → f a ⊂ f b`` — the premise ``a < b`` is defined
    over its scope (f, a, b); the claim is that it fails at every instance."""
    task = template("putnam_1962_b2")
    assert derived_text(task, AUDIT_INNER) == (
        "def putnam_1962_b2_audit_premise0 (f : ℝ → Set ℕ+) (a b : ℝ) : Prop :=\n"
        "    a < b\n"
        "theorem putnam_1962_b2_audit_inner_shape :\n"
        "    @Eq Prop (∃ f : ℝ → Set ℕ+, ∀ a b : ℝ, a < b → f a ⊂ f b)\n"
        "    (∃ f : ℝ → Set ℕ+, ∀ a b : ℝ, (putnam_1962_b2_audit_premise0 f a b) → f a ⊂ f b) :=\n"
        "  rfl\n"
        "theorem putnam_1962_b2_inner_vacuous :\n"
        "    (∀ (f : ℝ → Set ℕ+) (a b : ℝ), (putnam_1962_b2_audit_premise0 f a b) → False) :=\n"
        "  sorry\n")
    assert AUDIT_VACUOUS not in derived_tasks(task)  # no binders, nothing peeled past the ``∃``


def test_an_inner_premise_on_one_side_of_an_iff_is_read_and_the_iff_is_never_peeled() -> None:
    """putnam_1988_b2: ``(∀ x y : ℝ, (y ≥ 0 ∧ …) → (…)) ↔ putnam_1988_b2_solution``: ``↔`` is below ``→``, so
    nothing is peeled (no vacuity task); the premise inside the left side is an inner premise."""
    task = template("putnam_1988_b2")
    statement = "(∀ x y : ℝ, {} → (y * (y - 1) ≤ x ^ 2)) ↔ putnam_1988_b2_solution"
    premise = "(y ≥ 0 ∧ y * (y + 1) ≤ (x + 1) ^ 2)"
    assert set(derived_tasks(task)) == {AUDIT_FALSE, AUDIT_INNER}
    assert derived_text(task, AUDIT_INNER) == (
        f"def putnam_1988_b2_audit_premise0 (x y : ℝ) : Prop :=\n    {premise}\n"
        "theorem putnam_1988_b2_audit_inner_shape :\n"
        f"    @Eq Prop ({statement.format(premise)})\n"
        f"    ({statement.format('(putnam_1988_b2_audit_premise0 x y)')}) :=\n"
        "  rfl\n"
        "theorem putnam_1988_b2_inner_vacuous :\n"
        "    (∀ (x y : ℝ), (putnam_1988_b2_audit_premise0 x y) → False) :=\n"
        "  sorry\n")


def test_an_inner_premise_inside_a_parenthesised_conclusion_keeps_the_closing_parenthesis_in_the_shape() -> None:
    """putnam_2000_b3: ``: ((∀ i j : ℕ, i ≤ j → M i ≤ M j) ∧ Tendsto M atTop (𝓝 (2 * N)))``."""
    task = template("putnam_2000_b3")
    text = derived_text(task, AUDIT_INNER)
    assert "def putnam_2000_b3_audit_premise0 (N : ℕ) (hN : N > 0)" in text
    assert text.split("\n")[0].endswith("(i j : ℕ) : Prop :=") and text.split("\n")[1] == "    i ≤ j"
    assert (", ((∀ i j : ℕ, (putnam_2000_b3_audit_premise0 N hN a f mult M haN hf hmult hM i j) → M i ≤ M j) ∧ "
            "Tendsto M atTop (𝓝 (2 * N)))) :=\n  rfl\n") in text


def test_a_let_in_the_conclusion_stops_the_readers_and_stays_in_the_refutation() -> None:
    """putnam_1985_a1: ``: let (a, b, c, d) := putnam_1985_a1_solution; …`` — Lean headers have no let-binders
    (``declSig``), so the ``let`` is in the conclusion: nothing is peeled or read inside it."""
    task = template("putnam_1985_a1")
    split = split_theorem(task.template, task.theorem_name)
    assert split is not None and split.conclusion.startswith("let (a, b, c, d) := putnam_1985_a1_solution;")
    assert peel(split.conclusion) == ([], split.conclusion)
    assert set(derived_tasks(task)) == {AUDIT_FALSE}
    assert derived_text(task, AUDIT_FALSE).startswith("theorem putnam_1985_a1_is_false :\n    ¬ (let (a, b, c, d)")


def test_a_trailing_comment_of_the_header_or_conclusion_is_left_out_of_the_derived_statements() -> None:
    """A ``--`` comment runs to the end of its line: kept at the end of the conclusion it swallowed the
    refutation's closing parenthesis (found by the stand-in test below)."""
    text = ("import Mathlib\n\ntheorem t (x : ℕ) -- the variable\n    (h : x > 0) -- the premise\n"
            "    : x > 1 → x < 0 -- note\n    :=\n  sorry\n")
    split = split_theorem(text, "t")
    assert split is not None
    assert (split.binders, split.conclusion) == ("(x : ℕ) -- the variable\n    (h : x > 0)", "x > 1 → x < 0")
    task = Task(task_id="t", suite="s", track="lean4", prover="lean", source_path="t.lean", template=text,
                frozen=text[:text.rindex("sorry")], theorem_name="t")
    assert derived_tasks(task)[AUDIT_FALSE].template.endswith(
        "theorem t_is_false :\n    ¬ (∀ (x : ℕ) -- the variable\n    (h : x > 0), x > 1 → x < 0) :=\n  sorry\n")


@pytest.mark.parametrize(("conclusion", "peeled", "rest"), [
    ("A → B ↔ C", [], "A → B ↔ C"),  # ``(A → B) ↔ C``
    ("∃ x, A x → B", [], "∃ x, A x → B"),  # the arrow is inside the existential
    ("(∀ n : ℕ, n > 0 → P n)", ["(n : ℕ)", "(forall_audit_h1 : n > 0)"], "P n"),
    ("∀ {n : ℕ} [Fact p], n -> P n", ["{n : ℕ} [Fact p]", "(forall_audit_h1 : n)"], "P n"),
    # untyped: the vacuity task would type them from the peeled premises alone (ℕ for ``x > 0``), not as the
    # rest of the statement does, so they stop the peel
    ("∀ x y, P x y", [], "∀ x y, P x y"),
    ("∀ x, x > 0 → Q", [], "∀ x, x > 0 → Q"),
    ("∀ x > 0, f x = 1", [], "∀ x > 0, f x = 1"),
    ("∀ n : ℕ, ∀ x, x > n → Q", ["(n : ℕ)"], "∀ x, x > n → Q"),
    ("A -- why\n  → B", ["(forall_audit_h0 : A)"], "B"),  # the comment would swallow the binder's ``)``
])
def test_peel_follows_lean_precedence_and_binders(conclusion: str, peeled: list[str], rest: str) -> None:
    assert peel(conclusion) == (peeled, rest)


def test_an_inner_premise_ends_at_its_last_token_not_at_a_comment_before_the_arrow() -> None:
    from pytest_forall.lang.lean.audit import inner_premises

    rest = "∃ m : ℕ, m > 3 -- large\n  → m < 2"
    [premise] = inner_premises(rest, [])
    assert rest[premise.start:premise.end] == "m > 3"
    assert [g.text for g in premise.scope] == ["(m : ℕ)"]


def test_a_header_with_an_untyped_binder_gets_no_vacuity_or_inner_task() -> None:
    """``theorem t x (h : x > 0) (h' : x < 1) : …`` types ``x`` as ℝ from its conclusion; ``theorem t_vacuous x
    (h : x > 0) (h' : x < 1) : False`` could not, and would read ``x > 0`` and ``x < 1`` in ℕ. The same holds for
    the hypotheses of an inner claim."""
    conclusion = "(∀ y : ℝ, y = 2 → (x : ℝ) < y) ∧ (x : ℝ) < 1"
    for header in ("x (h : x > 0) (h' : x < 1)", "x"):
        text = f"import Mathlib\n\ntheorem t {header} :\n    {conclusion} :=\n  sorry\n"
        task = Task(task_id="t", suite="s", track="lean4", prover="lean", source_path="t.lean", template=text,
                    frozen=text[:text.rindex("sorry")], theorem_name="t")
        assert set(derived_tasks(task)) == {AUDIT_FALSE}, header
    typed = ORDERLY.replace("theorem orderly (a : ℕ → ℕ)", "theorem orderly (x : ℝ)")  # the control: typed
    task = Task(task_id="t", suite="s", track="lean4", prover="lean", source_path="t.lean", template=typed,
                frozen=typed[:typed.rindex("sorry")], theorem_name="orderly")
    assert set(derived_tasks(task)) == {AUDIT_FALSE, AUDIT_VACUOUS, AUDIT_INNER}


def test_binder_groups_make_implicit_groups_explicit_and_leave_instances_to_instance_search() -> None:
    groups = binder_groups("{α : Type*} [Fintype α] (x y : α) ⦃n : ℕ⦄ [h : Fact (1 < 2)]")
    assert groups is not None
    assert [(g.text, g.names, g.args) for g in groups] == [
        ("(α : Type*)", ("α",), ("α",)), ("[Fintype α]", ("_",), ()), ("(x y : α)", ("x", "y"), ("x", "y")),
        ("(n : ℕ)", ("n",), ("n",)), ("[h : Fact (1 < 2)]", ("h",), ())]
    [with_let] = binder_groups("(hα : ∀ n : ℕ, let b := [1]; b.length = n)") or []
    assert with_let.type == "∀ n : ℕ, let b := [1]; b.length = n"
    assert binder_groups("(x : ℕ := 3)") is None and binder_groups("x > 0") is None and binder_groups("(_ : ℕ)") is None


# --- the search's scripts, as text ------------------------------------------------------------------------------

def test_specialisation_tries_one_hypothesis_at_one_instance_per_alternative_each_closed() -> None:
    """putnam_1991_b2: ``fadd``/``gadd : ∀ x y, …`` are specialised at pairs of small values, one at a time."""
    scripts = specialisation_scripts(universal_hypotheses(header_groups(template("putnam_1991_b2"))))
    assert len(scripts) == 4  # one per closer: norm_num at this, simp at this, omega, linarith
    lines = scripts[0].split("\n")
    assert lines[:4] == ["by", "  first", "  | (have := fadd 0 0; norm_num at this; done)",
                         "  | (have := fadd 0 1; norm_num at this; done)"]
    assert lines[-1] == "  | (have := gadd 2 2; norm_num at this; done)"
    assert len(lines) == 2 + 9 + 9
    assert scripts[2].split("\n")[2] == "  | (have := fadd 0 0; omega; done)"
    assert specialisation_scripts([("h", 1)])[0].split("\n")[2:] == [
        f"  | (have := h {v}; norm_num at this; done)" for v in ("0", "1", "2", "3", "(-1)", "(1 / 2)")]


def test_definitional_witnesses_take_the_function_a_hypothesis_defines() -> None:
    """putnam_1999_a3: ``(hf : f = fun x ↦ 1 / (1 - 2 * x - x ^ 2))``; putnam_1963_a4:
    ``(T_def : ∀ a n, T a n = n * ((1 + a (n + 1)) / a n - 1))``."""
    assert definitional_witnesses(header_groups(template("putnam_1999_a3"))) == {
        "f": ("fun x ↦ 1 / (1 - 2 * x - x ^ 2)", "hf", "rfl")}
    assert definitional_witnesses(header_groups(template("putnam_1963_a4"))) == {
        "T": ("fun a n => n * ((1 + a (n + 1)) / a n - 1)", "T_def", "fun _ _ => rfl")}
    # the right side names another variable of the statement: no witness (it could not be written there)
    assert definitional_witnesses(header_groups(template("putnam_2000_b3"))) == {}


def test_the_refutation_grid_instantiates_by_name_with_the_definitional_witness_fixed() -> None:
    """putnam_1999_a3: ``f`` fixed by its definition, ``a : ℕ → ℝ`` at constant and indicator functions, ``n : ℕ``
    at 0…3."""
    scripts = refutation_grid(header_groups(template("putnam_1999_a3")))
    assert len(scripts) == 2
    lines = scripts[0].split("\n")
    fixed = "(f := fun x ↦ 1 / (1 - 2 * x - x ^ 2)) (hf := rfl)"
    assert lines[:3] == ["by", "  intro h", "  first"]
    assert lines[3] == f"  | (have := h {fixed} (a := fun _ => 0) (n := 0); norm_num at this; done)"
    assert lines[-1] == (f"  | (have := h {fixed} (a := fun x => if x = 0 then 1 else 0) (n := 3); norm_num at this; "
                         "done)")
    assert len(lines) == 3 + 3 * 4  # a: two constants and the indicator of 0 (ℕ → ℝ: no identity); n: 0…3
    assert scripts[1].split("\n")[3].endswith("(n := 0); simp at this; done)")


def test_inner_scripts_pick_the_disjunct_introduce_under_the_written_names_and_unfold_the_premise() -> None:
    assert inner_scripts(template("putnam_1962_b2")) == [
        ("by\n  intro f a b forall_audit_p0\n"
         "  unfold putnam_1962_b2_audit_premise0 at forall_audit_p0\n"
         "  first\n  | omega\n  | linarith\n  | (norm_num at *; done)\n  | (simp_all; done)\n  | tauto")]
    text = ("import Mathlib\n\ntheorem t (f : ℕ → ℕ) (hf : ∀ n, f n = 0) :\n"
            "    (∀ n : ℕ, n < 0 → f n = 1) ∧ (∀ m : ℕ, f m > 5 → False) :=\nsorry\n")
    task = Task(task_id="t", suite="s", track="lean4", prover="lean", source_path="t.lean", template=text,
                frozen=text[:text.rindex("sorry")], theorem_name="t")
    scripts = inner_scripts(task)
    assert [s.split("\n")[1:4] for s in scripts if "| omega" in s] == [
        ["  refine Or.inl ?_", "  intro f hf n forall_audit_p0", "  unfold t_audit_premise0 at forall_audit_p0"],
        ["  refine Or.inr (?_)", "  intro f hf m forall_audit_p1", "  unfold t_audit_premise1 at forall_audit_p1"]]
    specialised = [s for s in scripts if "have :=" in s]
    assert specialised[0].split("\n")[5] == "  | (have := hf 0; norm_num at this; done)"


# --- the search through the full verifier, against the stand-in ----------------------------------------------

def test_the_search_records_a_certificate_only_when_the_verifier_accepts_it(project: Path,  # noqa: F811
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    """The stand-in accepts any sorry-free file, so the first inner script is "accepted": that is the plumbing
    (the file recorded is exactly the one the verifier judged), not a Lean result about putnam_1962_b2. With an
    error the stand-in reports inside the statement — as Lean would report a shape theorem that does not hold —
    every attempt is refused and nothing is recorded."""
    from pytest_forall.lang.lean.backend import LeanProver

    monkeypatch.setenv("PATH", f"{STANDIN}:{BASE_PATH}")
    prover = LeanProver({"lean_project": str(project)})
    task = template("putnam_1962_b2")
    inner = derived_tasks(task)[AUDIT_INNER]
    found = LeanAudit().search(task, {AUDIT_INNER: inner}, prover, tmp_path, time.monotonic() + 120)
    assert found.attempts == 1
    certificate = found.certificates[AUDIT_INNER]
    assert certificate == inner.frozen + inner_scripts(task)[0] + "\n"
    assert verify_candidate(inner, prover, certificate.encode(), timeout=60).accepted  # re-judged: the same verdict

    # putnam_1962_b2 is a true theorem, yet its refutation "passes" the stand-in at the first script: the
    # stand-in accepts any sorry-free file, which is why nothing it accepts is a Lean result
    everything = LeanAudit().search(task, derived_tasks(task), prover, tmp_path, time.monotonic() + 120)
    assert set(everything.certificates) == {AUDIT_FALSE}
    assert everything.certificates[AUDIT_FALSE].endswith("¬ (∃ f : ℝ → Set ℕ+, ∀ a b : ℝ, a < b → f a ⊂ f b) :=\n"
                                                         "  by\n  decide\n")

    broken_text = task.template.replace("a < b →", "a < b -- STANDIN_ERROR: type mismatch\n  →")
    broken = Task(task_id=task.task_id, suite=task.suite, track=task.track, prover=task.prover,
                  source_path=task.source_path, template=broken_text,
                  frozen=broken_text[:broken_text.rindex("sorry")], theorem_name=task.theorem_name)
    derived = derived_tasks(broken)
    assert set(derived) == {AUDIT_FALSE, AUDIT_INNER}
    assert "STANDIN_ERROR" in derived[AUDIT_INNER].frozen.split("theorem putnam_1962_b2_audit_inner_shape")[1]
    assert "STANDIN_ERROR" in derived[AUDIT_FALSE].frozen.split("theorem putnam_1962_b2_is_false")[1]
    refused = LeanAudit().search(broken, derived, prover, tmp_path, time.monotonic() + 120)
    assert refused.certificates == {}
    # each derived template itself fails to compile: an infrastructure verdict, and that finding's search stops
    assert refused.attempts == 2
    lines = [line for line in refused.log.splitlines() if not line.startswith("plausible")]
    assert lines == [
        "false: decide: infra template: template does not compile here: type mismatch",
        "false: the derived template does not compile; no certificate possible",
        ("inner_vacuous: intro f a b forall_audit_p0 … (9 lines): infra template: template does not compile here: "
         "type mismatch"), "inner_vacuous: the derived template does not compile; no certificate possible"]


def test_a_vacuity_certificate_with_its_shape_theorem_passes_every_layer_of_the_standin(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Plumbing only: a derived file whose frozen part proves a shape theorem is a valid template for the verifier's
    static layers and its statement checks (the stand-in accepts the proof without checking it)."""
    from pytest_forall.lang.lean.backend import LeanProver

    monkeypatch.setenv("PATH", f"{STANDIN}:{BASE_PATH}")
    vacuity = derived_tasks(template("putnam_2000_a6"))[AUDIT_VACUOUS]
    assert "theorem putnam_2000_a6_audit_shape :" in vacuity.frozen
    certificate = vacuity.frozen + "by\n  omega\n"
    verdict = verify_candidate(vacuity, LeanProver({"lean_project": str(project)}), certificate.encode(), timeout=60)
    assert verdict.accepted, verdict.reason
    assert {layer.name: layer.ok for layer in verdict.layers}["elaborated_statement"] is True


def test_a_certificate_cannot_change_the_shape_theorem_it_is_tied_by(project: Path,  # noqa: F811
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The tie is part of the frozen text: a claim file that redefines the premise (so that the shape theorem
    would no longer hold) or renames the shape theorem is refused by the static layers, before any compile.
    (That Lean's kernel checks the shape theorem itself is not shown here: the stand-in does not type-check.)"""
    from pytest_forall.lang.lean.backend import LeanProver

    monkeypatch.setenv("PATH", f"{STANDIN}:{BASE_PATH}")
    prover = LeanProver({"lean_project": str(project)})
    inner = derived_tasks(template("putnam_1962_b2"))[AUDIT_INNER]
    honest = inner.frozen + "by\n  intro f a b h\n  exact absurd h (lt_irrefl a)\n"
    assert verify_candidate(inner, prover, honest.encode(), timeout=60).accepted  # the stand-in accepts anything
    for old, new in (("Prop :=\n    a < b\n", "Prop :=\n    False\n"),
                     ("theorem putnam_1962_b2_audit_inner_shape", "theorem putnam_1962_b2_audit_inner_shape'")):
        forged = honest.replace(old, new)
        assert forged != honest
        verdict = verify_candidate(inner, prover, forged.encode(), timeout=60)
        assert not verdict.accepted
        layers = {layer.name: layer.ok for layer in verdict.layers}
        assert layers["frozen_statement"] is False and "template" not in layers and "elaboration" not in layers


# --- the protocol: a Lean claim file judged like any submission, against the stand-in ------------------------

ORDERLY = ("import Mathlib\n\ntheorem orderly (a : ℕ → ℕ) :\n    ∃ b : ℕ → ℕ, ∀ i j : ℕ, i ≤ j → j < i → b i = a j :=\n"
           "  sorry\n")


def run_lean_item(tmp_path: Path, task: Task, frontend: Any, lean_project: Path) -> tuple[dict, Any]:  # type: ignore[type-arg]
    from pytest_forall.core.accept import AuditRecord
    from pytest_forall.core.model import Budget
    from pytest_forall.core.protocol import ItemContext, ItemRun
    from pytest_forall.lang.lean.backend import LeanProver

    ctx = ItemContext(task=task, workspace_root=tmp_path / "ws", workspace_name=task.task_id,
                      audit=AuditRecord(tmp_path / "audit" / task.task_id, task),
                      prover=LeanProver({"lean_project": str(lean_project)}), frontend=frontend, reviewer=None,
                      budget=Budget(rounds=1), options={"sandbox": "none"}, run_secret=b"lean-audit-test")
    return ItemRun(ctx).run(), ctx


def test_an_inner_claim_file_ends_the_item_inner_vacuous_only_when_the_verifier_accepts_it(
        project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # noqa: F811
    """Core's third claim kind with a Lean task: ``STATEMENT_INNER_VACUOUS.lean`` is judged against the derived
    task (the order condition ``i ≤ j → j < i`` fails at every instance; the proof is what Lean would need, but
    the stand-in accepts any sorry-free file). A claim file whose frozen text (the shape theorem) was changed is
    refused and recorded as nothing."""
    from test_audit import scripted

    monkeypatch.setenv("PATH", f"{STANDIN}:{BASE_PATH}")
    path = tmp_path / "orderly.lean"
    path.write_text(ORDERLY)
    task = Task(task_id="orderly", suite="s", track="lean4", prover="lean", source_path=str(path), template=ORDERLY,
                frozen=ORDERLY[:ORDERLY.rindex("sorry")], theorem_name="orderly")
    inner = derived_tasks(task)[AUDIT_INNER]
    assert inner.template.endswith(
        "theorem orderly_inner_vacuous :\n"
        "    (∀ (a : ℕ → ℕ) (b : ℕ → ℕ) (i j : ℕ), (orderly_audit_premise0 a b i j) → False)\n"
        "    ∨ (∀ (a : ℕ → ℕ) (b : ℕ → ℕ) (i j : ℕ), (orderly_audit_premise0 a b i j) → "
        "(orderly_audit_premise1 a b i j) → False) :=\n  sorry\n")
    honest = inner.frozen + ("by\n  refine Or.inr (?_)\n  intro a b i j h0 h1\n  unfold orderly_audit_premise0 at h0\n"
                             "  unfold orderly_audit_premise1 at h1\n  omega\n")
    result, ctx = run_lean_item(tmp_path / "honest", task, scripted(honest, "STATEMENT_INNER_VACUOUS.lean"), project)
    assert (result["outcome"], result["statement_audit"]) == ("inner_vacuous", "inner_vacuous"), result["reason"]
    assert result["certificate"] == "accepted/STATEMENT_INNER_VACUOUS.lean"
    assert (ctx.audit.directory / result["certificate"]).read_text() == honest

    forged = honest.replace("theorem orderly_audit_inner_shape", "theorem orderly_audit_inner_shape'")
    result, ctx = run_lean_item(tmp_path / "forged", task, scripted(forged, "STATEMENT_INNER_VACUOUS.lean"), project)
    assert (result["outcome"], result["statement_audit"]) == ("failed", "unknown"), result["reason"]
    assert not (ctx.audit.directory / "accepted").exists()
