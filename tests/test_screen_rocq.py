"""Static Rocq layers against real PutnamBench templates: one test per cheat class, plus valid-but-tricky proofs.

Each cheat asserts the layer meant to catch it rejects and, where the class is isolated, that the other
two layers accept it, i.e. the cheat would pass if that layer were removed.
"""

from __future__ import annotations

import re

import pytest

from conftest import PUTNAM, require_path
from pytest_forall.core.model import Task
from pytest_forall.lang.rocq.problem import parse_coq
from pytest_forall.lang.screens import rocq_static_layers

COQ_SRC = PUTNAM / "coq" / "src"
LAYERS = ("syntax_screen", "frozen_statement", "shadowing_guard")
REALS = "putnam_1986_b4"  # Require Import Reals …; Definition …_solution := True; uses Rabs, sqrt, IZR
MATHCOMP = "putnam_1962_a2"  # mathcomp preamble, Variable R : realType, Definition mu, set-valued answer
SECTION = "putnam_1969_b5"  # wrapped in Section … End; uses INR

@pytest.fixture(autouse=True)
def _coq_sources() -> None:
    require_path(COQ_SRC, "PutnamBench Coq sources")


def task(stem: str) -> Task:
    path = COQ_SRC / f"{stem}.v"
    return parse_coq(stem, path, path.read_text(encoding="utf-8"))


def fill(stem: str, proof: str = "exact I. Qed.", before: str = "", text: str | None = None) -> str:
    """The template with its hole replaced by ``proof`` and ``before`` inserted just above the theorem."""
    problem = task(stem)
    text = problem.template if text is None else text
    hole = text.rfind("Admitted.")
    text = text[:hole] + proof + text[hole + len("Admitted."):]
    if before:
        start = re.search(rf"^Theorem {problem.theorem_name}\b", text, re.MULTILINE).start()
        text = text[:start] + before + "\n" + text[start:]
    return text


def judge(stem: str, candidate: str) -> dict[str, object]:
    problem = task(stem)
    layers = rocq_static_layers(problem.template, candidate, theorem_name=problem.theorem_name)
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


