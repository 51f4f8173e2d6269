"""Red team, round 2: attacks on the Rocq judge itself by an actor with a shell and a deadline (docs/verifier.md,
"The kernel and its known bugs"). Each runs a candidate through the real coqc, judge and coqchk with the static
screen switched off: the guarantee must follow from what the kernel checked, not from the text screen.

* A functor whose alias is strengthened wrongly (rocq#21051, rocq#21685) proves ``False`` on 8.16.1; coqc, the
  assumption walk and coqchk all accept it, so only a kernel-side reading of the library's module structure keeps
  it out.
* Module subtyping of inductives with let-ins (rocq#22387) was kept out, with the screen off, by coqchk alone; a
  ``vm_compute`` lemma the theorem does not use makes coqchk run past its budget, and "not judged" was an
  acceptance: a check the candidate can switch off.
* The honest near miss: helpers in a plain ``Module`` (and an unused ``vm_compute`` lemma) are still accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_judge import A1, CORPUS, Screenless, first_failure, verdict_of

from conftest import require_tool

THEOREM = A1[A1.index("Theorem putnam_2001_a1"):]
HEAD = A1[:A1.index("Theorem putnam_2001_a1")]
#: fast in coqc's VM, far past a 4 s budget in coqchk's lazy machine; the theorem does not use it
SLOW_FOR_COQCHK = ("From Coq Require Import Arith.\n"
                   "Lemma slow : Nat.eqb (fact 10) 3628800 = true. Proof. vm_compute. reflexivity. Qed.\n")


@pytest.fixture(autouse=True)
def _coq() -> None:
    require_tool("coqc")
    require_tool("coqchk")


def cheat(name: str) -> str:
    return (CORPUS / "cheat" / name / "candidate.v").read_text()


def verdict(text: str, tmp_path: Path, name: str) -> Any:
    return verdict_of(Screenless({"checker_timeout": 4}), "putnam_2001_a1", text, tmp_path, name)


def test_functor_strengthening_is_refused_by_the_kernel_side_module_walk(tmp_path: Path) -> None:
    """rocq#21051/rocq#21685 with the screen off: coqc, the assumption walk and coqchk accept this proof of False;
    the judge's reading of the compiled library's modules (a functor, a module type, an aliased or applied module)
    rejects it at kernel_advisories, naming the advisory and the module."""
    found = verdict(cheat("advisory_21051_functor_strengthening"), tmp_path, "f21051")
    assert found.verdict == "reject" and first_failure(found) == "kernel_advisories", found.layers
    assert "rocq#21051" in found.reason and "ForallProblem.putnam_2001_a1.MAKE.FUN" in found.reason, found.reason


def test_a_check_the_candidate_switches_off_is_not_the_cover(tmp_path: Path) -> None:
    """rocq#22387 (module subtyping, a proof of False on 8.16.1) plus an unused vm_compute lemma that makes coqchk
    run past its budget: the judge's module walk rejects it before coqchk's "not judged" could count as an
    acceptance."""
    found = verdict(SLOW_FOR_COQCHK + cheat("advisory_22387_module_letin_subtyping"), tmp_path, "f22387")
    assert found.verdict == "reject" and first_failure(found) == "kernel_advisories", found.layers
    assert "rocq#22387" in found.reason and "ForallProblem.putnam_2001_a1.Applied" in found.reason, found.reason


def test_helpers_in_a_plain_module_are_still_accepted(tmp_path: Path) -> None:
    """The near miss: a plain ``Module … End`` of helpers (what valid/helpers_in_module does) and an unused
    vm_compute lemma coqchk cannot finish: accepted, strict, the independent check "not judged"."""
    text = (HEAD + SLOW_FOR_COQCHK + "Module H.\n  Definition twice (n : nat) := n + n.\n"
            "  Lemma twice_0 : twice 0 = 0. Proof. reflexivity. Qed.\nEnd H.\n" + THEOREM)
    found = verdict(text, tmp_path, "near")
    assert found.verdict == "accept" and found.strict, found.reason
    check = found.layers[-1]
    assert check.name == "independent_check" and check.ok is None and "not judged" in check.reason
