"""Static Lean layers against real PutnamBench templates: one test per cheat class, plus valid-but-tricky proofs.

Templates come from the real adapter, so the ``…_solution`` answer is already filled in as the lead does.
Each cheat asserts the layer meant to catch it rejects and, where the class is isolated, that the other
two layers accept it, i.e. the cheat would pass if that layer were removed.
"""

from __future__ import annotations

import re

import pytest

from conftest import PUTNAM, require_path
from pytest_forall.core.model import Task
from pytest_forall.lang.lean.problem import parse_lean
from pytest_forall.lang.screens import lean_static_layers

LEAN_SRC = PUTNAM / "lean4" / "src"
LAYERS = ("syntax_screen", "frozen_statement", "shadowing_guard")
GREATEST = "putnam_1974_a1"  # open Set; abbrev …_solution : ℕ := 11; IsGreatest, Icc, Int.gcd; `:=\n  sorry`
GAME = "putnam_2025_a3"  # helper defs and an inductive in the preamble; `:= by\n  sorry`
SQRT = "putnam_1962_a2"  # open MeasureTheory Set; √ and ⨍ in the statement

@pytest.fixture(autouse=True)
def _lean_sources() -> None:
    require_path(LEAN_SRC, "PutnamBench Lean sources")


def task(stem: str) -> Task:
    path = LEAN_SRC / f"{stem}.lean"
    return parse_lean(stem, path, path.read_text(encoding="utf-8"))


def fill(stem: str, proof: str = "by simp", before: str = "", text: str | None = None) -> str:
    """The template with its final ``sorry`` replaced by ``proof`` and ``before`` inserted above the theorem.

    ``proof`` is written for a ``:= sorry`` hole; for a ``:= by sorry`` hole its leading ``by`` is dropped.
    """
    text = task(stem).template if text is None else text
    hole = text.rfind("sorry")
    if text[:hole].rstrip().endswith("by") and proof.startswith("by"):
        proof = proof[2:].lstrip(" ")
    text = text[:hole] + proof + text[hole + len("sorry"):]
    if before:
        start = re.search(rf"^theorem {stem}\b", text, re.MULTILINE).start()
        doc = text.rfind("/--", 0, start)
        if doc >= 0 and not text[text.find("-/", doc) + 2:start].strip():
            start = doc  # keep the theorem's docstring attached to it
        text = text[:start] + before + "\n\n" + text[start:]
    return text


def judge(stem: str, candidate: str) -> dict[str, object]:
    layers = lean_static_layers(task(stem).template, candidate, theorem_name=stem)
    assert [layer.name for layer in layers] == list(LAYERS)
    return {layer.name: layer for layer in layers}


def assert_rejected_by(layer: str, stem: str, candidate: str, *, alone: bool = True) -> None:
    layers = judge(stem, candidate)
    assert layers[layer].ok is False, f"{layer} accepted the cheat"
    assert re.search(r"line \d+", layers[layer].reason), layers[layer].reason
    assert layers[layer].evidence
    if alone:
        others = {name: layers[name].reason for name in LAYERS if name != layer and not layers[name].ok}
        assert not others, f"other layers also rejected: {others}"


def assert_accepted(stem: str, candidate: str) -> None:
    layers = judge(stem, candidate)
    assert all(layers[name].ok for name in LAYERS), {n: layers[n].reason for n in LAYERS if not layers[n].ok}


HELPER = "theorem helper : True := trivial"

