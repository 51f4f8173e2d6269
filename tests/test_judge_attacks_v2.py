"""Red team, round 2: attacks on the Rocq judge itself by an actor with a shell and a deadline (docs/verifier.md,
"The kernel and its known bugs"). Each runs a candidate through the real coqc, judge and coqchk with the static
screen switched off: the guarantee must follow from what the kernel checked, not from the text screen.

* A functor whose alias is strengthened wrongly (rocq#21051, rocq#21685) proves ``False`` on 8.16.1; coqc, the
  assumption walk and coqchk all accept it, so only a kernel-side reading of the library's module structure keeps
  it out (``tests/test_judge.py::test_the_module_walk_is_what_rejects_functor_strengthening``).
* Module subtyping of inductives with let-ins (rocq#22387) was kept out, with the screen off, by coqchk alone; a
  ``vm_compute`` lemma the theorem does not use makes coqchk run past its budget, and "not judged" was an
  acceptance: a check the candidate can switch off.
* The honest near miss: helpers in a plain ``Module`` (and an unused ``vm_compute`` lemma) are still accepted.
* ``Include`` of a functor application copied its fields into the file and got past the first module walk (which
  read only modules): fields whose canonical name is not their own are findings now.
* Regressions that held: universe checking switched off locally in a module (the helpers' own typing flags); an
  opaque template helper made transparent (the closure's kinds); a
  template constant re-declared through ``Include`` of a module with another body (the
  kernel's canonical name is the module's, so the statement's term differs), and an installed library's functor
  applied (a module walk finding, as conservative as the screen).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_judge import A1, CORPUS, NoAdvisoryCheck, Screenless, first_failure, verdict_of

from conftest import PUTNAM, require_tool
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.rocq.judge import uncovered_findings
from pytest_forall.lang.screens import rocq_static_layers

THEOREM = A1[A1.index("Theorem putnam_2001_a1"):]
HEAD = A1[:A1.index("Theorem putnam_2001_a1")]
#: fast in coqc's VM, far past a 4 s budget in coqchk's lazy machine; the theorem does not use it
SLOW_FOR_COQCHK = ("From Coq Require Import Arith.\n"
                   "Lemma slow : Nat.eqb (fact 10) 3628800 = true. Proof. vm_compute. reflexivity. Qed.\n")


def test_a_template_module_finding_never_excuses_the_candidates() -> None:
    """A module finding names a path and a kind, not a term (a functor's or a sealed module's content is not what its
    signature shows), so the template's own finding on the same path cannot show the candidate's module is the
    template's: a candidate that replaced the template's module type by another of the same name is refused."""
    line = "functor ForallProblem.p.T module " + "a" * 32 + " a module type"
    assert uncovered_findings(frozenset({line}), frozenset({line}), "ForallProblem.p.thm") == [
        "functor ForallProblem.p.T a module type"]


@pytest.fixture
def _coq() -> None:
    require_tool("coqc")
    require_tool("coqchk")


def screen_refuses(text: str) -> str:
    """The first static layer that refuses ``text`` as a candidate of putnam_2001_a1 ("" = none)."""
    template = (PUTNAM / "coq" / "src" / "putnam_2001_a1.v").read_text()
    return next((layer.name for layer in rocq_static_layers(template, text, theorem_name="putnam_2001_a1")
                 if layer.ok is False), "")


def cheat(name: str) -> str:
    return (CORPUS / "cheat" / name / "candidate.v").read_text()


def verdict(text: str, tmp_path: Path, name: str, backend: type[Screenless] = Screenless) -> Any:
    return verdict_of(backend({"checker_timeout": 4}), "putnam_2001_a1", text, tmp_path, name)


@pytest.mark.usefixtures("_coq")
def test_a_check_the_candidate_switches_off_is_not_the_cover(tmp_path: Path) -> None:
    """rocq#22387 (module subtyping, a proof of False on 8.16.1) plus an unused vm_compute lemma that makes coqchk
    run past its budget: the judge's module walk rejects it; without that walk coqchk's "not judged" was the
    verdict, an acceptance of a proof of False."""
    found = verdict(SLOW_FOR_COQCHK + cheat("advisory_22387_module_letin_subtyping"), tmp_path, "f22387")
    assert found.verdict == "reject" and first_failure(found) == "kernel_advisories", found.layers
    assert "rocq#22387" in found.reason and "ForallProblem.putnam_2001_a1.Applied" in found.reason, found.reason
    without = verdict(SLOW_FOR_COQCHK + cheat("advisory_22387_module_letin_subtyping"), tmp_path, "f22387-without",
                      NoAdvisoryCheck)
    assert without.verdict == "accept" and without.strict, without.reason  # the attack, had the walk not seen it
    assert without.layers[-1].ok is None and "not judged" in without.layers[-1].reason


@pytest.mark.usefixtures("_coq")
def test_helpers_in_a_plain_module_are_still_accepted(tmp_path: Path) -> None:
    """The near miss: a plain ``Module … End`` of helpers (what valid/helpers_in_module does) and an unused
    vm_compute lemma coqchk cannot finish: accepted, strict, the independent check "not judged"."""
    text = (HEAD + SLOW_FOR_COQCHK + "Module H.\n  Definition twice (n : nat) := n + n.\n"
            "  Lemma twice_0 : twice 0 = 0. Proof. reflexivity. Qed.\nEnd H.\n" + THEOREM)
    found = verdict(text, tmp_path, "near")
    assert found.verdict == "accept" and found.strict, found.reason
    check = found.layers[-1]
    assert check.name == "independent_check" and check.ok is None and "not judged" in check.reason


def own_template(tmp_path: Path, name: str, template: str, text: str) -> Any:
    """The verdict, screen off, on ``text`` against a template of our own (``name``.v in ``tmp_path``)."""
    path = tmp_path / f"{name}.v"
    path.write_text(template)
    backend = Screenless()
    backend.concurrent_layers = False
    (tmp_path / name).mkdir()
    return verify_candidate(task_from_template("rocq", path), backend, text.encode(), builddir=tmp_path / name,
                            timeout=300)


@pytest.mark.usefixtures("_coq")
def test_a_template_constant_included_from_a_module_is_not_the_templates(tmp_path: Path) -> None:
    """Screen off: the answer re-declared by ``Include`` of a module that defines it with the body the proof needs.
    The top-level name exists, but the kernel's canonical name of what the statement mentions is the module's, so the
    theorem's kernel term differs from the template's (elaborated_statement)."""
    found = own_template(tmp_path, "rtj_include", "Definition rtj_include_solution := 1.\n"
                         "Theorem rtj_include : rtj_include_solution = 2.\nProof. Admitted.\n",
                         "Module M. Definition rtj_include_solution := 2. End M.\nInclude M.\n"
                         "Theorem rtj_include : rtj_include_solution = 2.\nProof. reflexivity. Qed.\n")
    assert first_failure(found) == "elaborated_statement", found.layers
    assert "ForallProblem.rtj_include.M.rtj_include_solution" in found.reason, found.reason


@pytest.mark.usefixtures("_coq")
def test_an_opaque_template_helper_made_transparent_is_not_the_templates(tmp_path: Path) -> None:
    """Screen off: the template's helper is opaque (``Qed``), so its statement says nothing about its value; the
    candidate closes it with ``Defined`` and proves the statement by computation. The closure compares each
    constant's kind (opaque/definition) as the kernel has it, so elaborated_statement rejects."""
    found = own_template(tmp_path, "rtj_opaque", "Lemma rtj_helper : nat. Proof. exact 1. Qed.\n"
                         "Theorem rtj_opaque : rtj_helper = 1.\nProof. Admitted.\n",
                         "Lemma rtj_helper : nat. Proof. exact 1. Defined.\n"
                         "Theorem rtj_opaque : rtj_helper = 1.\nProof. reflexivity. Qed.\n")
    assert first_failure(found) == "elaborated_statement", found.layers
    assert "ForallProblem.rtj_opaque.rtj_helper" in found.reason, found.reason


