"""Indexer and query engine: names qualified, bodies never kept, exclusions total, cache shared."""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path

import pytest

from conftest import PUTNAM, SHARED, require_path
from pytest_forall.retrieval.index import Declaration, Retriever, build_index, parse_lean, parse_rocq

FIXTURES = Path(__file__).parent / "fixtures" / "retrieval"
COQ_ROOT = Path("/usr/lib/ocaml/coq")
STDLIB = COQ_ROOT / "theories"
MATHCOMP = COQ_ROOT / "user-contrib" / "mathcomp"
PUTNAM_LEAN = PUTNAM / "lean4" / "src"
LEAN_EVAL = SHARED / "benchmarks" / "lean-eval" / "generated"
#: Every proof/body line of the fixtures carries this marker; no statement may contain it.
SECRET = "SECRET_"


def by_name(declarations: list[Declaration]) -> dict[str, Declaration]:
    return {d.name: d for d in declarations}


@pytest.fixture(scope="module")
def fixture_index(tmp_path_factory: pytest.TempPathFactory) -> list[Declaration]:
    declarations, _ = build_index(FIXTURES, tmp_path_factory.mktemp("cache"))
    return declarations


def test_lean_names_are_qualified_and_bodies_stripped() -> None:
    declarations = by_name(parse_lean((FIXTURES / "lean" / "Basic.lean").read_text()))
    assert declarations["Fixture.double"].statement == "def double (n : Nat) : Nat"
    assert declarations["Fixture.double"].doc == "Doubling a natural number."
    assert declarations["Fixture.double_add"].statement == (
        "theorem double_add (a b : Nat) : double (a + b) = double a + double b"
    )
    assert declarations["Fixture.twice_id"].kind == "lemma"  # a section adds no namespace
    assert declarations["Fixture.Deep.Er.countdown"].statement == "def countdown : Nat → List Nat"
    assert declarations["Fixture.Deep.Er.target_theorem"].line == 49
    assert "rootLevel" in declarations  # `_root_` escapes the namespace
    assert declarations["Fixture.Color.green"].parent == "Fixture.Color"
    assert declarations["Fixture.Point.y"].statement == "y : Nat"  # the default value is a body
    assert "Fixture.Point.mk" not in declarations
    assert declarations["Fixture.instance@41"].statement == "instance : Inhabited Point"
    assert not any("fake_in_comment" in name for name in declarations)
    assert not any(SECRET in d.statement for d in declarations.values())


def test_rocq_names_are_qualified_and_proofs_stripped() -> None:
    declarations = by_name(parse_rocq((FIXTURES / "rocq" / "Small.v").read_text(), module="Small"))
    assert declarations["Small.double"].statement == "Definition double (n : nat) : nat"
    assert declarations["Small.double_zero"].doc == "Doubling zero gives zero."
    assert declarations["Small.Arith2.double_add"].kind == "Theorem"
    assert declarations["Small.Arith2.sum_to"].statement == "Fixpoint sum_to (n : nat) {struct n} : nat"
    assert declarations["Small.color"].statement == "Inductive color : Set"
    assert declarations["Small.Green"].statement == "Green : color"
    assert declarations["Small.px"].parent == "Small.point"
    assert declarations["Small.let_statement"].statement == "Lemma let_statement : let x := 1 in x = 1"
    assert declarations["Small.proof_term"].statement == "Definition proof_term : 1 = 1"
    assert declarations["Small.Arith2.target_lemma"].line == 23
    assert not any("fake_in_comment" in name for name in declarations)
    assert not any(SECRET in d.statement for d in declarations.values())


def test_queries(fixture_index: list[Declaration]) -> None:
    retriever = Retriever(fixture_index)
    assert [d.name for d in retriever.lookup("Er.countdown")] == ["Fixture.Deep.Er.countdown"]
    assert {d.file for d in retriever.lookup("double")} == {"lean/Basic.lean", "rocq/Small.v"}
    assert retriever.lookup("ouble") == []  # suffix matches are whole components
    assert retriever.search("double add")[0].name.endswith("double_add")
    assert any(d.name == "Small.Arith2.sum_to" for d in retriever.search("sum_to"))
    mentions = {d.name for d in retriever.usages("Fixture.double")}
    assert {"Fixture.double_zero", "Fixture.Deep.Er.uses_target"} <= mentions
    assert "Fixture.double" not in mentions
    assert [d.name for d in retriever.usages("color")] == ["Small.Green"]
    outline = retriever.outline("Small.v")
    assert [d.line for d in outline] == sorted(d.line for d in outline)
    assert outline[0].name == "Small.double"
    assert retriever.outline("Missing.v") == []


