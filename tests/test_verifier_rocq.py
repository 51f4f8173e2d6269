"""The Rocq verifier's prover layers against the real toolchain (coqc/coqchk 8.16), one test per class of cheat.

Every cheat is built from a real PutnamBench template. The corpus test (test_verify_cli.py) shows which
layer rejects each cheat first. Here the earlier layers are switched off (``NoStatic``: the static layers
are skipped), which shows that the later layer named in the test holds on its own. Parsers are tested on
output captured from the real tools.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from shared_builds import SharedBuilds

from conftest import PUTNAM, require_tool
from pytest_forall.core.model import Layer, sha256_bytes
from pytest_forall.core.proc import ProcResult, run_command
from pytest_forall.core.verify import task_from_template, verify_candidate
from pytest_forall.lang.rocq.backend import (
    STRICT_AXIOMS,
    RocqProver,
    parse_coqchk_summary,
    template_variable_names,
)
from pytest_forall.lang.rocq.judge import Dump, parse_dump

SRC = PUTNAM / "coq" / "src"
CORPUS = Path(__file__).resolve().parent / "cheats"


@pytest.fixture(autouse=True)
def _coq() -> None:
    require_tool("coqc")
    require_tool("coqchk")


class NoStatic(SharedBuilds):
    """The Rocq backend with the screen switched off (its static layers and its check of coqc's sentences): only
    the kernel-side layers judge. Its layers run one after another: the same verdict and layers
    (tests/test_verifier_concurrency.py), without a coqchk run in vain beside a candidate an earlier layer rejects.
    A candidate verified again reuses its compile and judge run (:mod:`shared_builds`)."""

    concurrent_layers = False

    def static_layers(self, task: Any, text: str) -> list[Layer]:
        return []

    def sentence_check(self, task: Any, data: bytes, compiled: Any) -> Layer:
        return Layer("sentence_structure", True, "switched off")


def task(problem: str) -> Any:
    return task_from_template("rocq", SRC / f"{problem}.v")


def with_proof(problem: str, proof: str, before: str = "", replace: tuple[str, str] = ("", "")) -> str:
    text = (SRC / f"{problem}.v").read_text()
    if replace[0]:
        assert replace[0] in text
        text = text.replace(*replace)
    hole = text.rindex("Admitted.")
    opener = text.rindex("Proof.", 0, hole)
    theorem = text.index("Theorem")
    return text[:theorem] + before + text[theorem:opener] + proof + text[hole + len("Admitted."):]


A1_PROOF = "Proof.\n  intros a b.\n  pose proof (hop (op b a) b) as H.\n  rewrite (hop b a) in H.\n  exact H.\nQed."


def run(problem: str, text: str, prover: RocqProver | None = None, builddir: Path | None = None) -> Any:
    return verify_candidate(task(problem), prover or NoStatic(), text.encode(), builddir=builddir, timeout=300)


def failing(verdict: Any) -> Layer:
    return next(layer for layer in verdict.layers if layer.ok is False or layer.infra)


# --- with the static layers off, the prover layers still reject ---------------------------------------

LATER_LAYER_CASES = {
    # name: (problem, candidate, layer that must reject, what its reason mentions)
    "axiom_declared": ("putnam_2001_a1", with_proof("putnam_2001_a1", "Proof. intros. destruct cheat. Qed.",
                                                    "Axiom cheat : False.\n"),
                       "axiom_audit", "ForallProblem.putnam_2001_a1.cheat"),
    "variable_added": ("putnam_2001_a1", with_proof("putnam_2001_a1", "Proof. intros. destruct cheat. Qed.",
                                                    "Variable cheat : False.\n"),
                       "axiom_audit", "ForallProblem.putnam_2001_a1.cheat"),
    "admitted_helper": ("putnam_2001_a1", with_proof(
        "putnam_2001_a1", "Proof. intros. apply helper. Qed.",
        "Lemma helper : forall (A : Type) (op : A -> A -> A) (a b : A), op a (op b a) = b.\nProof. Admitted.\n"),
        "axiom_audit", "ForallProblem.putnam_2001_a1.helper"),
    "admitted_main": ("putnam_2001_a1", (SRC / "putnam_2001_a1.v").read_text(), "axiom_audit",
                      "ForallProblem.putnam_2001_a1.putnam_2001_a1"),
    "unset_guard_checking": ("putnam_2001_a1", with_proof(
        "putnam_2001_a1", "Proof. intros. destruct (loop 0). Qed.",
        "Unset Guard Checking.\nFixpoint loop (n : nat) : False := loop n.\nSet Guard Checking.\n"),
        "axiom_audit", "unsafe guarded ForallProblem.putnam_2001_a1.loop"),
    "bypass_check_attribute": ("putnam_2001_a1", with_proof(
        "putnam_2001_a1", "Proof. intros. destruct (loop 0). Qed.",
        "#[bypass_check(guard)] Fixpoint loop (n : nat) : False := loop n.\n"),
        "axiom_audit", "unsafe guarded ForallProblem.putnam_2001_a1.loop"),
    "unset_positivity_checking": ("putnam_2001_a1", with_proof(
        "putnam_2001_a1", "Proof. intros. destruct (bad_false (mk (fun b => bad_false b))). Qed.",
        "Unset Positivity Checking.\nInductive Bad : Type := mk : (Bad -> False) -> Bad.\nSet Positivity Checking.\n"
        "Definition bad_false (b : Bad) : False := match b with mk f => f b end.\n"),
        "axiom_audit", "unsafe positive ForallProblem.putnam_2001_a1.Bad"),
    "unset_universe_checking": ("putnam_2001_a1", with_proof(
        "putnam_2001_a1", "Proof. pose proof T2 as _t. intros a b.\n  pose proof (hop (op b a) b) as H.\n"
        "  rewrite (hop b a) in H.\n  exact H.\nQed.",
        "Unset Universe Checking.\nDefinition T1 := Type.\nDefinition T2 : T1 := T1.\nSet Universe Checking.\n"),
        "axiom_audit", "unsafe type-in-type ForallProblem.putnam_2001_a1.T"),
    "definition_shadows_library": ("putnam_2000_b4", with_proof(
        "putnam_2000_b4", "Proof. intros. exfalso. exact f_cont. Qed.",
        "Definition continuity (f : R -> R) := False.\n"), "elaborated_statement", "continuity"),
    "notation_override": ("putnam_2000_b4", with_proof(
        "putnam_2000_b4", "Proof. intros. exact I. Qed.", 'Notation "x = y" := (True) : type_scope.\n'),
        "elaborated_statement", "putnam_2000_b4"),
    "answer_tampered": ("putnam_2005_a5", with_proof(
        "putnam_2005_a5", "Proof. reflexivity. Qed.", replace=(
            "Definition putnam_2005_a5_solution := PI * ln 2 / 8.",
            "Definition putnam_2005_a5_solution := RInt (fun x => ln (x + 1) / (x ^ 2 + 1)) 0 1.")),
        "elaborated_statement", "putnam_2005_a5_solution"),
    "hypothesis_added": ("putnam_2001_a1", with_proof(
        "putnam_2001_a1", "Proof. intros. apply hcheat. Qed.", replace=(
            "    : forall (a b: A)", "    (hcheat : forall (a b: A), op a (op b a) = b)\n    : forall (a b: A)")),
        "elaborated_statement", "putnam_2001_a1"),
    "abort_then_weaker_in_module": ("putnam_2001_a1", with_proof(
        "putnam_2001_a1", "Proof. Abort.\nModule M.\nTheorem putnam_2001_a1 : True.\nProof. exact I. Qed.\nEnd M."),
        "elaborated_statement", "putnam_2001_a1"),
    "template_variable_made_definition": ("putnam_1962_a4", with_proof(
        "putnam_1962_a4", "Proof. Admitted.", replace=(
            "Variable R : realType.", "From mathcomp Require Import Rstruct.\nDefinition R : realType := real_realType."
        )), "elaborated_statement", "ForallProblem.putnam_1962_a4.R"),
    "answer_value_changed_1986_a2": ("putnam_1986_a2", with_proof(
        "putnam_1986_a2", "Proof. Admitted.", replace=(
            "Definition putnam_1986_a2_solution := 3.", "Definition putnam_1986_a2_solution := 4.")),
        "elaborated_statement", "putnam_1986_a2_solution"),
    "theorem_proved_in_module_only": ("putnam_2001_a1", "Require Import Ensembles RelationClasses.\nModule M.\n"
                                      + with_proof("putnam_2001_a1", A1_PROOF).split("\n", 1)[1] + "\nEnd M.\n",
                                      "elaborated_statement", "defines no theorem"),
}


#: cases the text screen no longer refuses: the kernel judge alone rejects them
KERNEL_JUDGED_ONLY = frozenset({"notation_override"})

@pytest.mark.parametrize("case", sorted(LATER_LAYER_CASES))
def test_later_layer_rejects_with_the_static_layers_off(case: str) -> None:
    problem, text, layer_name, mention = LATER_LAYER_CASES[case]
    # the static layers reject every one of these first (the corpus test names the layer), except what the screen
    # leaves to the kernel judge (a notation: session 14, docs/verifier-static.md), where the judge is the only guard
    static = RocqProver().static_layers(task(problem), text)
    assert any(layer.ok is False for layer in static) is (case not in KERNEL_JUDGED_ONLY), case
    verdict = run(problem, text)
    layer = failing(verdict)
    assert verdict.verdict == "reject" and not verdict.strict
    assert layer.name == layer_name and mention in layer.reason, (layer.name, layer.reason)


def test_coqchk_alone_rejects_candidate_axioms_and_unsafe_fixpoints(tmp_path: Path) -> None:
    """The independent check holds without the axiom audit: ``coqchk -o`` names the candidate's axiom and
    its unguarded fixpoint."""
    prover = NoStatic()
    for name in ("axiom_declared", "unset_guard_checking", "unset_positivity_checking"):
        problem, text, _, _ = LATER_LAYER_CASES[name]
        build = tmp_path / name
        build.mkdir()
        verdict = run(problem, text, prover, builddir=build)
        assert verdict.verdict == "reject"
        layer = prover.independent_check(task(problem), build, build / "cand" / f"{problem}.v", 300)
        assert layer.ok is False and "ForallProblem.putnam_2001_a1" in layer.reason, layer.reason


def test_audit_classifies_strict_rules_and_fail_by_real_output(tmp_path: Path) -> None:
    """Classical/boolp axioms are strict, Epsilon is rules_only, a template Variable is allowed (candidates other
    tests verify too: their compiles are shared)."""
    prover = SharedBuilds()
    expectations = {"valid/classical_excluded_middle": ({"Coq.Logic.Classical_Prop.classic"}, True),
                    "valid/mathcomp_boolp_is_strict": ({"mathcomp.classical.boolp.propositional_extensionality",
                                                        "mathcomp.classical.boolp.functional_extensionality_dep"},
                                                       True),
                    "valid/epsilon_is_rules_only": ({"Coq.Logic.Epsilon.epsilon_statement"}, False),
                    "valid/putnam_1997_a4": ({"ForallProblem.putnam_1997_a4.T"}, True)}
    for entry, (axioms, strict) in expectations.items():
        problem = (CORPUS / entry / "template").read_text().strip().rsplit("/", 1)[1][:-2]
        verdict = verify_candidate(task(problem), prover, (CORPUS / entry / "candidate.v").read_bytes(),
                                   builddir=tmp_path / entry.replace("/", "_"))
        assert verdict.verdict == "accept" and verdict.strict is strict, (entry, verdict.reason)
        assert set(verdict.axioms) == axioms, entry
        audit = next(layer for layer in verdict.layers if layer.name == "axiom_audit")
        assert audit.evidence["strict"] is strict and audit.evidence["rules"] is True
    assert "Coq.Logic.Epsilon.epsilon_statement" not in STRICT_AXIOMS


# --- the pipeline itself ----------------------------------------------------------------------------


def test_accepted_candidate_is_compiled_byte_for_byte_and_never_appended_to(tmp_path: Path) -> None:
    data = (CORPUS / "valid" / "crlf_line_endings" / "candidate.v").read_bytes()
    assert b"\r\n" in data
    verdict = verify_candidate(task("putnam_2001_a1"), RocqProver(), data, builddir=tmp_path)
    assert verdict.verdict == "accept" and verdict.digest == sha256_bytes(data)
    assert (tmp_path / "cand" / "putnam_2001_a1.v").read_bytes() == data
    elaboration = next(layer for layer in verdict.layers if layer.name == "elaboration")
    assert elaboration.evidence["digest"] == sha256_bytes(data)
    # every coqc/coqchk ran in a fresh directory of its own, removed after: the copy and its .vo are all that is left
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["cand/putnam_2001_a1.v", "cand/putnam_2001_a1.vo"]
    check = verdict.layers[-1]
    assert check.name == "independent_check" and check.ok is True
    assert check.evidence["checker"] == "coqchk" and "-bytecode-compiler" not in check.evidence["argv"]
    assert "CONTEXT SUMMARY" in check.evidence["output"]


def test_template_as_candidate_passes_the_statement_check_on_library_variety(tmp_path: Path) -> None:
    """statement_check is the template against itself: no false mismatch (mathcomp realType with
    ``Variable R`` and a ``let '(…)`` pattern; Reals/Coquelicot with an answer definition); a wrong proof of
    the same text fails at elaboration, before any statement check. (All compiling templates were measured
    the same way; see docs/verifier.md.)"""
    prover = RocqProver()
    for problem in ("putnam_1965_b4", "putnam_2005_a5"):
        build = tmp_path / problem
        build.mkdir()
        t = task(problem)
        assert prover.check_template(t, build, 300).ok, problem
        (build / "cand").mkdir()
        candidate = build / "cand" / f"{problem}.v"
        candidate.write_text(t.template)
        assert prover.compile(t, build, candidate, 300).ok
        layer = prover.statement_check(t, build, 300)
        assert layer.ok is True, (problem, layer.reason)
        assert layer.evidence["compared"][0] == f"ForallProblem.{problem}.{t.theorem_name}"
    wrong = run("putnam_2005_a5", with_proof("putnam_2005_a5", "Proof. reflexivity. Qed."),
                prover=RocqProver())
    assert failing(wrong).name == "elaboration"
    assert "elaborated_statement" not in [layer.name for layer in wrong.layers]


# --- fail closed on odd tool behaviour (a runner that rewrites the real tool's output) ---------------------


class Rewriting(RocqProver):
    def __init__(self, rewrite: Any) -> None:
        super().__init__(runner=self._call)
        self.rewrite = rewrite

    def _call(self, argv: list[str], **kwargs: Any) -> ProcResult:
        return self.rewrite(argv, run_command(argv, **kwargs), Path(kwargs["cwd"]))


GOOD = (CORPUS / "valid" / "putnam_2001_a1" / "candidate.v").read_bytes()


@pytest.mark.parametrize("odd", ["judge_crash", "judge_garbled", "judge_no_output", "judge_timeout",
                                 "coqc_ok_without_vo", "coqchk_fails", "coqchk_killed", "checker_timeout", "coqchk_no_summary",
                                 "compile_timeout", "compile_starved", "sentences_unreported"])
def test_odd_tool_behaviour_never_accepts(odd: str, tmp_path: Path) -> None:
    """The runner rewrites what the real tools did; nothing odd is ever an accept. A coqchk that runs out of its
    budget is the one exception by design: accepted, with "independent check: not judged" in the guarantee. Infra
    only where the machine, not the candidate, decided: a judge that timed out, a compile its wall-clock backstop
    ended with its CPU budget unspent, a coqchk killed from outside (before: "coqchk rejected", and cached)."""
    def rewrite(argv: list[str], result: ProcResult, cwd: Path) -> ProcResult:
        judging, compiling = "audit.v" in argv, "-time" in argv
        if odd == "judge_crash" and judging:
            result.returncode = 139
        elif odd == "judge_garbled" and judging:
            dump = cwd / "dump.txt"
            dump.write_text(dump.read_text().replace("theorem const", "theorem? const"))
        elif odd == "judge_no_output" and judging:
            (cwd / "dump.txt").unlink()
        elif odd == "judge_timeout" and judging:
            result.timed_out, result.returncode = True, 124
        elif odd == "coqc_ok_without_vo" and compiling:
            (cwd / "p" / "putnam_2001_a1.vo").unlink()
        elif odd == "coqchk_fails" and "coqchk" in argv[0]:
            result.returncode = 1
        elif odd == "coqchk_killed" and "coqchk" in argv[0]:  # SIGKILL from outside, as a sandbox's PID 1 reports it
            result.returncode = 137
        elif odd == "checker_timeout" and "coqchk" in argv[0]:
            result.timed_out, result.returncode = True, 124
        elif odd == "coqchk_no_summary" and "coqchk" in argv[0]:
            result.stdout = result.stderr = ""
        elif odd == "compile_timeout" and compiling:  # its CPU budget spent: the candidate's failure
            result.timed_out, result.returncode = True, 124
            result.extra["cpu_spent"] = True
        elif odd == "compile_starved" and compiling:  # the wall backstop, its CPU budget unspent: the machine's
            result.timed_out, result.returncode = True, 124
            result.extra["cpu_spent"] = False
        elif odd == "sentences_unreported" and compiling:
            result.stdout = "\n".join(result.stdout.splitlines()[1:])
        return result

    verdict = verify_candidate(task("putnam_2001_a1"), Rewriting(rewrite), GOOD, builddir=tmp_path, timeout=300)
    if odd == "checker_timeout":
        assert verdict.verdict == "accept" and verdict.layers[-1].ok is None, verdict.reason
        assert any(g.startswith("independent check: not judged") for g in verdict.guarantee), verdict.guarantee
        return
    assert verdict.verdict != "accept", verdict.layers
    assert (verdict.verdict == "infra") is (odd in ("judge_timeout", "compile_starved", "coqchk_killed")), verdict.reason


# --- parsers on real output -------------------------------------------------------------------------

def test_judge_output_parser_fails_closed() -> None:
    """The plugin's record is read only when it carries this run's nonce at both ends and no unknown line."""
    good = "forall-judge n1\ntheorem const P.m.t - [] mono : Prop\nassumption axiom Coq.x\nclosure const P.m.d def\nend n1\n"
    dump = parse_dump(good, "n1")
    assert isinstance(dump, Dump) and dump.assumptions == ("axiom Coq.x",) and dump.closure == {"const P.m.d def"}
    for odd in (good.replace("n1", "n2", 1), good.replace("end n1", "end n0"), good.replace("closure", "closur"),
                "", good[: good.index("end")]):
        assert isinstance(parse_dump(odd, "n1"), str), odd


def test_coqchk_summary_parser_on_real_output() -> None:
    output = """
CONTEXT SUMMARY
===============

* Theory: Set is predicative
  
* Axioms:
    P.c.ax
    P.c.v
  
* Constants/Inductives relying on type-in-type:
    P.c.T2
  
* Constants/Inductives relying on unsafe (co)fixpoints:
    P.c.f
  
* Inductives whose positivity is assumed:
    P.c.Bad
  """
    assert parse_coqchk_summary(output) == {"Theory": [], "Axioms": ["P.c.ax", "P.c.v"], "type-in-type": ["P.c.T2"],
                                            "unsafe (co)fixpoints": ["P.c.f"],
                                            "Inductives whose positivity is assumed": ["P.c.Bad"]}
    assert parse_coqchk_summary("no summary here") is None


def test_template_variable_names_cover_putnam_declarations() -> None:
    assert template_variable_names("Variable R : realType.") == {"R"}
    assert template_variable_names("Variables G B : finType.") == {"G", "B"}
    assert template_variable_names("Context d (T : measurableType d) (R : realType) (P : probability T R).") == {
        "d", "T", "R", "P"}
    assert template_variable_names("Context `{T2D:Tarski_2D} `{TE:@Tarski_euclidean Tn TnEQD}.") == {"T2D", "TE"}
    assert template_variable_names("(* Variable x : False. *) Theorem t : True.") == set()