SYNTAX_CHEATS = {
    "sorry_kept": (GREATEST, lambda: fill(GREATEST, "sorry")),
    "sorry_in_tactic_block": (GAME, lambda: fill(GAME, "by\n  constructor <;> sorry")),
    "admit": (GAME, lambda: fill(GAME, "by\n  admit")),
    "stop": (GAME, lambda: fill(GAME, "by\n  stop\n  simp")),
    "sorry_ax": (GREATEST, lambda: fill(GREATEST, "sorryAx _ false")),
    "sorry_ax_guillemets": (GREATEST, lambda: fill(GREATEST, "«sorryAx» _ false")),  # the name sorryAx [L8]
    "native_decide_guillemets": (GAME, lambda: fill(GAME, "by\n  «native_decide»")),
    "axiom": (GREATEST, lambda: fill(GREATEST, "cheat _", "axiom cheat (P : Prop) : P")),
    "private_axiom": (GREATEST, lambda: fill(GREATEST, "cheat _", "private axiom cheat (P : Prop) : P")),
    "axiom_indented_inside_helper_proof": (GREATEST, lambda: fill(
        GREATEST, "cheat _", "theorem helper : True := by\n  trivial\n  axiom cheat (P : Prop) : P")),
    "native_decide": (GREATEST, lambda: fill(GREATEST, "by native_decide")),
    "decide_plus_native": (GREATEST, lambda: fill(GREATEST, "by decide +native")),
    "decide_native_config": (GREATEST, lambda: fill(GREATEST, "by decide (config := { native := true })")),
    "of_reduce_bool": (GREATEST, lambda: fill(GREATEST, "by exact Lean.ofReduceBool _ _ rfl")),
    "implemented_by": (GREATEST, lambda: fill(GREATEST, "by simp", "@[implemented_by id] def f (n : ℕ) : ℕ := n")),
    "extern": (GREATEST, lambda: fill(GREATEST, "by simp", '@[extern "c_f"] def f (n : ℕ) : ℕ := n')),
    "csimp": (GREATEST, lambda: fill(GREATEST, "by simp", "@[csimp] theorem f_eq : @id = @id := rfl")),
    "unsafe_def": (GREATEST, lambda: fill(GREATEST, "by simp", "unsafe def f : ℕ := 0")),
    "partial_def": (GREATEST, lambda: fill(GREATEST, "by simp", "partial def f (n : ℕ) : ℕ := f n")),
    "opaque": (GREATEST, lambda: fill(GREATEST, "by simp", "opaque cheat : False")),
    "elab": (GREATEST, lambda: fill(GREATEST, "by cheat", 'elab "cheat" : tactic => return')),
    "elab_rules": (GREATEST, lambda: fill(GREATEST, "by simp", "elab_rules : tactic | `(tactic| cheat) => return")),
    "macro": (GREATEST, lambda: fill(GREATEST, "by cheat", 'macro "cheat" : tactic => `(tactic| sorry)')),
    "macro_rules": (GREATEST, lambda: fill(GREATEST, "by simp", "macro_rules | `(tactic| simp) => `(tactic| sorry)")),
    "syntax": (GREATEST, lambda: fill(GREATEST, "by simp", 'syntax "cheat" : tactic')),
    "declare_syntax_cat": (GREATEST, lambda: fill(GREATEST, "by simp", "declare_syntax_cat cheat")),
    "run_cmd": (GREATEST, lambda: fill(GREATEST, "by simp", 'run_cmd logInfo "x"')),
    "run_elab": (GREATEST, lambda: fill(GREATEST, "by simp", "run_elab pure ()")),
    "run_meta": (GREATEST, lambda: fill(GREATEST, "by simp", "run_meta pure ()")),
    "hash_eval": (GREATEST, lambda: fill(GREATEST, "by simp", "#eval 1")),
    "hash_print_after_theorem": (GREATEST, lambda: fill(GREATEST, "by simp") + "\n#print axioms putnam_1974_a1\n"),
    "hash_exit": (GREATEST, lambda: fill(GREATEST, "by simp", "#exit")),
    "initialize": (GREATEST, lambda: fill(GREATEST, "by simp", "initialize pure ()")),
    "builtin_initialize": (GREATEST, lambda: fill(GREATEST, "by simp", "builtin_initialize pure ()")),
    "prelude": (GREATEST, lambda: "prelude\n" + fill(GREATEST, "by simp")),
    "extra_import": (GREATEST, lambda: fill(GREATEST, "by simp").replace("import Mathlib", "import Mathlib\nimport Evil")),
    "skip_kernel_tc": (GREATEST, lambda: fill(GREATEST, "by simp", "set_option debug.skipKernelTC true")),
    "skip_kernel_tc_in": (GREATEST, lambda: fill(GREATEST, "by simp", "set_option debug.skipKernelTC true in")),
    "option_inside_proof": (GAME, lambda: fill(GAME, "by\n  set_option debug.skipKernelTC true in\n  simp")),
    "variable": (GREATEST, lambda: fill(GREATEST, "by simp", "variable [Fact False]")),
    "include_omit": (GREATEST, lambda: fill(GREATEST, "by simp", "include h\nomit h")),
    "modify_env_in_proof": (GAME, lambda: fill(GAME, "by\n  run_tac Lean.modifyEnv id\n  simp")),
    "by_elab_term": (GREATEST, lambda: fill(GREATEST, "by_elab pure (Lean.mkConst ``True.intro)")),
    "name_literal": (GAME, lambda: fill(GAME, "by\n  exact (`foo).isAnonymous.elim")),
    "interpolated_string": (GAME, lambda: fill(GAME, 'by\n  have := s!"{(sorry : ℕ)}"\n  simp')),
    "theorem_after_main": (GREATEST, lambda: fill(GREATEST, "by simp") + "\ntheorem later : False := sorry\n"),
    "attribute_not_allowed": (GREATEST, lambda: fill(GREATEST, "by simp", "@[instance] def f : Inhabited ℕ := ⟨0⟩")),
    "bidi_control": (GREATEST, lambda: fill(GREATEST, "by simp -- \u2067 hidden")),
    "zero_width_joiner": (GREATEST, lambda: fill(GREATEST, "by simp\u200d")),
    "control_character": (GREATEST, lambda: fill(GREATEST, "by simp\x0b")),
    "no_proof_at_all": (GREATEST, lambda: fill(GREATEST, "")),
}