SYNTAX_CHEATS = {
    "admitted_hole_kept": (REALS, lambda: fill(REALS, "Admitted.")),
    "admit_tactic": (REALS, lambda: fill(REALS, "split; admit. Qed.")),
    "give_up_tactic": (REALS, lambda: fill(REALS, "give_up. Qed.")),
    "abort_instead_of_qed": (REALS, lambda: fill(REALS, "Abort.")),
    "helper_admitted": (REALS, lambda: fill(REALS, "apply cheat. Qed.",
                                            "Lemma cheat : forall P : Prop, P.\nProof. Admitted.")),
    "axiom": (REALS, lambda: fill(REALS, "apply cheat. Qed.", "Axiom cheat : forall P : Prop, P.")),
    "local_axiom": (REALS, lambda: fill(REALS, "apply cheat. Qed.", "Local Axiom cheat : False.")),
    "parameter": (REALS, lambda: fill(REALS, "destruct cheat. Qed.", "Parameter cheat : False.")),
    "hypothesis": (REALS, lambda: fill(REALS, "destruct cheat. Qed.", "Hypothesis cheat : False.")),
    "conjecture": (REALS, lambda: fill(REALS, "destruct cheat. Qed.", "Conjecture cheat : False.")),
    "variable_added": (REALS, lambda: fill(REALS, "destruct cheat. Qed.", "Variable cheat : False.")),
    "context_added": (REALS, lambda: fill(REALS, "destruct cheat. Qed.", "Context (cheat : False).")),
    "unset_guard_checking": (REALS, lambda: fill(REALS, "apply loop. Qed.", "Unset Guard Checking.")),
    "unset_universe_checking": (REALS, lambda: fill(REALS, "exact I. Qed.", "Local Unset Universe Checking.")),
    "bypass_check_attribute": (REALS, lambda: fill(
        REALS, "exact I. Qed.", "#[bypass_check(guard)] Fixpoint loop (n : nat) : False := loop n.")),
    "declare_ml_module": (REALS, lambda: fill(REALS, "exact I. Qed.", 'Declare ML Module "evil_plugin".')),
    "load": (REALS, lambda: fill(REALS, "exact I. Qed.", "Load evil.")),
    "redirect": (REALS, lambda: fill(REALS, "exact I. Qed.", 'Redirect "log" Print Assumptions Rabs.')),
    "extraction": (REALS, lambda: fill(REALS, "exact I. Qed.", "Extraction Rabs.")),
    "drop": (REALS, lambda: fill(REALS, "exact I. Qed.", "Drop.")),
    "reset": (REALS, lambda: fill(REALS, "exact I. Qed.", "Reset Initial.")),
    "undo": (REALS, lambda: fill(REALS, "exact I. Qed.", "Undo 2.")),
    "admit_obligations": (REALS, lambda: fill(REALS, "exact I. Qed.",
                                              "Program Definition x : nat := _.\nAdmit Obligations.")),
    "obligation_tactic": (REALS, lambda: fill(REALS, "exact I. Qed.", "Obligation Tactic := idtac.")),
    "declare_module": (REALS, lambda: fill(REALS, "exact I. Qed.", "Declare Module M : Nat.")),
    "cd": (REALS, lambda: fill(REALS, "exact I. Qed.", 'Cd "/tmp".')),
    "attribute_abort_in_proof": (REALS, lambda: fill(REALS, "#[] Abort.")),
    "local_attribute_in_proof": (REALS, lambda: fill(REALS, "#[local] Abort.")),
    "empty_attribute_top_level": (REALS, lambda: fill(REALS, "exact I. Qed.", "#[] Definition d := 1.")),
    "top_level_variable_outside_section": (REALS, lambda: fill(REALS, "exact I. Qed.",
                                                               "Section S.\nEnd S.\nVariable cheat : False.")),
    "ltac2_notation": (REALS, lambda: fill(REALS, "exact I. Qed.", 'Ltac2 Notation "x" := ().')),
    "module_wrapper": (REALS, lambda: fill(REALS, "exact I. Qed.", "Module M.")),
    "section_wrapper": (REALS, lambda: fill(REALS, "exact I. Qed.", "Section S.")),
    "end_of_template_section": (SECTION, lambda: fill(SECTION, "exact I. Qed.", "End putnam_1969_b5.")),
    "set_option_not_allowed": (REALS, lambda: fill(REALS, "exact I. Qed.", "Set Printing All.")),
    "vernacular_inside_proof": (REALS, lambda: fill(REALS, "Axiom cheat : False. destruct cheat. Qed.")),
    "nested_lemma_inside_proof": (REALS, lambda: fill(REALS, "Lemma x : False. Admitted. exact I. Qed.")),
    "no_check_tactic": (REALS, lambda: fill(REALS, "exact_no_check I. Qed.")),
    "admit_in_definition_body": (REALS, lambda: fill(REALS, "destruct cheat. Qed.",
                                                     "Definition cheat : False := ltac:(admit).")),
    "definition_after_qed": (REALS, lambda: fill(REALS, "exact I. Qed.\nDefinition later := 1.")),
    "theorem_after_qed": (REALS, lambda: fill(REALS, "exact I. Qed.\nLemma later : True. Admitted.")),
    "proof_never_closed": (REALS, lambda: fill(REALS, "exact I.")),
    "bidi_control_in_comment": (REALS, lambda: fill(REALS, "(* \u202e *) exact I. Qed.")),
    "zero_width_space": (REALS, lambda: fill(REALS, "exact\u200b I. Qed.")),
    "em_space_in_code": (REALS, lambda: fill(REALS, "exact\u2003I. Qed.")),  # Coq reads it as no identifier
    "control_character": (REALS, lambda: fill(REALS, "exact I.\x0c Qed.")),
    # issue 31: Function/Equations are allowed, and the proofs they open are screened like any other
    "function_termination_admitted": (REALS, lambda: fill(REALS, "exact I. Qed.", (
        "Require Import Recdef.\nFunction f (n : nat) {measure (fun k => k) n} : nat := "
        "match n with 0 => 0 | S k => f k end.\nProof. admit. Defined."))),
    "equations_obligation_admitted": (REALS, lambda: fill(REALS, "exact I. Qed.", (
        "From Equations Require Import Equations.\nEquations? f (n : nat) : nat by wf n lt := "
        "f 0 := 0; f (S k) := f k.\nProof. all: admit. Defined."))),
    "equations_then_command_in_its_proof": (REALS, lambda: fill(REALS, "exact I. Qed.", (
        "From Equations Require Import Equations.\nEquations? f (n : nat) : nat by wf n lt := "
        "f 0 := 0; f (S k) := f k.\nProof. Axiom cheat : False. Defined."))),
}

