"""Project mode and the judge's module walk (docs/verifier.md, "The module walk"): a project's own functors, module
types and sealed modules are its maintainer's and are not refused, but the module bugs (rocq#21051, …) stay possible
for what rests on them. An item whose proof reaches a project file with a module the walk does not cover is accepted
rules-only (as a proof through the project's own axioms), its verdict naming those advisories NOT covered; an honest
proof in a plain module of a file without one stays strict, the advisories covered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import require_tool
from pytest_forall.core.model import Verdict
from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import load_project

#: rocq#21051's functor-strengthening exploit (tests/cheats/cheat/advisory_21051_functor_strengthening): a proof of
#: False that coqc, the assumption walk and coqchk 8.16.1 all accept
EXPLOIT = (Path(__file__).parent / "cheats" / "cheat" / "advisory_21051_functor_strengthening" / "candidate.v") \
    .read_text(encoding="utf-8").split("RelationClasses.\n", 1)[1].split("Theorem putnam_2001_a1", 1)[0]
USE = ("Require Import Mods.Bad.\n\nLemma zero_is_one : 0 = 1.\nProof. destruct contradiction. Qed.\n\n"
       # its statement alone names the other file's constant (the proof term is `I`)
       "Lemma stated : (fun _ : False => True) contradiction.\nProof. exact I. Qed.\n")
#: each project's root by its logical name, once its module's fixture made it
PROJECTS: dict[str, Path] = {}
GOOD = "Module Plain.\n  Lemma honest : 1 + 1 = 2.\n  Proof. reflexivity. Qed.\nEnd Plain.\n"
#: rocq#20413's fixpoint (tests/cheats/cheat/advisory_20413_unchecked_argument): passed unapplied to an opaque lemma,
#: outside the judge's conservative criterion (its `fix` detector flags it); the guard checker of 8.16.1 accepts it,
#: so `zero_is_one` is a proof of `0 = 1` through the project's own unsafe fixpoint. The dump's detector findings are
#: of the target's own file (the project's other files are not walked by the detectors), so the fixpoint is here.
FIX = """Definition T (n : nat) : Type := match n with 0 => unit -> False | S _ => unit end.
Lemma h (p : nat) (g : forall n, T n -> False) : T p.
Proof. destruct p as [|q]. - exact (fun _ => g 1 tt). - exact tt. Qed.
Fixpoint f (n : nat) (x : T n) {struct n} : False :=
  (match n as k return T k -> False with 0 => fun y => y tt | S p => fun _ => f p (h p f) end) x.
Lemma zero_is_one : 0 = 1.
Proof. destruct (f 1 tt). Qed.
Lemma honest : 2 + 2 = 4.
Proof. reflexivity. Qed.
"""


def own_verdicts(root: Path, logical: str, files: dict[str, str], only: tuple[str, ...] = ()) -> dict[str, Verdict]:
    """A project of ``files`` (in ``theories/``, mapped to ``logical``, in that order) at ``root``; each item's own
    proof judged once (one build, one judge session per file); ``only``: the items whose ids start so."""
    require_tool("coqc")
    (root / "theories").mkdir(parents=True)
    (root / "_CoqProject").write_text(f"-R theories {logical}\n" + "".join(f"theories/{name}\n" for name in files))
    for name, text in files.items():
        (root / "theories" / name).write_text(text)
    PROJECTS[logical] = root
    prover = ProjectRocqProver({"cache_dir": str(root.parent / "cache"), "timeout": 300})
    return {task.task_id: verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
            for task in load_project(root, {}) if task.task_id.startswith(only or ("",))}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Verdict]:
    """Every item's own proof judged once (one build, one judge session per file)."""
    return own_verdicts(tmp_path_factory.mktemp("mods") / "proj", "Mods",
                        {"Bad.v": EXPLOIT, "Use.v": USE, "Good.v": GOOD, "Fix.v": FIX})


def _coverage(verdict: Verdict) -> dict[str, Any]:
    return dict(verdict.kernel.get("coverage", {}))


