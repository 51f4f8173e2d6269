"""The hand-written certificates of PutnamBench defects found by reading the templates (issue 34, session 16;
``benchmarks/putnam/hand_certificates/``, listed in docs/audit.md). Each is a proof of the negation (or of the
hypotheses' contradiction) of a derived task the audit itself states from the PutnamBench template: this test checks,
without Coq, that each stored derived template is exactly what the audit derives from the current template, and that
the certificate is that template with a complete proof in its hole (after the search's prelude), so ``forall verify``
on the pair judges the real statement. The proofs themselves were checked by ``forall verify`` (docs/measurements.md,
session 16: all accepted, strict)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from pytest_forall.lang.rocq.audit.derive import refutation_text, vacuity_text
from pytest_forall.lang.rocq.audit.search import search_prelude

HERE = REPO / "benchmarks" / "putnam" / "hand_certificates"
CERTIFICATES = sorted(p for p in HERE.glob("*.v") if not p.name.endswith(".template.v"))
HOLE = "Proof. Admitted."


def test_there_are_the_certificates_docs_audit_lists() -> None:
    listed = set(re.findall(r"`(putnam_\d{4}_[ab]\d)` \(hand", (REPO / "docs" / "audit.md").read_text()))
    assert {p.name.split(".")[0] for p in CERTIFICATES} == listed and len(listed) >= 15


@pytest.mark.parametrize("certificate", CERTIFICATES, ids=lambda p: p.stem)
def test_a_hand_certificate_is_the_audit_s_derived_task_with_a_complete_proof(certificate: Path,
                                                                               putnam_root: Path) -> None:
    name, kind = certificate.stem.split(".")
    template = (putnam_root / "coq" / "src" / f"{name}.v").read_text()
    derived = (refutation_text if kind == "false" else vacuity_text)(template, name)
    assert derived is not None and derived.count(HOLE) == 1
    assert (HERE / f"{name}.{kind}.template.v").read_text() == derived
    text = certificate.read_text()
    head, tail = derived.split(HOLE)
    prelude = search_prelude(derived, False)
    assert text.startswith(prelude + head) and text.endswith(tail)
    proof = text[len(prelude + head):len(text) - len(tail)]
    assert proof.startswith("Proof.") and proof.rstrip().endswith("Qed.")
    assert not re.search(r"\b(Admitted|admit|Abort|Axiom|Parameter)\b", proof), proof
