"""The shadowing guard defers to the kernel judge where the judge decides (issue 22, item 6).

End to end on real coqc (``tests/cheats``, run by ``tests/test_verify_cli.py``): ``valid/section_variable_reuses_
frozen_name`` and ``valid/import_own_helper_module`` are accepted; ``cheat/section_variable_captures_frozen_name``
and ``cheat/imported_module_captures_frozen_name`` change the statement and are rejected by
``elaborated_statement`` with the static screen off (also ``cheat/import_library_module_renames_statement_function``
and the other session-15 attacks named below). Here: what the text screen leaves to the judge, and the refusals
that stay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import require_tool
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.screen import rocq_static_layers

TEMPLATE = "Require Import Arith.\nTheorem t (A : Type) (a : A) : a = a.\nProof.\nAdmitted.\n"
PROOF = "Theorem t (A : Type) (a : A) : a = a.\nProof.\n  reflexivity.\nQed.\n"


def guard(inserted: str, template: str = TEMPLATE, preamble: str = "Require Import Arith.\n",
          proof: str = PROOF) -> tuple[bool, str]:
    """The first static layer that refuses ``inserted`` (put between the template's preamble and the proof)."""
    layers = rocq_static_layers(template, preamble + inserted + proof, theorem_name="t")
    failed = [layer for layer in layers if not layer.ok]
    return not failed, failed[0].name + ": " + failed[0].reason if failed else ""


@pytest.mark.parametrize("inserted", [
    "Section S.\nVariable A : Type.\nLemma l (x : A) : x = x.\nProof. reflexivity. Qed.\nEnd S.\n",
    "Section S.\nVariables (A : Type) (a : A).\nLet b := a.\nEnd S.\n",
    "Module M.\nLemma l : True.\nProof. exact I. Qed.\nEnd M.\nImport M.\n",
    "Module M.\nEnd M.\nModule N.\nEnd N.\nExport M N.\n",
    "Module M.\nEnd M.\n#[local] Import M.\n",
    # a packed class's Exports, by its qualified name or imported at its End (mathcomp, Coquelicot)
    "Module P.\nModule Exports.\nEnd Exports.\nEnd P.\nExport P.Exports.\n",
    "Module P.\nModule Import Exports.\nEnd Exports.\nModule Q.\nExport Exports.\nEnd Q.\nEnd P.\n",
    # Import/Export of any module by name, a library's too (session 15: cheat/import_library_module_renames_
    # statement_function and cheat/export_in_helper_module_renames_statement_function are rejected by the kernel
    # judge with the static layers off); a name that is no module yet is coqc's error, not the screen's
    "Import Nat.\n", "Export ListNotations.\n", "Import Nat.\nModule M.\nEnd M.\nImport M Nat.\n",
    "Import M.\nModule M.\nEnd M.\n", "Module P.\nModule Exports.\nEnd Exports.\nEnd P.\nExport Exports.\n",
    "Global Import Coq.Lists.List.ListNotations.\n",
    # options that decide what later declarations generate, or how tactics, unification and messages behave
    # (cheat/primitive_projections_on_template_record, cheat/elimination_schemes_unset_template_recursor,
    # cheat/universe_polymorphism_switched_on: a template declaration after them differs as a kernel term)
    "Set Primitive Projections.\nUnset Primitive Projections.\nUnset Elimination Schemes.\n",
    "Set Universe Polymorphism.\nSet Warnings \"-notation-overridden\".\nLocal Set Keyed Unification.\n",
    "Global Set Asymmetric Patterns.\nSet Strongly Strict Implicit.\nUnset SsrOldRewriteGoalsOrder.\n",
    # tactic notations: their bodies are screened as tactic text, the terms they build are the kernel's
    'Local Tactic Notation "elift" constr(lm) ":" ident(x) := idtac.\n',
    'Tactic Notation (at level 0) "finish" := reflexivity.\n',
    # settings that change only how later text parses or elaborates (the statement's kernel term is compared)
    "Open Scope nat_scope.\nLocal Open Scope Z_scope.\nClose Scope Z_scope.\n",
    "Implicit Types a b : nat.\nSet Implicit Arguments.\nUnset Strict Implicit.\n",
    "Reserved Notation \"x <<= y\" (at level 70).\nDeclare Scope my_scope.\nDelimit Scope my_scope with my.\n",
    # Equations' Derive: definitions and instances the kernel judge compares, like a new Instance
    "Inductive tree := leaf | node (l r : tree).\nDerive NoConfusion Subterm for tree.\n",
    "Derive Signature for eq le.\n",
    # notations with a string, canonical instances and coercions on any constant: how later text parses or
    # elaborates (tests/cheats: notation_redefines_statement_operator, canonical_instance_of_template_structure,
    # coercion_of_template_function are rejected by the kernel judge with the static layers off)
    "Notation \"x <<= y\" := (x <= y) (at level 70).\n",
    "Local Notation \"[ 'pt' x ]\" := (Some x) (at level 0, format \"[ 'pt'  x ]\") : core_scope.\n",
    "Infix \"<+>\" := Nat.add (at level 50, left associativity) : nat_scope.\n",
    "Notation \"'answer'\" := 1.\n",
    "Canonical Nat.add.\nCanonical Structure Nat.mul.\n#[local] Canonical Nat.sub.\n",
    "Coercion Z.of_nat : nat >-> Z.\nCoercion Nat.b2n.\nLocal Coercion S : nat >-> nat.\n",
    "Definition natfun := nat -> nat.\nIdentity Coercion natfun_id : natfun >-> Funclass.\n",
    "Coercion b2n' (b : bool) : nat := if b then 1 else 0.\n",
    # Hierarchy Builder's commands (mathcomp 2, mathcomp-analysis): the candidate's own records and instances
    ("HB.mixin Record HasPoint (T : Type) := { pt : T }.\n"
     '#[short(type="pointedType")]\nHB.structure Definition Pointed := { T of HasPoint T }.\n'
     "#[local] HB.instance Definition _ := HasPoint.Build nat 0.\nHB.about Pointed.\n"
     "HB.factory Record HasZero T := { zero : T }.\nHB.builders Context T of HasZero T.\n"
     "HB.instance Definition _ := HasPoint.Build T zero.\nHB.end.\n"),
])
def test_forms_the_kernel_judges_are_not_refused_by_text(inserted: str) -> None:
    ok, reason = guard(inserted)
    assert ok, reason


@pytest.mark.parametrize("inserted", [
    "Module M.\nEnd M.\nImport (notations) M.\n",    # an import category
    "Module M.\nEnd M.\nImport -(coercions) M.\n",
    "Import Nat(sqrt).\n",                           # a filter
    # options that change what the kernel checks, or what obligations it is given
    "Unset Guard Checking.\n", "Unset Positivity Checking.\n", "Unset Universe Checking.\n",
    "Set Definitional UIP.\n", "Set Program Mode.\n",
    "Definition for := True.\nDerive f SuchThat for As h.\n",  # Rocq's own Derive opens a proof
    # Hierarchy Builder: a file written, section variables anywhere, a sealed module, a log of commands
    'HB.graph "hierarchy.dot".\n',
    "HB.declare Context (T : Type).\n",
    "HB.lock Definition f := 1.\n",
    "#[log] HB.instance Definition _ := HasPoint.Build nat 0.\n",
    'Elpi Command hello.\nElpi Accumulate lp:{{ main _ :- coq.say "hi". }}.\n',
])
def test_other_resolution_changes_stay_refused(inserted: str) -> None:
    ok, reason = guard(inserted)
    assert not ok and reason.startswith(("shadowing_guard", "syntax_screen")), reason


# --- typeclass instances: the kernel comparison decides (an honest helper instance is not refused by text) --------

def tc_verdict(value: int, inserted: str, proof: str, tmp_path: Path) -> Any:
    """A template whose statement elaborates through typeclass resolution: ``default = value`` at ``nat``, where
    the template's own instance makes ``default`` 0."""
    require_tool("coqc")
    head = ("Require Import RelationClasses.\n"
            "Class Default (A : Type) := default : A.\n"
            "#[export] Instance zero_default : Default nat := 0.\n")
    theorem = f"Theorem goal : default = {value}.\nProof.\n"
    template = tmp_path / "goal.v"
    template.write_text(head + theorem + "Admitted.\n")
    build = tmp_path / "build"
    build.mkdir()
    candidate = head + inserted + theorem + proof + "\nQed.\n"
    return verify_candidate(task_from_template("rocq", template), RocqProver(), candidate.encode(), builddir=build,
                            timeout=300)


def test_an_instance_that_changes_how_the_statement_elaborates_is_rejected_by_the_kernel(tmp_path: Path) -> None:
    """The attack the guard used to refuse by text: a higher-priority instance turns the false `default = 1`
    (0 = 1) into `1 = 1`. The text guard no longer refuses it; the kernel comparison of the statement does."""
    verdict = tc_verdict(1, "#[export] Instance one_default : Default nat | 0 := 1.\n", "  reflexivity.", tmp_path)
    assert verdict.verdict == "reject"
    failed = next(layer for layer in verdict.layers if layer.ok is False)
    assert failed.name == "elaborated_statement", verdict.reason


@pytest.mark.parametrize("inserted", [
    ("Definition rel_with_a_long_descriptive_name (x y : nat) : Prop := x = y.\n"
     "#[export] Instance rel_with_a_long_descriptive_name_is_reflexive : Reflexive rel_with_a_long_descriptive_name.\n"
     "Proof. intros x. reflexivity. Qed.\n"),
    "Definition r (x y : nat) : Prop := x = y.\nInstance r_refl : Reflexive r := fun x => eq_refl.\n",
    "Definition r (x y : nat) : Prop := x = y.\nLocal Instance r_refl : Reflexive r.\nProof. now intro. Qed.\n",
    "#[local] Instance another_default : Default bool := true.\n",
    "Program Instance program_default : Default bool := false.\n",
])
def test_an_honest_helper_instance_is_accepted_strict(inserted: str, tmp_path: Path) -> None:
    """Helper instances (a `Reflexive` for the proof's own relation, an instance at another type) leave the
    statement's kernel term as it was: accepted, strict."""
    verdict = tc_verdict(0, inserted, "  reflexivity.", tmp_path)
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason


# --- `Arguments` on the candidate's own declarations (a false rejection the red team found) --------------------
# End to end: valid/arguments_own_constructors is accepted, strict; cheat/arguments_scope_on_template_constant
# changes the statement's kernel term and is rejected by ``elaborated_statement`` with the static layers off.

VEC_TEMPLATE = ("Inductive vec (A : Type) : nat -> Type :=\n  | vnil : vec A 0\n"
                "  | vcons : forall n, A -> vec A n -> vec A (S n).\n"
                "Definition answer : nat := 0.\n"
                "Theorem t : @vnil nat = vnil nat /\\ answer = 0.\nProof.\nAdmitted.\n")
VEC_PREAMBLE = VEC_TEMPLATE.split("Theorem")[0]
VEC_PROOF = "Theorem t : @vnil nat = vnil nat /\\ answer = 0.\nProof.\n  split; reflexivity.\nQed.\n"


def vec_guard(inserted: str) -> tuple[bool, str]:
    return guard(inserted, VEC_TEMPLATE, VEC_PREAMBLE, VEC_PROOF)


@pytest.mark.parametrize("inserted", [
    "Inductive w := c1 (n : nat) | c2 : w.\nArguments c1 n : rename.\nArguments c2 : assert.\n",
    "Inductive w (B : Type) := | c1 (b : B) | c2.\nArguments c1 {B} b%nat_scope.\n#[local] Arguments c2 {B}.\n",
    "Variant v (B : Type) := vl (b : B) | vr.\nArguments vr {B}.\n",
    "Record r (B : Type) := { fld : B; other : nat }.\nArguments Build_r {B} _ _.\nArguments fld {B} _.\n",
    "Record r (B : Type) := mkr { fld : B }.\nArguments mkr {B} _.\nArguments fld {B} _ : simpl never.\n",
    "Structure s := { carrier :> Type; #[canonical=no] pt : carrier }.\nArguments pt s : clear implicits.\n",
    "Class cl (B : Type) := meth : B.\nArguments meth {B cl}.\n",
    "Inductive tr := leaf | node (f : fo)\nwith fo := fnil | fcons (x : tr) (y : fo).\nArguments fcons x y.\n",
    "Module M.\nInductive w := c1.\nArguments c1.\nEnd M.\n",
    "Definition idf {B : Type} (b : B) := b.\nArguments idf B b.\n",   # any own declaration
    # after the Section that declared them: its declarations keep their short names at its End
    "Section S.\nVariable B : Type.\nInductive w := c1 (b : B) | c2.\nEnd S.\nArguments c1 {B} b.\nArguments c2 {B}.\n",
    "Section S.\nSection T.\nDefinition idf (b : nat) := b.\nEnd T.\nEnd S.\nArguments idf b : simpl never.\n",
    # found running the screen over Debian's Coquelicot/mathcomp/Flocq sources (every sentence before a late lemma
    # inserted): a packed structure's own coercions and canonical instances, abbreviations, Prenex Implicits
    ("Structure st := Pack { sort :> Type; pt : sort }.\nCoercion sort : st >-> Sortclass.\n"
     "Definition nat_st := Pack nat 0.\nCanonical nat_st.\n#[local] Canonical Structure nat_st.\n"),
    ("Record cplx := { re : nat; im : nat }.\nDefinition of_nat (n : nat) := {| re := n; im := 0 |}.\n"
     "Coercion of_nat : nat >-> cplx.\n"),
    "Structure st := Pack { sort : Type; pt : sort }.\nCanonical unit_st := Pack unit tt.\n",
    "Notation idn := (fun n : nat => n).\nNotation twice f x := (f (f x)) (only parsing).\n",
    "Definition idf {B : Type} (b : B) := b.\nPrenex Implicits idf.\n",
    "Create HintDb mine.\n#[deprecated(since=\"1.0\", note=\"use idf\")] Definition idg (n : nat) := n.\n",
    "Unset Printing Implicit Defensive.\n",
    # in a Module opened since: a short name the Module does not declare resolves to the enclosing one's
    "Section S.\nInductive w := c1.\nEnd S.\nModule C.\nArguments c1.\nEnd C.\n",
    # a packed class's Exports module names the enclosing module's own declarations (mathcomp)
    ("Module P.\nStructure st := Pack { sort : Type; pt : sort }.\nModule Exports.\n"
     "Coercion sort : st >-> Sortclass.\nCanonical Structure nat_st := Pack nat 0.\nCanonical nat_st.\n"
     "End Exports.\nEnd P.\n"),
])
def test_arguments_on_the_candidates_own_declarations_is_accepted(inserted: str) -> None:
    ok, reason = vec_guard(inserted)
    assert ok, reason


# `Arguments`/`Prenex Implicits` on any constant (session 14): implicits, scopes and renamings change how later text
# elaborates, which the kernel judge compares (cheat/arguments_scope_on_template_constant is rejected at
# elaborated_statement, also with the static layers off); no longer refused by text.
@pytest.mark.parametrize("inserted", [
    "Arguments vnil {A}.\n",                                     # a template constructor the statement uses
    "Arguments vcons {A n} _ _.\n",                              # a template constructor it does not use
    "Arguments answer : rename.\n",                              # a template constant, however harmless
    "Arguments vec A%type_scope n%nat_scope : assert.\n",        # scopes on the template's type
    "Arguments eq {A} x y.\n",                                   # a library constant
    "Module C.\nInductive w := c1.\nEnd C.\nArguments c1.\n",    # out of its Module: `c1` is not C.c1 here
    "Section S.\nInductive w := c1.\nRequire Import Arith.\nEnd S.\nArguments c1.\n",  # a Require since
    "Module C.\nInductive w := c1.\nEnd C.\nImport C.\nArguments vnil {A}.\n",  # after Import of an own module
    "Inductive w := c1.\nRequire Import Arith.\nArguments c1.\n",  # a Require since may bring another `c1`
    # an Import in the nested Module (or a Require in the enclosing one) may bring another `idf`
    ("Module P.\nDefinition idf (n : nat) := n.\nModule M.\nEnd M.\nModule Exports.\nImport M.\n"
     "Arguments idf n : simpl never.\nEnd Exports.\nEnd P.\n"),
    ("Module P.\nDefinition idf (n : nat) := n.\nRequire Import Arith.\nModule Exports.\n"
     "Arguments idf n : simpl never.\nEnd Exports.\nEnd P.\n"),
    ("Module P.\nDefinition idf (n : nat) := n.\nModule Import E.\nEnd E.\n"
     "Arguments idf n : simpl never.\nEnd P.\n"),  # E, imported at its End, may hold another `idf`
    ("Module P.\nModule Q.\nDefinition idf (n : nat) := n.\nEnd Q.\nModule Exports.\n"
     "Arguments idf n : simpl never.\nEnd Exports.\nEnd P.\n"),  # Q is closed: `idf` is Q.idf
    "Inductive w := c1.\nArguments C.c1.\n",                     # qualified: not the plain own name
    "Inductive w := c1.\nArguments \"+\" x y.\n",               # a notation as the target
    "Definition f (n : nat) := n.\nPrenex Implicits f answer.\n",  # one is not its own
])
def test_arguments_on_any_constant_is_left_to_the_kernel_judge(inserted: str) -> None:
    ok, reason = vec_guard(inserted)
    assert ok, reason


@pytest.mark.parametrize("inserted", [
    "Module C.\nInductive w := vnil.\nEnd C.\nArguments vnil {A}.\n",  # same short name as the template's
    "Inductive w := vnil.\nArguments vnil.\n",                   # ... even where it would resolve to the own one
    "Record r := { answer' : nat; vnil : nat }.\n",              # a field named like a frozen name
    "Variant v := answer.\n",                                    # a constructor named like a frozen name
    "Inductive w := c1\nwith w' := answer.\n",                 # ... in a mutual block
    "Class cl := { answer : nat }.\n",                           # a method named like a frozen name
    "Canonical Structure answer := 0.\n",                        # defines a frozen name
    "Coercion answer (b : bool) : nat := 0.\n",                  # ... as a coercion
    "Identity Coercion answer : nat >-> nat.\n",
    "Notation answer := 1.\n",                                   # an abbreviation named like a frozen name
])
def test_a_declaration_named_like_a_frozen_name_stays_refused(inserted: str) -> None:
    ok, reason = vec_guard(inserted)
    assert not ok and reason.startswith("shadowing_guard"), reason


# --- names a statement only binds (a false rejection left from session 12) --------------------------------------
# A binder name is no global constant: a helper reusing it cannot change the statement, and the kernel judge
# compares the statement's term anyway. End to end: valid/helper_named_like_statement_binder is accepted;
# cheat/class_field_captures_frozen_name (a field named like a constant the statement uses) is rejected by the
# guard, and by ``elaborated_statement`` with the static layers off.

BINDER_TEMPLATE = ("Definition answer : nat := 0.\n"
                   "Theorem t (A : Type) (op : A -> A -> A) (hop : forall (a b : A), op a b = a)\n"
                   "  : (forall x : nat, x = x) /\\ (fun n => n) answer = answer /\\ exists y, y = answer.\n"
                   "Proof.\nAdmitted.\n")
BINDER_PREAMBLE = BINDER_TEMPLATE.split("Theorem")[0]


def statement_and_qed(template: str) -> str:
    return template[template.index("Theorem"):].replace("Admitted.", "Qed.")


BINDER_PROOF = statement_and_qed(BINDER_TEMPLATE)


@pytest.mark.parametrize("inserted", [
    "Record magma := { carrier : Type; op : carrier -> carrier -> carrier }.\n",   # a field named like a binder
    "Inductive side := x | y.\n",                                                  # constructors named like binders
    "Definition a := 1.\nDefinition n := 2.\n",
    "Variant letter := A | b.\n",                                                   # the theorem's parameter `A`
    "Lemma hop : True.\nProof. exact I. Qed.\n",
])
def test_a_name_the_statement_only_binds_is_not_refused(inserted: str) -> None:
    ok, reason = guard(inserted, BINDER_TEMPLATE, BINDER_PREAMBLE, BINDER_PROOF)
    assert ok, reason


@pytest.mark.parametrize("inserted,template", [
    ("Inductive w := answer.\n", BINDER_TEMPLATE),                # a free name stays refused
    ("Record r := { answer' : nat; eq : nat }.\n",                 # a use outside the binder's brackets
     "Theorem t : (forall eq : nat, eq = eq) /\\ eq 0 0.\nProof.\nAdmitted.\n"),
    ("Inductive w := y.\n",                                       # a pattern variable: a constructor captures it
     "Theorem t : forall n : nat, match n with y => y end = n.\nProof.\nAdmitted.\n"),
    ("Definition k := 0.\n",                                      # `let` is not read as a binder
     "Theorem t : let k := 1 in k = 1.\nProof.\nAdmitted.\n"),
    ("Definition p := 0.\n",                                      # nor a pattern binder `'(p, q)`
     "Theorem t : (fun '(p, q) => p + q) (1, 2) = 3.\nProof.\nAdmitted.\n"),
])
def test_a_name_the_statement_uses_free_stays_refused(inserted: str, template: str) -> None:
    ok, reason = guard(inserted, template, template.split("Theorem")[0], statement_and_qed(template))
    assert not ok and reason.startswith("shadowing_guard"), reason