def doc_comment_slash(stem: str) -> str:
    """`/--` is a token [lean-facts L1, L3]: `/--/` opens a doc comment that closes only at the next `-/`, here
    inside what a `/- -/`-only lexer takes for a `--` comment; Lean elaborates `theorem … : True` instead."""
    text = fill(stem, "by simp -- -/ theorem " + stem + " : True := trivial")
    start = text.index("/--", text.index("abbrev") if "abbrev" in text else 0)
    return text[:start] + "/--/\n" + text[start:]


FROZEN_CHEATS = {
    "doc_comment_token_slash": (GREATEST, lambda: doc_comment_slash(GREATEST)),
    "answer_tampered": (GREATEST, lambda: fill(GREATEST, text=task(GREATEST).template.replace(
        "_solution : ℕ := 11", "_solution : ℕ := 12"))),
    "hypothesis_added": (GREATEST, lambda: fill(GREATEST, text=task(GREATEST).template.replace(
        "(conspiratorial : Set ℤ → Prop)", "(conspiratorial : Set ℤ → Prop) (cheat : False)"))),
    "conclusion_weakened": (GREATEST, lambda: fill(GREATEST, text=task(GREATEST).template.replace(
        "IsGreatest {k |", "IsLeast {k |"))),
    "statement_hidden_in_comment": (GAME, lambda: fill(GAME, text=task(GAME).template.replace(
        "putnam_2025_a3_solution n ↔ AliceHasWinningStrategy n", "True -- putnam_2025_a3_solution n ↔ "
                                                              "AliceHasWinningStrategy n"))),
    "statement_hidden_in_block_comment": (GAME, lambda: fill(GAME, text=task(GAME).template.replace(
        "putnam_2025_a3_solution n ↔ AliceHasWinningStrategy n", "/- putnam_2025_a3_solution n ↔ "
                                                              "AliceHasWinningStrategy n -/ True"))),
    "preamble_definition_changed": (GAME, lambda: fill(GAME, text=task(GAME).template.replace(
        "HasWinningStrategy n []", "True"))),
    "preamble_command_dropped": (GREATEST, lambda: fill(GREATEST, text=task(GREATEST).template.replace(
        "open Set\n", ""))),
    "projection_spacing_changed": (GREATEST, lambda: fill(GREATEST, text=task(GREATEST).template.replace(
        "S.encard = k", "S .encard = k"))),
    "moved_to_column_one": (GREATEST, lambda: fill(GREATEST, text=task(GREATEST).template.replace(
        "{k | ∃ S, S ⊆ Icc 1 16", "{k | ∃ S, S ⊆ Icc 1\n16"))),
    "theorem_renamed": (GREATEST, lambda: fill(GREATEST).replace("theorem putnam_1974_a1", "theorem putnam_1974_a1'")),
}