def assert_rules_only_with_fix_not_covered(verdict: Verdict, constant: str) -> None:
    """A proof of `0 = 1` through rocq#20413's fixpoint ``constant`` of the project: accepted, never strict (the axiom
    audit names the finding), the `fix` rows in force NOT covered, each naming the fixpoint."""
    assert verdict.verdict == "accept" and not verdict.strict, verdict.reason
    audit = next(layer for layer in verdict.layers if layer.name == "axiom_audit")
    assert "outside the judge's conservative criteria" in audit.reason and f"fix {constant} " in audit.reason, \
        audit.reason
    coverage = _coverage(verdict)
    assert "rocq#20413" in verdict.kernel["advisories"], verdict.kernel  # in force on 8.16.1
    fix_rows = [a for a, how in coverage.items() if how.startswith("NOT covered (fix)")]
    assert "rocq#20413" in fix_rows and all(constant in coverage[a] for a in fix_rows), coverage
    advice = next(layer for layer in verdict.layers if layer.name == "kernel_advisories")
    assert advice.ok and "rocq#20413" in advice.evidence["guarantee"].partition("NOT covered: ")[2], advice.evidence


def test_a_proof_through_a_functor_exploit_is_not_strict_and_its_module_advisories_are_not_covered(
        verdicts: dict[str, Verdict]) -> None:
    """The proof of `0 = 1` through rocq#21051 in another project file: before the module walk ran in project mode it
    was accepted strict with rocq#21051 "covered by the module walk"."""
    verdict = verdicts["Mods__Use__zero_is_one"]
    assert verdict.verdict == "accept" and not verdict.strict, verdict.reason
    audit = next(layer for layer in verdict.layers if layer.name == "axiom_audit")
    assert "the module walk does not cover" in audit.reason and "Mods.Bad.MAKE.FUN" in audit.reason, audit.reason
    coverage = _coverage(verdict)
    assert "rocq#21051" in verdict.kernel["advisories"], verdict.kernel  # in force on 8.16.1
    for advisory in ("rocq#21051", "rocq#21685", "rocq#12155", "rocq#16646"):
        assert coverage[advisory].startswith("NOT covered (functor)"), (advisory, coverage[advisory])
        assert "Mods.Bad." in coverage[advisory]
    advice = next(layer for layer in verdict.layers if layer.name == "kernel_advisories")
    assert "NOT covered: rocq#" in advice.evidence["guarantee"]
    # a statement that alone rests on the exploit's file (Coq's traversal follows bodies; the walk reads types too)
    stated = verdicts["Mods__Use__stated"]
    assert stated.verdict == "accept" and not stated.strict, stated.reason
    assert _coverage(stated)["rocq#21051"].startswith("NOT covered")
    # the file's own lemmas after its functor too: the file is walked up to the target
    same = verdicts["Mods__Bad__same"]
    assert same.verdict == "accept" and not same.strict, same.reason
    assert _coverage(same)["rocq#21051"].startswith("NOT covered")


def test_an_honest_proof_in_a_plain_module_stays_strict_with_the_advisories_covered(
        verdicts: dict[str, Verdict]) -> None:
    verdict = verdicts["Mods__Good__Plain__honest"]
    assert verdict.verdict == "accept" and verdict.strict, verdict.reason
    coverage = _coverage(verdict)
    assert coverage["rocq#21051"].startswith("detector (functor): kernel_advisories: the judge's module walk")
    assert not any(how.startswith("NOT") for how in coverage.values()), coverage


def test_a_proof_through_the_projects_own_unsafe_fixpoint_is_not_strict_and_the_fix_advisories_not_covered(
        verdicts: dict[str, Verdict]) -> None:
    """The project's own detector findings are excused as the baseline's (the candidate did not bring them), but
    they are the project's code, which is what is judged: before, `zero_is_one` (a proof of `0 = 1` through
    rocq#20413) was accepted strict with the `fix` advisories "covered" by the detector. The file's honest lemmas,
    which do not reach the fixpoint, stay strict with the advisories covered."""
    verdict = verdicts["Mods__Fix__zero_is_one"]
    assert_rules_only_with_fix_not_covered(verdict, "Mods.Fix.f")
    assert not any(how.startswith("NOT covered (functor)") for how in _coverage(verdict).values()), _coverage(verdict)
    for honest in ("Mods__Fix__honest", "Mods__Fix__h"):
        verdict = verdicts[honest]
        assert verdict.verdict == "accept" and verdict.strict, (honest, verdict.reason)
        assert not any(how.startswith("NOT") for how in _coverage(verdict).values()), _coverage(verdict)