FROZEN_CHEATS = {
    "answer_tampered": (REALS, lambda: fill(REALS, text=task(REALS).template.replace(
        "_solution := True.", "_solution := False."))),
    "hypothesis_added": (REALS, lambda: fill(REALS, text=task(REALS).template.replace(
        "(G : R -> R)", "(G : R -> R) (cheat : False)"))),
    "conclusion_weakened": (REALS, lambda: fill(REALS, text=task(REALS).template.replace(
        "(locally 0) <-> putnam_1986_b4_solution.", "(locally 0) -> True."))),
    "statement_hidden_in_comment": (REALS, lambda: fill(REALS, text=task(REALS).template.replace(
        ": filterlim G (Rbar_locally p_infty) (locally 0) <-> putnam_1986_b4_solution.",
        ": True. (* : filterlim G (Rbar_locally p_infty) (locally 0) <-> putnam_1986_b4_solution. *)"))),
    "preamble_sentence_dropped": (MATHCOMP, lambda: fill(MATHCOMP, text=task(MATHCOMP).template.replace(
        "Local Open Scope classical_set_scope.\n", ""))),
    "answer_set_tampered": (MATHCOMP, lambda: fill(MATHCOMP, text=task(MATHCOMP).template.replace(
        "a >= 0 /\\", "a >= 0 \\/"))),
    "tokens_glued_differently": (REALS, lambda: fill(REALS, text=task(REALS).template.replace(
        "(m ^ 2", "(m ^2", 1))),
    "proof_opener_changed": (REALS, lambda: fill(REALS, text=task(REALS).template.replace(
        "Proof. Admitted.", "Proof with auto. Admitted."))),
    "section_end_dropped": (SECTION, lambda: fill(SECTION).replace("End putnam_1969_b5.", "")),
    "theorem_renamed": (REALS, lambda: fill(REALS).replace("Theorem putnam_1986_b4", "Theorem putnam_1986_b4'")),
}

SHADOWING_CHEATS = {
    "helper_named_rabs": (REALS, lambda: fill(REALS, "exact I. Qed.", "Definition Rabs (x : R) := 0%R.")),
    "helper_named_sqrt": (REALS, lambda: fill(REALS, "exact I. Qed.", "Definition sqrt (x : R) := 0%R.")),
    "helper_named_izr": (REALS, lambda: fill(REALS, "exact I. Qed.", "Definition IZR (z : Z) := 0%R.")),
    "helper_named_inr": (SECTION, lambda: fill(SECTION, "exact I. Qed.", "Definition INR (n : nat) := 0%R.")),
    "helper_lemma_named_like_frozen": (MATHCOMP, lambda: fill(
        MATHCOMP, "exact I. Qed.", "Lemma mu : True.\nProof. exact I. Qed.")),
    "ltac_named_like_frozen": (REALS, lambda: fill(REALS, "exact I. Qed.", "Ltac filterlim := idtac.")),
    "import_module_filtered": (REALS, lambda: fill(REALS, "exact I. Qed.", "Import (notations) Nat.")),
    "module_named_like_frozen": (REALS, lambda: fill(REALS, "exact I. Qed.", "Module Rabs.\nEnd Rabs.")),
    "functor_module": (REALS, lambda: fill(REALS, "exact I. Qed.", "Module Type T. End T.\nModule F (X : T).\nEnd F.")),
    "existing_instance": (REALS, lambda: fill(REALS, "exact I. Qed.", "Existing Instance cheat.")),
    "hint_added": (REALS, lambda: fill(REALS, "exact I. Qed.", "Hint Resolve I : typeclass_instances.")),
    "local_typeclass_hint": (REALS, lambda: fill(REALS, "exact I. Qed.",
                                                 "#[local] Hint Extern 0 => exact I : typeclass_instances.")),
    "opaque_added": (REALS, lambda: fill(REALS, "exact I. Qed.", "Opaque Rabs.")),
}