SHADOWING_CHEATS = {
    "helper_namespace_not_closed": (GREATEST, lambda: fill(
        GREATEST, "by simp", "namespace Helpers\ntheorem aux : True := trivial")),
    "template_command_inside_inserted_namespace": (GAME, lambda: fill(
        GAME, "by simp", text=task(GAME).template.replace("\ninductive", "\nnamespace Sneaky\nend Sneaky\n"
                                                         "namespace Wrap\ninductive", 1).replace(
            "\ntheorem " + GAME, "\nend Wrap\ntheorem " + GAME, 1))),
    "local_def_is_greatest": (GREATEST, lambda: fill(
        GREATEST, "by simp", "def IsGreatest (s : Set ℕ∞) (a : ℕ) : Prop := True")),
    "helper_named_like_binder_namespace": (GREATEST, lambda: fill(
        GREATEST, "by simp", "def Int.gcd (a b : ℤ) : ℕ := 2")),
    "root_prefixed_shadow": (GREATEST, lambda: fill(GREATEST, "by simp", "def _root_.Icc (a b : ℕ) : Set ℤ := ∅")),
    "helper_theorem_named_like_solution_part": (SQRT, lambda: fill(
        SQRT, "by simp", "theorem EqOn : True := trivial")),
    "dot_notation_target": (GREATEST, lambda: fill(GREATEST, "by simp", "def Set.encard (s : Set ℤ) : ℕ∞ := 0")),
    "namespace_wrapper": (GREATEST, lambda: fill(GREATEST, "by simp", "namespace Cheat")),
    "section_wrapper": (GREATEST, lambda: fill(GREATEST, "by simp", "section")),
    "end_of_scope": (GREATEST, lambda: fill(GREATEST, "by simp", "end")),
    "open_namespace": (GREATEST, lambda: fill(GREATEST, "by simp", "open Finset")),
    "open_in": (GREATEST, lambda: fill(GREATEST, "by simp", "open Finset in")),
    "open_private": (GREATEST, lambda: fill(GREATEST, "by simp", "open private foo from Nat")),
    "export": (GREATEST, lambda: fill(GREATEST, "by simp", "export Finset (card)")),
    "notation": (GREATEST, lambda: fill(GREATEST, "by simp", 'notation "IsGreatest" => IsLeast')),
    "infix": (GREATEST, lambda: fill(GREATEST, "by simp", 'infixl:65 " ∧ " => Or')),
    "prefix_postfix": (GREATEST, lambda: fill(GREATEST, "by simp", 'prefix:max "¬" => id')),
    "local_notation": (GREATEST, lambda: fill(GREATEST, "by simp", 'local notation "ℤ" => ℕ')),
    "scoped_instance": (GREATEST, lambda: fill(GREATEST, "by simp", "scoped instance : Inhabited ℕ := ⟨1⟩")),
    "instance": (GREATEST, lambda: fill(GREATEST, "by simp", "instance cheatOrder : LE ℤ := ⟨fun _ _ => True⟩")),
    "attribute_instance": (GREATEST, lambda: fill(GREATEST, "by simp", "attribute [instance] Int.instLEInt")),
    "attribute_simp_on_frozen_name": (GREATEST, lambda: fill(GREATEST, "by simp", "attribute [simp] Int.gcd")),
    "attribute_local_instance": (GREATEST, lambda: fill(GREATEST, "by simp", "attribute [local instance] foo")),
}


