"""Rule 6 of the judge's fixpoint criterion, dead code (docs/verifier.md, "The fixpoint criterion"): a term whose
weak-head normal form is a match every branch of which, applied to the match's arguments, is dead (a match with no
branches is dead) never reduces to a constructor, so a recursive call on it never unfolds; and a match's return
clause is read after weak-head reduction (``(fun _ => T) a`` is ``T``). mathcomp's ``ssrnat.find_ex_minn`` recurses
on ``acc_nat`` through such a branch (``False_ind`` under an ``eq_ind_r`` rewrite of ``P m = false``, applied to a
proof of ``P m = true``), the one honest fixpoint of 351 compiled library files the criterion refused.

Attacks first: unsafe recursion compiled with the guard switched off, each in a shape a careless widening would
accept — a match with one dead branch and one that is the decreasing argument itself (as a term and as
find_ex_minn's own tactic script), an empty match discarded by a beta-redex or a ``let``, an accessibility proof of
another index (``Acc_inv`` of another proof) beside a dead branch, rocq#21053's cast along an equality of
propositions (by ``eq_rect``, and with the return clause behind a definition), and the classic proof of ``False``
from propositional extensionality through that cast. Each must carry a ``fix`` finding. The honest shapes carry none:
the dead branch as a term, as mathcomp writes it, through ``rewrite``/``discriminate``, an ``Acc`` recursion whose
decreasing argument is a match with a dead branch, a ``Fix_F``-style recursion, a return clause as a beta-redex —
and mathcomp's own ``find_ex_minn``, read from the installed library's compiled file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_judge_rule5_attacks import dump_every_constant, fix_findings

from conftest import require_path, require_tool
from pytest_forall.lang.rocq import judge as judge_module

TEXT = """\
Inductive True2 : Prop := I2 : (False -> True2) -> True2.
Inductive reach (f : nat -> bool) (i : nat) : Prop :=
  | here : f i = true -> reach f i
  | later : reach f (S i) -> reach f i.
Definition absurd_tf (b : bool) (t : b = true) (e : b = false) : False :=
  match eq_trans (eq_sym t) e in _ = c return if c then True else False with eq_refl => I end.
Fixpoint first_from (f : nat -> bool) (i : nat) (r : reach f i) {struct r} : nat :=
  match f i as b return f i = b -> nat with
  | true => fun _ => i
  | false => fun e => first_from f (S i) (match r with
      | here _ _ t => False_ind _ (absurd_tf (f i) t e) | later _ _ r' => r' end)
  end eq_refl.
Fixpoint first_cast (f : nat -> bool) (i : nat) (r : reach f i) {struct r} : nat :=
  match f i as b return f i = b -> nat with
  | true => fun _ => i
  | false => fun e => first_cast f (S i)
      ((fun (h0 : f i = true -> reach f (S i)) (h1 : reach f (S i) -> reach f (S i)) =>
          match r as r0 return (fun _ : reach f i => reach f (S i)) r0 with
          | here _ _ t => h0 t | later _ _ r' => h1 r' end)
       (eq_ind_r (fun c => c = true -> reach f (S i))
          (fun t : false = true => False_ind _ (absurd_tf false t eq_refl)) e)
       (fun r' => r'))
  end eq_refl.
Definition first_rewrite (f : nat -> bool) : forall i, reach f i -> nat.
Proof.
  fix go 2. intros i r. destruct (f i) eqn:E.
  - exact i.
  - apply (go (S i)). case r.
    + rewrite E. discriminate.
    + exact (fun r' => r').
Defined.
Fixpoint count_down (d : forall k n, {k < n} + {~ k < n}) (n : nat) (a : Acc lt n) {struct a} : nat :=
  match n as m return n = m -> nat with
  | 0 => fun _ => 0
  | S k => fun e => S (count_down d k (match d k n with
      | left l => Acc_inv a l
      | right nl => False_ind _ (nl (eq_ind_r (fun x => k < x) (le_n (S k)) e)) end))
  end eq_refl.
Fixpoint wf_rec (A : Type) (R : A -> A -> Prop) (P : A -> Type)
    (step : forall x, (forall y, R y x -> P y) -> P x) (x : A) (a : Acc R x) {struct a} : P x :=
  step x (fun y h => wf_rec A R P step y (Acc_inv a h)).
Lemma uses : first_from (Nat.eqb 2) 0 (later _ 0 (later _ 1 (here _ 2 eq_refl))) = 2
  /\\ first_rewrite (Nat.eqb 1) 0 (later _ 0 (here _ 1 eq_refl)) = 1.
Proof. split; reflexivity. Qed.
#[bypass_check(guard)] Fixpoint dead_or_root (f : nat -> bool) (i : nat) (r : reach f i) (e : f i = false)
  {struct r} : False :=
  dead_or_root f i (match r with here _ _ t => False_ind _ (absurd_tf (f i) t e) | later _ _ _ => r end) e.