#: Resolution changes left to the kernel judge (session 14): what they change in the frozen text is its elaboration,
#: which ``elaborated_statement`` compares as kernel terms (tests/cheats: notation_override,
#: notation_redefines_statement_operator, canonical_instance_of_template_structure, coercion_of_template_function,
#: arguments_scope_on_template_constant, import_library_module_renames_statement_function, tactic_notation_hides_no_check,
#: rejected there with the static layers off); the static layers do not refuse them by text.
KERNEL_JUDGED = {
    "notation_redefined": (REALS, lambda: fill(REALS, "exact I. Qed.",
                                               'Notation "x <-> y" := (x -> True) : type_scope.')),
    "infix_redefined": (REALS, lambda: fill(REALS, "exact I. Qed.", 'Infix "<=" := Rlt : R_scope.')),
    "canonical_added": (REALS, lambda: fill(REALS, "exact I. Qed.", "Canonical Structure cheat.")),
    "coercion_added": (REALS, lambda: fill(REALS, "exact I. Qed.", "Coercion IZR : Z >-> R.")),
    "local_coercion_added": (REALS, lambda: fill(REALS, "exact I. Qed.", "Local Coercion INR : nat >-> R.")),
    "arguments_rename": (REALS, lambda: fill(REALS, "exact I. Qed.", "Arguments Rabs x%nat : rename.")),
    "import_module": (REALS, lambda: fill(REALS, "exact I. Qed.", "Import Nat.")),
    "tactic_notation": (REALS, lambda: fill(REALS, "exact I. Qed.", 'Tactic Notation "cheat" := idtac.')),
}


@pytest.mark.parametrize("stem,build", KERNEL_JUDGED.values(), ids=KERNEL_JUDGED.keys())
def test_resolution_the_kernel_judges_passes_the_static_layers(stem: str, build) -> None:
    assert_accepted(stem, build())


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
    """A pure statement edit is the frozen layer's alone (the others have nothing to object to)."""
    for name in ("hypothesis_added", "conclusion_weakened", "statement_hidden_in_comment",
                 "preamble_sentence_dropped", "tokens_glued_differently"):
        stem, build = FROZEN_CHEATS[name]
        assert_rejected_by("frozen_statement", stem, build(), alone=True)


def test_frozen_statement_evidence_names_first_difference() -> None:
    stem, build = FROZEN_CHEATS["hypothesis_added"]
    layer = judge(stem, build())["frozen_statement"]
    assert layer.reason.startswith("line 4: theorem statement differs from the template (template line 5)")
    assert layer.evidence["template_line"] == 5 and layer.evidence["candidate_line"] == 4
    assert "hGeq" in layer.evidence["expected"] and "cheat" in layer.evidence["found"]
    assert "cheat" in layer.evidence["candidate_excerpt"]