@pytest.mark.parametrize("stem,build", SYNTAX_CHEATS.values(), ids=SYNTAX_CHEATS.keys())
def test_syntax_screen_rejects(stem: str, build) -> None:
    assert_rejected_by("syntax_screen", stem, build(), alone=True)


@pytest.mark.parametrize("stem,build", FROZEN_CHEATS.values(), ids=FROZEN_CHEATS.keys())
def test_frozen_statement_rejects(stem: str, build) -> None:
    assert_rejected_by("frozen_statement", stem, build(), alone=False)


@pytest.mark.parametrize("stem,build", SHADOWING_CHEATS.values(), ids=SHADOWING_CHEATS.keys())
def test_shadowing_guard_rejects(stem: str, build) -> None:
    assert_rejected_by("shadowing_guard", stem, build(), alone=True)


def test_frozen_statement_pure_edits_leave_other_layers_passing() -> None:
    for name in ("hypothesis_added", "conclusion_weakened", "statement_hidden_in_comment",
                 "statement_hidden_in_block_comment", "preamble_command_dropped", "projection_spacing_changed",
                 "moved_to_column_one"):
        stem, build = FROZEN_CHEATS[name]
        assert_rejected_by("frozen_statement", stem, build(), alone=True)


def test_frozen_statement_evidence_names_first_difference() -> None:
    stem, build = FROZEN_CHEATS["answer_tampered"]
    layer = judge(stem, build())["frozen_statement"]
    assert layer.reason.startswith("line 5: template command differs from the template (template line 5)")
    assert layer.evidence["expected"] == "'11'" and layer.evidence["found"] == "'12'"


def test_answer_tampering_is_also_a_shadowing_of_the_solution_name() -> None:
    stem, build = FROZEN_CHEATS["answer_tampered"]
    assert "putnam_1974_a1_solution" in judge(stem, build())["shadowing_guard"].reason