@pytest.mark.usefixtures("_coq")
def test_an_installed_librarys_functor_applied_is_a_module_walk_finding(tmp_path: Path) -> None:
    """Screen off: ``Module S := MSetAVL.Make Nat`` (an installed functor, an honest use) is outside the module walk's
    criterion like the candidate's own functors: the walk does not trust what the kernel's functor application and
    strengthening produced (rocq#21051/21685 are bugs there). The outermost module is named."""
    text = HEAD + "Require Import MSets PeanoNat.\nModule S := MSetAVL.Make Nat.\n" + THEOREM
    assert screen_refuses(text) == "shadowing_guard"  # no proof the screen allows is refused by the walk here
    found = verdict(text, tmp_path, "lib")
    assert first_failure(found) == "kernel_advisories", found.layers
    assert "`ForallProblem.putnam_2001_a1.S` is outside" in found.reason, found.reason
    assert "S.Raw" not in found.reason, found.reason


@pytest.mark.usefixtures("_coq")
def test_a_functor_application_included_is_a_module_walk_finding(tmp_path: Path) -> None:
    """Screen off: ``Include MSetAVL.Make Nat`` leaves no module of its own in the file (the fields are copied into
    it), so the first module walk, which read only modules, accepted it: a functor application (rocq#16646's
    unreported flags, the strengthening bugs) out of the walk's sight. Its fields' canonical names are not their own
    (the delta resolver), and that is a finding; so is an included plain module's field."""
    text = HEAD + "Require Import MSets PeanoNat.\nInclude MSetAVL.Make Nat.\n" + THEOREM
    assert screen_refuses(text) == "shadowing_guard"
    found = verdict(text, tmp_path, "inc")
    assert first_failure(found) == "kernel_advisories", found.layers
    assert "another canonical name (Include or an alias)" in found.reason, found.reason
    plain = verdict(HEAD + "Module M. Definition h := 2. End M.\nInclude M.\n" + THEOREM, tmp_path, "inc-plain")
    assert first_failure(plain) == "kernel_advisories", plain.layers
    assert "`ForallProblem.putnam_2001_a1.h` is outside" in plain.reason, plain.reason