VALID = {
    # settings that change only how later text parses or elaborates: left to the kernel judge, which compares
    # the elaborated statement (tests/cheats/cheat/open_scope_reads_statement_in_z)
    "reserved_notation": (REALS, lambda: fill(REALS, "exact I. Qed.", 'Reserved Notation "x <=> y" (at level 95).')),
    "open_scope": (REALS, lambda: fill(REALS, "exact I. Qed.", "Open Scope Z_scope.")),
    "local_open_scope": (REALS, lambda: fill(REALS, "exact I. Qed.", "Local Open Scope nat_scope.")),
    "delimit_scope": (REALS, lambda: fill(REALS, "exact I. Qed.", "Delimit Scope R_scope with Q.")),
    "bind_scope": (REALS, lambda: fill(REALS, "exact I. Qed.", "Bind Scope nat_scope with R.")),
    "implicit_types": (REALS, lambda: fill(REALS, "exact I. Qed.", "Implicit Types G : nat -> R.")),
    "admitted_in_comment_and_string": (REALS, lambda: fill(
        REALS, '(* Admitted. admit. (* nested Admitted. *) "*)" *) exact I. Qed.',
        'Definition note := "Admitted. admit. Axiom ""quoted"" (*".')),
    "helper_names_containing_axiom_and_sorry": (REALS, lambda: fill(
        REALS, "apply my_axiom_free_lemma. Qed.",
        "Lemma my_axiom_free_lemma : True.\nProof. exact I. Qed.\nLemma sorry_not_sorry : 1 = 1.\nProof. reflexivity. Qed.")),
    "helper_definition_fixpoint_ltac": (REALS, lambda: fill(
        REALS, "Proof_helper. Qed.",
        "Fixpoint double (n : nat) : nat := match n with O => O | S k => S (S (double k)) end.\n"
        "Definition twice (n : nat) : nat.\nProof. exact (n + n). Defined.\nLtac Proof_helper := exact I.")),
    "extra_require_import": (REALS, lambda: fill(
        REALS, "exact I. Qed.", "Require Import Lia Psatz.\nFrom Coq Require Import ZArith.")),
    "defined_instead_of_qed": (REALS, lambda: fill(REALS, "exact I. Defined.")),
    "function_and_equations_helpers": (REALS, lambda: fill(REALS, "exact I. Qed.", (
        "Require Import Recdef.\nFrom Equations Require Import Equations.\n"
        "Function f (n : nat) {measure (fun k => k) n} : nat := match n with 0 => 0 | S k => f k end.\n"
        "Proof. auto. Defined.\nFunction g (l : list nat) {struct l} : nat := "
        "match l with nil => 0 | cons _ t => g t end.\n"
        "Equations h (n : nat) : nat := h 0 := 0; h (S k) := h k.\n"
        "Equations? e (n : nat) : nat by wf n lt := e 0 := 0; e (S k) := e k.\nProof. auto. Defined."))),
    "crlf_line_endings": (REALS, lambda: fill(REALS, "exact I.\r\nQed.").replace("\n", "\r\n")),
    "statement_rewrapped": (REALS, lambda: fill(REALS, text=task(REALS).template.replace(
        "(G : R -> R)\n    (hGeq", "(G : R -> R) (hGeq").replace(
        ": filterlim G (Rbar_locally p_infty)", ":\n  filterlim G\n      (Rbar_locally p_infty)"))),
    "bullets_braces_nested_comments": (REALS, lambda: fill(
        REALS, "(* outer (* inner *) *)\n  split.\n  - intros H. (* a *) exact I.\n  - { intros _.\n"
               "      split; [lia | ].\n      + auto. }\n  all: try lia.\n  Unshelve. Qed.")),
    "goal_selector_option": (REALS, lambda: fill(REALS, "exact I. Qed.", 'Set Default Goal Selector "!".')),
    "comments_before_and_after": (SECTION, lambda: fill(SECTION, "(* x *) exact I. (* y *) Qed. (* z *)")),
    "section_template_with_helper": (SECTION, lambda: fill(
        SECTION, "exact I. Qed.", "Lemma aux_bound : (0 <= 1)%R.\nProof. lra. Qed.")),
    "mathcomp_with_helper": (MATHCOMP, lambda: fill(
        MATHCOMP, "by []. Qed.", "Lemma my_helper (x : R) : x = x.\nProof. by []. Qed.")),
    # honest forms the screen used to reject (issue 14); the kernel judge carries the guarantee for them
    "proof_using": (REALS, lambda: fill(REALS, text=task(REALS).template.replace("Proof. Admitted.",
                                                                               "Proof using. Admitted."))),
    "default_timeout": (REALS, lambda: fill(REALS, "exact I. Qed.", "Set Default Timeout 100.")),
    "queries_after_qed": (REALS, lambda: fill(REALS, "exact I. Qed.\nCheck putnam_1986_b4.\nAbout Rabs.\n"
                                                     "Print Assumptions putnam_1986_b4.")),
    "query_before": (REALS, lambda: fill(REALS, "exact I. Qed.", "Print Assumptions Rabs.\nCompute 1 + 1.")),
    "helpers_in_section_with_variables": (REALS, lambda: fill(
        REALS, "exact I. Qed.", "Section H.\nVariable k : nat.\nHypothesis hk : k = k.\n"
                                "Lemma hk' : k = k.\nProof using hk. exact hk. Qed.\nEnd H.")),
    "helpers_in_module": (REALS, lambda: fill(REALS, "exact I. Qed.",
                                              "Module Aux.\nLemma t : True.\nProof. exact I. Qed.\nEnd Aux.")),
    "program_with_obligation": (REALS, lambda: fill(
        REALS, "exact I. Qed.", "Program Definition four : {n : nat | exists k, k * 2 = n} := 4.\n"
                                "Next Obligation. exists 2. reflexivity. Qed.")),
    "let_in_helper_type": (REALS, lambda: fill(REALS, "exact I. Qed.",
                                               "Definition pick : let k := 2 in nat.\nProof. exact 3. Defined.")),
    "local_attribute_helpers": (REALS, lambda: fill(REALS, "exact I. Qed.",
                                                    "#[local] Definition d := 1.\n#[local] Hint Unfold d : core.")),
    "no_break_space_in_comment": (REALS, lambda: fill(REALS, "(* a\u00a0b *) exact I. Qed.")),
    # an identifier character to Coq and to the lexer (Coquelicot's Lub.v names hypotheses so)
    "no_break_space_in_code": (REALS, lambda: fill(REALS, "pose (x\u00a0:= 1). exact I. Qed.")),
    "ltac2_tactics": (REALS, lambda: fill(REALS, "Control.enter (fun () => ltac1:(exact I)). Qed.",
                                          "From Ltac2 Require Import Ltac2.\nLtac2 rec my_tac () := ().")),
    "unshelve_and_abstract": (REALS, lambda: fill(REALS, "abstract (exact I). Unshelve. Qed.")),
    "mid_file_require": (REALS, lambda: fill(REALS, "exact I. Qed.",
                                             "Definition h := 0.\nRequire Import Lia.\nLemma l : h = 0. Proof. lia. Qed.")),
}


