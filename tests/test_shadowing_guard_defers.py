"""The shadowing guard defers to the kernel judge where the judge decides (issue 22, item 6).

End to end on real coqc (``tests/cheats``, run by ``tests/test_verify_cli.py``): ``valid/section_variable_reuses_
frozen_name`` and ``valid/import_own_helper_module`` are accepted; ``cheat/section_variable_captures_frozen_name``
and ``cheat/imported_module_captures_frozen_name`` change the statement and are rejected by
``elaborated_statement`` with the static screen off. Here: the text refusals that stay.
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


def guard(inserted: str) -> tuple[bool, str]:
    layers = rocq_static_layers(TEMPLATE, "Require Import Arith.\n" + inserted + PROOF, theorem_name="t")
    failed = [layer for layer in layers if not layer.ok]
    return not failed, failed[0].name + ": " + failed[0].reason if failed else ""


@pytest.mark.parametrize("inserted", [
    "Section S.\nVariable A : Type.\nLemma l (x : A) : x = x.\nProof. reflexivity. Qed.\nEnd S.\n",
    "Section S.\nVariables (A : Type) (a : A).\nLet b := a.\nEnd S.\n",
    "Module M.\nLemma l : True.\nProof. exact I. Qed.\nEnd M.\nImport M.\n",
    "Module M.\nEnd M.\nModule N.\nEnd N.\nExport M N.\n",
    "Module M.\nEnd M.\n#[local] Import M.\n",
])
def test_forms_the_kernel_judges_are_not_refused_by_text(inserted: str) -> None:
    ok, reason = guard(inserted)
    assert ok, reason


@pytest.mark.parametrize("inserted", [
    "Import Nat.\n",                                 # a library module: not the candidate's own
    "Import M.\nModule M.\nEnd M.\n",                # not declared yet when imported
    "Module M.\nEnd M.\nImport M Nat.\n",            # one of them is not the candidate's
    "Module M.\nEnd M.\nImport (notations) M.\n",    # an import category
    "Module M.\nEnd M.\nImport -(coercions) M.\n",
    "Definition A := nat.\n",                        # a global that outlives its sentence still shadows
    "Open Scope nat_scope.\n",                       # parsing of the frozen text stays a text refusal
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