class Screenless(ProjectRocqProver):
    """The text screen off (defence in depth): the kernel judge alone decides."""

    def static_layers(self, task: Any, text: str) -> list[Any]:
        return []


HELPERS = ("Module Type TT. Parameter n : nat. End TT.\nModule Two. Definition n := 1. End Two.\n"
           "Module App (X : TT). Definition m := X.n. End App.\nModule A2 := App Two.\n")


def test_a_functor_the_candidate_brings_is_refused_at_kernel_advisories(verdicts: dict[str, Verdict],
                                                                       tmp_path: Path) -> None:
    """The project's own modules are its maintainer's; a module the build's file does not have is the candidate's and
    is refused, as a benchmark candidate's (the screen, which refuses it first, off)."""
    task = next(t for t in load_project(PROJECTS["Mods"], {}) if t.task_id == "Mods__Good__Plain__honest")
    prover = Screenless({"cache_dir": str(PROJECTS["Mods"].parent / "cache"), "timeout": 300})
    text = prover.candidate_with_prelude(task, HELPERS, "pose proof A2.m. reflexivity.\nQed.")
    verdict = verify_candidate(task, prover, text.encode(), timeout=300)
    failed = next(layer for layer in verdict.layers if layer.ok is False)
    assert verdict.verdict == "reject" and failed.name == "kernel_advisories", verdict.reason
    assert "rocq#21051" in failed.reason and "Mods.Good.Plain.App" in failed.reason, failed.reason


#: a functor applied, whose module's constant another file's statement alone names (rocq#21051 is fixed in 9.2.0, so
#: no exploit here: the rows still in force on every kernel, rocq#12155, #16646 and #22387, are `functor` rows)
APPLIED = EXPLOIT.split("Lemma same")[0] + "Definition flag := RES.F.bug.\n"
NAMES = "Require Import Mods.Bad.\n\nLemma names : flag = true.\nProof. reflexivity. Qed.\n"


@pytest.mark.parametrize("suite", ["trixie", "sid"])
def test_the_project_module_walk_on_other_kernels(suite: str, tmp_path: Path) -> None:
    """The plugin's walk on Coq 8.20.1 and Rocq 9.2.0: the item whose statement names the applied functor's constant
    (its proof term, `eq_refl true`, does not) is rules-only with the functor rows in force NOT covered; the honest
    one in a plain module strict."""
    from test_toolchains import root

    spec = str(root(suite))
    project = tmp_path / "proj"
    (project / "theories").mkdir(parents=True)
    (project / "_CoqProject").write_text("-R theories Mods\ntheories/Bad.v\ntheories/Use.v\ntheories/Good.v\n")
    for name, text in (("Bad.v", APPLIED), ("Use.v", NAMES), ("Good.v", GOOD)):
        (project / "theories" / name).write_text(text)
    prover = ProjectRocqProver({"rocq_toolchain": spec, "cache_dir": str(tmp_path / "cache"), "timeout": 600})
    tasks = {t.task_id: t for t in load_project(project, {"rocq_toolchain": spec})}
    judged = {name: verify_candidate(tasks[name], prover, tasks[name].meta["own_candidate"].encode(), timeout=600)
              for name in ("Mods__Use__names", "Mods__Good__Plain__honest")}
    names, honest = judged["Mods__Use__names"], judged["Mods__Good__Plain__honest"]
    assert names.verdict == "accept" and not names.strict, names.reason
    uncovered = {a for a, how in _coverage(names).items() if how.startswith("NOT covered (functor)")}
    assert {"rocq#12155", "rocq#16646", "rocq#22387"} <= uncovered, _coverage(names)
    assert honest.verdict == "accept" and honest.strict, honest.reason
    assert not any(how.startswith("NOT") for how in _coverage(honest).values())