VALID = {
    "open_in_inside_tactic_block": (GAME, lambda: fill(  # `open … in` is a tactic [lean-facts P1]
        GAME, "by\n  open Finset in\n  simp\n  open scoped BigOperators in simp")),
    "open_in_inside_term_proof": (GREATEST, lambda: fill(GREATEST, "by\n  open Nat in exact?")),
    "lemma_for_theorem": (GREATEST, lambda: fill(GREATEST, "by simp").replace(
        "theorem " + GREATEST, "lemma " + GREATEST)),  # `lemma` is Mathlib's `theorem` [P2]
    "helper_namespace": (GREATEST, lambda: fill(
        GREATEST, "by simp [Helpers.aux]", "namespace Helpers\n\ntheorem aux : True := trivial\n\nend Helpers\n\n"
        "section\ntheorem aux2 : True := trivial\nend")),
    "sorry_in_comments_and_strings": (GAME, lambda: fill(
        GAME, 'by\n  -- sorry admit native_decide\n  /- sorry /- nested sorry -/ axiom -/\n'
              '  have : "sorry \\" admit" = "sorry \\" admit" := rfl\n  have : \'"\' = \'"\' := rfl\n  simp')),
    "helper_names_containing_axiom_and_sorry": (GREATEST, lambda: fill(
        GREATEST, "by exact my_axiom_free_lemma.elim",
        "theorem my_axiom_free_lemma : False → False := id\n\nlemma sorry_free_helper : True := trivial")),
    "helpers_with_docstrings_modifiers_attributes": (GREATEST, lambda: fill(
        GREATEST, "by simp [aux_eleven]",
        "/-- The answer, spelled out. -/\n@[simp] private lemma aux_eleven : (11 : ℕ) = 10 + 1 := rfl\n\n"
        "noncomputable def aux_real : ℝ := Real.pi\n\nabbrev aux_nat : ℕ := 3\n\nexample : aux_nat = 3 := rfl")),
    "set_option_in_before_theorem_and_helper": (GREATEST, lambda: fill(
        GREATEST, "by simp",
        "set_option maxHeartbeats 400000 in\ntheorem slow_helper : True := trivial\n\n"
        "set_option maxHeartbeats 400000 in\nset_option synthInstance.maxHeartbeats 80000 in")),
    "set_option_inside_proof": (GAME, lambda: fill(GAME, "by\n  set_option maxRecDepth 2000 in\n  simp")),
    "crlf_line_endings": (GREATEST, lambda: fill(GREATEST, "by\n  simp\n  omega").replace("\n", "\r\n")),
    "statement_rewrapped": (GREATEST, lambda: fill(GREATEST, text=task(GREATEST).template.replace(
        "(conspiratorial : Set ℤ → Prop)\n    (hconspiratorial :", "(conspiratorial : Set ℤ → Prop) (hconspiratorial :"
    ).replace("∀ b ∈ S, ∀ c ∈ S,", "∀ b ∈ S,\n        ∀ c ∈ S,").replace(") :\n    IsGreatest", ") : IsGreatest"))),
    "rich_tactic_block": (GAME, lambda: fill(
        GAME, "by\n  constructor\n  · intro h\n    rcases h with ⟨_, _⟩ <;> simp_all\n"
              "  · intro h\n    have key : ∀ x : ℕ, x + 0 = x := fun x ↦ by simp\n"
              "    calc n = n + 0 := (key n).symm\n      _ = n := by rfl\n    exact (fun «weird name» ↦ «weird name») h")),
    "term_mode_proof": (GREATEST, lambda: fill(GREATEST, "⟨⟨{1}, by simp, by simp, by simp⟩, fun _ _ => by omega⟩")),
    "docstring_changed": (GREATEST, lambda: fill(GREATEST, text=task(GREATEST).template.replace(
        "Call a set", "(Edited docstring.) Call a set"))),
    "decide_with_kernel": (GREATEST, lambda: fill(GREATEST, "by decide")),
    "guillemet_helper_name": (GREATEST, lambda: fill(
        GREATEST, "by simp [«my helper»]", "theorem «my helper» : (1 : ℕ) = 1 := rfl")),
}


@pytest.mark.parametrize("stem,build", VALID.values(), ids=VALID.keys())
def test_valid_but_tricky_is_accepted_by_all_layers(stem: str, build) -> None:
    assert_accepted(stem, build())


def test_every_real_template_passes_as_its_own_candidate() -> None:
    """All 672 templates (answers filled by the adapter) with ``by simp``: semantics are the prover's job."""
    paths = sorted(LEAN_SRC.glob("*.lean"))
    assert len(paths) == 672
    failures = {}
    for path in paths:
        problem = parse_lean(path.stem, path, path.read_text(encoding="utf-8"))
        text = problem.template
        hole = text.rfind("sorry")
        proof = "simp" if text[:hole].rstrip().endswith("by") else "by simp"
        candidate = text[:hole] + proof + text[hole + len("sorry"):]
        layers = lean_static_layers(text, candidate, theorem_name=problem.theorem_name or path.stem)
        if not all(layer.ok for layer in layers):
            failures[path.stem] = [layer.reason for layer in layers if not layer.ok]
    assert not failures, failures


def test_unlexable_candidate_fails_every_layer_with_the_lexer_reason() -> None:
    layers = judge(GREATEST, fill(GREATEST, "by simp /- never closed"))
    assert all(layers[name].ok is False for name in LAYERS)
    assert "unterminated comment" in layers["syntax_screen"].reason


def test_template_that_is_not_understood_fails_every_layer_closed() -> None:
    layers = lean_static_layers("theorem t : True := trivial", "theorem t : True := trivial", theorem_name="t")
    assert [layer.ok for layer in layers] == [False, False, False]
    assert all("template not understood" in layer.reason for layer in layers)