Unset Guard Checking.
Definition convoy_dead_or_root (f : nat -> bool) : forall i, reach f i -> nat.
Proof.
  fix go 2. intros i r. destruct (f i) eqn:E.
  - exact i.
  - apply (go i). case r.
    + rewrite E. discriminate.
    + exact (fun r' => later _ _ r').
Defined.
Set Guard Checking.
#[bypass_check(guard)] Fixpoint dead_discarded (x : nat) (h : Acc lt x) {struct h} : False :=
  dead_discarded x ((fun _ : False -> nat => h) (fun z : False => match z return nat with end)).
#[bypass_check(guard)] Fixpoint dead_let (x : nat) (h : Acc lt x) {struct h} : False :=
  dead_let x (let d := fun z : False => match z return Acc lt x with end in h).
#[bypass_check(guard)] Fixpoint other_acc (x : nat) (h : Acc lt x) (h2 : Acc lt (S x)) (b : bool) (z : b = false)
  {struct h} : False :=
  other_acc x (match b as c return b = c -> Acc lt x with
    | true => fun t => False_ind _ (absurd_tf b t z) | false => fun _ => Acc_inv h2 (le_n (S x)) end eq_refl) h2 b z.
#[bypass_check(guard)] Fixpoint cast_eq_rect (H : (False -> True2) = True2) (x : True2) {struct x} : False :=
  match x with I2 f => cast_eq_rect H (eq_rect (False -> True2) (fun T : Prop => T) f True2 H) end.
Definition IdP (X : Prop) : Prop := X.
#[bypass_check(guard)] Fixpoint cast_unfold_return (H : (False -> True2) = True2) (x : True2) {struct x} : False :=
  match x with I2 f => cast_unfold_return H (match H in _ = T return IdP T with eq_refl => f end) end.
Axiom propext : forall P Q : Prop, (P <-> Q) -> P = Q.
Definition boom : False := cast_eq_rect
  (propext (False -> True2) True2 (conj (fun f => I2 f) (fun x (z : False) => x))) (I2 (fun z => match z with end)).
Require Import ssreflect.
Definition first_ssr (f : nat -> bool) : forall i, reach f i -> nat.
Proof.
  fix go 2 => i r; case E: (f i); first exact: i.
  apply: (go (S i)); case: r; [rewrite E; discriminate | exact: (fun r' => r')].
Defined.
Definition beta_ssr : nat -> nat.
Proof. fix go 1 => n; case: n => [|k]; [exact: 0 | apply: go; case: (k) => [|j]; [exact: k | exact: j]]. Defined.
Unset Guard Checking.
Definition convoy_ssr (f : nat -> bool) : forall i, reach f i -> nat.
Proof.
  fix go 2 => i r; case E: (f i); first exact: i.
  apply: (go i); case: r; [rewrite E; discriminate | exact: (fun r' => later _ _ r')].
