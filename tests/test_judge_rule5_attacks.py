"""Red team, round 5: attacks on rule 5 of the judge's fixpoint criterion (docs/verifier.md, "The fixpoint
criterion": a pattern variable at a recursive position of a match on a single fixpoint's result is a strict subterm
when that fixpoint's every return is its decreasing variable, a strict subterm of it or its own recursive call).

Each attack is unsafe recursion compiled with the guard switched off (``#[bypass_check(guard)]``), in the shape of
``match m - d with S m' => loop m' end``, where the inner fixpoint's value is *not* its decreasing argument or a
subterm of it, or the match is not on such a value: a return under a ``let`` or a beta-redex, a fixpoint returning
a function (partial application, extra abstractions), the inner fixpoint calling the outer function,
a mutual inner block (either body), a constructor handed to the inner fixpoint, a nested ``list rose`` position, an
``Acc`` proof returned as it is, a class method whose instance is a growing fixpoint, a helper's parameter that whd
substitutes into a return, rocq#21053's cast by a commutative cut handed to an honest rule-5 identity, an opaque
helper, a primitive projection, an index family, the root at the wrong position, a ``let``-bound alias,
rocq#21053's cast made by ``eq_rect`` (an application, no leaf), a leaf that is a pattern variable of a match on a
growing fixpoint's result, and a head that reduces to a growing fixpoint. The judge
must refuse every one: the file is compiled once and dumped once (project mode, every constant a target), and
each unsafe definition must carry a ``fix`` finding. Sound recursion of the same shapes (a dead branch whd removes,
a mutual block's forest returned from a tree, a family whose value is the argument) must carry none, and a chain of
matches on fixpoints' results, each fixpoint matching on the one before, is judged in linear time, not 4^n.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import require_tool
from pytest_forall.core.proc import ProcResult, run_command
from pytest_forall.lang.rocq import judge as judge_module

ATTACKS = """\
Inductive True2 : Prop := I2 : (False -> True2) -> True2.
Fixpoint sub_h (n m : nat) {struct n} : nat :=
  match n with 0 => n | S k => match m with 0 => n | S l => sub_h k l end end.
Fixpoint honest (n : nat) : nat := match sub_h n 1 with 0 => 0 | S k => honest k end.
Fixpoint ret_let (n : nat) {struct n} : nat := match n with 0 => let y := S n in y | S k => ret_let k end.
#[bypass_check(guard)] Fixpoint via_let (n : nat) : nat := match ret_let n with 0 => 0 | S k => via_let k end.
Fixpoint ret_beta (n : nat) {struct n} : nat := match n with 0 => (fun y => y) (S n) | S k => ret_beta k end.
#[bypass_check(guard)] Fixpoint via_beta (n : nat) : nat := match ret_beta n with 0 => 0 | S k => via_beta k end.
Fixpoint ret_fun (n : nat) {struct n} : nat -> nat := match n with 0 => fun m => S m | S k => ret_fun k end.
#[bypass_check(guard)] Fixpoint via_fun (n : nat) : nat := match ret_fun n n with 0 => 0 | S k => via_fun k end.
Definition ret_eta := fix g (n : nat) {struct n} : nat -> nat :=
  fun m => match n with 0 => S m | S k => g k m end.
#[bypass_check(guard)] Fixpoint via_eta (n : nat) : nat := match ret_eta n n with 0 => 0 | S k => via_eta k end.
#[bypass_check(guard)] Fixpoint ret_dead (n : nat) {struct n} : nat :=
  match n with 0 => n | S k => match S k with 0 => ret_dead (S n) | S j => ret_dead j end end.
Fixpoint via_dead (n : nat) : nat := match ret_dead n with 0 => 0 | S k => via_dead k end.
Definition F (b : bool) : Type := if b then nat else bool.
Fixpoint ret_fam (n : nat) {struct n} : F true := match n with 0 => n | S k => ret_fam k end.
Fixpoint via_fam (n : nat) : nat := match ret_fam (S n) with 0 => 0 | S k => via_fam k end.
#[bypass_check(guard)] Fixpoint via_outer_call (n : nat) : nat :=
  match (fix g (x : nat) : nat := match via_outer_call (S x) with 0 => x | S _ => x end) n with
  0 => 0 | S k => via_outer_call k end.
#[bypass_check(guard)] Fixpoint via_mutual (n : nat) : nat :=
  match (fix f (x : nat) : nat := match x with 0 => S x | S k => g k end
         with g (x : nat) : nat := match x with 0 => x | S k => f k end for f) n with 0 => 0 | S k => via_mutual k end.
#[bypass_check(guard)] Fixpoint via_mutual2 (n : nat) : nat :=
  match (fix f (x : nat) : nat := match x with 0 => S x | S k => g k end
         with g (x : nat) : nat := match x with 0 => x | S k => f k end for g) (S n) with
  0 => 0 | S k => via_mutual2 k end.
#[bypass_check(guard)] Fixpoint via_constructor_arg (n : nat) : nat :=
  match sub_h (S n) 0 with 0 => 0 | S k => via_constructor_arg k end.
