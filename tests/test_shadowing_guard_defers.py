"""The shadowing guard defers to the kernel judge where the judge decides (issue 22, item 6).

End to end on real coqc (``tests/cheats``, run by ``tests/test_verify_cli.py``): ``valid/section_variable_reuses_
frozen_name`` and ``valid/import_own_helper_module`` are accepted; ``cheat/section_variable_captures_frozen_name``
and ``cheat/imported_module_captures_frozen_name`` change the statement and are rejected by
``elaborated_statement`` with the static screen off. Here: the text refusals that stay.
"""

from __future__ import annotations

import pytest

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