Defined.
Set Guard Checking.
"""
#: sound, but past rule 6's fuel (256 branches per question): a match on each of 20 bound booleans, with a dependent
#: return clause (so rule 2 does not take it), over `False_ind` — 2^20 dead leaves, which the judge must not visit
TREE = 20
TREE_TEXT = "Definition t0 (x : nat) (z : False) : Acc lt x := False_ind _ z.\n" + "".join(
    f"Definition t{i} (x : nat) (z : False) {' '.join(f'(b{j} : bool)' for j in range(1, i + 1))} : Acc lt x :=\n"
    f"  match b{i} as c return c = c -> Acc lt x with true => fun _ => t{i - 1} x z "
    f"{' '.join(f'b{j}' for j in range(1, i))} | false => fun _ => t{i - 1} x z "
    f"{' '.join(f'b{j}' for j in range(1, i))} end eq_refl.\n" for i in range(1, TREE + 1)) + (
    "Fixpoint tree_user (x : nat) (h : Acc lt x) (z : False) (b : bool) {struct h} : nat :=\n"
    f"  match b with true => 0 | false => tree_user x (t{TREE} x z {' '.join('b' for _ in range(TREE))}) z b end.\n")
#: each recurses on something no smaller than its decreasing argument that a wider rule would take as dead or as a
#: subterm: a dead branch beside the root (a term; find_ex_minn's own shape through `rewrite`/`discriminate`, plain
#: and ssreflect's, with the live branch a constructor around the subterm) or beside an accessibility proof of another
#: index; an empty match a beta-redex or a `let` discards; rocq#21053's cast of a subterm by `eq_rect` (the classic
#: proof of False from propositional extensionality, `boom`, goes through it) and with its return clause behind a
#: definition that whd unfolds (still dependent)
UNSAFE = ("dead_or_root", "convoy_dead_or_root", "convoy_ssr", "dead_discarded", "dead_let", "other_acc",
          "cast_eq_rect", "cast_unfold_return")
#: sound: find_ex_minn's shape (`first_ssr`, ssreflect's `case:` and `rewrite`: the return clause a beta-redex, the
#: dead branch under `eq_ind_r` applied to the branch's proof; `first_cast`, as a term; `first_rewrite`, plain
#: tactics), a match with a dead branch as a term and in an `Acc` recursion, a `Fix_F`-style recursion, a return
#: clause that is a beta-redex over live branches (`beta_ssr`)
SOUND = ("first_from", "first_cast", "first_rewrite", "first_ssr", "count_down", "wf_rec", "beta_ssr", "uses")
#: mathcomp's own: the lemma and what reaches it (library mode, as the survey dumps the installed file)
MATHCOMP = ("find_ex_minn", "ex_minn", "ex_minnP", "eq_ex_minn")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``TEXT`` compiled once as ``P.A`` and dumped once, every constant a target; and mathcomp's installed
    ``ssrnat`` dumped with :data:`MATHCOMP` as targets (project mode reads it as library mode reads a project's file)."""
    require_tool("coqc")
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True).stdout.strip()
    require_path(Path(where) / "user-contrib" / "mathcomp" / "ssreflect" / "ssrnat.vo", "mathcomp's ssrnat")
    run, work, dump = dump_every_constant(tmp_path_factory, TEXT + TREE_TEXT, "dead")
    assert set(UNSAFE) | set(SOUND) <= dump.targets, sorted(dump.targets)
    library, problem = judge_module.run_file_dump(run, work, [], "mathcomp.ssreflect.ssrnat", list(MATHCOMP))
    assert library is not None, problem
    return fix_findings(dump), fix_findings(library)


def test_every_attack_on_dead_code_is_refused(dumps: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    """Each unsafe definition carries a ``fix`` finding (a theorem using one is refused by the kernel_advisories
    layer; tests/test_judge.py shows that path)."""
    missed = [name for name in UNSAFE if name not in dumps[0]]
    assert not missed, (missed, dumps[0])


def test_honest_recursion_through_a_dead_branch_is_accepted(
        dumps: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    """The boundary from the other side: recursion on an accessibility proof through a dead branch, a cast of a dead
    branch, a return clause that is a beta-redex carries no finding (``first_cast``, ``first_rewrite``,
    ``first_ssr`` and ``beta_ssr`` did before rule 6)."""
    refused = {name: dumps[0][name] for name in SOUND if name in dumps[0]}
    assert not refused, refused


def test_a_tree_of_dead_matches_costs_the_judge_its_fuel_only(
        dumps: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    """Rule 6 visits at most 256 branches per question (``dead_fuel``): the 2^20 dead leaves of ``tree_user``'s
    decreasing argument are not all visited — the fixture's dump finishes within its budget — and the rule gives up,
    so the fixpoint is refused (a sound term refused: a bound on the judge's work, not a verdict about it)."""
    assert "tree_user" in dumps[0], dumps[0]


def test_mathcomp_find_ex_minn_is_accepted(dumps: tuple[dict[str, list[str]], dict[str, list[str]]]) -> None:
    """mathcomp's own ``find_ex_minn`` (the installed compiled file's kernel term: the fixpoint the library survey
    refused) and the lemmas reaching it carry no finding."""
    assert not dumps[1], dumps[1]


def test_library_mode_mathcomp_ex_minn_is_strict(pytester: pytest.Pytester) -> None:
    """mathcomp's ``ssrnat.v`` as a project (library mode, ``--forall-project``): the items about ``ex_minn`` —
    ``find_ex_minn`` itself, whose proof is the candidate's, and ``ex_minnP``, ``eq_ex_minn`` reaching it — are
    ``strict``. Before rule 6, ``find_ex_minn`` failed at kernel_advisories and the other two were ``rules_only``
    (the ``fix`` advisories NOT covered)."""
    from test_project_library import BASE, copy_library, results

    copy_library("mathcomp", pytester.path / "proj", only=["ssrnat.v"])
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay",
                             "--forall-run-id", "own", "-m", "not admitted", "-k", "ex_minn",
                             "--forall-require", "strict")
    rows = results(pytester.path, "own")
    assert sorted(rows) == [f"MC__ssrnat__{name}" for name in ("eq_ex_minn", "ex_minnP", "find_ex_minn")], rows
    assert {k: (r["outcome"], r["reason"][:300]) for k, r in rows.items() if r["outcome"] != "strict"} == {}
    assert run.ret == 0, run.stdout.str()[-3000:]