def test_excluded_declarations_appear_in_no_answer(fixture_index: list[Declaration]) -> None:
    retriever = Retriever(fixture_index, excluded=["target_theorem", "Arith2.target_lemma", "Color"])
    withheld = ("target_theorem", "target_lemma", "Color")
    answers = [
        *retriever.lookup("target_theorem"),
        *retriever.lookup("Fixture.Deep.Er.target_theorem"),
        *retriever.lookup("target_lemma"),
        *retriever.search("target"),
        *retriever.search("double n = 2 * n"),
        *retriever.usages("double"),
        *retriever.usages("Color"),
        *retriever.search("red green"),
        *retriever.outline("lean/Basic.lean"),
        *retriever.outline("rocq/Small.v"),
    ]
    assert answers
    assert not [d for d in answers if any(w in d.name for w in withheld)]
    assert {"Fixture.Deep.Er.uses_target", "Small.Arith2.uses_target"} <= {d.name for d in answers}


def test_cache_is_incremental(tmp_path: Path) -> None:
    root = tmp_path / "src"
    shutil.copytree(FIXTURES, root)
    cache = tmp_path / "cache"
    first, cold = build_index(root, cache)
    second, warm = build_index(root, cache)
    assert (cold.parsed, warm.parsed, warm.cached) == (2, 0, 2)
    assert first == second
    lean_file = root / "lean" / "Basic.lean"
    lean_file.write_text(lean_file.read_text() + "\ntheorem added : True := trivial\n")
    third, after_edit = build_index(root, cache)
    assert (after_edit.parsed, after_edit.cached) == (1, 1)
    assert "added" in by_name(third)


def _build_and_count(root: str, cache: str) -> int:
    return len(build_index(Path(root), Path(cache))[0])


def test_concurrent_builds_share_the_cache(tmp_path: Path) -> None:
    """What pytest-xdist workers do: build the same index at once; the lock makes them agree."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        counts = pool.starmap(_build_and_count, [(str(FIXTURES), str(tmp_path))] * 4)
    assert len(set(counts)) == 1 and counts[0] > 20
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.fixture(scope="module")
def coq_index(tmp_path_factory: pytest.TempPathFactory) -> Retriever:
    require_path(STDLIB, "Debian's Coq standard library sources")
    require_path(MATHCOMP, "Debian's mathcomp sources")
    declarations, stats = build_index(COQ_ROOT, tmp_path_factory.mktemp("coq-cache"))
    assert stats.files > 600
    return Retriever(declarations)


def test_real_coq_sources(coq_index: Retriever) -> None:
    stdlib = [d for d in coq_index.declarations if d.file.startswith("theories/")]
    mathcomp = [d for d in coq_index.declarations if d.file.startswith("user-contrib/mathcomp/")]
    assert len(stdlib) > 15000 and len(mathcomp) > 20000
    (addn_c,) = coq_index.lookup("ssrnat.addnC")
    assert addn_c.statement == "Lemma addnC : commutative addn"
    assert addn_c.file == "user-contrib/mathcomp/ssreflect/ssrnat.v"
    # `Nat.add_comm` reaches PeanoNat only through `Include`; textually it is declared in NZAdd.
    add_comm = coq_index.lookup("NZAddProp.add_comm")
    assert [d.statement for d in add_comm] == ["Theorem add_comm : forall n m, n + m == m + n"]
    assert any(d.name == "BinPos.Pos.add_comm" for d in coq_index.lookup("add_comm"))
    assert "ssrnat.leq_trans" in {d.name for d in coq_index.search("leq_trans")[:3]}
    assert any(d.name.endswith("leq_trans") for d in coq_index.search("m <= n -> n <= p -> m <= p"))
    addn_users = {d.name for d in coq_index.usages("addn", limit=1000)}  # mostly written `+`: textual
    assert len(addn_users) > 20 and {"ssrnat.add0n", "ssrnat.addnC"} <= addn_users
    for declaration in coq_index.declarations:
        assert "Qed" not in declaration.statement and "Proof." not in declaration.statement, declaration


def test_real_lean_sources_never_show_a_body(tmp_path: Path) -> None:
    """Every Putnam statement and answer ends in `:= sorry`: a kept body would show `sorry`."""
    declarations, stats = build_index(require_path(PUTNAM_LEAN, "PutnamBench Lean sources"), tmp_path)
    assert stats.files > 600
    theorems = [d for d in declarations if d.kind == "theorem"]
    assert len(theorems) >= stats.files - 5
    assert not [d for d in declarations if "sorry" in d.statement]
    (a2,) = Retriever(declarations).lookup("putnam_1962_a2")
    assert a2.statement.startswith("theorem putnam_1962_a2 (P : Set ℝ → (ℝ → ℝ) → Prop)")
    assert a2.statement.endswith("∀ f ∈ putnam_1962_a2_solution, P (Ioi 0) f ∨ (∃ e > 0, P (Ioo 0 e) f)")


def test_lean_eval_namespaces(tmp_path: Path) -> None:
    root = require_path(LEAN_EVAL / "coc_strong_normalization", "Lean Eval workspaces")
    declarations = by_name(build_index(root, tmp_path)[0])
    prefix = "LeanEval.ProgramVerification.CoCStrongNormalization."
    assert declarations[prefix + "lift"].statement == "def lift (d c : Nat) : Tm → Tm"
    assert declarations[prefix + "Step.beta"].kind == "constructor"
    assert not [d for d in declarations.values() if ":= by" in d.statement or "sorry" in d.statement]