Inductive rose := node : list rose -> rose.
Fixpoint ret_list (l : list rose) {struct l} : list rose := match l with nil => l | cons _ r => ret_list r end.
#[bypass_check(guard)] Fixpoint via_list (t : rose) : nat :=
  match t with node l => match ret_list l with nil => 0 | cons x _ => via_list x end end.
Fixpoint acc_same (x : nat) (h : Acc lt x) {struct h} : Acc lt x := h.
#[bypass_check(guard)] Fixpoint via_acc (x : nat) (h : Acc lt x) {struct h} : False :=
  match acc_same x h with Acc_intro _ k => via_acc x (acc_same x h) end.
Class Shrink (A : Type) := shrink : A -> A.
#[export] Instance shrink_nat : Shrink nat := fix g (x : nat) : nat := match x with 0 => S x | S k => g k end.
#[bypass_check(guard)] Fixpoint via_method (n : nat) : nat := match shrink n with 0 => 0 | S k => via_method k end.
Definition with_base (y : nat) := fix g (x : nat) : nat := match x with 0 => y | S p => g p end.
#[bypass_check(guard)] Fixpoint via_param (n : nat) : nat :=
  match with_base (S n) n with 0 => 0 | S k => via_param k end.
#[bypass_check(guard)] Fixpoint via_param_root (n : nat) : nat :=
  match with_base n (S n) with 0 => 0 | S k => via_param_root k end.
Fixpoint idT (x : True2) {struct x} : True2 := match x with I2 f => x end.
#[bypass_check(guard)] Fixpoint via_cut_cast (H : True2 = (False -> True2)) (x : True2) (z : False) {struct x}
  : False := match x with I2 f => (match H in _ = T return T -> False with eq_refl => fun y : True2 =>
    match idT y with I2 g => via_cut_cast H (g z) z end end) f end.
Lemma sub_opaque : nat -> nat -> nat. Proof. exact sub_h. Qed.
#[bypass_check(guard)] Fixpoint via_opaque (n : nat) : nat :=
  match sub_opaque n 1 with 0 => 0 | S k => via_opaque k end.
Set Primitive Projections.
Record wrap := W { un : nat }.
Unset Primitive Projections.
Fixpoint grow (n : nat) : nat := match n with 0 => S n | S k => grow k end.
#[bypass_check(guard)] Fixpoint via_proj (n : nat) : nat := match un (W (grow n)) with 0 => 0 | S k => via_proj k end.
Inductive tree := nd : forest -> tree with forest := fnil : forest | fcons : tree -> forest -> forest.
Fixpoint kids (t : tree) {struct t} : forest := match t with nd f => f end.
Fixpoint size (t : tree) : nat := match kids t with fnil => 0 | fcons t1 _ => S (size t1) end.
Inductive vec : nat -> Type := vnil : vec 0 | vcons : forall n, nat -> vec n -> vec (S n).
Fixpoint vsame (n : nat) (v : vec n) {struct v} : vec n :=
  match v in vec m return vec m with vnil => vnil | vcons m a w => vcons m a w end.
#[bypass_check(guard)] Fixpoint via_vec (n : nat) (v : vec n) {struct v} : nat :=
  match vsame n v with vnil => 0 | vcons m _ w => via_vec (S m) (vcons m 0 w) end.
Fixpoint sub_r (m n : nat) {struct n} : nat := match n with 0 => n | S k => sub_r m k end.
#[bypass_check(guard)] Fixpoint via_wrong_position (n : nat) : nat :=
  match sub_r n (S n) with 0 => 0 | S k => via_wrong_position (S k) end.
#[bypass_check(guard)] Fixpoint via_alias (n : nat) : nat :=
  let y := grow n in match y with 0 => 0 | S k => via_alias k end.
Fixpoint ret_rect (H : (False -> True2) = True2) (x : True2) {struct x} : True2 :=
  match x with I2 f => eq_rect (False -> True2) (fun T : Prop => T) f True2 H end.
#[bypass_check(guard)] Fixpoint via_eq_rect (H : (False -> True2) = True2) (x : True2) (z : False) {struct x}
  : False := match ret_rect H x with I2 g => via_eq_rect H (g z) z end.
Fixpoint succ2 (x : nat) {struct x} : nat := match x with 0 => S (S x) | S k => S (succ2 k) end.
Fixpoint ret_inner_grow (x : nat) {struct x} : nat := match succ2 x with 0 => x | S p => p end.
#[bypass_check(guard)] Fixpoint via_inner_grow (n : nat) : nat :=
  match ret_inner_grow n with 0 => 0 | S k => via_inner_grow k end.
#[bypass_check(guard)] Fixpoint via_if_head (n : nat) : nat :=
  match (if true then fun a (_ : nat) => grow a else sub_h) n 0 with 0 => 0 | S k => via_if_head k end.
Fixpoint via_if_head_sound (n : nat) : nat :=
  match (if true then sub_h else fun a (_ : nat) => grow a) n 0 with 0 => 0 | S k => via_if_head_sound k end.