@pytest.mark.parametrize("stem,build", VALID.values(), ids=VALID.keys())
def test_valid_but_tricky_is_accepted_by_all_layers(stem: str, build) -> None:
    assert_accepted(stem, build())


def test_every_real_template_passes_as_its_own_candidate() -> None:
    """All 412 templates with a trivial proof: their semantics are the prover's job, not the screen's."""
    paths = sorted(COQ_SRC.glob("*.v"))
    assert len(paths) == 412
    failures = {}
    for path in paths:
        problem = parse_coq(path.stem, path, path.read_text(encoding="utf-8"))
        hole = problem.template.rfind("Admitted.")
        candidate = problem.template[:hole] + "exact I. Qed." + problem.template[hole + len("Admitted."):]
        layers = rocq_static_layers(problem.template, candidate, theorem_name=problem.theorem_name)
        if not all(layer.ok for layer in layers):
            failures[path.stem] = [layer.reason for layer in layers if not layer.ok]
    assert not failures, failures


def test_syntax_screen_rejects_unlexable_candidate_and_nothing_else_can_judge_it() -> None:
    layers = judge(REALS, fill(REALS, "exact I. Qed. (* Admitted."))
    assert all(layers[name].ok is False for name in LAYERS)
    assert layers["syntax_screen"].reason == "line 8: unterminated comment"


def test_template_that_is_not_understood_fails_every_layer_closed() -> None:
    layers = rocq_static_layers("Theorem t : True.\nProof. exact I. Qed.", "Theorem t : True.\nProof. exact I. Qed.",
                                theorem_name="t")
    assert [layer.ok for layer in layers] == [False, False, False]
    assert all("template not understood" in layer.reason for layer in layers)
