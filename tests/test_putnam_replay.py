"""Issue 2 end to end on the real kernel: PutnamBench items replayed through the full verifier."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, require_tool

PROOFS = Path(__file__).parent / "data" / "proofs"


@pytest.fixture
def putnam_suite(pytester: pytest.Pytester, putnam_root: Path) -> pytest.Pytester:
    require_tool("coqc")
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {putnam_root}\n")
    return pytester


def run_replay(suite: pytest.Pytester, proofs: Path, selection: str, run_id: str, *extra: str) -> dict[str, dict]:
    result = suite.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay", f"--forall-proofs={proofs}",
                             "-k", selection, f"--forall-run-id={run_id}", *extra)
    rows = [json.loads(line) for line in (suite.path / "reports" / run_id / "results.jsonl").read_text().splitlines()]
    out = {row["task_id"]: row for row in rows}
    out["_ret"] = {"ret": result.ret, "stdout": result.stdout.str()}
    return out


def test_stored_valid_proofs_pass_strict_with_independent_check(putnam_suite: pytest.Pytester) -> None:
    xml = putnam_suite.path / "junit.xml"
    rows = run_replay(putnam_suite, PROOFS, "(putnam_2001_a1 or putnam_2008_a1) and coq", "valid", f"--junitxml={xml}")
    junit = xml.read_text()
    for task in ("putnam_2001_a1", "putnam_2008_a1"):
        assert rows[task]["outcome"] == "strict", rows[task]
        # issue 22: the row and the JUnit properties name the kernel and the advisories in force for it
        assert rows[task]["kernel"].startswith("Coq 8.") and "rocq#22389" in rows[task]["advisories"]
        assert f'name="forall.kernel" value="{rows[task]["kernel"]}"' in junit and "rocq#22389" in junit
        # issue 31: and how each advisory in force is kept out (detector, refused, or impossible for a candidate)
        assert "rocq#21053 detector (fix)" in rows[task]["advisory_coverage"]
        assert "rocq#21051 detector (functor)" in rows[task]["advisory_coverage"]  # the judge's module walk
        assert len(rows[task]["advisory_coverage"]) == len(rows[task]["advisories"])
        assert 'name="forall.advisory_coverage"' in junit and "rocq#7609 impossible (plugin-or-vo)" in junit
        assert rows[task]["independent"] is True
        assert rows[task]["sandbox"] == "bwrap" and rows[task]["prover_sandboxed"] is True
        assert len(rows[task]["digest"]) == 64
    assert rows["_ret"]["ret"] == 0
    assert "independent check: 2/2 judged accepted" in rows["_ret"]["stdout"]
    # the audit record of each accepted item states the guarantee its candidate got (docs/verifier.md)
    for task in ("putnam_2001_a1", "putnam_2008_a1"):
        items = putnam_suite.path / "reports" / "valid" / "items"
        verdicts = [json.loads(p.read_text()) for p in items.glob(f"*{task}*/**/*verdict.json")]
        accepted = [v for v in verdicts if v.get("verdict") == "accept"]
        assert accepted, sorted(str(p) for p in items.rglob("*"))[:20]
        assert [g.split(":")[0] for g in accepted[-1]["guarantee"]] == ["kernel statement", "assumptions",
                                                                        "kernel advisories", "independent check"]
        assert accepted[-1]["kernel"]["version"] == rows[task]["kernel"].split()[-1]


def _variant(tmp: Path, name: str, text: str) -> Path:
    directory = tmp / name
    directory.mkdir()
    (directory / "putnam_2001_a1.v").write_text(text)
    return directory


def test_admitted_axiom_and_weakened_statement_fail_with_the_reason(putnam_suite: pytest.Pytester,
                                                                    tmp_path: Path) -> None:
    valid = (PROOFS / "putnam_2001_a1.v").read_text()
    admitted = valid.replace("exact H2.\nQed.", "Admitted.")
    axiom = "Axiom cheat : forall P : Prop, P.\n" + valid.replace(
        "  intros a b.\n  pose proof (hop b a) as H1.\n  pose proof (hop (op b a) b) as H2.\n  rewrite H1 in H2.\n"
        "  exact H2.", "  apply cheat.")
    weakened = valid.replace("(hop : forall (a b: A), op (op a b) a = b)",
                             "(hop : forall (a b: A), op (op a b) a = b)\n    (extra : forall a b : A, a = b)")
    cases = {"admitted": (admitted, "syntax_screen"), "axiom": (axiom, "syntax_screen"),
             "weakened": (weakened, "frozen_statement")}
    for name, (text, layer) in cases.items():
        rows = run_replay(putnam_suite, _variant(tmp_path, name, text), "putnam_2001_a1 and coq", f"bad-{name}")
        row = rows["putnam_2001_a1"]
        assert row["outcome"] == "failed", (name, row)
        assert layer in row["reason"], (name, row["reason"])
        assert rows["_ret"]["ret"] == 1


def test_missing_stored_proof_fails_with_no_stored_proof(putnam_suite: pytest.Pytester, tmp_path: Path) -> None:
    rows = run_replay(putnam_suite, tmp_path, "putnam_2001_a1 and coq", "missing")
    assert rows["putnam_2001_a1"]["outcome"] == "failed"
    assert "no stored proof" in rows["putnam_2001_a1"]["reason"]


def test_template_that_does_not_compile_here_is_infra(putnam_suite: pytest.Pytester) -> None:
    rows = run_replay(putnam_suite, PROOFS, "putnam_1963_b6 and coq", "tmpl")  # needs GeoCoq
    row = rows["putnam_1963_b6"]
    assert row["outcome"] == "infra"
    assert "template does not compile here" in row["reason"] and "GeoCoq" in row["reason"]
    assert rows["_ret"]["ret"] == 75


@pytest.mark.parametrize(("name", "edit"), [("passes the screen", ("Admitted.", "Qed.")),
                                            ("fails the screen", ("Admitted.", "Admitted. Axiom x : False."))])
def test_a_stored_proof_of_a_template_that_does_not_compile_here_is_infra(
        putnam_suite: pytest.Pytester, putnam_root: Path, tmp_path: Path, name: str, edit: tuple[str, str]) -> None:
    """Replay checks no template before its turn (the verifier does, beside the compile); whichever layer ends the
    candidate, a problem that cannot run here is still infra, never a failed proof."""
    template = (putnam_root / "coq" / "src" / "putnam_1963_b6.v").read_text()
    (tmp_path / "putnam_1963_b6.v").write_text(template.replace(*edit))
    rows = run_replay(putnam_suite, tmp_path, "putnam_1963_b6 and coq", "tmpl-stored")
    row = rows["putnam_1963_b6"]
    assert (row["outcome"], row["stop"]) == ("infra", "template"), row
    assert "template does not compile here" in row["reason"] and "GeoCoq" in row["reason"]


def test_lean_tasks_without_a_toolchain_are_infra_naming_the_fix(putnam_suite: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no lake/lean anywhere
    monkeypatch.delenv("FORALL_LEAN_BIN", raising=False)
    rows = run_replay(putnam_suite, PROOFS, "putnam_1962_a1 and lean4", "lean")
    row = rows["putnam_1962_a1"]
    assert row["outcome"] == "infra"
    assert "lean_env/setup" in row["reason"]
    assert rows["_ret"]["ret"] == 75