"""
#: sound too: each link matches on the one before, applied to its own argument (`h1 x := match h0 x with ...`); rule
#: 5 judged each fixpoint met in a scrutinee again for each branch at each level, 4^16 judgements for the last link
#: (a chain of 12 took 45 s of the judge's CPU): a candidate's way to run the judge past its budget (infra)
CHAIN = 16
CHAIN_TEXT = "Fixpoint h0 (x : nat) {struct x} : nat := match x with 0 => x | S k => h0 k end.\n" + "".join(
    f"Fixpoint h{i} (x : nat) {{struct x}} : nat := match h{i - 1} x with 0 => x | S _ => x end.\n"
    for i in range(1, CHAIN + 1))
#: each recurses on something no smaller than its decreasing argument (or on a value a growing fixpoint returns)
UNSAFE = ("via_let", "via_beta", "via_fun", "via_eta", "via_outer_call", "via_mutual", "via_mutual2",
          "via_constructor_arg", "via_list", "via_acc", "via_method", "via_param", "via_param_root",
          "via_cut_cast", "via_opaque", "via_proj", "via_vec", "via_wrong_position", "via_alias", "via_eq_rect",
          "via_inner_grow", "via_if_head")
#: sound: `ret_dead`'s unsafe call is in a branch whd removes (its value is its argument's subterm); `via_fam` matches
#: on `ret_fam (S n)`, whose reduct `ret_fam n` returns `n` at `F true` (= nat); `size` recurses on a tree of the
#: forest `kids` returns (a strict subterm in the mutual block); `honest` is the shape of mathcomp's `edivn_rec`;
#: `acc_same` does not recurse; `via_if_head_sound`'s head reduces to `sub_h` (whd finds rule 5's fixpoint)
SOUND = ("honest", "ret_dead", "via_dead", "via_fam", "size", "acc_same", "via_if_head_sound")


def fix_findings(dump: judge_module.FileDump) -> dict[str, list[str]]:
    """The ``fix`` findings' reasons per constant (its short name)."""
    found: dict[str, list[str]] = {}
    for line in {f for per_target in dump.findings.values() for f in per_target}:
        feature, constant, _place, _digest, why = line.split(" ", 4)
        if feature == "fix":
            found.setdefault(constant.rsplit(".", 1)[-1], []).append(why)
    return found


def dump_every_constant(factory: pytest.TempPathFactory, text: str,
                        label: str) -> tuple[Callable[[list[str], Path], ProcResult], Path, judge_module.FileDump]:
    """``text`` compiled once as ``P.A`` by the host's coqc and dumped once (project mode), every constant a target;
    with the coqc that runs the judge plugin, for more dumps, and the directory it ran in."""
    require_tool("coqc")
    plugin, why = judge_module.plugin_dir(factory.mktemp("judge-cache"), label)
    assert plugin is not None, why
    work = factory.mktemp(label)
    (work / "A.v").write_text(text, encoding="utf-8")
    done = subprocess.run(["coqc", "-q", "-Q", ".", "P", "A.v"], cwd=work, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr

    def run(args: list[str], cwd: Path) -> ProcResult:
        return run_command(["coqc", *args], cwd=cwd, timeout=300,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OCAMLPATH": str(plugin)})

    load = ["-Q", str(work), "P"]
    listed, problem = judge_module.run_file_dump(run, work, load, "P.A", [])
    assert listed is not None, problem
    targets = [path for path, entry in listed.fields if entry.startswith("const ")]
    dump, problem = judge_module.run_file_dump(run, work, load, "P.A", targets)
    assert dump is not None, problem
    return run, work, dump


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The attacks compiled once as ``P.A`` and dumped once, every constant a target: the ``fix`` findings' reasons
    per constant name."""
    return fix_findings(dump_every_constant(tmp_path_factory, ATTACKS + CHAIN_TEXT, "rule5")[2])


def test_every_attack_on_rule_5_is_refused(findings: dict[str, list[str]]) -> None:
    """Each unsafe definition of the shape rule 5 widens carries a ``fix`` finding (the theorem using it is refused
    by the kernel_advisories layer, tests/test_judge.py shows that path)."""
    missed = [name for name in UNSAFE if name not in findings]
    assert not missed, (missed, findings)


def test_sound_recursion_of_the_same_shapes_is_accepted(findings: dict[str, list[str]]) -> None:
    """The boundary from the other side: recursion on a fixpoint's result that is its argument or a subterm of it
    (after whd, through a mutual block, at a family's type) carries no finding."""
    refused = {name: findings[name] for name in SOUND if name in findings}
    assert not refused, refused


def test_a_chain_of_matches_on_fixpoints_results_is_judged_once_per_link(findings: dict[str, list[str]]) -> None:
    """The chain of 16 (``CHAIN_TEXT``) is judged in the fixture's dump (budget 300 s; it took hours before rule 5's
    verdicts were memoised, ``returns_memo``) and every link is accepted."""
    refused = {name: findings[name] for name in (f"h{i}" for i in range(CHAIN + 1)) if name in findings}
    assert not refused, refused