@pytest.mark.usefixtures("_coq")
def test_universe_checking_switched_off_locally_in_a_module_is_an_assumption(tmp_path: Path) -> None:
    """Screen off: ``Local Unset Universe Checking`` inside a plain module around helpers (``Type : Type``) the proof
    uses. The flag is the helpers' own typing flag, so the kernel's assumption walk names every one of them as
    type-in-type (axiom_audit), whatever module or attribute hid the command."""
    helpers = ("Module H.\n  Local Unset Universe Checking.\n  Definition u : Type := Type.\n"
               "  Definition tit : u := u.\n  Lemma t : True. Proof. exact (let _ := tit in I). Qed.\nEnd H.\n")
    found = verdict(HEAD + helpers + THEOREM.replace("Proof.", "Proof.\n  pose proof H.t as _.", 1), tmp_path, "uuc")
    assert first_failure(found) == "axiom_audit", found.layers
    assert "unsafe type-in-type ForallProblem.putnam_2001_a1.H.t" in found.reason, found.reason


@pytest.mark.usefixtures("_coq")
def test_a_hierarchy_builder_instance_is_not_a_module_walk_finding(tmp_path: Path) -> None:
    """The near miss of the canonical-name check: ``HB.instance`` (mathcomp-analysis's way to declare an instance)
    declares its constants in the file itself, so a helper instance leaves the proof accepted, strict."""
    helper = ("From mathcomp Require Import all_ssreflect.\nFrom HB Require Import structures.\n"
              "From mathcomp Require Import boolp classical_sets functions.\n"
              "Definition myf : option nat -> option nat := fun x => x.\n"
              "HB.instance Definition _ := OInv.Build _ _ myf (fun x => Some x).\n")
    found = verdict(HEAD + helper + THEOREM, tmp_path, "hb")
    assert found.verdict == "accept" and found.strict, found.reason
